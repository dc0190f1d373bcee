/* gnmr_cuda_index.h - the work layout and arithmetic of the CUDA example's
   norm kernels, shared by examples/cuda/gnmr_cuda.cu (which runs it on the
   device) and tests/test_cuda_host.c (which runs it on the CPU, thread by
   thread, and checks it against gnmr.h's canonical summation bit for bit).

   Include gnmr.h with GNMR_IMPLEMENTATION first: the host side of the f16 and
   bf16 conversions below is gnmr.h's own exact conversion.

   Layout. Every tensor's chunks of GNMR_SUM_CHUNK elements are grouped into
   "tasks" of GC_WARPS consecutive chunks; one CUDA block of GC_WARPS warps
   runs one task, one warp per chunk. The tasks of all tensors are numbered in
   tensor order, so one launch covers every tensor of every unit.

   Why the two-level tree equals gnmr.h's one tree: in the bottom-up pairwise
   tree over m chunk sums (an odd last node carried up), node j of level L is
   the sum of chunks [j 2^L, min((j+1) 2^L, m)). With GC_WARPS = 2^3, a task's
   block computes exactly node j of level 3; the pairwise tree over the tasks'
   results, with the same carry rule, is the rest of the same tree. */
#ifndef GNMR_CUDA_INDEX_H
#define GNMR_CUDA_INDEX_H

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif
#if defined(__CUDA_ARCH__)
#define GC_UNROLL _Pragma("unroll")
#else
#define GC_UNROLL
#endif

#define GC_WARPS 8 /* warps per block = chunks per task; a power of two */
#define GC_THREADS (GC_WARPS * GNMR_SUM_LANES)
/* Elements each lane reads in a chunk. */
#define GC_LANE_STEPS (GNMR_SUM_CHUNK / GNMR_SUM_LANES)
#define GC_BATCH 16 /* loads each lane has in flight before it adds */
#define GC_TASK_ELEMS ((uint64_t)GC_WARPS * GNMR_SUM_CHUNK)
/* Task sums of one tensor that the unit kernel trees in shared memory. */
#define GC_UNIT_SHARED_TASKS 4096

/* One tensor of the multi-tensor launch. Tensors of a unit are consecutive,
   in the order their sums are added. */
typedef struct gc_tensor {
  const void *data;
  uint64_t n;          /* elements */
  uint64_t first_task; /* its first task in the launch-wide numbering */
  uint32_t dtype;      /* GNMR_DTYPE_F32, GNMR_DTYPE_F16, GNMR_DTYPE_BF16 */
  uint32_t unit;
} gc_tensor;

typedef struct gc_unit {
  uint32_t first_tensor, n_tensors;
} gc_unit;

static inline GNMR_HOSTDEV uint64_t gc_chunks(uint64_t n) {
  return (n + GNMR_SUM_CHUNK - 1) / GNMR_SUM_CHUNK;
}

static inline GNMR_HOSTDEV uint64_t gc_tasks(uint64_t n) {
  return (gc_chunks(n) + GC_WARPS - 1) / GC_WARPS;
}

/* The tensor that owns a task: the last one whose first_task <= task. An
   empty tensor shares first_task with the next one, so it is never chosen. */
static inline GNMR_HOSTDEV uint32_t gc_task_tensor(const gc_tensor *t,
                                                   uint32_t nt, uint64_t task) {
  uint32_t lo = 0, hi = nt;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t[mid].first_task <= task)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Offset inside its chunk of the element a lane reads at a step: lane
   i mod 32 owns element i, and reads its elements in increasing i. */
static inline GNMR_HOSTDEV uint32_t gc_lane_offset(uint32_t lane,
                                                   uint32_t step) {
  return lane + step * GNMR_SUM_LANES;
}

/* Element off of a chunk, widened to float (exactly). The device reads
   through the read-only cache and converts in hardware; the host uses
   gnmr.h's conversions. */
static inline GNMR_HOSTDEV float gc_widen(const void *chunk, uint32_t off,
                                          uint32_t dtype) {
#if defined(__CUDA_ARCH__)
  unsigned short h;
  if (dtype == GNMR_DTYPE_F32) return __ldg((const float *)chunk + off);
  h = __ldg((const unsigned short *)chunk + off);
  if (dtype == GNMR_DTYPE_BF16) return __uint_as_float((unsigned)h << 16);
  return __half2float(__ushort_as_half(h));
#else
  uint16_t h;
  if (dtype == GNMR_DTYPE_F32) return ((const float *)chunk)[off];
  h = ((const uint16_t *)chunk)[off];
  if (dtype == GNMR_DTYPE_BF16) return gnmr_bf16_to_f32(h);
  return gnmr_f16_to_f32(h);
#endif
}

/* One lane's sum over one chunk of len elements: its squares in increasing
   i, in double, from +0. Elements past len count as 0 (adding +0 to a sum of
   squares changes no bit), so every lane runs the same loop. */
static inline GNMR_HOSTDEV double gc_lane_sum(const void *chunk, uint32_t dtype,
                                              uint32_t len, uint32_t lane) {
  double acc = 0.0;
  uint32_t step, b;
  for (step = 0; step < GC_LANE_STEPS; step += GC_BATCH) {
    float v[GC_BATCH];
    GC_UNROLL
    for (b = 0; b < GC_BATCH; b++) {
      uint32_t off = gc_lane_offset(lane, step + b);
      v[b] = off < len ? gc_widen(chunk, off, dtype) : 0.0f;
    }
    GC_UNROLL
    for (b = 0; b < GC_BATCH; b++) acc += (double)v[b] * (double)v[b];
  }
  return acc;
}

/* One level of the bottom-up pairwise tree over p[0 .. m): node j (a
   multiple of 2 stride) takes in node j + stride where that one exists; an
   odd last node is carried up as it is. Thread tid of nthreads does every
   nthreads-th pair; the caller puts a barrier between levels (stride 1, 2,
   4, ... while stride < m). */
static inline GNMR_HOSTDEV void gc_tree_level(double *p, uint64_t m,
                                              uint64_t stride, uint32_t tid,
                                              uint32_t nthreads) {
  uint64_t j;
  for (j = 2 * stride * tid; j + stride < m; j += 2 * stride * nthreads)
    p[j] += p[j + stride];
}

#endif /* GNMR_CUDA_INDEX_H */
