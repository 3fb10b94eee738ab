# SPDX-License-Identifier: GPL-2.0
# NVMe over Fabrics for the guest tests and the bench: an nvmet target
# (configfs) with one namespace on null_blk, its ports on RDMA or TCP, the
# host's connect and disconnect through /dev/nvme-fabrics (what nvme-cli's
# `nvme connect` writes there), and a veth pair in the initial network
# namespace whose traffic crosses the veth.
#
# Used by rsiw_nvmeof.sh, storage.sh (pair_storage.sh), and blkdev.sh
# (the storage sections of tests/bench/bench.sh and pair_bench.sh).
#
# nvmet-rdma and nvme-rdma create their rdma_cm ids in the initial network
# namespace (a fixed &init_net in both), so in one guest the target and the
# host cannot sit in the namespaces of the standard topology: both ends
# live in the initial namespace, on nvme_veth_up's pair.

NVMET=/sys/kernel/config/nvmet
NVME_NQN=nqn.2026-11.org.rsiw:store
# the one-guest pair: nva (host side) and nvb (target side)
NVME_IP_A=198.18.1.1 NVME_IP_B=198.18.1.2

# nvme_null_up [PARAM...]: null_blk loaded with PARAMs (default: one
# memory-backed 1 GiB device, allocated as written, for data checks; the
# bench passes a device without memory, which costs nothing per I/O).
nvme_null_up() {
	[ $# -gt 0 ] || set -- memory_backed=1 gb=1
	modprobe null_blk nr_devices=1 "$@" && [ -b /dev/nullb0 ]
}

# nvme_subsys_up [DEVICE]: subsystem NVME_NQN, any host allowed, with
# namespace 1 on DEVICE (default /dev/nullb0).
nvme_subsys_up() {
	local sub=$NVMET/subsystems/$NVME_NQN
	modprobe nvmet && mkdir $sub && echo 1 >$sub/attr_allow_any_host &&
		mkdir $sub/namespaces/1 && echo "${1:-/dev/nullb0}" >$sub/namespaces/1/device_path &&
		echo 1 >$sub/namespaces/1/enable
}

# nvme_port_up ID TRTYPE ADDR SVCID: port ID (nvmet-TRTYPE, rdma or tcp)
# on ADDR:SVCID with NVME_NQN on it. The port starts listening when the
# subsystem is linked: nvmet-tcp's socket in the network namespace of the
# caller, nvmet-rdma's rdma_cm id always in the initial one.
nvme_port_up() {
	local p=$NVMET/ports/$1
	modprobe "nvmet-$2" && mkdir $p && echo "$2" >$p/addr_trtype &&
		echo ipv4 >$p/addr_adrfam && echo "$3" >$p/addr_traddr &&
		echo "$4" >$p/addr_trsvcid &&
		ln -s $NVMET/subsystems/$NVME_NQN $p/subsystems/$NVME_NQN
}

# nvme_port_down ID: unlinks the subsystem from port ID (the port stops
# listening) and removes it.
nvme_port_down() {
	rm -f $NVMET/ports/$1/subsystems/$NVME_NQN
	[ ! -d $NVMET/ports/$1 ] || rmdir $NVMET/ports/$1
}

# nvme_target_up ADDR [TRTYPE [SVCID]]: a whole target: a memory-backed
# null_blk, subsystem NVME_NQN and port 1 on ADDR:SVCID (default rdma,
# 4420).
nvme_target_up() {
	nvme_null_up && nvme_subsys_up && nvme_port_up 1 "${2:-rdma}" "$1" "${3:-4420}"
}

# nvme_target_down: removes every port and the subsystem, and unloads
# the target and null_blk.
nvme_target_down() {
	local p sub=$NVMET/subsystems/$NVME_NQN
	for p in $NVMET/ports/*; do
		[ -d "$p" ] && nvme_port_down "${p##*/}"
	done
	[ ! -d $sub ] || rmdir $sub/namespaces/1 $sub
	mod_unload nvmet_rdma nvmet_tcp nvmet null_blk
}

# mod_unload MODULE...: unloads each MODULE that is loaded (modprobe -r
# of one that is not fails), with the modules it used that nothing else
# uses.
mod_unload() {
	local m rc=0
	for m in "$@"; do
		[ ! -d /sys/module/$m ] || modprobe -r $m || rc=1
	done
	return $rc
}

# nvme_connect ADDR [TRTYPE [SVCID]]: the host (nvme-TRTYPE, default
# rdma on 4420) connects to NVME_NQN at ADDR:SVCID and waits (lib.sh's
# wait_until) for its namespace's block device.
nvme_connect() {
	modprobe "nvme-${2:-rdma}" &&
		echo "transport=${2:-rdma},traddr=$1,trsvcid=${3:-4420},nqn=$NVME_NQN" >/dev/nvme-fabrics || return 1
	wait_until nvme_disk >/dev/null || {
		echo "nvme_connect: no namespace" >&2
		return 1
	}
}

# nvme_disk: the block device of the connected controller's namespace.
nvme_disk() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NVME_NQN ] || continue
		[ -b "/dev/${c##*/}n1" ] && { echo "/dev/${c##*/}n1"; return 0; }
	done
	return 1
}

# nvme_disconnect [TRTYPE]: deletes the controllers of NVME_NQN (which
# waits until they are gone) and unloads the host (nvme-TRTYPE, default
# rdma).
nvme_disconnect() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = $NVME_NQN ] && echo 1 >"$c/delete_controller"
	done
	mod_unload "nvme_${1:-rdma}"
}

# nvme_veth_up [MTU]: the veth pair nva (NVME_IP_A) and nvb (NVME_IP_B)
# in the initial network namespace, with policy routes that make traffic
# between the two addresses cross the pair: without them the kernel
# delivers a packet to an address of its own over loopback (MTU 64 KiB).
# Locally sent packets to NVME_IP_B leave by nva, those to NVME_IP_A by
# nvb (rules for `iif lo` ahead of the local table, which moves from
# priority 0 to 100); arriving ones still find the local table. Each
# side accepts packets from an address of its own host (accept_local)
# and the neighbours are pinned (no ARP between two local addresses).
nvme_veth_up() {
	local mtu=${1:-1500} ma mb
	nvme_veth_down
	ip link add nva mtu "$mtu" type veth peer name nvb mtu "$mtu" &&
		ip addr add $NVME_IP_A/32 dev nva && ip addr add $NVME_IP_B/32 dev nvb || return 1
	local d
	for d in all nva nvb; do
		sysctl -qw net.ipv4.conf.$d.rp_filter=0 net.ipv4.conf.$d.accept_local=1 || return 1
	done
	ip link set nva up && ip link set nvb up &&
		ip rule add pref 100 lookup local && ip rule del pref 0 lookup local &&
		ip rule add pref 10 iif lo to $NVME_IP_B lookup 101 &&
		ip rule add pref 11 iif lo to $NVME_IP_A lookup 102 &&
		ip route add $NVME_IP_B dev nva src $NVME_IP_A table 101 &&
		ip route add $NVME_IP_A dev nvb src $NVME_IP_B table 102 || return 1
	ma=$(ip -o link show nva | grep -o 'link/ether [^ ]*') && mb=$(ip -o link show nvb | grep -o 'link/ether [^ ]*') &&
		ma=${ma#link/ether } mb=${mb#link/ether } &&
		ip neigh replace $NVME_IP_B lladdr "$mb" dev nva nud permanent &&
		ip neigh replace $NVME_IP_A lladdr "$ma" dev nvb nud permanent
}

# nvme_veth_down: removes what nvme_veth_up made (the local table back
# at priority 0).
nvme_veth_down() {
	ip rule del pref 10 2>/dev/null
	ip rule del pref 11 2>/dev/null
	ip route flush table 101 2>/dev/null
	ip route flush table 102 2>/dev/null
	if ! ip rule show pref 0 | grep -q 'lookup local'; then
		ip rule add pref 0 lookup local && ip rule del pref 100 lookup local
	fi
	! ip link show nva >/dev/null 2>&1 || ip link del nva
}
