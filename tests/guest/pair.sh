# SPDX-License-Identifier: GPL-2.0
# Helpers for tests across two guests (qemu-images/run-pair): the link,
# and guest a driving guest b.
#
# Guest a runs the test file and prints its KTAP results; guest b runs
# pair_agent, which runs what a asks for (pair_start/pair_run) and
# reports each command's output and status through the shared directory
# ($RSIW_PAIR_DIR, 9p without caching, so both guests see each other's
# files as soon as they are written).

# pair_up [MTU]: mounts the shared directory, brings eth0 up with this
# guest's address and waits (60 s at most) until the peer answers a ping.
pair_up() {
	mkdir -p "$RSIW_PAIR_DIR"
	mountpoint -q "$RSIW_PAIR_DIR" ||
		mount -t 9p -o trans=virtio,version=9p2000.L,cache=none pair "$RSIW_PAIR_DIR" || return 1
	ip link set eth0 mtu "${1:-1500}" up || return 1
	ip addr replace "$RSIW_ADDR/24" dev eth0 || return 1
	local i
	for ((i = 0; i < 120; i++)); do
		ping -c 1 -W 1 "$RSIW_PEER" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	echo "pair_up: $RSIW_PEER does not answer" >&2
	return 1
}

# pair_agent: guest b's loop. Command N is the file cmd.N; it runs in the
# background (in the repository's directory) with its output in out.N,
# its process group in pid.N and its status, when it ends, in rc.N. A
# file stop.N kills it; the file quit ends the loop (and kills what is
# left).
pair_agent() {
	local d=$RSIW_PAIR_DIR n=1 k
	while [ ! -e "$d/quit" ]; do
		if [ -e "$d/cmd.$n" ]; then
			(
				setsid bash -c "cd '$RSIW_REPO' && . '$RSIW_TESTDIR/lib.sh' &&
					. '$RSIW_TESTDIR/pair.sh' && $(cat "$d/cmd.$n")" \
					>"$d/out.$n" 2>&1 </dev/null &
				echo $! >"$d/pid.$n"
				wait $!
				echo $? >"$d/rc.$n.tmp"
				mv "$d/rc.$n.tmp" "$d/rc.$n"
			) &
			n=$((n + 1))
		fi
		for k in "$d"/stop.*; do
			[ -e "$k" ] || continue
			kill -- -"$(cat "$d/pid.${k##*.}")" 2>/dev/null
			rm -f "$k"
		done
		sleep 0.1
	done
	for k in "$d"/pid.*; do
		[ -e "$d/rc.${k##*.}" ] || kill -- -"$(cat "$k")" 2>/dev/null
	done
	return 0
}

# pair_start COMMAND: starts COMMAND in guest b; sets PAIR_ID to its id.
# (The last id is kept in the shared directory: tests run their steps in
# subshells.)
pair_start() {
	PAIR_ID=$(($(cat "$RSIW_PAIR_DIR/seq" 2>/dev/null || echo 0) + 1))
	echo $PAIR_ID >"$RSIW_PAIR_DIR/seq"
	printf '%s\n' "$1" >"$RSIW_PAIR_DIR/cmd.tmp.$PAIR_ID"
	mv "$RSIW_PAIR_DIR/cmd.tmp.$PAIR_ID" "$RSIW_PAIR_DIR/cmd.$PAIR_ID"
}

# pair_wait ID [SECS]: waits (default 120 s) for command ID in guest b to
# end; prints its output and returns its status (124 if it did not end).
pair_wait() {
	local d=$RSIW_PAIR_DIR i end=$((SECONDS + ${2:-120}))
	while [ ! -e "$d/rc.$1" ]; do
		if [ $SECONDS -ge "$end" ]; then
			cat "$d/out.$1" 2>/dev/null
			echo "pair_wait: command $1 in the peer still runs" >&2
			return 124
		fi
		sleep 0.1
	done
	cat "$d/out.$1"
	i=$(cat "$d/rc.$1")
	return "$i"
}

# pair_run COMMAND [SECS]: runs COMMAND in guest b and waits for it.
pair_run() {
	pair_start "$1"
	pair_wait "$PAIR_ID" "${2:-120}"
}

# pair_stop ID: kills command ID in guest b and waits until it ended.
pair_stop() {
	[ -e "$RSIW_PAIR_DIR/rc.$1" ] || : >"$RSIW_PAIR_DIR/stop.$1"
	pair_wait "$1" 30 >/dev/null
	return 0
}

# pair_quit: ends guest b's agent.
pair_quit() { : >"$RSIW_PAIR_DIR/quit"; }

# pair_rping_here PORT COUNT SIZE: rping -V between the guests, server in
# this guest (a), client in guest b.
pair_rping_here() {
	rping -s -a "$RSIW_ADDR" -p "$1" -C "$2" -S "$3" -V >/dev/null 2>&1 &
	local s=$!
	wait_listen $$ "$1" 10 || { kill $s; return 1; }
	pair_run "timeout 60 rping -c -a $RSIW_ADDR -p $1 -C $2 -S $3 -V" 90 || { kill $s; return 1; }
	wait $s
}

# pair_cs_here PORT SERVER CLIENT: the command SERVER, which listens on
# PORT, here (guest a), then the command CLIENT in guest b; both must
# succeed. On failure prints both outputs.
pair_cs_here() {
	local out
	out=$(mktemp)
	timeout 60 $2 >"$out" 2>&1 &
	local s=$!
	wait_listen $$ "$1" 10 || { kill $s; cat "$out"; rm -f "$out"; return 1; }
	pair_run "timeout 50 $3" 60 && wait $s || {
		kill $s 2>/dev/null
		echo "# server:"
		cat "$out"
		rm -f "$out"
		return 1
	}
	rm -f "$out"
}

# pair_cs_there PORT SERVER CLIENT: the same with the server in guest b.
pair_cs_there() {
	pair_start "timeout 60 $2"
	local id=$PAIR_ID
	pair_run "wait_listen \$\$ $1 10" || { pair_stop $id; return 1; }
	timeout 50 $3 || { pair_stop $id; return 1; }
	pair_wait $id 30 >/dev/null || { pair_wait $id 1; return 1; }
}

# pair_rping_there PORT COUNT SIZE: the same with the server in guest b.
pair_rping_there() {
	pair_start "timeout 90 rping -s -a $RSIW_PEER -p $1 -C $2 -S $3 -V"
	local id=$PAIR_ID
	pair_run "wait_listen \$\$ $1 10" || { pair_stop $id; return 1; }
	timeout 60 rping -c -a "$RSIW_PEER" -p "$1" -C "$2" -S "$3" -V || { pair_stop $id; return 1; }
	pair_wait $id 30
}

# pair_no_rdma_left [PATTERN]: no QP, CM id or MR in either guest (in
# guest b none but on lines that match the grep PATTERN, without a
# single quote: a listener that stays there, say).
pair_no_rdma_left() {
	local t
	for t in qp cm_id mr; do
		[ -z "$(rdma res show $t)" ] || { rdma res show $t; return 1; }
	done
	pair_run "for t in qp cm_id mr; do [ -z \"\$(rdma res show \$t | grep -v '${1:-^$}')\" ] ||
		{ rdma res show \$t; exit 1; }; done"
}

# pair_diag PID: what a stuck RDMA program (PID, here) and both guests
# show: the QPs' state and counts, the TCP connections' queues and the
# program's kernel stack, guest b's perftest processes' too; for the
# test's log.
pair_diag() {
	echo "# here (pid $1):"
	rdma res show qp -dd
	ss -tni
	cat "/proc/$1/stack" 2>/dev/null
	dmesg | tail -n 5
	echo "# there:"
	pair_run 'rdma res show qp -dd; ss -tni; dmesg | tail -n 5
		for p in $(pgrep "^(ib_|rping)"); do echo "pid $p"; cat /proc/$p/stack; done' 30
}

# run_or_diag SECS COMMAND...: runs COMMAND; if it has not ended after
# SECS, prints pair_diag for it, kills it and returns 124.
run_or_diag() {
	local secs=$1 pid i
	shift
	"$@" &
	pid=$!
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 $pid 2>/dev/null || {
			wait $pid
			return
		}
		sleep 0.1
	done
	pair_diag $pid >&2
	kill $pid
	wait $pid
	return 124
}

# pair_perf_there PORT DEV_HERE DEV_THERE PROG ARGS...: a perftest run
# over rdma_cm with its server in guest b on DEV_THERE and its client
# here on DEV_HERE; prints the client's output.
pair_perf_there() {
	local port=$1 here=$2 there=$3
	shift 3
	pair_start "timeout 60 $* -R -F -d $there -p $port"
	local id=$PAIR_ID
	pair_run "wait_listen \$\$ $port 10" || {
		echo "# the server in guest b did not listen on $port:"
		pair_stop $id
		pair_wait $id 1
		return 1
	}
	run_or_diag 50 "$@" -R -F -d "$here" -p "$port" "$RSIW_PEER" 2>&1 || {
		pair_stop $id
		echo "# the server in guest b:"
		pair_wait $id 1
		return 1
	}
	# the server must end well too: if not, say how
	local out rc
	out=$(pair_wait "$id" 30) && return 0
	rc=$?
	# the client ended well: a siw server that failed only its last Send
	# is siw's race (lib.sh siw_last_send_race)
	siw_last_send_race server "$there" $rc "$out" && { say_siw_last_send_race server; return 0; }
	echo "# the server in guest b did not end well (124: still running after 30 s):"
	echo "$out" | tail -n 15
	pair_stop "$id"
	return 1
}

# pair_perf_here PORT DEV_HERE DEV_THERE PROG ARGS...: the same with the
# server here and the client in guest b; prints the client's output.
pair_perf_here() {
	local port=$1 here=$2 there=$3
	shift 3
	timeout 60 "$@" -R -F -d "$here" -p "$port" >/dev/null 2>&1 &
	local s=$!
	wait_listen $$ "$port" 10 || { kill $s; return 1; }
	local out rc=0
	out=$(pair_run "timeout 50 $* -R -F -d $there -p $port $RSIW_ADDR" 60) || rc=$?
	echo "$out"
	[ $rc != 0 ] || { wait $s; return; }
	# the server here ends well only after receiving the client's last
	# Send: a siw client that failed only that Send is siw's race
	if siw_last_send_race client "$there" $rc "$out" && wait $s; then
		say_siw_last_send_race client
		return 0
	fi
	pair_diag $s >&2
	kill $s 2>/dev/null
	return 1
}
