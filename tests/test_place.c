/* test_place.c - the placer (rules P1-P7): a budget of high precision
   placed in time by each unit's update against its weights' quantization
   error. Synthetic runs of 9 units shaped like the LM demo's (costs 3, 1,
   4, 4 per block and a head), the update norm following a learning-rate
   schedule (cosine to 1/10, or WSD: constant, then a linear decay over the
   last 20%) and the quantization error growing as the weights grow:
     - nothing fires in warm-up; a falling signal fires, a flat one never;
     - the budget holds at every prefix of the run, for any budget;
     - scaling the signals leaves the decisions as they were;
     - refusals leave the placer bit for bit as it was;
     - a checkpoint resumes identically; damaged ones are refused whole;
     - the credit saturates rather than overflow, and a level whose term
       overflows is no level, so a placer of huge costs or signals still
       saves (both found by tests/fuzz/fuzz_place.c);
     - the decisions equal the LM demo's upd-late prototype's
       (lab/train_lm.c), transcribed below, on the same inputs. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#include <float.h>

#define NU 9
#define STEPS 1000

static const double COSTS[NU] = {3, 1, 4, 4, 3, 1, 4, 4, 4};

enum { W_COSINE, W_WSD, W_FLAT, W_STEP };

/* The learning rate of schedule w at step t of STEPS (1 at its peak). */
static double lr_of(int w, uint32_t t) {
  const double x = (double)t / STEPS, pi = 3.14159265358979323846;
  if (t < 20) return (t + 1) / 20.0; /* warm-up */
  switch (w) {
  case W_COSINE: return 0.1 + 0.45 * (1 + cos(pi * x));
  case W_WSD: return x < 0.8 ? 1.0 : 1.0 - 0.9 * (x - 0.8) / 0.2;
  case W_STEP: return t < 600 ? 1.0 : 0.02; /* a sudden fall */
  default: return 1.0;
  }
}

/* Unit u's signals at step t of world w: the update's norm, and the
   weights' quantization error (a float, as the demo measures it). */
static double update_of(int w, uint32_t u, uint32_t t) {
  return 0.01 * (1 + 0.2 * u) * lr_of(w, t) * (1 + 0.1 * check_noise(u, t, 1));
}
static float qerr_of(int w, uint32_t u, uint32_t t) {
  const double grow = w == W_FLAT ? 1.0 : 1.0 + 2.0 * t / STEPS;
  return (float)(0.5 * (1 + 0.1 * u) * grow *
                 (1 + 0.01 * check_noise(u, t, 2)));
}

/* A run: decisions[t][u] is unit u's path on step t + 1. */
static uint8_t decisions[STEPS][NU];

static int run(gnmr_place *pl, gnmr_place_unit *units,
               const gnmr_place_config *c, int w, double su, double sq,
               uint32_t from, uint32_t to) {
  uint32_t t, u;
  if (from == 0 && gnmr_place_init(pl, c, units, COSTS, NU) != GNMR_OK)
    return 0;
  for (t = from; t < to; t++) {
    double up[NU], q[NU];
    for (u = 0; u < NU; u++) {
      up[u] = su * update_of(w, u, t);
      q[u] = sq * (double)qerr_of(w, u, t);
    }
    if (gnmr_place_step(pl, up, q, decisions[t]) != GNMR_OK) return 0;
  }
  return 1;
}

/* Unit u's state (the block is laid out by field: read it through the
   library). */
static gnmr_place_unit_state unit_of(const gnmr_place *pl, uint32_t u) {
  gnmr_place_unit_state x;
  memset(&x, 0xEE, sizeof x);
  if (gnmr_place_unit_info(pl, u, &x) != GNMR_OK) memset(&x, 0xEE, sizeof x);
  return x;
}

/* What unit u pays for a step whose decision is high (GNMR_GEMM_* bits):
   a third of its cost per GEMM. */
static double paid(uint8_t high, uint32_t u) {
  return COSTS[u] * ((high & 1) + (high >> 1 & 1) + (high >> 2 & 1)) / 3.0;
}

static uint32_t fired_step(const gnmr_place *pl) {
  gnmr_place_report r;
  if (gnmr_place_info(pl, &r) != GNMR_OK) return 0;
  return r.fired_step == UINT64_MAX ? UINT32_MAX : (uint32_t)r.fired_step;
}

TEST(config_defaults_and_checks_name_the_field) {
  gnmr_place_config c = gnmr_place_config_default();
  const char *field = "x";
  EXPECT_EQ_INT(gnmr_place_config_check(&c, &field), GNMR_OK);
  EXPECT(field == NULL);
  EXPECT_EQ_BITS(c.budget, 0.1);
  EXPECT_EQ_BITS(c.update_decay, 0.95);
  EXPECT_EQ_BITS(c.fire_level, 0.05);
  EXPECT_EQ_BITS(c.fall_ratio, 0.6);
  EXPECT_EQ_BITS(c.fast_decay, 0.9);
  EXPECT_EQ_BITS(c.slow_decay, 0.99);
  EXPECT_EQ_INT(c.warmup_steps, 50);
#define BAD(field_, value, name)                                               \
  do {                                                                         \
    gnmr_place_config b = gnmr_place_config_default();                         \
    b.field_ = value;                                                          \
    field = NULL;                                                              \
    EXPECT_EQ_INT(gnmr_place_config_check(&b, &field), GNMR_ECONFIG);          \
    EXPECT(field &&strcmp(field, name) == 0);                                  \
  } while (0)
  BAD(budget, 0.0, "budget");
  BAD(budget, 1.5, "budget");
  BAD(budget, (double)NAN, "budget");
  BAD(update_decay, 1.0, "update_decay");
  BAD(update_decay, -0.1, "update_decay");
  BAD(fire_level, (double)INFINITY, "fire_level");
  BAD(fall_ratio, 1.0, "fall_ratio");
  BAD(fast_decay, (double)NAN, "fast_decay");
  BAD(slow_decay, 2.0, "slow_decay");
  BAD(gemms, 0, "gemms");
  BAD(gemms, 8, "gemms");
  BAD(serve, 2, "serve");
  {
    gnmr_place_config b = gnmr_place_config_default(); /* LOW: no backward */
    b.serve = GNMR_SERVE_LOW;
    b.gemms = GNMR_GEMM_FWD;
    EXPECT_EQ_INT(gnmr_place_config_check(&b, &field), GNMR_ECONFIG);
    EXPECT(field && strcmp(field, "serve") == 0);
    b.gemms = GNMR_GEMM_FWD | GNMR_GEMM_WGRAD; /* the forward is dropped */
    EXPECT_EQ_INT(gnmr_place_config_check(&b, NULL), GNMR_OK);
  }
#undef BAD
  EXPECT_EQ_INT(c.planned_steps, 0); /* not told */
  EXPECT_EQ_INT(c.gemms, GNMR_GEMM_ALL);
  EXPECT_EQ_INT(c.serve, GNMR_SERVE_HIGH);
  c.planned_steps = UINT32_MAX; /* any plan */
  EXPECT_EQ_INT(gnmr_place_config_check(&c, NULL), GNMR_OK);
  c.budget = 1.0; /* the whole run may be high-fidelity */
  EXPECT_EQ_INT(gnmr_place_config_check(&c, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_config_check(NULL, &field), GNMR_EINVAL);
  EXPECT(gnmr_config_check(NULL, 1, NULL) == GNMR_EINVAL); /* untouched */
}

TEST(init_refuses_bad_arguments_and_changes_nothing) {
  gnmr_place pl, before;
  gnmr_place_unit units[NU], ubefore[NU];
  gnmr_place_config c = gnmr_place_config_default();
  double costs[NU];
  memset(&pl, 0xA5, sizeof pl);
  memset(units, 0x5A, sizeof units);
  before = pl;
  memcpy(ubefore, units, sizeof units);
  memcpy(costs, COSTS, sizeof costs);
  EXPECT_EQ_INT(gnmr_place_init(NULL, &c, units, costs, NU), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_init(&pl, NULL, units, costs, NU), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, NULL, costs, NU), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, NULL, NU), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, 0), GNMR_EINVAL);
  costs[3] = 0.0;
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_EINVAL);
  costs[3] = -1.0;
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_EINVAL);
  costs[3] = (double)NAN;
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_EINVAL);
  costs[3] = (double)INFINITY;
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_EINVAL);
  costs[3] = DBL_MAX;
  costs[4] = DBL_MAX; /* each finite, their sum not */
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_EINVAL);
  memcpy(costs, COSTS, sizeof costs);
  c.fire_level = 2.0;
  EXPECT_EQ_INT(gnmr_place_init(&pl, &c, units, costs, NU), GNMR_ECONFIG);
  EXPECT(memcmp(&pl, &before, sizeof pl) == 0);
  EXPECT(memcmp(units, ubefore, sizeof units) == 0);
  /* an uninitialised placer is refused by every call */
  {
    double s[NU] = {0};
    size_t w = 0;
    gnmr_place_report r;
    EXPECT_EQ_INT(gnmr_place_step(&pl, s, s, NULL), GNMR_ESTATE);
    EXPECT_EQ_INT(gnmr_place_high(&pl, 0), 0);
    EXPECT_EQ_INT(gnmr_place_info(&pl, &r), GNMR_ESTATE);
    EXPECT_EQ_INT(gnmr_place_checkpoint_size(&pl), 0);
    EXPECT_EQ_INT(gnmr_place_checkpoint_save(&pl, NULL, 0, &w), GNMR_ESTATE);
    EXPECT(memcmp(&pl, &before, sizeof pl) == 0);
  }
}

TEST(nothing_fires_in_warmup_then_a_fall_fires) {
  gnmr_place pl;
  gnmr_place_unit units[NU];
  gnmr_place_config c = gnmr_place_config_default();
  uint32_t t, u;
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  /* r falls to 1% of its maximum on the second step: the level is under
     fire_level from then on, and still nothing fires in warm-up */
  for (t = 0; t < 200; t++) {
    double up[NU], q[NU];
    for (u = 0; u < NU; u++) {
      up[u] = t == 0 ? 1.0 : 1e-4;
      q[u] = 1.0;
    }
    REQUIRE(gnmr_place_step(&pl, up, q, decisions[t]) == GNMR_OK);
    if (t < c.warmup_steps) {
      EXPECT_EQ_INT(pl.n_fired, 0);
      for (u = 0; u < NU; u++) EXPECT_EQ_INT(decisions[t][u], 0);
    }
  }
  /* the level's 51st step (warm-up 50) is step 50 */
  EXPECT_EQ_INT(fired_step(&pl), c.warmup_steps);
  /* the first step after it runs high-fidelity what its credit covers */
  {
    double spent = 0;
    for (u = 0; u < NU; u++) spent += decisions[c.warmup_steps][u] * COSTS[u];
    EXPECT(spent > 0);
  }
  /* the same with warm-up 120: fires at 120, not before */
  c.warmup_steps = 120;
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  for (t = 0; t < 200; t++) {
    double up[NU], q[NU];
    for (u = 0; u < NU; u++) {
      up[u] = t == 0 ? 1.0 : 1e-4;
      q[u] = 1.0;
    }
    REQUIRE(gnmr_place_step(&pl, up, q, NULL) == GNMR_OK);
  }
  EXPECT_EQ_INT(fired_step(&pl), 120);
}

/* Told T, the run fires at the first step t whose credit, with what the
   steps after earn, pays the fired GEMMs to the end: in exact arithmetic,
   with B = p / q and k GEMMs of 3 (S = k C / 3), credit (t + 2) B C and
   R = T - 1 - t steps left, (t + 1) 3 p >= R (k q - 3 p). Held on budgets
   of 1/20, 1/10 and 1/5, plans of 40 to 1000 steps, every set of GEMMs and
   every world (the level is not read: a flat one fires too), and from the
   fire to the end each step runs every unit's GEMMs of the set, the last
   planned step too (rule P7 absorbs the credit's rounding there); the
   budget holds at every prefix of the plan. */
TEST(told_the_plan_it_fires_where_the_credit_reaches_the_end) {
  static const uint32_t plans[] = {40, 333, 1000};
  static const int p_of[] = {1, 1, 1}, q_of[] = {20, 10, 5};
  static const uint32_t sets[] = {GNMR_GEMM_ALL, GNMR_GEMM_FWD,
                                  GNMR_GEMM_FWD | GNMR_GEMM_DGRAD,
                                  GNMR_GEMM_WGRAD};
  const double total = 28;
  size_t b, k, i;
  int w, checked = 0;
  for (b = 0; b < 3; b++)
    for (i = 0; i < 3; i++)
      for (k = 0; k < 4; k++)
        for (w = W_COSINE; w <= W_STEP; w++) {
          gnmr_place pl;
          gnmr_place_unit units[NU];
          gnmr_place_config c = gnmr_place_config_default();
          const uint32_t T = plans[i], g = sets[k];
          const long p = p_of[b], q = q_of[b],
                     n = (long)((g & 1) + (g >> 1 & 1) + (g >> 2 & 1));
          uint32_t t, u, want = T - 1, f;
          double spent = 0;
          int ok = 1, full = 1;
          c.budget = (double)p / (double)q;
          c.planned_steps = T;
          c.gemms = g;
          for (t = 0; t + 1 < T; t++)
            if ((long)(t + 1) * 3 * p >= (long)(T - 1 - t) * (n * q - 3 * p)) {
              want = t;
              break;
            }
          REQUIRE(run(&pl, units, &c, w, 1, 1, 0, T));
          f = fired_step(&pl);
          EXPECT_EQ_INT(f, want);
          for (t = 0; t < T; t++) {
            for (u = 0; u < NU; u++) {
              const uint8_t d = decisions[t][u];
              if (d != 0 && d != g) ok = 0; /* the set, or nothing */
              if (t < f && d) ok = 0;       /* nothing before the fire */
              if (t >= f && t + 1 < T && d != g) full = 0;
              /* the last call decides a step past the plan (rule P7):
                 the last planned step's placement, unpaid */
              if (t + 1 == T && d != decisions[t - 1][u]) ok = 0;
              if (t + 1 < T) spent += paid(d, u);
            }
            if (spent > c.budget * total * (t + 2) * (1 + 1e-12)) ok = 0;
          }
          EXPECT(ok);
          EXPECT(full);
          checked++;
        }
  EXPECT_EQ_INT(checked, 3 * 3 * 4 * 4);
}

/* A run longer than its plan (rule P7): after its last planned step every
   unit keeps the GEMMs it ran on that step, for good, and nothing more is
   paid: the budget holds over the plan, and the placer's final state is
   the last planned step's placement, the one to serve. A checkpoint taken
   at the end restores it. */
TEST(after_its_plan_the_placement_of_the_last_step_stays) {
  gnmr_place pl, back;
  gnmr_place_unit units[NU], bunits[NU];
  gnmr_place_config c = gnmr_place_config_default();
  gnmr_place_report r0, r1;
  const double total = 28;
  const uint32_t T = 500;
  double spent = 0;
  uint32_t t, u, last_high = 0;
  int ok = 1, same = 1;
  unsigned char buf[4096];
  size_t n = 0;
  c.planned_steps = T;
  REQUIRE(run(&pl, units, &c, W_COSINE, 1, 1, 0, T));
  /* decisions[T - 2] is the last planned step's (step T - 1) */
  for (u = 0; u < NU; u++) last_high += decisions[T - 2][u] != 0;
  /* the credit carries every unit to the end, rounding absorbed */
  EXPECT_EQ_INT(last_high, NU);
  for (u = 0; u < NU; u++)
    EXPECT_EQ_INT(gnmr_place_high(&pl, u), decisions[T - 2][u]);
  REQUIRE(gnmr_place_info(&pl, &r0) == GNMR_OK);
  REQUIRE(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &n) == GNMR_OK);
  REQUIRE(gnmr_place_init(&back, &c, bunits, COSTS, NU) == GNMR_OK);
  REQUIRE(gnmr_place_checkpoint_load(&back, buf, n) == GNMR_OK);
  for (u = 0; u < NU; u++)
    EXPECT_EQ_INT(gnmr_place_high(&back, u), decisions[T - 2][u]);
  REQUIRE(gnmr_place_info(&back, &r1) == GNMR_OK);
  EXPECT_EQ_BITS(r1.high_share, r0.high_share);
  EXPECT_EQ_BITS(r0.high_share, 1.0);
  REQUIRE(run(&pl, units, &c, W_COSINE, 1, 1, T, STEPS)); /* past the plan */
  for (t = 0; t < STEPS; t++) {
    for (u = 0; u < NU; u++) {
      if (t + 1 < T) spent += paid(decisions[t][u], u);
      if (t + 1 >= T && decisions[t][u] != decisions[T - 2][u]) same = 0;
    }
    if (t + 1 < T && spent > c.budget * total * (t + 2) * (1 + 1e-12)) ok = 0;
  }
  EXPECT(ok);
  EXPECT(same);
  EXPECT(fired_step(&pl) < T);
}

/* Served on the low format: the forward GEMM is never placed; a fired unit
   runs its backward GEMMs of cfg.gemms and pays their share. */
TEST(served_low_places_backward_gemms_only) {
  gnmr_place pl;
  gnmr_place_unit units[NU];
  gnmr_place_config c = gnmr_place_config_default();
  const uint32_t T = 400;
  const double total = 28;
  double spent = 0;
  uint32_t t, u, seen = 0;
  int ok = 1;
  c.planned_steps = T;
  c.serve = GNMR_SERVE_LOW; /* gemms ALL: dgrad and wgrad */
  REQUIRE(run(&pl, units, &c, W_COSINE, 1, 1, 0, T));
  for (t = 0; t < T; t++)
    for (u = 0; u < NU; u++) {
      const uint8_t d = decisions[t][u];
      if (d != 0 && d != (GNMR_GEMM_DGRAD | GNMR_GEMM_WGRAD)) ok = 0;
      seen += d != 0;
      if (t + 1 < T) spent += paid(d, u);
    }
  EXPECT(ok);
  EXPECT(seen > 0);
  EXPECT(spent <= c.budget * total * (T + 1) * (1 + 1e-12));
  /* two GEMMs of three: the fire comes where (t + 1) 3 p >= R (2 q - 3 p),
     p / q = 1 / 10: t + 1 >= 17 (T - 1 - t) / 3 */
  for (t = 0; t + 1 < T; t++)
    if ((long)(t + 1) * 3 >= (long)(T - 1 - t) * 17) break;
  EXPECT_EQ_INT(fired_step(&pl), t);
}

TEST(a_falling_signal_fires_a_flat_one_never) {
  gnmr_place pl;
  gnmr_place_unit units[NU];
  const gnmr_place_config c = gnmr_place_config_default();
  uint32_t f;
  REQUIRE(run(&pl, units, &c, W_FLAT, 1, 1, 0, STEPS));
  EXPECT_EQ_INT(fired_step(&pl), UINT32_MAX);
  EXPECT_EQ_INT(pl.n_fired, 0);
  REQUIRE(run(&pl, units, &c, W_COSINE, 1, 1, 0, STEPS));
  f = fired_step(&pl);
  printf("  cosine fires at step %u\n", (unsigned)f);
  EXPECT(f > 700 && f < STEPS); /* late: the level is relative to the run */
  REQUIRE(run(&pl, units, &c, W_WSD, 1, 1, 0, STEPS));
  f = fired_step(&pl);
  printf("  WSD fires at step %u\n", (unsigned)f);
  EXPECT(f > 800 && f < STEPS); /* in the decay, not in the long flat part */
  REQUIRE(run(&pl, units, &c, W_STEP, 1, 1, 0, STEPS));
  f = fired_step(&pl);
  printf("  a sudden fall at step 600 fires at step %u\n", (unsigned)f);
  EXPECT(f >= 600 && f < 630); /* caught within steps */
}

/* Two placers hold the same state: every field bit for bit but units,
   gen and seal (the guard's: each counts its own placer's changes), and
   every unit's state. */
static int same_state(const gnmr_place *a, const gnmr_place *b) {
  gnmr_place x = *b;
  uint32_t u;
  x.units = a->units;
  x.gen = a->gen;
  x.seal = a->seal;
  if (memcmp(a, &x, sizeof x) != 0) return 0;
  for (u = 0; u < a->n_units; u++) {
    const gnmr_place_unit_state ua = unit_of(a, u), ub = unit_of(b, u);
    if (memcmp(&ua, &ub, sizeof ua) != 0) return 0;
  }
  return 1;
}

/* Unit-steps' cost through step t never above what t + 1 steps earn. */
TEST(the_budget_holds_at_every_prefix) {
  static const double budgets[] = {0.01, 0.05, 0.1, 0.3, 1.0};
  const double total = 28;
  size_t b;
  int w, checked = 0;
  for (b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
    for (w = W_COSINE; w <= W_STEP; w++) {
      gnmr_place pl;
      gnmr_place_unit units[NU];
      gnmr_place_config c = gnmr_place_config_default();
      double spent = 0;
      uint32_t t, u;
      int ok = 1, any = 0;
      c.budget = budgets[b];
      REQUIRE(run(&pl, units, &c, w, 1, 1, 0, STEPS));
      /* step 0 runs low precision (no decision yet): decisions[t] is step
         t + 1's, which t + 2 steps' earnings pay for */
      for (t = 0; t < STEPS; t++) {
        for (u = 0; u < NU; u++) spent += paid(decisions[t][u], u);
        if (spent > c.budget * total * (t + 2) * (1 + 1e-12)) ok = 0;
        any |= spent > 0;
      }
      EXPECT(ok);
      if (w != W_FLAT) {
        EXPECT(any); /* and it does spend */
        checked++;
      }
      /* with the whole budget, every unit runs high from the fire on */
      if (budgets[b] == 1.0 && w != W_FLAT)
        for (u = 0; u < NU; u++)
          EXPECT_EQ_INT(decisions[STEPS - 1][u], GNMR_GEMM_ALL);
    }
  EXPECT_EQ_INT(checked, 15);
}

TEST(scaling_the_signals_changes_no_decision) {
  static uint8_t first[STEPS][NU];
  static const double scales[][2] = {{4, 1}, {1, 0.25}, {1024, 1024},
                                     {3, 1}, {1, 7},    {1e-6, 1e3}};
  const gnmr_place_config c = gnmr_place_config_default();
  int w;
  size_t k;
  for (w = W_COSINE; w <= W_STEP; w++) {
    gnmr_place pl;
    gnmr_place_unit units[NU];
    uint32_t f;
    REQUIRE(run(&pl, units, &c, w, 1, 1, 0, STEPS));
    memcpy(first, decisions, sizeof first);
    f = fired_step(&pl);
    for (k = 0; k < sizeof scales / sizeof scales[0]; k++) {
      REQUIRE(run(&pl, units, &c, w, scales[k][0], scales[k][1], 0, STEPS));
      EXPECT_EQ_INT(fired_step(&pl), f);
      EXPECT(memcmp(first, decisions, sizeof first) == 0);
    }
  }
}

TEST(nan_and_inf_signals_are_skipped_and_negatives_refused) {
  gnmr_place pl, before;
  gnmr_place_unit units[NU], ubefore[NU];
  const gnmr_place_config c = gnmr_place_config_default();
  double up[NU], q[NU];
  uint8_t high[NU], hbefore[NU];
  uint32_t u, t;
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  for (t = 0; t < 100; t++) {
    for (u = 0; u < NU; u++) {
      up[u] = update_of(W_COSINE, u, t);
      q[u] = qerr_of(W_COSINE, u, t);
    }
    REQUIRE(gnmr_place_step(&pl, up, q, high) == GNMR_OK);
  }
  /* non-finite or zero: that unit's signal is skipped this step */
  {
    static const double odd[] = {(double)NAN, (double)INFINITY,
                                 -(double)INFINITY};
    size_t k;
    for (k = 0; k < 3; k++) {
      gnmr_place_unit_state u3 = unit_of(&pl, 3), u5 = unit_of(&pl, 5), x;
      uint64_t seen0 = unit_of(&pl, 0).seen;
      up[3] = odd[k];
      q[5] = odd[k];
      REQUIRE(gnmr_place_step(&pl, up, q, high) == GNMR_OK);
      x = unit_of(&pl, 3);
      EXPECT(memcmp(&x, &u3, sizeof u3) == 0);
      x = unit_of(&pl, 5);
      EXPECT(memcmp(&x, &u5, sizeof u5) == 0);
      EXPECT_EQ_INT(unit_of(&pl, 0).seen, seen0 + 1);
    }
    q[5] = 0.0; /* no error to compare with: no observation */
    {
      gnmr_place_unit_state u5 = unit_of(&pl, 5), x;
      REQUIRE(gnmr_place_step(&pl, up, q, high) == GNMR_OK);
      x = unit_of(&pl, 5);
      EXPECT(memcmp(&x, &u5, sizeof u5) == 0);
    }
    q[5] = -0.0; /* not negative */
    EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, high), GNMR_OK);
    q[5] = 1.0;
    up[3] = 0.0; /* no update is an observation: r = 0 */
    EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, high), GNMR_OK);
    up[3] = 1.0;
  }
  /* refused whole: the placer, its units and high stay bit for bit */
  before = pl;
  memcpy(ubefore, units, sizeof units);
  memset(high, 7, sizeof high);
  memcpy(hbefore, high, sizeof high);
  up[8] = -1e-30;
  EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, high), GNMR_ENORM);
  up[8] = 1.0;
  q[0] = -2.0;
  EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, high), GNMR_ENORM);
  q[0] = 1.0;
  EXPECT_EQ_INT(gnmr_place_step(NULL, up, q, high), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_step(&pl, NULL, q, high), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_step(&pl, up, NULL, high), GNMR_EINVAL);
  EXPECT(memcmp(&pl, &before, sizeof pl) == 0);
  EXPECT(memcmp(units, ubefore, sizeof units) == 0);
  EXPECT(memcmp(high, hbefore, sizeof high) == 0);
  EXPECT_EQ_INT(gnmr_place_high(NULL, 0), 0);
  EXPECT_EQ_INT(gnmr_place_high(&pl, NU), 0);
  EXPECT_EQ_INT(gnmr_place_info(&pl, NULL), GNMR_EINVAL);
}

TEST(checkpoint_mid_run_resumes_identically) {
  static uint8_t whole[STEPS][NU];
  static unsigned char buf[4096];
  static const uint32_t cuts[] = {1, 30, 500, 960, 999};
  const gnmr_place_config c = gnmr_place_config_default();
  gnmr_place a, b;
  gnmr_place_unit ua[NU], ub[NU];
  size_t k, n = 0;
  int w;
  for (w = W_COSINE; w <= W_STEP; w++) {
    uint32_t f;
    REQUIRE(run(&a, ua, &c, w, 1, 1, 0, STEPS));
    memcpy(whole, decisions, sizeof whole);
    f = fired_step(&a);
    for (k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      gnmr_place_config other = gnmr_place_config_default();
      double ones[NU];
      uint32_t u;
      for (u = 0; u < NU; u++) ones[u] = 1.0;
      REQUIRE(run(&a, ua, &c, w, 1, 1, 0, cuts[k]));
      REQUIRE(gnmr_place_checkpoint_save(&a, buf, sizeof buf, &n) == GNMR_OK);
      REQUIRE(n == gnmr_place_checkpoint_size(&a));
      /* into a placer of another config and costs: the checkpoint's win */
      other.budget = 0.5;
      REQUIRE(gnmr_place_init(&b, &other, ub, ones, NU) == GNMR_OK);
      REQUIRE(gnmr_place_checkpoint_load(&b, buf, n) == GNMR_OK);
      REQUIRE(run(&b, ub, &c, w, 1, 1, cuts[k], STEPS));
      REQUIRE(run(&a, ua, &c, w, 1, 1, 0, STEPS)); /* a's whole run again */
      EXPECT(memcmp(whole, decisions, sizeof whole) == 0);
      EXPECT_EQ_INT(fired_step(&b), f);
      EXPECT(same_state(&a, &b)); /* the rest bit for bit */
    }
  }
  /* b resumed on its own from the cut and decided as a: checked above
     through decisions, which run() wrote from b's steps after the cut and
     a's whole run overwrote; now check b's alone */
  REQUIRE(run(&a, ua, &c, W_COSINE, 1, 1, 0, 700));
  REQUIRE(gnmr_place_checkpoint_save(&a, buf, sizeof buf, &n) == GNMR_OK);
  REQUIRE(run(&a, ua, &c, W_COSINE, 1, 1, 0, STEPS));
  memcpy(whole, decisions, sizeof whole);
  memset(decisions, 9, sizeof decisions);
  REQUIRE(gnmr_place_init(&b, &c, ub, COSTS, NU) == GNMR_OK);
  REQUIRE(gnmr_place_checkpoint_load(&b, buf, n) == GNMR_OK);
  REQUIRE(run(&b, ub, &c, W_COSINE, 1, 1, 700, STEPS));
  EXPECT(memcmp(whole[700], decisions[700], (STEPS - 700) * NU) == 0);
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

/* CRC-32 (IEEE), as the checkpoint's. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  while (n--) {
    int j;
    crc ^= *p++;
    for (j = 0; j < 8; j++)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

/* A placer edited by hand (its budget here) is refused at its next step,
   with the code whose message names the placer; before, it stepped on with
   the old budget's earning. So is a field the step trusts (the total). */
TEST(a_placer_edited_by_hand_is_refused_at_its_next_step) {
  gnmr_place pl;
  gnmr_place_unit units[NU], ubefore[NU];
  const gnmr_place_config c = gnmr_place_config_default();
  double ones[NU];
  uint8_t high[NU];
  uint32_t u;
  for (u = 0; u < NU; u++) ones[u] = 1.0;
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  REQUIRE(gnmr_place_step(&pl, ones, ones, high) == GNMR_OK);
  pl.cfg.budget = 0.5;
  memcpy(ubefore, units, sizeof units);
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, high), GNMR_ESTATE);
  EXPECT(memcmp(ubefore, units, sizeof units) == 0);
  EXPECT(strstr(gnmr_strerror(GNMR_ESTATE), "placer") != NULL);
  pl.cfg.budget = c.budget; /* put back: usable again */
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, high), GNMR_OK);
  pl.total *= 2;
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, high), GNMR_ESTATE);
}

/* A struct copy shares the unit block: once either steps, the other is
   refused (before, both stepped on one unit array). A copy made with a
   checkpoint runs on its own. */
TEST(a_struct_copy_is_refused_once_its_twin_steps) {
  static unsigned char buf[4096];
  gnmr_place pl, copy, own;
  gnmr_place_unit units[NU], own_units[NU];
  const gnmr_place_config c = gnmr_place_config_default();
  double ones[NU];
  gnmr_place_report rep;
  size_t n = 0;
  uint32_t u;
  for (u = 0; u < NU; u++) ones[u] = 1.0;
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  copy = pl;
  EXPECT_EQ_INT(gnmr_place_step(&copy, ones, ones, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, NULL), GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_place_info(&pl, &rep), GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &n),
                GNMR_ESTATE);
  EXPECT_EQ_INT(gnmr_place_step(&copy, ones, ones, NULL), GNMR_OK);
  /* the other way round: the original steps, the copy is refused */
  REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
  copy = pl;
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_step(&copy, ones, ones, NULL), GNMR_ESTATE);
  /* a checkpoint's copy steps beside the original */
  REQUIRE(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &n) == GNMR_OK);
  REQUIRE(gnmr_place_init(&own, &c, own_units, COSTS, NU) == GNMR_OK);
  REQUIRE(gnmr_place_checkpoint_load(&own, buf, n) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_step(&own, ones, ones, NULL), GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_step(&pl, ones, ones, NULL), GNMR_OK);
  EXPECT(same_state(&pl, &own));
}

/* Costs near DBL_MAX: the credit would overflow to Inf on the first step,
   and a placer with an infinite credit is a state no checkpoint holds (its
   save was refused). It saturates at DBL_MAX instead. */
TEST(credit_saturates_and_the_placer_still_saves) {
  static unsigned char buf[1024];
  gnmr_place pl, copy;
  gnmr_place_unit units[2], copy_units[2];
  gnmr_place_config c = gnmr_place_config_default();
  gnmr_place_report rep;
  const double costs[2] = {DBL_MAX / 2, DBL_MAX / 4}, ones[2] = {1, 1};
  size_t w = 0;
  int s;
  c.budget = 1.0;
  REQUIRE(gnmr_place_init(&pl, &c, units, costs, 2) == GNMR_OK);
  for (s = 0; s < 4; s++)
    REQUIRE(gnmr_place_step(&pl, ones, ones, NULL) == GNMR_OK);
  REQUIRE(gnmr_place_info(&pl, &rep) == GNMR_OK);
  EXPECT(rep.credit == DBL_MAX);
  EXPECT_EQ_INT(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &w), GNMR_OK);
  REQUIRE(gnmr_place_init(&copy, &c, copy_units, ones, 2) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_checkpoint_load(&copy, buf, w), GNMR_OK);
}

/* A mean update near DBL_MAX over q = 1: r is finite, but the level's term
   c r / M overflows in c r. That step has no level (P3), and the placer
   keeps a state its checkpoint holds (before, the level went to Inf and
   the save was refused). */
TEST(an_overflowing_term_gives_no_level) {
  static unsigned char buf[1024];
  gnmr_place pl;
  gnmr_place_unit units[1];
  gnmr_place_config c = gnmr_place_config_default();
  gnmr_place_report rep;
  const double cost = 1.5, one = 1.0, half = 0.5, big = DBL_MAX;
  size_t w = 0;
  REQUIRE(gnmr_place_init(&pl, &c, units, &cost, 1) == GNMR_OK);
  REQUIRE(gnmr_place_step(&pl, &big, &big, NULL) == GNMR_OK);  /* r = 1 */
  REQUIRE(gnmr_place_step(&pl, &half, &one, NULL) == GNMR_OK); /* r huge */
  REQUIRE(gnmr_place_info(&pl, &rep) == GNMR_OK);
  EXPECT(rep.level == 1.0); /* the first step's */
  EXPECT_EQ_INT(gnmr_place_checkpoint_save(&pl, buf, sizeof buf, &w), GNMR_OK);
}

TEST(damaged_checkpoints_are_refused_whole) {
  static unsigned char buf[4096], bad[4096];
  const gnmr_place_config c = gnmr_place_config_default();
  gnmr_place a, b, before;
  gnmr_place_unit ua[NU], ub[NU], ubefore[NU];
  size_t n = 0, i, w = 0;
  int cut;
  for (cut = 0; cut < 2; cut++) {
    /* before the fire, and after it */
    REQUIRE(run(&a, ua, &c, W_COSINE, 1, 1, 0, cut ? 990 : 400));
    REQUIRE(cut ? a.n_fired == NU : a.n_fired == 0);
    REQUIRE(gnmr_place_checkpoint_save(&a, buf, sizeof buf, &n) == GNMR_OK);
    REQUIRE(run(&b, ub, &c, W_WSD, 1, 1, 0, 100));
    before = b;
    memcpy(ubefore, ub, sizeof ub);
    EXPECT_EQ_INT(gnmr_place_checkpoint_save(&a, buf, n - 1, &w), GNMR_ESIZE);
    EXPECT_EQ_INT(w, n);
    for (i = 0; i < n; i++) /* every cut short, and one byte too many */
      EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, buf, i), GNMR_ESIZE);
    EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, buf, n + 1), GNMR_ESIZE);
    for (i = 0; i < n; i++) { /* every byte flipped */
      int rc;
      memcpy(bad, buf, n);
      bad[i] ^= 0x10;
      rc = gnmr_place_checkpoint_load(&b, bad, n);
      EXPECT(rc == GNMR_ECORRUPT || rc == GNMR_ESIZE || rc == GNMR_EVERSION);
    }
    memcpy(bad, buf, n); /* another version (0.4's 1), CRC fixed */
    put_u32(bad + 8, 1);
    put_u32(bad + n - 4, crc32_of(bad, n - 4));
    EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, bad, n), GNMR_EVERSION);
    put_u32(bad + 8, 3);
    put_u32(bad + n - 4, crc32_of(bad, n - 4));
    EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, bad, n), GNMR_EVERSION);
    /* contents no step can write, each with its CRC fixed: a negative
       credit (the state's 3rd double), a cost of 0 (unit 2's first
       double), a unit marked high before the fire, a firing order out of
       order */
    {
      /* the config: 6 doubles, 4 uint32 (planned_steps, gemms) */
      const size_t state = 16 + 6 * 8 + 4 * 4, unit0 = state + 80;
      double neg = -1.0, zero = 0.0;
      memcpy(bad, buf, n);
      memcpy(bad + state + 8 + 16, &neg, 8);
      put_u32(bad + n - 4, crc32_of(bad, n - 4));
      EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, bad, n), GNMR_ECORRUPT);
      memcpy(bad, buf, n);
      memcpy(bad + unit0 + 2 * 48, &zero, 8);
      put_u32(bad + n - 4, crc32_of(bad, n - 4));
      EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, bad, n), GNMR_ECORRUPT);
      memcpy(bad, buf, n);
      if (!cut) {
        put_u32(bad + unit0 + 4 * 48 + 44, 1); /* high */
      } else { /* swap the first two entries of the firing order */
        memcpy(bad + unit0 + 40, buf + unit0 + 48 + 40, 4);
        memcpy(bad + unit0 + 48 + 40, buf + unit0 + 40, 4);
      }
      put_u32(bad + n - 4, crc32_of(bad, n - 4));
      EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, bad, n), GNMR_ECORRUPT);
      memcpy(bad, buf, n); /* and unchanged, it loads: the offsets hold */
      put_u32(bad + n - 4, crc32_of(bad, n - 4));
      EXPECT(memcmp(bad, buf, n) == 0);
    }
    EXPECT(memcmp(&b, &before, sizeof b) == 0);
    EXPECT(memcmp(ub, ubefore, sizeof ub) == 0);
  }
  { /* another number of units */
    gnmr_place small;
    gnmr_place_unit us[3];
    REQUIRE(gnmr_place_init(&small, &c, us, COSTS, 3) == GNMR_OK);
    EXPECT_EQ_INT(gnmr_place_checkpoint_load(&small, buf, n), GNMR_EMISMATCH);
  }
  EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, buf, n), GNMR_OK);
  EXPECT_EQ_INT(gnmr_place_checkpoint_load(NULL, buf, n), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_checkpoint_load(&b, NULL, n), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_place_checkpoint_save(&b, buf, n, NULL), GNMR_EINVAL);
}

/* The placer has one path, whichever the controller's is: under the
   controller's AVX-512 path (gnmr_ctl_isa_active) and under its scalar one
   the same bits, 37 units (four blocks of eight and a tail, where an
   eight-wide copy would split), signals with NaN, Inf, zeros and a decay
   that fires, every step's decisions and the final checkpoint compared.
   Where the CPU has no AVX-512 there is nothing to compare: skipped. */
#define NP 37
static unsigned char ckpt_paths[2][4096];
static uint8_t high_paths[2][STEPS][NP];
TEST(the_scalar_and_avx512_paths_agree_bit_for_bit) {
  const int wide = gnmr_ctl_isa_active();
  static const double costs[NP] = {3, 1, 4, 4, 3, 1, 4, 4, 4, 2, 2, 2, 7,
                                   7, 1, 1, 1, 5, 5, 9, 1, 2, 3, 4, 5, 6,
                                   7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8};
  size_t len[2] = {0, 0};
  int path;
  if (wide == GNMR_ISA_SCALAR) SKIP("no AVX-512 here: nothing to compare");
  printf("  controller path: %s\n", gnmr_isa_name(wide));
  for (path = 0; path < 2; path++) {
    gnmr_place pl;
    gnmr_place_unit units[NP];
    const gnmr_place_config c = gnmr_place_config_default();
    uint32_t t, u;
    if (path == 1) REQUIRE(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    REQUIRE(gnmr_place_init(&pl, &c, units, costs, NP) == GNMR_OK);
    for (t = 0; t < STEPS; t++) {
      double up[NP], q[NP];
      for (u = 0; u < NP; u++) {
        const double e = check_noise(u, t, 3);
        up[u] = update_of(W_COSINE, u % NU, t) * (1 + 0.5 * e);
        q[u] = (double)qerr_of(W_COSINE, u % NU, t);
        if (e > 0.97) up[u] = (double)NAN;
        if (e < -0.98) q[u] = 0.0;
        if (e > 0.95 && e <= 0.96) q[u] = (double)INFINITY;
        if (t < 3 && u % 5 == 0) up[u] = 0.0; /* r = 0: M stays 0 */
      }
      REQUIRE(gnmr_place_step(&pl, up, q, high_paths[path][t]) == GNMR_OK);
    }
    EXPECT(pl.n_fired == NP);
    { /* the refusal on this path too: in a block of eight, in the tail */
      double up[NP], q[NP];
      for (u = 0; u < NP; u++) up[u] = q[u] = 1.0;
      up[9] = -1.0;
      EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, NULL), GNMR_ENORM);
      up[9] = -0.0;
      q[NP - 1] = -1e-300;
      EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, NULL), GNMR_ENORM);
      q[NP - 1] = -(double)INFINITY; /* a signal, not a refusal */
      EXPECT_EQ_INT(gnmr_place_step(&pl, up, q, NULL), GNMR_OK);
    }
    REQUIRE(gnmr_place_checkpoint_save(&pl, ckpt_paths[path],
                                       sizeof ckpt_paths[path],
                                       &len[path]) == GNMR_OK);
  }
  REQUIRE(gnmr_ctl_isa_force(wide) == GNMR_OK);
  EXPECT(len[0] == len[1] && memcmp(ckpt_paths[0], ckpt_paths[1], len[0]) == 0);
  EXPECT(memcmp(high_paths[0], high_paths[1], sizeof high_paths[0]) == 0);
}

/* ---- the LM demo's upd-late, transcribed --------------------------------
   lab/train_lm.c before the library had a placer: lm_place_step (at
   the start of a step) and lm_place_update (after its update) under rule
   LM_PLACE_UPD_LATE, on arrays instead of the model. The per-unit fast and
   slow means it also kept are read by its per-unit rules only. */
typedef struct proto {
  double budget, total, credit, flops[NU];
  uint8_t hf[NU];
  double upd[NU], rmax[NU], ratio[NU];
  double all_fast, all_slow;
  int seen[NU], fired[NU], n_fired, all_seen;
} proto;

static int proto_test(double x, double max, double level, double *fast,
                      double *slow, int seen) {
  *fast = seen ? 0.9 * *fast + (1 - 0.9) * x : x;
  *slow = seen ? 0.99 * *slow + (1 - 0.99) * x : x;
  return (x < level * max) * 1 + (*fast < 0.6 * *slow) * 2;
}

static void proto_step(proto *pl) {
  int u, k;
  memset(pl->hf, 0, sizeof pl->hf);
  pl->credit += pl->budget * pl->total;
  for (k = 0; k < pl->n_fired; k++) {
    u = pl->fired[k];
    if (pl->credit >= pl->flops[u]) {
      pl->hf[u] = 1;
      pl->credit -= pl->flops[u];
    }
  }
}

static void proto_update(proto *pl, const double *dist, const float *wqerr) {
  double level = 0, weight = 0;
  int u, k, j, order[NU], n = 0, fired[NU] = {0};
  for (k = 0; k < pl->n_fired; k++) fired[pl->fired[k]] = 1;
  for (u = 0; u < NU; u++) {
    double d, r;
    if (fired[u] || !(wqerr[u] > 0)) continue;
    d = dist[u];
    pl->upd[u] = pl->seen[u] ? 0.95 * pl->upd[u] + (1 - 0.95) * d : d;
    r = pl->upd[u] / wqerr[u];
    if (r > pl->rmax[u]) pl->rmax[u] = r;
    pl->ratio[u] = r;
    pl->seen[u]++;
    level += pl->flops[u] * r / pl->rmax[u];
    weight += pl->flops[u];
  }
  if (pl->n_fired || !(weight > 0)) return;
  if (!proto_test(level / weight, 1.0, 0.05, &pl->all_fast, &pl->all_slow,
                  pl->all_seen++) ||
      pl->all_seen <= 50)
    return;
  for (u = 0; u < NU; u++) { /* lowest r / max first */
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

TEST(decisions_equal_the_demo_prototype) {
  static const double budgets[] = {0.05, 0.1, 0.2};
  size_t b;
  int w, fired = 0;
  for (b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
    for (w = W_COSINE; w <= W_STEP; w++) {
      gnmr_place pl;
      gnmr_place_unit units[NU];
      gnmr_place_config c = gnmr_place_config_default();
      proto p;
      uint32_t t, u;
      int same = 1;
      c.budget = budgets[b];
      memset(&p, 0, sizeof p);
      p.budget = budgets[b];
      for (u = 0; u < NU; u++) {
        p.flops[u] = COSTS[u];
        p.total += COSTS[u];
      }
      REQUIRE(gnmr_place_init(&pl, &c, units, COSTS, NU) == GNMR_OK);
      proto_step(&p); /* step 0 */
      for (t = 0; t < STEPS; t++) {
        double d[NU], q[NU];
        float qf[NU];
        uint8_t high[NU];
        for (u = 0; u < NU; u++) {
          /* unit 4 gets no quantization error for a while: skipped by
             both */
          d[u] = update_of(w, u, t);
          qf[u] = u == 4 && t > 300 && t < 320 ? 0.0f : qerr_of(w, u, t);
          q[u] = qf[u];
        }
        REQUIRE(gnmr_place_step(&pl, d, q, high) == GNMR_OK);
        proto_update(&p, d, qf);
        proto_step(&p);          /* step t + 1 */
        for (u = 0; u < NU; u++) /* the prototype's 1: every GEMM */
          if (high[u] != (p.hf[u] ? GNMR_GEMM_ALL : 0)) same = 0;
        if (memcmp(&pl.credit, &p.credit, sizeof p.credit) != 0) same = 0;
      }
      EXPECT(same);
      EXPECT_EQ_INT(pl.n_fired, p.n_fired);
      fired += p.n_fired > 0;
      for (u = 0; u < pl.n_fired; u++)
        EXPECT_EQ_INT(unit_of(&pl, u).order, p.fired[u]);
    }
  EXPECT_EQ_INT(fired, 9); /* every case fires: the order is compared too */
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(config_defaults_and_checks_name_the_field),
      CHECK_CASE(init_refuses_bad_arguments_and_changes_nothing),
      CHECK_CASE(nothing_fires_in_warmup_then_a_fall_fires),
      CHECK_CASE(a_falling_signal_fires_a_flat_one_never),
      CHECK_CASE(told_the_plan_it_fires_where_the_credit_reaches_the_end),
      CHECK_CASE(after_its_plan_the_placement_of_the_last_step_stays),
      CHECK_CASE(served_low_places_backward_gemms_only),
      CHECK_CASE(the_budget_holds_at_every_prefix),
      CHECK_CASE(scaling_the_signals_changes_no_decision),
      CHECK_CASE(nan_and_inf_signals_are_skipped_and_negatives_refused),
      CHECK_CASE(checkpoint_mid_run_resumes_identically),
      CHECK_CASE(damaged_checkpoints_are_refused_whole),
      CHECK_CASE(a_placer_edited_by_hand_is_refused_at_its_next_step),
      CHECK_CASE(a_struct_copy_is_refused_once_its_twin_steps),
      CHECK_CASE(credit_saturates_and_the_placer_still_saves),
      CHECK_CASE(an_overflowing_term_gives_no_level),
      CHECK_CASE(decisions_equal_the_demo_prototype),
      CHECK_CASE(the_scalar_and_avx512_paths_agree_bit_for_bit),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
