/* bench_ctl.c - controller overhead: nanoseconds per unit per gnmr_step.

   For N = 16 ... 1M units, calm and spiky inputs, a small and a large
   max_recovering, with the decision array filled and without it (out =
   NULL: state and admission only). Each measurement runs batches of steps sized
   to take about BATCH_MS, repeats them, and reports the median and the spread
   (min, max). The decisions feed a sink so the work cannot be optimised away.

   usage: bench_ctl [--csv FILE] [--quick] [--units N]
                    [--rule paper|noise|calm]
   (--units N: the rows for N units only, any N >= 1; --rule: the rules of
   gnmr_config_paper(), NOISE mode or gnmr_config_calm() (rule 10's band,
   which takes the scalar rules), else gnmr_config_default()'s) */
#define _POSIX_C_SOURCE 199309L
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include "tests/splitmix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL 16 /* distinct input vectors, cycled */
#define REPEATS 9

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static double uniform(void) { return splitmix_uniform(&rng_state); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void cpu_name(char *out, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  snprintf(out, cap, "unknown CPU");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && colon) {
      snprintf(out, cap, "%s", colon + 2);
      out[strcspn(out, "\n")] = 0;
      break;
    }
  }
  fclose(f);
}

typedef struct result {
  double median, lo, hi;
} result;

static double sink;
static int rule = -1; /* --rule; -1: the default config's */
static int calm;      /* --rule calm: gnmr_config_calm() */

static result measure(uint32_t n, int spiky, uint32_t max_recovering,
                      int with_out, double batch_ms) {
  gnmr_config cfg = rule < 0                  ? gnmr_config_default()
                    : rule == GNMR_RULE_NOISE ? gnmr_config_noise()
                                              : gnmr_config_paper();
  gnmr_slot *units = (gnmr_slot *)malloc(sizeof *units * n);
  gnmr_decision *d = (gnmr_decision *)malloc(sizeof *d * n);
  gnmr_decision *out = with_out ? d : NULL;
  float *pool = (float *)malloc(sizeof *pool * n * POOL);
  double samples[REPEATS], t0, per_step;
  gnmr_ctl ctl;
  result r;
  uint64_t steps = 0, batch, s;
  uint32_t u, p;
  int i;
  if (!units || !d || !pool) {
    fprintf(stderr, "bench_ctl: out of memory at N = %u\n", n);
    exit(1);
  }
  for (p = 0; p < POOL; p++)
    for (u = 0; u < n; u++) {
      double v = 1.0 + 0.1 * uniform();
      if (spiky && uniform() < 0.05) v *= 10.0 + 50.0 * uniform();
      if (spiky && uniform() < 0.001) v = (double)NAN;
      pool[(size_t)p * n + u] = (float)v;
    }
  if (calm) cfg = gnmr_config_calm();
  cfg.max_recovering = max_recovering;
  if (gnmr_init(&ctl, &cfg, units, n) != GNMR_OK) {
    fprintf(stderr, "bench_ctl: gnmr_init failed\n");
    exit(1);
  }
  /* Past warm-up, and an estimate of one step's cost to size the batches. */
  t0 = now_ns();
  for (s = 0; s < 64 || now_ns() - t0 < 20e6; s++) {
    gnmr_step(&ctl, pool + (size_t)(steps++ % POOL) * n, out);
    sink += with_out ? d[s % n].scale : (double)gnmr_recovering(&ctl, 0);
  }
  per_step = (now_ns() - t0) / (double)s;
  batch = (uint64_t)(batch_ms * 1e6 / per_step) + 1;
  for (i = 0; i < REPEATS; i++) {
    t0 = now_ns();
    for (s = 0; s < batch; s++) {
      gnmr_step(&ctl, pool + (size_t)(steps++ % POOL) * n, out);
      sink += with_out ? d[s % n].scale : (double)gnmr_recovering(&ctl, 0);
    }
    samples[i] = (now_ns() - t0) / ((double)batch * (double)n);
  }
  qsort(samples, REPEATS, sizeof samples[0], cmp_double);
  r.median = samples[REPEATS / 2];
  r.lo = samples[0];
  r.hi = samples[REPEATS - 1];
  free(units);
  free(d);
  free(pool);
  return r;
}

int main(int argc, char **argv) {
  static const uint32_t all_sizes[] = {16, 256, 4096, 65536, 1u << 20};
  const uint32_t *sizes = all_sizes;
  size_t n_sizes = sizeof all_sizes / sizeof all_sizes[0];
  const char *csv_path = NULL;
  double batch_ms = 100.0;
  uint32_t only = 0;
  char cpu[128];
  FILE *csv = NULL;
  size_t i;
  int a, spiky, large;
  for (a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--csv") == 0 && a + 1 < argc)
      csv_path = argv[++a];
    else if (strcmp(argv[a], "--quick") == 0)
      batch_ms = 10.0;
    else if (strcmp(argv[a], "--units") == 0 && a + 1 < argc &&
             (only = (uint32_t)strtoul(argv[a + 1], NULL, 10)) > 0) {
      sizes = &only;
      n_sizes = 1;
      a++;
    } else if (strcmp(argv[a], "--rule") == 0 && a + 1 < argc &&
               strcmp(argv[a + 1], "calm") == 0) {
      calm = 1;
      a++;
    } else if (strcmp(argv[a], "--rule") == 0 && a + 1 < argc &&
               (strcmp(argv[a + 1], "paper") == 0 ||
                strcmp(argv[a + 1], "noise") == 0)) {
      rule =
          strcmp(argv[++a], "paper") == 0 ? GNMR_RULE_PAPER : GNMR_RULE_NOISE;
    } else {
      fprintf(stderr, "usage: bench_ctl [--csv FILE] [--quick] [--units N] "
                      "[--rule paper|noise|calm]\n");
      return 2;
    }
  }
  if (csv_path && !(csv = fopen(csv_path, "w"))) {
    fprintf(stderr, "bench_ctl: cannot write %s\n", csv_path);
    return 1;
  }
  cpu_name(cpu, sizeof cpu);
  printf("gnmr_step cost, ns per unit per step (median [min, max] of %d "
         "batches of ~%.0f ms)\n",
         REPEATS, batch_ms);
  printf("cpu: %s; compiler: %s; gnmr %s; rules: %s\n\n", cpu, __VERSION__,
         gnmr_version(),
         calm                                            ? "PAPER + band (calm)"
         : rule == GNMR_RULE_PAPER                       ? "PAPER"
         : rule == GNMR_RULE_NOISE                       ? "NOISE"
         : gnmr_config_default().rule == GNMR_RULE_NOISE ? "NOISE (default)"
                                                         : "PAPER (default)");
  printf("%9s  %-6s %8s  %-26s %-26s\n", "units", "input", "maxO",
         "with decisions", "out = NULL");
  if (csv)
    fprintf(csv,
            "units,input,max_recovering,decisions,ns_median,ns_min,ns_max\n");
  for (i = 0; i < n_sizes; i++)
    for (spiky = 0; spiky <= 1; spiky++)
      for (large = 0; large <= 1; large++) {
        uint32_t n = sizes[i];
        uint32_t max_o = large ? n / 8 : (n < 4 ? n : 4);
        result r[2];
        int with_out;
        for (with_out = 1; with_out >= 0; with_out--) {
          r[with_out] = measure(n, spiky, max_o, with_out, batch_ms);
          if (csv)
            fprintf(csv, "%u,%s,%u,%s,%.4f,%.4f,%.4f\n", n,
                    spiky ? "spiky" : "calm", max_o, with_out ? "yes" : "no",
                    r[with_out].median, r[with_out].lo, r[with_out].hi);
        }
        printf(
            "%9u  %-6s %8u  %6.2f [%5.2f, %6.2f]      %6.2f [%5.2f, %6.2f]\n",
            n, spiky ? "spiky" : "calm", max_o, r[1].median, r[1].lo, r[1].hi,
            r[0].median, r[0].lo, r[0].hi);
        fflush(stdout);
      }
  printf("\n(sink %g)\n", sink);
  if (csv) fclose(csv);
  return 0;
}
