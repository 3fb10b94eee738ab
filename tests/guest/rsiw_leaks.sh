#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Debug kernel only (issue 7): after the other tests of the boot ran, no
# kmemleak report may point into rsiw or the RDMA core, lockdep must still
# be on (it switches itself off after its first report), and rsiw must be
# unloaded with no RDMA object left behind. KASAN, lockdep, atomic-sleep,
# list and object debugging report into the kernel log, which every test
# checks after each step (lib.sh kmsg_check).
. "$(dirname "$0")/lib.sh"

KML=/sys/kernel/debug/kmemleak
ktap_print_header
if [ ! -e /proc/lockdep_stats ] || [ ! -e "$KML" ]; then
	ktap_skip_all "not a debug kernel (no lockdep or kmemleak)"
	exit "$KSFT_SKIP"
fi
ktap_set_plan 4

no_objects() {
	local out
	out=$(rdma resource show 2>&1 | grep -E 'rsiw|siw' | grep -vE ' (pd|cq|qp|cm_id|mr|ctx|srq) 0( |$)')
	[ -z "$out" ] || { echo "$out"; return 1; }
	! lsmod | grep -q '^rsiw '
}
check "rsiw unloaded, no RDMA objects left" no_objects

lockdep_on() {
	grep -qE 'debug_locks: +1' /proc/lockdep_stats ||
		{ grep debug_locks /proc/lockdep_stats; return 1; }
}
check "lockdep still enabled (no report during the run)" lockdep_on

kmemleak_rsiw() {
	# Two scans, as kmemleak documents, to settle objects in flight.
	echo scan >"$KML" && sleep 5 && echo scan >"$KML" || return 1
	awk '/^unreferenced object/ { if (blk ~ /rsiw|ib_|iw_|rdma|siw|uverbs|_rust|kernel::/) print blk; blk = "" } { blk = blk "\n" $0 } END { if (blk ~ /rsiw|ib_|iw_|rdma|siw|uverbs|_rust|kernel::/) print blk }' "$KML" >/tmp/kmemleak.rsiw
	if [ -s /tmp/kmemleak.rsiw ]; then
		head -n 60 /tmp/kmemleak.rsiw
		return 1
	fi
}
# The scan also reports objects of other kernel code (the tests use netns,
# veth, nvme, ...): its "new suspected memory leaks" log line is not held
# against rsiw here, and those objects are listed after the result so that
# they can be identified.
KMSG_BAD=${KMSG_BAD/|kmemleak/} \
	check "kmemleak: nothing unreferenced from rsiw or the RDMA stack" kmemleak_rsiw
others=$(grep -c '^unreferenced object' "$KML")
if [ "$others" -gt 0 ]; then
	echo "# kmemleak: $others unreferenced objects in all; the first ones:"
	head -n 48 "$KML" | sed 's/^/# /'
fi

taint() {
	local t
	t=$(cat /proc/sys/kernel/tainted)
	# 4096 (O: out-of-tree module) is expected; anything else is not.
	[ $((t & ~4096)) = 0 ] || { echo "tainted: $t"; return 1; }
}
check "kernel not tainted beyond the out-of-tree module" taint
ktap_finished
