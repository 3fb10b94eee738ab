# SPDX-License-Identifier: GPL-2.0
# Storage over RDMA for the guest tests: an iSER target (LIO, ib_isert) and
# initiator (open-iscsi, ib_iser), an SMB Direct server (ksmbd) and client
# (cifs), and data checks. Each function works in either guest of a pair,
# on whatever iWARP device carries the guest's address (rsiw or siw).
#
# The guests' root file system is the host's, read-only: what the daemons
# write (/etc/iscsi's node records, ksmbd's configuration) goes to tmpfs.
#
# NVMe-oF (nvme_target_up, nvme_connect, ...) comes from nvmeof.sh.

. "$RSIW_TESTDIR/nvmeof.sh"

# on WHERE COMMAND: COMMAND (a function of this file, say) here (guest a)
# or there (guest b, through pair.sh's pair_run); its output and status.
on() {
	if [ "$1" = here ]; then
		(eval "$2")
	else
		pair_run ". \$RSIW_TESTDIR/storage.sh && $2" 180
	fi
}

STORE=/tmp/rsiw-store
ISER_IQN=iqn.2026-11.org.rsiw:store
LIO=/sys/kernel/config/target

# iser_target_up ADDR: an iSCSI target ISER_IQN with one 32 MiB LUN (a
# file on tmpfs), its portal ADDR:3260 on iSER, no authentication.
#
# LIO always opens an iSCSI/TCP portal on the address and port it is
# given before iSER can be enabled there, and a software iWARP device
# listens with a TCP socket of its own: on one network namespace the
# two collide (EADDRINUSE). So the TCP portal is opened from a scratch
# network namespace (LIO creates it in its caller's), where nothing
# reaches it; isert listens in the initial one.
iser_target_up() {
	local t=$LIO/iscsi/$ISER_IQN/tpgt_1 np=$1:3260
	modprobe target_core_mod && modprobe target_core_file &&
		modprobe iscsi_target_mod && modprobe ib_isert || return 1
	mkdir -p $STORE && truncate -s 32M $STORE/lun0 &&
		mkdir -p $LIO/core/fileio_0/lun0 &&
		echo "fd_dev_name=$STORE/lun0,fd_dev_size=33554432" >$LIO/core/fileio_0/lun0/control &&
		echo 1 >$LIO/core/fileio_0/lun0/enable &&
		mkdir -p $t/lun/lun_0 && ln -s $LIO/core/fileio_0/lun0 $t/lun/lun_0/store &&
		unshare -n sh -c "sysctl -qw net.ipv4.ip_nonlocal_bind=1 && mkdir $t/np/$np" &&
		echo 1 >$t/np/$np/iser &&
		echo 0 >$t/attrib/authentication && echo 1 >$t/attrib/generate_node_acls &&
		echo 0 >$t/attrib/demo_mode_write_protect && echo 1 >$t/enable
}

# iser_target_down: removes what iser_target_up made and unloads LIO.
iser_target_down() {
	local t=$LIO/iscsi/$ISER_IQN/tpgt_1 np
	if [ -d $t ]; then
		echo 0 >$t/enable
		for np in $t/np/*; do
			[ -d "$np" ] || continue
			echo 0 >"$np/iser"
			rmdir "$np"
		done
		rm -f $t/lun/lun_0/store
		rmdir $t/lun/lun_0 $t $LIO/iscsi/$ISER_IQN
	fi
	# (the fabric's directory holds iscsi_target_mod)
	[ ! -d $LIO/iscsi ] || rmdir $LIO/iscsi
	[ ! -d $LIO/core/fileio_0/lun0 ] || rmdir $LIO/core/fileio_0/lun0 $LIO/core/fileio_0
	rm -rf $STORE
	unload ib_isert iscsi_target_mod target_core_file target_core_iblock target_core_mod
}

# unload MODULE...: removes each module in turn, waiting (5 s at most)
# while it is still in use (sessions end in the background); shows lsmod
# when one stays.
unload() {
	local m i
	for m in "$@"; do
		for ((i = 0; i < 50; i++)); do
			lsmod | grep -q "^$m " || break
			rmmod "$m" 2>/dev/null && break
			sleep 0.1
		done
		lsmod | grep -q "^$m " && { lsmod; return 1; }
	done
	return 0
}

# iser_login ADDR: open-iscsi logs in to ISER_IQN at ADDR:3260 over iSER
# and waits (wait_until) for the session's SCSI disk.
iser_login() {
	local p=$1:3260
	modprobe sd_mod && modprobe ib_iser || return 1
	# open-iscsi keeps its node records under /etc/iscsi
	if ! mountpoint -q /etc/iscsi; then
		mkdir -p /tmp/etc-iscsi && cp -a /etc/iscsi/. /tmp/etc-iscsi/ &&
			mount --bind /tmp/etc-iscsi /etc/iscsi || return 1
	fi
	mkdir -p /run/lock/iscsi && { pidof iscsid >/dev/null || iscsid; } || return 1
	iscsiadm -m node -T $ISER_IQN -p "$p" -I iser -o new >/dev/null &&
		timeout 60 iscsiadm -m node -T $ISER_IQN -p "$p" -I iser --login >/dev/null || return 1
	iscsiadm -m session | grep -q "^iser: .*$ISER_IQN" || {
		iscsiadm -m session
		return 1
	}
	wait_until iser_disk >/dev/null || {
		echo "iser_login: no disk" >&2
		return 1
	}
}

# iser_disk: the block device of the iSCSI session's disk (/dev/sdX).
iser_disk() {
	local d
	for d in /sys/class/iscsi_session/session*/device/target*/*/block/*; do
		[ -b "/dev/${d##*/}" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# iser_logout: logs out of every session, deletes the node records,
# stops iscsid and unloads the initiator.
iser_logout() {
	timeout 60 iscsiadm -m node --logoutall=all >/dev/null
	iscsiadm -m node -o delete >/dev/null 2>&1
	iscsiadm -k 0 2>/dev/null
	for _ in $(seq 50); do pidof iscsid >/dev/null || break; sleep 0.1; done
	! mountpoint -q /etc/iscsi || umount /etc/iscsi
	modprobe -r ib_iser
}

# blk_data DEV: writes 3 MiB of random data to DEV with O_DIRECT, 1 MiB
# each with 4 KiB, 64 KiB and 1 MiB blocks at different offsets, reads
# each back with another block size and compares.
blk_data() {
	local pat=/tmp/blk.pat bs rbs off=0
	head -c 1048576 /dev/urandom >$pat || return 1
	for bs in 4096:1048576 65536:4096 1048576:65536; do
		rbs=${bs#*:} bs=${bs%:*}
		dd if=$pat of="$1" bs="$bs" seek=$((off / bs)) oflag=direct conv=notrunc status=none &&
			dd if="$1" of=$pat.back bs="$rbs" skip=$((off / rbs)) count=$((1048576 / rbs)) \
				iflag=direct status=none &&
			cmp $pat $pat.back || { rm -f $pat $pat.back; return 1; }
		off=$((off + 4194304))
	done
	rm -f $pat $pat.back
}

# smb_server_up: ksmbd serving $STORE/share (read-write) to user rsiw,
# SMB Direct on its RDMA listener (port 5445 on iWARP).
smb_server_up() {
	local c=$STORE/etc
	modprobe ksmbd && mkdir -p $c $STORE/share || return 1
	cat >$c/ksmbd.conf <<EOF
[global]
	server min protocol = SMB3
[share]
	path = $STORE/share
	read only = no
	force user = root
	force group = root
EOF
	ksmbd.adduser -c $c/ksmbd.conf -i $c/users.db -a rsiw -p rsiw-test >/dev/null &&
		ksmbd.mountd -c $c/ksmbd.conf -u $c/users.db || return 1
	wait_listen $$ 445 10
}

# smb_server_down: stops ksmbd and unloads it.
smb_server_down() {
	ksmbd.control -s >/dev/null 2>&1
	for _ in $(seq 50); do pidof ksmbd.mountd >/dev/null || break; sleep 0.1; done
	rm -rf $STORE
	unload ksmbd
}

# smb_mount ADDR: mounts the share of ADDR on $STORE/mnt with SMB Direct
# and checks that the session runs on RDMA.
smb_mount() {
	mkdir -p $STORE/mnt &&
		timeout 60 mount -t cifs "//$1/share" $STORE/mnt \
			-o rdma,vers=3.1.1,username=rsiw,password=rsiw-test,cache=none || return 1
	grep -q 'SMBDirect' /proc/fs/cifs/DebugData || {
		echo "smb_mount: the session is not on SMB Direct" >&2
		return 1
	}
}

# smb_umount: unmounts and unloads the client.
smb_umount() {
	umount $STORE/mnt && rm -rf $STORE && unload cifs
}

# make_tree DIR: a tree of 3 directories with 8 files each of 1 byte to
# 512 KiB of random data.
make_tree() {
	local d f
	for d in a a/b c; do
		mkdir -p "$1/$d" || return 1
		for f in 1 2 3 4 5 6 7 8; do
			head -c $(((RANDOM * 16 + RANDOM % 16) % 524288 + 1)) /dev/urandom >"$1/$d/f$f" || return 1
		done
	done
}

# tree_sums DIR: the SHA-256 sums of the files under DIR, by relative path.
tree_sums() { (cd "$1" && find . -type f | sort | xargs sha256sum); }
