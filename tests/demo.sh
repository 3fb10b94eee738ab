#!/bin/bash
# The `make demo` guest script: load rsiw.ko, put rsiw0 on one end of a veth
# pair and upstream siw on the other, show both through stock rdma-core.
set -u
. "$(dirname "$0")/guest/lib.sh" 2>/dev/null || . "$(dirname "$0")/guest/lib.sh"
step() { printf '\n### %s\n' "$*"; }

step "kernel $(uname -r), rdma-core $(dpkg-query -W -f='${Version}' rdma-core)"
topo_up || exit 1
step "insmod rsiw.ko"
load_rsiw || exit 1
load_siw || exit 1
add_dev "$NS_A" rsiw0 rsiw va || exit 1
add_dev "$NS_B" siw0 siw vb || exit 1
step "rdma link show"
rdma link show
step "ibv_devices"
ibv_devices
step "ibv_devinfo -d rsiw0 (stock libsiw provider)"
ibv_devinfo -v -d rsiw0 | head -40
if [ -x "$RSIW_TESTDIR/traffic.sh" ]; then
	step "RDMA traffic"
	"$RSIW_TESTDIR/traffic.sh"
fi
step "teardown"
rdma link delete rsiw0 && rmmod rsiw && echo "rsiw removed"
rdma link delete siw0; rmmod siw
topo_down
echo "kernel log warnings: $(dmesg | grep -cE "$KMSG_BAD")"
