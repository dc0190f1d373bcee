/* ========================================================================
   Real traces
   ======================================================================== */

typedef struct trace {
  float *norms; /* T * N */
  unsigned T, N;
} trace;

static int trace_load(trace *tr, const char *path) {
  FILE *f = fopen(path, "r");
  static char line[1 << 16];
  unsigned cap = 4096;
  if (!f) return -1;
  tr->T = tr->N = 0;
  if (!fgets(line, sizeof line, f)) {
    fclose(f);
    return -1;
  }
  {
    char *p;
    unsigned cols = 1;
    for (p = line; *p; p++) cols += *p == ',';
    if (cols < 3) {
      fclose(f);
      return -1;
    }
    tr->N = cols - 2;
  }
  tr->norms = xcalloc((size_t)cap * tr->N, sizeof(float));
  while (fgets(line, sizeof line, f)) {
    char *p = line, *q;
    unsigned c;
    if (tr->T == cap) {
      cap *= 2;
      tr->norms = realloc(tr->norms, (size_t)cap * tr->N * sizeof(float));
      if (!tr->norms) abort();
    }
    strtod(p, &q); /* step */
    if (*q != ',') break;
    strtod(q + 1, &q); /* loss */
    for (c = 0; c < tr->N; c++) {
      if (*q != ',') {
        fclose(f);
        return -1;
      }
      p = q + 1;
      tr->norms[(size_t)tr->T * tr->N + c] = (float)strtod(p, &q);
      if (q == p) {
        fclose(f);
        return -1;
      }
    }
    tr->T++;
  }
  fclose(f);
  return tr->T > 0 ? 0 : -1;
}

/* Column names of a trace (the parameter tensors), for the tables. */
#define NAMES_MAX 128
static char trace_names[NAMES_MAX][64];
static void trace_load_names(const char *path, unsigned n) {
  static char line[1 << 16];
  FILE *f = fopen(path, "r");
  char *p, *q;
  unsigned c = 0;
  memset(trace_names, 0, sizeof trace_names);
  if (!f) return;
  if (fgets(line, sizeof line, f)) {
    for (p = line; c < n + 2 && c < NAMES_MAX + 2; c++, p = q + 1) {
      size_t len;
      q = p + strcspn(p, ",\r\n");
      len = (size_t)(q - p) < 63 ? (size_t)(q - p) : 63;
      if (c >= 2) memcpy(trace_names[c - 2], p, len);
      if (*q != ',') break;
    }
  }
  fclose(f);
}

typedef struct real_res {
  double adm, flags, global; /* per 1000 steps (flags: per 1000 unit-steps) */
  double rise_n, rise_1, rise_any, fall_n, fall_1, fall_any;
} real_res;

/* Runs one detector over a trace (lock L: the library's default 8);
   returns admissions, flags and global events; out_flags (T*N) optional,
   gout (T) optional. */
static void run_real(const trace *tr, const float *norms, int kind,
                     const proto_config *pcfg, unsigned char *out_flags,
                     char *gout, double *adm, double *flags, double *glob) {
  det d;
  unsigned t, u;
  double nfl = 0.0, ng = 0.0;
  det_init(&d, kind, tr->N, 8, pcfg);
  for (t = 0; t < tr->T; t++) {
    det_step(&d, norms + (size_t)t * tr->N);
    for (u = 0; u < tr->N; u++) {
      nfl += (d.flags[u] & (PF_RISE | PF_FALL)) != 0;
      if (diag && kind == D_PROTO && norms == tr->norms && !pcfg &&
          (d.flags[u] & (PF_RISE | PF_FALL)))
        fprintf(stderr, "diag t=%u u=%u fl=%d score=%.2f c=%.3f s=%.3f\n", t, u,
                d.flags[u], d.score[u], d.info.common, d.pu[u].s);
    }
    if (out_flags) memcpy(out_flags + (size_t)t * tr->N, d.flags, tr->N);
    if (kind >= D_PROTO) ng += d.info.global;
    if (gout) gout[t] = kind >= D_PROTO ? (char)d.info.global : 0;
  }
  if (adm) *adm = 1000.0 * (double)d.ad.admissions / tr->T;
  if (flags) *flags = 1000.0 * nfl / ((double)tr->T * tr->N);
  if (glob) *glob = 1000.0 * ng / tr->T;
  det_free(&d);
}

/* Injected events on a trace: every ~25 steps after step 200, a random
   unit x3-x50 (rise) or x0.02-x0.2 (fall) for 1-3 steps. */
static void run_inject(const trace *tr, int kind, const proto_config *pcfg,
                       int fall, unsigned reps, double *n, double *hit1,
                       double *hitany) {
  unsigned r, t, i;
  size_t sz = (size_t)tr->T * tr->N;
  float *x = xcalloc(sz, sizeof(float));
  unsigned char *fl = xcalloc(sz, 1);
  unsigned *t0 = xcalloc(tr->T, sizeof(unsigned)),
           *du = xcalloc(tr->T, sizeof(unsigned)),
           *un = xcalloc(tr->T, sizeof(unsigned));
  for (r = 0; r < reps; r++) {
    unsigned ne = 0;
    rng_s = 0xABCDEFull + 7919ull * r + (fall ? 104729ull : 0ull);
    memcpy(x, tr->norms, sz * sizeof(float));
    for (t = 200 + urange(0, 10); t + 3 < tr->T; t += 20 + urange(0, 10)) {
      double f = fall ? loguni(0.02, 0.2) : loguni(3.0, 50.0);
      t0[ne] = t;
      du[ne] = urange(1, 3);
      un[ne] = urange(0, tr->N - 1);
      for (i = 0; i < du[ne]; i++)
        x[(size_t)(t + i) * tr->N + un[ne]] =
            (float)(x[(size_t)(t + i) * tr->N + un[ne]] * f);
      ne++;
    }
    run_real(tr, x, kind, pcfg, fl, NULL, NULL, NULL, NULL);
    for (i = 0; i < ne; i++) {
      unsigned want = fall ? PF_FALL : PF_RISE, k;
      int first = -1;
      for (k = 0; k < du[i] && first < 0; k++)
        if (fl[(size_t)(t0[i] + k) * tr->N + un[i]] & (want | PF_NONFINITE))
          first = (int)k;
      *n += 1;
      *hit1 += first >= 0 && first <= 1;
      *hitany += first >= 0;
    }
  }
  free(x);
  free(fl);
  free(t0);
  free(du);
  free(un);
}
