/* test_rules.c - NOISE mode's rules (N0-N9) and the step-level verdict,
   pinned one by one: thresholds at and around their edges, non-finite
   norms kept out of every statistic, a spike's bounded effect, the global
   policy's scales, the checkpoint, the scalar/AVX-512 identity, switching
   modes; PAPER mode untouched by NOISE mode's fields; and the defaults as
   the header's tables give them (the README points to it), and the
   checkpoint formats the manual states are the ones the code writes. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#include <float.h>

#define MAXN 16
#include "tests/fixture.h"

/* NOISE mode, nothing admitted unless a test asks, a short warm-up. */
static gnmr_config noise_config(void) {
  gnmr_config c = gnmr_config_paper();
  c.rule = GNMR_RULE_NOISE;
  c.warmup_steps = 4;
  c.max_recovering = 0;
  c.spike_policy = GNMR_SPIKE_PASS;
  return c;
}

/* Past warm-up at norm 1: mu = L(1) = 0, s = 0, p = 0 for every unit. */
static int warm(fixture *f, const gnmr_config *c, uint32_t n) {
  uint32_t s;
  if (setup(f, c, n) != GNMR_OK) return 0;
  for (s = 0; s < c->warmup_steps; s++)
    if (step_all(f, 1.0f) != GNMR_OK) return 0;
  return 1;
}

static gnmr__soa soa(fixture *f) { return gnmr__carve(f->units, f->n); }

static double L(double x) { return gnmr__log(x, DBL_MIN); }

/* ---- rule N0: the library's own log and exp ----------------------------- */

TEST(log_is_accurate_and_increasing) {
  double prev = -INFINITY, worst = 0.0, x;
  int monotone = 1;
  for (x = 1e-30; x < 1e30; x *= 1.0007) {
    double l = L(x), err = fabs(l - log(x));
    if (err > worst) worst = err;
    if (!(l >= prev)) monotone = 0;
    prev = l;
  }
  EXPECT(worst < 2e-5);
  EXPECT(monotone);
  EXPECT_EQ_BITS(L(1.0), 0.0);
  EXPECT_EQ_BITS(L(0.0), L(DBL_MIN)); /* max(x, floor) */
}

TEST(exp_of_negative_values_is_accurate) {
  double x, worst = 0.0;
  for (x = -690.0; x <= 0.0; x += 0.013) {
    double e = gnmr__exp_neg(x), r = exp(x);
    if (r > 0.0 && fabs(e - r) / r > worst) worst = fabs(e - r) / r;
  }
  EXPECT(worst < 1e-11);
  EXPECT_EQ_BITS(gnmr__exp_neg(0.0), 1.0);
  EXPECT_EQ_BITS(gnmr__exp_neg(5.0), 1.0); /* a scale is never above 1 */
  EXPECT_EQ_BITS(gnmr__exp_neg(-800.0), 0.0);
}

#if GNMR__CTL_AVX512
/* gnmr__exp_neg8's lanes against gnmr__exp_neg, bit for bit. */
GNMR__TARGET_AVX512 static int exp8_matches(const double *x) {
  double got[8];
  int i, same = 1;
  _mm512_storeu_pd(got, gnmr__exp_neg8(_mm512_loadu_pd(x)));
  for (i = 0; i < 8; i++) {
    const double want = gnmr__exp_neg(x[i]);
    same &= memcmp(&got[i], &want, 8) == 0;
  }
  _mm256_zeroupper();
  return same;
}
#endif

TEST(exp_eight_wide_is_the_scalar_exp) {
#if GNMR__CTL_AVX512
  static const double edge[8] = {
      -0.0, 0.0, -1e-300, -693.0, -693.0000000001, -800.0, -1e300, -0.5};
  double x[8];
  int i, j;
  if (!gnmr_isa_supported(GNMR_ISA_AVX512))
    SKIP("no AVX-512 here: nothing to compare");
  EXPECT(exp8_matches(edge));
  for (i = 0; i < 4000; i++) {
    for (j = 0; j < 8; j++) x[j] = -700.0 * check_uniform();
    if (!exp8_matches(x)) {
      printf("  draw %d differs\n", i);
      check__failed_here = 1;
      break;
    }
  }
#else
  SKIP("no AVX-512 path in this build");
#endif
}

/* decision.ratio is g over the unit's level exp(mu) before the step, as in
   PAPER mode g over its mean (1 at the first observation), on either
   path: a 10x spike reads as about 10 (0.2 printed its log deviation). */
TEST(noise_ratio_is_the_norm_over_the_level) {
  static fixture f;
  gnmr_config c = noise_config();
  const int best = gnmr_ctl_isa_active();
  int path;
  for (path = 0; path < 2; path++) {
    uint32_t t, u;
    double worst = 0.0;
    if (path == 1 && gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK) break;
    if (path == 0) REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    REQUIRE(setup(&f, &c, MAXN) == GNMR_OK);
    for (t = 0; t < 80; t++) {
      double mu[MAXN];
      uint64_t k[MAXN];
      for (u = 0; u < MAXN; u++) {
        gnmr_unit_state st;
        REQUIRE(gnmr_unit_info(&f.ctl, u, &st) == GNMR_OK);
        mu[u] = st.log_mean;
        k[u] = st.counters.finite_steps;
        f.norms[u] = (float)((1.0 + 0.1 * u) * (1.0 + 0.05 * sin(0.7 * t + u)) *
                             (t == 60 && u == 3 ? 10.0 : 1.0));
      }
      REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
      for (u = 0; u < MAXN; u++) {
        const double want = k[u] == 0 ? 1.0 : f.norms[u] / exp(mu[u]);
        const double err = fabs(f.d[u].ratio / want - 1.0);
        if (err > worst) worst = err;
      }
      if (t == 60) EXPECT(f.d[3].ratio > 9.0 && f.d[3].ratio < 11.0);
      if (t == 0) EXPECT_EQ_BITS(f.d[5].ratio, 1.0);
    }
    EXPECT(worst < 5e-5); /* rule N0's L: |error| < 2e-5 */
  }
  gnmr_ctl_isa_force(best);
}

/* ---- rule N4: the thresholds at their edges ----------------------------- */

/* The flags of unit 0 for norm g, one step after warm-up (one unit: no
   common view, c = 0; mu = s = p = 0, so d = e = L(g)). */
static uint32_t flags_for(const gnmr_config *c, float g) {
  static fixture f;
  if (!warm(&f, c, 1)) return 0xFFFFFFFFu;
  f.norms[0] = g;
  if (gnmr_step(&f.ctl, f.norms, f.d) != GNMR_OK) return 0xFFFFFFFFu;
  return f.d[0].flags & (GNMR_FLAG_RATIO | GNMR_FLAG_FALL);
}

/* Floats around x: from 8 below to 8 above, each flagged as want() says;
   both answers must be seen. */
static void edge(const gnmr_config *c, float x, uint32_t flag,
                 int (*want)(double)) {
  float g = x;
  int i, seen[2] = {0, 0};
  for (i = 0; i < 8; i++) g = nextafterf(g, 0.0f);
  for (i = 0; i < 17; i++, g = nextafterf(g, INFINITY)) {
    int w = want(L((double)g));
    uint32_t got = flags_for(c, g);
    seen[w] = 1;
    if (got != (w ? flag : 0u)) {
      printf("  g = %.9g: flags %u, want %u\n", (double)g, got, w ? flag : 0u);
      check__failed_here = 1;
    }
  }
  EXPECT(seen[0] && seen[1]);
}

static int above_min_rise(double d) { return d > L(2.0); }
static int above_z_rise(double d) { return d > 4.25 * 0.5; }
static int below_max_fall(double d) { return d < L(0.5); }
static int below_z_fall(double d) { return d < -(6.0 * 0.5); }

TEST(rise_at_and_around_min_rise) {
  gnmr_config c = noise_config(); /* S = fluct_floor 0.01: min_rise binds */
  edge(&c, 2.0f, GNMR_FLAG_RATIO, above_min_rise);
  EXPECT_EQ_INT(flags_for(&c, 2.0f), 0); /* L(2) itself is not above */
}

TEST(rise_at_and_around_z_rise) {
  gnmr_config c = noise_config();
  c.fluct_floor = 0.5; /* z_rise S = 2.125 > L(2): z_rise binds */
  edge(&c, (float)exp(2.125), GNMR_FLAG_RATIO, above_z_rise);
}

TEST(fall_at_and_around_max_fall) {
  gnmr_config c = noise_config();
  edge(&c, 0.5f, GNMR_FLAG_FALL, below_max_fall);
  EXPECT_EQ_INT(flags_for(&c, 0.5f), 0);
  c.two_sided = 0; /* rises only */
  EXPECT_EQ_INT(flags_for(&c, 0.01f), 0);
}

TEST(fall_at_and_around_z_fall) {
  gnmr_config c = noise_config();
  c.fluct_floor = 0.5; /* z_fall S = 3 */
  edge(&c, (float)exp(-3.0), GNMR_FLAG_FALL, below_z_fall);
}

/* A spike at k = warmup - 1 is WARMUP only; at k = warmup, a RISE. */
TEST(warmup_flags_nothing_until_k_observations) {
  static fixture f;
  gnmr_config c = noise_config();
  uint32_t s, last;
  for (last = c.warmup_steps - 1; last <= c.warmup_steps; last++) {
    REQUIRE(setup(&f, &c, 1) == GNMR_OK);
    for (s = 0; s < last; s++) {
      REQUIRE(step_all(&f, 1.0f) == GNMR_OK);
      EXPECT_EQ_INT(f.d[0].flags, GNMR_FLAG_WARMUP);
    }
    REQUIRE(step_all(&f, 1e6f) == GNMR_OK);
    EXPECT_EQ_INT(f.d[0].flags & ~(uint32_t)GNMR_FLAG_OVER_BUDGET,
                  last < c.warmup_steps ? GNMR_FLAG_WARMUP : GNMR_FLAG_RATIO);
  }
}

/* Rule N3 with warmup_steps 0: a first observation has no mean yet, so it
   is not settled (k >= max(warmup, 1)): the first step has no common view
   and no verdict, however far the norms are from 1; the second has both.
   On every path the library has here. */
TEST(warmup_zero_settles_a_unit_after_its_first_observation) {
  static fixture f;
  gnmr_config c = noise_config();
  gnmr_step_report r;
  int best = gnmr_ctl_isa_active(), isa;
  uint32_t u;
  c.warmup_steps = 0;
  for (isa = 0; isa < 2; isa++) {
    if (gnmr_ctl_isa_force(isa ? GNMR_ISA_AVX512 : GNMR_ISA_SCALAR) != GNMR_OK)
      continue;
    REQUIRE(setup(&f, &c, 12) == GNMR_OK);
    for (u = 0; u < 12; u++) f.norms[u] = u < 7 ? 1e3f : 1.0f;
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
    EXPECT_EQ_INT(r.settled, 0);
    EXPECT_EQ_BITS(r.common, 0.0);
    EXPECT_EQ_INT(r.global, 0);
    EXPECT_EQ_INT(r.flagged, 0);
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK); /* the same norms */
    REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
    EXPECT_EQ_INT(r.settled, 12);
    EXPECT(fabs(r.common) < 1.0 / 256.0);
    EXPECT_EQ_INT(r.global, 0);
    for (u = 0; u < 12; u++) f.norms[u] *= 4.0f; /* all of them, together */
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
    EXPECT_EQ_INT(r.global, 1);
  }
  gnmr_ctl_isa_force(best);
}

/* The common part c of a step is not a unit's own fault: every unit at 1.5x
   (a hard batch) flags nothing, one unit at 3x among them does. */
TEST(common_deviation_is_taken_out_of_every_unit) {
  static fixture f;
  gnmr_config c = noise_config();
  gnmr_step_report r;
  uint32_t u;
  REQUIRE(warm(&f, &c, 12));
  for (u = 0; u < 12; u++) f.norms[u] = 1.5f;
  f.norms[5] = 4.5f;
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
  EXPECT(fabs(r.common - log(1.5)) < 1.0 / 256.0);
  EXPECT_EQ_INT(r.settled, 12);
  EXPECT_EQ_INT(r.global, 0);
  EXPECT_EQ_INT(r.rises, 1);
  for (u = 0; u < 12; u++)
    EXPECT_EQ_INT(f.d[u].flags & (GNMR_FLAG_RATIO | GNMR_FLAG_FALL),
                  u == 5 ? GNMR_FLAG_RATIO : 0u);
}

/* The median on the grid: any order of units gives the same value. */
TEST(common_deviation_does_not_depend_on_unit_order) {
  static fixture a, b;
  gnmr_config c = noise_config();
  gnmr_step_report ra, rb;
  uint32_t u, s;
  REQUIRE(warm(&a, &c, 15) && warm(&b, &c, 15));
  for (s = 0; s < 20; s++) {
    for (u = 0; u < 15; u++) {
      a.norms[u] = (float)(0.5 + 2.0 * check_uniform());
      b.norms[14 - u] = a.norms[u];
    }
    REQUIRE(gnmr_step(&a.ctl, a.norms, a.d) == GNMR_OK);
    REQUIRE(gnmr_step(&b.ctl, b.norms, b.d) == GNMR_OK);
    REQUIRE(gnmr_step_info(&a.ctl, &ra) == GNMR_OK);
    REQUIRE(gnmr_step_info(&b.ctl, &rb) == GNMR_OK);
    EXPECT_EQ_BITS(ra.common, rb.common);
    for (u = 0; u < 15; u++) EXPECT_EQ_INT(a.d[u].flags, b.d[14 - u].flags);
  }
}

/* G's sum of squares in its one fixed order (rule N3): blocks of 256, lanes
   u % 8, folded pairwise, blocks in order; a NaN unit adds nothing. Sizes
   around the block and lane edges; norms spread over 2^40 so that another
   order would round differently. */
TEST(global_norm_is_summed_in_the_documented_order) {
  static gnmr_slot units[1100];
  static float norms[1100];
  static gnmr_decision d[1100];
  static const uint32_t sizes[] = {1, 7, 9, 255, 256, 257, 1030};
  gnmr_config c = noise_config();
  gnmr_ctl ctl;
  gnmr_step_report r;
  uint32_t i, u, b, differs = 0;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const uint32_t n = sizes[i];
    double sumsq = 0.0, seq = 0.0;
    REQUIRE(gnmr_init(&ctl, &c, units, n) == GNMR_OK);
    for (u = 0; u < n; u++)
      norms[u] = (float)ldexp(1.0 + check_uniform(), (int)(u * 7919u % 40u));
    norms[n / 2] = NAN;
    for (b = 0; b < n; b += 256) {
      double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (u = b; u < n && u < b + 256; u++)
        if (u != n / 2) lane[u % 8] += (double)norms[u] * (double)norms[u];
      sumsq += ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
               ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
    for (u = 0; u < n; u++)
      if (u != n / 2) seq += (double)norms[u] * (double)norms[u];
    differs += sqrt(seq) != sqrt(sumsq);
    REQUIRE(gnmr_step(&ctl, norms, d) == GNMR_OK);
    REQUIRE(gnmr_step_info(&ctl, &r) == GNMR_OK);
    EXPECT_EQ_BITS(r.global_norm, sqrt(sumsq));
  }
  EXPECT(differs > 0); /* the inputs can tell the orders apart */
}

/* ---- GLOBAL at its edge ------------------------------------------------- */

/* Every unit at x after warm-up at 1 (8 units, c = the grid centre of
   L(x)); the verdict as rule N3 says, computed here literally. */
static void global_case(float x, int *got, int *want) {
  static fixture f;
  gnmr_config c = noise_config();
  double sumsq = 0.0, gdr, common, lg = L(2.0), dev;
  uint32_t u, q, up;
  gnmr_step_report r;
  *got = *want = -1;
  if (!warm(&f, &c, 8)) return;
  for (u = 0; u < 8; u++) {
    f.norms[u] = x;
    sumsq += (double)x * (double)x;
  }
  gdr = L(sqrt(sumsq)) - f.ctl.global_log_mean;
  dev = L((double)x);
  q = gnmr__grid(dev);
  common = ((double)q + 0.5) / 256.0 - 8.0;
  up = dev > lg ? 8u : 0u;
  *want = common > lg || (gdr > lg && (double)up >= 0.25 * 8.0);
  if (gnmr_step(&f.ctl, f.norms, f.d) != GNMR_OK ||
      gnmr_step_info(&f.ctl, &r) != GNMR_OK)
    return;
  *got = (int)r.global;
  for (u = 0; u < 8; u++)
    if (!!(f.d[u].flags & GNMR_FLAG_GLOBAL) != *got) *got = -2;
}

TEST(global_at_and_around_global_ratio) {
  float x = 1.9f;
  int got, want, seen[2] = {0, 0}, i;
  for (i = 0; i < 400 && x < 2.1f; i++, x += 0.0005f) {
    global_case(x, &got, &want);
    REQUIRE(want >= 0);
    seen[want] = 1;
    if (got != want) {
      printf("  x = %.7g: GLOBAL %d, want %d\n", (double)x, got, want);
      check__failed_here = 1;
    }
  }
  EXPECT(seen[0] && seen[1]);
  global_case(1.5f, &got, &want); /* a hard batch */
  EXPECT(got == 0 && want == 0);
  global_case(3.0f, &got, &want);
  EXPECT(got == 1 && want == 1);
}

/* On a GLOBAL step: only NONFINITE units are admitted; the global policy
   multiplies every scale; the counters count it. */
TEST(global_step_admits_only_nonfinite_and_scales_every_unit) {
  const int policies[] = {GNMR_GLOBAL_NONE, GNMR_GLOBAL_CLIP, GNMR_GLOBAL_SKIP};
  int p;
  for (p = 0; p < 3; p++) {
    static fixture f;
    gnmr_config c = noise_config();
    gnmr_step_report r;
    gnmr_counters t;
    double want_scale;
    uint32_t u;
    c.max_recovering = 4;
    c.global_policy = policies[p];
    c.spike_policy = GNMR_SPIKE_CLIP;
    REQUIRE(warm(&f, &c, 10));
    for (u = 0; u < 10; u++) f.norms[u] = 4.0f;
    f.norms[2] = 400.0f; /* a rise on top */
    f.norms[3] = NAN;
    f.norms[4] = 0.001f; /* a fall */
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
    REQUIRE(r.global == 1);
    EXPECT(r.global_dev > log(3.5) && r.global_ratio > 3.5);
    want_scale = p == 0 ? 1.0 : p == 2 ? 0.0 : 2.0 / r.global_ratio;
    EXPECT(fabs(r.global_scale - want_scale) <= 1e-4 * want_scale);
    EXPECT(r.global_scale <= 1.0);
    for (u = 0; u < 10; u++) {
      EXPECT(f.d[u].flags & GNMR_FLAG_GLOBAL);
      EXPECT_EQ_INT(f.d[u].action,
                    u == 3 ? GNMR_ACTION_RECOVER : GNMR_ACTION_KEEP);
      EXPECT(!(f.d[u].flags & GNMR_FLAG_OVER_BUDGET));
    }
    EXPECT(f.d[2].flags & GNMR_FLAG_RATIO);
    EXPECT(f.d[4].flags & GNMR_FLAG_FALL);
    /* calm units: the global factor; a FALL unit never above it (CLIP
       never scales a fall up); the rise clipped below it; NaN 0 */
    EXPECT_EQ_BITS(f.d[0].scale, r.global_scale);
    EXPECT_EQ_BITS(f.d[4].scale, r.global_scale);
    EXPECT(f.d[2].scale <= r.global_scale);
    if (p < 2) EXPECT(f.d[2].scale < r.global_scale);
    EXPECT_EQ_BITS(f.d[3].scale, 0.0);
    REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &t) == GNMR_OK);
    EXPECT_EQ_INT(t.global_steps, 1);
    EXPECT_EQ_INT(t.falls, 1);
    EXPECT_EQ_INT(t.admissions, 1);
  }
}

/* ---- rule N9: a unit's own scale ---------------------------------------- */

TEST(clip_scales_a_rise_to_its_level_and_never_a_fall_up) {
  static fixture f;
  gnmr_config c = noise_config();
  gnmr_unit_state st;
  double hi;
  c.spike_policy = GNMR_SPIKE_CLIP;
  REQUIRE(warm(&f, &c, 2));
  f.norms[0] = 50.0f;
  f.norms[1] = 0.01f;
  REQUIRE(gnmr_unit_info(&f.ctl, 0, &st) == GNMR_OK);
  hi = 4.25 * (st.fluct > c.fluct_floor ? st.fluct : c.fluct_floor);
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  EXPECT(f.d[0].flags & GNMR_FLAG_RATIO);
  EXPECT(f.d[1].flags & GNMR_FLAG_FALL);
  /* down to exp(mu + c + z_rise S) = exp(hi) here (mu = c = 0) */
  EXPECT(fabs(f.d[0].scale * 50.0 - exp(hi)) < 1e-4 * exp(hi));
  EXPECT_EQ_BITS(f.d[1].scale, 1.0);
  c.spike_policy = GNMR_SPIKE_SKIP;
  REQUIRE(warm(&f, &c, 2));
  f.norms[0] = 50.0f;
  f.norms[1] = 0.01f;
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  EXPECT_EQ_BITS(f.d[0].scale, 0.0);
  EXPECT_EQ_BITS(f.d[1].scale, 0.0);
}

/* ---- rules N1, N5-N7: what enters the statistics ------------------------ */

TEST(nonfinite_never_enters_the_statistics_or_the_global_history) {
  static fixture f;
  gnmr_config c = noise_config();
  const float bad[] = {NAN, INFINITY, -INFINITY};
  gnmr__soa s;
  uint32_t i, u, s_;
  REQUIRE(setup(&f, &c, 3) == GNMR_OK);
  for (s_ = 0; s_ < 30; s_++) {
    for (u = 0; u < 3; u++) f.norms[u] = (float)(0.8 + 0.4 * check_uniform());
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  }
  s = soa(&f);
  for (i = 0; i < 3; i++) {
    double mu = s.log_mean[0], fl = s.fluct[0], p = s.last_dev[0];
    uint64_t k = s.finite_steps[0];
    double gmu = f.ctl.global_log_mean, gs = f.ctl.global_fluct;
    uint64_t gk = f.ctl.global_k;
    gnmr_step_report r;
    f.norms[0] = bad[i];
    f.norms[1] = 1.0f;
    f.norms[2] = 2.0f;
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    EXPECT_EQ_INT(f.d[0].flags & ~(uint32_t)GNMR_FLAG_OVER_BUDGET,
                  GNMR_FLAG_NONFINITE);
    EXPECT_EQ_BITS(f.d[0].scale, 0.0);
    EXPECT_EQ_BITS(s.log_mean[0], mu);
    EXPECT_EQ_BITS(s.fluct[0], fl);
    EXPECT_EQ_BITS(s.last_dev[0], p);
    EXPECT_EQ_INT(s.finite_steps[0], k);
    /* G: the finite units' norms only */
    REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
    EXPECT_EQ_BITS(r.global_norm, sqrt(1.0 + 4.0));
    EXPECT(isfinite(f.ctl.global_log_mean) && isfinite(f.ctl.global_fluct));
    /* every norm non-finite: the global history is not touched */
    gmu = f.ctl.global_log_mean;
    gs = f.ctl.global_fluct;
    gk = f.ctl.global_k;
    for (u = 0; u < 3; u++) f.norms[u] = bad[i];
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
    EXPECT_EQ_BITS(f.ctl.global_log_mean, gmu);
    EXPECT_EQ_BITS(f.ctl.global_fluct, gs);
    EXPECT_EQ_INT(f.ctl.global_k, gk);
  }
}

/* A spike moves s by at most (1 - fluct_decay) winsor S and mu by at most
   (1 - history_decay) z_rise S; its next step is judged against the level
   before it (p is not updated by a flagged step). */
TEST(a_spike_cannot_inflate_the_fluctuation_or_the_mean) {
  static fixture f;
  gnmr_config c = noise_config();
  gnmr__soa s;
  uint32_t t;
  double mu, fl, p, S;
  REQUIRE(setup(&f, &c, 1) == GNMR_OK);
  for (t = 0; t < 400; t++) {
    f.norms[0] = (float)exp(0.1 * (check_uniform() - 0.5));
    REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  }
  s = soa(&f);
  mu = s.log_mean[0];
  fl = s.fluct[0];
  p = s.last_dev[0];
  S = fl > c.fluct_floor ? fl : c.fluct_floor;
  f.norms[0] = 1e6f;
  REQUIRE(gnmr_step(&f.ctl, f.norms, f.d) == GNMR_OK);
  EXPECT(f.d[0].flags & GNMR_FLAG_RATIO);
  EXPECT(s.fluct[0] - fl <= (1.0 - c.fluct_decay) * c.winsor * S * 1.000001);
  EXPECT(s.log_mean[0] - mu <=
         (1.0 - c.history_decay) * c.z_rise * S * 1.000001);
  EXPECT_EQ_BITS(s.last_dev[0], p);
}

/* ---- the checkpoint and the paths --------------------------------------- */

#define RUN_N 12
#define RUN_T 300
static float run_in[RUN_T][RUN_N];
static void make_inputs(void) {
  uint32_t t, u;
  for (t = 0; t < RUN_T; t++)
    for (u = 0; u < RUN_N; u++) {
      double x = exp(0.3 * (check_uniform() - 0.5)), r = check_uniform();
      if (r < 0.02) x *= 5.0 + 40.0 * check_uniform();
      if (r > 0.99) x *= 0.01;
      if (r > 0.995) x = (double)NAN;
      if (t % 97 == 50) x *= 4.0; /* a global event */
      run_in[t][u] = (float)x;
    }
}

static gnmr_config run_config(void) {
  gnmr_config c = noise_config();
  c.max_recovering = 3;
  c.lock_steps = 4;
  c.cooldown_steps = 2;
  c.warmup_steps = 10;
  c.spike_policy = GNMR_SPIKE_CLIP;
  c.global_policy = GNMR_GLOBAL_CLIP;
  return c;
}

TEST(checkpoint_resume_matches_the_uninterrupted_run) {
  static fixture a, b;
  static gnmr_decision want[RUN_T][RUN_N];
  static gnmr_step_report verdict[RUN_T];
  static unsigned char buf[1 << 14];
  gnmr_config c = run_config(), other = gnmr_config_paper();
  gnmr_step_report r;
  uint32_t t, trial, global = 0;
  size_t len;
  make_inputs();
  REQUIRE(setup(&a, &c, RUN_N) == GNMR_OK);
  for (t = 0; t < RUN_T; t++) {
    REQUIRE(gnmr_step(&a.ctl, run_in[t], want[t]) == GNMR_OK);
    REQUIRE(gnmr_step_info(&a.ctl, &verdict[t]) == GNMR_OK);
    global += verdict[t].global;
  }
  EXPECT(global > 0); /* the run has GLOBAL steps to resume after */
  for (trial = 0; trial < 6; trial++) {
    uint32_t at = 20 + (uint32_t)(check_rand() % (RUN_T - 40));
    /* loaded into a PAPER controller: the checkpoint's NOISE config wins */
    REQUIRE(resume_load(&b, &c, &other, run_in[0], RUN_N, at, buf, sizeof buf,
                        &len) == GNMR_OK);
    EXPECT_EQ_INT(b.ctl.cfg.rule, GNMR_RULE_NOISE);
    /* the saved step's verdict reads back as it was */
    REQUIRE(gnmr_step_info(&b.ctl, &r) == GNMR_OK);
    EXPECT(memcmp(&r, &verdict[at - 1], sizeof r) == 0);
    EXPECT(resume_runs_on(&b, run_in[0], want[0], RUN_N, at, RUN_T));
  }
}

TEST(checkpoint_refuses_noise_state_a_step_cannot_reach) {
  static fixture a;
  static unsigned char buf[1 << 14];
  const size_t unit0 =
      GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS;
  const size_t global0 = unit0 - 32;
  const double bad[] = {NAN, INFINITY, 1e5, -1e5};
  gnmr_config c = run_config();
  size_t len, i, off;
  uint32_t t;
  make_inputs();
  REQUIRE(setup(&a, &c, RUN_N) == GNMR_OK);
  for (t = 0; t < 60; t++) REQUIRE(gnmr_step(&a.ctl, run_in[t], a.d) == 0);
  for (off = 0; off < 4; off++)
    for (i = 0; i < 4; i++) {
      /* unit 0's mu, s, p; the global norm's mu */
      size_t at = off < 3 ? unit0 + 88 + 8 * off : global0;
      REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
      gnmr__put(buf + at, &bad[i], 8);
      gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
      EXPECT_EQ_INT(gnmr_checkpoint_load(&a.ctl, buf, len), GNMR_ECORRUPT);
    }
  {
    const double neg = -1e-3; /* a negative fluctuation */
    REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
    gnmr__put(buf + unit0 + 96, &neg, 8);
    gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
    EXPECT_EQ_INT(gnmr_checkpoint_load(&a.ctl, buf, len), GNMR_ECORRUPT);
  }
  {
    /* the paper rules' mean, or a window whose running sum matches it:
       NOISE mode never writes them, so k would outrun them (fuzz_ckpt) */
    const double one = 1.0;
    const float onef = 1.0f;
    const size_t k = unit0 + 80;
    const unsigned char *at = buf + k;
    uint64_t steps;
    REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
    gnmr__put(buf + unit0, &one, 8); /* mean */
    gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
    EXPECT_EQ_INT(gnmr_checkpoint_load(&a.ctl, buf, len), GNMR_ECORRUPT);
    REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
    gnmr__get(&at, &steps, 8);
    gnmr__put(buf + unit0 + 8, &one, 8); /* window_sum */
    gnmr__put(buf + unit0 + 16 + 4 * ((steps - 1) % 16), &onef, 4);
    gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
    EXPECT_EQ_INT(gnmr_checkpoint_load(&a.ctl, buf, len), GNMR_ECORRUPT);
  }
}

/* The saved verdict is checked like the state: one field at a time set
   to a value no step writes (checksum forged) is refused, and a refused
   load changes nothing. */
TEST(checkpoint_refuses_a_verdict_a_step_cannot_write) {
  static fixture a;
  static unsigned char buf[1 << 14];
  const size_t v0 = GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS -
                    60; /* the verdict's first byte */
  static const struct {
    unsigned off;
    double f64; /* for off < 40 */
    uint32_t u32;
  } bad[] = {{0, NAN, 0},        {0, -1.0, 0},       {0, INFINITY, 0},
             {8, INFINITY, 0},   {8, 5000.0, 0},     {16, 1.5, 0},
             {16, NAN, 0},       {24, 9.0, 0},       {24, NAN, 0},
             {32, 1.5, 0},       {32, -0.25, 0},     {32, 0.5, 0},
             {40, 0, RUN_N + 1}, {44, 0, RUN_N + 1}, {48, 0, RUN_N},
             {52, 0, RUN_N},     {56, 0, 2}};
  gnmr_config c = run_config();
  gnmr_step_report r, before;
  size_t len, i;
  uint32_t t;
  make_inputs();
  REQUIRE(setup(&a, &c, RUN_N) == GNMR_OK);
  for (t = 0; t < 100; t++) REQUIRE(gnmr_step(&a.ctl, run_in[t], a.d) == 0);
  REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
  REQUIRE(gnmr_checkpoint_load(&a.ctl, buf, len) == GNMR_OK); /* as saved */
  REQUIRE(gnmr_step_info(&a.ctl, &before) == GNMR_OK);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    REQUIRE(gnmr_checkpoint_save(&a.ctl, buf, sizeof buf, &len) == 0);
    if (bad[i].off < 40)
      gnmr__put(buf + v0 + bad[i].off, &bad[i].f64, 8);
    else
      gnmr__put_u32(buf + v0 + bad[i].off, bad[i].u32);
    gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
    EXPECT_EQ_INT(gnmr_checkpoint_load(&a.ctl, buf, len), GNMR_ECORRUPT);
    REQUIRE(gnmr_step_info(&a.ctl, &r) == GNMR_OK);
    EXPECT(memcmp(&r, &before, sizeof r) == 0);
  }
}

TEST(scalar_and_avx512_paths_agree_bit_for_bit) {
  static fixture a, b;
  gnmr_config c = run_config();
  int best = gnmr_ctl_isa_active();
  uint32_t t;
  if (gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK)
    SKIP("no AVX-512 here: nothing to compare");
  make_inputs();
  REQUIRE(setup(&a, &c, RUN_N) == GNMR_OK);
  REQUIRE(setup(&b, &c, RUN_N) == GNMR_OK);
  for (t = 0; t < RUN_T; t++) {
    REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    REQUIRE(gnmr_step(&a.ctl, run_in[t], a.d) == GNMR_OK);
    REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
    REQUIRE(gnmr_step(&b.ctl, run_in[t], b.d) == GNMR_OK);
    if (memcmp(a.d, b.d, sizeof a.d) != 0) {
      printf("  step %u differs\n", t);
      check__failed_here = 1;
      break;
    }
  }
  gnmr_ctl_isa_force(best);
  EXPECT(memcmp(a.units, b.units, sizeof a.units) == 0);
  EXPECT(memcmp(&a.ctl.report, &b.ctl.report, sizeof a.ctl.report) == 0);
}

/* ---- PAPER mode and switching ------------------------------------------- */

/* NOISE mode's fields are not read in PAPER mode: any valid values give
   the same decisions and state. */
/* NOISE mode's eight-wide path (phase 2's pass, phase 3's calm units)
   against the scalar rules, step by step, bit for bit: decisions (or out =
   NULL), every slot (state and scratch), the totals, the global history
   and the report. Random configurations (warm-up 0 included, decays of 1,
   a fluctuation floor of 0, one- and two-sided, every policy, budgets and
   locks), unit counts that are not multiples of 8, inputs with NaN, +-Inf,
   0, subnormals, FLT_MAX, spikes, drops, global events; runs at the edges
   (below); one run above the eight-wide median's kept bins. */
#define WIDE_N (GNMR__BINS_KEPT + 9)
#define WIDE_RUNS 14
/* The runs that are not just random: */
#define WIDE_TIES_Z 1  /* e meets z_rise S, -z_fall S and hold S exactly */
#define WIDE_TIES_L 5  /* d meets L(min_rise), L(max_fall) exactly */
#define WIDE_POW2 9    /* powers of two: exact logs */
#define WIDE_GRID 10   /* events of e^+-9: the median at the grid's ends */
#define WIDE_TIES_G 11 /* dr meets L(global_ratio) exactly */
#define WIDE_KEPT 13   /* more units than the median's kept bins */
static gnmr_slot wide_a[WIDE_N], wide_b[WIDE_N];
static gnmr_decision wide_da[WIDE_N], wide_db[WIDE_N];
static float wide_in[WIDE_N];

static float wide_norm(int run, uint32_t u, uint32_t t, float base) {
  const double r = check_uniform();
  double x;
  if (run == WIDE_TIES_Z || run == WIDE_TIES_L) {
    /* 1 (L = 0 exactly: mu stays 0, dr 0, s 0) until a unit's first
       jump, to 2 or 1/2: dr = +-ln 2 = +-L(2), the edges set to it */
    const uint32_t at = 30 + (u * 7 + (uint32_t)run) % 50;
    return t == at ? (u % 2 ? 2.0f : 0.5f) : 1.0f;
  }
  if (run == WIDE_TIES_G) /* 3 in 10 up by 2 (ties), 1 in 10 by 100 */
    return t != 40 || u % 10 > 3 ? 1.0f : u % 10 < 3 ? 2.0f : 100.0f;
  if (run == WIDE_POW2) return ldexpf(1.0f, (int)(check_rand() % 5) - 2);
  x = base * exp(0.2 * (check_uniform() - 0.5));
  if (t % 41 == 30) x *= run == WIDE_GRID ? exp(9.0) : 4.0; /* global */
  if (t % 53 == 20) x *= run == WIDE_GRID ? exp(-9.0) : 0.125;
  if (r < 0.03)
    x *= 5.0 + 40.0 * check_uniform();
  else if (r < 0.05)
    x *= 0.01;
  else if (r < 0.053)
    return NAN;
  else if (r < 0.055)
    return u % 2 ? INFINITY : -INFINITY;
  else if (r < 0.057)
    return 0.0f;
  else if (r < 0.059)
    return 1e-41f; /* subnormal */
  else if (r < 0.060)
    return FLT_MAX;
  return (float)x;
}

static gnmr_config wide_config(int run, uint32_t n) {
  gnmr_config c = gnmr_config_noise();
  c.rule = GNMR_RULE_NOISE;
  c.warmup_steps = run == 0 ? 0 : (uint32_t)(check_rand() % 14);
  c.history_decay = run == 2 ? 1.0 : 0.8 + 0.2 * check_uniform();
  c.fluct_decay = run == 3 ? 1.0 : 0.8 + 0.2 * check_uniform();
  c.z_rise = 0.5 + 6.0 * check_uniform();
  c.z_fall = 0.5 + 6.0 * check_uniform();
  c.min_rise = 1.01 + 2.0 * check_uniform();
  c.max_fall = 0.2 + 0.79 * check_uniform();
  c.ar = 0.99 * check_uniform();
  c.hold = 0.5 + 4.0 * check_uniform();
  c.winsor = 1.0 + 3.0 * check_uniform();
  c.fluct_floor = run % 3 == 0 ? 0.0 : 0.05 * check_uniform();
  c.two_sided = (uint32_t)(run % 2);
  c.global_ratio = 1.5 + 2.0 * check_uniform();
  c.global_frac = 0.05 + 0.95 * check_uniform();
  c.common_min_units = 1 + (uint32_t)(check_rand() % (n < 12 ? n : 12));
  c.max_recovering = (uint32_t)(check_rand() % (n < 5 ? n + 1 : 5));
  c.lock_steps = 1 + (uint32_t)(check_rand() % 6);
  c.cooldown_steps = (uint32_t)(check_rand() % 4);
  c.spike_policy = run % 3;
  c.global_policy = (run / 3) % 3;
  if (run == WIDE_TIES_Z || run == WIDE_TIES_L) {
    /* c = 0 (too few units for a common view), p = 0, S = fluct_floor */
    c.common_min_units = 1000;
    c.warmup_steps = 3;
    c.ar = 0.0;
    c.two_sided = 1;
    c.fluct_floor = GNMR__LN2 / 2; /* 2 S = ln 2 exactly */
    c.z_rise = c.z_fall = c.hold = run == WIDE_TIES_Z ? 2.0 : 1.0;
    c.min_rise = run == WIDE_TIES_Z ? 1.5 : 2.0;
    c.max_fall = run == WIDE_TIES_Z ? 0.6 : 0.5;
  }
  if (run == WIDE_TIES_G) { /* G up by far more than 2: GLOBAL iff the
                              ties are counted (3 in 10 >= 1 in 4) */
    c.common_min_units = 1;
    c.warmup_steps = 3;
    c.global_ratio = 2.0;
    c.global_frac = 0.25;
  }
  if (run == WIDE_KEPT) c.warmup_steps = 25;
  return c;
}

TEST(noise_mode_scalar_and_avx512_paths_agree_bit_for_bit) {
  int run, best = gnmr_ctl_isa_active();
  if (gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK)
    SKIP("no AVX-512 here: nothing to compare");
  for (run = 0; run < WIDE_RUNS; run++) {
    const uint32_t n = run == WIDE_KEPT     ? WIDE_N
                       : run == WIDE_TIES_G ? 40
                                            : 1 + (uint32_t)(check_rand() % 70);
    const uint32_t steps = run == WIDE_KEPT ? 60 : 400;
    gnmr_config c = wide_config(run, n);
    gnmr_ctl a, b;
    float base[80];
    uint32_t t, u;
    for (u = 0; u < 80; u++) base[u] = (float)exp(4.0 * check_uniform() - 2);
    REQUIRE(gnmr_init(&a, &c, wide_a, n) == GNMR_OK);
    REQUIRE(gnmr_init(&b, &c, wide_b, n) == GNMR_OK);
    for (t = 0; t < steps; t++) {
      const int out = t % 7 != 3;
      for (u = 0; u < n; u++) wide_in[u] = wide_norm(run, u, t, base[u % 80]);
      REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
      REQUIRE(gnmr_step(&a, wide_in, wide_da) == GNMR_OK);
      REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
      REQUIRE(gnmr_step(&b, wide_in, out ? wide_db : NULL) == GNMR_OK);
      if ((out && memcmp(wide_da, wide_db, sizeof wide_da[0] * n) != 0) ||
          memcmp(wide_a, wide_b, sizeof wide_a[0] * n) != 0 ||
          memcmp(&a.steps, &b.steps, sizeof a - offsetof(gnmr_ctl, steps)) !=
              0) {
        printf("  run %d (%u units): step %u differs\n", run, n, t);
        check__failed_here = 1;
        break;
      }
    }
  }
  gnmr_ctl_isa_force(best);
}

TEST(paper_mode_ignores_noise_fields) {
  static fixture a, b;
  gnmr_config c = gnmr_config_paper(), d;
  uint32_t t;
  c.max_recovering = 3;
  c.warmup_steps = 5;
  d = c;
  d.z_rise = 0.5;
  d.z_fall = 100.0;
  d.min_rise = 1.01;
  d.ar = 0.9;
  d.fluct_floor = 0.0;
  d.two_sided = 0;
  d.global_policy = GNMR_GLOBAL_SKIP;
  d.common_min_units = 1;
  make_inputs();
  REQUIRE(setup(&a, &c, RUN_N) == GNMR_OK);
  REQUIRE(setup(&b, &d, RUN_N) == GNMR_OK);
  for (t = 0; t < RUN_T; t++) {
    REQUIRE(gnmr_step(&a.ctl, run_in[t], a.d) == GNMR_OK);
    REQUIRE(gnmr_step(&b.ctl, run_in[t], b.d) == GNMR_OK);
    EXPECT(memcmp(a.d, b.d, sizeof a.d) == 0);
  }
  EXPECT(memcmp(a.units, b.units, sizeof a.units) == 0);
  EXPECT_EQ_INT(a.ctl.report.global, 0);
  EXPECT_EQ_INT(a.ctl.global_k, 0);
}

/* Switching rule restarts the statistics (k, both means, the window, s,
   p, the global history); locks, cooldowns and counters stay. Within one
   mode, a reconfigure keeps them. */
TEST(reconfigure_between_modes_restarts_the_statistics) {
  static fixture f;
  gnmr_config c = run_config(), p;
  gnmr_counters before, after;
  gnmr__soa s;
  uint32_t t, u, locked = 0;
  make_inputs();
  REQUIRE(setup(&f, &c, RUN_N) == GNMR_OK);
  for (t = 0; t < 100; t++) REQUIRE(gnmr_step(&f.ctl, run_in[t], f.d) == 0);
  s = soa(&f);
  c.z_rise = 5.0; /* same mode: state kept */
  {
    double mu = s.log_mean[1];
    REQUIRE(gnmr_reconfigure(&f.ctl, &c) == GNMR_OK);
    EXPECT_EQ_BITS(s.log_mean[1], mu);
    EXPECT(s.finite_steps[1] > 0);
  }
  for (u = 0; u < RUN_N; u++) locked += s.lock[u] > 0;
  REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &before) == GNMR_OK);
  p = c;
  p.rule = GNMR_RULE_PAPER;
  REQUIRE(gnmr_reconfigure(&f.ctl, &p) == GNMR_OK);
  REQUIRE(gnmr_counters_get(&f.ctl, GNMR_ALL_UNITS, &after) == GNMR_OK);
  EXPECT_EQ_INT(after.finite_steps, 0);
  EXPECT_EQ_INT(after.admissions, before.admissions);
  EXPECT_EQ_INT(after.recovering, before.recovering);
  EXPECT_EQ_INT(after.recovering, locked);
  EXPECT_EQ_INT(f.ctl.global_k, 0);
  for (u = 0; u < RUN_N; u++) {
    EXPECT_EQ_BITS(s.log_mean[u], 0.0);
    EXPECT_EQ_BITS(s.fluct[u], 0.0);
    EXPECT_EQ_BITS(s.mean[u], 0.0);
  }
  /* and it runs on, and back, and saves a loadable checkpoint */
  for (t = 100; t < 200; t++) REQUIRE(gnmr_step(&f.ctl, run_in[t], f.d) == 0);
  REQUIRE(gnmr_reconfigure(&f.ctl, &c) == GNMR_OK);
  EXPECT_EQ_INT(s.finite_steps[0], 0);
  for (t = 200; t < RUN_T; t++) REQUIRE(gnmr_step(&f.ctl, run_in[t], f.d) == 0);
  {
    static unsigned char buf[1 << 14];
    size_t len;
    REQUIRE(gnmr_checkpoint_save(&f.ctl, buf, sizeof buf, &len) == GNMR_OK);
    EXPECT_EQ_INT(gnmr_checkpoint_load(&f.ctl, buf, len), GNMR_OK);
  }
}

/* ---- the defaults as documented ----------------------------------------- */

/* Every config field's default, from the one list the code reads. */
#define FIELD_DEFAULT(name, value, valid) {#name, (double)value},
static const struct {
  const char *name;
  double value;
} fields[] = {GNMR__CONFIG(FIELD_DEFAULT)};
#undef FIELD_DEFAULT
#define N_FIELDS (int)(sizeof fields / sizeof fields[0])

static int field_index(const char *name, size_t len) {
  int i;
  for (i = 0; i < N_FIELDS; i++)
    if (strlen(fields[i].name) == len && memcmp(fields[i].name, name, len) == 0)
      return i;
  return -1;
}

/* A documented default: the number or the enum name the text starts with. */
static int doc_value(int field, const char *s, double *v) {
  static const struct {
    const char *field, *name;
    int value;
  } names[] = {
      {"spike_policy", "PASS", GNMR_SPIKE_PASS},
      {"spike_policy", "CLIP", GNMR_SPIKE_CLIP},
      {"spike_policy", "SKIP", GNMR_SPIKE_SKIP},
      {"rule", "PAPER", GNMR_RULE_PAPER},
      {"rule", "NOISE", GNMR_RULE_NOISE},
      {"global_policy", "NONE", GNMR_GLOBAL_NONE},
      {"global_policy", "CLIP", GNMR_GLOBAL_CLIP},
      {"global_policy", "SKIP", GNMR_GLOBAL_SKIP},
  };
  char *end;
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].field, fields[field].name) == 0 &&
        strncmp(s, names[i].name, strlen(names[i].name)) == 0) {
      *v = names[i].value;
      return 1;
    }
  *v = strtod(s, &end);
  return end != s;
}

static char doc_text[1 << 20];

static int read_doc(const char *path) {
  FILE *f = fopen(path, "rb");
  size_t len;
  if (!f) return 0;
  len = fread(doc_text, 1, sizeof doc_text - 1, f);
  fclose(f);
  doc_text[len] = '\0';
  return 1;
}

/* One documented default against the code's; a field met twice or a value
   that differs fails. */
static void doc_default(int *seen, int field, const char *text,
                        const char *where) {
  double v;
  if (seen[field]++) {
    printf("  %s: %s listed twice\n", where, fields[field].name);
    check__failed_here = 1;
  } else if (!doc_value(field, text, &v) || v != fields[field].value) {
    printf("  %s: %s's default reads \"%.*s\", the code's is %g\n", where,
           fields[field].name, (int)strcspn(text, ",|\n"), text,
           fields[field].value);
    check__failed_here = 1;
  }
}

static void all_seen(const int *seen, const char *where) {
  int i;
  for (i = 0; i < N_FIELDS; i++)
    if (!seen[i]) {
      printf("  %s: %s is not listed\n", where, fields[i].name);
      check__failed_here = 1;
    }
}

/* The header's manual: a table whose columns line up under "field" and
   "default"; a line whose first word is a field gives its default in the
   default column. Run from the repository's root. */
TEST(manual_table_gives_the_code_defaults) {
  int seen[N_FIELDS] = {0};
  char *p, *head, *end, noise[32];
  size_t col;
  REQUIRE(read_doc("gnmr.h"));
  p = strstr(doc_text, "   Configuration (gnmr_config_default");
  REQUIRE(p != NULL);
  head = strstr(p, "field  "); /* the column heads */
  end = strstr(p, "gnmr_config_paper() is");
  REQUIRE(head && end && head < end && strstr(head, "default") < end);
  while (head[-1] != '\n') head--;
  col = (size_t)(strstr(head, "default") - head);
  for (p = strchr(head, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
    size_t indent = strspn(p, " "), len = strcspn(p + indent, " \n");
    int field = field_index(p + indent, len);
    if (field < 0) continue;
    REQUIRE(strcspn(p, "\n") > col);
    doc_default(seen, field, p + col, "gnmr.h's table");
  }
  all_seen(seen, "gnmr.h's table");
  sprintf(noise, "(NOISE: %u)", gnmr_config_noise().warmup_steps);
  p = strstr(head, "       warmup_steps ");
  REQUIRE(p != NULL && p < end);
  EXPECT(strstr(p, noise) != NULL && strstr(p, noise) < strchr(p, '\n'));
}

/* The manual's text from `from` on, blanks and comment margins folded
   to one space, into out (cap bytes): prose wraps where it likes. */
static void folded(const char *from, char *out, size_t cap) {
  size_t n = 0;
  for (; *from && n + 1 < cap; from++) {
    const int blank = *from == ' ' || *from == '\n';
    if (!blank || (n > 0 && out[n - 1] != ' ')) out[n++] = blank ? ' ' : *from;
  }
  out[n] = '\0';
}

/* The number after the first `key` in `text` past `anchor`; -1 if none. */
static long doc_number(const char *text, const char *anchor, const char *key) {
  const char *p = strstr(text, anchor);
  char *end;
  long v;
  if (!p || !(p = strstr(p, key))) return -1;
  v = strtol(p + strlen(key), &end, 10);
  return end == p + strlen(key) ? -1 : v;
}

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* The checkpoint formats the manual and the placer's declaration state are
   the ones a save writes: its magic, then its u32 version. */
TEST(manual_states_the_checkpoint_formats_the_code_writes) {
  static char text[1 << 20];
  static unsigned char buf[1 << 14];
  static fixture f;
  gnmr_place pl;
  gnmr_place_unit st[2];
  const double cost[2] = {1.0, 2.0};
  const gnmr_place_config pc = gnmr_place_config_default();
  const gnmr_config cfg = gnmr_config_default();
  size_t len = 0;
  uint32_t ctl_version, place_version;
  char magic[32];
  REQUIRE(read_doc("gnmr.h"));
  folded(doc_text, text, sizeof text);
  REQUIRE(setup(&f, &cfg, 2) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_save(&f.ctl, buf, sizeof buf, &len) == GNMR_OK);
  REQUIRE(len > 12 && memcmp(buf, "GNMRCKPT", 8) == 0);
  ctl_version = le32(buf + 8);
  REQUIRE(gnmr_place_init(&pl, &pc, st, cost, 2) == GNMR_OK);
  REQUIRE(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &len) == GNMR_OK);
  REQUIRE(len > 12);
  place_version = le32(buf + 8);
  EXPECT_EQ_INT(
      doc_number(text, "Checkpoints: gnmr_checkpoint_save", "Format version "),
      (long)ctl_version);
  EXPECT_EQ_INT(doc_number(text, "Checkpoints: gnmr_place_checkpoint_",
                           "format version "),
                (long)place_version);
  EXPECT_EQ_INT(doc_number(text, "/* Checkpoints of a placer", "version "),
                (long)place_version);
  snprintf(magic, sizeof magic, "magic \"%.8s\"", (const char *)buf);
  EXPECT(strstr(text, magic) != NULL);
}

/* The placer's table of defaults, as the controller's above: the default
   column of each line whose first word is a field, against
   gnmr_place_config_default(). */
TEST(manual_placement_table_gives_the_code_defaults) {
  const gnmr_place_config c = gnmr_place_config_default();
  const struct {
    const char *name;
    double value;
  } want[] = {
      {"budget", c.budget},
      {"update_decay", c.update_decay},
      {"fire_level", c.fire_level},
      {"fall_ratio", c.fall_ratio},
      {"fast_decay", c.fast_decay},
      {"slow_decay", c.slow_decay},
      {"warmup_steps", c.warmup_steps},
      {"planned_steps", c.planned_steps},
      {"gemms", c.gemms},
  };
  enum { N_PLACE = sizeof want / sizeof want[0] };
  int seen[N_PLACE] = {0}, k;
  char *p, *head, *end;
  size_t col;
  REQUIRE(read_doc("gnmr.h"));
  p = strstr(doc_text, "(gnmr_place_config_default; gnmr_place_config_check");
  REQUIRE(p != NULL);
  head = strstr(p, "field  ");
  end = strstr(p, "The state is the caller's");
  REQUIRE(head && end && head < end && strstr(head, "default") < end);
  while (head[-1] != '\n') head--;
  col = (size_t)(strstr(head, "default") - head);
  for (p = strchr(head, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
    const size_t indent = strspn(p, " "), len = strcspn(p + indent, " \n");
    for (k = 0; k < N_PLACE; k++) {
      const char *v = p + col;
      char *stop;
      double got;
      if (strlen(want[k].name) != len ||
          memcmp(want[k].name, p + indent, len) != 0)
        continue;
      REQUIRE(strcspn(p, "\n") > col);
      seen[k]++;
      if (strncmp(v, "GNMR_GEMM_ALL", 13) == 0) {
        got = GNMR_GEMM_ALL;
      } else if (strncmp(v, "GNMR_GEMM_FWD", 13) == 0) {
        got = GNMR_GEMM_FWD;
      } else {
        got = strtod(v, &stop);
        if (stop == v) got = -1.0;
      }
      if (got != want[k].value) {
        printf("  the placement table: %s's default reads \"%.*s\", the "
               "code's is %g\n",
               want[k].name, (int)strcspn(v, "\n"), v, want[k].value);
        check__failed_here = 1;
      }
    }
  }
  for (k = 0; k < N_PLACE; k++)
    if (seen[k] != 1) {
      printf("  the placement table lists %s %d times\n", want[k].name,
             seen[k]);
      check__failed_here = 1;
    }
}

/* What the tables cannot say: the noise rules are the defaults but for the
   rule and the warm-up, and the library's defaults are the paper rules. */
TEST(defaults_paper_and_noise_differ_where_documented) {
  gnmr_config p = gnmr_config_paper(), d = gnmr_config_noise(),
              def = gnmr_config_default();
  EXPECT_EQ_INT(p.rule, GNMR_RULE_PAPER);
  EXPECT_EQ_INT(def.rule, GNMR_RULE_PAPER);
  EXPECT_EQ_INT(d.rule, GNMR_RULE_NOISE);
  /* the paper's rules learn no level; the default and NOISE do (rule 9) */
  EXPECT_EQ_INT(p.shift_steps, 0);
  EXPECT(def.shift_steps >= 2 && d.shift_steps == def.shift_steps);
  EXPECT(d.warmup_steps != def.warmup_steps);
  d.rule = def.rule;
  d.warmup_steps = def.warmup_steps;
  EXPECT(memcmp(&d, &def, sizeof d) == 0);
  def.shift_steps = 0;
  EXPECT(memcmp(&def, &p, sizeof def) == 0);
  d = gnmr_config_noise();
  def = gnmr_config_default();
  EXPECT_EQ_INT(gnmr_config_check(&p, UINT32_MAX, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_config_check(&d, UINT32_MAX, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_config_check(&def, UINT32_MAX, NULL), GNMR_OK);
}

/* gnmr_config_forward() is the defaults with the two thresholds the suite's
   tune half chose for forward signals (ratio 8, delta 6), nothing else. */
TEST(forward_preset_is_the_defaults_with_two_thresholds) {
  gnmr_config f = gnmr_config_forward(), def = gnmr_config_default();
  EXPECT_EQ_BITS(f.ratio_threshold, 8.0);
  EXPECT_EQ_BITS(f.delta_threshold, 6.0);
  EXPECT(f.ratio_threshold != def.ratio_threshold);
  EXPECT(f.delta_threshold != def.delta_threshold);
  f.ratio_threshold = def.ratio_threshold;
  f.delta_threshold = def.delta_threshold;
  EXPECT(memcmp(&f, &def, sizeof f) == 0);
  f = gnmr_config_forward();
  EXPECT_EQ_INT(gnmr_config_check(&f, UINT32_MAX, NULL), GNMR_OK);
}

TEST(step_info_refuses_bad_arguments) {
  static fixture f;
  gnmr_config c = noise_config();
  gnmr_step_report r;
  REQUIRE(setup(&f, &c, 2) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_step_info(NULL, &r), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_step_info(&f.ctl, NULL), GNMR_EINVAL);
  REQUIRE(gnmr_step_info(&f.ctl, &r) == GNMR_OK);
  EXPECT_EQ_BITS(r.global_scale, 1.0);
  EXPECT_EQ_INT(r.global, 0);
  f.ctl.seal ^= 1;
  EXPECT_EQ_INT(gnmr_step_info(&f.ctl, &r), GNMR_ESTATE);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(log_is_accurate_and_increasing),
      CHECK_CASE(exp_of_negative_values_is_accurate),
      CHECK_CASE(exp_eight_wide_is_the_scalar_exp),
      CHECK_CASE(noise_ratio_is_the_norm_over_the_level),
      CHECK_CASE(rise_at_and_around_min_rise),
      CHECK_CASE(rise_at_and_around_z_rise),
      CHECK_CASE(fall_at_and_around_max_fall),
      CHECK_CASE(fall_at_and_around_z_fall),
      CHECK_CASE(warmup_flags_nothing_until_k_observations),
      CHECK_CASE(warmup_zero_settles_a_unit_after_its_first_observation),
      CHECK_CASE(common_deviation_is_taken_out_of_every_unit),
      CHECK_CASE(common_deviation_does_not_depend_on_unit_order),
      CHECK_CASE(global_norm_is_summed_in_the_documented_order),
      CHECK_CASE(global_at_and_around_global_ratio),
      CHECK_CASE(global_step_admits_only_nonfinite_and_scales_every_unit),
      CHECK_CASE(clip_scales_a_rise_to_its_level_and_never_a_fall_up),
      CHECK_CASE(nonfinite_never_enters_the_statistics_or_the_global_history),
      CHECK_CASE(a_spike_cannot_inflate_the_fluctuation_or_the_mean),
      CHECK_CASE(checkpoint_resume_matches_the_uninterrupted_run),
      CHECK_CASE(checkpoint_refuses_noise_state_a_step_cannot_reach),
      CHECK_CASE(checkpoint_refuses_a_verdict_a_step_cannot_write),
      CHECK_CASE(scalar_and_avx512_paths_agree_bit_for_bit),
      CHECK_CASE(noise_mode_scalar_and_avx512_paths_agree_bit_for_bit),
      CHECK_CASE(paper_mode_ignores_noise_fields),
      CHECK_CASE(reconfigure_between_modes_restarts_the_statistics),
      CHECK_CASE(manual_table_gives_the_code_defaults),
      CHECK_CASE(manual_states_the_checkpoint_formats_the_code_writes),
      CHECK_CASE(manual_placement_table_gives_the_code_defaults),
      CHECK_CASE(defaults_paper_and_noise_differ_where_documented),
      CHECK_CASE(forward_preset_is_the_defaults_with_two_thresholds),
      CHECK_CASE(step_info_refuses_bad_arguments),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
