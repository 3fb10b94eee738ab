#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 5, interoperability gaps:
#  - captures of rping -V sessions taken on the veth inside the guest
#    (rsiw <-> upstream siw both ways, with CRC, with MPA markers), decoded
#    by tshark's iWARP dissectors (iwarp_mpa, iwarp_ddp_rdmap) and by our
#    `iwarp decode`: FPDUs present, no malformed frames or expert warnings,
#    every CRC good, markers where negotiated;
#  - riostream (rsockets RIO) and rdma_xserver/rdma_xclient (RC mode);
#  - NFS over RDMA: kernel nfsd with an RDMA listener on rsiw in ns B,
#    an NFSv4 mount with -o rdma from the initial namespace, 4 MiB written
#    and read back, checksums compared.
# Runtime in the TCG guest (2 vCPUs): about 5 min for the whole
# qemu-images/run on a quiet host (628 s with the host busy).
#
# tshark's MPA dissector assumes one FPDU per TCP segment when markers are
# on: with markers it dissects only the segments that hold exactly one FPDU
# and leaves the rest as plain TCP (not malformed); the marker capture is
# therefore checked fully by `iwarp decode` only, and by tshark for the
# MPA Request/Reply (M=1) and the absence of malformed frames and warnings.
. "$(dirname "$0")/rsiw_traffic.sh" --lib

IWARP=${IWARP:-$RSIW_REPO/target/release/iwarp}
CAPD=/tmp/rsiw-interop
RPORT=7174

# cap_start FILE: dumpcap on va in ns A, rping's port only
cap_start() {
	rm -f "$1" "$CAPD/dumpcap.err"
	# not via in_a: $! must be dumpcap itself (ip netns exec execs it)
	ip netns exec "$NS_A" dumpcap -q -i va -f "tcp port $RPORT" -w "$1" 2>"$CAPD/dumpcap.err" &
	CAP=$!
	for _ in $(seq 100); do
		grep -q Capturing "$CAPD/dumpcap.err" 2>/dev/null && return 0
		kill -0 "$CAP" 2>/dev/null || break
		sleep 0.1
	done
	cat "$CAPD/dumpcap.err"
	return 1
}

cap_stop() {
	sleep 0.5 # the last ACKs and FINs
	kill -TERM "$CAP" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$CAP" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$CAP" 2>/dev/null
	wait "$CAP"
}

# rping_cap FILE: rping -V, 10 x 16 KB, client in ns A, captured
rping_cap() {
	PORT=$RPORT
	cap_start "$1" || return 1
	serve rping -s -a "$IP_B" -p $PORT -C 10 -S 16000
	in_a timeout 50 rping -c -a "$IP_B" -p $PORT -C 10 -S 16000 -V >/dev/null
	local rc=$?
	finish || rc=1
	cap_stop
	[ $rc = 0 ] && [ -s "$1" ]
}

# tshark_check FILE [crc|markers]: one tshark -V pass over the capture.
# Counts frames, frames with iwarp_ddp_rdmap, CRC verdicts of the MPA
# dissector, and expert infos of severity warning or error plus malformed
# frames (what `-Y '_ws.malformed || _ws.expert.severity >= warning'`
# selects), less TCP's sequence analysis (expert group Sequence: D-SACK,
# retransmissions), which is the kernel's TCP retransmitting under a
# loaded host (a guest descheduled past its RTO), not iWARP framing.
# Writes a summary line to FILE.tshark.
tshark_check() {
	local f=$1 mode=${2:-} t=$1.txt
	tshark -n -r "$f" -V >"$t" 2>"$t.err" || {
		cat "$t.err"
		return 1
	}
	local frames ddp mpa bad good badcrc mflag
	frames=$(grep -c '^Frame [0-9]*:' "$t")
	ddp=$(grep -c '\[Protocols in frame: .*iwarp_ddp_rdmap' "$t")
	mpa=$(grep -cE '^iWARP Marker Protocol' "$t")
	bad=$(grep -E 'Expert Info \((Warning|Error)/|Malformed Packet' "$t" | grep -cv '/Sequence)')
	good=$(grep -c 'Good CRC32' "$t")
	badcrc=$(grep -c 'Bad CRC32' "$t")
	mflag=$(grep -c 'Marker flag: True' "$t")
	echo "tshark: $frames frames, $ddp with iwarp_ddp_rdmap, $mpa MPA PDUs, CRC32 good $good bad $badcrc, $bad malformed/warning, M=1 in $mflag MPA frames" |
		tee "$f.tshark"
	grep -E 'Expert Info \((Warning|Error)/|Malformed Packet|Bad CRC32' "$t" | grep -v '/Sequence)' | sort | uniq -c | head -5
	[ "$ddp" -gt 0 ] && [ "$bad" = 0 ] && [ "$badcrc" = 0 ] || return 1
	case $mode in
	crc) [ "$good" -gt 0 ] && { [ ! -f "$f.dec" ] || [ "$good" = "$(grep -c 'CRC ok$' "$f.dec")" ]; } ;;
	markers) [ "$mflag" = 2 ] ;;
	*) [ "$good" = 0 ] ;;
	esac
}

# iwarp_check FILE [crc|markers]: `iwarp decode`; clean exit, MPA Request
# and Reply, FPDUs in both directions, no error, gap, truncation or
# TERMINATE, CRC verdicts and markers as the mode says.
iwarp_check() {
	local f=$1 mode=${2:-} d=$1.dec
	"$IWARP" decode "$f" >"$d" || return 1
	local fpdus err crcok nocrc markers req rep
	fpdus=$(sed -n 's/.*END fpdus=\([0-9]*\)$/\1/p' "$d" | paste -sd+ | bc)
	err=$(grep -ciE 'ERROR|GAP|INCOMPLETE|CRC BAD|truncated|rejected|mismatch|op=TERMINATE' "$d")
	crcok=$(grep -c 'CRC ok$' "$d")
	nocrc=$(grep -c 'CRC not-checked$' "$d")
	markers=$(grep -c 'MARKER off=' "$d")
	req=$(grep -c 'MPA Request rev=2' "$d")
	rep=$(grep -c 'MPA Reply rev=2' "$d")
	echo "iwarp decode: $(grep -c '^CONN ' "$d") connection(s), MPA Request $req Reply $rep, ${fpdus:-0} FPDUs, CRC ok $crcok not-checked $nocrc, $markers markers, $err errors" |
		tee "$f.iwarp"
	grep -iE 'ERROR|GAP|INCOMPLETE|CRC BAD|truncated|rejected|mismatch|op=TERMINATE' "$d" | head -5
	[ "$req" = 1 ] && [ "$rep" = 1 ] && [ "${fpdus:-0}" -gt 0 ] && [ "$err" = 0 ] &&
		[ "$(grep -c 'END fpdus=' "$d")" = 2 ] || return 1
	for op in SEND RDMA_READ_REQ RDMA_READ_RESP RDMA_WRITE; do
		grep -q "op=$op " "$d" || {
			echo "no $op"
			return 1
		}
	done
	case $mode in
	crc) [ "$crcok" = "$fpdus" ] && grep -q 'MPA Reply rev=2 M=0 C=1' "$d" ;;
	markers) [ "$nocrc" = "$fpdus" ] && [ "$markers" -gt 0 ] &&
		grep -q 'MPA Request rev=2 M=1' "$d" && grep -q 'MPA Reply rev=2 M=1' "$d" ;;
	*) [ "$nocrc" = "$fpdus" ] && grep -q 'MPA Reply rev=2 M=0 C=0' "$d" ;;
	esac
}

# note FILE.EXT: print a decoder summary as a KTAP diagnostic
note() { [ -f "$1" ] && sed 's/^/# /' "$1"; }

# decode NAME DESC [crc|markers]: the tshark and iwarp decode tests for one
# capture ($CAPD/NAME.pcapng). iwarp decode runs first (tshark's CRC count
# is compared with it).
decode() {
	local f=$CAPD/$1.pcapng
	if [ ! -x "$IWARP" ]; then
		ktap_test_skip "$2: iwarp decode (not built: cargo build --release -p iwarp)"
	else
		check "$2: iwarp decode clean" iwarp_check "$f" "${3:-}"
		note "$f.iwarp"
	fi
	check "$2: tshark iwarp_mpa/iwarp_ddp_rdmap clean" tshark_check "$f" "${3:-}"
	note "$f.tshark"
}

# rsockets RIO: riostream with data verification (generous timeouts:
# upstream siw on one loaded vCPU can take tens of seconds for it)
rio() {
	in_b timeout $(tmo 90) riostream -b "$IP_B" -p 7490 -C 100 -S 65536 -T v >/tmp/server.out 2>&1 &
	SERVER=$!
	# a fixed "sleep 1" sometimes lost the race with the server's listen
	wait_listen "$NS_B" 7490
	in_a timeout $(tmo 80) riostream -s "$IP_B" -p 7490 -C 100 -S 65536 -T v >/tmp/client.out 2>&1 || {
		tail -3 /tmp/client.out
		return 1
	}
	finish
}

# rdma_xserver/rdma_xclient in RC mode (-c r; -c x is XRC, which iWARP
# devices do not have). The server binds the wildcard address.
xsc() {
	PORT=7491
	serve rdma_xserver -p $PORT -c r
	in_a timeout 20 rdma_xclient -s "$IP_B" -p $PORT -c r >/tmp/client.out 2>&1 || {
		tail -3 /tmp/client.out
		return 1
	}
	finish && grep -q 'end 0' /tmp/client.out
}

# NFS over RDMA. nsenter --net switches only the network namespace, so the
# nfsd file system, the export and the NFS mount live in the guest's one
# mount namespace while nfsd, mountd's caches and the RPC server belong to
# ns B. NFSv4.0 only (the guest kernel has no NFSv4.1; no lockd or statd;
# rpcbind because nfsd registers with it).
# The NFS client runs in the initial network namespace, va moved there:
# xprtrdma connects from a kworker (init_net), and rsiw, like siw, creates
# its active-side TCP socket in the calling task's namespace, so a client
# in ns A binds 198.18.0.1 in init_net and fails with EADDRNOTAVAIL.
NFS_EXP=/tmp/nfs-export NFS_MNT=/tmp/nfs-mnt NFS_PORT=20049
nb() { nsenter --net=/run/netns/$NS_B "$@"; }

# va (and dev_a on it) into the initial namespace and back
va_to_init() {
	del_dev dev_a 2>/dev/null
	in_a ip link set va netns 1 && ip addr add "$IP_A/24" dev va &&
		ip link set va up && rdma link add dev_a type rsiw netdev va
}
va_to_a() {
	del_dev dev_a 2>/dev/null
	! ip link show va >/dev/null 2>&1 && return 0
	ip link set va netns "$NS_A" && in_a ip addr add "$IP_A/24" dev va &&
		in_a ip link set va up
}

nfs_server() {
	va_to_init || return 1
	modprobe nfsd && modprobe rpcrdma || return 1
	mkdir -p "$NFS_EXP" "$NFS_MNT" /var/lib/nfs &&
		touch /var/lib/nfs/etab /var/lib/nfs/rmtab &&
		mount -t tmpfs -o size=32m nfsexp "$NFS_EXP" &&
		nb mount -t nfsd nfsd /proc/fs/nfsd || return 1
	# versions before threads; 10 s (the minimum) lease and grace
	echo "-3 +4" >/proc/fs/nfsd/versions &&
		echo 10 >/proc/fs/nfsd/nfsv4leasetime && echo 10 >/proc/fs/nfsd/nfsv4gracetime || return 1
	# nfsd registers with rpcbind when it starts (and fails without one)
	mkdir -p /run/rpcbind
	# (check runs this in a subshell: the pids go to a file for nfs_stop;
	# nsenter, not the nb function, so that $! is the daemon's own pid:
	# nsenter execs it, a backgrounded function would be a subshell)
	nsenter --net="/run/netns/$NS_B" rpcbind -f -w >/tmp/rpcbind.out 2>&1 &
	echo $! >"$CAPD/nfs.pids"
	for _ in $(seq 50); do
		[ -S /run/rpcbind.sock ] && break
		sleep 0.1
	done
	nb exportfs -i -o rw,fsid=0,no_root_squash,no_subtree_check,insecure "$IP_A:$NFS_EXP" || return 1
	nsenter --net="/run/netns/$NS_B" rpc.mountd -F -N 2 -N 3 >/tmp/mountd.out 2>&1 &
	MOUNTD=$!
	echo $MOUNTD >>"$CAPD/nfs.pids"
	# from inside ns B: the iWARP drivers create their listening TCP
	# sockets in the namespace of the task that asks for the listener
	nb sh -c "echo 'rdma $NFS_PORT' >/proc/fs/nfsd/portlist && echo 4 >/proc/fs/nfsd/threads" || return 1
	# no clients to reclaim state: end the grace period now
	echo Y >/proc/fs/nfsd/v4_end_grace 2>/dev/null
	grep -q "rdma $NFS_PORT" /proc/fs/nfsd/portlist && kill -0 "$MOUNTD"
}

nfs_mount() {
	timeout 60 mount -t nfs4 -o rdma,port=$NFS_PORT,vers=4.0 "$IP_B:/" "$NFS_MNT" &&
		grep " $NFS_MNT " /proc/mounts | grep -q 'proto=rdma'
}

nfs_data() {
	mountpoint -q "$NFS_MNT" || return 1
	head -c 4194304 /dev/urandom >/tmp/nfs.src &&
		timeout 60 cp /tmp/nfs.src "$NFS_MNT/f" && timeout 60 sync || return 1
	# the server's copy, then the client's after dropping its page cache
	local a b c
	a=$(md5sum </tmp/nfs.src) b=$(md5sum <"$NFS_EXP/f")
	echo 3 >/proc/sys/vm/drop_caches
	c=$(timeout 60 md5sum <"$NFS_MNT/f") || return 1
	echo "md5 source $a server $b read back $c"
	[ "$a" = "$b" ] && [ "$a" = "$c" ]
}

nfs_stop() {
	local rc=0
	! mountpoint -q "$NFS_MNT" || umount "$NFS_MNT" || rc=1
	nb sh -c 'echo 0 >/proc/fs/nfsd/threads' || rc=1
	nb exportfs -ua
	# rpcbind and mountd, started by nfs_server (their namespace lives
	# as long as they do, and `rdma system set netns exclusive` is
	# refused while it does)
	local pids p
	pids=$(cat "$CAPD/nfs.pids" 2>/dev/null)
	[ -n "$pids" ] && kill $pids 2>/dev/null
	for p in $pids; do
		# (gone from the namespace once it has ended, even as a zombie)
		for _ in $(seq 50); do
			[ -e "/proc/$p/ns/net" ] || break
			snooze 0.1
		done
		[ -e "/proc/$p/ns/net" ] && { echo "pid $p ($(cat /proc/$p/comm)) did not end"; rc=1; }
	done
	rm -f "$CAPD/nfs.pids"
	umount /proc/fs/nfsd || rc=1
	umount "$NFS_EXP" || rc=1
	rm -f /tmp/nfs.src
	modprobe -r rpcrdma || rc=1
	modprobe -r nfsd 2>/dev/null # may stay busy until ns B is gone
	va_to_a || rc=1
	return $rc
}

# early_client: perftest's client started a second before its server. Its
# first rdma_connect()s are refused (nothing listens yet) and
# perftest_retry.so (lib.sh perftest_wrap) repeats them until the server
# listens: the run completes and says so. Without it, the client gives up
# or crashes in perftest's own retry. About 5 s.
early_client() {
	local c s rc=0
	wait_unlisten "$NS_B" "$RPORT"
	in_a timeout $(tmo 40) ib_write_bw -R -F -d dev_a -p $RPORT -s 4096 -n 200 "$IP_B" >"$CAPD/early.out" 2>&1 &
	c=$!
	snooze 1
	in_b timeout $(tmo 40) ib_write_bw -R -F -d dev_b -p $RPORT -s 4096 -n 200 >/dev/null 2>&1 &
	s=$!
	wait $c || rc=1
	wait $s || rc=1
	grep -q 'perftest_retry: rdma_connect refused [0-9]* time(s), then connected' "$CAPD/early.out" || rc=1
	[ $rc = 0 ] || cat "$CAPD/early.out"
	return $rc
}

[ "${1:-}" = --lib ] && return 0

ktap_print_header
ktap_set_plan 30

check "setup: topology, rsiw and siw loaded" eval 'topo_up && load_rsiw && load_siw && mkdir -p $CAPD'

check "capture rsiw client -> siw server: rping -V 10 x 16 KB on va" eval 'pair rsiw siw && rping_cap $CAPD/rsiw-siw.pcapng'
decode rsiw-siw "rsiw -> siw capture"
check "capture siw client -> rsiw server: rping -V 10 x 16 KB on va" eval 'pair siw rsiw && rping_cap $CAPD/siw-rsiw.pcapng'
decode siw-rsiw "siw -> rsiw capture"

check "rsiw <-> rsiw: riostream (rsockets RIO) 100 x 64 KiB verified" eval 'pair rsiw rsiw && rio'
check "rsiw <-> rsiw: rdma_xserver/rdma_xclient (RC)" xsc
check "rsiw client -> siw server: riostream 100 x 64 KiB verified" eval 'pair rsiw siw && rio'
check "rsiw client -> siw server: rdma_xserver/rdma_xclient (RC)" xsc
check "siw client -> rsiw server: rdma_xserver/rdma_xclient (RC)" eval 'pair siw rsiw && xsc'

check "rsiw reloaded with mpa_crc_required=1" eval 'del_dev dev_a; del_dev dev_b; rmmod rsiw && load_rsiw mpa_crc_required=1'
check "capture CRC rsiw client -> siw server: rping -V" eval 'pair rsiw siw && rping_cap $CAPD/crc-rsiw-siw.pcapng'
decode crc-rsiw-siw "CRC rsiw -> siw capture" crc
check "capture CRC rsiw <-> rsiw: rping -V" eval 'pair rsiw rsiw && rping_cap $CAPD/crc-rsiw-rsiw.pcapng'
decode crc-rsiw-rsiw "CRC rsiw <-> rsiw capture" crc

check "rsiw reloaded with mpa_markers=1" eval 'del_dev dev_a; del_dev dev_b; rmmod rsiw && load_rsiw mpa_markers=1'
check "capture markers rsiw <-> rsiw: rping -V" eval 'pair rsiw rsiw && rping_cap $CAPD/markers.pcapng'
decode markers "markers rsiw <-> rsiw capture" markers

check "rsiw reloaded without parameters" eval 'del_dev dev_a; del_dev dev_b; rmmod rsiw && load_rsiw && pair rsiw rsiw'
check "rsiw <-> rsiw: perftest -R client started before its server: refused connects repeated" early_client
NFS_DESC="NFS/RDMA: nfsd in ns B, RDMA listener on port $NFS_PORT, tmpfs exported"
kmsg_mark
if nfs_server >/tmp/nfs-server.out 2>&1; then
	kmsg_check && ktap_test_pass "$NFS_DESC" || ktap_test_fail "$NFS_DESC"
else
	sed 's/^/# /' /tmp/nfs-server.out
	kmsg_check
	ktap_test_fail "$NFS_DESC"
fi
check "NFS/RDMA: NFSv4 mount -o rdma from the initial namespace" nfs_mount
# NFS writes go through the server's RDMA Read (with local invalidate) of
# the client's write chunks, registered with REG_MR after xprtrdma put the
# XID in the IOVA's upper bits. Two rsiw REG_MR bugs made this loop on
# TERMINATE and reconnect (and rpcrdma then oopsed); both are fixed.
# RSIW_NFS_DATA=0 skips it.
NFS_DATA_DESC="NFS/RDMA: 4 MiB written and read back, checksums equal"
if [ "${RSIW_NFS_DATA:-1}" = 1 ]; then
	check "$NFS_DATA_DESC" nfs_data
else
	ktap_test_skip "$NFS_DATA_DESC (RSIW_NFS_DATA=0)"
fi
check "NFS/RDMA: unmounted, nfsd stopped, modules unloaded" nfs_stop

check "cleanup" eval 'del_dev dev_a; del_dev dev_b; unload_rsiw && rmmod siw && topo_down && rm -rf $CAPD'
ktap_finished
