/* test_ctl.c - the controller's rules, pinned one by one, a literal reference
   model over long random runs, and the checkpoint. Linked with malloc & co.
   wrapped (see the Makefile): any call from the library fails the no_heap
   test. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#include <float.h>

/* ---- no heap: link-time wrapping ---------------------------------------- */

#ifndef TEST_NO_MALLOC_WRAP
static volatile int
    heap_calls; /* volatile: gcc assumes malloc touches no global */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_malloc(size_t n) {
  heap_calls++;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  heap_calls++;
  return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  heap_calls++;
  return __real_realloc(p, n);
}
void __wrap_free(void *p) {
  heap_calls++;
  __real_free(p);
}
#endif

/* ---- helpers ------------------------------------------------------------ */

#define MAXN 64
#include "tests/fixture.h"

/* A config whose only trigger is the one a test is about. */
static gnmr_config quiet_config(void) {
  gnmr_config c = gnmr_config_paper();
  c.ratio_threshold = 1e30;
  c.delta_threshold = 1e30;
  c.history_decay = 0.9;
  c.delta_window = 4;
  c.warmup_steps = 0;
  c.max_recovering = 1;
  c.lock_steps = 3;
  c.cooldown_steps = 0;
  c.spike_policy = GNMR_SPIKE_PASS;
  return c;
}

/* Unit u's fields, gathered from the controller's arrays. */
static gnmr__unit_state unit_of(const fixture *f, uint32_t u) {
  gnmr__soa s = gnmr__carve((gnmr_slot *)f->units, f->n);
  gnmr__unit_state st;
  gnmr__unit_get(&s, f->n, u, &st);
  return st;
}

/* setup, then ten calm steps of norm 1: every mean and window entry is
   exactly 1.0, so a norm g has GNMR g and delta g - 1 exactly. */
static int settled(fixture *f, const gnmr_config *c, uint32_t n) {
  int rc = setup(f, c, n);
  while (rc == GNMR_OK && f->ctl.steps < 10) rc = step_all(f, 1.0f);
  return rc;
}

/* Unit u gets v, every other unit 1.0. */
static int step_one(fixture *f, uint32_t u, float v) {
  uint32_t i;
  for (i = 0; i < f->n; i++) f->norms[i] = 1.0f;
  f->norms[u] = v;
  return gnmr_step(&f->ctl, f->norms, f->d);
}

static int recovering_count(const gnmr_ctl *ctl) {
  uint32_t u;
  int n = 0;
  for (u = 0; u < ctl->n_units; u++) n += gnmr_recovering(ctl, u) == 1;
  return n;
}

static float random_norm(double p_spike, double p_nan) {
  double r = check_uniform();
  if (r < p_nan) {
    uint64_t kind = check_rand() % 3;
    return kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
  }
  if (r < p_nan + p_spike) return (float)(5.0 + 100.0 * check_uniform());
  return (float)(0.5 + check_uniform());
}

/* ---- configuration ------------------------------------------------------ */

TEST(default_config_is_valid) {
  gnmr_config c = gnmr_config_paper();
  EXPECT_EQ_INT(gnmr_config_check(&c, UINT32_MAX, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_config_check(NULL, UINT32_MAX, NULL), GNMR_EINVAL);
}

TEST(every_invalid_config_field_is_refused_and_changes_nothing) {
  static fixture f, before;
  const double bad_ratio[] = {1.0, 0.5, -2.0, NAN, INFINITY};
  const double bad_delta[] = {0.0, -1.0, NAN, INFINITY};
  const double bad_decay[] = {0.0, -0.5, 1.0000001, NAN, INFINITY};
  const double bad_eps[] = {0.0, -1e-9, NAN, INFINITY};
  const uint32_t bad_window[] = {0, GNMR_WINDOW_MAX + 1, 1000};
  const int bad_policy[] = {-1, 3, 100};
  gnmr_config good = gnmr_config_paper(), c;
  size_t i;
  int rc;
  REQUIRE(setup(&f, &good, 8) == GNMR_OK);
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  before = f;
#define EXPECT_REFUSED(field, values)                                          \
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {                     \
    c = good;                                                                  \
    c.field = values[i];                                                       \
    EXPECT_EQ_INT(gnmr_config_check(&c, UINT32_MAX, NULL), GNMR_ECONFIG);      \
    rc = gnmr_init(&f.ctl, &c, f.units, 8);                                    \
    EXPECT_EQ_INT(rc, GNMR_ECONFIG);                                           \
    EXPECT(memcmp(&f, &before, sizeof f) == 0);                                \
  }
  EXPECT_REFUSED(ratio_threshold, bad_ratio)
  EXPECT_REFUSED(delta_threshold, bad_delta)
  EXPECT_REFUSED(history_decay, bad_decay)
  EXPECT_REFUSED(eps, bad_eps)
  EXPECT_REFUSED(delta_window, bad_window)
  EXPECT_REFUSED(spike_policy, bad_policy)
  c = good;
  c.lock_steps = 0;
  EXPECT_EQ_INT(gnmr_init(&f.ctl, &c, f.units, 8), GNMR_ECONFIG);
  c = good;
  c.max_recovering = 9; /* more than the 8 units */
  EXPECT_EQ_INT(gnmr_config_check(&c, UINT32_MAX, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_init(&f.ctl, &c, f.units, 8), GNMR_ECONFIG);
  EXPECT_EQ_INT(gnmr_init(NULL, &good, f.units, 8), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_init(&f.ctl, NULL, f.units, 8), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_init(&f.ctl, &good, NULL, 8), GNMR_EINVAL);
  EXPECT(memcmp(&f, &before, sizeof f) == 0);
#undef EXPECT_REFUSED
}

TEST(edge_configs_are_accepted) {
  static fixture f;
  gnmr_config c = gnmr_config_paper();
  c.history_decay = 1.0;
  c.delta_window = GNMR_WINDOW_MAX;
  c.max_recovering = 0;
  c.ratio_threshold = nextafter(1.0, 2.0);
  c.delta_threshold = DBL_MIN;
  c.eps = DBL_MIN;
  EXPECT_EQ_INT(setup(&f, &c, 4), GNMR_OK);
  c.delta_window = 1;
  c.max_recovering = 4;
  EXPECT_EQ_INT(setup(&f, &c, 4), GNMR_OK);
  c.max_recovering = 0;
  EXPECT_EQ_INT(setup(&f, &c, 0), GNMR_OK); /* no units at all */
  EXPECT_EQ_INT(gnmr_step(&f.ctl, NULL, NULL), GNMR_OK);
}

/* ---- refused steps ------------------------------------------------------ */

TEST(bad_steps_are_refused_and_change_nothing) {
  static fixture f, before;
  static gnmr_ctl raw;
  gnmr_config c = gnmr_config_paper();
  const float negatives[] = {-1.0f, -FLT_MIN, -1e-45f, -FLT_MAX};
  size_t i;
  int s;
  REQUIRE(setup(&f, &c, 8) == GNMR_OK);
  for (s = 0; s < 30; s++)
    REQUIRE(step_one(&f, 3, s == 25 ? 40.0f : 1.0f) == 0);
  before = f;
  for (i = 0; i < sizeof negatives / sizeof negatives[0]; i++) {
    memcpy(f.norms, before.norms, sizeof f.norms);
    f.norms[7] = negatives[i];
    EXPECT_EQ_INT(gnmr_step(&f.ctl, f.norms, f.d), GNMR_ENORM);
    f.norms[7] = before.norms[7];
    EXPECT(memcmp(&f, &before, sizeof f) == 0);
  }
  EXPECT_EQ_INT(gnmr_step(&f.ctl, NULL, f.d), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_step(NULL, f.norms, f.d), GNMR_EINVAL);
  EXPECT(memcmp(&f, &before, sizeof f) == 0);
  memset(&raw, 0xA5, sizeof raw); /* never initialised */
  EXPECT_EQ_INT(gnmr_step(&raw, f.norms, NULL), GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_recovering_check(&raw, 0), GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_recovering_check(&f.ctl, 8), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_recovering_check(NULL, 0), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_recovering_check(&f.ctl, 7), GNMR_OK);
  /* Refused, gnmr_recovering answers the cheap path, never a code that
     reads as true where it is tested as a boolean. */
  EXPECT_EQ_INT(gnmr_recovering(&raw, 0), 0);
  EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 8), 0);
  EXPECT_EQ_INT(gnmr_recovering(NULL, 0), 0);
  /* -0.0 is not negative; -Inf is a non-finite norm, not a caller bug. */
  f.norms[7] = -0.0f;
  EXPECT_EQ_INT(gnmr_step(&f.ctl, f.norms, f.d), GNMR_OK);
  f.norms[7] = -INFINITY;
  EXPECT_EQ_INT(gnmr_step(&f.ctl, f.norms, f.d), GNMR_OK);
  EXPECT(f.d[7].flags & GNMR_FLAG_NONFINITE);
}

/* ---- signals ------------------------------------------------------------ */

/* Rule 5 holds in warm-up: a fault there enters the unit's history at
   tau_r times the mean at most, though it is not flagged or scaled, and a
   fault on the first observation, which sets the mean, is dropped on the
   next step by the restart (the history then stands above tau_r^2 times
   the calm norm). One x1000 fault at step 0 or 3 of a unit's warm-up,
   then x20 and x1000 faults every 40 steps to step 480: every fault after
   warm-up is clipped as in the same run without the early one, to within
   tol of its clipped norm, and no x20 fault passes unclipped. The same
   for NOISE mode's rules N5 and N6. Without the cap a fault at step 3
   entered the mean whole: 20x too high at the end of warm-up, the x20
   faults passed and the x1000 ones were clipped to 40x the calm norm and
   less; without the restart one at step 0 did much the same, and NOISE
   mode's unchecked warm-up left later faults clipped 2-3x too loosely. */
static double warmup_fault_norm(uint32_t t, int early_at) {
  double g = 1.0 + 0.05 * sin(0.7 * (double)t); /* calm, about 1 */
  if ((int)t == early_at) g *= 1000.0;
  if (t >= 40 && t % 40 == 0) g *= (t / 40) % 2 ? 20.0 : 1000.0;
  return g;
}

/* The scenario under c with the early fault at step `at`, beside the run
   without it: *worst, the worst relative difference of the later faults'
   clipped norms. */
static void warmup_fault_worst(const gnmr_config *c, int at, double tol,
                               double *worst) {
  static fixture clean, hit;
  uint32_t t, faults = 0;
  *worst = 0.0;
  REQUIRE(setup(&clean, c, 1) == GNMR_OK && setup(&hit, c, 1) == GNMR_OK);
  for (t = 0; t <= 480; t++) {
    const double gc = warmup_fault_norm(t, -1), gh = warmup_fault_norm(t, at);
    const double m = unit_of(&hit, 0).mean;
    REQUIRE(step_one(&clean, 0, (float)gc) == GNMR_OK);
    REQUIRE(step_one(&hit, 0, (float)gh) == GNMR_OK);
    if ((int)t == at) {
      /* not flagged nor scaled in warm-up; its history takes tau_r m */
      EXPECT(hit.d[0].flags == GNMR_FLAG_WARMUP);
      EXPECT_EQ_BITS(hit.d[0].scale, 1.0);
      if (c->rule == GNMR_RULE_PAPER && at > 0)
        EXPECT_NEAR(unit_of(&hit, 0).mean, m + (2.0 * m - m) / (at + 1.0),
                    1e-12);
    }
    if (t > c->warmup_steps && t % 40 == 0) {
      const double want = (double)(float)gc * clean.d[0].scale;
      const double got = (double)(float)gh * hit.d[0].scale;
      const double off = fabs(got / want - 1.0);
      faults++;
      EXPECT(clean.d[0].scale < 1.0 && hit.d[0].scale < 1.0);
      EXPECT(want < 2.5); /* the clean run's clip: about tau_r calm norms */
      EXPECT(off <= tol);
      if (off > *worst) *worst = off;
    }
  }
  EXPECT_EQ_INT(faults, 12 - c->warmup_steps / 40);
}

/* the early fault's share of the mean, (tau_r - 1) / k, is 2.5% at the
   first later fault and falls */
#define WARMUP_FAULT_TOL 0.05

static void warmup_fault_check(const gnmr_config *c, uint32_t warmup) {
  double worst;
  int at;
  REQUIRE(c->warmup_steps == warmup && c->spike_policy == GNMR_SPIKE_CLIP);
  for (at = 0; at <= 3; at += 3) {
    warmup_fault_worst(c, at, WARMUP_FAULT_TOL, &worst);
    printf("  early fault at step %d: the later faults' clipped norms "
           "within %.2f%% of the clean run's\n",
           at, 100.0 * worst);
  }
}

TEST(a_fault_in_warmup_does_not_poison_the_history) {
  const gnmr_config c = gnmr_config_default();
  warmup_fault_check(&c, 16);
}

TEST(noise_a_fault_in_warmup_does_not_poison_the_history) {
  const gnmr_config c = gnmr_config_noise();
  warmup_fault_check(&c, 50);
}

/* The restart itself: a warm-up history more than tau_r^2 above the norm
   (here the first observation, 4 or more times the second) restarts at
   the norm, k counting on; at tau_r^2 exactly it does not. NOISE mode: a
   step rule N4 would call a FALL restarts mu at L(g), p = 0, s kept. */
TEST(warmup_restart_sets_the_history_to_the_norm) {
  static fixture f;
  gnmr_config c = gnmr_config_default();
  gnmr__unit_state st;
  REQUIRE(c.ratio_threshold == 2.0 && c.warmup_steps == 16);
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  f.norms[0] = 1000.0f;
  f.norms[1] = 4.0f;
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  f.norms[0] = 1.0f;
  f.norms[1] = 1.0f; /* 2 (2 * 1) < 4 is false: no restart */
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  st = unit_of(&f, 0);
  EXPECT_EQ_BITS(st.mean, 1.0);
  EXPECT_EQ_INT(st.finite_steps, 2);
  EXPECT(st.window[0] == 1.0f && st.window[1] == 1.0f);
  EXPECT_EQ_BITS(st.window_sum, 2.0);
  EXPECT_EQ_INT(f.d[0].flags, GNMR_FLAG_WARMUP);
  EXPECT_EQ_BITS(f.d[0].scale, 1.0);
  EXPECT_EQ_BITS(f.d[0].ratio, 1.0 / 1000.0);
  EXPECT_EQ_BITS(unit_of(&f, 1).mean, 2.5); /* (4 + 1) / 2 */
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  EXPECT_EQ_BITS(unit_of(&f, 0).mean, 1.0);

  c = gnmr_config_noise();
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  REQUIRE(step_all(&f, 1000.0f) == GNMR_OK);
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  st = unit_of(&f, 0);
  EXPECT_EQ_BITS(st.log_mean, 0.0); /* L(1) = 0 */
  EXPECT_EQ_BITS(st.last_dev, 0.0);
  EXPECT_EQ_BITS(st.fluct, 0.0);
  EXPECT_EQ_INT(st.finite_steps, 2);
  EXPECT_EQ_INT(f.d[0].flags, GNMR_FLAG_WARMUP);
  EXPECT_EQ_BITS(f.d[0].scale, 1.0);
}

TEST(warmup_suppresses_ratio_and_delta_until_k_observations) {
  static fixture f;
  gnmr_config c = quiet_config();
  uint32_t k;
  c.ratio_threshold = 2.0;
  c.warmup_steps = 5;
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  for (k = 0; k < 5; k++) {
    /* k finite observations so far: a spike cannot be flagged yet. */
    REQUIRE(step_one(&f, 0, k == 0 ? 1.0f : 100.0f) == GNMR_OK);
    EXPECT(f.d[0].flags & GNMR_FLAG_WARMUP);
    EXPECT(!(f.d[0].flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)));
    EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_KEEP);
    EXPECT_EQ_BITS(f.d[0].scale, 1.0);
  }
  REQUIRE(step_one(&f, 0, 1e6f) == GNMR_OK);
  EXPECT(!(f.d[0].flags & GNMR_FLAG_WARMUP));
  EXPECT(f.d[0].flags & GNMR_FLAG_RATIO);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
  /* Non-finite norms are risky even in warm-up. */
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  REQUIRE(step_one(&f, 1, NAN) == GNMR_OK);
  EXPECT_EQ_INT(f.d[1].action, GNMR_ACTION_RECOVER);
}

TEST(first_observation_has_ratio_one_and_delta_zero) {
  static fixture f;
  gnmr_config c = quiet_config();
  REQUIRE(setup(&f, &c, 1) == GNMR_OK);
  REQUIRE(step_all(&f, 123.0f) == GNMR_OK);
  EXPECT_EQ_BITS(f.d[0].ratio, 1.0);
  EXPECT_EQ_BITS(f.d[0].delta, 0.0);
  EXPECT_EQ_BITS(unit_of(&f, 0).mean, 123.0); /* w = 1/1 */
}

TEST(ratio_trigger_at_and_around_the_threshold) {
  static fixture f;
  gnmr_config c = quiet_config();
  const double tau = 2.5;
  float at = 2.5f, above = nextafterf(2.5f, 3.0f), below = nextafterf(2.5f, 0);
  c.ratio_threshold = tau;
  REQUIRE(settled(&f, &c, 1) == GNMR_OK);
  REQUIRE(unit_of(&f, 0).mean == 1.0); /* so GNMR == g exactly */
  REQUIRE(step_all(&f, below) == GNMR_OK);
  EXPECT(!(f.d[0].flags & GNMR_FLAG_RATIO));
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_KEEP);
  REQUIRE(settled(&f, &c, 1) == GNMR_OK);
  REQUIRE(step_all(&f, at) == GNMR_OK);
  EXPECT_EQ_BITS(f.d[0].ratio, tau);
  EXPECT(!(f.d[0].flags & GNMR_FLAG_RATIO)); /* strictly above */
  REQUIRE(settled(&f, &c, 1) == GNMR_OK);
  REQUIRE(step_all(&f, above) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].flags, GNMR_FLAG_RATIO);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
  EXPECT_EQ_BITS(f.d[0].score, (double)above * (1.0 / tau));
}

TEST(delta_trigger_at_and_around_the_threshold) {
  static fixture f;
  gnmr_config c = quiet_config();
  const float at = 1.5f, above = nextafterf(1.5f, 2.0f);
  c.delta_threshold = 0.5;
  REQUIRE(settled(&f, &c, 1) == GNMR_OK);
  REQUIRE(step_all(&f, at) == GNMR_OK); /* delta = 1.5 - 1 = 0.5 exactly */
  EXPECT_EQ_BITS(f.d[0].delta, 0.5);
  EXPECT(!(f.d[0].flags & GNMR_FLAG_DELTA));
  REQUIRE(settled(&f, &c, 1) == GNMR_OK);
  REQUIRE(step_all(&f, above) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].flags, GNMR_FLAG_DELTA);
  EXPECT_EQ_BITS(f.d[0].score, ((double)above - 1.0) * (1.0 / 0.5));
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
}

TEST(delta_uses_the_mean_of_the_last_w_stored_ratios) {
  static fixture f;
  gnmr_config c = quiet_config();
  const float seq[] = {1.0f, 2.0f, 1.0f, 4.0f, 2.0f, 1.0f, 3.0f};
  double ratios[7], m = 0.0;
  size_t s;
  c.delta_window = 3;
  c.history_decay = 1.0; /* plain mean */
  REQUIRE(setup(&f, &c, 1) == GNMR_OK);
  for (s = 0; s < 7; s++) {
    double g = seq[s], expect_delta = 0.0;
    REQUIRE(step_all(&f, seq[s]) == GNMR_OK);
    ratios[s] = s == 0 ? 1.0 : g / m;
    if (s > 0) {
      size_t i, cnt = s < 3 ? s : 3;
      double sum = 0.0;
      for (i = s - cnt; i < s; i++) sum += (double)(float)ratios[i];
      expect_delta = ratios[s] - sum / (double)cnt;
    }
    EXPECT_EQ_BITS(f.d[0].ratio, ratios[s]);
    EXPECT_NEAR(f.d[0].delta, expect_delta, 1e-15);
    m += (g - m) / (double)(s + 1);
  }
}

TEST(history_weight_is_max_of_one_over_k_and_one_minus_beta) {
  const double decays[] = {0.3, 0.5, 0.9, 0.99, 0.999, 1.0};
  size_t i;
  for (i = 0; i < sizeof decays / sizeof decays[0]; i++) {
    static fixture f;
    gnmr_config c = quiet_config();
    double m = 0.0;
    uint64_t k;
    c.history_decay = decays[i];
    REQUIRE(setup(&f, &c, 1) == GNMR_OK);
    for (k = 1; k <= 3000; k++) {
      float g = (float)(0.5 + check_uniform());
      double w = 1.0 / (double)k;
      if (1.0 - decays[i] > w) w = 1.0 - decays[i];
      m = m + gnmr__mul(w, (double)g - m); /* unfused, as the library */
      REQUIRE(step_all(&f, g) == GNMR_OK);
      double got = unit_of(&f, 0).mean;
      if (memcmp(&m, &got, sizeof m) != 0) break;
    }
    EXPECT_EQ_BITS(unit_of(&f, 0).mean, m);
  }
}

TEST(spike_is_clamped_into_its_own_history) {
  static fixture f;
  gnmr_config c = quiet_config();
  double m;
  c.ratio_threshold = 3.0;
  REQUIRE(setup(&f, &c, 1) == GNMR_OK);
  while (f.ctl.steps < 20) REQUIRE(step_all(&f, 2.0f) == GNMR_OK);
  m = unit_of(&f, 0).mean;
  REQUIRE(step_all(&f, 1000.0f) == GNMR_OK);
  EXPECT(f.d[0].flags & GNMR_FLAG_RATIO);
  EXPECT_EQ_BITS(unit_of(&f, 0).mean, m + 0.1 * (3.0 * m - m));
  /* The window gets min(GNMR, tau_r). */
  EXPECT_EQ_BITS((double)unit_of(&f, 0).window[20 % GNMR_WINDOW_MAX], 3.0);
}

TEST(nonfinite_never_enters_the_statistics) {
  static fixture f;
  gnmr_config c = quiet_config();
  const float bad[] = {NAN, INFINITY, -INFINITY, -NAN};
  size_t i;
  c.spike_policy = GNMR_SPIKE_PASS; /* scale 0 even so */
  c.max_recovering = 0;
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  while (f.ctl.steps < 7) REQUIRE(step_all(&f, 1.25f) == GNMR_OK);
  for (i = 0; i < 4; i++) {
    gnmr__unit_state before = unit_of(&f, 0);
    REQUIRE(step_one(&f, 0, bad[i]) == GNMR_OK);
    EXPECT_EQ_BITS(unit_of(&f, 0).mean, before.mean);
    EXPECT_EQ_BITS(unit_of(&f, 0).window_sum, before.window_sum);
    EXPECT(memcmp(unit_of(&f, 0).window, before.window, sizeof before.window) ==
           0);
    EXPECT_EQ_INT(unit_of(&f, 0).finite_steps, before.finite_steps);
    EXPECT_EQ_INT(unit_of(&f, 0).nonfinite, before.nonfinite + 1);
    EXPECT(f.d[0].flags & GNMR_FLAG_NONFINITE);
    EXPECT(isinf(f.d[0].score) && f.d[0].score > 0);
    EXPECT_EQ_BITS(f.d[0].scale, 0.0);
    EXPECT_EQ_BITS(f.d[1].scale, 1.0);
  }
}

/* ---- admission and locks --------------------------------------------------
 */

TEST(admission_by_score_then_lower_index) {
  static fixture f;
  gnmr_config c = quiet_config();
  const float spike[6] = {5.0f, 10.0f, 1.0f, 10.0f, 1.0f, 20.0f};
  uint32_t u;
  c.ratio_threshold = 2.0;
  c.max_recovering = 2;
  REQUIRE(settled(&f, &c, 6) == GNMR_OK);
  memcpy(f.norms, spike, sizeof spike);
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  EXPECT_EQ_INT(f.d[5].action, GNMR_ACTION_RECOVER); /* score 10 */
  EXPECT_EQ_INT(f.d[1].action, GNMR_ACTION_RECOVER); /* score 5, index 1 */
  EXPECT_EQ_INT(f.d[3].action, GNMR_ACTION_KEEP);    /* score 5, index 3 */
  EXPECT(f.d[3].flags & GNMR_FLAG_OVER_BUDGET);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_KEEP);
  EXPECT(f.d[0].flags & GNMR_FLAG_OVER_BUDGET);
  for (u = 0; u < 6; u++)
    EXPECT_EQ_INT(gnmr_recovering(&f.ctl, u), u == 1 || u == 5);
  /* Non-finite (score +inf) beats any finite score, ties by index again. */
  REQUIRE(settled(&f, &c, 6) == GNMR_OK);
  memcpy(f.norms, spike, sizeof spike);
  f.norms[4] = NAN;
  f.norms[2] = INFINITY;
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  EXPECT_EQ_INT(f.d[2].action, GNMR_ACTION_RECOVER);
  EXPECT_EQ_INT(f.d[4].action, GNMR_ACTION_RECOVER);
  EXPECT_EQ_INT(f.d[5].action, GNMR_ACTION_KEEP);
}

TEST(admitted_at_t_recovers_for_exactly_t_plus_1_to_t_plus_l) {
  const uint32_t locks[] = {1, 2, 5};
  size_t i;
  for (i = 0; i < 3; i++) {
    static fixture f;
    gnmr_config c = quiet_config();
    uint32_t L = locks[i], j;
    c.ratio_threshold = 2.0;
    c.lock_steps = L;
    REQUIRE(settled(&f, &c, 3) == GNMR_OK);
    EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 1), 0);
    REQUIRE(step_one(&f, 1, 50.0f) == GNMR_OK); /* step t */
    EXPECT_EQ_INT(f.d[1].action, GNMR_ACTION_RECOVER);
    for (j = 1; j <= L; j++) {
      /* Before step t+j the unit is on the high-fidelity path. */
      EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 1), 1);
      REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
      EXPECT_EQ_INT(f.d[1].action,
                    j < L ? GNMR_ACTION_HOLD : GNMR_ACTION_RELEASE);
    }
    EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 1), 0);
    EXPECT_EQ_INT(unit_of(&f, 1).recovery_steps, L);
    REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
    EXPECT_EQ_INT(f.d[1].action, GNMR_ACTION_KEEP);
  }
}

TEST(renewal_keeps_the_slot) {
  static fixture f;
  gnmr_config c = quiet_config();
  uint32_t j;
  c.ratio_threshold = 2.0;
  c.lock_steps = 3;
  c.max_recovering = 1;
  REQUIRE(settled(&f, &c, 3) == GNMR_OK);
  REQUIRE(step_one(&f, 0, 50.0f) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
  for (j = 1; j <= 3; j++) {
    /* Unit 0 keeps spiking; unit 2 spikes harder from step t+2 on. */
    f.norms[0] = 1e4f;
    f.norms[1] = 1.0f;
    f.norms[2] = j >= 2 ? 1e6f : 1.0f;
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_HOLD);
    if (j >= 2) {
      EXPECT_EQ_INT(f.d[2].action, GNMR_ACTION_KEEP);
      EXPECT(f.d[2].flags & GNMR_FLAG_OVER_BUDGET);
    }
  }
  EXPECT(f.d[0].flags & GNMR_FLAG_RENEWED);
  EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 0), 1);
  EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 2), 0);
  EXPECT_EQ_INT(unit_of(&f, 0).renewals, 1);
  EXPECT_EQ_INT(unit_of(&f, 0).admissions, 1);
}

TEST(cooldown_blocks_readmission_except_for_nonfinite) {
  static fixture f;
  gnmr_config c = quiet_config();
  uint32_t j;
  c.ratio_threshold = 2.0;
  c.lock_steps = 1;
  c.cooldown_steps = 3;
  REQUIRE(settled(&f, &c, 2) == GNMR_OK);
  REQUIRE(step_one(&f, 0, 50.0f) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RELEASE);
  for (j = 1; j <= 3; j++) {
    REQUIRE(step_one(&f, 0, 1e6f) == GNMR_OK);
    EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_KEEP);
    EXPECT(f.d[0].flags & GNMR_FLAG_COOLDOWN);
    EXPECT(!(f.d[0].flags & GNMR_FLAG_OVER_BUDGET));
  }
  REQUIRE(step_one(&f, 0, 1e8f) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
  /* Non-finite ignores cooldown. */
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RELEASE);
  REQUIRE(step_one(&f, 0, NAN) == GNMR_OK);
  EXPECT_EQ_INT(f.d[0].action, GNMR_ACTION_RECOVER);
}

TEST(spike_policy_scales) {
  const int policies[] = {GNMR_SPIKE_PASS, GNMR_SPIKE_CLIP, GNMR_SPIKE_SKIP};
  size_t i;
  for (i = 0; i < 3; i++) {
    static fixture f;
    gnmr_config c = quiet_config();
    double m, g = 37.0;
    c.ratio_threshold = 3.0;
    c.delta_threshold = 0.25;
    c.spike_policy = policies[i];
    REQUIRE(setup(&f, &c, 2) == GNMR_OK);
    while (f.ctl.steps < 10)
      REQUIRE(step_all(&f, (float)(1.0 + 0.1 * (double)(f.ctl.steps % 3))) ==
              0);
    m = unit_of(&f, 0).mean;
    REQUIRE(step_one(&f, 0, (float)g) == GNMR_OK);
    EXPECT(f.d[0].flags & GNMR_FLAG_RATIO);
    if (policies[i] == GNMR_SPIKE_PASS) EXPECT_EQ_BITS(f.d[0].scale, 1.0);
    if (policies[i] == GNMR_SPIKE_SKIP) EXPECT_EQ_BITS(f.d[0].scale, 0.0);
    if (policies[i] == GNMR_SPIKE_CLIP) {
      EXPECT_EQ_BITS(f.d[0].scale, 3.0 * m / g);
      /* g * scale lands on tau_r * m (to the rounding of one product). */
      EXPECT_NEAR(g * f.d[0].scale, 3.0 * m, 3.0 * m * DBL_EPSILON);
    }
    EXPECT_EQ_BITS(f.d[1].scale, 1.0);
    /* Delta-only risk below tau_r * m: CLIP leaves the gradient alone. */
    REQUIRE(step_one(&f, 1, (float)(2.0 * unit_of(&f, 1).mean)) == GNMR_OK);
    EXPECT((f.d[1].flags & (GNMR_FLAG_DELTA | GNMR_FLAG_RATIO)) ==
           GNMR_FLAG_DELTA);
    EXPECT_EQ_BITS(f.d[1].scale, policies[i] == GNMR_SPIKE_SKIP ? 0.0 : 1.0);
  }
}

/* max_recovering = 0 admits nobody but still scales (the manual's
   "Watching"): under the default CLIP a x100 spike is clipped to tau_r
   times the mean, scale about 0.02 (watch-and-clip); under PASS only a
   non-finite unit's scale is not 1 (a monitor). */
TEST(watch_and_clip_max_recovering_zero_still_clips) {
  int pass;
  for (pass = 0; pass < 2; pass++) {
    static fixture f;
    gnmr_config c = gnmr_config_default();
    double m;
    uint32_t t;
    c.max_recovering = 0;
    if (pass) c.spike_policy = GNMR_SPIKE_PASS;
    REQUIRE(setup(&f, &c, 4) == GNMR_OK);
    for (t = 0; t < 40; t++) REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
    m = unit_of(&f, 1).mean;
    REQUIRE(step_one(&f, 1, 100.0f) == GNMR_OK);
    EXPECT(f.d[1].flags & GNMR_FLAG_RATIO);
    EXPECT(f.d[1].flags & GNMR_FLAG_OVER_BUDGET);
    EXPECT_EQ_INT(f.d[1].action, GNMR_ACTION_KEEP);
    EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 1), 0);
    if (pass) {
      EXPECT_EQ_BITS(f.d[1].scale, 1.0);
    } else {
      EXPECT_EQ_BITS(f.d[1].scale, 2.0 * m / 100.0);
      EXPECT_NEAR(f.d[1].scale, 0.02, 1e-9);
    }
    /* a NaN is zeroed either way (rule 1) */
    REQUIRE(step_one(&f, 2, NAN) == GNMR_OK);
    EXPECT_EQ_BITS(f.d[2].scale, 0.0);
    EXPECT_EQ_INT(f.d[2].action, GNMR_ACTION_KEEP);
    EXPECT_EQ_INT(gnmr_recovering(&f.ctl, 2), 0);
  }
}

TEST(max_recovering_zero_admits_nobody) {
  static fixture f;
  gnmr_config c = gnmr_config_paper();
  gnmr_counters t;
  uint32_t s, u;
  c.max_recovering = 0;
  c.warmup_steps = 2;
  REQUIRE(setup(&f, &c, 32) == GNMR_OK);
  for (s = 0; s < 500; s++) {
    for (u = 0; u < 32; u++) f.norms[u] = random_norm(0.2, 0.05);
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    for (u = 0; u < 32; u++) EXPECT_EQ_INT(f.d[u].action, GNMR_ACTION_KEEP);
    EXPECT_EQ_INT(recovering_count(&f.ctl), 0);
  }
  REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &t) == GNMR_OK);
  EXPECT_EQ_INT(t.admissions, 0);
  EXPECT_EQ_INT(t.peak_recovering, 0);
  EXPECT(t.over_budget > 100);
  EXPECT_EQ_INT(t.over_budget, t.risky);
}

/* ---- a literal reference model over long random runs ----------------------
   Written straight from the rules in gnmr.h's top comment, no cleverness: the
   window mean is recomputed from the stored ratios, admission sorts all
   candidates. */

typedef struct ref_unit {
  double m;
  float win[GNMR_WINDOW_MAX];
  uint32_t nwin;
  uint64_t k;
  uint32_t lock, cool;
} ref_unit;

static void ref_step(const gnmr_config *c, ref_unit *r, uint32_t n,
                     const float *norms, gnmr_decision *out) {
  static uint32_t cand[MAXN];
  uint32_t u, ncand = 0, rec = 0, i, j, slots;
  for (u = 0; u < n; u++) {
    double g = norms[u], ratio, delta, score, scale = 1.0;
    uint32_t flags = 0;
    int risky;
    int32_t action = GNMR_ACTION_KEEP;
    if (!isfinite(g)) {
      ratio = delta = g;
      score = INFINITY;
      flags = GNMR_FLAG_NONFINITE;
      risky = 1;
      scale = 0.0;
    } else {
      double wsum = 0.0, x, w;
      for (i = 0; i < r[u].nwin; i++) wsum += r[u].win[i];
      ratio = r[u].k == 0 ? 1.0 : g / fmax(r[u].m, c->eps);
      delta = r[u].k == 0 ? 0.0 : ratio - wsum / r[u].nwin;
      if (r[u].k < c->warmup_steps)
        flags = GNMR_FLAG_WARMUP;
      else
        flags = (ratio > c->ratio_threshold ? GNMR_FLAG_RATIO : 0u) |
                (delta > c->delta_threshold ? GNMR_FLAG_DELTA : 0u);
      risky = (flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) != 0;
      score = fmax(ratio / c->ratio_threshold, delta / c->delta_threshold);
      if (r[u].k > 0 && r[u].k < c->warmup_steps &&
          c->ratio_threshold * (c->ratio_threshold * g) < r[u].m) {
        /* rule 5 in warm-up: a history tau_r^2 above g restarts at g,
           every stored ratio 1; k counts on */
        r[u].k++;
        r[u].m = g;
        if (r[u].nwin < c->delta_window) r[u].nwin++;
        for (i = 0; i < r[u].nwin; i++) r[u].win[i] = 1.0f;
      } else {
        /* rule 5 holds in warm-up too, from the second observation on */
        x = risky || (r[u].k > 0 && r[u].k < c->warmup_steps)
                ? fmin(g, c->ratio_threshold * r[u].m)
                : g;
        if (risky && c->spike_policy == GNMR_SPIKE_SKIP) scale = 0.0;
        if (risky && c->spike_policy == GNMR_SPIKE_CLIP)
          scale = fmin(1.0, c->ratio_threshold * r[u].m / g);
        r[u].k++;
        w = fmax(1.0 / (double)r[u].k, 1.0 - c->history_decay);
        r[u].m += w * (x - r[u].m);
        if (r[u].nwin == c->delta_window) {
          memmove(r[u].win, r[u].win + 1, (r[u].nwin - 1) * sizeof(float));
          r[u].nwin--;
        }
        r[u].win[r[u].nwin++] = (float)fmin(ratio, c->ratio_threshold);
      }
    }
    if (r[u].lock > 0) {
      action = GNMR_ACTION_HOLD;
      if (--r[u].lock == 0) {
        if (risky) {
          r[u].lock = c->lock_steps;
          flags |= GNMR_FLAG_RENEWED;
        } else {
          action = GNMR_ACTION_RELEASE;
          r[u].cool = c->cooldown_steps;
        }
      }
      rec += r[u].lock > 0;
    } else {
      int cooling = r[u].cool > 0;
      if (cooling) r[u].cool--;
      if (risky && cooling && !(flags & GNMR_FLAG_NONFINITE))
        flags |= GNMR_FLAG_COOLDOWN;
      else if (risky)
        cand[ncand++] = u;
    }
    out[u].ratio = ratio;
    out[u].delta = delta;
    out[u].score = score;
    out[u].scale = scale;
    out[u].flags = flags;
    out[u].action = action;
  }
  /* Insertion sort: score descending, index ascending. */
  for (i = 1; i < ncand; i++)
    for (j = i; j > 0; j--) {
      uint32_t a = cand[j - 1], b = cand[j];
      if (out[a].score > out[b].score ||
          (out[a].score == out[b].score && a < b))
        break;
      cand[j - 1] = b;
      cand[j] = a;
    }
  slots = c->max_recovering - rec;
  for (i = 0; i < ncand; i++) {
    if (i < slots) {
      out[cand[i]].action = GNMR_ACTION_RECOVER;
      r[cand[i]].lock = c->lock_steps;
      r[cand[i]].cool = 0;
    } else {
      out[cand[i]].flags |= GNMR_FLAG_OVER_BUDGET;
    }
  }
}

static int same_value(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

TEST(long_random_runs_match_the_reference_and_respect_the_budget) {
  static fixture f;
  static ref_unit ref[MAXN];
  static gnmr_decision rd[MAXN];
  int run, mismatches = 0;
  for (run = 0; run < 24; run++) {
    gnmr_config c = gnmr_config_paper();
    uint32_t n = 1 + (uint32_t)(check_rand() % MAXN), s, u;
    c.ratio_threshold = 1.5 + 4.0 * check_uniform();
    c.delta_threshold = 0.2 + 2.0 * check_uniform();
    c.history_decay = run % 5 == 0 ? 1.0 : 0.5 + 0.5 * check_uniform();
    c.delta_window = 1 + (uint32_t)(check_rand() % GNMR_WINDOW_MAX);
    c.warmup_steps = (uint32_t)(check_rand() % 20);
    c.max_recovering = (uint32_t)(check_rand() % (n + 1));
    c.lock_steps = 1 + (uint32_t)(check_rand() % 10);
    c.cooldown_steps = (uint32_t)(check_rand() % 6);
    c.spike_policy = (int)(check_rand() % 3);
    REQUIRE(setup(&f, &c, n) == GNMR_OK);
    memset(ref, 0, sizeof ref);
    for (s = 0; s < 1500; s++) {
      uint32_t admitted = 0, rec;
      double p_spike = run % 3 == 0 ? 0.3 : 0.03;
      for (u = 0; u < n; u++) f.norms[u] = random_norm(p_spike, 0.01);
      REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
      ref_step(&c, ref, n, f.norms, rd);
      for (u = 0; u < n; u++) {
        int ok = f.d[u].action == rd[u].action && f.d[u].flags == rd[u].flags &&
                 same_value(f.d[u].ratio, rd[u].ratio) &&
                 same_value(f.d[u].delta, rd[u].delta) &&
                 same_value(f.d[u].score, rd[u].score) &&
                 same_value(f.d[u].scale, rd[u].scale);
        if (!ok && mismatches++ < 5)
          printf("  run %d step %u unit %u: action %d/%d flags %x/%x gnmr "
                 "%.17g/%.17g\n",
                 run, s, u, f.d[u].action, rd[u].action, f.d[u].flags,
                 rd[u].flags, f.d[u].ratio, rd[u].ratio);
        EXPECT(f.d[u].scale >= 0.0 && f.d[u].scale <= 1.0);
        admitted += f.d[u].action == GNMR_ACTION_RECOVER;
        if (f.d[u].action == GNMR_ACTION_RECOVER ||
            f.d[u].action == GNMR_ACTION_HOLD)
          EXPECT_EQ_INT(gnmr_recovering(&f.ctl, u), 1);
      }
      rec = (uint32_t)recovering_count(&f.ctl);
      EXPECT(rec <= c.max_recovering);
      EXPECT(admitted <= rec);
      EXPECT_EQ_INT(f.ctl.recovering, rec);
    }
    EXPECT(f.ctl.peak_recovering <= c.max_recovering);
  }
  EXPECT_EQ_INT(mismatches, 0);
}

/* The AVX-512 path steps calm units eight at a time; it must give the
   scalar rules' bits, decisions and state alike, on every kind of step. */
TEST(avx512_and_scalar_controllers_agree_bit_for_bit) {
  static fixture a, b;
  int run, best = gnmr_ctl_isa_active();
  if (gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK)
    SKIP("no AVX-512 here: nothing to compare");
  for (run = 0; run < 6; run++) {
    gnmr_config c = gnmr_config_paper();
    uint32_t s, u, n = 40 + (uint32_t)(check_rand() % 24);
    c.max_recovering = (uint32_t)(check_rand() % 6);
    c.warmup_steps = (uint32_t)(check_rand() % 30);
    c.delta_window = 1 + (uint32_t)(check_rand() % GNMR_WINDOW_MAX);
    c.history_decay = run == 0 ? 1.0 : 0.9 + 0.1 * check_uniform();
    c.spike_policy = run % 3;
    REQUIRE(setup(&a, &c, n) == GNMR_OK);
    REQUIRE(setup(&b, &c, n) == GNMR_OK);
    for (s = 0; s < 700; s++) {
      for (u = 0; u < n; u++)
        a.norms[u] = b.norms[u] = random_norm(run % 2 ? 0.02 : 0.0005, 0.002);
      REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
      REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
      REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
      REQUIRE(gnmr_step(&b.ctl, b.norms, s % 5 ? b.d : NULL) == GNMR_OK);
      if (s % 5 && memcmp(a.d, b.d, sizeof a.d[0] * n) != 0) {
        printf("  run %d: decisions differ at step %u\n", run, s);
        check__failed_here = 1;
        break;
      }
      if (memcmp(a.units, b.units, sizeof a.units[0] * n) != 0 ||
          memcmp(&a.ctl.steps, &b.ctl.steps,
                 sizeof a.ctl - offsetof(gnmr_ctl, steps)) != 0) {
        printf("  run %d: state differs after step %u\n", run, s);
        check__failed_here = 1;
        break;
      }
    }
  }
  gnmr_ctl_isa_force(best);
}

TEST(same_inputs_same_decisions_bit_for_bit) {
  static fixture a, b;
  gnmr_config c = gnmr_config_paper();
  uint32_t s, u;
  c.max_recovering = 5;
  /* Lock-step; b skips the decision array every other step. */
  REQUIRE(setup(&a, &c, MAXN) == GNMR_OK);
  REQUIRE(setup(&b, &c, MAXN) == GNMR_OK);
  for (s = 0; s < 2000; s++) {
    for (u = 0; u < MAXN; u++)
      a.norms[u] = b.norms[u] = random_norm(0.05, 0.01);
    REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
    REQUIRE(gnmr_step(&b.ctl, b.norms, s % 2 ? b.d : NULL) == GNMR_OK);
    if (s % 2) EXPECT(memcmp(a.d, b.d, sizeof a.d) == 0);
  }
  for (u = 0; u < MAXN; u++) {
    EXPECT_EQ_BITS(unit_of(&a, u).mean, unit_of(&b, u).mean);
    EXPECT_EQ_INT(unit_of(&a, u).lock, unit_of(&b, u).lock);
  }
}

TEST(counters_add_up) {
  static fixture f;
  gnmr_config c = gnmr_config_paper();
  gnmr_counters t, one;
  uint64_t sum_adm = 0, sum_rec = 0, sum_risky = 0, sum_ob = 0, sum_nf = 0;
  uint64_t seen_adm = 0, seen_nf = 0;
  uint32_t s, u;
  c.max_recovering = 3;
  c.warmup_steps = 4;
  REQUIRE(setup(&f, &c, 20) == GNMR_OK);
  for (s = 0; s < 800; s++) {
    for (u = 0; u < 20; u++) f.norms[u] = random_norm(0.1, 0.02);
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    for (u = 0; u < 20; u++) {
      seen_adm += f.d[u].action == GNMR_ACTION_RECOVER;
      seen_nf += (f.d[u].flags & GNMR_FLAG_NONFINITE) != 0;
    }
  }
  REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &t) == GNMR_OK);
  for (u = 0; u < 20; u++) {
    REQUIRE(gnmr_counters_get(&f.ctl, u, &one) == GNMR_OK);
    sum_adm += one.admissions;
    sum_rec += one.recovery_steps;
    sum_risky += one.risky;
    sum_ob += one.over_budget;
    sum_nf += one.nonfinite;
    EXPECT_EQ_INT(one.steps, 800);
    EXPECT_EQ_INT(one.finite_steps + one.nonfinite, 800);
  }
  EXPECT_EQ_INT(t.steps, 800);
  EXPECT_EQ_INT(t.admissions, sum_adm);
  EXPECT_EQ_INT(t.admissions, seen_adm);
  EXPECT_EQ_INT(t.nonfinite, seen_nf);
  EXPECT_EQ_INT(t.recovery_steps, sum_rec);
  EXPECT_EQ_INT(t.risky, sum_risky);
  EXPECT_EQ_INT(t.over_budget, sum_ob);
  EXPECT_EQ_INT(t.nonfinite, sum_nf);
  EXPECT(t.peak_recovering <= 3 && t.peak_recovering > 0);
  EXPECT_EQ_INT(gnmr_counters_get(&f.ctl, 20, &one), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_counters_get(&f.ctl, 0, NULL), GNMR_EINVAL);
}

/* ---- checkpoint ------------------------------------------------------------
 */

#define CK_N 5
#define CK_STEPS 400
static unsigned char ck_buf[1 << 14];

static gnmr_config ck_config(void) {
  gnmr_config c = gnmr_config_paper();
  c.max_recovering = 2;
  c.warmup_steps = 3;
  c.lock_steps = 4;
  c.cooldown_steps = 2;
  c.delta_window = 5;
  return c;
}

TEST(checkpoint_resume_matches_the_uninterrupted_run) {
  static fixture a, fresh;
  static float inputs[CK_STEPS][CK_N];
  static gnmr_decision want[CK_STEPS][CK_N];
  gnmr_config c = ck_config(), other = gnmr_config_paper();
  int trial;
  uint32_t s, u;
  for (s = 0; s < CK_STEPS; s++)
    for (u = 0; u < CK_N; u++) inputs[s][u] = random_norm(0.08, 0.01);
  REQUIRE(setup(&a, &c, CK_N) == GNMR_OK);
  for (s = 0; s < CK_STEPS; s++) {
    REQUIRE(gnmr_step(&a.ctl, inputs[s], want[s]) == GNMR_OK);
  }
  for (trial = 0; trial < 10; trial++) {
    uint32_t at = (uint32_t)(check_rand() % CK_STEPS);
    size_t written = 0;
    /* A fresh controller with another config: load restores ours. */
    REQUIRE(resume_load(&fresh, &c, &other, inputs[0], CK_N, at, ck_buf,
                        sizeof ck_buf, &written) == GNMR_OK);
    EXPECT_EQ_INT(written, gnmr_checkpoint_size(&fresh.ctl));
    EXPECT(memcmp(&fresh.ctl.cfg, &c, sizeof c) == 0);
    EXPECT(resume_runs_on(&fresh, inputs[0], want[0], CK_N, at, CK_STEPS));
  }
}

static void ck_saved(fixture *f, size_t *len) {
  gnmr_config c = ck_config();
  uint32_t s, u;
  setup(f, &c, CK_N);
  for (s = 0; s < 77; s++) {
    for (u = 0; u < CK_N; u++) f->norms[u] = random_norm(0.1, 0.02);
    gnmr_step(&f->ctl, f->norms, f->d);
  }
  gnmr_checkpoint_save(&f->ctl, ck_buf, sizeof ck_buf, len);
}

TEST(checkpoint_every_truncation_and_bit_flip_is_refused) {
  static fixture src, target, before;
  static unsigned char copy[1 << 14];
  gnmr_config c = gnmr_config_paper();
  size_t len, cut, bit;
  uint32_t s;
  int refused = 0, rc;
  ck_saved(&src, &len);
  REQUIRE(len == gnmr_checkpoint_size(&src.ctl));
  REQUIRE(setup(&target, &c, CK_N) == GNMR_OK);
  for (s = 0; s < 9; s++) REQUIRE(step_all(&target, 2.0f) == GNMR_OK);
  before = target;
  for (cut = 0; cut < len; cut++) {
    rc = gnmr_checkpoint_load(&target.ctl, ck_buf, cut);
    EXPECT_EQ_INT(rc, GNMR_ESIZE);
  }
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, ck_buf, len + 1), GNMR_ESIZE);
  EXPECT(memcmp(&target, &before, sizeof target) == 0);
  for (bit = 0; bit < len * 8; bit++) {
    memcpy(copy, ck_buf, len);
    copy[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    rc = gnmr_checkpoint_load(&target.ctl, copy, len);
    refused += rc < 0;
    if (rc == GNMR_OK) printf("  bit %u accepted\n", (unsigned)bit);
  }
  EXPECT_EQ_INT(refused, len * 8);
  EXPECT(memcmp(&target, &before, sizeof target) == 0);
  /* The untouched buffer still loads. */
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, ck_buf, len), GNMR_OK);
}

/* Rewrites the trailing CRC, as a writer of another version would have. */
static void ck_reseal(unsigned char *buf, size_t len) {
  unsigned char *p = buf + len - 4;
  gnmr__put_u32(p, gnmr__crc32(buf, len - 4));
}

/* Where unit 0 starts in a checkpoint. */
#define CK_V5_CRC 0x2D37D321u /* pinned: the format must not move a byte */
#define CK_V4_CRC 0x9F2283D3u /* 0.4-0.6's bytes of the same run */
#define CK_UNIT0 (GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS)

static void put_f64(unsigned char *p, double v) { gnmr__put(p, &v, 8); }
static void put_u64(unsigned char *p, uint64_t v) { gnmr__put(p, &v, 8); }

TEST(checkpoint_errors_each_have_their_own_code) {
  static fixture src, target, bigger, before;
  static unsigned char copy[1 << 14];
  gnmr_config c = gnmr_config_paper();
  size_t len, small;
  ck_saved(&src, &len);
  REQUIRE(setup(&target, &c, CK_N) == GNMR_OK);
  before = target;
  /* Another format version (with a valid checksum): 0.1's, or a later. */
  memcpy(copy, ck_buf, len);
  copy[8] = 1;
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_EVERSION);
  copy[8] = 2;
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_EVERSION);
  copy[8] = 3; /* 0.3's */
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_EVERSION);
  copy[8] = 4; /* 0.4-0.6's: no band */
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_EVERSION);
  copy[8] = 6;
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_EVERSION);
  /* Another unit count. */
  c.max_recovering = 1;
  REQUIRE(setup(&bigger, &c, CK_N + 1) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&bigger.ctl, ck_buf, len), GNMR_EMISMATCH);
  /* Valid checksum, impossible contents: a lock longer than lock_steps. */
  memcpy(copy, ck_buf, len);
  gnmr__put_u32(copy + CK_UNIT0 + GNMR__CKPT_UNIT - 16, 99);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  /* Valid checksum, invalid config (tau_r = 0.5). */
  memcpy(copy, ck_buf, len);
  put_f64(copy + 24, 0.5);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  /* Bad magic. */
  memcpy(copy, ck_buf, len);
  copy[0] = 'X';
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  EXPECT(memcmp(&target, &before, sizeof target) == 0);
  /* Save: buffer too small, NULL arguments, uninitialised controller. */
  small = 0;
  EXPECT_EQ_INT(gnmr_checkpoint_save(&src.ctl, copy, len - 1, &small),
                GNMR_ESIZE);
  EXPECT_EQ_INT(small, len);
  EXPECT_EQ_INT(gnmr_checkpoint_save(&src.ctl, copy, len, NULL), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_checkpoint_save(NULL, copy, len, &small), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, NULL, len), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_checkpoint_load(NULL, ck_buf, len), GNMR_EINVAL);
  memset(&bigger.ctl, 0, sizeof bigger.ctl);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&bigger.ctl, ck_buf, len), GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_checkpoint_size(&bigger.ctl), 0);
}

TEST(checkpoint_checksum_is_standard_crc32) {
  /* The check value of CRC-32/ISO-HDLC, so other tools can verify a file. */
  EXPECT_EQ_INT(gnmr__crc32((const unsigned char *)"123456789", 9),
                0xCBF43926u);
}

TEST(checkpoint_format_is_little_endian_field_by_field) {
  static fixture src;
  size_t len;
  double tau;
  const unsigned char *p = ck_buf;
  ck_saved(&src, &len);
  EXPECT(memcmp(ck_buf, "GNMRCKPT", 8) == 0);
  EXPECT(ck_buf[8] == 5 && ck_buf[9] == 0 && ck_buf[10] == 0);
  EXPECT(ck_buf[12] == CK_N && ck_buf[13] == 0);
  EXPECT(ck_buf[16] == GNMR_WINDOW_MAX);
  p += 24;
  gnmr__get(&p, &tau, 8);
  EXPECT_EQ_BITS(tau, src.ctl.cfg.ratio_threshold);
  /* config: 4 f64, 6 u32, 2 u32, 11 f64, 2 u32, u32, f64, u32, f64;
     totals: 11 u64, 2 u32; global: 3 f64, 1 u64; verdict: 5 f64, 5 u32;
     a unit: 2 f64, 16 f32, u64, 3 f64, 2 f64 (the band), 9 u64, 2 u64
     (rule 9's run), 2 u32, 2 u32 (the band's) */
  EXPECT_EQ_INT(GNMR__CKPT_CONFIG, 32 + 24 + 8 + 88 + 8 + 4 + 8 + 4 + 8);
  EXPECT_EQ_INT(GNMR__CKPT_TOTALS, 88 + 8 + 32 + 40 + 20);
  EXPECT_EQ_INT(GNMR__CKPT_UNIT, 16 + 64 + 8 + 24 + 16 + 72 + 16 + 8 + 8);
  EXPECT_EQ_INT(len, 24 + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS +
                         CK_N * GNMR__CKPT_UNIT + 4);
}

TEST(checkpoint_of_extreme_thresholds_round_trips) {
  /* tau_r just above 1 stores ratios that round up past it as floats, and a
     tau_r beyond the float range must not store +inf. */
  const double taus[] = {1.0000001, 1e300};
  size_t i;
  for (i = 0; i < 2; i++) {
    static fixture f, g;
    gnmr_config c = quiet_config();
    size_t len;
    uint32_t s;
    c.ratio_threshold = taus[i];
    c.warmup_steps = 1000; /* nothing flagged: ratios reach the window raw */
    REQUIRE(setup(&f, &c, 2) == GNMR_OK);
    /* m = 0, then 3e38 / eps: a ratio far past the float range. */
    for (s = 0; s < 3; s++)
      REQUIRE(step_all(&f, s == 0 ? 0.0f : s % 2 ? 3e38f : 1.0f) == GNMR_OK);
    for (s = 0; s < GNMR_WINDOW_MAX; s++)
      EXPECT(isfinite(unit_of(&f, 0).window[s]));
    EXPECT(isfinite(unit_of(&f, 0).window_sum));
    REQUIRE(gnmr_checkpoint_save(&f.ctl, ck_buf, sizeof ck_buf, &len) == 0);
    REQUIRE(setup(&g, &c, 2) == GNMR_OK);
    EXPECT_EQ_INT(gnmr_checkpoint_load(&g.ctl, ck_buf, len), GNMR_OK);
  }
}

TEST(checkpoint_refuses_state_a_step_cannot_reach) {
  static fixture src, target;
  static unsigned char copy[1 << 14];
  gnmr_config c = gnmr_config_paper();
  const size_t unit0 = CK_UNIT0;
  size_t len;
  ck_saved(&src, &len);
  REQUIRE(setup(&target, &c, CK_N) == GNMR_OK);
  /* A window sum unrelated to the window. */
  memcpy(copy, ck_buf, len);
  put_f64(copy + unit0 + 8, 12345.0);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  /* A count no run can reach (k + 1 would wrap in the end). */
  memcpy(copy, ck_buf, len);
  put_u64(copy + unit0 + 16 + 4 * GNMR_WINDOW_MAX, UINT64_MAX);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  /* A negative mean. */
  memcpy(copy, ck_buf, len);
  put_f64(copy + unit0, -1.0);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
}

/* NOISE mode: the global norm G observes every step on which any unit does,
   so a unit with more observations than G is no state a run can reach (it
   read as settled units beside a G never observed: a fuzzer's find). */
TEST(checkpoint_refuses_units_ahead_of_the_global_norm) {
  static fixture src, target, before;
  static unsigned char copy[1 << 14];
  gnmr_config c = gnmr_config_noise();
  /* G's k: after the totals (11 u64, 2 u32) and G's mean, s and p. */
  const size_t global_k = GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + 96 + 24;
  size_t len;
  uint32_t s;
  c.warmup_steps = 0;
  REQUIRE(setup(&src, &c, CK_N) == GNMR_OK);
  for (s = 0; s < 3; s++) REQUIRE(step_all(&src, 1.0f + (float)s) == GNMR_OK);
  REQUIRE(src.ctl.global_k == 3);
  REQUIRE(gnmr_checkpoint_save(&src.ctl, ck_buf, sizeof ck_buf, &len) == 0);
  REQUIRE(setup(&target, &c, CK_N) == GNMR_OK);
  before = target;
  memcpy(copy, ck_buf, len);
  put_u64(copy + global_k, 2);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  put_u64(copy + global_k, 0);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_ECORRUPT);
  EXPECT(memcmp(&target, &before, sizeof target) == 0);
  /* G ahead of every unit is a run's state (steps with only some units
     finite); the same bytes with G's k as saved load. */
  put_u64(copy + global_k, 4);
  ck_reseal(copy, len);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, copy, len), GNMR_OK);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&target.ctl, ck_buf, len), GNMR_OK);
  EXPECT(target.ctl.global_k == 3);
}

/* ---- reconfigure -------------------------------------------------------- */

/* The 0.1 abort: max_recovering set to 0 by hand while a unit recovers.
   By hand it is refused; through gnmr_reconfigure it is defined. */
TEST(max_recovering_zeroed_mid_recovery_refused_by_hand_defined_by_api) {
  static fixture f;
  gnmr_config c = quiet_config(), z;
  uint32_t j;
  c.ratio_threshold = 2.0;
  c.lock_steps = 4;
  REQUIRE(settled(&f, &c, 3) == GNMR_OK);
  REQUIRE(step_one(&f, 1, 50.0f) == GNMR_OK);
  REQUIRE(gnmr_recovering(&f.ctl, 1) == 1);
  f.ctl.cfg.max_recovering = 0;
  EXPECT_EQ_INT(step_all(&f, 1.0f), GNMR_ESTATE);
  f.ctl.cfg.max_recovering = 1;
  z = f.ctl.cfg;
  z.max_recovering = 0;
  REQUIRE(gnmr_reconfigure(&f.ctl, &z) == GNMR_OK);
  EXPECT(memcmp(&f.ctl.cfg, &z, sizeof z) == 0);
  /* Unit 1 keeps spiking: its lock runs out and is not renewed; nobody
     is admitted. */
  for (j = 1; j <= 4; j++) {
    REQUIRE(step_one(&f, 1, 1e4f) == GNMR_OK);
    EXPECT_EQ_INT(f.d[1].action,
                  j < 4 ? GNMR_ACTION_HOLD : GNMR_ACTION_RELEASE);
  }
  for (j = 0; j < 10; j++) {
    REQUIRE(step_one(&f, j % 3, 1e4f) == GNMR_OK);
    EXPECT_EQ_INT(recovering_count(&f.ctl), 0);
    EXPECT(f.d[j % 3].flags & (GNMR_FLAG_OVER_BUDGET | GNMR_FLAG_COOLDOWN));
  }
  EXPECT_EQ_INT(unit_of(&f, 1).renewals, 0);
}

TEST(budget_lowered_below_the_count_drains_then_admits) {
  static fixture f;
  gnmr_config c = quiet_config(), lower;
  gnmr_counters t;
  uint32_t s, u, before, released_total = 0;
  int admitted_when_full = 0;
  c.ratio_threshold = 2.0;
  c.lock_steps = 6;
  c.max_recovering = 4;
  REQUIRE(settled(&f, &c, 8) == GNMR_OK);
  /* Four admitted on consecutive steps: their locks end one by one. */
  for (u = 0; u < 4; u++) REQUIRE(step_one(&f, u, 50.0f) == GNMR_OK);
  REQUIRE(recovering_count(&f.ctl) == 4);
  lower = f.ctl.cfg;
  lower.max_recovering = 2;
  REQUIRE(gnmr_reconfigure(&f.ctl, &lower) == GNMR_OK);
  /* Every unit spikes every step: the locked ones would renew, the others
     want in. */
  for (s = 0; s < 12; s++) {
    before = (uint32_t)recovering_count(&f.ctl);
    for (u = 0; u < 8; u++) f.norms[u] = (float)(1e3 * (s + 2) * (u + 1));
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    for (u = 0; u < 8; u++) {
      released_total += f.d[u].action == GNMR_ACTION_RELEASE;
      if (f.d[u].action == GNMR_ACTION_RECOVER) {
        /* Only into a slot free within the new budget. */
        uint32_t held = 0, v;
        for (v = 0; v < 8; v++) held += f.d[v].action == GNMR_ACTION_HOLD;
        admitted_when_full |= held >= lower.max_recovering;
      }
      if (before > lower.max_recovering)
        EXPECT(!(f.d[u].flags & GNMR_FLAG_RENEWED));
    }
    EXPECT(recovering_count(&f.ctl) <= (int)(before > 2 ? before : 2));
  }
  EXPECT(!admitted_when_full);
  EXPECT(released_total >= 2);
  REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &t) == GNMR_OK);
  EXPECT(t.recovering <= 2 && t.recovering > 0); /* admits again */
  EXPECT_EQ_INT(t.peak_recovering, 4);
}

TEST(lock_and_cooldown_lowered_are_cut) {
  static fixture f;
  gnmr_config c = quiet_config(), lower;
  gnmr_unit_state st;
  uint32_t j;
  c.ratio_threshold = 2.0;
  c.lock_steps = 8;
  c.cooldown_steps = 9;
  REQUIRE(settled(&f, &c, 3) == GNMR_OK);
  REQUIRE(step_one(&f, 1, 50.0f) == GNMR_OK);
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 1, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.lock_left, 7);
  lower = f.ctl.cfg;
  lower.lock_steps = 3;
  REQUIRE(gnmr_reconfigure(&f.ctl, &lower) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 1, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.lock_left, 3);
  for (j = 1; j <= 3; j++) {
    REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
    EXPECT_EQ_INT(f.d[1].action,
                  j < 3 ? GNMR_ACTION_HOLD : GNMR_ACTION_RELEASE);
  }
  REQUIRE(gnmr_unit_info(&f.ctl, 1, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.cooldown_left, 9);
  lower.cooldown_steps = 2;
  REQUIRE(gnmr_reconfigure(&f.ctl, &lower) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 1, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.cooldown_left, 2);
  /* Raised: what runs keeps its count. */
  lower.cooldown_steps = 20;
  REQUIRE(gnmr_reconfigure(&f.ctl, &lower) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 1, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.cooldown_left, 2);
}

/* Calm inputs never flag, so the history does not depend on W: a
   controller switched to W at a lap of the ring decides from then on
   exactly as one configured with W from the start. */
TEST(window_changed_is_re_derived_from_the_ring) {
  const uint32_t windows[] = {1, 3, 7, GNMR_WINDOW_MAX};
  size_t i;
  for (i = 0; i < 4; i++) {
    static fixture a, b;
    gnmr_config c = gnmr_config_paper(), cw;
    uint32_t s, u;
    c.max_recovering = 2;
    c.delta_window = 8;
    cw = c;
    cw.delta_window = windows[i];
    REQUIRE(setup(&a, &c, 9) == GNMR_OK);
    REQUIRE(setup(&b, &cw, 9) == GNMR_OK);
    for (s = 0; s < 3 * GNMR_WINDOW_MAX; s++) {
      for (u = 0; u < 9; u++)
        a.norms[u] = b.norms[u] = (float)(0.9 + 0.2 * check_uniform());
      REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
      REQUIRE(gnmr_step(&b.ctl, b.norms, b.d) == GNMR_OK);
    }
    REQUIRE(a.ctl.risky == 0);
    REQUIRE(gnmr_reconfigure(&a.ctl, &cw) == GNMR_OK);
    for (u = 0; u < 9; u++) {
      gnmr_unit_state sa, sb;
      REQUIRE(gnmr_unit_info(&a.ctl, u, &sa) == GNMR_OK);
      REQUIRE(gnmr_unit_info(&b.ctl, u, &sb) == GNMR_OK);
      EXPECT_EQ_BITS(sa.window_mean, sb.window_mean);
    }
    for (s = 0; s < 40; s++) {
      for (u = 0; u < 9; u++) a.norms[u] = b.norms[u] = random_norm(0.1, 0.02);
      REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
      REQUIRE(gnmr_step(&b.ctl, b.norms, b.d) == GNMR_OK);
      if (memcmp(a.d, b.d, sizeof a.d[0] * 9) != 0) {
        printf("  W = %u: differs %u steps after the switch\n",
               (unsigned)windows[i], (unsigned)s);
        check__failed_here = 1;
        break;
      }
    }
  }
}

TEST(ratio_threshold_lowered_recaps_the_stored_ratios) {
  static fixture f;
  gnmr_config c = quiet_config(), lower;
  uint32_t s, u, i, cut = 0;
  c.ratio_threshold = 10.0;
  c.delta_window = 6;
  REQUIRE(setup(&f, &c, 4) == GNMR_OK);
  for (s = 0; s < 40; s++) {
    for (u = 0; u < 4; u++) f.norms[u] = (float)(1.0 + 0.3 * (s % 5) * u);
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  }
  lower = f.ctl.cfg;
  lower.ratio_threshold = 1.25;
  REQUIRE(gnmr_reconfigure(&f.ctl, &lower) == GNMR_OK);
  for (u = 0; u < 4; u++) {
    gnmr__unit_state st = unit_of(&f, u);
    double sum = 0.0;
    for (i = 0; i < GNMR_WINDOW_MAX; i++) {
      EXPECT(st.window[i] <= (float)lower.ratio_threshold);
      cut += st.window[i] == 1.25f;
    }
    for (i = lower.delta_window; i > 0; i--)
      sum += (double)st.window[(st.finite_steps - i) % GNMR_WINDOW_MAX];
    EXPECT_EQ_BITS(st.window_sum, sum);
  }
  EXPECT(cut > 0); /* some were cut */
}

TEST(history_decay_changed_rederives_the_weight) {
  static fixture f;
  gnmr_config c = quiet_config(), other;
  gnmr_unit_state st;
  double m;
  c.history_decay = 0.99; /* weight 1/k up to k = 100 */
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
  REQUIRE(step_all(&f, 3.0f) == GNMR_OK); /* m = 2 */
  other = f.ctl.cfg;
  other.history_decay = 0.25; /* weight 0.75 from k = 2 on */
  REQUIRE(gnmr_reconfigure(&f.ctl, &other) == GNMR_OK);
  EXPECT_EQ_INT(f.ctl.full_weight_from, 2);
  REQUIRE(gnmr_unit_info(&f.ctl, 0, &st) == GNMR_OK);
  m = st.mean;
  EXPECT_EQ_BITS(m, 2.0);
  REQUIRE(step_all(&f, 4.0f) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 0, &st) == GNMR_OK);
  EXPECT_EQ_BITS(st.mean, m + 0.75 * (4.0 - m));
}

/* Every kind of reconfigure, mid-run with units locked, cooling and
   waiting: the checkpoint saved right after it (and a few steps later)
   loads into a fresh controller, which then decides as the original. */
TEST(checkpoint_after_every_kind_of_reconfigure_loads_back) {
  int kind;
  for (kind = 0; kind < 12; kind++) {
    static fixture a, b;
    gnmr_config c = ck_config(), r, other = gnmr_config_paper();
    uint32_t s, u, at;
    c.max_recovering = 4;
    c.lock_steps = 6;
    c.cooldown_steps = 5;
    c.ratio_threshold = 3.0;
    REQUIRE(setup(&a, &c, CK_N) == GNMR_OK);
    for (s = 0; s < 57; s++) {
      for (u = 0; u < CK_N; u++) a.norms[u] = random_norm(0.15, 0.02);
      REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
    }
    r = a.ctl.cfg;
    switch (kind) {
    case 0: r.max_recovering = 0; break;
    case 1: r.max_recovering = 1; break;
    case 2: r.max_recovering = CK_N; break;
    case 3: r.lock_steps = 1; break;
    case 4: r.cooldown_steps = 0; break;
    case 5: r.delta_window = 1; break;
    case 6: r.delta_window = GNMR_WINDOW_MAX; break;
    case 7: r.ratio_threshold = 1.0000001; break;
    case 8: r.history_decay = 0.5; break;
    case 9: r.history_decay = 1.0; break;
    case 10:
      r.eps = 1.0;
      r.delta_threshold = 0.1;
      r.warmup_steps = 1000;
      r.spike_policy = GNMR_SPIKE_SKIP;
      break;
    default: /* all at once */
      r.max_recovering = 1;
      r.lock_steps = 2;
      r.cooldown_steps = 1;
      r.delta_window = 3;
      r.ratio_threshold = 1.5;
      r.history_decay = 0.9;
      break;
    }
    REQUIRE(gnmr_reconfigure(&a.ctl, &r) == GNMR_OK);
    for (at = 0; at < 2; at++) {
      size_t len = 0;
      if (at) /* and after some steps under the new settings */
        for (s = 0; s < 7; s++) {
          for (u = 0; u < CK_N; u++) a.norms[u] = random_norm(0.15, 0.02);
          REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
        }
      REQUIRE(gnmr_checkpoint_save(&a.ctl, ck_buf, sizeof ck_buf, &len) ==
              GNMR_OK);
      REQUIRE(setup(&b, &other, CK_N) == GNMR_OK);
      EXPECT_EQ_INT(gnmr_checkpoint_load(&b.ctl, ck_buf, len), GNMR_OK);
      EXPECT(memcmp(&b.ctl.cfg, &r, sizeof r) == 0);
      for (s = 0; s < 30; s++) {
        for (u = 0; u < CK_N; u++)
          a.norms[u] = b.norms[u] = random_norm(0.15, 0.02);
        REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
        REQUIRE(gnmr_step(&b.ctl, b.norms, b.d) == GNMR_OK);
        if (memcmp(a.d, b.d, sizeof a.d[0] * CK_N) != 0) {
          printf("  kind %d: the loaded copy differs at step %u\n", kind, s);
          check__failed_here = 1;
          break;
        }
      }
    }
  }
}

/* What a CUDA program does: the controller and its slots moved byte for
   byte (into device memory there), units pointed at the moved slots, only
   the moved one used. It decides as the original would have. */
TEST(a_controller_moved_with_its_slots_runs_on) {
  static fixture a, b, moved;
  gnmr_config c = ck_config();
  uint32_t s, u;
  REQUIRE(setup(&a, &c, CK_N) == GNMR_OK);
  REQUIRE(setup(&b, &c, CK_N) == GNMR_OK);
  for (s = 0; s < 60; s++) {
    for (u = 0; u < CK_N; u++) a.norms[u] = b.norms[u] = random_norm(0.1, 0.02);
    REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
    REQUIRE(gnmr_step(&b.ctl, b.norms, b.d) == GNMR_OK);
  }
  memcpy(&moved.ctl, &b.ctl, sizeof b.ctl);
  memcpy(moved.units, b.units, sizeof b.units[0] * CK_N);
  moved.ctl.units = moved.units;
  memset(b.units, 0x5A, sizeof b.units); /* the old place is gone */
  for (s = 0; s < 60; s++) {
    for (u = 0; u < CK_N; u++)
      a.norms[u] = moved.norms[u] = random_norm(0.1, 0.02);
    REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
    REQUIRE(gnmr_step(&moved.ctl, moved.norms, moved.d) == GNMR_OK);
    EXPECT(memcmp(a.d, moved.d, sizeof a.d[0] * CK_N) == 0);
  }
}

/* 0.1 zeroed the controller before it copied cfg, so a re-init with the
   controller's own config came out all zeros. */
TEST(reinit_with_its_own_config_keeps_it) {
  static fixture f;
  gnmr_config c = ck_config();
  REQUIRE(settled(&f, &c, 5) == GNMR_OK);
  REQUIRE(gnmr_init(&f.ctl, &f.ctl.cfg, f.units, 5) == GNMR_OK);
  EXPECT(memcmp(&f.ctl.cfg, &c, sizeof c) == 0);
  EXPECT_EQ_INT(f.ctl.steps, 0);
  EXPECT_EQ_INT(step_all(&f, 1.0f), GNMR_OK);
}

/* ---- introspection ------------------------------------------------------ */

TEST(unit_info_reads_the_state) {
  static fixture f;
  gnmr_config c = quiet_config();
  gnmr_unit_state st;
  gnmr_counters cnt;
  c.ratio_threshold = 2.0;
  c.lock_steps = 5;
  c.cooldown_steps = 3;
  c.delta_window = 4;
  REQUIRE(setup(&f, &c, 3) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 2, &st) == GNMR_OK);
  EXPECT_EQ_BITS(st.mean, 0.0);
  EXPECT_EQ_BITS(st.window_mean, 0.0);
  EXPECT_EQ_INT(st.counters.finite_steps, 0);
  REQUIRE(step_all(&f, 2.0f) == GNMR_OK); /* ratio 1 stored */
  REQUIRE(step_all(&f, 2.0f) == GNMR_OK);
  REQUIRE(step_one(&f, 2, NAN) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 2, &st) == GNMR_OK);
  EXPECT_EQ_BITS(st.mean, 2.0);
  EXPECT_EQ_BITS(st.window_mean, 1.0);
  EXPECT_EQ_INT(st.counters.finite_steps, 2);
  EXPECT_EQ_INT(st.counters.nonfinite, 1);
  EXPECT_EQ_INT(st.counters.steps, 3);
  EXPECT_EQ_INT(st.lock_left, 5); /* admitted on the NaN */
  EXPECT_EQ_INT(st.counters.recovering, 1);
  REQUIRE(gnmr_counters_get(&f.ctl, 2, &cnt) == GNMR_OK);
  EXPECT(memcmp(&cnt, &st.counters, sizeof cnt) == 0);
  while (gnmr_recovering(&f.ctl, 2) == 1)
    REQUIRE(step_all(&f, 2.0f) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&f.ctl, 2, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.lock_left, 0);
  EXPECT_EQ_INT(st.cooldown_left, 3);
  EXPECT_EQ_INT(st.counters.recovery_steps, 5);
}

TEST(names_of_actions_and_flags) {
  char buf[GNMR_FLAGS_STRING_MAX];
  EXPECT(strcmp(gnmr_action_name(GNMR_ACTION_KEEP), "KEEP") == 0);
  EXPECT(strcmp(gnmr_action_name(GNMR_ACTION_RECOVER), "RECOVER") == 0);
  EXPECT(strcmp(gnmr_action_name(GNMR_ACTION_HOLD), "HOLD") == 0);
  EXPECT(strcmp(gnmr_action_name(GNMR_ACTION_RELEASE), "RELEASE") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_RATIO), "RATIO") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_DELTA), "DELTA") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_NONFINITE), "NONFINITE") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_OVER_BUDGET), "OVER_BUDGET") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_COOLDOWN), "COOLDOWN") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_WARMUP), "WARMUP") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_RENEWED), "RENEWED") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_FALL), "FALL") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_GLOBAL), "GLOBAL") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_ABSENT), "ABSENT") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_SHIFT), "SHIFT") == 0);
  EXPECT(strcmp(gnmr_flag_name(GNMR_FLAG_BAND), "BAND") == 0);
  EXPECT(gnmr_flag_name(1u << 12) == NULL);
  REQUIRE(gnmr_flags_string(0, buf, sizeof buf) == GNMR_OK);
  EXPECT(strcmp(buf, "") == 0);
  REQUIRE(gnmr_flags_string(GNMR_FLAG_RATIO | GNMR_FLAG_RENEWED, buf,
                            sizeof buf) == GNMR_OK);
  EXPECT(strcmp(buf, "RATIO|RENEWED") == 0);
  REQUIRE(gnmr_flags_string(GNMR_FLAG_DELTA | 0x3000u, buf, sizeof buf) ==
          GNMR_OK);
  EXPECT(strcmp(buf, "DELTA|0x3000") == 0);
  /* a known bit beside an unknown one: BAND is 1 << 11 */
  REQUIRE(gnmr_flags_string(0x1800u, buf, sizeof buf) == GNMR_OK);
  EXPECT(strcmp(buf, "BAND|0x1000") == 0);
  REQUIRE(gnmr_flags_string(0xFFFFFFFFu, buf, sizeof buf) == GNMR_OK);
  EXPECT(strcmp(buf, "RATIO|DELTA|NONFINITE|OVER_BUDGET|COOLDOWN|WARMUP|"
                     "RENEWED|FALL|GLOBAL|ABSENT|SHIFT|BAND|0xfffff000") == 0);
}

/* Version 5 without rule 10's fields (the config's last two, each unit's
   band after p and its count and run at the end): version 4 (0.4-0.6)
   bytes. A run with the band off leaves them 0. */
static size_t ck_as_version_4(const unsigned char *v5, unsigned char *v4,
                              uint32_t n) {
  const size_t config4 = GNMR__CKPT_CONFIG - 12, unit4 = 208;
  const size_t totals = GNMR__CKPT_TOTALS;
  size_t at, u, i;
  memcpy(v4, v5, 24 + config4);
  v4[8] = 4;
  for (i = 24 + config4; i < 24 + GNMR__CKPT_CONFIG; i++)
    if (i >= 24 + config4 + 4) EXPECT(v5[i] == 0); /* band_k 0: off */
  at = 24 + config4;
  memcpy(v4 + at, v5 + 24 + GNMR__CKPT_CONFIG, totals);
  at += totals;
  for (u = 0; u < n; u++) {
    const unsigned char *src = v5 + CK_UNIT0 + u * GNMR__CKPT_UNIT;
    memcpy(v4 + at, src, 112);                       /* mean ... p */
    for (i = 112; i < 128; i++) EXPECT(src[i] == 0); /* c, v */
    memcpy(v4 + at + 112, src + 128, 96); /* counters, run, lock, cooldown */
    for (i = 224; i < 232; i++) EXPECT(src[i] == 0); /* seen, run */
    at += unit4;
  }
  gnmr__put_u32(v4 + at, gnmr__crc32(v4, at));
  return at + 4;
}

/* Version 4 without rule 0's and rule 9's fields (the config's last two,
   the two last counters, each unit's run): version 3 (0.3) bytes. The
   fields taken out must hold what a run of the paper rules leaves there. */
static size_t ck_as_version_3(const unsigned char *v4, unsigned char *v3,
                              uint32_t n) {
  const size_t config3 = GNMR__CKPT_CONFIG - 24, unit3 = 176;
  const unsigned char *t4 = v4 + 24 + GNMR__CKPT_CONFIG - 12;
  size_t at, u, i;
  memcpy(v3, v4, 24 + config3);
  v3[8] = 3;
  at = 24 + config3;
  memcpy(v3 + at, t4, 72); /* steps, global_steps, the 7 counters of 0.3 */
  for (i = 72; i < 88; i++) EXPECT(t4[i] == 0); /* absent, level_shifts */
  memcpy(v3 + at + 72, t4 + 88, 8 + 32 + 60);   /* recovering, peak; G; the
                                                    verdict */
  at += 172;
  for (u = 0; u < n; u++) {
    const unsigned char *src = v4 + CK_UNIT0 - 12 + u * 208; /* v4's */
    memcpy(v3 + at, src, 168); /* mean ... p, the 7 counters */
    for (i = 168; i < 200; i++) EXPECT(src[i] == 0); /* 2 counters, run */
    memcpy(v3 + at + 168, src + 200, 8);             /* lock, cooldown */
    at += unit3;
  }
  gnmr__put_u32(v3 + at, gnmr__crc32(v3, at));
  return at + 4;
}

/* Version 3 without the step's verdict: version 2 (0.2.0) bytes. */
static size_t ck_as_version_2(const unsigned char *v3, size_t len,
                              unsigned char *v2) {
  const size_t unit0 = CK_UNIT0 - 24 - 16; /* version 3's */
  const size_t verdict = 40 + 20, at = unit0 - verdict;
  memcpy(v2, v3, at);
  v2[8] = 2;
  memcpy(v2 + at, v3 + unit0, len - 4 - unit0);
  gnmr__put_u32(v2 + len - 4 - verdict, gnmr__crc32(v2, len - 4 - verdict));
  return len - verdict;
}

/* Version 3 with the fields version 1 did not have taken out: 0.1's
   bytes for the same run, bit for bit (PAPER mode's state is 0.1's). */
static size_t ck_as_version_1(const unsigned char *v3, size_t len,
                              unsigned char *v1, uint32_t n) {
  const size_t unit1 = 144, unit3 = 176, config3 = GNMR__CKPT_CONFIG - 24;
  const size_t unit0 = CK_UNIT0 - 24 - 16; /* version 3's */
  size_t at = 0, u;
  const unsigned char *t = v3 + 24 + config3;
  memcpy(v1, v3, 24);
  v1[8] = 1;
  memcpy(v1 + 24, v3 + 24, 56); /* 0.1's config fields come first */
  at = 24 + 56;
  memcpy(v1 + at, t, 8); /* steps; then the 6 counters of 0.1 */
  memcpy(v1 + at + 8, t + 16, 48);
  memcpy(v1 + at + 56, t + 72, 8); /* recovering, peak */
  at += 64;
  for (u = 0; u < n; u++) {
    const unsigned char *src = v3 + unit0 + u * unit3;
    memcpy(v1 + at, src, 88);            /* mean, sum, window, k */
    memcpy(v1 + at + 88, src + 112, 48); /* 0.1's counters */
    memcpy(v1 + at + 136, src + 168, 8); /* lock, cooldown */
    at += unit1;
  }
  (void)len;
  gnmr__put_u32(v1 + at, gnmr__crc32(v1, at));
  return at + 4;
}

/* The checkpoint bytes of this version, for a fixed run: the field lists
   must not move a byte (a change of format bumps the version instead);
   and without the fields 0.1 did not have, 0.1's bytes. */
TEST(checkpoint_bytes_are_those_of_versions_5_4_3_2_and_1) {
  static unsigned char v1[1 << 14], v2[1 << 14], v3[1 << 14], v4[1 << 14];
  static fixture f;
  gnmr_config c = gnmr_config_paper();
  uint64_t x = 1;
  uint32_t s, u;
  size_t len = 0;
  c.max_recovering = 3;
  c.warmup_steps = 3;
  c.delta_window = 5;
  REQUIRE(setup(&f, &c, 7) == GNMR_OK);
  for (s = 0; s < 300; s++) {
    for (u = 0; u < 7; u++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      f.norms[u] = (float)(0.5 + (double)(x >> 40) / 16777216.0);
      if ((x >> 20) % 37 == 0) f.norms[u] *= 30.0f;
      if ((x >> 20) % 101 == 0) f.norms[u] = NAN;
    }
    REQUIRE(gnmr_step(&f.ctl, f.norms, NULL) == GNMR_OK);
  }
  REQUIRE(gnmr_checkpoint_save(&f.ctl, ck_buf, sizeof ck_buf, &len) == 0);
  /* (A CRC over the trailer too is the residue 0x2144DF1C of any valid
     buffer: the content is pinned by the CRC of what precedes it.) */
  EXPECT_EQ_INT(len, 2024);
  EXPECT_EQ_INT(gnmr__crc32(ck_buf, len - 4), CK_V5_CRC);
  len = ck_as_version_4(ck_buf, v4, 7);
  EXPECT_EQ_INT(len, 1844);
  EXPECT_EQ_INT(gnmr__crc32(v4, len - 4), CK_V4_CRC /* 0.6's bytes */);
  len = ck_as_version_3(v4, v3, 7);
  EXPECT_EQ_INT(len, 1592);
  EXPECT_EQ_INT(gnmr__crc32(v3, len - 4), 0x798B4918u /* 0.3's bytes */);
  EXPECT_EQ_INT(ck_as_version_2(v3, len, v2), 1532);
  EXPECT_EQ_INT(gnmr__crc32(v2, 1532 - 4), 0x7C3C5869u /* 0.2.0's bytes */);
  len = ck_as_version_1(v3, len, v1, 7);
  EXPECT_EQ_INT(len, 1156);
  EXPECT_EQ_INT(gnmr__crc32(v1, len - 4), 0x752E358Bu /* 0.1's bytes */);
}

/* ---- misc
 * -------------------------------------------------------------------- */

TEST(strerror_names_every_code) {
  int code;
  for (code = GNMR_EISA; code <= GNMR_OK; code++) {
    const char *s = gnmr_strerror(code);
    EXPECT(s && strcmp(s, "unknown error") != 0);
  }
  EXPECT(strcmp(gnmr_strerror(-1000), "unknown error") == 0);
  EXPECT(strcmp(gnmr_version(), GNMR_VERSION_STRING) == 0);
}

TEST(no_heap_in_the_controller_or_the_norms) {
#ifndef TEST_NO_MALLOC_WRAP
  static fixture f, g;
  static unsigned char buf[1 << 14];
  static float x[3 * GNMR_SUM_CHUNK + 5];
  gnmr_config c = gnmr_config_paper();
  gnmr_tensor t[2];
  gnmr_tensor_stats st;
  double sums[2];
  float norms[2];
  size_t len, i;
  uint32_t s, u;
  int before = heap_calls;
  for (i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)i * 0.5f;
  c.max_recovering = 4;
  REQUIRE(setup(&f, &c, 40) == GNMR_OK);
  REQUIRE(setup(&g, &c, 40) == GNMR_OK);
  for (s = 0; s < 300; s++) {
    for (u = 0; u < 40; u++) f.norms[u] = random_norm(0.2, 0.05);
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    (void)gnmr_recovering(&f.ctl, s % 40);
  }
  REQUIRE(gnmr_checkpoint_save(&f.ctl, buf, sizeof buf, &len) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_load(&g.ctl, buf, len) == GNMR_OK);
  t[0].data = x;
  t[0].n = sizeof x / sizeof x[0];
  t[0].dtype = GNMR_DTYPE_F32;
  t[0].unit = 0;
  t[1] = t[0];
  t[1].unit = 1;
  gnmr_stats_f32(x, t[0].n, &st);
  REQUIRE(gnmr_unit_sumsq(t, 2, sums, 2) == GNMR_OK);
  REQUIRE(gnmr_unit_norms(t, 2, norms, 2) == GNMR_OK);
  EXPECT_EQ_BITS(sums[0], st.sumsq);
  EXPECT_EQ_INT(heap_calls - before, 0);
  /* And the wrapping works: a call made here is counted. */
  {
    void *volatile p = malloc(16);
    free(p);
  }
  EXPECT_EQ_INT(heap_calls - before, 2);
#else
  SKIP("malloc wrapping off in this build");
#endif
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(default_config_is_valid),
      CHECK_CASE(every_invalid_config_field_is_refused_and_changes_nothing),
      CHECK_CASE(edge_configs_are_accepted),
      CHECK_CASE(bad_steps_are_refused_and_change_nothing),
      CHECK_CASE(warmup_suppresses_ratio_and_delta_until_k_observations),
      CHECK_CASE(a_fault_in_warmup_does_not_poison_the_history),
      CHECK_CASE(noise_a_fault_in_warmup_does_not_poison_the_history),
      CHECK_CASE(warmup_restart_sets_the_history_to_the_norm),
      CHECK_CASE(first_observation_has_ratio_one_and_delta_zero),
      CHECK_CASE(ratio_trigger_at_and_around_the_threshold),
      CHECK_CASE(delta_trigger_at_and_around_the_threshold),
      CHECK_CASE(delta_uses_the_mean_of_the_last_w_stored_ratios),
      CHECK_CASE(history_weight_is_max_of_one_over_k_and_one_minus_beta),
      CHECK_CASE(spike_is_clamped_into_its_own_history),
      CHECK_CASE(nonfinite_never_enters_the_statistics),
      CHECK_CASE(admission_by_score_then_lower_index),
      CHECK_CASE(admitted_at_t_recovers_for_exactly_t_plus_1_to_t_plus_l),
      CHECK_CASE(renewal_keeps_the_slot),
      CHECK_CASE(cooldown_blocks_readmission_except_for_nonfinite),
      CHECK_CASE(spike_policy_scales),
      CHECK_CASE(max_recovering_zero_admits_nobody),
      CHECK_CASE(watch_and_clip_max_recovering_zero_still_clips),
      CHECK_CASE(long_random_runs_match_the_reference_and_respect_the_budget),
      CHECK_CASE(avx512_and_scalar_controllers_agree_bit_for_bit),
      CHECK_CASE(same_inputs_same_decisions_bit_for_bit),
      CHECK_CASE(counters_add_up),
      CHECK_CASE(checkpoint_resume_matches_the_uninterrupted_run),
      CHECK_CASE(checkpoint_every_truncation_and_bit_flip_is_refused),
      CHECK_CASE(checkpoint_errors_each_have_their_own_code),
      CHECK_CASE(checkpoint_checksum_is_standard_crc32),
      CHECK_CASE(checkpoint_format_is_little_endian_field_by_field),
      CHECK_CASE(checkpoint_of_extreme_thresholds_round_trips),
      CHECK_CASE(checkpoint_refuses_state_a_step_cannot_reach),
      CHECK_CASE(checkpoint_refuses_units_ahead_of_the_global_norm),
      CHECK_CASE(
          max_recovering_zeroed_mid_recovery_refused_by_hand_defined_by_api),
      CHECK_CASE(budget_lowered_below_the_count_drains_then_admits),
      CHECK_CASE(lock_and_cooldown_lowered_are_cut),
      CHECK_CASE(window_changed_is_re_derived_from_the_ring),
      CHECK_CASE(ratio_threshold_lowered_recaps_the_stored_ratios),
      CHECK_CASE(history_decay_changed_rederives_the_weight),
      CHECK_CASE(checkpoint_after_every_kind_of_reconfigure_loads_back),
      CHECK_CASE(a_controller_moved_with_its_slots_runs_on),
      CHECK_CASE(reinit_with_its_own_config_keeps_it),
      CHECK_CASE(unit_info_reads_the_state),
      CHECK_CASE(names_of_actions_and_flags),
      CHECK_CASE(checkpoint_bytes_are_those_of_versions_5_4_3_2_and_1),
      CHECK_CASE(strerror_names_every_code),
      CHECK_CASE(no_heap_in_the_controller_or_the_norms)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
