#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Harnesses that name siw (issue 37 item 5): with docs/rsiw-siw.conf
# installed, what blktests does to get a soft-iWARP device runs on rsiw
# unchanged: `_have_driver siw` (is /sys/module/siw there, else `modprobe
# -q siw`), `start_soft_rdma` (`modprobe siw`, then `rdma link add
# IF_siw type siw netdev IF` on every Ethernet interface with carrier),
# traffic, `stop_soft_rdma` (delete every link, then unload). Then upstream
# siw.ko, loaded past the configuration while rsiw holds the link type siw,
# is refused with EBUSY, and rsiw with siw_link_type=1 is refused while
# siw is loaded; no kernel warning anywhere (every check fails on one).
#
# The guest's /lib/modules is read-only: an overlay on this kernel's
# module directory (upper layer in /tmp) gets rsiw.ko in extra/ and a
# fresh depmod, so that `modprobe rsiw` finds it as on an installed
# system; the configuration goes to /run/modprobe.d (a tmpfs). Both go at
# the end.
#
# Cost: about 25 s on the standard kernel.
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 9

CONF=$RSIW_REPO/docs/rsiw-siw.conf
KVER=$(uname -r)
MODDIR=/lib/modules/$KVER
WORK=$(mktemp -d /tmp/rsiw-siwname.XXXXXX)

# loaded MOD: /sys/module/MOD with a reference count (a loaded module, not
# a built-in one with parameters)
loaded() { [ -f "/sys/module/$1/refcnt" ]; }

setup() {
	unload_rsiw
	! loaded siw || modprobe -r siw || return 1
	mkdir -p "$WORK/up" "$WORK/work" &&
		mount -t overlay rsiw-mods -o "lowerdir=$MODDIR,upperdir=$WORK/up,workdir=$WORK/work" "$MODDIR" &&
		mkdir -p "$MODDIR/extra" && cp "$RSIW_KO" "$MODDIR/extra/" &&
		depmod -a "$KVER" && modinfo -F name rsiw | grep -qx rsiw || return 1
	mkdir -p /run/modprobe.d && cp "$CONF" /run/modprobe.d/ &&
		modprobe -c | grep -qx 'install siw /sbin/modprobe rsiw siw_link_type=1' || return 1
	# Two Ethernet interfaces with carrier in this namespace, as a
	# harness's machine has (blktests takes every such interface).
	ip link add sna type veth peer name snb &&
		ip addr add 198.18.3.1/24 dev sna && ip addr add 198.18.3.2/24 dev snb &&
		ip link set sna up && ip link set snb up
	for _ in $(seq 50); do
		[ "$(cat /sys/class/net/sna/carrier 2>/dev/null)" = 1 ] &&
			[ "$(cat /sys/class/net/snb/carrier 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# blktests common/rc _have_driver siw
have_driver_siw() {
	if [ -d /sys/module/siw ]; then
		echo "/sys/module/siw exists: upstream siw is loaded" >&2
		return 1
	fi
	modprobe -q siw || return 1
	! loaded siw && loaded rsiw && grep -qx Y /sys/module/rsiw/parameters/siw_link_type
}

# blktests common/multipath-over-rdma start_soft_rdma (siw), on the
# interfaces this test made (the guest has no others but lo)
start_soft_rdma() {
	local i
	modprobe siw || return 1
	for i in sna snb; do
		[ "$(<"/sys/class/net/$i/addr_len")" = 6 ] || return 1
		[ "$(<"/sys/class/net/$i/carrier")" = 1 ] || return 1
		rdma link | grep -q " netdev $i[[:blank:]]*\$" && continue
		rdma link add "${i}_siw" type siw netdev "$i" || return 1
	done
	# rsiw's devices: its per-device sysfs settings, which siw's lack
	[ -e /sys/class/infiniband/sna_siw/mpa_crc_required ] &&
		[ -e /sys/class/infiniband/snb_siw/mpa_crc_required ] &&
		ibv_devices | grep -q snb_siw && ! loaded siw
}

# rping with data verification to snb's address from this namespace (the
# connection comes over the loopback, as blktests' nvme host's does)
traffic() {
	local srv rc
	timeout 60 rping -s -a 198.18.3.2 -p 7199 -C 20 -S 4096 -V >"$WORK/rping-s" 2>&1 &
	srv=$!
	sleep 1
	timeout 60 rping -c -a 198.18.3.2 -p 7199 -C 20 -S 4096 -V
	rc=$?
	wait $srv || rc=1
	[ $rc = 0 ] || cat "$WORK/rping-s"
	return $rc
}

# blktests stop_soft_rdma: every link deleted, then `_patient_rmmod siw`
# (nothing: /sys/module/siw is not there); a plain `modprobe -r siw` then
# unloads rsiw through the configuration's remove line.
stop_soft_rdma() {
	local i
	for i in $(rdma link | sed -n 's,^link[[:blank:]]*\([^/]*\)/.* netdev .*,\1,p'); do
		rdma link del "$i" || return 1
	done
	[ -z "$(rdma link)" ] && ! loaded siw || return 1
	modprobe -r siw && ! loaded rsiw
}

# With rsiw holding the link type siw, siw.ko loaded past the configuration
# is refused cleanly (EBUSY, rsiw's message) and the link type still works.
siw_refused() {
	local ko out
	ko=$(modinfo -n siw) || return 1
	modprobe siw && loaded rsiw || return 1
	if out=$(modprobe --ignore-install siw 2>&1) || loaded siw; then
		echo "modprobe --ignore-install siw loaded siw: $out" >&2
		return 1
	fi
	echo "$out" | grep -q 'busy' || { echo "$out" >&2; return 1; }
	if out=$(insmod "$ko" 2>&1) || loaded siw; then
		echo "insmod siw.ko loaded siw: $out" >&2
		return 1
	fi
	dmesg | tail -n 20 | grep -q 'rsiw: refusing to load module siw' &&
		rdma link add sna_siw type siw netdev sna && rdma link del sna_siw
}

# With siw loaded, rsiw refuses siw_link_type=1 (EBUSY, its message) and
# loads without it beside siw, each with its own link type.
rsiw_refused() {
	local out
	modprobe -r siw && ! loaded rsiw &&
		modprobe --ignore-install siw && loaded siw || return 1
	if out=$(insmod "$RSIW_KO" siw_link_type=1 2>&1) || loaded rsiw; then
		echo "insmod rsiw.ko siw_link_type=1 loaded beside siw: $out" >&2
		return 1
	fi
	echo "$out" | grep -q 'busy' || { echo "$out" >&2; return 1; }
	dmesg | tail -n 20 | grep -q "rsiw: link type 'siw' not registered" || return 1
	load_rsiw && rdma link add sna_r type rsiw netdev sna &&
		rdma link add snb_s type siw netdev snb &&
		[ -e /sys/class/infiniband/sna_r/mpa_crc_required ] &&
		[ ! -e /sys/class/infiniband/snb_s/mpa_crc_required ] &&
		rdma link del sna_r && rdma link del snb_s &&
		unload_rsiw && rmmod siw
}

# With nothing loaded, `rdma link add NAME type siw` alone: the RDMA core
# asks for module rdma-link-siw (siw's alias), and the configuration's
# install line loads rsiw in its place.
core_request() {
	! loaded rsiw && ! loaded siw &&
		rdma link add sna_siw type siw netdev sna && loaded rsiw && ! loaded siw &&
		[ -e /sys/class/infiniband/sna_siw/mpa_crc_required ] &&
		rdma link del sna_siw
}

cleanup() {
	local rc=0 i
	for i in $(rdma link 2>/dev/null | sed -n 's,^link[[:blank:]]*\([^/]*\)/.*,\1,p'); do
		rdma link del "$i" || rc=1
	done
	rm -f /run/modprobe.d/rsiw-siw.conf
	unload_rsiw || rc=1
	! loaded siw || rmmod siw || rc=1
	ip link del sna 2>/dev/null
	if mountpoint -q "$MODDIR"; then
		umount "$MODDIR" || rc=1
	fi
	rm -rf "$WORK"
	return $rc
}

check "setup: rsiw.ko in an overlay of $MODDIR, rsiw-siw.conf in /run/modprobe.d, veth pair" setup
check "_have_driver siw: modprobe -q siw loads rsiw with siw_link_type=1, no siw" have_driver_siw
check "start_soft_rdma: modprobe siw, rdma link add IF_siw type siw on both interfaces: rsiw devices" start_soft_rdma
check "rping -V over a siw-type link (20 x 4 KiB)" traffic
check "stop_soft_rdma: links deleted; modprobe -r siw unloads rsiw" stop_soft_rdma
check "siw.ko refused (EBUSY) while rsiw holds link type siw, no warning" siw_refused
check "rsiw siw_link_type=1 refused (EBUSY) while siw is loaded; both load side by side without it" rsiw_refused
check "rdma link add type siw with nothing loaded: the core's request loads rsiw" core_request
check "cleanup: links, modules, configuration, overlay and veth gone" cleanup
ktap_finished
