#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs every rsiw guest test (KTAP) in this directory, or those named.
# Meant to run inside a guest: qemu-images/run tests/guest/run_tests.sh
#
# After every test file it checks the kernel's object baseline and prints
# the result as one more KTAP-style line: no RDMA resource left (`rdma res
# show` empty) and unreclaimable slab within RSIW_SLAB_SLACK_KB (default
# 8192) of what it was before the first file, after dropping caches and
# letting deferred frees (RCU, namespace cleanup) run.
#
# Each file's duration is printed ("# FILE took N s"; tests/run-all
# collects them into its timing table).
#
# RSIW_BUDGET_SECS, when set (tests/run-all sets it for the debug-kernel
# boots, which cannot run their whole set within CI's time on a slow
# machine), is the time this run may take: once it is spent, the tests
# not yet started are reported as SKIP naming the budget (lib.sh
# budget_spent; setup, cleanup and rsiw_leaks.sh still run).
cd "$(dirname "$0")" || exit 1
tests=("$@")
if [ ${#tests[@]} = 0 ]; then
	tests=(rsiw_*.sh)
	# rsiw_leaks.sh is for the debug kernel only (tests/run-debug)
	[ -e /proc/lockdep_stats ] || tests=("${tests[@]/rsiw_leaks.sh/}")
fi
SLACK=${RSIW_SLAB_SLACK_KB:-8192}
[ -z "${RSIW_BUDGET_SECS:-}" ] || export RSIW_DEADLINE=$(($(date +%s) + RSIW_BUDGET_SECS))

# The kernel log, for lib.sh's kmsg_mark/kmsg_check: every record appended
# to a file by one `cat /dev/kmsg`, read by every test file through one
# shared open file.
export RSIW_KMSG_LOG=/tmp/rsiw-kmsg.log RSIW_KMSG_BAD=/tmp/rsiw-kmsg.bad
: >"$RSIW_KMSG_LOG"
: >"$RSIW_KMSG_BAD"
cat /dev/kmsg >>"$RSIW_KMSG_LOG" &
KMSG_CAT=$!
trap 'kill $KMSG_CAT 2>/dev/null' EXIT
exec {RSIW_KMSG_FD}<"$RSIW_KMSG_LOG"
export RSIW_KMSG_FD

settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 2
	echo 3 >/proc/sys/vm/drop_caches
}
sunreclaim() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }

# On the debug kernel, kmemleak's own scan (every 10 minutes) would report
# into whichever test runs then; rsiw_leaks.sh scans once all tests ran
# and sorts the objects it finds (rsiw and the RDMA stack or not).
KML=/sys/kernel/debug/kmemleak
[ ! -w "$KML" ] || echo scan=off >"$KML"

settle
base=$(sunreclaim)
echo "# baseline: SUnreclaim ${base} kB"
rc=0
for t in "${tests[@]}"; do
	[ -n "$t" ] || continue
	echo "# ---- $t"
	if [ "$t" != rsiw_leaks.sh ] && [ -n "${RSIW_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$RSIW_DEADLINE" ]; then
		echo "ok 1 $t # SKIP the time budget of this boot is spent (tests/run-all)"
		continue
	fi
	t0=$(date +%s)
	if [ "$t" = rsiw_leaks.sh ]; then
		# the checks of the whole boot: never skipped for time
		RSIW_DEADLINE= ./"$t"
	else
		./"$t"
	fi
	r=$?
	echo "# $t took $(($(date +%s) - t0)) s"
	# 4 is kselftest's KSFT_SKIP (e.g. rsiw_leaks.sh off the debug kernel)
	[ $r = 0 ] || [ $r = 4 ] || rc=1
	settle
	now=$(sunreclaim)
	res=$(rdma res show 2>/dev/null | grep -E ' (pd|cq|qp|cm_id|mr|ctx|srq) [1-9]')
	d=$((now - base))
	msg="baseline after $t: SUnreclaim ${d} kB vs start (slack ${SLACK} kB)"
	if [ -n "$res" ]; then
		echo "not ok 1 $msg, RDMA resources left:"
		echo "$res" | sed 's/^/# /'
		rc=1
	elif [ "$d" -gt "$SLACK" ]; then
		echo "not ok 1 $msg"
		rc=1
	else
		echo "ok 1 $msg, no RDMA resources left"
	fi
done
exit $rc
