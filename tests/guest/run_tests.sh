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
# RSIW_BUDGET_SECS, when set, is the time this run may take (make check's
# share for the debug kernel, tests/run-all). Before each file the runner
# estimates its duration: the file's weight below, scaled by how the files
# so far ran against theirs. A file that would not end within the budget,
# with rsiw_leaks.sh's share kept for it, is reported as a KTAP SKIP and
# not run; a slow machine thus skips the last files instead of having the
# whole boot killed by the timeout. Each file's duration is printed.
cd "$(dirname "$0")" || exit 1
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(rsiw_*.sh)
SLACK=${RSIW_SLAB_SLACK_KB:-8192}

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

# Seconds each file takes on the debug kernel (2-core project machine).
weight() {
	case $1 in
	rsiw_device.sh) echo 60 ;;
	rsiw_verbs.sh) echo 120 ;;
	rsiw_ibv.sh) echo 150 ;;
	rsiw_hostile.sh) echo 450 ;;
	rsiw_traffic.sh) echo 450 ;;
	rsiw_nvmeof.sh) echo 150 ;;
	rsiw_stress.sh) echo 300 ;;
	rsiw_leaks.sh) echo 120 ;;
	*) echo 150 ;;
	esac
}
BUDGET=${RSIW_BUDGET_SECS:-}
start=$(date +%s) ran_w=0 ran_s=0 keep_w=0
for t in "${tests[@]}"; do
	[ "$t" != rsiw_leaks.sh ] || keep_w=$(weight "$t")
done

settle
base=$(sunreclaim)
echo "# baseline: SUnreclaim ${base} kB"
rc=0
for t in "${tests[@]}"; do
	echo "# ---- $t"
	t0=$(date +%s)
	if [ -n "$BUDGET" ] && [ "$t" != rsiw_leaks.sh ]; then
		# speed against the weights, in percent (100 before any file ran)
		f=100
		[ "$ran_w" = 0 ] || f=$((ran_s * 100 / ran_w))
		[ "$f" -ge 50 ] || f=50
		need=$(( ($(weight "$t") + keep_w) * f / 100 ))
		left=$((BUDGET - (t0 - start)))
		if [ "$need" -gt "$left" ]; then
			echo "ok 1 $t # SKIP make check's time budget: about ${need} s needed, ${left} s left"
			continue
		fi
	fi
	./"$t"
	r=$?
	ran_s=$((ran_s + $(date +%s) - t0)) ran_w=$((ran_w + $(weight "$t")))
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
