#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make insn-profile` guest script: runs perftest latency tests on rsiw and
# on upstream siw, one after the other in one boot, under the tbprof QEMU
# plugin (tests/bench/tbprof.c), which counts the instructions, memory
# accesses and atomic instructions the guest kernel executes per
# translation block. Each measured run is framed by sync(2) calls, the
# plugin's marker: it writes the counts since the previous marker to
# $PROF_OUT/dump.N. This script records which dump holds which run in
# $PROF_OUT/phases and the kernel's symbols in $PROF_OUT/kallsyms; the host
# side (tests/bench/insn-profile.py) turns them into per-message figures.
#
# Knobs: PROF_ITERS=20000 PROF_TESTS="ib_write_lat ib_send_lat"
#        PROF_SIZE=64 PROF_MTU=1500
#        Bandwidth runs: perftest's *_bw tests (PROF_ITERS messages of
#        PROF_SIZE, one way) and "iperf3" / "iperf3_z" (TCP itself, the
#        same number of octets from ns A to ns B, plain and zero-copy;
#        driver "tcp"), e.g. PROF_TESTS="ib_write_bw iperf3 iperf3_z"
#        PROF_SIZE=65536 PROF_ITERS=2000: the host side then prints the
#        guest kernel's instructions per KiB moved, both sides together.
#        PROF_DRIVERS="rsiw siw": the drivers measured, in this order;
#        "rsiw-crc" is rsiw with MPA CRC32C on its connections
#        (mpa_crc_required=1; siw's CRC switches are compile-time
#        constants, off)
#        PROF_CRC=1: shorthand for PROF_DRIVERS="rsiw rsiw-crc", the
#        cost of the CRC (insn-profile.py then gives it per octet and
#        direction)
#        PROF_NO_PHASES=1 (host side, Makefile: no split into the phases
#        of a one-way message; the plugin then counts with inline adds,
#        several times faster)
set -u
. "$(dirname "$0")/../guest/lib.sh" >/dev/null 2>&1 || {
	echo "insn-profile: cannot source tests/guest/lib.sh" >&2
	exit 1
}
OUT=${PROF_OUT:?}
ITERS=${PROF_ITERS:-20000}
TESTS=${PROF_TESTS:-"ib_write_lat ib_send_lat"}
SIZE=${PROF_SIZE:-64}
MTU=${PROF_MTU:-1500}
if [ "${PROF_CRC:-0}" != 0 ]; then
	DRIVERS=${PROF_DRIVERS:-"rsiw rsiw-crc"}
else
	DRIVERS=${PROF_DRIVERS:-"rsiw siw"}
fi

topo_up "$MTU" >/dev/null 2>&1 && neigh_pin || exit 1
insmod "$RSIW_KO" || exit 1
modprobe siw || exit 1
cat /proc/kallsyms >"$OUT/kallsyms"
: >"$OUT/phases"
ndump=0
marker() {
	sync
	ndump=$((ndump + 1))
}

marker
port=23000
# run_perftest DRV TEST: the figure perftest prints for SIZE (typical
# latency in us, or average bandwidth in Gb/s for a *_bw test) goes to
# $OUT/figure. Markers are set here, not in a subshell, to keep ndump.
run_perftest() {
	local d=$1 t=$2 col=5
	case $t in *_bw) col=4 ;; esac
	in_b timeout 300 "$t" -R -F -p $port -d "${d}b" -s "$SIZE" -n "$ITERS" >/dev/null 2>&1 &
	sleep 1.5
	marker
	in_a timeout 300 "$t" -R -F -p $port -d "${d}a" -s "$SIZE" -n "$ITERS" "$IP_B" 2>&1 |
		awk -v s="$SIZE" -v c=$col '$1 == s {print $c}' >"$OUT/figure"
	wait
}
# run_iperf3 [-Z]: ITERS * SIZE octets of TCP from ns A to ns B; the
# receiver's Gb/s goes to $OUT/figure.
run_iperf3() {
	in_b timeout 300 iperf3 -s -1 -p $port >/dev/null 2>&1 &
	sleep 1.5
	marker
	in_a timeout 300 iperf3 -c "$IP_B" -p $port -n $((ITERS * SIZE)) -l "$SIZE" -J "$@" 2>/dev/null |
		python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' \
			>"$OUT/figure" 2>/dev/null
	wait
}
for t in $TESTS; do
	case $t in iperf3*) drivers=tcp ;; *) drivers=$DRIVERS ;; esac
	for drv in $drivers; do
		d=${drv%-crc}
		if [ "$d" != tcp ]; then
			use_pair "$d" || exit 1
		fi
		if [ "$d" = rsiw ]; then
			# read by each connection as it is set up
			echo "$([ "$drv" = rsiw-crc ] && echo 1 || echo 0)" \
				>/sys/module/rsiw/parameters/mpa_crc_required || exit 1
		fi
		port=$((port + 1))
		: >"$OUT/figure"
		case $t in
		iperf3) run_iperf3 ;;
		iperf3_z) run_iperf3 -Z ;;
		*) run_perftest "$d" "$t" ;;
		esac
		marker
		typ=$(cat "$OUT/figure")
		echo "$((ndump - 1)) $drv $t $SIZE $ITERS ${typ:-fail}" >>"$OUT/phases"
		echo "# $drv $t $SIZE B x $ITERS: ${typ:-fail} (under the plugin)"
	done
done
rm -f "$OUT/figure"
