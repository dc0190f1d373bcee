/* train_lm.c - a byte-level GPT trained under low-precision stress, with and
   without gnmr.h.

   The model (read top to bottom): token and position embeddings, pre-LayerNorm
   blocks with causal multi-head attention and a GELU MLP, a final LayerNorm
   and the LM head; forward, backward, AdamW with warm-up and cosine decay
   (--optimizer: SGD with momentum, Lion; --schedule: WSD, linear,
   constant, inverse square root; --warmup: its length).
   Every linear layer is a recoverable unit: per block qkv, attention output,
   MLP up and MLP down, and the head (4 x layers + 1 units). A unit's low-cost
   path quantizes its GEMM inputs (activation and weight) per tensor to FP8
   E4M3, FP8 E5M2 or FP4 E2M1 with delayed scaling from a 16-step amax history
   (lab/lowp.h, shared with train_stress.c), or to FP4 E2M1 with a scale
   per 1x16 block (--format nvfp4, NVFP4 style); its high-fidelity path is
   plain f32. Gradients, attention, LayerNorm and the optimizer are f32 on
   every path, except that --grad-format F quantizes the low-cost path's
   output gradients (the backward GEMMs' input) too.

   Two kinds of stress (ground truth in stress.csv):
     natural   no injection: a format or learning rate where low precision
               alone hurts (--sweep: f32 against lowp, every seed; see
               bench/RESULTS.md, "LM demo: how its settings were found")
     injected  --stress N: N faults per 1000 steps on the low-cost path of
               one unit at a time, of three kinds known from LLM training:
       outlier  residual-stream channel outliers: LM_OUTLIER_CHANNELS input
                channels of a unit that reads the residual stream (qkv, MLP
                up, head) grow by x2 per step from x8 for 6-12 steps; the
                growth lands in the amax history, so the scale stays stale
                for LP_AMAX_HISTORY steps after it
       logit    attention-logit growth in one head: the head's queries and
                keys out of the qkv unit grow by x1.25 per step from x2 (the
                logits by the square) for 6-12 steps
       stale    a stale activation scale: LM_STALE_GAIN too large for 2-6
                steps, most of the tensor saturates
     A unit on the f32 path does not see its faults.
   Two training events that are not faults (lab/common.h): --freeze
   B:P trains block B (its four units and LayerNorms) only after the first
   P% of steps, its units' gradient norms exactly 0 before; --shift U:P
   reparametrises unit U at P% of the steps so that its gradient norm moves
   up 10x for good while the training goes on unchanged.

   Arms, with the same seeds, initial weights, data order and faults (the
   table LM_ARMS; an arm is one row):
     f32    every unit f32, no faults
     lowp   low precision, no control
     clip   low precision, global gradient-norm clipping to 1.0
     adagc  low precision, per-unit adaptive clipping (AdaGC style): a unit's
            gradient is clipped to 1.05 x the EMA (beta 0.98) of its norm
     zclip, gstab, spam (only when --arms names them): peers of the
            library (lab/arms.h): ZClip's z-score clip of the global
            norm; GradientStabilizer style, each unit's norm bounded by
            mean + 3 sd of its own history; SPAM, AdamW's spike-aware
            per-entry clip and momentum reset (--optimizer adamw only)
     gnmr   low precision with gnmr.h: per-unit norms from gnmr_unit_norms,
            decisions from gnmr_step; a recovering unit runs f32 and its
            gradient is multiplied by the decision's scale; on admission its
            amax histories start afresh. Config: gnmr_config_default()
            (the paper rules); gnmr-noise: gnmr_config_noise();
            gnmr-global: gnmr_config_noise() with the global clip
            (lab/arms.h).
     f32-clip, f32-adagc, f32-gnmr, f32-gnmr-noise (only when --arms names
            them): the control on the f32 model, no faults: what the
            control does to training, apart from precision.
     place-RULE-B (only when --arms names them): a placement rule puts
            units on the f32 path within B% of the units' GEMM FLOPs, in
            space (static sets, a set measured once), in time (the late
            switch) or by a measured signal (the placement section below,
            lab/arms.h).

   The GEMMs, attention (over batch x heads), LayerNorm, GELU, softmax and
   AdamW run on --threads pthreads; each output element is computed by
   exactly one thread in a fixed order, so any thread count gives the same
   bits.

   Data: the text of Debian's fortunes package (--data DIR, default
   /usr/share/games/fortunes): every file without a '.' in its name, in name
   order, split at the "%" lines; every LM_VAL_EVERY-th fortune is validation.

   Outputs in --out: summary.csv (hf_flops: the share of the units' GEMM
   FLOPs on the f32 path; val_bpb on the f32 path, val_bpb_served with each
   unit's forward on its last step's path: lm_served_paths), loss.csv (every
   step's training loss), trace.csv (the first gnmr arm, first seed),
   stress.csv, units.csv (each arm's unit-steps on the f32 path and its first,
   per unit), groups.csv (each gnmr arm's unit-steps flagged and admissions,
   and those of the units that cover a LayerNorm: --units), place_trace.csv
   (the placement signals of the lowp and placement arms, first seed),
   loss.svg, recovery.svg; with --sweep, sweep.csv.

   Build and run: make demo-lm (both settings, every arm x 3 seeds),
   make demo-lm-quick, make demo-lm-sweep. Define LM_DOUBLE to build the
   model in double (the gradient check in tests/test_lm.c), and
   TRAIN_LM_NO_MAIN to include this file without its main(). */
#define _POSIX_C_SOURCE 200809L /* opendir, clock_gettime */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lowp.h"
#include "arms.h"
#define DEMO_PROGRAM "train_lm"
#include "common.h"

#ifdef LM_DOUBLE
typedef double lm_real;
#define LM_TANH tanh
#else
typedef float lm_real;
#define LM_TANH tanhf
#endif

/* ---- constants ----------------------------------------------------------- */

#define LM_VOCAB 256
#define LM_MAX_LAYERS 8
#define LM_MAX_UNITS (4 * LM_MAX_LAYERS + 1)
#define LM_MAX_THREADS 16
#define LM_VAL_EVERY 20          /* fortune k is validation if k % 20 == 0 */
#define LM_OUTLIER_CHANNELS 4    /* outlier: channels hit */
#define LM_OUTLIER_GAIN0 8.0     /* outlier: gain on the first step */
#define LM_OUTLIER_GROWTH 2.0    /* outlier: gain x this per step */
#define LM_OUTLIER_GAIN_MAX 4096 /* outlier: gain cap */
#define LM_LOGIT_GAIN0 2.0       /* logit growth: q and k gain, first step */
#define LM_LOGIT_GROWTH 1.25     /* logit growth: x this per step */
#define LM_STALE_GAIN 64.0f      /* stale scale: factor the scale is off by */
#define LM_SPIKE_FACTOR 1.5      /* a loss spike: loss > 1.5 x running EMA */
#define LM_MAX_EVENTS 256

static double lm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds the forward pass of this run spent measuring signals (forward
   signals, the placer's weight quantization error): the arm's overhead. */
static double lm_signal_time;

/* ---- threads: a row range per thread, rows in a fixed order -------------- */

static int lm_threads = 2; /* --threads */

typedef void (*lm_task)(void *ctx, int r0, int r1);
typedef struct lm_job {
  lm_task fn;
  void *ctx;
  int r0, r1;
} lm_job;

/* A pool of lm_threads - 1 workers (the caller is thread 0), alive for one
   training run. lm_parallel hands each thread one contiguous range of rows
   and waits for all of them. */
typedef struct lm_pool {
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  pthread_t th[LM_MAX_THREADS];
  lm_job jobs[LM_MAX_THREADS];
  int n, pending, quit;
  unsigned gen;
} lm_pool;
static lm_pool lm_pool_g;

static void *lm_worker(void *arg) {
  lm_pool *p = &lm_pool_g;
  int idx = (int)(intptr_t)arg;
  unsigned seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    lm_job j;
    while (p->gen == seen && !p->quit) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) break;
    seen = p->gen;
    j = p->jobs[idx];
    pthread_mutex_unlock(&p->mu);
    j.fn(j.ctx, j.r0, j.r1);
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void lm_pool_start(void) {
  lm_pool *p = &lm_pool_g;
  int t;
  memset(p, 0, sizeof *p);
  p->n = lm_threads;
  if (p->n <= 1) return;
  if (pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->go, NULL) ||
      pthread_cond_init(&p->done, NULL))
    DEMO_DIE("cannot set up the thread pool");
  for (t = 1; t < p->n; t++)
    if (pthread_create(&p->th[t], NULL, lm_worker, (void *)(intptr_t)t) != 0)
      DEMO_DIE("pthread_create failed");
}

static void lm_pool_stop(void) {
  lm_pool *p = &lm_pool_g;
  int t;
  if (p->n <= 1) return;
  pthread_mutex_lock(&p->mu);
  p->quit = 1;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (t = 1; t < p->n; t++) pthread_join(p->th[t], NULL);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  p->n = 0;
}

/* fn(ctx, r0, r1) over [0, rows) split into contiguous ranges, one per
   thread. Each task writes only its own rows, and a row's arithmetic does
   not depend on the split: any thread count gives the same bits. */
static void lm_parallel(lm_task fn, void *ctx, int rows) {
  lm_pool *p = &lm_pool_g;
  int t;
  if (p->n <= 1 || rows < 2) {
    fn(ctx, 0, rows);
    return;
  }
  pthread_mutex_lock(&p->mu);
  for (t = 0; t < p->n; t++) {
    p->jobs[t].fn = fn;
    p->jobs[t].ctx = ctx;
    p->jobs[t].r0 = (int)((long)rows * t / p->n);
    p->jobs[t].r1 = (int)((long)rows * (t + 1) / p->n);
  }
  p->pending = p->n - 1;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  fn(ctx, p->jobs[0].r0, p->jobs[0].r1);
  pthread_mutex_lock(&p->mu);
  while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

/* y += a * x (lab/common.h), in the model's precision. */
DEMO_AXPY(lm_axpy, lm_real)

/* ---- the linear layer: one recoverable unit ------------------------------ */

typedef struct lm_linear {
  int in, out;
  lm_real *w, *b;   /* w: in x out (row i = input feature i); in params */
  lm_real *dw, *db; /* in grads */
  lm_real *xq, *wq; /* the GEMM inputs used this step (quantized or not) */
  lm_real *xf;      /* the unquantized input, for an f32 weight gradient */
  int hfg;          /* low-cost path: its GEMMs on f32 anyway (LM_GEMM_*) */
  lm_real *wt;      /* scratch: wq transposed, for the input gradient */
  lm_real *wsr;     /* the weight stochastically rounded (lm_path.sr) */
  int srd;          /* this step: the input gradient reads wsr, not wq */
  lp_scaler sx, sw; /* delayed scaling of the activation and the weight */
  float qerr;       /* forward signal: ||Q(x) - x|| / ||x|| this step */
  float gain;       /* output multiplier: 1, DEMO_SHIFT_GAIN after --shift */
  /* The placement arms' signals (lm_path.measure, .out_err): */
  lm_real *yref;  /* scratch: the output from unquantized inputs */
  lm_real *wprev; /* the weights before this step's update */
  /* --grad-format: the low-cost path's output gradient, quantized */
  const lp_format *gfmt; /* this step's (NULL: f32) */
  lp_scaler sg;          /* its delayed scaling */
  lm_real *dyq;          /* N x out */
  float wqerr;           /* ||Q(w) - w|| of this step's weight quantization */
  float oerr; /* ||y - yref|| / ||yref||: the output's relative error */
} lm_linear;

/* A unit's three GEMMs, as bits: placement per GEMM (lm_path.hf_gemms)
   runs some of them on f32 while the others stay on the low-cost path. An
   f32 GEMM reads the unquantized weight, activation and output gradient;
   the bias gradient goes with the weight gradient. */
#define LM_GEMM_FWD ((int)GNMR_GEMM_FWD)     /* y = x W */
#define LM_GEMM_DGRAD ((int)GNMR_GEMM_DGRAD) /* dx = dy W^T */
#define LM_GEMM_WGRAD ((int)GNMR_GEMM_WGRAD) /* dW = x^T dy */
#define LM_GEMM_ALL ((int)GNMR_GEMM_ALL)

static int lm_gemm_count(int gemms) {
  return (gemms & 1) + (gemms >> 1 & 1) + (gemms >> 2 & 1);
}

/* What a unit's path does this step. */
typedef struct lm_path {
  const lp_format *fmt; /* NULL: the f32 path */
  int hf_gemms;         /* low-cost path: these GEMMs on f32 (LM_GEMM_*) */
  int track;            /* f32 path that keeps the amax histories fresh */
  double outlier_gain;  /* > 0: channels [outlier_c0, +4) x gain */
  int outlier_c0;
  double logit_gain; /* > 0: head logit_head's q and k x gain (qkv unit) */
  int logit_head, n_head;
  int stale; /* activation scale x LM_STALE_GAIN */
  int jit;   /* per-tensor format: scale by this tensor's own amax */
  /* != 0: the input gradient's GEMM reads the weight stochastically
     rounded (lm_round's key) at wq's scale, not wq; the forward keeps wq */
  uint64_t sr;
  /* The forward signal's format (arms with forward signals only): the
     GEMM input's relative quantization error goes to lm_linear.qerr; on
     the f32 path, the error this format would give at the current scale. */
  const lp_format *probe;
  const lp_format *gfmt; /* low-cost path: --grad-format, or NULL */
  int measure;           /* low-cost path: lm_linear.wqerr */
  int out_err;           /* low-cost path: lm_linear.oerr (one more f32 GEMM) */
} lm_path;

typedef struct lm_gemm_ctx {
  const lm_real *x, *w, *b, *dy;
  lm_real *y, *dw, *db;
  int n, in, out;
} lm_gemm_ctx;

/* y[r] = b + sum_i x[r][i] w[i], rows r0..r1. */
static void lm_gemm_fwd_rows(void *p, int r0, int r1) {
  const lm_gemm_ctx *c = (const lm_gemm_ctx *)p;
  int r, i;
  for (r = r0; r < r1; r++) {
    lm_real *y = c->y + (size_t)r * (size_t)c->out;
    const lm_real *x = c->x + (size_t)r * (size_t)c->in;
    memcpy(y, c->b, sizeof *y * (size_t)c->out);
    for (i = 0; i < c->in; i++)
      lm_axpy(y, x[i], c->w + (size_t)i * (size_t)c->out, c->out);
  }
}

/* dx[r] = sum_o dy[r][o] wt[o] (w = wt transposed, in x out), rows r0..r1.
   Here c->w is wt (out x in) and c->y is dx. */
static void lm_gemm_dx_rows(void *p, int r0, int r1) {
  const lm_gemm_ctx *c = (const lm_gemm_ctx *)p;
  int r, o;
  for (r = r0; r < r1; r++) {
    lm_real *dx = c->y + (size_t)r * (size_t)c->in;
    const lm_real *dy = c->dy + (size_t)r * (size_t)c->out;
    memset(dx, 0, sizeof *dx * (size_t)c->in);
    for (o = 0; o < c->out; o++)
      lm_axpy(dx, dy[o], c->w + (size_t)o * (size_t)c->in, c->in);
  }
}

/* dw[i] = sum over batch rows n (in order) of x[n][i] dy[n], for weight rows
   i in r0..r1. */
static void lm_gemm_dw_rows(void *p, int r0, int r1) {
  const lm_gemm_ctx *c = (const lm_gemm_ctx *)p;
  int n, i;
  memset(c->dw + (size_t)r0 * (size_t)c->out, 0,
         sizeof *c->dw * (size_t)(r1 - r0) * (size_t)c->out);
  for (n = 0; n < c->n; n++) {
    const lm_real *x = c->x + (size_t)n * (size_t)c->in,
                  *dy = c->dy + (size_t)n * (size_t)c->out;
    for (i = r0; i < r1; i++)
      lm_axpy(c->dw + (size_t)i * (size_t)c->out, x[i], dy, c->out);
  }
}

/* For the output columns o0..o1: the bias gradient db[o] = sum over the
   batch rows (in order) of dy[n][o], and the row o of wt = w transposed
   (c->w is w, c->y is wt). */
static void lm_gemm_db_wt_cols(void *p, int o0, int o1) {
  const lm_gemm_ctx *c = (const lm_gemm_ctx *)p;
  lm_real *db = c->db;
  int n, i, o;
  for (o = o0; o < o1; o++) {
    db[o] = 0;
    for (n = 0; n < c->n; n++)
      db[o] += c->dy[(size_t)n * (size_t)c->out + (size_t)o];
    for (i = 0; i < c->in; i++)
      c->y[(size_t)o * (size_t)c->in + (size_t)i] =
          c->w[(size_t)i * (size_t)c->out + (size_t)o];
  }
}

/* The format's value next to x, stochastically rounded: one of the two
   neighbours of |x|, the upper with probability its distance's share
   (unbiased inside the range), saturating at the largest as lp_quantize;
   the uniform draw is that of value i under `key`, so the result does not
   depend on the threads' split. key 0: round to nearest (lp_quantize). */
static float lm_round(float x, const lp_format *f, uint64_t key, size_t i) {
  uint64_t st = key ^ ((uint64_t)i * UINT64_C(0x9E3779B97F4A7C15));
  float a = fabsf(x), q;
  uint32_t bits;
  int e;
  if (!key) return lp_quantize(x, f);
  if (isnan(x) || a == 0.0f) return x;
  if (!(a < f->max)) return x < 0 ? -f->max : f->max;
  memcpy(&bits, &a, sizeof bits);
  e = (int)(bits >> 23) - 127;
  if (e < f->emin) e = f->emin;
  q = (float)(floor((double)a * lp_pow2f(f->mbits - e) +
                    splitmix_uniform(&st)) *
              lp_pow2f(e - f->mbits));
  if (q > f->max) q = f->max;
  return x < 0 ? -q : q;
}

typedef struct lm_quant_ctx {
  const lm_real *x;
  lm_real *out;
  const lp_format *fmt;
  float scale;
  int cols;
  uint64_t sr; /* lm_round's key (0: to nearest) */
} lm_quant_ctx;

static void lm_quant_rows(void *p, int r0, int r1) {
  const lm_quant_ctx *c = (const lm_quant_ctx *)p;
  size_t i, a = (size_t)r0 * (size_t)c->cols, z = (size_t)r1 * (size_t)c->cols;
  for (i = a; i < z; i++)
    c->out[i] =
        (lm_real)(lm_round((float)c->x[i] * c->scale, c->fmt, c->sr, i) /
                  c->scale);
}

static float lm_amax(const lm_real *x, size_t n) {
  lm_real a = 0;
  size_t i;
  for (i = 0; i < n; i++)
    if (fabs((double)x[i]) > a) a = (lm_real)fabs((double)x[i]);
  return (float)a;
}

/* A block-scaled format (lowp.h lp_block_scale) on rows x cols of x: blocks
   of fmt->block along a row, or, with `down`, along a column (the weight's
   inner dimension is its rows). In place is allowed. */
static void lm_quantize_blocks(const lm_real *x, int rows, int cols, int down,
                               const lp_format *fmt, float amax, uint64_t sr,
                               lm_real *out) {
  float ts = lp_block_tensor_scale(amax, fmt);
  int outer = down ? cols : rows, len = down ? rows : cols, o, b, i;
  size_t stride = down ? (size_t)cols : 1, ostride = down ? 1 : (size_t)cols;
  for (o = 0; o < outer; o++)
    for (b = 0; b < len; b += fmt->block) {
      size_t at = (size_t)o * ostride + (size_t)b * stride;
      int e = len - b < fmt->block ? len - b : fmt->block;
      float ba = 0.0f, sc;
      for (i = 0; i < e; i++) {
        float v = (float)fabs((double)x[at + (size_t)i * stride]);
        if (v > ba) ba = v;
      }
      sc = lp_block_scale(ba, fmt, ts);
      for (i = 0; i < e; i++) {
        size_t k = at + (size_t)i * stride;
        out[k] = sc > 0.0f
                     ? (lm_real)(lm_round((float)x[k] / sc, fmt, sr, k) * sc)
                     : 0;
      }
    }
}

/* Quantize rows x cols of x into out with the scaler's delayed scale (times
   `gain`), then push this tensor's amax into the history; a block-scaled
   format scales per block (`down`: blocks along the columns) instead. sr:
   lm_round's key (0: to nearest). */
static void lm_quantize(const lm_real *x, int rows, int cols, int down,
                        const lp_format *fmt, lp_scaler *s, float gain,
                        uint64_t sr, lm_real *out) {
  lm_quant_ctx c;
  float amax = lm_amax(x, (size_t)rows * (size_t)cols);
  if (fmt->block) {
    lm_quantize_blocks(x, rows, cols, down, fmt, amax, sr, out);
    return;
  }
  c.x = x;
  c.out = out;
  c.fmt = fmt;
  c.scale = lp_scaler_scale(s, fmt, amax) * gain;
  c.cols = cols;
  c.sr = sr;
  lm_parallel(lm_quant_rows, &c, rows);
  lp_scaler_push(s, amax);
}

/* ||a - b|| over n values (b NULL: ||a||). */
static double lm_dist(const lm_real *a, const lm_real *b, size_t n) {
  double s = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    double d = (double)a[i] - (b ? (double)b[i] : 0.0);
    s += d * d;
  }
  return sqrt(s);
}

/* The forward signal (lowp.h's lp_quant_error). The double build checks
   gradients only and runs no controller: it has no forward signal. */
static float lm_quant_error(const lm_real *x, const lm_real *xq, size_t n,
                            const lp_format *f, float scale) {
#ifdef LM_DOUBLE
  (void)x, (void)xq, (void)n, (void)f, (void)scale;
  return 0.0f;
#else
  return lp_quant_error(x, xq, n, f, scale);
#endif
}

/* y (n x out) = x (n x in) . w + b on the unit's path; saves the GEMM
   inputs for the backward pass. */
static void lm_linear_forward(lm_linear *L, const lm_real *x, int n,
                              const lm_path *p, lm_real *y) {
  size_t nx = (size_t)n * (size_t)L->in, nw = (size_t)L->in * (size_t)L->out;
  lm_gemm_ctx c;
  L->gfmt = p->fmt ? p->gfmt : NULL;
  L->hfg = p->fmt ? p->hf_gemms : 0;
  L->srd = p->fmt && p->sr && !(L->hfg & LM_GEMM_DGRAD);
  memcpy(L->xq, x, nx * sizeof *x);
  if (L->hfg & LM_GEMM_WGRAD) memcpy(L->xf, x, nx * sizeof *x);
  if (!p->fmt) {
    memcpy(L->wq, L->w, nw * sizeof *x);
    if (p->track) {
      float amax = lm_amax(x, nx);
      if (p->probe) {
        const double t = lm_now();
        L->qerr = lm_quant_error(x, NULL, nx, p->probe,
                                 lp_scaler_scale(&L->sx, p->probe, amax));
        lm_signal_time += lm_now() - t;
      }
      lp_scaler_push(&L->sx, amax);
      lp_scaler_push(&L->sw, lm_amax(L->w, nw));
    }
  } else {
    if (p->outlier_gain > 0) {
      int r, k;
      for (r = 0; r < n; r++)
        for (k = 0; k < LM_OUTLIER_CHANNELS; k++)
          L->xq[(size_t)r * (size_t)L->in +
                (size_t)((p->outlier_c0 + k) % L->in)] *=
              (lm_real)p->outlier_gain;
    }
    if (p->jit) L->sx.len = L->sw.len = 0; /* lp_scaler_scale: amax_now */
    lm_quantize(L->xq, n, L->in, 0, p->fmt, &L->sx,
                p->stale ? LM_STALE_GAIN : 1.0f, 0, L->xq);
    if (L->srd) { /* the same scale as wq's: the history before its push */
      lp_scaler sw = L->sw;
      lm_quantize(L->w, L->in, L->out, 1, p->fmt, &sw, 1.0f, p->sr, L->wsr);
    }
    lm_quantize(L->w, L->in, L->out, 1, p->fmt, &L->sw, 1.0f, 0, L->wq);
    if (p->probe || p->measure) {
      const double t = lm_now();
      if (p->probe) L->qerr = lm_quant_error(x, L->xq, nx, NULL, 1.0f);
      if (p->measure) L->wqerr = (float)lm_dist(L->wq, L->w, nw);
      lm_signal_time += lm_now() - t;
    }
  }
  c.x = L->hfg & LM_GEMM_FWD ? x : L->xq;
  c.w = L->hfg & LM_GEMM_FWD ? L->w : L->wq;
  c.b = L->b;
  c.y = y;
  c.n = n;
  c.in = L->in;
  c.out = L->out;
  lm_parallel(lm_gemm_fwd_rows, &c, n);
  if (p->fmt && p->out_err) {
    size_t ny = (size_t)n * (size_t)L->out;
    c.x = x;
    c.w = L->w;
    c.y = L->yref;
    lm_parallel(lm_gemm_fwd_rows, &c, n);
    L->oerr = (float)(lm_dist(y, L->yref, ny) / lm_dist(L->yref, NULL, ny));
  }
  if (L->gain != 1.0f) {
    size_t i, ny = (size_t)n * (size_t)L->out;
    for (i = 0; i < ny; i++) y[i] *= (lm_real)L->gain;
  }
  if (p->fmt && p->logit_gain > 0) {
    /* qkv rows are [q | k | v], C = out / 3 wide each. */
    int C = L->out / 3, hs = C / p->n_head, r, j;
    for (r = 0; r < n; r++) {
      lm_real *row = y + (size_t)r * (size_t)L->out + p->logit_head * hs;
      for (j = 0; j < hs; j++) {
        row[j] *= (lm_real)p->logit_gain;
        row[C + j] *= (lm_real)p->logit_gain;
      }
    }
  }
}

/* dw, db from dy; dx (n x in) written, through the GEMM inputs used (the
   straight-through estimator on the quantizers). With --grad-format the
   low-cost path quantizes dy first (per tensor, delayed scaling; a block
   format along its rows), for all three: dw, db and dx. The GEMMs in
   L->hfg read the unquantized x, W and dy. */
static void lm_linear_backward(lm_linear *L, const lm_real *dy, int n,
                               lm_real *dx) {
  lm_gemm_ctx c;
  const lm_real *dyl = dy; /* the low-cost GEMMs' output gradient */
  if (L->gfmt) {
    lm_quantize(dy, n, L->out, 0, L->gfmt, &L->sg, 1.0f, 0, L->dyq);
    dyl = L->dyq;
  }
  c.x = L->hfg & LM_GEMM_WGRAD ? L->xf : L->xq;
  c.dy = L->hfg & LM_GEMM_WGRAD ? dy : dyl;
  c.dw = L->dw;
  c.db = L->db;
  c.n = n;
  c.in = L->in;
  c.out = L->out;
  c.w = L->hfg & LM_GEMM_DGRAD ? L->w : L->srd ? L->wsr : L->wq;
  c.y = L->wt;
  c.b = NULL;
  lm_parallel(lm_gemm_db_wt_cols, &c, L->out);
  lm_parallel(lm_gemm_dw_rows, &c, L->in);
  c.w = L->wt;
  c.y = dx;
  c.dy = L->hfg & LM_GEMM_DGRAD ? dy : dyl;
  lm_parallel(lm_gemm_dx_rows, &c, n);
  if (L->gain != 1.0f) { /* y = gain (x W + b): dW, db and dx take it too */
    size_t i, nw = (size_t)L->in * (size_t)L->out,
              nx = (size_t)n * (size_t)L->in;
    for (i = 0; i < nw; i++) L->dw[i] *= (lm_real)L->gain;
    for (i = 0; i < (size_t)L->out; i++) L->db[i] *= (lm_real)L->gain;
    for (i = 0; i < nx; i++) dx[i] *= (lm_real)L->gain;
  }
}

/* ---- LayerNorm, GELU, attention ------------------------------------------ */

#define LM_LN_EPS 1e-5

typedef struct lm_ln_ctx {
  const lm_real *x, *w, *b, *dy, *mean, *rstd;
  lm_real *y, *mean_out, *rstd_out, *dx, *dw, *db;
  int n, C;
} lm_ln_ctx;

static void lm_ln_fwd_rows(void *p, int r0, int r1) {
  const lm_ln_ctx *c = (const lm_ln_ctx *)p;
  int r, i, C = c->C;
  for (r = r0; r < r1; r++) {
    const lm_real *xr = c->x + (size_t)r * (size_t)C;
    lm_real *yr = c->y + (size_t)r * (size_t)C;
    double m = 0, v = 0, s;
    for (i = 0; i < C; i++) m += xr[i];
    m /= C;
    for (i = 0; i < C; i++) v += (xr[i] - m) * (xr[i] - m);
    v /= C;
    s = 1.0 / sqrt(v + LM_LN_EPS);
    for (i = 0; i < C; i++)
      yr[i] = (lm_real)((xr[i] - m) * s * c->w[i] + c->b[i]);
    c->mean_out[r] = (lm_real)m;
    c->rstd_out[r] = (lm_real)s;
  }
}

/* The rows' dx (rows r0..r1). */
static void lm_ln_bwd_rows(void *p, int r0, int r1) {
  const lm_ln_ctx *c = (const lm_ln_ctx *)p;
  int r, i, C = c->C;
  for (r = r0; r < r1; r++) {
    const lm_real *dyr = c->dy + (size_t)r * (size_t)C,
                  *xr = c->x + (size_t)r * (size_t)C;
    lm_real *dxr = c->dx + (size_t)r * (size_t)C;
    double m1 = 0, m2 = 0;
    for (i = 0; i < C; i++) {
      double xh = (xr[i] - c->mean[r]) * c->rstd[r], dn = dyr[i] * c->w[i];
      m1 += dn;
      m2 += dn * xh;
    }
    m1 /= C;
    m2 /= C;
    for (i = 0; i < C; i++) {
      double xh = (xr[i] - c->mean[r]) * c->rstd[r], dn = dyr[i] * c->w[i];
      dxr[i] += (lm_real)((dn - m1 - xh * m2) * c->rstd[r]);
    }
  }
}

/* dw, db of the columns i0..i1, summed over the rows in order. */
static void lm_ln_bwd_cols(void *p, int i0, int i1) {
  const lm_ln_ctx *c = (const lm_ln_ctx *)p;
  int r, i, C = c->C;
  for (r = 0; r < c->n; r++) {
    const lm_real *dyr = c->dy + (size_t)r * (size_t)C,
                  *xr = c->x + (size_t)r * (size_t)C;
    for (i = i0; i < i1; i++) {
      double xh = (xr[i] - c->mean[r]) * c->rstd[r];
      c->db[i] += dyr[i];
      c->dw[i] += (lm_real)(dyr[i] * xh);
    }
  }
}

static void lm_layernorm_forward(const lm_real *x, const lm_real *w,
                                 const lm_real *b, int n, int C, lm_real *y,
                                 lm_real *mean, lm_real *rstd) {
  lm_ln_ctx c;
  memset(&c, 0, sizeof c);
  c.x = x;
  c.w = w;
  c.b = b;
  c.y = y;
  c.mean_out = mean;
  c.rstd_out = rstd;
  c.n = n;
  c.C = C;
  lm_parallel(lm_ln_fwd_rows, &c, n);
}

/* dx += LayerNorm backward of dy; dw, db accumulate. */
static void lm_layernorm_backward(const lm_real *dy, const lm_real *x,
                                  const lm_real *w, const lm_real *mean,
                                  const lm_real *rstd, int n, int C,
                                  lm_real *dx, lm_real *dw, lm_real *db) {
  lm_ln_ctx c;
  memset(&c, 0, sizeof c);
  c.dy = dy;
  c.x = x;
  c.w = w;
  c.mean = mean;
  c.rstd = rstd;
  c.dx = dx;
  c.dw = dw;
  c.db = db;
  c.n = n;
  c.C = C;
  lm_parallel(lm_ln_bwd_rows, &c, n);
  lm_parallel(lm_ln_bwd_cols, &c, C);
}

#define LM_GELU_K 0.7978845608028654 /* sqrt(2 / pi) */

static void lm_gelu_forward(const lm_real *x, size_t n, lm_real *y) {
  size_t i;
  for (i = 0; i < n; i++) {
    lm_real v = x[i], t = LM_TANH((lm_real)LM_GELU_K *
                                  (v + (lm_real)0.044715 * v * v * v));
    y[i] = (lm_real)0.5 * v * (1 + t);
  }
}
/* dx = dy * gelu'(x). */
static void lm_gelu_backward(const lm_real *dy, const lm_real *x, size_t n,
                             lm_real *dx) {
  size_t i;
  for (i = 0; i < n; i++) {
    lm_real v = x[i],
            t = LM_TANH((lm_real)LM_GELU_K *
                        (v + (lm_real)0.044715 * v * v * v)),
            du = (lm_real)LM_GELU_K * (1 + 3 * (lm_real)0.044715 * v * v);
    dx[i] =
        dy[i] * ((lm_real)0.5 * (1 + t) + (lm_real)0.5 * v * (1 - t * t) * du);
  }
}

/* The elementwise passes (GELU, AdamW) over rows of `cols` on the threads:
   an element's arithmetic does not depend on the split. */
typedef struct lm_elem_ctx {
  const lm_real *x, *dy;
  lm_real *y;
  size_t cols, n;
} lm_elem_ctx;

static void lm_gelu_fwd_rows(void *p, int r0, int r1) {
  const lm_elem_ctx *c = (const lm_elem_ctx *)p;
  size_t a = (size_t)r0 * c->cols, z = (size_t)r1 * c->cols;
  if (z > c->n) z = c->n;
  if (a < z) lm_gelu_forward(c->x + a, z - a, c->y + a);
}

static void lm_gelu_bwd_rows(void *p, int r0, int r1) {
  const lm_elem_ctx *c = (const lm_elem_ctx *)p;
  size_t a = (size_t)r0 * c->cols, z = (size_t)r1 * c->cols;
  if (z > c->n) z = c->n;
  if (a < z) lm_gelu_backward(c->dy + a, c->x + a, z - a, c->y + a);
}

static void lm_gelu_forward_par(const lm_real *x, int rows, int cols,
                                lm_real *y) {
  lm_elem_ctx c;
  c.x = x;
  c.dy = NULL;
  c.y = y;
  c.cols = (size_t)cols;
  c.n = (size_t)rows * (size_t)cols;
  lm_parallel(lm_gelu_fwd_rows, &c, rows);
}

static void lm_gelu_backward_par(const lm_real *dy, const lm_real *x, int rows,
                                 int cols, lm_real *dx) {
  lm_elem_ctx c;
  c.x = x;
  c.dy = dy;
  c.y = dx;
  c.cols = (size_t)cols;
  c.n = (size_t)rows * (size_t)cols;
  lm_parallel(lm_gelu_bwd_rows, &c, rows);
}

typedef struct lm_attn_ctx {
  const lm_real *qkv, *dy;
  lm_real *att, *y, *dqkv;
  int T, C, nh;
} lm_attn_ctx;

/* Causal attention for the (sequence, head) pairs r0..r1 of qkv (B*T x 3C,
   rows [q | k | v]); att (B x nh x T x T) keeps the probabilities. */
static void lm_attn_fwd_pairs(void *p, int r0, int r1) {
  const lm_attn_ctx *c = (const lm_attn_ctx *)p;
  int T = c->T, C = c->C, hs = C / c->nh, C3 = 3 * C, pr, t, t2, i;
  double scale = 1.0 / sqrt((double)hs);
  for (pr = r0; pr < r1; pr++) {
    int b = pr / c->nh, h = pr % c->nh;
    for (t = 0; t < T; t++) {
      const lm_real *q = c->qkv + (size_t)(b * T + t) * (size_t)C3 + h * hs;
      lm_real *a = c->att + ((size_t)pr * (size_t)T + (size_t)t) * (size_t)T,
              *y = c->y + (size_t)(b * T + t) * (size_t)C + h * hs;
      double mx = -1e300, sum = 0;
      for (t2 = 0; t2 <= t; t2++) {
        const lm_real *k =
            c->qkv + (size_t)(b * T + t2) * (size_t)C3 + C + h * hs;
        double s = 0;
        for (i = 0; i < hs; i++) s += (double)q[i] * k[i];
        s *= scale;
        a[t2] = (lm_real)s;
        if (s > mx) mx = s;
      }
      for (t2 = 0; t2 <= t; t2++) {
        double e = exp(a[t2] - mx);
        a[t2] = (lm_real)e;
        sum += e;
      }
      for (t2 = 0; t2 <= t; t2++) a[t2] = (lm_real)(a[t2] / sum);
      for (t2 = t + 1; t2 < T; t2++) a[t2] = 0;
      memset(y, 0, sizeof *y * (size_t)hs);
      for (t2 = 0; t2 <= t; t2++)
        lm_axpy(y, a[t2],
                c->qkv + (size_t)(b * T + t2) * (size_t)C3 + 2 * C + h * hs,
                hs);
    }
  }
}

/* dqkv (zeroed by the caller) from dy, for the pairs r0..r1. */
static void lm_attn_bwd_pairs(void *p, int r0, int r1) {
  const lm_attn_ctx *c = (const lm_attn_ctx *)p;
  int T = c->T, C = c->C, hs = C / c->nh, C3 = 3 * C, pr, t, t2, i;
  lm_real scale = (lm_real)(1.0 / sqrt((double)hs));
  for (pr = r0; pr < r1; pr++) {
    int b = pr / c->nh, h = pr % c->nh;
    for (t = 0; t < T; t++) {
      const lm_real *q = c->qkv + (size_t)(b * T + t) * (size_t)C3 + h * hs,
                    *a = c->att +
                         ((size_t)pr * (size_t)T + (size_t)t) * (size_t)T,
                    *dy = c->dy + (size_t)(b * T + t) * (size_t)C + h * hs;
      lm_real *dq = c->dqkv + (size_t)(b * T + t) * (size_t)C3 + h * hs;
      double da[1024], dot = 0; /* T <= 1024, checked at parse time */
      for (t2 = 0; t2 <= t; t2++) {
        const lm_real *v =
            c->qkv + (size_t)(b * T + t2) * (size_t)C3 + 2 * C + h * hs;
        lm_real *dv =
            c->dqkv + (size_t)(b * T + t2) * (size_t)C3 + 2 * C + h * hs;
        double s = 0;
        for (i = 0; i < hs; i++) s += (double)dy[i] * v[i];
        da[t2] = s;
        dot += s * a[t2];
        lm_axpy(dv, a[t2], dy, hs);
      }
      for (t2 = 0; t2 <= t; t2++) {
        const lm_real *k =
            c->qkv + (size_t)(b * T + t2) * (size_t)C3 + C + h * hs;
        lm_real *dk = c->dqkv + (size_t)(b * T + t2) * (size_t)C3 + C + h * hs;
        lm_real ds = (lm_real)(a[t2] * (da[t2] - dot)) * scale;
        lm_axpy(dq, ds, k, hs);
        lm_axpy(dk, ds, q, hs);
      }
    }
  }
}

/* ---- the model ------------------------------------------------------------
 */

typedef struct lm_shape {
  int C, L, nh, T, B; /* width, blocks, heads, context, sequences per batch */
} lm_shape;

enum { LM_QKV, LM_ATTN_OUT, LM_MLP_UP, LM_MLP_DOWN };
static const char *LM_UNIT_KIND[4] = {"qkv", "attn_out", "mlp_up", "mlp_down"};

/* One parameter tensor: its place in the flat arrays, its unit (-1: not a
   unit: embeddings, LayerNorms), its block (-1: none) and whether AdamW
   decays it. */
typedef struct lm_tensor {
  size_t off, n;
  int unit, block, decay;
} lm_tensor;

typedef struct lm_block_acts {
  lm_real *res; /* N x C: the residual stream into the block */
  lm_real *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty;
  lm_real *res2; /* N x C: after attention */
  lm_real *ln2, *ln2_mean, *ln2_rstd, *fch, *fchg;
} lm_block_acts;

typedef struct lm_model {
  lm_shape s;
  int n_units, n_tensors;
  size_t n_params;
  lm_real *params, *grads, *m, *v;
  lm_tensor tensors[16 * LM_MAX_LAYERS + 8];
  lm_real *wte, *wpe, *lnfw, *lnfb, *dwte, *dwpe, *dlnfw, *dlnfb;
  lm_real *ln1w[LM_MAX_LAYERS], *ln1b[LM_MAX_LAYERS], *ln2w[LM_MAX_LAYERS],
      *ln2b[LM_MAX_LAYERS];
  lm_real *dln1w[LM_MAX_LAYERS], *dln1b[LM_MAX_LAYERS], *dln2w[LM_MAX_LAYERS],
      *dln2b[LM_MAX_LAYERS];
  lm_linear unit[LM_MAX_UNITS]; /* 4 l + LM_QKV.., head = 4 L */
  /* activations for N = B x T rows */
  lm_block_acts acts[LM_MAX_LAYERS];
  lm_real *resL, *lnf, *lnf_mean, *lnf_rstd, *logits; /* logits: probs */
  lm_real *dres, *dtmp, *dbig, *dbig2, *dqkv;
  double *rowloss;                 /* N: each row's cross-entropy */
  const uint8_t *tokens, *targets; /* set by the forward pass */
} lm_model;

/* Adds a tensor of n parameters to the layout; returns its offset. */
static size_t lm_add(lm_model *m, size_t n, int unit, int block, int decay) {
  lm_tensor *t = &m->tensors[m->n_tensors++];
  t->off = m->n_params;
  t->n = n;
  t->unit = unit;
  t->block = block;
  t->decay = decay;
  m->n_params += n;
  return t->off;
}

static void lm_model_init(lm_model *m, lm_shape s, demo_rng *r) {
  int C = s.C, L = s.L, N = s.B * s.T, l, u, k;
  size_t o_wte, o_wpe, o_lnf, o_ln1[LM_MAX_LAYERS], o_ln2[LM_MAX_LAYERS],
      o_w[LM_MAX_UNITS], o_b[LM_MAX_UNITS], i;
  int dims[4][2];
  memset(m, 0, sizeof *m);
  m->s = s;
  m->n_units = 4 * L + 1;
  dims[LM_QKV][0] = C, dims[LM_QKV][1] = 3 * C;
  dims[LM_ATTN_OUT][0] = C, dims[LM_ATTN_OUT][1] = C;
  dims[LM_MLP_UP][0] = C, dims[LM_MLP_UP][1] = 4 * C;
  dims[LM_MLP_DOWN][0] = 4 * C, dims[LM_MLP_DOWN][1] = C;
  o_wte = lm_add(m, (size_t)LM_VOCAB * (size_t)C, -1, -1, 1);
  o_wpe = lm_add(m, (size_t)s.T * (size_t)C, -1, -1, 1);
  for (l = 0; l < L; l++) {
    o_ln1[l] = lm_add(m, 2 * (size_t)C, -1, l, 0);
    for (k = 0; k < 4; k++) {
      u = 4 * l + k;
      if (k == LM_MLP_UP) o_ln2[l] = lm_add(m, 2 * (size_t)C, -1, l, 0);
      m->unit[u].in = dims[k][0];
      m->unit[u].out = dims[k][1];
      o_w[u] = lm_add(m, (size_t)dims[k][0] * (size_t)dims[k][1], u, l, 1);
      o_b[u] = lm_add(m, (size_t)dims[k][1], u, l, 0);
    }
  }
  o_lnf = lm_add(m, 2 * (size_t)C, -1, -1, 0);
  u = 4 * L;
  m->unit[u].in = C;
  m->unit[u].out = LM_VOCAB;
  o_w[u] = lm_add(m, (size_t)C * LM_VOCAB, u, -1, 1);
  o_b[u] = lm_add(m, LM_VOCAB, u, -1, 0);

  m->params = DEMO_CALLOC(m->n_params, lm_real);
  m->grads = DEMO_CALLOC(m->n_params, lm_real);
  m->m = DEMO_CALLOC(m->n_params, lm_real);
  m->v = DEMO_CALLOC(m->n_params, lm_real);
  /* GPT-2 initialization: N(0, 0.02), the residual projections scaled by
   1/sqrt(2 L); LayerNorm gains 1, biases 0. */
  for (i = 0; i < m->n_params; i++)
    m->params[i] = (lm_real)(0.02 * demo_normal(r));
  m->wte = m->params + o_wte, m->dwte = m->grads + o_wte;
  m->wpe = m->params + o_wpe, m->dwpe = m->grads + o_wpe;
  m->lnfw = m->params + o_lnf, m->dlnfw = m->grads + o_lnf;
  m->lnfb = m->lnfw + C, m->dlnfb = m->dlnfw + C;
  for (l = 0; l < L; l++) {
    m->ln1w[l] = m->params + o_ln1[l], m->dln1w[l] = m->grads + o_ln1[l];
    m->ln1b[l] = m->ln1w[l] + C, m->dln1b[l] = m->dln1w[l] + C;
    m->ln2w[l] = m->params + o_ln2[l], m->dln2w[l] = m->grads + o_ln2[l];
    m->ln2b[l] = m->ln2w[l] + C, m->dln2b[l] = m->dln2w[l] + C;
    for (k = 0; k < C; k++) {
      m->ln1w[l][k] = m->ln2w[l][k] = 1;
      m->ln1b[l][k] = m->ln2b[l][k] = 0;
    }
  }
  for (k = 0; k < C; k++) m->lnfw[k] = 1, m->lnfb[k] = 0;
  for (u = 0; u < m->n_units; u++) {
    lm_linear *U = &m->unit[u];
    size_t nw = (size_t)U->in * (size_t)U->out;
    U->gain = 1.0f;
    U->w = m->params + o_w[u], U->dw = m->grads + o_w[u];
    U->b = m->params + o_b[u], U->db = m->grads + o_b[u];
    for (i = 0; i < (size_t)U->out; i++) U->b[i] = 0;
    if (u < 4 * L && (u % 4 == LM_ATTN_OUT || u % 4 == LM_MLP_DOWN))
      for (i = 0; i < nw; i++) U->w[i] = (lm_real)(U->w[i] / sqrt(2.0 * L));
    U->xq = DEMO_CALLOC((size_t)N * (size_t)U->in, lm_real);
    U->xf = DEMO_CALLOC((size_t)N * (size_t)U->in, lm_real);
    U->wq = DEMO_CALLOC(nw, lm_real);
    U->wsr = DEMO_CALLOC(nw, lm_real);
    U->wt = DEMO_CALLOC(nw, lm_real);
    U->yref = DEMO_CALLOC((size_t)N * (size_t)U->out, lm_real);
    U->wprev = DEMO_CALLOC(nw, lm_real);
    U->dyq = DEMO_CALLOC((size_t)N * (size_t)U->out, lm_real);
  }
  for (l = 0; l < L; l++) {
    lm_block_acts *a = &m->acts[l];
    a->res = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
    a->ln1 = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
    a->ln1_mean = DEMO_CALLOC((size_t)N, lm_real);
    a->ln1_rstd = DEMO_CALLOC((size_t)N, lm_real);
    a->qkv = DEMO_CALLOC((size_t)N * 3 * (size_t)C, lm_real);
    a->att = DEMO_CALLOC((size_t)s.B * (size_t)s.nh * (size_t)s.T * (size_t)s.T,
                         lm_real);
    a->atty = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
    a->res2 = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
    a->ln2 = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
    a->ln2_mean = DEMO_CALLOC((size_t)N, lm_real);
    a->ln2_rstd = DEMO_CALLOC((size_t)N, lm_real);
    a->fch = DEMO_CALLOC((size_t)N * 4 * (size_t)C, lm_real);
    a->fchg = DEMO_CALLOC((size_t)N * 4 * (size_t)C, lm_real);
  }
  m->resL = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
  m->lnf = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
  m->lnf_mean = DEMO_CALLOC((size_t)N, lm_real);
  m->lnf_rstd = DEMO_CALLOC((size_t)N, lm_real);
  m->logits = DEMO_CALLOC((size_t)N * LM_VOCAB, lm_real);
  m->dres = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
  m->dtmp = DEMO_CALLOC((size_t)N * (size_t)C, lm_real);
  m->dbig = DEMO_CALLOC(
      (size_t)N * (size_t)(LM_VOCAB > 4 * C ? LM_VOCAB : 4 * C), lm_real);
  m->dbig2 = DEMO_CALLOC((size_t)N * 4 * (size_t)C, lm_real);
  m->dqkv = DEMO_CALLOC((size_t)N * 3 * (size_t)C, lm_real);
  m->rowloss = DEMO_CALLOC((size_t)N, double);
}

static void lm_model_free(lm_model *m) {
  int l, u;
  free(m->params), free(m->grads), free(m->m), free(m->v);
  for (u = 0; u < m->n_units; u++)
    free(m->unit[u].xq), free(m->unit[u].xf), free(m->unit[u].wq),
        free(m->unit[u].wsr), free(m->unit[u].wt), free(m->unit[u].yref),
        free(m->unit[u].wprev), free(m->unit[u].dyq);
  for (l = 0; l < m->s.L; l++) {
    lm_block_acts *a = &m->acts[l];
    free(a->res), free(a->ln1), free(a->ln1_mean), free(a->ln1_rstd);
    free(a->qkv), free(a->att), free(a->atty), free(a->res2), free(a->ln2);
    free(a->ln2_mean), free(a->ln2_rstd), free(a->fch), free(a->fchg);
  }
  free(m->resL), free(m->lnf), free(m->lnf_mean), free(m->lnf_rstd);
  free(m->logits), free(m->dres), free(m->dtmp), free(m->dbig);
  free(m->dbig2), free(m->dqkv), free(m->rowloss);
}

/* Softmax of the logits rows r0..r1 in place, each row's cross-entropy
   into rowloss. */
static void lm_softmax_rows(void *p, int r0, int r1) {
  lm_model *m = (lm_model *)p;
  int r, i, V = LM_VOCAB;
  for (r = r0; r < r1; r++) {
    lm_real *z = m->logits + (size_t)r * (size_t)V;
    double mx = z[0], sum = 0;
    for (i = 1; i < V; i++)
      if (z[i] > mx) mx = z[i];
    for (i = 0; i < V; i++) sum += exp(z[i] - mx);
    m->rowloss[r] = log(sum) + mx - z[m->targets[r]];
    for (i = 0; i < V; i++) z[i] = (lm_real)(exp(z[i] - mx) / sum);
  }
}

/* dlogits rows r0..r1 (into m->dbig) from the probabilities. */
static void lm_dlogits_rows(void *p, int r0, int r1) {
  lm_model *m = (lm_model *)p;
  int r, i, V = LM_VOCAB, N = m->s.B * m->s.T;
  for (r = r0; r < r1; r++)
    for (i = 0; i < V; i++)
      m->dbig[(size_t)r * (size_t)V + (size_t)i] =
          (m->logits[(size_t)r * (size_t)V + (size_t)i] -
           (i == m->targets[r] ? 1 : 0)) /
          (lm_real)N;
}

/* Forward over B sequences of T bytes (tokens, targets: B*T each); returns
   the mean cross-entropy in nats. paths[u]: each unit's path. */
static double lm_forward(lm_model *m, const uint8_t *tokens,
                         const uint8_t *targets, const lm_path *paths) {
  int C = m->s.C, T = m->s.T, N = m->s.B * T, l, r, i;
  double loss = 0;
  lm_attn_ctx ac;
  m->tokens = tokens;
  m->targets = targets;
  for (r = 0; r < N; r++) {
    lm_real *x = (m->s.L ? m->acts[0].res : m->resL) + (size_t)r * (size_t)C;
    const lm_real *te = m->wte + (size_t)tokens[r] * (size_t)C,
                  *pe = m->wpe + (size_t)(r % T) * (size_t)C;
    for (i = 0; i < C; i++) x[i] = te[i] + pe[i];
  }
  for (l = 0; l < m->s.L; l++) {
    lm_block_acts *a = &m->acts[l];
    lm_real *out = l + 1 < m->s.L ? m->acts[l + 1].res : m->resL;
    const lm_path *p = paths + 4 * l;
    size_t k, nc = (size_t)N * (size_t)C;
    lm_layernorm_forward(a->res, m->ln1w[l], m->ln1b[l], N, C, a->ln1,
                         a->ln1_mean, a->ln1_rstd);
    lm_linear_forward(&m->unit[4 * l + LM_QKV], a->ln1, N, &p[LM_QKV], a->qkv);
    ac.qkv = a->qkv;
    ac.att = a->att;
    ac.y = a->atty;
    ac.T = T;
    ac.C = C;
    ac.nh = m->s.nh;
    lm_parallel(lm_attn_fwd_pairs, &ac, m->s.B * m->s.nh);
    lm_linear_forward(&m->unit[4 * l + LM_ATTN_OUT], a->atty, N,
                      &p[LM_ATTN_OUT], a->res2);
    for (k = 0; k < nc; k++) a->res2[k] += a->res[k];
    lm_layernorm_forward(a->res2, m->ln2w[l], m->ln2b[l], N, C, a->ln2,
                         a->ln2_mean, a->ln2_rstd);
    lm_linear_forward(&m->unit[4 * l + LM_MLP_UP], a->ln2, N, &p[LM_MLP_UP],
                      a->fch);
    lm_gelu_forward_par(a->fch, N, 4 * C, a->fchg);
    lm_linear_forward(&m->unit[4 * l + LM_MLP_DOWN], a->fchg, N,
                      &p[LM_MLP_DOWN], out);
    for (k = 0; k < nc; k++) out[k] += a->res2[k];
  }
  lm_layernorm_forward(m->resL, m->lnfw, m->lnfb, N, C, m->lnf, m->lnf_mean,
                       m->lnf_rstd);
  lm_linear_forward(&m->unit[4 * m->s.L], m->lnf, N, &paths[4 * m->s.L],
                    m->logits);
  /* Softmax in place (logits become probabilities) and cross-entropy,
     the rows on the threads, their losses summed in order. */
  lm_parallel(lm_softmax_rows, m, N);
  for (r = 0; r < N; r++) loss += m->rowloss[r];
  return loss / N;
}

/* Gradients of the mean cross-entropy of the last forward into m->grads. */
static void lm_backward(lm_model *m) {
  int C = m->s.C, T = m->s.T, N = m->s.B * T, l, r;
  size_t nc = (size_t)N * (size_t)C;
  lm_real *dlogits = m->dbig;
  lm_attn_ctx ac;
  memset(m->grads, 0, sizeof *m->grads * m->n_params);
  lm_parallel(lm_dlogits_rows, m, N);
  lm_linear_backward(&m->unit[4 * m->s.L], dlogits, N, m->dtmp);
  memset(m->dres, 0, sizeof *m->dres * nc);
  lm_layernorm_backward(m->dtmp, m->resL, m->lnfw, m->lnf_mean, m->lnf_rstd, N,
                        C, m->dres, m->dlnfw, m->dlnfb);
  for (l = m->s.L - 1; l >= 0; l--) {
    lm_block_acts *a = &m->acts[l];
    /* out = res2 + down(gelu(up(ln2(res2)))); dres is d out. */
    lm_linear_backward(&m->unit[4 * l + LM_MLP_DOWN], m->dres, N, m->dbig);
    lm_gelu_backward_par(m->dbig, a->fch, N, 4 * C, m->dbig2);
    lm_linear_backward(&m->unit[4 * l + LM_MLP_UP], m->dbig2, N, m->dtmp);
    lm_layernorm_backward(m->dtmp, a->res2, m->ln2w[l], a->ln2_mean,
                          a->ln2_rstd, N, C, m->dres, m->dln2w[l], m->dln2b[l]);
    /* res2 = res + attn_out(attention(qkv(ln1(res)))); dres is d res2. */
    lm_linear_backward(&m->unit[4 * l + LM_ATTN_OUT], m->dres, N, m->dtmp);
    memset(m->dqkv, 0, sizeof *m->dqkv * (size_t)N * 3 * (size_t)C);
    ac.qkv = a->qkv;
    ac.att = a->att;
    ac.dy = m->dtmp;
    ac.dqkv = m->dqkv;
    ac.T = T;
    ac.C = C;
    ac.nh = m->s.nh;
    lm_parallel(lm_attn_bwd_pairs, &ac, m->s.B * m->s.nh);
    lm_linear_backward(&m->unit[4 * l + LM_QKV], m->dqkv, N, m->dtmp);
    lm_layernorm_backward(m->dtmp, a->res, m->ln1w[l], a->ln1_mean, a->ln1_rstd,
                          N, C, m->dres, m->dln1w[l], m->dln1b[l]);
  }
  for (r = 0; r < N; r++) {
    const lm_real *d = m->dres + (size_t)r * (size_t)C;
    lm_axpy(m->dwte + (size_t)m->tokens[r] * (size_t)C, 1, d, C);
    lm_axpy(m->dwpe + (size_t)(r % T) * (size_t)C, 1, d, C);
  }
}

/* The optimizer (--optimizer) over every tensor; decoupled weight decay
   where the tensor says:
     adamw  AdamW (beta1 0.9, beta2 0.95, eps 1e-8, decay 0.1)
     sgd    SGD with heavy-ball momentum: m = 0.9 m + g, p -= lr (m + wd p)
            with decay LM_SGD_DECAY (it takes a far larger --lr than AdamW)
     lion   sign-based (Lion, Chen et al. 2023): p -= lr (sign(0.9 m +
            0.1 g) + wd p), then m = 0.99 m + 0.01 g, decay LM_LION_DECAY
            (the paper's rule: a learning rate 3-10x smaller than AdamW's,
            a decay as many times larger)
   m and v are the first and second moment buffers (SGD and Lion use m).
   A unit's learning rate is divided by its gain and its decay multiplied
   by it (--shift, AdamW only: the updates of W = gain W' stay what they
   were). The tensors of block freeze_block (--freeze) take no update
   before step freeze_end and count their own steps from there, as an
   optimizer that meets a parameter's first gradient late does. */
enum { LM_OPT_ADAMW, LM_OPT_SGD, LM_OPT_LION };
#define LM_OPTIMIZERS "adamw|sgd|lion"
#define LM_SGD_MOMENTUM 0.9
#define LM_SGD_DECAY 1e-4
#define LM_LION_BETA1 0.9
#define LM_LION_BETA2 0.99
#define LM_LION_DECAY 0.3
typedef struct lm_adamw {
  double beta1, beta2, eps, wd;
  int freeze_block; /* -1: none */
  long freeze_end;
  int kind; /* LM_OPT_*; the fields above are AdamW's */
} lm_adamw;

typedef struct lm_adamw_ctx {
  lm_model *m;
  const lm_adamw *o;
  double lr, c1, c2;
  long t;
} lm_adamw_ctx;

#define LM_ADAMW_CHUNK 4096 /* parameters per task row */

/* The optimizer on the parameters of chunks k0..k1 (LM_ADAMW_CHUNK
   each). */
static void lm_adamw_chunks(void *p, int k0, int k1) {
  const lm_adamw_ctx *c = (const lm_adamw_ctx *)p;
  const lm_adamw *o = c->o;
  lm_model *m = c->m;
  size_t a = (size_t)k0 * LM_ADAMW_CHUNK, z = (size_t)k1 * LM_ADAMW_CHUNK;
  int j;
  if (z > m->n_params) z = m->n_params;
  for (j = 0; j < m->n_tensors; j++) {
    const lm_tensor *tn = &m->tensors[j];
    size_t i = tn->off > a ? tn->off : a,
           e = tn->off + tn->n < z ? tn->off + tn->n : z;
    lm_real *pp = m->params, *g = m->grads, *mo = m->m, *v = m->v;
    double lr = c->lr, wd = tn->decay ? o->wd : 0.0, c1 = c->c1, c2 = c->c2;
    if (i >= e) continue;
    if (o->kind == LM_OPT_SGD) wd = tn->decay ? LM_SGD_DECAY : 0.0;
    if (o->kind == LM_OPT_LION) wd = tn->decay ? LM_LION_DECAY : 0.0;
    if (tn->unit >= 0) {
      lr /= m->unit[tn->unit].gain;
      wd *= m->unit[tn->unit].gain;
    }
    if (tn->block >= 0 && tn->block == o->freeze_block) {
      long t = c->t - o->freeze_end;
      if (t < 1) continue;
      c1 = 1.0 - pow(o->beta1, (double)t);
      c2 = 1.0 - pow(o->beta2, (double)t);
    }
    if (o->kind == LM_OPT_SGD) {
      for (; i < e; i++) {
        mo[i] = (lm_real)(LM_SGD_MOMENTUM * mo[i] + g[i]);
        pp[i] = (lm_real)(pp[i] - lr * (mo[i] + wd * pp[i]));
      }
      continue;
    }
    if (o->kind == LM_OPT_LION) {
      for (; i < e; i++) {
        double u = LM_LION_BETA1 * mo[i] + (1.0 - LM_LION_BETA1) * g[i];
        pp[i] = (lm_real)(pp[i] - lr * ((u > 0) - (u < 0) + wd * pp[i]));
        mo[i] = (lm_real)(LM_LION_BETA2 * mo[i] + (1.0 - LM_LION_BETA2) * g[i]);
      }
      continue;
    }
    for (; i < e; i++) {
      double mh, vh;
      mo[i] = (lm_real)(o->beta1 * mo[i] + (1.0 - o->beta1) * g[i]);
      v[i] =
          (lm_real)(o->beta2 * v[i] + (1.0 - o->beta2) * (double)g[i] * g[i]);
      mh = mo[i] / c1;
      vh = v[i] / c2;
      pp[i] = (lm_real)(pp[i] - lr * (mh / (sqrt(vh) + o->eps) + wd * pp[i]));
    }
  }
}

static void lm_adamw_update(lm_model *m, const lm_adamw *o, double lr, long t) {
  lm_adamw_ctx c;
  c.m = m;
  c.o = o;
  c.lr = lr;
  c.t = t;
  c.c1 = 1.0 - pow(o->beta1, (double)t);
  c.c2 = 1.0 - pow(o->beta2, (double)t);
  lm_parallel(lm_adamw_chunks, &c,
              (int)((m->n_params + LM_ADAMW_CHUNK - 1) / LM_ADAMW_CHUNK));
}

/* --shift: the reparametrisation of lab/common.h's DEMO_SHIFT_GAIN,
   y = g (x W/g + b/g), with Adam's moments and the weight's amax history
   to match (lm_adamw divides the unit's learning rate by its gain). */
static void lm_reparametrise(lm_model *m, int u, float g) {
  lm_linear *U = &m->unit[u];
  size_t i;
  int j;
  for (j = 0; j < m->n_tensors; j++)
    if (m->tensors[j].unit == u)
      for (i = m->tensors[j].off; i < m->tensors[j].off + m->tensors[j].n; i++)
        m->params[i] /= g, m->m[i] *= g, m->v[i] *= g * g;
  for (i = 0; i < LP_AMAX_HISTORY; i++) U->sw.hist[i] /= g;
  U->gain *= g;
}

/* --freeze: block l's gradients (its units' and LayerNorms') are 0. */
static void lm_zero_block(lm_model *m, int l) {
  int j;
  for (j = 0; j < m->n_tensors; j++)
    if (m->tensors[j].block == l)
      memset(m->grads + m->tensors[j].off, 0,
             sizeof *m->grads * m->tensors[j].n);
}

/* Multiplies unit u's gradient by s (0: drop it, NaN included). */
static void lm_scale_unit(lm_model *m, int u, double s) {
  lm_linear *U = &m->unit[u];
  size_t i, nw = (size_t)U->in * (size_t)U->out;
  for (i = 0; i < nw; i++) U->dw[i] = s == 0.0 ? 0 : (lm_real)(U->dw[i] * s);
  for (i = 0; i < (size_t)U->out; i++)
    U->db[i] = s == 0.0 ? 0 : (lm_real)(U->db[i] * s);
}

/* The spam arm's clip over the model's entries (lab/arms.h). */
ARM_SPAM_CLIP(lm_spam_clip, lm_real)

/* The spam arm's control before step's update: AdamW's moments zeroed on a
   reset step, then every parameter's gradient clipped; returns the entries
   clipped. */
static long lm_spam_step(lm_model *m, int step) {
  if (arm_spam_resets(step)) {
    memset(m->m, 0, sizeof *m->m * m->n_params);
    memset(m->v, 0, sizeof *m->v * m->n_params);
  }
  return lm_spam_clip(m->grads, m->v, m->n_params);
}

/* Per-unit gradient norms (gnmr.h's helper on f32 gradients). */
static void lm_unit_norms(const lm_model *m, float *norms) {
  int u;
#ifdef LM_DOUBLE
  for (u = 0; u < m->n_units; u++) {
    const lm_linear *U = &m->unit[u];
    size_t i, nw = (size_t)U->in * (size_t)U->out;
    double s = 0;
    for (i = 0; i < nw; i++) s += U->dw[i] * U->dw[i];
    for (i = 0; i < (size_t)U->out; i++) s += U->db[i] * U->db[i];
    norms[u] = (float)sqrt(s);
  }
#else
  gnmr_tensor t[2 * LM_MAX_UNITS];
  for (u = 0; u < m->n_units; u++) {
    t[2 * u].data = m->unit[u].dw;
    t[2 * u].n = (size_t)m->unit[u].in * (size_t)m->unit[u].out;
    t[2 * u].dtype = GNMR_DTYPE_F32;
    t[2 * u].unit = (uint32_t)u;
    t[2 * u + 1].data = m->unit[u].db;
    t[2 * u + 1].n = (size_t)m->unit[u].out;
    t[2 * u + 1].dtype = GNMR_DTYPE_F32;
    t[2 * u + 1].unit = (uint32_t)u;
  }
  if (gnmr_unit_norms(t, 2 * (size_t)m->n_units, norms, (uint32_t)m->n_units) !=
      GNMR_OK)
    DEMO_DIE("gnmr_unit_norms failed");
#endif
}

static void lm_unit_name(int u, int L, char *buf, size_t cap) {
  if (u == 4 * L)
    snprintf(buf, cap, "head");
  else
    snprintf(buf, cap, "b%d.%s", u / 4, LM_UNIT_KIND[u % 4]);
}

/* The gnmr arms' controller units (--units): which gradients each unit's
   norm and scale cover, beside the path units (the Linears, whose GEMMs
   have a cheap and a high-fidelity path).
     linear  each Linear's weight and bias, the LayerNorms not controlled
             (the demo's default; lm_unit_norms, lm_scale_unit)
     tensor  each parameter tensor its own unit, as a trainer with one
             gradient buffer per tensor would build them: every Linear's
             weight, every bias, every LayerNorm's weight and its bias. A
             Linear's weight or bias unit admitted puts the Linear on f32;
             a LayerNorm unit has no cheap path (it runs f32 anyway), so
             its admission only holds a slot of the budget
     layer   each Linear's weight and bias together, each LayerNorm folded
             into the Linear that reads it (ln1: qkv, ln2: MLP up, the
             final one: the head)
   The embeddings are never controlled. */
enum { LM_UNITS_LINEAR, LM_UNITS_TENSOR, LM_UNITS_LAYER };
#define LM_UNIT_GROUPINGS "linear|tensor|layer"
#define LM_MAX_PIECES (2 * LM_MAX_UNITS + 4 * LM_MAX_LAYERS + 2)
#define LM_MAX_CTL LM_MAX_PIECES /* >= 2 LM_MAX_UNITS (forward signals) */

static const char *lm_unit_grouping_name(int mode) {
  return mode == LM_UNITS_TENSOR  ? "tensor"
         : mode == LM_UNITS_LAYER ? "layer"
                                  : "linear";
}

typedef struct lm_groups {
  int n, n_pieces;              /* controller units, gradient pieces */
  size_t off[LM_MAX_PIECES];    /* a piece: its place in m->grads */
  size_t len[LM_MAX_PIECES];    /* its length */
  int cu[LM_MAX_PIECES];        /* its controller unit */
  int path[LM_MAX_CTL];         /* a controller unit's Linear; -1: none */
  unsigned char ln[LM_MAX_CTL]; /* it covers a LayerNorm */
} lm_groups;

static void lm_group_piece(lm_groups *g, size_t off, size_t len, int cu,
                           int path, int ln) {
  g->off[g->n_pieces] = off;
  g->len[g->n_pieces] = len;
  g->cu[g->n_pieces++] = cu;
  if (cu >= g->n) g->n = cu + 1;
  g->path[cu] = path;
  g->ln[cu] = (unsigned char)(g->ln[cu] | ln);
}

/* The tensor or layer grouping of m's parameters (not linear's). */
static void lm_groups_init(lm_groups *g, const lm_model *m, int mode) {
  size_t C = (size_t)m->s.C;
  int j, seen_ln[LM_MAX_LAYERS + 1];
  memset(g, 0, sizeof *g);
  memset(seen_ln, 0, sizeof seen_ln);
  for (j = 0; j < m->n_tensors; j++) {
    const lm_tensor *t = &m->tensors[j];
    if (t->unit >= 0) { /* a Linear's weight (decayed) or bias */
      lm_group_piece(g, t->off, t->n, mode == LM_UNITS_TENSOR ? g->n : t->unit,
                     t->unit, 0);
    } else if (!t->decay) { /* a LayerNorm: its weight, then its bias */
      int b = t->block, k = b >= 0 ? seen_ln[b]++ : 0,
          reader = b < 0    ? 4 * m->s.L
                   : k == 0 ? 4 * b + LM_QKV
                            : 4 * b + LM_MLP_UP;
      if (mode == LM_UNITS_TENSOR) {
        lm_group_piece(g, t->off, C, g->n, -1, 1);
        lm_group_piece(g, t->off + C, C, g->n, -1, 1);
      } else {
        lm_group_piece(g, t->off, 2 * C, reader, reader, 1);
      }
    }
  }
}

/* The controller units' gradient norms under grouping g. */
static void lm_group_norms(const lm_model *m, const lm_groups *g,
                           float *norms) {
  int p;
#ifdef LM_DOUBLE
  double ss[LM_MAX_CTL];
  size_t i;
  memset(ss, 0, sizeof ss);
  for (p = 0; p < g->n_pieces; p++)
    for (i = 0; i < g->len[p]; i++)
      ss[g->cu[p]] += m->grads[g->off[p] + i] * m->grads[g->off[p] + i];
  for (p = 0; p < g->n; p++) norms[p] = (float)sqrt(ss[p]);
#else
  gnmr_tensor t[LM_MAX_PIECES];
  for (p = 0; p < g->n_pieces; p++) {
    t[p].data = m->grads + g->off[p];
    t[p].n = g->len[p];
    t[p].dtype = GNMR_DTYPE_F32;
    t[p].unit = (uint32_t)g->cu[p];
  }
  if (gnmr_unit_norms(t, (size_t)g->n_pieces, norms, (uint32_t)g->n) != GNMR_OK)
    DEMO_DIE("gnmr_unit_norms failed");
#endif
}

/* 1 if Linear u runs f32 next step: its own controller unit (and, with
   forward signals, its signal's unit U + u) recovering, or under grouping
   g any unit whose path is u. */
static int lm_unit_recovering(const gnmr_ctl *ctl, const lm_groups *g, int u,
                              int U, int forward) {
  int cu;
  if (!g)
    return gnmr_recovering(ctl, (uint32_t)u) == 1 ||
           (forward && gnmr_recovering(ctl, (uint32_t)(U + u)) == 1);
  for (cu = 0; cu < g->n; cu++)
    if (g->path[cu] == u && gnmr_recovering(ctl, (uint32_t)cu) == 1) return 1;
  return 0;
}

/* Multiplies controller unit cu's gradient by s (0: drop it, NaN
   included). */
static void lm_group_scale(lm_model *m, const lm_groups *g, int cu, double s) {
  int p;
  size_t i;
  for (p = 0; p < g->n_pieces; p++)
    if (g->cu[p] == cu)
      for (i = 0; i < g->len[p]; i++) {
        lm_real *x = m->grads + g->off[p] + i;
        *x = s == 0.0 ? 0 : (lm_real)(*x * s);
      }
}

/* ---- data -----------------------------------------------------------------
 */

typedef struct lm_text {
  uint8_t *bytes;
  size_t n;
} lm_text;

static void lm_text_add(lm_text *t, size_t *cap, const char *s, size_t n) {
  if (t->n + n > *cap) {
    uint8_t *p;
    while (t->n + n > *cap) *cap = *cap ? 2 * *cap : 1 << 16;
    p = (uint8_t *)realloc(t->bytes, *cap);
    if (!p) DEMO_DIE("out of memory reading the text");
    t->bytes = p;
  }
  memcpy(t->bytes + t->n, s, n);
  t->n += n;
}

static int lm_cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads every file without a '.' in its name in dir (the fortune files;
   the .dat indices and .u8 links are skipped), in name order, and splits
   them at the "%" lines: fortune k (counted over all files) goes to val if
   k % LM_VAL_EVERY == 0, else to train. */
static void lm_load_fortunes(const char *dir, lm_text *train, lm_text *val) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *names[1024], path[2048], line[4096];
  int n = 0, i;
  size_t cap_t = 0, cap_v = 0;
  long k = 0;
  if (!d)
    DEMO_DIE("no fortune files in %s (%s). Debian/Ubuntu: apt-get install "
             "fortunes, or --data DIR with files of %%-separated text",
             dir, strerror(errno));
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (strchr(e->d_name, '.') || n == 1024) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    names[n] = DEMO_CALLOC(strlen(e->d_name) + 1, char);
    memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
  }
  closedir(d);
  if (n == 0)
    DEMO_DIE("no fortune files in %s. Debian/Ubuntu: apt-get install fortunes",
             dir);
  qsort(names, (size_t)n, sizeof names[0], lm_cmp_names);
  memset(train, 0, sizeof *train);
  memset(val, 0, sizeof *val);
  for (i = 0; i < n; i++) {
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    f = DEMO_FOPEN(path, "rb");
    while (fgets(line, sizeof line, f)) {
      if (strcmp(line, "%\n") == 0) {
        k++;
        continue;
      }
      if (k % LM_VAL_EVERY == 0)
        lm_text_add(val, &cap_v, line, strlen(line));
      else
        lm_text_add(train, &cap_t, line, strlen(line));
    }
    fclose(f);
    k++; /* a file's last fortune has no "%" after it */
    free(names[i]);
  }
}

/* ---- stress schedule (ground truth) ---------------------------------------
 */

enum { LM_OUTLIER = 0, LM_LOGIT = 1, LM_STALE = 2 };
static const char *LM_FAULT_NAMES[3] = {"outlier", "logit", "stale"};

/* per_k events per 1000 steps, none in the first 10%, one at a time, kinds
   in turn; outliers at units that read the residual stream (qkv, MLP up,
   head), logit growth at a qkv unit, stale scales anywhere. */
static int lm_make_events(int per_k, int steps, const lm_shape *s,
                          uint64_t seed, demo_event *ev, int cap) {
  demo_rng r;
  int n = per_k * steps / 1000, i, first = steps / 10, span;
  if (n > cap) n = cap;
  if (n <= 0) return 0;
  r.s = seed * 0x2545F4914F6CDD1Dull + 77;
  span = (steps - first) / n;
  for (i = 0; i < n; i++) {
    int kind = i % 3, l = (int)demo_below(&r, (uint32_t)s->L),
        pick = (int)demo_below(&r, 3);
    ev[i].start = first + i * span + (int)demo_below(&r, (uint32_t)(span / 2));
    ev[i].kind = kind;
    if (kind == LM_OUTLIER) {
      ev[i].steps = 6 + (int)demo_below(&r, 7);
      ev[i].unit = pick == 2   ? 4 * s->L
                   : pick == 1 ? 4 * l + LM_MLP_UP
                               : 4 * l + LM_QKV;
      ev[i].where = (int)demo_below(&r, (uint32_t)s->C);
    } else if (kind == LM_LOGIT) {
      ev[i].steps = 6 + (int)demo_below(&r, 7);
      ev[i].unit = 4 * l + LM_QKV;
      ev[i].where = (int)demo_below(&r, (uint32_t)s->nh);
    } else {
      ev[i].steps = 2 + (int)demo_below(&r, 5);
      ev[i].unit = (int)demo_below(&r, (uint32_t)(4 * s->L + 1));
      ev[i].where = 0;
    }
  }
  return n;
}

/* ---- arms ------------------------------------------------------------------
 */

/* The arms: lab/arms.h, shared with the MLP demo. */
#define LM_ARMS ARMS
#define LM_N_ARMS ARM_COUNT

/* ---- placement: the placement arms (lab/arms.h, place-RULE-B) --------
 */

/* A unit's GEMM FLOPs per step are 6 N in out (forward, input gradient,
   weight gradient, N = B x T rows); shares need only in x out. The
   attention's score and value products are f32 on every path and not a
   unit: the placement budget and hf_flops count the units' GEMMs only. */
static double lm_unit_flops(const lm_shape *s, int u) {
  static const double per_c2[4] = {3, 1, 4, 4}; /* LM_QKV .. LM_MLP_DOWN */
  double C = s->C;
  return u == 4 * s->L ? C * LM_VOCAB : per_c2[u % 4] * C * C;
}

enum {
  LM_PLACE_NVFP4,
  LM_PLACE_FIRSTLAST,
  LM_PLACE_RANDOM,
  LM_PLACE_ONCE,
  LM_PLACE_LATE,
  LM_PLACE_NVFP4_LATE,
  LM_PLACE_UPD_MAX,
  LM_PLACE_UPD_BOTH,
  LM_PLACE_UPD_ALL,
  LM_PLACE_UPD_LATE,
  LM_PLACE_GNMR,
  LM_PLACE_GNMR_PLAN
};

/* A unit's class, as a bit (LM_PLACE_RULES' units): a block's qkv and
   projection (the attention's), its MLP's two Linears, or the head. */
#define LM_CLASS_ATTN 3
#define LM_CLASS_MLP 12
#define LM_CLASS_HEAD 16
static int lm_unit_class(const lm_shape *s, int u) {
  return u == 4 * s->L ? LM_CLASS_HEAD : 1 << (u % 4);
}

/* gemms: the GEMMs a rule puts on f32 (LM_GEMM_*). The late switch per
   GEMM (latef: the forward GEMMs, latefd: forward and input gradient, ...)
   runs those on f32 for the last steps its budget buys: a GEMM costs a
   third of its unit, so latef's switch comes three times as early as
   late's at the same FLOPs (the NVFP4 recipe's late forward switch). A
   late rule limited to some units (units != 0) switches only those, so its
   switch comes as much earlier as their share of the FLOPs is smaller; a
   budget their whole run does not use up leaves the rest unspent. */
static const struct {
  const char *name;
  int rule, draw, gemms;
  int serve_low; /* plan*: gnmr_place_config.serve GNMR_SERVE_LOW */
  int units;     /* late*: the units it switches (LM_CLASS_*); 0: all */
} LM_PLACE_RULES[] = {
    {"nvfp4", LM_PLACE_NVFP4, 0, LM_GEMM_ALL, 0, 0},
    {"nvfp4dw", LM_PLACE_NVFP4, 0, LM_GEMM_DGRAD | LM_GEMM_WGRAD, 0, 0},
    {"firstlast", LM_PLACE_FIRSTLAST, 0, LM_GEMM_ALL, 0, 0},
    {"rand1", LM_PLACE_RANDOM, 1, LM_GEMM_ALL, 0, 0},
    {"rand2", LM_PLACE_RANDOM, 2, LM_GEMM_ALL, 0, 0},
    {"rand3", LM_PLACE_RANDOM, 3, LM_GEMM_ALL, 0, 0},
    {"once", LM_PLACE_ONCE, 0, LM_GEMM_ALL, 0, 0},
    {"late", LM_PLACE_LATE, 0, LM_GEMM_ALL, 0, 0},
    {"latef", LM_PLACE_LATE, 0, LM_GEMM_FWD, 0, 0},
    {"latefd", LM_PLACE_LATE, 0, LM_GEMM_FWD | LM_GEMM_DGRAD, 0, 0},
    {"latefw", LM_PLACE_LATE, 0, LM_GEMM_FWD | LM_GEMM_WGRAD, 0, 0},
    {"latedw", LM_PLACE_LATE, 0, LM_GEMM_DGRAD | LM_GEMM_WGRAD, 0, 0},
    {"lated", LM_PLACE_LATE, 0, LM_GEMM_DGRAD, 0, 0},
    {"latew", LM_PLACE_LATE, 0, LM_GEMM_WGRAD, 0, 0},
    {"nvfp4-late", LM_PLACE_NVFP4_LATE, 0, LM_GEMM_ALL, 0, 0},
    {"upd-max", LM_PLACE_UPD_MAX, 0, LM_GEMM_ALL, 0, 0},
    {"upd-both", LM_PLACE_UPD_BOTH, 0, LM_GEMM_ALL, 0, 0},
    {"upd-all", LM_PLACE_UPD_ALL, 0, LM_GEMM_ALL, 0, 0},
    {"upd-late", LM_PLACE_UPD_LATE, 0, LM_GEMM_ALL, 0, 0},
    {"gnmr", LM_PLACE_GNMR, 0, LM_GEMM_ALL, 0, 0},
    /* gemms 0: the library's default gemms */
    {"plan", LM_PLACE_GNMR_PLAN, 0, 0, 0, 0},
    {"planall", LM_PLACE_GNMR_PLAN, 0, LM_GEMM_ALL, 0, 0},
    {"planf", LM_PLACE_GNMR_PLAN, 0, LM_GEMM_FWD, 0, 0},
    {"planfd", LM_PLACE_GNMR_PLAN, 0, LM_GEMM_FWD | LM_GEMM_DGRAD, 0, 0},
    /* served on the format (serve LOW): the backward GEMMs only */
    {"planlow", LM_PLACE_GNMR_PLAN, 0, 0, 1, 0},
    {"planlowd", LM_PLACE_GNMR_PLAN, 0, LM_GEMM_DGRAD, 1, 0},
    {"planloww", LM_PLACE_GNMR_PLAN, 0, LM_GEMM_WGRAD, 1, 0},
    /* served on the format: the late switch of some units' backward GEMMs */
    {"latedattn", LM_PLACE_LATE, 0, LM_GEMM_DGRAD, 0, LM_CLASS_ATTN},
    {"latedmlp", LM_PLACE_LATE, 0, LM_GEMM_DGRAD, 0, LM_CLASS_MLP},
    {"latedwhead", LM_PLACE_LATE, 0, LM_GEMM_DGRAD | LM_GEMM_WGRAD, 0,
     LM_CLASS_HEAD},
};

/* The measured rules (upd-*). Each step a unit on the low-cost path has
   u_t = ||W_t+1 - W_t||, the norm of what the optimizer moved its weights
   by, and q_t = ||Q(W_t) - W_t||, its weights' quantization error as the
   cheap path used them; r_t = (running mean of u) / q_t says how far a step
   moves the weights against what the format can resolve. It falls as the
   learning rate decays, and as the weights grow. The thresholds are
   relative to the run's own r (its running maximum, its slow mean), not
   absolute levels:
     upd-max   a unit fires when r_t < LM_PLACE_MAX_FRAC x its running max
     upd-both  that, or its fast mean of r under LM_PLACE_FALL_FRAC x its
               slow mean: r falling now, whatever its level (a WSD decay)
     upd-all   the same two tests on the FLOPs-weighted mean of r_t / max
               over the units: when it fires, every unit fires at once
               (in time, not in space: the late switch, found by the
               signal), the units with the lowest r_t / max first
     upd-late  upd-all at the lower level LM_PLACE_LATE_FRAC: it fires
               later, so that its credit lasts to the end of the run
               (upd-all, firing before the last B% of steps, runs out of
               credit before the end, and the last steps matter most)
   A unit that fires goes to f32 for good. None fires in its first
   LM_PLACE_WARM steps. The budget is a token bucket: every step earns B%
   of the step's unit FLOPs; the fired units, in the order they fired, run
   f32 while the credit covers them, so the run's share stays under B
   without knowing its length. The two fractions were read off the lowp
   arm's trace of lm-natural-clip (cosine, seed 1, bench/RESULTS.md); the
   WSD and NVFP4 runs are where they are tested. */
#define LM_PLACE_UPD_BETA 0.95  /* running mean of u_t */
#define LM_PLACE_MAX_FRAC 0.06  /* level: r_t against its running max */
#define LM_PLACE_FALL_FAST 0.9  /* fast mean of r_t */
#define LM_PLACE_FALL_SLOW 0.99 /* slow mean of r_t */
#define LM_PLACE_FALL_FRAC 0.6  /* fall: fast mean against slow mean */
#define LM_PLACE_LATE_FRAC 0.05 /* upd-late's level */
#define LM_PLACE_WARM 50
#define LM_PLACE_CALIB_WINDOW 10 /* once: steps averaged before the choice */

typedef struct lm_placer {
  int rule, n_units, late_from, calib, calib_from, gemms;
  uint8_t late_unit[LM_MAX_UNITS]; /* the units a late switch switches */
  double budget, total, credit, flops[LM_MAX_UNITS];
  uint8_t fixed[LM_MAX_UNITS]; /* space rules: f32 for the whole run */
  uint8_t hf[LM_MAX_UNITS];    /* this step: its GEMMs on f32 (LM_GEMM_*) */
  double oerr_sum[LM_MAX_UNITS];
  double upd[LM_MAX_UNITS], rmax[LM_MAX_UNITS], fast[LM_MAX_UNITS],
      slow[LM_MAX_UNITS], ratio[LM_MAX_UNITS];
  double all_fast, all_slow; /* upd-all: the weighted mean's fast, slow */
  int seen[LM_MAX_UNITS], fired[LM_MAX_UNITS], n_fired, all_seen;
  /* place-gnmr-B: the library's placer (gnmr.h, rules P1-P7), the
     prototype upd-late's rule, its decisions the library's */
  gnmr_place lib;
  gnmr_place_unit lib_units[LM_MAX_UNITS];
} lm_placer;

static int lm_place_measured(int rule) {
  return rule == LM_PLACE_UPD_MAX || rule == LM_PLACE_UPD_BOTH ||
         rule == LM_PLACE_UPD_ALL || rule == LM_PLACE_UPD_LATE;
}

/* The units of `order` in turn while their FLOPs (of the rule's GEMMs, a
   third of the unit each) fit share x total. */
static double lm_place_fill(lm_placer *pl, const int *order, int n,
                            double share) {
  double used = 0, part = lm_gemm_count(pl->gemms) / 3.0;
  int k;
  for (k = 0; k < n; k++) {
    int u = order[k];
    if (used + part * pl->flops[u] <= share * pl->total * (1 + 1e-12)) {
      pl->fixed[u] = 1;
      used += part * pl->flops[u];
    }
  }
  return used / pl->total;
}

/* The NVFP4 recipe's order: the head, then the blocks from the last,
   each back to front. */
static int lm_place_nvfp4_order(int L, int *order) {
  int n = 0, l, k;
  order[n++] = 4 * L;
  for (l = L - 1; l >= 0; l--)
    for (k = 3; k >= 0; k--) order[n++] = 4 * l + k;
  return n;
}

/* The arm's rule from its name place-RULE-B; arm NULL: no rule, the
   signals only (the lowp arm's, for the trace). */
static void lm_place_init(lm_placer *pl, const char *arm, const lm_model *m,
                          int steps, int seed) {
  const char *rule = arm ? arm + strlen("place-") : NULL,
             *dash = arm ? strrchr(arm, '-') : NULL;
  int order[LM_MAX_UNITS], U = m->n_units, L = m->s.L, n = 0, u, l, k;
  size_t r;
  memset(pl, 0, sizeof *pl);
  memset(order, 0, sizeof order);
  pl->rule = -1;
  pl->n_units = U;
  pl->late_from = steps;
  pl->calib = -1;
  if (!arm) return;
  for (r = 0; r < sizeof LM_PLACE_RULES / sizeof LM_PLACE_RULES[0]; r++)
    if (strlen(LM_PLACE_RULES[r].name) == (size_t)(dash - rule) &&
        strncmp(rule, LM_PLACE_RULES[r].name, (size_t)(dash - rule)) == 0)
      break;
  if (r == sizeof LM_PLACE_RULES / sizeof LM_PLACE_RULES[0])
    DEMO_DIE("arm %s: no such placement rule", arm);
  pl->rule = LM_PLACE_RULES[r].rule;
  pl->gemms = LM_PLACE_RULES[r].gemms;
  pl->budget = atof(dash + 1) / 100.0;
  for (u = 0; u < U; u++) {
    pl->flops[u] = lm_unit_flops(&m->s, u);
    pl->total += pl->flops[u];
    pl->late_unit[u] =
        (uint8_t)(!LM_PLACE_RULES[r].units ||
                  (LM_PLACE_RULES[r].units & lm_unit_class(&m->s, u)));
  }
  switch (pl->rule) {
  case LM_PLACE_NVFP4:
    lm_place_fill(pl, order, lm_place_nvfp4_order(L, order), pl->budget);
    break;
  case LM_PLACE_FIRSTLAST: /* blocks 0, L-1, 1, L-2, ... then the head */
    for (k = 0; k < L; k++) {
      l = k % 2 ? L - 1 - k / 2 : k / 2;
      for (u = 0; u < 4; u++) order[n++] = 4 * l + u;
    }
    order[n++] = 4 * L;
    lm_place_fill(pl, order, n, pl->budget);
    break;
  case LM_PLACE_RANDOM: {
    uint64_t draw = (uint64_t)LM_PLACE_RULES[r].draw, sd = (uint64_t)seed;
    demo_rng g = {draw * UINT64_C(0x9E3779B97F4A7C15) + sd * 7919u + 5u};
    for (u = 0; u < U; u++) order[u] = u;
    for (u = U - 1; u > 0; u--) {
      int j = (int)demo_below(&g, (uint32_t)(u + 1)), t = order[u];
      order[u] = order[j];
      order[j] = t;
    }
    lm_place_fill(pl, order, U, pl->budget);
    break;
  }
  case LM_PLACE_ONCE:
    pl->calib = steps / 10 > 1 ? steps / 10 : 1;
    pl->calib_from = pl->calib - LM_PLACE_CALIB_WINDOW;
    if (pl->calib_from < pl->calib / 2) pl->calib_from = pl->calib / 2;
    break;
  case LM_PLACE_LATE: {
    double share = 0, f;
    for (u = 0; u < U; u++)
      if (pl->late_unit[u]) share += pl->flops[u] / pl->total;
    f = pl->budget * 3 / lm_gemm_count(pl->gemms) / share;
    pl->late_from = f >= 1 ? 0 : steps - (int)(f * steps + 0.5);
    break;
  }
  case LM_PLACE_GNMR:
  case LM_PLACE_GNMR_PLAN: { /* plan*: told the run's steps, per GEMM */
    gnmr_place_config c = gnmr_place_config_default();
    c.budget = pl->budget;
    if (pl->rule == LM_PLACE_GNMR_PLAN) {
      c.planned_steps = (uint32_t)steps;
      if (pl->gemms) c.gemms = (uint32_t)pl->gemms;
      if (LM_PLACE_RULES[r].serve_low) c.serve = GNMR_SERVE_LOW;
      pl->gemms =
          (int)(c.serve == GNMR_SERVE_LOW ? c.gemms & ~GNMR_GEMM_FWD : c.gemms);
      pl->rule = LM_PLACE_GNMR;
    }
    if (gnmr_place_init(&pl->lib, &c, pl->lib_units, pl->flops, (uint32_t)U) !=
        GNMR_OK)
      DEMO_DIE("arm %s: gnmr_place_init refused the budget", arm);
    break;
  }
  case LM_PLACE_NVFP4_LATE: {
    double s = lm_place_fill(pl, order, lm_place_nvfp4_order(L, order),
                             pl->budget / 2),
           f = (pl->budget - s) / (1 - s);
    pl->late_from = steps - (int)(f * steps + 0.5);
    break;
  }
  default: break;
  }
}

/* This step's f32 GEMMs into pl->hf. */
static void lm_place_step(lm_placer *pl, int step) {
  int u, k;
  if (pl->rule == LM_PLACE_GNMR) { /* decided after the last update */
    for (u = 0; u < pl->n_units; u++)
      pl->hf[u] = (uint8_t)gnmr_place_high(&pl->lib, (uint32_t)u);
    return;
  }
  if (lm_place_measured(pl->rule)) {
    memset(pl->hf, 0, sizeof pl->hf);
    pl->credit += pl->budget * pl->total;
    for (k = 0; k < pl->n_fired; k++) {
      u = pl->fired[k];
      if (pl->credit >= pl->flops[u]) {
        pl->hf[u] = LM_GEMM_ALL;
        pl->credit -= pl->flops[u];
      }
    }
    return;
  }
  for (u = 0; u < pl->n_units; u++)
    pl->hf[u] =
        (uint8_t)(pl->fixed[u] || (step >= pl->late_from && pl->late_unit[u])
                      ? pl->gemms
                      : 0);
}

/* After the forward pass: the once rule's calibration window. */
static void lm_place_forward(lm_placer *pl, const lm_model *m, int step) {
  int order[LM_MAX_UNITS], u, k, j;
  if (pl->rule != LM_PLACE_ONCE || step < pl->calib_from || step >= pl->calib)
    return;
  for (u = 0; u < pl->n_units; u++) pl->oerr_sum[u] += m->unit[u].oerr;
  if (step != pl->calib - 1) return;
  for (u = 0; u < pl->n_units; u++) order[u] = u;
  for (k = 1; k < pl->n_units; k++) /* by error, largest first */
    for (j = k; j > 0 && pl->oerr_sum[order[j]] > pl->oerr_sum[order[j - 1]];
         j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  lm_place_fill(pl, order, pl->n_units, pl->budget);
}

/* One step of a fast and a slow mean; the level test (x under `level` x
   max) in bit 0, the fall test in bit 1. */
static int lm_place_test(double x, double max, double level, double *fast,
                         double *slow, int seen) {
  *fast = seen ? LM_PLACE_FALL_FAST * *fast + (1 - LM_PLACE_FALL_FAST) * x : x;
  *slow = seen ? LM_PLACE_FALL_SLOW * *slow + (1 - LM_PLACE_FALL_SLOW) * x : x;
  return (x < level * max) * 1 + (*fast < LM_PLACE_FALL_FRAC * *slow) * 2;
}

/* After the update: the measured rules' signals (every arm that has a
   placer); under a measured rule, units fire for good. */
static void lm_place_update(lm_placer *pl, const lm_model *m) {
  double level = 0, weight = 0;
  int u, k, j, order[LM_MAX_UNITS], n = 0, fired[LM_MAX_UNITS] = {0};
  if (pl->rule == LM_PLACE_GNMR) { /* the library reads the signals */
    double upd[LM_MAX_UNITS], qerr[LM_MAX_UNITS];
    for (u = 0; u < pl->n_units; u++) {
      const lm_linear *U = &m->unit[u];
      upd[u] = lm_dist(U->w, U->wprev, (size_t)U->in * (size_t)U->out);
      qerr[u] = U->wqerr; /* stale on the f32 path: read before the fire */
    }
    if (gnmr_place_step(&pl->lib, upd, qerr, NULL) != GNMR_OK)
      DEMO_DIE("gnmr_place_step refused the signals");
    for (u = 0; u < pl->n_units; u++) { /* for place_trace.csv */
      gnmr_place_unit_state x;
      if (gnmr_place_unit_info(&pl->lib, (uint32_t)u, &x) != GNMR_OK)
        DEMO_DIE("gnmr_place_unit_info refused");
      pl->ratio[u] = x.ratio;
      pl->rmax[u] = x.ratio_max;
    }
    return;
  }
  for (k = 0; k < pl->n_fired; k++) fired[pl->fired[k]] = 1;
  for (u = 0; u < pl->n_units; u++) {
    const lm_linear *U = &m->unit[u];
    size_t nw = (size_t)U->in * (size_t)U->out;
    double d, r;
    int test;
    if (fired[u] || !(U->wqerr > 0)) continue;
    d = lm_dist(U->w, U->wprev, nw);
    pl->upd[u] = pl->seen[u] ? LM_PLACE_UPD_BETA * pl->upd[u] +
                                   (1 - LM_PLACE_UPD_BETA) * d
                             : d;
    r = pl->upd[u] / U->wqerr;
    if (r > pl->rmax[u]) pl->rmax[u] = r;
    test = lm_place_test(r, pl->rmax[u], LM_PLACE_MAX_FRAC, &pl->fast[u],
                         &pl->slow[u], pl->seen[u]);
    pl->ratio[u] = r;
    pl->seen[u]++;
    level += pl->flops[u] * r / pl->rmax[u];
    weight += pl->flops[u];
    if (pl->seen[u] <= LM_PLACE_WARM) continue;
    if ((pl->rule == LM_PLACE_UPD_MAX && (test & 1)) ||
        (pl->rule == LM_PLACE_UPD_BOTH && test))
      pl->fired[pl->n_fired++] = u;
  }
  if ((pl->rule != LM_PLACE_UPD_ALL && pl->rule != LM_PLACE_UPD_LATE) ||
      pl->n_fired || !(weight > 0))
    return;
  if (!lm_place_test(level / weight, 1.0,
                     pl->rule == LM_PLACE_UPD_LATE ? LM_PLACE_LATE_FRAC
                                                   : LM_PLACE_MAX_FRAC,
                     &pl->all_fast, &pl->all_slow, pl->all_seen++) ||
      pl->all_seen <= LM_PLACE_WARM)
    return;
  for (u = 0; u < pl->n_units; u++) { /* lowest r / max first */
    double x = pl->rmax[u] > 0 ? pl->ratio[u] / pl->rmax[u] : 0;
    for (j = n; j > 0 && pl->rmax[order[j - 1]] > 0 &&
                pl->ratio[order[j - 1]] / pl->rmax[order[j - 1]] > x;
         j--)
      order[j] = order[j - 1];
    order[j] = u;
    n++;
  }
  for (k = 0; k < n; k++) pl->fired[pl->n_fired++] = order[k];
}

/* ---- one training run ------------------------------------------------------
 */

typedef struct lm_opts {
  lm_shape shape;
  int steps, seed, seeds, stress, quiet, sweep, eval_seqs;
  int arms[LM_N_ARMS], n_arms;
  const lp_format *fmt;
  const lp_format *grad_fmt; /* --grad-format, or NULL: f32 gradients */
  /* --sweep: learning rates x formats */
  double lrs[8];
  const lp_format *formats[LP_N_FORMATS];
  int n_lrs, n_formats;
  const char *data_dir, *out_dir, *setting;
  double lr;
  /* GNMR overrides (command line); a field < 0 keeps the arm's config */
  double tau_r, tau_d;
  int lock, max_rec;
  /* > 0: every arm's gradient, after its own control, is clipped to this
     global norm (what production trainers run anyway) */
  double global_clip;
  int clip_first; /* --clip-first: the global clip before the control */
  int units;      /* --units: LM_UNITS_*, the gnmr arms' controller units */
  demo_at freeze; /* --freeze: block, share of the run frozen */
  demo_at shift;  /* --shift: unit, where it is reparametrised */
  int schedule;   /* --schedule: LM_SCHED_* */
  int optimizer;  /* --optimizer: LM_OPT_* */
  /* --warmup: its length, in steps or (warmup_pct) in percent of them */
  int warmup, warmup_pct;
} lm_opts;

typedef struct lm_result {
  double val_bpb;        /* on the f32 path */
  double val_bpb_served; /* each unit's forward on its last step's path */
  double recovery_fraction, seconds, overhead_pct;
  double hf_flops; /* share of the units' GEMM FLOPs on the f32 path */
  int unit_hf_steps[LM_MAX_UNITS], unit_first_hf[LM_MAX_UNITS]; /* -1: never */
  int loss_spikes, diverged;
  /* gnmr arms: unit-steps flagged risky and admissions, and those of units
     that cover a LayerNorm (--units tensor or layer) */
  long flagged, flagged_ln, admitted, admitted_ln;
  uint64_t param_hash; /* FNV-1a of the final parameters' bytes */
  float *loss;         /* per step training loss in nats (caller frees) */
} lm_result;

typedef struct lm_trace {
  FILE *f;             /* trace.csv rows of the gnmr arm, or NULL */
  uint8_t *recovering; /* steps x units: unit ran f32 at that step */
  FILE *place;         /* place_trace.csv rows (lowp, measured arms) */
} lm_trace;

/* The served paths (the served evaluation): each unit's forward as its
   last training step ran it. A unit on the low-cost path whose forward
   GEMM was on the format keeps the format (its scaling as training left
   it: lm_evaluate); a unit on the f32 path, or whose forward GEMM ran f32
   (placement per GEMM), is served in f32. No faults, no signals. */
static void lm_served_paths(const lm_path *last, int U, lm_path *served) {
  int u;
  memset(served, 0, sizeof *served * (size_t)U);
  for (u = 0; u < U; u++)
    if (last[u].fmt && !(last[u].hf_gemms & LM_GEMM_FWD))
      served[u].fmt = last[u].fmt;
}

/* Validation bits per byte: eval_seqs windows of T+1 bytes spread evenly
   over the validation text, B at a time. paths NULL: every unit on the f32
   path; else each unit's forward on paths[u] (lm_served_paths). A unit on
   a per-tensor format scales by the delayed scale training left in its amax
   histories, the same for every batch: the histories are restored after
   each, so the evaluation changes nothing and its order does not matter.
   A path with jit set scales each tensor by its own amax instead (the
   weight's as training left it, each batch's activation its own). */
static double lm_evaluate(lm_model *m, const lm_text *val, int eval_seqs,
                          const lm_path *paths) {
  int T = m->s.T, B = m->s.B, N = B * T, done = 0, b, u;
  lm_path f32[LM_MAX_UNITS];
  lp_scaler sx[LM_MAX_UNITS], sw[LM_MAX_UNITS];
  uint8_t *tok = DEMO_CALLOC((size_t)N, uint8_t),
          *tgt = DEMO_CALLOC((size_t)N, uint8_t);
  double loss = 0;
  size_t span = val->n - (size_t)T - 1;
  memset(f32, 0, sizeof f32);
  if (!paths) paths = f32;
  for (u = 0; u < m->n_units; u++) {
    sx[u] = m->unit[u].sx;
    sw[u] = m->unit[u].sw;
  }
  while (done < eval_seqs) {
    for (b = 0; b < B; b++) {
      size_t start =
          span * (size_t)((done + b) % eval_seqs) / (size_t)eval_seqs;
      memcpy(tok + (size_t)b * (size_t)T, val->bytes + start, (size_t)T);
      memcpy(tgt + (size_t)b * (size_t)T, val->bytes + start + 1, (size_t)T);
    }
    loss += lm_forward(m, tok, tgt, paths) * B;
    for (u = 0; u < m->n_units; u++) {
      m->unit[u].sx = sx[u];
      m->unit[u].sw = sw[u];
    }
    done += B;
  }
  free(tok);
  free(tgt);
  return loss / done / log(2.0);
}

static uint64_t lm_hash(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

/* Every parameter's gradient times s (0: zeroed, the step skipped). */
static void lm_scale_all(lm_model *m, double s) {
  size_t i;
  if (s == 1.0) return;
  for (i = 0; i < m->n_params; i++)
    m->grads[i] = s == 0.0 ? 0 : (lm_real)(m->grads[i] * s);
}

static double lm_global_norm(const lm_model *m) {
  double total = 0;
  size_t i;
  for (i = 0; i < m->n_params; i++) total += (double)m->grads[i] * m->grads[i];
  return sqrt(total);
}

static gnmr_config lm_arm_config(const lm_opts *o, const demo_arm *arm,
                                 int n_units) {
  gnmr_config c = arm->config();
  if (o->tau_r > 0) c.ratio_threshold = o->tau_r;
  if (o->tau_d > 0) c.delta_threshold = o->tau_d;
  if (o->lock > 0) c.lock_steps = (uint32_t)o->lock;
  if (o->max_rec >= 0) c.max_recovering = (uint32_t)o->max_rec;
  if (c.max_recovering > (uint32_t)n_units)
    c.max_recovering = (uint32_t)n_units;
  return c;
}

/* The learning-rate schedules (--schedule), after a linear warm-up of
   lm_warmup_steps():
     cosine    cosine decay to lr / 10 at the last step
     wsd       warm-up, stable, decay: constant until the last LM_WSD_DECAY
               of the steps, then a linear decay to lr / 10 over them
     linear    a linear decay to lr / 10 at the last step
     constant  lr
     invsqrt   lr sqrt(W / (step + 1)) from step W on, W the warm-up's
               length or, without one, the default's (5% of the steps) */
enum {
  LM_SCHED_COSINE,
  LM_SCHED_WSD,
  LM_SCHED_LINEAR,
  LM_SCHED_CONSTANT,
  LM_SCHED_INVSQRT
};
#define LM_SCHEDULES "cosine|wsd|linear|constant|invsqrt"
#define LM_WSD_DECAY 0.2
#define LM_WARMUP_PCT 5 /* --warmup's default: 5% of the steps */

/* P% of the steps, at least one where P > 0. */
static int lm_pct_steps(const lm_opts *o, int pct) {
  int w = (int)((long)o->steps * pct / 100);
  return pct > 0 && w < 1 ? 1 : w;
}

/* The warm-up's length in steps: --warmup N, or P% of the steps. */
static int lm_warmup_steps(const lm_opts *o) {
  return o->warmup_pct ? lm_pct_steps(o, o->warmup) : o->warmup;
}

static double lm_lr(const lm_opts *o, int step) {
  int warm = lm_warmup_steps(o), d0 = o->steps - (int)(LM_WSD_DECAY * o->steps),
      w;
  if (step < warm) return o->lr * (step + 1) / warm;
  switch (o->schedule) {
  case LM_SCHED_WSD:
    return step < d0 ? o->lr
                     : o->lr * (1.0 - 0.9 * (step - d0) / (o->steps - d0));
  case LM_SCHED_LINEAR:
    return o->lr * (1.0 - 0.9 * (step - warm) / (o->steps - warm));
  case LM_SCHED_CONSTANT: return o->lr;
  case LM_SCHED_INVSQRT:
    w = warm > 0 ? warm : lm_pct_steps(o, LM_WARMUP_PCT);
    return step < w ? o->lr : o->lr * sqrt((double)w / (step + 1));
  default: break;
  }
  return o->lr * (0.1 + 0.45 * (1.0 + cos(3.141592653589793 * (step - warm) /
                                          (o->steps - warm))));
}

/* Trains one arm for o->steps steps, then evaluates it on the f32 path
   and as served (lm_served_paths). Same seed:
   same initial weights, same batches, same faults. */
static lm_result lm_train(const lm_opts *o, const demo_arm *arm, int seed,
                          const lm_text *train, const lm_text *val,
                          const demo_event *ev, int n_ev, lm_trace *trace) {
  lm_model m;
  demo_rng init = {(uint64_t)seed * 1000003u + 1},
           order = {(uint64_t)seed + 99};
  lm_adamw opt = {0.9, 0.95, 1e-8, 0.1, -1, 0, 0};
  gnmr_slot slots[LM_MAX_CTL];
  gnmr_ctl ctl;
  lm_groups grp; /* --units tensor or layer: the controller's units */
  gnmr_config cfg;
  lm_result res;
  int T = o->shape.T, B = o->shape.B, N = B * T, U, step, u, b, e;
  int CU;            /* controller units: U, or 2U with forward signals */
  long hf_steps = 0; /* unit-steps on the f32 path (forward arms) */
  int shift_step = o->shift.index >= 0 ? o->steps * o->shift.pct / 100 : -1;
  lm_placer pl;               /* placement arms; the lowp arm's signals */
  lm_path last[LM_MAX_UNITS]; /* the last step's paths */
  int signals = arm->kind == ARM_LOWP || arm->kind == ARM_PLACE;
  double hf_fl = 0, total_fl = 0;
  double ema_loss = 0, ctl_time = 0, t0, adagc_ema[LM_MAX_UNITS];
  arm_zclip zc = {0, 0, 0};
  arm_gstab gs[LM_MAX_UNITS];
  uint8_t *tok = DEMO_CALLOC((size_t)N, uint8_t),
          *tgt = DEMO_CALLOC((size_t)N, uint8_t);
  float norms[LM_MAX_CTL];
  const int grouped = arm->kind == ARM_GNMR && o->units != LM_UNITS_LINEAR;
  /* lowp-srd: the input gradients read stochastically rounded weights */
  const int srd = strcmp(arm->name, ARM_SRD_NAME) == 0;
  arm_persist ps; /* the calm-admission arms' own admissions (lab/arms.h) */
  const int persist = arm_persist_init(&ps, arm->name, 0) != ARM_ADMIT_NONE;
  int p_admit[LM_MAX_UNITS];
  memset(p_admit, 0, sizeof p_admit);
  memset(&res, 0, sizeof res);
  memset(norms, 0, sizeof norms);
  opt.kind = o->optimizer;
  if (o->freeze.index >= 0) {
    opt.freeze_block = o->freeze.index;
    opt.freeze_end = (long)o->steps * o->freeze.pct / 100;
  }
  lm_model_init(&m, o->shape, &init);
  U = m.n_units;
  CU = arm->forward ? 2 * U : U;
  if (grouped) {
    if (arm->forward || persist)
      DEMO_DIE("--units: the arm %s takes linear units only", arm->name);
    lm_groups_init(&grp, &m, o->units);
    CU = grp.n;
  }
  lm_place_init(&pl, arm->kind == ARM_PLACE ? arm->name : NULL, &m, o->steps,
                seed);
  for (u = 0; u < U; u++) {
    total_fl += lm_unit_flops(&m.s, u);
    res.unit_first_hf[u] = -1;
  }
  if (arm->kind == ARM_GNMR) {
    int rc;
    cfg = lm_arm_config(o, arm, CU);
    rc = gnmr_init(&ctl, &cfg, slots, (uint32_t)CU);
    if (rc != GNMR_OK) DEMO_DIE("gnmr_init: %s", gnmr_strerror(rc));
    if (persist) arm_persist_init(&ps, arm->name, (int)cfg.lock_steps);
  }
  for (u = 0; u < U; u++) adagc_ema[u] = 0;
  memset(gs, 0, sizeof gs);
  res.loss = DEMO_CALLOC((size_t)o->steps, float);
  lm_pool_start();
  lm_signal_time = 0;
  t0 = lm_now();

  for (step = 0; step < o->steps; step++) {
    lm_path paths[LM_MAX_UNITS];
    gnmr_decision d[LM_MAX_CTL];
    double loss, lr, tc;
    memset(d, 0, sizeof d);
    if (step == shift_step)
      lm_reparametrise(&m, o->shift.index, (float)DEMO_SHIFT_GAIN);
    /* The batch: B random windows of the training text. */
    for (b = 0; b < B; b++) {
      size_t start =
          (size_t)(demo_uniform(&order) * (double)(train->n - (size_t)T - 1));
      memcpy(tok + (size_t)b * (size_t)T, train->bytes + start, (size_t)T);
      memcpy(tgt + (size_t)b * (size_t)T, train->bytes + start + 1, (size_t)T);
    }
    /* Each unit's path this step. */
    memset(paths, 0, sizeof paths);
    if (arm->kind == ARM_PLACE) lm_place_step(&pl, step);
    for (u = 0; u < U; u++) {
      if (arm->f32) continue;
      if (arm->forward) paths[u].probe = o->fmt;
      if (arm->kind == ARM_PLACE && pl.hf[u] == LM_GEMM_ALL) {
        paths[u].track = 1;
        hf_steps++;
        continue;
      }
      paths[u].measure = signals;
      paths[u].out_err =
          pl.rule == LM_PLACE_ONCE && step >= pl.calib_from && step < pl.calib;
      if (arm->kind == ARM_GNMR &&
          (persist ? ps.left[u] > 0
                   : lm_unit_recovering(&ctl, grouped ? &grp : NULL, u, U,
                                        arm->forward))) {
        paths[u].track = 1;
        hf_steps++;
        if (trace && trace->recovering)
          trace->recovering[(size_t)step * (size_t)U + (size_t)u] = 1;
        continue;
      }
      paths[u].fmt = o->fmt;
      if (srd) /* a key per seed, step and unit, never 0 */
        paths[u].sr =
            (uint64_t)seed << 40 ^ (uint64_t)step << 8 ^ (uint64_t)(u + 1);
      if (arm->kind == ARM_PLACE && pl.hf[u]) {
        paths[u].hf_gemms = pl.hf[u];
        hf_steps++;
      }
      paths[u].gfmt = o->grad_fmt;
      paths[u].n_head = o->shape.nh;
      for (e = 0; e < n_ev; e++) {
        int k = step - ev[e].start;
        if (ev[e].unit != u || k < 0 || k >= ev[e].steps) continue;
        if (ev[e].kind == LM_OUTLIER) {
          double g = LM_OUTLIER_GAIN0 * pow(LM_OUTLIER_GROWTH, k);
          paths[u].outlier_gain =
              g < LM_OUTLIER_GAIN_MAX ? g : LM_OUTLIER_GAIN_MAX;
          paths[u].outlier_c0 = ev[e].where;
        } else if (ev[e].kind == LM_LOGIT) {
          paths[u].logit_gain = LM_LOGIT_GAIN0 * pow(LM_LOGIT_GROWTH, k);
          paths[u].logit_head = ev[e].where;
        } else {
          paths[u].stale = 1;
        }
      }
    }
    for (u = 0; u < U; u++) /* a GEMM: a third of its unit's FLOPs */
      if (!paths[u].fmt || paths[u].hf_gemms) {
        hf_fl += lm_unit_flops(&m.s, u) *
                 (paths[u].fmt ? lm_gemm_count(paths[u].hf_gemms) / 3.0 : 1.0);
        res.unit_hf_steps[u]++;
        if (res.unit_first_hf[u] < 0) res.unit_first_hf[u] = step;
      }
    memcpy(last, paths, sizeof last);
    loss = lm_forward(&m, tok, tgt, paths);
    lm_place_forward(&pl, &m, step);
    lm_backward(&m);
    if (step < opt.freeze_end) lm_zero_block(&m, opt.freeze_block);
    res.loss[step] = (float)loss;
    if (!isfinite(loss)) res.diverged = 1;
    if (step >= 20 && isfinite(loss) && loss > LM_SPIKE_FACTOR * ema_loss)
      res.loss_spikes++;
    if (isfinite(loss))
      ema_loss = step == 0 ? loss : 0.9 * ema_loss + 0.1 * loss;

    /* Control: the arms' extra work, timed as their overhead. */
    tc = lm_now();
    if (o->global_clip > 0 && o->clip_first) /* the control sees it clipped */
      lm_scale_all(&m, arm_clip_scale(lm_global_norm(&m), o->global_clip));
    if (arm->kind == ARM_CLIP) {
      lm_scale_all(&m, arm_clip_scale(lm_global_norm(&m), ARM_GLOBAL_CLIP));
    } else if (arm->kind == ARM_ZCLIP) {
      lm_scale_all(&m, arm_zclip_scale(&zc, lm_global_norm(&m)));
    } else if (arm->kind == ARM_ADAGC) {
      lm_unit_norms(&m, norms);
      for (u = 0; u < U; u++) {
        double s = arm_adagc_scale(&adagc_ema[u], norms[u]);
        if (s != 1.0) lm_scale_unit(&m, u, s);
      }
    } else if (arm->kind == ARM_GSTAB) {
      lm_unit_norms(&m, norms);
      for (u = 0; u < U; u++) {
        double s = arm_gstab_scale(&gs[u], norms[u]);
        if (s != 1.0) lm_scale_unit(&m, u, s);
      }
    } else if (arm->kind == ARM_SPAM) {
      lm_spam_step(&m, step);
    } else if (grouped) {
      int rc;
      lm_group_norms(&m, &grp, norms);
      rc = gnmr_step(&ctl, norms, d);
      if (rc != GNMR_OK) DEMO_DIE("gnmr_step: %s", gnmr_strerror(rc));
      for (u = 0; u < CU; u++) {
        int flagged = (d[u].flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA |
                                     GNMR_FLAG_NONFINITE)) != 0,
            p = grp.path[u];
        if (d[u].scale != 1.0) lm_group_scale(&m, &grp, u, d[u].scale);
        res.flagged += flagged;
        res.flagged_ln += flagged && grp.ln[u];
        if (d[u].action != GNMR_ACTION_RECOVER) continue;
        res.admitted++;
        res.admitted_ln += grp.ln[u];
        if (p >= 0) { /* as below */
          memset(&m.unit[p].sx, 0, sizeof m.unit[p].sx);
          memset(&m.unit[p].sw, 0, sizeof m.unit[p].sw);
        }
      }
    } else if (arm->kind == ARM_GNMR) {
      int rc;
      lm_unit_norms(&m, norms);
      for (u = 0; u < CU - U; u++) norms[U + u] = m.unit[u].qerr;
      rc = gnmr_step(&ctl, norms, d);
      if (rc != GNMR_OK) DEMO_DIE("gnmr_step: %s", gnmr_strerror(rc));
      if (persist)
        arm_persist_step(&ps, d, norms, U, (int)cfg.lock_steps,
                         (int)cfg.cooldown_steps, p_admit);
      for (u = 0; u < U; u++) {
        res.flagged += (d[u].flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA |
                                      GNMR_FLAG_NONFINITE)) != 0;
        res.admitted += d[u].action == GNMR_ACTION_RECOVER || p_admit[u];
        if (d[u].scale != 1.0) lm_scale_unit(&m, u, d[u].scale);
        /* Admitted: its scaling state is suspect; the f32 steps refill the
           amax histories from the true tensors. */
        if (d[u].action == GNMR_ACTION_RECOVER || p_admit[u] ||
            (CU > U && d[U + u].action == GNMR_ACTION_RECOVER)) {
          memset(&m.unit[u].sx, 0, sizeof m.unit[u].sx);
          memset(&m.unit[u].sw, 0, sizeof m.unit[u].sw);
        }
      }
    }
    if (o->global_clip > 0 && !o->clip_first)
      lm_scale_all(&m, arm_clip_scale(lm_global_norm(&m), o->global_clip));
    ctl_time += lm_now() - tc;
    if (arm->kind == ARM_GNMR && !grouped && trace &&
        trace->f) /* not timed: I/O */
      for (u = 0; u < U; u++) {
        char name[32];
        lm_unit_name(u, o->shape.L, name, sizeof name);
        fprintf(trace->f, "%d,%d,%s,%.6g,%.6g,%.6g,%s\n", step, u, name,
                (double)norms[u], d[u].ratio, d[u].delta,
                gnmr_action_name(d[u].action));
      }

    lr = lm_lr(o, step);
    if (arm->kind == ARM_SPAM) lr *= arm_spam_lr_scale(step);
    tc = lm_now();
    if (signals)
      for (u = 0; u < U; u++)
        memcpy(m.unit[u].wprev, m.unit[u].w,
               sizeof *m.unit[u].w * (size_t)m.unit[u].in *
                   (size_t)m.unit[u].out);
    ctl_time += lm_now() - tc;
    lm_adamw_update(&m, &opt, lr, step + 1);
    if (signals) {
      tc = lm_now();
      lm_place_update(&pl, &m);
      ctl_time += lm_now() - tc;
      if (trace && trace->place)
        for (u = 0; u < U; u++) {
          char name[32];
          lm_unit_name(u, o->shape.L, name, sizeof name);
          fprintf(trace->place, "%s,%d,%d,%s,%.6g,%.6g,%.6g,%d\n", arm->name,
                  step, u, name, pl.ratio[u], pl.rmax[u], lr,
                  paths[u].fmt == NULL);
        }
    }
  }
  res.seconds = lm_now() - t0;
  ctl_time += lm_signal_time; /* the signals the forward pass measured */
  res.overhead_pct = res.seconds > 0 ? 100.0 * ctl_time / res.seconds : 0.0;
  if (arm->kind == ARM_GNMR) {
    gnmr_counters c;
    gnmr_counters_get(&ctl, GNMR_ALL_UNITS, &c);
    res.recovery_fraction =
        (double)(CU > U || persist ? hf_steps : (long)c.recovery_steps) /
        ((double)o->steps * U);
  }
  if (arm->kind == ARM_PLACE)
    res.recovery_fraction = (double)hf_steps / ((double)o->steps * U);
  res.hf_flops = hf_fl / (total_fl * o->steps);
  res.val_bpb = lm_evaluate(&m, val, o->eval_seqs, NULL);
  if (o->steps > 0) {
    lm_path served[LM_MAX_UNITS];
    lm_served_paths(last, U, served);
    if (strcmp(arm->name, ARM_JIT_NAME) == 0)
      for (u = 0; u < U; u++) served[u].jit = 1;
    res.val_bpb_served = lm_evaluate(&m, val, o->eval_seqs, served);
  } else {
    res.val_bpb_served = res.val_bpb;
  }
  lm_pool_stop();
  if (!isfinite(res.val_bpb) || res.val_bpb > 8.0) res.diverged = 1;
  res.param_hash = lm_hash(m.params, sizeof *m.params * m.n_params);
  lm_model_free(&m);
  free(tok);
  free(tgt);
  return res;
}

/* ---- pictures -------------------------------------------------------------
 */

/* Training loss (bits per byte, EMA 0.98, mean over seeds) of every arm;
   the y range leaves out the first 10% of steps (lab/common.h). */
static void lm_svg_loss(const char *path, const lm_opts *o, float **curves) {
  char title[200];
  snprintf(title, sizeof title,
           "training loss, bits per byte (EMA 0.98, mean of %d seed(s)); "
           "%s, format %s, lr %g, stress %d",
           o->seeds, o->setting ? o->setting : "run", o->fmt->name, o->lr,
           o->stress);
  demo_svg_loss(path, title, "training loss, bits per byte", curves, o->arms,
                o->n_arms, o->steps, o->steps / 10);
}

/* Units x steps: where the gnmr arm ran a unit on f32, and the faults. */
static void lm_svg_raster(const char *path, const lm_opts *o, int U,
                          const uint8_t *rec, const demo_event *ev, int n_ev) {
  char title[200], names[LM_MAX_UNITS][32];
  const char *name_of[LM_MAX_UNITS];
  int u;
  for (u = 0; u < U; u++) {
    lm_unit_name(u, o->shape.L, names[u], sizeof names[u]);
    name_of[u] = names[u];
  }
  snprintf(title, sizeof title,
           "gnmr arm, first seed (%s): blue = unit on the f32 path; red "
           "frame = injected fault (O outlier, A attention logits, S stale "
           "scale)",
           o->setting ? o->setting : "run");
  demo_svg_raster(path, title, U, name_of, o->steps, rec, ev, n_ev, "OAS");
}

/* ---- the runs -------------------------------------------------------------
 */

/* Every arm x seed: summary.csv, trace.csv, stress.csv and the pictures. */
static int lm_run_arms(const lm_opts *o, const lm_text *train,
                       const lm_text *val) {
  char path[1100];
  FILE *summary, *stress_f, *loss_f, *units_f, *groups_f;
  lm_trace trace, ptrace;
  FILE *trace_f;
  int traced = 0;
  float *curves[LM_N_ARMS];
  double bpb[LM_N_ARMS][100], served[LM_N_ARMS][100], rf[LM_N_ARMS][100],
      hff[LM_N_ARMS][100], secs[LM_N_ARMS];
  int spikes[LM_N_ARMS], div[LM_N_ARMS], a, s, i, n_ev0 = 0,
                                                  U = 4 * o->shape.L + 1;
  demo_event ev0[LM_MAX_EVENTS];

  demo_mkdir(o->out_dir);
  snprintf(path, sizeof path, "%s/summary.csv", o->out_dir);
  summary = DEMO_FOPEN(path, "w");
  fprintf(summary, "setting,arm,seed,format,lr,stress,steps,val_bpb,"
                   "recovery_fraction,loss_spikes,diverged,seconds,"
                   "overhead_pct,hf_flops,val_bpb_served\n");
  snprintf(path, sizeof path, "%s/trace.csv", o->out_dir);
  trace.f = trace_f = DEMO_FOPEN(path, "w");
  fprintf(trace_f, "step,unit,name,norm,ratio,delta,action\n");
  trace.recovering = DEMO_CALLOC((size_t)o->steps * (size_t)U, uint8_t);
  trace.place = NULL;
  snprintf(path, sizeof path, "%s/place_trace.csv", o->out_dir);
  ptrace.f = NULL;
  ptrace.recovering = NULL;
  ptrace.place = DEMO_FOPEN(path, "w");
  fprintf(ptrace.place, "arm,step,unit,name,ratio,ratio_max,lr,hf\n");
  snprintf(path, sizeof path, "%s/units.csv", o->out_dir);
  units_f = DEMO_FOPEN(path, "w");
  fprintf(units_f,
          "setting,arm,seed,unit,name,flops_share,hf_steps,first_hf_step\n");
  snprintf(path, sizeof path, "%s/groups.csv", o->out_dir);
  groups_f = DEMO_FOPEN(path, "w");
  fprintf(groups_f, "setting,arm,seed,units,flagged,flagged_ln,admitted,"
                    "admitted_ln\n");
  snprintf(path, sizeof path, "%s/loss.csv", o->out_dir);
  loss_f = DEMO_FOPEN(path, "w");
  fprintf(loss_f, "arm,seed,step,loss_bpb\n");
  snprintf(path, sizeof path, "%s/stress.csv", o->out_dir);
  stress_f = DEMO_FOPEN(path, "w");
  fprintf(stress_f, "seed,start,steps,unit,name,kind,where\n");
  for (a = 0; a < o->n_arms; a++) {
    curves[a] = DEMO_CALLOC((size_t)o->steps, float);
    spikes[a] = div[a] = 0;
    secs[a] = 0;
  }
  for (s = 0; s < o->seeds; s++) {
    int seed = o->seed + s, n_ev;
    demo_event ev[LM_MAX_EVENTS];
    n_ev = lm_make_events(o->stress, o->steps, &o->shape, (uint64_t)seed, ev,
                          LM_MAX_EVENTS);
    for (i = 0; i < n_ev; i++) {
      char name[32];
      lm_unit_name(ev[i].unit, o->shape.L, name, sizeof name);
      fprintf(stress_f, "%d,%d,%d,%d,%s,%s,%d\n", seed, ev[i].start,
              ev[i].steps, ev[i].unit, name, LM_FAULT_NAMES[ev[i].kind],
              ev[i].where);
    }
    if (s == 0) {
      memcpy(ev0, ev, sizeof ev[0] * (size_t)n_ev);
      n_ev0 = n_ev;
    }
    for (a = 0; a < o->n_arms; a++) {
      const demo_arm *arm = &LM_ARMS[o->arms[a]];
      /* The trace: the first gnmr arm of the first seed. */
      lm_trace *tr = (!traced && arm->kind == ARM_GNMR) ? &trace : NULL;
      /* The placement signals' trace: the lowp and placement arms, first
         seed. */
      lm_result r =
          lm_train(o, arm, seed, train, val, ev, n_ev,
                   tr ? tr
                   : s == 0 && (arm->kind == ARM_LOWP || arm->kind == ARM_PLACE)
                       ? &ptrace
                       : NULL);
      double ema = r.loss[0], fl_total = 0;
      traced |= tr != NULL;
      for (i = 0; i < U; i++) fl_total += lm_unit_flops(&o->shape, i);
      for (i = 0; i < U; i++) {
        char name[32];
        lm_unit_name(i, o->shape.L, name, sizeof name);
        fprintf(units_f, "%s,%s,%d,%d,%s,%.4f,%d,%d\n",
                o->setting ? o->setting : "run", arm->name, seed, i, name,
                lm_unit_flops(&o->shape, i) / fl_total, r.unit_hf_steps[i],
                r.unit_first_hf[i]);
      }
      for (i = 0; i < o->steps; i++) {
        fprintf(loss_f, "%s,%d,%d,%.5f\n", arm->name, seed, i,
                r.loss[i] / log(2.0));
        if (isfinite(r.loss[i])) ema = 0.98 * ema + 0.02 * r.loss[i];
        curves[a][i] += (float)(ema / log(2.0) / o->seeds);
      }
      bpb[a][s] = r.val_bpb;
      served[a][s] = r.val_bpb_served;
      rf[a][s] = r.recovery_fraction;
      hff[a][s] = r.hf_flops;
      spikes[a] += r.loss_spikes;
      div[a] += r.diverged;
      secs[a] += r.seconds;
      fprintf(
          summary, "%s,%s,%d,%s,%g,%d,%d,%.6f,%.6f,%d,%d,%.2f,%.3f,%.6f,%.6f\n",
          o->setting ? o->setting : "run", arm->name, seed, o->fmt->name, o->lr,
          o->stress, o->steps, r.val_bpb, r.recovery_fraction, r.loss_spikes,
          r.diverged, r.seconds, r.overhead_pct, r.hf_flops, r.val_bpb_served);
      fflush(summary);
      if (arm->kind == ARM_GNMR)
        fprintf(groups_f, "%s,%s,%d,%s,%ld,%ld,%ld,%ld\n",
                o->setting ? o->setting : "run", arm->name, seed,
                arm->forward ? "linear" : lm_unit_grouping_name(o->units),
                r.flagged, r.flagged_ln, r.admitted, r.admitted_ln);
      if (!o->quiet)
        fprintf(stderr,
                "  %s seed %d %-6s val %.4f bits/byte, served %.4f (%.1fs)\n",
                o->setting ? o->setting : "run", seed, arm->name, r.val_bpb,
                r.val_bpb_served, r.seconds);
      free(r.loss);
    }
  }
  if (fclose(summary) != 0 || fclose(stress_f) != 0 || fclose(trace_f) != 0 ||
      fclose(loss_f) != 0 || fclose(units_f) != 0 || fclose(groups_f) != 0 ||
      fclose(ptrace.place) != 0)
    DEMO_DIE("writing the CSV files in %s failed", o->out_dir);
  snprintf(path, sizeof path, "%s/loss.svg", o->out_dir);
  lm_svg_loss(path, o, curves);
  snprintf(path, sizeof path, "%s/recovery.svg", o->out_dir);
  lm_svg_raster(path, o, U, trace.recovering, ev0, n_ev0);
  if (!o->quiet) {
    printf("%s: format %s, lr %g, stress %d, %d steps, %d seed(s) from %d, "
           "d %d, %d layers, %d heads, context %d, batch %d, %d thread(s)\n",
           o->setting ? o->setting : "run", o->fmt->name, o->lr, o->stress,
           o->steps, o->seeds, o->seed, o->shape.C, o->shape.L, o->shape.nh,
           o->shape.T, o->shape.B, lm_threads);
    printf("%-8s %18s %8s %9s %9s %7s %8s %8s\n", "arm", "val_bpb(sd)",
           "served", "recovery", "hf_flops", "spikes", "diverged", "wall_s");
    for (a = 0; a < o->n_arms; a++)
      printf("%-8s %9.4f (%6.4f) %8.4f %8.2f%% %8.2f%% %7d %8d %8.1f\n",
             LM_ARMS[o->arms[a]].name, demo_mean(bpb[a], o->seeds),
             demo_sd(bpb[a], o->seeds), demo_mean(served[a], o->seeds),
             100 * demo_mean(rf[a], o->seeds),
             100 * demo_mean(hff[a], o->seeds), spikes[a], div[a], secs[a]);
    {
      char line[160], others[256];
      const char *columns[2];
      snprintf(line, sizeof line,
               "hf_flops: the share of GEMM FLOPs on f32; spikes: steps whose "
               "loss passed %gx its EMA",
               LM_SPIKE_FACTOR);
      columns[0] = "val_bpb: validation loss, bits per byte, f32 path (sd "
                   "over seeds); served: each unit's forward as its last step "
                   "ran it; recovery: unit-steps on the f32 path;";
      columns[1] = line;
      demo_legend(
          columns, 2,
          demo_other_gnmr_arms(o->arms, o->n_arms, others, sizeof others),
          o->out_dir,
          "summary.csv trace.csv stress.csv units.csv "
          "place_trace.csv");
    }
  }
  for (a = 0; a < o->n_arms; a++) free(curves[a]);
  free(trace.recovering);
  return 0;
}

/* The stress sweep: f32 against lowp (the same seeds, batches and, with
   --stress, faults) over --sweep-lrs x --sweep-formats, every seed; lowp's
   excess over f32 of the same seed says where low precision hurts, f32's
   spread whether the reference is stable. */
static int lm_run_sweep(const lm_opts *o, const lm_text *train,
                        const lm_text *val) {
  char path[1100];
  FILE *f;
  int i, k, s;
  demo_mkdir(o->out_dir);
  snprintf(path, sizeof path, "%s/sweep.csv", o->out_dir);
  f = DEMO_FOPEN(path, "w");
  fprintf(f, "lr,format,stress,seed,f32_bpb,lowp_bpb,excess_pct\n");
  printf("%8s %6s %17s %17s %16s %10s\n", "lr", "format", "f32 mean(sd)",
         "lowp mean(sd)", "excess mean(sd)", "excess min");
  for (i = 0; i < o->n_lrs; i++) {
    lm_opts oc = *o;
    double fb[100], lb[LP_N_FORMATS][100];
    oc.lr = o->lrs[i];
    for (s = 0; s < o->seeds; s++) {
      int seed = o->seed + s, n_ev;
      demo_event ev[LM_MAX_EVENTS];
      lm_result rf;
      n_ev = lm_make_events(o->stress, o->steps, &o->shape, (uint64_t)seed, ev,
                            LM_MAX_EVENTS);
      rf = lm_train(&oc, &LM_ARMS[0], seed, train, val, ev, n_ev, NULL);
      free(rf.loss);
      fb[s] = rf.val_bpb;
      for (k = 0; k < o->n_formats; k++) {
        lm_result rl;
        oc.fmt = o->formats[k];
        rl = lm_train(&oc, &LM_ARMS[1], seed, train, val, ev, n_ev, NULL);
        free(rl.loss);
        lb[k][s] = rl.val_bpb;
        fprintf(f, "%g,%s,%d,%d,%.6f,%.6f,%.4f\n", oc.lr, oc.fmt->name,
                o->stress, seed, fb[s], lb[k][s], 100 * (lb[k][s] / fb[s] - 1));
        fflush(f);
      }
    }
    for (k = 0; k < o->n_formats; k++) {
      double ex[100], mn = 1e30;
      for (s = 0; s < o->seeds; s++) {
        ex[s] = 100 * (lb[k][s] / fb[s] - 1);
        if (ex[s] < mn) mn = ex[s];
      }
      printf("%8g %6s %9.4f (%5.3f) %9.4f (%5.3f) %+8.2f%% (%4.2f) %+9.2f%%\n",
             oc.lr, o->formats[k]->name, demo_mean(fb, o->seeds),
             demo_sd(fb, o->seeds), demo_mean(lb[k], o->seeds),
             demo_sd(lb[k], o->seeds), demo_mean(ex, o->seeds),
             demo_sd(ex, o->seeds), mn);
    }
    fflush(stdout);
  }
  if (fclose(f) != 0) DEMO_DIE("writing %s failed", path);
  printf("outputs in %s/: sweep.csv\n", o->out_dir);
  return 0;
}

/* ---- command line ----------------------------------------------------------
 */

/* ---- the command line: one table (lab/common.h reads it) ----------- */

static void lm_opt_arms(void *dst, const char *v, const char *name) {
  lm_opts *o = (lm_opts *)dst;
  (void)name;
  o->n_arms = demo_parse_arms(v, o->arms, LM_N_ARMS);
}

static void lm_show_arms(char *buf, size_t cap, const void *dst) {
  const lm_opts *o = (const lm_opts *)dst;
  demo_show_arms(buf, cap, o->arms, o->n_arms);
}

/* --format and --grad-format */
static void lm_opt_format(void *dst, const char *v, const char *name) {
  const lp_format **fmt = (const lp_format **)dst;
  *fmt = lp_format_find(v);
  if (!*fmt)
    DEMO_DIE("%s: expected e4m3, e5m2, e2m1 or nvfp4, got '%s'", name, v);
}

static void lm_show_format(char *buf, size_t cap, const void *dst) {
  demo_cat(buf, cap, "%s", (*(const lp_format *const *)dst)->name);
}

/* --isa and --ctl-isa: gnmr.h's norm or controller path */
static void lm_opt_isa(void *dst, const char *v, const char *name) {
  int isa, ctl = strcmp(name, "--ctl-isa") == 0;
  (void)dst;
  for (isa = GNMR_ISA_SCALAR; isa <= GNMR_ISA_NEON; isa++)
    if (strcmp(v, gnmr_isa_name(isa)) == 0) break;
  if (isa > GNMR_ISA_NEON ||
      (ctl ? gnmr_ctl_isa_force(isa) : gnmr_isa_force(isa)) != GNMR_OK)
    DEMO_DIE("%s: '%s' is not a path this build and CPU can run", name, v);
}

static void lm_opt_lrs(void *dst, const char *list, const char *name) {
  lm_opts *o = (lm_opts *)dst;
  char buf[256], *tok;
  snprintf(buf, sizeof buf, "%s", list);
  o->n_lrs = 0;
  for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    if (o->n_lrs == (int)(sizeof o->lrs / sizeof o->lrs[0]))
      DEMO_DIE("%s: at most %d", name, (int)(sizeof o->lrs / sizeof o->lrs[0]));
    o->lrs[o->n_lrs++] = demo_parse_double(tok, name, 1);
  }
  if (o->n_lrs == 0) DEMO_DIE("%s: empty list", name);
}

static void lm_show_lrs(char *buf, size_t cap, const void *dst) {
  const lm_opts *o = (const lm_opts *)dst;
  int k;
  for (k = 0; k < o->n_lrs; k++)
    demo_cat(buf, cap, "%s%g", k ? "," : "", o->lrs[k]);
}

static void lm_opt_formats(void *dst, const char *list, const char *name) {
  lm_opts *o = (lm_opts *)dst;
  char buf[256], *tok;
  snprintf(buf, sizeof buf, "%s", list);
  o->n_formats = 0;
  for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    if (o->n_formats == (int)LP_N_FORMATS)
      DEMO_DIE("%s: at most %d", name, (int)LP_N_FORMATS);
    lm_opt_format(&o->formats[o->n_formats++], tok, name);
  }
  if (o->n_formats == 0) DEMO_DIE("%s: empty list", name);
}

static void lm_show_formats(char *buf, size_t cap, const void *dst) {
  const lm_opts *o = (const lm_opts *)dst;
  int k;
  for (k = 0; k < o->n_formats; k++)
    demo_cat(buf, cap, "%s%s", k ? "," : "", o->formats[k]->name);
}

/* --warmup N (steps) or P% (percent of the steps) */
static void lm_opt_warmup(void *dst, const char *v, const char *name) {
  lm_opts *o = (lm_opts *)dst;
  size_t n = strlen(v);
  char buf[32];
  o->warmup_pct = n > 0 && v[n - 1] == '%';
  snprintf(buf, sizeof buf, "%.*s", (int)(n - (size_t)o->warmup_pct), v);
  o->warmup = o->warmup_pct ? demo_parse_int(buf, 0, 50, name)
                            : demo_parse_int(buf, 0, 10000000, name);
}

static void lm_show_warmup(char *buf, size_t cap, const void *dst) {
  const lm_opts *o = (const lm_opts *)dst;
  demo_cat(buf, cap, "%d%s", o->warmup, o->warmup_pct ? "%" : "");
}

static void lm_parse(lm_opts *o, int argc, char **argv) {
  int a;
  memset(o, 0, sizeof *o);
  o->shape.C = 64;
  o->shape.L = 2;
  o->shape.nh = 4;
  o->shape.T = 64;
  o->shape.B = 8;
  o->steps = 1500;
  o->seed = 1;
  o->seeds = 1;
  o->eval_seqs = 512;
  o->lr = 2e-3;
  o->fmt = &LP_FORMATS[0];
  o->data_dir = "/usr/share/games/fortunes";
  o->out_dir = "build/demo-lm";
  o->tau_r = o->tau_d = -1;
  o->lock = o->max_rec = -1;
  o->freeze.index = o->shift.index = -1;
  o->warmup = LM_WARMUP_PCT;
  o->warmup_pct = 1;
  o->lrs[0] = 2e-3, o->lrs[1] = 3e-3;
  o->n_lrs = 2;
  for (a = 0; a < (int)LP_N_FORMATS; a++) o->formats[a] = &LP_FORMATS[a];
  o->n_formats = (int)LP_N_FORMATS;
  lm_threads = 2;
  for (a = 0; a < LM_N_ARMS; a++)
    if (!LM_ARMS[a].extra) o->arms[o->n_arms++] = a;
  {
    demo_opt opts[] = {
        DEMO_OPT("--data", "DIR", DEMO_STR, &o->data_dir, 0, 0,
                 "fortune files"),
        DEMO_OPT_CALL("--arms", "LIST", lm_opt_arms, lm_show_arms, o,
                      "comma list of arms; --arms list names them all"),
        DEMO_OPT("--setting", "S", DEMO_STR, &o->setting, 0, 0,
                 "a name for the run in the outputs (default run)"),
        DEMO_OPT("--seed", "S", DEMO_INT, &o->seed, 0, 1 << 30, "first seed"),
        DEMO_OPT("--seeds", "N", DEMO_INT, &o->seeds, 1, 100,
                 "seeds S, S+1, ..."),
        DEMO_OPT("--steps", "N", DEMO_INT, &o->steps, 2, 10000000,
                 "training steps"),
        DEMO_OPT("--dim", "C", DEMO_INT, &o->shape.C, 1, 4096, "model width"),
        DEMO_OPT("--layers", "L", DEMO_INT, &o->shape.L, 1, LM_MAX_LAYERS,
                 "transformer blocks"),
        DEMO_OPT("--heads", "H", DEMO_INT, &o->shape.nh, 1, 64,
                 "attention heads (they divide --dim)"),
        DEMO_OPT("--ctx", "T", DEMO_INT, &o->shape.T, 2, 1024,
                 "context length"),
        DEMO_OPT("--batch", "B", DEMO_INT, &o->shape.B, 1, 4096,
                 "sequences a step"),
        DEMO_OPT("--lr", "X", DEMO_REAL, &o->lr, 1, 0,
                 "peak learning rate (SGD takes a far larger one,\n"
                 "Lion a smaller one than AdamW)"),
        DEMO_OPT("--optimizer", LM_OPTIMIZERS, DEMO_CHOICE, &o->optimizer, 0, 0,
                 "AdamW, SGD with momentum 0.9, or Lion (sign of\n"
                 "the momentum)"),
        DEMO_OPT_CALL("--warmup", "N|P%", lm_opt_warmup, lm_show_warmup, o,
                      "linear warm-up over N steps or P% of them\n"
                      "(0: none)"),
        DEMO_OPT_CALL("--format", "F", lm_opt_format, lm_show_format, &o->fmt,
                      "e4m3, e5m2, e2m1 or nvfp4 (E2M1, a scale per\n"
                      "1x16 block; no --stress)"),
        DEMO_OPT("--stress", "N", DEMO_INT, &o->stress, 0, 1000,
                 "injected faults per 1000 steps"),
        DEMO_OPT("--eval", "N", DEMO_INT, &o->eval_seqs, 1, 1 << 20,
                 "validation windows"),
        DEMO_OPT("--threads", "N", DEMO_INT, &lm_threads, 1, LM_MAX_THREADS,
                 "GEMM threads (any count, same bits)"),
        DEMO_OPT_CALL("--isa", "NAME", lm_opt_isa, NULL, NULL,
                      "gnmr.h's norm path: scalar, sse2, avx2, avx512,\n"
                      "neon (default: the best this CPU runs; same bits)"),
        DEMO_OPT_CALL("--ctl-isa", "NAME", lm_opt_isa, NULL, NULL,
                      "gnmr.h's controller path: scalar, avx512\n"
                      "(default: the best this CPU runs; same bits)"),
        DEMO_OPT("--tau-r", "X", DEMO_REAL, &o->tau_r, 1, 0,
                 "GNMR override: the ratio threshold (default: the arm's)"),
        DEMO_OPT("--tau-d", "X", DEMO_REAL, &o->tau_d, 1, 0,
                 "GNMR override: the delta threshold (default: the arm's)"),
        DEMO_OPT("--lock", "N", DEMO_INT, &o->lock, 1, 1 << 20,
                 "GNMR override: the lock steps (default: the arm's)"),
        DEMO_OPT(
            "--max-rec", "N", DEMO_INT, &o->max_rec, 0, LM_MAX_UNITS,
            "GNMR override: units in recovery at once (default: the arm's)"),
        DEMO_OPT("--global-clip", "X", DEMO_REAL, &o->global_clip, 1, 0,
                 "every arm: clip the global gradient norm to X\n"
                 "after the arm's own control (0: off)"),
        DEMO_OPT("--clip-first", NULL, DEMO_FLAG, &o->clip_first, 0, 0,
                 "the global clip before the arm's control, which\n"
                 "then sees the clipped gradients"),
        DEMO_OPT("--units", LM_UNIT_GROUPINGS, DEMO_CHOICE, &o->units, 0, 0,
                 "the gnmr arms' units: each Linear (LayerNorms\n"
                 "not controlled), each tensor, or each Linear with\n"
                 "the LayerNorm it reads"),
        DEMO_OPT("--freeze", "B:P", DEMO_AT, &o->freeze, 0, LM_MAX_LAYERS - 1,
                 "block B " DEMO_FREEZE_HELP),
        DEMO_OPT("--shift", "U:P", DEMO_AT, &o->shift, 0, LM_MAX_UNITS - 1,
                 "unit U " DEMO_SHIFT_HELP),
        DEMO_OPT_CALL("--grad-format", "F", lm_opt_format, NULL, &o->grad_fmt,
                      "the low-cost path also quantizes each unit's\n"
                      "output gradient to F (default: f32 gradients)"),
        DEMO_OPT("--schedule", LM_SCHEDULES, DEMO_CHOICE, &o->schedule, 0, 0,
                 "after the warm-up: cosine to lr/10; wsd: constant,\n"
                 "then linear to lr/10 over the last 20% of steps;\n"
                 "linear to lr/10; constant; invsqrt: lr sqrt(W/t)\n"
                 "from the warm-up's end W (none: 5% of the steps)"),
        DEMO_OPT("--sweep", NULL, DEMO_FLAG, &o->sweep, 0, 0,
                 "f32 vs lowp (every seed, with --stress faults)"),
        DEMO_OPT_CALL("--sweep-lrs", "LIST", lm_opt_lrs, lm_show_lrs, o,
                      "learning rates of --sweep"),
        DEMO_OPT_CALL("--sweep-formats", "LIST", lm_opt_formats,
                      lm_show_formats, o, "formats of --sweep"),
        DEMO_OPT("--out", "DIR", DEMO_STR, &o->out_dir, 0, 0,
                 "output directory"),
        DEMO_OPT("--quiet", NULL, DEMO_FLAG, &o->quiet, 0, 0,
                 "no table on stdout"),
    };
    demo_parse_options(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
  }
  if (o->freeze.index >= o->shape.L || o->shift.index > 4 * o->shape.L)
    DEMO_DIE("--freeze names a block, --shift a unit the model does not have "
             "(%d blocks, %d units)",
             o->shape.L, 4 * o->shape.L + 1);
  if (lm_warmup_steps(o) >= o->steps)
    DEMO_DIE("--warmup: %d steps, not fewer than --steps %d",
             lm_warmup_steps(o), o->steps);
  if (o->shift.index >= 0 && o->optimizer != LM_OPT_ADAMW)
    DEMO_DIE("--shift: AdamW only (the reparametrisation keeps AdamW's "
             "updates, not SGD's or Lion's)");
  for (a = 0; a < o->n_arms; a++)
    if (LM_ARMS[o->arms[a]].kind == ARM_SPAM && o->optimizer != LM_OPT_ADAMW)
      DEMO_DIE("--arms %s: --optimizer adamw only (SPAM clips against and "
               "resets AdamW's moments; SGD and Lion have no second moment)",
               LM_ARMS[o->arms[a]].name);
  /* The faults and the forward signal are defined on per-tensor scales. */
  for (a = 0; a < o->n_arms; a++)
    if (o->fmt->block && (o->stress > 0 || LM_ARMS[o->arms[a]].forward))
      DEMO_DIE("--format %s: no --stress and no forward arms (%s)",
               o->fmt->name, LM_ARMS[o->arms[a]].name);
  if (o->shape.C % o->shape.nh != 0)
    DEMO_DIE("--dim %d is not a multiple of --heads %d", o->shape.C,
             o->shape.nh);
  for (a = 0; a < o->n_arms; a++)
    if (LM_ARMS[o->arms[a]].config) {
      gnmr_config c =
          lm_arm_config(o, &LM_ARMS[o->arms[a]], 4 * o->shape.L + 1);
      if (gnmr_config_check(&c, UINT32_MAX, NULL) != GNMR_OK)
        DEMO_DIE("the GNMR settings of arm %s are out of range",
                 LM_ARMS[o->arms[a]].name);
    }
}

/* The whole program, callable from a test. */
static int train_lm_main(int argc, char **argv) {
  lm_opts o;
  lm_text train, val;
  int rc;
  lm_parse(&o, argc, argv);
  lm_load_fortunes(o.data_dir, &train, &val);
  if (train.n < (size_t)o.shape.T + 2 || val.n < (size_t)o.shape.T + 2)
    DEMO_DIE("%s: too little text (%zu training, %zu validation bytes)",
             o.data_dir, train.n, val.n);
  if (!o.quiet)
    printf("data: %s, %zu training and %zu validation bytes\n", o.data_dir,
           train.n, val.n);
  if (!o.quiet && !o.sweep) demo_note_spam(o.arms, o.n_arms, o.steps);
  rc = o.sweep ? lm_run_sweep(&o, &train, &val) : lm_run_arms(&o, &train, &val);
  free(train.bytes);
  free(val.bytes);
  return rc;
}

#ifndef TRAIN_LM_NO_MAIN
int main(int argc, char **argv) { return train_lm_main(argc, argv); }
#endif
