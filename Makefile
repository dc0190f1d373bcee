# gnmr.h - build, test, bench and demo targets.
#   make test     every test, with gcc and clang, plus the C++/STATIC/multi-file
#                 builds and the -Ofast lane
#   make demo     the training stress demo on its built-in data (the main job)
#   make demo-full  the demo on Fashion-MNIST, all arms, 3 seeds (needs the
#                 Debian package dataset-fashion-mnist; fails with a message
#                 without it)
#   make demo-sweep the GNMR settings sweep on the stress setting
#   make demo-lm  the byte-level GPT on Debian's fortunes, every arm x 3 seeds
#                 on both stress settings (needs the Debian package fortunes;
#                 fails with a message without it); demo-lm-quick: a short
#                 run, one seed; demo-lm-sweep: the natural-stress sweep
#   make bench    norm-helper and controller benchmarks (CSVs in build/;
#                 recorded results in bench/)
#   make ab-ctl BASE=rev  this tree's controller against rev's, interleaved
#   make detect   detection benchmark: synthetic ground truth and real traces
#                 (lab/detect/; tables into bench/RESULTS.md)
#   make detect-frontier  recall at 0.1% false alarms, the rule's variants
#                 and bounds (bench/RESULTS.md)
#   make suite    the settings suite: 24 settings x arms x 3
#                 seeds, split into a tune and a test half (lab/suite.c);
#                 suite-quick: two settings, 200 steps, one seed (CI)
#   make mpi-run  the data-parallel MPI example on 2 and 4 ranks
#   make cuda     every CUDA program, compiled (sm_80, sm_90), and a check
#                 that --use_fast_math is refused; skipped where nvcc is
#                 missing
#   make cuda-test, make cuda-bench  the CUDA device tests and benchmarks
#                 (skip cleanly without a GPU)
#   make gpu-check  on a GPU: those, compute-sanitizer and the PyTorch
#                 bridge's CUDA cases, one log per step
#   make format   clang-format in place; make format-check fails on a diff
# Reliability lanes (tests/README.md; .ci/run runs them all):
#   make fuzz            build the libFuzzer targets, run each FUZZ_SECONDS
#   make test-asan       the whole suite under ASan+UBSan (gcc and clang)
#   make test-valgrind   the whole suite under valgrind memcheck
#   make test-warn       builds the whole suite with -Wconversion -Wshadow & co.
#   make tidy cppcheck   static analysis of gnmr.h

CC_LIST ?= gcc clang
CXX_LIST ?= g++ clang++
# gcc, clang and make are all make test needs: the C++ checks run with the
# C++ compilers of CXX_LIST that are installed, and say which were skipped.
CXX_FOUND := $(foreach cxx,$(CXX_LIST),$(if $(shell command -v $(cxx) 2>/dev/null),$(cxx)))
CXX_MISSING := $(filter-out $(CXX_FOUND),$(CXX_LIST))
OPT ?= -O2
WARN = -Wall -Wextra -Wpedantic -Werror
CSTD = -std=c99
CWARN =
CFLAGS_ALL = $(CSTD) $(WARN) $(CWARN) $(OPT) -ffp-contract=off -I.
B = build
# A command the test programs run under (valgrind in make test-valgrind).
RUNNER =

TESTS = test_check test_readme test_ctl test_rules test_quiet test_band test_refuse \
        test_cuda_host test_norm test_demo test_ctl_parallel test_lm \
        test_efficacy test_place test_docs test_suite
TEST_BINS = $(foreach cc,$(CC_LIST),$(foreach t,$(TESTS),$(B)/$(cc)/$(t))) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/test_lm_double) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/test_norm_nosimd \
                                    $(B)/$(cc)/test_norm_noavx512) \
            $(B)/gcc/test_ctl_gnu \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile_link) \
            $(foreach cxx,$(CXX_FOUND),$(B)/$(cxx)/compile_cxx11 $(B)/$(cxx)/compile_cxx17) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile/all_modes $(B)/$(cc)/all_modes_static) \
            $(foreach cxx,$(CXX_FOUND),$(B)/$(cxx)/all_modes_cxx \
              $(B)/$(cxx)/compile_link_cxx $(B)/$(cxx)/compile_link_mixed) \
            $(foreach cc,$(CC_LIST),$(foreach t,$(FUZZ_TARGETS),$(B)/$(cc)/replay_$(t))) \
            $(if $(RUNNER),,$(B)/vendor) \
            $(if $(FASTMATH_LANE),$(FASTMATH_BINS))

# The controller tests share their fixture and checkpoint-resume run.
$(foreach cc,$(CC_LIST),$(foreach t,test_ctl test_rules,\
  $(B)/$(cc)/$(t) $(B)/$(cc)-ofast/$(t))) $(B)/gcc/test_ctl_gnu: \
  tests/fixture.h

# The device controller's tests draw their configs from one header.
$(B)/gcc/test_ctl_parallel $(B)/clang/test_ctl_parallel: tests/random_config.h

# The efficacy report's test includes the report program.
$(B)/gcc/test_efficacy $(B)/clang/test_efficacy: lab/efficacy.c tests/svg_check.h

# The headers the training demos include (and their tests with them).
DEMO_HDRS = lab/lowp.h lab/arms.h lab/common.h \
            tests/splitmix.h

# The demo's test includes the demo itself.
$(B)/gcc/test_demo $(B)/clang/test_demo: lab/train_stress.c $(DEMO_HDRS) \
                                         tests/svg_check.h

# The language-model demo's test includes the demo; it runs threads. Built
# again with the model in double for the gradient check.
$(B)/gcc/test_lm $(B)/clang/test_lm: lab/train_lm.c $(DEMO_HDRS) \
                                     tests/svg_check.h
LDFLAGS_test_lm = -pthread

# The settings suite's test includes the suite and the LM demo (its parser).
$(B)/gcc/test_suite $(B)/clang/test_suite: lab/suite.c lab/efficacy.c \
                                           lab/train_lm.c $(DEMO_HDRS)
LDFLAGS_test_suite = -pthread
$(B)/%/test_lm_double: tests/test_lm.c lab/train_lm.c $(DEMO_HDRS) \
                       gnmr.h tests/check.h tests/splitmix.h tests/svg_check.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) $(TEST_FLAGS) -DLM_DOUBLE -o $@ $< -pthread -lm

# The controller test links with malloc & co. wrapped: any call fails it.
LDFLAGS_test_ctl = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

FORMAT_FILES = $(wildcard *.h tests/*.c tests/*.h tests/*/*.c tests/*/*.h \
                 tests/*/*.cc examples/*.c examples/*.h examples/*/*.cu \
                 examples/*/*.h \
                 bench/*.c bench/*/*.c bench/*/*.h \
                 lab/*.c lab/*.h lab/*/*.c lab/*/*.h)
# The CUDA headers, device tests, two-file builds and benchmarks.
FORMAT_FILES += $(wildcard examples/*/*.cuh tests/*/*.cu bench/*.cu)

FUZZ_TARGETS = ctl ckpt norm place
FUZZ_HDRS = gnmr.h tests/fuzz/fuzz.h tests/fuzz/ctl_model.h

# The -Ofast lane's programs (rules and what they check: "fast-math lane"
# below). Defined before the test rule reads TEST_BINS.
FASTMATH_LANE ?= yes
FASTMATH_FLAGS = $(CSTD) $(WARN) $(CWARN) -Ofast -I.
FASTMATH_TESTS = test_ctl test_rules test_refuse test_norm test_place
# The CUDA controller's kernels run on the CPU, as an -Ofast trainer would.
FASTMATH_TESTS += test_ctl_parallel
FASTMATH_test_norm = $(NORM_SMALL)
FASTMATH_BINS = $(foreach cc,$(CC_LIST),\
                  $(foreach t,$(FASTMATH_TESTS),$(B)/$(cc)-ofast/$(t)) \
                  $(foreach t,$(FUZZ_TARGETS),$(B)/$(cc)-ofast/replay_$(t)) \
                  $(B)/$(cc)-ofast/cross)

.PHONY: all help ab-norm test test-build bench bench-norm demo demo-full demo-sweep demo-lm \
        demo-lm-quick demo-lm-sweep demo-lm-natural demo-lm-injected \
        fortunes-check mpi mpi-run cuda \
        cuda-test cuda-bench gpu-check gpu-check-build detect detect-frontier ab-ctl \
        neon format format-check clean fuzz fuzz-build test-asan \
        test-valgrind test-warn tidy cppcheck bench-place

all: test

test: test-build
	@for cxx in $(CXX_MISSING); do \
	  echo "make test: $$cxx not found: its C++ checks (C++11/17, all modes) skipped"; \
	done
	@RUNNER='$(RUNNER)' sh tests/run.sh $(TEST_BINS)

# Every test program built, none run: the extra-warnings lane needs only this.
test-build: $(TEST_BINS) $(B)/quickstart

# A test program that writes files writes them under TEST_OUT, a directory
# of its own beside it (<program>.out): tests/run.sh runs the programs side
# by side.
TEST_FLAGS = -DTEST_OUT='"$@.out"'

$(B)/gcc/%: tests/%.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) $(TEST_FLAGS) -o $@ $< $(LDFLAGS_$(*F)) -lm

$(B)/clang/%: tests/%.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	clang $(CFLAGS_ALL) $(TEST_FLAGS) -o $@ $< $(LDFLAGS_$(*F)) -lm

# The CUDA example's kernel arithmetic, run on the CPU.
$(foreach cc,$(CC_LIST),$(B)/$(cc)/test_cuda_host): examples/cuda/gnmr_norms.cuh \
  tests/cuda/regions.h
# The CUDA controller's kernels, run on the CPU thread by thread.
$(foreach cc,$(CC_LIST),$(B)/$(cc)/test_ctl_parallel \
  $(B)/$(cc)-ofast/test_ctl_parallel): examples/cuda/gnmr_ctl.cuh

# The controller test as a user's plain GNU build: gnu11 with GCC's default
# -ffp-contract=fast, where the AVX-512 function (FMA-capable by its target
# attribute) would fuse what the baseline scalar code cannot, and split the
# two paths, if the library let it.
$(B)/gcc/test_ctl_gnu: tests/test_ctl.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	gcc -std=gnu11 $(WARN) -O2 -ffp-contract=fast -I. -o $@ $< \
	  $(LDFLAGS_test_ctl) -lm

# The norm test again with paths switched off at compile time (a smaller
# large case: the full one runs above).
NORM_SMALL = -DTEST_NORM_BIG=1048576
$(B)/%/test_norm_nosimd: tests/test_norm.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) $(NORM_SMALL) -DGNMR_NO_SIMD -o $@ $< -lm
$(B)/%/test_norm_noavx512: tests/test_norm.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) $(NORM_SMALL) -DGNMR_NO_AVX512 -o $@ $< -lm

# NEON: the norm test cross-built for aarch64 and run under qemu-user
# (Debian: gcc-aarch64-linux-gnu qemu-user); skipped where they are missing.
AARCH64_CC ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
neon:
	@if ! command -v $(AARCH64_CC) >/dev/null 2>&1 || \
	    ! command -v $(QEMU_AARCH64) >/dev/null 2>&1; then \
	  echo "make neon: skipped: needs $(AARCH64_CC) and $(QEMU_AARCH64)" \
	       "(apt-get install gcc-aarch64-linux-gnu qemu-user)"; \
	else \
	  mkdir -p $(B)/aarch64 && \
	  $(AARCH64_CC) $(CFLAGS_ALL) -static -o $(B)/aarch64/test_norm \
	    tests/test_norm.c -lm && \
	  echo "== qemu-aarch64 $(B)/aarch64/test_norm" && \
	  $(QEMU_AARCH64) $(B)/aarch64/test_norm --big=4194304; \
	fi

# Implementation in one file, interface in two others, all linked together;
# and two files built GNMR_STATIC in the same program: no duplicate symbols.
LINK_SRCS = tests/compile/impl.c tests/compile/use_a.c tests/compile/use_b.c \
            tests/compile/static_a.c tests/compile/static_b.c tests/compile/link_main.c
$(B)/%/compile_link: $(LINK_SRCS) gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) -o $@ $(LINK_SRCS) -lm

CXXFLAGS_ALL = $(WARN) $(OPT) -ffp-contract=off -I.

# The same files as a C++ project, and as one whose implementation file is
# C (built by the C compiler of the same family, so sanitizer runtimes
# match) while every user is C++: extern "C" must make the two link.
LINK_USERS = $(filter-out tests/compile/impl.c,$(LINK_SRCS))
$(B)/%/compile_link_cxx: $(LINK_SRCS) gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* -x c++ -std=c++11 $(CXXFLAGS_ALL) -o $@ $(LINK_SRCS) -x none -lm
$(B)/%/compile_link_mixed: $(LINK_SRCS) gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$(if $(findstring clang,$*),clang,gcc) $(CFLAGS_ALL) -c -o $(@D)/impl_c.o \
	  tests/compile/impl.c
	$* -x c++ -std=c++11 $(CXXFLAGS_ALL) -o $@ $(LINK_USERS) -x none \
	  $(@D)/impl_c.o -lm
$(B)/%/compile_cxx11: tests/compile/cxx.cc gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* -std=c++11 $(CXXFLAGS_ALL) -o $@ $<
$(B)/%/compile_cxx17: tests/compile/cxx.cc gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* -std=c++17 $(CXXFLAGS_ALL) -o $@ $<

# The header included in every mode one file can hold (interface, again,
# implementation after it, again), built plain, GNMR_STATIC and as C++; and
# GNMR_STATIC defined after the first include must stop the build.
$(B)/%/all_modes_static: tests/compile/all_modes.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) -DGNMR_STATIC -o $@ $< -lm
	@if $* $(CFLAGS_ALL) -DALL_MODES_LATE_STATIC -fsyntax-only $< 2>/dev/null; \
	then echo "GNMR_STATIC after the first include was not refused"; exit 1; fi
$(B)/%/all_modes_cxx: tests/compile/all_modes.c gnmr.h tests/check.h tests/splitmix.h
	@mkdir -p $(@D)
	$* -x c++ -std=c++11 $(CXXFLAGS_ALL) -o $@ $< -x none -lm

# A new user's vendoring: only gnmr.h copied into an empty directory and
# built as C99, C++17 and two C++17 files, the interface also under clang++
# -Wold-style-cast (tests/compile/vendor.sh). It builds when the runner runs
# it, and names a missing gcc, clang, g++ or clang++ and skips its builds.
# Not under a RUNNER: valgrind would check the shell, not the library.
$(B)/vendor: tests/compile/vendor.sh gnmr.h
	@mkdir -p $(@D)
	cp tests/compile/vendor.sh $@
	chmod +x $@

# Each fuzz harness without libFuzzer, over its committed corpus (seeds and
# every regression input): part of make test.
define replay_rule
$(B)/$(1)/replay_$(2): tests/fuzz/fuzz_$(2).c tests/fuzz/replay.c $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	$(1) $$(CFLAGS_ALL) -DFUZZ_CORPUS='"tests/fuzz/corpus/$(2)"' -o $$@ \
	  tests/fuzz/fuzz_$(2).c tests/fuzz/replay.c -lm
endef
$(foreach cc,$(CC_LIST),$(foreach t,$(FUZZ_TARGETS),\
  $(eval $(call replay_rule,$(cc),$(t)))))

# The fast-math lane (part of make test): the controller, checkpoint,
# refusal and norm tests and the corpus replays built as llm.c-style
# trainers build, -Ofast (-ffast-math: no NaN/Inf assumed, sums reordered,
# FTZ/DAZ set at program start), with gcc and clang, and the cross-build
# check below. They must pass unchanged: gnmr.h classifies floats by their
# bits and compiles itself with fast-math off (gnmr.h, "fast-math"). The
# tests' own checks stay exact under it (tests/fastmath.h). FASTMATH_LANE=
# leaves it out.
FASTMATH_HDRS = gnmr.h tests/check.h tests/splitmix.h tests/fastmath.h
# cross: one workload through a copy of gnmr.h built plain and one built
# -Ofast, linked together; every digest of decisions, checkpoints and norms
# must agree (tests/fastmath/cross.c).
FASTMATH_RUN = tests/fastmath/run.c gnmr.h tests/fastmath/run.h
define fastmath_rule
$(B)/$(1)-ofast/run_plain.o: $(FASTMATH_RUN)
	@mkdir -p $$(@D)
	$(1) $$(CFLAGS_ALL) -DFASTMATH_RUN=fastmath_run_plain \
	  -DFASTMATH_SUPPORTED=fastmath_supported_plain -c -o $$@ $$<
$(B)/$(1)-ofast/run_ofast.o: $(FASTMATH_RUN)
	@mkdir -p $$(@D)
	$(1) $$(FASTMATH_FLAGS) -DFASTMATH_RUN=fastmath_run_ofast \
	  -DFASTMATH_SUPPORTED=fastmath_supported_ofast -c -o $$@ $$<
$(B)/$(1)-ofast/cross: tests/fastmath/cross.c $(B)/$(1)-ofast/run_plain.o \
                       $(B)/$(1)-ofast/run_ofast.o
	$(1) $$(CFLAGS_ALL) -o $$@ $$^ -lm
$(B)/$(1)-ofast/test_%: tests/test_%.c $(FASTMATH_HDRS)
	@mkdir -p $$(@D)
	$(1) $$(FASTMATH_FLAGS) $$(TEST_FLAGS) $$(FASTMATH_test_$$*) -o $$@ $$< \
	  $$(LDFLAGS_test_$$*) -lm
$(B)/$(1)-ofast/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c \
                          $(FUZZ_HDRS) tests/fastmath.h
	@mkdir -p $$(@D)
	$(1) $$(FASTMATH_FLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/$$*"' -o $$@ \
	  tests/fuzz/fuzz_$$*.c tests/fuzz/replay.c -lm
endef
$(foreach cc,$(CC_LIST),$(eval $(call fastmath_rule,$(cc))))

# ---- reliability lanes -------------------------------------------------------
# libFuzzer targets under ASan+UBSan. Each run starts from the committed
# corpus and keeps what it finds in $(B)/fuzz/corpus-<target>; a crash is
# saved as $(B)/fuzz/<target>-crash-*. Add it to tests/fuzz/corpus/<target>
# once fixed.
FUZZ_SECONDS ?= 20
FUZZ_CC ?= clang
SAN = -fsanitize=address,undefined -fno-sanitize-recover=all \
      -fno-omit-frame-pointer
FUZZ_FLAGS = $(CSTD) $(WARN) -O1 -g -ffp-contract=off -I. $(SAN) \
             -fsanitize=fuzzer

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm

fuzz-build: $(foreach t,$(FUZZ_TARGETS),$(B)/fuzz/fuzz_$(t))

# The targets run FUZZ_JOBS at a time (default: the online CPUs; each run
# is one process on one core, and all last FUZZ_SECONDS), each into
# $(B)/fuzz/<target>.log; then each one's final stats, in order, or the
# tail of the log of one that failed.
FUZZ_JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
fuzz: fuzz-build
	@n='$(FUZZ_JOBS)'; case $$n in '' | *[!0-9]* | 0) n=1 ;; esac; i=0; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(B)/fuzz/corpus-$$t; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s, log $(B)/fuzz/$$t.log"; \
	  { $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	      -print_final_stats=1 -artifact_prefix=$(B)/fuzz/$$t- \
	      $(B)/fuzz/corpus-$$t tests/fuzz/corpus/$$t \
	      >$(B)/fuzz/$$t.log 2>&1; echo $$? >$(B)/fuzz/$$t.rc; } & \
	  i=$$((i + 1)); if [ $$((i % n)) -eq 0 ]; then wait; fi; \
	done; wait; status=0; \
	for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t, $(FUZZ_SECONDS) s"; \
	  if [ "$$(cat $(B)/fuzz/$$t.rc)" = 0 ]; \
	  then grep -E '^(#[0-9]+[[:space:]]+DONE|Done|stat::)' $(B)/fuzz/$$t.log; \
	  else tail -n 40 $(B)/fuzz/$$t.log; status=1; fi; \
	done; exit $$status

# The whole suite (every test program, every build mode, every corpus
# replay) under sanitizers, under valgrind, and with more warnings.
# (The fast-math lane stays out of the sanitizer and valgrind runs: -Ofast
# sets FTZ/DAZ, which valgrind does not emulate.)
# The sanitizer lanes run every test, some on a sample of their inputs
# (GNMR_TEST_QUICK: tests/check.h's check_quick).
test-asan:
	GNMR_TEST_QUICK=1 $(MAKE) test B=$(B)/asan OPT="-O1 -g $(SAN)" \
	  FASTMATH_LANE=

VALGRIND = valgrind -q --error-exitcode=1 --leak-check=full \
           --errors-for-leak-kinds=all --show-leak-kinds=all
test-valgrind:
	GNMR_TEST_QUICK=1 $(MAKE) test B=$(B)/valgrind CC_LIST=gcc CXX_LIST=g++ OPT="-O2 -g" \
	  RUNNER="$(VALGRIND)" FASTMATH_LANE=

MORE_WARN = -Wconversion -Wsign-conversion -Wshadow -Wcast-align
# Builds every test with the extra warnings; running them again would test
# the same code as `make test` (warnings change no generated code).
test-warn:
	$(MAKE) test-build B=$(B)/warn WARN="$(WARN) $(MORE_WARN)" \
	  CWARN=-Wstrict-prototypes

# Static analysis of the header: checks in .clang-tidy, cppcheck's
# warning/style/performance/portability sets; suppressions are inline and
# say why.
tidy:
	clang-tidy --quiet --warnings-as-errors='*' --header-filter='gnmr\.h' \
	  tests/compile/impl.c -- $(CSTD) -I.

cppcheck:
	cppcheck --quiet --error-exitcode=1 --std=c99 --language=c \
	  --enable=warning,style,performance,portability --inline-suppr \
	  -DGNMR_IMPLEMENTATION -I. gnmr.h

# ---- benchmarks ------------------------------------------------------------
BENCH_FLAGS = -std=c99 $(WARN) -O2 -ffp-contract=off -I.
$(B)/bench_ctl: bench/bench_ctl.c gnmr.h tests/splitmix.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $@ $< -lm

# The placer's step against the paper rules' gnmr_step, interleaved in one
# process (bench/RESULTS.md, "Placement": the library's rule).
$(B)/bench_place: bench/bench_place.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $@ $< -lm
bench-place: $(B)/bench_place
	$(B)/bench_place 4096

# Norm helpers: the library built -O2, with a -march=native copy linked
# beside it (runtime dispatch should make them equal); cblas_snrm2 where
# OpenBLAS is found.
OPENBLAS_LIBS := $(shell pkg-config --libs openblas 2>/dev/null)
ifneq ($(OPENBLAS_LIBS),)
NORM_CBLAS = -DHAVE_CBLAS $(shell pkg-config --cflags openblas 2>/dev/null)
endif
$(B)/bench_norm_native.o: bench/bench_norm_native.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -march=native -c -o $@ $<
$(B)/bench_norm: bench/bench_norm.c $(B)/bench_norm_native.o gnmr.h \
                  tests/splitmix.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -DHAVE_NATIVE $(NORM_CBLAS) -o $@ \
	  $< $(B)/bench_norm_native.o $(OPENBLAS_LIBS) -lm

bench-norm: $(B)/bench_norm
	@[ -n "$(NORM_CBLAS)" ] || echo "bench_norm: OpenBLAS not found" \
	  "(libopenblas-dev): cblas_snrm2 left out"
	$(B)/bench_norm --csv $(B)/bench_norm.csv
	$(B)/bench_norm --targets

# Outputs go to $(B) (bench/bench_ctl.csv is the recorded run RESULTS.md
# cites; copy $(B)/bench_ctl.csv over it to record a new one).
bench: $(B)/bench_ctl bench-norm
	$(B)/bench_ctl --rule paper --csv $(B)/bench_ctl.csv

# The controller of this tree against that of git revision BASE, both in
# one process, timed in alternating pairs (bench/ab_ctl.c). AB_RULES="paper
# noise" runs the base with PAPER rules, this tree with NOISE (default: both
# PAPER): with BASE=HEAD, NOISE mode's cost against PAPER mode's.
BASE ?= HEAD
AB_RULES ?=
AB_FLAGS = $(BENCH_FLAGS) -D_POSIX_C_SOURCE=199309L
# The base's directory before -I. (in AB_FLAGS): the first -I that holds a
# gnmr.h is the one included.
ab-ctl: bench/ab_ctl.c gnmr.h
	@mkdir -p $(B)/ab/base
	git show $(BASE):gnmr.h > $(B)/ab/base/gnmr.h
	$(firstword $(CC_LIST)) -I$(B)/ab/base $(AB_FLAGS) -DAB_SIDE=ab_base \
	  -c -o $(B)/ab/base.o bench/ab_ctl.c
	$(firstword $(CC_LIST)) $(AB_FLAGS) -DAB_SIDE=ab_this \
	  -c -o $(B)/ab/this.o bench/ab_ctl.c
	$(firstword $(CC_LIST)) $(AB_FLAGS) -DAB_MAIN -o $(B)/ab_ctl \
	  bench/ab_ctl.c $(B)/ab/base.o $(B)/ab/this.o -lm
	$(B)/ab_ctl 0 4 1 $(AB_RULES)
	$(B)/ab_ctl 0 4 0 $(AB_RULES)
	$(B)/ab_ctl 1 4 1 $(AB_RULES)
	$(B)/ab_ctl 1 512 1 $(AB_RULES)

# The norm helpers of this tree against those of git revision BASE out of
# cache: two bench_norm builds (-O2, no -march), run as alternating whole
# processes, AB_NORM_RUNS of each; each run prints the 256 MiB ratios to
# the read probes, f32, f16 and bf16 (bench_norm --targets=out-of-cache).
AB_NORM_RUNS ?= 5
ab-norm: bench/bench_norm.c gnmr.h
	@mkdir -p $(B)/ab/norm-base
	git show $(BASE):gnmr.h > $(B)/ab/norm-base/gnmr.h
	$(firstword $(CC_LIST)) -I$(B)/ab/norm-base $(BENCH_FLAGS) \
	  -o $(B)/ab/bench_norm_base bench/bench_norm.c -lm
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $(B)/ab/bench_norm_this \
	  bench/bench_norm.c -lm
	@i=1; while [ $$i -le $(AB_NORM_RUNS) ]; do \
	  for side in base this; do \
	    $(B)/ab/bench_norm_$$side --targets=out-of-cache | \
	      sed -n "s/^| \(f32\|f16\|bf16\) /$$side run $$i | \1 /p"; \
	  done; i=$$((i + 1)); \
	done

# ---- examples --------------------------------------------------------------
$(B)/quickstart: examples/quickstart.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(CFLAGS_ALL) -o $@ $< -lm

# ---- MPI: data-parallel example (skips without an MPI) -----------------------
#   make mpi       build build/mpi_dp with mpicc
#   make mpi-run   run it on 2 and 4 ranks, with MPI_Allreduce and with
#                  MPI_Reduce + MPI_Bcast, and show that a rank fed different
#                  bits fails the run
MPICC ?= mpicc
MPIRUN ?= mpirun
MPIRUN_FLAGS ?= --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
MPI_CKPT = $(B)/mpi_dp.ckpt
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && \
                    command -v $(MPIRUN) >/dev/null 2>&1 && echo yes)

ifeq ($(HAVE_MPI),yes)
mpi: $(B)/mpi_dp

$(B)/mpi_dp: examples/mpi_dp.c gnmr.h
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS_ALL) -o $@ $< -lm

mpi-run: $(B)/mpi_dp
	$(MPIRUN) $(MPIRUN_FLAGS) -np 2 $(B)/mpi_dp --checkpoint $(MPI_CKPT)
	$(MPIRUN) $(MPIRUN_FLAGS) -np 4 $(B)/mpi_dp --checkpoint $(MPI_CKPT)
	$(MPIRUN) $(MPIRUN_FLAGS) -np 4 $(B)/mpi_dp --checkpoint $(MPI_CKPT) \
	  --reduce-bcast
	@echo "mpi-run: rank 1 nudges one norm by one ulp; the run must fail"
	@if $(MPIRUN) $(MPIRUN_FLAGS) -np 2 $(B)/mpi_dp --checkpoint $(MPI_CKPT) \
	    --perturb-rank 1 >$(B)/mpi_perturb.log 2>&1; then \
	  cat $(B)/mpi_perturb.log; echo "mpi-run: the perturbed run passed"; \
	  exit 1; \
	fi; \
	grep "decisions differ" $(B)/mpi_perturb.log | head -n 1; \
	grep -q "decisions differ" $(B)/mpi_perturb.log || \
	  { cat $(B)/mpi_perturb.log; exit 1; }; \
	echo "mpi-run: the perturbed run failed, as it must"
else
mpi mpi-run:
	@echo "$@: skipped: no $(MPICC)/$(MPIRUN) found" \
	  "(Debian: apt-get install openmpi-bin libopenmpi-dev)"
endif

# ---- CUDA example ------------------------------------------------------------
# nvcc from PATH, else the standard install location. Contraction off on both
# sides (--fmad=false, -ffp-contract=off): the device must give the CPU's bits.
# CUDA_ARCHS=80 builds one architecture (faster while iterating). The last
# one's PTX rides along (CUDA_PTX), so a newer GPU (sm_100, sm_120) runs the
# code compiled at load time instead of failing with "no kernel image".
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA_ARCHS ?= 80 90
CUDA_PTX = -gencode arch=compute_$(lastword $(1)),code=compute_$(lastword $(1))
NVCC_FLAGS = -O3 -std=c++17 --fmad=false -Xcompiler -ffp-contract=off \
             -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I. \
             $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
             $(call CUDA_PTX,$(CUDA_ARCHS))

# make cuda (CI, compile only) builds all of the CUDA code; make cuda-test
# runs the device tests on a GPU, make cuda-bench the benchmarks (and
# bench/foreach_norm.py where PyTorch is installed). Without a GPU each
# program says so and exits 0 (1 under GNMR_REQUIRE_GPU, which gpu-check
# sets); without nvcc the targets say so.
#   norms (examples/cuda/gnmr_norms.cuh): tests/cuda/test_device.cu (norm
#     bit identity, the graph-launched training loop), the two-file build
#     (tests/cuda/two_file_*.cu, -rdc and GNMR_STATIC), bench_norms_cuda
#   controller (examples/cuda/gnmr_ctl.cuh, both rule sets): the
#     training-step example (norm plan + controller in a captured graph),
#     its device test and benchmark, and the two-file build: ctl_two_b.cu
#     uses the norm plan and the controller without holding either
#     implementation (no -rdc; CI compiles and links it)
CUDA_HDRS = gnmr.h examples/cuda/gnmr_norms.cuh tests/cuda/regions.h \
  tests/cuda/no_device.h examples/cuda/gnmr_device.cuh
CUDA_TESTS = $(B)/cuda/test_device $(B)/cuda/two_file_rdc \
             $(B)/cuda/two_file_static $(B)/test_ctl_cuda $(B)/ctl_two_files
CUDA_CTL = $(B)/train_step $(B)/test_ctl_cuda $(B)/bench_ctl_cuda \
           $(B)/ctl_two_files
CUDA_BINS = $(CUDA_TESTS) $(B)/cuda/bench_norms_cuda $(CUDA_CTL) \
            $(B)/cuda/fast_math_refused

ifeq ($(NVCC),)
cuda cuda-test cuda-bench:
	@echo "$@: nvcc not found (PATH, /usr/local/cuda/bin/nvcc): skipped"
else
cuda: $(CUDA_BINS)

# RUNNER="compute-sanitizer --tool memcheck" runs them under the sanitizer.
cuda-test: $(CUDA_TESTS)
	@for t in $(CUDA_TESTS); do echo "== $$t"; $(RUNNER) $$t || exit 1; done

cuda-bench: $(B)/cuda/bench_norms_cuda $(B)/bench_ctl_cuda
	$(B)/bench_ctl_cuda
	$(B)/cuda/bench_norms_cuda --csv $(B)/cuda/bench_norms_cuda.csv
	@if command -v python3 >/dev/null 2>&1; then python3 bench/foreach_norm.py; \
	else echo "cuda-bench: no python3: torch._foreach_norm not timed"; fi
endif

# Every check the device path owes, in one run on a GPU machine (about 8
# minutes at most): the CUDA test programs, the benchmarks, compute-sanitizer
# memcheck and racecheck on every case, and the PyTorch bridge's CUDA cases;
# one log per step under $(B)/gpu-check. make gpu-check-build builds all it
# runs, on any machine with nvcc (no GPU needed), so that the GPU machine
# compiles nothing: there, `bash tests/cuda/gpu_check.sh OUT build` with
# this build/ copied along. GPU_CHECK="test bench" runs only those groups
# (tests/cuda/gpu_check.sh). Without a GPU it says SKIPPED.
GPU_CHECK ?=
gpu-check: gpu-check-build
	@bash tests/cuda/gpu_check.sh $(B)/gpu-check $(B) $(GPU_CHECK)
ifeq ($(NVCC),)
gpu-check-build:
	@echo "$@: nvcc not found (PATH, /usr/local/cuda/bin/nvcc)"; exit 1
else
gpu-check-build: $(CUDA_BINS) $(B)/cuda/bench_norms_cuda_occ8 libgnmr \
  $(B)/torch_replay $(B)/torch_place_replay $(B)/torch_lowp
endif

$(B)/cuda/test_device: tests/cuda/test_device.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<

$(B)/cuda/bench_norms_cuda: bench/bench_norms_cuda.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<
# The norm kernel held to 8 resident blocks an SM (gnmr_norms.cuh,
# GNMR_NORMS_BLOCKS_PER_SM): which of the two reads faster is a measurement.
$(B)/cuda/bench_norms_cuda_occ8: bench/bench_norms_cuda.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -DGNMR_NORMS_BLOCKS_PER_SM=8 -o $@ $<

# Two files, one holding the implementation, the other a kernel that calls
# gnmr_recovering and the conversions: with relocatable device code
# (compiled apart, device-linked), and with GNMR_STATIC in both (no -rdc).
TWO_FILE = tests/cuda/two_file_main.cu tests/cuda/two_file_kernel.cu
$(B)/cuda/two_file_%.o: tests/cuda/two_file_%.cu tests/cuda/two_file.h \
                        $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -rdc=true -dc -o $@ $<
$(B)/cuda/two_file_rdc: $(B)/cuda/two_file_main.o $(B)/cuda/two_file_kernel.o
	$(NVCC) $(NVCC_FLAGS) -rdc=true -o $@ $^
$(B)/cuda/two_file_static: $(TWO_FILE) tests/cuda/two_file.h $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -DTWO_FILE_STATIC -o $@ $(TWO_FILE)

# --use_fast_math (llm.c's default) flushes subnormals and fuses
# multiply-adds: each header must refuse it, the build failing with the
# name of the missing function (one architecture is enough to show it).
FAST_MATH_NAME = gnmr_cuda_needs_ieee_floats_build_without_use_fast_math
$(B)/cuda/fast_math_refused: tests/cuda/fast_math.cu $(CUDA_HDRS) \
                             examples/cuda/gnmr_ctl.cuh
	@mkdir -p $(@D)
	@for h in NORMS CTL; do \
	  if $(NVCC) $(filter-out --fmad=false -gencode arch=%,$(NVCC_FLAGS)) \
	      -arch=sm_$(firstword $(CUDA_ARCHS)) --use_fast_math \
	      -DFAST_MATH_$$h -o $@.out $< >$@.log 2>&1; then \
	    echo "$@: --use_fast_math was not refused (FAST_MATH_$$h)"; \
	    exit 1; fi; \
	  grep -q $(FAST_MATH_NAME) $@.log || { cat $@.log; exit 1; }; \
	done
	@echo "cuda: --use_fast_math refused by gnmr_norms.cuh and gnmr_ctl.cuh"
	@touch $@

CUDA_CTL_DEPS = examples/cuda/gnmr_ctl.cuh gnmr.h tests/cuda/regions.h \
                tests/cuda/no_device.h examples/cuda/gnmr_device.cuh
# The example includes the headers by name, as a trainer that copied them
# next to its own files would.
$(B)/train_step: examples/cuda/train_step.cu $(CUDA_CTL_DEPS) \
                 examples/cuda/gnmr_norms.cuh
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -Iexamples/cuda -o $@ $<
$(B)/test_ctl_cuda: tests/cuda/test_ctl_cuda.cu tests/check.h \
                   tests/random_config.h $(CUDA_CTL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<
$(B)/bench_ctl_cuda: bench/bench_ctl_cuda.cu $(CUDA_CTL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<
$(B)/ctl_two_files: tests/cuda/ctl_two_a.cu tests/cuda/ctl_two_b.cu \
                    tests/cuda/ctl_two.h examples/cuda/gnmr_norms.cuh \
                    $(CUDA_CTL_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ tests/cuda/ctl_two_a.cu tests/cuda/ctl_two_b.cu

# ---- the lab: demos, efficacy, suite, detection (lab/lab.mk) ---------------
include lab/lab.mk

# ---- formatting -------------------------------------------------------------
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(B)

# ---- PyTorch bridge (README "The PyTorch bridge") ------------------------
# make libgnmr: build/libgnmr.so (gnmr.h, for examples/torch/gnmr_torch.py)
# and, where nvcc is installed, build/libgnmr_cuda.so (the device norms of
# examples/cuda/gnmr_norms.cuh). make test-torch: tests/torch with pytest,
# under the first Python of TORCH_PYTHON_LIST that imports torch (Debian's
# python3-torch lives in /usr/bin/python3, which a pyenv python3 on PATH
# does not see); CUDA cases skip without a GPU. The distributed cases
# (tests/torch/test_distributed.py) spawn 2 and 4 gloo processes on
# localhost: DDP and sharded gradients, about 15 s on 2 cores;
# tests/torch/test_dist_checks.py 2 more (the mistakes the bridge catches).
# build/torch_replay, build/torch_place_replay and build/torch_lowp are the
# C references (controller, placer, quantizers) the tests compare with.
.PHONY: libgnmr test-torch demo-torch
FORMAT_FILES += $(wildcard examples/torch/*.c)
TORCH_PYTHON_LIST ?= python3 /usr/bin/python3
TORCH_ARCHS ?= $(CUDA_ARCHS)
LIBGNMR_CUDA_FLAGS = $(filter-out -gencode arch=%,$(NVCC_FLAGS)) \
  -Xcompiler -fPIC -shared \
  $(foreach a,$(TORCH_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
  $(call CUDA_PTX,$(TORCH_ARCHS))
TORCH_PY = for p in $(TORCH_PYTHON_LIST); do \
    if $$p -c 'import torch' >/dev/null 2>&1; then echo $$p; break; fi; done

$(B)/libgnmr.so: examples/torch/gnmr_lib.c gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -fPIC -shared -o $@ $<

$(B)/libgnmr_cuda.so: examples/torch/gnmr_lib_cuda.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(LIBGNMR_CUDA_FLAGS) -o $@ $<

ifeq ($(NVCC),)
libgnmr: $(B)/libgnmr.so
	@echo "libgnmr: nvcc not found (PATH, /usr/local/cuda/bin/nvcc):" \
	  "$(B)/libgnmr_cuda.so skipped (the CPU norms only)"
else
libgnmr: $(B)/libgnmr.so $(B)/libgnmr_cuda.so
endif

# The C controller the tests compare the Python bridge with, built from
# gnmr.h on its own (not through the shared library).
$(B)/torch_replay: tests/torch/replay.c tests/torch/replay_io.h gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

# The C placer the placer's tests compare the bridge with, likewise.
$(B)/torch_place_replay: tests/torch/place_replay.c tests/torch/replay_io.h \
                          gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

# lab/lowp.h's quantizers, the reference of the bridge's fake ones.
$(B)/torch_lowp: tests/torch/lowp_ref.c lab/lowp.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

test-torch: libgnmr $(B)/torch_replay $(B)/torch_place_replay \
  $(B)/torch_lowp
	@py=$$($(TORCH_PY)); \
	if [ -z "$$py" ]; then echo "test-torch: no Python of" \
	  "'$(TORCH_PYTHON_LIST)' imports torch (Debian: apt-get install" \
	  "python3-torch python3-pytest)"; exit 1; fi; \
	echo "test-torch: $$py, torch $$($$py -c 'import torch; print(torch.__version__)')"; \
	$$py -m pytest -q -p no:cacheprovider tests/torch; rc=$$?; \
	if [ $$rc = 5 ]; then echo "test-torch: pytest collected no tests"; fi; \
	exit $$rc

# The char-level GPT of examples/torch, every arm, a short run (bench/
# RESULTS.md "PyTorch bridge" has the measured figures). TORCH_STEPS=N for
# another length.
TORCH_STEPS ?= 50
demo-torch: libgnmr
	@py=$$($(TORCH_PY)); test -n "$$py" || \
	  { echo "demo-torch: no Python imports torch"; exit 1; }; \
	$$py examples/torch/train_char_gpt.py --steps $(TORCH_STEPS) \
	  --out $(B)/demo-torch

# ---- help -----------------------------------------------------------------
# One line per target (details in the comments above each rule).
help:
	@printf '%s\n' \
	  'all               same as test' \
	  'test              every test, gcc and clang, C++/STATIC/multi-file, vendoring, -Ofast lane' \
	  'test-asan         the whole suite under ASan+UBSan' \
	  'test-valgrind     the whole suite under valgrind memcheck' \
	  'test-warn         builds the whole suite with -Wconversion -Wshadow and more' \
	  'neon              the norm test cross-built for aarch64, run under qemu' \
	  'fuzz              libFuzzer targets, FUZZ_SECONDS each' \
	  'fuzz-build        build the libFuzzer targets only' \
	  'tidy              clang-tidy on gnmr.h' \
	  'cppcheck          cppcheck on gnmr.h' \
	  'format            clang-format in place' \
	  'format-check      fail on a clang-format diff' \
	  'bench             norm-helper and controller benchmarks' \
	  'bench-norm        norm-helper benchmark and its targets' \
	  'ab-norm BASE=rev  out-of-cache norms, this tree against rev, interleaved' \
	  'ab-ctl BASE=rev   controller cost, this tree against rev, interleaved' \
	  'bench-place       the placer step against gnmr_step, interleaved' \
	  'detect            detection benchmark tables (bench/RESULTS.md)' \
	  'detect-frontier   recall at 0.1% false alarms (bench/RESULTS.md)' \
	  'demo              training stress demo on built-in data' \
	  'demo-full         the demo on Fashion-MNIST, all arms, 3 seeds' \
	  'demo-sweep        GNMR settings sweep on the stress setting' \
	  'demo-lm           byte-level GPT on fortunes, both stress settings' \
	  'demo-lm-natural   demo-lm, natural-stress setting only' \
	  'demo-lm-injected  demo-lm, injected-fault setting only' \
	  'demo-lm-quick     a short demo-lm run, one seed' \
	  'demo-lm-sweep     f32 against lowp, learning rates and formats' \
	  'fortunes-check    fail with a message when the fortune files are missing' \
	  'mpi               build the data-parallel MPI example' \
	  'mpi-run           run it on 2 and 4 ranks' \
	  'cuda              compile every CUDA program (sm_80, sm_90)' \
	  'cuda-test         CUDA device tests (skip without a GPU)' \
	  'cuda-bench        CUDA benchmarks (skip without a GPU)' \
	  'gpu-check         on a GPU: tests, figures, compute-sanitizer, torch' \
	  'gpu-check-build   build all gpu-check runs (nvcc, no GPU needed)' \
	  'efficacy          closed-loop efficacy, every arm and setting (~1 h)' \
	  'efficacy-quick    its CI lane (~3 min)' \
	  'eff-place         placement arms where FP4 loses (~1 h)' \
	  'width-ladder      FP4 LM at widths 32, 64, 96: does the gap hold (~1 h)' \
	  'suite             the settings suite, tune and test halves (~3 h)' \
	  'suite-quick       its CI lane: two settings, 200 steps (~3 min)' \
	  'libgnmr           shared libraries for the PyTorch bridge' \
	  'test-torch        the PyTorch bridge tests (pytest)' \
	  'demo-torch        the PyTorch char-GPT demo, TORCH_STEPS steps' \
	  'gpu-efficacy      on a GPU: a 57M GPT on FP4, six arms, both evaluations' \
	  'gpu-efficacy-toy  the same script at a tiny size on the CPU' \
	  'clean             remove $(B)' \
	  'help              this list'
