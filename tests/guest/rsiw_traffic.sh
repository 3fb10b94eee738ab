#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Data path: real RDMA traffic between rsiw and upstream siw in both roles
# and between two rsiw devices, with stock librdmacm tools and perftest.
. "$(dirname "$0")/lib.sh"
# perftest iterations (the debug kernel run uses fewer, see tests/run-debug)
ITERS=${RSIW_PERF_ITERS:-200}
# iterations per size of the -a sweeps (the debug kernel run uses fewer,
# and fewer sizes: see perf_all)
SWEEP_ITERS=${RSIW_PERF_SWEEP_ITERS:-20}


# pair A_TYPE B_TYPE [MODPARAMS]: rsiw/siw devices dev_a in ns A, dev_b in ns B
pair() {
	CLIENT_DRV=$1 SERVER_DRV=$2
	del_dev dev_a 2>/dev/null
	del_dev dev_b 2>/dev/null
	add_dev "$NS_A" dev_a "$1" va && add_dev "$NS_B" dev_b "$2" vb
}

# serve CMD...: start a server in ns B, wait until it listens. The
# previous server's listener must be gone first: an iWARP listener is torn
# down after its process exits, and a client that connects to it then is
# refused.
serve() {
	wait_unlisten "$NS_B" "$PORT"
	in_b timeout $(tmo 60) "$@" >/tmp/server.out 2>&1 &
	SERVER=$!
	wait_listen "$NS_B" "$PORT"
	return 0
}
# finish: the server's end; a failed server shows its status and output
# (a check that failed on it printed nothing before). Called once the
# client ended well: a siw server that then failed only its last Send is
# siw's race (lib.sh siw_last_send_race), said and passed (perf says the
# same of a siw client when the server ended well).
finish() {
	wait "$SERVER" && return 0
	local rc=$?
	siw_last_send_race server "$SERVER_DRV" $rc "$(cat /tmp/server.out)" && {
		say_siw_last_send_race server
		return 0
	}
	echo "server exit status $rc (124: timed out)"
	grep -Ev "$PERF_BANNER" /tmp/server.out | head -n 12
	return $rc
}
# stall_diag: what a client still running at its time limit was stuck on
# (watched): both ends' TCP queues and windows, and the QPs' details
# (rsiw's show what each side sent and received, and its receive state).
stall_diag() {
	{
		echo "client still running; its socket, then the server's:"
		in_a ss -Htni "dst $IP_B"
		in_b ss -Htni "src $IP_B"
		echo "QPs:"
		rdma res show qp -dd
	} >/tmp/stall.out 2>&1
}
# client SECS PROG ARGS...: perftest's client in ns A with a time limit
# of SECS (scaled; watched, see stall_diag); its output in /tmp/client.out.
client() {
	local secs=$1
	shift
	rm -f /tmp/stall.out
	watched "$(tmo "$secs")" stall_diag in_a "$@" >/tmp/client.out 2>&1
}
# the client failed: the server may wait for it until its timeout
abort_server() { kill_tree "$SERVER"; wait "$SERVER" 2>/dev/null; }
# client_failed STATUS: show what both sides printed, without perftest's
# banner (an error goes to stderr at once, the report to stdout only at
# exit, so the error sits above the report: not only the file's tail),
# and stop the server.
PERF_BANNER='^ *(Dual-port|Number of qps|Connection type|Using SRQ|PCIe relax|ibv_wr|TX depth|RX depth|CQ Moderation|Mtu|Link type|GID index|Outstand reads|rdma_cm QPs|Data ex. method|Max inline|Device not recognized|local address|remote address|GID:|RDMA_|Send |.* Test$|-+$|$)'
client_failed() {
	echo "client exit status $1 (124: timed out)"
	grep -Ev "$PERF_BANNER" /tmp/client.out | head -n 12
	abort_server
	echo "server:"
	grep -Ev "$PERF_BANNER" /tmp/server.out | head -n 6
	# (last: the check shows its output's last 30 lines)
	[ ! -s /tmp/stall.out ] || cat /tmp/stall.out
}

rping_v() {
	PORT=7174
	serve rping -s -a "$IP_B" -p $PORT -C 50 -S 16000
	in_a timeout $(tmo 50) rping -c -a "$IP_B" -p $PORT -C 50 -S 16000 -V >/dev/null || return 1
	finish
}

# perftest runs with -F: under TCG its estimate of the CPU clock sometimes
# fails its own r^2 check, and without -F it then exits 1 ("Can't produce
# a report") after a complete run: the likely cause of one make check
# failure on the debug kernel, where the client exited right
# after its banner and the kernel logged nothing.
perf() { # tool
	PORT=18515
	serve "$1" -R -F -n $ITERS -s "${PERF_SIZE:-65536}" -d dev_b
	client 50 "$1" -R -F -n $ITERS -s "${PERF_SIZE:-65536}" -d dev_a "$IP_B" || {
		local rc=$?
		# the server ends well only after receiving the client's last Send
		if siw_last_send_race client "$CLIENT_DRV" $rc "$(cat /tmp/client.out)" && wait "$SERVER"; then
			say_siw_last_send_race client
			return 0
		fi
		client_failed $rc
		return 1
	}
	finish
}

# The sweeps: perftest's -a (2 octets to 8 MiB, SWEEP_ITERS messages of
# each size), or the sizes RSIW_PERF_SWEEP_SIZES lists, each its own run.
# The debug kernel's run lists 2, 4096 and 1048576 (tests/run-debug):
# there rsiw moved under 1 MB/s, and -a's five messages of each size took
# 100 s a tool, 94% of its octets in the 1-8 MiB messages, whose paths the
# 1 MiB one takes too (many pages, many FPDUs, a Read Response of many
# segments); both standard kernels sweep to 8 MiB.
SWEEP_SIZES=${RSIW_PERF_SWEEP_SIZES:-}
perf_all() { # tool
	PORT=18515
	local size opts want
	for size in ${SWEEP_SIZES:-all}; do
		if [ "$size" = all ]; then
			opts=-a want=8388608
		else
			opts="-s $size" want=$size
		fi
		serve "$1" -R -F $opts -n "$SWEEP_ITERS" -d dev_b
		client 120 "$1" -R -F $opts -n "$SWEEP_ITERS" -d dev_a "$IP_B" || {
			client_failed $?
			return 1
		}
		grep -qE "^ *$want " /tmp/client.out || { echo "no report of $want octets"; abort_server; return 1; }
		finish || return 1
	done
}
sweep_name() {
	if [ -z "$SWEEP_SIZES" ]; then
		echo "-a up to 8 MiB"
	else
		echo "at $(echo $SWEEP_SIZES | sed 's/ /, /g') octets"
	fi
}

lat() { # tool
	PORT=18515
	serve "$1" -R -F -n $ITERS -s 64 -d dev_b
	client 50 "$1" -R -F -n $ITERS -s 64 -d dev_a "$IP_B" || {
		client_failed $?
		return 1
	}
	finish
}

cmatose() {
	PORT=7480
	serve ucmatose -b "$IP_B" -p $PORT -c 2 -C 10
	in_a timeout $(tmo 30) ucmatose -s "$IP_B" -b "$IP_A" -p $PORT -c 2 -C 10 >/tmp/client.out 2>&1 || {
		head -n 40 /tmp/client.out
		return 1
	}
	finish
}

rdma_cs() {
	PORT=7481
	serve rdma_server -s "$IP_B" -p $PORT
	in_a timeout $(tmo 20) rdma_client -s "$IP_B" -p $PORT >/tmp/client.out 2>&1 || return 1
	finish
}

rcopy_file() {
	head -c 3000000 /dev/urandom >/tmp/rcopy.src
	rm -f /tmp/rcopy.dst
	(cd /tmp && in_b timeout $(tmo 40) rcopy -p 7472) >/tmp/server.out 2>&1 &
	SERVER=$!
	sleep 1
	# rcopy writes the copy under the same name on the server side
	(cd /tmp && in_a timeout $(tmo 30) rcopy rcopy.src "$IP_B:rcopy.dst" -p 7472) >/tmp/client.out 2>&1 || return 1
	# the server serves the next client until its timeout: the client's
	# success means the server has written and closed the copy
	abort_server
	cmp /tmp/rcopy.src /tmp/rcopy.dst
}

rstream_run() {
	in_b timeout $(tmo 40) rstream -b "$IP_B" -p 7473 -S 65536 -C 200 >/tmp/server.out 2>&1 &
	SERVER=$!
	sleep 1
	local t0=$SECONDS
	in_a timeout $(tmo 30) rstream -s "$IP_B" -p 7473 -S 65536 -C 200 >/tmp/client.out 2>&1
	local rc=$?
	finish
	local src=$?
	if [ $rc != 0 ] || [ $src != 0 ]; then
		echo "rstream client exit $rc, server exit $src, after $((SECONDS - t0)) s"
		tail -3 /tmp/client.out /tmp/server.out
	fi
	return $rc
}

# counters: after the rsiw <-> rsiw runs above, `rdma statistic` on the
# client device shows traffic both ways, no errors, and at least as many
# FPDUs as TCP sends (several FPDUs go out per call).
counter_of() { # DEV NAME
	rdma statistic show link "$1/1" | tr ' ' '\n' | awk -v n="$2" 'f { print; exit } $0 == n { f = 1 }'
}
counters() {
	rdma statistic show link dev_a/1 | sed 's/^/# /'
	local tf rf tb rb ts ce
	tf=$(counter_of dev_a tx_fpdus) rf=$(counter_of dev_a rx_fpdus)
	tb=$(counter_of dev_a tx_payload_bytes) rb=$(counter_of dev_a rx_payload_bytes)
	ts=$(counter_of dev_a tx_tcp_sends) ce=$(counter_of dev_a rx_crc_errors)
	[ "${tf:-0}" -gt 0 ] && [ "${rf:-0}" -gt 0 ] && [ "${tb:-0}" -gt 1000000 ] && [ "${rb:-0}" -gt 1000000 ] &&
		[ "${ts:-0}" -gt 0 ] && [ "$tf" -ge "$ts" ] && [ "${ce:-1}" = 0 ]
}

# small messages posted 16 at a time share TCP segments (a message that
# another one follows goes to TCP with MSG_MORE): far fewer packets than
# messages leave ns A; without it, every message is a packet of its own.
post_list_coalesce() {
	PORT=18515
	local m0 p0 m p
	m0=$(counter_of dev_a tx_messages)
	p0=$(ns_sys "$NS_A" cat /sys/class/net/va/statistics/tx_packets)
	serve ib_send_bw -R -F -n 2000 -l 16 -s 64 -d dev_b
	in_a timeout $(tmo 50) ib_send_bw -R -F -n 2000 -l 16 -s 64 -d dev_a "$IP_B" >/tmp/client.out 2>&1 || {
		head -n 40 /tmp/client.out
		return 1
	}
	finish
	m=$(($(counter_of dev_a tx_messages) - m0))
	p=$(($(ns_sys "$NS_A" cat /sys/class/net/va/statistics/tx_packets) - p0))
	echo "$m messages in $p packets"
	[ "$m" -ge 2000 ] && [ $((3 * p)) -lt "$m" ]
}

# Large FPDUs (mpa_large_fpdu, siw's MPA_RR_FLAG_GSO_EXP bit): the average
# payload of the FPDUs dev_a sends during one ib_write_bw 64 KiB run, in
# FPDU_AVG.
fpdu_avg() {
	local f0 b0 f b
	f0=$(counter_of dev_a tx_fpdus) b0=$(counter_of dev_a tx_payload_bytes)
	perf ib_write_bw || return 1
	f=$(($(counter_of dev_a tx_fpdus) - f0)) b=$(($(counter_of dev_a tx_payload_bytes) - b0))
	FPDU_AVG=$((b / (f > 0 ? f : 1)))
	echo "$f FPDUs, $b payload octets, $FPDU_AVG per FPDU"
}
# Both ends offer large FPDUs: they carry up to 32 KiB; with the offer
# off, every FPDU fits one TCP segment (MSS 1448 here).
large_fpdus() {
	local p=/sys/module/rsiw/parameters/mpa_large_fpdu on off rc
	fpdu_avg || return 1
	on=$FPDU_AVG
	echo 0 >$p
	fpdu_avg
	rc=$?
	off=$FPDU_AVG
	echo 1 >$p
	[ $rc = 0 ] && [ "$on" -gt 16384 ] && [ "$off" -le 1448 ]
}
# siw's responder echoes the Request's flag bits in its Reply, and its
# receiver takes FPDUs of any length: rsiw sends it large ones.
large_fpdus_to_siw() {
	fpdu_avg && [ "$FPDU_AVG" -gt 16384 ]
}

# one_fpdu_each DEV TOOL: perf TOOL with messages of PERF_SIZE octets, of
# which DEV sends each in one FPDU: all their octets in fewer FPDUs than
# two per message (perftest's own few small ones besides).
one_fpdu_each() {
	local f0 b0 f b
	f0=$(counter_of "$1" tx_fpdus) b0=$(counter_of "$1" tx_payload_bytes)
	perf "$2" || return 1
	f=$(($(counter_of "$1" tx_fpdus) - f0)) b=$(($(counter_of "$1" tx_payload_bytes) - b0))
	echo "$2: $1 sent $f FPDUs, $b payload octets for $ITERS messages of $PERF_SIZE"
	[ "$b" -ge $((ITERS * PERF_SIZE)) ] && [ "$f" -lt $((2 * ITERS)) ]
}
# RFC 5044 7.1 with CRC: rsiw takes an FPDU only once all of it is queued
# in the socket (its CRC checked before anything is placed). FPDUs of
# 65507 payload octets (mpa_max_fpdu) against receive buffers far smaller
# (tcp_rmem "4096 16384 16384" in both namespaces): unless rsiw lets the
# window grow to take a whole FPDU, the first one stalls the connection
# for good (no error, no TERMINATE: perftest times out). Writes of 65507
# octets fill dev_b's socket, Read Responses dev_a's, one FPDU each.
crc_max_fpdu_small_rcvbuf() {
	local rm=/proc/sys/net/ipv4/tcp_rmem ra rb rc=1 PERF_SIZE=65507
	ra=$(in_a cat $rm) && rb=$(in_b cat $rm) || return 1
	reload mpa_crc_required=1 mpa_max_fpdu=65507 && pair rsiw rsiw &&
		in_a sh -c "echo 4096 16384 16384 >$rm" && in_b sh -c "echo 4096 16384 16384 >$rm" || return 1
	one_fpdu_each dev_a ib_write_bw && one_fpdu_each dev_b ib_read_bw && rc=0
	in_a sh -c "echo $ra >$rm"
	in_b sh -c "echo $rb >$rm"
	return $rc
}

# stale STags: an STag stops working as soon as its MR is deregistered,
# also right after each side of the QP used it (each remembers the last
# STag it looked up): tests/guest/rsiw_stale.c.
stale_stags() {
	local bin rc
	bin=$(guest_prog rsiw_stale) || return 1
	PORT=18516
	serve "$bin" -s "$IP_B" -p $PORT
	in_a timeout $(tmo 60) "$bin" -c "$IP_B" -p $PORT
	rc=$?
	finish || rc=1
	cat /tmp/server.out
	return $rc
}

# reload PARAM=VALUE...: rsiw loaded anew with these parameters
reload() { del_dev dev_a 2>/dev/null; del_dev dev_b 2>/dev/null; rmmod rsiw && load_rsiw "$@"; }

# `. rsiw_traffic.sh --lib` only defines the helpers (for debugging).
[ "${1:-}" = --lib ] && return 0

ktap_print_header
ktap_set_plan 35

check "setup: topology, rsiw and siw loaded" eval 'topo_up && load_rsiw && load_siw'

rping_v6() {
	in_a ip -6 addr add fd00:198:18::1/64 dev va nodad 2>/dev/null
	in_b ip -6 addr add fd00:198:18::2/64 dev vb nodad 2>/dev/null
	PORT=7500
	serve rping -s -a fd00:198:18::2 -p $PORT -C 10 -S 2000
	in_a timeout $(tmo 20) rping -c -a fd00:198:18::2 -p $PORT -C 10 -S 2000 -V >/dev/null || return 1
	finish
}

check "rsiw client -> siw server: rping -V 50 x 16 KB" eval 'pair rsiw siw && rping_v'
for t in ib_write_bw ib_send_bw ib_read_bw; do
	check "rsiw client -> siw server: $t 64 KiB" perf $t
done
check "rsiw client -> siw server: ib_write_lat 64 B" lat ib_write_lat
check "rsiw client -> siw server: FPDUs larger than a TCP segment (siw echoes the offer)" large_fpdus_to_siw

check "rsiw client -> siw server over IPv6: rping -V" rping_v6

check "siw client -> rsiw server: rping -V 50 x 16 KB" eval 'pair siw rsiw && rping_v'
for t in ib_write_bw ib_send_bw ib_read_bw; do
	check "siw client -> rsiw server: $t 64 KiB" perf $t
done
check "siw client -> rsiw server: ib_read_lat 64 B" lat ib_read_lat

check "rsiw <-> rsiw: rping -V 50 x 16 KB" eval 'pair rsiw rsiw && rping_v'
check "rsiw <-> rsiw over IPv6: rping -V" rping_v6
check "rsiw <-> rsiw: ib_write_bw $(sweep_name)" perf_all ib_write_bw
check "rsiw <-> rsiw: ib_read_bw $(sweep_name)" perf_all ib_read_bw
check "rsiw <-> rsiw: ib_send_bw 64 KiB" perf ib_send_bw
check "rsiw <-> rsiw: ib_send_lat 64 B" lat ib_send_lat
check "rsiw counters (rdma statistic): FPDUs and payload both ways, FPDUs batched per TCP send" counters
check "rsiw <-> rsiw: 64 B Sends posted 16 at a time share TCP segments" post_list_coalesce
check "rsiw <-> rsiw: FPDUs of up to 32 KiB when offered, within the MSS when not (mpa_large_fpdu)" large_fpdus
check "rsiw <-> rsiw: STags of deregistered MRs fail at once on both sides; SRQ receives use the SRQ's PD" stale_stags
check "rsiw <-> rsiw: ucmatose 4 connections" cmatose
check "rsiw <-> rsiw: rdma_server/rdma_client" rdma_cs
check "rsiw <-> rsiw: rcopy 3 MB, checksum equal" rcopy_file
check "rsiw <-> rsiw: rstream (rsockets) 200 x 64 KiB" rstream_run
check "rsiw <-> rsiw with CRC (mpa_crc_required=1): rping -V" eval 'del_dev dev_a; del_dev dev_b; rmmod rsiw && load_rsiw mpa_crc_required=1 && pair rsiw rsiw && rping_v'
check "rsiw <-> rsiw with CRC, 65507 octet FPDUs, tcp_rmem 16 KiB: ib_write_bw, ib_read_bw of 65507 octets complete" \
	crc_max_fpdu_small_rcvbuf
# RFC 5044 7.1.2 in the client-server model: the rsiw server holds what it
# posts until the siw client's first FPDU arrived (rping's client speaks
# first); hostile-peer's responder_waits_first_fpdu checks the hold itself.
check "siw client -> rsiw server waiting for the first FPDU (mpa_responder_waits=1): rping -V" eval \
	'reload mpa_responder_waits=1 && pair siw rsiw && rping_v'
# RFC 6581 peer-to-peer: the initiator sends a zero length Write as RTR;
# the responder (rsiw or siw) reports ESTABLISHED only once it arrived.
check "rsiw <-> rsiw peer-to-peer RTR (mpa_peer_to_peer=1): rping -V, ib_read_bw" eval \
	'reload mpa_peer_to_peer=1 && pair rsiw rsiw && rping_v && perf ib_read_bw'
# Upstream siw's RTR path trips lockdep by itself (sk_callback_lock read with
# softirqs on in siw_qp_llp_data_ready, written in softirq in
# siw_rtr_data_ready); lockdep then switches off for the rest of the boot.
if [ -e /proc/lockdep ]; then
	ktap_test_skip "rsiw client (peer-to-peer RTR) -> siw server: rping -V (siw's own lockdep report on this kernel)"
else
	check "rsiw client (peer-to-peer RTR) -> siw server: rping -V" eval 'pair rsiw siw && rping_v'
fi
# MPA revision 1 (no IRD/ORD negotiation): rsiw as responder offers its
# maxima, so RDMA Read works (siw answers a revision 1 initiator with
# ORD 0, so an rping against a siw server, whose server side reads, fails).
check "rsiw <-> rsiw MPA revision 1 (mpa_rev=1): rping -V, ib_read_bw" eval \
	'reload mpa_rev=1 && pair rsiw rsiw && rping_v && perf ib_read_bw'
check "rsiw client MPA revision 1 -> siw server: ib_read_bw, ib_write_bw" eval \
	'pair rsiw siw && perf ib_read_bw && perf ib_write_bw'
check "cleanup" eval 'del_dev dev_a; del_dev dev_b; unload_rsiw && rmmod siw && topo_down'
ktap_finished
