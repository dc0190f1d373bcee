/* gnmr_norms.cuh - gradient norms of many tensors on a CUDA device, with
   gnmr.h's bits: a trainer copies it next to gnmr.h and includes it in any
   number of .cu files (everything here is static; no GNMR_IMPLEMENTATION
   and no -rdc needed).

       gnmr_norms_plan plan;
       gnmr_tensor t[NT];      // device data pointers, dtype, unit of each
       if (gnmr_norms_plan_init(&plan, t, NT, n_units) != GNMR_OK) ...
       // each step, inside a captured graph if you like (no host sync):
       gnmr_norms_enqueue(&plan, d_sumsq, d_norms, stream);
       gnmr_norms_plan_free(&plan);

   d_sumsq[u] (double) and d_norms[u] (float) are then bit for bit what
   gnmr_unit_sumsq and gnmr_unit_norms give on the CPU for the same tensors:
   any mix of f32/bf16/f16, any grouping into units, tensors in any order (a
   unit's tensors added in the order they appear). Functions return GNMR_OK,
   GNMR_EINVAL (bad tensors: the plan holds nothing), GNMR_ESIZE (too many
   chunks for one launch, or no host memory) or GNMR_NORMS_ECUDA (the CUDA
   error is in plan->cuda_error); nothing here calls exit(). init and free
   allocate and copy (they synchronise); enqueue only launches. The plan
   keeps the data pointers: re-init it when they change.

   How the work is laid out. Every tensor's elements are cut into chunks of
   GNMR_SUM_CHUNK; the chunks of all tensors are numbered in tensor order,
   and warp w of the first kernel sums chunk w (lane i mod 32 owns element
   i, each lane adds its squares in double in increasing i, the lanes fold
   by halves with shuffles: gnmr.h's canonical chunk sum; for 16-byte
   aligned f16/bf16 a thread loads 8 elements at once, 512 bytes a warp,
   into the warp's shared buffer, and each lane then adds its own elements
   from there, with the same additions in the same order). So a big tensor
   is many blocks, and small tensors share blocks: a block is 8 consecutive
   chunks of the list, whichever tensors they belong to, and no SM waits for
   a tensor of its own. The second kernel builds each tensor's pairwise
   tree over its chunk sums, spread over the grid as the first: its group
   nodes (32 consecutive chunks of one tensor) are numbered in tensor order
   too, and warp w trees node w with shuffles (levels 1 to 5; chunks past
   the end count as +0, which is how the tree carries an odd node up
   unchanged). A block takes a ticket (an atomic count per tensor) for the
   nodes it wrote; the block that completes a tensor trees its nodes
   (levels 6 on) in shared memory (in global memory past 2048 of them,
   i.e. tensors over 2^28 elements). Which block comes last changes who
   adds, not what is added. The third kernel, a thread per unit, adds the
   unit's tensors in order. (One block per unit for the second phase cost
   about 200 us on a 1 GiB tensor on an H100: one SM read its 65,536 chunk
   sums.)

   Build with contraction off (nvcc --fmad=false, host -ffp-contract=off)
   and without --use_fast_math (it flushes subnormals): a fused
   multiply-add or a flushed subnormal would change the bits. Under
   --use_fast_math (or --ftz=true) the build stops (below); without
   --fmad=false it does not: nvcc lets no header see that flag (no macro,
   no NVVM query), so such a build compiles and may give other bits (the
   device tests then print GNMR_CUDA_BITS_HINT, gnmr_device.cuh).

   The arithmetic below the plan (GNMR_HOSTDEV functions) is plain C as
   well: tests/test_cuda_host.c runs it on the CPU, warp by warp, against
   gnmr.h. The CUDA part is compiled only under nvcc. */
#ifndef GNMR_NORMS_CUH
#define GNMR_NORMS_CUH

#include "gnmr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

/* IEEE single precision or nothing (gnmr.h, gnmr__cuda_ieee_guard): the
   chunk kernel starts with the guard, which fails the whole build (the
   other kernels are in the same translation unit); a compiler that says
   it builds with fast math stops here. */
#if defined(__USE_FAST_MATH__)
#error "gnmr: IEEE floats needed: build without --use_fast_math"
#endif

#if defined(__CUDA_ARCH__)
#define GNMR_NORMS_UNROLL _Pragma("unroll")
#else
#define GNMR_NORMS_UNROLL
#endif

#define GNMR_NORMS_WARPS 8 /* warps per block */
#define GNMR_NORMS_THREADS (GNMR_NORMS_WARPS * GNMR_SUM_LANES)
/* Elements each lane reads in a chunk, and how many it has in flight. */
#define GNMR_NORMS_LANE_STEPS (GNMR_SUM_CHUNK / GNMR_SUM_LANES)
#define GNMR_NORMS_BATCH 16
/* Chunks a warp trees with shuffles: 2^5, levels 1 to 5 of the tree. */
#define GNMR_NORMS_GROUP 32
/* Group nodes a unit's block trees in shared memory (16 KiB); more go to
   global memory, with the same additions (tests set it lower). */
#ifndef GNMR_NORMS_SHARED
#define GNMR_NORMS_SHARED 2048
#endif
/* A CUDA call failed: plan->cuda_error says which. gnmr.h's
   GNMR_CUDA_ECUDA, the one code of both CUDA headers (gnmr_ctl.cuh keeps
   its failure in gc->cuda_error). */
#define GNMR_NORMS_ECUDA GNMR_CUDA_ECUDA

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor as the kernels see it. */
typedef struct gnmr_norms__tensor {
  const void *data;     /* device memory */
  uint64_t n;           /* elements */
  uint64_t first_chunk; /* its first chunk in the launch-wide numbering */
  uint64_t first_group; /* its first node in the group scratch */
  uint32_t dtype;       /* GNMR_DTYPE_F32, GNMR_DTYPE_F16, GNMR_DTYPE_BF16 */
  uint32_t unit;
} gnmr_norms__tensor;

/* ---- the arithmetic (host and device) ------------------------------------ */

static inline GNMR_HOSTDEV uint64_t gnmr_norms__chunks(uint64_t n) {
  return (n + GNMR_SUM_CHUNK - 1) / GNMR_SUM_CHUNK;
}

static inline GNMR_HOSTDEV uint64_t gnmr_norms__groups(uint64_t chunks) {
  return (chunks + GNMR_NORMS_GROUP - 1) / GNMR_NORMS_GROUP;
}

/* The tensor that owns chunk (by_group 0) or group node (by_group 1) at:
   the last one whose first_chunk (first_group) <= at. An empty tensor
   shares its first with the next one, so it is never chosen. */
static inline GNMR_HOSTDEV uint32_t gnmr_norms__owner(
    const gnmr_norms__tensor *t, uint32_t nt, uint64_t at, int by_group) {
  uint32_t lo = 0, hi = nt;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if ((by_group ? t[mid].first_group : t[mid].first_chunk) <= at)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}
static inline GNMR_HOSTDEV uint32_t gnmr_norms__chunk_tensor(
    const gnmr_norms__tensor *t, uint32_t nt, uint64_t chunk) {
  return gnmr_norms__owner(t, nt, chunk, 0);
}
static inline GNMR_HOSTDEV uint32_t gnmr_norms__group_tensor(
    const gnmr_norms__tensor *t, uint32_t nt, uint64_t group) {
  return gnmr_norms__owner(t, nt, group, 1);
}

/* Element off of a chunk, widened to float (exactly): in hardware through
   the read-only cache on the device, with gnmr.h's conversions on the
   host. */
/* A 16-bit element's bits widened to float (exactly). */
static inline GNMR_HOSTDEV float gnmr_norms__half(uint16_t h, uint32_t dtype) {
#if defined(__CUDA_ARCH__)
  if (dtype == GNMR_DTYPE_BF16) return __uint_as_float((unsigned)h << 16);
  return __half2float(__ushort_as_half(h));
#else
  return dtype == GNMR_DTYPE_BF16 ? gnmr_bf16_to_f32(h) : gnmr_f16_to_f32(h);
#endif
}

static inline GNMR_HOSTDEV float
gnmr_norms__widen(const void *chunk, uint32_t off, uint32_t dtype) {
#if defined(__CUDA_ARCH__)
  if (dtype == GNMR_DTYPE_F32) return __ldg((const float *)chunk + off);
  return gnmr_norms__half(__ldg((const unsigned short *)chunk + off), dtype);
#else
  if (dtype == GNMR_DTYPE_F32) return ((const float *)chunk)[off];
  return gnmr_norms__half(((const uint16_t *)chunk)[off], dtype);
#endif
}

/* One lane's sum over a chunk of len elements: elements lane, lane + 32,
   ... squared in double, added in that order from +0. Elements past len
   count as +0 (adding +0 to a sum of squares changes no bit), so every
   lane runs the same loop. */
static inline GNMR_HOSTDEV double gnmr_norms__lane_sum(const void *chunk,
                                                       uint32_t dtype,
                                                       uint32_t len,
                                                       uint32_t lane) {
  double acc = 0.0;
  uint32_t step, b;
  for (step = 0; step < GNMR_NORMS_LANE_STEPS; step += GNMR_NORMS_BATCH) {
    float v[GNMR_NORMS_BATCH];
    GNMR_NORMS_UNROLL
    for (b = 0; b < GNMR_NORMS_BATCH; b++) {
      uint32_t off = lane + (step + b) * GNMR_SUM_LANES;
      v[b] = off < len ? gnmr_norms__widen(chunk, off, dtype) : 0.0f;
    }
    GNMR_NORMS_UNROLL
    for (b = 0; b < GNMR_NORMS_BATCH; b++) acc += (double)v[b] * (double)v[b];
  }
  return acc;
}

/* 16-bit dtypes, 16 bytes a load. Lane i mod 32 still owns element i,
   but thread t of the warp reads 16-byte word t + 32 s of the chunk
   (elements 8 w ... 8 w + 7): a warp load is 512 bytes, rows 8 s ... 8 s +
   7 of the chunk. The warp puts GNMR_NORMS_WIDE_BATCH such loads in its
   shared buffer, then each lane adds its own element of each row, rows in
   increasing order: the canonical lane sums (elements past len +0), then
   the fold by halves. Needs 16-byte aligned data. */
#define GNMR_NORMS_WIDE_LOADS (GNMR_SUM_CHUNK / 8 / GNMR_SUM_LANES)
#define GNMR_NORMS_WIDE_BATCH 4
/* 16-bit elements of the warp's buffer */
#define GNMR_NORMS_WIDE_BUF (GNMR_NORMS_WIDE_BATCH * 8 * GNMR_SUM_LANES)

/* Element 8 w + k of a chunk of len 16-bit elements, 0 past len (and not
   read): the partial last word of a tensor. */
static inline GNMR_HOSTDEV uint16_t gnmr_norms__wide_part(const void *chunk,
                                                          uint32_t len,
                                                          uint32_t w,
                                                          uint32_t k) {
  if (8 * w + k >= len) return 0;
#if defined(__CUDA_ARCH__)
  return __ldg((const unsigned short *)chunk + 8 * w + k);
#else
  return ((const uint16_t *)chunk)[8 * w + k];
#endif
}

/* Lane lane's additions from the warp's buffer (rows rows of 32
   elements, in order) onto acc. */
static inline GNMR_HOSTDEV double
gnmr_norms__wide_rows(const uint16_t *buf, uint32_t rows, uint32_t lane,
                      uint32_t dtype, double acc) {
  uint32_t r;
  GNMR_NORMS_UNROLL
  for (r = 0; r < rows; r++) {
    const float v = gnmr_norms__half(buf[r * GNMR_SUM_LANES + lane], dtype);
    acc += (double)v * (double)v;
  }
  return acc;
}

/* A load of a node other blocks may have written in this launch (l2 = 1,
   global memory): from L2, past this SM's L1, which may hold the line from
   before; shared memory (l2 = 0) as it is. */
#if defined(__CUDA_ARCH__)
#define GNMR_NORMS_NODE(p, l2) ((l2) ? __ldcg(p) : *(p))
#else
#define GNMR_NORMS_NODE(p, l2) ((void)(l2), *(p))
#endif

/* One level of the bottom-up pairwise tree over p[0 .. m): node j (a
   multiple of 2 stride) takes in node j + stride where that exists; an odd
   last node is carried up as it is. Thread tid of nthreads does every
   nthreads-th pair; a barrier goes between levels. l2: p is global memory
   (GNMR_NORMS_NODE). */
static inline GNMR_HOSTDEV void
gnmr_norms__tree_level(double *p, uint64_t m, uint64_t stride, uint32_t tid,
                       uint32_t nthreads, int l2) {
  uint64_t j;
  for (j = 2 * stride * tid; j + stride < m; j += 2 * stride * nthreads)
    p[j] = GNMR_NORMS_NODE(&p[j], l2) + GNMR_NORMS_NODE(&p[j + stride], l2);
}

/* The group kernel's block, thread 0: its warps' tensors (warp_tensor[w],
   GNMR_NORMS_NONE for a warp with nothing to claim) as claims: tensor[i]
   gets count[i] group nodes. A tensor's groups are consecutive, so its
   warps are too. Returns the number of claims. */
#define GNMR_NORMS_NONE 0xFFFFFFFFu
static inline GNMR_HOSTDEV uint32_t gnmr_norms__claims(
    const uint32_t *warp_tensor, uint32_t *tensor, uint32_t *count) {
  uint32_t w, n = 0;
  for (w = 0; w < GNMR_NORMS_WARPS; w++) {
    if (warp_tensor[w] == GNMR_NORMS_NONE) continue;
    if (n > 0 && tensor[n - 1] == warp_tensor[w]) {
      count[n - 1]++;
    } else {
      tensor[n] = warp_tensor[w];
      count[n++] = 1;
    }
  }
  return n;
}

/* Unit u's sum of squares: its tensors' sums added in order from +0 (an
   empty tensor skipped), as gnmr_unit_sumsq. The unit kernel's thread u. */
static inline GNMR_HOSTDEV double
gnmr_norms__unit_sum(const gnmr_norms__tensor *t, const uint32_t *unit_first,
                     const uint32_t *unit_tensors, const double *tensor_sums,
                     uint32_t u) {
  double sum = 0.0;
  uint32_t i;
  for (i = unit_first[u]; i < unit_first[u + 1]; i++)
    if (t[unit_tensors[i]].n > 0) sum += tensor_sums[unit_tensors[i]];
  return sum;
}

/* ---- the layout (host) ------------------------------------------------- */

/* Checks the tensors (as gnmr_unit_sumsq does) and lays them out: out[i]
   is tensor i (data kept, first_chunk and first_group numbered in tensor
   order); unit u's tensors are unit_tensors[unit_first[u] ..
   unit_first[u + 1]), in tensor order. Counts in *n_chunks, *n_groups.
   GNMR_EINVAL (nothing written) for a NULL argument, a unit >= n_units, a
   bad dtype, NULL data with n > 0 or data not aligned to its element size
   (a device load would fault); GNMR_ESIZE if the chunks would not fit one
   launch. */
static inline int gnmr_norms__layout(const gnmr_tensor *t, size_t nt,
                                     uint32_t n_units, gnmr_norms__tensor *out,
                                     uint32_t *unit_first,
                                     uint32_t *unit_tensors, uint64_t *n_chunks,
                                     uint64_t *n_groups) {
  uint64_t chunks = 0, groups = 0;
  size_t i;
  uint32_t u;
  if ((nt > 0 && (!t || !out || !unit_tensors)) || !unit_first || !n_chunks ||
      !n_groups || nt >= UINT32_MAX)
    return GNMR_EINVAL;
  for (i = 0; i < nt; i++) {
    if (t[i].unit >= n_units || (t[i].n > 0 && !t[i].data) ||
        (t[i].dtype != GNMR_DTYPE_F32 && t[i].dtype != GNMR_DTYPE_F16 &&
         t[i].dtype != GNMR_DTYPE_BF16) ||
        (uintptr_t)t[i].data % (t[i].dtype == GNMR_DTYPE_F32 ? 4u : 2u) != 0)
      return GNMR_EINVAL;
    chunks += gnmr_norms__chunks((uint64_t)t[i].n);
  }
  /* one warp per chunk, blocks of GNMR_NORMS_WARPS: a grid of < 2^31 */
  if (chunks / GNMR_NORMS_WARPS >= 0x7FFFFFFFu) return GNMR_ESIZE;
  chunks = 0;
  for (i = 0; i < nt; i++) {
    uint64_t c = gnmr_norms__chunks((uint64_t)t[i].n);
    out[i].data = t[i].data;
    out[i].n = (uint64_t)t[i].n;
    out[i].first_chunk = chunks;
    out[i].first_group = groups;
    out[i].dtype = (uint32_t)t[i].dtype;
    out[i].unit = t[i].unit;
    chunks += c;
    groups += gnmr_norms__groups(c);
  }
  /* counting sort by unit, stable: each unit keeps its tensors' order */
  for (u = 0; u <= n_units; u++) unit_first[u] = 0;
  for (i = 0; i < nt; i++) unit_first[t[i].unit + 1]++;
  for (u = 0; u < n_units; u++) unit_first[u + 1] += unit_first[u];
  for (i = 0; i < nt; i++) unit_tensors[unit_first[t[i].unit]++] = (uint32_t)i;
  for (u = n_units; u > 0; u--) unit_first[u] = unit_first[u - 1];
  unit_first[0] = 0;
  *n_chunks = chunks;
  *n_groups = groups;
  return GNMR_OK;
}

#ifdef __cplusplus
}
#endif

/* ---- the kernels and the plan (CUDA) ----------------------------------- */
#if defined(__CUDACC__)

/* A chunk of 16-bit elements, 16 bytes a load (see gnmr_norms__wide_rows):
   the chunk's canonical sum, in thread 0 of the warp. buf: the warp's
   GNMR_NORMS_WIDE_BUF elements of shared memory. */
static __device__ __forceinline__ double
gnmr_norms__wide_chunk(const void *chunk, uint32_t dtype, uint32_t len,
                       uint32_t lane, uint16_t *buf) {
  double acc = 0.0;
  for (uint32_t s = 0; s < GNMR_NORMS_WIDE_LOADS; s += GNMR_NORMS_WIDE_BATCH) {
    uint4 v[GNMR_NORMS_WIDE_BATCH];
#pragma unroll
    for (uint32_t b = 0; b < GNMR_NORMS_WIDE_BATCH; b++) {
      const uint32_t w = (s + b) * GNMR_SUM_LANES + lane;
      if (8 * w + 8 <= len) {
        v[b] = __ldg((const uint4 *)chunk + w);
      } else {
        uint32_t h[4];
        for (uint32_t k = 0; k < 4; k++)
          h[k] = gnmr_norms__wide_part(chunk, len, w, 2 * k) |
                 (uint32_t)gnmr_norms__wide_part(chunk, len, w, 2 * k + 1)
                     << 16;
        v[b] = make_uint4(h[0], h[1], h[2], h[3]);
      }
    }
    __syncwarp(); /* the last batch's rows read */
#pragma unroll
    for (uint32_t b = 0; b < GNMR_NORMS_WIDE_BATCH; b++)
      ((uint4 *)buf)[b * GNMR_SUM_LANES + lane] = v[b];
    __syncwarp();
    acc =
        gnmr_norms__wide_rows(buf, 8 * GNMR_NORMS_WIDE_BATCH, lane, dtype, acc);
  }
  for (uint32_t delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
    acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
  return acc;
}

/* Warp w of the grid: chunk w of the launch-wide numbering. */
static __global__ void __launch_bounds__(GNMR_NORMS_THREADS)
    gnmr_norms__chunk_kernel(const gnmr_norms__tensor *tensors,
                             uint32_t n_tensors, uint64_t n_chunks,
                             double *chunk_sums) {
  __shared__ __align__(16) uint16_t buf[GNMR_NORMS_WARPS][GNMR_NORMS_WIDE_BUF];
  const uint32_t warp = threadIdx.x / GNMR_SUM_LANES;
  const uint64_t chunk = (uint64_t)blockIdx.x * GNMR_NORMS_WARPS + warp;
  const uint32_t lane = threadIdx.x % GNMR_SUM_LANES;
  gnmr__cuda_ieee_guard();
  if (chunk >= n_chunks) return; /* the whole warp */
  const gnmr_norms__tensor x =
      tensors[gnmr_norms__chunk_tensor(tensors, n_tensors, chunk)];
  const uint64_t start = (chunk - x.first_chunk) * GNMR_SUM_CHUNK;
  const uint32_t len =
      (uint32_t)(x.n - start < GNMR_SUM_CHUNK ? x.n - start : GNMR_SUM_CHUNK);
  const char *p =
      (const char *)x.data + start * (x.dtype == GNMR_DTYPE_F32 ? 4 : 2);
  double acc;
  /* a constant dtype per call: each loop specialised */
  if (x.dtype != GNMR_DTYPE_F32 && ((uintptr_t)x.data & 15u) == 0) {
    acc = x.dtype == GNMR_DTYPE_BF16
              ? gnmr_norms__wide_chunk(p, GNMR_DTYPE_BF16, len, lane, buf[warp])
              : gnmr_norms__wide_chunk(p, GNMR_DTYPE_F16, len, lane, buf[warp]);
  } else {
    if (x.dtype == GNMR_DTYPE_F32)
      acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_F32, len, lane);
    else if (x.dtype == GNMR_DTYPE_BF16)
      acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_BF16, len, lane);
    else
      acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_F16, len, lane);
    for (uint32_t delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
      acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
  }
  if (lane == 0) chunk_sums[chunk] = acc;
}

/* The tree over a tensor's group nodes p[0 .. m), by the block that
   completed them (other blocks wrote most of them: read from L2): in
   shared memory up to GNMR_NORMS_SHARED nodes, else in place. The root
   into tensor_sums[ti], the tensor's ticket back to 0 for the next
   launch. */
static __device__ void gnmr_norms__tensor_tree(double *node, double *p,
                                               uint64_t m, uint32_t ti,
                                               uint32_t *tickets,
                                               double *tensor_sums) {
  const int l2 = m > GNMR_NORMS_SHARED;
  if (!l2) {
    for (uint64_t j = threadIdx.x; j < m; j += blockDim.x)
      node[j] = __ldcg(p + j);
    p = node;
  }
  __syncthreads();
  for (uint64_t stride = 1; stride < m; stride *= 2) {
    gnmr_norms__tree_level(p, m, stride, threadIdx.x, blockDim.x, l2);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    tensor_sums[ti] = GNMR_NORMS_NODE(p, l2);
    tickets[ti] = 0;
  }
  __syncthreads(); /* node is reused */
}

/* Warp w of the grid: group node w of the launch-wide numbering (32
   consecutive chunk sums of one tensor, levels 1 to 5 of its tree with
   shuffles, +0 past the end). A tensor of one group is done: its sum. Else
   the block takes a ticket for each tensor it wrote nodes of, and the block
   whose nodes complete a tensor trees them (levels 6 on): every block
   works, none waits, and the additions are the tree's whichever block
   comes last. */
static __global__ void __launch_bounds__(GNMR_NORMS_THREADS)
    gnmr_norms__group_kernel(const gnmr_norms__tensor *tensors,
                             uint32_t n_tensors, uint64_t n_groups,
                             const double *chunk_sums, double *group_sums,
                             uint32_t *tickets, double *tensor_sums) {
  __shared__ double node[GNMR_NORMS_SHARED];
  __shared__ uint32_t warp_tensor[GNMR_NORMS_WARPS], done[GNMR_NORMS_WARPS];
  __shared__ uint32_t n_done;
  const uint32_t warp = threadIdx.x / GNMR_SUM_LANES;
  const uint32_t lane = threadIdx.x % GNMR_SUM_LANES;
  const uint64_t g = (uint64_t)blockIdx.x * GNMR_NORMS_WARPS + warp;
  if (g < n_groups) { /* the whole warp */
    const uint32_t ti = gnmr_norms__group_tensor(tensors, n_tensors, g);
    const gnmr_norms__tensor x = tensors[ti];
    const uint64_t m = gnmr_norms__chunks(x.n);
    const uint64_t k = (g - x.first_group) * GNMR_NORMS_GROUP + lane;
    double v = k < m ? chunk_sums[x.first_chunk + k] : 0.0;
    for (uint32_t delta = 1; delta < GNMR_NORMS_GROUP; delta *= 2)
      v += __shfl_down_sync(0xFFFFFFFFu, v, delta);
    if (lane == 0) {
      if (m <= GNMR_NORMS_GROUP) {
        tensor_sums[ti] = v;
        warp_tensor[warp] = GNMR_NORMS_NONE;
      } else {
        group_sums[g] = v;
        __threadfence(); /* the node before the ticket that counts it */
        warp_tensor[warp] = ti;
      }
    }
  } else if (lane == 0) {
    warp_tensor[warp] = GNMR_NORMS_NONE;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t tensor[GNMR_NORMS_WARPS], count[GNMR_NORMS_WARPS];
    const uint32_t n = gnmr_norms__claims(warp_tensor, tensor, count);
    /* the block's nodes (fenced by their writers, then the barrier) before
       its tickets, fenced again by the thread that takes them, as the
       memory model asks of a release */
    __threadfence();
    n_done = 0;
    for (uint32_t i = 0; i < n; i++) {
      const uint64_t groups =
          gnmr_norms__groups(gnmr_norms__chunks(tensors[tensor[i]].n));
      if (atomicAdd(&tickets[tensor[i]], count[i]) + count[i] == groups)
        done[n_done++] = tensor[i];
    }
    __threadfence(); /* the tickets before the nodes they count */
  }
  __syncthreads();
  for (uint32_t i = 0; i < n_done; i++) {
    const gnmr_norms__tensor x = tensors[done[i]];
    gnmr_norms__tensor_tree(node, group_sums + x.first_group,
                            gnmr_norms__groups(gnmr_norms__chunks(x.n)),
                            done[i], tickets, tensor_sums);
  }
}

/* Thread u: unit u's sum from its tensors' sums, in order. sumsq and norms
   may each be NULL. */
static __global__ void gnmr_norms__unit_kernel(
    const gnmr_norms__tensor *tensors, const uint32_t *unit_first,
    const uint32_t *unit_tensors, uint32_t n_units, const double *tensor_sums,
    double *sumsq, float *norms) {
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= n_units) return;
  const double sum =
      gnmr_norms__unit_sum(tensors, unit_first, unit_tensors, tensor_sums, u);
  if (sumsq) sumsq[u] = sum;
  if (norms) norms[u] = (float)sqrt(sum);
}

typedef struct gnmr_norms_plan {
  gnmr_norms__tensor *tensors; /* device, n_tensors */
  uint32_t *unit_first;        /* device, n_units + 1 */
  uint32_t *unit_tensors;      /* device, n_tensors */
  double *chunk_sums;          /* device scratch, n_chunks */
  double *group_sums;          /* device scratch, n_groups */
  double *tensor_sums;         /* device scratch, n_tensors */
  uint32_t *tickets;           /* device, n_tensors, 0 between launches */
  uint32_t n_tensors, n_units;
  uint64_t n_chunks, n_groups;
  cudaError_t cuda_error; /* the failure behind GNMR_NORMS_ECUDA */
} gnmr_norms_plan;

static inline void gnmr_norms_plan_free(gnmr_norms_plan *plan) {
  if (!plan) return;
  /* cudaFree(NULL) does nothing */
  cudaFree(plan->tensors);
  cudaFree(plan->unit_first);
  cudaFree(plan->unit_tensors);
  cudaFree(plan->chunk_sums);
  cudaFree(plan->group_sums);
  cudaFree(plan->tensor_sums);
  cudaFree(plan->tickets);
  memset(plan, 0, sizeof *plan);
}

static inline int gnmr_norms__cuda(gnmr_norms_plan *plan, cudaError_t err) {
  if (err == cudaSuccess) return GNMR_OK;
  plan->cuda_error = err;
  return GNMR_NORMS_ECUDA;
}

/* tensors[i].data: device pointers. The plan keeps the pointers and sizes;
   re-init it when they change. Syncs the device. On failure the plan holds
   nothing (free is still safe). */
static inline int gnmr_norms_plan_init(gnmr_norms_plan *plan,
                                       const gnmr_tensor *tensors, size_t nt,
                                       uint32_t n_units) {
  gnmr_norms__tensor *t;
  uint32_t *first, *order;
  uint64_t chunks, groups;
  int rc;
  if (!plan || n_units == UINT32_MAX) return GNMR_EINVAL;
  memset(plan, 0, sizeof *plan);
  t = (gnmr_norms__tensor *)malloc((nt ? nt : 1) * sizeof *t);
  first = (uint32_t *)malloc(((size_t)n_units + 1) * sizeof *first);
  order = (uint32_t *)malloc((nt ? nt : 1) * sizeof *order);
  rc = t && first && order ? GNMR_OK : GNMR_ESIZE;
  if (rc == GNMR_OK)
    rc = gnmr_norms__layout(tensors, nt, n_units, t, first, order, &chunks,
                            &groups);
  if (rc == GNMR_OK) {
    plan->n_tensors = (uint32_t)nt;
    plan->n_units = n_units;
    plan->n_chunks = chunks;
    plan->n_groups = groups;
    /* sizes of at least one element: every pointer valid */
    rc = gnmr_norms__cuda(
        plan, cudaMalloc(&plan->tensors, (nt ? nt : 1) * sizeof *t));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan,
          cudaMalloc(&plan->unit_first, ((size_t)n_units + 1) * sizeof *first));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMalloc(&plan->unit_tensors, (nt ? nt : 1) * sizeof *order));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMalloc(&plan->chunk_sums,
                           (size_t)(chunks ? chunks : 1) * sizeof(double)));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMalloc(&plan->group_sums,
                           (size_t)(groups ? groups : 1) * sizeof(double)));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMalloc(&plan->tensor_sums, (nt ? nt : 1) * sizeof(double)));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMalloc(&plan->tickets, (nt ? nt : 1) * sizeof(uint32_t)));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan, cudaMemset(plan->tickets, 0, (nt ? nt : 1) * sizeof(uint32_t)));
    if (rc == GNMR_OK && nt > 0)
      rc = gnmr_norms__cuda(plan, cudaMemcpy(plan->tensors, t, nt * sizeof *t,
                                             cudaMemcpyHostToDevice));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(plan,
                            cudaMemcpy(plan->unit_first, first,
                                       ((size_t)n_units + 1) * sizeof *first,
                                       cudaMemcpyHostToDevice));
    if (rc == GNMR_OK && nt > 0)
      rc = gnmr_norms__cuda(plan, cudaMemcpy(plan->unit_tensors, order,
                                             nt * sizeof *order,
                                             cudaMemcpyHostToDevice));
    /* landed before any stream's kernel reads them (the copies and the
       memset above run on the legacy stream, and a pageable copy returns
       once staged) */
    if (rc == GNMR_OK) rc = gnmr_norms__cuda(plan, cudaDeviceSynchronize());
  }
  free(t);
  free(first);
  free(order);
  if (rc != GNMR_OK) {
    cudaError_t err = plan->cuda_error;
    gnmr_norms_plan_free(plan);
    plan->cuda_error = err;
  }
  return rc;
}

/* Launches the three kernels on stream: sumsq[u] and norms[u] (device
   memory, n_units each; either may be NULL) for every unit. No host sync:
   capturable in a CUDA graph. A launch error is returned (asynchronous
   faults surface at the caller's next synchronisation, as for any
   kernel). One enqueue per plan in flight: the plan's chunk sums and
   tickets are its scratch, so two streams running one plan at once race
   (a plan per stream, or order the streams with an event). */
static inline int gnmr_norms_enqueue(gnmr_norms_plan *plan, double *sumsq,
                                     float *norms, cudaStream_t stream) {
  if (!plan || (plan->n_units > 0 && !plan->unit_first)) return GNMR_EINVAL;
  if (plan->n_units == 0) return GNMR_OK;
  if (plan->n_chunks > 0) {
    const unsigned blocks =
        (unsigned)((plan->n_chunks + GNMR_NORMS_WARPS - 1) / GNMR_NORMS_WARPS);
    gnmr_norms__chunk_kernel<<<blocks, GNMR_NORMS_THREADS, 0, stream>>>(
        plan->tensors, plan->n_tensors, plan->n_chunks, plan->chunk_sums);
    if (gnmr_norms__cuda(plan, cudaGetLastError()) != GNMR_OK)
      return GNMR_NORMS_ECUDA;
  }
  if (plan->n_groups > 0) {
    const unsigned blocks =
        (unsigned)((plan->n_groups + GNMR_NORMS_WARPS - 1) / GNMR_NORMS_WARPS);
    gnmr_norms__group_kernel<<<blocks, GNMR_NORMS_THREADS, 0, stream>>>(
        plan->tensors, plan->n_tensors, plan->n_groups, plan->chunk_sums,
        plan->group_sums, plan->tickets, plan->tensor_sums);
    if (gnmr_norms__cuda(plan, cudaGetLastError()) != GNMR_OK)
      return GNMR_NORMS_ECUDA;
  }
  gnmr_norms__unit_kernel<<<(unsigned)(((uint64_t)plan->n_units + 255) / 256),
                            256, 0, stream>>>(plan->tensors, plan->unit_first,
                                              plan->unit_tensors, plan->n_units,
                                              plan->tensor_sums, sumsq, norms);
  return gnmr_norms__cuda(plan, cudaGetLastError());
}

#endif /* __CUDACC__ */
#endif /* GNMR_NORMS_CUH */
