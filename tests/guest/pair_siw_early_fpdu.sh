#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Reproducer (not part of `make check`) of an upstream siw bug, across two
# guests: `tests/run-pair tests/guest/pair_siw_early_fpdu.sh`.
#
# siw's initiator reads the MPA Reply and then, without waiting, looks
# for more octets in the socket (siw_recv_mpa_rr: "peer sent extra
# data"); if the responder's first FPDU is already there it fails the
# connection with -EPROTO, which rdma_cm reports as
# RDMA_CM_EVENT_CONNECT_ERROR -22. A responder whose application speaks
# first (librdmacm's ucmatose: its server sends as soon as its
# connections are ESTABLISHED) sends that FPDU right after the Reply;
# whether it arrives before siw's work item read the Reply is a race.
# siw's own responder loses it as often as any (check 2). rsiw as a
# client-server responder holds its first FPDUs until the initiator's
# first one or until the first check of the peer's silence, 50 ms after
# the connection came up (`mpa_responder_waits`, docs/design.md), so
# against siw's initiator it does not race (check 3).
#
# Each check runs ucmatose (4 connections, 20 x 4 KiB each way) RUNS
# times (default 20) and reports how many runs failed and what the
# kprobe on siw_recv_mpa_rr in guest b saw. Cost: about 3 s a run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"
RUNS=${RUNS:-20}
PORT=7300

ktap_print_header
ktap_set_plan 3

# use DEV_HERE DEV_THERE: the only device on eth0 in guest a is DEV_HERE
# (rsiw or siw), in guest b DEV_THERE.
use() {
	rdma link delete rsiw0 2>/dev/null
	rdma link delete siw0 2>/dev/null
	case $1 in rsiw) load_rsiw ;; siw) load_siw ;; esac &&
		rdma link add "${1}0" type "$1" netdev eth0 &&
		pair_run "rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null;
			case $2 in rsiw) load_rsiw ;; siw) load_siw ;; esac &&
			rdma link add ${2}0 type $2 netdev eth0"
}

setup() {
	pair_up && load_siw && pair_run "load_siw && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null;
		cd /sys/kernel/tracing && echo 'r:mparr siw:siw_recv_mpa_rr ret=\$retval' >kprobe_events &&
		echo 1 >events/kprobes/enable"
}

# runs SERVER_DEV: ucmatose RUNS times, server in a on SERVER_DEV, siw
# client in b; fails if any run failed.
runs() {
	use "$1" siw || return 1
	local i p failed=0
	pair_run "echo >/sys/kernel/tracing/trace"
	for i in $(seq "$RUNS"); do
		p=$((PORT + i))
		pair_cs_here $p "ucmatose -b $RSIW_ADDR -p $p -c 4 -C 20 -S 4096" \
			"ucmatose -s $RSIW_ADDR -p $p -c 4 -C 20 -S 4096" >/tmp/early.out 2>&1 ||
			failed=$((failed + 1))
	done
	echo "# $failed of $RUNS runs failed; siw_recv_mpa_rr in b returned -EPROTO (0xffffffb9) $(pair_run "grep -c 'ret=0xffffffb9' /sys/kernel/tracing/trace") times"
	[ $failed = 0 ]
}

check "setup: siw in both guests, a kprobe on siw_recv_mpa_rr in b" setup ||
	ktap_exit_fail_msg "setup failed"
check "siw (a) server, siw (b) client: ucmatose x $RUNS (upstream siw's bug: expected to fail)" runs siw
check "rsiw (a) server, siw (b) client: ucmatose x $RUNS" runs rsiw
pair_quit
ktap_finished
