#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`, in guest a of two (qemu-images/run-pair): rsiw here, upstream
# siw in guest b, one virtio-net link between them. Shows both devices
# through stock rdma-core, runs rping with data verification and perftest
# bandwidth both ways, and ends with a table of what it measured.
set -u
. "$(dirname "$0")/guest/lib.sh"
. "$(dirname "$0")/guest/pair.sh"
. "$(dirname "$0")/guest/perftest.sh"
step() { printf '\n### %s\n' "$*"; }
PORT=7174 DUR=4 MARGIN=1

step "two guests: a ($RSIW_ADDR) runs rsiw, b ($RSIW_PEER) runs upstream siw"
echo "kernel $(uname -r), rdma-core $(dpkg-query -W -f='${Version}' rdma-core)"
pair_up || exit 1
step "guest a: insmod rsiw.ko; rdma link add rsiw0 type rsiw netdev eth0"
load_rsiw && rdma link add rsiw0 type rsiw netdev eth0 || exit 1
step "guest b: modprobe siw; rdma link add siw0 type siw netdev eth0"
pair_run "load_siw && rdma link add siw0 type siw netdev eth0" || exit 1
step "rdma link show (a, then b)"
rdma link show
pair_run "rdma link show"
step "ibv_devinfo -d rsiw0 (stock libsiw provider)"
ibv_devinfo -d rsiw0 | head -20

# Results for the table: row name -> "a client" and "b client" cells.
declare -A cell
rows=()
put() { # ROW WAY VALUE
	[[ " ${rows[*]} " == *" $1 "* ]] || rows+=("$1")
	cell[$1,$2]=$3
}

step "rping -V, 20 x 64 KB, data verified"
if pair_rping_there $PORT 20 65000 >/dev/null 2>&1; then r=verified; else r=FAILED; fi
echo "rsiw client -> siw server: $r"
put rping a $r
if pair_rping_here $PORT 20 65000 >/dev/null 2>&1; then r=verified; else r=FAILED; fi
echo "siw client -> rsiw server: $r"
put rping b $r

for p in ib_write_bw ib_read_bw ib_send_bw; do
	step "$p, 64 KiB, $DUR s"
	for way in a b; do
		if [ $way = a ]; then
			out=$(pair_perf_there $((PORT + 1)) rsiw0 siw0 $p --report_gbits -s 65536 -D $DUR -f $MARGIN)
		else
			out=$(pair_perf_here $((PORT + 1)) rsiw0 siw0 $p --report_gbits -s 65536 -D $DUR -f $MARGIN)
		fi
		g=$(pt_gbps "$(pt_row "$out")" 65536 $((DUR - 2 * MARGIN)))
		[ -z "$g" ] || g=$(printf '%.3g' "$g")
		echo "$([ $way = a ] && echo "rsiw client -> siw server" || echo "siw client -> rsiw server"): ${g:-FAILED}${g:+ Gb/s}"
		put "$p" $way "${g:-FAILED}${g:+ Gb/s}"
	done
done

step "summary: rsiw (guest a) and upstream siw (guest b), virtio-net, MTU 1500"
printf '| %-22s | %-26s | %-26s |\n' test "rsiw client, siw server" "siw client, rsiw server"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..28})" "$(printf -- '-%.0s' {1..28})"
for r in "${rows[@]}"; do
	case $r in
	rping) name="rping -V 20 x 64 KB" ;;
	ib_write_bw) name="RDMA Write 64 KiB" ;;
	ib_read_bw) name="RDMA Read 64 KiB" ;;
	ib_send_bw) name="Send 64 KiB" ;;
	esac
	printf '| %-22s | %-26s | %-26s |\n' "$name" "${cell[$r,a]}" "${cell[$r,b]}"
done
echo "(RDMA Read: the client reads from the server; rates from perftest's"
echo " average, or from its iteration count when its clock estimate failed)"

step "teardown"
rdma link delete rsiw0 && rmmod rsiw && echo "guest a: rsiw removed"
pair_run "rdma link delete siw0 && rmmod siw && echo 'guest b: siw removed'"
echo "kernel log warnings in guest a: $(dmesg | grep -cE "$KMSG_BAD")"
pair_run "echo \"kernel log warnings in guest b: \$(dmesg | grep -cE \"\$KMSG_BAD\")\""
