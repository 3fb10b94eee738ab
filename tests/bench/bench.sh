#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench` guest script: the same perftest matrix on rsiw and on upstream
# siw in ONE guest boot, drivers alternating, BENCH_REPS repetitions, on the
# standard topology (namespaces rsiw-a/rsiw-b, veth) at each MTU in
# BENCH_MTUS, plus the TCP ceiling (iperf3) on the same path.
#
# Raw results go to results/bench-<date>/ (BENCH_OUT overrides):
#   results.tsv  one row per measured figure and repetition
#   runs.log     every command run with its output (both sides)
#   meta.json    guest-side facts (kernel, versions, parameters)
# tests/bench/report.py turns them into table.md and bw.png.
#
# Never fails: a test that fails for a driver is recorded as status "fail"
# and the run goes on.  Every perftest/iperf3 process runs under `timeout`,
# servers are killed after each client, and each run gets a fresh port.
#
# Knobs (environment):
#   BENCH_REPS=3          repetitions (medians are taken by report.py)
#   BENCH_DRIVERS="rsiw siw"
#   BENCH_MTUS="1500 9000"
#   BENCH_DUR=4           seconds per bandwidth/msg-rate/iperf3 run (-D);
#                         perftest samples the middle DUR-2*MARGIN seconds
#   BENCH_MARGIN=1        perftest -f margin (warm-up/cool-down) seconds
#   BENCH_LAT_ITERS=1000  iterations per latency run (-n)
#   BENCH_LAT_RUNS=3      latency runs per test, driver and repetition: a
#                         run's typical latency is bimodal under TCG (both
#                         drivers: about 13 or 17-20 us for 64 B Writes, by
#                         run), so the median needs more runs than bandwidth
#   BENCH_BW_SIZES="4096 65536 1048576"  BENCH_LAT_SIZES="64 4096"
#   BENCH_CRC=0           1: rsiw's connections with MPA CRC32C
#                         (mpa_crc_required=1); siw's cannot have it (its
#                         CRC switches are compile-time constants, off)
#   BENCH_BASE_KO=PATH    an earlier rsiw.ko to compare with: driver "base"
#                         joins BENCH_DRIVERS, the two modules are swapped
#                         before each of their matrices (same boot, same
#                         order rules), report.py adds "rsiw/base" columns;
#                         BENCH_BASE_NAME (e.g. its commit) labels it
#   BENCH_TESTS="bw lat msgrate storage pair"  (subset for quick
#                         iteration; the perftest matrix and iperf3 run
#                         when one of bw, lat, msgrate is named); pair:
#                         tests/bench/latpair.sh after the matrix, both
#                         drivers' latency from one process pair, results
#                         in pair/ (PAIR_* knobs pass through); storage:
#                         the storage section below
#   BENCH_STORAGE_MTUS    MTUs of the storage section (default: the first
#                         of BENCH_MTUS)
#   BENCH_STORAGE_RUNTIME=4, BENCH_STORAGE_RAMP=1: seconds per fio job,
#                         measured and unmeasured (tests/bench/nvme_fio.sh)
#   BENCH_STORAGE_RNBD=1  0: no RNBD unit in the storage section
#
# The storage section (issues #36 and #38): block devices on a null_blk
# of a target in this guest, each transport a unit (tests/bench/
# nvme_fio.sh storage_units, tests/guest/blkdev.sh): NVMe-oF over
# nvme-rdma on each RDMA driver of BENCH_DRIVERS, RNBD (rnbd-server and
# rnbd-client over RTRS, always_invalidate=N) over rsiw right after
# rsiw's NVMe-oF (BENCH_STORAGE_RNBD=0 leaves it out), then NVMe-oF over
# nvme-tcp on the same addresses (driver "nvmetcp"), units alternating
# by repetition: fio's 4 KiB random read at queue depth 1 (median and
# p99 latency) and 32 (IOPS), 128 KiB sequential read and write (MB/s),
# and the whole guest's CPU per I/O over each job's measured window.
# nvmet-rdma, nvme-rdma and RTRS make their rdma_cm ids in the initial
# network namespace only, so the section runs there, on a veth pair
# nva/nvb whose traffic policy routes keep on the veth
# (tests/guest/nvmeof.sh nvme_veth_up), not on the namespaces of the
# perftest matrix. nvmet-rdma listens on 4420, nvmet-tcp on 4421, RTRS
# on 1234 (each iWARP device listens with a kernel TCP socket of its
# own). Cost: 4 fio jobs of 5 s per unit and repetition, 61 s per unit
# with the connects and process starts, measured on a host with a load
# average of 14 on its 2 cores (366 s for 2 repetitions of rsiw, siw and
# nvme-tcp); RNBD adds a fourth unit, so about 12 min at the default 3
# repetitions on such a host, less on a quiet one (docs/performance.md).
# BENCH_TESTS without "storage" leaves the section out.
set -u
. "$(dirname "$0")/../guest/lib.sh" >/dev/null 2>&1 &&
	. "$RSIW_TESTDIR/blkdev.sh" && . "$(dirname "$0")/nvme_fio.sh" || {
	echo "bench: cannot source tests/guest/lib.sh, blkdev.sh or tests/bench/nvme_fio.sh" >&2
	exit 0
}

REPS=${BENCH_REPS:-3}
DRIVERS=${BENCH_DRIVERS:-"rsiw siw"}
BASE_KO=${BENCH_BASE_KO:-}
if [ -n "$BASE_KO" ] && [[ " $DRIVERS " != *" base "* ]]; then
	DRIVERS="$DRIVERS base"
fi
MTUS=${BENCH_MTUS:-"1500 9000"}
DUR=${BENCH_DUR:-4}
MARGIN=${BENCH_MARGIN:-1}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
LAT_RUNS=${BENCH_LAT_RUNS:-3}
BW_SIZES=${BENCH_BW_SIZES:-"4096 65536 1048576"}
LAT_SIZES=${BENCH_LAT_SIZES:-"64 4096"}
TESTS=${BENCH_TESTS:-"bw lat msgrate storage pair"}
STORAGE_MTUS=${BENCH_STORAGE_MTUS:-${MTUS%% *}}
CRC=${BENCH_CRC:-0}
MSGRATE_QPS=8
MSGRATE_SIZE=64
MSGRATE_LIST=16
BW_TIMEOUT=$((DUR + 40))
LAT_TIMEOUT=90
NCPU=$(nproc)

OUT=${BENCH_OUT:-$RSIW_REPO/results/bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" || exit 0
TSV=$OUT/results.tsv
LOG=$OUT/runs.log
PROGRESS=$OUT/progress
[ -f "$TSV" ] || printf 'mtu\trep\tdriver\ttest\tsize\tmetric\tvalue\tunit\tstatus\n' >"$TSV"

PORT=20000
T0=$(date +%s)
say() { printf '[bench %4ds] %s\n' $(($(date +%s) - T0)) "$*"; }
rec() { # mtu rep driver test size metric value unit status
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$TSV"
}

# Device names per driver: <drv>a on va (ns A), <drv>b on vb (ns B).
dev_a() { echo "${1}a"; }
dev_b() { echo "${1}b"; }

load_driver() {
	case $1 in
	rsiw) use_rsiw "$RSIW_KO" ;;
	base) [ -f "$BASE_KO" ] ;; # loaded by links_up
	siw) load_siw ;;
	*) return 1 ;;
	esac
}

# use_rsiw KO: rsiw loaded from KO (rsiw or base), with BENCH_CRC's CRC
# setting; the other build is unloaded first. Only with no rsiw device.
RSIW_LOADED=
use_rsiw() {
	[ "$RSIW_LOADED" = "$1" ] && lsmod | grep -q '^rsiw ' && return 0
	unload_rsiw && insmod "$1" || return 1
	RSIW_LOADED=$1
	[ "$CRC" = 0 ] || echo 1 >/sys/module/rsiw/parameters/mpa_crc_required
}

# links_for DRIVER: no RDMA link left, DRIVER's module ready (rsiw and
# base: rsiw.ko from RSIW_KO or BASE_KO) and its link type in LINK_TYPE.
links_for() {
	links_down
	LINK_TYPE=$1
	case $1 in
	rsiw) use_rsiw "$RSIW_KO" ;;
	base) LINK_TYPE=rsiw && use_rsiw "$BASE_KO" ;;
	esac
}

links_up() { # driver
	links_for "$1" && add_dev "$NS_A" "$(dev_a "$1")" "$LINK_TYPE" va &&
		add_dev "$NS_B" "$(dev_b "$1")" "$LINK_TYPE" vb
}

links_down() {
	local d
	for d in $(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1); do
		rdma link delete "$d" 2>/dev/null
	done
	true
}

# Wait until something listens on TCP port $1 in ns B (siw's iw_cm listener
# is a kernel TCP socket; iperf3 a user one), or the server pid $2 is gone.
wait_listen() {
	local i
	for i in $(seq 1 100); do
		in_b ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 2
}

stop_server() { # pid: give it a moment to finish on its own, then kill
	local pid=$1 i
	for i in $(seq 1 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null
	sleep 0.2
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# run_pair TMO SERVER_CMD... -- CLIENT_CMD...: server in ns B, client in ns A
# on a fresh port (appended as "-p PORT" unless the command has @PORT@).
# Leaves the client output in $COUT, the server's in $SOUT, status in $RC.
run_pair() {
	local tmo=$1
	shift
	local scmd=() ccmd=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	PORT=$((PORT + 1))
	scmd=("${scmd[@]//@PORT@/$PORT}")
	ccmd=("${ccmd[@]//@PORT@/$PORT}")
	local sf=/tmp/bench.server cf=/tmp/bench.client
	ip netns exec "$NS_B" timeout -k 5 "$tmo" "${scmd[@]}" >"$sf" 2>&1 &
	local spid=$!
	wait_listen "$PORT" "$spid"
	local wl=$?
	if [ $wl = 1 ]; then
		: >"$cf"
		echo "(server exited before listening)" >"$cf"
		RC=98
	else
		[ $wl = 2 ] && echo "(no listener seen on port $PORT after 10 s; trying anyway)" >>"$sf"
		in_a timeout -k 5 "$tmo" "${ccmd[@]}" >"$cf" 2>&1
		RC=$?
	fi
	stop_server "$spid"
	COUT=$(cat "$cf")
	SOUT=$(cat "$sf")
	{
		echo "=== server: ${scmd[*]}"
		echo "$SOUT"
		echo "=== client: ${ccmd[*]} (rc $RC)"
		echo "$COUT"
		echo
	} >>"$LOG"
}

# /proc/stat sampler for the CPU-cost figure: "uptime busy total user"
# (jiffies) every 0.25 s; bash builtins only, so it costs almost nothing.
CPU_SAMPLES=/tmp/bench.cpu
cpu_sampler_start() {
	(
		local up rest c u n s i w q sq st
		while :; do
			read -r up rest </proc/uptime
			read -r c u n s i w q sq st rest </proc/stat
			echo "$up $((u + n + s + q + sq + st)) $((u + n + s + i + w + q + sq + st)) $((u + n))"
			sleep 0.25
		done
	) >"$CPU_SAMPLES" 2>/dev/null &
	CPU_SAMPLER=$!
}
cpu_sampler_stop() {
	read -r CPU_END _ </proc/uptime
	kill "$CPU_SAMPLER" 2>/dev/null
	wait "$CPU_SAMPLER" 2>/dev/null
}
cpu_window_util() { # [user]: busy (or user space) % of all CPUs over the sample window
	awk -v end="$CPU_END" -v d="$DUR" -v m="$MARGIN" -v col=$([ "${1:-}" = user ] && echo 4 || echo 2) '
		BEGIN { t1 = end - m - 0.3; t0 = end - d + m - 0.3 }
		{ t[NR] = $1; b[NR] = $col; a[NR] = $3 }
		END {
			for (k = 1; k <= NR; k++) { if (t[k] <= t0) i = k; if (t[k] <= t1) j = k }
			if (!i || !j || j <= i || a[j] == a[i]) exit
			printf "%.1f", 100 * (b[j] - b[i]) / (a[j] - a[i])
		}' "$CPU_SAMPLES"
}

# The CPU split of a run: how much of the guest was busy, and how much of
# that in user space (perftest's server polls its completion queue for the
# whole run, a CPU the data path cannot use; iperf3's processes sleep).
rec_cpu_split() { # mtu rep drv tag size
	local util user
	util=$(cpu_window_util)
	user=$(cpu_window_util user)
	[ -n "$util" ] && rec "$@" cpu_util "$util" "%(of $NCPU cpus)" ok
	[ -n "$user" ] && rec "$@" cpu_user "$user" "%(of $NCPU cpus)" ok
	say "$3 mtu $1 rep $2 $4 $5: CPU busy ${util:-?}%, in user space ${user:-?}% (of $NCPU CPUs)"
}

# perftest result rows: the line after the header that starts with "#bytes".
pt_row() { # output -> first data row after the header
	awk '/#bytes/ {h=1; next} h && NF>=4 && $1 ~ /^[0-9]+$/ {print; exit}' <<<"$1"
}

PT_COMMON=(-R -F --report_gbits)

# A finite, positive number (perftest prints inf/-nan/0 when its estimate
# of the CPU clock failed; -F makes it go on with that estimate).
good_num() { awk -v v="$1" 'BEGIN { exit !(v ~ /^[0-9.]+$/ && v + 0 > 0) }'; }
# perftest's rate in duration mode is its iteration count over the sample
# window (DUR - 2*MARGIN seconds); when its CPU clock estimate failed
# ("Correlation coefficient r^2 < 0.9" under TCG) it prints 0 for the
# rate but still the count: the rate then comes from the count.
from_iters() { # row field_scale: iterations * scale / window
	awk -v s="$2" -v w="$((DUR - 2 * MARGIN))" '{ if ($2 > 0 && w > 0) printf "%.3f", $2 * s / w }' <<<"$1"
}

bw_test() { # mtu rep drv prog size
	local mtu=$1 rep=$2 drv=$3 prog=$4 size=$5 cpu=0
	local tag=${prog#ib_}
	[ "$prog" = ib_write_bw ] && [ "$size" = 65536 ] && cpu=1
	[ $cpu = 1 ] && cpu_sampler_start
	run_pair "$BW_TIMEOUT" \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_b "$drv")" -s "$size" -D "$DUR" -f "$MARGIN" -p @PORT@ -- \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_a "$drv")" -s "$size" -D "$DUR" -f "$MARGIN" -p @PORT@ "$IP_B"
	[ $cpu = 1 ] && cpu_sampler_stop
	local row gbps="" st=ok
	row=$(pt_row "$COUT")
	[ -n "$row" ] && gbps=$(awk '{print $4}' <<<"$row")
	if [ -n "$row" ] && ! good_num "$gbps"; then
		gbps=$(from_iters "$row" "$((size * 8))e-9")
		echo "=== (perftest's clock estimate failed: $gbps Gb/s from the iteration count)" >>"$LOG"
	fi
	if [ $RC != 0 ] || [ -z "$gbps" ] || ! good_num "$gbps"; then
		st=fail gbps=""
	fi
	rec "$mtu" "$rep" "$drv" "$tag" "$size" bw "$gbps" Gb/s "$st"
	say "$drv mtu $mtu rep $rep $tag $size: ${gbps:-fail} Gb/s"
	if [ $cpu = 1 ]; then
		# CPU cost per GB: busy CPU-seconds of the whole guest (both ends
		# live here) per GB moved, over perftest's sample window (the
		# DUR-2*MARGIN seconds before the client's last MARGIN+0.3 s; the
		# client exits right after its run), from /proc/stat samples.
		# perftest's own --cpu_util column reads 0.00 with siw.
		local cps="" util="" src=proc_stat
		if [ $st = ok ]; then
			util=$(cpu_window_util)
			[ -n "$util" ] && cps=$(awk -v u="$util" -v n="$NCPU" -v g="$gbps" 'BEGIN{printf "%.3f", (u/100*n)/(g/8)}')
		fi
		rec "$mtu" "$rep" "$drv" "$tag" "$size" cpu_s_per_GB "$cps" "cpu-s/GB($src)" "$([ -n "$cps" ] && echo ok || echo fail)"
		say "$drv mtu $mtu rep $rep $tag $size: cpu ${cps:-fail} cpu-s/GB"
		[ $st = ok ] && rec_cpu_split "$mtu" "$rep" "$drv" "$tag" "$size"
	fi
}

lat_test() { # mtu rep drv prog size
	local mtu=$1 rep=$2 drv=$3 prog=$4 size=$5
	local tag=${prog#ib_}
	run_pair "$LAT_TIMEOUT" \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_b "$drv")" -s "$size" -n "$LAT_ITERS" -p @PORT@ -- \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_a "$drv")" -s "$size" -n "$LAT_ITERS" -p @PORT@ "$IP_B"
	local row us="" st=ok
	row=$(pt_row "$COUT")
	# #bytes #iterations t_min t_max t_typical t_avg ...
	[ -n "$row" ] && us=$(awk '{print $5}' <<<"$row")
	if [ $RC != 0 ] || [ -z "$us" ] || ! good_num "$us"; then
		st=fail us=""
	fi
	rec "$mtu" "$rep" "$drv" "$tag" "$size" lat_typical "$us" us "$st"
	say "$drv mtu $mtu rep $rep $tag $size: ${us:-fail} us"
}

msgrate_test() { # mtu rep drv [post-list]
	local mtu=$1 rep=$2 drv=$3 list=${4:-} prog=ib_send_bw
	local tag=msgrate_send_q$MSGRATE_QPS extra=()
	if [ -n "$list" ]; then
		tag=${tag}_l$list
		extra=(-l "$list")
	fi
	run_pair "$BW_TIMEOUT" \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_b "$drv")" -s "$MSGRATE_SIZE" -q "$MSGRATE_QPS" "${extra[@]}" -D "$DUR" -f "$MARGIN" -p @PORT@ -- \
		"$prog" "${PT_COMMON[@]}" -d "$(dev_a "$drv")" -s "$MSGRATE_SIZE" -q "$MSGRATE_QPS" "${extra[@]}" -D "$DUR" -f "$MARGIN" -p @PORT@ "$IP_B"
	local row mpps="" st=ok
	row=$(pt_row "$COUT")
	# #bytes #iterations BW_peak BW_avg MsgRate[Mpps]
	[ -n "$row" ] && mpps=$(awk '{print $5}' <<<"$row")
	if [ -n "$row" ] && ! good_num "$mpps"; then
		mpps=$(from_iters "$row" 1e-6)
		echo "=== (perftest's clock estimate failed: $mpps Mpps from the iteration count)" >>"$LOG"
	fi
	if [ $RC != 0 ] || [ -z "$mpps" ] || ! good_num "$mpps"; then
		st=fail mpps=""
	fi
	rec "$mtu" "$rep" "$drv" "$tag" "$MSGRATE_SIZE" msgrate "$mpps" Mpps "$st"
	say "$drv mtu $mtu rep $rep msgrate ${MSGRATE_QPS}qp ${MSGRATE_SIZE}B${list:+ post list $list}: ${mpps:-fail} Mpps"
}

tcp_test() { # mtu rep
	local mtu=$1 rep=$2
	cpu_sampler_start
	run_pair "$BW_TIMEOUT" \
		iperf3 -s -1 -p @PORT@ -- \
		iperf3 -c "$IP_B" -p @PORT@ -t "$DUR" -J
	cpu_sampler_stop
	local gbps="" st=ok
	gbps=$(python3 -c 'import json,sys
d=json.loads(sys.stdin.read()); print("%.3f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))' <<<"$COUT" 2>/dev/null)
	if [ $RC != 0 ] || [ -z "$gbps" ]; then st=fail gbps=""; fi
	rec "$mtu" "$rep" tcp iperf3 stream bw "$gbps" Gb/s "$st"
	say "tcp mtu $mtu rep $rep iperf3: ${gbps:-fail} Gb/s"
	[ $st = ok ] && rec_cpu_split "$mtu" "$rep" tcp iperf3 stream
}

matrix() { # mtu rep drv
	local mtu=$1 rep=$2 drv=$3 p s
	if ! links_up "$drv"; then
		say "$drv: rdma link add failed; its tests are recorded as fail"
		echo "=== rdma link add for $drv failed" >>"$LOG"
	fi
	for t in $TESTS; do
		case $t in
		bw) for p in ib_write_bw ib_read_bw ib_send_bw; do
			for s in $BW_SIZES; do bw_test "$mtu" "$rep" "$drv" "$p" "$s"; done
		done ;;
		lat) for p in ib_write_lat ib_send_lat ib_read_lat; do
			for s in $LAT_SIZES; do
				for _ in $(seq "$LAT_RUNS"); do lat_test "$mtu" "$rep" "$drv" "$p" "$s"; done
			done
		done ;;
		msgrate)
			msgrate_test "$mtu" "$rep" "$drv"
			# the same with 16 work requests per post (one doorbell each)
			msgrate_test "$mtu" "$rep" "$drv" "$MSGRATE_LIST"
			;;
		esac
	done
	links_down
}

# The standard topology (lib.sh topo_up), but with distinct ifindexes for va
# and vb: topo_up creates both ends straight into their namespaces, so both
# get the same ifindex, and upstream siw binds a wildcard listener to its
# netdev's ifindex in the *listener's* namespace; with rdma_cm listening on
# every device (siwa and siwb are both visible), siwa's listener then takes
# vb's ifindex in ns B and siwb's listen fails with EADDRINUSE.
bench_topo_up() { # mtu
	topo_up "$1" || return 1
	in_a ip link del va || return 1
	ip link add va netns "$NS_A" mtu "$1" index 101 type veth peer name vb netns "$NS_B" mtu "$1" index 102 &&
		in_a ip addr add "$IP_A/24" dev va && in_b ip addr add "$IP_B/24" dev vb &&
		in_a ip link set va up && in_b ip link set vb up && neigh_pin
}

# storage_links DRIVER: DRIVER's devices DRIVERna on nva and DRIVERnb on
# nvb (nvme_veth_up's pair, in the initial network namespace), and only
# those.
storage_links() {
	links_for "$1" && rdma link add "${1}na" type "$LINK_TYPE" netdev nva &&
		rdma link add "${1}nb" type "$LINK_TYPE" netdev nvb
}

# storage_unit MTU REP UNIT: the fio jobs (tests/bench/nvme_fio.sh) on
# the block device of UNIT (nvme_fio.sh's storage_kind; blkdev.sh):
# NVMe-oF over nvme-rdma on the devices of the driver UNIT (port 1,
# 4420), over nvme-tcp for UNIT nvmetcp (port 2, 4421), or RNBD over
# rsiw's devices for UNIT rnbd (RTRS on 1234), each with the whole
# guest's CPU per I/O: busy CPU (kernel and user, every CPU) from the
# /proc/stat samples of the job's measured window (the seconds after its
# ramp and before its last second), over fio's I/O rate. Also per I/O,
# over the whole fio run: TCP segments (both ways), context switches and,
# on rsiw, its device counters (what bounds nvme-rdma: messages, socket
# sends, workqueue runs per I/O).
storage_unit() {
	local mtu=$1 rep=$2 drv=$3 job dev= out fig util cpu c0 c1 r0 r1
	storage_kind "$drv"
	local kind=$STORAGE_KIND
	{
		echo "=== storage: $drv mtu $mtu rep $rep ($kind)"
		if [ -z "$STORAGE_RDMA" ]; then links_down; else storage_links "$STORAGE_RDMA"; fi &&
			blk_export $kind "$NVME_IP_B" && blk_attach $kind "$NVME_IP_B" && dev=$(blk_disk $kind)
	} >>"$LOG" 2>&1
	[ -n "$dev" ] || say "storage: $drv mtu $mtu rep $rep: no block device over $kind (see runs.log)"
	for job in $STORAGE_JOBS; do
		fig=
		if [ -n "$dev" ]; then
			storage_fio_cmd "$job" "$dev"
			r0=$(storage_rdma_counts)
			c0=$(storage_counts)
			cpu_sampler_start
			out=$(timeout -k 5 $((STORAGE_RAMP + STORAGE_RUNTIME + 60)) "${FIO_CMD[@]}" 2>&1)
			cpu_sampler_stop
			c1=$(storage_counts)
			r1=$(storage_rdma_counts)
			printf '=== %s\n%s\n\n' "${FIO_CMD[*]}" "$out" >>"$LOG"
			fig=$(storage_figures "$out")
			if [ -n "$fig" ]; then
				storage_rec_counts "$mtu" "$rep" "$drv" "$job" "$(storage_per_io "$c0" "$c1" "$fig")"
				storage_rec_rdma "$mtu" "$rep" "$drv" "$job" "$r0" "$r1" "$fig"
			fi
		fi
		cpu=
		if [ -n "$fig" ]; then
			util=$(DUR=$((STORAGE_RAMP + STORAGE_RUNTIME)) MARGIN=$STORAGE_RAMP cpu_window_util)
			[ -n "$util" ] && cpu=$(awk -v u="$util" -v n="$NCPU" -v r="${fig%% *}" \
				'BEGIN { if (r > 0) printf "%.1f", u / 100 * n * 1e6 / r }')
		fi
		storage_rec_job "$mtu" "$rep" "$drv" "$job" "$fig" "cpu_us_per_io=$cpu"
		say "storage: $drv mtu $mtu rep $rep $job: ${fig:-fail} (IOPS p50us p99us MB/s), CPU ${cpu:-?} us/IO"
	done
	{
		blk_detach $kind
		blk_unexport $kind
		links_down
		# (that the traffic crossed the veth, not loopback)
		ip -s link show nva
		ip -s link show lo
	} >>"$LOG" 2>&1
}

# storage_section: the storage units (nvme_fio.sh's storage_units: each
# driver's, RNBD's, nvme-tcp's) of every MTU in STORAGE_MTUS and
# repetition, their order alternating (as the drivers of the matrix do),
# the target's null_blk (no memory: an I/O costs it nothing) set up once
# per boot.
storage_section() {
	local mtu rep drv
	for mtu in $STORAGE_MTUS; do
		if ! { nvme_veth_up "$mtu" && { [ -b /dev/nullb0 ] || nvme_null_up gb=1; }; } >>"$LOG" 2>&1; then
			say "storage: the veth pair or the target at MTU $mtu failed (see runs.log)"
			continue
		fi
		for rep in $(seq 1 "$REPS"); do
			# (DRIVERS unquoted: one word each)
			# shellcheck disable=SC2086
			for drv in $(storage_units "$rep" $DRIVERS); do
				unit "$mtu" "$rep" "storage-$drv" storage_unit "$mtu" "$rep" "$drv"
			done
		done
		nvme_veth_down
	done
	{
		nvme_target_down
		nvme_veth_down
	} >>"$LOG" 2>&1
}

# ---- resume after a guest crash
# Each unit (one driver's matrix, or one iperf3 run, at one MTU and rep) is
# bracketed by "start"/"done" lines in $PROGRESS.  If a driver oopses the
# guest, `make bench` boots again with the same BENCH_OUT: finished units are
# skipped, and the driver that was running is marked crashed (its remaining
# units are recorded as "crash" rather than run again).
CRASHED=""
if [ -s "$PROGRESS" ]; then
	last=$(tail -1 "$PROGRESS")
	if [ "$last" = "start pair" ]; then
		# The guest died in latpair.sh: not run again.
		echo "=== guest died during latpair.sh; resumed in a new boot" >>"$LOG"
		echo "done pair" >>"$PROGRESS"
	elif [ "${last%% *}" = start ]; then
		read -r _ cmtu crep cdrv <<<"$last"
		echo "crashed $cmtu $crep $cdrv" >>"$PROGRESS"
		echo "=== guest died during $cdrv mtu $cmtu rep $crep; resumed in a new boot" >>"$LOG"
		rec "$cmtu" "$crep" "$cdrv" all - - "" - crash
		echo "done $cmtu $crep $cdrv" >>"$PROGRESS"
	fi
	CRASHED=$(awk '$1 == "crashed" {print $4}' "$PROGRESS" | sort -u | tr '\n' ' ')
fi
unit_done() { grep -qx "done $1 $2 $3" "$PROGRESS" 2>/dev/null; }
is_crashed() { [[ " $CRASHED " == *" $1 "* ]]; }

# unit MTU REP NAME COMMAND...: COMMAND as the unit NAME of MTU and REP,
# bracketed by start and done in PROGRESS; nothing when it is done
# already, a "crash" row when NAME crashed the guest earlier.
unit() {
	local mtu=$1 rep=$2 name=$3
	shift 3
	unit_done "$mtu" "$rep" "$name" && return 0
	if is_crashed "$name"; then
		rec "$mtu" "$rep" "$name" all - - "" - crash
		say "$name mtu $mtu rep $rep: skipped ($name crashed the guest earlier)"
	else
		echo "start $mtu $rep $name" >>"$PROGRESS"
		sync
		"$@"
	fi
	echo "done $mtu $rep $name" >>"$PROGRESS"
	sync
}

# ---- meta
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
rsiw_ver=$(git -C "$RSIW_REPO" rev-parse --short HEAD 2>/dev/null)
[ -f "$OUT/meta.json" ] || cat >"$OUT/meta.json" <<EOF
{
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "guest_kernel": "$(uname -r)",
  "guest_kernel_version": "$(uname -v)",
  "guest_cpus": $NCPU,
  "guest_mem_kib": $(awk '/MemTotal/ {print $2}' /proc/meminfo),
  "guest_cpu_model": "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)",
  "qemu_version": "$(qemu-system-x86_64 --version 2>/dev/null | head -1)",
  "rdma_core": "$(ver rdma-core)",
  "perftest": "$(ver perftest)",
  "iperf3": "$(ver iperf3)",
  "rsiw_commit": "${rsiw_ver:-unknown}",
  "reps": $REPS,
  "drivers": "$DRIVERS",
  "mtus": "$MTUS",
  "duration_s": $DUR,
  "margin_s": $MARGIN,
  "lat_iters": $LAT_ITERS,
  "lat_runs": $LAT_RUNS,
  "bw_sizes": "$BW_SIZES",
  "lat_sizes": "$LAT_SIZES",
  "msgrate": "ib_send_bw -q $MSGRATE_QPS -s $MSGRATE_SIZE",
  "perftest_flags": "${PT_COMMON[*]}",
  "crc": $CRC,
  "base_ko": "$BASE_KO",
  "base_name": "${BENCH_BASE_NAME:-base}",
  "tests": "$TESTS",
  "storage_mtus": "$STORAGE_MTUS",
  "storage_runtime_s": $STORAGE_RUNTIME,
  "storage_ramp_s": $STORAGE_RAMP,
  "storage_units": "$(storage_units 1 $DRIVERS)",
  "fio": "$(ver fio)"
}
EOF

say "results in $OUT${CRASHED:+ (resumed; crashed so far: $CRASHED)} (reps $REPS, drivers '$DRIVERS', mtus '$MTUS', -D $DUR -f $MARGIN, lat -n $LAT_ITERS)"
for drv in $DRIVERS; do
	load_driver "$drv" || say "cannot load $drv; its tests will fail"
done
if [ "$CRC" != 0 ] && [[ " $DRIVERS " == *" rsiw "* ]] &&
	[ "$(cat /sys/module/rsiw/parameters/mpa_crc_required 2>/dev/null)" != Y ]; then
	say "cannot set rsiw's mpa_crc_required"
fi

kmsg_mark
# (the perftest matrix and iperf3 only when a test of theirs is asked for)
[[ " $TESTS " == *" bw "* || " $TESTS " == *" lat "* || " $TESTS " == *" msgrate "* ]] || MATRIX_MTUS=""
for mtu in ${MATRIX_MTUS-$MTUS}; do
	bench_topo_up "$mtu" || { say "topology with MTU $mtu failed"; continue; }
	for rep in $(seq 1 "$REPS"); do
		# Alternate the driver order between repetitions.
		order=$DRIVERS
		[ $((rep % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$DRIVERS" | tac | tr '\n' ' ')
		for drv in $order; do
			unit "$mtu" "$rep" "$drv" matrix "$mtu" "$rep" "$drv"
		done
		unit "$mtu" "$rep" tcp tcp_test "$mtu" "$rep"
	done
	links_down
	topo_down
done

# ---- storage: NVMe-oF over nvme-rdma on each driver and over nvme-tcp,
# RNBD over rsiw
[[ " $TESTS " == *" storage "* ]] && storage_section

# Both drivers at once, alternating every few iterations (latpair.sh):
# latency ratios that the host's speed drift does not move.
if [[ " $TESTS " == *" pair "* ]] && ! grep -qx "done pair" "$PROGRESS" 2>/dev/null; then
	[ -z "$BASE_KO" ] || use_rsiw "$RSIW_KO" || say "cannot load $RSIW_KO again"
	echo "start pair" >>"$PROGRESS"
	sync
	say "interleaved latency (latpair.sh), mtus '$MTUS'"
	PAIR_MTUS=${PAIR_MTUS:-$MTUS} PAIR_OUT=$OUT/pair "$RSIW_REPO/tests/bench/latpair.sh" >>"$LOG" 2>&1 ||
		say "latpair.sh failed (see runs.log)"
	echo "done pair" >>"$PROGRESS"
	sync
fi

bad=$(dmesg | tail -n +"$((KMSG_LINE + 1))" | grep -E "$KMSG_BAD")
if [ -n "$bad" ]; then
	say "kernel log warnings during the run (see $OUT/kmsg.txt)"
fi
dmesg >"$OUT/kmsg.txt"
# The guest's clock source at the end (qemu-images/run passes tsc=reliable;
# an HPET clock makes every timestamp an emulated MMIO read).
cat /sys/devices/system/clocksource/clocksource0/current_clocksource >"$OUT/clocksource" 2>/dev/null
say "done: $(grep -c $'\tok$' "$TSV") ok, $(grep -c $'\tfail$' "$TSV") fail"
sync
exit 0
