/* quickstart.c - the smallest complete use of gnmr.h: feed each step's
   per-unit gradient norms, read the decisions. Unit 2 spikes at step 40. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <stdio.h>

#define N 8

int main(void) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_slot units[N];
  gnmr_ctl ctl;
  int step, u, rc;
  cfg.max_recovering = 2;
  rc = gnmr_init(&ctl, &cfg, units, N);
  if (rc != GNMR_OK) {
    fprintf(stderr, "gnmr_init: %s\n", gnmr_strerror(rc));
    return 1;
  }
  for (step = 0; step < 60; step++) {
    float norms[N];
    gnmr_decision d[N];
    for (u = 0; u < N; u++)
      norms[u] = 1.0f + 0.01f * (float)((step * 7 + u) % 5);
    if (step == 40) norms[2] = 50.0f; /* a short numerical spike */
    rc = gnmr_step(&ctl, norms, d);
    if (rc != GNMR_OK) {
      fprintf(stderr, "gnmr_step: %s\n", gnmr_strerror(rc));
      return 1;
    }
    for (u = 0; u < N; u++)
      if (d[u].action != GNMR_ACTION_KEEP)
        printf("step %2d unit %d: %-7s gnmr %6.2f scale %.3f\n", step, u,
               d[u].action == GNMR_ACTION_RECOVER ? "recover"
               : d[u].action == GNMR_ACTION_HOLD  ? "hold"
                                                  : "release",
               d[u].ratio, d[u].scale);
    /* gnmr_recovering(&ctl, u) != 0: run unit u high-fidelity next step. */
  }
  return 0;
}
