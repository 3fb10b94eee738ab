#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RNBD over rsiw: the kernel's RDMA block device (rnbd-server and
# rnbd-client over RTRS), whose transport needs RDMA Write with Immediate
# Data, i.e. RFC 7306's Immediate Data (issue #38). The client maps a
# memory-backed null_blk of the server, fio writes and verifies it
# (sequential and random, queue depths 1 and 16), the device is unmapped
# and mapped again (under a capture, which the test tools' RFC 7306
# decoder checks), the link flaps and the path reconnects, the server
# module is reloaded under the mapped device and the path reconnects
# again; the kernel log stays clean (check's kmsg scan), no QP is left
# and everything unloads.
#
# One rsiw device, client and server on it: RTRS, like every rdma_cm
# kernel consumer, works in the initial network namespace only, and its
# server listens on the wildcard address, which rsiw (as siw) serves per
# device on the device's own net device, so a second device's connection
# to an address of this namespace, which goes over lo, would not reach
# it. Across two guests: pair_rnbd.sh.
#
# rtrs-server is loaded with always_invalidate=N: with it, the server
# answers each I/O with a Send with Immediate carrying a new rkey, which
# RFC 7306 cannot express (docs/design.md, "RFC 7306 and RTRS").
#
# Cost: about 90-110 s on the standard kernel beside other work (one
# guest CPU, 86 and 110 s measured, 27 s on a quiet host; fio's four
# verify runs take half of it); on the debug kernel (tests/run-debug
# rsiw_rnbd.sh) 107 s at a host load of 1.5, 216 s at 5-6.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/blkdev.sh"

# what the capture check prints when it passes (check shows a check's
# output only when it fails)
exec {SAY}>&1

ktap_print_header
ktap_set_plan 10

SESS=rsiwsess
IWARP=${IWARP:-$RSIW_REPO/target/release/iwarp}
ADDR=198.18.2.2

setup() {
	command -v fio >/dev/null || { echo "no fio"; return 1; }
	ip link add rna type veth peer name rnb &&
		ip addr add 198.18.2.1/24 dev rna && ip addr add $ADDR/24 dev rnb &&
		ip link set rna up && ip link set rnb up &&
		load_rsiw && rdma link add rsiwr1 type rsiw netdev rnb &&
		modprobe null_blk memory_backed=1 gb=1 nr_devices=1 &&
		rnbd_server_up && modprobe rnbd-client
}

# map: the server's null_blk in session SESS, over the one device
# (blkdev.sh's rnbd_map); its state.
map() {
	local d
	rnbd_map $SESS "ip:$ADDR@ip:$ADDR" && d=$(rnbd_disk $SESS) &&
		grep -H . "/sys/block/${d#/dev/}/rnbd/state" "/sys/block/${d#/dev/}/rnbd/session"
}

unmap() { rnbd_unmap $SESS; }

# fio_verify RW QD SIZE: blkdev.sh's blk_fio_verify on the mapped device.
fio_verify() { blk_fio_verify "$(rnbd_disk $SESS)" "$@"; }

io() {
	fio_verify write 1 8m && fio_verify randwrite 16 8m &&
		fio_verify write 16 16m && fio_verify randwrite 1 4m
}

# capture: the device unmapped, dumpcap on lo (RTRS's port) while it is
# mapped again and fio writes 1 MiB, then `iwarp decode` of the capture
# (target/release/iwarp, built on the host by tests/run-all or
# `cargo build --release -p iwarp`): the session's connections, FPDUs
# both ways, no error, gap or mismatch, RDMA Writes and Immediate Data
# messages, each of which the decoder checks a second time with its
# RFC 7306 decoder written apart from rsiw's wire core (a disagreement
# prints MISMATCH).
capture() {
	local cap=/tmp/rnbd.pcapng d=/tmp/rnbd.dec pid n imm err i
	[ -x "$IWARP" ] || { echo "no $IWARP (cargo build --release -p iwarp)"; return 1; }
	unmap || return 1
	# The capture must see each connection from its start: wait until the
	# unmapped session's connections are gone (on a loaded 7.3 guest one
	# of them still sent when the capture began, and the decoder, finding
	# its stream without a start, reported a gap), and give dumpcap a
	# buffer that holds a burst of the 1 MiB of I/O.
	for i in $(seq $(($(tmo 20) * 10))); do
		[ -z "$(ss -Htn state established '( sport = :1234 or dport = :1234 )')" ] && break
		snooze 0.1
	done
	rm -f $cap /tmp/rnbd-dumpcap.err
	dumpcap -q -B 16 -i lo -f "tcp port 1234" -w $cap 2>/tmp/rnbd-dumpcap.err &
	pid=$!
	for i in $(seq 100); do
		grep -q Capturing /tmp/rnbd-dumpcap.err 2>/dev/null && break
		snooze 0.1
	done
	map >/dev/null && fio_verify randwrite 4 1m
	i=$?
	snooze 0.5
	kill -TERM $pid
	wait $pid
	[ $i = 0 ] || return 1
	"$IWARP" decode $cap >$d || { tail -n 5 $d; return 1; }
	n=$(grep -c '^CONN ' $d)
	imm=$(grep -c 'op=IMMEDIATE_DATA' $d)
	err=$(grep -ciE 'ERROR|GAP|INCOMPLETE|CRC BAD|truncated|rejected|MISMATCH|op=TERMINATE' $d)
	echo "# iwarp decode: $n connection(s), $(grep -c 'op=RDMA_WRITE ' $d) RDMA Write segments, $imm Immediate Data, $err errors" | tee /dev/fd/$SAY
	grep -iE 'ERROR|GAP|INCOMPLETE|CRC BAD|truncated|rejected|MISMATCH|op=TERMINATE' $d | head -5
	grep -m 2 'op=IMMEDIATE_DATA' $d
	[ "$n" -ge 2 ] && [ "$imm" -gt 0 ] && [ "$err" = 0 ] && grep -q 'op=RDMA_WRITE ' $d
}

path_dir() { ls -d /sys/class/rtrs-client/$SESS/paths/* 2>/dev/null | head -n 1; }
connected() { grep -q '^connected' "$(path_dir)/state" 2>/dev/null; }
disconnected() { ! grep -q '^connected' "$(path_dir)/state" 2>/dev/null; }

remap() { unmap && map && fio_verify randwrite 16 4m; }

# flap: the device's link goes down and up, then the client is told to
# reconnect its path (rtrs-client's sysfs "reconnect": the path closes
# and connects anew); I/O goes on. (Client and server talk over lo, see
# above: the link's state alone does not end their connections.)
flap() {
	local p
	p=$(path_dir) && [ -n "$p" ] || return 1
	ip link set rnb down && snooze 1 && ip link set rnb up &&
		echo 1 >"$p/reconnect" &&
		wait_until connected && grep -H . "$p/state" && fio_verify randwrite 16 4m
}

# server_restart: the server module goes away under the mapped device
# (its sessions close) and comes back; the client reconnects.
server_restart() {
	local p
	p=$(path_dir) && [ -n "$p" ] || return 1
	# rmmod, not modprobe -r, which would take rtrs-server along (and its
	# always_invalidate=N: a default rtrs-server posts Sends with
	# Immediate, which fail with EINVAL)
	rmmod rnbd_server && wait_until disconnected && modprobe rnbd-server &&
		echo 1 >"$p/reconnect" 2>/dev/null
	wait_until connected && fio_verify write 16 4m
}

teardown() {
	rnbd_disk $SESS >/dev/null && unmap
	modprobe -r rnbd-client rnbd-server rtrs-server rtrs-client rtrs-core null_blk
}

cleanup() {
	rdma link delete rsiwr1 && unload_rsiw && ip link del rna
}

check "setup: an rsiw device on a veth, null_blk, rnbd server and client" setup
check "RNBD device mapped over rsiw" map
check "fio verify: sequential and random writes, QD 1 and 16" io
check "unmapped and mapped again, fio verify" remap
check "capture of a mapping and 1 MiB of I/O: iwarp decode clean, Immediate Data checked by an independent RFC 7306 decoder" capture
check "link flap and reconnect: the path comes back, fio verify" flap
check "server module reloaded: RTRS reconnects, fio verify" server_restart
check "teardown: device unmapped, modules unloaded" teardown
check "no QP left on the rsiw device" sh -c '! rdma resource show qp 2>/dev/null | grep -q rsiwr'
check "cleanup: rsiw device and module removed" cleanup
ktap_finished
