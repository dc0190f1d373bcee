/* test_device.cu - GNMR's device side against the CPU, bit for bit.

   1. Norms (examples/cuda/gnmr_norms.cuh): every tensor's sum of squares
      against gnmr_sumsq_*, unit sums and norms against gnmr_unit_sumsq and
      gnmr_unit_norms, for a model of hundreds of units (a few KiB to 256
      MiB, mixed dtypes), with the units in tensor order, in any order, as
      thousands of small tensors, and with one tensor of over 2^28 elements
      (its tree in global memory).
   2. A training loop: synthetic gradients with spikes and NaN/Inf at known
      steps, S steps each launched as one CUDA graph (make gradients, norms,
      controller step; a graph cannot hold a host sync, so capturing the
      step proves it has none). Every norm and every decision is checked
      against gnmr.h on the CPU. The controller here is gnmr_step run by one
      device thread (the checks stay until the parallel controller's own
      tests replace them).
   3. The controller's decisions over 200 steps of 1024 units, and its
      device time.

   Build and run (needs an NVIDIA GPU, sm_80 or sm_90):
       make cuda-test
   Both sides are built with contraction off (nvcc --fmad=false, host
   -ffp-contract=off): a fused multiply-add would change the bits, and so
   would --use_fast_math (-ftz=true flushes subnormal inputs to zero).
   Without a CUDA device it says so and exits 0. The bandwidth benchmark is
   bench/bench_norms_cuda.cu. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "examples/cuda/gnmr_norms.cuh"
#include "tests/cuda/regions.h"
#include "tests/cuda/no_device.h"

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

/* ---- the norms of a step, kept per step ------------------------------
   The norm plan writes one row of n_units; this copies it to row *step of
   the run's record, read on the device so that one captured graph serves
   every step. */

__global__ void store_row(const float *norms, uint32_t n_units, float *rows,
                          const uint32_t *step) {
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u < n_units) rows[(size_t)*step * n_units + u] = norms[u];
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
/* Units whose first tensor is big_mib MiB, one per dtype: 256, 16 under
   --small (the sanitizer runs of make gpu-check: racecheck watches every
   shared-memory access, and the norms' 16-bit loads all pass through
   shared memory). */
static uint32_t big_mib = 256;
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

/* One block per chunk of the norm layout. first_tensor[u]: unit u's first
   tensor (the model's units hold consecutive tensors). */
__global__ void make_grads(const gnmr_norms__tensor *base,
                           const gnmr_norms__tensor *grad, uint32_t n_tensors,
                           const uint32_t *first_tensor, const gnmr_ctl *ctl,
                           const uint32_t *step) {
  const uint64_t chunk = blockIdx.x;
  const uint32_t t = gnmr_norms__chunk_tensor(base, n_tensors, chunk);
  const gnmr_norms__tensor in = base[t];
  const uint32_t s = *step, u = in.unit;
  /* The trainer's read of last step's decision: on the device, no copy. */
  const int high_fidelity = gnmr_recovering(ctl, u) == 1;
  const float scale = (float)(1u << grad_exponent(u, s, high_fidelity));
  const int bad = t == first_tensor[u] ? poison(u, s) : POISON_NONE;
  const uint64_t bad_at = bad ? in.n / 2 : UINT64_MAX;
  const uint64_t begin = (chunk - in.first_chunk) * GNMR_SUM_CHUNK;
  const uint64_t end =
      in.n - begin < GNMR_SUM_CHUNK ? in.n : begin + GNMR_SUM_CHUNK;
  const size_t size = dtype_size(in.dtype);
  void *out = (void *)grad[t].data;
  for (uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    /* Exact: a power-of-two multiple of a representable value. */
    const float v =
        gnmr_norms__widen((const char *)in.data + i * size, 0, in.dtype) *
        scale;
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

/* ---- test data ---------------------------------------------------------- */

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

/* fill_values on blocks x 256 threads, after checking that data is aligned
   for the dtype (a misaligned write fails the test at the caller's line). */
static void fill_checked(void *data, uint32_t dtype, uint64_t n, uint32_t seed,
                         unsigned blocks, cudaStream_t stream, const char *file,
                         int line) {
  region_check(data, dtype_size(dtype), file, line);
  fill_values<<<blocks, 256, 0, stream>>>(data, dtype, n, seed);
  cuda_check(cudaGetLastError(), file, line);
}
#define fillValues(data, dtype, n, seed, blocks, stream)                       \
  fill_checked((data), (dtype), (n), (seed), (blocks), (stream), __FILE__,     \
               __LINE__)

/* ---- host side: the model ----------------------------------------------
   N_UNITS units of 1 to 3 tensors. Units 0-15 start with a tensor of an
   edge size (around a warp, a chunk of 4096, a task of 8 chunks, and trees
   with an odd node carried up, as in tests/test_cuda_host.c);
   big_tensor[] units start with a big_mib MiB tensor; the rest are 4 KiB to 8
   MiB, log-uniform, odd element counts. dtype rotates over f32, bf16, f16. */

static const uint64_t edge_sizes[16] = {
    0,     1,     31,    32,    33,    4095,  4096,   4097,
    12305, 32767, 32768, 32769, 36869, 98304, 262145, 446764};

typedef struct model_unit {
  uint32_t first_tensor, n_tensors;
} model_unit;

typedef struct model {
  uint32_t n_units, n_tensors;
  gnmr_tensor *tensors; /* data: offsets into the arenas, as pointers */
  model_unit *units;
  uint64_t n_chunks;
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
  uint64_t rng = 42, chunks = 0;
  size_t offset = 0;
  uint32_t u, j, t = 0;
  m.n_units = N_UNITS;
  m.n_tensors = 0;
  for (u = 0; u < N_UNITS; u++) m.n_tensors += 1 + u % 3;
  m.tensors = (gnmr_tensor *)mallocCheck(m.n_tensors * sizeof *m.tensors);
  m.units = (model_unit *)mallocCheck(N_UNITS * sizeof *m.units);
  for (u = 0; u < N_UNITS; u++) {
    m.units[u].first_tensor = t;
    m.units[u].n_tensors = 1 + u % 3;
    for (j = 0; j < 1 + u % 3; j++, t++) {
      gnmr_tensor *x = &m.tensors[t];
      uint32_t dtype = (u + j) % 3 == 0   ? GNMR_DTYPE_F32
                       : (u + j) % 3 == 1 ? GNMR_DTYPE_BF16
                                          : GNMR_DTYPE_F16;
      uint64_t n = 0;
      int k, big = 0;
      for (k = 0; k < 3; k++)
        if (j == 0 && u == big_tensor[k].unit) {
          dtype = big_tensor[k].dtype;
          n = ((uint64_t)big_mib << 20) / dtype_size(dtype);
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
      x->n = (size_t)n;
      x->dtype = (int)dtype;
      x->unit = u;
      chunks += gnmr_norms__chunks(n);
      offset = region_after(offset + n * dtype_size(dtype));
    }
  }
  m.n_chunks = chunks;
  m.bytes = offset;
  return m;
}

/* The model's tensors with their data in an arena (host or device). With
   one_unit_each, tensor i is unit i alone: its own sum of squares. */
static gnmr_tensor *model_place(const model *m, const void *arena,
                                int one_unit_each) {
  gnmr_tensor *t = (gnmr_tensor *)mallocCheck(m->n_tensors * sizeof *t);
  uint32_t i;
  for (i = 0; i < m->n_tensors; i++) {
    t[i] = m->tensors[i];
    t[i].data = (const char *)arena + (size_t)m->tensors[i].data;
    if (one_unit_each) t[i].unit = i;
  }
  return t;
}

/* The kernels' view of tensors (device data), on the device. */
static gnmr_norms__tensor *device_layout(const gnmr_tensor *t, uint32_t nt,
                                         uint32_t n_units) {
  gnmr_norms__tensor *x = (gnmr_norms__tensor *)mallocCheck(nt * sizeof *x);
  uint32_t *first = (uint32_t *)mallocCheck((n_units + 1) * sizeof *first);
  uint32_t *order = (uint32_t *)mallocCheck(nt * sizeof *order);
  uint64_t chunks, groups;
  if (gnmr_norms__layout(t, nt, n_units, x, first, order, &chunks, &groups) !=
      GNMR_OK) {
    fprintf(stderr, "gnmr_norms__layout refused the model\n");
    exit(1);
  }
  gnmr_norms__tensor *d = (gnmr_norms__tensor *)device_copy(x, nt * sizeof *x);
  free(x);
  free(first);
  free(order);
  return d;
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

/* ---- 1. norms against the CPU ---------------------------------------------
   A plan over tensors whose data is on the device (d) and the same tensors
   with the same bytes on the host (h): unit sums and norms against
   gnmr_unit_sumsq and gnmr_unit_norms, bit for bit (NaN as NaN). */

static int check_norms(const char *what, const gnmr_tensor *h,
                       const gnmr_tensor *d, uint32_t nt, uint32_t n_units,
                       cudaStream_t stream) {
  gnmr_norms_plan plan;
  double *sumsq = (double *)mallocCheck(n_units * sizeof(double));
  double *ref_sumsq = (double *)mallocCheck(n_units * sizeof(double));
  float *norms = (float *)mallocCheck(n_units * sizeof(float));
  float *ref_norms = (float *)mallocCheck(n_units * sizeof(float));
  double *d_sumsq;
  float *d_norms;
  uint32_t u, same_s = 0, same_n = 0;
  int rc = gnmr_norms_plan_init(&plan, d, nt, n_units);
  if (rc != GNMR_OK) {
    printf("norms, %s: plan_init failed (%d, %s)\n", what, rc,
           cudaGetErrorString(plan.cuda_error));
    return 0;
  }
  cudaCheck(cudaMalloc(&d_sumsq, n_units * sizeof(double)));
  cudaCheck(cudaMalloc(&d_norms, n_units * sizeof(float)));
  /* 0xBF bytes: a negative, finite value no norm can have, so a unit the
     kernels never write fails (cudaMalloc may hand back the last check's
     buffer, its answers still in it) */
  cudaCheck(cudaMemsetAsync(d_sumsq, 0xBF, n_units * sizeof(double), stream));
  cudaCheck(cudaMemsetAsync(d_norms, 0xBF, n_units * sizeof(float), stream));
  rc = gnmr_norms_enqueue(&plan, d_sumsq, d_norms, stream);
  cudaCheck(cudaMemcpyAsync(sumsq, d_sumsq, n_units * sizeof(double),
                            cudaMemcpyDeviceToHost, stream));
  cudaCheck(cudaMemcpyAsync(norms, d_norms, n_units * sizeof(float),
                            cudaMemcpyDeviceToHost, stream));
  if (gnmr_unit_sumsq(h, nt, ref_sumsq, n_units) != GNMR_OK ||
      gnmr_unit_norms(h, nt, ref_norms, n_units) != GNMR_OK) {
    printf("norms, %s: the CPU refused the tensors\n", what);
    rc = GNMR_EINVAL;
  }
  cudaCheck(cudaStreamSynchronize(stream));
  for (u = 0; u < n_units; u++) {
    same_s += same_bits(sumsq[u], ref_sumsq[u]);
    same_n += same_bits(norms[u], ref_norms[u]);
  }
  printf("norms, %s: %u tensors, %u units: sumsq %u/%u, norms %u/%u "
         "bit-identical to the CPU%s\n",
         what, nt, n_units, same_s, n_units, same_n, n_units,
         rc == GNMR_OK ? "" : " (enqueue FAILED)");
  gnmr_norms_plan_free(&plan);
  cudaCheck(cudaFree(d_sumsq));
  cudaCheck(cudaFree(d_norms));
  free(sumsq);
  free(ref_sumsq);
  free(norms);
  free(ref_norms);
  return rc == GNMR_OK && same_s == n_units && same_n == n_units;
}

/* Thousands of small tensors (0 to 3000 elements, any dtype, at any
   place of the model's data aligned to the element, whatever its bits mean
   in that dtype: f16/bf16 tensors 16-byte aligned (one in four) or not,
   so both of the chunk kernel's paths run), in 300 units of any order:
   blocks shared between tensors. */
static int check_small_tensors(const char *h_base, const char *d_base,
                               size_t bytes, cudaStream_t stream) {
  enum { NT = 6000, NU = 300 };
  gnmr_tensor *h = (gnmr_tensor *)mallocCheck(NT * sizeof *h);
  gnmr_tensor *d = (gnmr_tensor *)mallocCheck(NT * sizeof *d);
  uint64_t rng = 7;
  uint32_t i;
  int ok;
  for (i = 0; i < NT; i++) {
    const uint32_t dtype = (uint32_t)(splitmix(&rng) % 3);
    const size_t n = (size_t)(splitmix(&rng) % 3001);
    const size_t off =
        (size_t)(splitmix(&rng) % ((bytes - n * 4 - 4) / 4)) * 4 +
        (dtype != GNMR_DTYPE_F32 && i % 2 ? 2 : 0);
    h[i].data = h_base + off;
    d[i].data = d_base + off;
    h[i].n = d[i].n = n;
    h[i].dtype = d[i].dtype = (int)dtype;
    h[i].unit = d[i].unit = (uint32_t)(splitmix(&rng) % NU);
  }
  ok = check_norms("6000 small tensors", h, d, NT, NU, stream);
  free(h);
  free(d);
  return ok;
}

/* One bf16 tensor of more than GNMR_NORMS_SHARED groups of 32 chunks (its
   tree in global memory), after a small f32 tensor of the same unit. */
static int check_big_tensor(cudaStream_t stream) {
  const size_t n =
      (size_t)GNMR_NORMS_SHARED * GNMR_NORMS_GROUP * GNMR_SUM_CHUNK + 12345;
  size_t free_b, total_b;
  cudaCheck(cudaMemGetInfo(&free_b, &total_b));
  if (big_mib < 256) {
    printf("norms, one tensor over 2^28 elements: skipped (--small)\n");
    return 1;
  }
  if (2 * n + (64u << 20) > free_b) {
    printf("norms, one tensor over 2^28 elements: skipped (%zu MiB free)\n",
           free_b >> 20);
    return 1;
  }
  /* n is odd: the f32 region starts at the next aligned offset, not at
     2 n (tests/test_cuda_host.c checks the placement) */
  const size_t bytes[2] = {2 * n, 4096 * 4};
  size_t at[2];
  const size_t total = regions_place(bytes, 2, at);
  char *d_x, *h_x = (char *)mallocCheck(total);
  cudaCheck(cudaMalloc(&d_x, total));
  fillValues(d_x + at[0], GNMR_DTYPE_BF16, n, 99u, 1024, stream);
  fillValues(d_x + at[1], GNMR_DTYPE_F32, 4096, 98u, 16, stream);
  cudaCheck(cudaMemcpyAsync(h_x, d_x, total, cudaMemcpyDeviceToHost, stream));
  cudaCheck(cudaStreamSynchronize(stream));
  gnmr_tensor h[3], d[3];
  h[0].data = h_x + at[1];
  h[0].n = 4096;
  h[0].dtype = GNMR_DTYPE_F32;
  h[0].unit = 1;
  h[1].data = h_x + at[0];
  h[1].n = n;
  h[1].dtype = GNMR_DTYPE_BF16;
  h[1].unit = 1;
  h[2] = h[0];
  h[2].n = 1000;
  h[2].unit = 0;
  for (int i = 0; i < 3; i++) {
    d[i] = h[i];
    d[i].data = d_x + ((const char *)h[i].data - h_x);
  }
  const int ok =
      check_norms("one tensor over 2^28 elements", h, d, 3, 2, stream);
  cudaCheck(cudaFree(d_x));
  free(h_x);
  return ok;
}

/* ---- 2. norms and decisions, S steps, against the CPU -------------------- */

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
           "tensors of %zu B to %zu MiB, %llu chunks\n",
           m.n_units, nt, count[GNMR_DTYPE_F32], count[GNMR_DTYPE_BF16],
           count[GNMR_DTYPE_F16],
           (double)(bytes[0] + bytes[1] + bytes[2]) / (1u << 30), lo, hi >> 20,
           (unsigned long long)m.n_chunks);
  }
  /* The base gradients: made on the device, copied to the host for the
     CPU reference. */
  char *h_base = (char *)mallocCheck(m.bytes);
  char *d_base, *d_grad;
  cudaCheck(cudaMalloc(&d_base, m.bytes));
  cudaCheck(cudaMalloc(&d_grad, m.bytes));
  for (i = 0; i < nt; i++)
    if (m.tensors[i].n > 0) {
      fillValues(d_base + (size_t)m.tensors[i].data, m.tensors[i].dtype,
                 m.tensors[i].n, i + 1, 256, stream);
    }
  cudaCheck(
      cudaMemcpyAsync(h_base, d_base, m.bytes, cudaMemcpyDeviceToHost, stream));
  cudaCheck(cudaStreamSynchronize(stream));
  gnmr_tensor *h_tensors = model_place(&m, h_base, 0);
  gnmr_tensor *d_tensors = model_place(&m, d_base, 0);
  gnmr_tensor *grad_tensors = model_place(&m, d_grad, 0);
  double *base_sumsq = (double *)mallocCheck(nt * sizeof(double));
  for (i = 0; i < nt; i++) /* the CPU's reference for the training loop */
    base_sumsq[i] = host_sumsq(h_tensors[i].data, h_tensors[i].n,
                               (uint32_t)h_tensors[i].dtype);

  /* The norm plan against the CPU: one unit per tensor (every tensor's own
     sum), the model's units, the same tensors in units of any order, and
     thousands of small tensors. */
  {
    gnmr_tensor *h = model_place(&m, h_base, 1),
                *d = model_place(&m, d_base, 1);
    ok &= check_norms("one unit per tensor (each vs gnmr_sumsq_*)", h, d, nt,
                      nt, stream);
    ok &= check_norms("the model's units", h_tensors, d_tensors, nt, N_UNITS,
                      stream);
    for (i = 0; i < nt; i++) /* interleaved: unit order unrelated */
      h[i].unit = d[i].unit = (i * 37u + 11u) % 53u;
    ok &= check_norms("units in any order (53 units)", h, d, nt, 53, stream);
    free(h);
    free(d);
  }
  ok &= check_small_tensors(h_base, d_base, m.bytes, stream);
  ok &= check_big_tensor(stream);

  /* The training loop: one graph per step, nothing between them. */
  const gnmr_config cfg = run_config();
  gnmr_norms_plan grads;
  if (gnmr_norms_plan_init(&grads, grad_tensors, nt, N_UNITS) != GNMR_OK) {
    fprintf(stderr, "gnmr_norms_plan_init failed\n");
    exit(1);
  }
  gnmr_norms__tensor *base_layout = device_layout(d_tensors, nt, N_UNITS);
  gnmr_norms__tensor *grad_layout = device_layout(grad_tensors, nt, N_UNITS);
  uint32_t first_tensor[N_UNITS];
  for (u = 0; u < N_UNITS; u++) first_tensor[u] = m.units[u].first_tensor;
  uint32_t *d_first =
      (uint32_t *)device_copy(first_tensor, sizeof first_tensor);
  gnmr_slot *d_units;
  gnmr_ctl *d_ctl = device_controller(&cfg, N_UNITS, &d_units);
  gnmr_decision *d_decisions;
  float *d_norms, *d_norm_rows;
  uint32_t *d_step;
  int *d_status, status;
  cudaCheck(cudaMalloc(&d_decisions,
                       (size_t)STEPS * N_UNITS * sizeof(gnmr_decision)));
  cudaCheck(cudaMalloc(&d_norms, N_UNITS * sizeof(float)));
  cudaCheck(cudaMalloc(&d_norm_rows, (size_t)STEPS * N_UNITS * sizeof(float)));
  cudaCheck(cudaMalloc(&d_step, sizeof *d_step));
  cudaCheck(cudaMalloc(&d_status, sizeof *d_status));
  cudaCheck(cudaMemset(d_step, 0, sizeof *d_step));
  cudaCheck(cudaMemset(d_status, 0, sizeof *d_status));

  /* what the step's kernels write: every gradient, the norm rows and the
     decision rows */
  for (i = 0; i < nt; i++)
    REGION_CHECK(grad_tensors[i].data, dtype_size(grad_tensors[i].dtype));
  REGION_CHECK(d_norm_rows, sizeof(float));
  REGION_CHECK(d_decisions, sizeof(gnmr_decision));

  cudaGraph_t graph;
  cudaGraphExec_t step_graph;
  cudaCheck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  make_grads<<<(unsigned)m.n_chunks, 256, 0, stream>>>(
      base_layout, grad_layout, nt, d_first, d_ctl, d_step);
  cudaCheck(cudaGetLastError());
  if (gnmr_norms_enqueue(&grads, NULL, d_norms, stream) != GNMR_OK) {
    fprintf(stderr, "gnmr_norms_enqueue: %s\n",
            cudaGetErrorString(grads.cuda_error));
    exit(1);
  }
  store_row<<<(N_UNITS + 127) / 128, 128, 0, stream>>>(d_norms, N_UNITS,
                                                       d_norm_rows, d_step);
  cudaCheck(cudaGetLastError());
  controller_step<<<1, 1, 0, stream>>>(d_ctl, d_norm_rows, d_decisions, d_step,
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
  cudaCheck(cudaMemcpy(dev_norms, d_norm_rows, (size_t)STEPS * N_UNITS * 4,
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
  gnmr_norms_plan_free(&grads);
  cudaCheck(cudaFree(base_layout));
  cudaCheck(cudaFree(grad_layout));
  cudaCheck(cudaFree(d_first));
  cudaCheck(cudaFree(d_norms));
  cudaCheck(cudaFree(d_norm_rows));
  cudaCheck(cudaFree(d_units));
  cudaCheck(cudaFree(d_ctl));
  cudaCheck(cudaFree(d_decisions));
  cudaCheck(cudaFree(d_step));
  cudaCheck(cudaFree(d_status));
  cudaCheck(cudaFree(d_base));
  cudaCheck(cudaFree(d_grad));
  free(h_base);
  free(h_tensors);
  free(d_tensors);
  free(grad_tensors);
  free(base_sumsq);
  free(dev_norms);
  free(dev_dec);
  free(m.tensors);
  free(m.units);
  return ok;
}

/* ---- 3. the controller's device time, 1024 units -------------------------
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

/* ---- main ------------------------------------------------------------- */

/* usage: test_device [--filter=SUBSTRING] [--small]
   The cases: "training" (1 and 2 above) and "controller_timing" (3);
   --filter runs those whose name holds SUBSTRING (one process per case
   under the sanitizers), --small makes the model's big tensors 16 MiB and
   skips the one over 2^28 elements. */
int main(int argc, char **argv) {
  int device, driver = 0, runtime = 0, mem_khz = 0, bus_bits = 0;
  int passed = 0, failed = 0, i;
  const char *filter = NULL;
  for (i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--filter=", 9) == 0) {
      filter = argv[i] + 9;
    } else if (strcmp(argv[i], "--small") == 0) {
      big_mib = 16;
    } else {
      fprintf(stderr, "usage: test_device [--filter=SUBSTRING] [--small]\n");
      return 2;
    }
  }
  if (no_cuda_device("test_device", 1)) return NO_DEVICE_EXIT;
  cudaDeviceProp prop;
  cudaCheck(cudaGetDevice(&device));
  cudaCheck(cudaGetDeviceProperties(&prop, device));
  cudaCheck(cudaDriverGetVersion(&driver));
  cudaCheck(cudaRuntimeGetVersion(&runtime));
  cudaCheck(
      cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  cudaCheck(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth,
                                   device));
  printf("test_device: gnmr.h %s on %s (sm_%d%d, %d SMs, %.0f GiB, peak %.0f "
         "GB/s from clocks), CUDA driver %d.%d, runtime %d.%d\n",
         gnmr_version(), prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, (double)prop.totalGlobalMem / (1u << 30),
         2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9, driver / 1000,
         driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);

  cudaStream_t stream;
  cudaCheck(cudaStreamCreate(&stream));
  if (!filter || strstr("training", filter)) {
    if (run_training(stream))
      passed++;
    else
      failed++;
  }
  if (!filter || strstr("controller_timing", filter)) {
    if (run_controller_timing(stream))
      passed++;
    else
      failed++;
  }
  if (passed + failed == 0) {
    fprintf(stderr, "test_device: no case matches --filter=%s\n", filter);
    failed = 1;
  }
  cudaCheck(cudaStreamDestroy(stream));
  if (failed) printf("test_device: " GNMR_CUDA_BITS_HINT "\n");
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
