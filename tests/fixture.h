/* fixture.h - a controller with its slots and step buffers, as test_ctl.c
   and test_rules.c drive it, and the checkpoint-resume run both modes are
   held to. Define MAXN (the most units a test uses) and include after
   gnmr.h (with its implementation) and check.h. */
#ifndef FIXTURE_H
#define FIXTURE_H

typedef struct fixture {
  gnmr_config cfg;
  gnmr_slot units[MAXN];
  gnmr_ctl ctl;
  gnmr_decision d[MAXN];
  float norms[MAXN];
  uint32_t n;
} fixture;

static int setup(fixture *f, const gnmr_config *c, uint32_t n) {
  memset(f, 0, sizeof *f);
  f->cfg = *c;
  f->n = n;
  return gnmr_init(&f->ctl, &f->cfg, f->units, n);
}

static int step_all(fixture *f, float v) {
  uint32_t u;
  for (u = 0; u < f->n; u++) f->norms[u] = v;
  return gnmr_step(&f->ctl, f->norms, f->d);
}

/* ---- resuming from a checkpoint -------------------------------------------
   A controller under c runs steps 0 .. at-1 of `in` (a row of n norms per
   step) and saves a checkpoint into buf (its size, asked first with a NULL
   buffer, must be what the save writes); `to`, initialised under `other`,
   loads it. The caller checks what it wants of the loaded state, then
   resume_runs_on() takes `to` on from step `at`. */
static int resume_load(fixture *to, const gnmr_config *c,
                       const gnmr_config *other, const float *in, uint32_t n,
                       uint32_t at, unsigned char *buf, size_t cap,
                       size_t *len) {
  static fixture from;
  size_t size = 0;
  uint32_t t;
  int rc = setup(&from, c, n);
  for (t = 0; t < at && rc == GNMR_OK; t++)
    rc = gnmr_step(&from.ctl, in + (size_t)t * n, from.d);
  if (rc == GNMR_OK) rc = gnmr_checkpoint_save(&from.ctl, NULL, 0, &size);
  if (rc == GNMR_OK) rc = gnmr_checkpoint_save(&from.ctl, buf, cap, len);
  if (rc == GNMR_OK && *len != size) rc = -1;
  if (rc == GNMR_OK) rc = setup(to, other, n);
  if (rc == GNMR_OK) rc = gnmr_checkpoint_load(&to->ctl, buf, *len);
  return rc;
}

/* 1 when `f` takes steps at .. steps-1 of `in` to the decisions of the
   uninterrupted run (want: a row of n per step); else says where not. */
static int resume_runs_on(fixture *f, const float *in,
                          const gnmr_decision *want, uint32_t n, uint32_t at,
                          uint32_t steps) {
  uint32_t t;
  for (t = at; t < steps; t++) {
    if (gnmr_step(&f->ctl, in + (size_t)t * n, f->d) != GNMR_OK ||
        memcmp(f->d, want + (size_t)t * n, sizeof *want * n) != 0) {
      printf("  resume at %u differs at step %u\n", at, t);
      return 0;
    }
  }
  return 1;
}

#endif /* FIXTURE_H */
