# kxprof: the one build entry. `make` builds everything into build/;
# `make test` runs every test (installing missing dependencies first), `make
# check` those that need neither root nor BPF;
# `make demo` records the built-in KVM workload and prints the report;
# `make SAN=1 ...` builds with AddressSanitizer/UBSan into build-san/.

PREFIX ?= /usr/local
# Also install the TensorFlow plugin here, e.g. <site-packages>/tensorflow-plugins.
TF_PLUGIN_DIR ?=
# The capture daemon's systemd units (kxprof.socket, kxprof.service) go here;
# /usr/local/lib/systemd/system is on systemd's search path.
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/kxprof
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=
SAN ?= 0

ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SANFLAGS :=
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

CFLAGS ?= -O2 -g
# -MMD -MP: each object depends on exactly the headers it includes.
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE -MMD -MP $(SANFLAGS) \
	-I$(BUILD) -Iuser -Ibpf
LDFLAGS += $(SANFLAGS)
LDLIBS := -lbpf -lelf -lz -lisal -lzstd -lpthread
# Only the CLI serves HTTP (kxprof serve): keep libmicrohttpd out of the plugin.
CLI_LDLIBS := -lmicrohttpd

# The product's BPF objects; bpf/floor.bpf.c (the benchmarks' empty-program
# floor) is built by `make bench` only.
BENCH_BPF := floor
BPF_SRCS := $(filter-out $(BENCH_BPF:%=bpf/%.bpf.c),$(wildcard bpf/*.bpf.c))
BPF_NAMES := $(patsubst bpf/%.bpf.c,%,$(BPF_SRCS))
BPF_HDRS := $(wildcard bpf/*.h)

# user/<stage>/*.c: the core library; user/cli/*.c: the CLI front end.
USER_SRCS := $(wildcard user/*/*.c)
CLI_SRCS := $(wildcard user/cli/*.c)
LIB_SRCS := $(filter-out $(CLI_SRCS),$(USER_SRCS))
LIB_OBJS := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
CLI_OBJS := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
LIB := $(BUILD)/libkxprof.a
PLUGIN_SRCS := $(wildcard plugin/*.c)
PLUGIN_OBJS := $(patsubst plugin/%.c,$(BUILD)/obj/plugin/%.o,$(PLUGIN_SRCS))
PLUGIN := $(BUILD)/libkxprof_tf.so

# protobuf-c code generated from proto/*.proto: only the tests that parse an
# XSpace link it (the exporters encode the wire format themselves).
PROTO_SRCS := $(wildcard proto/*.proto)
PROTO_H := $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.h,$(PROTO_SRCS))
PROTO_OBJS := $(patsubst proto/%.proto,$(BUILD)/obj/proto/%.pb-c.o,$(PROTO_SRCS))
# Generated files are only named in pattern rules: keep make from deleting them.
.SECONDARY: $(PROTO_H) $(PROTO_H:.h=.c)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
# Tests that load BPF programs (as root): tests/kernel/, built like the unit
# tests (with tests/unit's helpers) into the same place; `make check` leaves them out.
KERNEL_SRCS := $(wildcard tests/kernel/test_*.c)
KERNEL_BINS := $(patsubst tests/kernel/%.c,$(BUILD)/tests/%,$(KERNEL_SRCS))
# Unit and kernel tests that parse protobuf (#include "proto/...pb-c.h").
PROTO_TESTS := $(addprefix $(BUILD)/tests/,$(basename $(notdir \
	$(shell grep -l 'pb-c\.h' $(UNIT_SRCS) $(KERNEL_SRCS)))))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOAD_BINS := $(patsubst tests/workloads/%.c,$(BUILD)/tests/%,$(WORKLOAD_SRCS))
# Test tools over the core library (tests/tools/*.c), e.g. a record file to a fixture.
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tests/%,$(TOOL_SRCS))
# Benchmarks (tests/bench/*.c): built by `make bench` only, into $(BUILD)/bench/.
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

DEPS_STAMP := $(BUILD)/.deps-ok

# Keep BPF objects: tests and benchmarks load them too.
.SECONDARY: $(BPF_NAMES:%=$(BUILD)/%.bpf.o) $(BENCH_BPF:%=$(BUILD)/%.bpf.o)

.PHONY: all deps pyenv test check unit demo install clean format format-check bench bench-sampling layering ioctl-tables bundle man
all: $(BUILD)/kxprof $(PLUGIN) $(UNIT_BINS) $(KERNEL_BINS) $(WORKLOAD_BINS) $(TOOL_BINS)

# Installs what is missing (Debian packages), then remembers it did.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@scripts/install-deps.sh
	@touch $@

$(BUILD)/vmlinux.h: | $(DEPS_STAMP)
	@mkdir -p $(BUILD)
	@if [ ! -r $(VMLINUX_BTF) ]; then \
		echo "kxprof: no kernel BTF at $(VMLINUX_BTF): a kernel built with CONFIG_DEBUG_INFO_BTF=y is required (or set VMLINUX_BTF=path)" >&2; \
		exit 1; fi
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

# BPF objects keep BTF (for CO-RE) but not DWARF, so skeletons stay small.
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall -Werror -c $< -o $@
	$(LLVM_STRIP) -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Each object waits only for the skeletons it includes (named X.skel.h after
# bpf/X.bpf.c); -MMD records them, this orders the first build.
define skel_users
$(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst user/%,%,$(shell grep -l '"$(1).skel.h"' $(USER_SRCS) $(PLUGIN_SRCS)))): $(BUILD)/$(1).skel.h
endef
$(foreach s,$(BPF_NAMES),$(eval $(call skel_users,$(s))))

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/proto
	protoc-c --c_out=$(BUILD)/proto -Iproto $<

$(BUILD)/obj/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: user/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# A thin archive: members keep their paths under obj/ (two folders
# may hold files of one name); it is linked in the tree, not installed.
$(LIB): $(LIB_OBJS)
	rm -f $@ && ar --thin -rcs $@ $^

$(BUILD)/kxprof: $(CLI_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS) $(CLI_LDLIBS)

$(BUILD)/obj/plugin/%.o: plugin/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iplugin -c $< -o $@

# The libraries that load into other processes need no glibc symbol version
# newer than 2.31: the functions glibc gave newer versions go through
# plugin/compat/glibc231.c (--wrap), and libpthread/libdl are named, which
# glibc before 2.34 holds them in. Checked by tests/integration/test_bundle.sh.
GLIBC231_WRAPS := pthread_create pthread_join pthread_once pthread_mutex_trylock \
	pthread_sigmask pthread_key_create pthread_key_delete dlopen dlsym dlerror dlclose dladdr \
	stat lstat fstat fstatat strerrorname_np __isoc23_strtol __isoc23_strtoul __isoc23_strtoll \
	__isoc23_strtoull __isoc23_sscanf __isoc23_vsscanf __isoc23_fscanf
GLIBC231_OBJ := $(BUILD)/obj/plugin/compat/glibc231.o
GLIBC231_LINK = $(GLIBC231_OBJ) $(GLIBC231_WRAPS:%=-Wl,--wrap=%) \
	-Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state

$(GLIBC231_OBJ): plugin/compat/glibc231.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out $(SANFLAGS),$(CFLAGS)) -c $< -o $@

# The plugin carries libzstd (its static archive, whose pthread calls the
# wrappers rewrite too; Debian's libbpf.a and libelf.a are not position
# independent, so those stay shared); the sanitizer build links as the CLI
# does (the sanitizers intercept the current versions).
ifeq ($(SAN),1)
PLUGIN_LINK = $(LDLIBS)
else
PLUGIN_LINK = $(GLIBC231_LINK) -Wl,--push-state,-Bstatic -lzstd -Wl,--pop-state \
	-lbpf -lelf -lz -lisal -lpthread
endif

# TensorFlow plugin: exports only TF_InitProfiler (plugin/exports.map); it
# looks TF_SetStatus up at run time, so nothing is left undefined. RUNPATH
# $ORIGIN: in the bundle, the libraries it needs are beside it.
$(PLUGIN): $(PLUGIN_OBJS) $(LIB) plugin/exports.map $(if $(SANFLAGS),,$(GLIBC231_OBJ))
	$(CC) $(LDFLAGS) -shared -Wl,--version-script=plugin/exports.map -Wl,--no-undefined \
		-Wl,-rpath,'$$ORIGIN' -o $@ $(PLUGIN_OBJS) $(LIB) $(PLUGIN_LINK) -ldl

# The plugin harness dlopens the plugin and exports TF_Status functions to it.
$(BUILD)/tests/test_tf_plugin: private LDLIBS += -ldl
$(BUILD)/tests/test_tf_plugin: private LDFLAGS += -rdynamic
$(BUILD)/tests/test_tf_plugin: | $(PLUGIN)
# The daemon's plugin test loads the plugin too.
$(BUILD)/tests/test_daemon_plugin: | $(PLUGIN)

# Tests that parse protobuf get the generated code and the protobuf-c runtime.
$(PROTO_TESTS): $(PROTO_H) $(PROTO_OBJS)
$(PROTO_TESTS): private TEST_PROTO := $(PROTO_OBJS) -lprotobuf-c

# Tests that check stack unwinding and symbols: frames are walked by frame pointer.
$(BUILD)/tests/test_symbol $(BUILD)/tests/test_sample $(BUILD)/tests/profile_workload \
	$(BUILD)/tests/spin_tasks: \
	private CFLAGS += -fno-omit-frame-pointer

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(TEST_PROTO) $(LIB) $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/test_%: tests/kernel/test_%.c $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(TEST_PROTO) $(LIB) $(LDFLAGS) $(LDLIBS)

# DWARF unwinding (tests/integration/test_dwarf.sh): the workload and its
# library without frame pointers, never instrumented (SAN=1 too).
DWARF_WL_FLAGS = $(filter-out $(SANFLAGS),$(CFLAGS)) -O2 -fomit-frame-pointer
$(BUILD)/tests/libkxdw.so: tests/workloads/dwarf_lib/kxdw.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(DWARF_WL_FLAGS) -shared -o $@ $<
$(BUILD)/tests/dwarf_workload: tests/workloads/dwarf_workload.c $(BUILD)/tests/libkxdw.so
	$(CC) $(DWARF_WL_FLAGS) -o $@ $< -L$(BUILD)/tests -lkxdw -Wl,-rpath,'$$ORIGIN'
# JIT code called from, and calling, C without frame pointers (test_perfmap.sh).
$(BUILD)/tests/jit_workload: tests/workloads/jit_workload.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(DWARF_WL_FLAGS) -o $@ $<

$(BUILD)/tests/%: tests/workloads/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/workloads -o $@ $< $(LDFLAGS) -lpthread

$(BUILD)/tests/%: tests/tools/%.c $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

# A failed `make pyenv` does not stop the other tests: the framework tests
# then fail, saying the package they need is missing. tests/run.sh PATTERN
# runs a subset; tests/run.sh --help says how.
test: $(DEPS_STAMP)
	@$(MAKE) -s pyenv || echo "kxprof: make pyenv failed: the framework tests will fail" >&2
	@tests/run.sh

# What needs neither root nor BPF, in both builds: a few minutes.
check: $(DEPS_STAMP)
	@tests/run.sh --check

demo: all
	@tests/demo.sh

# The framework tests' Python environment: build/venv (for both builds) from
# the exact pins of tests/requirements.txt, remade when that file changes.
# pip's own configuration says where packages come from (an index, and
# find-links for wheels kept on disk).
PYENV := build/venv
PYENV_STAMP := $(PYENV)/.requirements-ok
PYENV_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
pyenv: $(PYENV_STAMP)
$(PYENV_STAMP): tests/requirements.txt
	rm -rf $(PYENV)
	$(PYENV_PYTHON) -m venv $(PYENV)
	$(PYENV)/bin/pip install -q -r tests/requirements.txt
	cp tests/requirements.txt $@

# Mutation testing (not part of `make test`): each fault of
# tests/mutate/mutations.txt applied alone in a copy of the tree (the normal
# build copied, then rebuilt where the fault is), its tests run; prints
# caught/survived and fails under 90% caught. MUTATE_ARGS: e.g. --baseline, or ids.
.PHONY: mutate
mutate: all
	@tests/mutate/run.sh $(MUTATE_ARGS)

# libFuzzer targets (tests/fuzz/fuzz_*.c): the daemon protocol and the ELF
# symbolizer, with the library built by clang under ASan/UBSan into
# build-fuzz/. tests/integration/test_fuzz.sh runs them for a fixed time.
FUZZ_BUILD := build-fuzz
FUZZ_SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
.PHONY: fuzz fuzz-bins
fuzz:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(CLANG) SAN=0 \
		SANFLAGS="$(FUZZ_SANFLAGS)" fuzz-bins
fuzz-bins: $(FUZZ_BINS)
$(FUZZ_BUILD)/fuzz/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

# The floor loader needs only its skeleton and libbpf.
$(BUILD)/bench/floor: tests/bench/floor.c $(BUILD)/floor.skel.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) -lbpf -lelf -lz

$(BUILD)/bench/%: tests/bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

bench: all $(BENCH_BINS)
	@tests/bench/run.sh

# The CPU sampling section of the benchmarks alone (no /dev/kvm needed).
bench-sampling: all
	@tests/bench/sampling.sh

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/kxprof $(DESTDIR)$(PREFIX)/bin/kxprof
	install -d $(DESTDIR)$(PREFIX)/lib/kxprof
	install -m 0755 $(PLUGIN) $(DESTDIR)$(PREFIX)/lib/kxprof/libkxprof_tf.so
	$(if $(TF_PLUGIN_DIR),install -d $(DESTDIR)$(TF_PLUGIN_DIR))
	$(if $(TF_PLUGIN_DIR),install -m 0755 $(PLUGIN) $(DESTDIR)$(TF_PLUGIN_DIR)/libkxprof_tf.so)
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR) $(DESTDIR)$(DOCDIR)
	for u in kxprof.socket kxprof.service; do \
		sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@DOCDIR@|$(DOCDIR)|g' scripts/systemd/$$u \
			>$(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u.tmp && chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u.tmp && \
		mv $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u.tmp $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u || exit 1; \
	done
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -d $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(MANDIR)/man1
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/

# Manual pages (section 1) from the command pages in docs/: kxprof.1 and
# kxprof-COMMAND.1, which `man kxprof-COMMAND` shows once installed.
MAN_PAGES := $(patsubst docs/%.md,$(BUILD)/man/%.1,$(wildcard docs/kxprof.md docs/kxprof-*.md))
man: $(MAN_PAGES)
$(BUILD)/man/%.1: docs/%.md | $(DEPS_STAMP)
	@mkdir -p $(@D)
	{ printf '%% %s 1\n' '$(shell echo $* | tr a-z A-Z)'; cat $<; } | go-md2man | \
		sed -e '/^\.[A-Za-z][A-Za-z]\?\( \|$$\)/b' -e 's/^[.'"'"']/\\\&&/' >$@.tmp && mv $@.tmp $@

# The ioctl name tables: user/registry/ioctl_table.c is generated from the spec
# kept in the tree; `make ioctl-tables` remakes it byte for byte (IOCTL_TABLE=
# another path writes elsewhere, as the test that compares them does).
IOCTL_SPEC := scripts/ioctl-tables/ioctls.md
IOCTL_TABLE ?= user/registry/ioctl_table.c
ioctl-tables:
	python3 scripts/gen-ioctl-tables.py $(IOCTL_SPEC) $(IOCTL_TABLE)

# user/registry/ioctl_table.c is generated (scripts/gen-ioctl-tables.py): left as generated.
FORMAT_SRCS = $(filter-out user/registry/ioctl_table.c,$(wildcard bpf/*.c bpf/*.h user/*/*.c user/*/*.h \
	plugin/*.c plugin/*.h tests/unit/*.c tests/unit/*.h tests/kernel/*.c tests/workloads/*.c tests/workloads/*.h \
	tests/bench/*.c tests/fuzz/*.c))

# One clang-format for every host: releases lay .clang-format out differently
# (Debian 13's 19 and Debian 12's 14 disagree on casts in macros and braced
# initializers), so format and format-check run clang-format 14.0.6 from
# PyPI in build/fmt-venv (28 MB, made on first use).
CLANG_FORMAT_VERSION := 14.0.6
FMT_VENV := build/fmt-venv
CLANG_FORMAT := $(FMT_VENV)/bin/clang-format
FMT_STAMP := $(FMT_VENV)/.clang-format-$(CLANG_FORMAT_VERSION)
$(FMT_STAMP):
	rm -rf $(FMT_VENV)
	python3 -m venv $(FMT_VENV)
	$(FMT_VENV)/bin/pip install -q clang-format==$(CLANG_FORMAT_VERSION) || \
		{ echo "kxprof: could not install clang-format $(CLANG_FORMAT_VERSION) from PyPI into $(FMT_VENV): make format and format-check need that version" >&2; exit 1; }
	touch $@

format: $(FMT_STAMP)
	$(CLANG_FORMAT) -i $(FORMAT_SRCS)

# Fails on an include cycle or a layer including one above it (scripts/check-layering.py).
layering:
	@python3 scripts/check-layering.py

# Fails when a file differs from .clang-format's layout.
format-check: $(FMT_STAMP)
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SRCS)

# ---- Annotations: plugin/kxprof_annotate.h, its library, the NVTX injection ----
# libkxprof_annotate.so holds the USDT probes; libkxprof_nvtx.so calls it
# (RUNPATH $ORIGIN: the two stay in one directory). Both are built without
# sanitizers, since uninstrumented programs (python3) load them.
ANNOT_LIB := $(BUILD)/libkxprof_annotate.so
NVTX_LIB := $(BUILD)/libkxprof_nvtx.so
NVTX_RECORDER := $(BUILD)/tests/libnvtx_recorder.so
ANNOT_PY_TEST := $(BUILD)/tests/test_annotate_py
ANNOT_CFLAGS = $(filter-out $(SANFLAGS),$(CFLAGS)) -Iplugin -Iplugin/annotate
ANNOT_USERS := $(BUILD)/tests/annotate_workload $(BUILD)/bench/bench_annotate
# Where `make install` puts the Python module: python3.X/dist-packages, on
# Debian's python3 path for PREFIX /usr/local.
PYTHON_DIR ?= $(PREFIX)/lib/python$(shell /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages
# (clang 19 has no -print-multiarch: gcc's then). Expanded where used, in the
# recipe: on a fresh machine the compilers come with install-deps.sh, after
# the Makefile is read.
MULTIARCH = $(shell $(CC) -print-multiarch 2>/dev/null || gcc -print-multiarch 2>/dev/null)

all: $(ANNOT_LIB) $(NVTX_LIB) $(NVTX_RECORDER) $(ANNOT_PY_TEST)

# <bpf/usdt.bpf.h> includes <linux/errno.h>, whose <asm/errno.h> is under the multiarch dir.
$(BUILD)/annotate.bpf.o: private CLANG += -idirafter /usr/include/$(MULTIARCH)

$(ANNOT_LIB): plugin/annotate/annotate.c plugin/kxprof_annotate.h plugin/annotate/annotate.map \
		$(GLIBC231_OBJ) | $(DEPS_STAMP)
	$(CC) $(ANNOT_CFLAGS) -shared -Wl,--version-script=plugin/annotate/annotate.map \
		-Wl,--no-undefined -o $@ $< $(GLIBC231_LINK)

$(NVTX_LIB): plugin/annotate/nvtx.c plugin/annotate/nvtx_types.h plugin/annotate/nvtx.map \
		$(ANNOT_LIB) $(GLIBC231_OBJ)
	$(CC) $(ANNOT_CFLAGS) -shared -Wl,--version-script=plugin/annotate/nvtx.map \
		-Wl,--no-undefined -Wl,-rpath,'$$ORIGIN' -o $@ $< -L$(BUILD) -lkxprof_annotate \
		$(GLIBC231_LINK) -lpthread

# The ITT collector (INTEL_LIBITTNOTIFY64): PyTorch's emit_itt() tasks as ranges.
ITT_LIB := $(BUILD)/libkxprof_itt.so
all: $(ITT_LIB)
# Names are interned with the project's hash table (user/util/hashmap.c).
$(ITT_LIB): plugin/itt/itt.c plugin/itt/itt_types.h plugin/itt/itt.map user/util/hashmap.c \
		user/util/hashmap.h $(ANNOT_LIB) $(GLIBC231_OBJ)
	$(CC) $(ANNOT_CFLAGS) -Iplugin/itt -shared -Wl,--version-script=plugin/itt/itt.map \
		-Wl,--no-undefined -Wl,-rpath,'$$ORIGIN' -o $@ plugin/itt/itt.c user/util/hashmap.c \
		-L$(BUILD) -lkxprof_annotate $(GLIBC231_LINK) -lpthread

# A previous NVTX injection for the forwarding tests: records what it is given.
$(NVTX_RECORDER): tests/unit/nvtx_recorder.c plugin/annotate/nvtx_types.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ANNOT_CFLAGS) -shared -o $@ $< -lpthread

# Programs that call the library find it next to build/ (RUNPATH).
$(ANNOT_USERS): $(ANNOT_LIB)
$(ANNOT_USERS): private CFLAGS += -Iplugin
$(ANNOT_USERS): private LDFLAGS += -L$(BUILD) -lkxprof_annotate -Wl,-rpath,'$$ORIGIN/..'
$(BUILD)/tests/nvtx_driver: private CFLAGS += -Iplugin/annotate
$(BUILD)/tests/test_annotate_capture $(BUILD)/tests/test_nvtx_inject: | $(ANNOT_LIB) $(NVTX_LIB) \
		$(NVTX_RECORDER) $(ANNOT_PY_TEST) $(BUILD)/tests/annotate_workload $(BUILD)/tests/nvtx_driver

# The Python module's test, run by the system python3 like the unit tests.
$(ANNOT_PY_TEST): tests/unit/test_annotate_py.py | $(ANNOT_LIB)
	@mkdir -p $(dir $@)
	printf '#!/bin/sh\nKXPROF_ANNOTATE_LIB=%s PYTHONPATH=%s PYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 %s "$$@"\n' \
		$(abspath $(ANNOT_LIB)) $(abspath plugin/python) $(abspath $<) >$@.tmp
	chmod +x $@.tmp && mv $@.tmp $@

.PHONY: install-annotate
install: install-annotate
install-annotate: $(ANNOT_LIB) $(NVTX_LIB) $(ITT_LIB)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PYTHON_DIR)
	install -m 0644 plugin/kxprof_annotate.h $(DESTDIR)$(PREFIX)/include/kxprof_annotate.h
	install -m 0755 $(ANNOT_LIB) $(DESTDIR)$(PREFIX)/lib/libkxprof_annotate.so
	install -m 0755 $(NVTX_LIB) $(DESTDIR)$(PREFIX)/lib/libkxprof_nvtx.so
	install -m 0755 $(ITT_LIB) $(DESTDIR)$(PREFIX)/lib/libkxprof_itt.so
	install -m 0644 plugin/python/kxprof_annotate.py $(DESTDIR)$(PYTHON_DIR)/kxprof_annotate.py

FORMAT_SRCS += $(wildcard plugin/annotate/*.c plugin/annotate/*.h plugin/compat/*.c plugin/itt/*.c plugin/itt/*.h)

# ---- The self-contained bundle (scripts/bundle.sh): kxprof, the in-process
# libraries, every library they load and the dynamic loader ----
BUNDLE := $(BUILD)/kxprof-bundle.tar.gz
# The workloads the bundle's checks drive, linked statically: they run anywhere.
BUNDLE_WL := $(BUILD)/bundle-wl
BUNDLE_WL_BINS := $(BUNDLE_WL)/kvm_workload $(BUNDLE_WL)/loop_workload
# Made anew each time (a few seconds), after everything `all` builds: the
# ITT library goes in whenever it was built.
bundle: all $(BUNDLE_WL_BINS)
	scripts/bundle.sh $(BUILD) $(BUNDLE_WL) $(BUNDLE)

$(BUNDLE_WL)/%: tests/workloads/%.c tests/workloads/workload.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out $(SANFLAGS),$(CFLAGS)) -Itests/workloads -static -o $@ $< -lpthread

clean:
	rm -rf build build-san

# A test whose dependency file names a source no longer there (moved from
# tests/unit to tests/kernel) is removed with it, and so built again.
STALE_TESTS := $(shell for d in $$(find $(BUILD)/tests -name 'test_*.d' 2>/dev/null); do \
	s=$$(awk '{ for (i = 1; i <= NF; i++) if ($$i ~ /\.c$$/) { print $$i; exit } }' $$d); [ -z "$$s" ] || [ -e "$$s" ] || echo $${d%.d}; done)
$(if $(STALE_TESTS),$(shell rm -f $(STALE_TESTS) $(STALE_TESTS:=.d)))
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
