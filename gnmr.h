/* gnmr.h - v0.1.0 - runtime stability control for low-precision training.
   MIT license (see the end of this file). No warranty.

   GNMR (Gradient Norm-to-Mean Ratio) watches every "recoverable unit" of a
   model (an operator or parameter group that has a cheap low-precision path
   and a high-fidelity path). Each step it compares the unit's gradient norm
   with the unit's own historical mean (GNMR) and with its recent short window
   (delta-GNMR), and moves the riskiest units to the high-fidelity path for a
   short lock interval, never more than `max_recovering` at once.

   Do this:
       #define GNMR_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it without the define.

   Quick use:
       gnmr_config cfg = gnmr_config_default();
       cfg.max_recovering = 4;
       gnmr_unit units[N];
       gnmr_ctl ctl;
       if (gnmr_init(&ctl, &cfg, units, N) != GNMR_OK) ...
       for (each step) {
           float norms[N];                  // gradient L2 norm of every unit
           gnmr_decision d[N];
           gnmr_step(&ctl, norms, d);       // d[u].scale: multiply unit u's
   grad
           // gnmr_recovering(&ctl, u): run unit u high-fidelity next step
       }

   Build macros (define before including):
       GNMR_IMPLEMENTATION  emit the implementation in this translation unit
       GNMR_STATIC          every symbol static (private to one file)
       GNMR_ASSERT(x)       internal invariant check (default: assert.h);
                            never used on user input
       GNMR_NO_SIMD         scalar norm helpers only
       GNMR_NO_AVX512, GNMR_NO_AVX2, GNMR_NO_NEON
                            switch one SIMD path off

   Rules of one step, per unit (g = norm, k = finite observations so far,
   m = historical mean before this step):
       non-finite g : risky, score +inf, statistics untouched, scale 0
       GNMR         = g / max(m, eps)             (1 when k = 0)
       delta        = GNMR - mean(window of the last min(k, W) stored ratios)
       risky        = k >= warmup and (GNMR > ratio_threshold or
                                       delta > delta_threshold)
       score        = max(GNMR / ratio_threshold, delta / delta_threshold)
       history      : x = risky ? min(g, ratio_threshold * m) : g;
                      k += 1; m += max(1/k, 1 - history_decay) * (x - m);
                      window gets min(GNMR, ratio_threshold)
   Then locked units count down (release, or renew when risky at expiry),
   and risky units out of cooldown are admitted by score (ties: lower index)
   into the free slots of the max_recovering budget. A unit admitted at step
   t runs the high-fidelity path for steps t+1 ... t+lock_steps exactly.

   Errors: every function that can fail returns GNMR_OK (0) or a negative
   GNMR_E* code, and a refused call changes nothing.

   Determinism: the same inputs give the same decisions bit for bit. Built
   with -ffp-contract=off (nvcc: --fmad=false) the host and a CUDA device
   agree bit for bit; the norm helpers give the same bits on every SIMD path.
*/
#ifndef GNMR_H
#define GNMR_H

#include <stddef.h>
#include <stdint.h>

#define GNMR_VERSION_MAJOR 0
#define GNMR_VERSION_MINOR 1
#define GNMR_VERSION_PATCH 0
#define GNMR_VERSION_STRING "0.1.0"

#ifdef GNMR_STATIC
#define GNMR__STATIC_INTERFACE /* the implementation checks it matches */
#if defined(__GNUC__) || defined(__clang__)
#define GNMR_DEF static __attribute__((unused))
#else
#define GNMR_DEF static
#endif
#else
#define GNMR_DEF extern
#endif

#if defined(__CUDACC__)
#define GNMR_HOSTDEV __host__ __device__
#else
#define GNMR_HOSTDEV
#endif

/* The short window is a compile-time constant so every translation unit (and
   every checkpoint) agrees on the layout of gnmr_unit. */
#define GNMR_WINDOW_MAX 16

/* Canonical summation of the norm helpers: chunks of GNMR_SUM_CHUNK elements,
   GNMR_SUM_LANES lanes per chunk (one CUDA warp). Fixed: they define the bits.
 */
#define GNMR_SUM_CHUNK 4096
#define GNMR_SUM_LANES 32

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum {
  GNMR_OK = 0,
  GNMR_EINVAL = -1,    /* NULL pointer or argument out of range */
  GNMR_ESIZE = -2,     /* buffer too small, or checkpoint truncated/too long */
  GNMR_ECORRUPT = -3,  /* checkpoint failed its checksum or its contents */
  GNMR_EVERSION = -4,  /* checkpoint written by another format version */
  GNMR_EMISMATCH = -5, /* checkpoint holds another number of units */
  GNMR_ECONFIG = -6,   /* a configuration field is out of range */
  GNMR_ENORM = -7,     /* a finite negative gradient norm */
  GNMR_ESTATE = -8,    /* controller not initialised by gnmr_init */
  GNMR_EISA = -9       /* instruction set not available on this CPU/build */
};

GNMR_DEF const char *gnmr_strerror(int code);
GNMR_DEF const char *gnmr_version(void);

/* ---- configuration ----------------------------------------------------- */

enum { GNMR_POLICY_KEEP = 0, GNMR_POLICY_CLIP = 1, GNMR_POLICY_SKIP = 2 };

typedef struct gnmr_config {
  double ratio_threshold; /* tau_r: GNMR above this is risky; finite, > 1 */
  double
      delta_threshold;  /* tau_d: delta-GNMR above this is risky; finite, > 0 */
  double history_decay; /* beta in (0, 1]; 1 = plain mean of all history */
  double eps;           /* floor of the mean in the ratio; finite, > 0 */
  uint32_t delta_window; /* W: 1 ... GNMR_WINDOW_MAX */
  uint32_t warmup_steps; /* finite observations before a unit can be flagged */
  uint32_t
      max_recovering;  /* maxO: units in recovery at once; 0 = detect only */
  uint32_t lock_steps; /* L >= 1: steps on the high-fidelity path */
  uint32_t cooldown_steps; /* steps after release before readmission */
  int spike_policy; /* GNMR_POLICY_*: this step's gradient of a risky unit */
} gnmr_config;

GNMR_DEF gnmr_config gnmr_config_default(void);
GNMR_DEF int gnmr_config_validate(const gnmr_config *cfg);

/* ---- controller state (caller-owned, allocation-free) ------------------ */

/* One unit's state. Plain data of fixed size; treat the fields as private. */
typedef struct gnmr_unit {
  double mean;                   /* historical mean m */
  double window_sum;             /* running sum of window[] */
  float window[GNMR_WINDOW_MAX]; /* last min(k, W) stored ratios, a ring */
  uint64_t finite_steps;         /* k */
  uint64_t risky, nonfinite, admissions, renewals, recovery_steps, over_budget;
  uint32_t lock;        /* steps left on the high-fidelity path; 0 = low-cost */
  uint32_t cooldown;    /* steps left before readmission */
  uint32_t window_head; /* next slot of the ring */
  /* Per-step scratch, not state (not saved in checkpoints): */
  double score;       /* this step's risk score */
  uint32_t heap;      /* admission heap storage, see gnmr_step */
  uint32_t candidate; /* risky and eligible for admission this step */
} gnmr_unit;

typedef struct gnmr_ctl {
  gnmr_config cfg;
  gnmr_unit *units;
  uint32_t n_units;
  uint32_t recovering;       /* units with lock > 0 */
  uint32_t peak_recovering;  /* highest `recovering` seen */
  uint32_t magic;            /* set by gnmr_init */
  uint64_t full_weight_from; /* first k with 1/k <= 1 - beta (derived) */
  uint64_t steps, risky, nonfinite, admissions, renewals, recovery_steps,
      over_budget;
} gnmr_ctl;

/* Validates cfg (and max_recovering <= n_units), zeroes the units. */
GNMR_DEF int gnmr_init(gnmr_ctl *ctl, const gnmr_config *cfg, gnmr_unit *units,
                       uint32_t n_units);

/* ---- one step ---------------------------------------------------------- */

enum { GNMR_KEEP = 0, GNMR_RECOVER = 1, GNMR_HOLD = 2, GNMR_RELEASE = 3 };

enum {
  GNMR_F_RATIO = 1u << 0,       /* GNMR above ratio_threshold */
  GNMR_F_DELTA = 1u << 1,       /* delta-GNMR above delta_threshold */
  GNMR_F_NONFINITE = 1u << 2,   /* norm was NaN or +-Inf */
  GNMR_F_OVER_BUDGET = 1u << 3, /* risky, eligible, no free slot */
  GNMR_F_COOLDOWN = 1u << 4,    /* risky but still cooling down */
  GNMR_F_WARMUP = 1u << 5,      /* too few observations to be flagged */
  GNMR_F_RENEWED = 1u << 6      /* lock ran out while risky: renewed */
};

typedef struct gnmr_decision {
  double
      gnmr; /* ratio to the historical mean (the norm itself if non-finite) */
  double delta;   /* ratio minus window mean (the norm itself if non-finite) */
  double score;   /* max(gnmr / tau_r, delta / tau_d); +inf if non-finite */
  double scale;   /* multiply this step's gradient of the unit by it */
  uint32_t flags; /* GNMR_F_* */
  int32_t action; /* GNMR_KEEP / RECOVER / HOLD / RELEASE */
} gnmr_decision;

/* norms[u]: unit u's gradient L2 norm. NaN/Inf are legal; a finite negative
   norm is refused (GNMR_ENORM). out may be NULL. */
GNMR_DEF GNMR_HOSTDEV int gnmr_step(gnmr_ctl *ctl, const float *norms,
                                    gnmr_decision *out);

/* 1 if unit u runs the high-fidelity path next step, 0 if not, <0 on error. */
GNMR_DEF GNMR_HOSTDEV int gnmr_recovering(const gnmr_ctl *ctl, uint32_t u);

typedef struct gnmr_counters {
  uint64_t steps;           /* steps taken */
  uint64_t finite_steps;    /* observations that entered the statistics */
  uint64_t risky;           /* unit-steps flagged risky (non-finite included) */
  uint64_t nonfinite;       /* unit-steps with a NaN/Inf norm */
  uint64_t admissions;      /* RECOVER decisions */
  uint64_t renewals;        /* locks renewed at expiry */
  uint64_t recovery_steps;  /* unit-steps run on the high-fidelity path */
  uint64_t over_budget;     /* risky, eligible, refused for lack of a slot */
  uint32_t recovering;      /* now (controller: units; unit: 0 or 1) */
  uint32_t peak_recovering; /* controller only: most units at once */
} gnmr_counters;

/* unit = UINT32_MAX (GNMR_ALL_UNITS) reads the controller's totals. */
#define GNMR_ALL_UNITS 0xFFFFFFFFu
GNMR_DEF int gnmr_counters_get(const gnmr_ctl *ctl, uint32_t unit,
                               gnmr_counters *out);

/* ---- checkpoint -------------------------------------------------------- */

/* Bytes a checkpoint of ctl takes (0 if ctl is not initialised). */
GNMR_DEF size_t gnmr_checkpoint_size(const gnmr_ctl *ctl);
/* buf NULL: only *written = size. cap too small: GNMR_ESIZE, *written = size.
 */
GNMR_DEF int gnmr_checkpoint_save(const gnmr_ctl *ctl, void *buf, size_t cap,
                                  size_t *written);
/* Into a controller initialised over the same number of units; restores its
   config and state, or changes nothing. */
GNMR_DEF int gnmr_checkpoint_load(gnmr_ctl *ctl, const void *buf, size_t len);

/* ---- norm helpers ------------------------------------------------------ */

enum { GNMR_F32 = 0, GNMR_F16 = 1, GNMR_BF16 = 2 };

typedef struct gnmr_tensor_stats {
  double sumsq;       /* canonical sum of squares (Inf/NaN if any non-finite) */
  double amax;        /* largest |x| over the finite elements */
  uint64_t nonfinite; /* count of NaN/Inf elements */
} gnmr_tensor_stats;

typedef struct gnmr_tensor {
  const void *data; /* n elements of dtype; any alignment */
  size_t n;
  int dtype;     /* GNMR_F32, GNMR_F16 (IEEE binary16 bits), GNMR_BF16 */
  uint32_t unit; /* unit the tensor belongs to */
} gnmr_tensor;

GNMR_DEF double gnmr_sumsq_f32(const float *x, size_t n);
GNMR_DEF double gnmr_sumsq_f16(const uint16_t *x, size_t n);
GNMR_DEF double gnmr_sumsq_bf16(const uint16_t *x, size_t n);
GNMR_DEF void gnmr_stats_f32(const float *x, size_t n, gnmr_tensor_stats *out);
GNMR_DEF void gnmr_stats_f16(const uint16_t *x, size_t n,
                             gnmr_tensor_stats *out);
GNMR_DEF void gnmr_stats_bf16(const uint16_t *x, size_t n,
                              gnmr_tensor_stats *out);

/* sumsq[u] = sum over the tensors of unit u, added in tensor order, in
   double (the vector a distributed job all-reduces). Any tensor order. */
GNMR_DEF int gnmr_unit_sumsq(const gnmr_tensor *t, size_t nt, double *sumsq,
                             uint32_t n_units);
/* norms[u] = sqrt of the above. Tensors sorted by unit (non-decreasing);
   units without tensors get 0. */
GNMR_DEF int gnmr_unit_norms(const gnmr_tensor *t, size_t nt, float *norms,
                             uint32_t n_units);

/* ---- dispatch ---------------------------------------------------------- */

enum {
  GNMR_ISA_SCALAR = 0,
  GNMR_ISA_SSE2 = 1,
  GNMR_ISA_AVX2 = 2,
  GNMR_ISA_AVX512 = 3,
  GNMR_ISA_NEON = 4
};

GNMR_DEF int gnmr_isa_active(void);
GNMR_DEF int
gnmr_isa_supported(int isa);          /* 1 if this CPU and build can run it */
GNMR_DEF int gnmr_isa_force(int isa); /* GNMR_EISA where unsupported */
GNMR_DEF const char *gnmr_isa_name(int isa);

#ifdef __cplusplus
}
#endif
#endif /* GNMR_H */

/* ======================================================================== */
#ifdef GNMR_IMPLEMENTATION
#ifndef GNMR__IMPLEMENTED
#define GNMR__IMPLEMENTED

/* GNMR_DEF was fixed by the first #include in this file: an implementation
   that silently came out extern (or static) would be worse than an error. */
#if defined(GNMR_STATIC) != defined(GNMR__STATIC_INTERFACE)
#error "gnmr.h: define GNMR_STATIC before the first #include of gnmr.h"
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#ifndef GNMR_ASSERT
#include <assert.h>
#define GNMR_ASSERT(x) assert(x)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GNMR__MAGIC 0x524d4e47u /* "GNMR" */

GNMR_DEF const char *gnmr_strerror(int code) {
  switch (code) {
  case GNMR_OK: return "ok";
  case GNMR_EINVAL: return "invalid argument (NULL pointer or out of range)";
  case GNMR_ESIZE:
    return "buffer too small, or checkpoint truncated or too long";
  case GNMR_ECORRUPT: return "checkpoint corrupted";
  case GNMR_EVERSION: return "checkpoint from another format version";
  case GNMR_EMISMATCH: return "checkpoint holds another number of units";
  case GNMR_ECONFIG: return "configuration field out of range";
  case GNMR_ENORM: return "negative gradient norm";
  case GNMR_ESTATE: return "controller not initialised";
  case GNMR_EISA: return "instruction set not available";
  default: return "unknown error";
  }
}

GNMR_DEF const char *gnmr_version(void) { return GNMR_VERSION_STRING; }

/* ---- configuration ----------------------------------------------------- */

GNMR_DEF gnmr_config gnmr_config_default(void) {
  gnmr_config c;
  c.ratio_threshold = 3.0;
  c.delta_threshold = 1.5;
  c.history_decay = 0.99;
  c.eps = 1e-12;
  c.delta_window = 8;
  c.warmup_steps = 16;
  c.max_recovering = 1;
  c.lock_steps = 8;
  c.cooldown_steps = 4;
  c.spike_policy = GNMR_POLICY_CLIP;
  return c;
}

static int gnmr__finite_above(double x, double floor_) {
  return isfinite(x) && x > floor_;
}

GNMR_DEF int gnmr_config_validate(const gnmr_config *cfg) {
  if (!cfg) return GNMR_EINVAL;
  if (!gnmr__finite_above(cfg->ratio_threshold, 1.0) ||
      !gnmr__finite_above(cfg->delta_threshold, 0.0) ||
      !(cfg->history_decay > 0.0 && cfg->history_decay <= 1.0) ||
      !gnmr__finite_above(cfg->eps, 0.0) || cfg->delta_window < 1 ||
      cfg->delta_window > GNMR_WINDOW_MAX || cfg->lock_steps < 1 ||
      (cfg->spike_policy != GNMR_POLICY_KEEP &&
       cfg->spike_policy != GNMR_POLICY_CLIP &&
       cfg->spike_policy != GNMR_POLICY_SKIP))
    return GNMR_ECONFIG;
  return GNMR_OK;
}

/* w = max(1/k, 1 - beta) without a division per step: 1/k falls with k, so
   from the first k where fl(1/k) <= 1 - beta on, w is 1 - beta. */
static uint64_t gnmr__full_weight_from(double beta) {
  double floor_w = 1.0 - beta;
  double approx;
  uint64_t k;
  if (!(floor_w > 0.0)) return UINT64_MAX;
  approx = 1.0 / floor_w;
  if (!(approx < 9.0e18)) return UINT64_MAX;
  k = (uint64_t)approx;
  if (k < 1) k = 1;
  while (k > 1 && 1.0 / (double)(k - 1) <= floor_w) k--;
  while (1.0 / (double)k > floor_w) k++;
  return k;
}

GNMR_DEF int gnmr_init(gnmr_ctl *ctl, const gnmr_config *cfg, gnmr_unit *units,
                       uint32_t n_units) {
  int rc;
  if (!ctl || !cfg || (n_units > 0 && !units)) return GNMR_EINVAL;
  rc = gnmr_config_validate(cfg);
  if (rc != GNMR_OK) return rc;
  if (cfg->max_recovering > n_units) return GNMR_ECONFIG;
  memset(ctl, 0, sizeof *ctl);
  if (n_units > 0) memset(units, 0, sizeof *units * n_units);
  ctl->cfg = *cfg;
  ctl->units = units;
  ctl->n_units = n_units;
  ctl->full_weight_from = gnmr__full_weight_from(cfg->history_decay);
  ctl->magic = GNMR__MAGIC;
  return GNMR_OK;
}

/* ---- signals, admission and decisions ---------------------------------- */

/* a is a worse admission candidate than b: lower score, then higher index.
   A strict total order, so the admitted set never depends on visit order. */
static GNMR_HOSTDEV int gnmr__worse(const gnmr_unit *units, uint32_t a,
                                    uint32_t b) {
  if (units[a].score != units[b].score) return units[a].score < units[b].score;
  return a > b;
}

/* The admission heap: a min-heap (worst candidate on top) of at most
   max_recovering unit indices, stored in units[0 .. size).heap so that
   admission needs no memory of its own and costs O(N log maxO). */
static GNMR_HOSTDEV void gnmr__heap_sift_down(gnmr_unit *units, uint32_t size,
                                              uint32_t at) {
  uint32_t item = units[at].heap;
  for (;;) {
    uint32_t child = 2 * at + 1;
    if (child >= size) break;
    if (child + 1 < size &&
        gnmr__worse(units, units[child + 1].heap, units[child].heap))
      child++;
    if (!gnmr__worse(units, units[child].heap, item)) break;
    units[at].heap = units[child].heap;
    at = child;
  }
  units[at].heap = item;
}

static GNMR_HOSTDEV void gnmr__heap_offer(gnmr_unit *units, uint32_t *size,
                                          uint32_t cap, uint32_t u) {
  if (*size < cap) {
    uint32_t at = (*size)++;
    while (at > 0 && gnmr__worse(units, u, units[(at - 1) / 2].heap)) {
      units[at].heap = units[(at - 1) / 2].heap;
      at = (at - 1) / 2;
    }
    units[at].heap = u;
  } else if (cap > 0 && gnmr__worse(units, units[0].heap, u)) {
    units[0].heap = u;
    gnmr__heap_sift_down(units, *size, 0);
  }
}

/* What the window keeps of a ratio (already capped at tau_r): a float, held
   at FLT_MAX where a tau_r beyond the float range would make it +inf. The
   checkpoint loader accepts exactly the values this can give, [0,
   gnmr__window_value(tau_r)] (a float can round up past tau_r itself). */
static GNMR_HOSTDEV float gnmr__window_value(double ratio) {
  return ratio < (double)FLT_MAX ? (float)ratio : FLT_MAX;
}

static GNMR_HOSTDEV void gnmr__window_push(gnmr_unit *unit, uint32_t window,
                                           uint64_t k_before, float ratio) {
  uint32_t head = unit->window_head;
  double evicted = k_before >= window ? (double)unit->window[head] : 0.0;
  unit->window[head] = ratio;
  unit->window_sum += (double)ratio - evicted;
  if (++head == window) {
    /* Re-add from scratch once per lap, so rounding never builds up. */
    double sum = 0.0;
    uint32_t i;
    for (i = 0; i < window; i++) sum += (double)unit->window[i];
    unit->window_sum = sum;
    head = 0;
  }
  unit->window_head = head;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_step(gnmr_ctl *ctl, const float *norms,
                                    gnmr_decision *out) {
  const gnmr_config *cfg;
  gnmr_unit *units;
  uint32_t n, u, heap_size = 0, recovering = 0, candidates = 0, admitted;
  if (!ctl) return GNMR_EINVAL;
  if (ctl->magic != GNMR__MAGIC) return GNMR_ESTATE;
  n = ctl->n_units;
  if (n > 0 && !norms) return GNMR_EINVAL;
  for (u = 0; u < n; u++)
    if (norms[u] < 0.0f && isfinite(norms[u])) return GNMR_ENORM;

  cfg = &ctl->cfg;
  units = ctl->units;
  for (u = 0; u < n; u++) {
    gnmr_unit *unit = &units[u];
    double g = (double)norms[u], m = unit->mean, ratio, delta, score;
    double scale = 1.0;
    uint64_t k = unit->finite_steps;
    uint32_t flags = 0;
    int32_t action = GNMR_KEEP;
    int risky;

    if (!isfinite(g)) {
      /* A NaN/Inf never enters the mean or the window. */
      ratio = delta = g;
      score = (double)INFINITY;
      flags = GNMR_F_NONFINITE;
      risky = 1;
      scale = 0.0;
      unit->nonfinite++;
      ctl->nonfinite++;
    } else {
      uint32_t window = cfg->delta_window;
      double w, x;
      if (k == 0) {
        ratio = 1.0;
        delta = 0.0;
      } else {
        ratio = g / (m > cfg->eps ? m : cfg->eps);
        delta = ratio - unit->window_sum / (double)(k < window ? k : window);
      }
      if (k < cfg->warmup_steps) {
        flags = GNMR_F_WARMUP;
      } else {
        if (ratio > cfg->ratio_threshold) flags |= GNMR_F_RATIO;
        if (delta > cfg->delta_threshold) flags |= GNMR_F_DELTA;
      }
      risky = flags != 0 && flags != GNMR_F_WARMUP;
      score = ratio / cfg->ratio_threshold;
      if (delta / cfg->delta_threshold > score)
        score = delta / cfg->delta_threshold;

      /* A spike cannot inflate its own history. */
      x = g;
      if (risky && x > cfg->ratio_threshold * m) x = cfg->ratio_threshold * m;
      /* k saturates rather than wrap to 0 (w would be 1/0): 2^64 - 1
         observations, or a checkpoint that claims them, stay well defined. */
      if (k < UINT64_MAX) k++;
      unit->finite_steps = k;
      w = k < ctl->full_weight_from ? 1.0 / (double)k
                                    : 1.0 - cfg->history_decay;
      unit->mean = m + w * (x - m);
      gnmr__window_push(unit, window, k - 1,
                        gnmr__window_value(ratio < cfg->ratio_threshold
                                               ? ratio
                                               : cfg->ratio_threshold));
      if (risky) {
        if (cfg->spike_policy == GNMR_POLICY_SKIP) scale = 0.0;
        if (cfg->spike_policy == GNMR_POLICY_CLIP &&
            g > cfg->ratio_threshold * m)
          scale = cfg->ratio_threshold * m / g;
      }
    }
    if (risky) {
      unit->risky++;
      ctl->risky++;
    }
    unit->score = score;
    unit->candidate = 0;

    if (unit->lock > 0) {
      unit->recovery_steps++;
      ctl->recovery_steps++;
      action = GNMR_HOLD;
      if (--unit->lock == 0) {
        if (risky) {
          unit->lock = cfg->lock_steps;
          unit->renewals++;
          ctl->renewals++;
          flags |= GNMR_F_RENEWED;
        } else {
          action = GNMR_RELEASE;
          unit->cooldown = cfg->cooldown_steps;
        }
      }
      if (unit->lock > 0) recovering++;
    } else {
      int cooling = unit->cooldown > 0;
      if (cooling) unit->cooldown--;
      if (risky && cooling && !(flags & GNMR_F_NONFINITE)) {
        flags |= GNMR_F_COOLDOWN;
      } else if (risky) {
        unit->candidate = 1;
        candidates++;
        gnmr__heap_offer(units, &heap_size, cfg->max_recovering, u);
      }
    }
    if (out) {
      out[u].gnmr = ratio;
      out[u].delta = delta;
      out[u].score = score;
      out[u].scale = scale;
      out[u].flags = flags;
      out[u].action = action;
    }
  }

  /* The heap holds the best max_recovering candidates; releases above may
     have freed more slots than were free before, never fewer. Drop the worst
     until the rest fit, then admit the rest. */
  GNMR_ASSERT(recovering <= cfg->max_recovering);
  while (heap_size > cfg->max_recovering - recovering) {
    units[0].heap = units[--heap_size].heap;
    gnmr__heap_sift_down(units, heap_size, 0);
  }
  admitted = heap_size;
  while (heap_size > 0) {
    gnmr_unit *unit = &units[units[--heap_size].heap];
    unit->lock = cfg->lock_steps;
    unit->cooldown = 0;
    unit->admissions++;
    if (out) out[units[heap_size].heap].action = GNMR_RECOVER;
  }
  ctl->admissions += admitted;
  recovering += admitted;
  if (candidates > admitted) {
    for (u = 0; u < n; u++) {
      if (!units[u].candidate || units[u].lock > 0) continue;
      units[u].over_budget++;
      if (out) out[u].flags |= GNMR_F_OVER_BUDGET;
    }
    ctl->over_budget += candidates - admitted;
  }
  ctl->recovering = recovering;
  if (recovering > ctl->peak_recovering) ctl->peak_recovering = recovering;
  ctl->steps++;
  return GNMR_OK;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_recovering(const gnmr_ctl *ctl, uint32_t u) {
  if (!ctl) return GNMR_EINVAL;
  if (ctl->magic != GNMR__MAGIC) return GNMR_ESTATE;
  if (u >= ctl->n_units) return GNMR_EINVAL;
  return ctl->units[u].lock > 0;
}

GNMR_DEF int gnmr_counters_get(const gnmr_ctl *ctl, uint32_t unit,
                               gnmr_counters *out) {
  if (!ctl || !out) return GNMR_EINVAL;
  if (ctl->magic != GNMR__MAGIC) return GNMR_ESTATE;
  if (unit == GNMR_ALL_UNITS) {
    uint64_t finite = 0;
    uint32_t u;
    for (u = 0; u < ctl->n_units; u++) finite += ctl->units[u].finite_steps;
    out->steps = ctl->steps;
    out->finite_steps = finite;
    out->risky = ctl->risky;
    out->nonfinite = ctl->nonfinite;
    out->admissions = ctl->admissions;
    out->renewals = ctl->renewals;
    out->recovery_steps = ctl->recovery_steps;
    out->over_budget = ctl->over_budget;
    out->recovering = ctl->recovering;
    out->peak_recovering = ctl->peak_recovering;
  } else {
    const gnmr_unit *s;
    if (unit >= ctl->n_units) return GNMR_EINVAL;
    s = &ctl->units[unit];
    out->steps = ctl->steps;
    out->finite_steps = s->finite_steps;
    out->risky = s->risky;
    out->nonfinite = s->nonfinite;
    out->admissions = s->admissions;
    out->renewals = s->renewals;
    out->recovery_steps = s->recovery_steps;
    out->over_budget = s->over_budget;
    out->recovering = s->lock > 0;
    out->peak_recovering = 0;
  }
  return GNMR_OK;
}

/* ---- checkpoint -----------------------------------------------------------
   Little-endian, field by field (never a struct dump):
     header  "GNMRCKPT", u32 version, u32 n_units, u32 GNMR_WINDOW_MAX, u32 0
     config  f64 tau_r, tau_d, beta, eps; u32 W, warmup, maxO, L, cooldown,
             policy
     totals  u64 steps, risky, nonfinite, admissions, renewals,
             recovery_steps, over_budget; u32 recovering, peak_recovering
     units   f64 mean, window_sum; f32 window[GNMR_WINDOW_MAX]; u64 k, risky,
             nonfinite, admissions, renewals, recovery_steps, over_budget;
             u32 lock, cooldown, window_head
     trailer u32 CRC-32 (IEEE) of everything before it: it catches every
             single-bit flip and every burst up to 32 bits. */

#define GNMR__CKPT_VERSION 1u
#define GNMR__CKPT_HEADER 24u
#define GNMR__CKPT_CONFIG 56u
#define GNMR__CKPT_TOTALS 64u
#define GNMR__CKPT_UNIT (16u + 4u * GNMR_WINDOW_MAX + 56u + 12u)

static const char gnmr__ckpt_magic[8] = {'G', 'N', 'M', 'R',
                                         'C', 'K', 'P', 'T'};

static size_t gnmr__ckpt_size(uint32_t n_units) {
  return GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS +
         (size_t)n_units * GNMR__CKPT_UNIT + 4u;
}

static unsigned char *gnmr__put_u32(unsigned char *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 4;
}
static unsigned char *gnmr__put_u64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 8;
}
static unsigned char *gnmr__put_f64(unsigned char *p, double v) {
  uint64_t bits;
  memcpy(&bits, &v, 8);
  return gnmr__put_u64(p, bits);
}
static unsigned char *gnmr__put_f32(unsigned char *p, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  return gnmr__put_u32(p, bits);
}
static uint32_t gnmr__get_u32(const unsigned char **p) {
  uint32_t v = 0;
  int i;
  for (i = 0; i < 4; i++) v |= (uint32_t)(*p)[i] << (8 * i);
  *p += 4;
  return v;
}
static uint64_t gnmr__get_u64(const unsigned char **p) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 8; i++) v |= (uint64_t)(*p)[i] << (8 * i);
  *p += 8;
  return v;
}
static double gnmr__get_f64(const unsigned char **p) {
  uint64_t bits = gnmr__get_u64(p);
  double v;
  memcpy(&v, &bits, 8);
  return v;
}
static float gnmr__get_f32(const unsigned char **p) {
  uint32_t bits = gnmr__get_u32(p);
  float v;
  memcpy(&v, &bits, 4);
  return v;
}

static uint32_t gnmr__crc32(const unsigned char *p, size_t n) {
  uint32_t table[256], crc = 0xFFFFFFFFu;
  uint32_t i;
  for (i = 0; i < 256; i++) {
    uint32_t c = i;
    int j;
    for (j = 0; j < 8; j++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    table[i] = c;
  }
  while (n--) crc = table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

GNMR_DEF size_t gnmr_checkpoint_size(const gnmr_ctl *ctl) {
  if (!ctl || ctl->magic != GNMR__MAGIC) return 0;
  return gnmr__ckpt_size(ctl->n_units);
}

GNMR_DEF int gnmr_checkpoint_save(const gnmr_ctl *ctl, void *buf, size_t cap,
                                  size_t *written) {
  const gnmr_config *c;
  unsigned char *p;
  size_t size;
  uint32_t u, i;
  if (!ctl || !written) return GNMR_EINVAL;
  if (ctl->magic != GNMR__MAGIC) return GNMR_ESTATE;
  size = gnmr__ckpt_size(ctl->n_units);
  *written = size;
  if (!buf) return GNMR_OK;
  if (cap < size) return GNMR_ESIZE;
  c = &ctl->cfg;
  p = (unsigned char *)buf;
  memcpy(p, gnmr__ckpt_magic, 8);
  p = gnmr__put_u32(p + 8, GNMR__CKPT_VERSION);
  p = gnmr__put_u32(p, ctl->n_units);
  p = gnmr__put_u32(p, GNMR_WINDOW_MAX);
  p = gnmr__put_u32(p, 0);
  p = gnmr__put_f64(p, c->ratio_threshold);
  p = gnmr__put_f64(p, c->delta_threshold);
  p = gnmr__put_f64(p, c->history_decay);
  p = gnmr__put_f64(p, c->eps);
  p = gnmr__put_u32(p, c->delta_window);
  p = gnmr__put_u32(p, c->warmup_steps);
  p = gnmr__put_u32(p, c->max_recovering);
  p = gnmr__put_u32(p, c->lock_steps);
  p = gnmr__put_u32(p, c->cooldown_steps);
  p = gnmr__put_u32(p, (uint32_t)c->spike_policy);
  p = gnmr__put_u64(p, ctl->steps);
  p = gnmr__put_u64(p, ctl->risky);
  p = gnmr__put_u64(p, ctl->nonfinite);
  p = gnmr__put_u64(p, ctl->admissions);
  p = gnmr__put_u64(p, ctl->renewals);
  p = gnmr__put_u64(p, ctl->recovery_steps);
  p = gnmr__put_u64(p, ctl->over_budget);
  p = gnmr__put_u32(p, ctl->recovering);
  p = gnmr__put_u32(p, ctl->peak_recovering);
  for (u = 0; u < ctl->n_units; u++) {
    const gnmr_unit *s = &ctl->units[u];
    p = gnmr__put_f64(p, s->mean);
    p = gnmr__put_f64(p, s->window_sum);
    for (i = 0; i < GNMR_WINDOW_MAX; i++) p = gnmr__put_f32(p, s->window[i]);
    p = gnmr__put_u64(p, s->finite_steps);
    p = gnmr__put_u64(p, s->risky);
    p = gnmr__put_u64(p, s->nonfinite);
    p = gnmr__put_u64(p, s->admissions);
    p = gnmr__put_u64(p, s->renewals);
    p = gnmr__put_u64(p, s->recovery_steps);
    p = gnmr__put_u64(p, s->over_budget);
    p = gnmr__put_u32(p, s->lock);
    p = gnmr__put_u32(p, s->cooldown);
    p = gnmr__put_u32(p, s->window_head);
  }
  p = gnmr__put_u32(p, gnmr__crc32((const unsigned char *)buf,
                                   (size_t)(p - (unsigned char *)buf)));
  GNMR_ASSERT((size_t)(p - (unsigned char *)buf) == size);
  return GNMR_OK;
}

/* Reads one unit; 0 if its state could not have come from gnmr_step. */
static int gnmr__ckpt_unit(const unsigned char **p, const gnmr_config *c,
                           gnmr_unit *s) {
  uint32_t i, filled;
  float cap = gnmr__window_value(c->ratio_threshold);
  double sum = 0.0;
  memset(s, 0, sizeof *s);
  s->mean = gnmr__get_f64(p);
  s->window_sum = gnmr__get_f64(p);
  for (i = 0; i < GNMR_WINDOW_MAX; i++) s->window[i] = gnmr__get_f32(p);
  s->finite_steps = gnmr__get_u64(p);
  s->risky = gnmr__get_u64(p);
  s->nonfinite = gnmr__get_u64(p);
  s->admissions = gnmr__get_u64(p);
  s->renewals = gnmr__get_u64(p);
  s->recovery_steps = gnmr__get_u64(p);
  s->over_budget = gnmr__get_u64(p);
  s->lock = gnmr__get_u32(p);
  s->cooldown = gnmr__get_u32(p);
  s->window_head = gnmr__get_u32(p);
  filled = s->finite_steps < c->delta_window ? (uint32_t)s->finite_steps
                                             : c->delta_window;
  if (!(isfinite(s->mean) && s->mean >= 0.0) || !isfinite(s->window_sum) ||
      s->lock > c->lock_steps || s->cooldown > c->cooldown_steps ||
      (s->lock > 0 && s->cooldown > 0) || s->window_head >= c->delta_window ||
      (filled < c->delta_window && s->window_head != filled))
    return 0;
  for (i = 0; i < GNMR_WINDOW_MAX; i++) {
    float r = s->window[i];
    if (i < filled ? !(r >= 0.0f && r <= cap) : r != 0.0f) return 0;
    sum += (double)r;
  }
  /* window_sum runs between the once-per-lap exact re-adds: its rounding
     stays below 2 W (W + 2) 2^-53 cap; anything further off was not
     written by gnmr_step. */
  return fabs(s->window_sum - sum) <= 1e-12 * (double)c->delta_window * cap;
}

static int gnmr__ckpt_read(gnmr_ctl *ctl, const unsigned char *buf, size_t len,
                           int apply) {
  const unsigned char *p = buf;
  gnmr_config c;
  uint64_t totals[7];
  uint32_t n, recovering, peak, u, locked = 0;
  int i;
  if (len < GNMR__CKPT_HEADER) return GNMR_ESIZE;
  if (memcmp(p, gnmr__ckpt_magic, 8) != 0) return GNMR_ECORRUPT;
  p += 8;
  if (gnmr__get_u32(&p) != GNMR__CKPT_VERSION) return GNMR_EVERSION;
  n = gnmr__get_u32(&p);
  if (n > (SIZE_MAX - gnmr__ckpt_size(0)) / GNMR__CKPT_UNIT ||
      len != gnmr__ckpt_size(n))
    return GNMR_ESIZE;
  p = buf + len - 4;
  if (gnmr__crc32(buf, len - 4) != gnmr__get_u32(&p)) return GNMR_ECORRUPT;
  p = buf + 16;
  if (gnmr__get_u32(&p) != GNMR_WINDOW_MAX || gnmr__get_u32(&p) != 0)
    return GNMR_ECORRUPT;
  if (n != ctl->n_units) return GNMR_EMISMATCH;
  c.ratio_threshold = gnmr__get_f64(&p);
  c.delta_threshold = gnmr__get_f64(&p);
  c.history_decay = gnmr__get_f64(&p);
  c.eps = gnmr__get_f64(&p);
  c.delta_window = gnmr__get_u32(&p);
  c.warmup_steps = gnmr__get_u32(&p);
  c.max_recovering = gnmr__get_u32(&p);
  c.lock_steps = gnmr__get_u32(&p);
  c.cooldown_steps = gnmr__get_u32(&p);
  c.spike_policy = (int)gnmr__get_u32(&p);
  if (gnmr_config_validate(&c) != GNMR_OK || c.max_recovering > n)
    return GNMR_ECORRUPT;
  for (i = 0; i < 7; i++) totals[i] = gnmr__get_u64(&p);
  recovering = gnmr__get_u32(&p);
  peak = gnmr__get_u32(&p);
  if (recovering > c.max_recovering || peak > c.max_recovering ||
      recovering > peak)
    return GNMR_ECORRUPT;
  for (u = 0; u < n; u++) {
    gnmr_unit s;
    if (!gnmr__ckpt_unit(&p, &c, &s)) return GNMR_ECORRUPT;
    locked += s.lock > 0;
    if (apply) ctl->units[u] = s;
  }
  if (locked != recovering) return GNMR_ECORRUPT;
  if (apply) {
    ctl->cfg = c;
    ctl->full_weight_from = gnmr__full_weight_from(c.history_decay);
    ctl->steps = totals[0];
    ctl->risky = totals[1];
    ctl->nonfinite = totals[2];
    ctl->admissions = totals[3];
    ctl->renewals = totals[4];
    ctl->recovery_steps = totals[5];
    ctl->over_budget = totals[6];
    ctl->recovering = recovering;
    ctl->peak_recovering = peak;
  }
  return GNMR_OK;
}

GNMR_DEF int gnmr_checkpoint_load(gnmr_ctl *ctl, const void *buf, size_t len) {
  int rc;
  if (!ctl || !buf) return GNMR_EINVAL;
  if (ctl->magic != GNMR__MAGIC) return GNMR_ESTATE;
  /* Validate everything first: a refused load changes nothing. */
  rc = gnmr__ckpt_read(ctl, (const unsigned char *)buf, len, 0);
  if (rc == GNMR_OK)
    rc = gnmr__ckpt_read(ctl, (const unsigned char *)buf, len, 1);
  return rc;
}

/* ---- norm helpers ---------------------------------------------------------
   Canonical summation: element i of a chunk of GNMR_SUM_CHUNK goes to lane
   i mod 32; each lane adds its squares in order, in double, from +0; lanes
   fold by halves (16, 8, 4, 2, 1: a warp shuffle-down); chunk sums combine
   by a bottom-up pairwise tree, an odd last one carried up. Squares of
   f32/f16/bf16 values are exact in double, so fixing the order of additions
   fixes the bits on every path. */

static float gnmr__bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static float gnmr__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu, bits;
  float f;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else { /* subnormal: normalise; exact in f32 */
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      exp--;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  memcpy(&f, &bits, 4);
  return f;
}

/* Bottom-up pairwise tree over chunk sums, streamed: a binary counter of
   partial sums, folded top-down at the end (the same tree as pairing level
   by level with the odd last one carried up). */
typedef struct gnmr__tree {
  double level[64];
  uint64_t chunks;
  int depth;
} gnmr__tree;

static void gnmr__tree_add(gnmr__tree *t, double chunk_sum) {
  uint64_t c;
  t->level[t->depth++] = chunk_sum;
  for (c = ++t->chunks; (c & 1u) == 0; c >>= 1) {
    t->depth--;
    t->level[t->depth - 1] += t->level[t->depth];
  }
}

static double gnmr__tree_sum(gnmr__tree *t) {
  while (t->depth > 1) {
    t->depth--;
    t->level[t->depth - 1] += t->level[t->depth];
  }
  return t->depth ? t->level[0] : 0.0;
}

static double gnmr__lane_fold(double *lane) {
  int half, j;
  for (half = GNMR_SUM_LANES / 2; half >= 1; half /= 2)
    for (j = 0; j < half; j++) lane[j] += lane[j + half];
  return lane[0];
}

/* Loads by memcpy: tensors may sit at any address (gnmr_tensor.data). */
static float gnmr__load(const void *x, size_t i, int dtype) {
  const unsigned char *p = (const unsigned char *)x;
  uint16_t h;
  if (dtype == GNMR_F32) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
  }
  memcpy(&h, p + 2 * i, 2);
  return dtype == GNMR_F16 ? gnmr__f16_to_f32(h) : gnmr__bf16_to_f32(h);
}

/* The scalar reference path: every other path must give its bits. */
static void gnmr__stats_scalar(const void *x, size_t n, int dtype,
                               gnmr_tensor_stats *out) {
  gnmr__tree tree;
  double amax = 0.0;
  uint64_t nonfinite = 0;
  size_t start;
  memset(&tree, 0, sizeof tree);
  for (start = 0; start < n; start += GNMR_SUM_CHUNK) {
    double lane[GNMR_SUM_LANES] = {0};
    size_t i, end = n - start < GNMR_SUM_CHUNK ? n : start + GNMR_SUM_CHUNK;
    for (i = start; i < end; i++) {
      double v = (double)gnmr__load(x, i, dtype);
      lane[(i - start) % GNMR_SUM_LANES] += v * v;
      if (!isfinite(v))
        nonfinite++;
      else if (fabs(v) > amax)
        amax = fabs(v);
    }
    gnmr__tree_add(&tree, gnmr__lane_fold(lane));
  }
  out->sumsq = gnmr__tree_sum(&tree);
  out->amax = amax;
  out->nonfinite = nonfinite;
}

static void gnmr__stats(const void *x, size_t n, int dtype,
                        gnmr_tensor_stats *out) {
  gnmr__stats_scalar(x, n, dtype, out);
}

GNMR_DEF void gnmr_stats_f32(const float *x, size_t n, gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_F32, out);
}
GNMR_DEF void gnmr_stats_f16(const uint16_t *x, size_t n,
                             gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_F16, out);
}
GNMR_DEF void gnmr_stats_bf16(const uint16_t *x, size_t n,
                              gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_BF16, out);
}
GNMR_DEF double gnmr_sumsq_f32(const float *x, size_t n) {
  gnmr_tensor_stats s;
  gnmr__stats(x, n, GNMR_F32, &s);
  return s.sumsq;
}
GNMR_DEF double gnmr_sumsq_f16(const uint16_t *x, size_t n) {
  gnmr_tensor_stats s;
  gnmr__stats(x, n, GNMR_F16, &s);
  return s.sumsq;
}
GNMR_DEF double gnmr_sumsq_bf16(const uint16_t *x, size_t n) {
  gnmr_tensor_stats s;
  gnmr__stats(x, n, GNMR_BF16, &s);
  return s.sumsq;
}

static int gnmr__tensors_valid(const gnmr_tensor *t, size_t nt,
                               uint32_t n_units) {
  size_t i;
  if (nt > 0 && !t) return 0;
  for (i = 0; i < nt; i++)
    if (t[i].unit >= n_units || (t[i].n > 0 && !t[i].data) ||
        (t[i].dtype != GNMR_F32 && t[i].dtype != GNMR_F16 &&
         t[i].dtype != GNMR_BF16))
      return 0;
  return 1;
}

GNMR_DEF int gnmr_unit_sumsq(const gnmr_tensor *t, size_t nt, double *sumsq,
                             uint32_t n_units) {
  size_t i;
  if ((n_units > 0 && !sumsq) || !gnmr__tensors_valid(t, nt, n_units))
    return GNMR_EINVAL;
  for (i = 0; i < n_units; i++) sumsq[i] = 0.0;
  for (i = 0; i < nt; i++) {
    gnmr_tensor_stats s;
    gnmr__stats(t[i].data, t[i].n, t[i].dtype, &s);
    sumsq[t[i].unit] += s.sumsq;
  }
  return GNMR_OK;
}

GNMR_DEF int gnmr_unit_norms(const gnmr_tensor *t, size_t nt, float *norms,
                             uint32_t n_units) {
  size_t i;
  uint32_t u;
  if ((n_units > 0 && !norms) || !gnmr__tensors_valid(t, nt, n_units))
    return GNMR_EINVAL;
  for (i = 1; i < nt; i++)
    if (t[i].unit < t[i - 1].unit) return GNMR_EINVAL;
  for (u = 0; u < n_units; u++) norms[u] = 0.0f;
  for (i = 0; i < nt;) {
    double sum = 0.0;
    u = t[i].unit;
    for (; i < nt && t[i].unit == u; i++) {
      gnmr_tensor_stats s;
      gnmr__stats(t[i].data, t[i].n, t[i].dtype, &s);
      sum += s.sumsq;
    }
    norms[u] = (float)sqrt(sum);
  }
  return GNMR_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

GNMR_DEF int gnmr_isa_supported(int isa) { return isa == GNMR_ISA_SCALAR; }
GNMR_DEF int gnmr_isa_active(void) { return GNMR_ISA_SCALAR; }
GNMR_DEF int gnmr_isa_force(int isa) {
  return gnmr_isa_supported(isa) ? GNMR_OK : GNMR_EISA;
}
GNMR_DEF const char *gnmr_isa_name(int isa) {
  switch (isa) {
  case GNMR_ISA_SCALAR: return "scalar";
  case GNMR_ISA_SSE2: return "sse2";
  case GNMR_ISA_AVX2: return "avx2";
  case GNMR_ISA_AVX512: return "avx512";
  case GNMR_ISA_NEON: return "neon";
  default: return "unknown";
  }
}

#ifdef __cplusplus
}
#endif
#endif /* GNMR__IMPLEMENTED */
#endif /* GNMR_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the gnmr.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
*/
