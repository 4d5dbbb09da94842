# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Wrapper around the top-level Kbuild: builds the kernel module
# tcp_powertcp.ko only. Everything else is built by CMake (see README.md);
# this file does not take part in that build.
#
#   make                      build for the running kernel
#   make KDIR=/usr/src/linux-headers-6.1.0-56-amd64
#                             build for another kernel (its build directory)
#   make install              install into /lib/modules/<release>/updates and
#                             run depmod, so `modprobe tcp_powertcp` and
#                             autoloading by algorithm name work
#   make clean                remove the build products
#   make dkms-src             copy the module's sources to
#                             /usr/src/lumen-powertcp-<version> for
#                             `dkms add/build/install` (dkms.conf drives the
#                             targets above)
KDIR ?= /lib/modules/$(shell uname -r)/build
INSTALL_MOD_DIR ?= updates
DKMS_NAME := lumen-powertcp
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(dir $(lastword $(MAKEFILE_LIST)))dkms.conf)
DKMS_SRC ?= /usr/src/$(DKMS_NAME)-$(DKMS_VERSION)

.PHONY: all modules install modules_install clean check-kdir dkms-src

all: modules

check-kdir:
	@test -f "$(KDIR)/Makefile" || { \
		echo "no kernel build directory at KDIR=$(KDIR);" \
		     "install the headers (linux-headers-$$(uname -r)) or pass KDIR=<dir>" >&2; exit 1; }

modules: check-kdir
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules

install modules_install: modules
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" INSTALL_MOD_DIR="$(INSTALL_MOD_DIR)" modules_install

# Works without a kernel build directory too (e.g. on a host whose kernel
# has no headers): the products are listed here.
clean:
	@if test -f "$(KDIR)/Makefile"; then $(MAKE) -C "$(KDIR)" M="$(CURDIR)" clean; fi
	rm -f tcp_powertcp.ko tcp_powertcp.mod tcp_powertcp.mod.c tcp_powertcp.mod.o tcp_powertcp.o \
		kernel/tcp_powertcp.o kernel/powertcp_int.o kernel/powertcp_stats.o Module.symvers modules.order .tcp_powertcp*.cmd \
		.module-common.o kernel/.tcp_powertcp.o.cmd kernel/.powertcp_int.o.cmd \
		kernel/.powertcp_stats.o.cmd .Module.symvers.cmd \
		.modules.order.cmd
	rm -rf .tmp_versions

# The tree dkms needs (Kbuild, this Makefile, dkms.conf, kernel/,
# include/lumen/), nothing else.
dkms-src:
	rm -rf "$(DKMS_SRC)"
	mkdir -p "$(DKMS_SRC)/include"
	cp Kbuild Makefile dkms.conf "$(DKMS_SRC)/"
	cp -r kernel "$(DKMS_SRC)/"
	cp -r include/lumen "$(DKMS_SRC)/include/"
	rm -f "$(DKMS_SRC)"/kernel/*.o "$(DKMS_SRC)"/kernel/.*.cmd
	@echo "sources in $(DKMS_SRC); now: dkms add $(DKMS_NAME)/$(DKMS_VERSION)"
