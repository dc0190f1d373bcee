/* quickstart.c - the smallest complete use of gnmr.h: feed each step's
   per-unit gradient norms, read the decisions, apply their scales to the
   gradients. Unit 2 spikes at step 60, after the default warm-up of 16
   observations; unit 5's gradient holds a NaN at step 70. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include <math.h>
#include <stdio.h>

#define N 8
#define N_GRAD 4 /* each unit's gradient: a few elements */

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
    static float grad[N][N_GRAD]; /* the gradients, as a backward pass
                                     leaves them */
    float norms[N];
    gnmr_decision d[N];
    for (u = 0; u < N; u++) {
      int i;
      for (i = 0; i < N_GRAD; i++)
        grad[u][i] = 0.5f + 0.005f * (float)((step * 7 + u) % 5);
      if (step == 60 && u == 2) grad[u][0] = 50.0f; /* a numerical spike */
      if (step == 70 && u == 5) grad[u][1] = NAN;   /* a NaN */
      norms[u] = (float)sqrt(gnmr_sumsq_f32(grad[u], N_GRAD));
    }
    rc = gnmr_step(&ctl, norms, d);
    if (rc != GNMR_OK) {
      fprintf(stderr, "gnmr_step: %s\n", gnmr_strerror(rc));
      return 1;
    }
    /* Each unit's gradient times its scale, before the optimizer reads
       it: 1 leaves it as it is, 0 (a NaN or Inf norm) writes zeros. */
    for (u = 0; u < N; u++) gnmr_scale_f32(grad[u], N_GRAD, d[u].scale);
    for (u = 0; u < N; u++) {
      char flags[GNMR_FLAGS_STRING_MAX];
      if (d[u].action == GNMR_ACTION_KEEP) continue;
      gnmr_flags_string(d[u].flags, flags, sizeof flags);
      printf("step %2d unit %d: %-7s ratio %6.2f scale %.3f [%s], gradient "
             "now %.3f %.3f ...\n",
             step, u, gnmr_action_name(d[u].action), d[u].ratio, d[u].scale,
             flags, grad[u][0], grad[u][1]);
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
