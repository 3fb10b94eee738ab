#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rsiw over a long link between two guests (tests/run-pair): tc netem
# delays what each end sends by half the round trip (20 ms, then 50 ms
# RTT). At each, TCP's bandwidth (iperf3, one stream, and iperf3 -Z) and
# rsiw's RDMA Write, Read and Send bandwidth (perftest, 1 MiB) on the same
# link; and RDMA Reads must not be held to one per round trip: with the
# ORD the connection negotiated (perftest asks for 128) 4 KiB Reads keep
# at least 8 in flight and reach 4 times the rate of ORD 1 (-o 1), which
# is one Read per round trip.
# The rates are printed as diagnostics; each check wants a rate, and rsiw
# at least a quarter of TCP's (both are window-bound at these delays).
#
# Cost: about 3 minutes of two one-vCPU guests.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"
. "$(dirname "$0")/perftest.sh"
PORT=7178

ktap_print_header
ktap_set_plan 10

both() { eval "$1" && pair_run "$1"; }
# note TEXT: a figure for the log, printed (with every other) at the end,
# pass or fail
RATES=/tmp/distance.rates
: >$RATES
note() { echo "# $*" | tee -a $RATES; }

setup() {
	pair_up && load_rsiw && rdma link add rsiw0 type rsiw netdev eth0 &&
		pair_run "load_rsiw && rdma link add rsiw0 type rsiw netdev eth0"
}

# delay MS: both ends delay what they send by MS (the RTT is twice it);
# a queue long enough for the bandwidth-delay product.
delay() { both "tc qdisc replace dev eth0 root netem delay ${1}ms limit 100000"; }

# tcp_gbps [-Z]: iperf3 from here to guest b, 5 s, one stream; Gb/s.
tcp_gbps() {
	pair_start "timeout 30 iperf3 -s -1 -p $PORT"
	local id=$PAIR_ID out
	pair_run "wait_listen \$\$ $PORT 10" || { pair_stop $id; return 1; }
	out=$(timeout 25 iperf3 -c "$RSIW_PEER" -p $PORT -t 5 -J "$@") || { pair_stop $id; return 1; }
	pair_wait $id 20 >/dev/null
	python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' <<<"$out"
}

# rdma_gbps PROG SIZE [ARGS]: perftest PROG from here to guest b, -D 6
# (-f 2); Gb/s (from the iteration count when perftest's clock failed);
# the rate goes to the log as well.
rdma_gbps() {
	local prog=$1 size=$2 out row
	shift 2
	# a port of its own: the last run's iWARP listener may still be
	# going away on the one before
	out=$(pair_perf_there $((PORT + RANDOM % 500)) rsiw0 rsiw0 "$prog" --report_gbits -s "$size" -D 6 -f 2 "$@") || {
		echo "$out" >&2
		return 1
	}
	row=$(pt_row "$out")
	pt_gbps "$row" "$size" 2 || {
		echo "$out" >&2
		return 1
	}
}

# at_rtt RTT: the checks at one round trip time.
at_rtt() {
	local rtt=$1 half=$(($1 / 2))
	check "${rtt} ms RTT: netem on both ends" delay $half
	TCP=
	tcp() {
		local a z
		a=$(tcp_gbps) && z=$(tcp_gbps -Z) || return 1
		note "${rtt} ms: TCP ${a} Gb/s, with -Z ${z} Gb/s"
		TCP=$(awk -v a="$a" -v z="$z" 'BEGIN { print (a > z ? a : z) }')
		echo "$TCP" >/tmp/distance.tcp
		good_num "$TCP"
	}
	check "${rtt} ms RTT: TCP bandwidth (iperf3, iperf3 -Z)" tcp
	rdma_rates() {
		local p r tcp
		tcp=$(cat /tmp/distance.tcp 2>/dev/null)
		for p in ib_write_bw ib_read_bw ib_send_bw; do
			r=$(rdma_gbps $p 1048576) && good_num "$r" || { echo "# $p: no rate"; return 1; }
			note "${rtt} ms: $p 1 MiB: $r Gb/s ($(awk -v r="$r" -v t="$tcp" 'BEGIN { printf "%.2f", r / t }') of TCP)"
			awk -v r="$r" -v t="$tcp" 'BEGIN { exit !(r >= t / 4) }' || return 1
		done
	}
	check "${rtt} ms RTT: RDMA Write, Read, Send of 1 MiB, each at least a quarter of TCP" rdma_rates
	reads() {
		# 4 KiB Reads, one per round trip, are 32768 bits / RTT; the
		# link's rate (TCP's, above) is far beyond that, so what the
		# Reads reach shows how many are in flight
		local r r1 one
		one=$(awk -v t="$rtt" 'BEGIN { printf "%.4f", 32768 / (t / 1000) / 1e9 }')
		# -Q 1: every completion counts (perftest's default, one in 100,
		# would leave ORD 1 at 50 ms with none in the 2 s it samples)
		r1=$(rdma_gbps ib_read_bw 4096 -o 1 -Q 1) && good_num "$r1" || { echo "# ORD 1: no rate (${r1:-none})"; return 1; }
		r=$(rdma_gbps ib_read_bw 4096 -Q 1) && good_num "$r" || { echo "# no rate (${r:-none})"; return 1; }
		note "${rtt} ms: ib_read_bw 4 KiB: $r Gb/s with the ORD negotiated ($(awk -v r="$r" -v o="$one" 'BEGIN { printf "%.1f", r / o }') Reads per round trip), $r1 Gb/s with ORD 1 ($(awk -v r="$r1" -v o="$one" 'BEGIN { printf "%.1f", r / o }'))"
		awk -v r="$r" -v r1="$r1" -v o="$one" 'BEGIN { exit !(r >= 8 * o && r >= 4 * r1) }'
	}
	check "${rtt} ms RTT: RDMA Read of 4 KiB, at least 8 in flight per round trip, 4 times ORD 1's rate" reads
}

check "setup: link up, rsiw0 in both guests" setup || ktap_exit_fail_msg "setup failed"
at_rtt 20
at_rtt 50
cleanup() {
	both "tc qdisc del dev eth0 root" && rdma link delete rsiw0 && unload_rsiw &&
		pair_run "rdma link delete rsiw0 && unload_rsiw"
}
check "cleanup: netem off, devices gone" cleanup
cat $RATES
ktap_finished
