#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs every rsiw guest test (KTAP) in this directory, or those named.
# Meant to run inside a guest: qemu-images/run tests/guest/run_tests.sh
cd "$(dirname "$0")" || exit 1
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(rsiw_*.sh)
rc=0
for t in "${tests[@]}"; do
	echo "# ---- $t"
	./"$t"
	r=$?
	# 4 is kselftest's KSFT_SKIP (e.g. rsiw_leaks.sh off the debug kernel)
	[ $r = 0 ] || [ $r = 4 ] || rc=1
done
exit $rc
