#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Reproducer of a bug outside rsiw: iSER between two guests with upstream
# siw as the target's device in b, busy with a CPU hog, and siw (default,
# rsiw loaded nowhere) or rsiw (INITIATOR=rsiw) as the initiator's in a.
# Each round: LIO target with an iSER portal on siw0 in b, open-iscsi
# logs in from a, writes and reads 3 MiB, logs out, and the target is
# removed. Now and then, at logout, b's kernel logs
#
#   isert: isert_print_wc: send failure: local QP operation error (2)
#   WARNING: ... at drivers/target/iscsi/iscsi_target_util.c:702 iscsit_release_cmd
#
# and may later hit "list_del corruption" in transport_deregister_session.
# Seen in make check's two-guest run with siw in b and rsiw in a (the
# case "iSER, siw target (b), rsiw initiator (a)" of pair_storage.sh, left
# out of it since: in three make check runs of 2026-11-27 b warned, and
# in the third it then panicked), and
# here with siw in both guests: siw fails a send queued when the peer
# closes the connection with IB_WC_LOC_QP_OP_ERR (not a flush), and
# isert's error path releases the command while it is still on the
# connection's list.
#
#   tests/run-pair [-e 'ROUNDS=N INITIATOR=rsiw'] tests/guest/pair_iser_siw.sh
#   (ROUNDS default 20)
#
# Not part of make check: a round costs some 10 s of two guests and the
# report needs a few rounds under load. It first came, with siw in both
# guests, in the third round beside four busy loops on the 2-core host
# (`for i in 1 2 3 4; do (while :; do :; done) & done`), followed 15 s
# later by the list corruption and a panic; it did not come in 12 rounds
# on an idle host. The failing round says so, and run-pair then reports
# guest b's kernel log.
# Cost: up to 4 minutes (20 rounds).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"
. "$(dirname "$0")/storage.sh"

rounds=${ROUNDS:-20}
ktap_print_header
ktap_set_plan $((rounds + 1))
init=${INITIATOR:-siw}
setup() {
	pair_up && case $init in rsiw) load_rsiw ;; *) load_siw ;; esac &&
		rdma link add ${init}0 type $init netdev eth0 &&
		pair_run "modprobe siw && rdma link add siw0 type siw netdev eth0 &&
			{ nohup setsid bash -c 'while :; do :; done' >/dev/null 2>&1 & echo \$! >/tmp/hog.pid; }"
}
check "setup: siw0 in b with a CPU hog, ${init}0 in a" setup || ktap_exit_fail_msg "setup failed"
round() {
	on there "iser_target_up $RSIW_PEER" >/dev/null && on here "iser_login $RSIW_PEER" >/dev/null &&
		on here "blk_data \"\$(iser_disk)\"" || { on here iser_logout; on there iser_target_down; return 1; }
	on here iser_logout; on there iser_target_down
	# the round fails once b's kernel log has the report
	! pair_run "dmesg | grep -q -e 'send failure: local QP operation error' -e WARNING" 30
}
for i in $(seq "$rounds"); do
	check "round $i: iSER login, 3 MiB, logout; no send failure in b's kernel log" round ||
		{ pair_run "dmesg | grep -A2 -e 'send failure' | head -5"; break; }
done
pair_run "kill \$(cat /tmp/hog.pid); rdma link delete siw0" 30 >/dev/null
rdma link delete ${init}0
ktap_finished
