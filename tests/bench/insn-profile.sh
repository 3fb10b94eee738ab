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
for t in $TESTS; do
	for drv in $DRIVERS; do
		d=${drv%-crc}
		use_pair "$d" || exit 1
		if [ "$d" = rsiw ]; then
			# read by each connection as it is set up
			echo "$([ "$drv" = rsiw-crc ] && echo 1 || echo 0)" \
				>/sys/module/rsiw/parameters/mpa_crc_required || exit 1
		fi
		port=$((port + 1))
		in_b timeout 300 "$t" -R -F -p $port -d "${d}b" -s "$SIZE" -n "$ITERS" >/dev/null 2>&1 &
		sleep 1.5
		marker
		typ=$(in_a timeout 300 "$t" -R -F -p $port -d "${d}a" -s "$SIZE" -n "$ITERS" "$IP_B" 2>&1 |
			awk -v s="$SIZE" '$1 == s {print $5}')
		wait
		marker
		echo "$((ndump - 1)) $drv $t $SIZE $ITERS ${typ:-fail}" >>"$OUT/phases"
		echo "# $drv $t $SIZE B x $ITERS: typical ${typ:-fail} us (under the plugin)"
	done
done
