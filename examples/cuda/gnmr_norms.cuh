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
   and warp w of the kernel sums chunk w (lane i mod 32 owns element
   i, each lane adds its squares in double in increasing i, the lanes fold
   by halves with shuffles: gnmr.h's canonical chunk sum; for 16-byte
   aligned f16/bf16 a thread loads 8 elements at once, 512 bytes a warp,
   into the warp's shared buffer, and each lane then adds its own elements
   from there, with the same additions in the same order). So a big tensor
   is many blocks, and small tensors share blocks: a block is 8 consecutive
   chunks of the list, whichever tensors they belong to, and no SM waits for
   a tensor of its own. The rest of the tree is the kernel's tail, in the
   same launch: each tensor's chunk sums in group nodes of 32 consecutive
   chunks (numbered in tensor order too), a warp's shuffles over a node
   (levels 1 to 5; chunks past the end count as +0, which is how the tree
   carries an odd node up unchanged), the tensor's pairwise tree over its
   nodes (levels 6 on; in shared memory, in global memory past 2048 nodes,
   i.e. tensors over 2^28 elements), then each unit's tensors added in
   order. Each of those levels is last-block-done: a block counts what it
   finished on a ticket (an atomic counter per node, per tensor, per unit),
   and the block whose count completes one adds it and puts the ticket back
   to 0 for the next launch (a graph replay included). Which block comes
   last changes who adds, not what is added. Every block works, none
   waits. (One launch, not three: the two short kernels after the chunk
   sums cost about 20 us on an H100, and before them, one block per unit
   for the node trees cost about 200 us on a 1 GiB tensor: one SM read its
   65,536 chunk sums.)

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
/* The kernel's minimum of resident blocks an SM (__launch_bounds__). At 1
   the compiler takes 40 registers a thread and spills nothing: 6 blocks an
   SM. At 8 (2048 threads, the chunk sums' occupancy when they were a kernel
   of their own, 32 registers) it spills about 100 bytes a thread. Which
   reads faster is a measurement (bench_norms_cuda builds both). */
#ifndef GNMR_NORMS_BLOCKS_PER_SM
#define GNMR_NORMS_BLOCKS_PER_SM 1
#endif
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

/* The kernel's block, thread 0: its warps' group nodes (warp_group[w],
   GNMR_NORMS_NONE for a warp with nothing to claim) as claims: node[i]
   gets count[i] chunk sums. The chunks of a node are consecutive, so its
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
   empty tensor skipped), as gnmr_unit_sumsq. Other blocks wrote the sums
   in this launch: read from L2 (GNMR_NORMS_NODE). */
static inline GNMR_HOSTDEV double
gnmr_norms__unit_sum(const gnmr_norms__tensor *t, const uint32_t *unit_first,
                     const uint32_t *unit_tensors, const double *tensor_sums,
                     uint32_t u) {
  double sum = 0.0;
  uint32_t i;
  for (i = unit_first[u]; i < unit_first[u + 1]; i++)
    if (t[unit_tensors[i]].n > 0)
      sum += GNMR_NORMS_NODE(&tensor_sums[unit_tensors[i]], 1);
  return sum;
}

/* The group node of chunk (one of tensor x's), and how many chunks group
   node g (one of x's) holds: 32, fewer for a tensor's last. */
static inline GNMR_HOSTDEV uint32_t
gnmr_norms__chunk_group(const gnmr_norms__tensor *x, uint64_t chunk) {
  return (uint32_t)(x->first_group +
                    (chunk - x->first_chunk) / GNMR_NORMS_GROUP);
}
static inline GNMR_HOSTDEV uint32_t
gnmr_norms__group_size(const gnmr_norms__tensor *x, uint64_t g) {
  const uint64_t m = gnmr_norms__chunks(x->n);
  const uint64_t k = (g - x->first_group) * GNMR_NORMS_GROUP;
  return (uint32_t)(m - k < GNMR_NORMS_GROUP ? m - k : GNMR_NORMS_GROUP);
}

/* A ticket: the counter moves by count and the caller learns whether that
   completed it (reached total). The one whose count completes it puts it
   back to 0, the state every launch starts from (a replayed graph
   included): every other count of this launch is in by then, and the next
   launch is ordered after this one. A count that is the whole total takes
   no ticket at all (no other block holds a part), and leaves 0 as it found
   it. On the host (tests/test_cuda_host.c) a plain add. */
static inline GNMR_HOSTDEV int
gnmr_norms__ticket(uint32_t *counter, uint32_t count, uint32_t total) {
  if (count == total) return 1;
#if defined(__CUDA_ARCH__)
  if (atomicAdd(counter, count) + count != total) return 0;
#else
  *counter += count;
  if (*counter != total) return 0;
#endif
  *counter = 0;
  return 1;
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

/* What completes each unit in the one-launch kernel: need[u], how many of
   unit u's tensors are non-empty (each one's completion is a count on the
   unit's ticket), and the units with none, empty[0 .. returned count),
   which no tensor completes (the kernel writes their 0 first thing). */
static inline uint32_t gnmr_norms__unit_need(const gnmr_norms__tensor *t,
                                             const uint32_t *unit_first,
                                             const uint32_t *unit_tensors,
                                             uint32_t n_units, uint32_t *need,
                                             uint32_t *empty) {
  uint32_t u, i, n_empty = 0;
  for (u = 0; u < n_units; u++) {
    need[u] = 0;
    for (i = unit_first[u]; i < unit_first[u + 1]; i++)
      need[u] += t[unit_tensors[i]].n > 0;
    if (need[u] == 0) empty[n_empty++] = u;
  }
  return n_empty;
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

/* Chunk of tensor x (lane's part; the canonical sum in lane 0). buf: the
   warp's GNMR_NORMS_WIDE_BUF elements of shared memory. */
static __device__ __forceinline__ double
gnmr_norms__chunk_sum(const gnmr_norms__tensor &x, uint64_t chunk,
                      uint32_t lane, uint16_t *buf) {
  const uint64_t start = (chunk - x.first_chunk) * GNMR_SUM_CHUNK;
  const uint32_t len =
      (uint32_t)(x.n - start < GNMR_SUM_CHUNK ? x.n - start : GNMR_SUM_CHUNK);
  const char *p =
      (const char *)x.data + start * (x.dtype == GNMR_DTYPE_F32 ? 4 : 2);
  double acc;
  /* a constant dtype per call: each loop specialised */
  if (x.dtype != GNMR_DTYPE_F32 && ((uintptr_t)x.data & 15u) == 0)
    return x.dtype == GNMR_DTYPE_BF16
               ? gnmr_norms__wide_chunk(p, GNMR_DTYPE_BF16, len, lane, buf)
               : gnmr_norms__wide_chunk(p, GNMR_DTYPE_F16, len, lane, buf);
  if (x.dtype == GNMR_DTYPE_F32)
    acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_F32, len, lane);
  else if (x.dtype == GNMR_DTYPE_BF16)
    acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_BF16, len, lane);
  else
    acc = gnmr_norms__lane_sum(p, GNMR_DTYPE_F16, len, lane);
  for (uint32_t delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
    acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
  return acc;
}

/* The tree over a tensor's group nodes p[0 .. m), by the block that
   completed them (other blocks wrote most of them: read from L2): in
   shared memory up to GNMR_NORMS_SHARED nodes, else in place (the nodes'
   last use in this launch). The root, in thread 0. */
static __device__ double gnmr_norms__tensor_tree(double *node, double *p,
                                                 uint64_t m) {
  const int l2 = m > GNMR_NORMS_SHARED;
  double root;
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
  root = GNMR_NORMS_NODE(p, l2);
  __syncthreads(); /* node is reused */
  return root;
}

/* Everything one launch needs (the plan's device arrays). */
typedef struct gnmr_norms__args {
  const gnmr_norms__tensor *tensors;
  const uint32_t *unit_first, *unit_tensors;
  const uint32_t *unit_need;   /* non-empty tensors of each unit */
  const uint32_t *empty_units; /* the units with none, n_empty of them */
  double *chunk_sums, *group_sums, *tensor_sums;
  uint32_t *group_tickets, *tensor_tickets, *unit_tickets; /* 0 at rest */
  double *sumsq;                                           /* may be NULL */
  float *norms;                                            /* may be NULL */
  uint64_t n_chunks;
  uint32_t n_tensors, n_empty;
} gnmr_norms__args;

static __device__ __forceinline__ void
gnmr_norms__unit_out(const gnmr_norms__args &a, uint32_t u, double sum) {
  if (a.sumsq) a.sumsq[u] = sum;
  if (a.norms) a.norms[u] = (float)sqrt(sum);
}

/* The whole reduction in one launch; the additions are those of the
   three-level tree (chunks, groups of 32 chunks, a tensor's groups, then a
   unit's tensors in order), and which block comes last at each level
   changes who adds, not what is added.

   Warp w of the grid sums chunk w. Then each level is a last-block-done:
   a block counts what it finished on a ticket (a counter per group node,
   per tensor and per unit, tickets back to 0 by their completer), and the
   block whose count completes a node goes on to add it. The order every
   time: the data (written by one thread), __threadfence by that writer,
   the block barrier, __threadfence by the thread that takes the ticket,
   the ticket; the completer fences again before it reads, and reads other
   blocks' data from L2 (__ldcg), never from its SM's L1. No block waits for
   another, so any number of blocks and any schedule works. */
static __global__ void __launch_bounds__(GNMR_NORMS_THREADS,
                                         GNMR_NORMS_BLOCKS_PER_SM)
    gnmr_norms__kernel(const gnmr_norms__args a) {
  /* the warps' load buffers, then (after a barrier) the tensor tree */
  __shared__ __align__(16) union {
    uint16_t buf[GNMR_NORMS_WARPS][GNMR_NORMS_WIDE_BUF];
    double node[GNMR_NORMS_SHARED];
  } sh;
  __shared__ uint32_t warp_group[GNMR_NORMS_WARPS];
  __shared__ uint32_t done_group[GNMR_NORMS_WARPS], n_done;
  /* slot w: the tensor warp w's group completed (tree: its groups still to
     tree; done: its sum written), GNMR_NORMS_NONE if none */
  __shared__ uint32_t tree[GNMR_NORMS_WARPS], done[GNMR_NORMS_WARPS];
  const uint32_t warp = threadIdx.x / GNMR_SUM_LANES;
  const uint32_t lane = threadIdx.x % GNMR_SUM_LANES;
  const uint64_t chunk = (uint64_t)blockIdx.x * GNMR_NORMS_WARPS + warp;
  gnmr__cuda_ieee_guard();

  /* units without a non-empty tensor: no ticket will complete them */
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
       i < a.n_empty; i += (uint64_t)gridDim.x * blockDim.x)
    gnmr_norms__unit_out(a, a.empty_units[i], 0.0);

  /* 1. chunk sums: warp w, chunk w */
  if (chunk < a.n_chunks) { /* the whole warp */
    const gnmr_norms__tensor x =
        a.tensors[gnmr_norms__chunk_tensor(a.tensors, a.n_tensors, chunk)];
    if (lane == 0) warp_group[warp] = gnmr_norms__chunk_group(&x, chunk);
    const double acc = gnmr_norms__chunk_sum(x, chunk, lane, sh.buf[warp]);
    if (lane == 0) {
      a.chunk_sums[chunk] = acc;
      __threadfence(); /* the sum before the ticket that counts it */
    }
  } else if (lane == 0) {
    warp_group[warp] = GNMR_NORMS_NONE;
  }
  if (lane == 0) tree[warp] = done[warp] = GNMR_NORMS_NONE;
  __syncthreads(); /* also: the load buffers are free */

  /* 2. group tickets, thread 0: the block's warps as runs of one group
     node each (consecutive chunks), a count of chunks on each */
  if (threadIdx.x == 0) {
    uint32_t group[GNMR_NORMS_WARPS], count[GNMR_NORMS_WARPS];
    const uint32_t n = gnmr_norms__claims(warp_group, group, count);
    __threadfence(); /* release: the warps' sums, fenced, then the barrier */
    n_done = 0;
    for (uint32_t i = 0; i < n; i++) {
      const gnmr_norms__tensor *x = &a.tensors[gnmr_norms__group_tensor(
          a.tensors, a.n_tensors, group[i])];
      if (gnmr_norms__ticket(&a.group_tickets[group[i]], count[i],
                             gnmr_norms__group_size(x, group[i])))
        done_group[n_done++] = group[i];
    }
    __threadfence(); /* acquire: the tickets before the sums they count */
  }
  __syncthreads();

  /* 3. warp w trees the group node done_group[w] (levels 1 to 5 with
     shuffles, +0 past the tensor's end). A tensor of one group is then
     done; else the node goes on its tensor's ticket. */
  if (warp < n_done) { /* the whole warp */
    const uint32_t g = done_group[warp];
    const uint32_t ti = gnmr_norms__group_tensor(a.tensors, a.n_tensors, g);
    const gnmr_norms__tensor x = a.tensors[ti];
    const uint64_t m = gnmr_norms__chunks(x.n);
    const uint64_t k = (g - x.first_group) * GNMR_NORMS_GROUP + lane;
    double v = k < m ? __ldcg(&a.chunk_sums[x.first_chunk + k]) : 0.0;
    for (uint32_t delta = 1; delta < GNMR_NORMS_GROUP; delta *= 2)
      v += __shfl_down_sync(0xFFFFFFFFu, v, delta);
    if (lane == 0) {
      if (m <= GNMR_NORMS_GROUP) {
        a.tensor_sums[ti] = v;
        __threadfence(); /* the sum before the unit's ticket (step 5) */
        done[warp] = ti;
      } else {
        a.group_sums[g] = v;
        __threadfence(); /* the node before the ticket that counts it */
        if (gnmr_norms__ticket(&a.tensor_tickets[ti], 1,
                               (uint32_t)gnmr_norms__groups(m))) {
          __threadfence(); /* the ticket before the nodes it counts */
          tree[warp] = ti;
        }
      }
    }
  }
  __syncthreads();

  /* 4. the block trees each tensor it completed (levels 6 on), slot by
     slot; every thread runs the same loop (tree[] is shared) */
  for (uint32_t w = 0; w < GNMR_NORMS_WARPS; w++) {
    const uint32_t ti = tree[w];
    if (ti == GNMR_NORMS_NONE) continue;
    const gnmr_norms__tensor x = a.tensors[ti];
    const double root =
        gnmr_norms__tensor_tree(sh.node, a.group_sums + x.first_group,
                                gnmr_norms__groups(gnmr_norms__chunks(x.n)));
    if (threadIdx.x == 0) {
      a.tensor_sums[ti] = root;
      __threadfence(); /* the sum before the unit's ticket (step 5) */
      done[w] = ti;
    }
  }
  __syncthreads();

  /* 5. lane 0 of warp w: slot w's tensor on its unit's ticket; the
     completer adds the unit's tensors in order */
  if (lane == 0 && done[warp] != GNMR_NORMS_NONE) {
    const uint32_t u = a.tensors[done[warp]].unit;
    __threadfence(); /* release: the sum (fenced by its writer, barrier) */
    if (gnmr_norms__ticket(&a.unit_tickets[u], 1, a.unit_need[u])) {
      __threadfence(); /* acquire: the ticket before the sums */
      gnmr_norms__unit_out(a, u,
                           gnmr_norms__unit_sum(a.tensors, a.unit_first,
                                                a.unit_tensors, a.tensor_sums,
                                                u));
    }
  }
}

typedef struct gnmr_norms_plan {
  gnmr_norms__tensor *tensors; /* device, n_tensors */
  uint32_t *unit_first;        /* device, n_units + 1 */
  uint32_t *unit_tensors;      /* device, n_tensors */
  uint32_t *unit_need;         /* device, n_units */
  uint32_t *empty_units;       /* device, n_empty */
  double *chunk_sums;          /* device scratch, n_chunks */
  double *group_sums;          /* device scratch, n_groups */
  double *tensor_sums;         /* device scratch, n_tensors */
  /* device, n_groups + n_tensors + n_units tickets, 0 between launches */
  uint32_t *tickets;
  uint32_t n_tensors, n_units, n_empty;
  uint64_t n_chunks, n_groups;
  cudaError_t cuda_error; /* the failure behind GNMR_NORMS_ECUDA */
} gnmr_norms_plan;

static inline void gnmr_norms_plan_free(gnmr_norms_plan *plan) {
  if (!plan) return;
  /* cudaFree(NULL) does nothing */
  cudaFree(plan->tensors);
  cudaFree(plan->unit_first);
  cudaFree(plan->unit_tensors);
  cudaFree(plan->unit_need);
  cudaFree(plan->empty_units);
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

/* cudaMalloc of n elements of size (at least one: every pointer valid). */
static inline int gnmr_norms__alloc(gnmr_norms_plan *plan, void **p, size_t n,
                                    size_t size) {
  return gnmr_norms__cuda(plan, cudaMalloc(p, (n ? n : 1) * size));
}

/* A host array to the device (nothing for n == 0). */
static inline int gnmr_norms__put(gnmr_norms_plan *plan, void *dst,
                                  const void *src, size_t bytes) {
  if (bytes == 0) return GNMR_OK;
  return gnmr_norms__cuda(plan,
                          cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

/* tensors[i].data: device pointers. The plan keeps the pointers and sizes;
   re-init it when they change. Syncs the device. On failure the plan holds
   nothing (free is still safe). */
static inline int gnmr_norms_plan_init(gnmr_norms_plan *plan,
                                       const gnmr_tensor *tensors, size_t nt,
                                       uint32_t n_units) {
  const size_t nu = (size_t)n_units;
  gnmr_norms__tensor *t;
  uint32_t *first, *order, *need, *empty;
  uint64_t chunks, groups, n_tickets;
  int rc;
  if (!plan || n_units == UINT32_MAX) return GNMR_EINVAL;
  memset(plan, 0, sizeof *plan);
  t = (gnmr_norms__tensor *)malloc((nt ? nt : 1) * sizeof *t);
  first = (uint32_t *)malloc((nu + 1) * sizeof *first);
  order = (uint32_t *)malloc((nt ? nt : 1) * sizeof *order);
  need = (uint32_t *)malloc((nu ? nu : 1) * sizeof *need);
  empty = (uint32_t *)malloc((nu ? nu : 1) * sizeof *empty);
  rc = t && first && order && need && empty ? GNMR_OK : GNMR_ESIZE;
  if (rc == GNMR_OK)
    rc = gnmr_norms__layout(tensors, nt, n_units, t, first, order, &chunks,
                            &groups);
  if (rc == GNMR_OK) {
    plan->n_tensors = (uint32_t)nt;
    plan->n_units = n_units;
    plan->n_empty =
        gnmr_norms__unit_need(t, first, order, n_units, need, empty);
    plan->n_chunks = chunks;
    plan->n_groups = groups;
    n_tickets = groups + nt + nu;
    rc = gnmr_norms__alloc(plan, (void **)&plan->tensors, nt, sizeof *t);
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->unit_first, nu + 1,
                             sizeof *first);
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->unit_tensors, nt,
                             sizeof *order);
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->unit_need, nu, sizeof *need);
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->empty_units, plan->n_empty,
                             sizeof *empty);
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->chunk_sums, (size_t)chunks,
                             sizeof(double));
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->group_sums, (size_t)groups,
                             sizeof(double));
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->tensor_sums, nt,
                             sizeof(double));
    if (rc == GNMR_OK)
      rc = gnmr_norms__alloc(plan, (void **)&plan->tickets, (size_t)n_tickets,
                             sizeof(uint32_t));
    if (rc == GNMR_OK)
      rc = gnmr_norms__cuda(
          plan,
          cudaMemset(plan->tickets, 0,
                     (size_t)(n_tickets ? n_tickets : 1) * sizeof(uint32_t)));
    if (rc == GNMR_OK)
      rc = gnmr_norms__put(plan, plan->tensors, t, nt * sizeof *t);
    if (rc == GNMR_OK)
      rc = gnmr_norms__put(plan, plan->unit_first, first,
                           (nu + 1) * sizeof *first);
    if (rc == GNMR_OK)
      rc = gnmr_norms__put(plan, plan->unit_tensors, order, nt * sizeof *order);
    if (rc == GNMR_OK)
      rc = gnmr_norms__put(plan, plan->unit_need, need, nu * sizeof *need);
    if (rc == GNMR_OK)
      rc = gnmr_norms__put(plan, plan->empty_units, empty,
                           plan->n_empty * sizeof *empty);
    /* landed before any stream's kernel reads them (the copies and the
       memset above run on the legacy stream, and a pageable copy returns
       once staged) */
    if (rc == GNMR_OK) rc = gnmr_norms__cuda(plan, cudaDeviceSynchronize());
  }
  free(t);
  free(first);
  free(order);
  free(need);
  free(empty);
  if (rc != GNMR_OK) {
    cudaError_t err = plan->cuda_error;
    gnmr_norms_plan_free(plan);
    plan->cuda_error = err;
  }
  return rc;
}

/* Launches the kernel on stream: sumsq[u] and norms[u] (device memory,
   n_units each; either may be NULL) for every unit. One launch, no host
   sync: capturable in a CUDA graph, and a replay starts from the tickets
   the last launch left at 0. A launch error is returned (asynchronous
   faults surface at the caller's next synchronisation, as for any
   kernel). One enqueue per plan in flight: the plan's sums and tickets are
   its scratch, so two streams running one plan at once race (a plan per
   stream, or order the streams with an event). */
static inline int gnmr_norms_enqueue(gnmr_norms_plan *plan, double *sumsq,
                                     float *norms, cudaStream_t stream) {
  gnmr_norms__args a;
  if (!plan || (plan->n_units > 0 && !plan->unit_first)) return GNMR_EINVAL;
  if (plan->n_units == 0) return GNMR_OK;
  a.tensors = plan->tensors;
  a.unit_first = plan->unit_first;
  a.unit_tensors = plan->unit_tensors;
  a.unit_need = plan->unit_need;
  a.empty_units = plan->empty_units;
  a.chunk_sums = plan->chunk_sums;
  a.group_sums = plan->group_sums;
  a.tensor_sums = plan->tensor_sums;
  a.group_tickets = plan->tickets;
  a.tensor_tickets = plan->tickets + plan->n_groups;
  a.unit_tickets = a.tensor_tickets + plan->n_tensors;
  a.sumsq = sumsq;
  a.norms = norms;
  a.n_chunks = plan->n_chunks;
  a.n_tensors = plan->n_tensors;
  a.n_empty = plan->n_empty;
  /* a block for every 8 chunks; one at least, for the empty units */
  const uint64_t blocks =
      (plan->n_chunks + GNMR_NORMS_WARPS - 1) / GNMR_NORMS_WARPS;
  gnmr_norms__kernel<<<(unsigned)(blocks ? blocks : 1), GNMR_NORMS_THREADS, 0,
                       stream>>>(a);
  return gnmr_norms__cuda(plan, cudaGetLastError());
}

#endif /* __CUDACC__ */
#endif /* GNMR_NORMS_CUH */
