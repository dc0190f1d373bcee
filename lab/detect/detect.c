/* detect.c - detection benchmark: which unit-steps does a rule flag, and are
   they the faulty ones? This file is the options and the order of the
   tables; one program, its pieces in headers of this folder, in the order
   they build on each other (included once, here):
     proto.h     the prototype of NOISE mode, the library's cross-check
     admit.h     the paper's admission, for the detectors that are not
                 the library
     peers.h     the detectors: the library, the prototype, the peers
     rng.h       random numbers
     synth.h     synthetic traces with ground truth
     metrics.h   recall and false alarms
     real.h      the real traces of bench/data/
     report.h    the self-test and the tables' common rows
     frontier.h  --frontier: recall at 0.1% false alarms
     tables.h    the sections of the report, one function each

   Two halves:
   1. Synthetic traces with ground truth: 64 units, 4000 steps, log-normal
      AR(1) noise, slow drift, benign hard batches, local events (rises and
      falls of 1-3 units for 1-5 steps, some steps NaN) and global events
      (most units rising together). Several noise levels and seeds.
   2. Real gradient-norm traces (bench/data/): false alarms on two stable
      runs, injected rises and falls on them, and the step-level verdict on
      two unstable runs.

   Detectors: the paper rules through gnmr.h itself (gnmr_step), the peers
   re-implemented here (AdaGC-style ratio clip, ZClip-style EMA z-score,
   rolling-window z-score at 3 and 6 sigma), and the noise-aware, two-sided
   rule with a step-level verdict: gnmr.h's NOISE mode (gnmr_step), run
   beside proto_step below, the prototype it was ported from, which must
   agree with it bit for bit on every unit-step (flags, scores, c, GLOBAL)
   or the run stops. The ablations the library has no setting for (the
   prototype without its global gate) run the prototype alone.

   usage: detect [--data DIR] [--md FILE] [--seeds N] [--seed-base B]
                 [--many N] [--many-base B] [--quick] [--set NAME=VALUE]
                 [--frontier N]
   (DIR holds the unpacked trace CSVs; without it the real-trace tables are
   left out with a message. Synthetic seeds: 1000 i + B + j for noise level
   i and j < N; the held-out table uses B + 500, the many-seeds table its
   own base, 70001 and 32 seeds unless told.) */
#define _POSIX_C_SOURCE 199309L
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include "tests/splitmix.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto.h"
#include "admit.h"
#include "peers.h"
#include "rng.h"
#include "synth.h"
#include "metrics.h"
#include "real.h"
#include "report.h"
#include "frontier.h"
#include "tables.h"

int main(int argc, char **argv) {
  const char *data = NULL, *mdpath = NULL;
  unsigned seeds = 4, reps = 3, many = 32, frontier_n = 0;
  unsigned long long seed_base = 1, many_base = 70001;
  int i;
  char cpu[200], when[32];
  proto_over = proto_config_default();
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--data") && i + 1 < argc)
      data = argv[++i];
    else if (!strcmp(argv[i], "--md") && i + 1 < argc)
      mdpath = argv[++i];
    else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed-base") && i + 1 < argc)
      seed_base = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--many") && i + 1 < argc)
      many = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--many-base") && i + 1 < argc)
      many_base = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
      if (proto_set(&proto_over, argv[++i])) {
        fprintf(stderr, "detect: unknown --set %s\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--diag"))
      diag = 1;
    else if (!strcmp(argv[i], "--speed"))
      return speed_probe();
    else if (!strcmp(argv[i], "--selftest"))
      return selftest();
    else if (!strcmp(argv[i], "--frontier") && i + 1 < argc)
      frontier_n = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick"))
      seeds = 1, reps = 1, many = 0;
    else {
      fprintf(stderr, "usage: detect [--data DIR] [--md FILE] [--seeds N] "
                      "[--seed-base B] [--many N] [--many-base B] [--quick] "
                      "[--set NAME=VALUE] [--frontier N]\n");
      return 2;
    }
  }
  md = mdpath ? fopen(mdpath, "w") : stdout;
  if (!md) {
    perror(mdpath);
    return 2;
  }
  cpu_name(cpu, sizeof cpu);
  {
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", gmtime(&now));
  }
  if (frontier_n) {
    int rc = frontier(frontier_n, many_base, cpu, when);
    if (md != stdout) fclose(md);
    return rc;
  }
  /* The tables, in the report's order: each leaves what the targets
     table reads. */
  table_intro(cpu, when);
  tables_synthetic(seeds, seed_base);
  table_many(many, many_base);
  if (tables_real(data, reps)) return 1;
  table_targets(seeds, many);
  if (md != stdout) fclose(md);
  return 0;
}
