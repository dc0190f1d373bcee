/* regions.h - where the device tests put data of several dtypes in one
   allocation, and the check every test's fill and write makes before it
   launches. A device store of an f32 at an address that is not a multiple
   of 4 faults ("misaligned address"); test_device once wrote f32 after an
   odd number of bf16 elements. Plain C: the device tests use it on the
   host before each launch, tests/test_cuda_host.c tests it on the CPU. */
#ifndef TESTS_CUDA_REGIONS_H
#define TESTS_CUDA_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Every region starts at a multiple of this: enough for any element (and
   for the 16-byte loads of the norm kernels), as cudaMalloc aligns. */
#define REGION_ALIGN 256

/* The offset of a region that follows one ending at byte `end`. */
static inline size_t region_after(size_t end) {
  return (end + REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
}

/* Offsets of n regions of bytes[i] bytes each, in order, each at a
   multiple of REGION_ALIGN; returns the allocation's size. */
static inline size_t regions_place(const size_t *bytes, size_t n,
                                   size_t *offset) {
  size_t i, end = 0;
  for (i = 0; i < n; i++) {
    offset[i] = region_after(end);
    end = offset[i] + bytes[i];
  }
  return end;
}

/* 1 if p may hold elements of elem_size bytes: p a multiple of the largest
   power of two that divides elem_size (a type's alignment is a power of two
   that divides its size, so this asks at least as much). Not elem_size
   itself: gnmr_decision is 40 bytes, and cudaMalloc's 256-byte aligned
   addresses are not multiples of 40 (the first GPU run of 0.4 failed so). */
static inline int region_aligned(const void *p, size_t elem_size) {
  const size_t align = elem_size & (~elem_size + 1);
  return align == 0 || (uintptr_t)p % align == 0;
}

/* Before a launch that writes elements of elem_size bytes at p: a
   misaligned p fails the test here, with file and line, instead of
   faulting on the device. */
static inline void region_check(const void *p, size_t elem_size,
                                const char *file, int line) {
  if (!region_aligned(p, elem_size)) {
    fprintf(stderr,
            "%s:%d: a write of %zu-byte elements at %p, not aligned to "
            "them\n",
            file, line, elem_size, p);
    exit(1);
  }
}
#define REGION_CHECK(p, elem_size)                                             \
  region_check((p), (elem_size), __FILE__, __LINE__)

#endif /* TESTS_CUDA_REGIONS_H */
