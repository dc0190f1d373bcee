/* ========================================================================
   Detectors
   ======================================================================== */

enum {
  D_PAPER,
  D_ADAGC,
  D_ZCLIP,
  D_ROLL3,
  D_ROLL6,
  D_PROTO,
  D_PROTO_NOCOMMON,
  D_PROTO_NOAR,
  D_PROTO_ONESIDED,
  D_PROTO_Z41,
  D_ORACLE,
  D_COUNT
};
static const char *det_name[D_COUNT] = {
    "paper (gnmr.h 0.1 defaults)",
    "AdaGC-style ratio clip (1.05, EMA 0.98)",
    "ZClip-style EMA z-score (2.5, EMA 0.97)",
    "rolling z-score 3 sigma / 128",
    "rolling z-score 6 sigma / 128",
    "**noise-aware (proto defaults)**",
    "  ablation: no common view (c = 0)",
    "  ablation: no predictor (ar = 0)",
    "  ablation: rises only",
    "  variant: z_rise 4.1",
    "oracle (knows each unit's noise state; a bound, not a detector)"};

#define ROLL_W 128
typedef struct det {
  int kind;
  unsigned n;
  /* paper */
  gnmr_ctl ctl;
  gnmr_slot *slots;
  gnmr_decision *dec;
  /* peers */
  double *ema, *var;
  unsigned long long *cnt;
  double *win; /* n * ROLL_W */
  /* proto */
  proto_ctl pc;
  proto_unit *pu;
  double *pscratch;
  proto_step_info info;
  int lib; /* the noise-aware rule run by gnmr.h (NOISE mode) */
  unsigned long long mismatches; /* library vs prototype, unit-steps */
  /* outputs */
  unsigned char *flags;
  double *score;
  adm ad;
} det;

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) {
    fprintf(stderr, "detect: out of memory\n");
    exit(2);
  }
  return p;
}

/* --set NAME=VALUE: one prototype config field (for sweeps). */
static int proto_set(proto_config *c, const char *kv) {
  struct field {
    const char *name;
    double *d;
    unsigned *u;
    int *i;
  } f[] = {{"z_rise", &c->z_rise, NULL, NULL},
           {"z_fall", &c->z_fall, NULL, NULL},
           {"min_rise", &c->min_rise, NULL, NULL},
           {"max_fall", &c->max_fall, NULL, NULL},
           {"ar", &c->ar, NULL, NULL},
           {"mean_decay", &c->mean_decay, NULL, NULL},
           {"fluct_decay", &c->fluct_decay, NULL, NULL},
           {"winsor", &c->winsor, NULL, NULL},
           {"fluct_floor", &c->fluct_floor, NULL, NULL},
           {"global_ratio", &c->global_ratio, NULL, NULL},
           {"global_frac", &c->global_frac, NULL, NULL},
           {"hold", &c->hold, NULL, NULL},
           {"warmup", NULL, &c->warmup, NULL},
           {"common_min_units", NULL, &c->common_min_units, NULL},
           {"two_sided", NULL, NULL, &c->two_sided},
           {"global_gate", NULL, NULL, &c->global_gate}};
  const char *eq = strchr(kv, '=');
  size_t k, len;
  double v;
  if (!eq) return -1;
  len = (size_t)(eq - kv);
  v = atof(eq + 1);
  for (k = 0; k < sizeof f / sizeof f[0]; k++) {
    if (strlen(f[k].name) != len || strncmp(kv, f[k].name, len)) continue;
    if (f[k].d) *f[k].d = v;
    if (f[k].u) *f[k].u = (unsigned)v;
    if (f[k].i) *f[k].i = (int)v;
    return 0;
  }
  return -1;
}

static proto_config proto_over; /* defaults, with --set overrides */

static proto_config proto_variant(int kind) {
  proto_config c = proto_over;
  if (kind == D_PROTO_NOCOMMON) c.common_min_units = 0xFFFFFFFFu;
  if (kind == D_PROTO_NOAR) c.ar = 0.0;
  if (kind == D_PROTO_ONESIDED) c.two_sided = 0;
  if (kind == D_PROTO_Z41) c.z_rise = 4.1;
  return c;
}

/* The library's NOISE mode with a prototype config's values: the rule the
   noise-aware rows run (max_recovering 4, cooldown 4 as adm_init's). */
static gnmr_config lib_config(const proto_config *p, unsigned lock) {
  gnmr_config c = gnmr_config_paper();
  c.rule = GNMR_RULE_NOISE;
  c.max_recovering = 4;
  c.lock_steps = lock;
  c.cooldown_steps = 4;
#define PROTO_TO_LIB(proto, lib) c.lib = p->proto;
  PROTO_LIB_FIELDS(PROTO_TO_LIB)
#undef PROTO_TO_LIB
  c.two_sided = (uint32_t)(p->two_sided != 0);
  return c;
}

static void det_init(det *d, int kind, unsigned n, unsigned lock,
                     const proto_config *pcfg) {
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->n = n;
  d->flags = xcalloc(n, 1);
  d->score = xcalloc(n, sizeof(double));
  adm_init(&d->ad, n, 4, lock, 4);
  if (kind == D_PAPER) {
    gnmr_config cfg = gnmr_config_paper();
    cfg.max_recovering = 4;
    cfg.lock_steps = lock;
    d->slots = xcalloc(n, sizeof(gnmr_slot));
    d->dec = xcalloc(n, sizeof(gnmr_decision));
    if (gnmr_init(&d->ctl, &cfg, d->slots, n) != GNMR_OK) abort();
  } else if (kind == D_ORACLE) {
    /* flags come from the generator (run_synth) */
  } else if (kind >= D_PROTO) {
    proto_config c = pcfg ? *pcfg : proto_variant(kind);
    d->pu = xcalloc(n, sizeof(proto_unit));
    d->pscratch = xcalloc(n, sizeof(double));
    proto_init(&d->pc, &c, d->pu, d->pscratch, n);
    /* The library runs the rule whenever it can (the prototype, without
       its global gate, is a variant the library does not have). */
    if (c.global_gate && proto_plain(&c)) {
      gnmr_config cfg = lib_config(&c, lock);
      d->slots = xcalloc(n, sizeof(gnmr_slot));
      d->dec = xcalloc(n, sizeof(gnmr_decision));
      if (gnmr_init(&d->ctl, &cfg, d->slots, n) != GNMR_OK) abort();
      d->lib = 1;
    }
  } else {
    d->ema = xcalloc(n, sizeof(double));
    d->var = xcalloc(n, sizeof(double));
    d->cnt = xcalloc(n, sizeof(unsigned long long));
    if (kind == D_ROLL3 || kind == D_ROLL6)
      d->win = xcalloc((size_t)n * ROLL_W, sizeof(double));
  }
}

static void det_free(det *d) {
  if (d->kind == D_PAPER || d->lib) {
    /* The admission rules re-implemented here must give the library's own
       admissions on the paper's flags, or every other row is suspect. */
    gnmr_counters cn;
    if (gnmr_counters_get(&d->ctl, GNMR_ALL_UNITS, &cn) != GNMR_OK ||
        cn.admissions != d->ad.admissions) {
      fprintf(stderr,
              "detect: admission model disagrees with gnmr.h (%llu vs "
              "%llu)\n",
              (unsigned long long)cn.admissions, d->ad.admissions);
      exit(1);
    }
  }
  free(d->flags);
  free(d->score);
  free(d->slots);
  free(d->dec);
  free(d->ema);
  free(d->var);
  free(d->cnt);
  free(d->win);
  free(d->pu);
  free(d->pscratch);
  adm_free(&d->ad);
}

/* Peers. Warm-up: 16 finite observations (the rolling window uses what it
   holds until it is full). Both directions are computed; the fall side is
   the mirror rule (AdaGC: rises only). */
static void peer_step(det *d, const float *norms) {
  unsigned u;
  for (u = 0; u < d->n; u++) {
    double g = norms[u];
    unsigned char fl = 0;
    double sc = 0.0;
    if (!isfinite(g)) {
      d->flags[u] = PF_NONFINITE;
      d->score[u] = HUGE_VAL;
      continue;
    }
    if (d->kind == D_ADAGC) {
      /* AdaGC: clip when g > lambda * EMA of (clipped) norms */
      const double lam = 1.05, b = 0.98;
      if (d->cnt[u] >= 16 && g > lam * d->ema[u]) {
        fl = PF_RISE;
        sc = g / (lam * d->ema[u]);
      }
      {
        double x = fl ? lam * d->ema[u] : g;
        d->cnt[u]++;
        d->ema[u] =
            d->cnt[u] == 1 ? x : b * d->ema[u] + (1.0 - b) * x; /* clipped */
      }
    } else if (d->kind == D_ZCLIP) {
      /* ZClip: EMA mean and variance, z-score, spikes enter clipped */
      const double al = 0.97, zt = 2.5;
      double sd = sqrt(d->var[u]), x = g;
      if (d->cnt[u] >= 16 && sd > 0.0) {
        double z = (g - d->ema[u]) / sd;
        if (z > zt) {
          fl = PF_RISE;
          sc = z / zt;
          x = d->ema[u] + zt * sd;
        } else if (z < -zt) {
          fl = PF_FALL;
          sc = -z / zt;
          x = d->ema[u] - zt * sd;
        }
      }
      d->cnt[u]++;
      if (d->cnt[u] == 1) {
        d->ema[u] = x;
        d->var[u] = 0.0;
      } else {
        double diff = x - d->ema[u];
        d->ema[u] = al * d->ema[u] + (1.0 - al) * x;
        d->var[u] = al * d->var[u] + (1.0 - al) * diff * diff;
      }
    } else { /* rolling z-score over the last ROLL_W finite norms */
      const double zt = d->kind == D_ROLL3 ? 3.0 : 6.0;
      unsigned long long c = d->cnt[u];
      unsigned m = c < ROLL_W ? (unsigned)c : ROLL_W, i;
      double *w = d->win + (size_t)u * ROLL_W, mean = 0.0, ss = 0.0, sd;
      for (i = 0; i < m; i++) mean += w[i];
      if (m) mean /= m;
      for (i = 0; i < m; i++) ss += (w[i] - mean) * (w[i] - mean);
      sd = m > 1 ? sqrt(ss / (m - 1)) : 0.0;
      if (m >= 16 && sd > 0.0) {
        double z = (g - mean) / sd;
        if (z > zt) {
          fl = PF_RISE;
          sc = z / zt;
        } else if (z < -zt) {
          fl = PF_FALL;
          sc = -z / zt;
        }
      }
      if (!fl) { /* a flagged norm does not enter the window */
        w[c % ROLL_W] = g;
        d->cnt[u]++;
      }
    }
    d->flags[u] = fl;
    d->score[u] = sc;
  }
}

/* The library's NOISE mode on the same norms: its flags, scores and
   verdict replace the prototype's, which must agree bit for bit (the
   prototype stays as the port's cross-check: a disagreement stops the
   run). */
static void lib_step(det *d, const float *norms, int *gate) {
  gnmr_step_report rep;
  unsigned u;
  if (gnmr_step(&d->ctl, norms, d->dec) != GNMR_OK ||
      gnmr_step_info(&d->ctl, &rep) != GNMR_OK)
    abort();
  for (u = 0; u < d->n; u++) {
    uint32_t f = d->dec[u].flags;
    unsigned char fl = (unsigned char)((f & GNMR_FLAG_NONFINITE) ? PF_NONFINITE
                                       : (f & GNMR_FLAG_RATIO)   ? PF_RISE
                                       : (f & GNMR_FLAG_FALL)    ? PF_FALL
                                                                 : 0);
    double sc = (f & GNMR_FLAG_NONFINITE) ? HUGE_VAL : d->dec[u].score;
    if (fl != d->flags[u] || memcmp(&sc, &d->score[u], 8) != 0) d->mismatches++;
    d->flags[u] = fl;
    d->score[u] = sc;
  }
  if ((int)rep.global != d->info.global ||
      memcmp(&rep.common, &d->info.common, 8) != 0)
    d->mismatches++;
  if (d->mismatches) {
    fprintf(stderr,
            "detect: gnmr.h's NOISE mode disagrees with the "
            "prototype at step %llu\n",
            (unsigned long long)d->ctl.steps);
    exit(1);
  }
  d->info.global = (int)rep.global;
  d->info.common = rep.common;
  *gate = (int)rep.global;
}

static void det_step(det *d, const float *norms) {
  int gate = 0;
  if (d->kind == D_PAPER) {
    unsigned u;
    if (gnmr_step(&d->ctl, norms, d->dec) != GNMR_OK) abort();
    for (u = 0; u < d->n; u++) {
      uint32_t f = d->dec[u].flags;
      d->flags[u] =
          (unsigned char)((f & GNMR_FLAG_NONFINITE) ? PF_NONFINITE
                          : (f & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) ? PF_RISE
                                                                      : 0);
      d->score[u] = d->dec[u].score;
    }
  } else if (d->kind >= D_PROTO) {
    proto_step(&d->pc, norms, d->flags, d->score, &d->info);
    gate = d->pc.cfg.global_gate && d->info.global;
    if (d->lib) lib_step(d, norms, &gate);
  } else {
    peer_step(d, norms);
  }
  adm_step(&d->ad, d->flags, d->score, gate);
}
