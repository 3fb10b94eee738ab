# SPDX-License-Identifier: GPL-2.0
#
# rsiw top-level Makefile.  Kbuild reads ./Kbuild; this file is for people.
#
#   make          build (or reuse) the guest kernel, then rsiw.ko here
#   make demo     boot a guest, load rsiw.ko, create devices, show them, run traffic
#   make check    the whole test suite (host + guest), ends in "N passed, N failed"
#   make clippy   build the module with CLIPPY=1
#   make fmt      rustfmt the whole tree

SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
KDIR_CMD := $(ROOT)/qemu-images/build-kernel
KMAKE_VARS = RUSTC=/usr/bin/rustc CLIPPY_DRIVER=/usr/bin/clippy-driver BINDGEN=$$(. $(ROOT)/qemu-images/env.sh; echo $$BINDGEN)

.PHONY: all module kernel demo check host-test guest-test clippy fmt clean

all: module

kernel:
	@$(KDIR_CMD) >/dev/null

module:
	@kdir=$$($(KDIR_CMD)) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) $(KMAKE_VARS) modules

clippy:
	@kdir=$$($(KDIR_CMD)) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) $(KMAKE_VARS) CLIPPY=1 modules

demo: module
	@$(ROOT)/qemu-images/run $(ROOT)/tests/demo.sh

check:
	@$(ROOT)/tests/run-all

fmt:
	@rustfmt --edition 2021 $(ROOT)/rust/rsiw_main.rs
	@cargo fmt --all

clean:
	@kdir=$$($(KDIR_CMD) 2>/dev/null) && \
	$(MAKE) -C "$$kdir" M=$(ROOT) clean || true
	@rm -rf $(ROOT)/target
