#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rsiw foundation: module load, device on a veth in a namespace, stock libsiw
# sees it as iWARP, coexistence with upstream siw, clean removal.
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 18

mac_a() { ns_sys "$NS_A" cat /sys/class/net/va/address; }

t_load() { topo_up && load_rsiw && lsmod | grep -q '^rsiw '; }
t_link_add() { add_dev "$NS_A" rsiw0 rsiw va && in_a rdma link show rsiw0/1 | grep -q 'netdev va'; }
t_devices() { ibv_devices | grep -q rsiw0; }
t_devinfo() {
	local out mac gid
	out=$(ibv_devinfo -v -d rsiw0) || return 1
	echo "$out" | grep -q 'transport:[[:space:]]*iWARP' || return 1
	echo "$out" | grep -q 'state:[[:space:]]*PORT_ACTIVE' || return 1
	echo "$out" | grep -q 'active_mtu:[[:space:]]*1024' || return 1
	# GID 0 holds the MAC in its first six octets; the node GUID is its EUI-64.
	mac=$(mac_a | tr -d ':')
	gid=$(tr -d ':' </sys/class/infiniband/rsiw0/ports/1/gids/0 | cut -c1-12)
	[ "$gid" = "$mac" ] || { echo "gid $gid mac $mac"; return 1; }
	echo "$out" | grep -q "node_guid:.*$(printf %02x $((0x${mac:0:2} ^ 2)))${mac:2:2}:${mac:4:2}ff:fe${mac:6:2}:${mac:8:4}"
}
t_rdma_dev() { rdma dev show rsiw0 | grep -q 'node_type rnic'; }
t_dup_refused() { ! add_dev "$NS_A" rsiw1 rsiw va 2>/dev/null; }
t_bad_netdev() { ! add_dev "$NS_A" rsiw1 rsiw lo 2>/dev/null; }
t_port_down() {
	in_a ip link set va down
	ibv_devinfo -d rsiw0 | grep -q 'state:[[:space:]]*PORT_DOWN' || return 1
	in_a ip link set va up
	sleep 1
	ibv_devinfo -d rsiw0 | grep -q 'state:[[:space:]]*PORT_ACTIVE'
}
t_siw_beside() {
	load_siw && add_dev "$NS_B" siw0 siw vb && ibv_devices | grep -q siw0 &&
		ibv_devinfo -d siw0 | grep -q iWARP && ibv_devices | grep -q rsiw0
}
t_siw_same_netdev_refused() { ! add_dev "$NS_A" siw1 siw va 2>/dev/null; }
t_pd() {
	# A user context and a PD through stock libsiw.
	python3 - <<'PY'
import pyverbs.device as d
from pyverbs.pd import PD
ctx = d.Context(name='rsiw0')
pd = PD(ctx)
pd.close()
ctx.close()
PY
}
t_link_del() { del_dev rsiw0 && ! rdma dev show rsiw0 2>/dev/null && ibv_devices | grep -q siw0; }
t_rmmod() { rmmod rsiw && ! lsmod | grep -q '^rsiw ' && ibv_devices | grep -q siw0; }
t_rmmod_with_link() {
	load_rsiw && add_dev "$NS_A" rsiw0 rsiw va && rmmod rsiw &&
		! rdma dev show rsiw0 2>/dev/null && ibv_devices | grep -q siw0
}
# An accepted connection waits (10 s) for its peer's MPA Request, held by
# its timeout.  rmmod meanwhile must end that wait first: the timer would
# otherwise fire into the unloaded module.
t_rmmod_mpa_wait() {
	local srv tcp rc=0
	load_rsiw && add_dev "$NS_A" rsiw0 rsiw va || return 1
	nsenter --net="/run/netns/$NS_A" rping -s -a "$IP_A" -p 7190 >/dev/null 2>&1 &
	srv=$!
	wait_listen "$NS_A" 7190
	nsenter --net="/run/netns/$NS_B" bash -c "exec 3<>/dev/tcp/$IP_A/7190 && exec sleep 14" >/dev/null 2>&1 &
	tcp=$!
	sleep 1
	kill $srv
	wait $srv
	del_dev rsiw0 && rmmod rsiw || rc=1
	# past the MPA timeout: nothing may run in the module's old code
	sleep 11
	kill $tcp 2>/dev/null
	wait $tcp
	[ $rc = 0 ] && ! lsmod | grep -q '^rsiw '
}
t_netdev_gone() {
	load_rsiw && add_dev "$NS_A" rsiw0 rsiw va && in_a ip link del va &&
		for _ in $(seq 50); do rdma dev show rsiw0 >/dev/null 2>&1 || break; sleep 0.1; done &&
		! rdma dev show rsiw0 2>/dev/null
}
# The kernel-log check itself (lib.sh): a WARNING line logged after
# kmsg_mark, with a mark taken in a subshell in between, is reported by
# kmsg_check, once.
t_kmsg_self() {
	local out
	kmsg_mark
	echo "<7>WARNING: rsiw kmsg self-test line, not a fault" >/dev/kmsg
	(kmsg_mark)
	out=$(kmsg_check) && { echo "kmsg_check missed a WARNING line"; return 1; }
	[[ $out == *"rsiw kmsg self-test"* ]] || { echo "kmsg_check printed: $out"; return 1; }
	kmsg_check >/dev/null
	kmsg_check || { echo "the line was reported twice"; return 1; }
}
t_cleanup() { unload_rsiw && del_dev siw0 2>/dev/null; rmmod siw && topo_down; }

# (not through check: its own kmsg_check would see the line)
if out=$(t_kmsg_self 2>&1); then
	ktap_test_pass "kernel-log check reports a WARNING line logged during a test"
else
	echo "$out" | sed 's/^/# /'
	ktap_test_fail "kernel-log check reports a WARNING line logged during a test"
fi
check "module loads" t_load
check "rdma link add rsiw0 on a veth in a namespace" t_link_add
check "ibv_devices lists rsiw0" t_devices
check "ibv_devinfo via stock libsiw: iWARP, PORT_ACTIVE, MTU, GID from MAC" t_devinfo
check "rdma dev show: rnic" t_rdma_dev
check "second device on the same netdev refused" t_dup_refused
check "loopback netdev refused" t_bad_netdev
check "port follows netdev down/up" t_port_down
check "upstream siw loads beside rsiw" t_siw_beside
check "siw refused on a netdev rsiw holds" t_siw_same_netdev_refused
check "ucontext and PD through pyverbs" t_pd
check "rdma link delete leaves siw alone" t_link_del
check "rmmod after link delete" t_rmmod
check "rmmod with a link present unregisters it" t_rmmod_with_link
check "rmmod while an accepted connection waits for its MPA Request" t_rmmod_mpa_wait
check "netdev removal unregisters the device" t_netdev_gone
check "cleanup: rmmod rsiw and siw" t_cleanup
ktap_finished
