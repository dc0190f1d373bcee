/* gnmr_cuda.cu - GNMR inside a CUDA training step, with no host sync.

   What a custom CUDA trainer needs, in one file to read top to bottom:
     1. norm_tasks + norm_units: every unit's gradient norm, computed on the
        device from f32, bf16 and f16 tensors in one multi-tensor launch,
        following gnmr.h's canonical summation exactly (a warp per chunk of
        GNMR_SUM_CHUNK, lane = i mod 32, each lane in double in increasing i,
        shuffle-down fold 16, 8, 4, 2, 1, bottom-up pairwise chunk tree, the
        tensors of a unit added in tensor order). No atomics: the results are
        the CPU's bits, every run.
     2. controller_step: gnmr_step from gnmr.h itself, run by one device
        thread on a controller that lives in device memory; decisions go to
        device memory, where the next step's kernels read them.
     3. A host driver: synthetic gradients for hundreds of units (a few KiB
        to 256 MiB, mixed dtypes), spikes and NaN/Inf at known steps, S
        steps each launched as one CUDA graph (a graph cannot hold a host
        sync, so capturing the step proves it has none). At the end, every
        norm and every decision is checked against gnmr.h on the CPU, bit for
        bit; then the controller's device time for 1024 units, and the norm
        kernels' bandwidth beside a read probe and a device-to-device copy.

   Build and run (needs an NVIDIA GPU, sm_80 or sm_90):
       make cuda && ./build/gnmr_cuda
   Both sides are built with contraction off (nvcc --fmad=false, host
   -ffp-contract=off): a fused multiply-add would change the bits, and so
   would --use_fast_math (-ftz=true flushes subnormal inputs to zero).
   Without a CUDA device it says so and exits 0. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_cuda_index.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- checked calls (they say file and line) ---------------------------- */

static void cuda_check(cudaError_t err, const char *file, int line) {
  if (err != cudaSuccess) {
    fprintf(stderr, "%s:%d: CUDA error: %s\n", file, line,
            cudaGetErrorString(err));
    exit(1);
  }
}
#define cudaCheck(err) cuda_check((err), __FILE__, __LINE__)

static void *malloc_check(size_t size, const char *file, int line) {
  void *p = malloc(size ? size : 1);
  if (!p) {
    fprintf(stderr, "%s:%d: out of host memory (%zu bytes)\n", file, line,
            size);
    exit(1);
  }
  return p;
}
#define mallocCheck(size) malloc_check((size), __FILE__, __LINE__)

static void *device_copy(const void *host, size_t bytes) {
  void *d;
  cudaCheck(cudaMalloc(&d, bytes ? bytes : 1));
  cudaCheck(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

__host__ __device__ static size_t dtype_size(uint32_t dtype) {
  return dtype == GNMR_DTYPE_F32 ? 4 : 2;
}
static const char *dtype_name(uint32_t dtype) {
  return dtype == GNMR_DTYPE_F32    ? "f32"
         : dtype == GNMR_DTYPE_BF16 ? "bf16"
                                    : "f16";
}

/* ---- the norm kernels ---------------------------------------------------
   norm_tasks: block b runs task b (GC_WARPS consecutive chunks of one
   tensor), one warp per chunk, and writes the task's subtree of the chunk
   tree to partial[b]. norm_units: block u finishes the tree of each of its
   tensors over their tasks, adds the tensors in order, and writes the unit's
   sum of squares and norm. The arithmetic is gnmr_cuda_index.h, the same code
   tests/test_cuda_host.c runs on the CPU. */

__global__ void __launch_bounds__(GC_THREADS)
    norm_tasks(const gc_tensor *tensors, uint32_t n_tensors, double *partial) {
  __shared__ double chunk_sum[GC_WARPS];
  const uint64_t task = blockIdx.x;
  const gc_tensor x = tensors[gc_task_tensor(tensors, n_tensors, task)];
  const uint32_t warp = threadIdx.x / GNMR_SUM_LANES;
  const uint32_t lane = threadIdx.x % GNMR_SUM_LANES;
  const uint64_t first_chunk = (task - x.first_task) * GC_WARPS;
  uint64_t m = gc_chunks(x.n) - first_chunk; /* chunks in this task */
  if (m > GC_WARPS) m = GC_WARPS;

  if (warp < m) {
    const uint64_t start = (first_chunk + warp) * GNMR_SUM_CHUNK;
    const uint32_t len =
        (uint32_t)(x.n - start < GNMR_SUM_CHUNK ? x.n - start : GNMR_SUM_CHUNK);
    const char *chunk = (const char *)x.data + start * dtype_size(x.dtype);
    double acc;
    /* A constant dtype per call lets the compiler specialise each loop. */
    if (x.dtype == GNMR_DTYPE_F32)
      acc = gc_lane_sum(chunk, GNMR_DTYPE_F32, len, lane);
    else if (x.dtype == GNMR_DTYPE_BF16)
      acc = gc_lane_sum(chunk, GNMR_DTYPE_BF16, len, lane);
    else
      acc = gc_lane_sum(chunk, GNMR_DTYPE_F16, len, lane);
    for (uint32_t delta = GNMR_SUM_LANES / 2; delta >= 1; delta /= 2)
      acc += __shfl_down_sync(0xFFFFFFFFu, acc, delta);
    if (lane == 0) chunk_sum[warp] = acc;
  }
  __syncthreads();
  for (uint64_t stride = 1; stride < m; stride *= 2) {
    gc_tree_level(chunk_sum, m, stride, threadIdx.x, blockDim.x);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[task] = chunk_sum[0];
}

/* row: where in sumsq/norms this launch writes (a row of n_units per step),
   read on the device so that one captured graph serves every step; NULL
   means row 0. A tensor's task sums are treed in shared memory where they
   fit (a 256 MiB tensor of any dtype), in place in partial otherwise: the
   same additions either way, the shared copy only saves memory latency on
   each of the tree's levels. */
__global__ void norm_units(const gc_tensor *tensors, const gc_unit *units,
                           double *partial, double *sumsq, float *norms,
                           const uint32_t *row) {
  __shared__ double node[GC_UNIT_SHARED_TASKS];
  const uint32_t u = blockIdx.x;
  const size_t at = (size_t)(row ? *row : 0) * gridDim.x + u;
  double sum = 0.0;
  for (uint32_t i = 0; i < units[u].n_tensors; i++) {
    const gc_tensor x = tensors[units[u].first_tensor + i];
    const uint64_t m = gc_tasks(x.n);
    double *p = partial + x.first_task;
    if (m <= GC_UNIT_SHARED_TASKS) {
      for (uint64_t j = threadIdx.x; j < m; j += blockDim.x) node[j] = p[j];
      p = node;
      __syncthreads();
    }
    for (uint64_t stride = 1; stride < m; stride *= 2) {
      gc_tree_level(p, m, stride, threadIdx.x, blockDim.x);
      __syncthreads();
    }
    if (m > 0) sum += p[0];
    __syncthreads(); /* everyone has read p[0] before node is reused */
  }
  if (threadIdx.x == 0) {
    sumsq[at] = sum;
    norms[at] = (float)sqrt(sum);
  }
}

/* ---- the controller on the device --------------------------------------
   One thread runs gnmr.h's gnmr_step on the controller in device memory.
   The step counter lives on the device too: the captured graph is the same
   every step, and the host never has to tell the device where it is. */

__global__ void controller_step(gnmr_ctl *ctl, const float *norm_rows,
                                gnmr_decision *decision_rows, uint32_t *step,
                                int *status) {
  const uint32_t s = *step;
  const size_t row = (size_t)s * ctl->n_units;
  const int rc = gnmr_step(ctl, norm_rows + row, decision_rows + row);
  if (rc != GNMR_OK && *status == GNMR_OK) *status = rc;
  *step = s + 1;
}

/* The same, many steps in one launch: the controller's own device time. */
__global__ void controller_loop(gnmr_ctl *ctl, const float *norm_rows,
                                gnmr_decision *decision_rows, uint32_t steps,
                                int *status) {
  for (uint32_t s = 0; s < steps; s++) {
    const size_t row = (size_t)s * ctl->n_units;
    const int rc = gnmr_step(ctl, norm_rows + row, decision_rows + row);
    if (rc != GNMR_OK && *status == GNMR_OK) *status = rc;
  }
}

/* ---- the synthetic backward pass ---------------------------------------
   Unit u's gradient at step s is its base tensors times 2^e. Scaling by a
   power of two scales every square by 4^e and every partial sum with it,
   exactly, so the CPU can check all S steps from one pass over the base
   data (tests/test_cuda_host.c checks that claim on every dtype). */

#define N_UNITS 384
#define STEPS 48
#define BIG_MIB 256
/* Units whose first tensor is BIG_MIB MiB, one per dtype. */
static const struct {
  uint32_t unit, dtype;
} big_tensor[3] = {
    {101, GNMR_DTYPE_F32}, {202, GNMR_DTYPE_BF16}, {300, GNMR_DTYPE_F16}};

__host__ __device__ static uint32_t mix32(uint32_t a, uint32_t b) {
  uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  return h ^ (h >> 13);
}

/* The story of the run, at known steps. `recovering`: the unit runs the
   high-fidelity path this step (the decision of the step before). */
__host__ __device__ static uint32_t grad_exponent(uint32_t u, uint32_t step,
                                                  int recovering) {
  uint32_t e = mix32(u, step) & 1u; /* ordinary noise: norm x1 or x2 */
  if (step == 12 && u == 7) e += 5; /* a one-step spike */
  if (step == 16 && u >= 30 && u < 38) e += 4; /* 8 at once: over budget */
  if (step >= 22 && step < 34 && u == 50 && !recovering)
    e += 4; /* trouble on the low-cost path only: recovery cures it */
  if (step == 36 && u == 300) e += 4; /* a spike in a 256 MiB tensor */
  return e;
}

enum { POISON_NONE = 0, POISON_NAN = 1, POISON_INF = 2 };
/* A non-finite element in the middle of the unit's first tensor. */
__host__ __device__ static int poison(uint32_t u, uint32_t step) {
  if (step == 26 && u == 101) return POISON_NAN;
  if (step == 29 && u == 11) return POISON_INF;
  return POISON_NONE;
}

/* One block per task of the layout (the tasks of the norm kernels). */
__global__ void make_grads(const gc_tensor *base, const gc_tensor *grad,
                           uint32_t n_tensors, const gc_unit *units,
                           const gnmr_ctl *ctl, const uint32_t *step) {
  const uint64_t task = blockIdx.x;
  const uint32_t t = gc_task_tensor(base, n_tensors, task);
  const gc_tensor in = base[t];
  const uint32_t s = *step, u = in.unit;
  /* The trainer's read of last step's decision: on the device, no copy. */
  const int high_fidelity = gnmr_recovering(ctl, u) == 1;
  const float scale = (float)(1u << grad_exponent(u, s, high_fidelity));
  const int bad = t == units[u].first_tensor ? poison(u, s) : POISON_NONE;
  const uint64_t bad_at = bad ? in.n / 2 : UINT64_MAX;
  const uint64_t begin = (task - in.first_task) * GC_TASK_ELEMS;
  const uint64_t end =
      in.n - begin < GC_TASK_ELEMS ? in.n : begin + GC_TASK_ELEMS;
  const size_t size = dtype_size(in.dtype);
  void *out = (void *)grad[t].data;
  for (uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    /* Exact: a power-of-two multiple of a representable value. */
    const float v =
        gc_widen((const char *)in.data + i * size, 0, in.dtype) * scale;
    if (in.dtype == GNMR_DTYPE_F32) {
      ((float *)out)[i] =
          i == bad_at ? (bad == POISON_NAN ? NAN : INFINITY) : v;
    } else if (in.dtype == GNMR_DTYPE_BF16) {
      ((uint16_t *)out)[i] = i == bad_at
                                 ? (bad == POISON_NAN ? 0x7FC0u : 0x7F80u)
                                 : (uint16_t)(__float_as_uint(v) >> 16);
    } else {
      ((uint16_t *)out)[i] = i == bad_at
                                 ? (bad == POISON_NAN ? 0x7E00u : 0x7C00u)
                                 : __half_as_ushort(__float2half_rn(v));
    }
  }
}

/* ---- the bandwidth references ------------------------------------------ */

/* Reads every byte once, 16 at a time, and keeps nothing: what reading the
   buffer costs at best. The impossible store keeps the loads alive. */
__global__ void read_probe(const uint4 *p, size_t n16, uint32_t *sink) {
  uint32_t acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
#pragma unroll 4
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16;
       i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u && threadIdx.x == 0x3FF) *sink = acc;
}

/* Finite values over a wide range, subnormals included, from a hash of the
   index and a seed: every gradient of the run is made on the device. */
__device__ static uint16_t value_bits16(uint32_t dtype, uint32_t r) {
  if (dtype == GNMR_DTYPE_BF16) /* 2^-14 .. 2^2, sign, 1/256 subnormal */
    return (uint16_t)((r & 0x807Fu) |
                      ((r >> 24) == 0 ? 0 : (113 + (r >> 16) % 16) << 7));
  /* f16: exponent field 0 (subnormal) .. 20 (2^5) */
  return (uint16_t)((r & 0x83FFu) | ((r >> 16) % 21) << 10);
}
__device__ static float value_f32(uint32_t r, uint32_t r2) {
  const uint32_t exp = (r2 >> 24) == 0 ? 0 : 113 + (r2 >> 16) % 16;
  return __uint_as_float((r & 0x807FFFFFu) | exp << 23);
}

__global__ void fill_values(void *data, uint32_t dtype, uint64_t n,
                            uint32_t seed) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    const uint32_t r = mix32(seed, (uint32_t)i ^ (uint32_t)(i >> 32) * 31u);
    if (dtype == GNMR_DTYPE_F32)
      ((float *)data)[i] = value_f32(r, mix32(r, seed));
    else
      ((uint16_t *)data)[i] = value_bits16(dtype, r);
  }
}

/* ---- host side: the model ----------------------------------------------
   N_UNITS units of 1 to 3 tensors. Units 0-15 start with a tensor of an
   edge size (around a warp, a chunk of 4096, a task of 8 chunks, and trees
   with an odd node carried up, as in tests/test_cuda_host.c);
   big_tensor[] units start with a BIG_MIB MiB tensor; the rest are 4 KiB to 8
   MiB, log-uniform, odd element counts. dtype rotates over f32, bf16, f16. */

static const uint64_t edge_sizes[16] = {
    0,     1,     31,    32,    33,    4095,  4096,   4097,
    12305, 32767, 32768, 32769, 36869, 98304, 262145, 446764};

typedef struct model {
  uint32_t n_units, n_tensors;
  gc_tensor *tensors; /* data: offsets into the arenas, as pointers */
  gc_unit *units;
  uint64_t n_tasks;
  size_t bytes; /* arena size */
} model;

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static model model_build(void) {
  model m;
  uint64_t rng = 42, task = 0;
  size_t offset = 0;
  uint32_t u, j, t = 0;
  m.n_units = N_UNITS;
  m.n_tensors = 0;
  for (u = 0; u < N_UNITS; u++) m.n_tensors += 1 + u % 3;
  m.tensors = (gc_tensor *)mallocCheck(m.n_tensors * sizeof *m.tensors);
  m.units = (gc_unit *)mallocCheck(N_UNITS * sizeof *m.units);
  for (u = 0; u < N_UNITS; u++) {
    m.units[u].first_tensor = t;
    m.units[u].n_tensors = 1 + u % 3;
    for (j = 0; j < 1 + u % 3; j++, t++) {
      gc_tensor *x = &m.tensors[t];
      uint32_t dtype = (u + j) % 3 == 0   ? GNMR_DTYPE_F32
                       : (u + j) % 3 == 1 ? GNMR_DTYPE_BF16
                                          : GNMR_DTYPE_F16;
      uint64_t n = 0;
      int k, big = 0;
      for (k = 0; k < 3; k++)
        if (j == 0 && u == big_tensor[k].unit) {
          dtype = big_tensor[k].dtype;
          n = ((uint64_t)BIG_MIB << 20) / dtype_size(dtype);
          big = 1;
        }
      if (!big && j == 0 && u < 16) {
        n = edge_sizes[u];
      } else if (!big) {
        double r = (double)(splitmix(&rng) >> 11) / 9007199254740992.0;
        n = (uint64_t)(4096.0 * pow(2048.0, r)) / dtype_size(dtype) +
            splitmix(&rng) % 13;
      }
      x->data = (const void *)offset; /* an offset until placed */
      x->n = n;
      x->first_task = task;
      x->dtype = dtype;
      x->unit = u;
      task += gc_tasks(n);
      offset += (n * dtype_size(dtype) + 255) & ~(size_t)255;
    }
  }
  m.n_tasks = task;
  m.bytes = offset;
  return m;
}

/* The model's tensors with their data in an arena (host or device). With
   one_unit_each, tensor i is unit i alone: its own sum of squares. */
static gc_tensor *model_place(const model *m, const void *arena,
                              int one_unit_each) {
  gc_tensor *t = (gc_tensor *)mallocCheck(m->n_tensors * sizeof *t);
  uint32_t i;
  for (i = 0; i < m->n_tensors; i++) {
    t[i] = m->tensors[i];
    t[i].data = (const char *)arena + (size_t)m->tensors[i].data;
    if (one_unit_each) t[i].unit = i;
  }
  return t;
}

/* ---- host side: running the norm kernels -------------------------------- */

typedef struct norm_launch {
  const gc_tensor *tensors; /* device */
  const gc_unit *units;     /* device */
  uint32_t n_tensors, n_units;
  uint64_t n_tasks;
  double *partial, *sumsq; /* device */
  float *norms;            /* device */
} norm_launch;

static norm_launch norm_launch_make(const gc_tensor *host_tensors,
                                    uint32_t n_tensors,
                                    const gc_unit *host_units, uint32_t n_units,
                                    uint64_t n_tasks, uint32_t rows) {
  norm_launch l;
  l.tensors = (const gc_tensor *)device_copy(host_tensors,
                                             n_tensors * sizeof *host_tensors);
  l.units =
      (const gc_unit *)device_copy(host_units, n_units * sizeof *host_units);
  l.n_tensors = n_tensors;
  l.n_units = n_units;
  l.n_tasks = n_tasks;
  cudaCheck(cudaMalloc(&l.partial, (n_tasks ? n_tasks : 1) * sizeof(double)));
  cudaCheck(cudaMalloc(&l.sumsq, (size_t)rows * n_units * sizeof(double)));
  cudaCheck(cudaMalloc(&l.norms, (size_t)rows * n_units * sizeof(float)));
  return l;
}

static void norm_launch_free(norm_launch *l) {
  cudaCheck(cudaFree((void *)l->tensors));
  cudaCheck(cudaFree((void *)l->units));
  cudaCheck(cudaFree(l->partial));
  cudaCheck(cudaFree(l->sumsq));
  cudaCheck(cudaFree(l->norms));
}

static void norms_enqueue(const norm_launch *l, const uint32_t *row,
                          cudaStream_t stream) {
  if (l->n_tasks > 0)
    norm_tasks<<<(unsigned)l->n_tasks, GC_THREADS, 0, stream>>>(
        l->tensors, l->n_tensors, l->partial);
  cudaCheck(cudaGetLastError());
  norm_units<<<l->n_units, GC_THREADS, 0, stream>>>(
      l->tensors, l->units, l->partial, l->sumsq, l->norms, row);
  cudaCheck(cudaGetLastError());
}

/* ---- host side: comparing with the CPU ----------------------------------- */

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static double host_sumsq(const void *data, uint64_t n, uint32_t dtype) {
  if (dtype == GNMR_DTYPE_F32) return gnmr_sumsq_f32((const float *)data, n);
  if (dtype == GNMR_DTYPE_BF16)
    return gnmr_sumsq_bf16((const uint16_t *)data, n);
  return gnmr_sumsq_f16((const uint16_t *)data, n);
}

static int same_decision(const gnmr_decision *a, const gnmr_decision *b) {
  return a->action == b->action && a->flags == b->flags &&
         same_bits(a->ratio, b->ratio) && same_bits(a->delta, b->delta) &&
         same_bits(a->score, b->score) && same_bits(a->scale, b->scale);
}

static const char *action_name(int32_t action) {
  static const char *names[] = {"KEEP", "RECOVER", "HOLD", "RELEASE"};
  return action >= 0 && action < 4 ? names[action] : "?";
}

static void flags_text(uint32_t flags, char *buf, size_t cap) {
  static const char *names[] = {"ratio",       "delta",    "nonfinite",
                                "over-budget", "cooldown", "warmup",
                                "renewed"};
  size_t len = 0;
  int b;
  buf[0] = '\0';
  for (b = 0; b < 7; b++)
    if (flags & (1u << b))
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "," : "",
                              names[b]);
}

/* A controller in device memory, initialised by gnmr_init on the host (the
   zeroed units copied over, the units pointer redirected). */
static gnmr_ctl *device_controller(const gnmr_config *cfg, uint32_t n,
                                   gnmr_slot **units_out) {
  gnmr_slot *units = (gnmr_slot *)mallocCheck(n * sizeof *units);
  gnmr_ctl ctl;
  gnmr_ctl *d_ctl;
  int rc = gnmr_init(&ctl, cfg, units, n);
  if (rc != GNMR_OK) {
    fprintf(stderr, "gnmr_init: %s\n", gnmr_strerror(rc));
    exit(1);
  }
  ctl.units = (gnmr_slot *)device_copy(units, n * sizeof *units);
  d_ctl = (gnmr_ctl *)device_copy(&ctl, sizeof ctl);
  *units_out = ctl.units;
  free(units);
  return d_ctl;
}

/* The device controller's full state, as a checkpoint (the portable bytes
   compare equal iff the state does). */
static unsigned char *device_checkpoint(const gnmr_ctl *d_ctl, size_t *size) {
  gnmr_ctl ctl;
  unsigned char *buf;
  cudaCheck(cudaMemcpy(&ctl, d_ctl, sizeof ctl, cudaMemcpyDeviceToHost));
  gnmr_slot *units = (gnmr_slot *)mallocCheck(ctl.n_units * sizeof *units);
  cudaCheck(cudaMemcpy(units, ctl.units, ctl.n_units * sizeof *units,
                       cudaMemcpyDeviceToHost));
  ctl.units = units;
  *size = gnmr_checkpoint_size(&ctl);
  buf = (unsigned char *)mallocCheck(*size);
  if (gnmr_checkpoint_save(&ctl, buf, *size, size) != GNMR_OK) *size = 0;
  free(units);
  return buf;
}

static int same_state(const gnmr_ctl *d_ctl, const gnmr_ctl *host) {
  size_t a_size, b_size = gnmr_checkpoint_size(host);
  unsigned char *a = device_checkpoint(d_ctl, &a_size);
  unsigned char *b = (unsigned char *)mallocCheck(b_size);
  int same = gnmr_checkpoint_save(host, b, b_size, &b_size) == GNMR_OK &&
             a_size == b_size && memcmp(a, b, a_size) == 0;
  free(a);
  free(b);
  return same;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- 1. norms and decisions, S steps, against the CPU -------------------- */

static gnmr_config run_config(void) {
  gnmr_config cfg = gnmr_config_paper();
  cfg.max_recovering = 4;
  cfg.warmup_steps = 8;
  return cfg;
}

static int run_training(cudaStream_t stream) {
  model m = model_build();
  const uint32_t nt = m.n_tensors;
  int ok = 1;
  uint32_t i, u, s;

  /* The model, on both sides. */
  {
    size_t bytes[3] = {0, 0, 0}, lo = SIZE_MAX, hi = 0;
    uint32_t count[3] = {0, 0, 0};
    for (i = 0; i < nt; i++) {
      size_t b = m.tensors[i].n * dtype_size(m.tensors[i].dtype);
      count[m.tensors[i].dtype]++;
      bytes[m.tensors[i].dtype] += b;
      if (b > 0 && b < lo) lo = b;
      if (b > hi) hi = b;
    }
    printf("model: %u units, %u tensors (f32 %u, bf16 %u, f16 %u), %.2f GiB, "
           "tensors of %zu B to %zu MiB, %llu tasks\n",
           m.n_units, nt, count[GNMR_DTYPE_F32], count[GNMR_DTYPE_BF16],
           count[GNMR_DTYPE_F16],
           (double)(bytes[0] + bytes[1] + bytes[2]) / (1u << 30), lo, hi >> 20,
           (unsigned long long)m.n_tasks);
  }
  /* The base gradients: made on the device, copied to the host for the
     CPU reference. */
  char *h_base = (char *)mallocCheck(m.bytes);
  char *d_base, *d_grad;
  cudaCheck(cudaMalloc(&d_base, m.bytes));
  cudaCheck(cudaMalloc(&d_grad, m.bytes));
  for (i = 0; i < nt; i++)
    if (m.tensors[i].n > 0) {
      fill_values<<<256, 256, 0, stream>>>(d_base + (size_t)m.tensors[i].data,
                                           m.tensors[i].dtype, m.tensors[i].n,
                                           i + 1);
      cudaCheck(cudaGetLastError());
    }
  cudaCheck(
      cudaMemcpyAsync(h_base, d_base, m.bytes, cudaMemcpyDeviceToHost, stream));
  cudaCheck(cudaStreamSynchronize(stream));
  gc_tensor *h_tensors = model_place(&m, h_base, 0);
  gc_tensor *base_single = model_place(&m, d_base, 1);
  gc_tensor *base_tensors = model_place(&m, d_base, 0);
  gc_tensor *grad_tensors = model_place(&m, d_grad, 0);
  gc_unit *singles = (gc_unit *)mallocCheck(nt * sizeof *singles);
  for (i = 0; i < nt; i++) {
    singles[i].first_tensor = i;
    singles[i].n_tensors = 1;
  }

  /* Every tensor's sum of squares against gnmr_sumsq_*, by dtype. */
  double *base_sumsq = (double *)mallocCheck(nt * sizeof(double));
  double *dev_sumsq = (double *)mallocCheck(nt * sizeof(double));
  {
    norm_launch l =
        norm_launch_make(base_single, nt, singles, nt, m.n_tasks, 1);
    uint32_t same[3] = {0, 0, 0}, count[3] = {0, 0, 0};
    double t0;
    norms_enqueue(&l, NULL, stream);
    cudaCheck(cudaMemcpyAsync(dev_sumsq, l.sumsq, nt * sizeof(double),
                              cudaMemcpyDeviceToHost, stream));
    t0 = now_s();
    for (i = 0; i < nt; i++)
      base_sumsq[i] =
          host_sumsq(h_tensors[i].data, h_tensors[i].n, h_tensors[i].dtype);
    printf("CPU reference sums: %.2f s\n", now_s() - t0);
    cudaCheck(cudaStreamSynchronize(stream));
    for (i = 0; i < nt; i++) {
      count[m.tensors[i].dtype]++;
      same[m.tensors[i].dtype] += same_bits(dev_sumsq[i], base_sumsq[i]);
    }
    printf("per-tensor sum of squares vs gnmr_sumsq_*, bit for bit: "
           "f32 %u/%u, bf16 %u/%u, f16 %u/%u\n",
           same[GNMR_DTYPE_F32], count[GNMR_DTYPE_F32], same[GNMR_DTYPE_BF16],
           count[GNMR_DTYPE_BF16], same[GNMR_DTYPE_F16], count[GNMR_DTYPE_F16]);
    ok &= same[0] + same[1] + same[2] == nt;
    norm_launch_free(&l);
  }

  /* Unit norms (tensors added in order) against gnmr_unit_norms. */
  norm_launch base =
      norm_launch_make(base_tensors, nt, m.units, m.n_units, m.n_tasks, 1);
  {
    gnmr_tensor *lib = (gnmr_tensor *)mallocCheck(nt * sizeof *lib);
    float dev[N_UNITS], ref[N_UNITS];
    uint32_t same = 0;
    norms_enqueue(&base, NULL, stream);
    cudaCheck(cudaMemcpyAsync(dev, base.norms, sizeof dev,
                              cudaMemcpyDeviceToHost, stream));
    for (i = 0; i < nt; i++) {
      lib[i].data = h_tensors[i].data;
      lib[i].n = h_tensors[i].n;
      lib[i].dtype = (int)h_tensors[i].dtype;
      lib[i].unit = h_tensors[i].unit;
    }
    if (gnmr_unit_norms(lib, nt, ref, N_UNITS) != GNMR_OK) {
      fprintf(stderr, "gnmr_unit_norms refused the model\n");
      exit(1);
    }
    cudaCheck(cudaStreamSynchronize(stream));
    for (u = 0; u < N_UNITS; u++) same += same_bits(dev[u], ref[u]);
    printf("unit norms vs gnmr_unit_norms, bit for bit: %u/%u\n", same,
           N_UNITS);
    ok &= same == N_UNITS;
    free(lib);
  }

  /* The training loop: one graph per step, nothing between them. */
  const gnmr_config cfg = run_config();
  norm_launch grads =
      norm_launch_make(grad_tensors, nt, m.units, m.n_units, m.n_tasks, STEPS);
  gnmr_slot *d_units;
  gnmr_ctl *d_ctl = device_controller(&cfg, N_UNITS, &d_units);
  gnmr_decision *d_decisions;
  uint32_t *d_step;
  int *d_status, status;
  cudaCheck(cudaMalloc(&d_decisions,
                       (size_t)STEPS * N_UNITS * sizeof(gnmr_decision)));
  cudaCheck(cudaMalloc(&d_step, sizeof *d_step));
  cudaCheck(cudaMalloc(&d_status, sizeof *d_status));
  cudaCheck(cudaMemset(d_step, 0, sizeof *d_step));
  cudaCheck(cudaMemset(d_status, 0, sizeof *d_status));

  cudaGraph_t graph;
  cudaGraphExec_t step_graph;
  cudaCheck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  make_grads<<<(unsigned)m.n_tasks, 256, 0, stream>>>(
      base.tensors, grads.tensors, nt, grads.units, d_ctl, d_step);
  cudaCheck(cudaGetLastError());
  norms_enqueue(&grads, d_step, stream);
  controller_step<<<1, 1, 0, stream>>>(d_ctl, grads.norms, d_decisions, d_step,
                                       d_status);
  cudaCheck(cudaGetLastError());
  cudaCheck(cudaStreamEndCapture(stream, &graph));
  cudaCheck(cudaGraphInstantiate(&step_graph, graph, 0));
  cudaCheck(cudaGraphUpload(step_graph, stream)); /* not in the timing */

  cudaEvent_t start, stop;
  float ms;
  cudaCheck(cudaEventCreate(&start));
  cudaCheck(cudaEventCreate(&stop));
  cudaCheck(cudaEventRecord(start, stream));
  for (s = 0; s < STEPS; s++) cudaCheck(cudaGraphLaunch(step_graph, stream));
  cudaCheck(cudaEventRecord(stop, stream));
  cudaCheck(cudaEventSynchronize(stop));
  cudaCheck(cudaEventElapsedTime(&ms, start, stop));
  printf("training loop: %u steps, one CUDA graph each (make grads, norms, "
         "controller), %.3f ms/step, no host sync inside\n",
         STEPS, ms / STEPS);

  float *dev_norms = (float *)mallocCheck((size_t)STEPS * N_UNITS * 4);
  gnmr_decision *dev_dec = (gnmr_decision *)mallocCheck(
      (size_t)STEPS * N_UNITS * sizeof(gnmr_decision));
  cudaCheck(cudaMemcpy(dev_norms, grads.norms, (size_t)STEPS * N_UNITS * 4,
                       cudaMemcpyDeviceToHost));
  cudaCheck(cudaMemcpy(dev_dec, d_decisions,
                       (size_t)STEPS * N_UNITS * sizeof(gnmr_decision),
                       cudaMemcpyDeviceToHost));
  cudaCheck(
      cudaMemcpy(&status, d_status, sizeof status, cudaMemcpyDeviceToHost));
  if (status != GNMR_OK) {
    printf("device gnmr_step failed: %s\n", gnmr_strerror(status));
    ok = 0;
  }

  /* The same S steps on the CPU: the norms from the base sums (scaled by
     4^e, exact), the decisions from gnmr_step. */
  {
    gnmr_slot ref_units[N_UNITS];
    gnmr_ctl ref;
    uint32_t norm_diff = 0, decision_diff = 0, shown = 0;
    gnmr_counters c;
    gnmr_init(&ref, &cfg, ref_units, N_UNITS);
    printf("events (device decisions; HOLD steps not shown):\n");
    for (s = 0; s < STEPS; s++) {
      float norms[N_UNITS];
      gnmr_decision d[N_UNITS];
      const float *dn = dev_norms + (size_t)s * N_UNITS;
      const gnmr_decision *dd = dev_dec + (size_t)s * N_UNITS;
      for (u = 0; u < N_UNITS; u++) {
        const uint32_t e = grad_exponent(u, s, gnmr_recovering(&ref, u) == 1);
        const int bad = poison(u, s);
        double sum = 0.0;
        for (i = 0; i < m.units[u].n_tensors; i++) {
          const uint32_t t = m.units[u].first_tensor + i;
          if (bad && i == 0)
            sum += bad == POISON_NAN ? (double)NAN : (double)INFINITY;
          else
            sum += ldexp(base_sumsq[t], 2 * (int)e);
        }
        norms[u] = (float)sqrt(sum);
      }
      gnmr_step(&ref, norms, d);
      for (u = 0; u < N_UNITS; u++) {
        char flags[96];
        if (!same_bits(dn[u], norms[u])) {
          if (norm_diff++ < 5)
            printf("  NORM MISMATCH step %u unit %u: device %.9g, CPU %.9g\n",
                   s, u, dn[u], norms[u]);
        }
        if (!same_decision(&dd[u], &d[u])) {
          if (decision_diff++ < 5)
            printf("  DECISION MISMATCH step %u unit %u: device %s, CPU %s\n",
                   s, u, action_name(dd[u].action), action_name(d[u].action));
        }
        if (dd[u].action == GNMR_ACTION_HOLD &&
            !(dd[u].flags & GNMR_FLAG_RENEWED))
          continue;
        if (dd[u].action == GNMR_ACTION_KEEP &&
            !(dd[u].flags & ~(uint32_t)GNMR_FLAG_WARMUP))
          continue;
        flags_text(dd[u].flags, flags, sizeof flags);
        if (shown++ < 60)
          printf("  step %2u unit %3u: %-7s gnmr %8.3f scale %.4f  %s\n", s, u,
                 action_name(dd[u].action), dd[u].ratio, dd[u].scale, flags);
      }
    }
    if (shown > 60) printf("  ... %u more\n", shown - 60);
    gnmr_counters_get(&ref, GNMR_ALL_UNITS, &c);
    printf("controller totals: %llu risky, %llu non-finite, %llu admissions, "
           "%llu over budget, peak %u in recovery\n",
           (unsigned long long)c.risky, (unsigned long long)c.nonfinite,
           (unsigned long long)c.admissions, (unsigned long long)c.over_budget,
           c.peak_recovering);
    const int state_same = same_state(d_ctl, &ref);
    printf("device vs CPU over %u steps x %u units: norms %s (%u differ), "
           "decisions %s (%u differ), final state %s\n",
           STEPS, N_UNITS, norm_diff ? "DIFFER" : "bit-identical", norm_diff,
           decision_diff ? "DIFFER" : "bit-identical", decision_diff,
           state_same ? "identical" : "DIFFERS");
    ok &= norm_diff == 0 && decision_diff == 0 && state_same;
  }

  cudaCheck(cudaGraphExecDestroy(step_graph));
  cudaCheck(cudaGraphDestroy(graph));
  cudaCheck(cudaEventDestroy(start));
  cudaCheck(cudaEventDestroy(stop));
  norm_launch_free(&base);
  norm_launch_free(&grads);
  cudaCheck(cudaFree(d_units));
  cudaCheck(cudaFree(d_ctl));
  cudaCheck(cudaFree(d_decisions));
  cudaCheck(cudaFree(d_step));
  cudaCheck(cudaFree(d_status));
  cudaCheck(cudaFree(d_base));
  cudaCheck(cudaFree(d_grad));
  free(h_base);
  free(h_tensors);
  free(base_single);
  free(base_tensors);
  free(grad_tensors);
  free(singles);
  free(base_sumsq);
  free(dev_sumsq);
  free(dev_norms);
  free(dev_dec);
  free(m.tensors);
  free(m.units);
  return ok;
}

/* ---- 2. the controller's device time, 1024 units -------------------------
   Steps 0..99 in one launch (the controller's own time), steps 100..199 one
   launch each (what a trainer's step pays, launch included); all 200 are
   checked against the CPU. */

#define TIMING_UNITS 1024
#define TIMING_STEPS 200

static float median(float *x, int n) {
  int i, j;
  for (i = 1; i < n; i++) /* insertion sort: n is small */
    for (j = i; j > 0 && x[j] < x[j - 1]; j--) {
      float t = x[j];
      x[j] = x[j - 1];
      x[j - 1] = t;
    }
  return x[n / 2];
}

static int run_controller_timing(cudaStream_t stream) {
  gnmr_config cfg = gnmr_config_paper();
  const size_t cells = (size_t)TIMING_STEPS * TIMING_UNITS;
  float *norms = (float *)mallocCheck(cells * sizeof *norms);
  gnmr_decision *dev = (gnmr_decision *)mallocCheck(cells * sizeof *dev);
  gnmr_decision *ref = (gnmr_decision *)mallocCheck(cells * sizeof *ref);
  gnmr_slot *units = (gnmr_slot *)mallocCheck(TIMING_UNITS * sizeof *units);
  uint64_t rng = 1;
  size_t k;
  uint32_t s, same = 0;
  int status, ok = 1, r;
  cfg.max_recovering = 16;
  for (k = 0; k < cells; k++) {
    const uint64_t x = splitmix(&rng);
    norms[k] = 1.0f + (float)(x >> 40) * 0x1p-26f; /* 1 .. 1.25 */
    if (k >= 20 * TIMING_UNITS && x % 400 == 0) norms[k] *= 20.0f; /* spike */
    if (k >= 20 * TIMING_UNITS && x % 5000 == 1) norms[k] = NAN;
  }

  gnmr_slot *d_units;
  gnmr_ctl *d_ctl = device_controller(&cfg, TIMING_UNITS, &d_units);
  float *d_norms = (float *)device_copy(norms, cells * sizeof *norms);
  gnmr_decision *d_dec;
  uint32_t *d_step;
  int *d_status;
  const uint32_t half = TIMING_STEPS / 2;
  cudaCheck(cudaMalloc(&d_dec, cells * sizeof *d_dec));
  cudaCheck(cudaMalloc(&d_step, sizeof *d_step));
  cudaCheck(cudaMalloc(&d_status, sizeof *d_status));
  cudaCheck(cudaMemcpy(d_step, &half, sizeof half, cudaMemcpyHostToDevice));
  cudaCheck(cudaMemset(d_status, 0, sizeof *d_status));

  cudaEvent_t ev[2];
  float loop_ms, one_ms[TIMING_STEPS / 2];
  cudaCheck(cudaEventCreate(&ev[0]));
  cudaCheck(cudaEventCreate(&ev[1]));
  /* Both kernels once on this throwaway controller: module loading stays
     out of the timing. Then a fresh one, and the step counter back. */
  controller_loop<<<1, 1, 0, stream>>>(d_ctl, d_norms, d_dec, 1, d_status);
  controller_step<<<1, 1, 0, stream>>>(d_ctl, d_norms, d_dec, d_step, d_status);
  cudaCheck(cudaStreamSynchronize(stream));
  cudaCheck(cudaFree(d_units));
  cudaCheck(cudaFree(d_ctl));
  d_ctl = device_controller(&cfg, TIMING_UNITS, &d_units);
  cudaCheck(cudaMemcpy(d_step, &half, sizeof half, cudaMemcpyHostToDevice));

  cudaCheck(cudaEventRecord(ev[0], stream));
  controller_loop<<<1, 1, 0, stream>>>(d_ctl, d_norms, d_dec, half, d_status);
  cudaCheck(cudaEventRecord(ev[1], stream));
  cudaCheck(cudaEventSynchronize(ev[1]));
  cudaCheck(cudaGetLastError());
  cudaCheck(cudaEventElapsedTime(&loop_ms, ev[0], ev[1]));
  for (r = 0; r < (int)half; r++) {
    cudaCheck(cudaEventRecord(ev[0], stream));
    controller_step<<<1, 1, 0, stream>>>(d_ctl, d_norms, d_dec, d_step,
                                         d_status);
    cudaCheck(cudaEventRecord(ev[1], stream));
    cudaCheck(cudaEventSynchronize(ev[1]));
    cudaCheck(cudaEventElapsedTime(&one_ms[r], ev[0], ev[1]));
  }
  cudaCheck(
      cudaMemcpy(dev, d_dec, cells * sizeof *dev, cudaMemcpyDeviceToHost));
  cudaCheck(
      cudaMemcpy(&status, d_status, sizeof status, cudaMemcpyDeviceToHost));

  gnmr_ctl host;
  double t0 = now_s(), cpu_s;
  gnmr_init(&host, &cfg, units, TIMING_UNITS);
  for (s = 0; s < TIMING_STEPS; s++)
    gnmr_step(&host, norms + (size_t)s * TIMING_UNITS,
              ref + (size_t)s * TIMING_UNITS);
  cpu_s = now_s() - t0;
  for (k = 0; k < cells; k++) same += same_decision(&dev[k], &ref[k]);
  const int state_same = same_state(d_ctl, &host);
  printf("controller step, %u units, one device thread: %.1f us/step in one "
         "launch, %.1f us as its own launch (median); CPU %.1f us/step\n",
         TIMING_UNITS, 1000.0 * loop_ms / half, 1000.0 * median(one_ms, half),
         1e6 * cpu_s / TIMING_STEPS);
  printf("  decisions vs CPU: %u/%zu bit-identical, final state %s%s\n", same,
         cells, state_same ? "identical" : "DIFFERS",
         status == GNMR_OK ? "" : ", device gnmr_step FAILED");
  ok = same == cells && state_same && status == GNMR_OK;

  cudaCheck(cudaEventDestroy(ev[0]));
  cudaCheck(cudaEventDestroy(ev[1]));
  cudaCheck(cudaFree(d_units));
  cudaCheck(cudaFree(d_ctl));
  cudaCheck(cudaFree(d_norms));
  cudaCheck(cudaFree(d_dec));
  cudaCheck(cudaFree(d_step));
  cudaCheck(cudaFree(d_status));
  free(norms);
  free(dev);
  free(ref);
  free(units);
  return ok;
}

/* ---- 3. bandwidth: the norm kernels beside a read probe and a copy ------ */

enum { JOB_NORMS, JOB_PROBE, JOB_COPY };
typedef struct bench_job {
  int kind;
  const norm_launch *norms;
  const void *src;
  void *dst;
  size_t bytes;
  uint32_t *sink;
  int probe_blocks;
} bench_job;

static void bench_enqueue(const bench_job *j, cudaStream_t stream) {
  if (j->kind == JOB_NORMS) {
    norms_enqueue(j->norms, NULL, stream);
  } else if (j->kind == JOB_PROBE) {
    read_probe<<<j->probe_blocks, 256, 0, stream>>>((const uint4 *)j->src,
                                                    j->bytes / 16, j->sink);
    cudaCheck(cudaGetLastError());
  } else {
    cudaCheck(cudaMemcpyAsync(j->dst, j->src, j->bytes,
                              cudaMemcpyDeviceToDevice, stream));
  }
}

#define BENCH_REPS 15
static float bench_median_ms(const bench_job *j, cudaStream_t stream,
                             cudaEvent_t a, cudaEvent_t b) {
  float t[BENCH_REPS];
  int r;
  bench_enqueue(j, stream); /* warm-up */
  bench_enqueue(j, stream);
  for (r = 0; r < BENCH_REPS; r++) {
    cudaCheck(cudaEventRecord(a, stream));
    bench_enqueue(j, stream);
    cudaCheck(cudaEventRecord(b, stream));
    cudaCheck(cudaEventSynchronize(b));
    cudaCheck(cudaEventElapsedTime(&t[r], a, b));
  }
  return median(t, BENCH_REPS);
}

static int run_bandwidth(cudaStream_t stream, int sm_count) {
  static const size_t sizes[] = {64u << 10, 1u << 20, 16u << 20, 256u << 20,
                                 1u << 30};
  const int n_sizes = (int)(sizeof sizes / sizeof sizes[0]);
  size_t max_bytes = sizes[n_sizes - 1], free_b, total_b;
  uint32_t dtypes[3] = {GNMR_DTYPE_F32, GNMR_DTYPE_BF16, GNMR_DTYPE_F16},
           *d_sink;
  int probe_blocks, ok = 1, d, z, big_ok = 1;
  double worst_big = 1e9;
  cudaCheck(cudaMemGetInfo(&free_b, &total_b));
  int sizes_run = n_sizes;
  while (sizes_run > 1 && 2 * sizes[sizes_run - 1] + (256u << 20) > free_b)
    sizes_run--; /* two buffers must fit */
  max_bytes = sizes[sizes_run - 1];
  char *d_buf, *d_dst, *h_buf = (char *)mallocCheck(max_bytes);
  cudaCheck(cudaMalloc(&d_buf, max_bytes));
  cudaCheck(cudaMalloc(&d_dst, max_bytes));
  cudaCheck(cudaMalloc(&d_sink, sizeof *d_sink));
  cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&probe_blocks,
                                                          read_probe, 256, 0));
  probe_blocks *= sm_count;
  cudaEvent_t a, b;
  cudaCheck(cudaEventCreate(&a));
  cudaCheck(cudaEventCreate(&b));

  printf("bandwidth (GB/s = 1e9 B/s, median of %d; copy counts read + "
         "write):\n",
         BENCH_REPS);
  printf("  dtype      size   norms GB/s   read probe   norms/probe   copy "
         "GB/s   bits vs CPU\n");
  for (d = 0; d < 3; d++) {
    const uint32_t dtype = dtypes[d];
    fill_values<<<sm_count * 8, 256, 0, stream>>>(
        d_buf, dtype, max_bytes / dtype_size(dtype), 1234u + dtype);
    cudaCheck(cudaGetLastError());
    cudaCheck(cudaMemcpyAsync(h_buf, d_buf, max_bytes, cudaMemcpyDeviceToHost,
                              stream));
    cudaCheck(cudaStreamSynchronize(stream));
    for (z = 0; z < sizes_run; z++) {
      const size_t bytes = sizes[z];
      gc_tensor t;
      gc_unit one = {0, 1};
      double dev_sumsq;
      t.data = d_buf;
      t.n = bytes / dtype_size(dtype);
      t.first_task = 0;
      t.dtype = dtype;
      t.unit = 0;
      norm_launch l = norm_launch_make(&t, 1, &one, 1, gc_tasks(t.n), 1);
      bench_job job = {JOB_NORMS, &l,     d_buf,       d_dst,
                       bytes,     d_sink, probe_blocks};
      const float norm_ms = bench_median_ms(&job, stream, a, b);
      cudaCheck(cudaMemcpy(&dev_sumsq, l.sumsq, sizeof dev_sumsq,
                           cudaMemcpyDeviceToHost));
      job.kind = JOB_PROBE;
      const float probe_ms = bench_median_ms(&job, stream, a, b);
      job.kind = JOB_COPY;
      const float copy_ms = bench_median_ms(&job, stream, a, b);
      const int same = same_bits(dev_sumsq, host_sumsq(h_buf, t.n, dtype));
      const double norm_gbs = (double)bytes / (norm_ms * 1e6);
      const double probe_gbs = (double)bytes / (probe_ms * 1e6);
      const double ratio = norm_gbs / probe_gbs;
      printf("  %-5s %6zu %s %12.1f %12.1f %12.1f%% %11.1f   %s\n",
             dtype_name(dtype), bytes >= (1u << 20) ? bytes >> 20 : bytes >> 10,
             bytes >= (1u << 20) ? "MiB" : "KiB", norm_gbs, probe_gbs,
             100.0 * ratio, 2.0 * (double)bytes / (copy_ms * 1e6),
             same ? "identical" : "DIFFER");
      ok &= same;
      if (bytes >= (256u << 20)) {
        if (ratio < worst_big) worst_big = ratio;
        big_ok &= ratio >= 0.85;
      }
      norm_launch_free(&l);
    }
  }
  if (worst_big < 1e9)
    printf("norms at >= 256 MiB: worst %.1f%% of the read probe (target "
           "85%%): %s\n",
           100.0 * worst_big, big_ok ? "met" : "NOT MET");
  cudaCheck(cudaEventDestroy(a));
  cudaCheck(cudaEventDestroy(b));
  cudaCheck(cudaFree(d_buf));
  cudaCheck(cudaFree(d_dst));
  cudaCheck(cudaFree(d_sink));
  free(h_buf);
  return ok;
}

/* ---- main ------------------------------------------------------------- */

int main(void) {
  int count = 0, device, driver = 0, runtime = 0, mem_khz = 0, bus_bits = 0;
  int ok = 1;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    printf("no CUDA device, skipping (%s)\n",
           err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 0;
  }
  cudaDeviceProp prop;
  cudaCheck(cudaGetDevice(&device));
  cudaCheck(cudaGetDeviceProperties(&prop, device));
  cudaCheck(cudaDriverGetVersion(&driver));
  cudaCheck(cudaRuntimeGetVersion(&runtime));
  cudaCheck(
      cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  cudaCheck(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth,
                                   device));
  printf("gnmr_cuda: gnmr.h %s on %s (sm_%d%d, %d SMs, %.0f GiB, peak %.0f "
         "GB/s from clocks), CUDA driver %d.%d, runtime %d.%d\n",
         gnmr_version(), prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, (double)prop.totalGlobalMem / (1u << 30),
         2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9, driver / 1000,
         driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);

  cudaStream_t stream;
  cudaCheck(cudaStreamCreate(&stream));
  ok &= run_training(stream);
  ok &= run_controller_timing(stream);
  ok &= run_bandwidth(stream, prop.multiProcessorCount);
  cudaCheck(cudaStreamDestroy(stream));
  printf("gnmr_cuda: %s\n",
         ok ? "PASS (device bits = CPU bits everywhere)" : "FAIL");
  return ok ? 0 : 1;
}
