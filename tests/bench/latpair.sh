#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make lat-pair` guest script: ping-pong latency of rsiw against upstream
# siw with both drivers' connections up at once, in one process pair that
# alternates between them every PAIR_ITERS iterations (tests/bench/latpair.c).
#
# perftest runs one driver after the other; under TCG on a shared host the
# guest's speed drifts by up to a factor of two within seconds, so two
# runs a few seconds apart compare two different machines. Here both
# drivers see the same drift: a ratio per block of iterations, and the
# median of those ratios.
#
# Topology: namespaces rsiw-a/rsiw-b joined by two veth pairs, va/vb
# (198.18.0.1-2) and va2/vb2 (198.18.1.1-2), same MTU. Each driver has its
# links on one pair; every test runs twice, the second time with the pairs
# swapped, and the swap's ratios are reported too.
#
# Knobs: PAIR_MTUS="1500 9000" PAIR_TESTS="write send read"
#        PAIR_SIZES="64 4096" PAIR_BLOCKS=40 PAIR_ITERS=50 PAIR_WARM=200
#        PAIR_RSIW_PARAMS="mpa_large_fpdu=0 ..." (insmod parameters)
# Results: results/latpair-<date>/ (PAIR_OUT overrides): table.md, raw.log.
set -u
. "$(dirname "$0")/../guest/lib.sh" >/dev/null 2>&1 || {
	echo "latpair: cannot source tests/guest/lib.sh" >&2
	exit 1
}

MTUS=${PAIR_MTUS:-"1500 9000"}
TESTS=${PAIR_TESTS:-"write send read"}
SIZES=${PAIR_SIZES:-"64 4096"}
BLOCKS=${PAIR_BLOCKS:-40}
ITERS=${PAIR_ITERS:-50}
WARM=${PAIR_WARM:-200}
IP_A2=198.18.1.1 IP_B2=198.18.1.2
OUT=${PAIR_OUT:-$RSIW_REPO/results/latpair-$(date +%Y%m%d-%H%M%S)}
BIN=/tmp/latpair
PORT=19000

mkdir -p "$OUT" || exit 1
RAW=$OUT/raw.log
gcc -O2 -Wall -Wextra -o "$BIN" "$RSIW_REPO/tests/bench/latpair.c" -lrdmacm -libverbs || exit 1
# shellcheck disable=SC2086
load_rsiw ${PAIR_RSIW_PARAMS:-} || exit 1
load_siw || exit 1

second_pair() { # MTU
	ip link add va2 netns "$NS_A" mtu "$1" type veth peer name vb2 netns "$NS_B" mtu "$1" &&
		in_a ip addr add "$IP_A2/24" dev va2 && in_b ip addr add "$IP_B2/24" dev vb2 &&
		in_a ip link set va2 up && in_b ip link set vb2 up &&
		neigh_pin va2 vb2 "$IP_A2" "$IP_B2"
}

links() { # rsiw's pair (1 or 2)
	local d
	for d in $(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1); do
		rdma link delete "$d"
	done
	if [ "$1" = 1 ]; then
		add_dev "$NS_A" rsiwa rsiw va && add_dev "$NS_B" rsiwb rsiw vb &&
			add_dev "$NS_A" siwa siw va2 && add_dev "$NS_B" siwb siw vb2 || return 1
	else
		add_dev "$NS_A" rsiwa rsiw va2 && add_dev "$NS_B" rsiwb rsiw vb2 &&
			add_dev "$NS_A" siwa siw va && add_dev "$NS_B" siwb siw vb || return 1
	fi
	# A connection right after the links came up may find the new
	# devices not ready yet (rdma_connect: EINVAL): wait for all four
	# ports, then a moment more.
	local i
	for i in $(seq 1 50); do
		[ "$(rdma link show 2>/dev/null | grep -c 'state ACTIVE')" = 4 ] && break
		sleep 0.1
	done
	sleep 1
}

# one MTU TEST SIZE RSIW_PAIR: prints "rsiw_us siw_us ratio block_ratio"
one() {
	local mtu=$1 t=$2 z=$3 rp=$4 addrs opts spid out i try
	if [ "$rp" = 1 ]; then addrs=$IP_B,$IP_B2; else addrs=$IP_B2,$IP_B; fi
	# On a loaded host a new device may still refuse the connection
	# (rdma_connect: EINVAL, seen on siw's) after the wait in links():
	# the server then ends too, and both start again on a new port.
	for try in 1 2 3; do
		PORT=$((PORT + 1))
		opts=(-p "$PORT" -t "$t" -z "$z" -n "$BLOCKS" -k "$ITERS" -w "$WARM")
		in_b timeout 300 "$BIN" -s "$addrs" "${opts[@]}" >/tmp/latpair.srv 2>&1 &
		spid=$!
		for i in $(seq 1 50); do
			grep -q listening /tmp/latpair.srv && break
			sleep 0.1
		done
		out=$(in_a timeout 300 "$BIN" -c "$addrs" "${opts[@]}" 2>&1)
		wait "$spid"
		{
			echo "=== mtu $mtu $t $z, rsiw on pair $rp (attempt $try)"
			echo "$out"
			echo "--- server"
			cat /tmp/latpair.srv
		} >>"$RAW"
		grep -q "rdma_connect: Invalid argument" <<<"$out" || break
		sleep 2
	done
	awk '$1 == "latpair" {print $4, $5, $6, $7}' <<<"$out"
}

{
	echo "# rsiw vs siw: interleaved ping-pong latency (\`make lat-pair\`)"
	echo
	echo "- date: $(date -u +%FT%TZ), rsiw commit $(git -C "$RSIW_REPO" rev-parse --short HEAD 2>/dev/null || echo ?)"
	echo "- guest kernel: $(uname -r), $(nproc) vCPUs, QEMU TCG"
	echo "- method: one client process (ns rsiw-a) and one server (ns rsiw-b), both connected over rsiw and over siw at once (two veth pairs); $BLOCKS blocks of $ITERS ping-pongs per driver, rsiw first in even blocks, siw first in odd ones, after $WARM warm-up ping-pongs each; Write and Send: half the round trip (as perftest), Read: the whole Read; medians over all iterations; 'block' = median of the per-block ratios; each test twice, the drivers' veth pairs swapped the second time"
	echo
	echo "| MTU | test | size | rsiw us | siw us | rsiw/siw | block | swapped: rsiw us | siw us | rsiw/siw | block |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$OUT/table.md"

for mtu in $MTUS; do
	topo_up "$mtu" && neigh_pin && second_pair "$mtu" || {
		echo "latpair: topology failed" >&2
		exit 1
	}
	for t in $TESTS; do
		for z in $SIZES; do
			r1=""
			r2=""
			links 1 && r1=$(one "$mtu" "$t" "$z" 1)
			links 2 && r2=$(one "$mtu" "$t" "$z" 2)
			# shellcheck disable=SC2086
			set -- ${r1:-- - - -} ${r2:-- - - -}
			echo "| $mtu | $t | $z | $1 | $2 | **$3** | $4 | $5 | $6 | **$7** | $8 |" >>"$OUT/table.md"
			echo "latpair: mtu $mtu $t $z: rsiw/siw $3 (block $4), swapped $7 (block $8)"
		done
	done
done
topo_down
cat "$OUT/table.md"
