/* ========================================================================
   Metrics
   ======================================================================== */

typedef struct tally {
  double rise_n, rise_hit, rise_lat, fall_n, fall_hit, fall_lat;
  double fa, fa_n, adm, rec, steps;
  double g_n, g_hit, g_false, g_free;
} tally;

/* Runs one detector over one synthetic trace. gflag: the detector's global
   verdict per step (proto: rule 3; others: none here). */
static void run_synth(const synth *s, int kind, tally *ty,
                      const proto_config *pcfg) {
  det d;
  unsigned t, u, i;
  unsigned char *fl = xcalloc((size_t)ST * SN, 1);
  char *gf = xcalloc(ST, 1);
  det_init(&d, kind, SN, 5, pcfg);
  for (t = 0; t < ST; t++) {
    if (kind == D_ORACLE) {
      /* innovation beyond 3.35 sigma either way: 0.08% for Gaussian noise */
      for (u = 0; u < SN; u++) {
        double g = s->norms[t * SN + u], r;
        if (!isfinite(g)) {
          d.flags[u] = PF_NONFINITE;
          d.score[u] = HUGE_VAL;
          continue;
        }
        r = (log(g) - s->pred[t * SN + u]) / s->sigma;
        d.flags[u] = (unsigned char)(r > 3.35    ? PF_RISE
                                     : r < -3.35 ? PF_FALL
                                                 : 0);
        d.score[u] = fabs(r) / 3.35;
      }
      adm_step(&d.ad, d.flags, d.score, 0);
    } else {
      d.pc.genie_lvl = s->lvl + (size_t)t * SN;
      d.pc.genie_c = s->lhf[t];
      d.pc.genie_sigma = s->sigma;
      det_step(&d, s->norms + (size_t)t * SN);
    }
    memcpy(fl + (size_t)t * SN, d.flags, SN);
    if (kind >= D_PROTO) gf[t] = (char)d.info.global;
  }
  for (i = 0; i < s->nev; i++) {
    const event *e = &s->evs[i];
    int hit = -1;
    unsigned want =
        e->fall ? (PF_FALL | PF_NONFINITE) : (PF_RISE | PF_NONFINITE);
    for (t = e->t0; t < e->t0 + e->dur && hit < 0; t++)
      if (fl[t * SN + e->unit] & want) hit = (int)(t - e->t0);
    if (e->fall) {
      ty->fall_n++;
      if (hit >= 0) ty->fall_hit++, ty->fall_lat += hit;
    } else {
      ty->rise_n++;
      if (hit >= 0) ty->rise_hit++, ty->rise_lat += hit;
    }
  }
  for (t = 0; t < ST; t++) {
    if (s->gstep[t]) continue;
    for (u = 0; u < SN; u++) {
      if (s->ev[t * SN + u]) continue;
      ty->fa_n++;
      if (fl[t * SN + u] & (PF_RISE | PF_FALL)) ty->fa++;
    }
  }
  ty->adm += (double)d.ad.admissions;
  ty->rec += (double)d.ad.recovery_steps;
  ty->steps += ST;
  if (kind >= D_PROTO) {
    for (i = 0; i < s->ngev; i++) {
      int hit = 0;
      for (t = s->gev[i].t0; t < s->gev[i].t0 + s->gev[i].dur; t++)
        hit |= gf[t];
      ty->g_n++;
      ty->g_hit += hit;
    }
    for (t = 0; t < ST; t++)
      if (!s->gstep[t]) ty->g_free++, ty->g_false += gf[t];
  }
  det_free(&d);
  free(fl);
  free(gf);
}

/* Peer global verdicts on a synthetic trace: the share of units the paper
   flags (> 20%), and a rolling 6-sigma z-score of the global norm. */
static void run_synth_global_peers(const synth *s, tally *cnt, tally *roll) {
  det d;
  unsigned t, u, i;
  char *g1 = xcalloc(ST, 1), *g2 = xcalloc(ST, 1);
  double win[ROLL_W];
  unsigned long long c = 0;
  det_init(&d, D_PAPER, SN, 5, NULL);
  for (t = 0; t < ST; t++) {
    unsigned nf = 0, m;
    double ss = 0.0, G, mean = 0.0, v = 0.0;
    det_step(&d, s->norms + (size_t)t * SN);
    for (u = 0; u < SN; u++) {
      double g = s->norms[t * SN + u];
      nf += d.flags[u] != 0;
      if (isfinite(g)) ss += g * g;
    }
    g1[t] = nf * 5 > SN;
    G = sqrt(ss);
    m = c < ROLL_W ? (unsigned)c : ROLL_W;
    for (i = 0; i < m; i++) mean += win[i];
    if (m) mean /= m;
    for (i = 0; i < m; i++) v += (win[i] - mean) * (win[i] - mean);
    if (m >= 16 && v > 0.0 && (G - mean) / sqrt(v / (m - 1)) > 6.0) g2[t] = 1;
    win[c % ROLL_W] = G;
    c++;
  }
  for (i = 0; i < s->ngev; i++) {
    int h1 = 0, h2 = 0;
    for (t = s->gev[i].t0; t < s->gev[i].t0 + s->gev[i].dur; t++)
      h1 |= g1[t], h2 |= g2[t];
    cnt->g_n++, roll->g_n++;
    cnt->g_hit += h1, roll->g_hit += h2;
  }
  for (t = 0; t < ST; t++)
    if (!s->gstep[t]) {
      cnt->g_free++, roll->g_free++;
      cnt->g_false += g1[t], roll->g_false += g2[t];
    }
  det_free(&d);
  free(g1);
  free(g2);
}
