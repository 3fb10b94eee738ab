#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fio's rdma ioengine (Debian's fio: rdma_cm and libsiw, a client rsiw did
# not write) between two rsiw devices: rsiwa in ns A runs fio's client
# (rw=write), rsiwb in ns B its server (rw=read); 64 KiB blocks, the
# client at iodepth 16. RDMA Write, RDMA Read and Send each end within
# their time with fio's data rate, and leave no fio process and no RDMA
# object behind.
#
# fio's Send has no flow control: its client may have any number of
# Sends on the way (a Send completes once TCP took it), its server only
# the receives it posted. A server that falls behind gets a Send with no
# receive posted, which RFC 5041 answers with the "no buffer" TERMINATE;
# both QPs go to error and flush. The overrun check makes that likely
# (the server posts one receive at a time) and takes either end: fio's
# data rates, or the error in the client's output within its time, both
# QPs in error with the TERMINATE sent by rsiwb and received by rsiwa.
# fio itself cannot end after an error completion (its rdma engine's
# getevents waits for the next completion event, which no CQE will
# bring, upstream siw's the same), and its job runs in a session of its
# own, so a kill of the fio command leaves the job: the check kills
# every fio process and asks that they all go, with everything they
# held. Last, the links are deleted (with nothing attached any more;
# rsiw_unplug.sh is the test of a delete with applications attached).
#
# Cost: about 35 s on the standard kernel (32-36 s measured).
. "$(dirname "$0")/lib.sh"

WORK=$(mktemp -d /tmp/rsiw-fio.XXXXXX)
# what the checks print when they pass (check shows their output only
# when they fail)
exec {SAY}>&1

ktap_print_header
ktap_set_plan 6

setup() { topo_up && load_rsiw && use_pair rsiw && command -v fio >/dev/null; }

# fio_start PORT VERB SERVER_OPTS CLIENT_OPTS: starts a fio rdma server
# in ns B and, once it listens on PORT, its client in ns A; their output
# in $WORK/srv and $WORK/cli, their PIDs in SRV and CLI. (Each run has a
# port of its own: an iWARP listener goes some time after its process.)
fio_start() {
	local port=$1 common=(--ioengine=rdma --port="$1" --verb="$2" --bs=64k)
	shift
	# shellcheck disable=SC2086 # options as words
	in_b fio --name=srv "${common[@]}" --rw=read $2 >"$WORK/srv" 2>&1 &
	SRV=$!
	# (30 s: fio takes its time to start under TCG; at a load of 6 its
	# server was not listening after the default 5 s, and went on
	# running into the next check)
	wait_listen "$NS_B" "$port" "$(tmo 30)" || {
		echo "the fio server does not listen on $port"
		cat "$WORK/srv"
		kill_tree $SRV KILL
		wait $SRV 2>/dev/null
		return 1
	}
	# shellcheck disable=SC2086
	in_a fio --name=cli "${common[@]}" --rw=write --hostname="$IP_B" $3 >"$WORK/cli" 2>&1 &
	CLI=$!
}

# ended SECS PID...: waits up to SECS for every PID to end; true when all
# did.
ended() {
	local t=$((SECONDS + $1)) p
	shift
	while [ $SECONDS -le $t ]; do
		for p in "$@"; do
			kill -0 "$p" 2>/dev/null && break
		done
		kill -0 "$p" 2>/dev/null || return 0
		snooze 0.2
	done
	return 1
}

# fio_procs: the PIDs of every fio process (the commands and their jobs).
fio_procs() {
	local f c
	for f in /proc/[0-9]*/comm; do
		{ read -r c <"$f"; } 2>/dev/null || continue
		[ "$c" = fio ] && { f=${f#/proc/}; echo "${f%/comm}"; }
	done
}

# fio_kill: SIGKILL to every fio process; true when they are all gone
# within 10 s.
fio_kill() {
	local p left
	for p in $(fio_procs); do kill -KILL "$p" 2>/dev/null; done
	wait "$SRV" "$CLI" 2>/dev/null
	for _ in $(seq 50); do
		left=$(fio_procs)
		[ -z "$left" ] && return 0
		snooze 0.2
	done
	for p in $left; do
		echo "fio $p still there after SIGKILL, in $(cat "/proc/$p/wchan" 2>/dev/null):"
		cat "/proc/$p/stack" 2>/dev/null
	done
	return 1
}

# res_zero: `rdma res show` counts all zero for rsiwa and rsiwb, within
# 10 s (rdma_cm ids and QPs go after their process).
res_zero() {
	local line w f i j
	for ((i = 0; i < 50; i++)); do
		f=0
		while IFS= read -r line; do
			read -r -a w <<<"${line#*: *: }"
			for ((j = 1; j < ${#w[@]}; j += 2)); do
				[ "${w[$j]}" = 0 ] || f=1
			done
		done < <(rdma res show)
		[ $f = 0 ] && return 0
		snooze 0.2
	done
	echo "RDMA objects left:"
	rdma res show
	rdma res show qp -dd
	return 1
}

# rates VERB: both fio commands ended with status 0 and report their
# rates (printed), and nothing is left.
rates() {
	local rc=0
	wait "$CLI" || { echo "fio client: exit status $?"; rc=1; }
	wait "$SRV" || { echo "fio server: exit status $?"; rc=1; }
	grep -q 'err= 0' "$WORK/cli" && grep -q 'WRITE: bw=' "$WORK/cli" &&
		grep -q 'err= 0' "$WORK/srv" || rc=1
	if [ $rc != 0 ]; then
		echo "client:" && grep -E 'fio:|err=|bw=' "$WORK/cli"
		echo "server:" && grep -E 'fio:|err=|bw=' "$WORK/srv"
		return 1
	fi
	grep -h 'WRITE: bw=' "$WORK/cli" | sed "s/^ */# $1 client: /" >&"$SAY"
	[ -z "$(fio_procs)" ] || { echo "fio processes left: $(fio_procs)"; return 1; }
	res_zero
}

# verb PORT VERB SIZE SERVER_OPTS: fio VERB of SIZE, the client at
# iodepth 16; the run must end within 30 s with the data rates.
verb() {
	fio_start "$1" "$2" "--size=$3 $4" "--size=$3 --iodepth=16" || return 1
	shift
	ended "$(tmo 30)" "$CLI" "$SRV" || {
		echo "fio $1 still running after $(tmo 30) s"
		tail -n 5 "$WORK/cli" "$WORK/srv"
		fio_kill
		return 1
	}
	rates "$1"
}

# overrun: Sends to a server that posts one receive at a time. Either end
# (see the top of the file); then every fio process goes on SIGKILL and
# leaves nothing behind.
overrun() {
	local qps rc=0
	fio_start 7304 send "--size=64m --iodepth=1" "--size=64m --iodepth=16" || return 1
	local t=$((SECONDS + $(tmo 30)))
	until grep -q 'cq completion status' "$WORK/cli"; do
		if ended 0 "$CLI" "$SRV"; then
			echo "# send overrun: no receive missing, fio ended" >&"$SAY"
			rates send
			return
		fi
		[ $SECONDS -le $t ] || {
			echo "fio send: neither ended nor an error reported in $(tmo 30) s"
			tail -n 5 "$WORK/cli" "$WORK/srv"
			fio_kill
			return 1
		}
		snooze 0.2
	done
	# the QPs: error, rsiwb sent the DDP "no buffer" TERMINATE (layer 1,
	# error type 2, code 2), rsiwa received it
	for ((t = 0; t < 25; t++)); do
		qps=$(rdma res show qp -dd)
		grep -qE "rsiwa/.* state ERR .* drv_last_term received drv_last_term_layer 1 drv_last_term_etype 2 drv_last_term_code 2 " <<<"$qps" &&
			grep -qE "rsiwb/.* state ERR .* drv_last_term sent drv_last_term_layer 1 drv_last_term_etype 2 drv_last_term_code 2 " <<<"$qps" && break
		snooze 0.2
	done
	[ $t -lt 25 ] || {
		echo "not both QPs in error with rsiwb's no buffer TERMINATE:"
		echo "$qps"
		rc=1
	}
	grep -h 'cq completion status' "$WORK/cli" | sed 's/^/# send overrun, client: /' >&"$SAY"
	grep -h 'cq completion status' "$WORK/srv" | sed 's/^/# send overrun, server: /' >&"$SAY"
	fio_kill || rc=1
	res_zero || rc=1
	return $rc
}

# cleanup: the links go (within a time limit, which catches a delete that
# hangs), then the module.
cleanup() {
	local rc=0
	[ -z "$(fio_procs)" ] || fio_kill || rc=1
	timeout "$(tmo 20)" rdma link delete rsiwa || { echo "rdma link delete rsiwa failed"; rc=1; }
	timeout "$(tmo 20)" rdma link delete rsiwb || { echo "rdma link delete rsiwb failed"; rc=1; }
	USE_PAIR=
	[ $rc = 0 ] && unload_rsiw && topo_down && rm -rf "$WORK"
}

check "setup: rsiwa in ns A, rsiwb in ns B, fio" setup || ktap_exit_fail_msg "setup failed"
check "fio rdma write: 32 MiB ends with its data rate, nothing left" verb 7301 write 32m "--iodepth=16"
check "fio rdma read: 32 MiB ends with its data rate, nothing left" verb 7302 read 32m "--iodepth=16"
check "fio rdma send: 4 MiB to a server with 64 receives posted" verb 7303 send 4m "--iodepth=64"
check "fio rdma send overrun: data rates or the error within its time; fio killed, nothing left" overrun
check "cleanup: the links and the module go" cleanup
ktap_finished
