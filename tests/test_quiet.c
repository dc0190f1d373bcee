/* test_quiet.c - units that go quiet or change level (rules 0 and 9): the
   ordinary events of real runs, not faults. One world of 24 units, three of
   each role, run for 1000 steps under the default config, the paper rules
   and the noise-aware rules, on every controller path this CPU runs:
     role 0  calm, 1 +- 1%
     role 1  0 for its first 30 steps, then exactly 1 (0.3 zeroed it for
             good: admitted at step 30 with scale 0, on HOLD at step 999)
     role 2  an MoE expert: routed on 10% of steps (1 +- 10%), else 0
     role 3  a layer frozen for 200 steps, then 2 +- 3%
     role 4  a LoRA factor that starts at zero: 0 at step 0, then rising
             to 0.5 over about 60 steps
     role 5  a clean 10x level shift at step 300 (1 +- 2%, then 10 +- 2%)
     role 6  the same shift, then 50x spikes at steps 340 and 800
     role 7  calm, 3 +- 5%
   Then: the paths and a checkpoint resume agree bit for bit, and rule 9's
   run refuses what no step can write. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#define N 24
#define STEPS 1000
#define ROLES 8
#define SHIFT_AT 300

static gnmr_slot slots[N], slots_b[N];
static gnmr_decision dec[STEPS][N];
static float world[STEPS][N];

static float norm_of(uint32_t u, uint32_t t) {
  const double e = check_noise(u, t, 1);
  switch (u % ROLES) {
  case 0: return (float)(1.0 + 0.01 * e);
  case 1: return t < 30 ? 0.0f : 1.0f;
  case 2: return check_noise(u, t, 2) < -0.8 ? (float)(exp(0.1 * e)) : 0.0f;
  case 3: return t < 200 ? 0.0f : (float)(2.0 + 0.06 * e);
  case 4:
    return t == 0 ? 0.0f : (float)(0.5 * (1.0 - pow(0.95, t)) * (1 + 0.02 * e));
  case 5: return (float)((t < SHIFT_AT ? 1.0 : 10.0) * (1.0 + 0.02 * e));
  case 6:
    if (t == 340 || t == 800) return 500.0f;
    return (float)((t < SHIFT_AT ? 1.0 : 10.0) * (1.0 + 0.02 * e));
  default: return (float)(3.0 + 0.15 * e);
  }
}

static gnmr_config mode_config(int mode) {
  gnmr_config c = mode == 0   ? gnmr_config_default()
                  : mode == 1 ? gnmr_config_paper()
                              : gnmr_config_noise();
  c.max_recovering = 2;
  return c;
}
static const char *const mode_name[] = {"default", "paper", "noise"};

/* The world through one controller on the current path; decisions into
   dec. Returns the controller's level shifts (or -1: a step refused). */
static long run_world(const gnmr_config *c, gnmr_ctl *ctl, gnmr_slot *units) {
  uint32_t t;
  gnmr_counters k;
  if (gnmr_init(ctl, c, units, N) != GNMR_OK) return -1;
  for (t = 0; t < STEPS; t++)
    if (gnmr_step(ctl, world[t], dec[t]) != GNMR_OK) return -1;
  if (gnmr_counters_get(ctl, GNMR_ALL_UNITS, &k) != GNMR_OK) return -1;
  return (long)k.level_shifts;
}

static void make_world(void) {
  uint32_t t, u;
  for (t = 0; t < STEPS; t++)
    for (u = 0; u < N; u++) world[t][u] = norm_of(u, t);
}

/* Steps t in [from, to) on which unit u's scale was below 1. */
static uint32_t clipped(uint32_t u, uint32_t from, uint32_t to) {
  uint32_t t, n = 0;
  for (t = from; t < to; t++) n += dec[t][u].scale < 1.0;
  return n;
}

TEST(a_zero_norm_is_absent_in_every_mode) {
  int mode;
  make_world();
  for (mode = 0; mode < 3; mode++) {
    gnmr_config c = mode_config(mode);
    gnmr_ctl ctl;
    uint32_t t, u;
    REQUIRE(run_world(&c, &ctl, slots) >= 0);
    for (u = 0; u < N; u++) {
      gnmr_counters k;
      uint32_t zeros = 0;
      REQUIRE(gnmr_counters_get(&ctl, u, &k) == GNMR_OK);
      for (t = 0; t < STEPS; t++) {
        const gnmr_decision *d = &dec[t][u];
        if (world[t][u] != 0.0f) continue;
        zeros++;
        if (d->flags != GNMR_FLAG_ABSENT || d->scale != 1.0 ||
            d->action == GNMR_ACTION_RECOVER || d->ratio != 0.0) {
          printf("  %s: unit %u step %u: flags %x scale %g action %d\n",
                 mode_name[mode], u, t, d->flags, d->scale, d->action);
          check__failed_here = 1;
          break;
        }
      }
      /* an absent step counts no observation */
      EXPECT_EQ_INT(k.absent, zeros);
      EXPECT_EQ_INT(k.finite_steps, STEPS - zeros);
    }
    /* 0.3's reproduction: from step 31 on, role 1 is on the cheap path
       with its whole gradient */
    for (u = 1; u < N; u += ROLES) {
      for (t = 31; t < STEPS; t++)
        if (dec[t][u].scale != 1.0 || dec[t][u].action != GNMR_ACTION_KEEP) {
          printf("  %s: unit %u step %u: scale %g action %s\n", mode_name[mode],
                 u, t, dec[t][u].scale, gnmr_action_name(dec[t][u].action));
          check__failed_here = 1;
          break;
        }
      EXPECT_EQ_INT(gnmr_recovering(&ctl, u), 0);
    }
  }
}

TEST(an_expert_routed_on_one_step_in_ten_is_rarely_admitted) {
  int mode;
  make_world();
  for (mode = 0; mode < 3; mode++) {
    gnmr_config c = mode_config(mode);
    gnmr_ctl ctl;
    uint32_t t, u, active = 0, admitted = 0;
    REQUIRE(run_world(&c, &ctl, slots) >= 0);
    for (u = 2; u < N; u += ROLES)
      for (t = 0; t < STEPS; t++) {
        active += world[t][u] != 0.0f;
        admitted += dec[t][u].action == GNMR_ACTION_RECOVER;
      }
    /* under 2% of its active steps (0.3: 43 of 91) */
    printf("  %s: %u admissions in %u active steps\n", mode_name[mode],
           admitted, active);
    EXPECT(active > 200 && admitted * 50 < active);
  }
}

TEST(frozen_then_unfrozen_and_lora_factors_settle) {
  int mode;
  make_world();
  for (mode = 0; mode < 3; mode++) {
    gnmr_config c = mode_config(mode);
    gnmr_ctl ctl;
    uint32_t u;
    REQUIRE(run_world(&c, &ctl, slots) >= 0);
    for (u = 3; u < N; u += ROLES) { /* unfrozen at 200: never clipped */
      EXPECT_EQ_INT(clipped(u, 200, STEPS), 0);
      EXPECT_EQ_INT(gnmr_recovering(&ctl, u), 0);
    }
    for (u = 4; u < N; u += ROLES) { /* the LoRA factor: settled by 150 */
      EXPECT(clipped(u, 0, STEPS) <= 60);
      EXPECT_EQ_INT(clipped(u, 150, STEPS), 0);
      EXPECT_EQ_INT(gnmr_recovering(&ctl, u), 0);
    }
  }
}

TEST(a_clean_level_shift_is_learned_in_bounded_time) {
  int mode;
  make_world();
  for (mode = 0; mode < 3; mode++) {
    gnmr_config c = mode_config(mode);
    gnmr_ctl ctl;
    uint32_t u, worst = 0;
    long shifts = run_world(&c, &ctl, slots);
    REQUIRE(shifts >= 0);
    for (u = 5; u < N; u += ROLES) {
      const uint32_t n = clipped(u, SHIFT_AT, STEPS);
      gnmr_counters k;
      REQUIRE(gnmr_counters_get(&ctl, u, &k) == GNMR_OK);
      if (n > worst) worst = n;
      if (c.shift_steps) EXPECT_EQ_INT(k.level_shifts, 1);
    }
    printf("  %s: a 10x shift, at most %u steps with scale < 1 after it, "
           "%ld level shifts in all\n",
           mode_name[mode], worst, shifts);
    if (c.shift_steps) {
      EXPECT(worst <= 60);
    } else {
      /* the paper's rules: clipped while the mean creeps up (the limit
         gnmr_config_paper() documents) */
      EXPECT(worst > 60);
      EXPECT_EQ_INT(shifts, 0);
    }
  }
}

TEST(a_spike_after_a_learned_shift_is_still_caught) {
  int mode;
  make_world();
  for (mode = 0; mode < 3; mode += 2) { /* the modes that learn levels */
    gnmr_config c = mode_config(mode);
    gnmr_ctl ctl;
    uint32_t u;
    REQUIRE(run_world(&c, &ctl, slots) >= 0);
    for (u = 6; u < N; u += ROLES) {
      static const uint32_t at[] = {340, 800};
      uint32_t i;
      for (i = 0; i < 2; i++) {
        const gnmr_decision *d = &dec[at[i]][u];
        const int risky = (d->flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) != 0;
        /* flagged, clipped to its level, and admitted or refused for lack
           of a slot (the three spike together; two slots) */
        if (!risky || !(d->scale < 0.1) ||
            !(d->action == GNMR_ACTION_RECOVER ||
              (d->flags & GNMR_FLAG_OVER_BUDGET))) {
          printf("  %s: unit %u step %u: flags %x scale %g action %s\n",
                 mode_name[mode], u, at[i], d->flags, d->scale,
                 gnmr_action_name(d->action));
          check__failed_here = 1;
        }
      }
    }
  }
}

/* Every mode on the scalar path and on the AVX-512 path: the same
   decisions and the same state, bit for bit. */
TEST(scalar_and_avx512_agree_on_quiet_units_and_shifts) {
  static gnmr_decision first[STEPS][N];
  int mode, best = gnmr_ctl_isa_active();
  if (gnmr_ctl_isa_force(GNMR_ISA_AVX512) != GNMR_OK)
    SKIP("no AVX-512 here: nothing to compare");
  make_world();
  for (mode = 0; mode < 3; mode++) {
    gnmr_config c = mode_config(mode);
    gnmr_ctl a, b;
    REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    REQUIRE(run_world(&c, &a, slots) >= 0);
    memcpy(first, dec, sizeof dec);
    REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
    REQUIRE(run_world(&c, &b, slots_b) >= 0);
    EXPECT(memcmp(first, dec, sizeof dec) == 0);
    EXPECT(memcmp(slots, slots_b, sizeof slots) == 0);
  }
  gnmr_ctl_isa_force(best);
}

/* Saved in the middle of a shift's run (and of absent steps), loaded into
   a fresh controller: it goes on as the run never interrupted. */
TEST(checkpoint_mid_run_resumes_identically) {
  static unsigned char buf[1 << 14];
  static gnmr_decision want[STEPS][N], got[N];
  uint32_t cut;
  make_world();
  for (cut = SHIFT_AT + 3; cut < SHIFT_AT + 40; cut += 9) {
    gnmr_config c = mode_config(cut % 2 ? 0 : 2);
    gnmr_ctl a, b;
    size_t len;
    uint32_t t;
    REQUIRE(run_world(&c, &a, slots) >= 0);
    memcpy(want, dec, sizeof dec);
    REQUIRE(gnmr_init(&a, &c, slots, N) == GNMR_OK);
    for (t = 0; t < cut; t++) REQUIRE(gnmr_step(&a, world[t], NULL) == GNMR_OK);
    REQUIRE(gnmr_checkpoint_save(&a, buf, sizeof buf, &len) == GNMR_OK);
    REQUIRE(gnmr_init(&b, &c, slots_b, N) == GNMR_OK);
    REQUIRE(gnmr_checkpoint_load(&b, buf, len) == GNMR_OK);
    for (t = cut; t < STEPS; t++) {
      REQUIRE(gnmr_step(&b, world[t], got) == GNMR_OK);
      if (memcmp(got, want[t], sizeof got) != 0) {
        printf("  cut %u: step %u differs\n", cut, t);
        check__failed_here = 1;
        break;
      }
    }
  }
}

/* A checkpoint whose run no step can write is refused: a run of FALLs in
   PAPER mode, lo above hi, a run ending past k or longer than it, a
   cleared run with bits. */
TEST(checkpoint_refuses_a_run_no_step_can_write) {
  static unsigned char buf[1 << 14], bad[1 << 14];
  /* unit 5's run, in the unit's record (gnmr.h, "checkpoint"): before
     lock, cooldown and the band's two u32, its two words (gnmr__run_*) */
  const size_t unit5 = GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG +
                       GNMR__CKPT_TOTALS + 5 * (size_t)GNMR__CKPT_UNIT,
               word = unit5 + GNMR__CKPT_UNIT - 32, lo = word + 8,
               hi = word + 12;
  const uint64_t k5 = (uint64_t)SHIFT_AT + 5; /* unit 5's k when saved */
  gnmr_config c = mode_config(0);
  gnmr_ctl a, b;
  size_t len;
  uint32_t t;
  uint64_t w, w5;
  float f;
  make_world();
  REQUIRE(gnmr_init(&a, &c, slots, N) == GNMR_OK);
  for (t = 0; t < SHIFT_AT + 5; t++)
    REQUIRE(gnmr_step(&a, world[t], NULL) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_save(&a, buf, sizeof buf, &len) == GNMR_OK);
  REQUIRE(gnmr_init(&b, &c, slots_b, N) == GNMR_OK);
  /* the run as saved: 5 flagged steps ending at k, [lo, hi] around 10 */
  {
    const unsigned char *p = buf + word;
    gnmr__get(&p, &w5, 8);
    EXPECT(w5 == (k5 | (uint64_t)5 << 48));
    p = buf + lo;
    gnmr__get(&p, &f, 4);
    EXPECT(f > 9.0f && f < 11.0f);
  }
#define FORGED(offset, bytes, value)                                           \
  do {                                                                         \
    memcpy(bad, buf, len);                                                     \
    gnmr__put(bad + (offset), (value), (bytes));                               \
    gnmr__put_u32(bad + len - 4, gnmr__crc32(bad, len - 4));                   \
    EXPECT_EQ_INT(gnmr_checkpoint_load(&b, bad, len), GNMR_ECORRUPT);          \
  } while (0)
  w = w5 | (uint64_t)1 << 63;
  FORGED(word, 8, &w); /* FALLs in PAPER mode */
  f = 20.0f;
  FORGED(lo, 4, &f); /* lo above hi */
  f = -1.0f;
  FORGED(hi, 4, &f);
  w = (k5 + 94) | (uint64_t)5 << 48; /* ending past the unit's k */
  FORGED(word, 8, &w);
  w = k5 | (uint64_t)(k5 + 1) << 48; /* longer than k */
  FORGED(word, 8, &w);
  w = k5; /* no run (length 0), but its fields set */
  FORGED(word, 8, &w);
#undef FORGED
  EXPECT_EQ_INT(gnmr_checkpoint_load(&b, buf, len), GNMR_OK);
}

/* Rule 9's settings: P = 1, P over GNMR_SHIFT_STEPS_MAX and a spread that
   is not finite or negative are refused, naming the field. */
TEST(shift_settings_are_checked) {
  gnmr_config c = gnmr_config_default();
  const char *field = NULL;
  c.shift_steps = 1;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "shift_steps") == 0);
  c.shift_steps = GNMR_SHIFT_STEPS_MAX + 1; /* a run's length: 15 bits */
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "shift_steps") == 0);
  c.shift_steps = GNMR_SHIFT_STEPS_MAX;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_OK);
  c = gnmr_config_default();
  c.shift_spread = -0.5;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "shift_spread") == 0);
  c.shift_spread = (double)NAN;
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_ECONFIG);
  c = gnmr_config_paper();
  EXPECT_EQ_INT(c.shift_steps, 0);
  EXPECT_EQ_INT(gnmr_config_check(&c, 4, &field), GNMR_OK);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(a_zero_norm_is_absent_in_every_mode),
      CHECK_CASE(an_expert_routed_on_one_step_in_ten_is_rarely_admitted),
      CHECK_CASE(frozen_then_unfrozen_and_lora_factors_settle),
      CHECK_CASE(a_clean_level_shift_is_learned_in_bounded_time),
      CHECK_CASE(a_spike_after_a_learned_shift_is_still_caught),
      CHECK_CASE(scalar_and_avx512_agree_on_quiet_units_and_shifts),
      CHECK_CASE(checkpoint_mid_run_resumes_identically),
      CHECK_CASE(checkpoint_refuses_a_run_no_step_can_write),
      CHECK_CASE(shift_settings_are_checked),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
