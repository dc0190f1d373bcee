/* The CUDA controller's step (examples/cuda/gnmr_ctl.cuh), run on the CPU:
   the kernels' own bodies, executed thread by thread and phase by phase as
   the grid runs them (barriers between phases), with the candidate list in
   a random order as the device's atomics may leave it. Every step must give
   gnmr_step's return code, decisions, state and totals bit for bit. (The
   one-block kernel used for up to GNMR_CUDA_FUSED_MAX units runs the same
   functions in the same phase order.) No GPU needed. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"
#include "examples/cuda/gnmr_ctl.cuh"

#define MAX_UNITS 70000u

static gnmr_slot slots_a[MAX_UNITS], slots_b[MAX_UNITS];
static float norms[MAX_UNITS];
static gnmr_decision out_a[MAX_UNITS], out_b[MAX_UNITS];
static unsigned char ckpt_a[64 + MAX_UNITS * 200], ckpt_b[64 + MAX_UNITS * 200];

/* ---- the grid, emulated ------------------------------------------------ */

/* Threads of the admit block: the device's, and odd counts that make the
   strided loops uneven. */
static uint32_t admit_threads = GNMR_CUDA_ADMIT_THREADS;

static void shuffle(uint32_t *list, uint32_t n) {
  uint32_t i;
  for (i = n; i > 1; i--) {
    uint32_t j = (uint32_t)(check_rand() % i), t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
}

/* The select and rule 7 of the admit kernel, after admit_begin. */
static void emulate_select_admit(gnmr_cuda_select *sel, const gnmr__soa *s,
                                 gnmr_decision *out, uint32_t lock_steps) {
  const uint32_t T = admit_threads;
  uint32_t t;
  if (sel->status != GNMR_OK) return;
  while (gnmr_cuda__select_more(sel)) {
    for (t = 0; t < T; t++) gnmr_cuda__select_clear(sel, t, T);
    for (t = 0; t < T; t++) gnmr_cuda__select_count(sel, s, t, T);
    gnmr_cuda__select_pick(sel);
  }
  for (t = 0; t < T; t++) gnmr_cuda__admit_units(sel, s, out, lock_steps, t, T);
}

/* gnmr_cuda_step's three kernels. */
static int emulated_step(gnmr_ctl *ctl, gnmr_cuda_work *w, const float *x,
                         gnmr_decision *out) {
  const uint32_t n = ctl->n_units, B = GNMR_CUDA_UNIT_THREADS;
  const uint32_t blocks = (n + B - 1) / B;
  gnmr_cuda_select sel;
  gnmr__rules r;
  uint32_t u, *heap;
  /* check */
  for (u = 0; u < blocks * B; u++) gnmr_cuda__check(ctl, x, n, u, w);
  /* units: thread 0 of each block reads the rules; per-block sums */
  gnmr__rules_of(ctl, &r);
  heap = gnmr__carve(ctl->units, n).heap;
  for (u = 0; u < blocks * B; u++) {
    unsigned ev = gnmr_cuda__unit(ctl, &r, x, out, w, u);
    w->risky += (ev & GNMR__EV_RISKY) != 0;
    w->nonfinite += (ev & GNMR__EV_NONFINITE) != 0;
    w->held += (ev & GNMR__EV_HELD) != 0;
    w->renewed += (ev & GNMR__EV_RENEWED) != 0;
    w->locked += (ev & GNMR__EV_LOCKED) != 0;
    if (ev & GNMR__EV_CANDIDATE) heap[w->candidates++] = u;
  }
  if (w->candidates > 1) shuffle(heap, w->candidates);
  /* admit */
  gnmr_cuda__admit_begin(&sel, ctl, w);
  if (sel.status == GNMR_OK) {
    const gnmr__soa s = gnmr__carve(ctl->units, n);
    emulate_select_admit(&sel, &s, out, ctl->cfg.lock_steps);
  }
  gnmr_cuda__admit_end(&sel, ctl, w);
  return w->status;
}

/* ---- comparison -------------------------------------------------------- */

static int same_state(const gnmr_ctl *a, const gnmr_ctl *b) {
  size_t na = 0, nb = 0;
  uint32_t u;
  const gnmr__soa s = gnmr__carve(b->units, b->n_units);
  if (gnmr_checkpoint_save(a, ckpt_a, sizeof ckpt_a, &na) != GNMR_OK ||
      gnmr_checkpoint_save(b, ckpt_b, sizeof ckpt_b, &nb) != GNMR_OK)
    return 0;
  for (u = 0; u < b->n_units; u++)
    if (s.score[u] != 0.0) return 0; /* every mark cleared */
  /* one commit per step that passed: the same generation and seal */
  return na == nb && memcmp(ckpt_a, ckpt_b, na) == 0 &&
         a->recovering == b->recovering &&
         a->peak_recovering == b->peak_recovering && a->gen == b->gen &&
         a->seal == b->seal;
}

/* Norms for one step of a given kind. */
static void make_norms(uint32_t n, int kind, uint32_t step) {
  uint32_t u;
  for (u = 0; u < n; u++) {
    const uint64_t r = check_rand();
    float v = 1.0f + (float)(r % 1000) * 1e-4f;
    switch (kind) {
    case 0: break; /* calm */
    case 1:
      if (r % 13 == 0) v *= 40.0f;
      break; /* spikes */
    case 2:
      if (r % 5 == 0) v = (float)NAN;
      break; /* NaN */
    case 3:  /* +-Inf, huge */
      if (r % 9 == 0) v = (r >> 8) & 1 ? (float)INFINITY : -(float)INFINITY;
      if (r % 9 == 1) v = 3e38f;
      break;
    case 4: v = (r % 3 == 0) ? 64.0f : 1.0f; break; /* exact ties */
    case 5: v = (float)NAN; break;                  /* every unit +inf score */
    case 6: /* one-ulp apart: scores differ in their lowest bits */
      v = 50.0f;
      {
        uint32_t bits, k = (uint32_t)(r % 64);
        memcpy(&bits, &v, 4);
        bits += k;
        memcpy(&v, &bits, 4);
      }
      break;
    case 7:
      if (u == step % n) v = -1.0f;
      break;                  /* refused step */
    default: v = 0.0f; break; /* zeros */
    }
    norms[u] = v;
  }
}

/* If set, both controllers take reconf_cfg by gnmr_reconfigure before step
   reconf_step. */
static uint32_t reconf_step;
static gnmr_config reconf_cfg;

/* Runs `steps` steps of both controllers on the same norms. */
static int run_pair(const gnmr_config *cfg, uint32_t n, uint32_t steps,
                    uint32_t calm, int kinds) {
  gnmr_ctl a, b;
  gnmr_cuda_work w;
  uint32_t step;
  memset(&w, 0, sizeof w);
  if (gnmr_init(&a, cfg, slots_a, n) != GNMR_OK ||
      gnmr_init(&b, cfg, slots_b, n) != GNMR_OK)
    return 0;
  for (step = 0; step < steps; step++) {
    const int kind = (int)(check_rand() % (uint64_t)kinds);
    const int with_out = (int)(check_rand() % 4) != 0;
    int ra, rb;
    if (reconf_step > 0 && step == reconf_step) {
      ra = gnmr_reconfigure(&a, &reconf_cfg);
      rb = gnmr_reconfigure(&b, &reconf_cfg);
      if (ra != GNMR_OK || rb != GNMR_OK) return 0;
    }
    make_norms(n, step < calm ? 0 : kind, step); /* calm first */
    /* the same bytes in both outputs, so an unwritten field compares too */
    memset(out_a, (int)(step & 0xFF), sizeof out_a[0] * n);
    memset(out_b, (int)(step & 0xFF), sizeof out_b[0] * n);
    ra = gnmr_step(&a, norms, with_out ? out_a : NULL);
    rb = emulated_step(&b, &w, norms, with_out ? out_b : NULL);
    if (ra != rb) {
      printf("  n %u step %u: rc %d vs %d\n", n, step, ra, rb);
      return 0;
    }
    if (with_out && memcmp(out_a, out_b, sizeof out_a[0] * n) != 0) {
      printf("  n %u step %u kind %d: decisions differ\n", n, step, kind);
      return 0;
    }
    /* the whole state: every step for small counts, else every 8th */
    if ((n <= 4096 || step % 8 == 7 || step + 1 == steps) &&
        !same_state(&a, &b)) {
      printf("  n %u step %u kind %d: state differs\n", n, step, kind);
      return 0;
    }
  }
  return 1;
}

static gnmr_config random_config(uint32_t n) {
  gnmr_config c = gnmr_config_paper();
  const uint64_t r = check_rand();
  switch (r % 4) {
  case 0: c.max_recovering = 0; break; /* detect only */
  case 1: c.max_recovering = n; break; /* every unit may recover */
  case 2: c.max_recovering = n < 4 ? n : 1 + (uint32_t)(r >> 8) % 4; break;
  default: c.max_recovering = (uint32_t)((r >> 8) % (uint64_t)(n + 1));
  }
  c.lock_steps = 1 + (uint32_t)(check_rand() % 5);
  c.cooldown_steps = (uint32_t)(check_rand() % 4);
  c.warmup_steps = (uint32_t)(check_rand() % 8);
  c.delta_window = 1 + (uint32_t)(check_rand() % GNMR_WINDOW_MAX);
  c.spike_policy = (int)(check_rand() % 3);
  c.ratio_threshold = 1.1 + (double)(check_rand() % 100) / 40.0;
  c.delta_threshold = 0.05 + (double)(check_rand() % 100) / 40.0;
  c.history_decay = check_rand() % 3 ? 0.99 : 1.0;
  return c;
}

/* ---- tests ------------------------------------------------------------- */

TEST(small_unit_counts_every_kind_of_input) {
  static const uint32_t sizes[] = {1, 2, 3, 5, 8, 31, 255, 256, 257, 1000};
  size_t i;
  int trial;
  for (trial = 0; trial < 24; trial++)
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      const gnmr_config cfg = random_config(sizes[i]);
      admit_threads = trial % 3 == 0 ? 1 + (uint32_t)(check_rand() % 300)
                                     : GNMR_CUDA_ADMIT_THREADS;
      REQUIRE(run_pair(&cfg, sizes[i], 60, 20, 9));
    }
  admit_threads = GNMR_CUDA_ADMIT_THREADS;
}

TEST(zero_units) {
  const gnmr_config cfg = random_config(0);
  REQUIRE(run_pair(&cfg, 0, 3, 0, 1));
}

TEST(large_unit_counts) {
  static const uint32_t sizes[] = {4096, 65536, MAX_UNITS};
  size_t i;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gnmr_config cfg = random_config(sizes[i]);
    cfg.warmup_steps = 2;
    REQUIRE(run_pair(&cfg, sizes[i], 24, 4, 9));
    cfg.max_recovering = 3; /* a small budget: the select works hardest */
    REQUIRE(run_pair(&cfg, sizes[i], 16, 4, 9));
  }
}

TEST(renewals_and_cooldowns) {
  /* long locks, spikes every step: locks run out while risky (renewed),
     and released units come back through cooldown */
  int trial;
  for (trial = 0; trial < 40; trial++) {
    gnmr_config cfg = random_config(64);
    cfg.lock_steps = 1 + (uint32_t)(trial % 3);
    cfg.cooldown_steps = (uint32_t)(trial % 4);
    cfg.warmup_steps = 0;
    cfg.max_recovering = 1 + (uint32_t)(trial % 16);
    REQUIRE(run_pair(&cfg, 64, 120, 20, 7));
  }
}

TEST(reconfigured_mid_run) {
  /* fewer slots than units in recovery (no renewals, no admissions until
     they drain), more slots, other thresholds, windows and locks */
  int trial;
  for (trial = 0; trial < 40; trial++) {
    const uint32_t n = 1 + (uint32_t)(check_rand() % 200);
    gnmr_config cfg = random_config(n);
    cfg.max_recovering = n;
    cfg.warmup_steps = 0;
    reconf_cfg = random_config(n);
    if (trial % 2) reconf_cfg.max_recovering = (uint32_t)(trial / 8);
    if (reconf_cfg.max_recovering > n) reconf_cfg.max_recovering = n;
    reconf_step = 30 + (uint32_t)(check_rand() % 20);
    if (!run_pair(&cfg, n, 90, 20, 5)) {
      reconf_step = 0;
      REQUIRE(0);
    }
  }
  reconf_step = 0;
}

/* The select alone, on scores built to be hard: shared high bytes, one-ulp
   differences, exact ties, +inf, the smallest and largest doubles. The
   admitted set must be the k best by (score descending, index ascending). */
static double hard_score(uint64_t r) {
  double v;
  uint64_t bits;
  switch (r % 7) {
  case 0: return (double)INFINITY;
  case 1: return 5e-324;
  case 2: return 1.7976931348623157e308;
  case 3: return 1.5;
  case 4:
    v = 2.0;
    memcpy(&bits, &v, 8);
    bits += (r >> 8) % 300;
    memcpy(&v, &bits, 8);
    return v;
  case 5: return 1.0 + (double)((r >> 8) % 4);
  default: return 0.5 + (double)(r >> 11) * 1e-16;
  }
}

static uint32_t rank_of(const gnmr__soa *s, const uint32_t *list, uint32_t c,
                        uint32_t u) {
  uint32_t i, beat = 0;
  for (i = 0; i < c; i++) beat += gnmr__worse(s, u, list[i]) ? 1u : 0u;
  return beat;
}

TEST(select_matches_a_full_ranking) {
  static gnmr_slot slots[1024];
  int trial;
  for (trial = 0; trial < 200; trial++) {
    const uint32_t n = 1 + (uint32_t)(check_rand() % 1024);
    gnmr__soa s = gnmr__carve(slots, n);
    gnmr_cuda_select sel;
    gnmr_cuda_work w;
    gnmr_ctl ctl;
    uint32_t u, c = 0, *list;
    gnmr_config cfg = gnmr_config_paper();
    cfg.max_recovering = (uint32_t)(check_rand() % (uint64_t)(n + 1));
    REQUIRE(gnmr_init(&ctl, &cfg, slots, n) == GNMR_OK);
    s = gnmr__carve(slots, n);
    list = s.heap;
    for (u = 0; u < n; u++)
      if (check_rand() % 3 != 0) {
        s.score[u] = hard_score(check_rand());
        list[c++] = u;
      }
    shuffle(list, c);
    memset(&w, 0, sizeof w);
    w.candidates = c;
    gnmr_cuda__admit_begin(&sel, &ctl, &w);
    admit_threads = 1 + (uint32_t)(check_rand() % 1024);
    {
      /* keep the scores: admit_units clears them */
      static double kept[1024];
      memcpy(kept, s.score, sizeof kept[0] * n);
      emulate_select_admit(&sel, &s, NULL, 1);
      memcpy(s.score, kept, sizeof kept[0] * n);
    }
    for (u = 0; u < c; u++) {
      const uint32_t unit = list[u];
      const int admitted = s.lock[unit] == 1;
      const int best = rank_of(&s, list, c, unit) < sel.k;
      EXPECT_EQ_INT(admitted, best);
      if (admitted != best) break;
    }
  }
  admit_threads = GNMR_CUDA_ADMIT_THREADS;
}

TEST(refused_steps_change_nothing) {
  gnmr_config cfg = random_config(300);
  gnmr_ctl b;
  gnmr_cuda_work w;
  size_t na, nb;
  uint32_t u;
  REQUIRE(run_pair(&cfg, 300, 30, 20, 4));
  REQUIRE(gnmr_init(&b, &cfg, slots_b, 300) == GNMR_OK);
  memset(&w, 0, sizeof w);
  make_norms(300, 1, 0);
  REQUIRE(emulated_step(&b, &w, norms, out_b) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_save(&b, ckpt_a, sizeof ckpt_a, &na) == GNMR_OK);
  for (u = 0; u < 300; u++) out_a[u] = out_b[u];
  norms[17] = -0.5f;
  EXPECT_EQ_INT(emulated_step(&b, &w, norms, out_b), GNMR_ENORM);
  EXPECT_EQ_INT(w.first_error, GNMR_ENORM);
  REQUIRE(gnmr_checkpoint_save(&b, ckpt_b, sizeof ckpt_b, &nb) == GNMR_OK);
  EXPECT(na == nb && memcmp(ckpt_a, ckpt_b, na) == 0);
  EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
  norms[17] = 1.0f;
  {
    /* edited by hand (the seal no longer matches), a stale struct copy
       (its twin stepped on), not a controller: refused as gnmr_step
       refuses them, and nothing changes */
    static gnmr_slot before[300];
    gnmr_ctl edited = b, stale = b, twin;
    memcpy(before, slots_b, sizeof before);
    edited.cfg.lock_steps++;
    EXPECT_EQ_INT(gnmr_step(&edited, norms, NULL), GNMR_ESTATE);
    EXPECT_EQ_INT(emulated_step(&edited, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
    twin = b;
    REQUIRE(emulated_step(&twin, &w, norms, NULL) == GNMR_OK);
    memcpy(before, slots_b, sizeof before);
    EXPECT_EQ_INT(gnmr_step(&stale, norms, NULL), GNMR_ESTATE);
    EXPECT_EQ_INT(emulated_step(&stale, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    b.magic = 0; /* not a controller */
    EXPECT_EQ_INT(emulated_step(&b, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
  }
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(small_unit_counts_every_kind_of_input),
      CHECK_CASE(zero_units),
      CHECK_CASE(large_unit_counts),
      CHECK_CASE(renewals_and_cooldowns),
      CHECK_CASE(reconfigured_mid_run),
      CHECK_CASE(select_matches_a_full_ranking),
      CHECK_CASE(refused_steps_change_nothing)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
