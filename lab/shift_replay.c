/* shift_replay.c - the level-shift rule (rule 9) on the norms of a real run,
   open loop (make shift-replay).

   Reads a trace.csv that a training demo wrote (train_lm.c: step, unit,
   name, norm, ...; every unit of every step of its first gnmr arm) and runs
   its norms through gnmr_config_default() (or, with `noise`, through
   gnmr_config_noise()) once per shift_steps P and shift_spread q of a grid.
   For unit U from step S on it prints the steps with scale < 1, the steps in
   recovery and the first step flagged SHIFT; for every unit, the levels
   learned (level_shifts) and the admissions. Open loop: the norms are the
   traced run's whatever the decisions; a closed-loop run (make efficacy)
   says where training ends, this says what the rule does to a series:
   whether a real shift is learned, and how many levels a run with faults
   makes it learn.

   usage: shift_replay TRACE U S [noise] */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SR_MAX_STEPS 100000
#define SR_MAX_UNITS 64

static float sr_norm[SR_MAX_STEPS][SR_MAX_UNITS];

static void sr_die(const char *msg, const char *arg) {
  fprintf(stderr, "shift_replay: %s%s\n", msg, arg);
  exit(1);
}

/* The trace's norms into sr_norm; the step and unit counts. */
static void sr_read(const char *path, int *steps, int *units) {
  FILE *f = fopen(path, "r");
  char line[1024];
  if (!f) sr_die("cannot open ", path);
  if (!fgets(line, sizeof line, f) ||
      strncmp(line, "step,unit,name,norm,", 20) != 0)
    sr_die("not a train_lm trace.csv: ", path);
  *steps = *units = 0;
  while (fgets(line, sizeof line, f)) {
    int step = -1, unit = -1;
    float norm = 0.0f;
    if (sscanf(line, "%d,%d,%*[^,],%f", &step, &unit, &norm) != 3)
      sr_die("a line without step, unit, name and norm in ", path);
    if (step < 0 || step >= SR_MAX_STEPS || unit < 0 || unit >= SR_MAX_UNITS)
      sr_die("a step or unit out of range in ", path);
    sr_norm[step][unit] = norm;
    if (step >= *steps) *steps = step + 1;
    if (unit >= *units) *units = unit + 1;
  }
  fclose(f);
}

int main(int argc, char **argv) {
  static const uint32_t P[] = {0, 4, 8, 16, 32};
  static const double Q[] = {0.25, 0.5, 1.0, 2.0};
  int steps, units, unit, from, noise, p, q, t;
  if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "noise") != 0)) {
    fprintf(stderr, "usage: shift_replay TRACE UNIT FROM_STEP [noise]\n");
    return 2;
  }
  sr_read(argv[1], &steps, &units);
  unit = atoi(argv[2]);
  from = atoi(argv[3]);
  noise = argc == 5;
  if (unit < 0 || unit >= units) sr_die("no such unit: ", argv[2]);
  printf("%s, %d steps, %d units; %s rules; unit %d from step %d\n", argv[1],
         steps, units, noise ? "noise" : "default", unit, from);
  printf("%3s %5s %9s %11s %11s %13s %11s\n", "P", "q", "scale<1", "recovering",
         "first SHIFT", "level_shifts", "admissions");
  for (p = 0; p < (int)(sizeof P / sizeof P[0]); p++)
    for (q = 0; q < (int)(sizeof Q / sizeof Q[0]); q++) {
      gnmr_config c = noise ? gnmr_config_noise() : gnmr_config_default();
      gnmr_slot slots[SR_MAX_UNITS];
      gnmr_decision d[SR_MAX_UNITS];
      gnmr_counters k;
      gnmr_ctl ctl;
      int under = 0, recovering = 0, first = -1;
      if (P[p] == 0 && q > 0) continue; /* off: q is not read */
      c.shift_steps = P[p];
      c.shift_spread = Q[q];
      if (c.max_recovering > (uint32_t)units)
        c.max_recovering = (uint32_t)units;
      if (c.common_min_units > (uint32_t)units)
        c.common_min_units = (uint32_t)units;
      if (gnmr_init(&ctl, &c, slots, (uint32_t)units) != GNMR_OK)
        sr_die("gnmr_init refused the config", "");
      for (t = 0; t < steps; t++) {
        if (gnmr_step(&ctl, sr_norm[t], d) != GNMR_OK)
          sr_die("gnmr_step failed", "");
        if (t < from) continue;
        under += d[unit].scale < 1.0;
        recovering += gnmr_recovering(&ctl, (uint32_t)unit) == 1;
        if (first < 0 && (d[unit].flags & GNMR_FLAG_SHIFT)) first = t;
      }
      gnmr_counters_get(&ctl, GNMR_ALL_UNITS, &k);
      printf("%3u %5.2g %9d %11d %11d %13llu %11llu\n", P[p], P[p] ? Q[q] : 0.0,
             under, recovering, first, (unsigned long long)k.level_shifts,
             (unsigned long long)k.admissions);
    }
  return 0;
}
