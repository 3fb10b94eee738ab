#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rsiw verbs objects through stock libsiw: context, PD, CQ, QP, SRQ, MR
# create/query/destroy and every error path, checked first against upstream
# siw (the reference, in the same guest) and then against rsiw; rdma
# resource tracking shows the objects while they live and none after.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
VERBS_TEST=$RSIW_TESTDIR/verbs_test.py

ktap_print_header
ktap_set_plan 6

# subtest DESC COMMAND...: runs a KTAP-emitting command as a nested subtest
# (its lines indented), then one result line for it; a bad kernel log line
# during the command fails it too.
subtest() {
	local desc=$1 rc
	shift
	kmsg_mark
	echo "    # Subtest: $desc"
	"$@" 2>&1 | sed 's/^/    /'
	rc=${PIPESTATUS[0]}
	kmsg_check || rc=1
	if [ "$rc" -eq 0 ]; then
		ktap_test_pass "$desc"
	else
		ktap_test_fail "$desc"
	fi
}

# Holds a PD, two CQs, a QP, an MR and an SRQ on a device until told to go.
HOLD_PY='
import sys, mmap
import pyverbs.enums as e
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
ctx = Context(name=sys.argv[1])
pd = PD(ctx)
cq = CQ(ctx, 16)
cq2 = CQ(ctx, 16)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq2,
        cap=QPCap(max_send_wr=4, max_recv_wr=4)))
mr = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=1)))
print("ready %d" % qp.qp_num, flush=True)
sys.stdin.readline()
'

res_line() { rdma resource show | grep -E "^[0-9]+: $1: "; }
# res_counts DEV: the object counts of DEV's `rdma resource show` line
# into RES (one process: each costs a second on the debug kernel).
declare -A RES
res_counts() {
	local line w k=
	line=$(res_line "$1")
	RES=()
	for w in $line; do
		[ -n "$k" ] && RES[$k]=$w
		k=$w
	done
}

t_setup() {
	topo_up && load_rsiw && load_siw &&
		add_dev "$NS_A" rsiw0 rsiw va && add_dev "$NS_B" siw0 siw vb &&
		ibv_devices | grep -q rsiw0 && ibv_devices | grep -q siw0
}

t_restrack() { # DEV
	local dev=$1 line qpn k n pid rc=0
	res_counts "$dev"
	for k in pd cq qp mr srq ctx; do
		n=${RES[$k]}
		[ "$n" = 0 ] || { echo "$dev: $k $n before"; return 1; }
	done
	coproc HOLD { $PY -c "$HOLD_PY" "$dev" 2>&1; }
	pid=$HOLD_PID
	read -r -t 60 line <&"${HOLD[0]}"
	case $line in
	"ready "*) qpn=${line#ready } ;;
	*) echo "holder: $line"; cat <&"${HOLD[0]}"; wait "$pid"; return 1 ;;
	esac
	res_counts "$dev"
	for k in pd:1 cq:2 qp:1 mr:1 srq:1 ctx:1; do
		n=${RES[${k%:*}]}
		[ "$n" = "${k#*:}" ] || { echo "$dev: ${k%:*} $n, want ${k#*:}"; rc=1; }
	done
	# A QP not yet modified has no port: it shows as "link DEV/-".
	rdma resource show qp | grep -q "^link $dev/. lqpn $qpn " ||
		{ echo "qp $qpn not listed"; rdma resource show qp; rc=1; }
	[ "$(rdma resource show cq dev "$dev" | grep -c .)" -ge 2 ] ||
		{ echo "cqs not listed"; rc=1; }
	rdma resource show mr dev "$dev" | grep -q "mrlen 8192" ||
		{ echo "mr not listed"; rdma resource show mr dev "$dev"; rc=1; }
	rdma resource show pd dev "$dev" | grep -q . || { echo "pd not listed"; rc=1; }
	echo >&"${HOLD[1]}"
	wait "$pid" || rc=1
	res_counts "$dev"
	for k in pd cq qp mr srq ctx; do
		n=${RES[$k]}
		[ "$n" = 0 ] || { echo "$dev: $k $n after"; rc=1; }
	done
	return $rc
}

t_cleanup() {
	del_dev rsiw0 && del_dev siw0 && unload_rsiw && rmmod siw && topo_down
}

check "setup: rsiw0 in $NS_A and siw0 in $NS_B" t_setup
subtest "verbs objects on siw0 (upstream reference)" $PY "$VERBS_TEST" --dev siw0 --upstream
subtest "verbs objects on rsiw0" $PY "$VERBS_TEST" --dev rsiw0
check "rdma resource show tracks live objects on siw0" t_restrack siw0
check "rdma resource show tracks live objects on rsiw0" t_restrack rsiw0
check "cleanup: links deleted, modules unloaded" t_cleanup
ktap_finished
