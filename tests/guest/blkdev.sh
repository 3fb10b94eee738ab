# SPDX-License-Identifier: GPL-2.0
# A block device over the network, one interface for every transport
# (KIND), for the guest tests and the storage sections of the bench
# (tests/bench/bench.sh, pair_bench.sh):
#
#   nvme-rdma  NVMe-oF: nvmet-rdma (port 1 on 4420) and nvme-rdma
#   nvme-tcp   NVMe-oF: nvmet-tcp (port 2 on 4421) and nvme-tcp
#   rnbd       RNBD: rnbd-server over rtrs-server (port 1234, every
#              address) and rnbd-client (RTRS: RDMA Write with Immediate,
#              RFC 7306, issue #38)
#
#   blk_export KIND ADDR   the target side serves /dev/nullb0 (made
#                          before, e.g. by nvme_null_up) over KIND at ADDR
#   blk_unexport KIND      ... no more, and its modules unloaded
#   blk_attach KIND ADDR   the host side connects to ADDR and waits (30 s
#                          at most, scaled by tmo) for the block device
#   blk_disk KIND          prints the host's block device of KIND
#   blk_detach KIND        disconnects and unloads the host's modules
#
# Every transport's rdma_cm ids (nvmet-rdma, nvme-rdma, RTRS) live in the
# initial network namespace only: in one guest both sides sit there, on
# nvme_veth_up's pair (nvmeof.sh), whose traffic crosses the veth.

. "$RSIW_TESTDIR/nvmeof.sh"

# the RNBD session of blk_attach
BLK_RNBD_SESS=blk

blk_export() {
	case $1 in
	nvme-rdma | nvme-tcp)
		[ -d "$NVMET/subsystems/$NVME_NQN" ] || nvme_subsys_up || return 1
		if [ "$1" = nvme-rdma ]; then nvme_port_up 1 rdma "$2" 4420; else nvme_port_up 2 tcp "$2" 4421; fi
		;;
	# (RTRS listens on every address: ADDR only names the client's side)
	rnbd) rnbd_server_up ;;
	*) return 1 ;;
	esac
}

blk_unexport() {
	case $1 in
	nvme-rdma) nvme_port_down 1 ;;
	nvme-tcp) nvme_port_down 2 ;;
	rnbd) rnbd_server_down ;;
	*) return 1 ;;
	esac
}

blk_attach() {
	case $1 in
	nvme-rdma) nvme_connect "$2" rdma 4420 ;;
	nvme-tcp) nvme_connect "$2" tcp 4421 ;;
	rnbd) rnbd_map $BLK_RNBD_SESS "ip:$2" ;;
	*) return 1 ;;
	esac
}

blk_disk() {
	case $1 in
	nvme-*) nvme_disk ;;
	rnbd) rnbd_disk $BLK_RNBD_SESS ;;
	*) return 1 ;;
	esac
}

blk_detach() {
	case $1 in
	nvme-*) nvme_disconnect "${1#nvme-}" ;;
	rnbd) rnbd_unmap $BLK_RNBD_SESS && mod_unload rnbd_client ;;
	*) return 1 ;;
	esac
}

# rnbd_server_up: rtrs-server and rnbd-server loaded. rtrs-server with
# always_invalidate=N: with it, the server answers each I/O with a Send
# with Immediate carrying a new rkey, which RFC 7306 cannot express
# (docs/design.md, "RFC 7306 and RTRS"); a module already loaded with
# the default is refused.
rnbd_server_up() {
	modprobe rtrs-server always_invalidate=N && modprobe rnbd-server &&
		grep -qx N /sys/module/rtrs_server/parameters/always_invalidate
}

# rnbd_server_down: rnbd-server unloaded (its sessions close), with
# rtrs-server and, unless the client uses it, rtrs-core.
rnbd_server_down() { mod_unload rnbd_server rtrs_server; }

# rnbd_map SESS PATH [DEVICE]: rnbd-client maps the server's DEVICE
# (default /dev/nullb0) in session SESS over PATH ("ip:DST" or
# "ip:SRC@ip:DST") and waits for the block device.
rnbd_map() {
	modprobe rnbd-client &&
		echo "sessname=$1 path=$2 device_path=${3:-/dev/nullb0}" >/sys/class/rnbd-client/ctl/map_device &&
		wait_until rnbd_disk "$1" >/dev/null || {
		echo "rnbd_map: no device in session $1" >&2
		return 1
	}
}

# rnbd_disk SESS: the block device mapped in session SESS.
rnbd_disk() {
	local d
	for d in /sys/block/rnbd*; do
		[ "$(cat "$d/rnbd/session" 2>/dev/null)" = "$1" ] && [ -b "/dev/${d##*/}" ] &&
			{ echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# rnbd_unmap SESS: unmaps the device of session SESS (the session closes
# with its last device) and waits until it is gone.
rnbd_unmap() {
	local d
	d=$(rnbd_disk "$1") || return 1
	echo normal >"/sys/block/${d#/dev/}/rnbd/unmap_device" && wait_until test ! -e "$d"
}

# blk_fio_verify DEV RW QD SIZE: fio writes SIZE of DEV with RW at queue
# depth QD, O_DIRECT, and verifies every block (crc32c headers); shows
# fio's output when it fails.
blk_fio_verify() {
	[ -b "$1" ] || { echo "no block device $1"; return 1; }
	timeout "$(tmo 300)" fio --name=verify --filename="$1" --direct=1 \
		--ioengine=libaio --rw="$2" --iodepth="$3" --bs=16k --size="$4" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--randrepeat=0 --output-format=terse >/tmp/blk-fio.out 2>&1 ||
		{ cat /tmp/blk-fio.out; return 1; }
}
