# SPDX-License-Identifier: GPL-2.0
#
# rsiw top-level Makefile.  Kbuild reads ./Kbuild; this file is for people.
#
#   make          build (or reuse) the guest kernel, then rsiw.ko here
#                 (RSIW_KERNEL=7.3 make / make clippy: for the 7.3 kernel;
#                 README: Kernels)
#   make demo     boot two guests, rsiw in one and upstream siw in the other, run traffic both ways
#   make check    the whole test suite (host + guest), ends in "N passed, N failed"
#   make debug-check  the guest tests on the debug kernel only (KASAN, lockdep,
#                 kmemleak; RSIW_DEBUG_TESTS="rsiw_x.sh ..." picks the tests)
#   make soak     only the stress guest test, with a STRESS_SOAK_SECS (default 600) soak
#   make clippy   build the module with CLIPPY=1
#   make fmt      rustfmt the whole tree
#   make bench    rsiw vs upstream siw perftest matrix in one guest, then across
#                 two guests (~50 min), results/bench-<date>/ (BENCH_REPS,
#                 BENCH_DRIVERS, BENCH_BASE_KO, ...: see tests/bench/bench.sh;
#                 BENCH_PAIR=0 skips the two guests, BENCH_PAIR_*: pair_bench.sh);
#                 with its storage section (NVMe-oF over rsiw and siw against
#                 NVMe/TCP, fio; BENCH_TESTS names "storage", as by default;
#                 BENCH_STORAGE_*; at its defaults it adds about 16 min on a
#                 busy host: 183 s per repetition in one guest, 220 s across two)
#   make lat-pair rsiw vs siw ping-pong latency with both drivers' connections up
#                 at once, alternating every few iterations (tests/bench/latpair.sh)
#   make distance two guests at 20 and 50 ms RTT: rsiw's bandwidth against
#                 TCP's, RDMA Reads in flight (tests/guest/pair_distance.sh, ~4 min)
#   make repro-siw-last-send  a reproducer of an upstream siw race, not rsiw's
#                 (a Send the peer received fails on siw: tests/guest/siw_last_send.c;
#                 one guest booted with preempt=full, ~30 s)
#   make latency-split  where a one-way ping-pong message's time goes, rsiw vs siw
#                 (kprobe timestamps, one guest, ~3 min; see tests/bench/latency-split.sh)

SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
KDIR_CMD := $(ROOT)/qemu-images/build-kernel
# perftest's rdma_connect retry (tests/guest/perftest_retry.c), which every
# guest script that runs perftest preloads (lib.sh perftest_wrap)
GUEST_SHIM = $(MAKE) -s -C $(ROOT)/tests/guest $(ROOT)/target/guest/perftest_retry.so
KMAKE_VARS = RUSTC=/usr/bin/rustc CLIPPY_DRIVER=/usr/bin/clippy-driver BINDGEN=$$(. $(ROOT)/qemu-images/env.sh; echo $$BINDGEN)

.PHONY: all module kernel demo check distance debug-check hostile soak host-test guest-test clippy fmt clean bench lat-pair latency-split repro-siw-last-send insn-profile insn-profile-pair fuzz miri

all: module

kernel:
	@$(KDIR_CMD) >/dev/null

# (with the test modules tests/kmod/rsiw_frmr_test.ko, for rsiw_hostile.sh
# and rsiw_atomic.sh, and tests/kmod/rsiw_atomic_test.ko, for rsiw_atomic.sh)
module:
	@kdir=$$($(KDIR_CMD)) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) $(KMAKE_VARS) modules && \
	$(MAKE) -C "$$kdir" M=$(ROOT)/tests/kmod modules

clippy:
	@kdir=$$($(KDIR_CMD)) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) $(KMAKE_VARS) CLIPPY=1 modules

demo: module
	@$(GUEST_SHIM)
	@RSIW_PAIR_CPUS=2 $(ROOT)/tests/run-pair -P tests/demo.sh

check:
	@$(ROOT)/tests/run-all

distance: module
	@$(GUEST_SHIM)
	@$(ROOT)/tests/run-pair tests/guest/pair_distance.sh

debug-check:
	@cargo build -q --release -p hostile-peer -p iwarp
	@$(ROOT)/tests/run-debug

hostile: module
	@cargo build -q --release -p hostile-peer
	@$(ROOT)/qemu-images/run -t 1200 "$(ROOT)/tests/guest/run_tests.sh rsiw_hostile.sh"

repro-siw-last-send: module
	@$(MAKE) -s -C $(ROOT)/tests/guest
	@RSIW_APPEND=preempt=full $(ROOT)/qemu-images/run -t 600 "$(ROOT)/tests/guest/run_tests.sh siw_last_send.sh"

# The stress suite (tests/guest/rsiw_stress.sh) with a long soak; `make check`
# runs it with a 20 s one.
soak: module
	@$(ROOT)/qemu-images/run -t $$(( $${STRESS_SOAK_SECS:-600} + 1500 )) \
		"STRESS_SOAK_SECS=$${STRESS_SOAK_SECS:-600} $(ROOT)/tests/guest/run_tests.sh rsiw_stress.sh"

# The wire core's cargo-fuzz targets, FUZZ_SECS (default 600) each; the
# corpus they grow is replayed by `cargo test` (and so by `make check`).
fuzz:
	@$(ROOT)/tests/host/fuzz

# The host tests of the wire and QP state cores under Miri (also part of
# `make check`).
miri:
	@$(ROOT)/tests/host/miri

fmt:
	@rustfmt --edition 2021 $(ROOT)/rust/rsiw_main.rs
	@cargo fmt --all

clean:
	@kdir=$$($(KDIR_CMD) 2>/dev/null) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) clean && \
	$(MAKE) -C "$$kdir" M=$(ROOT)/tests/kmod clean || true
	@rm -rf $(ROOT)/target

# Ping-pong latency of rsiw against siw, both connected at once and
# alternating every PAIR_ITERS iterations (PAIR_* variables: see
# tests/bench/latpair.sh), so that both see the same speed drift of TCG.
lat-pair: module
	@vars=$$(for v in $${!PAIR_@}; do printf '%s=%q ' "$$v" "$${!v}"; done); \
	$(ROOT)/qemu-images/run -t 3600 "$$vars $(ROOT)/tests/bench/latpair.sh"

# Where the time of a one-way message goes, rsiw against siw in one boot
# (kprobe timestamps; SPLIT_* variables: see tests/bench/latency-split.sh).
latency-split: module
	@vars=$$(for v in $${!SPLIT_@}; do printf '%s=%q ' "$$v" "$${!v}"; done); \
	$(ROOT)/qemu-images/run -t 3600 "$$vars $(ROOT)/tests/bench/latency-split.sh"

# Guest kernel instructions, memory accesses and atomics per message, rsiw
# against siw in one boot, function by function and per phase of a one-way
# message (a QEMU TCG plugin, tests/bench/tbprof.c, its phase markers the
# kernel functions below; PROF_NO_PHASES=1 drops the split;
# PROF_* variables: see tests/bench/insn-profile.sh).
insn-profile: module
	@out=$(ROOT)/results/insn-profile-$$(date +%Y%m%d-%H%M%S); mkdir -p "$$out"; \
	gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -o "$$out/tbprof.so" $(ROOT)/tests/bench/tbprof.c && \
	map=$$($(ROOT)/qemu-images/build-kernel std)/System.map && \
	mark=0x$$(awk '$$3 == "__x64_sys_sync" {print $$1}' "$$map") && \
	phases=$$(awk 'BEGIN { split("ib_uverbs_write tcp_sendmsg_locked tcp_read_sock tcp_rcv_space_adjust", f); \
		for (i in f) n[f[i]] = i } ($$3 in n) { printf ",phase=0x%s:%d", $$1, n[$$3] }' "$$map") && \
	{ [ -z "$${PROF_NO_PHASES:-}" ] || phases=; } && \
	vars=$$(for v in $${!PROF_@}; do printf '%s=%q ' "$$v" "$${!v}"; done) && \
	RSIW_APPEND=nokaslr RSIW_QEMU_ARGS="-plugin $$out/tbprof.so,mark=$$mark,out=$$out/dump$$phases" \
		$(ROOT)/qemu-images/run -t 3600 "$$vars PROF_OUT=$$out $(ROOT)/tests/bench/insn-profile.sh" && \
	python3 $(ROOT)/tests/bench/insn-profile.py "$$out" | tee "$$out/profile.md"; \
	rm -f "$$out/tbprof.so"; \
	if [ -n "$${PROF_KEEP:-}" ]; then cp $(ROOT)/rsiw.ko "$$out/"; else rm -f "$$out"/dump.* "$$out/kallsyms"; fi

# The same counts for bandwidth runs across two guests, each guest under
# the plugin (tests/bench/insn-profile-pair.sh): the sender's and the
# receiver's instructions per KiB apart, rsiw, siw and TCP (iperf3, -Z).
insn-profile-pair: module
	@out=$(ROOT)/results/insn-profile-pair-$$(date +%Y%m%d-%H%M%S); mkdir -p "$$out/a" "$$out/b"; \
	gcc -O2 -Wall -shared -fPIC -fvisibility=hidden -o "$$out/tbprof.so" $(ROOT)/tests/bench/tbprof.c && \
	map=$$($(ROOT)/qemu-images/build-kernel std)/System.map && \
	mark=0x$$(awk '$$3 == "__x64_sys_sync" {print $$1}' "$$map") && \
	vars=$$(for v in $${!PROF_@}; do printf '%s=%q ' "$$v" "$${!v}"; done) && \
	cmd="$$vars PROF_OUT=$$out $(ROOT)/tests/bench/insn-profile-pair.sh" && \
	RSIW_APPEND=nokaslr RSIW_QEMU_ARGS="-plugin $$out/tbprof.so,mark=$$mark,out=$$out/@ROLE@/dump" \
		$(ROOT)/qemu-images/run-pair -t 3600 "$$cmd" "$$cmd" && \
	cp "$$out/a/phases" "$$out/b/phases" && \
	for g in a b; do echo "# guest $$g"; python3 $(ROOT)/tests/bench/insn-profile.py "$$out/$$g"; done | tee "$$out/profile.md"; \
	rm -f "$$out/tbprof.so"; [ -n "$${PROF_KEEP:-}" ] || rm -f "$$out"/?/dump.*

# One guest boot runs the whole matrix (tests/bench/bench.sh); only if a
# driver oopses the guest does it boot again and resume without that driver.
# BENCH_* variables from the environment are passed into the guest.
bench: module
	@$(GUEST_SHIM)
	@out=$(ROOT)/results/bench-$$(date +%Y%m%d-%H%M%S); mkdir -p "$$out"; t0=$$(date +%s); \
	vars=$$(for v in $${!BENCH_@} $${!PAIR_@}; do printf '%s=%q ' "$$v" "$${!v}"; done); \
	for boot in 1 2 3; do \
		RSIW_CONSOLE=$$out/console-boot$$boot.log $(ROOT)/qemu-images/run -t 5400 \
			"$$vars BENCH_OUT=$$out $(ROOT)/tests/bench/bench.sh"; rc=$$?; \
		[ $$rc = 125 ] || break; \
		echo "bench: the guest died (kernel log: $$out/console-boot$$boot.log); resuming in a new boot"; \
		grep -m1 -A12 -E 'BUG:|Oops' "$$out/console-boot$$boot.log"; \
	done; \
	[ "$${BENCH_PAIR:-1}" = 0 ] || RSIW_PAIR_TIMEOUT=3600 $(ROOT)/tests/run-pair \
		-e "$$vars BENCH_OUT=$$out" tests/bench/pair_bench.sh; \
	echo "$$(( $$(date +%s) - t0 ))" >"$$out/wall_seconds"; \
	echo "bench: $$(( ($$(date +%s) - t0) / 60 )) min, guest exit $$rc"; \
	/usr/bin/python3 $(ROOT)/tests/bench/report.py "$$out"
