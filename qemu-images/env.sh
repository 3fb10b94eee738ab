# SPDX-License-Identifier: GPL-2.0
# Shared settings for rsiw's scripts (sourced, not run).
# The build cache lives outside the repository so that fresh clones reuse it.
RSIW_CACHE=${RSIW_CACHE:-/var/cache/rsiw}
# The kernels rsiw is built and tested on: the 6.12 LTS one (bookworm's
# linux-source-6.12, the default everywhere) and the newest one Debian
# packages (trixie-backports' linux-source-7.3, added by setup-host).
# RSIW_KERNEL picks one for build-kernel, run, make module/clippy.
KVERSION_LTS=6.12
KVERSIONS="6.12 7.3"
RSIW_KERNEL=${RSIW_KERNEL:-$KVERSION_LTS}
# (the source tarball of a kernel version)
ksrc_tarball() { echo "/usr/src/linux-source-$1.tar.xz"; }
KSRC_TARBALL=$(ksrc_tarball "$KVERSION_LTS")
# The bindgen a kernel version needs (scripts/min-tool-version.sh: 7.3
# wants 0.71.1; 6.12 stays on the one its kernels were built with), installed
# by setup-host with cargo into the cache; it finds clang-19's libclang
# (7.3 wants 17.0.1 or newer).
bindgen_version() {
	case "$1" in
	6.12) echo 0.69.5 ;;
	*) echo 0.71.1 ;;
	esac
}
kbindgen() { echo "$RSIW_CACHE/bindgen-$(bindgen_version "$1")/bin/bindgen"; }
# (those of $RSIW_KERNEL)
BINDGEN_VERSION=$(bindgen_version "$RSIW_KERNEL")
BINDGEN=$(kbindgen "$RSIW_KERNEL")
KRUSTC=/usr/bin/rustc
RSIW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export RSIW_CACHE BINDGEN_VERSION BINDGEN KRUSTC KSRC_TARBALL RSIW_ROOT

# LLVM= value a kernel flavour (and every module built for it) is built with;
# empty means gcc.
kflavour_llvm() {
	case "$1" in
	debug) echo -19 ;;
	*) echo "" ;;
	esac
}

# Extra kernel command line of a flavour. With 5-level paging (TCG's -cpu
# max has LA57) KASAN reports a wild access in an interrupt taken during
# early boot, and its first report switches off all later ones: no5lvl,
# and kasan_multi_shot so that no report hides another.
kflavour_append() {
	case "$1" in
	debug) echo "no5lvl kasan_multi_shot" ;;
	*) echo "" ;;
	esac
}
