/* ctl_model.h - what the controller harnesses share: configs and norms drawn
   from the input bytes, snapshots for "a refused call changes nothing", and
   one step checked against the rules in the header's top comment: rules 1-8
   (PAPER mode) in full, and in NOISE mode (rules N1-N9) what can be checked
   without a model of its arithmetic (flags and their conditions, scales,
   the step's report, admissions on a GLOBAL step, the state finite).

   Include after gnmr.h and fuzz.h. */
#ifndef CTL_MODEL_H
#define CTL_MODEL_H

#include <float.h>
#include <math.h>

#define FUZZ_MAX_UNITS 32u

static uint32_t fuzz_pick_u32(fuzz_reader *r, uint32_t modulo) {
  uint8_t sel = fuzz_u8(r);
  if (sel >= 0xF8) return fuzz_u32(r);
  return sel % modulo;
}

/* A float's bits (a zero's sign told apart). */
FUZZ_UNUSED static uint32_t fuzz_f32_bits_of(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}

/* A positive normal float, by its bits (whatever -Ofast assumes). */
FUZZ_UNUSED static int fuzz_normal(float x) {
  const uint32_t e = fuzz_f32_bits_of(x) >> 23;
  return e >= 1u && e <= 254u;
}

FUZZ_UNUSED static gnmr_config fuzz_config(fuzz_reader *r, uint32_t n_units) {
  static const double ratio[] = {3.0, 1.5, 2.0,  10.0, 1.0000001, 1e300,
                                 1.0, 0.5, -3.0, NAN,  INFINITY};
  static const double delta[] = {1.5, 0.5,  4.0, 1e-300,  1e300,
                                 0.0, -1.0, NAN, INFINITY};
  static const double decay[] = {0.99,   1.0, 0.5,  0.9,       0.999999,
                                 1e-300, 0.0, -0.5, 1.0000001, NAN};
  static const double eps[] = {1e-12, 1.0,    1e-300, 5e-324,  1e30,
                               0.0,   -1e-12, NAN,    INFINITY};
  static const double spread[] = {0.5,     0.0,  2.0, 1e300,   1e-300,
                                  -1e-300, -0.5, NAN, INFINITY};
  gnmr_config c = gnmr_config_paper(); /* PAPER mode: the model's rules */
  c.ratio_threshold = fuzz_pick(r, ratio, sizeof ratio / sizeof ratio[0]);
  c.delta_threshold = fuzz_pick(r, delta, sizeof delta / sizeof delta[0]);
  c.history_decay = fuzz_pick(r, decay, sizeof decay / sizeof decay[0]);
  c.eps = fuzz_pick(r, eps, sizeof eps / sizeof eps[0]);
  c.delta_window = 1u + (fuzz_pick_u32(r, GNMR_WINDOW_MAX + 2u) %
                         (GNMR_WINDOW_MAX + 2u)); /* 17 is out of range */
  if (c.delta_window == GNMR_WINDOW_MAX + 2u) c.delta_window = 0;
  c.warmup_steps = fuzz_pick_u32(r, 8);
  c.max_recovering = fuzz_pick_u32(r, n_units + 2u); /* n + 1: too many */
  c.lock_steps = 1u + fuzz_pick_u32(r, 10);          /* may wrap to 0 */
  c.cooldown_steps = fuzz_pick_u32(r, 6);
  c.spike_policy = (int)fuzz_pick_u32(r, 4); /* 3 is not a policy */
  /* rule 9: off, short runs (1 is out of range), or raw */
  c.shift_steps = fuzz_pick_u32(r, 6);
  c.shift_spread = fuzz_pick(r, spread, sizeof spread / sizeof spread[0]);
  return c;
}

/* fuzz_config, then one more byte: bit 0 picks NOISE mode, bit 1 draws
   NOISE mode's fields too (from their own tables: defaults first, then the
   edges of their valid ranges, then invalid values; PAPER mode checks them
   but does not read them); 0 keeps a PAPER config with the defaults. */
FUZZ_UNUSED static gnmr_config fuzz_config_any(fuzz_reader *r,
                                               uint32_t n_units) {
  static const double z[] = {4.25, 6.0,  0.5, 1.0,  1e-300, 1e300,
                             20.0, 1e-6, 0.0, -1.0, NAN,    INFINITY};
  static const double above1[] = {2.0, 1.5,  1.0000001, 10.0, 1e300,
                                  1.0, 0.99, -2.0,      NAN,  INFINITY};
  static const double frac[] = {0.5,  0.25, 1e-300, 0.9999999, 0.1,
                                1e-9, 0.0,  1.0,    -0.5,      NAN};
  static const double ar[] = {0.5, 0.0,     0.9, 0.9999999, 1e-300,
                              1.0, -1e-300, 1.5, NAN};
  static const double decay[] = {0.995,  1.0, 0.5,       0.9,  0.999999,
                                 1e-300, 0.0, 1.0000001, -0.5, NAN};
  static const double winsor[] = {3.0,  1.0, 1.5,  100.0, 1e300,
                                  0.99, 0.0, -3.0, NAN,   INFINITY};
  static const double floor_[] = {0.01,  0.0,   1e-300, 0.5,
                                  1e300, -1e-9, NAN,    INFINITY};
  static const double gfrac[] = {0.25, 1.0, 0.5,       1e-300, 0.9999999,
                                 0.0,  1.5, 1.0000001, -0.25,  NAN};
  static const double band_k[] = {4.0, 1.0,  0.25, 1e300,
                                  0.0, -1.0, NAN,  INFINITY};
  gnmr_config c = fuzz_config(r, n_units);
  uint8_t mode = fuzz_u8(r);
  if (mode & 1) c.rule = GNMR_RULE_NOISE;
  if (mode & 8) { /* rule 10: K from its table, band_steps 1 or 2 */
    c.band_k = band_k[(mode >> 4) & 7];
    c.band_steps = mode & 0x80 ? 1u : 2u;
  }
  if (!(mode & 2)) return c;
  if (mode & 4) c.rule = (int)fuzz_u32(r); /* mostly not a rule */
  c.two_sided = fuzz_pick_u32(r, 3);       /* 2 is out of range */
  c.z_rise = fuzz_pick(r, z, sizeof z / sizeof z[0]);
  c.z_fall = fuzz_pick(r, z, sizeof z / sizeof z[0]);
  c.min_rise = fuzz_pick(r, above1, sizeof above1 / sizeof above1[0]);
  c.max_fall = fuzz_pick(r, frac, sizeof frac / sizeof frac[0]);
  c.ar = fuzz_pick(r, ar, sizeof ar / sizeof ar[0]);
  c.hold = fuzz_pick(r, z, sizeof z / sizeof z[0]);
  c.fluct_decay = fuzz_pick(r, decay, sizeof decay / sizeof decay[0]);
  c.winsor = fuzz_pick(r, winsor, sizeof winsor / sizeof winsor[0]);
  c.fluct_floor = fuzz_pick(r, floor_, sizeof floor_ / sizeof floor_[0]);
  c.global_ratio = fuzz_pick(r, above1, sizeof above1 / sizeof above1[0]);
  c.global_frac = fuzz_pick(r, gfrac, sizeof gfrac / sizeof gfrac[0]);
  c.common_min_units = 1u + fuzz_pick_u32(r, n_units + 2u); /* may wrap */
  c.global_policy = (int)fuzz_pick_u32(r, 4); /* 3 is not a policy */
  return c;
}

/* One unit's norm: mostly a calm value near 1, then spikes, the non-finite
   values, zeros, subnormals, huge values and raw bits (maybe negative). */
FUZZ_UNUSED static float fuzz_norm(fuzz_reader *r) {
  uint8_t tag = fuzz_u8(r);
  switch (tag % 16) {
  case 8: return (float)ldexp(1.0 + fuzz_u8(r) / 256.0, 1 + fuzz_u8(r) % 40);
  case 9: return NAN;
  case 10: return INFINITY;
  case 11: return -INFINITY;
  case 12: return (tag & 16) ? -0.0f : 0.0f;
  case 13: return (float)ldexp(1.0 + fuzz_u8(r), -149 + fuzz_u8(r) % 8);
  case 14: return (tag & 16) ? FLT_MAX : 1e30f;
  case 15: return fuzz_f32_bits(r);
  default: return (float)(0.5 + fuzz_u8(r) / 256.0);
  }
}

/* A controller's whole state: the struct and its units, byte for byte. */
typedef struct fuzz_snapshot {
  gnmr_ctl ctl;
  gnmr_slot units[FUZZ_MAX_UNITS + 1];
} fuzz_snapshot;

FUZZ_UNUSED static void fuzz_snap(fuzz_snapshot *s, const gnmr_ctl *ctl,
                                  const gnmr_slot *units, uint32_t n) {
  memcpy(&s->ctl, ctl, sizeof *ctl);
  if (n) memcpy(s->units, units, sizeof *units * n);
}

FUZZ_UNUSED static int fuzz_same(const fuzz_snapshot *s, const gnmr_ctl *ctl,
                                 const gnmr_slot *units, uint32_t n) {
  return memcmp(&s->ctl, ctl, sizeof *ctl) == 0 &&
         (n == 0 || memcmp(s->units, units, sizeof *units * n) == 0);
}

/* The state could have come from gnmr_init and gnmr_step: the harness's own
   statement of it, independent of the checkpoint loader's checks (a loader
   that forgot one must not pass unnoticed). Reads the private unit fields,
   which hold what the contract talks about: lock and cooldown counters, the
   window and its running sum. */
FUZZ_UNUSED static void fuzz_state_valid(const gnmr_ctl *ctl) {
  const gnmr_config *c = &ctl->cfg;
  const gnmr__soa soa = gnmr__carve(ctl->units, ctl->n_units);
  float cap = c->ratio_threshold < (double)FLT_MAX ? (float)c->ratio_threshold
                                                   : FLT_MAX;
  uint32_t u, i, locked = 0;
  FUZZ_CHECK(gnmr_config_check(c, UINT32_MAX, NULL) == GNMR_OK);
  FUZZ_CHECK(c->max_recovering <= ctl->n_units);
  for (u = 0; u < ctl->n_units; u++) {
    gnmr__unit_state s;
    uint32_t filled, recent;
    double sum = 0.0;
    gnmr__unit_get(&soa, ctl->n_units, u, &s);
    /* The ring: observation k went to slot k mod 16; the last min(k, W)
       slots are the window, the running sum follows them. */
    filled = s.finite_steps < GNMR_WINDOW_MAX ? (uint32_t)s.finite_steps
                                              : GNMR_WINDOW_MAX;
    recent = s.finite_steps < c->delta_window ? (uint32_t)s.finite_steps
                                              : c->delta_window;
    FUZZ_CHECK(s.finite_steps <= (UINT64_C(1) << 62));
    FUZZ_CHECK(s.lock <= c->lock_steps);
    FUZZ_CHECK(s.cooldown <= c->cooldown_steps);
    FUZZ_CHECK(s.lock == 0 || s.cooldown == 0);
    FUZZ_CHECK(isfinite(s.mean) && s.mean >= 0.0);
    for (i = 0; i < GNMR_WINDOW_MAX; i++) {
      if (i < filled)
        FUZZ_CHECK(s.window[i] >= 0.0f && s.window[i] <= cap);
      else
        FUZZ_CHECK(s.window[i] == 0.0f);
    }
    for (i = recent; i > 0; i--)
      sum += (double)s.window[(s.finite_steps - i) % GNMR_WINDOW_MAX];
    /* A running sum, redone exactly once per lap: equal up to rounding,
       which stays below 2 W (W + 2) 2^-53 of the largest possible entry. */
    FUZZ_CHECK(fabs(s.window_sum - sum) <=
               1e-12 * (double)c->delta_window * (double)cap);
    /* Rule 9's run (two words, gnmr.h's gnmr__run_*): none, or len
       flagged observations ending at k = at, g within [lo, hi], positive
       and finite; FALLs only in NOISE mode. */
    {
      const uint64_t w = s.shift_run[0], at = w & ((UINT64_C(1) << 48) - 1);
      const uint32_t len = (uint32_t)(w >> 48) & 0x7FFFu,
                     fall = (uint32_t)(w >> 63);
      const uint32_t lo_bits = (uint32_t)s.shift_run[1],
                     hi_bits = (uint32_t)(s.shift_run[1] >> 32);
      float lo, hi;
      memcpy(&lo, &lo_bits, 4);
      memcpy(&hi, &hi_bits, 4);
      if (len == 0) {
        FUZZ_CHECK(w == 0 && s.shift_run[1] == 0);
      } else {
        FUZZ_CHECK(len <= at && at <= s.finite_steps);
        FUZZ_CHECK(isfinite(lo) && isfinite(hi) && lo > 0.0f && lo <= hi);
        FUZZ_CHECK(fall == 0 || c->rule == GNMR_RULE_NOISE);
      }
    }
    locked += s.lock > 0;
  }
  FUZZ_CHECK(locked == ctl->recovering);
  /* NOISE mode's statistics (zero in PAPER mode): finite, s >= 0. */
  for (u = 0; u < ctl->n_units; u++) {
    gnmr_unit_state st;
    FUZZ_CHECK(gnmr_unit_info(ctl, u, &st) == GNMR_OK);
    FUZZ_CHECK(isfinite(st.log_mean) && isfinite(st.fluct) &&
               isfinite(st.last_dev) && st.fluct >= 0.0);
  }
  FUZZ_CHECK(isfinite(ctl->global_log_mean) && isfinite(ctl->global_fluct) &&
             isfinite(ctl->global_last_dev) && ctl->global_fluct >= 0.0);
  /* Above max_recovering only after gnmr_reconfigure lowered it. */
  FUZZ_CHECK(ctl->recovering <= ctl->peak_recovering &&
             ctl->peak_recovering <= ctl->n_units);
}

/* What the harness remembers between steps to check the lock rules. */
typedef struct fuzz_shadow {
  uint32_t lock_left[FUZZ_MAX_UNITS]; /* 0: on the low-cost path */
} fuzz_shadow;

/* Locks as the controller reports them (after init or a load). */
FUZZ_UNUSED static void fuzz_shadow_sync(fuzz_shadow *sh, const gnmr_ctl *ctl) {
  uint32_t u;
  fuzz_state_valid(ctl);
  memset(sh, 0, sizeof *sh);
  for (u = 0; u < ctl->n_units; u++) {
    int rec = gnmr_recovering(ctl, u);
    FUZZ_CHECK(rec == 0 || rec == 1);
    /* The remaining lock is private; the lock array holds it. */
    sh->lock_left[u] = rec ? gnmr__carve(ctl->units, ctl->n_units).lock[u] : 0;
  }
}

#define FUZZ_RISK_FLAGS                                                        \
  (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA | GNMR_FLAG_NONFINITE | GNMR_FLAG_FALL)
#define FUZZ_ALL_FLAGS                                                         \
  (FUZZ_RISK_FLAGS | GNMR_FLAG_OVER_BUDGET | GNMR_FLAG_COOLDOWN |              \
   GNMR_FLAG_WARMUP | GNMR_FLAG_RENEWED | GNMR_FLAG_GLOBAL |                   \
   GNMR_FLAG_ABSENT | GNMR_FLAG_SHIFT | GNMR_FLAG_BAND)

/* Within the error of the library's log (rule N0: < 2e-5) of fuzz_L. */
#define FUZZ_LOG_TOL 1e-4

/* Rule N0's L(x) in libm: the log of max(x, eps), eps at least DBL_MIN
   (so a config's eps above max_fall makes L(max_fall) = L(eps)). */
static double fuzz_L(double x, double eps) {
  double lo = eps > DBL_MIN ? eps : DBL_MIN;
  return log(x > lo ? x : lo);
}

/* NOISE mode, after a step that returned GNMR_OK: what rules N1-N9 say
   that needs no model of the arithmetic. k0[u]: unit u's finite
   observations before the step; kg0: the global norm's. */
static void fuzz_noise_checked(const gnmr_ctl *ctl, const float *norms,
                               const gnmr_decision *d, const uint64_t *k0,
                               uint64_t kg0, const gnmr_counters *before,
                               const gnmr_counters *after) {
  const gnmr_config *cfg = &ctl->cfg;
  gnmr_step_report rep;
  uint32_t n = ctl->n_units, u, rises = 0, falls = 0, flagged = 0;
  double lg = fuzz_L(cfg->global_ratio, cfg->eps);
  uint64_t g_settle = cfg->warmup_steps > 0 ? cfg->warmup_steps : 1;
  FUZZ_CHECK(gnmr_step_info(ctl, &rep) == GNMR_OK);
  FUZZ_CHECK(rep.global == 0 || rep.global == 1);
  FUZZ_CHECK(rep.settled <= n);
  FUZZ_CHECK(!isnan(rep.common) && rep.common >= -8.0 && rep.common <= 8.0);
  FUZZ_CHECK(rep.global_scale >= 0.0 && rep.global_scale <= 1.0);
  FUZZ_CHECK(!isnan(rep.global_norm) && rep.global_norm >= 0.0);
  /* No common view below common_min_units settled units (rule N3). */
  if (rep.settled < cfg->common_min_units) {
    FUZZ_CHECK(rep.common == 0.0 && !rep.global);
  }
  /* GLOBAL: G settled (max(warmup_steps, 1) observations: a first one has
     no mean to be read against), enough units, and the common or the
     global deviation above L(global_ratio); a common deviation above it
     with G settled is GLOBAL. A checkpoint can hold settled units and a G
     never observed: no GLOBAL then, whatever c is. */
  if (rep.global) {
    FUZZ_CHECK(kg0 >= g_settle && rep.settled >= cfg->common_min_units);
    FUZZ_CHECK(rep.common > lg - FUZZ_LOG_TOL ||
               rep.global_dev > lg - FUZZ_LOG_TOL);
  } else if (kg0 >= g_settle && rep.settled > 0 &&
             rep.settled >= cfg->common_min_units) {
    FUZZ_CHECK(!(rep.common > lg + FUZZ_LOG_TOL));
  }
  /* The global policy's scale (rule N9). */
  if (!rep.global || cfg->global_policy == GNMR_GLOBAL_NONE)
    FUZZ_CHECK(rep.global_scale == 1.0);
  if (rep.global && cfg->global_policy == GNMR_GLOBAL_SKIP)
    FUZZ_CHECK(rep.global_scale == 0.0);
  for (u = 0; u < n; u++) {
    const gnmr_decision *x = &d[u];
    int rise = (x->flags & GNMR_FLAG_RATIO) != 0;
    int fall = (x->flags & GNMR_FLAG_FALL) != 0;
    int nonfinite = (x->flags & GNMR_FLAG_NONFINITE) != 0;
    /* An absent unit (rule 0) took no part in the step. */
    if (x->flags & GNMR_FLAG_ABSENT) continue;
    /* GLOBAL on every other unit of a GLOBAL step, on none otherwise. */
    FUZZ_CHECK(!(x->flags & GNMR_FLAG_GLOBAL) == !rep.global);
    FUZZ_CHECK(!(x->flags & GNMR_FLAG_DELTA));
    FUZZ_CHECK(!(rise && fall));
    FUZZ_CHECK(!(nonfinite && (rise || fall)));
    if (!cfg->two_sided) FUZZ_CHECK(!fall);
    rises += (uint32_t)rise;
    falls += (uint32_t)fall;
    flagged += (uint32_t)(rise || fall || nonfinite);
    if (nonfinite) continue;
    /* A finite unit: e finite, ratio exp(dr) >= 0 (+inf where g over
       exp(mu) is past the double range); the rule's conditions (N4) on
       d = dr - c, dr read back as log(ratio). */
    FUZZ_CHECK(!isnan(x->ratio) && x->ratio >= 0.0 && isfinite(x->delta));
    if (rise || fall) {
      FUZZ_CHECK(k0[u] >= cfg->warmup_steps && k0[u] > 0);
      FUZZ_CHECK(x->score >= 1.0);
    } else {
      FUZZ_CHECK(x->score == 0.0);
    }
    if (k0[u] < cfg->warmup_steps)
      FUZZ_CHECK((x->flags & GNMR_FLAG_WARMUP) &&
                 !(x->flags & GNMR_FLAG_SHIFT));
    if (k0[u] >= cfg->warmup_steps) FUZZ_CHECK(!(x->flags & GNMR_FLAG_WARMUP));
    if (rise)
      FUZZ_CHECK(x->delta > 0.0 &&
                 log(x->ratio) - rep.common >
                     fuzz_L(cfg->min_rise, cfg->eps) - FUZZ_LOG_TOL);
    if (fall)
      FUZZ_CHECK(x->delta < 0.0 &&
                 log(x->ratio) - rep.common <
                     fuzz_L(cfg->max_fall, cfg->eps) + FUZZ_LOG_TOL);
    if (k0[u] == 0) FUZZ_CHECK(x->ratio == 1.0 && x->delta == 0.0);
    /* Scale (N9): the unit's own, times the global policy's. */
    if (!rise && !fall) {
      FUZZ_CHECK(x->scale == rep.global_scale);
    } else if (cfg->spike_policy == GNMR_SPIKE_SKIP) {
      FUZZ_CHECK(x->scale == 0.0);
    } else if (cfg->spike_policy == GNMR_SPIKE_PASS || fall) {
      FUZZ_CHECK(x->scale == rep.global_scale); /* never scaled up */
    } else {
      FUZZ_CHECK(x->scale <= rep.global_scale);
    }
    (void)norms;
  }
  FUZZ_CHECK(rep.rises == rises && rep.falls == falls);
  FUZZ_CHECK(rep.flagged == flagged);
  FUZZ_CHECK(after->falls == before->falls + falls);
  FUZZ_CHECK(after->global_steps == before->global_steps + rep.global);
}

static int fuzz_has_negative(const float *norms, uint32_t n) {
  uint32_t u;
  for (u = 0; u < n; u++)
    if (isfinite(norms[u]) && norms[u] < 0.0f) return 1;
  return 0;
}

/* One gnmr_step with every per-step invariant checked. Returns its rc. */
/* A unit's band (rule 10) before a step. */
typedef struct fuzz_band {
  double centre, dev;
  uint32_t seen, run;
} fuzz_band;

/* Rule 10 after a step that returned GNMR_OK, for unit u with norm g,
   flags and its band b before the step: the BAND flag, the band's count
   and run as the rule writes them, centre and deviation finite. Returns 1
   if the unit may take or keep a slot (always, with the band off). */
static int fuzz_band_checked(const gnmr_ctl *ctl, uint32_t u, float g,
                             uint32_t flags, const fuzz_band *b) {
  const gnmr_config *cfg = &ctl->cfg;
  const int risky = (flags & FUZZ_RISK_FLAGS) != 0;
  gnmr_unit_state st;
  uint32_t run = b->run, seen = b->seen;
  int above = 2, ok;
  FUZZ_CHECK(gnmr_unit_info(ctl, u, &st) == GNMR_OK);
  if (cfg->band_k == 0.0) {
    FUZZ_CHECK(!(flags & GNMR_FLAG_BAND) && st.band_seen == 0 &&
               st.band_run == 0 && st.band_centre == 0.0 && st.band_dev == 0.0);
    return 1;
  }
  FUZZ_CHECK(isfinite(st.band_centre) && isfinite(st.band_dev) &&
             st.band_dev >= 0.0);
  if (flags & GNMR_FLAG_ABSENT) { /* rule 0: nothing learned, run kept */
    FUZZ_CHECK(st.band_seen == seen && st.band_run == run &&
               !(flags & GNMR_FLAG_BAND));
    return 0;
  }
  if (isfinite(g)) {
    const double eps = cfg->eps > DBL_MIN ? cfg->eps : DBL_MIN;
    const double l = gnmr__log((double)g, eps);
    const double v = b->dev > 0.1 ? b->dev : 0.1;
    const double half = gnmr__mul(cfg->band_k, v);
    above = seen >= cfg->warmup_steps && l > b->centre + half
                ? (l - b->centre >= 4.605170185988091 ? 2 : 1)
                : 0;
    if (seen < UINT32_MAX) seen++;
  }
  run = risky && above ? (run < cfg->band_steps ? run + 1 : run) : 0;
  ok = run >= cfg->band_steps || (risky && above == 2);
  FUZZ_CHECK(st.band_seen == seen && st.band_run == run);
  FUZZ_CHECK(!(flags & GNMR_FLAG_BAND) == !(risky && !ok));
  return ok;
}

FUZZ_UNUSED static int fuzz_step_checked(gnmr_ctl *ctl, fuzz_shadow *sh,
                                         const float *norms, gnmr_decision *d) {
  const gnmr_config *cfg = &ctl->cfg;
  uint32_t n = ctl->n_units, u, rec_now = 0, over = 0, admitted = 0, risky = 0;
  uint32_t nonfinite = 0, held = 0, absent = 0, shifts = 0;
  gnmr_counters before, after, unit_sum;
  uint64_t k0[FUZZ_MAX_UNITS + 1], kg0 = ctl->global_k;
  double m0[FUZZ_MAX_UNITS + 1], mu0[FUZZ_MAX_UNITS + 1];
  double s0[FUZZ_MAX_UNITS + 1], p0[FUZZ_MAX_UNITS + 1];
  fuzz_band band0[FUZZ_MAX_UNITS + 1];
  int rc, over_at_start;

  FUZZ_CHECK(gnmr_counters_get(ctl, GNMR_ALL_UNITS, &before) == GNMR_OK);
  if (fuzz_has_negative(norms, n)) {
    static fuzz_snapshot snap;
    fuzz_snap(&snap, ctl, ctl->units, n);
    rc = gnmr_step(ctl, norms, d);
    FUZZ_CHECK(rc == GNMR_ENORM);
    FUZZ_CHECK(fuzz_same(&snap, ctl, ctl->units, n));
    return rc;
  }
  for (u = 0; u < n; u++) {
    gnmr_counters c;
    FUZZ_CHECK(gnmr_recovering(ctl, u) == (sh->lock_left[u] > 0));
    gnmr_unit_state st;
    FUZZ_CHECK(gnmr_counters_get(ctl, u, &c) == GNMR_OK);
    FUZZ_CHECK(gnmr_unit_info(ctl, u, &st) == GNMR_OK);
    k0[u] = c.finite_steps;
    m0[u] = st.mean;
    mu0[u] = st.log_mean;
    s0[u] = st.fluct;
    p0[u] = st.last_dev;
    band0[u].centre = st.band_centre;
    band0[u].dev = st.band_dev;
    band0[u].seen = st.band_seen;
    band0[u].run = st.band_run;
  }
  /* More units recovering than the budget (gnmr_reconfigure lowered it):
     locks that run out are not renewed. */
  over_at_start = before.recovering > cfg->max_recovering;
  rc = gnmr_step(ctl, norms, d);
  FUZZ_CHECK(rc == GNMR_OK);

  for (u = 0; u < n; u++) {
    const gnmr_decision *x = &d[u];
    int was = sh->lock_left[u] > 0, now = gnmr_recovering(ctl, u);
    int is_risky = (x->flags & FUZZ_RISK_FLAGS) != 0;
    /* rule 10: may this risky unit take or keep a slot (1 band off) */
    int band_ok = fuzz_band_checked(ctl, u, norms[u], x->flags, &band0[u]);
    /* NOISE mode: the global policy multiplies every scale on a GLOBAL
       step, where only NONFINITE units are admitted */
    int global = (x->flags & GNMR_FLAG_GLOBAL) != 0;
    if (cfg->rule == GNMR_RULE_PAPER)
      FUZZ_CHECK(!(x->flags & (GNMR_FLAG_FALL | GNMR_FLAG_GLOBAL)));
    FUZZ_CHECK(now == 0 || now == 1);
    FUZZ_CHECK((x->flags & ~(uint32_t)FUZZ_ALL_FLAGS) == 0);
    /* scale is a multiplier in [0, 1], never NaN. */
    FUZZ_CHECK(x->scale >= 0.0 && x->scale <= 1.0);
    if (!is_risky && !global) FUZZ_CHECK(x->scale == 1.0);
    if (is_risky && cfg->spike_policy == GNMR_SPIKE_PASS && !global &&
        !(x->flags & GNMR_FLAG_NONFINITE))
      FUZZ_CHECK(x->scale == 1.0);
    if (is_risky && cfg->spike_policy == GNMR_SPIKE_SKIP)
      FUZZ_CHECK(x->scale == 0.0);
    /* Rule 0: a norm of +-0 is absent, and only such a norm; nothing else
       happens to the unit but its lock counting down. By its bits: under
       DAZ (-Ofast) a subnormal compares equal to 0 but is not absent. */
    FUZZ_CHECK(!(x->flags & GNMR_FLAG_ABSENT) ==
               ((fuzz_f32_bits_of(norms[u]) & 0x7FFFFFFFu) != 0));
    if (x->flags & GNMR_FLAG_ABSENT) {
      FUZZ_CHECK(x->flags == GNMR_FLAG_ABSENT && x->scale == 1.0 &&
                 x->ratio == 0.0 && x->delta == 0.0 && x->score == 0.0 &&
                 x->action != GNMR_ACTION_RECOVER);
      absent++;
    }
    /* Rule 9: a new level, learned only when turned on, is no risk: scale
       1 (times a GLOBAL step's), no admission, a lock released. */
    if (x->flags & GNMR_FLAG_SHIFT) {
      FUZZ_CHECK(cfg->shift_steps >= 2 && !is_risky && x->score == 0.0 &&
                 (x->flags & ~(uint32_t)GNMR_FLAG_GLOBAL) == GNMR_FLAG_SHIFT);
      FUZZ_CHECK(x->action == (was ? GNMR_ACTION_RELEASE : GNMR_ACTION_KEEP));
      shifts++;
    }
    if (x->flags & GNMR_FLAG_NONFINITE) {
      FUZZ_CHECK(!isfinite(norms[u]));
      FUZZ_CHECK(x->scale == 0.0 && x->score == (double)INFINITY);
      nonfinite++;
    } else {
      FUZZ_CHECK(isfinite(norms[u]));
      FUZZ_CHECK(!isnan(x->ratio) && !isnan(x->delta) && !isnan(x->score));
    }
    if (x->flags & GNMR_FLAG_WARMUP)
      FUZZ_CHECK(
          !(x->flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA | GNMR_FLAG_FALL)));
    if ((x->flags & GNMR_FLAG_RATIO) && cfg->rule == GNMR_RULE_PAPER)
      FUZZ_CHECK(x->ratio > cfg->ratio_threshold);
    if (x->flags & GNMR_FLAG_DELTA) FUZZ_CHECK(x->delta > cfg->delta_threshold);
    if (x->flags & (GNMR_FLAG_OVER_BUDGET | GNMR_FLAG_COOLDOWN))
      FUZZ_CHECK(is_risky && x->action == GNMR_ACTION_KEEP);
    risky += (uint32_t)is_risky;
    /* The lock rules: admitted at t, high-fidelity for t+1 ... t+L. */
    switch (x->action) {
    case GNMR_ACTION_KEEP:
      FUZZ_CHECK(!was && !now && !(x->flags & GNMR_FLAG_RENEWED));
      if (x->flags & GNMR_FLAG_OVER_BUDGET) over++;
      break;
    case GNMR_ACTION_RECOVER:
      FUZZ_CHECK(!was && now && is_risky && band_ok && cfg->max_recovering > 0);
      FUZZ_CHECK(!(x->flags & (GNMR_FLAG_COOLDOWN | GNMR_FLAG_RENEWED)));
      FUZZ_CHECK(!global || (x->flags & GNMR_FLAG_NONFINITE));
      sh->lock_left[u] = cfg->lock_steps;
      admitted++;
      break;
    case GNMR_ACTION_HOLD:
      FUZZ_CHECK(was && now);
      held++;
      if (--sh->lock_left[u] == 0) {
        FUZZ_CHECK((x->flags & GNMR_FLAG_RENEWED) && is_risky && band_ok &&
                   !over_at_start);
        sh->lock_left[u] = cfg->lock_steps;
      } else {
        FUZZ_CHECK(!(x->flags & GNMR_FLAG_RENEWED));
      }
      break;
    case GNMR_ACTION_RELEASE:
      FUZZ_CHECK(was && !now && (!is_risky || !band_ok || over_at_start) &&
                 (sh->lock_left[u] == 1 || (x->flags & GNMR_FLAG_SHIFT)));
      held++;
      sh->lock_left[u] = 0;
      break;
    default: FUZZ_CHECK(0);
    }
    rec_now += (uint32_t)now;
  }

  /* The hard budget: nobody admitted beyond it, and never more units than
     before the step while above it. */
  if (admitted > 0) FUZZ_CHECK(rec_now <= cfg->max_recovering);
  FUZZ_CHECK(rec_now <= cfg->max_recovering || rec_now <= before.recovering);
  /* Work-conserving: a candidate is refused only when no slot is left. */
  if (over > 0) FUZZ_CHECK(rec_now >= cfg->max_recovering);
  /* Admission by score, ties to the lower index. */
  for (u = 0; u < n; u++) {
    uint32_t v;
    if (d[u].action != GNMR_ACTION_RECOVER) continue;
    for (v = 0; v < n; v++)
      if (d[v].flags & GNMR_FLAG_OVER_BUDGET)
        FUZZ_CHECK(d[u].score > d[v].score ||
                   (d[u].score == d[v].score && u < v));
  }

  /* Counters move exactly by what the decisions say. */
  FUZZ_CHECK(gnmr_counters_get(ctl, GNMR_ALL_UNITS, &after) == GNMR_OK);
  FUZZ_CHECK(after.steps == before.steps + 1);
  FUZZ_CHECK(after.risky == before.risky + risky);
  FUZZ_CHECK(after.nonfinite == before.nonfinite + nonfinite);
  FUZZ_CHECK(after.admissions == before.admissions + admitted);
  FUZZ_CHECK(after.over_budget == before.over_budget + over);
  FUZZ_CHECK(after.recovery_steps == before.recovery_steps + held);
  FUZZ_CHECK(after.finite_steps ==
             before.finite_steps + (n - nonfinite - absent));
  FUZZ_CHECK(after.absent == before.absent + absent);
  FUZZ_CHECK(after.level_shifts == before.level_shifts + shifts);
  FUZZ_CHECK(after.recovering == rec_now);
  FUZZ_CHECK(
      after.peak_recovering ==
      (before.peak_recovering > rec_now ? before.peak_recovering : rec_now));
  memset(&unit_sum, 0, sizeof unit_sum);
  for (u = 0; u < n; u++) {
    gnmr_counters c;
    FUZZ_CHECK(gnmr_counters_get(ctl, u, &c) == GNMR_OK);
    FUZZ_CHECK(c.recovering == (uint32_t)gnmr_recovering(ctl, u));
    unit_sum.recovering += c.recovering;
  }
  FUZZ_CHECK(unit_sum.recovering == rec_now);
  /* Rule 5 in warm-up: a norm enters the history at tau_r m at most, so
     the mean moves up to tau_r m0 at most (one product's rounding); a
     history above tau_r^2 g restarts at g, every stored ratio 1. */
  for (u = 0; cfg->rule == GNMR_RULE_PAPER && u < n; u++) {
    const double tau = cfg->ratio_threshold, g = (double)norms[u];
    gnmr_unit_state st;
    if (k0[u] == 0 || k0[u] >= cfg->warmup_steps) continue;
    FUZZ_CHECK(gnmr_unit_info(ctl, u, &st) == GNMR_OK);
    if (fuzz_normal(norms[u]) && tau * (tau * g) < m0[u])
      FUZZ_CHECK(st.mean == g && st.window_mean == 1.0);
    else
      FUZZ_CHECK(st.mean <= m0[u] || st.mean <= tau * m0[u] * (1.0 + 4e-16));
  }
  /* Rule N5 in warm-up: mu rises by a dr, a = max(1/k, 1 - history_decay),
     clamped to z_rise S on a step rule N4 would call a RISE; on any other
     e <= z_rise S or d <= L(min_rise), and dr = d + c, d = e + ar p; a
     restart moves it by dr < L(max_fall) + c < |c|. */
  if (cfg->rule == GNMR_RULE_NOISE) {
    gnmr_step_report rep;
    FUZZ_CHECK(gnmr_step_info(ctl, &rep) == GNMR_OK);
    for (u = 0; u < n; u++) {
      const double S = s0[u] > cfg->fluct_floor ? s0[u] : cfg->fluct_floor;
      const double a =
          fmax(1.0 / (double)(k0[u] + 1), 1.0 - cfg->history_decay);
      gnmr_unit_state st;
      double rise;
      if (k0[u] == 0 || k0[u] >= cfg->warmup_steps || !fuzz_normal(norms[u]))
        continue;
      FUZZ_CHECK(gnmr_unit_info(ctl, u, &st) == GNMR_OK);
      rise = a * (cfg->z_rise * S + cfg->ar * fabs(p0[u]) + fabs(rep.common) +
                  fuzz_L(cfg->min_rise, cfg->eps));
      FUZZ_CHECK(st.log_mean - mu0[u] <=
                 fmax(rise, fabs(rep.common)) + FUZZ_LOG_TOL);
    }
  }
  if (cfg->rule == GNMR_RULE_NOISE) {
    fuzz_noise_checked(ctl, norms, d, k0, kg0, &before, &after);
  } else {
    FUZZ_CHECK(after.falls == before.falls &&
               after.global_steps == before.global_steps);
  }
  fuzz_state_valid(ctl);
  return rc;
}

#endif
