/* ========================================================================
   Synthetic traces
   ======================================================================== */

#define SN 64
#define ST 4000
#define EV_MAX 2048
#define GE_MAX 128

typedef struct event {
  unsigned t0, dur, unit;
  int fall;
} event;
typedef struct gevent {
  unsigned t0, dur;
} gevent;

typedef struct synth {
  float *norms; /* ST * SN */
  float *pred;  /* ST * SN: log norm without this step's innovation and
                   event (what an oracle of the noise state expects) */
  float *lvl;   /* ST * SN: log norm without noise, event or hard batch */
  double *lhf;  /* ST: log of the hard batch's factor (0 on other steps) */
  double sigma;
  int *ev;     /* ST * SN: event index + 1, 0 outside events */
  char *gstep; /* ST: inside a global event */
  char *hard;  /* ST: hard batch */
  event evs[EV_MAX];
  unsigned nev;
  gevent gev[GE_MAX];
  unsigned ngev;
} synth;

static void synth_make(synth *s, double sigma, unsigned long long seed) {
  double e[SN], base[SN], per[SN], ph[SN];
  unsigned t, u, i;
  int *busy = xcalloc(SN, sizeof(int)); /* unit free from this step on */
  rng_s = seed * 0x2545F4914F6CDD1Dull + 17;
  s->norms = xcalloc((size_t)ST * SN, sizeof(float));
  s->pred = xcalloc((size_t)ST * SN, sizeof(float));
  s->lvl = xcalloc((size_t)ST * SN, sizeof(float));
  s->lhf = xcalloc(ST, sizeof(double));
  s->sigma = sigma;
  s->ev = xcalloc((size_t)ST * SN, sizeof(int));
  s->gstep = xcalloc(ST, 1);
  s->hard = xcalloc(ST, 1);
  s->nev = s->ngev = 0;
  for (u = 0; u < SN; u++) {
    base[u] = log(loguni(1e-3, 1.0));
    per[u] = 1500.0 + 4500.0 * uni();
    ph[u] = 6.283185307179586 * uni();
    e[u] = sigma / sqrt(1.0 - 0.49) * gauss();
  }
  /* global events first: ~1 per 200 steps after step 200, 1-3 steps,
     70-100% of units, x3-x20 (each unit jittered x0.8-1.25) */
  for (t = 200; t < ST - 10; t++) {
    if (uni() < 1.0 / 200.0 && s->ngev < GE_MAX) {
      gevent *g = &s->gev[s->ngev++];
      g->t0 = t;
      g->dur = urange(1, 3);
      for (i = 0; i < g->dur; i++) s->gstep[t + i] = 1;
      t += g->dur + 8;
    }
  }
  for (t = 0; t < ST; t++)
    if (!s->gstep[t] && uni() < 0.02) s->hard[t] = 1;
  /* local events: start with probability 0.08 per step after step 150,
     1-3 units free for the whole event and 8 steps after, 1-5 steps;
     a quarter are falls (x0.02-x0.2), the rest rises (x1.8-x50). */
  for (t = 150; t < ST - 6; t++) {
    unsigned nu, dur, k, clash = 0;
    if (uni() >= 0.08) continue;
    dur = urange(1, 5);
    for (i = 0; i < dur + 3 && t + i < ST; i++)
      clash |= (unsigned)s->gstep[t + i];
    if (t >= 3)
      for (i = 1; i <= 3; i++) clash |= (unsigned)s->gstep[t - i];
    if (clash) continue;
    nu = urange(1, 3);
    for (k = 0; k < nu && s->nev < EV_MAX; k++) {
      unsigned tries = 0;
      do u = urange(0, SN - 1);
      while (busy[u] > (int)t && ++tries < 100);
      if (busy[u] > (int)t) break;
      busy[u] = (int)(t + dur + 8);
      s->evs[s->nev].t0 = t;
      s->evs[s->nev].dur = dur;
      s->evs[s->nev].unit = u;
      s->evs[s->nev].fall = uni() < 0.25;
      for (i = 0; i < dur; i++) s->ev[(t + i) * SN + u] = (int)s->nev + 1;
      s->nev++;
    }
  }
  /* norms */
  {
    double *evf = xcalloc(EV_MAX, sizeof(double));
    double gf[GE_MAX * 1];
    char *gin = xcalloc((size_t)GE_MAX * SN, 1);
    double *gj = xcalloc((size_t)GE_MAX * SN, sizeof(double));
    for (i = 0; i < s->nev; i++)
      evf[i] = s->evs[i].fall ? loguni(0.02, 0.2) : loguni(1.8, 50.0);
    for (i = 0; i < s->ngev; i++) {
      double frac = 0.7 + 0.3 * uni();
      gf[i] = loguni(3.0, 20.0);
      for (u = 0; u < SN; u++) {
        gin[i * SN + u] = uni() < frac;
        gj[i * SN + u] = 0.8 * loguni(1.0, 1.5625);
      }
    }
    for (t = 0; t < ST; t++) {
      double hf = s->hard[t] ? 1.3 + 0.4 * uni() : 1.0;
      double common = -0.7 * (double)t / ST; /* norms halve over the run */
      int gi = -1;
      for (i = 0; i < s->ngev; i++)
        if (t >= s->gev[i].t0 && t < s->gev[i].t0 + s->gev[i].dur) gi = (int)i;
      for (u = 0; u < SN; u++) {
        double lg, g, ex;
        int k;
        ex = base[u] + common +
             0.3 * sin(6.283185307179586 * t / per[u] + ph[u]) + log(hf);
        if (gi >= 0 && gin[gi * SN + u]) ex += log(gf[gi] * gj[gi * SN + u]);
        s->pred[t * SN + u] = (float)(t > 0 ? ex + 0.7 * e[u] : ex);
        s->lvl[t * SN + u] = (float)(ex - log(hf));
        s->lhf[t] = log(hf);
        if (t > 0) e[u] = 0.7 * e[u] + sigma * gauss();
        lg = ex + e[u];
        g = exp(lg);
        k = s->ev[t * SN + u];
        if (k) {
          g *= evf[k - 1];
          if (uni() < 0.03) g = NAN;
        }
        s->norms[t * SN + u] = (float)g;
      }
    }
    free(evf);
    free(gin);
    free(gj);
  }
  free(busy);
}

static void synth_free(synth *s) {
  free(s->norms);
  free(s->pred);
  free(s->lvl);
  free(s->lhf);
  free(s->ev);
  free(s->gstep);
  free(s->hard);
}
