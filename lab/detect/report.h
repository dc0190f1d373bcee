/* ========================================================================
   Report
   ======================================================================== */

static FILE *md;

static void cpu_name(char *buf, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  snprintf(buf, cap, "unknown CPU");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *p = strchr(line, ':');
      if (p) {
        size_t l;
        p += 2;
        l = strlen(p);
        if (l && p[l - 1] == '\n') p[l - 1] = 0;
        snprintf(buf, cap, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

/* --speed: a rough cost probe for the port (not a performance target: the
   prototype is plain scalar C, the library has SIMD paths). N = 4096 calm
   units (norms within 10% of 1), CPU-time ns per unit per step, gnmr_step and
   proto_step interleaved 5 times, and the median selection alone. */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int speed_probe(void) {
  enum { N = 4096, POOL = 16, STEPS = 400 };
  static float in[POOL][N];
  static gnmr_slot slots[N];
  static gnmr_decision dec[N];
  static proto_unit pu[N];
  static double scratch[N], sc[N], med[N];
  static unsigned char fl[N];
  gnmr_ctl ctl;
  proto_ctl pc;
  proto_config pcfg = proto_config_default();
  gnmr_config cfg = gnmr_config_paper();
  proto_step_info info;
  unsigned i, u, r;
  double sink = 0.0;
  rng_s = 42;
  for (i = 0; i < POOL; i++)
    for (u = 0; u < N; u++) in[i][u] = (float)(0.9 + 0.2 * uni());
  cfg.max_recovering = 4;
  if (gnmr_init(&ctl, &cfg, slots, N) != GNMR_OK) return 1;
  proto_init(&pc, &pcfg, pu, scratch, N);
  for (i = 0; i < 200; i++) {
    gnmr_step(&ctl, in[i % POOL], dec);
    proto_step(&pc, in[i % POOL], fl, sc, &info);
  }
  printf("speed probe, N = %d calm, ns per unit per step (%s path for "
         "gnmr_step)\n",
         N, gnmr_isa_name(gnmr_isa_active()));
  for (r = 0; r < 5; r++) {
    double t0 = now_ns(), t1, t2, t3;
    for (i = 0; i < STEPS; i++) {
      gnmr_step(&ctl, in[i % POOL], dec);
      sink += dec[i % N].scale;
    }
    t1 = now_ns();
    for (i = 0; i < STEPS; i++) {
      proto_step(&pc, in[i % POOL], fl, sc, &info);
      sink += sc[i % N];
    }
    t2 = now_ns();
    for (i = 0; i < STEPS; i++) {
      for (u = 0; u < N; u++) med[u] = proto_log(in[i % POOL][u], 1e-12);
      sink += med[i % N];
    }
    t3 = now_ns();
    printf("  gnmr_step (paper) %.2f   proto_step (scalar) %.2f   of which "
           "L() alone about %.2f\n",
           (t1 - t0) / ((double)STEPS * N), (t2 - t1) / ((double)STEPS * N),
           (t3 - t2) / ((double)STEPS * N));
  }
  return sink == 12345.0;
}

/* --selftest: the properties the spec comment claims, checked on the
   prototype itself (a port's tests should pin the same ones). Ends with
   "N passed, N failed". */
static int st_pass, st_fail;
static void st_check(int ok, const char *what) {
  if (ok)
    st_pass++;
  else {
    st_fail++;
    printf("FAIL: %s\n", what);
  }
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static int selftest(void) {
  unsigned i, r, u;
  double maxerr = 0.0, prev = -HUGE_VAL;
  int mono = 1, med_ok = 1;
  /* rule 0: error and monotonicity of L over 1e-12 ... 1e12 */
  rng_s = 7;
  for (i = 0; i < 2000000; i++) {
    double x = exp(-27.6 + 55.2 * (double)i / 2000000.0),
           l = proto_log(x, 1e-12);
    double err = fabs(l - log(x));
    if (err > maxerr) maxerr = err;
    if (l < prev) mono = 0;
    prev = l;
  }
  st_check(maxerr < 2e-5, "L(): |L(x) - log(x)| < 2e-5");
  st_check(mono, "L(): increasing");
  st_check(proto_log(0.0, 1e-12) == proto_log(1e-12, 1e-12),
           "L(): x below eps reads as eps");
  /* rule 3: the histogram median is the quantised lower median */
  for (r = 0; r < 2000 && med_ok; r++) {
    enum { NU = 97 };
    static proto_unit pu[NU];
    static double scr[NU], srt[NU], sc[NU];
    static float g[NU];
    static unsigned char fl[NU];
    proto_ctl pc;
    proto_config cf = proto_config_default();
    proto_step_info info;
    unsigned n = 1 + (unsigned)(uni() * NU), nv = 0;
    if (n > NU) n = NU;
    cf.warmup = 1;
    cf.common_min_units = 1;
    proto_init(&pc, &cf, pu, scr, n);
    for (u = 0; u < n; u++) {
      pu[u].k = 5;
      pu[u].mu = (uni() - 0.5) * (r % 7 == 0 ? 40.0 : 2.0);
      g[u] = (float)exp((uni() - 0.5) * (r % 5 == 0 ? 30.0 : 3.0));
      if (uni() < 0.05) g[u] = NAN;
    }
    for (u = 0; u < n; u++)
      if (isfinite(g[u])) srt[nv++] = proto_log(g[u], cf.eps) - pu[u].mu;
    proto_step(&pc, g, fl, sc, &info);
    if (nv) {
      qsort(srt, nv, sizeof(double), cmp_dbl);
      med_ok = info.common ==
               ((double)proto_q(srt[(nv - 1) / 2]) + 0.5) / 256.0 - 8.0;
    }
  }
  st_check(med_ok, "rule 3: histogram median == quantised sorted median");
  /* rules 1, 5, 6, 7: a non-finite norm changes no state; a spike moves
     s by at most (1 - fluct_decay) * winsor * S and mu by a * z_rise * S */
  {
    enum { NU = 16 };
    static proto_unit pu[NU], before[NU];
    static double scr[NU], sc[NU];
    static float g[NU];
    static unsigned char fl[NU];
    proto_ctl pc;
    proto_config cf = proto_config_default();
    proto_step_info info;
    unsigned t;
    proto_init(&pc, &cf, pu, scr, NU);
    for (t = 0; t < 300; t++) {
      for (u = 0; u < NU; u++) g[u] = (float)(1.0 + 0.1 * gauss());
      proto_step(&pc, g, fl, sc, &info);
    }
    memcpy(before, pu, sizeof pu);
    for (u = 0; u < NU; u++) g[u] = (float)(1.0 + 0.1 * gauss());
    g[3] = NAN;
    g[4] = INFINITY;
    g[5] = -INFINITY;
    proto_step(&pc, g, fl, sc, &info);
    st_check(!memcmp(&pu[3], &before[3], sizeof pu[3]) &&
                 !memcmp(&pu[4], &before[4], sizeof pu[4]) &&
                 !memcmp(&pu[5], &before[5], sizeof pu[5]),
             "rule 1: NaN/+-Inf leave mu, s, p, k untouched");
    st_check(fl[3] == PF_NONFINITE && fl[4] == PF_NONFINITE &&
                 fl[5] == PF_NONFINITE,
             "rule 1: NaN/+-Inf flagged NONFINITE");
    memcpy(before, pu, sizeof pu);
    for (u = 0; u < NU; u++) g[u] = 1.0f;
    g[7] = 1e30f;
    proto_step(&pc, g, fl, sc, &info);
    {
      double S = before[7].s > cf.fluct_floor ? before[7].s : cf.fluct_floor;
      st_check(fl[7] == PF_RISE, "rule 4: a x1e30 spike is a RISE");
      st_check(pu[7].s - before[7].s <=
                   (1.0 - cf.fluct_decay) * cf.winsor * S * (1.0 + 1e-12),
               "rule 6: a spike moves s by at most (1-fd)*winsor*S");
      st_check(pu[7].mu - before[7].mu <=
                   (1.0 - cf.mean_decay) * cf.z_rise * S * (1.0 + 1e-12),
               "rule 5: a spike moves mu by at most a*z_rise*S");
      st_check(pu[7].p == before[7].p, "rule 7: a flagged step keeps p");
    }
    g[7] = 1.0f;
    g[9] = 1e-20f;
    memcpy(before, pu, sizeof pu);
    proto_step(&pc, g, fl, sc, &info);
    st_check(fl[9] == PF_FALL, "rule 4: a x1e-20 fall is a FALL");
  }
  printf("%d passed, %d failed\n", st_pass, st_fail);
  return st_fail != 0;
}

static const double sigmas[] = {0.05, 0.12, 0.25, 0.4};
