# SPDX-License-Identifier: GPL-2.0
# The storage section's units and fio jobs (tests/bench/bench.sh and
# pair_bench.sh). A unit is one transport's block device (blkdev.sh) on
# the target's null_blk: NVMe-oF over nvme-rdma on an RDMA driver (unit
# rsiw, siw or base), over nvme-tcp (unit nvmetcp), or RNBD over rsiw
# (unit rnbd). On its block device, O_DIRECT with libaio, one job each:
#   randread_qd1   4 KiB random read, queue depth 1: latency (median, p99)
#   randread_qd32  4 KiB random read, queue depth 32: IOPS
#   seqread        128 KiB sequential read, queue depth 16: MB/s
#   seqwrite       128 KiB sequential write, queue depth 16: MB/s
# each running STORAGE_RAMP seconds unmeasured, then STORAGE_RUNTIME
# seconds measured (BENCH_STORAGE_RAMP=1, BENCH_STORAGE_RUNTIME=4).

# Every transport's rows are named nvme_JOB (the section began with
# NVMe-oF alone; tests/bench/report.py keys on it); the driver column
# names the unit. BENCH_STORAGE_RNBD=0 leaves RNBD out.

STORAGE_JOBS="randread_qd1 randread_qd32 seqread seqwrite"
STORAGE_RAMP=${BENCH_STORAGE_RAMP:-1}
STORAGE_RUNTIME=${BENCH_STORAGE_RUNTIME:-4}
STORAGE_RNBD=${BENCH_STORAGE_RNBD:-1}
FIO_FIGURES=$(dirname "${BASH_SOURCE[0]}")/fio_figures.py

# storage_kind UNIT: the unit's transport (blkdev.sh's KIND) in
# STORAGE_KIND and the RDMA driver it runs on in STORAGE_RDMA (empty for
# nvme-tcp).
storage_kind() {
	case $1 in
	nvmetcp) STORAGE_KIND=nvme-tcp STORAGE_RDMA= ;;
	rnbd) STORAGE_KIND=rnbd STORAGE_RDMA=rsiw ;;
	*) STORAGE_KIND=nvme-rdma STORAGE_RDMA=$1 ;;
	esac
}

# storage_units REP DRIVER...: the units of repetition REP in the order
# they run: NVMe-oF over nvme-rdma on each DRIVER, RNBD right after
# rsiw's (the two compared: the same device and path) unless
# STORAGE_RNBD=0, then nvme-tcp; reversed on even repetitions (the
# host's speed drift falls on every unit alike).
storage_units() {
	local rep=$1 u l=() i
	shift
	for u in "$@"; do
		l+=("$u")
		[ "$u" != rsiw ] || [ "$STORAGE_RNBD" = 0 ] || l+=(rnbd)
	done
	l+=(nvmetcp)
	if [ $((rep % 2)) = 0 ]; then
		for ((i = ${#l[@]} - 1; i >= 0; i--)); do printf '%s ' "${l[i]}"; done
	else
		printf '%s ' "${l[@]}"
	fi
}

# storage_job_size JOB: its block size in bytes (the size column of
# results.tsv).
storage_job_size() { case $1 in randread*) echo 4096 ;; *) echo 131072 ;; esac; }

# storage_fio_cmd JOB DEV: sets FIO_CMD to the fio command line of JOB on
# the block device DEV (JSON on stdout).
storage_fio_cmd() {
	local rw bs qd
	case $1 in
	randread_qd1) rw=randread bs=4k qd=1 ;;
	randread_qd32) rw=randread bs=4k qd=32 ;;
	seqread) rw=read bs=128k qd=16 ;;
	seqwrite) rw=write bs=128k qd=16 ;;
	*) return 1 ;;
	esac
	FIO_CMD=(fio --name="$1" --filename="$2" --rw=$rw --bs=$bs --iodepth=$qd
		--ioengine=libaio --direct=1 --size=1g --norandommap --randrepeat=0
		--time_based --ramp_time="$STORAGE_RAMP" --runtime="$STORAGE_RUNTIME"
		--lat_percentiles=1 --percentile_list=50:99 --output-format=json)
}

# storage_figures OUTPUT: "IOPS P50_US P99_US MB_PER_S IOS" from fio's JSON
# output (tests/bench/fio_figures.py); nothing when it has no result.
storage_figures() { python3 "$FIO_FIGURES" <<<"$1" 2>/dev/null; }

# storage_rec_job MTU REP DRIVER JOB FIGURES CPU_US...: the rows of one
# job (rec, of the calling script) from storage_figures' FIGURES, with
# the CPU per I/O of each CPU_US argument "METRIC=VALUE" (microseconds
# of CPU per I/O); a job without figures gets "fail" rows.
storage_rec_job() {
	local mtu=$1 rep=$2 drv=$3 job=$4 size iops p50 p99 mbps st=ok c
	size=$(storage_job_size "$job")
	read -r iops p50 p99 mbps _ <<<"$5"
	shift 5
	[ -n "${iops:-}" ] || st=fail
	case $job in
	randread_qd1)
		rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" lat_p50 "${p50:-}" us $st
		rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" lat_p99 "${p99:-}" us $st
		rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" iops "${iops:-}" IOPS $st
		;;
	randread_qd32) rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" iops "${iops:-}" IOPS $st ;;
	*) rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" MBps "${mbps:-}" MB/s $st ;;
	esac
	for c in "$@"; do
		rec "$mtu" "$rep" "$drv" "nvme_$job" "$size" "${c%%=*}" "${c#*=}" cpu-us/IO \
			"$([ $st = ok ] && [ -n "${c#*=}" ] && echo ok || echo fail)"
	done
}

# storage_counts: "TCP_SEGMENTS CONTEXT_SWITCHES" of this guest so far
# (TCP segments sent and received, /proc/net/snmp; /proc/stat's ctxt),
# read with shell builtins.
storage_counts() {
	local l segs=0 ctxt=0 h=()
	while read -r -a l; do
		[ "${l[0]}" = Tcp: ] || continue
		if [ ${#h[@]} = 0 ]; then h=("${l[@]}"); continue; fi
		local i
		for i in "${!h[@]}"; do
			case ${h[$i]} in InSegs | OutSegs) segs=$((segs + l[i])) ;; esac
		done
	done </proc/net/snmp
	while read -r -a l; do [ "${l[0]}" = ctxt ] && ctxt=${l[1]}; done </proc/stat
	echo "$segs $ctxt"
}

# storage_per_io BEFORE AFTER FIGURES: "SEGMENTS_PER_IO CTXT_PER_IO" from
# two storage_counts taken around a whole fio run and its FIGURES: the
# I/Os of the run are the measured ones scaled by (ramp + runtime) /
# runtime (fio does not count those of its ramp).
storage_per_io() {
	awk -v a="$1" -v b="$2" -v f="$3" -v r="$STORAGE_RAMP" -v t="$STORAGE_RUNTIME" 'BEGIN {
		split(a, x, " "); split(b, y, " "); split(f, z, " ")
		n = z[5] * (r + t) / t
		if (n > 0) printf "%.2f %.2f", (y[1] - x[1]) / n, (y[2] - x[2]) / n }'
}

# storage_rec_counts MTU REP DRIVER JOB PER_IO [SUFFIX]: the rows of
# storage_per_io's PER_IO (tcp_segs_per_io, ctxt_per_io, each with
# SUFFIX, as _a for guest a).
storage_rec_counts() {
	local size segs ctxt
	size=$(storage_job_size "$4")
	read -r segs ctxt <<<"$5"
	[ -n "${segs:-}" ] || return 0
	rec "$1" "$2" "$3" "nvme_$4" "$size" "tcp_segs_per_io${6:-}" "$segs" segments/IO ok
	rec "$1" "$2" "$3" "nvme_$4" "$size" "ctxt_per_io${6:-}" "$ctxt" switches/IO ok
}

# STORAGE_RSIW_COUNTERS: the rsiw device counters (rust/base/stats.rs) the
# storage section records per I/O, summed over every rsiw link of the guest
STORAGE_RSIW_COUNTERS="tx_messages tx_fpdus tx_tcp_sends tx_work_runs tx_post_runs rx_upcalls"

# storage_rdma_counts: "NAME VALUE ..." of STORAGE_RSIW_COUNTERS, summed
# over the links of `rdma statistic show link` (nothing without rsiw).
storage_rdma_counts() {
	rdma statistic show link 2>/dev/null | awk -v want="$STORAGE_RSIW_COUNTERS" '
		BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) k[w[i]] = 1 }
		{ for (i = 1; i < NF; i++) if ($i in k) s[$i] += $(i + 1) }
		END { for (i = 1; i <= n; i++) if (w[i] in s) printf "%s %s ", w[i], s[w[i]] }'
}

# storage_rec_rdma MTU REP DRIVER JOB BEFORE AFTER FIGURES [SUFFIX]: rows
# NAME_per_io of two storage_rdma_counts around a fio run (the I/Os
# scaled as storage_per_io does).
storage_rec_rdma() {
	local size
	size=$(storage_job_size "$4")
	awk -v a="$5" -v b="$6" -v f="$7" -v r="$STORAGE_RAMP" -v t="$STORAGE_RUNTIME" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); split(f, z, " ")
		ios = z[5] * (r + t) / t
		if (ios > 0) for (i = 1; i < n; i += 2) if (x[i] == y[i]) printf "%s %.2f\n", x[i], (y[i + 1] - x[i + 1]) / ios }' |
		while read -r name v; do
			rec "$1" "$2" "$3" "nvme_$4" "$size" "${name}_per_io${8:-}" "$v" count/IO ok
		done
}
