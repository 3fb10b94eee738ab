#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs every rsiw guest test (KTAP) in this directory, or those named.
# Meant to run inside a guest: qemu-images/run tests/guest/run_tests.sh
cd "$(dirname "$0")" || exit 1
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	# rsiw_hostile.sh is run on its own (make hostile) until its teardown
	# stops hanging: after the hostile scenarios `rdma link delete` waits
	# for a reference that is never released (issue 7).
	for t in rsiw_*.sh; do
		[ "$t" = rsiw_hostile.sh ] || tests+=("$t")
	done
fi
rc=0
for t in "${tests[@]}"; do
	echo "# ---- $t"
	./"$t" || rc=1
done
exit $rc
