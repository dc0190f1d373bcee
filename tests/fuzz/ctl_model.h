/* ctl_model.h - what the controller harnesses share: configs and norms drawn
   from the input bytes, snapshots for "a refused call changes nothing", and
   one step checked against the rules in the header's top comment (rules 1-8).

   Include after gnmr.h and fuzz.h. */
#ifndef CTL_MODEL_H
#define CTL_MODEL_H

#include <float.h>
#include <math.h>

#define FUZZ_MAX_UNITS 32u

/* Mostly valid values first (a zero byte picks entry 0), then the edges of
   the valid ranges, then invalid ones; a byte >= 0xF0 reads raw bits. */
static double fuzz_pick(fuzz_reader *r, const double *table, size_t n) {
  uint8_t sel = fuzz_u8(r);
  if (sel >= 0xF0) return fuzz_f64_bits(r);
  return table[sel % n];
}

static uint32_t fuzz_pick_u32(fuzz_reader *r, uint32_t modulo) {
  uint8_t sel = fuzz_u8(r);
  if (sel >= 0xF8) return fuzz_u32(r);
  return sel % modulo;
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
  FUZZ_CHECK(gnmr_config_validate(c) == GNMR_OK);
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
    locked += s.lock > 0;
  }
  FUZZ_CHECK(locked == ctl->recovering);
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
   GNMR_FLAG_WARMUP | GNMR_FLAG_RENEWED | GNMR_FLAG_GLOBAL)

static int fuzz_has_negative(const float *norms, uint32_t n) {
  uint32_t u;
  for (u = 0; u < n; u++)
    if (isfinite(norms[u]) && norms[u] < 0.0f) return 1;
  return 0;
}

/* One gnmr_step with every per-step invariant checked. Returns its rc. */
FUZZ_UNUSED static int fuzz_step_checked(gnmr_ctl *ctl, fuzz_shadow *sh,
                                         const float *norms, gnmr_decision *d) {
  const gnmr_config *cfg = &ctl->cfg;
  uint32_t n = ctl->n_units, u, rec_now = 0, over = 0, admitted = 0, risky = 0;
  uint32_t nonfinite = 0, held = 0;
  gnmr_counters before, after, unit_sum;
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
  for (u = 0; u < n; u++)
    FUZZ_CHECK(gnmr_recovering(ctl, u) == (sh->lock_left[u] > 0));
  /* More units recovering than the budget (gnmr_reconfigure lowered it):
     locks that run out are not renewed. */
  over_at_start = before.recovering > cfg->max_recovering;
  rc = gnmr_step(ctl, norms, d);
  FUZZ_CHECK(rc == GNMR_OK);

  for (u = 0; u < n; u++) {
    const gnmr_decision *x = &d[u];
    int was = sh->lock_left[u] > 0, now = gnmr_recovering(ctl, u);
    int is_risky = (x->flags & FUZZ_RISK_FLAGS) != 0;
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
    if (x->flags & GNMR_FLAG_NONFINITE) {
      FUZZ_CHECK(!isfinite(norms[u]));
      FUZZ_CHECK(x->scale == 0.0 && x->score == (double)INFINITY);
      nonfinite++;
    } else {
      FUZZ_CHECK(isfinite(norms[u]));
      FUZZ_CHECK(!isnan(x->ratio) && !isnan(x->delta) && !isnan(x->score));
    }
    if (x->flags & GNMR_FLAG_WARMUP)
      FUZZ_CHECK(!(x->flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)));
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
      FUZZ_CHECK(!was && now && is_risky && cfg->max_recovering > 0);
      FUZZ_CHECK(!(x->flags & (GNMR_FLAG_COOLDOWN | GNMR_FLAG_RENEWED)));
      FUZZ_CHECK(!global || (x->flags & GNMR_FLAG_NONFINITE));
      sh->lock_left[u] = cfg->lock_steps;
      admitted++;
      break;
    case GNMR_ACTION_HOLD:
      FUZZ_CHECK(was && now);
      held++;
      if (--sh->lock_left[u] == 0) {
        FUZZ_CHECK((x->flags & GNMR_FLAG_RENEWED) && is_risky &&
                   !over_at_start);
        sh->lock_left[u] = cfg->lock_steps;
      } else {
        FUZZ_CHECK(!(x->flags & GNMR_FLAG_RENEWED));
      }
      break;
    case GNMR_ACTION_RELEASE:
      FUZZ_CHECK(was && !now && (!is_risky || over_at_start) &&
                 sh->lock_left[u] == 1);
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
  FUZZ_CHECK(after.finite_steps == before.finite_steps + (n - nonfinite));
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
  fuzz_state_valid(ctl);
  return rc;
}

#endif
