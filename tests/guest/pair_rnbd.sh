#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RNBD across two guests (tests/run-pair tests/guest/pair_rnbd.sh): the
# rnbd-server of guest b (a memory-backed null_blk, rtrs-server with
# always_invalidate=N, see docs/design.md "RFC 7306 and RTRS") on rsiw,
# the rnbd-client of guest a on rsiw: map, fio verify (random at queue
# depth 16, sequential at 1), unmap, no RDMA object left (but guest b's
# listening rtrs-server). Then guest b's device is upstream siw, which
# has no RFC 7306; the map must fail and leave nothing behind. It fails
# before any Write with Immediate: siw reports the IPv4 peer of
# rtrs-server's dual-stack listener as an ::ffff: address, which rdma_cm
# rejects ("Connection reset by peer"; rsiw reports it as IPv4, see
# docs/design.md "RFC 7306 and RTRS"), so RNBD cannot show the RFC 7306
# interop case with siw; the hostile peer's scenarios do for rsiw's
# receive side.
#
# Cost: about 1 minute of two one-vCPU guests (measured once).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"
. "$(dirname "$0")/blkdev.sh"

ktap_print_header
ktap_set_plan 7

# server_up KIND: guest b's only device on eth0 is one of KIND (rsiw or
# siw), with null_blk and the RNBD server (blkdev.sh).
server_up() {
	pair_run ". \$RSIW_TESTDIR/blkdev.sh && rmmod rnbd_server rtrs_server rtrs_core 2>/dev/null;
		rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null;
		case $1 in rsiw) load_rsiw ;; siw) load_siw ;; esac &&
		rdma link add ${1}0 type $1 netdev eth0 &&
		modprobe null_blk memory_backed=1 gb=1 nr_devices=1 && rnbd_server_up" 120
}

# map KIND: the client maps guest b's null_blk in session pairKIND
# (blkdev.sh's rnbd_map: at once, or not at all).
map() { rnbd_map "pair$1" "ip:$RSIW_PEER"; }

# io: fio verify (blkdev.sh) on the mapped device
io() {
	local d
	d=$(rnbd_disk pairrsiw) && blk_fio_verify "$d" randwrite 16 8m && blk_fio_verify "$d" write 1 4m
}

# no_rdma_left: no QP, CM id or MR left in either guest but guest b's
# listening rtrs-server.
no_rdma_left() { pair_no_rdma_left "state LISTEN .*rtrs_server"; }

# unmap [KIND]: the device of session pairKIND (default rsiw) unmapped,
# nothing left.
unmap() { rnbd_unmap "pair${1:-rsiw}" && snooze 1 && no_rdma_left; }

setup() {
	pair_up && load_rsiw && rdma link add rsiw0 type rsiw netdev eth0 &&
		modprobe rnbd-client && server_up rsiw
}

# toward_siw: the map fails, nothing is left.
toward_siw() {
	if map siw; then
		echo "mapped over siw"
		unmap siw
		return 1
	fi
	dmesg | grep -E 'rtrs_client|TERMINATE' | tail -n 3
	snooze 2 && no_rdma_left
}

cleanup() {
	modprobe -r rnbd-client rtrs-client
	rdma link delete rsiw0 && unload_rsiw &&
		pair_run "rmmod rnbd_server rtrs_server rtrs_core null_blk; rdma link delete siw0 && rmmod siw" 60
}

check "setup: link up, rsiw0 in both guests, RNBD server in b" setup || ktap_exit_fail_msg "setup failed"
check "rsiw client (a) maps the RNBD device of the rsiw server (b)" map rsiw
check "fio verify across the guests: random QD 16, sequential QD 1" io
check "unmapped, no RDMA object left in either guest" unmap
check "setup: siw0 instead of rsiw0 in guest b" server_up siw
check "toward siw (no RFC 7306): the map fails at connection setup, nothing left" toward_siw
check "cleanup: both guests' devices and modules gone" cleanup
ktap_finished
