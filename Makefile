# gnmr.h - build, test, bench and demo targets.
#   make test     every test, with gcc and clang, plus the C++/STATIC/multi-file builds
#   make demo     the training stress demo on its built-in data (the main job)
#   make bench    norm-helper and controller benchmarks (results in bench/)
#   make cuda     the CUDA example (sm_80, sm_90); skipped where nvcc is missing
#   make format   clang-format in place; make format-check fails on a diff

CC_LIST ?= gcc clang
CXX_LIST ?= g++ clang++
OPT ?= -O2
WARN = -Wall -Wextra -Wpedantic -Werror
CSTD = -std=c99
CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) -ffp-contract=off -I.
B = build

TESTS = test_ctl test_cuda_host
TEST_BINS = $(foreach cc,$(CC_LIST),$(foreach t,$(TESTS),$(B)/$(cc)/$(t))) \
            $(foreach cc,$(CC_LIST),$(B)/$(cc)/compile_link) \
            $(foreach cxx,$(CXX_LIST),$(B)/$(cxx)/compile_cxx11 $(B)/$(cxx)/compile_cxx17)

# The controller test links with malloc & co. wrapped: any call fails it.
LDFLAGS_test_ctl = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free

FORMAT_FILES = $(wildcard *.h tests/*.c tests/*.h tests/*/*.c tests/*/*.cc \
                 examples/*.c examples/*/*.cu examples/*/*.h bench/*.c)

.PHONY: all test bench demo cuda format format-check clean

all: test

test: $(TEST_BINS)
	@sh tests/run.sh $(TEST_BINS)

$(B)/gcc/%: tests/%.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	gcc $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_$(*F)) -lm

$(B)/clang/%: tests/%.c gnmr.h tests/check.h
	@mkdir -p $(@D)
	clang $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_$(*F)) -lm

# The CUDA example's kernel arithmetic, run on the CPU.
$(foreach cc,$(CC_LIST),$(B)/$(cc)/test_cuda_host): examples/cuda/gnmr_cuda_index.h

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

# ---- CUDA example ------------------------------------------------------------
# nvcc from PATH, else the standard install location. Contraction off on both
# sides (--fmad=false, -ffp-contract=off): the device must give the CPU's bits.
# CUDA_ARCHS=80 builds one architecture (faster while iterating).
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA_ARCHS ?= 80 90
NVCC_FLAGS = -O3 -std=c++17 --fmad=false -Xcompiler -ffp-contract=off \
             -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I. \
             $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a))

ifeq ($(NVCC),)
cuda:
	@echo "cuda: nvcc not found (PATH, /usr/local/cuda/bin/nvcc): skipped"
else
cuda: $(B)/gnmr_cuda
endif

$(B)/gnmr_cuda: examples/cuda/gnmr_cuda.cu examples/cuda/gnmr_cuda_index.h gnmr.h
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<

# ---- formatting -------------------------------------------------------------
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(B)
