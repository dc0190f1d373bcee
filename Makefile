# gnmr.h - build, test, bench and demo targets.
#   make test     every test, with gcc and clang, plus the C++/STATIC/multi-file builds
#   make demo     the training stress demo on its built-in data (the main job)
#   make demo-full  the demo on Fashion-MNIST, all arms, 3 seeds (needs the
#                 Debian package dataset-fashion-mnist; fails with a message
#                 without it)
#   make demo-sweep the GNMR settings sweep on the stress setting
#   make bench    norm-helper and controller benchmarks (results in bench/)
#   make format   clang-format in place; make format-check fails on a diff

CC_LIST ?= gcc clang
CXX_LIST ?= g++ clang++
OPT ?= -O2
WARN = -Wall -Wextra -Wpedantic -Werror
CSTD = -std=c99
CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) -ffp-contract=off -I.
B = build

TESTS = test_ctl test_demo
TEST_BINS = $(foreach cc,$(CC_LIST),$(foreach t,$(TESTS),$(B)/$(cc)/$(t))) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile_link) \
            $(foreach cxx,$(CXX_LIST),$(B)/$(cxx)/compile_cxx11 $(B)/$(cxx)/compile_cxx17)

# The demo's test includes the demo itself.
$(B)/gcc/test_demo $(B)/clang/test_demo: examples/train_stress.c

# The controller test links with malloc & co. wrapped: any call fails it.
LDFLAGS_test_ctl = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

FORMAT_FILES = $(wildcard *.h tests/*.c tests/*.h tests/*/*.c tests/*/*.cc \
                 examples/*.c examples/*/*.cu bench/*.c)

.PHONY: all test bench demo demo-full demo-sweep format format-check clean

all: test

test: $(TEST_BINS)
	@sh tests/run.sh $(TEST_BINS)

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

# The training stress demo. demo: the built-in synthetic task (no files
# needed); demo-full: Fashion-MNIST from FASHION; demo-sweep: the GNMR
# settings sweep on the built-in task. Outputs under demo-out/.
FASHION ?= /usr/share/datasets/fashion-mnist
DEMO_STRESS = --stress 8
$(B)/train_stress: examples/train_stress.c gnmr.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< -lm

demo: $(B)/train_stress
	$(B)/train_stress --steps 1000 --hidden 128,64,32 --seeds 2 \
	  $(DEMO_STRESS) --out demo-out

demo-full: $(B)/train_stress
	@if [ ! -f $(FASHION)/train-images-idx3-ubyte.gz ] && \
	    [ ! -f $(FASHION)/train-images-idx3-ubyte ]; then \
	  echo "demo-full: Fashion-MNIST not found in $(FASHION)."; \
	  echo "  Debian/Ubuntu: apt-get install dataset-fashion-mnist,"; \
	  echo "  or make demo-full FASHION=DIR with the four IDX files."; \
	  exit 1; fi
	$(B)/train_stress --data $(FASHION) --steps 2000 --seeds 3 \
	  $(DEMO_STRESS) --out demo-out/full

demo-sweep: $(B)/train_stress
	$(B)/train_stress --sweep --steps 1000 --hidden 128,64,32 --seeds 3 \
	  $(DEMO_STRESS) --out demo-out/sweep

# ---- formatting -------------------------------------------------------------
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(B)
