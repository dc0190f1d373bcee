/* arms.h - the control arms the training demos share (train_stress.c,
   train_lm.c): one table, so an arm means the same in every demo and in the
   efficacy benchmark (lab/efficacy.c).

   An arm is a way to train the same model on the same seeds, batches and
   faults:
     f32        every unit on the high-fidelity path, no faults
     lowp       low precision, no control
     clip       global gradient-norm clipping to 1.0 (clip_grad_norm_)
     adagc      per-unit adaptive clipping (AdaGC style): a unit's gradient
                is clipped to 1.05 x the EMA (beta 0.98) of its norm
     zclip      adaptive global clipping (ZClip style): EMAs (alpha 0.97) of
                the global norm's mean and variance; a norm whose z-score
                exceeds 2.5 is brought to mean + (2.5^2 / z) sd, and the
                EMAs take the clipped norm; the first 25 steps only observe
     gstab      per-unit norm stabilization (GradientStabilizer style; the
                paper's code is not public, this is our reading of its
                abstract: keep each gradient's direction, replace its norm
                by a bounded estimate from running norm statistics): EMAs
                (beta 0.98, the first observation initialises) of a unit's
                norm's mean mu and variance; after 10 observations the
                unit's gradient is rescaled to norm min(||g||, mu + 3 sd),
                mu and sd from before this step (a spike is bounded by the
                history, not by itself), and the EMAs take the bounded
                norm, so a spike does not inflate them. A non-finite norm:
                the unit's gradient is zeroed (warm-up included) and not
                observed; a norm of exactly 0 (a frozen unit) is not
                observed either
     spam       SPAM (Spike-Aware Adam with Momentum reset, arXiv
                2501.06842) on the demo's Adam(W): each gradient entry with
                g^2 > 5000 v (v: Adam's second moment of the entry, before
                this step's update; v = 0 leaves the entry alone) becomes
                sign(g) sqrt(5000 v); before the update of step t = 500,
                1000, ... (0-based) both moments are zeroed, and updates t
                .. t+149 take the learning rate times 0.5 (1 - cos(pi k /
                150)), k = 1..150 (the bias correction's step count runs
                on). A run of at most 500 steps has no reset. The LM demo
                runs it with --optimizer adamw only.
     gnmr       gnmr.h with gnmr_config_default()
     gnmr-paper gnmr_config_paper(); gnmr-noise gnmr_config_noise();
                gnmr-global the noise rules with global_policy CLIP;
                gnmr-calm gnmr_config_calm() (rule 10, the admission
                band: gnmr-band4's rule in the library)
   Ablations (each changes one thing of its base: gnmr-* the defaults,
   paper-* gnmr_config_paper(), noise-* gnmr_config_noise()):
     gnmr-pass, paper-pass, noise-pass     spike_policy PASS: promotion only
     gnmr-clip-only, paper-clip-only,      max_recovering 0: the clip only
     noise-clip-only
     gnmr-persist2, gnmr-band3,        gnmr-clip-only's controller, the
     gnmr-band4, gnmr-bucket           arm admitting units by a rule of its
                                       own (prototypes, below)
     paper-tau3                        ratio_threshold 3
     paper-lock4                       lock_steps 4
     noise-nofall                      two_sided 0
     noise-nofreeze                    no GLOBAL verdict (global_ratio 1e9),
                                       so no admission freeze; c stays
     noise-z3                          z_rise 3, min_rise 1.5
     noise-warm16                      warmup_steps 16
     noise-maxo4                       max_recovering 4
   The level-shift rule (issue 31): gnmr-shift-off, noise-shift-off (its
   base with shift_steps 0: the paper's rules); shift-pP-qQ and
   noise-shift-pP-qQ (its base with shift_steps P, shift_spread Q), the
   grid ARM_SHIFT_Q over P in {4, 8, 16, 32} and Q in {0.25, 0.5, 1}
   (`make efficacy-shift-sweep`).
   Forward signals (gnmr-fwd, paper-tau3-fwd, forward): besides its
   gradient norm, each unit's forward signal goes to the same controller as
   a unit of its own (units U .. 2U-1, one budget): the relative quantization
   error of the unit's GEMM input, ||Q(x) - x|| / ||x|| (on the f32 path, the
   error the cheap path would give at the current scale). A stale or saturating
   scale shows there at its own layer, on its first step; a gradient norm
   shows it at every layer after. The unit runs high fidelity when either
   of its two controller units recovers. forward: the same signals under
   gnmr_config_forward() (ratio_threshold 8, delta_threshold 6), the
   settings suite's choice where the demo owns the quantizer; noise-fwd:
   under noise-nofreeze's rules (the noise-aware rules, no admission
   freeze).
   f32-clip, f32-adagc, f32-gnmr, f32-gnmr-noise: the control on the f32
   model (no faults): what it does to training apart from precision.
   Placement arms (the LM demo only; lab/train_lm.c): place-RULE-B
   runs a set of units on the f32 path chosen by RULE, at a high-precision
   budget of B% of the units' GEMM FLOPs:
     nvfp4      static: the head, then the last block's Linears, back to
                front (NVIDIA's NVFP4 recipe keeps the last blocks in BF16)
     firstlast  static: the first block's Linears, then the last's (the
                Megatron-Core option), then the head
     rand1..3   static: three seeded random orders
     once       measured once: the units with the largest relative output
                quantization error over a calibration window before step
                steps / 10, then fixed
     late       every unit f32 for the last B% of steps (told the schedule)
     nvfp4-late nvfp4 at B/2, the late switch for the rest of B
     upd-max, upd-both, upd-all, upd-late
                measured in time, not told the schedule (train_lm.c's
                LM_PLACE_* rules): a unit goes to f32 for good once the
                running mean of its weight update's norm falls, relative to
                the run, against its weights' quantization error's norm
                (upd-all: every unit at once, on the units' mean); the
                budget a token bucket that earns B% of a step's FLOPs per
                step
     gnmr       upd-late's rule from the library: gnmr.h's placer
                (gnmr_place_*, rules P1-P7) makes the decisions, not
                told the run's length (0.4's rule)
     plan       the library's placer told the planned steps
                (planned_steps), its default GEMMs (gemms); planall,
                planf, planfd: told, every GEMM / the forward GEMMs /
                forward and input gradient
     latef, latefd, latefw, latedw, lated, latew
                the late switch per GEMM, told the schedule: the unit's
                forward (f), input-gradient (d) and weight-gradient (w)
                GEMMs named run f32, each a third of the unit's FLOPs, so
                latef's switch comes at 3B% of the steps from the end
   For a model served on the format (the forward stays on it; the served
   evaluation, lab/train_lm.c): latedw, lated, latew above, and
     nvfp4dw    nvfp4's units in its order, their input- and weight-
                gradient GEMMs f32 for the whole run (a per-unit choice)
     planlow, planlowd, planloww
                the library's placer told the planned steps with
                serve GNMR_SERVE_LOW: no forward GEMM placed; planlow the
                input- and weight-gradient GEMMs, planlowd the input
                gradient's alone, planloww the weight gradient's
     latedattn, latedmlp
                the late switch of the input-gradient GEMMs of some units
                only, told the schedule: the attention's (each block's
                qkv and projection) or the MLPs' (each block's two); the
                fewer FLOPs, the earlier the switch. In the suite's LM
                shape (width 64, 2 blocks) at 10%: latedattn runs the
                whole run at 9.5% (the attention is 29% of the FLOPs),
                latedmlp the last 53% of the steps
     latedwhead the head's input- and weight-gradient GEMMs, the whole
                run where the budget allows (the suite's LM shape at 10%:
                9.5%)
   lowp-jit     lowp's training; served (the served evaluation) with each
                per-tensor scale taken from the tensor's own amax (the
                final weights', each batch's activations') instead of the
                delayed scale of the amax histories: a serving change of
                no FLOPs, not a placement. Block formats (NVFP4) scale
                from the current amax anyway: there it is lowp.
   lowp-srd     lowp, but each input-gradient GEMM reads the weight
                stochastically rounded to the format (at the scale of the
                forward's, one draw per value, seed and step) instead of
                the forward's round-to-nearest copy: unbiased for the f32
                weight, as the f32 input gradient of lated/planlowd, at no
                f32 FLOPs. The forward, and so the served model's
                rounding, stays round to nearest.
   A static rule takes units in its order while their FLOPs fit the budget.
   Every demo also takes --global-clip X: each arm's gradient is clipped to
   global norm X after the arm's own control (what production trainers run
   anyway), so "lowp" becomes lowp+clip, "gnmr" lowp+clip+gnmr; with
   --clip-first the clip comes before the arm's control, which then sees
   the clipped gradients.

   Include after gnmr.h. */
#ifndef ARMS_H
#define ARMS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

enum {
  ARM_F32,
  ARM_LOWP,
  ARM_CLIP,
  ARM_ADAGC,
  ARM_ZCLIP,
  ARM_GNMR,
  ARM_PLACE,
  ARM_GSTAB,
  ARM_SPAM
};

#define ARM_GLOBAL_CLIP 1.0   /* clip arm: max global norm */
#define ARM_ADAGC_LAMBDA 1.05 /* adagc arm: clip to 1.05 x EMA of unit norm */
#define ARM_ADAGC_BETA 0.98   /* adagc arm: EMA decay */
#define ARM_ZCLIP_ALPHA 0.97  /* zclip arm: EMA weight of the history */
#define ARM_ZCLIP_Z 2.5       /* zclip arm: z-score that triggers a clip */
#define ARM_ZCLIP_WARMUP 25   /* zclip arm: steps that only observe */
#define ARM_GSTAB_BETA 0.98   /* gstab arm: EMA decay of mean and variance */
#define ARM_GSTAB_K 3.0       /* gstab arm: the bound is mean + 3 sd */
#define ARM_GSTAB_WARMUP 10   /* gstab arm: observations that only observe */
#define ARM_SPAM_THETA 5000.0 /* spam arm: clip where g^2 > theta v */
#define ARM_SPAM_RESET 500    /* spam arm: moments zeroed every 500 steps */
#define ARM_SPAM_WARMUP 150   /* spam arm: cosine lr warm-up after a reset */

/* An arm's config fn(): base() with `change` made (assignments to c, one
   expression). One definition, so that each line below says only how the
   arm differs from its base. */
#define ARM_VARIANT(fn, base, change)                                          \
  static gnmr_config fn(void) {                                                \
    gnmr_config c = base();                                                    \
    change;                                                                    \
    return c;                                                                  \
  }

ARM_VARIANT(arm_default_pass, gnmr_config_default,
            c.spike_policy = GNMR_SPIKE_PASS)
ARM_VARIANT(arm_default_clip_only, gnmr_config_default, c.max_recovering = 0)

/* The calm-admission arms (issue 50; lab prototypes, not rules of
   gnmr.h). Each runs the controller as gnmr-clip-only (the defaults with
   max_recovering 0: it flags and clips, admits nothing, so clipping stays
   the defaults'), and the arm admits units itself from the decisions and
   the gradient norms alone:
     gnmr-persist2  a unit flagged (RATIO, DELTA or NONFINITE) on
                    ARM_PERSIST_STEPS (2) steps in a row
     gnmr-band3, gnmr-band4
                    a unit flagged while its log gradient norm is above its
                    own noise band, centre + K sd (K 3 or 4): centre an EMA
                    of the log norm, sd an EMA of its absolute deviation
                    from the centre (at least ARM_BAND_MIN_SD), both with
                    weight max(1 / (n + 1), 1 / ARM_BAND_SPAN) after n
                    observations; admitted when that holds on 2 steps in a
                    row, or once when the norm is ARM_BAND_BIG (100) times
                    the band's centre or more, or its norm is not finite.
                    The band observes each finite nonzero norm clipped into
                    [centre - K sd, centre + K sd], so a spike cannot widen
                    it; in its first ARM_BAND_WARMUP observations nothing
                    is above it
     gnmr-bucket    a unit flagged on one step, as the defaults, but only
                    while its token bucket holds lock steps: it earns
                    ARM_BUCKET_RATE (0.015) steps a step, holds at most
                    lock, starts full and pays lock per admission, so over
                    T steps a unit is admitted for at most lock + 0.015 T
                    steps, flagged or not
   All: one unit at a time, the highest score first, for lock steps, then
   cooldown steps before it may be admitted again, as the defaults' budget.
   A lone spike is clipped, not admitted. */
#define ARM_PERSIST_NAME "gnmr-persist2"
#define ARM_JIT_NAME "lowp-jit" /* lowp served on current scales */
#define ARM_SRD_NAME "lowp-srd" /* lowp, dgrad on rounded-at-random W */
#define ARM_PERSIST_STEPS 2
#define ARM_PERSIST_UNITS 64
#define ARM_BAND_SPAN 32    /* band EMAs: weight 1/32 once warm */
#define ARM_BAND_WARMUP 16  /* observations before anything is above it */
#define ARM_BAND_MIN_SD 0.1 /* log units: a floor for a steady norm */
#define ARM_BAND_BIG 100.0  /* this far over the centre: admitted at once */
#define ARM_BUCKET_RATE 0.015
enum { ARM_ADMIT_NONE, ARM_ADMIT_PERSIST, ARM_ADMIT_BAND, ARM_ADMIT_BUCKET };
typedef struct arm_persist {
  int rule;                         /* ARM_ADMIT_* */
  double k;                         /* band: width in sd */
  int run[ARM_PERSIST_UNITS];       /* qualifying steps in a row */
  int left[ARM_PERSIST_UNITS];      /* > 0: on the high-fidelity path */
  int cool[ARM_PERSIST_UNITS];      /* steps before it may be admitted again */
  int seen[ARM_PERSIST_UNITS];      /* band: norms observed */
  double centre[ARM_PERSIST_UNITS]; /* band: EMA of the log norm */
  double sd[ARM_PERSIST_UNITS];     /* band: EMA of |log norm - centre| */
  double tokens[ARM_PERSIST_UNITS]; /* bucket: steps it may still spend */
} arm_persist;

/* The rule of the arm called name (ARM_ADMIT_NONE: not one of these). */
static int arm_admit_rule(const char *name, double *k) {
  *k = 0;
  if (strcmp(name, ARM_PERSIST_NAME) == 0) return ARM_ADMIT_PERSIST;
  if (strcmp(name, "gnmr-band3") == 0) return *k = 3, ARM_ADMIT_BAND;
  if (strcmp(name, "gnmr-band4") == 0) return *k = 4, ARM_ADMIT_BAND;
  if (strcmp(name, "gnmr-bucket") == 0) return ARM_ADMIT_BUCKET;
  return ARM_ADMIT_NONE;
}

/* A zeroed arm_persist set to the rule of the arm called name; lock: the
   bucket's size. Returns the rule. */
static int arm_persist_init(arm_persist *p, const char *name, int lock) {
  int u;
  memset(p, 0, sizeof *p);
  p->rule = arm_admit_rule(name, &p->k);
  for (u = 0; u < ARM_PERSIST_UNITS; u++) p->tokens[u] = lock;
  return p->rule;
}

/* The band rule for unit u's norm x this step: 1 above the band, 2 far
   above it (or not finite), 0 not; then the band observes x. */
static int arm_band_observe(arm_persist *p, int u, float x) {
  double l, w, hi, lo, c = p->centre[u], sd = p->sd[u];
  int above = 0;
  if (!isfinite(x)) return 2;
  if (x <= 0) return 0;
  l = log((double)x);
  if (sd < ARM_BAND_MIN_SD) sd = ARM_BAND_MIN_SD;
  hi = c + p->k * sd, lo = c - p->k * sd;
  if (p->seen[u] >= ARM_BAND_WARMUP) {
    above = l > hi ? (l - c >= log(ARM_BAND_BIG) ? 2 : 1) : 0;
    l = l > hi ? hi : l < lo ? lo : l;
  }
  w = 1.0 / (p->seen[u] + 1);
  if (w < 1.0 / ARM_BAND_SPAN) w = 1.0 / ARM_BAND_SPAN;
  if (p->seen[u] == 0) {
    p->centre[u] = l;
  } else {
    p->sd[u] += w * (fabs(l - c) - p->sd[u]);
    p->centre[u] += w * (l - c);
  }
  p->seen[u]++;
  return above;
}

/* After gnmr_step's decisions d[0..n) on the norms x[0..n) (n <=
   ARM_PERSIST_UNITS): the lock and cooldown tick, then at most one unit is
   admitted; admitted[u] is 1 for it, 0 for the rest. p->left[u] > 0: unit
   u runs the high-fidelity path next step. */
static void arm_persist_step(arm_persist *p, const gnmr_decision *d,
                             const float *x, int n, int lock, int cooldown,
                             int *admitted) {
  const uint32_t risky =
      GNMR_FLAG_RATIO | GNMR_FLAG_DELTA | GNMR_FLAG_NONFINITE;
  int u, busy = 0, best = -1, ok[ARM_PERSIST_UNITS];
  for (u = 0; u < n; u++) {
    const int flagged = (d[u].flags & risky) != 0;
    admitted[u] = 0;
    if (p->left[u] > 0) {
      if (--p->left[u] == 0) p->cool[u] = cooldown;
    } else if (p->cool[u] > 0) {
      p->cool[u]--;
    }
    if (p->rule == ARM_ADMIT_BAND) {
      const int above = arm_band_observe(p, u, x[u]);
      p->run[u] = flagged && above ? p->run[u] + 1 : 0;
      ok[u] = p->run[u] >= ARM_PERSIST_STEPS || (flagged && above == 2);
    } else if (p->rule == ARM_ADMIT_BUCKET) {
      p->tokens[u] += ARM_BUCKET_RATE;
      if (p->tokens[u] > lock) p->tokens[u] = lock;
      ok[u] = flagged && p->tokens[u] >= lock;
    } else {
      p->run[u] = flagged ? p->run[u] + 1 : 0;
      ok[u] = p->run[u] >= ARM_PERSIST_STEPS;
    }
    busy += p->left[u] > 0;
  }
  for (u = 0; u < n && !busy; u++)
    if (ok[u] && p->cool[u] == 0 && (best < 0 || d[u].score > d[best].score))
      best = u;
  if (best >= 0) {
    p->left[best] = lock;
    p->tokens[best] -= lock;
    admitted[best] = 1;
  }
}
ARM_VARIANT(arm_paper_pass, gnmr_config_paper, c.spike_policy = GNMR_SPIKE_PASS)
ARM_VARIANT(arm_paper_clip_only, gnmr_config_paper, c.max_recovering = 0)
ARM_VARIANT(arm_paper_tau3, gnmr_config_paper, c.ratio_threshold = 3.0)
ARM_VARIANT(arm_paper_lock4, gnmr_config_paper, c.lock_steps = 4)
ARM_VARIANT(arm_noise_global, gnmr_config_noise,
            c.global_policy = GNMR_GLOBAL_CLIP)
ARM_VARIANT(arm_noise_pass, gnmr_config_noise, c.spike_policy = GNMR_SPIKE_PASS)
ARM_VARIANT(arm_noise_clip_only, gnmr_config_noise, c.max_recovering = 0)
ARM_VARIANT(arm_noise_nofall, gnmr_config_noise, c.two_sided = 0)
ARM_VARIANT(arm_noise_nofreeze, gnmr_config_noise, c.global_ratio = 1e9)
ARM_VARIANT(arm_noise_z3, gnmr_config_noise, (c.z_rise = 3.0, c.min_rise = 1.5))
ARM_VARIANT(arm_noise_warm16, gnmr_config_noise, c.warmup_steps = 16)
ARM_VARIANT(arm_noise_maxo4, gnmr_config_noise, c.max_recovering = 4)
ARM_VARIANT(arm_default_shift_off, gnmr_config_default, c.shift_steps = 0)
ARM_VARIANT(arm_noise_shift_off, gnmr_config_noise, c.shift_steps = 0)

/* The level-shift grid: ARM_SHIFT_Q(X, P, SEP) is X(P, Q, ID) for
   shift_steps P and each shift_spread Q, SEP between; ID spells Q in a
   name. */
#define ARM_SHIFT_Q(X, P, SEP) X(P, 0.25, 025) SEP X(P, 0.5, 05) SEP X(P, 1, 1)
#define ARM_COMMA ,
#define ARM_SHIFT_FNS(P, Q, ID)                                                \
  ARM_VARIANT(arm_shift_p##P##_q##ID, gnmr_config_default,                     \
              (c.shift_steps = P, c.shift_spread = Q))                         \
  ARM_VARIANT(arm_noise_shift_p##P##_q##ID, gnmr_config_noise,                 \
              (c.shift_steps = P, c.shift_spread = Q))
ARM_SHIFT_Q(ARM_SHIFT_FNS, 4, )
ARM_SHIFT_Q(ARM_SHIFT_FNS, 8, )
ARM_SHIFT_Q(ARM_SHIFT_FNS, 16, )
ARM_SHIFT_Q(ARM_SHIFT_FNS, 32, )
#define ARM_SHIFT_ROW(name, fn)                                                \
  { name, ARM_GNMR, fn, 0, 1, 0 }
#define ARM_SHIFT_ROWS(P, Q, ID)                                               \
  ARM_SHIFT_ROW("shift-p" #P "-q" #Q, arm_shift_p##P##_q##ID),                 \
      ARM_SHIFT_ROW("noise-shift-p" #P "-q" #Q, arm_noise_shift_p##P##_q##ID)

/* A placement rule's arms at 5%, 10% and 20% of the GEMM FLOPs. */
/* clang-format off */
#define ARM_PLACE_ROWS(rule)                                                   \
  {"place-" rule "-5", ARM_PLACE, NULL, 0, 1, 0},                              \
  {"place-" rule "-10", ARM_PLACE, NULL, 0, 1, 0},                             \
  {"place-" rule "-20", ARM_PLACE, NULL, 0, 1, 0}
/* clang-format on */

typedef struct demo_arm {
  const char *name;
  int kind;                    /* ARM_* */
  gnmr_config (*config)(void); /* gnmr arms only */
  int f32;                     /* every unit on the f32 path, no faults */
  int extra;                   /* not in a demo's default --arms list */
  int forward; /* gnmr arms: forward signals too (units U .. 2U-1) */
} demo_arm;

static const demo_arm ARMS[] = {
    {"f32", ARM_F32, NULL, 1, 0, 0},
    {"lowp", ARM_LOWP, NULL, 0, 0, 0},
    {"clip", ARM_CLIP, NULL, 0, 0, 0},
    {"adagc", ARM_ADAGC, NULL, 0, 0, 0},
    {"gnmr", ARM_GNMR, gnmr_config_default, 0, 0, 0},
    {"gnmr-noise", ARM_GNMR, gnmr_config_noise, 0, 0, 0},
    {"gnmr-global", ARM_GNMR, arm_noise_global, 0, 0, 0},
    {"gnmr-paper", ARM_GNMR, gnmr_config_paper, 0, 1, 0},
    {"zclip", ARM_ZCLIP, NULL, 0, 1, 0},
    {"gstab", ARM_GSTAB, NULL, 0, 1, 0},
    {"spam", ARM_SPAM, NULL, 0, 1, 0},
    {"gnmr-pass", ARM_GNMR, arm_default_pass, 0, 1, 0},
    {"gnmr-clip-only", ARM_GNMR, arm_default_clip_only, 0, 1, 0},
    {ARM_PERSIST_NAME, ARM_GNMR, arm_default_clip_only, 0, 1, 0},
    {"gnmr-band3", ARM_GNMR, arm_default_clip_only, 0, 1, 0},
    {"gnmr-band4", ARM_GNMR, arm_default_clip_only, 0, 1, 0},
    {"gnmr-bucket", ARM_GNMR, arm_default_clip_only, 0, 1, 0},
    {"gnmr-calm", ARM_GNMR, gnmr_config_calm, 0, 1, 0},
    {ARM_JIT_NAME, ARM_LOWP, NULL, 0, 1, 0},
    {ARM_SRD_NAME, ARM_LOWP, NULL, 0, 1, 0},
    {"paper-pass", ARM_GNMR, arm_paper_pass, 0, 1, 0},
    {"paper-clip-only", ARM_GNMR, arm_paper_clip_only, 0, 1, 0},
    {"paper-tau3", ARM_GNMR, arm_paper_tau3, 0, 1, 0},
    {"paper-lock4", ARM_GNMR, arm_paper_lock4, 0, 1, 0},
    {"noise-pass", ARM_GNMR, arm_noise_pass, 0, 1, 0},
    {"noise-clip-only", ARM_GNMR, arm_noise_clip_only, 0, 1, 0},
    {"noise-nofall", ARM_GNMR, arm_noise_nofall, 0, 1, 0},
    {"noise-nofreeze", ARM_GNMR, arm_noise_nofreeze, 0, 1, 0},
    {"noise-z3", ARM_GNMR, arm_noise_z3, 0, 1, 0},
    {"noise-warm16", ARM_GNMR, arm_noise_warm16, 0, 1, 0},
    {"noise-maxo4", ARM_GNMR, arm_noise_maxo4, 0, 1, 0},
    {"gnmr-shift-off", ARM_GNMR, arm_default_shift_off, 0, 1, 0},
    {"noise-shift-off", ARM_GNMR, arm_noise_shift_off, 0, 1, 0},
    ARM_SHIFT_Q(ARM_SHIFT_ROWS, 4, ARM_COMMA),
    ARM_SHIFT_Q(ARM_SHIFT_ROWS, 8, ARM_COMMA),
    ARM_SHIFT_Q(ARM_SHIFT_ROWS, 16, ARM_COMMA),
    ARM_SHIFT_Q(ARM_SHIFT_ROWS, 32, ARM_COMMA),
    {"gnmr-fwd", ARM_GNMR, gnmr_config_default, 0, 1, 1},
    {"paper-tau3-fwd", ARM_GNMR, arm_paper_tau3, 0, 1, 1},
    {"forward", ARM_GNMR, gnmr_config_forward, 0, 1, 1},
    {"noise-fwd", ARM_GNMR, arm_noise_nofreeze, 0, 1, 1},
    {"f32-clip", ARM_CLIP, NULL, 1, 1, 0},
    {"f32-adagc", ARM_ADAGC, NULL, 1, 1, 0},
    {"f32-gnmr", ARM_GNMR, gnmr_config_default, 1, 1, 0},
    {"f32-gnmr-noise", ARM_GNMR, gnmr_config_noise, 1, 1, 0},
    ARM_PLACE_ROWS("nvfp4"),
    ARM_PLACE_ROWS("firstlast"),
    ARM_PLACE_ROWS("rand1"),
    ARM_PLACE_ROWS("rand2"),
    ARM_PLACE_ROWS("rand3"),
    ARM_PLACE_ROWS("once"),
    ARM_PLACE_ROWS("late"),
    ARM_PLACE_ROWS("latef"),
    ARM_PLACE_ROWS("latefd"),
    ARM_PLACE_ROWS("latefw"),
    ARM_PLACE_ROWS("latedw"),
    ARM_PLACE_ROWS("lated"),
    ARM_PLACE_ROWS("latew"),
    ARM_PLACE_ROWS("nvfp4dw"),
    ARM_PLACE_ROWS("nvfp4-late"),
    ARM_PLACE_ROWS("upd-max"),
    ARM_PLACE_ROWS("upd-both"),
    ARM_PLACE_ROWS("upd-all"),
    ARM_PLACE_ROWS("upd-late"),
    ARM_PLACE_ROWS("gnmr"),
    ARM_PLACE_ROWS("plan"),
    ARM_PLACE_ROWS("planall"),
    ARM_PLACE_ROWS("planf"),
    ARM_PLACE_ROWS("planfd"),
    ARM_PLACE_ROWS("planlow"),
    ARM_PLACE_ROWS("planlowd"),
    ARM_PLACE_ROWS("planloww"),
    ARM_PLACE_ROWS("latedattn"),
    ARM_PLACE_ROWS("latedmlp"),
    ARM_PLACE_ROWS("latedwhead"),
#undef ARM_PLACE_ROWS
};
#define ARM_COUNT ((int)(sizeof ARMS / sizeof ARMS[0]))

/* The arm's index in ARMS, or -1. */
static int arm_find(const char *name) {
  int a;
  for (a = 0; a < ARM_COUNT; a++)
    if (strcmp(ARMS[a].name, name) == 0) return a;
  return -1;
}

/* The scale that brings global norm g to at most limit; 0 when g is not
   finite (the step is skipped). */
static double arm_clip_scale(double g, double limit) {
  if (!isfinite(g)) return 0.0;
  return g > limit ? limit / g : 1.0;
}

/* The zclip arm's state and its scale for global norm g this step. */
typedef struct arm_zclip {
  double mean, var;
  int n;
} arm_zclip;

static double arm_zclip_scale(arm_zclip *z, double g) {
  double d, scale = 1.0, sd;
  if (!isfinite(g)) return 0.0;
  if (z->n < ARM_ZCLIP_WARMUP) { /* a plain mean and variance */
    d = g - z->mean;
    z->n++;
    z->mean += d / z->n;
    z->var += (d * (g - z->mean) - z->var) / z->n;
    return 1.0;
  }
  sd = sqrt(z->var);
  if (sd > 0 && (g - z->mean) / sd > ARM_ZCLIP_Z) {
    double zs = (g - z->mean) / sd,
           target = z->mean + ARM_ZCLIP_Z * ARM_ZCLIP_Z / zs * sd;
    scale = target / g;
    g = target;
  }
  d = g - z->mean;
  z->mean += (1 - ARM_ZCLIP_ALPHA) * d;
  z->var = ARM_ZCLIP_ALPHA * (z->var + (1 - ARM_ZCLIP_ALPHA) * d * d);
  return scale;
}

/* The adagc arm for one unit: the scale for norm g, updating its EMA. A
   norm of exactly 0 is a unit with no gradient (frozen): no observation,
   as a per-parameter clip never sees a parameter without one; *ema = 0:
   none yet. */
static double arm_adagc_scale(double *ema, double g) {
  double limit = ARM_ADAGC_LAMBDA * *ema, scale = 1.0;
  if (!isfinite(g)) return 0.0;
  if (g == 0.0) return 1.0;
  if (*ema == 0.0) {
    *ema = g;
    return 1.0;
  }
  if (g > limit) {
    scale = limit / g;
    g = limit;
  }
  *ema = ARM_ADAGC_BETA * *ema + (1 - ARM_ADAGC_BETA) * g;
  return scale;
}

/* The gstab arm's state for one unit; n: norms observed. */
typedef struct arm_gstab {
  double mean, var;
  int n;
} arm_gstab;

/* The gstab arm for one unit: the scale for norm g this step, updating the
   statistics (lab/arms.h's header: the arm). */
static double arm_gstab_scale(arm_gstab *s, double g) {
  double d, scale = 1.0, limit;
  if (!isfinite(g)) return 0.0;
  if (g == 0.0) return 1.0;
  if (s->n == 0) {
    s->mean = g;
    s->var = 0.0;
    s->n = 1;
    return 1.0;
  }
  limit = s->mean + ARM_GSTAB_K * sqrt(s->var);
  if (s->n >= ARM_GSTAB_WARMUP && g > limit) {
    scale = limit / g;
    g = limit;
  }
  s->n++;
  d = g - s->mean;
  s->mean += (1 - ARM_GSTAB_BETA) * d;
  s->var = ARM_GSTAB_BETA * (s->var + (1 - ARM_GSTAB_BETA) * d * d);
  return scale;
}

/* The spam arm's spike-aware clip of one gradient entry g, v Adam's second
   moment of the entry before this step's update: sign(g) sqrt(theta v)
   where g^2 > theta v; g where v is 0 (no history yet, or just reset). */
static double arm_spam_entry(double g, double v) {
  double limit;
  if (!(v > 0.0) || !(g * g > ARM_SPAM_THETA * v)) return g;
  limit = sqrt(ARM_SPAM_THETA * v);
  return g > 0 ? limit : -limit;
}

/* The spam arm's clip (arm_spam_entry) of n gradient entries g against
   Adam's second moments v, as a function `name` over the demo's element
   type; it returns the entries clipped. */
#define ARM_SPAM_CLIP(name, real)                                              \
  static long name(real *g, const real *v, size_t n) {                         \
    long clipped = 0;                                                          \
    size_t i;                                                                  \
    for (i = 0; i < n; i++) {                                                  \
      double c = arm_spam_entry(g[i], v[i]);                                   \
      if (c != g[i]) g[i] = (real)c, clipped++;                                \
    }                                                                          \
    return clipped;                                                            \
  }

/* The spam arm: whether Adam's moments are zeroed before step's update
   (0-based), and the learning rate's factor on that step. */
static int arm_spam_resets(int step) {
  return step > 0 && step % ARM_SPAM_RESET == 0;
}

static double arm_spam_lr_scale(int step) {
  int k = step % ARM_SPAM_RESET + 1; /* the k-th update since the reset */
  if (step < ARM_SPAM_RESET || k >= ARM_SPAM_WARMUP) return 1.0;
  return 0.5 * (1.0 - cos(3.141592653589793 * k / ARM_SPAM_WARMUP));
}

#endif
