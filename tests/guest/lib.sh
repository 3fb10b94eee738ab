# SPDX-License-Identifier: GPL-2.0
# Shared helpers for rsiw guest tests (KTAP output via the kernel's
# ktap_helpers.sh).  Laid out so the directory can move as it is to
# tools/testing/selftests/drivers/infiniband/rsiw/.

RSIW_TESTDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RSIW_REPO=${RSIW_REPO:-$(cd "$RSIW_TESTDIR/../.." && pwd)}
RSIW_KO=${RSIW_KO:-$RSIW_REPO/rsiw.ko}
# In tree: ../../../kselftest; out of tree: the cached kernel source.
KSFT_DIR=${KSFT_DIR:-$RSIW_TESTDIR/../../../kselftest}
if [ ! -f "$KSFT_DIR/ktap_helpers.sh" ]; then
	. "$RSIW_REPO/qemu-images/env.sh"
	KSFT_DIR=$(ls -d "$RSIW_CACHE"/kernel/std-*/src/tools/testing/selftests/kselftest | head -1)
fi
. "$KSFT_DIR/ktap_helpers.sh"

# Standard topology: namespaces rsiw-a and rsiw-b joined by a veth pair
# (va in rsiw-a, 198.18.0.1; vb in rsiw-b, 198.18.0.2), MTU 1500. The two
# ends get distinct ifindexes: upstream siw binds its wildcard listener to
# its netdev's ifindex in the listener's namespace, so equal indexes make
# rdma_cm's listen on both devices collide (EADDRINUSE).
NS_A=rsiw-a NS_B=rsiw-b
IP_A=198.18.0.1 IP_B=198.18.0.2

# say TEXT: a "# " line straight to the test's output, also from inside
# `check`, which shows its command's output only when the check fails.
exec {SAY}>&1
say() { echo "# $*" >&"$SAY"; }

# siw_last_send_race ROLE DRIVER STATUS OUTPUT: true when the perftest
# ROLE (server or client) on upstream siw (DRIVER siw*) exited 1 having
# failed only its last Send with status 2 (IBV_WC_LOC_QP_OP_ERR, " Bad wc
# status 2" then perftest's closing write: " Unable to write from
# socket/rdma_cm" on the server, "... to socket/rdma_cm" on the client).
# It is upstream siw's race with the peer's FIN (tests/guest/siw_last_send.c
# says where; make repro-siw-last-send reproduces it on the server's side)
# only once the other side ended well, which it does only after receiving
# that Send: the caller checks that, then says so (say_siw_last_send_race).
siw_last_send_race() {
	local write
	case $1 in
	server) write='Unable to write from socket/rdma_cm' ;;
	client) write='Unable to write to socket/rdma_cm' ;;
	*) return 1 ;;
	esac
	[[ $2 == siw* ]] && [ "$3" = 1 ] && grep -q 'Bad wc status 2 *$' <<<"$4" &&
		grep -q "$write" <<<"$4"
}
# say_siw_last_send_race ROLE: says that the siw ROLE's failure was that race.
say_siw_last_send_race() {
	say "upstream siw: the siw $1 failed its last Send (IBV_WC_LOC_QP_OP_ERR) after the peer had received it, siw's race with the peer's FIN (reproducer: make repro-siw-last-send); not a failure of rsiw, the peer ended well"
}

# tmo SECS: a timeout scaled by RSIW_TIMEOUT_SCALE (the debug kernel runs
# several times slower under TCG).
tmo() { echo $(($1 * ${RSIW_TIMEOUT_SCALE:-1})); }

# in_a/in_b CMD...: CMD in ns A / B. nsenter joins the network namespace
# and nothing else; `ip netns exec` also unshares the mount namespace and
# remounts /sys for it, a second or more per call on the debug kernel
# under TCG. What must see the namespace's /sys/class/net uses ns_sys.
in_a() { nsenter --net="/run/netns/$NS_A" "$@"; }
in_b() { nsenter --net="/run/netns/$NS_B" "$@"; }
ns_sys() { ip netns exec "$@"; }

# snooze SECS: sleep without starting a process (a process start costs
# about half a second on the debug kernel under TCG): a read with a
# timeout on a FIFO that nobody writes to.
SNOOZE_FD=
snooze() {
	if [ -z "$SNOOZE_FD" ] || [ ! -e "/proc/$BASHPID/fd/$SNOOZE_FD" ]; then
		local f=/tmp/rsiw-snooze.$BASHPID.$RANDOM
		mkfifo "$f" && exec {SNOOZE_FD}<>"$f" && rm -f "$f"
	fi
	read -r -t "$1" -u "$SNOOZE_FD" _
	return 0
}

# sleep SECS: snooze for a plain number of seconds, sleep(1) otherwise.
sleep() {
	if [ $# = 1 ] && [[ $1 =~ ^[0-9]*\.?[0-9]+$ ]]; then
		snooze "$1"
	else
		command sleep "$@"
	fi
}

# kill_tree PID [SIG]: signals PID and every process below it (a function
# or subshell run in the background is a bash process whose children
# would otherwise live on). The parents come from /proc/*/stat, read
# with shell builtins.
kill_tree() {
	local f line st kids=()
	for f in /proc/[0-9]*/stat; do
		{ read -r line <"$f"; } 2>/dev/null || continue
		read -r -a st <<<"${line##*) }"
		[ "${st[1]}" = "$1" ] && kids+=("${f//[^0-9]/}")
	done
	kill -"${2:-TERM}" "$1" 2>/dev/null
	for f in "${kids[@]}"; do kill_tree "$f" "${2:-TERM}"; done
	return 0
}

# watched SECS DIAG CMD...: CMD, stopped after SECS (status 124, as
# timeout(1) says) once the function DIAG has shown what it was stuck on:
# a connection gone with its process tells nothing, a check that timed
# out had nothing to show but the programs' output.
watched() {
	local n=$(($1 * 10)) diag=$2 pid
	shift 2
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [ $n -le 0 ]; then
			$diag
			kill_tree "$pid"
			wait "$pid"
			return 124
		fi
		snooze 0.1
		n=$((n - 1))
	done
	wait "$pid"
}

# ns_pid NS: sets NSPID to the PID of an anchor process (sleep) in
# namespace NS, started on first use (disowned: a plain `wait` does not
# wait for it) and stopped by topo_down; its /proc/PID/net is the
# namespace's view, read by `listening` without starting a process.
ns_pid() {
	local f=/tmp/rsiw-anchor.$1 pid=
	[ -r "$f" ] && read -r pid <"$f"
	if [ -n "$pid" ] && [ "/proc/$pid/ns/net" -ef "/run/netns/$1" ]; then
		NSPID=$pid
		return 0
	fi
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	nsenter --net="/run/netns/$1" sleep 1000000 </dev/null >/dev/null 2>&1 &
	pid=$!
	disown "$pid"
	echo "$pid" >"$f"
	# until nsenter has joined the namespace
	for _ in $(seq 100); do
		[ "/proc/$pid/ns/net" -ef "/run/netns/$1" ] && break
		snooze 0.02
	done
	NSPID=$pid
}
# ns_anchors_stop: stops every anchor (before the namespaces go).
ns_anchors_stop() {
	local f pid
	for f in /tmp/rsiw-anchor.*; do
		[ -r "$f" ] || continue
		read -r pid <"$f" && kill "$pid" 2>/dev/null
		rm -f "$f"
		# until it has left its namespace (even as a zombie)
		for _ in $(seq 100); do
			[ -e "/proc/$pid/ns/net" ] || break
			snooze 0.02
		done
	done
	return 0
}

# listening WHERE PORT: true when a TCP socket listens on PORT, in
# namespace WHERE (a name) or in the network namespace of process WHERE
# (a PID); read from /proc/PID/net/tcp{,6} with shell builtins.
listening() {
	local pid=$1 hex f _sl loc _rem st
	if ! [[ $pid =~ ^[0-9]+$ ]]; then
		ns_pid "$1"
		pid=$NSPID
	fi
	printf -v hex ':%04X' "$2"
	for f in "/proc/$pid/net/tcp" "/proc/$pid/net/tcp6"; do
		[ -r "$f" ] || continue
		while read -r _sl loc _rem st _; do
			[[ $loc == *"$hex" && $st == 0A ]] && return 0
		done <"$f"
	done
	return 1
}
# wait_listen WHERE PORT [SECS]: waits (default 5 s, scaled by tmo) until
# `listening WHERE PORT`; wait_unlisten: until it is not.
wait_listen() {
	local n=$((${3:-$(tmo 5)} * 20))
	while [ $n -gt 0 ]; do
		listening "$1" "$2" && return 0
		snooze 0.05
		n=$((n - 1))
	done
	return 1
}
wait_unlisten() {
	local n=$((${3:-$(tmo 5)} * 20))
	while [ $n -gt 0 ]; do
		listening "$1" "$2" || return 0
		snooze 0.05
		n=$((n - 1))
	done
	return 1
}

# wait_until COND...: waits (30 s at most, scaled by tmo) until the
# command COND succeeds, trying it every 0.2 s.
wait_until() {
	local n=$(($(tmo 30) * 5))
	until "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		snooze 0.2
	done
}

topo_up() { # [MTU]
	local mtu=${1:-1500}
	topo_down
	ip netns add "$NS_A" && ip netns add "$NS_B" &&
		ip link add va netns "$NS_A" mtu "$mtu" index 101 type veth peer name vb netns "$NS_B" mtu "$mtu" index 102 &&
		in_a ip addr add "$IP_A/24" dev va && in_b ip addr add "$IP_B/24" dev vb &&
		in_a ip link set va up && in_b ip link set vb up &&
		in_a ip link set lo up && in_b ip link set lo up
}

# neigh_pin: permanent neighbour entries between va and vb, for
# measurements. Otherwise the first traffic after topo_up finds ns B's
# entry for A learnt from A's ARP request (STALE, then DELAY for 5 s):
# until it is confirmed, B's packets take the slower neigh_resolve_output
# path, and whichever driver runs first is measured slower.
# neigh_pin DEV_A DEV_B ADDR_A ADDR_B pins another pair's entries.
neigh_pin() {
	local da=${1:-va} db=${2:-vb} ia=${3:-$IP_A} ib=${4:-$IP_B} ma mb
	ma=$(ns_sys "$NS_A" cat "/sys/class/net/$da/address") && mb=$(ns_sys "$NS_B" cat "/sys/class/net/$db/address") &&
		in_a ip neigh replace "$ib" lladdr "$mb" dev "$da" nud permanent &&
		in_b ip neigh replace "$ia" lladdr "$ma" dev "$db" nud permanent
}

# A process a test left in either namespace (it would keep the namespace
# alive after `ip netns del`, and later tests with it) is a failure: it is
# named, killed, and topo_down returns 1.
topo_down() {
	local ns pids rc=0
	ns_anchors_stop
	for ns in "$NS_A" "$NS_B"; do
		[ -e "/run/netns/$ns" ] || continue
		for _ in $(seq 20); do
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[ -z "$pids" ] && break
			snooze 0.1
		done
		if [ -n "$pids" ]; then
			echo "# left running in $ns:" $(ps -o pid=,comm= -p "$(echo $pids | tr ' ' ,)")
			kill -KILL $pids 2>/dev/null
			rc=1
		fi
		ip netns del "$ns" 2>/dev/null
	done
	return $rc
}

# add_dev NS NAME TYPE NETDEV: rdma link add in a namespace
add_dev() { nsenter --net="/run/netns/$1" rdma link add "$2" type "$3" netdev "$4"; }
del_dev() { rdma link delete "$1"; }

# use_pair DRV: the RDMA links are ${DRV}a on va (ns A) and ${DRV}b on vb
# (ns B), and only those (left as they are when they already are).
USE_PAIR=
use_pair() {
	local d
	[ "$USE_PAIR" = "$1" ] && return 0
	for d in $(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1); do
		rdma link delete "$d"
	done
	add_dev "$NS_A" "${1}a" "$1" va && add_dev "$NS_B" "${1}b" "$1" vb && USE_PAIR=$1
}

# guest_prog NAME: prints the path of the test program (or, for NAME.so,
# library) built from NAME.c in this directory: the one built on the host before the boot
# (tests/guest/Makefile, into RSIW_PROG_DIR) when it is newer than its
# source, else one built here into a new temporary directory.
RSIW_PROG_DIR=${RSIW_PROG_DIR:-$RSIW_REPO/target/guest}
guest_prog() {
	local out=$RSIW_PROG_DIR
	if [ ! -x "$out/$1" ] || [ "$RSIW_TESTDIR/${1%.so}.c" -nt "$out/$1" ]; then
		out=$(mktemp -d)
		make -s -C "$RSIW_TESTDIR" OUTPUT="$out" KSFT_DIR="$KSFT_DIR" "$out/$1" >&2 || return 1
	fi
	echo "$out/$1"
}

# perftest_wrap: puts a directory first in PATH whose ib_*_bw and ib_*_lat
# run perftest's with perftest_retry.so preloaded (see perftest_retry.c:
# a client whose test connection comes before its server listens again
# is refused, and perftest's own retry crashes). Set up once a boot.
PERFTEST_WRAP=/tmp/rsiw-perftest-wrap
perftest_wrap() {
	local shim n real
	if [ ! -x "$PERFTEST_WRAP/ib_write_bw" ]; then
		shim=$(guest_prog perftest_retry.so) && mkdir -p "$PERFTEST_WRAP.new" || return 1
		for n in ib_{read,write,send,atomic}_{bw,lat}; do
			real=$(PATH=${PATH//$PERFTEST_WRAP:/} command -v $n) || continue
			printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$shim" "$real" >"$PERFTEST_WRAP.new/$n" &&
				chmod +x "$PERFTEST_WRAP.new/$n" || return 1
		done
		mv -T "$PERFTEST_WRAP.new" "$PERFTEST_WRAP" 2>/dev/null || [ -x "$PERFTEST_WRAP/ib_write_bw" ] || return 1
	fi
	[[ :$PATH: == *:$PERFTEST_WRAP:* ]] || export PATH=$PERFTEST_WRAP:$PATH
}
if command -v ib_write_bw >/dev/null; then
	perftest_wrap || echo "# perftest_wrap failed: perftest runs without perftest_retry.so" >&2
fi

load_rsiw() { lsmod | grep -q '^rsiw ' || insmod "$RSIW_KO" "$@"; }
unload_rsiw() { ! lsmod | grep -q '^rsiw ' || rmmod rsiw; }
load_siw() { lsmod | grep -q '^siw ' || modprobe siw; }

# Kernel log hygiene: every test ends with kmsg_check, which reports the
# bad lines logged since kmsg_mark. Under run_tests.sh, which has a
# `cat /dev/kmsg` append every record to RSIW_KMSG_LOG and shares one open
# file of it (RSIW_KMSG_FD) with every test file, both read the new
# records with shell builtins up to a marker they log themselves, and
# keep the bad ones in RSIW_KMSG_BAD (so that a mark or check in a
# subshell hides nothing from the caller's check). Otherwise they go
# through dmesg(1), 1-2 s a call on the debug kernel.
KMSG_BAD='WARNING:|BUG:|BUG |Oops|general protection|lockdep|possible circular|possible recursive|KASAN|kmemleak|UBSAN|refcount_t:|list_add corruption|list_del corruption|Call Trace|unregister_netdevice: waiting|hung_task|soft lockup|RCU stall'
KMSG_BAD_ALL=$KMSG_BAD
# Lines that say which part of a test runs (kept with the bad lines, never
# reported as bad), e.g. hostile-peer --kmsg's "rsiw-scope: hostile NAME".
KMSG_SCOPE='rsiw-scope: '
KMSG_SEQ=0
# kmsg_read: reads the shared log up to a fresh marker, keeping bad lines.
kmsg_read() {
	local tag line part= n=0
	tag="rsiw-kmsg-mark $BASHPID.$KMSG_SEQ"
	KMSG_SEQ=$((KMSG_SEQ + 1))
	# level 7: kept off the console
	echo "<7>$tag" >/dev/kmsg
	while [ $n -lt $((200 * ${RSIW_TIMEOUT_SCALE:-1})) ]; do
		if read -r -u "$RSIW_KMSG_FD" line; then
			line=$part$line part=
			[[ $line == *";$tag" ]] && return 0
			[[ $line =~ $KMSG_BAD_ALL|$KMSG_SCOPE ]] && echo "${line#*;}" >>"$RSIW_KMSG_BAD"
		else
			# at the end: a partial line waits for its rest
			part+=$line
			snooze 0.05
			n=$((n + 1))
		fi
	done
	echo "rsiw-kmsg: marker not seen in $RSIW_KMSG_LOG (WARNING: kernel log unread)" >>"$RSIW_KMSG_BAD"
}
# kmsg_bad_count: the number of lines in RSIW_KMSG_BAD.
kmsg_bad_count() {
	local n=0
	while IFS= read -r _; do n=$((n + 1)); done <"$RSIW_KMSG_BAD"
	echo "$n"
}
kmsg_mark() {
	if [ -n "${RSIW_KMSG_FD:-}" ]; then
		kmsg_read
		KMSG_LINE=$(kmsg_bad_count)
	else
		KMSG_LINE=$(dmesg | wc -l)
	fi
}
# kmsg_scoped: prints the bad lines and the scope lines logged since
# kmsg_mark (in order), and marks anew.
kmsg_scoped() {
	local line i=0
	if [ -n "${RSIW_KMSG_FD:-}" ]; then
		kmsg_read
		while IFS= read -r line; do
			i=$((i + 1))
			[ $i -gt "${KMSG_LINE:-0}" ] && [[ $line =~ $KMSG_BAD|$KMSG_SCOPE ]] && echo "$line"
		done <"$RSIW_KMSG_BAD"
		KMSG_LINE=$i
	else
		dmesg | tail -n +"$((KMSG_LINE + 1))" | grep -E "$KMSG_BAD|$KMSG_SCOPE" | sed 's/^\[[^]]*\] //'
		kmsg_mark
	fi
}
kmsg_check() {
	local bad= line i=0
	if [ -n "${RSIW_KMSG_FD:-}" ]; then
		kmsg_read
		while IFS= read -r line; do
			i=$((i + 1))
			[ $i -gt "${KMSG_LINE:-0}" ] && [[ $line =~ $KMSG_BAD ]] && bad+=$line$'\n'
		done <"$RSIW_KMSG_BAD"
		bad=${bad%$'\n'}
		KMSG_LINE=$i
	else
		bad=$(dmesg | tail -n +"$((KMSG_LINE + 1))" | grep -E "$KMSG_BAD")
		kmsg_mark
	fi
	if [ -n "$bad" ]; then
		echo "$bad" | sed 's/^/# kmsg: /'
		kmsg_reports
		return 1
	fi
	return 0
}
# kmsg_reports: prints, once each, the whole kernel reports (WARNING, BUG,
# lockdep, KASAN, UBSAN) in the shared log that no earlier call printed:
# the lines kmsg_check matched name a report, the trace says where.
# At most 160 lines a report; continuation records (" KEY=value") and
# this file's markers are left out.
KMSG_REPORT_START='WARNING:|BUG:|BUG |Oops|general protection|possible circular|possible recursive|KASAN:|UBSAN:|refcount_t:|list_(add|del) corruption|INFO: task .* blocked'
kmsg_reports() {
	local done_file=${RSIW_KMSG_BAD:-/tmp/rsiw-kmsg.bad}.reported last
	[ -n "${RSIW_KMSG_LOG:-}" ] && [ -r "$RSIW_KMSG_LOG" ] || return 0
	last=$(cat "$done_file" 2>/dev/null || echo -1)
	awk -F';' -v last="$last" -v start="$KMSG_REPORT_START" -v out="$done_file" '
		/^ / || /rsiw-kmsg-mark / { next }
		{
			split($1, h, ","); seq = h[2] + 0
			if (seq <= last) next
			msg = substr($0, length($1) + 2)
			if (left == 0 && msg ~ start) { left = 160; print "# kmsg report:" }
			if (left > 0) { print "# | " msg; left--; high = seq }
		}
		END { if (high > last) print high > out }
	' "$RSIW_KMSG_LOG"
}

# budget_spent DESC: true when this boot's time budget (RSIW_DEADLINE, in
# seconds since the epoch, set by run_tests.sh from RSIW_BUDGET_SECS) is
# spent and DESC is not a setup or cleanup step, which always run: the
# test is then reported as a SKIP instead of run.
budget_spent() {
	[ -n "${RSIW_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$RSIW_DEADLINE" ] &&
		[[ $1 != setup* && $1 != cleanup* && $1 != *": setup"* && $1 != *": cleanup"* ]]
}
BUDGET_SKIP="the time budget of this boot is spent (tests/run-all)"

# check DESC COMMAND...: one KTAP test; fails on a non-zero exit or on a bad
# kernel log line appearing during the command. Its duration is printed
# as a diagnostic line ("# took N s") before the result.
check() {
	local desc=$1 t0=$SECONDS
	shift
	if budget_spent "$desc"; then
		ktap_test_skip "$desc ($BUDGET_SKIP)"
		return 0
	fi
	kmsg_mark
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	echo "# took $((SECONDS - t0)) s"
	if [ $rc -ne 0 ]; then
		echo "$out" | tail -n 30 | sed 's/^/# /'
		kmsg_check
		ktap_test_fail "$desc"
		return 1
	fi
	if ! kmsg_check; then
		ktap_test_fail "$desc"
		return 1
	fi
	ktap_test_pass "$desc"
}
