#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A kernel RDMA consumer on rsiw: an NVMe-oF target (nvmet-rdma) and host
# (nvme-rdma) on two rsiw devices over a veth pair in one namespace (the
# traffic crossing the veth: nvmeof.sh's nvme_veth_up), with
# data written and read back. Exercises kernel QPs: fast registration,
# local invalidate, RDMA Read/Write from kernel memory.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nvmeof.sh"

ktap_print_header
ktap_set_plan 6

PAT=/dev/shm/nvme.pat

# (nvme_veth_up: the pair in the initial network namespace, where
# nvmet-rdma and nvme-rdma make their rdma_cm ids, its traffic on the veth)
setup() {
	nvme_veth_up && load_rsiw && rdma link add rsiwn0 type rsiw netdev nva &&
		rdma link add rsiwn1 type rsiw netdev nvb && modprobe nvme-rdma
}

target() { nvme_target_up $NVME_IP_B rdma 4420; }

host() { nvme_connect $NVME_IP_B rdma 4420; }

data() {
	local d
	d=$(nvme_disk) && head -c 8388608 /dev/urandom >$PAT &&
		timeout 120 dd if=$PAT of="$d" bs=1M oflag=direct status=none &&
		timeout 120 dd if="$d" of=$PAT.back bs=1M count=8 iflag=direct status=none &&
		cmp $PAT $PAT.back
}

teardown() {
	nvme_disconnect rdma
	nvme_target_down
	rm -f $PAT $PAT.back
	! lsmod | grep -qE '^(nvme_rdma|nvmet_rdma|nvmet|null_blk) '
}

cleanup() {
	rdma link delete rsiwn0 && rdma link delete rsiwn1 && unload_rsiw && nvme_veth_down
}

check "setup: rsiw devices on a veth pair, nvmet-rdma and nvme-rdma loaded" setup
check "NVMe-oF target listening on rsiw" target
check "nvme-rdma host connects over rsiw" host
check "8 MiB written and read back identical (O_DIRECT)" data
check "controller deleted, target removed, modules unloaded" teardown
check "rsiw devices and module removed" cleanup
ktap_finished
