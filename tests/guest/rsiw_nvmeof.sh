#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A kernel RDMA consumer on rsiw: an NVMe-oF target (nvmet-rdma) and host
# (nvme-rdma) on two rsiw devices over a veth pair in one namespace, with
# data written and read back. Exercises kernel QPs: fast registration,
# local invalidate, RDMA Read/Write from kernel memory.
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

C=/sys/kernel/config/nvmet
PAT=/dev/shm/nvme.pat

setup() {
	ip link add nva type veth peer name nvb &&
		ip addr add 198.18.1.1/24 dev nva && ip addr add 198.18.1.2/24 dev nvb &&
		ip link set nva up && ip link set nvb up &&
		load_rsiw && rdma link add rsiwn0 type rsiw netdev nva &&
		rdma link add rsiwn1 type rsiw netdev nvb &&
		modprobe null_blk memory_backed=1 gb=1 nr_devices=1 &&
		modprobe nvmet && modprobe nvmet-rdma && modprobe nvme-rdma
}

target() {
	mkdir $C/subsystems/testnqn && echo 1 >$C/subsystems/testnqn/attr_allow_any_host &&
		mkdir $C/subsystems/testnqn/namespaces/1 &&
		echo /dev/nullb0 >$C/subsystems/testnqn/namespaces/1/device_path &&
		echo 1 >$C/subsystems/testnqn/namespaces/1/enable &&
		mkdir $C/ports/1 && echo rdma >$C/ports/1/addr_trtype &&
		echo ipv4 >$C/ports/1/addr_adrfam && echo 198.18.1.2 >$C/ports/1/addr_traddr &&
		echo 4420 >$C/ports/1/addr_trsvcid &&
		ln -s $C/subsystems/testnqn $C/ports/1/subsystems/testnqn
}

host() {
	echo "transport=rdma,traddr=198.18.1.2,trsvcid=4420,nqn=testnqn" >/dev/nvme-fabrics || return 1
	for _ in $(seq 50); do
		[ -b /dev/nvme0n1 ] && return 0
		sleep 0.2
	done
	return 1
}

data() {
	head -c 8388608 /dev/urandom >$PAT &&
		timeout 120 dd if=$PAT of=/dev/nvme0n1 bs=1M oflag=direct status=none &&
		timeout 120 dd if=/dev/nvme0n1 of=$PAT.back bs=1M count=8 iflag=direct status=none &&
		cmp $PAT $PAT.back
}

teardown() {
	echo 1 >/sys/class/nvme/nvme0/delete_controller
	rm -f $C/ports/1/subsystems/testnqn
	rmdir $C/ports/1 $C/subsystems/testnqn/namespaces/1 $C/subsystems/testnqn
	rm -f $PAT $PAT.back
	modprobe -r nvme-rdma nvmet-rdma nvmet null_blk
}

cleanup() {
	rdma link delete rsiwn0 && rdma link delete rsiwn1 && unload_rsiw && ip link del nva
}

check "setup: rsiw devices on a veth pair, nvmet-rdma and nvme-rdma loaded" setup
check "NVMe-oF target listening on rsiw" target
check "nvme-rdma host connects over rsiw" host
check "8 MiB written and read back identical (O_DIRECT)" data
check "controller deleted, target removed, modules unloaded" teardown
check "rsiw devices and module removed" cleanup
ktap_finished
