#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Real RDMA traffic between rsiw and upstream siw, both directions: rping
# with data verification and perftest bandwidth. Prints what happened; used
# by `make demo` (expects lib.sh's topology with rsiw0 in ns A and siw0 in
# ns B, and swaps them for the other direction).
. "$(dirname "$0")/lib.sh"

rping_run() { # server_dev_ns client_ns desc
	in_b timeout 30 rping -s -a "$IP_B" -C 10 -S 4096 >/dev/null 2>&1 &
	sleep 1
	if in_a timeout 25 rping -c -a "$IP_B" -C 10 -S 4096 -V >/dev/null 2>&1; then
		echo "rping -V, 10 x 4 KiB, $1: ok (data verified)"
	else
		echo "rping -V, 10 x 4 KiB, $1: FAILED"
	fi
	wait
}

bw_run() { # test server_dev client_dev desc
	in_b timeout 30 "$1" -R -F -D 3 -s 65536 --report_gbits -d "$2" >/dev/null 2>&1 &
	sleep 2
	local r
	r=$(in_a timeout 25 "$1" -R -F -D 3 -s 65536 --report_gbits -d "$3" "$IP_B" 2>&1 |
		awk '$1 == 65536 { print $4 " Gb/s" }')
	echo "$1 64 KiB, $4: ${r:-FAILED}"
	wait
}

both_ways() {
	rping_run "client $1 -> server $2"
	for t in ib_write_bw ib_send_bw ib_read_bw; do
		bw_run "$t" "$2" "$1" "client $1 -> server $2"
	done
}

# ns A: rsiw0, ns B: siw0 (as set up by the caller)
both_ways rsiw0 siw0
del_dev rsiw0 && del_dev siw0
add_dev "$NS_A" siw0 siw va && add_dev "$NS_B" rsiw0 rsiw vb
both_ways siw0 rsiw0
del_dev siw0 && del_dev rsiw0
add_dev "$NS_A" rsiw0 rsiw va && add_dev "$NS_B" siw0 siw vb
