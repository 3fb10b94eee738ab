# SPDX-License-Identifier: GPL-2.0
# Shared settings for rsiw's scripts (sourced, not run).
# The build cache lives outside the repository so that fresh clones reuse it.
RSIW_CACHE=${RSIW_CACHE:-/var/cache/rsiw}
BINDGEN_VERSION=0.69.5
BINDGEN=$RSIW_CACHE/bindgen-$BINDGEN_VERSION/bin/bindgen
KRUSTC=/usr/bin/rustc
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
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
