/* test_band.c - rule 10, the admission band (gnmr_config_calm()): a risky
   unit is admitted only when its norm leaves its own noise band on
   band_steps steps in a row, or comes far above it (100x) or non-finite.
   One scripted world of 12 units whose log norms have heavy tails (most
   steps within +-0.3, one in thirty up to 3.3x: a small batch's
   gradients), with and without faults, through the defaults and the calm
   preset: what the band changes (admissions), what it must not (every
   scale, ratio, score and the history), and its own events. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#define N 12
#define STEPS 1500

static gnmr_slot slots[N], slots_b[N];
static gnmr_decision dec[STEPS][N], dec_b[STEPS][N];
static float world[STEPS][N];

/* Unit u's calm norm at step t: a level of its own, Gaussian-like noise of
   0.15 in log, and on one step in thirty a tail of up to 3.3x. */
static float calm_norm(uint32_t u, uint32_t t) {
  const double e = 0.5 * (check_noise(u, t, 1) + check_noise(u, t, 2));
  double l = 0.3 * e + 0.2 * (double)u;
  if (check_noise(u, t, 3) > 0.94) l += 1.2 * (check_noise(u, t, 4) + 1.0) / 2;
  return (float)exp(l);
}

/* The world: calm, or calm with faults (x1000 on unit 3 at step 400, x8
   on unit 5 at steps 600 and 601, x8 once on unit 7 at step 800, NaN on
   unit 9 at step 1000). */
static void make_world(int faults) {
  uint32_t t, u;
  for (t = 0; t < STEPS; t++)
    for (u = 0; u < N; u++) world[t][u] = calm_norm(u, t);
  if (!faults) return;
  world[400][3] *= 1000.0f;
  world[600][5] *= 8.0f;
  world[601][5] *= 8.0f;
  world[800][7] *= 8.0f;
  world[1000][9] = NAN;
}

static gnmr_config with_band(double k) {
  gnmr_config c = gnmr_config_default();
  c.band_k = k;
  c.max_recovering = 2;
  return c;
}

/* The world through a controller over units; decisions into out. Returns
   the unit-steps on the high-fidelity path, or -1 if a step was refused. */
static long run(const gnmr_config *c, gnmr_ctl *ctl, gnmr_slot *units,
                gnmr_decision (*out)[N]) {
  gnmr_counters k;
  uint32_t t;
  if (gnmr_init(ctl, c, units, N) != GNMR_OK) return -1;
  for (t = 0; t < STEPS; t++)
    if (gnmr_step(ctl, world[t], out[t]) != GNMR_OK) return -1;
  if (gnmr_counters_get(ctl, GNMR_ALL_UNITS, &k) != GNMR_OK) return -1;
  return (long)k.recovery_steps;
}

/* The band decides who takes a slot, nothing else: every step's ratio,
   delta, score and scale, and every unit's history, are the defaults'
   bits; the flags differ only in the admission's own (BAND, OVER_BUDGET,
   COOLDOWN, RENEWED). */
TEST(the_band_changes_admissions_never_a_scale) {
  const uint32_t admission = GNMR_FLAG_BAND | GNMR_FLAG_OVER_BUDGET |
                             GNMR_FLAG_COOLDOWN | GNMR_FLAG_RENEWED;
  int faults;
  for (faults = 0; faults < 2; faults++) {
    gnmr_config off = with_band(0.0), on = with_band(4.0);
    gnmr_ctl a, b;
    uint32_t t, u, differ = 0;
    make_world(faults);
    REQUIRE(run(&off, &a, slots, dec) >= 0);
    REQUIRE(run(&on, &b, slots_b, dec_b) >= 0);
    for (t = 0; t < STEPS; t++)
      for (u = 0; u < N; u++) {
        const gnmr_decision *x = &dec[t][u], *y = &dec_b[t][u];
        EXPECT_EQ_BITS(x->ratio, y->ratio);
        EXPECT_EQ_BITS(x->delta, y->delta);
        EXPECT_EQ_BITS(x->score, y->score);
        EXPECT_EQ_BITS(x->scale, y->scale);
        EXPECT_EQ_INT(x->flags & ~admission, y->flags & ~admission);
        differ += x->action != y->action;
      }
    for (u = 0; u < N; u++) {
      gnmr_unit_state x, y;
      REQUIRE(gnmr_unit_info(&a, u, &x) == GNMR_OK);
      REQUIRE(gnmr_unit_info(&b, u, &y) == GNMR_OK);
      EXPECT_EQ_BITS(x.mean, y.mean);
      EXPECT_EQ_BITS(x.window_mean, y.window_mean);
      EXPECT_EQ_INT(x.counters.risky, y.counters.risky);
      EXPECT_EQ_INT(x.counters.finite_steps, y.counters.finite_steps);
      EXPECT_EQ_INT(y.band_seen, y.counters.finite_steps);
      EXPECT_EQ_INT(x.band_seen, 0); /* off: never learned */
    }
    EXPECT(differ > 0); /* and it did change admissions */
  }
}

/* The calm world's cost: the defaults put a few percent of unit-steps on
   the high-fidelity path, the band none but what a rare double tail
   buys (a unit's two tails in a row). */
TEST(a_calm_heavy_tailed_run_is_seldom_admitted) {
  gnmr_config off = with_band(0.0), on = with_band(4.0);
  gnmr_ctl a, b;
  long hf_off, hf_on;
  make_world(0);
  hf_off = run(&off, &a, slots, dec);
  hf_on = run(&on, &b, slots_b, dec_b);
  printf("  calm world: %ld unit-steps high-fidelity under the defaults, "
         "%ld under the band (of %d)\n",
         hf_off, hf_on, STEPS * N);
  EXPECT(hf_off > STEPS * N / 50);  /* the defaults: over 2% */
  EXPECT(hf_on * 200 <= STEPS * N); /* the band: at most 0.5% */
}

/* Each fault of the faulty world, read off its own decisions. */
TEST(faults_leave_the_band_and_a_lone_spike_is_clipped) {
  gnmr_config on = with_band(4.0);
  gnmr_ctl b;
  char flags[GNMR_FLAGS_STRING_MAX];
  make_world(1);
  REQUIRE(run(&on, &b, slots_b, dec_b) >= 0);
  /* x1000: far above, admitted at once, clipped */
  EXPECT_EQ_INT(dec_b[400][3].action, GNMR_ACTION_RECOVER);
  EXPECT(dec_b[400][3].scale < 0.01);
  /* x8 twice: in its band's run on the first step (clipped, BAND), then
     admitted on the second */
  gnmr_flags_string(dec_b[600][5].flags, flags, sizeof flags);
  printf("  x8 at step 600: %s, scale %.3f\n", flags, dec_b[600][5].scale);
  EXPECT(dec_b[600][5].flags & GNMR_FLAG_BAND);
  EXPECT(dec_b[600][5].flags & GNMR_FLAG_RATIO);
  EXPECT_EQ_INT(dec_b[600][5].action, GNMR_ACTION_KEEP);
  EXPECT(dec_b[600][5].scale < 0.5);
  EXPECT_EQ_INT(dec_b[601][5].action, GNMR_ACTION_RECOVER);
  EXPECT(!(dec_b[601][5].flags & GNMR_FLAG_BAND));
  /* x8 once: clipped, never admitted */
  EXPECT(dec_b[800][7].flags & GNMR_FLAG_BAND);
  EXPECT_EQ_INT(dec_b[800][7].action, GNMR_ACTION_KEEP);
  EXPECT(dec_b[800][7].scale < 0.5);
  EXPECT_EQ_INT(dec_b[801][7].action, GNMR_ACTION_KEEP);
  /* NaN: admitted at once, scale 0 */
  EXPECT_EQ_INT(dec_b[1000][9].action, GNMR_ACTION_RECOVER);
  EXPECT_EQ_BITS(dec_b[1000][9].scale, 0.0);
}

/* Steps fed by hand to one unit: 40 calm steps, then what the test says. */
static void steady(gnmr_ctl *ctl, uint32_t from, uint32_t to) {
  uint32_t t;
  float g[1];
  for (t = from; t < to; t++) {
    g[0] = (float)exp(0.05 * check_noise(0, t, 9));
    REQUIRE(gnmr_step(ctl, g, NULL) == GNMR_OK);
  }
}
static gnmr_decision one(gnmr_ctl *ctl, float g) {
  gnmr_decision d;
  memset(&d, 0, sizeof d);
  EXPECT(gnmr_step(ctl, &g, &d) == GNMR_OK);
  return d;
}

/* An absent step (rule 0) neither ends nor extends a run; a calm one ends
   it. */
TEST(an_absent_step_keeps_the_run_a_calm_one_ends_it) {
  gnmr_config c = with_band(4.0);
  gnmr_ctl ctl;
  c.max_recovering = 1;
  REQUIRE(gnmr_init(&ctl, &c, slots, 1) == GNMR_OK);
  steady(&ctl, 0, 40);
  EXPECT(one(&ctl, 8.0f).flags & GNMR_FLAG_BAND);
  EXPECT(one(&ctl, 0.0f).flags & GNMR_FLAG_ABSENT);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_RECOVER);
  REQUIRE(gnmr_init(&ctl, &c, slots, 1) == GNMR_OK);
  steady(&ctl, 0, 40);
  EXPECT(one(&ctl, 8.0f).flags & GNMR_FLAG_BAND);
  EXPECT_EQ_INT(one(&ctl, 1.0f).action, GNMR_ACTION_KEEP);
  EXPECT(one(&ctl, 8.0f).flags & GNMR_FLAG_BAND);
}

/* band_steps 1: any step above the band is admitted; 3: the third. */
TEST(band_steps_counts_the_steps_above) {
  uint32_t steps;
  for (steps = 1; steps <= 3; steps++) {
    gnmr_config c = with_band(4.0);
    gnmr_ctl ctl;
    uint32_t i;
    c.max_recovering = 1;
    c.band_steps = steps;
    REQUIRE(gnmr_init(&ctl, &c, slots, 1) == GNMR_OK);
    steady(&ctl, 0, 40);
    for (i = 1; i < steps; i++)
      EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
    EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_RECOVER);
  }
}

/* The band judges nothing until it has warmup_steps observations of its
   own: turned on late by gnmr_reconfigure it starts afresh, so a x8 pair
   right after is not admitted, one after warmup_steps more steps is. Off
   again, the band's state is cleared. */
TEST(a_band_turned_on_late_learns_before_it_judges) {
  gnmr_config c = with_band(0.0), calm = with_band(4.0);
  gnmr_ctl ctl;
  gnmr_unit_state st;
  c.max_recovering = calm.max_recovering = 1;
  REQUIRE(gnmr_init(&ctl, &c, slots, 1) == GNMR_OK);
  steady(&ctl, 0, 100);
  REQUIRE(gnmr_reconfigure(&ctl, &calm) == GNMR_OK);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
  /* not yet learned: risky, no band to be above, held back */
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
  steady(&ctl, 100, 140);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_RECOVER);
  REQUIRE(gnmr_unit_info(&ctl, 0, &st) == GNMR_OK);
  EXPECT(st.band_seen > 16 && st.band_dev > 0.0);
  EXPECT_EQ_INT(st.band_run, 2);
  REQUIRE(gnmr_reconfigure(&ctl, &c) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&ctl, 0, &st) == GNMR_OK);
  EXPECT(st.band_seen == 0 && st.band_dev == 0.0 && st.band_centre == 0.0 &&
         st.band_run == 0);
  /* a lower band_steps cuts a run to it */
  REQUIRE(gnmr_reconfigure(&ctl, &calm) == GNMR_OK);
  steady(&ctl, 140, 200);
  calm.band_steps = 3;
  REQUIRE(gnmr_reconfigure(&ctl, &calm) == GNMR_OK);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
  EXPECT_EQ_INT(one(&ctl, 8.0f).action, GNMR_ACTION_KEEP);
  calm.band_steps = 1;
  REQUIRE(gnmr_reconfigure(&ctl, &calm) == GNMR_OK);
  REQUIRE(gnmr_unit_info(&ctl, 0, &st) == GNMR_OK);
  EXPECT_EQ_INT(st.band_run, 1);
}

/* Saved mid-run with bands learned, loaded into a fresh controller: it
   decides as the run never interrupted; a band no step can write is
   refused whole. */
TEST(checkpoint_resumes_the_band_and_refuses_a_forged_one) {
  static unsigned char buf[1 << 14], bad[1 << 14];
  const size_t unit0 =
      GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS;
  const size_t centre = 112, dev = 120, run_at = GNMR__CKPT_UNIT - 4;
  gnmr_config c = with_band(4.0);
  gnmr_ctl a, b;
  size_t len;
  uint32_t t;
  double v;
  make_world(1);
  REQUIRE(gnmr_init(&a, &c, slots, N) == GNMR_OK);
  for (t = 0; t < 601; t++) REQUIRE(gnmr_step(&a, world[t], dec[t]) == 0);
  /* unit 5 is in the middle of its run above the band */
  REQUIRE(gnmr_checkpoint_save(&a, buf, sizeof buf, &len) == GNMR_OK);
  REQUIRE(gnmr_init(&b, &c, slots_b, N) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_load(&b, buf, len) == GNMR_OK);
  for (t = 601; t < STEPS; t++) {
    REQUIRE(gnmr_step(&a, world[t], dec[t]) == GNMR_OK);
    REQUIRE(gnmr_step(&b, world[t], dec_b[t]) == GNMR_OK);
  }
  EXPECT(memcmp(dec[601], dec_b[601], sizeof dec[0] * (STEPS - 601)) == 0);
  EXPECT_EQ_INT(dec_b[601][5].action, GNMR_ACTION_RECOVER);
  /* forged: a negative deviation, a non-finite centre, a run past
     band_steps; each with a valid CRC */
  REQUIRE(gnmr_init(&b, &c, slots_b, N) == GNMR_OK);
  memcpy(bad, buf, len);
  v = -0.5;
  gnmr__put(bad + unit0 + dev, &v, 8);
  gnmr__put_u32(bad + len - 4, gnmr__crc32(bad, len - 4));
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, bad, len), GNMR_ECORRUPT);
  memcpy(bad, buf, len);
  v = (double)INFINITY;
  gnmr__put(bad + unit0 + centre, &v, 8);
  gnmr__put_u32(bad + len - 4, gnmr__crc32(bad, len - 4));
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, bad, len), GNMR_ECORRUPT);
  memcpy(bad, buf, len);
  gnmr__put_u32(bad + unit0 + run_at, 3);
  gnmr__put_u32(bad + len - 4, gnmr__crc32(bad, len - 4));
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, bad, len), GNMR_ECORRUPT);
  /* the same buffer with the band off in its config: a band it cannot
     hold */
  memcpy(bad, buf, len);
  v = 0.0;
  gnmr__put(bad + GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG - 8, &v, 8);
  gnmr__put_u32(bad + len - 4, gnmr__crc32(bad, len - 4));
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, bad, len), GNMR_ECORRUPT);
  /* none of it changed b: it still loads the true one */
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, buf, len), GNMR_OK);
}

TEST(scalar_and_avx512_agree_with_the_band) {
  gnmr_config c = with_band(4.0);
  gnmr_ctl a, b;
  int best = gnmr_ctl_isa_active();
  if (gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK)
    SKIP("no AVX-512 here: nothing to compare");
  make_world(1);
  REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
  REQUIRE(run(&c, &a, slots, dec) >= 0);
  REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
  REQUIRE(run(&c, &b, slots_b, dec_b) >= 0);
  EXPECT(memcmp(dec, dec_b, sizeof dec) == 0);
  EXPECT(memcmp(slots, slots_b, sizeof slots) == 0);
  gnmr_ctl_isa_force(best);
}

TEST(band_settings_are_checked) {
  gnmr_config c = gnmr_config_calm();
  const char *field = NULL;
  EXPECT_EQ_BITS(c.band_k, 4.0);
  EXPECT_EQ_INT(c.band_steps, 2);
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_OK);
  c.band_k = -1.0;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "band_k") == 0);
  c.band_k = (double)NAN;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  c.band_k = (double)INFINITY;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  c = gnmr_config_calm();
  c.band_steps = 0;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "band_steps") == 0);
  c.band_steps = GNMR_SHIFT_STEPS_MAX + 1;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  c = gnmr_config_default();
  EXPECT_EQ_BITS(c.band_k, 0.0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(the_band_changes_admissions_never_a_scale),
      CHECK_CASE(a_calm_heavy_tailed_run_is_seldom_admitted),
      CHECK_CASE(faults_leave_the_band_and_a_lone_spike_is_clipped),
      CHECK_CASE(an_absent_step_keeps_the_run_a_calm_one_ends_it),
      CHECK_CASE(band_steps_counts_the_steps_above),
      CHECK_CASE(a_band_turned_on_late_learns_before_it_judges),
      CHECK_CASE(checkpoint_resumes_the_band_and_refuses_a_forged_one),
      CHECK_CASE(scalar_and_avx512_agree_with_the_band),
      CHECK_CASE(band_settings_are_checked),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
