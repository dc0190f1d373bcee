/* ab_ctl.c - two builds of gnmr.h's controller in one process, timed in
   alternating pairs, so that the host's drifts in speed (up to 1.8x, for
   minutes) fall on both alike.

   Built three times by `make ab-ctl BASE=<git revision>`: once with
   -DAB_SIDE=ab_base against that revision's gnmr.h, once with
   -DAB_SIDE=ab_this against the working tree's (each GNMR_STATIC: a private
   copy), once with -DAB_MAIN for the driver. N = 4096 units, calm or spiky
   norms (5% spikes of 4-24x), maxO 4 or 512, with decisions or out = NULL:
   41 pairs of 2,000-step batches, the order inside a pair alternating;
   prints the minimum and median ns per unit per step of each build and in
   how many pairs this build was faster.

   usage: ab_ctl [spiky 0|1] [maxO] [decisions 0|1]
                 [base paper|noise|default|calm]
                 [this paper|noise|default|calm] [scalar]
   (the rules of each side: gnmr_config_paper() by default, or 0.2's NOISE
   mode, gnmr_config_paper() with rule NOISE and warmup 50 (0.2's default,
   0.3's gnmr_config_noise()), or that build's gnmr_config_default() (0.3:
   the paper rules; 0.4: with rule 9), or gnmr_config_calm() (0.7 on: rule
   10's band); a 0.1 base has PAPER only.
   `ab_ctl 0 4 1 paper noise` with BASE=HEAD: NOISE mode's cost against
   PAPER mode's, one build, one process; `scalar`: both sides' controllers
   forced to their scalar path, 0.2 on) */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AB_UNITS 4096u
#define AB_PAIRS 41
#define AB_STEPS 2000

#ifdef AB_SIDE
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <time.h>

static double ab_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t ab_rng = 88172645463325252ull;
static double ab_uniform(void) {
  ab_rng ^= ab_rng << 13;
  ab_rng ^= ab_rng >> 7;
  ab_rng ^= ab_rng << 17;
  return (double)(ab_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* ns per unit per step of AB_STEPS steps (set up on the first call). */
#if GNMR_VERSION_MAJOR == 0 && GNMR_VERSION_MINOR < 2
typedef gnmr_unit gnmr_slot; /* 0.1's name */
#endif
/* rules: 0 paper, 1 noise, 2 default, 3 calm (usage above) */
double AB_SIDE(int spiky, uint32_t max_o, int decisions, int rules, int scalar);
double AB_SIDE(int spiky, uint32_t max_o, int decisions, int rules,
               int scalar) {
  static gnmr_slot slots[AB_UNITS];
  static float x[16 * AB_UNITS];
  static gnmr_decision d[AB_UNITS];
  static gnmr_ctl ctl;
  static int ready;
  uint32_t u;
  int s;
  double t0;
  if (!ready) {
    /* The paper rules on both sides: 0.1's defaults, 0.2's
       gnmr_config_paper (0.2's default, NOISE mode, has no AVX-512 path). */
#if GNMR_VERSION_MAJOR == 0 && GNMR_VERSION_MINOR < 2
    gnmr_config cfg = gnmr_config_default();
    if (rules == 1 || scalar) exit(2); /* 0.1: no NOISE mode, one path */
#else
    /* NOISE written out: a 0.2 base has no gnmr_config_noise() */
    gnmr_config cfg = rules == 2 ? gnmr_config_default() : gnmr_config_paper();
    if (rules == 1) cfg.rule = GNMR_RULE_NOISE, cfg.warmup_steps = 50;
#if GNMR_VERSION_MAJOR == 0 && GNMR_VERSION_MINOR < 7
    if (rules == 3) exit(2); /* no band before 0.7 */
#else
    if (rules == 3) cfg = gnmr_config_calm();
#endif
    if (scalar && gnmr_ctl_isa_force(GNMR_ISA_SCALAR) != GNMR_OK) exit(1);
#endif
    cfg.max_recovering = max_o;
    if (gnmr_init(&ctl, &cfg, slots, AB_UNITS) != GNMR_OK) exit(1);
    for (u = 0; u < 16 * AB_UNITS; u++) {
      double v = 1.0 + 0.1 * ab_uniform();
      if (spiky && ab_uniform() < 0.05) v *= 4.0 + 20.0 * ab_uniform();
      x[u] = (float)v;
    }
    for (s = 0; s < 64; s++) gnmr_step(&ctl, x + (s % 16) * AB_UNITS, d);
    ready = 1;
  }
  t0 = ab_now();
  for (s = 0; s < AB_STEPS; s++)
    if (gnmr_step(&ctl, x + (s % 16) * AB_UNITS, decisions ? d : NULL) !=
        GNMR_OK)
      exit(1);
  return (ab_now() - t0) / AB_STEPS / AB_UNITS;
}
#endif

#ifdef AB_MAIN
double ab_base(int spiky, uint32_t max_o, int decisions, int rules, int scalar);
double ab_this(int spiky, uint32_t max_o, int decisions, int rules, int scalar);

static const char *const ab_rules[] = {"paper", "noise", "default", "calm"};
static int ab_rules_of(int argc, char **argv, int i) {
  int r;
  for (r = 0; argc > i && r < 4; r++)
    if (strcmp(argv[i], ab_rules[r]) == 0) return r;
  return 0;
}

static int ab_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const int spiky = argc > 1 ? atoi(argv[1]) : 0;
  const uint32_t max_o = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4;
  const int decisions = argc > 3 ? atoi(argv[3]) : 1;
  const int rules_a = ab_rules_of(argc, argv, 4);
  const int rules_b = ab_rules_of(argc, argv, 5);
  const int scalar = argc > 6 && strcmp(argv[6], "scalar") == 0;
  double a[AB_PAIRS], b[AB_PAIRS];
  int i, wins = 0;
  for (i = 0; i < AB_PAIRS; i++) {
    if (i & 1) {
      b[i] = ab_this(spiky, max_o, decisions, rules_b, scalar);
      a[i] = ab_base(spiky, max_o, decisions, rules_a, scalar);
    } else {
      a[i] = ab_base(spiky, max_o, decisions, rules_a, scalar);
      b[i] = ab_this(spiky, max_o, decisions, rules_b, scalar);
    }
    wins += b[i] < a[i];
  }
  qsort(a, AB_PAIRS, sizeof a[0], ab_cmp);
  qsort(b, AB_PAIRS, sizeof b[0], ab_cmp);
  printf("N %u%s, %s, maxO %u, %s: base (%s) min %.2f median %.2f | this "
         "(%s) min %.2f median %.2f ns/unit/step | this/base %.2fx | this "
         "faster in %d of %d pairs\n",
         AB_UNITS, scalar ? " (scalar paths)" : "", spiky ? "spiky" : "calm",
         max_o, decisions ? "decisions" : "out = NULL", ab_rules[rules_a], a[0],
         a[AB_PAIRS / 2], ab_rules[rules_b], b[0], b[AB_PAIRS / 2],
         b[AB_PAIRS / 2] / a[AB_PAIRS / 2], wins, AB_PAIRS);
  return 0;
}
#endif
