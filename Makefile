# gnmr.h - build, test, bench and demo targets.
#   make test     every test, with gcc and clang, plus the C++/STATIC/multi-file builds
#   make demo     the training stress demo on its built-in data (the main job)
#   make bench    norm-helper and controller benchmarks (results in bench/)
#   make format   clang-format in place; make format-check fails on a diff
# Reliability lanes (README "Reliability"; .ci/run runs them all):
#   make fuzz            build the libFuzzer targets, run each FUZZ_SECONDS
#   make test-asan       the whole suite under ASan+UBSan (gcc and clang)
#   make test-valgrind   the whole suite under valgrind memcheck
#   make test-warn       the whole suite with -Wconversion -Wshadow & co.
#   make tidy cppcheck   static analysis of gnmr.h

CC_LIST ?= gcc clang
CXX_LIST ?= g++ clang++
OPT ?= -O2
WARN = -Wall -Wextra -Wpedantic -Werror
CSTD = -std=c99
CWARN =
CFLAGS_ALL = $(CSTD) $(WARN) $(CWARN) $(OPT) -ffp-contract=off -I.
B = build
# A command the test programs run under (valgrind in make test-valgrind).
RUNNER =

TESTS = test_ctl
TEST_BINS = $(foreach cc,$(CC_LIST),$(foreach t,$(TESTS),$(B)/$(cc)/$(t))) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile_link) \
            $(foreach cxx,$(CXX_LIST),$(B)/$(cxx)/compile_cxx11 $(B)/$(cxx)/compile_cxx17) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile/all_modes $(B)/$(cc)/all_modes_static) \
            $(foreach cxx,$(CXX_LIST),$(B)/$(cxx)/all_modes_cxx) \
            $(foreach cc,$(CC_LIST),$(foreach t,$(FUZZ_TARGETS),$(B)/$(cc)/replay_$(t)))

# The controller test links with malloc & co. wrapped: any call fails it.
LDFLAGS_test_ctl = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

FORMAT_FILES = $(wildcard *.h tests/*.c tests/*.h tests/*/*.c tests/*/*.h \
                 tests/*/*.cc examples/*.c examples/*/*.cu bench/*.c)

FUZZ_TARGETS = ctl ckpt norm
FUZZ_HDRS = gnmr.h tests/fuzz/fuzz.h tests/fuzz/ctl_model.h

.PHONY: all test bench demo format format-check clean fuzz fuzz-build \
        test-asan test-valgrind test-warn tidy cppcheck

all: test

test: $(TEST_BINS)
	@RUNNER='$(RUNNER)' sh tests/run.sh $(TEST_BINS)

$(B)/gcc/%: tests/%.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_$(*F)) -lm

$(B)/clang/%: tests/%.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	clang $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_$(*F)) -lm

# Implementation in one file, interface in two others, all linked together;
# and two files built GNMR_STATIC in the same program: no duplicate symbols.
LINK_SRCS = tests/compile/impl.c tests/compile/use_a.c tests/compile/use_b.c \
            tests/compile/static_a.c tests/compile/static_b.c tests/compile/link_main.c
$(B)/%/compile_link: $(LINK_SRCS) gnmr.h tests/check.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) -o $@ $(LINK_SRCS) -lm

CXXFLAGS_ALL = $(WARN) $(OPT) -ffp-contract=off -I.
$(B)/%/compile_cxx11: tests/compile/cxx.cc gnmr.h tests/check.h
	@mkdir -p $(@D)
	$* -std=c++11 $(CXXFLAGS_ALL) -o $@ $<
$(B)/%/compile_cxx17: tests/compile/cxx.cc gnmr.h tests/check.h
	@mkdir -p $(@D)
	$* -std=c++17 $(CXXFLAGS_ALL) -o $@ $<

# The header included in every mode one file can hold (interface, again,
# implementation after it, again), built plain, GNMR_STATIC and as C++; and
# GNMR_STATIC defined after the first include must stop the build.
$(B)/%/all_modes_static: tests/compile/all_modes.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	$* $(CFLAGS_ALL) -DGNMR_STATIC -o $@ $< -lm
	@if $* $(CFLAGS_ALL) -DALL_MODES_LATE_STATIC -fsyntax-only $< 2>/dev/null; \
	then echo "GNMR_STATIC after the first include was not refused"; exit 1; fi
$(B)/%/all_modes_cxx: tests/compile/all_modes.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	$* -x c++ -std=c++11 $(CXXFLAGS_ALL) -o $@ $< -x none -lm

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

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(B)/fuzz/corpus-$$t; \
	  echo "== fuzz_$$t, $(FUZZ_SECONDS) s"; \
	  if $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	       -print_final_stats=1 -artifact_prefix=$(B)/fuzz/$$t- \
	       $(B)/fuzz/corpus-$$t tests/fuzz/corpus/$$t \
	       >$(B)/fuzz/$$t.log 2>&1; \
	  then grep -E '^(#[0-9]+[[:space:]]+DONE|Done|stat::)' $(B)/fuzz/$$t.log; \
	  else tail -n 40 $(B)/fuzz/$$t.log; exit 1; fi; \
	done

# The whole suite (every test program, every build mode, every corpus
# replay) under sanitizers, under valgrind, and with more warnings.
test-asan:
	$(MAKE) test B=$(B)/asan OPT="-O1 -g $(SAN)"

VALGRIND = valgrind -q --error-exitcode=1 --leak-check=full \
           --errors-for-leak-kinds=all --show-leak-kinds=all
test-valgrind:
	$(MAKE) test B=$(B)/valgrind CC_LIST=gcc CXX_LIST=g++ OPT="-O2 -g" \
	  RUNNER="$(VALGRIND)"

MORE_WARN = -Wconversion -Wsign-conversion -Wshadow -Wcast-align
test-warn:
	$(MAKE) test B=$(B)/warn WARN="$(WARN) $(MORE_WARN)" \
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
$(B)/bench_ctl: bench/bench_ctl.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(BENCH_FLAGS) -o $@ $< -lm

bench: $(B)/bench_ctl
	$(B)/bench_ctl --csv bench/bench_ctl.csv

# ---- examples --------------------------------------------------------------
$(B)/quickstart: examples/quickstart.c gnmr.h
	@mkdir -p $(@D)
	$(firstword $(CC_LIST)) $(CFLAGS_ALL) -o $@ $< -lm

# ---- formatting -------------------------------------------------------------
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(B)
