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

# tmo SECS: a timeout scaled by RSIW_TIMEOUT_SCALE (the debug kernel runs
# several times slower under TCG).
tmo() { echo $(($1 * ${RSIW_TIMEOUT_SCALE:-1})); }

in_a() { ip netns exec "$NS_A" "$@"; }
in_b() { ip netns exec "$NS_B" "$@"; }

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
	ma=$(in_a cat "/sys/class/net/$da/address") && mb=$(in_b cat "/sys/class/net/$db/address") &&
		in_a ip neigh replace "$ib" lladdr "$mb" dev "$da" nud permanent &&
		in_b ip neigh replace "$ia" lladdr "$ma" dev "$db" nud permanent
}

topo_down() {
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	true
}

# add_dev NS NAME TYPE NETDEV: rdma link add in a namespace
add_dev() { ip netns exec "$1" rdma link add "$2" type "$3" netdev "$4"; }
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

# guest_prog NAME: prints the path of the test program built from NAME.c
# in this directory: the one built on the host before the boot
# (tests/guest/Makefile, into RSIW_PROG_DIR) when it is newer than its
# source, else one built here into a new temporary directory.
RSIW_PROG_DIR=${RSIW_PROG_DIR:-$RSIW_REPO/target/guest}
guest_prog() {
	local out=$RSIW_PROG_DIR
	if [ ! -x "$out/$1" ] || [ "$RSIW_TESTDIR/$1.c" -nt "$out/$1" ]; then
		out=$(mktemp -d)
		make -s -C "$RSIW_TESTDIR" OUTPUT="$out" KSFT_DIR="$KSFT_DIR" "$out/$1" >&2 || return 1
	fi
	echo "$out/$1"
}

load_rsiw() { lsmod | grep -q '^rsiw ' || insmod "$RSIW_KO" "$@"; }
unload_rsiw() { ! lsmod | grep -q '^rsiw ' || rmmod rsiw; }
load_siw() { lsmod | grep -q '^siw ' || modprobe siw; }

# Kernel log hygiene: every test ends with kmsg_check.
KMSG_BAD='WARNING:|BUG:|BUG |Oops|general protection|lockdep|possible circular|possible recursive|KASAN|kmemleak|UBSAN|refcount_t:|list_add corruption|list_del corruption|Call Trace|unregister_netdevice: waiting|hung_task|soft lockup|RCU stall'
kmsg_mark() { KMSG_LINE=$(dmesg | wc -l); }
kmsg_check() {
	local bad
	bad=$(dmesg | tail -n +"$((KMSG_LINE + 1))" | grep -E "$KMSG_BAD")
	kmsg_mark
	if [ -n "$bad" ]; then
		echo "$bad" | sed 's/^/# kmsg: /'
		return 1
	fi
	return 0
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
