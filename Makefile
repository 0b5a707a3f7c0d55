# SPDX-License-Identifier: GPL-2.0
#
# rstreams kernel modules (streams.ko, strshim.ko, strattach.ko) for your own kernel, built and
# installed like any out-of-tree driver:
#
#   make                      build against KDIR (default: the running kernel's build tree)
#   make modules_install      install into /lib/modules/<release>/updates/ and run depmod
#   make clean
#
# Variables: KDIR=/path/to/kernel/build, INSTALL_MOD_PATH=/staging/root, INSTALL_MOD_DIR=updates,
# RSTREAMS_TEST=1 (the test build; see docs/building.md). The kernel must have CONFIG_RUST=y.
#
# Kbuild does the work: `make -C $(KDIR) M=$(CURDIR)/rust/modules`, so that its outputs and its
# `make clean` (which deletes every *.o, *.a, *.ko... below M) stay inside rust/modules/ and
# never touch cargo's target/. This file only finds the toolchain the kernel tree records: Rust modules must be compiled by the very rustc that built
# the kernel (CONFIG_RUSTC_VERSION_TEXT), and a clang-built kernel (CONFIG_CC_IS_CLANG) needs
# LLVM=1. `cargo xtask` builds its modules through this file too, with the same variables set
# explicitly (xtask/src/modules.rs).

KDIR ?= /lib/modules/$(shell uname -r)/build
INSTALL_MOD_DIR ?= updates

# The kernel's configuration, as its own Makefile reads it.
AUTOCONF := $(KDIR)/include/config/auto.conf
kconfig = $(shell sed -n 's/^$(1)=//p' $(AUTOCONF) 2>/dev/null)

ifeq ($(filter clean help,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(AUTOCONF)),)
$(error $(KDIR) is not a configured kernel build tree (no include/config/auto.conf): install \
  the kernel headers (linux-headers-$(shell uname -r)) or pass KDIR=/path/to/kernel/build)
endif
ifneq ($(call kconfig,CONFIG_RUST),y)
$(error the kernel in $(KDIR) was built without Rust: CONFIG_RUST is not set in $(AUTOCONF). \
  rstreams needs a kernel with CONFIG_RUST=y (and CONFIG_MODULES=y))
endif
ifneq ($(call kconfig,CONFIG_MODULES),y)
$(error the kernel in $(KDIR) has no loadable modules: CONFIG_MODULES is not set in $(AUTOCONF))
endif

# rustc: the one named on the command line, else the first of these whose `--version` is the
# kernel's CONFIG_RUSTC_VERSION_TEXT.
RUSTC_VERSION_TEXT := $(patsubst "%",%,$(call kconfig,CONFIG_RUSTC_VERSION_TEXT))
RUSTC_CANDIDATES := rustc /usr/bin/rustc $(wildcard /usr/bin/rustc-1.*) \
	$(wildcard /usr/lib/rust-1.*/bin/rustc)
ifeq ($(origin RUSTC),command line)
RUSTC_FOUND := $(shell [ "$$($(RUSTC) --version 2>/dev/null)" = '$(RUSTC_VERSION_TEXT)' ] && echo $(RUSTC))
else
RUSTC_FOUND := $(shell for r in $(RUSTC_CANDIDATES); do \
	[ "$$($$r --version 2>/dev/null)" = '$(RUSTC_VERSION_TEXT)' ] && { command -v $$r; break; }; \
	done)
endif
ifeq ($(RUSTC_FOUND),)
$(error no rustc matching the kernel's: $(KDIR) was built with '$(RUSTC_VERSION_TEXT)' \
  (CONFIG_RUSTC_VERSION_TEXT) and Rust modules must be built by the same compiler; tried \
  $(if $(filter command line,$(origin RUSTC)),RUSTC=$(RUSTC),$(RUSTC_CANDIDATES)). Install \
  that rustc (with rust-src) and pass RUSTC=/path/to/rustc)
endif
RUSTDOC := $(dir $(RUSTC_FOUND))$(subst rustc,rustdoc,$(notdir $(RUSTC_FOUND)))
RUST_LIB_SRC ?= $(shell $(RUSTC_FOUND) --print sysroot)/lib/rustlib/src/rust/library

# A clang-built kernel: the whole LLVM toolchain, as the kernel was built.
ifeq ($(call kconfig,CONFIG_CC_IS_CLANG),y)
LLVM ?= 1
endif
endif

MODDIR := $(CURDIR)/rust/modules
KBUILD_VARS = M=$(MODDIR) RUSTC=$(RUSTC_FOUND) RUSTDOC=$(RUSTDOC) RUST_LIB_SRC=$(RUST_LIB_SRC) \
	$(if $(LLVM),LLVM=$(LLVM))

.PHONY: all modules modules_install clean help

all: modules

modules:
	$(MAKE) -C $(KDIR) $(KBUILD_VARS) modules

# Kbuild installs into $(INSTALL_MOD_PATH)/lib/modules/<release>/$(INSTALL_MOD_DIR)/ and runs
# depmod, so that `modprobe streams` also loads strshim and strattach.
modules_install:
	$(MAKE) -C $(KDIR) $(KBUILD_VARS) INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) modules_install

clean:
	$(MAKE) -C $(KDIR) M=$(MODDIR) clean

help:
	@sed -n '3,11s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))
