#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rsiw and network namespaces (issue #37): in both `rdma system` netns
# modes, links added and deleted from inside a namespace, rping between
# two namespaces (IPv4 and IPv6), per-namespace counters; the sockets of a
# device live in its net device's namespace whoever asks (a wildcard
# listen from init_net, as a kernel consumer such as nvmet-rdma makes);
# a device goes when its net device moves to another namespace, is
# deleted, or its namespace goes (NETDEV_UNREGISTER, as soft-RoCE does).
# Cost: about 40 s on the std kernel under TCG with one CPU.
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 20

IP6_A=2001:2::1 IP6_B=2001:2::2
PORT=7471
C=/sys/kernel/config/nvmet

# links_in WHERE: the RDMA device names seen from namespace WHERE (init:
# the initial one), one a line.
links_in() {
	if [ "$1" = init ]; then
		rdma link show 2>/dev/null
	else
		nsenter --net="/run/netns/$1" rdma link show 2>/dev/null
	fi | awk '{print $2}' | cut -d/ -f1
}
# has_link WHERE DEV / wait_gone DEV: DEV seen from WHERE; DEV gone from
# everywhere (the RDMA core unregisters it from a work queue).
has_link() { links_in "$1" | grep -qx "$2"; }
wait_gone() {
	local ns
	for _ in $(seq $((20 * $(tmo 5)))); do
		local seen=
		for ns in init $(ip netns list | awk '{print $1}'); do
			has_link "$ns" "$1" && seen=1
		done
		[ -z "$seen" ] && return 0
		snooze 0.05
	done
	echo "$1 still registered"
	return 1
}

# netns_mode MODE: `rdma system set netns MODE`, which the RDMA core
# allows only while no namespace but the initial one exists: deletes the
# test's and waits (a few seconds) for the kernel to dismantle them.
netns_mode() {
	topo_down
	ip netns del rsiw-c 2>/dev/null
	for _ in $(seq $((10 * $(tmo 10)))); do
		rdma system set netns "$1" 2>/dev/null && break
		snooze 0.1
	done
	rdma system show | grep -q "netns $1" && return 0
	echo "rdma system set netns $1 refused: a namespace besides init_net lives on"
	ip netns list
	# what still lives: namespaces with a process in them, and TCP
	# sockets of namespaces that have none (lsns cannot see those)
	lsns -t net 2>/dev/null | sed 's/^/# /'
	grep -c . /proc/net/tcp /proc/net/tcp6 2>/dev/null | sed 's/^/# /'
	return 1
}

# rping_pair RUN_A RUN_B ADDR: rping -V server in ns A (run with RUN_A), 5
# x 4 KiB from a client in ns B; the server's socket listens in A.
rping_pair() {
	$1 "$NS_A" timeout $(tmo 30) rping -s -a "$3" -p $PORT -C 5 -S 4096 -V >/dev/null 2>&1 &
	local s=$!
	wait_listen "$NS_A" $PORT || { kill_tree $s; echo "no listener in $NS_A"; return 1; }
	$2 "$NS_B" timeout $(tmo 30) rping -c -a "$3" -p $PORT -C 5 -S 4096 -V >/dev/null || {
		kill_tree $s
		return 1
	}
	wait $s
}
nsexec() { nsenter --net="/run/netns/$1" "${@:2}"; }

# payload_bytes WHERE DEV: DEV's tx_payload_bytes as seen from WHERE.
payload_bytes() {
	local out
	if [ "$1" = init ]; then
		out=$(rdma statistic show link "$2/1")
	else
		out=$(ns_sys "$1" rdma statistic show link "$2/1")
	fi || return 1
	echo "$out" | tr ' ' '\n' | grep -A1 -x tx_payload_bytes | tail -1
}

t_setup() {
	netns_mode shared && topo_up && load_rsiw &&
		in_a ip -6 addr add $IP6_A/64 dev va nodad && in_b ip -6 addr add $IP6_B/64 dev vb nodad
}

# --- shared mode (the default): devices in init_net, seen everywhere ---
t_sh_add() {
	add_dev "$NS_A" rsiwa rsiw va && add_dev "$NS_B" rsiwb rsiw vb &&
		has_link "$NS_A" rsiwa && has_link "$NS_B" rsiwb && has_link init rsiwa &&
		in_a rdma link show rsiwa/1 | grep -q 'netdev va'
}
t_sh_rping() { rping_pair nsexec nsexec $IP_A; }
t_sh_rping6() { rping_pair nsexec nsexec $IP6_A; }
# A wildcard listen made in init_net (what nvmet-rdma or another kernel
# consumer does) listens on every device: each device's socket is in its
# net device's namespace, none in init_net.
t_sh_wildcard() {
	timeout $(tmo 20) rping -s -p $PORT -C 1 >/dev/null 2>&1 &
	local s=$! ok=1
	wait_listen "$NS_A" $PORT && wait_listen "$NS_B" $PORT || ok=
	listening $$ $PORT && { echo "a listener in init_net"; ok=; }
	kill_tree $s
	wait $s 2>/dev/null
	[ -n "$ok" ] && wait_unlisten "$NS_A" $PORT && wait_unlisten "$NS_B" $PORT
}
t_sh_del() { in_b rdma link delete rsiwb && wait_gone rsiwb && has_link init rsiwa; }
# NETDEV_UNREGISTER: a net device that moves to another namespace, is
# deleted, or whose namespace goes takes its device with it.
t_sh_move() {
	in_a ip link add rdm0 type veth peer name rdp0 && add_dev "$NS_A" rsiwm rsiw rdm0 &&
		in_a ip link set rdm0 netns "$NS_B" && wait_gone rsiwm &&
		add_dev "$NS_B" rsiwm rsiw rdm0 && has_link "$NS_B" rsiwm
}
t_sh_netdev_del() { in_b ip link del rdm0 && wait_gone rsiwm; }
t_sh_ns_del() {
	ip netns add rsiw-c && nsexec rsiw-c ip link add rdm1 type veth peer name rdp1 &&
		add_dev rsiw-c rsiwc rsiw rdm1 && ip netns del rsiw-c && wait_gone rsiwc
}

# --- exclusive mode: a device belongs to its net device's namespace ---
t_ex_setup() {
	rdma link delete rsiwa && wait_gone rsiwa && netns_mode exclusive && topo_up
}
t_ex_add() {
	add_dev "$NS_A" rsiwa rsiw va && add_dev "$NS_B" rsiwb rsiw vb &&
		has_link "$NS_A" rsiwa && ! has_link "$NS_A" rsiwb &&
		has_link "$NS_B" rsiwb && ! has_link "$NS_B" rsiwa &&
		! has_link init rsiwa && ! has_link init rsiwb &&
		ns_sys "$NS_A" test -e /sys/class/infiniband/rsiwa
}
# libibverbs finds devices through /sys: the rping ends run with the
# namespace's own /sys (ip netns exec).
t_ex_rping() { rping_pair ns_sys ns_sys $IP_A; }
t_ex_counters() {
	local n
	n=$(payload_bytes "$NS_A" rsiwa) && [ "${n:-0}" -gt 0 ] && ! payload_bytes init rsiwa >/dev/null 2>&1
}
t_ex_del() {
	! rdma link delete rsiwb 2>/dev/null && has_link "$NS_B" rsiwb &&
		in_b rdma link delete rsiwb && wait_gone rsiwb
}
t_ex_ns_del() { ns_anchors_stop && ip netns del "$NS_A" && wait_gone rsiwa; }
t_ex_shared() { netns_mode shared; }

# --- a kernel consumer: nvmet-rdma configured in init_net on the wildcard
# address while the only rsiw device's net device is in namespace A ---
t_nvmet() {
	topo_up && add_dev "$NS_A" rsiwa rsiw va &&
		modprobe null_blk nr_devices=1 && modprobe nvmet-rdma &&
		mkdir $C/subsystems/nsnqn && echo 1 >$C/subsystems/nsnqn/attr_allow_any_host &&
		mkdir $C/subsystems/nsnqn/namespaces/1 &&
		echo /dev/nullb0 >$C/subsystems/nsnqn/namespaces/1/device_path &&
		echo 1 >$C/subsystems/nsnqn/namespaces/1/enable &&
		mkdir $C/ports/7 && echo rdma >$C/ports/7/addr_trtype &&
		echo ipv4 >$C/ports/7/addr_adrfam && echo 0.0.0.0 >$C/ports/7/addr_traddr &&
		echo 4420 >$C/ports/7/addr_trsvcid &&
		ln -s $C/subsystems/nsnqn $C/ports/7/subsystems/nsnqn &&
		wait_listen "$NS_A" 4420 && ! listening $$ 4420
}
t_nvmet_down() {
	rm -f $C/ports/7/subsystems/nsnqn
	rmdir $C/ports/7 $C/subsystems/nsnqn/namespaces/1 $C/subsystems/nsnqn
	wait_unlisten "$NS_A" 4420 && modprobe -r nvmet-rdma nvmet null_blk
}
t_cleanup() {
	rdma link delete rsiwa 2>/dev/null
	wait_gone rsiwa && topo_down && unload_rsiw
}

check "setup: shared mode, namespaces A and B on a veth pair, rsiw loaded" t_setup
check "shared: links added inside namespaces A and B" t_sh_add
check "shared: rping -V between namespaces A and B (IPv4)" t_sh_rping
check "shared: rping -V between namespaces A and B (IPv6)" t_sh_rping6
check "shared: a wildcard listen from init_net listens in each device's namespace" t_sh_wildcard
check "shared: link deleted from inside its namespace" t_sh_del
check "shared: a device goes when its net device moves to another namespace" t_sh_move
check "shared: a device goes when its net device is deleted" t_sh_netdev_del
check "shared: a device goes when its namespace goes" t_sh_ns_del
check "exclusive: mode set (no namespace left)" t_ex_setup
check "exclusive: links added in A and B belong to A and B only" t_ex_add
check "exclusive: rping -V between namespaces A and B" t_ex_rping
check "exclusive: A's byte counters seen from A, not from init_net" t_ex_counters
check "exclusive: link deleted from inside its namespace, not from init_net" t_ex_del
check "exclusive: a device goes when its namespace goes" t_ex_ns_del
check "exclusive: back to shared mode" t_ex_shared
check "nvmet-rdma port on 0.0.0.0 from init_net: the socket listens in A" t_nvmet
check "nvmet-rdma port removed, the listener gone" t_nvmet_down
check "cleanup: links, namespaces and module removed" t_cleanup
check "cleanup: shared mode" eval 'rdma system show | grep -q "netns shared"'
ktap_finished
