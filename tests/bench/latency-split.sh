#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make latency-split` guest script: where the time of a one-way message in
# a perftest ping-pong goes, for rsiw and upstream siw in ONE guest boot.
#
# perf has nothing to sample here (no PMU under TCG; with a software clock
# the samples land in the idle loop and in the HPET reads of the clock
# source), and the kernel has no function tracer, but it has kprobe events.
# Entry probes on the same four kernel functions for both drivers, with
# the x86-tsc trace clock, split each one-way message into:
#
#   doorbell  ib_uverbs_write -> tcp_sendmsg_locked (same CPU): the system
#             call, the driver's transmit path up to TCP
#   tcp       tcp_sendmsg_locked -> the peer's tcp_read_sock (same CPU: on
#             veth the peer's receive runs in the sender's softirq)
#   receive   tcp_read_sock -> the next ib_uverbs_write (the peer's doorbell,
#             other CPU): the driver's receive path, the peer noticing the
#             data or completion, its next post
#
# Each probe costs about 1 us under TCG, the same for both drivers; figures
# compare drivers within one boot, not across boots.  Medians over all
# messages of a run; SPLIT_REPS runs per driver and test, alternating.
#
# Knobs: SPLIT_REPS=3 SPLIT_ITERS=3000 SPLIT_TESTS="ib_write_lat ib_send_lat"
#        SPLIT_SIZE=64 SPLIT_MTU=1500
set -u
. "$(dirname "$0")/../guest/lib.sh" >/dev/null 2>&1 || {
	echo "latency-split: cannot source tests/guest/lib.sh" >&2
	exit 1
}

REPS=${SPLIT_REPS:-3}
ITERS=${SPLIT_ITERS:-3000}
TESTS=${SPLIT_TESTS:-"ib_write_lat ib_send_lat"}
SIZE=${SPLIT_SIZE:-64}
MTU=${SPLIT_MTU:-1500}
T=/sys/kernel/tracing
PROBES="ib_uverbs_write tcp_sendmsg_locked tcp_read_sock"

mountpoint -q $T || mount -t tracefs nodev $T || exit 1
[ -w $T/kprobe_events ] || {
	echo "latency-split: the kernel has no kprobe events" >&2
	exit 1
}
topo_up "$MTU" >/dev/null 2>&1 && neigh_pin || exit 1
insmod "$RSIW_KO" || exit 1
modprobe siw || exit 1
mhz=$(awk '/cpu MHz/ {print $4; exit}' /proc/cpuinfo)

probes_on() {
	local n=0 p
	echo 0 >$T/tracing_on
	echo x86-tsc >$T/trace_clock
	echo >$T/kprobe_events
	for p in $PROBES; do
		n=$((n + 1))
		echo "p:rsiw_split/e$n $p" >>$T/kprobe_events || return 1
	done
	echo 16384 >$T/buffer_size_kb
	echo >$T/trace
	echo 1 >$T/events/rsiw_split/enable
}

probes_off() {
	echo 0 >$T/tracing_on
	echo 0 >$T/events/rsiw_split/enable
	echo >$T/kprobe_events
}

# Reads a trace on stdin, prints "typical doorbell tcp receive n".
split() {
	python3 -c '
import re, sys
mhz = float(sys.argv[1])
pat = re.compile(r"\[(\d+)\].*?\s(\d+):\s+e(\d):")
ev = sorted((int(m.group(2)), int(m.group(1)), m.group(3))
            for m in map(pat.search, sys.stdin) if m)
parts = {"doorbell": [], "tcp": [], "receive": []}
w = None
for ts, cpu, n in ev:
    if n == "1":
        if w and w.get("rs") is not None:
            parts["receive"].append(ts - w["rs"])
        w = {"t": ts, "cpu": cpu}
    elif w is None or cpu != w["cpu"]:
        continue
    elif n == "2" and "sml" not in w:
        w["sml"] = ts
        parts["doorbell"].append(ts - w["t"])
    elif n == "3" and "sml" in w and "rs" not in w:
        w["rs"] = ts
        parts["tcp"].append(ts - w["sml"])
med = lambda v: sorted(v)[len(v) // 2] / mhz if v else float("nan")
print(" ".join("%.2f" % med(parts[k]) for k in ("doorbell", "tcp", "receive")),
      min(len(v) for v in parts.values()))
' "$mhz"
}

port=22000
printf '%-5s %-13s %5s %9s %9s %9s %9s %6s\n' driver test size typical doorbell tcp receive msgs
for rep in $(seq "$REPS"); do
	for t in $TESTS; do
		for d in rsiw siw; do
			use_pair $d
			port=$((port + 1))
			probes_on || exit 1
			in_b timeout 90 "$t" -R -F -p $port -d ${d}b -s "$SIZE" -n "$ITERS" >/dev/null 2>&1 &
			sleep 1.5
			echo 1 >$T/tracing_on
			typ=$(in_a timeout 90 "$t" -R -F -p $port -d ${d}a -s "$SIZE" -n "$ITERS" "$IP_B" 2>&1 |
				awk -v s="$SIZE" '$1 == s {print $5}')
			echo 0 >$T/tracing_on
			wait
			r=$(split <$T/trace)
			probes_off
			# shellcheck disable=SC2086
			printf '%-5s %-13s %5s %9s %9s %9s %9s %6s\n' $d "$t" "$SIZE" "${typ:-fail}" $r
		done
	done
done
echo "(us, medians per run; typical: perftest's, with the probes' cost in it)"
