/* bench_place.c - the placer's step (gnmr_place_step, rules P1-P7) against
   the paper rules' gnmr_step, ns per unit per step at N = 4096 units, in
   one process, timed in alternating pairs (the order inside a pair
   alternating too), so the host's drifts in speed fall on both alike.

   A: gnmr_step, gnmr_config_paper(), maxO 4, calm norms (1 +- 5%),
      decisions written (as the demos run it; `make ab-ctl` has the rest).
   B: gnmr_place_step before the fire, every unit observed every step (its
      costly phase: P2-P5 over every unit, then P6), high written; the
      signals flat (1 +- 5%), so it never fires.
   C: gnmr_place_step after the fire (P6 only, the signals checked).
   41 pairs of 2,000-step batches each; 16 precomputed input rows taken in
   turn, the same for all. Prints min and median ns per unit-step of each
   and the medians' ratios; a sink of every decision keeps the work.

   usage: bench_place [units] [scalar]   (scalar: the controller's scalar
   path, gnmr_ctl_isa_force; the placer has only the one) */
#define _POSIX_C_SOURCE 199309L
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAIRS 41
#define STEPS 2000
#define ROWS 16
#define MAX_N 65536

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static double uniform(void) { /* [0, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

static gnmr_slot slots[MAX_N];
static gnmr_decision dec[MAX_N];
static float norms[ROWS][MAX_N];
static double upd[ROWS][MAX_N], qerr[ROWS][MAX_N], costs[MAX_N];
static gnmr_place_unit pu_before[MAX_N], pu_after[MAX_N];
static uint8_t high[MAX_N];
static uint64_t sink;

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static gnmr_ctl ctl;
static gnmr_place before, after;

static double time_ctl(uint32_t n) {
  const double t0 = now_ns();
  uint32_t s;
  for (s = 0; s < STEPS; s++) {
    if (gnmr_step(&ctl, norms[s % ROWS], dec) != GNMR_OK) exit(1);
    sink += (uint64_t)dec[s % n].action;
  }
  return (now_ns() - t0) / ((double)STEPS * n);
}

static double time_place(gnmr_place *pl, uint32_t n) {
  const double t0 = now_ns();
  uint32_t s;
  for (s = 0; s < STEPS; s++) {
    if (gnmr_place_step(pl, upd[s % ROWS], qerr[s % ROWS], high) != GNMR_OK)
      exit(1);
    sink += high[s % n];
  }
  return (now_ns() - t0) / ((double)STEPS * n);
}

int main(int argc, char **argv) {
  const uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 4096u;
  static double ta[PAIRS], tb[PAIRS], tc[PAIRS];
  gnmr_config cfg = gnmr_config_paper();
  gnmr_place_config pc = gnmr_place_config_default();
  uint32_t u, r;
  int p;
  if (n < 1 || n > MAX_N) return 2;
  if (argc > 2 && strcmp(argv[2], "scalar") == 0 &&
      gnmr_ctl_isa_force(GNMR_ISA_SCALAR) != GNMR_OK)
    return 2;
  for (r = 0; r < ROWS; r++)
    for (u = 0; u < n; u++) {
      norms[r][u] = (float)(1.0 + 0.1 * (uniform() - 0.5));
      upd[r][u] = 1.0 + 0.1 * (uniform() - 0.5);
      qerr[r][u] = 1.0 + 0.1 * (uniform() - 0.5);
    }
  for (u = 0; u < n; u++) costs[u] = 1.0 + (double)(u % 4);
  cfg.max_recovering = 4;
  if (gnmr_init(&ctl, &cfg, slots, n) != GNMR_OK) return 1;
  if (gnmr_place_init(&before, &pc, pu_before, costs, n) != GNMR_OK) return 1;
  /* after: no warm-up, and a level under fire_level fires it */
  pc.warmup_steps = 0;
  if (gnmr_place_init(&after, &pc, pu_after, costs, n) != GNMR_OK) return 1;
  {
    static double tiny[MAX_N];
    for (u = 0; u < n; u++) tiny[u] = 1e-6;
    int s;
    if (gnmr_place_step(&after, upd[0], qerr[0], high) != GNMR_OK) return 1;
    for (s = 0; s < 200 && after.n_fired == 0; s++)
      if (gnmr_place_step(&after, tiny, qerr[0], high) != GNMR_OK) return 1;
    if (after.n_fired != n) return 1;
  }
  for (p = 0; p < 3; p++) { /* warm the caches and the branch predictors */
    time_ctl(n);
    time_place(&before, n);
    time_place(&after, n);
  }
  for (p = 0; p < PAIRS; p++) {
    if (p % 2) {
      ta[p] = time_ctl(n);
      tb[p] = time_place(&before, n);
      tc[p] = time_place(&after, n);
    } else {
      tc[p] = time_place(&after, n);
      tb[p] = time_place(&before, n);
      ta[p] = time_ctl(n);
    }
  }
  if (before.n_fired != 0) return 1; /* flat signals: never fires */
  qsort(ta, PAIRS, sizeof ta[0], cmp);
  qsort(tb, PAIRS, sizeof tb[0], cmp);
  qsort(tc, PAIRS, sizeof tc[0], cmp);
  printf("N = %u, %d pairs of %d steps, ns per unit-step (min / median)\n",
         (unsigned)n, PAIRS, STEPS);
  printf("  gnmr_step, paper rules (ctl path %s): %.3f / %.3f\n",
         gnmr_isa_name(gnmr_ctl_isa_active()), ta[0], ta[PAIRS / 2]);
  printf("  gnmr_place_step, before the fire:     %.3f / %.3f  (%.2fx)\n",
         tb[0], tb[PAIRS / 2], tb[PAIRS / 2] / ta[PAIRS / 2]);
  printf("  gnmr_place_step, after the fire:      %.3f / %.3f  (%.2fx)\n",
         tc[0], tc[PAIRS / 2], tc[PAIRS / 2] / ta[PAIRS / 2]);
  printf("  (sink %llu)\n", (unsigned long long)sink);
  return 0;
}
