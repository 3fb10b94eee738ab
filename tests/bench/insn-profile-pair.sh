#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make insn-profile-pair` guest script, run in both guests of
# qemu-images/run-pair: bandwidth runs across two guests under the tbprof
# QEMU plugin in each (tests/bench/tbprof.c), so that the sending and the
# receiving guest kernel's instructions per KiB moved are counted apart,
# rsiw against siw and against TCP itself (iperf3 and iperf3 -Z) on the
# same link.
#
# No pair_agent here: its polling loop forks sleep(1) ten times a second,
# which the plugin would count. Both guests walk the same list of runs
# instead, b starting each server and a, a few seconds later, its client;
# each frames every run with sync(2), the plugin's marker (b's window is
# idle until the client connects). Guest a writes $PROF_OUT/a/phases,
# each guest $PROF_OUT/ROLE/kallsyms; the host side copies the phases to
# b and runs tests/bench/insn-profile.py on each guest's directory.
#
# Knobs: PROF_TESTS="ib_write_bw ib_send_bw ib_read_bw iperf3 iperf3_z"
#        PROF_SIZE=65536 PROF_ITERS=2000 PROF_MTU=1500
# Data goes from a to b in every run but ib_read_bw (a reads from b).
set -u
. "$(dirname "$0")/../guest/lib.sh" >/dev/null 2>&1 &&
	. "$RSIW_TESTDIR/pair.sh" || {
	echo "insn-profile-pair: cannot source the guest libraries" >&2
	exit 1
}
OUT=${PROF_OUT:?}/$RSIW_ROLE
ITERS=${PROF_ITERS:-2000}
TESTS=${PROF_TESTS:-"ib_write_bw ib_send_bw ib_read_bw iperf3 iperf3_z"}
SIZE=${PROF_SIZE:-65536}
MTU=${PROF_MTU:-1500}

pair_up "$MTU" || exit 1
mkdir -p "$OUT"
: >"$OUT/phases"
ndump=0
marker() {
	sync
	ndump=$((ndump + 1))
}
drv_up() {
	rdma link delete rsiw0 2>/dev/null
	rdma link delete siw0 2>/dev/null
	load_$1 && rdma link add ${1}0 type $1 netdev eth0
}
# client CMD...: a's client, retried while b's server is not up yet.
client() {
	local i
	for i in 1 2 3 4 5; do
		"$@" && return 0
		sleep 2
	done
	return 1
}

marker
port=23000
for t in $TESTS; do
	case $t in iperf3*) drivers=tcp ;; *) drivers="rsiw siw" ;; esac
	for d in $drivers; do
		port=$((port + 1))
		typ=
		[ $d = tcp ] || drv_up "$d" || { echo "# $d: no device" >&2; exit 1; }
		z=
		[ "$t" = iperf3_z ] && z=-Z
		if [ "$RSIW_ROLE" = b ]; then
			case $t in
			iperf3*) timeout 300 iperf3 -s -1 -p $port >/dev/null 2>&1 & ;;
			*) timeout 300 "$t" -R -F -p $port -d ${d}0 -s "$SIZE" -n "$ITERS" >/dev/null 2>&1 & ;;
			esac
			sleep 1
			marker
			wait
		else
			sleep 6
			marker
			case $t in
			iperf3*)
				typ=$(client timeout 300 iperf3 -c "$RSIW_PEER" -p $port -n $((ITERS * SIZE)) -l "$SIZE" -J $z 2>/dev/null |
					python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' 2>/dev/null) ;;
			*)
				typ=$(client timeout 300 "$t" -R -F -p $port -d "${d}0" -s "$SIZE" -n "$ITERS" --report_gbits "$RSIW_PEER" 2>&1 |
					awk -v s="$SIZE" '$1 == s {print $4}') ;;
			esac
		fi
		marker
		echo "$((ndump - 1)) $d $t $SIZE $ITERS ${typ:-fail}" >>"$OUT/phases"
		[ "$RSIW_ROLE" = b ] || echo "# $d $t $SIZE B x $ITERS: ${typ:-fail} Gb/s (under the plugin)"
	done
done
cat /proc/kallsyms >"$OUT/kallsyms"
