/* quickstart.c - the smallest complete use of gnmr.h: feed each step's
   per-unit gradient norms, read the decisions. Unit 2 spikes at step 60,
   after the default warm-up of 16 observations. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <stdio.h>

#define N 8

int main(void) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_slot slots[N];
  gnmr_ctl ctl;
  int step, u, rc;
  cfg.max_recovering = 2;
  rc = gnmr_init(&ctl, &cfg, slots, N);
  if (rc != GNMR_OK) {
    const char *field = NULL;
    gnmr_config_check(&cfg, N, &field);
    fprintf(stderr, "gnmr_init: %s (%s)\n", gnmr_strerror(rc),
            field ? field : "-");
    return 1;
  }
  for (step = 0; step < 75; step++) {
    float norms[N];
    gnmr_decision d[N];
    for (u = 0; u < N; u++)
      norms[u] = 1.0f + 0.01f * (float)((step * 7 + u) % 5);
    if (step == 60) norms[2] = 50.0f; /* a short numerical spike */
    rc = gnmr_step(&ctl, norms, d);
    if (rc != GNMR_OK) {
      fprintf(stderr, "gnmr_step: %s\n", gnmr_strerror(rc));
      return 1;
    }
    for (u = 0; u < N; u++) {
      char flags[GNMR_FLAGS_STRING_MAX];
      if (d[u].action == GNMR_ACTION_KEEP) continue;
      gnmr_flags_string(d[u].flags, flags, sizeof flags);
      printf("step %2d unit %d: %-7s ratio %6.2f scale %.3f [%s]\n", step, u,
             gnmr_action_name(d[u].action), d[u].ratio, d[u].scale, flags);
    }
    /* gnmr_recovering(&ctl, u) != 0: run unit u high-fidelity next step. */
  }
  {
    gnmr_unit_state st;
    gnmr_unit_info(&ctl, 2, &st);
    printf("unit 2: mean %.3f over %llu norms, %llu admission(s), cooldown "
           "left %u\n",
           st.mean, (unsigned long long)st.counters.finite_steps,
           (unsigned long long)st.counters.admissions, st.cooldown_left);
  }
  return 0;
}
