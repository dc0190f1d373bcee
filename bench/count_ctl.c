/* count_ctl.c - a fixed number of controller steps on ab-ctl's inputs
   (bench/ab_ctl.c: N = 4096, calm norms within 10% of 1, or 5% of them
   4-24x), for counts that do not drift: instructions, cache misses and
   branches under cachegrind. Two runs of different lengths, differenced,
   give one step's count (bench/RESULTS.md, "Controller").

   usage: count_ctl shift(0|1) spiky(0|1) steps [scalar]
   cc -O2 -ffp-contract=off -I. bench/count_ctl.c -lm; with NULLOUT set in
   the environment the steps write no decisions. Against 0.3, build it with
   0.3's gnmr.h first on the include path and shift 0 (0.3 has no
   shift_steps: the line that sets it is left out when GNMR_VERSION_MINOR
   is below 4). */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static gnmr_slot slots[N];
static float x[16 * N];
static gnmr_decision d[N];
static uint64_t rs = 88172645463325252ull;

static double uniform(void) { /* [0, 1), xorshift64 */
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_ctl ctl;
  gnmr_decision *out = getenv("NULLOUT") ? NULL : d;
  double sink = 0;
  uint32_t u;
  int shift, spiky, steps, s;
  if (argc < 4) {
    fprintf(stderr, "usage: count_ctl shift spiky steps [scalar]\n");
    return 2;
  }
  shift = atoi(argv[1]);
  spiky = atoi(argv[2]);
  steps = atoi(argv[3]);
#if GNMR_VERSION_MAJOR > 0 || GNMR_VERSION_MINOR >= 4
  if (!shift) cfg.shift_steps = 0;
#else
  (void)shift;
#endif
  if (argc > 4 && strcmp(argv[4], "scalar") == 0 &&
      gnmr_ctl_isa_force(GNMR_ISA_SCALAR) != GNMR_OK)
    return 1;
  if (gnmr_init(&ctl, &cfg, slots, N) != GNMR_OK) return 1;
  for (u = 0; u < 16 * N; u++) {
    double v = 1.0 + 0.1 * uniform();
    if (spiky && uniform() < 0.05) v *= 4.0 + 20.0 * uniform();
    x[u] = (float)v;
  }
  for (s = 0; s < steps; s++) {
    if (gnmr_step(&ctl, x + (s % 16) * N, out) != GNMR_OK) return 1;
    sink += d[s % N].scale;
  }
  printf("%g\n", sink); /* the sink: the steps' work is used */
  return 0;
}
