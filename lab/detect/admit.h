/* ========================================================================
   Admission (rule 8): the paper's budget, locks, renewal and cooldown,
   shared by every detector that is not the library itself.
   ======================================================================== */

typedef struct adm {
  unsigned n, maxo, lock, cool, recovering;
  int *lock_left, *cool_left;
  unsigned *cand;
  unsigned long long admissions, recovery_steps;
} adm;

static void adm_init(adm *a, unsigned n, unsigned maxo, unsigned lock,
                     unsigned cool) {
  a->n = n;
  a->maxo = maxo;
  a->lock = lock;
  a->cool = cool;
  a->recovering = 0;
  a->lock_left = calloc(n, sizeof(int));
  a->cool_left = calloc(n, sizeof(int));
  a->cand = calloc(n, sizeof(unsigned));
  a->admissions = a->recovery_steps = 0;
  if (!a->lock_left || !a->cool_left || !a->cand) abort();
}

static void adm_free(adm *a) {
  free(a->lock_left);
  free(a->cool_left);
  free(a->cand);
}

static const double *adm_sort_score;
static int adm_cmp(const void *x, const void *y) {
  unsigned i = *(const unsigned *)x, j = *(const unsigned *)y;
  double si = adm_sort_score[i], sj = adm_sort_score[j];
  if (si > sj) return -1;
  if (si < sj) return 1;
  return (i > j) - (i < j);
}

/* risky[u]: PF_* flags (nonzero = risky); gate: no admissions except
   non-finite units this step. */
static void adm_step(adm *a, const unsigned char *risky, const double *score,
                     int gate) {
  unsigned u, nc = 0, k;
  for (u = 0; u < a->n; u++) {
    if (a->lock_left[u] > 0) {
      if (--a->lock_left[u] == 0) {
        if (risky[u]) {
          a->lock_left[u] = (int)a->lock; /* renewed */
        } else {
          a->recovering--;
          a->cool_left[u] = (int)a->cool;
        }
      }
    } else {
      int cooling = a->cool_left[u] > 0, nf = (risky[u] & PF_NONFINITE) != 0;
      if (cooling) a->cool_left[u]--;
      if (risky[u] && (!cooling || nf) && (!gate || nf)) a->cand[nc++] = u;
    }
  }
  adm_sort_score = score;
  if (nc > 1) qsort(a->cand, nc, sizeof(unsigned), adm_cmp);
  for (k = 0; k < nc && a->recovering < a->maxo; k++) {
    a->lock_left[a->cand[k]] = (int)a->lock;
    a->cool_left[a->cand[k]] = 0;
    a->recovering++;
    a->admissions++;
  }
  a->recovery_steps += a->recovering;
}
