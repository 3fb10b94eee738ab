#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`, second part: rsiw against upstream siw and TCP between two
# guests (qemu-images/run-pair: one vCPU each, virtio-net joined by QEMU
# datagram sockets on 127.0.0.1), in guest a; guest b runs pair_agent.
# Both guests run the same driver; drivers alternate by repetition.
#
# At each MTU in BENCH_PAIR_MTUS: perftest Write, Read and Send bandwidth
# (4 KiB, 64 KiB, 1 MiB), Write and Send latency of 64 B (typical), the
# CPU each guest spends per GB moved (ib_write_bw 64 KiB, and iperf3),
# and the TCP figures of the same link: iperf3 and iperf3 -Z (zero copy;
# the better of the two is TCP's ceiling) and qperf's tcp_lat of 64 B (the
# round-trip floor of a ping-pong over that link).
#
# Rows go to $BENCH_OUT/pair/results.tsv (the columns of bench.sh's
# results.tsv); tests/bench/report.py adds the "Two guests" section.
# Never fails: what does not work is recorded as "fail".
#
# Storage (BENCH_TESTS names "storage", as by default): block devices
# with their target (a null_blk) in guest b and their host in guest a
# (tests/guest/blkdev.sh): NVMe-oF over nvme-rdma on rsiw and on siw,
# RNBD over rsiw (driver "rnbd", after rsiw's NVMe-oF; BENCH_STORAGE_RNBD=0
# leaves it out) and NVMe-oF over nvme-tcp on the same link (driver
# "nvmetcp"; nvmet-rdma on 4420, nvmet-tcp on 4421, RTRS on 1234), units
# alternating by repetition (nvme_fio.sh storage_units): the fio jobs of
# tests/bench/nvme_fio.sh, and each guest's CPU per I/O (cpu_us_per_io_a:
# the host, _b: the target), sampled in the middle of each job. Cost:
# 440 s for the 2 default repetitions of rsiw, siw and nvme-tcp,
# measured on a host with a load average of 14 on 2 cores; RNBD adds a
# quarter to that.
#
# Knobs: BENCH_PAIR_REPS=2, BENCH_PAIR_MTUS="1500 9000", BENCH_PAIR_DUR=6
# (seconds per bandwidth run; the CPU is sampled over its middle),
# BENCH_PAIR_SIZES="4096 65536 1048576", BENCH_MARGIN=1, BENCH_LAT_ITERS=1000;
# BENCH_TESTS (the perftest and TCP figures when it names one of bw, lat,
# msgrate; storage when it names storage), BENCH_STORAGE_MTUS (default:
# the first of BENCH_PAIR_MTUS), BENCH_STORAGE_RUNTIME, BENCH_STORAGE_RAMP.
set -u
. "$(dirname "$0")/../guest/lib.sh"
. "$RSIW_TESTDIR/pair.sh"
. "$RSIW_TESTDIR/perftest.sh"
. "$RSIW_TESTDIR/blkdev.sh"
. "$(dirname "$0")/nvme_fio.sh"

REPS=${BENCH_PAIR_REPS:-2}
MTUS=${BENCH_PAIR_MTUS:-"1500 9000"}
DUR=${BENCH_PAIR_DUR:-6}
MARGIN=${BENCH_MARGIN:-1}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
SIZES=${BENCH_PAIR_SIZES:-"4096 65536 1048576"}
TESTS=${BENCH_TESTS:-"bw lat msgrate storage pair"}
STORAGE_MTUS=${BENCH_STORAGE_MTUS:-${MTUS%% *}}
OUT=${BENCH_OUT:-$RSIW_REPO/results/bench-pair-$(date +%Y%m%d-%H%M%S)}/pair
PORT=7300
mkdir -p "$OUT" || exit 0
TSV=$OUT/results.tsv LOG=$OUT/runs.log
[ -f "$TSV" ] || printf 'mtu\trep\tdriver\ttest\tsize\tmetric\tvalue\tunit\tstatus\n' >"$TSV"
T0=$(date +%s)
say() { printf '[pair bench %4ds] %s\n' $(($(date +%s) - T0)) "$*"; }
rec() { # mtu rep driver test size metric value unit status
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$TSV"
}
both() { eval "$1" && pair_run "$1" >/dev/null; }
next_port() { PORT=$((PORT + 1)); }

# busy_of: "busy total kernel" jiffies from the cpu line of /proc/stat
# (stdin); kernel: busy outside user space (system, irq, softirq, steal).
busy_of() { awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6, t, t - $5 - $6 - $2 - $3; exit }'; }
# sample: "busy total" of this guest, then of guest b (SAMPLE_A, SAMPLE_B)
sample() {
	SAMPLE_A=$(busy_of </proc/stat)
	SAMPLE_B=$(pair_run "head -n 1 /proc/stat" | busy_of)
}

# perf_there PORT DEV PROG ARGS...: perftest's server in b, its client
# here in the background (PERF_PID, output in PERF_OUT); b's server is
# PERF_SERVER. Guest b is free for pair_run while the client runs.
PERF_OUT=/tmp/pair-bench.out
perf_there() {
	local port=$1 dev=$2
	shift 2
	pair_start "timeout $((DUR + 60)) $* -R -F -d $dev -p $port"
	PERF_SERVER=$PAIR_ID
	pair_run "wait_listen \$\$ $port 10" >/dev/null || { pair_stop $PERF_SERVER; return 1; }
	timeout $((DUR + 50)) "$@" -R -F -d "$dev" -p "$port" "$RSIW_PEER" >$PERF_OUT 2>&1 &
	PERF_PID=$!
}
# perf_end: waits for both ends of perf_there (not in a subshell: the
# client is this shell's child); the client's output is in PERF_OUT.
perf_end() {
	wait $PERF_PID || pair_stop $PERF_SERVER
	pair_wait $PERF_SERVER 30 >/dev/null
}
# cpu_per_gb A0 A1 GBPS [kernel]: CPU-seconds per GB of a guest whose
# jiffies went from A0 to A1 (each from busy_of) while it moved GBPS Gb/s:
# all its busy time, or with "kernel" the time outside user space.
cpu_per_gb() {
	awk -v a="$1" -v b="$2" -v g="$3" -v c=$([ "${4:-}" = kernel ] && echo 3 || echo 1) 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (y[2] <= x[2] || g <= 0) exit
		printf "%.3f", (y[c] - x[c]) / (y[2] - x[2]) / (g / 8) }'
}

# drv_up DRIVER: DRIVER's device (rsiw0 or siw0) on eth0 in both guests.
drv_up() {
	local dev=${1}0 load=load_$1
	both "rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null; true" &&
		both "$load && rdma link add $dev type $1 netdev eth0"
}

# bw MTU REP DRIVER PROG SIZE: one perftest bandwidth run, server in b;
# for ib_write_bw of 64 KiB also both guests' CPU per GB, sampled over
# perftest's measuring window.
bw() {
	local mtu=$1 rep=$2 drv=$3 prog=$4 size=$5 out g a0= a1= b0= b1=
	local tag=${prog#ib_} cpu=0
	[ "$prog" = ib_write_bw ] && [ "$size" = 65536 ] && cpu=1
	next_port
	out=
	if perf_there $PORT ${drv}0 "$prog" --report_gbits -s "$size" -D "$DUR" -f "$MARGIN"; then
		if [ $cpu = 1 ]; then
			# within perftest's measuring window (the connection takes
			# a moment first)
			sleep $((MARGIN + 1))
			sample && a0=$SAMPLE_A b0=$SAMPLE_B
			sleep $((DUR - 2 * MARGIN - 1))
			sample && a1=$SAMPLE_A b1=$SAMPLE_B
		fi
		perf_end
		out=$(tr -d '\0' <$PERF_OUT)
	fi
	printf '=== %s mtu %s rep %s %s %s\n%s\n' "$drv" "$mtu" "$rep" "$prog" "$size" "$out" >>"$LOG"
	g=$(pt_gbps "$(pt_row "$out")" "$size" $((DUR - 2 * MARGIN)))
	rec "$mtu" "$rep" "$drv" "$tag" "$size" bw "$g" Gb/s "$([ -n "$g" ] && echo ok || echo fail)"
	say "$drv mtu $mtu rep $rep $tag $size: ${g:-fail} Gb/s"
	[ $cpu = 1 ] && [ -n "$g" ] && [ -n "$a1" ] || return 0
	cpu_rec "$mtu" "$rep" "$drv" "$tag" "$size" "$a0" "$a1" "$b0" "$b1" "$g"
}

# cpu_rec MTU REP DRIVER TEST SIZE A0 A1 B0 B1 GBPS: each guest's CPU
# per GB, all of it (cpu_a, cpu_b) and outside user space (kcpu_a,
# kcpu_b: perftest polls its CQ in user space for the whole run).
cpu_rec() {
	local side v k msg=
	for side in a b; do
		for k in "" kernel; do
			if [ $side = a ]; then v=$(cpu_per_gb "$6" "$7" "${10}" $k); else v=$(cpu_per_gb "$8" "$9" "${10}" $k); fi
			rec "$1" "$2" "$3" "$4" "$5" "${k:+k}cpu_$side" "$v" cpu-s/GB "$([ -n "$v" ] && echo ok || echo fail)"
			msg+=" ${k:-all}@$side ${v:-?}"
		done
	done
	say "$3 mtu $1 rep $2 $4 $5: CPU-s per GB:$msg"
}

# lat MTU REP DRIVER PROG: 64 B ping-pong, server in b; typical latency.
lat() {
	local mtu=$1 rep=$2 drv=$3 prog=$4 out= us
	next_port
	if perf_there $PORT ${drv}0 "$prog" -s 64 -n "$LAT_ITERS"; then
		perf_end
		out=$(tr -d '\0' <$PERF_OUT)
	fi
	printf '=== %s mtu %s rep %s %s 64\n%s\n' "$drv" "$mtu" "$rep" "$prog" "$out" >>"$LOG"
	# #bytes #iterations t_min t_max t_typical ...
	us=$(awk '{print $5}' <<<"$(pt_row "$out")")
	good_num "$us" || us=
	rec "$mtu" "$rep" "$drv" "${prog#ib_}" 64 lat_typical "$us" us "$([ -n "$us" ] && echo ok || echo fail)"
	say "$drv mtu $mtu rep $rep ${prog#ib_} 64: ${us:-fail} us"
}

# tcp MTU REP [-Z]: iperf3, one stream, a to b; with both guests' CPU.
tcp() {
	local mtu=$1 rep=$2 z=${3:-} out g a0 a1 b0 b1 test=iperf3
	[ -n "$z" ] && test=iperf3_z
	next_port
	pair_start "timeout $((DUR + 30)) iperf3 -s -1 -p $PORT"
	local id=$PAIR_ID
	pair_run "wait_listen \$\$ $PORT 10" >/dev/null || { pair_stop $id; return 0; }
	timeout $((DUR + 20)) iperf3 -c "$RSIW_PEER" -p $PORT -t "$DUR" -J $z >/tmp/iperf.json 2>&1 &
	local c=$!
	sleep $((MARGIN + 1))
	sample && a0=$SAMPLE_A b0=$SAMPLE_B
	sleep $((DUR - 2 * MARGIN - 1))
	sample && a1=$SAMPLE_A b1=$SAMPLE_B
	wait $c
	pair_wait $id 20 >/dev/null
	g=$(python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' </tmp/iperf.json 2>/dev/null)
	rec "$mtu" "$rep" tcp "$test" stream bw "$g" Gb/s "$([ -n "$g" ] && echo ok || echo fail)"
	say "tcp mtu $mtu rep $rep $test: ${g:-fail} Gb/s"
	[ -n "$g" ] && cpu_rec "$mtu" "$rep" tcp "$test" stream "$a0" "$a1" "$b0" "$b1" "$g"
}

# tcp_lat MTU REP: qperf tcp_lat of 64 B (server in b); its latency is
# half the round trip, as perftest's.
tcp_lat() {
	local mtu=$1 rep=$2 out us
	next_port
	pair_start "timeout 40 qperf -lp $PORT"
	local id=$PAIR_ID
	pair_run "wait_listen \$\$ $PORT 10" >/dev/null || { pair_stop $id; return 0; }
	out=$(timeout 30 qperf -lp $PORT -m 64 -t 3 -vu "$RSIW_PEER" tcp_lat 2>&1)
	pair_stop $id
	printf '=== qperf mtu %s rep %s tcp_lat 64\n%s\n' "$mtu" "$rep" "$out" >>"$LOG"
	us=$(awk '/latency/ { v = $3; if ($4 == "ms") v *= 1000; if ($4 == "ns") v /= 1000; print v; exit }' <<<"$out")
	good_num "$us" || us=
	rec "$mtu" "$rep" tcp qperf_tcp_lat 64 lat "$us" us "$([ -n "$us" ] && echo ok || echo fail)"
	say "tcp mtu $mtu rep $rep qperf tcp_lat 64: ${us:-fail} us"
}

# cpu_per_io A0 A1 NCPU IOPS: microseconds of CPU per I/O of a guest of
# NCPU CPUs whose jiffies went from A0 to A1 (each from busy_of) while it
# did IOPS I/Os per second.
cpu_per_io() {
	awk -v a="$1" -v b="$2" -v n="$3" -v r="$4" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (y[2] <= x[2] || r <= 0) exit
		printf "%.1f", (y[1] - x[1]) / (y[2] - x[2]) * n * 1e6 / r }'
}

# storage MTU REP UNIT: the fio jobs on the block device of guest b's
# target over UNIT's transport (nvme_fio.sh storage_kind: NVMe-oF over
# nvme-rdma on the driver UNIT, rsiw or siw, in both guests; over
# nvme-tcp for UNIT nvmetcp; RNBD over rsiw for UNIT rnbd); both guests'
# CPU per I/O from /proc/stat
# samples taken in the job's measured window; guest a's TCP segments,
# context switches and rsiw counters per I/O over the whole run (the _a
# rows of storage_rec_counts and storage_rec_rdma).
storage() {
	local mtu=$1 rep=$2 drv=$3 job dev= out fig a0 a1 b0 b1 ca cb c0 c1 r0 r1
	storage_kind "$drv"
	local kind=$STORAGE_KIND
	{
		echo "=== storage: $drv mtu $mtu rep $rep ($kind)"
		if [ -z "$STORAGE_RDMA" ]; then
			both "rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null; true"
		else
			drv_up "$STORAGE_RDMA"
		fi &&
			pair_run ". \$RSIW_TESTDIR/blkdev.sh && blk_export $kind $RSIW_PEER" &&
			blk_attach $kind "$RSIW_PEER" && dev=$(blk_disk $kind)
	} >>"$LOG" 2>&1
	[ -n "$dev" ] || say "storage: $drv mtu $mtu rep $rep: no block device over $kind (see runs.log)"
	for job in $STORAGE_JOBS; do
		fig= ca= cb= a0= a1= b0= b1=
		if [ -n "$dev" ]; then
			storage_fio_cmd "$job" "$dev"
			r0=$(storage_rdma_counts)
			c0=$(storage_counts)
			timeout -k 5 $((STORAGE_RAMP + STORAGE_RUNTIME + 60)) "${FIO_CMD[@]}" >/tmp/pair-fio.out 2>&1 &
			local f=$!
			# (fio starts, ramps up, then measures STORAGE_RUNTIME s)
			sleep $((STORAGE_RAMP + 1))
			sample && a0=$SAMPLE_A b0=$SAMPLE_B
			sleep $((STORAGE_RUNTIME > 3 ? STORAGE_RUNTIME - 2 : 1))
			sample && a1=$SAMPLE_A b1=$SAMPLE_B
			wait $f
			c1=$(storage_counts)
			r1=$(storage_rdma_counts)
			out=$(cat /tmp/pair-fio.out)
			printf '=== %s\n%s\n\n' "${FIO_CMD[*]}" "$out" >>"$LOG"
			fig=$(storage_figures "$out")
			if [ -n "$fig" ]; then
				storage_rec_counts "$mtu" "$rep" "$drv" "$job" "$(storage_per_io "$c0" "$c1" "$fig")" _a
				storage_rec_rdma "$mtu" "$rep" "$drv" "$job" "$r0" "$r1" "$fig" _a
			fi
		fi
		if [ -n "$fig" ] && [ -n "$a1" ]; then
			ca=$(cpu_per_io "$a0" "$a1" "$NCPU_A" "${fig%% *}")
			cb=$(cpu_per_io "$b0" "$b1" "$NCPU_B" "${fig%% *}")
		fi
		storage_rec_job "$mtu" "$rep" "$drv" "$job" "$fig" "cpu_us_per_io_a=$ca" "cpu_us_per_io_b=$cb"
		say "storage: $drv mtu $mtu rep $rep $job: ${fig:-fail} (IOPS p50us p99us MB/s), CPU us/IO host ${ca:-?} target ${cb:-?}"
	done
	{
		blk_detach $kind
		pair_run ". \$RSIW_TESTDIR/blkdev.sh && blk_unexport $kind"
		both "rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null; true"
	} >>"$LOG" 2>&1
}

pair_up >/dev/null || { say "link down"; pair_quit; exit 0; }
pair_run "load_rsiw && load_siw" >/dev/null && load_rsiw && load_siw || say "loading the drivers failed"
NCPU_A=$(nproc) NCPU_B=$(pair_run nproc)
kmsg_mark
# (the perftest and TCP figures only when a test of theirs is asked for)
[[ " $TESTS " == *" bw "* || " $TESTS " == *" lat "* || " $TESTS " == *" msgrate "* ]] || MATRIX_MTUS=""
for mtu in ${MATRIX_MTUS-$MTUS}; do
	both "ip link set eth0 mtu $mtu" || { say "MTU $mtu refused"; continue; }
	for rep in $(seq "$REPS"); do
		order="rsiw siw"
		[ $((rep % 2)) = 0 ] && order="siw rsiw"
		for drv in $order; do
			drv_up $drv || { say "$drv: rdma link add failed"; continue; }
			for p in ib_write_bw ib_read_bw ib_send_bw; do
				for s in $SIZES; do bw "$mtu" "$rep" $drv $p "$s"; done
			done
			lat "$mtu" "$rep" $drv ib_write_lat
			lat "$mtu" "$rep" $drv ib_send_lat
		done
		both "rdma link delete rsiw0 2>/dev/null; rdma link delete siw0 2>/dev/null; true"
		tcp "$mtu" "$rep"
		tcp "$mtu" "$rep" -Z
		tcp_lat "$mtu" "$rep"
	done
done
if [[ " $TESTS " == *" storage "* ]]; then
	pair_run ". \$RSIW_TESTDIR/nvmeof.sh && nvme_null_up gb=1" >>"$LOG" 2>&1 ||
		say "storage: the target in guest b failed (see runs.log)"
	for mtu in $STORAGE_MTUS; do
		both "ip link set eth0 mtu $mtu" || { say "MTU $mtu refused"; continue; }
		for rep in $(seq "$REPS"); do
			for drv in $(storage_units "$rep" rsiw siw); do storage "$mtu" "$rep" $drv; done
		done
	done
	pair_run ". \$RSIW_TESTDIR/nvmeof.sh && nvme_target_down" >>"$LOG" 2>&1
fi
both "ip link set eth0 mtu 1500"
dmesg >"$OUT/kmsg-a.txt"
pair_run dmesg >"$OUT/kmsg-b.txt"
say "done: $(grep -c $'\tok$' "$TSV") ok, $(grep -c $'\tfail$' "$TSV") fail"
exit 0
