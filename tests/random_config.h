/* random_config.h - gnmr configs drawn over their ranges, for the tests
   that compare the device controller (or its host emulation) with
   gnmr_step: test_ctl_parallel.c and tests/cuda/test_ctl_cuda.cu. Needs
   gnmr.h and tests/check.h (check_rand) first. */
#ifndef GNMR_TESTS_RANDOM_CONFIG_H
#define GNMR_TESTS_RANDOM_CONFIG_H

static gnmr_config paper_config(uint32_t n) {
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
  if (check_rand() % 2) { /* rule 9 on, in runs short enough to happen */
    c.shift_steps = 2 + (uint32_t)(check_rand() % 6);
    c.shift_spread = (double)(check_rand() % 8) / 4.0;
  }
  if (check_rand() % 3 == 0) { /* rule 10 on, narrow enough to act */
    c.band_k = 0.25 + (double)(check_rand() % 16) / 4.0;
    c.band_steps = 1 + (uint32_t)(check_rand() % 3);
  }
  return c;
}

/* NOISE mode (two runs in three), its fields drawn over their ranges, or
   the paper rules. */
static gnmr_config random_config(uint32_t n) {
  gnmr_config c = paper_config(n);
  if (check_rand() % 3 == 0) return c;
  c.rule = GNMR_RULE_NOISE;
  c.two_sided = check_rand() % 4 != 0;
  c.z_rise = 1.0 + (double)(check_rand() % 40) / 8.0;
  c.z_fall = 1.0 + (double)(check_rand() % 40) / 8.0;
  c.min_rise = 1.05 + (double)(check_rand() % 30) / 10.0;
  c.max_fall = 0.1 + (double)(check_rand() % 8) / 10.0;
  c.ar = (double)(check_rand() % 10) / 10.0;
  c.hold = 0.5 + (double)(check_rand() % 8);
  c.fluct_decay = check_rand() % 3 ? 0.995 : check_rand() % 2 ? 1.0 : 0.9;
  c.winsor = 1.0 + (double)(check_rand() % 4);
  c.fluct_floor = check_rand() % 3 ? 0.01 : check_rand() % 2 ? 0.0 : 0.2;
  c.global_ratio = 1.2 + (double)(check_rand() % 30) / 10.0;
  c.global_frac = (double)(1 + check_rand() % 10) / 10.0;
  c.common_min_units = 1 + (uint32_t)(check_rand() % (n < 16 ? n + 1 : 16));
  c.global_policy = (int)(check_rand() % 3);
  return c;
}

#endif
