#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The life of a responder's connection endpoint before its connection is
# up (issue 34, item 8): from the TCP accept on a listener, through the
# initiator's MPA Request, to the CM's accept or reject. The CM may never
# answer a request (it drops the request's event when its listener is
# destroyed meanwhile; an application may never call accept or reject),
# and nothing else closed such an endpoint: its socket stayed established
# and kept calling into rsiw, also after `rmmod`. Now the endpoints of a
# listener close with it, those of a device with the device, and a request
# unanswered for cm_accept_timeout seconds is rejected.
#
# rsiw_cmhold (rsiw_cmhold.c) is both the server that never answers (in
# ns B, on rsiw1) and the plain TCP client that sends MPA Requests or
# nothing at all (in ns A); rping clients on rsiw0 add rsiw initiators to
# the storm. "Nothing left" means no TCP socket on the port in ns B that
# is established, closing from the peer's side, half open or listening:
# rsiw let go of what it closed (what TCP still holds of a closed socket,
# FIN-WAIT and TIME-WAIT, is TCP's own).
#
#   CMLIFE_ROUNDS  listeners destroyed amid storms before the link delete
#                  (default 3; the debug kernel's run has 1)
#
# Cost: about 30 s on the standard kernel, 70 s on the debug kernel (with
# one round).
. "$(dirname "$0")/lib.sh"

PORT=7320
WORK=$(mktemp -d /tmp/rsiw-cmlife.XXXXXX)
P=/sys/module/rsiw/parameters

ktap_print_header
if ! BIN=$(guest_prog rsiw_cmhold); then
	ktap_exit_fail_msg "cannot build rsiw_cmhold.c"
fi
ktap_set_plan 6

setup() {
	topo_up && load_rsiw && add_dev "$NS_A" rsiw0 rsiw va && add_dev "$NS_B" rsiw1 rsiw vb
}

# left: the sockets on PORT in ns B that rsiw may still hold (see above)
left() {
	in_b ss -Htan state established state close-wait state syn-recv state listening \
		"( sport = :$PORT )"
}
# none_left SECS: waits (at most SECS) until nothing is left; else shows it
none_left() {
	local t=$((SECONDS + $1))
	while [ $SECONDS -le $t ]; do
		[ -z "$(left)" ] && return 0
		snooze 0.2
	done
	echo "still on port $PORT in ns B after $1 s:"
	left | head -n 20
	return 1
}

# serve LOG ARGS...: the server in ns B, exec'd so that $SRV is its pid,
# once it listens (LOG emptied here first: see rsiw_stress.sh's serve)
serve() {
	local log=$1 t=$((SECONDS + $(tmo 10)))
	shift
	: >"$log"
	nsenter --net="/run/netns/$NS_B" "$BIN" -s -a "$IP_B" -p $PORT "$@" >"$log" 2>&1 &
	SRV=$!
	while [ $SECONDS -le $t ]; do
		grep -q listening "$log" 2>/dev/null && return 0
		kill -0 $SRV 2>/dev/null || break
		snooze 0.05
	done
	echo "server did not start:"
	cat "$log"
	return 1
}
# waitfor LOG PATTERN SECS
waitfor() {
	local t=$((SECONDS + $3))
	while [ $SECONDS -le $t ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		snooze 0.1
	done
	echo "no '$2' in $1 after $3 s:"
	tail -n 5 "$1"
	return 1
}
# stop PID...: SIGTERM to them and their children, then waits for them
stop() {
	local p
	for p; do kill_tree "$p"; done
	wait "$@" 2>/dev/null
	true
}

# The listener goes with requests in every stage: delivered to the
# application (which keeps them, unanswered), still queued in the CM
# (whose events the CM drops: no accept or reject ever comes for them),
# still being read. 24 connections, their Requests sent half a second
# after they connected; the server destroys its listening id as the first
# request arrives and keeps the ids of those it got. Every endpoint must
# close (the initiator sees a reject Reply or the close), while the
# application still holds its ids.
listener_goes() {
	serve "$WORK/s.log" -u -t 30 || return 1
	client -n 24 -m -d 500 -w $(tmo 8) >"$WORK/c.log" 2>&1 &
	local c=$!
	waitfor "$WORK/s.log" unlistened $(tmo 10) || { stop $c $SRV; return 1; }
	local rc=0
	none_left $(tmo 4) || rc=1
	wait $c
	echo "server: $(grep -c '^request' "$WORK/s.log") requests delivered; client: $(cat "$WORK/c.log")"
	grep -q ' open 0$' "$WORK/c.log" || rc=1
	stop $SRV
	none_left $(tmo 4) || rc=1
	return $rc
}

# A server that keeps listening and never answers: its requests are
# rejected after cm_accept_timeout (2 s here); connections that send no
# MPA Request at all are closed by the MPA timeout (10 s), both while the
# server runs on.
unanswered() {
	echo 2 >$P/cm_accept_timeout || echo "no cm_accept_timeout parameter: no accept timeout"
	serve "$WORK/s.log" -t 60 || return 1
	local t0=$SECONDS
	client -n 4 -w $(tmo 16) >"$WORK/c2.log" 2>&1 &
	local c2=$!
	client -n 4 -m -w $(tmo 8) >"$WORK/c1.log" 2>&1
	echo "with Requests: $(cat "$WORK/c1.log") after $((SECONDS - t0)) s"
	wait $c2
	echo "without: $(cat "$WORK/c2.log") after $((SECONDS - t0)) s"
	echo "server: $(grep -c '^request' "$WORK/s.log") requests delivered"
	stop $SRV
	echo 60 >$P/cm_accept_timeout
	grep -q 'rejected 4 closed 0 open 0' "$WORK/c1.log" && grep -q 'closed 4 open 0' "$WORK/c2.log" &&
		none_left $(tmo 4)
}

# client ARGS...: a plain TCP client in ns A
client() { nsenter --net="/run/netns/$NS_A" "$BIN" -c -a "$IP_B" -p $PORT "$@"; }
# storm DURATION: connection storms on PORT from ns A for DURATION s:
# plain TCP connections with and without MPA Requests, and rping clients
# on rsiw0 (rsiw initiators); returns at once, adding the pids to $STORM.
storm() {
	local i
	for i in 1 2 3; do
		nsenter --net="/run/netns/$NS_A" "$BIN" -c -a "$IP_B" -p $PORT -n 12 -m -w "$1" >>"$WORK/storm.log" 2>&1 &
		STORM="$STORM $!"
	done
	nsenter --net="/run/netns/$NS_A" "$BIN" -c -a "$IP_B" -p $PORT -n 8 -w "$1" >>"$WORK/storm.log" 2>&1 &
	STORM="$STORM $!"
	for i in 1 2 3 4; do
		nsenter --net="/run/netns/$NS_A" timeout "$1" rping -c -a "$IP_B" -p $PORT -C 1 -S 64 >/dev/null 2>&1 &
		STORM="$STORM $!"
	done
}

# CMLIFE_ROUNDS listeners destroyed (SIGUSR1, then the server killed) amid
# connection storms; then one more storm while `rdma link delete rsiw1`
# takes the server's device (the delete does not wait for the server,
# which has the device open through librdmacm: rsiw disassociates it, see
# rsiw_unplug.sh; the server is stopped).
# Nothing may be left.
storms() {
	local r del
	STORM=
	for ((r = 0; r < ${CMLIFE_ROUNDS:-3}; r++)); do
		serve "$WORK/s.log" -t 30 || return 1
		storm 20
		snooze 1
		kill -USR1 $SRV
		snooze 0.3
		kill -9 $SRV
		wait $SRV 2>/dev/null
	done
	serve "$WORK/s.log" -t 30 || return 1
	storm 20
	snooze 1
	timeout $(tmo 30) rdma link delete rsiw1 &
	del=$!
	snooze 1
	stop $SRV
	wait $del || { echo "rdma link delete rsiw1 failed"; stop $STORM; return 1; }
	stop $STORM
	echo "server: $(tail -n 1 "$WORK/s.log"); clients: $(grep -c . "$WORK/storm.log") runs"
	none_left $(tmo 4)
}

# rmmod with rsiw0 still there (its rping initiators stopped):
# the module goes, and with it every socket it held.
unload() {
	none_left 1 || { echo "not unloading rsiw with its sockets left (they would call into freed code)"; return 1; }
	rmmod rsiw || return 1
	! lsmod | grep -q '^rsiw ' && none_left 1
}

cleanup() {
	rm -rf "$WORK"
	topo_down
}

check "setup: rsiw0 in ns A, rsiw1 in ns B" setup || ktap_exit_fail_msg "setup failed"
check "listener destroyed with requests delivered, queued and being read: every endpoint closes" listener_goes
check "requests never answered are rejected after cm_accept_timeout; silent connections close after the MPA timeout" unanswered
check "connect storms while listeners are destroyed and rsiw1 deleted: nothing left" storms
check "rmmod rsiw: unloaded, nothing left" unload
check "cleanup" cleanup
ktap_finished
