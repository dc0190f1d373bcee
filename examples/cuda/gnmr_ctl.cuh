/* gnmr_ctl.cuh - gnmr.h's controller on a CUDA device, one unit per thread.

   Copy this file next to gnmr.h. Every .cu file that includes it needs the
   implementation in the same translation unit (the kernels run gnmr.h's own
   per-unit rules); with several such files, give each a private copy:
       #define GNMR_STATIC
       #define GNMR_IMPLEMENTATION
       #include "gnmr.h"
       #include "gnmr_ctl.cuh"
   Build with nvcc --fmad=false -Xcompiler -ffp-contract=off (sm_80 or newer)
   so the device rounds as the CPU does: decisions and state are then
   bit-identical to gnmr_step's for every input.

   Use:
       gnmr_ctl host;  gnmr_init(&host, &cfg, slots, N);  // as on the CPU
       gnmr_cuda_ctl dev;
       gnmr_cuda_ctl_create(&dev, &host);       // device copy of config+state
       each step, on a stream (no host sync; capturable in a CUDA graph):
         gnmr_cuda_step(&dev, d_norms, d_decisions, stream);
         gnmr_cuda_scale_grads(d_grads, n_grads, max_elems, d_decisions, s);
         in any kernel: gnmr_cuda_recovering(dev.ctl, u)  // next step's path
       gnmr_cuda_status(&dev, &last, &first);   // syncs: did the steps pass?
       gnmr_cuda_ctl_download(&dev, &host);     // back, e.g. to checkpoint
       gnmr_cuda_ctl_upload(&dev, &host);       // there, e.g. after a load
       gnmr_cuda_ctl_destroy(&dev);
   While the device holds the state, leave the host controller alone: a
   download overwrites it. New settings: gnmr_reconfigure on the host after
   a download, then an upload.
   Every function that can fail returns a cudaError_t (cudaErrorInvalidValue
   for a bad argument); the step's own result (GNMR_OK, or GNMR_ENORM for a
   finite negative norm, GNMR_ESTATE for a bad controller: the step then changes
   nothing) stays on the device until gnmr_cuda_status reads it.

   PAPER mode only (rules 1-8). NOISE mode's step-level phase (rule N3: the
   common median and the global norm, a pass over every unit before the
   per-unit rules) has no kernel yet: create and upload refuse a controller
   in NOISE mode (cudaErrorInvalidValue), and a step that finds one anyway
   changes nothing and reports GNMR_ECONFIG.

   One step is three kernels (up to GNMR_CUDA_FUSED_MAX units, the same
   phases in one block, one launch):
     check   every thread one norm: a finite negative one refuses the step;
             thread 0 checks the controller itself (gnmr_step's ESTATE).
     units   every thread one unit: gnmr.h's gnmr__unit_step (rules 1-6 and
             8), the totals summed per block (integers: any order gives the
             same sums), each candidate for a slot listed (in any order).
     admit   one block: rule 7 as a selection. The free slots are
             max_recovering minus the units still locked; if the candidates
             fit, all are admitted; else the k best by (score descending,
             index ascending) are found by a radix select on the 96-bit key
             (score bits, ~index), unique per unit, so the admitted set is
             exactly gnmr_step's whatever order the list is in. Then the
             controller's totals.
   The bodies of the kernels are the GNMR_HOSTDEV functions below, functions
   of (thread, shared state): tests/test_ctl_parallel.c runs them on the CPU
   thread by thread and phase by phase against gnmr_step. This part is plain
   C99 (a C compiler sees only it); the CUDA part is under __CUDACC__. */
#ifndef GNMR_CTL_CUH
#define GNMR_CTL_CUH

#ifndef GNMR__IMPLEMENTED
#error "gnmr_ctl.cuh: include gnmr.h with GNMR_IMPLEMENTATION first"
#endif

#include <string.h>

/* Threads of the admit kernel (one block). */
#define GNMR_CUDA_ADMIT_THREADS 1024
/* Threads per block of the check and units kernels. */
#define GNMR_CUDA_UNIT_THREADS 256
/* Up to this many units a step is one launch of one block (untuned: no
   GPU measured it yet). */
#define GNMR_CUDA_FUSED_MAX 2048

/* The step's scratch and result, in device memory. Between steps every
   count is 0. */
typedef struct gnmr_cuda_work {
  uint64_t risky, nonfinite, held, renewed; /* this step's sums */
  uint32_t locked, candidates;
  uint32_t negative;   /* set by the check kernel */
  int32_t status;      /* the last step: GNMR_OK or a GNMR_E* code */
  int32_t first_error; /* the first refused step's code since creation */
  uint32_t unusable;   /* set by the check: not a usable controller */
} gnmr_cuda_work;

/* The admit kernel's shared state: the radix select of the k best keys.
   Keys: hi = the score's bits (positive doubles order as their bits), lo =
   ~index (a lower index is the larger key). The `depth` top bits of the
   key are fixed to (hi, lo) so far, `left` candidates match them and the
   best `need` of those are still to be taken; every key above the prefix is
   taken. */
typedef struct gnmr_cuda_select {
  uint32_t hist[256];
  uint64_t hi;
  uint32_t lo, depth, need, left;
  uint32_t k;          /* admitted: min(candidates, free slots) */
  uint32_t candidates; /* listed in the units' heap scratch */
  int32_t status;
} gnmr_cuda_select;

/* ---- the arithmetic of every kernel, host and device ------------------- */

/* check, thread u (thread 0 also checks the controller itself). */
static inline GNMR_HOSTDEV void gnmr_cuda__check(const gnmr_ctl *ctl,
                                                 const float *norms, uint32_t n,
                                                 uint32_t u,
                                                 gnmr_cuda_work *w) {
  uint32_t bits;
  if (u == 0 && !gnmr__usable(ctl)) w->unusable = 1;
  if (u >= n) return;
  memcpy(&bits, &norms[u], 4);
  /* finite and below -0, as gnmr_step's check */
  if (bits - 0x80000001u < 0x7F7FFFFFu) w->negative = 1;
}

/* units, thread u: the unit's rules; returns gnmr.h's GNMR__EV_* bits (0
   for a thread past the last unit or a refused step). */
static inline GNMR_HOSTDEV unsigned
gnmr_cuda__unit(const gnmr_ctl *ctl, const gnmr__rules *r, const float *norms,
                gnmr_decision *out, const gnmr_cuda_work *w, uint32_t u) {
  gnmr__soa s;
  if (u >= r->n || w->negative || w->unusable || r->noise) return 0;
  s = gnmr__carve(ctl->units, r->n);
  return gnmr__unit_step(r, &s, norms, out, u);
}

/* admit, thread 0 first: the step's result and the select's start. */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_begin(gnmr_cuda_select *sel, const gnmr_ctl *ctl,
                       const gnmr_cuda_work *w) {
  uint32_t max_o = ctl->cfg.max_recovering, free_slots;
  sel->status = !gnmr__usable(ctl)                 ? GNMR_ESTATE
                : ctl->cfg.rule != GNMR_RULE_PAPER ? GNMR_ECONFIG
                : w->negative                      ? GNMR_ENORM
                                                   : GNMR_OK;
  free_slots = w->locked < max_o ? max_o - w->locked : 0;
  sel->candidates = w->candidates;
  sel->k = w->candidates < free_slots ? w->candidates : free_slots;
  sel->hi = 0;
  sel->lo = 0;
  sel->depth = 0;
  sel->need = sel->k;
  sel->left = w->candidates;
}

/* 1 while the select has a digit to fix (read by every thread). */
static inline GNMR_HOSTDEV int
gnmr_cuda__select_more(const gnmr_cuda_select *sel) {
  return sel->status == GNMR_OK && sel->need > 0 && sel->need < sel->left &&
         sel->depth < 96;
}

static inline GNMR_HOSTDEV uint64_t gnmr_cuda__key_hi(const gnmr__soa *s,
                                                      uint32_t u) {
  uint64_t bits;
  memcpy(&bits, &s->score[u], 8);
  return bits;
}

/* Compares the top sel->depth bits of key (hi, lo) with the prefix:
   -1 below, 0 equal, 1 above. */
static inline GNMR_HOSTDEV int
gnmr_cuda__cmp_prefix(const gnmr_cuda_select *sel, uint64_t hi, uint32_t lo) {
  const uint32_t d = sel->depth;
  if (d <= 64) {
    const uint64_t top = d == 0 ? 0 : hi & (~(uint64_t)0 << (64 - d));
    return top < sel->hi ? -1 : top > sel->hi;
  }
  if (hi != sel->hi) return hi < sel->hi ? -1 : 1;
  lo &= ~(uint32_t)0 << (96 - d);
  return lo < sel->lo ? -1 : lo > sel->lo;
}

/* The 8-bit digit below the prefix. */
static inline GNMR_HOSTDEV uint32_t
gnmr_cuda__digit(const gnmr_cuda_select *sel, uint64_t hi, uint32_t lo) {
  const uint32_t d = sel->depth;
  return d < 64 ? (uint32_t)(hi >> (56 - d)) & 0xFFu
                : (lo >> (24 - (d - 64))) & 0xFFu;
}

#if defined(__CUDA_ARCH__)
#define GNMR_CUDA__SHARED_INC(p) atomicAdd((p), 1u)
#else
#define GNMR_CUDA__SHARED_INC(p) (*(p) += 1u)
#endif

/* admit, every thread t of T: clear the histogram. */
static inline GNMR_HOSTDEV void
gnmr_cuda__select_clear(gnmr_cuda_select *sel, uint32_t t, uint32_t T) {
  uint32_t b;
  for (b = t; b < 256; b += T) sel->hist[b] = 0;
}

/* admit, every thread t of T: count the next digit of the candidates that
   match the prefix. */
static inline GNMR_HOSTDEV void gnmr_cuda__select_count(gnmr_cuda_select *sel,
                                                        const gnmr__soa *s,
                                                        uint32_t t,
                                                        uint32_t T) {
  uint32_t i;
  for (i = t; i < sel->candidates; i += T) {
    const uint32_t u = s->heap[i];
    const uint64_t hi = gnmr_cuda__key_hi(s, u);
    if (gnmr_cuda__cmp_prefix(sel, hi, ~u) == 0)
      GNMR_CUDA__SHARED_INC(&sel->hist[gnmr_cuda__digit(sel, hi, ~u)]);
  }
}

/* admit, thread 0: fix the digit that holds the need-th best key. */
static inline GNMR_HOSTDEV void gnmr_cuda__select_pick(gnmr_cuda_select *sel) {
  uint32_t digit = 256;
  while (digit-- > 0) {
    if (sel->hist[digit] >= sel->need) break;
    sel->need -= sel->hist[digit];
  }
  sel->left = sel->hist[digit];
  if (sel->depth < 64)
    sel->hi |= (uint64_t)digit << (56 - sel->depth);
  else
    sel->lo |= digit << (24 - (sel->depth - 64));
  sel->depth += 8;
}

/* admit, every thread t of T: rule 7 for the listed candidates. Admitted:
   k > 0 and a key at or above the prefix (after the select, exactly the k
   best). */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_units(const gnmr_cuda_select *sel, const gnmr__soa *s,
                       gnmr_decision *out, uint32_t lock_steps, uint32_t t,
                       uint32_t T) {
  uint32_t i;
  for (i = t; i < sel->candidates; i += T) {
    const uint32_t u = s->heap[i];
    if (sel->k > 0 &&
        gnmr_cuda__cmp_prefix(sel, gnmr_cuda__key_hi(s, u), ~u) >= 0) {
      s->lock[u] = lock_steps;
      s->cooldown[u] = 0;
      s->admissions[u]++;
      if (out) out[u].action = GNMR_ACTION_RECOVER;
    } else {
      s->over_budget[u]++;
      if (out) out[u].flags |= GNMR_FLAG_OVER_BUDGET;
    }
    s->score[u] = 0.0;
  }
}

/* admit, thread 0 last: the controller's totals (as gnmr_step's phase 6)
   and the scratch cleared for the next step. */
static inline GNMR_HOSTDEV void
gnmr_cuda__admit_end(const gnmr_cuda_select *sel, gnmr_ctl *ctl,
                     gnmr_cuda_work *w) {
  if (sel->status == GNMR_OK) {
    const uint32_t recovering = w->locked + sel->k;
    ctl->risky += w->risky;
    ctl->nonfinite += w->nonfinite;
    ctl->recovery_steps += w->held;
    ctl->renewals += w->renewed;
    ctl->admissions += sel->k;
    ctl->over_budget += sel->candidates - sel->k;
    ctl->recovering = recovering;
    if (recovering > ctl->peak_recovering) ctl->peak_recovering = recovering;
    ctl->steps++;
    ctl->report.flagged = (uint32_t)w->risky; /* PAPER mode's report */
    gnmr__commit(ctl);
  } else if (w->first_error == GNMR_OK) {
    w->first_error = sel->status;
  }
  w->status = sel->status;
  w->risky = w->nonfinite = w->held = w->renewed = 0;
  w->locked = w->candidates = w->negative = w->unusable = 0;
}

/* ---- CUDA -------------------------------------------------------------- */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

/* The controller in device memory. */
typedef struct gnmr_cuda_ctl {
  gnmr_ctl *ctl;        /* device: its units pointer is device memory */
  gnmr_slot *slots;     /* device: the state */
  gnmr_cuda_work *work; /* device */
  uint32_t n_units;
} gnmr_cuda_ctl;

/* One tensor whose gradient gnmr_cuda_scale_grads multiplies by its unit's
   decision.scale (device array of these). */
typedef struct gnmr_cuda_grad {
  void *data; /* device, n elements of dtype */
  uint64_t n;
  uint32_t dtype; /* GNMR_DTYPE_F32, _F16, _BF16 */
  uint32_t unit;
} gnmr_cuda_grad;

/* Is unit u on the high-fidelity path next step? For any kernel after the
   step (gnmr_recovering's answer, without its checks). */
static __device__ __forceinline__ int gnmr_cuda_recovering(const gnmr_ctl *ctl,
                                                           uint32_t u) {
  return gnmr__carve(ctl->units, ctl->n_units).lock[u] > 0;
}

template <int Unused = 0>
__global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__check_kernel(const gnmr_ctl *ctl, const float *norms, uint32_t n,
                            gnmr_cuda_work *w) {
  gnmr_cuda__check(ctl, norms, n, blockIdx.x * blockDim.x + threadIdx.x, w);
}

template <int Unused = 0>
__global__ void __launch_bounds__(GNMR_CUDA_UNIT_THREADS)
    gnmr_cuda__units_kernel(const gnmr_ctl *ctl, const float *norms,
                            gnmr_decision *out, gnmr_cuda_work *w) {
  __shared__ gnmr__rules r;
  __shared__ uint32_t listed, base;
  const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned ev;
  int sums[5], i;
  if (threadIdx.x == 0) {
    gnmr__rules_of(ctl, &r);
    listed = 0;
  }
  __syncthreads();
  ev = gnmr_cuda__unit(ctl, &r, norms, out, w, u);
  /* block sums of the totals, then one atomic each per block */
  sums[0] = __syncthreads_count(ev & GNMR__EV_RISKY);
  sums[1] = __syncthreads_count(ev & GNMR__EV_NONFINITE);
  sums[2] = __syncthreads_count(ev & GNMR__EV_HELD);
  sums[3] = __syncthreads_count(ev & GNMR__EV_RENEWED);
  sums[4] = __syncthreads_count(ev & GNMR__EV_LOCKED);
  {
    /* the candidates: a place in the block's part of the list */
    const uint32_t at = ev & GNMR__EV_CANDIDATE ? atomicAdd(&listed, 1u) : 0;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long *c64 = (unsigned long long *)(void *)&w->risky;
      for (i = 0; i < 4; i++)
        if (sums[i]) atomicAdd(c64 + i, (unsigned long long)sums[i]);
      if (sums[4]) atomicAdd(&w->locked, (uint32_t)sums[4]);
      base = listed ? atomicAdd(&w->candidates, listed) : 0;
    }
    __syncthreads();
    if (ev & GNMR__EV_CANDIDATE)
      gnmr__carve(ctl->units, r.n).heap[base + at] = u;
  }
}

/* The admit kernel's body, for any number of threads in one block: the
   select, rule 7, the totals. */
static __device__ __forceinline__ void
gnmr_cuda__admit_block(gnmr_cuda_select *sel, gnmr_ctl *ctl, gnmr_decision *out,
                       gnmr_cuda_work *w) {
  const uint32_t t = threadIdx.x, T = blockDim.x;
  if (t == 0) gnmr_cuda__admit_begin(sel, ctl, w);
  __syncthreads();
  if (sel->status == GNMR_OK) {
    const gnmr__soa s = gnmr__carve(ctl->units, ctl->n_units);
    while (gnmr_cuda__select_more(sel)) {
      gnmr_cuda__select_clear(sel, t, T);
      __syncthreads();
      gnmr_cuda__select_count(sel, &s, t, T);
      __syncthreads();
      if (t == 0) gnmr_cuda__select_pick(sel);
      __syncthreads();
    }
    gnmr_cuda__admit_units(sel, &s, out, ctl->cfg.lock_steps, t, T);
  }
  __syncthreads();
  if (t == 0) gnmr_cuda__admit_end(sel, ctl, w);
}

template <int Unused = 0>
__global__ void __launch_bounds__(GNMR_CUDA_ADMIT_THREADS)
    gnmr_cuda__admit_kernel(gnmr_ctl *ctl, gnmr_decision *out,
                            gnmr_cuda_work *w) {
  __shared__ gnmr_cuda_select sel;
  gnmr_cuda__admit_block(&sel, ctl, out, w);
}

/* Up to GNMR_CUDA_FUSED_MAX units: the three kernels' work in one block,
   barriers between the phases, one launch per step. */
template <int Unused = 0>
__global__ void __launch_bounds__(GNMR_CUDA_ADMIT_THREADS)
    gnmr_cuda__fused_kernel(gnmr_ctl *ctl, const float *norms, uint32_t n,
                            gnmr_decision *out, gnmr_cuda_work *w) {
  __shared__ gnmr__rules r;
  __shared__ gnmr_cuda_select sel;
  const uint32_t t = threadIdx.x, T = blockDim.x;
  uint32_t at;
  if (t == 0) gnmr__rules_of(ctl, &r);
  for (at = 0; at < n; at += T) gnmr_cuda__check(ctl, norms, n, at + t, w);
  __syncthreads();
  for (at = 0; at < n; at += T) { /* the same trip count in every thread */
    const unsigned ev = gnmr_cuda__unit(ctl, &r, norms, out, w, at + t);
    const int risky = __syncthreads_count(ev & GNMR__EV_RISKY);
    const int nonfinite = __syncthreads_count(ev & GNMR__EV_NONFINITE);
    const int held = __syncthreads_count(ev & GNMR__EV_HELD);
    const int renewed = __syncthreads_count(ev & GNMR__EV_RENEWED);
    const int locked = __syncthreads_count(ev & GNMR__EV_LOCKED);
    if (ev & GNMR__EV_CANDIDATE)
      gnmr__carve(ctl->units, n).heap[atomicAdd(&w->candidates, 1u)] = at + t;
    if (t == 0) {
      w->risky += (uint64_t)risky;
      w->nonfinite += (uint64_t)nonfinite;
      w->held += (uint64_t)held;
      w->renewed += (uint64_t)renewed;
      w->locked += (uint32_t)locked;
    }
  }
  __syncthreads();
  gnmr_cuda__admit_block(&sel, ctl, out, w);
}

/* x * scale in double, rounded once to the tensor's type. */
template <int Unused = 0>
__global__ void gnmr_cuda__scale_kernel(const gnmr_cuda_grad *grads,
                                        const gnmr_decision *decisions) {
  const gnmr_cuda_grad g = grads[blockIdx.y];
  const double scale = decisions[g.unit].scale;
  uint64_t i;
  if (scale == 1.0) return;
  for (i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    if (g.dtype == GNMR_DTYPE_F32) {
      float *x = (float *)g.data;
      x[i] = (float)((double)x[i] * scale);
    } else if (g.dtype == GNMR_DTYPE_BF16) {
      __nv_bfloat16 *x = (__nv_bfloat16 *)g.data;
      x[i] = __double2bfloat16((double)__bfloat162float(x[i]) * scale);
    } else {
      __half *x = (__half *)g.data;
      x[i] = __double2half((double)__half2float(x[i]) * scale);
    }
  }
}

/* Device copy of an initialised host controller: config, state, totals. */
static inline cudaError_t gnmr_cuda_ctl_create(gnmr_cuda_ctl *d,
                                               const gnmr_ctl *host) {
  gnmr_ctl image;
  cudaError_t e;
  if (!d || !host || !gnmr__usable(host) || host->cfg.rule != GNMR_RULE_PAPER)
    return cudaErrorInvalidValue;
  memset(d, 0, sizeof *d);
  d->n_units = host->n_units;
  e = cudaMalloc((void **)&d->ctl, sizeof *d->ctl);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&d->slots,
                   sizeof *d->slots * (d->n_units ? d->n_units : 1));
  if (e == cudaSuccess) e = cudaMalloc((void **)&d->work, sizeof *d->work);
  if (e == cudaSuccess) e = cudaMemset(d->work, 0, sizeof *d->work);
  if (e == cudaSuccess && d->n_units > 0)
    e = cudaMemcpy(d->slots, host->units, sizeof *d->slots * d->n_units,
                   cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    image = *host;
    image.units = d->slots;
    e = cudaMemcpy(d->ctl, &image, sizeof image, cudaMemcpyHostToDevice);
  }
  if (e != cudaSuccess) {
    cudaFree(d->ctl);
    cudaFree(d->slots);
    cudaFree(d->work);
    memset(d, 0, sizeof *d);
  }
  return e;
}

/* The host controller's config, state and totals into an existing device
   controller over as many units (e.g. after gnmr_checkpoint_load). Syncs. */
static inline cudaError_t gnmr_cuda_ctl_upload(gnmr_cuda_ctl *d,
                                               const gnmr_ctl *host) {
  gnmr_ctl image;
  cudaError_t e;
  if (!d || !d->ctl || !host || !gnmr__usable(host) ||
      host->n_units != d->n_units || host->cfg.rule != GNMR_RULE_PAPER)
    return cudaErrorInvalidValue;
  e = cudaMemset(d->work, 0, sizeof *d->work);
  if (e == cudaSuccess && d->n_units > 0)
    e = cudaMemcpy(d->slots, host->units, sizeof *d->slots * d->n_units,
                   cudaMemcpyHostToDevice);
  if (e != cudaSuccess) return e;
  image = *host;
  image.units = d->slots;
  return cudaMemcpy(d->ctl, &image, sizeof image, cudaMemcpyHostToDevice);
}

/* The device state back into host (initialised over as many units): its
   config, totals and slots; host keeps its own slots pointer. Syncs. */
static inline cudaError_t gnmr_cuda_ctl_download(const gnmr_cuda_ctl *d,
                                                 gnmr_ctl *host) {
  gnmr_ctl image;
  cudaError_t e;
  if (!d || !d->ctl || !host || !gnmr__usable(host) ||
      host->n_units != d->n_units)
    return cudaErrorInvalidValue;
  e = cudaMemcpy(&image, d->ctl, sizeof image, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess && d->n_units > 0)
    e = cudaMemcpy(host->units, d->slots, sizeof *d->slots * d->n_units,
                   cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  /* every field (gen and seal included: the slots' header came with the
     slots), the host's own slots pointer kept */
  image.units = host->units;
  *host = image;
  return cudaSuccess;
}

static inline void gnmr_cuda_ctl_destroy(gnmr_cuda_ctl *d) {
  if (!d) return;
  cudaFree(d->ctl);
  cudaFree(d->slots);
  cudaFree(d->work);
  memset(d, 0, sizeof *d);
}

/* One step: norms (device, n_units floats) to decisions (device, or NULL).
   Three launches on stream, no sync. */
static inline cudaError_t gnmr_cuda_step(const gnmr_cuda_ctl *d,
                                         const float *norms, gnmr_decision *out,
                                         cudaStream_t stream) {
  const uint32_t blocks = (d ? d->n_units : 0) / GNMR_CUDA_UNIT_THREADS +
                          ((d ? d->n_units : 0) % GNMR_CUDA_UNIT_THREADS != 0);
  if (!d || !d->ctl || (d->n_units > 0 && !norms)) return cudaErrorInvalidValue;
  if (d->n_units <= GNMR_CUDA_FUSED_MAX) {
    const uint32_t warps = (d->n_units + 31) / 32;
    const uint32_t threads = d->n_units >= GNMR_CUDA_ADMIT_THREADS
                                 ? GNMR_CUDA_ADMIT_THREADS
                             : warps > 0 ? 32 * warps
                                         : 32;
    gnmr_cuda__fused_kernel<<<1, threads, 0, stream>>>(
        d->ctl, norms, d->n_units, out, d->work);
    return cudaGetLastError();
  }
  if (blocks > 0) {
    gnmr_cuda__check_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
        d->ctl, norms, d->n_units, d->work);
    gnmr_cuda__units_kernel<<<blocks, GNMR_CUDA_UNIT_THREADS, 0, stream>>>(
        d->ctl, norms, out, d->work);
  }
  gnmr_cuda__admit_kernel<<<1, GNMR_CUDA_ADMIT_THREADS, 0, stream>>>(
      d->ctl, out, d->work);
  return cudaGetLastError();
}

/* Multiplies each tensor's gradient by its unit's decisions[unit].scale
   (units at scale 1 return at once). max_elems: the largest tensor's n. */
static inline cudaError_t gnmr_cuda_scale_grads(const gnmr_cuda_grad *grads,
                                                uint32_t n_grads,
                                                uint64_t max_elems,
                                                const gnmr_decision *decisions,
                                                cudaStream_t stream) {
  uint64_t per = (max_elems + 255) / 256;
  dim3 grid((unsigned)(per < 1 ? 1 : per > 1024 ? 1024 : per), n_grads);
  if (n_grads == 0) return cudaSuccess;
  if (!grads || !decisions || n_grads > 65535) return cudaErrorInvalidValue;
  gnmr_cuda__scale_kernel<<<grid, 256, 0, stream>>>(grads, decisions);
  return cudaGetLastError();
}

/* The last step's result and the first refused step's (GNMR_OK if none);
   syncs with the device. Either pointer may be NULL. */
static inline cudaError_t gnmr_cuda_status(const gnmr_cuda_ctl *d, int *last,
                                           int *first_error) {
  gnmr_cuda_work w;
  cudaError_t e;
  if (!d || !d->work) return cudaErrorInvalidValue;
  e = cudaMemcpy(&w, d->work, sizeof w, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  if (last) *last = w.status;
  if (first_error) *first_error = w.first_error;
  return cudaSuccess;
}
#endif /* __CUDACC__ */
#endif /* GNMR_CTL_CUH */
