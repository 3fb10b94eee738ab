#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Reproducer of an upstream siw race (not part of make check; run it with
# `make repro-siw-last-send`): a siw server's Send that the client
# received in full completes with IBV_WC_LOC_QP_OP_ERR when the client's
# FIN is handled while siw still owns the socket in tcp_sendmsg() for the
# Send's last segment. See siw_last_send.c for the code path and how the
# window is opened. Each client driver (SIW_LAST_SEND_CLIENTS, default
# "siw rsiw") runs SIW_LAST_SEND_N (default 20) connections against a siw
# server, then against an rsiw server (which must complete every Send),
# then against siw with the client on the other CPU (the control: the
# window is then a few instructions wide, every Send completes).
#
# The siw checks pass when the race shows: they demonstrate a bug of siw,
# so "not ok" there means it did not reproduce here.
. "$(dirname "$0")/lib.sh"
N=${SIW_LAST_SEND_N:-20}
CLIENTS=${SIW_LAST_SEND_CLIENTS:-siw rsiw}
PREEMPT=/sys/kernel/debug/sched/preempt
OLD_PREEMPT=

# run CLIENT_CPU: one round of N connections, both processes' outputs
# in $OUT; the server on CPU 0, the client (SCHED_FIFO) on CLIENT_CPU
run() {
	local bin srv rc
	bin=$(guest_prog siw_last_send) || return 1
	wait_unlisten "$NS_B" 7199
	in_b timeout $(tmo 300) taskset -c 0 "$bin" -s "$IP_B" -p 7199 -n "$N" >/tmp/lastsend.srv 2>&1 &
	srv=$!
	wait_listen "$NS_B" 7199
	in_a timeout $(tmo 300) chrt -f 10 taskset -c "$1" "$bin" -c "$IP_B" -p 7199 -n "$N" >/tmp/lastsend.cli 2>&1
	rc=$?
	wait $srv
	OUT="client: $(cat /tmp/lastsend.cli) (exit $rc); server: $(cat /tmp/lastsend.srv)"
	say "$OUT"
	return $rc
}
# devices CLIENT SERVER: dev_a of driver CLIENT in ns A, dev_b of SERVER
devices() {
	del_dev dev_a 2>/dev/null
	del_dev dev_b 2>/dev/null
	add_dev "$NS_A" dev_a "$1" va && add_dev "$NS_B" dev_b "$2" vb
}
# reproduces CLIENT: against a siw server, with the window open, the
# client received every message and siw failed at least one Send with
# status 2
reproduces() {
	devices "$1" siw && run 0 || return 1
	grep -qE "received $N of $N" <<<"$OUT" && grep -qE '[1-9][0-9]* failed with status 2' <<<"$OUT"
}
# completes CLIENT SERVER CLIENT_CPU: every Send completes
completes() {
	devices "$1" "$2" && run "$3" && grep -qE "sent $N: $N completed" <<<"$OUT"
}

ktap_print_header
ktap_set_plan $((3 * $(wc -w <<<"$CLIENTS")))
if [ "$(nproc)" -lt 2 ]; then
	ktap_skip_all "needs two CPUs"
	exit "$KSFT_SKIP"
fi
# the preemption model: full or lazy (a real-time task's wakeup preempts
# at once in both), set at boot (preempt=full) or at run time where debugfs
# has sched/preempt (CONFIG_SCHED_DEBUG)
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ -w $PREEMPT ]; then
	OLD_PREEMPT=$(grep -o '([a-z]*)' $PREEMPT | tr -d '()')
	echo full >$PREEMPT
fi
mode=$(grep -o '([a-z]*)' $PREEMPT 2>/dev/null | tr -d '()')
[ -n "$mode" ] || mode=$(dmesg | grep -o 'Dynamic Preempt: [a-z]*' | tail -n 1 | cut -d' ' -f3)
echo "# preemption: ${mode:-unknown}"
if [ "$mode" != full ] && [ "$mode" != lazy ]; then
	ktap_skip_all "the kernel preempts neither fully nor lazily (${mode:-unknown}): boot it with preempt=full (make repro-siw-last-send does)"
	exit "$KSFT_SKIP"
fi
topo_up && load_rsiw && load_siw || exit 1
for c in $CLIENTS; do
	check "$c client -> siw server, one CPU, real-time client: a Send the client received fails on siw with status 2" reproduces "$c"
	check "$c client -> rsiw server, the same: every Send completes" completes "$c" rsiw 0
	check "control: $c client -> siw server, the client on the other CPU: every Send completes" completes "$c" siw 1
done
[ -z "$OLD_PREEMPT" ] || echo "$OLD_PREEMPT" >$PREEMPT
del_dev dev_a
del_dev dev_b
unload_rsiw
rmmod siw
topo_down
ktap_finished
