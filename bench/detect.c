/* detect.c - detection benchmark: which unit-steps does a rule flag, and are
   they the faulty ones?

   Two halves:
   1. Synthetic traces with ground truth: 64 units, 4000 steps, log-normal
      AR(1) noise, slow drift, benign hard batches, local events (rises and
      falls of 1-3 units for 1-5 steps, some steps NaN) and global events
      (most units rising together). Several noise levels and seeds.
   2. Real gradient-norm traces (bench/data/): false alarms on two stable
      runs, injected rises and falls on them, and the step-level verdict on
      two unstable runs.

   Detectors: the paper rules through gnmr.h itself (gnmr_step), the peers
   re-implemented here (AdaGC-style ratio clip, ZClip-style EMA z-score,
   rolling-window z-score at 3 and 6 sigma), and the noise-aware, two-sided
   rule with a step-level verdict: gnmr.h's NOISE mode (gnmr_step), run
   beside proto_step below, the prototype it was ported from, which must
   agree with it bit for bit on every unit-step (flags, scores, c, GLOBAL)
   or the run stops. The ablations the library has no setting for (the
   prototype without its global gate) run the prototype alone.

   usage: detect [--data DIR] [--md FILE] [--seeds N] [--seed-base B]
                 [--many N] [--many-base B] [--quick] [--set NAME=VALUE]
                 [--frontier N]
   (DIR holds the unpacked trace CSVs; without it the real-trace tables are
   left out with a message. Synthetic seeds: 1000 i + B + j for noise level
   i and j < N; the held-out table uses B + 500, the many-seeds table its
   own base, 70001 and 32 seeds unless told.) */
#define _POSIX_C_SOURCE 199309L
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ========================================================================
   PROTOTYPE: the noise-aware two-sided rule and the step-level verdict.
   The model gnmr.h's NOISE mode was ported from (rules N0-N9 there); kept
   as the port's cross-check (lib_step below).
   ========================================================================

   Rules of one step (numbered as they should appear in gnmr.h's header).
   Per unit u: g its norm this step, k its finite observations so far, mu its
   log-mean, s its fluctuation, p its last deviation. L(x) is the library's
   own log (rule 0), never libm's.

   0. L(x) = e*ln2 + 2y(1 + y^2/3 + y^4/5 + y^6/7), where x' = max(x, eps)
      (finite, so a normal double) = f * 2^e with f in [1, 2) read off the
      bits (exponent field, mantissa with the exponent set to 1023: exact),
      and y = (f-1)/(f+1). Plain IEEE adds, multiplies and one divide in a
      fixed order: the same bits on every path (scalar, SIMD, device) with
      contraction off; |error| < 2e-5, and increasing in x. Nothing else in
      the per-unit path is transcendental (no exp, log or sqrt).
   1. Non-finite g (NaN, +-Inf): risky, flag NONFINITE, score +inf, scale 0;
      mu, s, p and k are not touched (as in the paper).
   2. Deviation: d_raw = L(g) - mu. The first finite observation sets mu =
      L(g), s = p = 0, k = 1 and flags nothing.
   3. Step-level view, once per step before the per-unit decisions, over
      the SETTLED units (finite g, k >= max(warmup, 1)), n of them:
      c = the centre of the grid bin of their lower median of d_raw:
          q(x) = floor((x + 8) * 256) clamped to [0, 4095] (steps of 1/256
          in L units, 0.4% in ratio; medians beyond +-8 clamp), d_(r) the
          element of rank r = floor((n-1)/2), c = (q(d_(r)) + 0.5)/256 - 8;
          c = 0 when n < common_min_units. q is monotone, so q(d_(r)) is the
          rank-r value of q whatever finds it: here two passes of a 64-bin
          integer histogram (coarse q >> 6, then q & 63 within the chosen
          coarse bin), no sorting, no scratch beyond d_raw per unit, and
          integer counts that a device can add in any order. c is what
          every unit shares this step (a hard batch, the common drift).
      n_up = how many of them have d_raw > L(global_ratio).
      G = sqrt(sum of g^2 over the finite units), the global norm; it keeps
          its own (mu_G, s_G, p_G, k_G), updated by rules 2 and 4-7 as one
          more unit with c = 0 (so a spike cannot inflate it either).
      GLOBAL when k_G >= warmup, n >= common_min_units and
          (c > L(global_ratio)      [at least half the settled units rose
                                     more than global_ratio together]
           or (L(G) - mu_G > L(global_ratio) and n_up >= global_frac * n)).
      Reported: c, R_G = G / exp(mu_G) (report only: the port computes it
      with its own deterministic exp, or reports L(G) - mu_G), n_rise,
      n_fall, GLOBAL.
   4. Residual: d = d_raw - c (the unit's own part), e = d - ar * p (what
      the last deviation does not predict), S = max(s, fluct_floor).
      RISE  when k >= warmup, e >  z_rise * S and d > L(min_rise);
      FALL  when k >= warmup, e < -z_fall * S and d < L(max_fall)
            (two_sided only; its own flag).
      score = e / (z_rise * S) for a rise, -e / (z_fall * S) for a fall.
      The test is multiplies and compares: a divide only when flagged.
   5. Mean, finite g only: k += 1; a = max(1/k, 1 - history_decay) (no
      divide once k * (1 - history_decay) >= 1);
      mu += a * clamp(d_raw, -z_fall * S, z_rise * S) once k > warmup
      (plain d_raw before: the warm-up mean is the plain mean of L(g)).
      A spike moves mu by at most a * z_rise * S.
   6. Fluctuation, from the second finite observation on (j = k - 1
      residuals so far): x = |e|, capped at winsor * S once k > warmup;
      s += max(1/j, 1 - fluct_decay) * (x - s): the winsorised mean
      absolute residual. A spike moves s by at most
      (1 - fluct_decay) * winsor * S.
   7. p = clamp(d, -z_fall * S, z_rise * S), only when the unit is not
      flagged and |e| <= hold * S: a flagged or suspicious step does not
      become the prediction, so the next step of an event is judged against
      the level before the event (a second full chance), not against itself.
   8. Admission as in the paper (locks, renewal, cooldown, score ranking,
      max_recovering), with: FALL units are risky like RISE units; on a
      GLOBAL step no new unit is admitted except NONFINITE ones (the step's
      gradient is the global policy's business; the budget stays for local
      faults). Locks count down and renew as usual on every step.
   9. Scale: CLIP clips a RISE unit to exp(mu + c + z_rise * S) / g (an exp
      on the flagged path only; the port needs its own deterministic exp,
      range reduction plus polynomial, for device bit identity) and never
      scales a FALL unit up (scale 1); SKIP gives 0 to both. On a GLOBAL
      step the global policy multiplies every unit's scale: NONE 1, CLIP
      global_ratio / R_G (the global norm back to its threshold times its
      mean), SKIP 0.

   Defaults, and why (tables in bench/RESULTS.md, "Detection"):
   - z_rise 4.25: the knee of the frontier at sigma 0.25/0.4 (4 seeds):
     4.25 gives rise recall 0.924/0.808 at false alarms 0.070%/0.076%;
     4.1 gives 0.930/0.819 at 0.098%/0.105% (and 3.7-4.3 admissions per
     1000 steps on the stable runs, against 2.3-3.7). The false-alarm
     targets are kept with margin; the recall targets are missed by 0.01.
     On 32 seeds (the many-seeds table) the misses are 0.007 and 0.03:
     seeds 1-4 sit above the mean at sigma 0.4. A second sweep (32 seeds
     of other bases than the table's, 96 settings of z_rise 4.1-4.4,
     winsor 2.5-3, fluct_decay 0.995-0.999, ar 0.5-0.55; then hold 3-5,
     min_rise 1.7-2.2, history_decay 0.98-0.997 one at a time) found no
     setting better than these defaults on both recall and false alarms
     by more than 0.002: every one lies on the same frontier, and where
     the false alarms stay under 0.1% the rise recall at sigma 0.4 stays
     at or under 0.80. The defaults stay; the recall targets at sigma 0.25
     and 0.4 are out of reach of this rule's settings. --frontier (the
     frontier() table below) asks whether another rule would reach them:
     recall at exactly 0.1% false alarms for the rule, three changed rules
     and four bounds given one piece of the hidden truth all land within
     0.926-0.932 (sigma 0.25) and 0.797-0.809 (sigma 0.4) on 32 seeds;
     only a bound given the level, common factor and noise scale at once,
     with ar 0.7 and the evidence summed, reaches 0.938 / 0.821.
   - min_rise 2.0: real gradient noise is heavy-tailed (on the stable runs
     P(e > 6 S) is 2e-4, Gaussian would give 1e-6): calm units jump 2x now
     and then. Requiring the unit's own part to have doubled cut the stable
     runs from 15-17 to 1.7-3.3 admissions per 1000 steps (at z_rise 4.5);
     it costs the 1.8-2x events (recall at sigma 0.05: 0.994 -> 0.981).
   - z_fall 6, max_fall 0.5: falls from a fault are deep (x0.2 and below);
     a high threshold keeps fall false alarms out of the budget.
   - ar 0.5: gradient noise is correlated step to step. 0.5 predicts half
     the last deviation: at AR(1) 0.7 the residual is 1.04x the innovation
     (1.4x without), on white noise it costs 12%. 0.7 fitted the synthetic
     noise better but more than doubled admissions on the real traces
     (5.3/9.0 per 1000 steps against 2.0/4.0).
   - hold 3.5: +0.01/+0.02 rise recall at sigma 0.25/0.4 (the next step of
     a missed multi-step event gets a second full chance); 2.5-3 raised
     false alarms past 0.09%.
   - fluct_decay 0.995 (memory of ~200 steps): a steadier s; 0.98 gave
     more false alarms and less recall.
   - warmup 50: norms fall fast in the first steps of training; at 16 the
     plain mean lags that fall and the stable runs flagged 20 units at once
     at step 16 (19-22 admissions per 1000 steps -> 15-17 at 50).
   - global_ratio 2, global_frac 0.25: hard batches (every unit 1.3-1.7x)
     stay under it; events of x3 and more on 70% of the units do not.
     GLOBAL means breadth, not the size of G: on the unstable runs most
     steps where G jumps (x2 over its recent median) have fewer than a
     quarter of the units doubled. global_frac 0 (G doubled is enough)
     flags 197/246 and 71/91 of those steps instead of 83/246 and 60/91,
     but makes every large local fault on a big unit GLOBAL (360-510 false
     global steps per 10,000 on the synthetic traces, its admissions
     gated); 0.1 still gives 30-260 at sigma 0.25-0.4. If the caller wants
     G's jumps clipped too, a separate report-only "G above global_ratio
     times its mean" bit that drives the global policy without gating
     admissions would do it; not built here.

   Cost (detect --speed, N = 4096 calm, CPU time, at design time): this
   scalar prototype takes about 20 ns per unit per step against 1.6 ns for
   gnmr_step's AVX-512 paper rules; L() alone is 3 ns. The port needs the
   library's shape to meet "within 1.5x": one array per field, L() in SIMD
   (bit ops, one divide, a polynomial), the histogram counted into several
   sub-histograms (a calm step puts every unit in one bin, and one counter
   serialises the adds). Not measured here: the port's own numbers decide.

   Tried and dropped (quick runs, 1 seed): a second-step rule (flag a rise
   above 3-3.5 S that follows one, with hold at the same level): no better
   recall at equal false alarms; a per-unit AR weight estimated online
   (two more doubles per unit): +0.01 recall at sigma 0.4 for +0.015%
   false alarms, not worth the state; winsor 2 or 1.5 with a higher
   z_rise: the same frontier; p clamped to +-hold S and updated on every
   unflagged step (in place of no update beyond hold S): lower recall at
   equal false alarms (0.918/0.786 at 0.079%/0.092% with z_rise 4.1, 8
   seeds). The oracle row (true noise state, 3.35
   sigma) shows what is left: at its false alarms (0.08%) it reaches
   0.966/0.878 at sigma 0.25/0.4, against 0.924/0.808 here.

   Config fields it adds (valid range; default):
     rule              GNMR_RULE_PAPER (0) or GNMR_RULE_NOISE (1); NOISE.
                       PAPER runs 0.1's rules bit for bit and ignores every
                       field below; gnmr_config_paper() returns 0.1's
                       defaults with rule = PAPER.
     z_rise            finite, > 0; 4.25
     z_fall            finite, > 0; 6.0
     min_rise          finite, > 1; 2.0
     max_fall          (0, 1); 0.5
     ar                [0, 1); 0.5
     hold              finite, > 0 (>= z_rise: never holds); 3.5
     fluct_decay       (0, 1]; 0.995
     winsor            finite, >= 1; 3.0
     fluct_floor       finite, >= 0; 0.01
     two_sided         0 or 1; 1
     common_min_units  >= 1 (UINT32_MAX: no common view, c = 0); 8
     global_ratio      finite, > 1; 2.0
     global_frac       (0, 1]; 0.25
     global_policy     GNMR_GLOBAL_NONE / _CLIP / _SKIP; NONE
   Kept with their meaning: history_decay (0.99), warmup_steps (default 50
   in NOISE mode, 16 in gnmr_config_paper()), eps, max_recovering,
   lock_steps, cooldown_steps, spike_policy. ratio_threshold,
   delta_threshold and delta_window are PAPER mode only.

   State it adds:
     per unit (slot):  double mu, s, p (k is the paper's counter; the
                       paper's m and ratio window stay for PAPER mode).
     controller:       double g_mu, g_s, g_p; uint64_t g_k (the global
                       norm's history); last step's report: double common,
                       global_ratio; uint32_t n_rise, n_fall, global;
                       counters uint64_t falls, global_steps.
     scratch:          one double per unit (d_raw, written in the first
                       pass, read by the median and the decisions) and two
                       64-entry integer histograms on the stack; the slots'
                       existing scratch space holds the doubles.
     flags:            GNMR_FLAG_FALL (below its expected level),
                       GNMR_FLAG_GLOBAL (on every unit of a GLOBAL step).

   Checkpoints: format version 2 (now 3, with the verdict) holds them. A version
   1 (0.1) checkpoint is refused with GNMR_EVERSION rather than loaded into
   PAPER mode: it carries 0.1's config only, and loading it would switch a
   resumed run's rules by the file, not by the caller's config. A caller
   who wants 0.1's behaviour uses gnmr_config_paper() and starts its
   statistics afresh (one warm-up).
*/

#define PROTO_LN2 0.69314718055994530942

static int diag; /* --diag: print the noise-aware flags on real traces */

typedef struct proto_config {
  double z_rise, z_fall, min_rise, max_fall, ar;
  double mean_decay, fluct_decay, winsor, fluct_floor, eps;
  double global_ratio, global_frac, hold;
  unsigned warmup, common_min_units;
  int two_sided;
  int global_gate; /* 1: no new admissions on a GLOBAL step */
  /* Experiments for the frontier table only (0: the rule as ported; the
     library runs none of them). p_mode 1: p = clamped d on every step (no
     hold); 2: rule 7, and on flagged steps too. glr_w > 0: evidence summed
     over an event's steps, entered when e > glr_enter S: later steps add
     glr_w e and the statistic is the sum over sqrt(1 + glr_w^2 (j - 1))
     (the likelihood ratio of a level shift under AR(1) noise, with
     glr_w = 1 - ar); p as p_mode 1. genie_*: the true noise scale (S =
     genie_scale sigma), the true common factor as c, the true level in
     place of mu in d: bounds, not detectors (synthetic traces only). */
  int p_mode, genie_common, genie_level;
  double glr_w, glr_enter, genie_scale;
} proto_config;

typedef struct proto_unit {
  double mu, s, p;
  unsigned long long k;
  double A;   /* glr_w: the evidence summed so far (experiments) */
  unsigned J; /* glr_w: steps summed, 0 = none */
} proto_unit;

typedef struct proto_step_info {
  double common, global_ratio, global_z;
  unsigned n_rise, n_fall;
  int global;
} proto_step_info;

typedef struct proto_ctl {
  proto_config cfg;
  proto_unit *u;   /* caller's memory: n units */
  double *scratch; /* caller's memory: n doubles */
  unsigned n;
  proto_unit g; /* the global norm's history */
  double l_min_rise, l_max_fall, l_global;
  /* genie inputs (experiments): this step's true log levels (n), log
     common factor and noise level; d_shift is set per unit */
  const float *genie_lvl;
  double genie_c, genie_sigma, d_shift;
} proto_ctl;

enum { PF_RISE = 1, PF_FALL = 2, PF_NONFINITE = 4 };

static proto_config proto_config_default(void) {
  proto_config c;
  c.z_rise = 4.25;
  c.z_fall = 6.0;
  c.min_rise = 2.0;
  c.max_fall = 0.5;
  c.ar = 0.5;
  c.mean_decay = 0.99;
  c.fluct_decay = 0.995;
  c.winsor = 3.0;
  c.fluct_floor = 0.01;
  c.eps = 1e-12;
  c.global_ratio = 2.0;
  c.hold = 3.5;
  c.global_frac = 0.25;
  c.warmup = 50;
  c.common_min_units = 8;
  c.two_sided = 1;
  c.global_gate = 1;
  c.p_mode = c.genie_common = c.genie_level = 0;
  c.glr_w = c.glr_enter = c.genie_scale = 0.0;
  return c;
}

/* 1 when the config is one the library runs (no experiment set). */
static int proto_plain(const proto_config *c) {
  return !c->p_mode && !c->genie_common && !c->genie_level && c->glr_w == 0.0 &&
         c->genie_scale == 0.0;
}

/* Rule 0: the library's log. */
static double proto_log(double x, double eps) {
  uint64_t b;
  double f, y, y2;
  int e;
  if (!(x > eps)) x = eps; /* finite, >= eps: a normal double */
  memcpy(&b, &x, 8);
  e = (int)(b >> 52) - 1023;
  b = (b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  memcpy(&f, &b, 8); /* [1, 2), exact */
  y = (f - 1.0) / (f + 1.0);
  y2 = y * y;
  return (double)e * PROTO_LN2 +
         2.0 * y *
             (1.0 + y2 * (1.0 / 3.0 + y2 * (1.0 / 5.0 + y2 * (1.0 / 7.0))));
}

/* Rule 3's grid: q(x) = floor((x + 8) * 256) clamped to [0, 4095]; the
   median is reported as its bin's centre. Monotone in x, so the quantised
   lower median is the same whatever finds it. */
static unsigned proto_q(double x) {
  double y = (x + 8.0) * 256.0;
  return y <= 0.0 ? 0u : y >= 4095.0 ? 4095u : (unsigned)y;
}

static double proto_clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Element of rank k (0-based) of a[0..n-1] (Wirth's selection; reorders a).
   The lower median is rank (n-1)/2: the result is the same element whatever
   the algorithm. */
static double proto_select(double *a, unsigned n, unsigned k) {
  long l = 0, m = (long)n - 1, kk = (long)k;
  while (l < m) {
    double x = a[kk];
    long i = l, j = m;
    do {
      while (a[i] < x) i++;
      while (x < a[j]) j--;
      if (i <= j) {
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    } while (i <= j);
    if (j < kk) l = i;
    if (kk < i) m = j;
  }
  return a[kk];
}

static void proto_init(proto_ctl *c, const proto_config *cfg, proto_unit *u,
                       double *scratch, unsigned n) {
  c->cfg = *cfg;
  c->u = u;
  c->scratch = scratch;
  c->n = n;
  memset(u, 0, n * sizeof *u);
  memset(&c->g, 0, sizeof c->g);
  c->l_min_rise = proto_log(cfg->min_rise, cfg->eps);
  c->l_max_fall = proto_log(cfg->max_fall, cfg->eps);
  c->l_global = proto_log(cfg->global_ratio, cfg->eps);
}

/* Rules 2-7 for one history (a unit, or the global norm with c = 0).
   Returns PF_RISE / PF_FALL / 0 and the score. */
static int proto_unit_step(const proto_ctl *c, proto_unit *st, double d_raw,
                           double common, double *score, double *z) {
  const proto_config *cf = &c->cfg;
  double d, e, S, a, x;
  int fl = 0;
  *score = 0.0;
  if (z) *z = 0.0;
  if (st->k == 0) {
    st->mu = d_raw; /* mu was 0: d_raw is L(g) */
    st->s = 0.0;
    st->p = 0.0;
    st->k = 1;
    return 0;
  }
  d = d_raw - common;
  if (st->k >= cf->warmup) d += c->d_shift; /* genie_level (0 otherwise) */
  e = d - cf->ar * st->p;
  S = st->s > cf->fluct_floor ? st->s : cf->fluct_floor;
  if (cf->genie_scale > 0.0 && st != &c->g)
    S = cf->genie_scale * c->genie_sigma;
  if (st->k >= cf->warmup) {
    double r = e; /* the rise statistic: e, or the evidence summed */
    if (cf->glr_w > 0.0 && st != &c->g) {
      if (st->J > 0) {
        st->A += cf->glr_w * e;
        st->J++;
        r = st->A / sqrt(1.0 + cf->glr_w * cf->glr_w * (double)(st->J - 1));
        if (e > r) r = e;
      } else if (e > cf->glr_enter * S) {
        st->A = e;
        st->J = 1;
      }
    }
    if (r > cf->z_rise * S && d > c->l_min_rise) {
      fl = PF_RISE;
      *score = r / (cf->z_rise * S);
    } else if (cf->two_sided && e < -cf->z_fall * S && d < c->l_max_fall) {
      fl = PF_FALL;
      *score = -e / (cf->z_fall * S);
    }
    if (st->J > 0 && (fl || st->J >= 5 || r < cf->glr_enter * S))
      st->A = 0.0, st->J = 0;
  }
  if (z) *z = e / S; /* reporting only */
  /* rule 5 */
  st->k += 1;
  /* max(1/k, 1 - beta) with no divide once 1/k <= 1 - beta */
  a = (double)st->k * (1.0 - cf->mean_decay) >= 1.0 ? 1.0 - cf->mean_decay
                                                    : 1.0 / (double)st->k;
  if (st->k > cf->warmup)
    st->mu += a * proto_clamp(d_raw, -cf->z_fall * S, cf->z_rise * S);
  else
    st->mu += a * d_raw;
  /* rule 6 */
  x = fabs(e);
  if (st->k > cf->warmup && x > cf->winsor * S) x = cf->winsor * S;
  a = (double)(st->k - 1) * (1.0 - cf->fluct_decay) >= 1.0
          ? 1.0 - cf->fluct_decay
          : 1.0 / (double)(st->k - 1);
  st->s += a * (x - st->s);
  /* rule 7 */
  if ((!fl && e <= cf->hold * S && e >= -cf->hold * S) ||
      (st != &c->g &&
       (cf->p_mode == 1 || cf->glr_w > 0.0 || (cf->p_mode == 2 && fl))))
    st->p = proto_clamp(d, -cf->z_fall * S, cf->z_rise * S);
  return fl;
}

/* One step: flags[u] gets PF_*, score[u] the score. */
static void proto_step(proto_ctl *c, const float *norms, unsigned char *flags,
                       double *score, proto_step_info *info) {
  const proto_config *cf = &c->cfg;
  unsigned u, nv = 0, nup = 0, hist[64], k, bin, below = 0;
  double sumsq = 0.0, common = 0.0, gs, gz, lane[8];
  double *dr = c->scratch;

  /* rule 2 and 3, pass 1: every unit's d_raw (into scratch), the global
     sum of squares, and the coarse histogram of the settled units */
  memset(hist, 0, sizeof hist);
  for (u = 0; u < c->n; u++) {
    double g = norms[u];
    if (u % 256 == 0) memset(lane, 0, sizeof lane);
    if (isfinite(g)) {
      lane[u % 8] += g * g; /* the library's fixed order of the sum */
      dr[u] = proto_log(g, cf->eps) - c->u[u].mu;
      if (c->u[u].k >= cf->warmup && c->u[u].k > 0) {
        nv++;
        nup += dr[u] > c->l_global;
        hist[proto_q(dr[u]) >> 6]++;
      }
    }
    if (u % 256 == 255 || u + 1 == c->n)
      sumsq += ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
               ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  if (nv >= cf->common_min_units && nv > 0) {
    /* rule 3, pass 2: the lower median's bin, coarse then fine */
    unsigned rank = (nv - 1) / 2;
    for (bin = 0; below + hist[bin] <= rank; bin++) below += hist[bin];
    memset(hist, 0, sizeof hist);
    for (u = 0; u < c->n; u++) {
      unsigned q;
      if (!isfinite(norms[u]) || c->u[u].k < cf->warmup || !c->u[u].k) continue;
      q = proto_q(dr[u]);
      if (q >> 6 == bin) hist[q & 63]++;
    }
    for (k = 0; below + hist[k] <= rank; k++) below += hist[k];
    common = ((double)(bin * 64 + k) + 0.5) / 256.0 - 8.0;
  }
  if (cf->genie_common) common = c->genie_c;
  info->common = common;
  c->d_shift = 0.0;
  {
    double lg = proto_log(sqrt(sumsq), cf->eps);
    int settled = c->g.k >= cf->warmup && c->g.k > 0;
    double gdr = lg - c->g.mu;
    info->global_ratio = c->g.k ? exp(gdr) : 1.0; /* report only */
    (void)proto_unit_step(c, &c->g, gdr, 0.0, &gs, &gz);
    info->global_z = gz;
    info->global =
        settled && nv >= cf->common_min_units &&
        (common > c->l_global ||
         (gdr > c->l_global && (double)nup >= cf->global_frac * (double)nv));
  }
  info->n_rise = info->n_fall = 0;
  /* rule 4-7 per unit */
  for (u = 0; u < c->n; u++) {
    int fl;
    if (!isfinite(norms[u])) {
      flags[u] = PF_NONFINITE;
      score[u] = HUGE_VAL;
      continue;
    }
    /* genie_level: d = L(g) - (true level) - (true common factor), in place
       of L(g) - mu - c */
    c->d_shift = cf->genie_level ? c->u[u].mu - (double)c->genie_lvl[u] +
                                       (common - c->genie_c)
                                 : 0.0;
    fl = proto_unit_step(c, &c->u[u], dr[u], common, &score[u], NULL);
    flags[u] = (unsigned char)fl;
    info->n_rise += fl == PF_RISE;
    info->n_fall += fl == PF_FALL;
  }
}

/* ========================================================================
   Admission (rule 8): the paper's budget, locks, renewal and cooldown,
   shared by every detector that is not the library itself.
   ======================================================================== */

typedef struct adm {
  unsigned n, maxo, lock, cool, recovering;
  int *lock_left, *cool_left;
  unsigned *cand;
  unsigned long long admissions, recovery_steps;
} adm;

static void adm_init(adm *a, unsigned n, unsigned maxo, unsigned lock,
                     unsigned cool) {
  a->n = n;
  a->maxo = maxo;
  a->lock = lock;
  a->cool = cool;
  a->recovering = 0;
  a->lock_left = calloc(n, sizeof(int));
  a->cool_left = calloc(n, sizeof(int));
  a->cand = calloc(n, sizeof(unsigned));
  a->admissions = a->recovery_steps = 0;
  if (!a->lock_left || !a->cool_left || !a->cand) abort();
}

static void adm_free(adm *a) {
  free(a->lock_left);
  free(a->cool_left);
  free(a->cand);
}

static const double *adm_sort_score;
static int adm_cmp(const void *x, const void *y) {
  unsigned i = *(const unsigned *)x, j = *(const unsigned *)y;
  double si = adm_sort_score[i], sj = adm_sort_score[j];
  if (si > sj) return -1;
  if (si < sj) return 1;
  return (i > j) - (i < j);
}

/* risky[u]: PF_* flags (nonzero = risky); gate: no admissions except
   non-finite units this step. */
static void adm_step(adm *a, const unsigned char *risky, const double *score,
                     int gate) {
  unsigned u, nc = 0, k;
  for (u = 0; u < a->n; u++) {
    if (a->lock_left[u] > 0) {
      if (--a->lock_left[u] == 0) {
        if (risky[u]) {
          a->lock_left[u] = (int)a->lock; /* renewed */
        } else {
          a->recovering--;
          a->cool_left[u] = (int)a->cool;
        }
      }
    } else {
      int cooling = a->cool_left[u] > 0, nf = (risky[u] & PF_NONFINITE) != 0;
      if (cooling) a->cool_left[u]--;
      if (risky[u] && (!cooling || nf) && (!gate || nf)) a->cand[nc++] = u;
    }
  }
  adm_sort_score = score;
  if (nc > 1) qsort(a->cand, nc, sizeof(unsigned), adm_cmp);
  for (k = 0; k < nc && a->recovering < a->maxo; k++) {
    a->lock_left[a->cand[k]] = (int)a->lock;
    a->cool_left[a->cand[k]] = 0;
    a->recovering++;
    a->admissions++;
  }
  a->recovery_steps += a->recovering;
}

/* ========================================================================
   Detectors
   ======================================================================== */

enum {
  D_PAPER,
  D_ADAGC,
  D_ZCLIP,
  D_ROLL3,
  D_ROLL6,
  D_PROTO,
  D_PROTO_NOCOMMON,
  D_PROTO_NOAR,
  D_PROTO_ONESIDED,
  D_PROTO_Z41,
  D_ORACLE,
  D_COUNT
};
static const char *det_name[D_COUNT] = {
    "paper (gnmr.h 0.1 defaults)",
    "AdaGC-style ratio clip (1.05, EMA 0.98)",
    "ZClip-style EMA z-score (2.5, EMA 0.97)",
    "rolling z-score 3 sigma / 128",
    "rolling z-score 6 sigma / 128",
    "**noise-aware (proto defaults)**",
    "  ablation: no common view (c = 0)",
    "  ablation: no predictor (ar = 0)",
    "  ablation: rises only",
    "  variant: z_rise 4.1",
    "oracle (knows each unit's noise state; a bound, not a detector)"};

#define ROLL_W 128
typedef struct det {
  int kind;
  unsigned n;
  /* paper */
  gnmr_ctl ctl;
  gnmr_slot *slots;
  gnmr_decision *dec;
  /* peers */
  double *ema, *var;
  unsigned long long *cnt;
  double *win; /* n * ROLL_W */
  /* proto */
  proto_ctl pc;
  proto_unit *pu;
  double *pscratch;
  proto_step_info info;
  int lib; /* the noise-aware rule run by gnmr.h (NOISE mode) */
  unsigned long long mismatches; /* library vs prototype, unit-steps */
  /* outputs */
  unsigned char *flags;
  double *score;
  adm ad;
} det;

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) {
    fprintf(stderr, "detect: out of memory\n");
    exit(2);
  }
  return p;
}

/* --set NAME=VALUE: one prototype config field (for sweeps). */
static int proto_set(proto_config *c, const char *kv) {
  struct field {
    const char *name;
    double *d;
    unsigned *u;
    int *i;
  } f[] = {{"z_rise", &c->z_rise, NULL, NULL},
           {"z_fall", &c->z_fall, NULL, NULL},
           {"min_rise", &c->min_rise, NULL, NULL},
           {"max_fall", &c->max_fall, NULL, NULL},
           {"ar", &c->ar, NULL, NULL},
           {"mean_decay", &c->mean_decay, NULL, NULL},
           {"fluct_decay", &c->fluct_decay, NULL, NULL},
           {"winsor", &c->winsor, NULL, NULL},
           {"fluct_floor", &c->fluct_floor, NULL, NULL},
           {"global_ratio", &c->global_ratio, NULL, NULL},
           {"global_frac", &c->global_frac, NULL, NULL},
           {"hold", &c->hold, NULL, NULL},
           {"warmup", NULL, &c->warmup, NULL},
           {"common_min_units", NULL, &c->common_min_units, NULL},
           {"two_sided", NULL, NULL, &c->two_sided},
           {"global_gate", NULL, NULL, &c->global_gate}};
  const char *eq = strchr(kv, '=');
  size_t k, len;
  double v;
  if (!eq) return -1;
  len = (size_t)(eq - kv);
  v = atof(eq + 1);
  for (k = 0; k < sizeof f / sizeof f[0]; k++) {
    if (strlen(f[k].name) != len || strncmp(kv, f[k].name, len)) continue;
    if (f[k].d) *f[k].d = v;
    if (f[k].u) *f[k].u = (unsigned)v;
    if (f[k].i) *f[k].i = (int)v;
    return 0;
  }
  return -1;
}

static proto_config proto_over; /* defaults, with --set overrides */

static proto_config proto_variant(int kind) {
  proto_config c = proto_over;
  if (kind == D_PROTO_NOCOMMON) c.common_min_units = 0xFFFFFFFFu;
  if (kind == D_PROTO_NOAR) c.ar = 0.0;
  if (kind == D_PROTO_ONESIDED) c.two_sided = 0;
  if (kind == D_PROTO_Z41) c.z_rise = 4.1;
  return c;
}

/* The library's NOISE mode with a prototype config's values: the rule the
   noise-aware rows run (max_recovering 4, cooldown 4 as adm_init's). */
static gnmr_config lib_config(const proto_config *p, unsigned lock) {
  gnmr_config c = gnmr_config_paper();
  c.rule = GNMR_RULE_NOISE;
  c.max_recovering = 4;
  c.lock_steps = lock;
  c.cooldown_steps = 4;
  c.warmup_steps = p->warmup;
  c.history_decay = p->mean_decay;
  c.eps = p->eps;
  c.two_sided = (uint32_t)(p->two_sided != 0);
  c.z_rise = p->z_rise;
  c.z_fall = p->z_fall;
  c.min_rise = p->min_rise;
  c.max_fall = p->max_fall;
  c.ar = p->ar;
  c.hold = p->hold;
  c.fluct_decay = p->fluct_decay;
  c.winsor = p->winsor;
  c.fluct_floor = p->fluct_floor;
  c.global_ratio = p->global_ratio;
  c.global_frac = p->global_frac;
  c.common_min_units = p->common_min_units;
  return c;
}

static void det_init(det *d, int kind, unsigned n, unsigned lock,
                     const proto_config *pcfg) {
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->n = n;
  d->flags = xcalloc(n, 1);
  d->score = xcalloc(n, sizeof(double));
  adm_init(&d->ad, n, 4, lock, 4);
  if (kind == D_PAPER) {
    gnmr_config cfg = gnmr_config_paper();
    cfg.max_recovering = 4;
    cfg.lock_steps = lock;
    d->slots = xcalloc(n, sizeof(gnmr_slot));
    d->dec = xcalloc(n, sizeof(gnmr_decision));
    if (gnmr_init(&d->ctl, &cfg, d->slots, n) != GNMR_OK) abort();
  } else if (kind == D_ORACLE) {
    /* flags come from the generator (run_synth) */
  } else if (kind >= D_PROTO) {
    proto_config c = pcfg ? *pcfg : proto_variant(kind);
    d->pu = xcalloc(n, sizeof(proto_unit));
    d->pscratch = xcalloc(n, sizeof(double));
    proto_init(&d->pc, &c, d->pu, d->pscratch, n);
    /* The library runs the rule whenever it can (the prototype, without
       its global gate, is a variant the library does not have). */
    if (c.global_gate && proto_plain(&c)) {
      gnmr_config cfg = lib_config(&c, lock);
      d->slots = xcalloc(n, sizeof(gnmr_slot));
      d->dec = xcalloc(n, sizeof(gnmr_decision));
      if (gnmr_init(&d->ctl, &cfg, d->slots, n) != GNMR_OK) abort();
      d->lib = 1;
    }
  } else {
    d->ema = xcalloc(n, sizeof(double));
    d->var = xcalloc(n, sizeof(double));
    d->cnt = xcalloc(n, sizeof(unsigned long long));
    if (kind == D_ROLL3 || kind == D_ROLL6)
      d->win = xcalloc((size_t)n * ROLL_W, sizeof(double));
  }
}

static void det_free(det *d) {
  if (d->kind == D_PAPER || d->lib) {
    /* The admission rules re-implemented here must give the library's own
       admissions on the paper's flags, or every other row is suspect. */
    gnmr_counters cn;
    if (gnmr_counters_get(&d->ctl, GNMR_ALL_UNITS, &cn) != GNMR_OK ||
        cn.admissions != d->ad.admissions) {
      fprintf(stderr,
              "detect: admission model disagrees with gnmr.h (%llu vs "
              "%llu)\n",
              (unsigned long long)cn.admissions, d->ad.admissions);
      exit(1);
    }
  }
  free(d->flags);
  free(d->score);
  free(d->slots);
  free(d->dec);
  free(d->ema);
  free(d->var);
  free(d->cnt);
  free(d->win);
  free(d->pu);
  free(d->pscratch);
  adm_free(&d->ad);
}

/* Peers. Warm-up: 16 finite observations (the rolling window uses what it
   holds until it is full). Both directions are computed; the fall side is
   the mirror rule (AdaGC: rises only). */
static void peer_step(det *d, const float *norms) {
  unsigned u;
  for (u = 0; u < d->n; u++) {
    double g = norms[u];
    unsigned char fl = 0;
    double sc = 0.0;
    if (!isfinite(g)) {
      d->flags[u] = PF_NONFINITE;
      d->score[u] = HUGE_VAL;
      continue;
    }
    if (d->kind == D_ADAGC) {
      /* AdaGC: clip when g > lambda * EMA of (clipped) norms */
      const double lam = 1.05, b = 0.98;
      if (d->cnt[u] >= 16 && g > lam * d->ema[u]) {
        fl = PF_RISE;
        sc = g / (lam * d->ema[u]);
      }
      {
        double x = fl ? lam * d->ema[u] : g;
        d->cnt[u]++;
        d->ema[u] =
            d->cnt[u] == 1 ? x : b * d->ema[u] + (1.0 - b) * x; /* clipped */
      }
    } else if (d->kind == D_ZCLIP) {
      /* ZClip: EMA mean and variance, z-score, spikes enter clipped */
      const double al = 0.97, zt = 2.5;
      double sd = sqrt(d->var[u]), x = g;
      if (d->cnt[u] >= 16 && sd > 0.0) {
        double z = (g - d->ema[u]) / sd;
        if (z > zt) {
          fl = PF_RISE;
          sc = z / zt;
          x = d->ema[u] + zt * sd;
        } else if (z < -zt) {
          fl = PF_FALL;
          sc = -z / zt;
          x = d->ema[u] - zt * sd;
        }
      }
      d->cnt[u]++;
      if (d->cnt[u] == 1) {
        d->ema[u] = x;
        d->var[u] = 0.0;
      } else {
        double diff = x - d->ema[u];
        d->ema[u] = al * d->ema[u] + (1.0 - al) * x;
        d->var[u] = al * d->var[u] + (1.0 - al) * diff * diff;
      }
    } else { /* rolling z-score over the last ROLL_W finite norms */
      const double zt = d->kind == D_ROLL3 ? 3.0 : 6.0;
      unsigned long long c = d->cnt[u];
      unsigned m = c < ROLL_W ? (unsigned)c : ROLL_W, i;
      double *w = d->win + (size_t)u * ROLL_W, mean = 0.0, ss = 0.0, sd;
      for (i = 0; i < m; i++) mean += w[i];
      if (m) mean /= m;
      for (i = 0; i < m; i++) ss += (w[i] - mean) * (w[i] - mean);
      sd = m > 1 ? sqrt(ss / (m - 1)) : 0.0;
      if (m >= 16 && sd > 0.0) {
        double z = (g - mean) / sd;
        if (z > zt) {
          fl = PF_RISE;
          sc = z / zt;
        } else if (z < -zt) {
          fl = PF_FALL;
          sc = -z / zt;
        }
      }
      if (!fl) { /* a flagged norm does not enter the window */
        w[c % ROLL_W] = g;
        d->cnt[u]++;
      }
    }
    d->flags[u] = fl;
    d->score[u] = sc;
  }
}

/* The library's NOISE mode on the same norms: its flags, scores and
   verdict replace the prototype's, which must agree bit for bit (the
   prototype stays as the port's cross-check: a disagreement stops the
   run). */
static void lib_step(det *d, const float *norms, int *gate) {
  gnmr_step_report rep;
  unsigned u;
  if (gnmr_step(&d->ctl, norms, d->dec) != GNMR_OK ||
      gnmr_step_info(&d->ctl, &rep) != GNMR_OK)
    abort();
  for (u = 0; u < d->n; u++) {
    uint32_t f = d->dec[u].flags;
    unsigned char fl = (unsigned char)((f & GNMR_FLAG_NONFINITE) ? PF_NONFINITE
                                       : (f & GNMR_FLAG_RATIO)   ? PF_RISE
                                       : (f & GNMR_FLAG_FALL)    ? PF_FALL
                                                                 : 0);
    double sc = (f & GNMR_FLAG_NONFINITE) ? HUGE_VAL : d->dec[u].score;
    if (fl != d->flags[u] || memcmp(&sc, &d->score[u], 8) != 0) d->mismatches++;
    d->flags[u] = fl;
    d->score[u] = sc;
  }
  if ((int)rep.global != d->info.global ||
      memcmp(&rep.common, &d->info.common, 8) != 0)
    d->mismatches++;
  if (d->mismatches) {
    fprintf(stderr,
            "detect: gnmr.h's NOISE mode disagrees with the "
            "prototype at step %llu\n",
            (unsigned long long)d->ctl.steps);
    exit(1);
  }
  d->info.global = (int)rep.global;
  d->info.common = rep.common;
  *gate = (int)rep.global;
}

static void det_step(det *d, const float *norms) {
  int gate = 0;
  if (d->kind == D_PAPER) {
    unsigned u;
    if (gnmr_step(&d->ctl, norms, d->dec) != GNMR_OK) abort();
    for (u = 0; u < d->n; u++) {
      uint32_t f = d->dec[u].flags;
      d->flags[u] =
          (unsigned char)((f & GNMR_FLAG_NONFINITE) ? PF_NONFINITE
                          : (f & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) ? PF_RISE
                                                                      : 0);
      d->score[u] = d->dec[u].score;
    }
  } else if (d->kind >= D_PROTO) {
    proto_step(&d->pc, norms, d->flags, d->score, &d->info);
    gate = d->pc.cfg.global_gate && d->info.global;
    if (d->lib) lib_step(d, norms, &gate);
  } else {
    peer_step(d, norms);
  }
  adm_step(&d->ad, d->flags, d->score, gate);
}

/* ========================================================================
   Random numbers
   ======================================================================== */

static unsigned long long rng_s;
static double uni(void) {
  unsigned long long z = (rng_s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gauss(void) {
  return sqrt(-2.0 * log(uni())) * cos(6.283185307179586 * uni());
}
static unsigned urange(unsigned lo, unsigned hi) { /* inclusive */
  unsigned v = lo + (unsigned)(uni() * (double)(hi - lo + 1));
  return v > hi ? hi : v;
}
static double loguni(double lo, double hi) {
  return exp(log(lo) + uni() * (log(hi) - log(lo)));
}

/* ========================================================================
   Synthetic traces
   ======================================================================== */

#define SN 64
#define ST 4000
#define EV_MAX 2048
#define GE_MAX 128

typedef struct event {
  unsigned t0, dur, unit;
  int fall;
} event;
typedef struct gevent {
  unsigned t0, dur;
} gevent;

typedef struct synth {
  float *norms; /* ST * SN */
  float *pred;  /* ST * SN: log norm without this step's innovation and
                   event (what an oracle of the noise state expects) */
  float *lvl;   /* ST * SN: log norm without noise, event or hard batch */
  double *lhf;  /* ST: log of the hard batch's factor (0 on other steps) */
  double sigma;
  int *ev;     /* ST * SN: event index + 1, 0 outside events */
  char *gstep; /* ST: inside a global event */
  char *hard;  /* ST: hard batch */
  event evs[EV_MAX];
  unsigned nev;
  gevent gev[GE_MAX];
  unsigned ngev;
} synth;

static void synth_make(synth *s, double sigma, unsigned long long seed) {
  double e[SN], base[SN], per[SN], ph[SN];
  unsigned t, u, i;
  int *busy = xcalloc(SN, sizeof(int)); /* unit free from this step on */
  rng_s = seed * 0x2545F4914F6CDD1Dull + 17;
  s->norms = xcalloc((size_t)ST * SN, sizeof(float));
  s->pred = xcalloc((size_t)ST * SN, sizeof(float));
  s->lvl = xcalloc((size_t)ST * SN, sizeof(float));
  s->lhf = xcalloc(ST, sizeof(double));
  s->sigma = sigma;
  s->ev = xcalloc((size_t)ST * SN, sizeof(int));
  s->gstep = xcalloc(ST, 1);
  s->hard = xcalloc(ST, 1);
  s->nev = s->ngev = 0;
  for (u = 0; u < SN; u++) {
    base[u] = log(loguni(1e-3, 1.0));
    per[u] = 1500.0 + 4500.0 * uni();
    ph[u] = 6.283185307179586 * uni();
    e[u] = sigma / sqrt(1.0 - 0.49) * gauss();
  }
  /* global events first: ~1 per 200 steps after step 200, 1-3 steps,
     70-100% of units, x3-x20 (each unit jittered x0.8-1.25) */
  for (t = 200; t < ST - 10; t++) {
    if (uni() < 1.0 / 200.0 && s->ngev < GE_MAX) {
      gevent *g = &s->gev[s->ngev++];
      g->t0 = t;
      g->dur = urange(1, 3);
      for (i = 0; i < g->dur; i++) s->gstep[t + i] = 1;
      t += g->dur + 8;
    }
  }
  for (t = 0; t < ST; t++)
    if (!s->gstep[t] && uni() < 0.02) s->hard[t] = 1;
  /* local events: start with probability 0.08 per step after step 150,
     1-3 units free for the whole event and 8 steps after, 1-5 steps;
     a quarter are falls (x0.02-x0.2), the rest rises (x1.8-x50). */
  for (t = 150; t < ST - 6; t++) {
    unsigned nu, dur, k, clash = 0;
    if (uni() >= 0.08) continue;
    dur = urange(1, 5);
    for (i = 0; i < dur + 3 && t + i < ST; i++)
      clash |= (unsigned)s->gstep[t + i];
    if (t >= 3)
      for (i = 1; i <= 3; i++) clash |= (unsigned)s->gstep[t - i];
    if (clash) continue;
    nu = urange(1, 3);
    for (k = 0; k < nu && s->nev < EV_MAX; k++) {
      unsigned tries = 0;
      do u = urange(0, SN - 1);
      while (busy[u] > (int)t && ++tries < 100);
      if (busy[u] > (int)t) break;
      busy[u] = (int)(t + dur + 8);
      s->evs[s->nev].t0 = t;
      s->evs[s->nev].dur = dur;
      s->evs[s->nev].unit = u;
      s->evs[s->nev].fall = uni() < 0.25;
      for (i = 0; i < dur; i++) s->ev[(t + i) * SN + u] = (int)s->nev + 1;
      s->nev++;
    }
  }
  /* norms */
  {
    double *evf = xcalloc(EV_MAX, sizeof(double));
    double gf[GE_MAX * 1];
    char *gin = xcalloc((size_t)GE_MAX * SN, 1);
    double *gj = xcalloc((size_t)GE_MAX * SN, sizeof(double));
    for (i = 0; i < s->nev; i++)
      evf[i] = s->evs[i].fall ? loguni(0.02, 0.2) : loguni(1.8, 50.0);
    for (i = 0; i < s->ngev; i++) {
      double frac = 0.7 + 0.3 * uni();
      gf[i] = loguni(3.0, 20.0);
      for (u = 0; u < SN; u++) {
        gin[i * SN + u] = uni() < frac;
        gj[i * SN + u] = 0.8 * loguni(1.0, 1.5625);
      }
    }
    for (t = 0; t < ST; t++) {
      double hf = s->hard[t] ? 1.3 + 0.4 * uni() : 1.0;
      double common = -0.7 * (double)t / ST; /* norms halve over the run */
      int gi = -1;
      for (i = 0; i < s->ngev; i++)
        if (t >= s->gev[i].t0 && t < s->gev[i].t0 + s->gev[i].dur) gi = (int)i;
      for (u = 0; u < SN; u++) {
        double lg, g, ex;
        int k;
        ex = base[u] + common +
             0.3 * sin(6.283185307179586 * t / per[u] + ph[u]) + log(hf);
        if (gi >= 0 && gin[gi * SN + u]) ex += log(gf[gi] * gj[gi * SN + u]);
        s->pred[t * SN + u] = (float)(t > 0 ? ex + 0.7 * e[u] : ex);
        s->lvl[t * SN + u] = (float)(ex - log(hf));
        s->lhf[t] = log(hf);
        if (t > 0) e[u] = 0.7 * e[u] + sigma * gauss();
        lg = ex + e[u];
        g = exp(lg);
        k = s->ev[t * SN + u];
        if (k) {
          g *= evf[k - 1];
          if (uni() < 0.03) g = NAN;
        }
        s->norms[t * SN + u] = (float)g;
      }
    }
    free(evf);
    free(gin);
    free(gj);
  }
  free(busy);
}

static void synth_free(synth *s) {
  free(s->norms);
  free(s->pred);
  free(s->lvl);
  free(s->lhf);
  free(s->ev);
  free(s->gstep);
  free(s->hard);
}

/* ========================================================================
   Metrics
   ======================================================================== */

typedef struct tally {
  double rise_n, rise_hit, rise_lat, fall_n, fall_hit, fall_lat;
  double fa, fa_n, adm, rec, steps;
  double g_n, g_hit, g_false, g_free;
} tally;

/* Runs one detector over one synthetic trace. gflag: the detector's global
   verdict per step (proto: rule 3; others: none here). */
static void run_synth(const synth *s, int kind, tally *ty,
                      const proto_config *pcfg) {
  det d;
  unsigned t, u, i;
  unsigned char *fl = xcalloc((size_t)ST * SN, 1);
  char *gf = xcalloc(ST, 1);
  det_init(&d, kind, SN, 5, pcfg);
  for (t = 0; t < ST; t++) {
    if (kind == D_ORACLE) {
      /* innovation beyond 3.35 sigma either way: 0.08% for Gaussian noise */
      for (u = 0; u < SN; u++) {
        double g = s->norms[t * SN + u], r;
        if (!isfinite(g)) {
          d.flags[u] = PF_NONFINITE;
          d.score[u] = HUGE_VAL;
          continue;
        }
        r = (log(g) - s->pred[t * SN + u]) / s->sigma;
        d.flags[u] = (unsigned char)(r > 3.35    ? PF_RISE
                                     : r < -3.35 ? PF_FALL
                                                 : 0);
        d.score[u] = fabs(r) / 3.35;
      }
      adm_step(&d.ad, d.flags, d.score, 0);
    } else {
      d.pc.genie_lvl = s->lvl + (size_t)t * SN;
      d.pc.genie_c = s->lhf[t];
      d.pc.genie_sigma = s->sigma;
      det_step(&d, s->norms + (size_t)t * SN);
    }
    memcpy(fl + (size_t)t * SN, d.flags, SN);
    if (kind >= D_PROTO) gf[t] = (char)d.info.global;
  }
  for (i = 0; i < s->nev; i++) {
    const event *e = &s->evs[i];
    int hit = -1;
    unsigned want =
        e->fall ? (PF_FALL | PF_NONFINITE) : (PF_RISE | PF_NONFINITE);
    for (t = e->t0; t < e->t0 + e->dur && hit < 0; t++)
      if (fl[t * SN + e->unit] & want) hit = (int)(t - e->t0);
    if (e->fall) {
      ty->fall_n++;
      if (hit >= 0) ty->fall_hit++, ty->fall_lat += hit;
    } else {
      ty->rise_n++;
      if (hit >= 0) ty->rise_hit++, ty->rise_lat += hit;
    }
  }
  for (t = 0; t < ST; t++) {
    if (s->gstep[t]) continue;
    for (u = 0; u < SN; u++) {
      if (s->ev[t * SN + u]) continue;
      ty->fa_n++;
      if (fl[t * SN + u] & (PF_RISE | PF_FALL)) ty->fa++;
    }
  }
  ty->adm += (double)d.ad.admissions;
  ty->rec += (double)d.ad.recovery_steps;
  ty->steps += ST;
  if (kind >= D_PROTO) {
    for (i = 0; i < s->ngev; i++) {
      int hit = 0;
      for (t = s->gev[i].t0; t < s->gev[i].t0 + s->gev[i].dur; t++)
        hit |= gf[t];
      ty->g_n++;
      ty->g_hit += hit;
    }
    for (t = 0; t < ST; t++)
      if (!s->gstep[t]) ty->g_free++, ty->g_false += gf[t];
  }
  det_free(&d);
  free(fl);
  free(gf);
}

/* Peer global verdicts on a synthetic trace: the share of units the paper
   flags (> 20%), and a rolling 6-sigma z-score of the global norm. */
static void run_synth_global_peers(const synth *s, tally *cnt, tally *roll) {
  det d;
  unsigned t, u, i;
  char *g1 = xcalloc(ST, 1), *g2 = xcalloc(ST, 1);
  double win[ROLL_W];
  unsigned long long c = 0;
  det_init(&d, D_PAPER, SN, 5, NULL);
  for (t = 0; t < ST; t++) {
    unsigned nf = 0, m;
    double ss = 0.0, G, mean = 0.0, v = 0.0;
    det_step(&d, s->norms + (size_t)t * SN);
    for (u = 0; u < SN; u++) {
      double g = s->norms[t * SN + u];
      nf += d.flags[u] != 0;
      if (isfinite(g)) ss += g * g;
    }
    g1[t] = nf * 5 > SN;
    G = sqrt(ss);
    m = c < ROLL_W ? (unsigned)c : ROLL_W;
    for (i = 0; i < m; i++) mean += win[i];
    if (m) mean /= m;
    for (i = 0; i < m; i++) v += (win[i] - mean) * (win[i] - mean);
    if (m >= 16 && v > 0.0 && (G - mean) / sqrt(v / (m - 1)) > 6.0) g2[t] = 1;
    win[c % ROLL_W] = G;
    c++;
  }
  for (i = 0; i < s->ngev; i++) {
    int h1 = 0, h2 = 0;
    for (t = s->gev[i].t0; t < s->gev[i].t0 + s->gev[i].dur; t++)
      h1 |= g1[t], h2 |= g2[t];
    cnt->g_n++, roll->g_n++;
    cnt->g_hit += h1, roll->g_hit += h2;
  }
  for (t = 0; t < ST; t++)
    if (!s->gstep[t]) {
      cnt->g_free++, roll->g_free++;
      cnt->g_false += g1[t], roll->g_false += g2[t];
    }
  det_free(&d);
  free(g1);
  free(g2);
}

/* ========================================================================
   Real traces
   ======================================================================== */

typedef struct trace {
  float *norms; /* T * N */
  unsigned T, N;
} trace;

static int trace_load(trace *tr, const char *path) {
  FILE *f = fopen(path, "r");
  static char line[1 << 16];
  unsigned cap = 4096;
  if (!f) return -1;
  tr->T = tr->N = 0;
  if (!fgets(line, sizeof line, f)) {
    fclose(f);
    return -1;
  }
  {
    char *p;
    unsigned cols = 1;
    for (p = line; *p; p++) cols += *p == ',';
    if (cols < 3) {
      fclose(f);
      return -1;
    }
    tr->N = cols - 2;
  }
  tr->norms = xcalloc((size_t)cap * tr->N, sizeof(float));
  while (fgets(line, sizeof line, f)) {
    char *p = line, *q;
    unsigned c;
    if (tr->T == cap) {
      cap *= 2;
      tr->norms = realloc(tr->norms, (size_t)cap * tr->N * sizeof(float));
      if (!tr->norms) abort();
    }
    strtod(p, &q); /* step */
    if (*q != ',') break;
    strtod(q + 1, &q); /* loss */
    for (c = 0; c < tr->N; c++) {
      if (*q != ',') {
        fclose(f);
        return -1;
      }
      p = q + 1;
      tr->norms[(size_t)tr->T * tr->N + c] = (float)strtod(p, &q);
      if (q == p) {
        fclose(f);
        return -1;
      }
    }
    tr->T++;
  }
  fclose(f);
  return tr->T > 0 ? 0 : -1;
}

/* Column names of a trace (the parameter tensors), for the tables. */
#define NAMES_MAX 128
static char trace_names[NAMES_MAX][64];
static void trace_load_names(const char *path, unsigned n) {
  static char line[1 << 16];
  FILE *f = fopen(path, "r");
  char *p, *q;
  unsigned c = 0;
  memset(trace_names, 0, sizeof trace_names);
  if (!f) return;
  if (fgets(line, sizeof line, f)) {
    for (p = line; c < n + 2 && c < NAMES_MAX + 2; c++, p = q + 1) {
      size_t len;
      q = p + strcspn(p, ",\r\n");
      len = (size_t)(q - p) < 63 ? (size_t)(q - p) : 63;
      if (c >= 2) memcpy(trace_names[c - 2], p, len);
      if (*q != ',') break;
    }
  }
  fclose(f);
}

typedef struct real_res {
  double adm, flags, global; /* per 1000 steps (flags: per 1000 unit-steps) */
  double rise_n, rise_1, rise_any, fall_n, fall_1, fall_any;
} real_res;

/* Runs one detector over a trace (lock L: the library's default 8);
   returns admissions, flags and global events; out_flags (T*N) optional,
   gout (T) optional. */
static void run_real(const trace *tr, const float *norms, int kind,
                     const proto_config *pcfg, unsigned char *out_flags,
                     char *gout, double *adm, double *flags, double *glob) {
  det d;
  unsigned t, u;
  double nfl = 0.0, ng = 0.0;
  det_init(&d, kind, tr->N, 8, pcfg);
  for (t = 0; t < tr->T; t++) {
    det_step(&d, norms + (size_t)t * tr->N);
    for (u = 0; u < tr->N; u++) {
      nfl += (d.flags[u] & (PF_RISE | PF_FALL)) != 0;
      if (diag && kind == D_PROTO && norms == tr->norms && !pcfg &&
          (d.flags[u] & (PF_RISE | PF_FALL)))
        fprintf(stderr, "diag t=%u u=%u fl=%d score=%.2f c=%.3f s=%.3f\n", t, u,
                d.flags[u], d.score[u], d.info.common, d.pu[u].s);
    }
    if (out_flags) memcpy(out_flags + (size_t)t * tr->N, d.flags, tr->N);
    if (kind >= D_PROTO) ng += d.info.global;
    if (gout) gout[t] = kind >= D_PROTO ? (char)d.info.global : 0;
  }
  if (adm) *adm = 1000.0 * (double)d.ad.admissions / tr->T;
  if (flags) *flags = 1000.0 * nfl / ((double)tr->T * tr->N);
  if (glob) *glob = 1000.0 * ng / tr->T;
  det_free(&d);
}

/* Injected events on a trace: every ~25 steps after step 200, a random
   unit x3-x50 (rise) or x0.02-x0.2 (fall) for 1-3 steps. */
static void run_inject(const trace *tr, int kind, const proto_config *pcfg,
                       int fall, unsigned reps, double *n, double *hit1,
                       double *hitany) {
  unsigned r, t, i;
  size_t sz = (size_t)tr->T * tr->N;
  float *x = xcalloc(sz, sizeof(float));
  unsigned char *fl = xcalloc(sz, 1);
  unsigned *t0 = xcalloc(tr->T, sizeof(unsigned)),
           *du = xcalloc(tr->T, sizeof(unsigned)),
           *un = xcalloc(tr->T, sizeof(unsigned));
  for (r = 0; r < reps; r++) {
    unsigned ne = 0;
    rng_s = 0xABCDEFull + 7919ull * r + (fall ? 104729ull : 0ull);
    memcpy(x, tr->norms, sz * sizeof(float));
    for (t = 200 + urange(0, 10); t + 3 < tr->T; t += 20 + urange(0, 10)) {
      double f = fall ? loguni(0.02, 0.2) : loguni(3.0, 50.0);
      t0[ne] = t;
      du[ne] = urange(1, 3);
      un[ne] = urange(0, tr->N - 1);
      for (i = 0; i < du[ne]; i++)
        x[(size_t)(t + i) * tr->N + un[ne]] =
            (float)(x[(size_t)(t + i) * tr->N + un[ne]] * f);
      ne++;
    }
    run_real(tr, x, kind, pcfg, fl, NULL, NULL, NULL, NULL);
    for (i = 0; i < ne; i++) {
      unsigned want = fall ? PF_FALL : PF_RISE, k;
      int first = -1;
      for (k = 0; k < du[i] && first < 0; k++)
        if (fl[(size_t)(t0[i] + k) * tr->N + un[i]] & (want | PF_NONFINITE))
          first = (int)k;
      *n += 1;
      *hit1 += first >= 0 && first <= 1;
      *hitany += first >= 0;
    }
  }
  free(x);
  free(fl);
  free(t0);
  free(du);
  free(un);
}

/* ========================================================================
   Report
   ======================================================================== */

static FILE *md;

static void cpu_name(char *buf, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  snprintf(buf, cap, "unknown CPU");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *p = strchr(line, ':');
      if (p) {
        size_t l;
        p += 2;
        l = strlen(p);
        if (l && p[l - 1] == '\n') p[l - 1] = 0;
        snprintf(buf, cap, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

/* --speed: a rough cost probe for the port (not a performance target: the
   prototype is plain scalar C, the library has SIMD paths). N = 4096 calm
   units (norms within 10% of 1), CPU-time ns per unit per step, gnmr_step and
   proto_step interleaved 5 times, and the median selection alone. */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int speed_probe(void) {
  enum { N = 4096, POOL = 16, STEPS = 400 };
  static float in[POOL][N];
  static gnmr_slot slots[N];
  static gnmr_decision dec[N];
  static proto_unit pu[N];
  static double scratch[N], sc[N], med[N];
  static unsigned char fl[N];
  gnmr_ctl ctl;
  proto_ctl pc;
  proto_config pcfg = proto_config_default();
  gnmr_config cfg = gnmr_config_paper();
  proto_step_info info;
  unsigned i, u, r;
  double sink = 0.0;
  rng_s = 42;
  for (i = 0; i < POOL; i++)
    for (u = 0; u < N; u++) in[i][u] = (float)(0.9 + 0.2 * uni());
  cfg.max_recovering = 4;
  if (gnmr_init(&ctl, &cfg, slots, N) != GNMR_OK) return 1;
  proto_init(&pc, &pcfg, pu, scratch, N);
  for (i = 0; i < 200; i++) {
    gnmr_step(&ctl, in[i % POOL], dec);
    proto_step(&pc, in[i % POOL], fl, sc, &info);
  }
  printf("speed probe, N = %d calm, ns per unit per step (%s path for "
         "gnmr_step)\n",
         N, gnmr_isa_name(gnmr_isa_active()));
  for (r = 0; r < 5; r++) {
    double t0 = now_ns(), t1, t2, t3;
    for (i = 0; i < STEPS; i++) {
      gnmr_step(&ctl, in[i % POOL], dec);
      sink += dec[i % N].scale;
    }
    t1 = now_ns();
    for (i = 0; i < STEPS; i++) {
      proto_step(&pc, in[i % POOL], fl, sc, &info);
      sink += sc[i % N];
    }
    t2 = now_ns();
    for (i = 0; i < STEPS; i++) {
      for (u = 0; u < N; u++) med[u] = proto_log(in[i % POOL][u], 1e-12);
      sink += med[i % N];
    }
    t3 = now_ns();
    printf("  gnmr_step (paper) %.2f   proto_step (scalar) %.2f   of which "
           "L() alone about %.2f\n",
           (t1 - t0) / ((double)STEPS * N), (t2 - t1) / ((double)STEPS * N),
           (t3 - t2) / ((double)STEPS * N));
  }
  return sink == 12345.0;
}

/* --selftest: the properties the spec comment claims, checked on the
   prototype itself (a port's tests should pin the same ones). Ends with
   "N passed, N failed". */
static int st_pass, st_fail;
static void st_check(int ok, const char *what) {
  if (ok)
    st_pass++;
  else {
    st_fail++;
    printf("FAIL: %s\n", what);
  }
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static int selftest(void) {
  unsigned i, r, u;
  double maxerr = 0.0, prev = -HUGE_VAL;
  int mono = 1, med_ok = 1;
  /* rule 0: error and monotonicity of L over 1e-12 ... 1e12 */
  rng_s = 7;
  for (i = 0; i < 2000000; i++) {
    double x = exp(-27.6 + 55.2 * (double)i / 2000000.0),
           l = proto_log(x, 1e-12);
    double err = fabs(l - log(x));
    if (err > maxerr) maxerr = err;
    if (l < prev) mono = 0;
    prev = l;
  }
  st_check(maxerr < 2e-5, "L(): |L(x) - log(x)| < 2e-5");
  st_check(mono, "L(): increasing");
  st_check(proto_log(0.0, 1e-12) == proto_log(1e-12, 1e-12),
           "L(): x below eps reads as eps");
  /* rule 3: the histogram median is the quantised lower median */
  for (r = 0; r < 2000 && med_ok; r++) {
    enum { NU = 97 };
    static proto_unit pu[NU];
    static double scr[NU], srt[NU], sc[NU];
    static float g[NU];
    static unsigned char fl[NU];
    proto_ctl pc;
    proto_config cf = proto_config_default();
    proto_step_info info;
    unsigned n = 1 + (unsigned)(uni() * NU), nv = 0;
    if (n > NU) n = NU;
    cf.warmup = 1;
    cf.common_min_units = 1;
    proto_init(&pc, &cf, pu, scr, n);
    for (u = 0; u < n; u++) {
      pu[u].k = 5;
      pu[u].mu = (uni() - 0.5) * (r % 7 == 0 ? 40.0 : 2.0);
      g[u] = (float)exp((uni() - 0.5) * (r % 5 == 0 ? 30.0 : 3.0));
      if (uni() < 0.05) g[u] = NAN;
    }
    for (u = 0; u < n; u++)
      if (isfinite(g[u])) srt[nv++] = proto_log(g[u], cf.eps) - pu[u].mu;
    proto_step(&pc, g, fl, sc, &info);
    if (nv) {
      qsort(srt, nv, sizeof(double), cmp_dbl);
      med_ok = info.common ==
               ((double)proto_q(srt[(nv - 1) / 2]) + 0.5) / 256.0 - 8.0;
    }
  }
  st_check(med_ok, "rule 3: histogram median == quantised sorted median");
  /* rules 1, 5, 6, 7: a non-finite norm changes no state; a spike moves
     s by at most (1 - fluct_decay) * winsor * S and mu by a * z_rise * S */
  {
    enum { NU = 16 };
    static proto_unit pu[NU], before[NU];
    static double scr[NU], sc[NU];
    static float g[NU];
    static unsigned char fl[NU];
    proto_ctl pc;
    proto_config cf = proto_config_default();
    proto_step_info info;
    unsigned t;
    proto_init(&pc, &cf, pu, scr, NU);
    for (t = 0; t < 300; t++) {
      for (u = 0; u < NU; u++) g[u] = (float)(1.0 + 0.1 * gauss());
      proto_step(&pc, g, fl, sc, &info);
    }
    memcpy(before, pu, sizeof pu);
    for (u = 0; u < NU; u++) g[u] = (float)(1.0 + 0.1 * gauss());
    g[3] = NAN;
    g[4] = INFINITY;
    g[5] = -INFINITY;
    proto_step(&pc, g, fl, sc, &info);
    st_check(!memcmp(&pu[3], &before[3], sizeof pu[3]) &&
                 !memcmp(&pu[4], &before[4], sizeof pu[4]) &&
                 !memcmp(&pu[5], &before[5], sizeof pu[5]),
             "rule 1: NaN/+-Inf leave mu, s, p, k untouched");
    st_check(fl[3] == PF_NONFINITE && fl[4] == PF_NONFINITE &&
                 fl[5] == PF_NONFINITE,
             "rule 1: NaN/+-Inf flagged NONFINITE");
    memcpy(before, pu, sizeof pu);
    for (u = 0; u < NU; u++) g[u] = 1.0f;
    g[7] = 1e30f;
    proto_step(&pc, g, fl, sc, &info);
    {
      double S = before[7].s > cf.fluct_floor ? before[7].s : cf.fluct_floor;
      st_check(fl[7] == PF_RISE, "rule 4: a x1e30 spike is a RISE");
      st_check(pu[7].s - before[7].s <=
                   (1.0 - cf.fluct_decay) * cf.winsor * S * (1.0 + 1e-12),
               "rule 6: a spike moves s by at most (1-fd)*winsor*S");
      st_check(pu[7].mu - before[7].mu <=
                   (1.0 - cf.mean_decay) * cf.z_rise * S * (1.0 + 1e-12),
               "rule 5: a spike moves mu by at most a*z_rise*S");
      st_check(pu[7].p == before[7].p, "rule 7: a flagged step keeps p");
    }
    g[7] = 1.0f;
    g[9] = 1e-20f;
    memcpy(before, pu, sizeof pu);
    proto_step(&pc, g, fl, sc, &info);
    st_check(fl[9] == PF_FALL, "rule 4: a x1e-20 fall is a FALL");
  }
  printf("%d passed, %d failed\n", st_pass, st_fail);
  return st_fail != 0;
}

static const double sigmas[] = {0.05, 0.12, 0.25, 0.4};

/* ========================================================================
   Frontier (--frontier N): rise recall where false alarms reach 0.1% (the
   issue's ceiling), z_rise swept and the recall interpolated linearly in
   the false-alarm rate, for the rule and for variants of it: other
   predictors, evidence summed over an event's steps, and bounds that are
   given the synthetic trace's hidden truth. N seeds per sigma from the
   many-seeds base (not used to choose the defaults).
   ======================================================================== */

static int frontier(unsigned nseeds, unsigned long long base, const char *cpu,
                    const char *when) {
  static const double zs[] = {3.5, 3.65, 3.8, 3.9, 4.0, 4.1, 4.25, 4.4, 4.6};
  enum { NZ = sizeof zs / sizeof zs[0], NV = 11 };
  static const char *vname[NV] = {
      "the rule (defaults but z_rise)",
      "ar 0.7 (the synthetic noise's own correlation)",
      "no hold: p follows every step",
      "p follows flagged steps too",
      "evidence summed over an event's steps (ar 0.7, entered at 2.5 S)",
      "bound: the true noise scale in place of s",
      "bound: the true common factor in place of c",
      "bound: the true level and common factor in place of mu and c",
      "bound: the true level and common factor, ar 0.7",
      "bound: the true level, common factor and noise scale, ar 0.7, p "
      "follows flagged steps too",
      "bound: the true level, common factor and noise scale, ar 0.7, "
      "evidence summed"};
  static const unsigned sig_i[2] = {2, 3}; /* sigma 0.25, 0.4 */
  unsigned v, k, si, sd;
  fprintf(md, "## Detection frontier\n\n");
  fprintf(md,
          "`make detect-frontier` (`build/detect --frontier %u`): rise "
          "recall at 0.1%% false alarms (the issue's ceiling) on %u seeds "
          "per sigma (1000 i + %llu + j, the many-seeds table's), z_rise "
          "swept over %.2f-%.2f and the recall interpolated linearly in the "
          "false-alarm rate between the two settings either side of 0.1%%. "
          "Rows below the first change one thing; the bounds are given the "
          "synthetic trace's hidden truth, which no detector has. Targets: "
          "0.93 at sigma 0.25, 0.82 at sigma 0.4. Machine: %s, one core; "
          "gcc -O2. gnmr.h %s. Run %s UTC.\n\n",
          nseeds, nseeds, base, zs[0], zs[NZ - 1], cpu, gnmr_version(), when);
  fprintf(md, "| variant | sigma 0.25: z_rise at 0.1%% | recall at 0.1%% | "
              "sigma 0.4: z_rise at 0.1%% | recall at 0.1%% |\n"
              "|---|---:|---:|---:|---:|\n");
  for (v = 0; v < NV; v++) {
    fprintf(md, "| %s |", vname[v]);
    for (si = 0; si < 2; si++) {
      double fa[NZ], rec[NZ];
      int done = 0;
      for (k = 0; k < NZ; k++) {
        proto_config c = proto_config_default();
        tally ty;
        memset(&ty, 0, sizeof ty);
        c.z_rise = zs[k];
        if (v == 1 || v == 4 || v == 8) c.ar = 0.7;
        if (v == 2) c.p_mode = 1;
        if (v == 3) c.p_mode = 2;
        if (v == 4) c.glr_w = 0.3, c.glr_enter = 2.5;
        if (v == 5) c.genie_scale = 0.85;
        if (v == 6) c.genie_common = 1;
        if (v >= 7) c.genie_level = c.genie_common = 1;
        if (v >= 9) c.genie_scale = 0.85, c.ar = 0.7;
        if (v == 9) c.p_mode = 2;
        if (v == 10) c.glr_w = 0.3, c.glr_enter = 2.5;
        for (sd = 0; sd < nseeds; sd++) {
          synth s;
          synth_make(&s, sigmas[sig_i[si]], 1000ull * sig_i[si] + base + sd);
          run_synth(&s, D_PROTO, &ty, &c);
          synth_free(&s);
        }
        fa[k] = 100.0 * ty.fa / ty.fa_n;
        rec[k] = ty.rise_hit / ty.rise_n;
      }
      for (k = 0; k + 1 < NZ && !done; k++)
        if (fa[k] >= 0.1 && fa[k + 1] <= 0.1) {
          double w =
              fa[k] == fa[k + 1] ? 0.0 : (fa[k] - 0.1) / (fa[k] - fa[k + 1]);
          fprintf(md, " %.2f | %.3f |", zs[k] + w * (zs[k + 1] - zs[k]),
                  rec[k] + w * (rec[k + 1] - rec[k]));
          done = 1;
        }
      if (!done)
        fprintf(md, " - | - (false alarms %.3f%%-%.3f%%) |", fa[NZ - 1], fa[0]);
    }
    fprintf(md, "\n");
    fflush(md);
  }
  return 0;
}

/* What the targets table reads (noise-aware defaults). */
static double tg_rec[4], tg_fa[4], tg_fall12, tg_fa12, tg_grec12, tg_gfalse12;
static int tg_dominated[4]; /* a peer better on both recall and FA */
/* The same on the many-seeds table (0: not run; its peer: rolling 6). */
static double tm_rec[4], tm_fa[4], tm_fall12, tm_grec12, tm_gfalse12;
static int tm_dominated[4], tm_run;
static double tg_adm[2], tg_rise1[2], tg_glob[2];
static int tg_real = 0;
#define NSIG 4

int main(int argc, char **argv) {
  const char *data = NULL, *mdpath = NULL;
  unsigned seeds = 4, reps = 3, many = 32, frontier_n = 0;
  unsigned long long seed_base = 1, many_base = 70001;
  int i, si, k;
  char cpu[200], when[32];
  proto_over = proto_config_default();
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--md") && i + 1 < argc)
      mdpath = argv[++i];
    else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed-base") && i + 1 < argc)
      seed_base = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--many") && i + 1 < argc)
      many = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--many-base") && i + 1 < argc)
      many_base = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
      if (proto_set(&proto_over, argv[++i])) {
        fprintf(stderr, "detect: unknown --set %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--diag"))
      diag = 1;
    else if (!strcmp(argv[i], "--speed"))
      return speed_probe();
    else if (!strcmp(argv[i], "--selftest"))
      return selftest();
    else if (!strcmp(argv[i], "--frontier") && i + 1 < argc)
      frontier_n = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick"))
      seeds = 1, reps = 1, many = 0;
    else {
      fprintf(stderr, "usage: detect [--data DIR] [--md FILE] [--seeds N] "
                      "[--seed-base B] [--many N] [--many-base B] [--quick] "
                      "[--set NAME=VALUE] [--frontier N]\n");
      return 2;
    }
  }
  md = mdpath ? fopen(mdpath, "w") : stdout;
  if (!md) {
    perror(mdpath);
    return 2;
  }
  cpu_name(cpu, sizeof cpu);
  {
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", gmtime(&now));
  }
  if (frontier_n) {
    int rc = frontier(frontier_n, many_base, cpu, when);
    if (md != stdout) fclose(md);
    return rc;
  }

  fprintf(md, "## Detection\n\n");
  fprintf(md,
          "`bench/detect.c` (issues 12 and 15): which unit-steps each rule "
          "flags, against ground truth. Command: `make detect` (builds with "
          "`-O2`, unpacks `bench/data/` into `build/data/`, runs `build/detect "
          "--data build/data --md build/detect.md` and puts this section into "
          "bench/RESULTS.md). Machine: %s, one core; gcc -O2. gnmr.h %s. "
          "Run %s UTC.\n\n",
          cpu, gnmr_version(), when);

  /* ---- synthetic ---- */
  if (seeds) {
    fprintf(md, "### Synthetic traces with ground truth\n\n");
    fprintf(md,
            "64 units, 4000 steps, %u seeds per noise level (seeds 1000 i + "
            "%llu + j). Each unit: a "
            "log-uniform base scale (1e-3 to 1), log-normal AR(1) noise "
            "(correlation 0.7, innovation std sigma; the log's own std is "
            "1.4 sigma), a slow drift (a sine of amplitude 0.3 in the log, "
            "period 1500-6000 steps, and every unit halving over the run). "
            "Benign hard batches on 2%% of steps raise every unit 1.3-1.7x. "
            "Local events (start probability 0.08 per step after step 150): "
            "1-3 units for 1-5 steps, three quarters rises x1.8-x50, one "
            "quarter falls x0.02-x0.2 (log-uniform), 3%% of event unit-steps "
            "NaN. Global events (about one per 200 steps after step 200): "
            "1-3 steps, 70-100%% of units x3-x20 each (x0.8-1.25 jitter per "
            "unit); no local event within 3 steps of one.\n\n",
            seeds, seed_base);
    fprintf(md,
            "Recall: share of event units flagged (rise: RISE or NONFINITE; "
            "fall: FALL or NONFINITE) on some step of the event. False "
            "alarms: flagged unit-steps outside events and global events, per "
            "unit-step. Latency: steps from the event's start to its first "
            "flag (caught events). Admissions and recovery unit-steps per 1000 "
            "steps: maxO 4, lock 5, cooldown 4 (the library's own admissions "
            "for the paper rules; the same admission rules re-implemented for "
            "the others). Peers flag falls with their mirror rule (z below "
            "-threshold); the paper and AdaGC flag rises only. Each unit of an "
            "event counts once in recall. Rows: noise-aware = gnmr.h's NOISE "
            "mode (`gnmr_step`) with the prototype's defaults, checked bit for "
            "bit against `proto_step` in bench/detect.c on every unit-step; "
            "each "
            "ablation changes one thing; the z_rise 4.1 variant shows the "
            "other side of the recall / false-alarm knee.\n\n");

    {
      tally ty[NSIG][D_COUNT], gc[NSIG], gr[NSIG];
      memset(ty, 0, sizeof ty);
      memset(gc, 0, sizeof gc);
      memset(gr, 0, sizeof gr);
      for (si = 0; si < NSIG; si++) {
        unsigned sd;
        for (sd = 0; sd < seeds; sd++) {
          synth s;
          synth_make(&s, sigmas[si], 1000ull * (unsigned)si + sd + seed_base);
          for (k = 0; k < D_COUNT; k++) run_synth(&s, k, &ty[si][k], NULL);
          run_synth_global_peers(&s, &gc[si], &gr[si]);
          synth_free(&s);
        }
      }
      for (si = 0; si < NSIG; si++) {
        fprintf(md,
                "**sigma %.2f** (%.0f rise and %.0f fall event units)\n\n"
                "| detector | rise recall | fall recall | false alarms | "
                "latency (steps) | admissions / 1000 steps | recovery "
                "unit-steps / 1000 steps |\n|---|---:|---:|---:|---:|---:|---:|"
                "\n",
                sigmas[si], ty[si][0].rise_n, ty[si][0].fall_n);
        for (k = 0; k < D_COUNT; k++) {
          tally *t = &ty[si][k];
          fprintf(md, "| %s | %.3f | %.3f | %.3f%% | %.2f | %.1f | %.0f |\n",
                  det_name[k], t->rise_hit / t->rise_n, t->fall_hit / t->fall_n,
                  100.0 * t->fa / t->fa_n,
                  t->rise_hit + t->fall_hit > 0
                      ? (t->rise_lat + t->fall_lat) /
                            (t->rise_hit + t->fall_hit)
                      : 0.0,
                  1000.0 * t->adm / t->steps, 1000.0 * t->rec / t->steps);
        }
        fprintf(md, "\n");
      }
      for (si = 0; si < NSIG; si++) {
        tally *p = &ty[si][D_PROTO];
        tg_rec[si] = p->rise_hit / p->rise_n;
        tg_fa[si] = 100.0 * p->fa / p->fa_n;
        for (k = D_PAPER; k <= D_ROLL6; k++) {
          tally *q = &ty[si][k];
          if (q->rise_hit / q->rise_n > tg_rec[si] &&
              100.0 * q->fa / q->fa_n < tg_fa[si])
            tg_dominated[si] = 1;
        }
      }
      tg_fall12 = ty[1][D_PROTO].fall_hit / ty[1][D_PROTO].fall_n;
      tg_fa12 = tg_fa[1];
      tg_grec12 = ty[1][D_PROTO].g_hit / ty[1][D_PROTO].g_n;
      tg_gfalse12 = 1e4 * ty[1][D_PROTO].g_false / ty[1][D_PROTO].g_free;
      fprintf(md,
              "**Global events** (issue 15): recall (flagged on some step of "
              "the event) and false global steps per 10,000 steps outside "
              "global events (hard batches included).\n\n"
              "| sigma | events | noise-aware: recall | false / 10k | paper "
              "flags > 20%% of units: recall | false / 10k | rolling 6-sigma z "
              "of the global norm: recall | false / 10k |\n"
              "|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (si = 0; si < NSIG; si++) {
        tally *p = &ty[si][D_PROTO];
        fprintf(
            md, "| %.2f | %.0f | %.3f | %.1f | %.3f | %.1f | %.3f | %.1f |\n",
            sigmas[si], p->g_n, p->g_hit / p->g_n, 1e4 * p->g_false / p->g_free,
            gc[si].g_hit / gc[si].g_n, 1e4 * gc[si].g_false / gc[si].g_free,
            gr[si].g_hit / gr[si].g_n, 1e4 * gr[si].g_false / gr[si].g_free);
      }
      fprintf(md, "\n");
    }
    {
      /* Held-out seeds: the defaults were chosen on seeds 1-4 (and quick
         runs on seed 1); these traces did not choose them. */
      static const int hk[] = {D_PAPER, D_ROLL6, D_PROTO, D_PROTO_Z41,
                               D_ORACLE};
      tally ht[NSIG][5];
      unsigned sd;
      memset(ht, 0, sizeof ht);
      for (si = 1; si < NSIG; si++)
        for (sd = 0; sd < seeds; sd++) {
          synth s;
          synth_make(&s, sigmas[si],
                     1000ull * (unsigned)si + sd + seed_base + 500);
          for (k = 0; k < 5; k++) run_synth(&s, hk[k], &ht[si][k], NULL);
          synth_free(&s);
        }
      fprintf(md,
              "**Held-out seeds** (%u other seeds per sigma, 1000 i + %llu + "
              "j; not used to choose the defaults): rise recall / false "
              "alarms.\n\n"
              "| detector | sigma 0.12 | sigma 0.25 | sigma 0.40 |\n"
              "|---|---|---|---|\n",
              seeds, seed_base + 500);
      for (k = 0; k < 5; k++) {
        fprintf(md, "| %s |", det_name[hk[k]]);
        for (si = 1; si < NSIG; si++)
          fprintf(md, " %.3f / %.3f%% |", ht[si][k].rise_hit / ht[si][k].rise_n,
                  100.0 * ht[si][k].fa / ht[si][k].fa_n);
        fprintf(md, "\n");
      }
      fprintf(md, "\n");
    }
  }
  if (many) {
    /* Many seeds: what the defaults give on average. Four seeds are not
       enough to read a target off to 0.01: a rise recall at sigma 0.4
       counts about 1700 events (standard error about 0.01), and seeds 1-4
       happen to sit above the mean there. */
    static const int mk[] = {D_ROLL6, D_PROTO, D_PROTO_Z41, D_ORACLE};
    enum { MK = sizeof mk / sizeof mk[0] };
    tally mt[NSIG][MK];
    unsigned sd;
    memset(mt, 0, sizeof mt);
    for (si = 1; si < NSIG; si++)
      for (sd = 0; sd < many; sd++) {
        synth s;
        synth_make(&s, sigmas[si], 1000ull * (unsigned)si + sd + many_base);
        for (k = 0; k < MK; k++) run_synth(&s, mk[k], &mt[si][k], NULL);
        synth_free(&s);
      }
    fprintf(md,
            "**Many seeds** (%u seeds per sigma, 1000 i + %llu + j; not used "
            "to choose the defaults): rise recall / false alarms, and for the "
            "noise-aware rule fall recall and global events.\n\n"
            "| detector | sigma 0.12 | sigma 0.25 | sigma 0.40 |\n"
            "|---|---|---|---|\n",
            many, many_base);
    for (k = 0; k < MK; k++) {
      fprintf(md, "| %s |", det_name[mk[k]]);
      for (si = 1; si < NSIG; si++)
        fprintf(md, " %.3f / %.3f%% |", mt[si][k].rise_hit / mt[si][k].rise_n,
                100.0 * mt[si][k].fa / mt[si][k].fa_n);
      fprintf(md, "\n");
    }
    fprintf(md, "| noise-aware: fall recall |");
    for (si = 1; si < NSIG; si++)
      fprintf(md, " %.3f |", mt[si][1].fall_hit / mt[si][1].fall_n);
    fprintf(md, "\n| noise-aware: global recall / false per 10k steps |");
    for (si = 1; si < NSIG; si++)
      fprintf(md, " %.3f / %.1f |", mt[si][1].g_hit / mt[si][1].g_n,
              1e4 * mt[si][1].g_false / mt[si][1].g_free);
    fprintf(md, "\n\n");
    for (si = 1; si < NSIG; si++) {
      tally *p = &mt[si][1], *q = &mt[si][0];
      tm_rec[si] = p->rise_hit / p->rise_n;
      tm_fa[si] = 100.0 * p->fa / p->fa_n;
      tm_dominated[si] = q->rise_hit / q->rise_n > tm_rec[si] &&
                         100.0 * q->fa / q->fa_n < tm_fa[si];
    }
    tm_fall12 = mt[1][1].fall_hit / mt[1][1].fall_n;
    tm_grec12 = mt[1][1].g_hit / mt[1][1].g_n;
    tm_gfalse12 = 1e4 * mt[1][1].g_false / mt[1][1].g_free;
    tm_run = 1;
  }

  /* ---- real traces ---- */
  if (!data) {
    fprintf(md, "Real traces: left out (no --data DIR).\n");
    fprintf(stderr, "detect: no --data: real-trace tables left out\n");
  } else {
    static const char *stable[] = {"trace_bf16_lr1e-3", "trace_fp8_lr1e-3"};
    static const char *unstable[] = {"trace_bf16_lr2e-2_w10",
                                     "trace_bf16_lr3e-2_w100"};
    static const int rkinds[] = {D_PAPER,          D_ADAGC,      D_ZCLIP,
                                 D_ROLL3,          D_ROLL6,      D_PROTO,
                                 D_PROTO_NOCOMMON, D_PROTO_NOAR, D_PROTO_Z41};
    char path[1024];
    fprintf(md, "### Real traces (bench/data/)\n\n");
    fprintf(md,
            "One unit per tensor (77), maxO 4, lock 8 (the default), "
            "cooldown 4. Stable runs as recorded: admissions per 1000 steps "
            "and flagged unit-steps per 1000 unit-steps (every one a false "
            "alarm), global steps per 1000 steps. Injected: every 20-30 "
            "steps after step 200 one random unit x3-x50 (rises) or "
            "x0.02-x0.2 (falls), log-uniform, for 1-3 steps; %u repetitions "
            "with different draws; caught within 1 step = flagged on the "
            "event's first or second step (second only when the event lasts "
            "2+ steps).\n\n",
            reps);
    for (i = 0; i < 2; i++) {
      trace tr;
      snprintf(path, sizeof path, "%s/%s.csv", data, stable[i]);
      if (trace_load(&tr, path)) {
        fprintf(stderr, "detect: cannot read %s\n", path);
        return 1;
      }
      fprintf(md,
              "**%s** (%u steps)\n\n| detector | admissions / 1000 steps | "
              "flags / 1000 unit-steps | global / 1000 steps | rises "
              "caught within 1 step | rises caught | falls caught within 1 "
              "step | falls caught |\n|---|---:|---:|---:|---:|---:|---:|---:|"
              "\n",
              stable[i], tr.T);
      for (k = 0; k < (int)(sizeof rkinds / sizeof rkinds[0]); k++) {
        double a, f, g, rn = 0, r1 = 0, ra = 0, fn = 0, f1 = 0, fa = 0;
        run_real(&tr, tr.norms, rkinds[k], NULL, NULL, NULL, &a, &f, &g);
        run_inject(&tr, rkinds[k], NULL, 0, reps, &rn, &r1, &ra);
        run_inject(&tr, rkinds[k], NULL, 1, reps, &fn, &f1, &fa);
        if (rkinds[k] == D_PROTO) {
          tg_adm[i] = a;
          tg_rise1[i] = r1 / rn;
          tg_glob[i] = g;
          tg_real = 1;
        }
        if (rkinds[k] >= D_PROTO)
          fprintf(md, "| %s | %.1f | %.2f | %.2f |", det_name[rkinds[k]], a, f,
                  g);
        else
          fprintf(md, "| %s | %.1f | %.2f | - |", det_name[rkinds[k]], a, f);
        fprintf(md, " %.3f | %.3f | %.3f | %.3f |\n", r1 / rn, ra / rn, f1 / fn,
                fa / fn);
      }
      fprintf(md, "\n");
      free(tr.norms);
    }
    char jump_what[2][256];
    fprintf(md, "**Unstable runs** (issue 15). Jump steps: the global norm "
                "above 2x the median of its previous 32 steps (a reference "
                "independent of every rule). Admissions per 1000 steps before "
                "(paper rules; noise-aware rule with the step-level view off: "
                "no common view, no gate) and after (noise-aware defaults: "
                "common view on, no admissions on GLOBAL steps). The jump "
                "steps that are not GLOBAL (second table) are rises of the "
                "global norm carried by a few large units, with fewer than a "
                "quarter of the units doubled, or jumps against a lull of the "
                "previous 32 steps that leave G under twice its own mean. "
                "The per-unit rule flags a unit on only some of them: in "
                "these runs those units are noisy, so their own thresholds "
                "are high.\n\n"
                "| trace | jump steps | global steps | jump steps flagged "
                "GLOBAL | other jump steps with a unit flagged RISE | "
                "global steps off jumps | admissions: paper | admissions: "
                "noise-aware, no step view | admissions: noise-aware |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (i = 0; i < 2; i++) {
      trace tr;
      char *gf;
      unsigned char *ufl;
      unsigned t, nj = 0, njf = 0, nju = 0, ng = 0, ngoff = 0;
      unsigned few_up = 0, carry4 = 0, top_of[NAMES_MAX], best = 0, g2 = 0;
      double *gdev;
      unsigned carry_n[NAMES_MAX + 1];
      double a0, a1, a2;
      proto_config off = proto_config_default();
      off.common_min_units = 0xFFFFFFFFu;
      off.global_gate = 0;
      snprintf(path, sizeof path, "%s/%s.csv", data, unstable[i]);
      if (trace_load(&tr, path)) {
        fprintf(stderr, "detect: cannot read %s\n", path);
        return 1;
      }
      gf = xcalloc(tr.T, 1);
      ufl = xcalloc((size_t)tr.T * tr.N, 1);
      if (tr.N > NAMES_MAX) {
        fprintf(stderr, "detect: %s: more than %d units\n", path, NAMES_MAX);
        return 1;
      }
      trace_load_names(path, tr.N);
      gdev = xcalloc(tr.T, sizeof(double));
      { /* L(G) - mu_G per step, as the defaults' verdict reads it */
        proto_config pc = proto_config_default();
        gnmr_config gc = lib_config(&pc, 8);
        gnmr_slot *sl = xcalloc(tr.N, sizeof(gnmr_slot));
        gnmr_ctl gctl;
        gnmr_step_report rep;
        if (gnmr_init(&gctl, &gc, sl, tr.N) != GNMR_OK) abort();
        for (t = 0; t < tr.T; t++) {
          if (gnmr_step(&gctl, tr.norms + (size_t)t * tr.N, NULL) != GNMR_OK ||
              gnmr_step_info(&gctl, &rep) != GNMR_OK)
            abort();
          gdev[t] = rep.global_dev;
        }
        free(sl);
      }
      memset(top_of, 0, sizeof top_of);
      memset(carry_n, 0, sizeof carry_n);
      run_real(&tr, tr.norms, D_PAPER, NULL, NULL, NULL, &a0, NULL, NULL);
      run_real(&tr, tr.norms, D_PROTO, &off, NULL, NULL, &a1, NULL, NULL);
      run_real(&tr, tr.norms, D_PROTO, NULL, ufl, gf, &a2, NULL, NULL);
      for (t = 0; t < tr.T; t++) {
        int jump = 0;
        if (t >= 32) {
          double w[32], G, med;
          unsigned j, u;
          for (j = 0; j < 32; j++) {
            double ss = 0.0;
            for (u = 0; u < tr.N; u++) {
              double g = tr.norms[(size_t)(t - 32 + j) * tr.N + u];
              ss += g * g;
            }
            w[j] = sqrt(ss);
          }
          {
            double ss = 0.0;
            for (u = 0; u < tr.N; u++) {
              double g = tr.norms[(size_t)t * tr.N + u];
              ss += g * g;
            }
            G = sqrt(ss);
          }
          med = proto_select(w, 32, 15);
          jump = G > 2.0 * med;
        }
        nj += (unsigned)jump;
        njf += (unsigned)(jump && gf[t]);
        if (jump && !gf[t]) {
          /* What it is: units above 2x the median of their own previous
             32 steps, and how few units carry 80% of the rise of G^2
             (each unit's g^2 minus the median of its previous 32). */
          unsigned u, any = 0, up = 0, m = 0, top = 0;
          double inc[NAMES_MAX], itot = 0.0, acc = 0.0;
          for (u = 0; u < tr.N; u++) {
            double w[32], g = tr.norms[(size_t)t * tr.N + u], med;
            unsigned j;
            any |= ufl[(size_t)t * tr.N + u] & (PF_RISE | PF_NONFINITE);
            for (j = 0; j < 32; j++) {
              double h = tr.norms[(size_t)(t - 32 + j) * tr.N + u];
              w[j] = h * h;
            }
            med = proto_select(w, 32, 15);
            up += g * g > 4.0 * med;
            inc[u] = g * g > med ? g * g - med : 0.0;
            itot += inc[u];
            if (inc[u] > inc[top]) top = u;
          }
          while (acc < 0.8 * itot && m < tr.N) {
            unsigned b = 0;
            for (u = 1; u < tr.N; u++)
              if (inc[u] > inc[b]) b = u;
            acc += inc[b];
            inc[b] = -1.0;
            m++;
          }
          nju += any != 0;
          g2 += gdev[t] > log(2.0);
          few_up += up * 4 < tr.N;
          carry4 += m <= 4;
          carry_n[m]++;
          top_of[top]++;
        }
        ng += (unsigned)gf[t];
        ngoff += (unsigned)(gf[t] && !jump);
      }
      fprintf(md, "| %s | %u | %u | %u | %u | %u | %.1f | %.1f | %.1f |\n",
              unstable[i], nj, ng, njf, nju, ngoff, a0, a1, a2);
      {
        unsigned u, half = 0, med_m = 0;
        for (u = 0; u < tr.N; u++)
          if (top_of[u] > top_of[best]) best = u;
        for (u = 0; u <= tr.N; u++) {
          half += carry_n[u];
          if (2 * half >= nj - njf) {
            med_m = u;
            break;
          }
        }
        snprintf(jump_what[i], sizeof jump_what[i],
                 "| %s | %u | %u | %u | %u | %u | %u | %s (%u) |\n",
                 unstable[i], nj - njf, g2, few_up, med_m, carry4, nju,
                 trace_names[best][0] ? trace_names[best] : "?", top_of[best]);
      }
      free(gf);
      free(gdev);
      free(ufl);
      free(tr.norms);
    }
    fprintf(md,
            "\nThe jump steps that are not GLOBAL, and what they are (a "
            "unit doubled: above 2x the median of its own previous 32 "
            "steps; the units that carry 80%% of the rise of G^2: each "
            "unit's g^2 minus the median of its previous 32, largest "
            "first):\n\n"
            "| trace | jump steps not GLOBAL | G above 2x its own mean "
            "(L(G) - mu_G > L(2)) | fewer than a quarter of the "
            "units doubled | units carrying 80%% of the rise of G^2 (median) | "
            "steps where at most 4 units carry it | a unit flagged RISE "
            "or NaN | largest contributor (steps) |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (i = 0; i < 2; i++) fprintf(md, "%s", jump_what[i]);
    fprintf(md, "\n");
  }
  if (seeds) {
    static const double want_rec[4] = {0.0, 0.97, 0.93, 0.82};
    fprintf(md,
            "### Targets (issues 12 and 15), noise-aware defaults\n\n"
            "Synthetic targets on the main seeds (%u per sigma) and on the "
            "many-seeds table (%u per sigma; there the only peer checked is "
            "the rolling 6-sigma z-score, the one nearest on false alarms); "
            "met = met on both.\n\n"
            "| target | main seeds | many seeds | met |\n|---|---|---|---|\n",
            seeds, many);
    for (si = 1; si < NSIG; si++) {
      int a = tg_fa[si] <= 0.1 && tg_rec[si] >= want_rec[si];
      int b = !tm_run || (tm_fa[si] <= 0.1 && tm_rec[si] >= want_rec[si]);
      fprintf(md,
              "| sigma %.2f: false alarms <= 0.1%%, rise recall >= %.2f | "
              "%.3f%%, %.3f |",
              sigmas[si], want_rec[si], tg_fa[si], tg_rec[si]);
      if (tm_run)
        fprintf(md, " %.3f%%, %.3f |", tm_fa[si], tm_rec[si]);
      else
        fprintf(md, " - |");
      fprintf(md, " %s |\n",
              a && b ? "yes"
              : tg_fa[si] <= 0.1 && (!tm_run || tm_fa[si] <= 0.1)
                  ? "**no** (recall)"
                  : "**no**");
    }
    for (si = 0; si < NSIG; si++) {
      int b = si > 0 && tm_run ? !tm_dominated[si] : 1;
      fprintf(md,
              "| sigma %.2f: no peer better on both recall and false alarms "
              "| %s | %s | %s |\n",
              sigmas[si], tg_dominated[si] ? "a peer is" : "none is",
              si > 0 && tm_run ? (tm_dominated[si] ? "a peer is" : "none is")
                               : "-",
              !tg_dominated[si] && b ? "yes" : "**no**");
    }
    fprintf(md,
            "| sigma 0.12: fall recall >= 0.9, false alarms <= 0.1%% | "
            "%.3f, %.3f%% |",
            tg_fall12, tg_fa12);
    if (tm_run)
      fprintf(md, " %.3f, %.3f%% |", tm_fall12, tm_fa[1]);
    else
      fprintf(md, " - |");
    fprintf(md, " %s |\n",
            tg_fall12 >= 0.9 && tg_fa12 <= 0.1 &&
                    (!tm_run || (tm_fall12 >= 0.9 && tm_fa[1] <= 0.1))
                ? "yes"
                : "**no**");
    fprintf(md,
            "| sigma 0.12: global recall >= 0.97, <= 1 false global per "
            "10,000 steps | %.3f, %.1f |",
            tg_grec12, tg_gfalse12);
    if (tm_run)
      fprintf(md, " %.3f, %.1f |", tm_grec12, tm_gfalse12);
    else
      fprintf(md, " - |");
    fprintf(md, " %s |\n",
            tg_grec12 >= 0.97 && tg_gfalse12 <= 1.0 &&
                    (!tm_run || (tm_grec12 >= 0.97 && tm_gfalse12 <= 1.0))
                ? "yes"
                : "**no**");
  }
  if (tg_real) {
    fprintf(md,
            "| stable runs: <= 5 admissions / 1000 steps | %.1f, %.1f | - | "
            "%s |\n",
            tg_adm[0], tg_adm[1],
            tg_adm[0] <= 5 && tg_adm[1] <= 5 ? "yes" : "**no**");
    fprintf(md,
            "| stable runs: >= 0.97 of injected rises within 1 step | "
            "%.3f, %.3f | - | %s |\n",
            tg_rise1[0], tg_rise1[1],
            tg_rise1[0] >= 0.97 && tg_rise1[1] >= 0.97 ? "yes" : "**no**");
    fprintf(md,
            "| stable runs: <= 1 global step / 1000 steps | %.2f, %.2f | - | "
            "%s |\n",
            tg_glob[0], tg_glob[1],
            tg_glob[0] <= 1 && tg_glob[1] <= 1 ? "yes" : "**no**");
  }
  fprintf(md, "\n");
  if (md != stdout) fclose(md);
  return 0;
}
