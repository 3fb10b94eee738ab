#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rsiw across an impaired link between two guests (qemu-images/run-pair,
# tests/run-pair): guest a runs this file, guest b runs pair_agent. tc
# netem on both ends' eth0 (each impairs what it sends): loss, reordering,
# duplication, delay with jitter, a rate limit; a link flap during
# traffic; MTU 9000; the NIC's offloads off. Each case moves data both
# ways with rping -V (every octet verified), rsiw in both guests, and must
# finish within its timeout with nothing left behind.
#
# Cost: about 2 minutes of two one-vCPU guests (checks 96 s, measured).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"
PORT=7174
N=20 SIZE=65000

ktap_print_header
ktap_set_plan 13

# both CMD: runs CMD here and in guest b.
both() { eval "$1" && pair_run "$1"; }

setup() {
	pair_up && load_rsiw && rdma link add rsiw0 type rsiw netdev eth0 &&
		pair_run "load_rsiw && rdma link add rsiw0 type rsiw netdev eth0"
}

# traffic: rping -V both ways, N x SIZE each.
traffic() {
	pair_rping_here $PORT $N $SIZE && pair_rping_there $PORT $N $SIZE
}

# netem ARGS...: traffic with `tc qdisc ... netem ARGS` on both ends.
netem() {
	both "tc qdisc replace dev eth0 root netem $*" || return 1
	local rc=0
	traffic || rc=1
	both "tc qdisc del dev eth0 root" || rc=1
	return $rc
}

# flap: a's link goes down for 3 s while a transfer runs; it finishes.
flap() {
	pair_start "timeout 120 rping -s -a $RSIW_PEER -p $PORT -C 200 -S $SIZE -V"
	local id=$PAIR_ID c rc=0
	pair_run "wait_listen \$\$ $PORT 10" || { pair_stop $id; return 1; }
	timeout 110 rping -c -a "$RSIW_PEER" -p $PORT -C 200 -S $SIZE -V &
	c=$!
	sleep 2
	ip link set eth0 down && sleep 3 && ip link set eth0 up || rc=1
	wait $c || rc=1
	pair_wait $id 60 >/dev/null || rc=1
	return $rc
}

# mtu SIZE: both ends at MTU SIZE.
mtu() { both "ip link set eth0 mtu $1" && pair_run "ping -c 1 -W 2 -M do -s $(($1 - 28)) $RSIW_ADDR >/dev/null"; }

# offloads on|off: segmentation, receive coalescing and checksum offload
# (what virtio-net lets change; TSO and GRO must follow). Turned off only
# in the last case: virtio-net does not turn checksum offload back on.
offloads() {
	both "ethtool -K eth0 tso $1 gso $1 gro $1 tx $1 rx $1 2>/dev/null;
		ethtool -k eth0 | grep -q '^tcp-segmentation-offload: $1' &&
		ethtool -k eth0 | grep -q '^generic-receive-offload: $1'"
}

cleanup() {
	rdma link delete rsiw0 && unload_rsiw &&
		pair_run "rdma link delete rsiw0 && unload_rsiw && [ -z \"\$(rdma res show)\" ]"
}

check "setup: link up, rsiw0 in both guests" setup || ktap_exit_fail_msg "setup failed"
check "clean link: rping -V both ways" traffic
check "1% loss" netem loss 1%
check "5% loss" netem loss 5%
check "reordering (25%, 50% correlation, 5 ms)" netem delay 5ms reorder 25% 50%
check "duplication 2%" netem duplicate 2%
check "20 ms delay with 5 ms jitter" netem delay 20ms 5ms
check "rate limit 20 Mbit/s" netem rate 20mbit
check "link flap (down 3 s) during a transfer" flap
check "MTU 9000 on both ends" mtu 9000
check "MTU 9000: rping -V both ways" traffic
check "MTU 1500, offloads off (tso, gso, gro, checksums): rping -V both ways" eval "mtu 1500 && offloads off && traffic"
check "cleanup: devices gone, no RDMA resource left in b" cleanup
ktap_finished
