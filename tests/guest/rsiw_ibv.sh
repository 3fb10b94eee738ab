#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds rsiw_ibv.c with the kernel's kselftest harness and runs it against
# rsiw0 (and siw0 as the reference) through stock libibverbs.
. "$(dirname "$0")/lib.sh"
if ! IBV=$(guest_prog rsiw_ibv); then
	ktap_print_header
	ktap_exit_fail_msg "cannot build rsiw_ibv.c"
fi
topo_up && load_rsiw && load_siw && add_dev "$NS_A" rsiw0 rsiw va && add_dev "$NS_B" siw0 siw vb || {
	ktap_print_header
	ktap_exit_fail_msg "setup failed"
}
kmsg_mark
rc=0
for d in rsiw0 siw0; do
	echo "# device $d"
	RSIW_DEV=$d "$IBV" || rc=1
done
kmsg_check || rc=1
del_dev rsiw0; del_dev siw0; unload_rsiw; rmmod siw; topo_down
exit $rc
