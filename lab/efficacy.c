/* efficacy.c - the closed-loop efficacy report (make efficacy).

   Reads every DIR/<setting>/<part>/summary.csv the training demos wrote
   (lab/train_lm.c: val_bpb, val_bpb_served; lab/train_stress.c:
   test_loss, test_loss_served) and writes, in DIR:
     summary.csv  one row per setting, arm and seed: setting, arm, seed,
                  val_loss, gap_recovered, hf_unit_steps, hf_flops,
                  loss_spikes, diverged, vs_f32_pct (hf_flops: the share
                  of the units' GEMM FLOPs on the high-fidelity path, where
                  the demo reports it, the LM demo; else empty), then
                  val_loss_served and gap_recovered_served (empty where
                  the demo's file has no served column)
     report.md    per setting: each arm's final validation loss, mean (sd)
                  and per seed, against f32, the share of the lowp gap it
                  recovers, its unit-steps on the high-fidelity path, loss
                  spikes; then every arm against every other, paired by seed
     efficacy.svg gap recovered (served, where the demo wrote it; else on
                  the f32 path) against high-fidelity unit-steps, one point
                  per arm and seed, a panel per setting
     frontier.svg the same gap recovered against hf_flops, a panel per setting
   that has hf_flops: each arm's mean over seeds, the arms of one placement rule
   (place-RULE-B, lab/arms.h) joined in order of FLOPs, every other arm a marker
   of its own and prints report.md. In a setting, "f32" and "lowp" are that
   setting's own runs (with --global-clip: f32+clip and lowp+clip), and the gap
   recovered by arm a on seed s is (lowp - a) / (lowp - f32), same seed.
   Two evaluations (the demos'): val_loss on the f32 path, every unit's
   forward in f32; val_loss_served, each unit's forward on the path its
   last training step ran (the format, or f32 where it ran high). The gap
   recovered that the report leads with is the served one (lowp served on
   its format, f32 on f32, the arm as served); the f32-path figure stands
   beside it. Intervals: a paired bootstrap over seeds (ef_boot: the
   seeds resampled with replacement, every arm's values of one seed kept
   together, EF_BOOT draws from a fixed RNG seed, so the report is the
   same on every run), the 2.5th and 97.5th percentiles of the mean.
   A setting whose lowp-against-f32 served gap has an interval containing
   0 has no measurable gap: its gaps recovered are shown but marked, and
   ef_measurable() leaves it out of any mean over settings.
   Arms that run every unit in f32 (f32, f32-*) have no gap and no place on
   the plot. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EF_MAX_SETTINGS 24
#define EF_MAX_ARMS 64
#define EF_MAX_SEEDS 16
#define EF_NAME 48

typedef struct ef_arm {
  char name[EF_NAME];
  int seed[EF_MAX_SEEDS], n;
  double loss[EF_MAX_SEEDS], hf[EF_MAX_SEEDS], flops[EF_MAX_SEEDS];
  double served[EF_MAX_SEEDS]; /* the served evaluation; NAN: none */
  int spikes[EF_MAX_SEEDS], diverged[EF_MAX_SEEDS];
} ef_arm;

typedef struct ef_setting {
  char name[EF_NAME];
  ef_arm arm[EF_MAX_ARMS];
  int n_arms;
} ef_setting;

static ef_setting ef_set[EF_MAX_SETTINGS];
static int ef_n_set;

static void ef_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "efficacy: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static FILE *ef_open(const char *path, const char *mode) {
  FILE *f = fopen(path, mode);
  if (!f) ef_die("cannot open %s", path);
  return f;
}

/* An SVG of W x H at path, its white page written; the caller closes it. */
static FILE *ef_svg_open(const char *path, double W, double H) {
  FILE *f = ef_open(path, "w");
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
          "height='%.0f' viewBox='0 0 %.0f %.0f' font-family='sans-serif' "
          "font-size='11'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H, W, H);
  return f;
}

static ef_setting *ef_setting_get(const char *name) {
  int i;
  for (i = 0; i < ef_n_set; i++)
    if (strcmp(ef_set[i].name, name) == 0) return &ef_set[i];
  if (ef_n_set == EF_MAX_SETTINGS) ef_die("more than %d settings", i);
  memset(&ef_set[ef_n_set], 0, sizeof ef_set[ef_n_set]);
  snprintf(ef_set[ef_n_set].name, EF_NAME, "%.47s", name);
  return &ef_set[ef_n_set++];
}

static ef_arm *ef_arm_get(ef_setting *s, const char *name) {
  int i;
  for (i = 0; i < s->n_arms; i++)
    if (strcmp(s->arm[i].name, name) == 0) return &s->arm[i];
  if (s->n_arms == EF_MAX_ARMS) ef_die("%s: more than %d arms", s->name, i);
  snprintf(s->arm[s->n_arms].name, EF_NAME, "%.47s", name);
  return &s->arm[s->n_arms++];
}

/* Splits a CSV line in place (no quoting in the demos' files). */
static int ef_split(char *line, char **field, int cap) {
  int n = 0;
  char *p = line;
  line[strcspn(line, "\r\n")] = 0;
  while (n < cap) {
    field[n++] = p;
    p = strchr(p, ',');
    if (!p) break;
    *p++ = 0;
  }
  return n;
}

static int ef_column(char **head, int n, const char *a, const char *b) {
  int i;
  for (i = 0; i < n; i++)
    if (strcmp(head[i], a) == 0 || (b && strcmp(head[i], b) == 0)) return i;
  return -1;
}

static void ef_read(const char *path, const char *setting) {
  FILE *f = ef_open(path, "r");
  char line[1024], hline[1024], *head[64], *v[64];
  int nh, c_arm, c_seed, c_loss, c_hf, c_fl, c_sp, c_div, c_sv;
  ef_setting *s;
  if (!fgets(hline, sizeof hline, f)) { /* a run that never started */
    fprintf(stderr, "efficacy: %s is empty: skipped\n", path);
    fclose(f);
    return;
  }
  s = ef_setting_get(setting);
  nh = ef_split(hline, head, 64);
  c_arm = ef_column(head, nh, "arm", NULL);
  c_seed = ef_column(head, nh, "seed", NULL);
  c_loss = ef_column(head, nh, "val_bpb", "test_loss");
  c_hf = ef_column(head, nh, "recovery_fraction", NULL);
  c_fl = ef_column(head, nh, "hf_flops", NULL); /* optional */
  c_sv = ef_column(head, nh, "val_bpb_served", "test_loss_served"); /* too */
  c_sp = ef_column(head, nh, "loss_spikes", NULL);
  c_div = ef_column(head, nh, "diverged", NULL);
  if (c_arm < 0 || c_seed < 0 || c_loss < 0 || c_hf < 0 || c_sp < 0 ||
      c_div < 0)
    ef_die("%s: not a demo's summary.csv", path);
  while (fgets(line, sizeof line, f)) {
    int n = ef_split(line, v, 64), k;
    ef_arm *a;
    if (n < nh) continue;
    a = ef_arm_get(s, v[c_arm]);
    if (a->n == EF_MAX_SEEDS) ef_die("%s: more than %d seeds", path, a->n);
    k = a->n++;
    a->seed[k] = atoi(v[c_seed]);
    a->loss[k] = atof(v[c_loss]);
    a->hf[k] = atof(v[c_hf]);
    a->flops[k] = c_fl >= 0 ? atof(v[c_fl]) : NAN;
    a->served[k] = c_sv >= 0 ? atof(v[c_sv]) : NAN;
    a->spikes[k] = atoi(v[c_sp]);
    a->diverged[k] = atoi(v[c_div]);
  }
  fclose(f);
}

static int ef_cmp_name(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

/* DIR/<setting>/<part>/summary.csv, settings and parts in name order. */
static void ef_scan(const char *root) {
  static char names[64][EF_NAME], parts[64][EF_NAME];
  DIR *d = opendir(root), *dp;
  struct dirent *e;
  int n = 0, i, j, np;
  char path[1024];
  if (!d) ef_die("no folder %s (run the efficacy runs first)", root);
  while ((e = readdir(d)) != NULL && n < 64)
    if (e->d_name[0] != '.' && strlen(e->d_name) < EF_NAME)
      snprintf(names[n++], EF_NAME, "%.47s", e->d_name);
  closedir(d);
  qsort(names, (size_t)n, EF_NAME, ef_cmp_name);
  for (i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%.900s/%.47s", root, names[i]);
    if (!(dp = opendir(path))) continue;
    np = 0;
    while ((e = readdir(dp)) != NULL && np < 64)
      if (e->d_name[0] != '.' && strlen(e->d_name) < EF_NAME)
        snprintf(parts[np++], EF_NAME, "%.47s", e->d_name);
    closedir(dp);
    qsort(parts, (size_t)np, EF_NAME, ef_cmp_name);
    for (j = 0; j < np; j++) {
      FILE *probe;
      snprintf(path, sizeof path, "%.900s/%.47s/%.47s/summary.csv", root,
               names[i], parts[j]);
      if ((probe = fopen(path, "r")) != NULL) {
        fclose(probe);
        ef_read(path, names[i]);
      }
    }
  }
  if (ef_n_set == 0) ef_die("no DIR/<setting>/<part>/summary.csv in %s", root);
}

static const ef_arm *ef_find(const ef_setting *s, const char *name) {
  int i;
  for (i = 0; i < s->n_arms; i++)
    if (strcmp(s->arm[i].name, name) == 0) return &s->arm[i];
  return NULL;
}

/* The two evaluations (the header): EF_F32 the f32 path, EF_SERVED the
   served one. */
enum { EF_F32, EF_SERVED };

/* arm a's loss on seed k of its own, in evaluation ev */
static double ef_loss(const ef_arm *a, int k, int ev) {
  return ev == EF_SERVED ? a->served[k] : a->loss[k];
}

/* arm a's value on seed `seed` in evaluation ev, or NAN */
static double ef_at_ev(const ef_arm *a, int seed, int ev) {
  int k;
  if (!a) return NAN;
  for (k = 0; k < a->n; k++)
    if (a->seed[k] == seed) return ef_loss(a, k, ev);
  return NAN;
}

/* arm a's value on seed `seed` on the f32 path, or NAN */
static double ef_at(const ef_arm *a, int seed) {
  return ef_at_ev(a, seed, EF_F32);
}

static int ef_all_f32(const ef_arm *a) {
  return strcmp(a->name, "f32") == 0 || strncmp(a->name, "f32-", 4) == 0;
}

/* The gap arm a recovers on its k-th seed in evaluation ev: (lowp - a) /
   (lowp - f32), the same seed, each in ev (served: lowp on its format, f32
   on f32); NAN for an all-f32 arm, a missing run or no gap. */
static double ef_gap_ev(const ef_setting *s, const ef_arm *a, int k, int ev) {
  double lo = ef_at_ev(ef_find(s, "lowp"), a->seed[k], ev),
         hi = ef_at_ev(ef_find(s, "f32"), a->seed[k], ev);
  if (ef_all_f32(a) || !(lo - hi != 0)) return NAN;
  return (lo - ef_loss(a, k, ev)) / (lo - hi);
}

/* ... on the f32 path */
static double ef_gap(const ef_setting *s, const ef_arm *a, int k) {
  return ef_gap_ev(s, a, k, EF_F32);
}

static double ef_mean(const double *x, int n) {
  double s = 0;
  int i, m = 0;
  for (i = 0; i < n; i++)
    if (!isnan(x[i])) s += x[i], m++;
  return m ? s / m : NAN;
}

static double ef_sd(const double *x, int n) {
  double m = ef_mean(x, n), s = 0;
  int i, c = 0;
  for (i = 0; i < n; i++)
    if (!isnan(x[i])) s += (x[i] - m) * (x[i] - m), c++;
  return c > 1 ? sqrt(s / (c - 1)) : 0.0;
}

/* The paired bootstrap (the header). x[i]: one value per seed (a NAN is
   left out: the seed has no pair); the seeds are resampled with
   replacement EF_BOOT times from a splitmix64 stream seeded EF_BOOT_SEED,
   and *lo, *hi get the 2.5th and 97.5th percentiles of the resampled
   means (by rank, the nearest: draws 50 and 1950 of 2000, 0-based). The
   values of one seed are resampled together (the caller pairs them: a
   difference, or a gap recovered, per seed). Fewer than 2 values: NAN. */
#define EF_BOOT 2000
#define EF_BOOT_SEED 0x9E3779B97F4A7C15ull

static unsigned long long ef_splitmix(unsigned long long *st) {
  unsigned long long z = (*st += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int ef_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The same bootstrap over several groups of seeds (the settings of a mean
   over settings): x[g * EF_MAX_SEEDS + i], i < n[g], group g's values (a
   NAN left out). Each draw resamples every group's seeds with
   replacement, each group on its own (its seeds never mix with
   another's), from the one splitmix64 stream seeded EF_BOOT_SEED (groups
   in order), and takes the mean over groups of each group's resampled
   mean; *lo, *hi get that statistic's 2.5th and 97.5th percentiles as
   ef_boot's. The groups themselves are not resampled: the interval is
   conditional on them. A group with fewer than 2 values, or no group:
   NAN. One group draws exactly as ef_boot. */
static void ef_boot_groups(const double *x, const int *n, int groups,
                           double *lo, double *hi) {
  static double means[EF_BOOT];
  double v[EF_MAX_SETTINGS][EF_MAX_SEEDS];
  int m[EF_MAX_SETTINGS], g, i, b;
  unsigned long long st = EF_BOOT_SEED;
  *lo = *hi = NAN;
  if (groups < 1 || groups > EF_MAX_SETTINGS) return;
  for (g = 0; g < groups; g++) {
    const double *xg = x + g * EF_MAX_SEEDS;
    for (m[g] = 0, i = 0; i < n[g] && m[g] < EF_MAX_SEEDS; i++)
      if (!isnan(xg[i])) v[g][m[g]++] = xg[i];
    if (m[g] < 2) return;
  }
  for (b = 0; b < EF_BOOT; b++) {
    double total = 0;
    for (g = 0; g < groups; g++) {
      double sum = 0;
      for (i = 0; i < m[g]; i++) sum += v[g][ef_splitmix(&st) % (unsigned)m[g]];
      total += sum / m[g];
    }
    means[b] = total / groups;
  }
  qsort(means, EF_BOOT, sizeof *means, ef_cmp_double);
  *lo = means[EF_BOOT / 40];
  *hi = means[EF_BOOT - 1 - EF_BOOT / 40];
}

static void ef_boot(const double *x, int n, double *lo, double *hi) {
  ef_boot_groups(x, &n, 1, lo, hi);
}

/* The setting's lowp-against-f32 gap in evaluation ev: its mean over the
   paired seeds (lowp - f32), and its interval; 1 when the interval
   excludes 0 (a measurable gap), 0 when it holds 0 or there is none. */
static int ef_measurable(const ef_setting *s, int ev, double *mean, double *lo,
                         double *hi) {
  const ef_arm *lowp = ef_find(s, "lowp"), *f32 = ef_find(s, "f32");
  double d[EF_MAX_SEEDS];
  int k;
  *mean = *lo = *hi = NAN;
  if (!lowp || !f32) return 0;
  for (k = 0; k < lowp->n; k++)
    d[k] = ef_loss(lowp, k, ev) - ef_at_ev(f32, lowp->seed[k], ev);
  *mean = ef_mean(d, lowp->n);
  ef_boot(d, lowp->n, lo, hi);
  return !isnan(*lo) && (*lo > 0 || *hi < 0);
}

/* A mean and its interval as "M [LO, HI]" (x100 and % with pct), or the
   mean alone where there is no interval. */
static void ef_print_ci(FILE *f, double m, double lo, double hi, int pct) {
  const double k = pct ? 100.0 : 1.0;
  const char *u = pct ? "%" : "";
  if (isnan(m)) return;
  if (isnan(lo))
    fprintf(f, pct ? "%.0f%s" : "%+.4f%s", k * m, u);
  else if (pct)
    fprintf(f, "%.0f%% [%.0f, %.0f]", k * m, k * lo, k * hi);
  else
    fprintf(f, "%+.4f [%+.4f, %+.4f]", m, lo, hi);
}

static void ef_csv(const char *root) {
  char path[1024];
  FILE *f;
  int i, j, k;
  snprintf(path, sizeof path, "%.900s/summary.csv", root);
  f = ef_open(path, "w");
  fprintf(f, "setting,arm,seed,val_loss,gap_recovered,hf_unit_steps,"
             "hf_flops,loss_spikes,diverged,vs_f32_pct,val_loss_served,"
             "gap_recovered_served\n");
  for (i = 0; i < ef_n_set; i++)
    for (j = 0; j < ef_set[i].n_arms; j++) {
      const ef_arm *a = &ef_set[i].arm[j];
      for (k = 0; k < a->n; k++) {
        double g = ef_gap(&ef_set[i], a, k),
               gs = ef_gap_ev(&ef_set[i], a, k, EF_SERVED),
               f32 = ef_at(ef_find(&ef_set[i], "f32"), a->seed[k]);
        fprintf(f, "%s,%s,%d,%.6f,", ef_set[i].name, a->name, a->seed[k],
                a->loss[k]);
        if (isnan(g))
          fprintf(f, ",");
        else
          fprintf(f, "%.4f,", g);
        fprintf(f, "%.5f,", a->hf[k]);
        if (isnan(a->flops[k]))
          fprintf(f, ",");
        else
          fprintf(f, "%.5f,", a->flops[k]);
        fprintf(f, "%d,%d,", a->spikes[k], a->diverged[k]);
        if (!isnan(f32)) fprintf(f, "%.3f", 100.0 * (a->loss[k] - f32) / f32);
        fprintf(f, ",");
        if (!isnan(a->served[k])) fprintf(f, "%.6f", a->served[k]);
        fprintf(f, ",");
        if (!isnan(gs)) fprintf(f, "%.4f", gs);
        fprintf(f, "\n");
      }
    }
  if (fclose(f) != 0) ef_die("writing %s failed", path);
}

/* 1 when every run of the setting has the served evaluation. */
static int ef_has_served(const ef_setting *s) {
  int j, k;
  for (j = 0; j < s->n_arms; j++)
    for (k = 0; k < s->arm[j].n; k++)
      if (isnan(s->arm[j].served[k])) return 0;
  return s->n_arms > 0;
}

/* The gap arm a recovers in evaluation ev: per seed into gap[], the mean
   and its bootstrap interval into m[0..2]. */
static void ef_gap_ci(const ef_setting *s, const ef_arm *a, int ev, double *gap,
                      double *m) {
  int k;
  for (k = 0; k < a->n; k++) gap[k] = ef_gap_ev(s, a, k, ev);
  m[0] = ef_mean(gap, a->n);
  ef_boot(gap, a->n, &m[1], &m[2]);
}

/* The gap the plots show: served where every run of the setting has it,
   else on the f32 path. */
static double ef_gap_lead(const ef_setting *s, const ef_arm *a, int k) {
  return ef_gap_ev(s, a, k, ef_has_served(s) ? EF_SERVED : EF_F32);
}

/* "mean [lo, hi] (per seed)" of a gap recovered, or nothing. */
static void ef_print_gap(FILE *f, const double *gap, int n, const double *m) {
  int k;
  if (isnan(m[0])) return;
  ef_print_ci(f, m[0], m[1], m[2], 1);
  fprintf(f, " (");
  for (k = 0; k < n; k++) fprintf(f, "%s%.0f", k ? " / " : "", 100.0 * gap[k]);
  fprintf(f, ")");
}

static void ef_report_setting(FILE *f, const ef_setting *s) {
  int j, k, c, ev, served = ef_has_served(s);
  const ef_arm *f32 = ef_find(s, "f32");
  fprintf(f, "\n### %s\n\n", s->name);
  for (ev = served ? EF_SERVED : EF_F32; ev >= EF_F32; ev--) {
    double m, lo, hi;
    int ok = ef_measurable(s, ev, &m, &lo, &hi);
    if (isnan(m)) continue;
    fprintf(f, "lowp - f32, %s: ", ev == EF_SERVED ? "served" : "f32 path");
    ef_print_ci(f, m, lo, hi, 0);
    fprintf(f, "%s\n",
            ok          ? ": a measurable gap.  "
            : isnan(lo) ? ": one seed, no interval.  "
                        : ": no measurable gap (the interval holds "
                          "0): left out of the means.  ");
  }
  fprintf(f, "\n| arm | served loss, mean (sd) | gap recovered, served "
             "[95%% CI] (per seed) | f32-path loss, mean (sd) | per seed | "
             "vs f32 | gap recovered, f32 path [95%% CI] (per seed) | hf "
             "unit-steps | hf FLOPs | loss spikes | diverged |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (j = 0; j < s->n_arms; j++) {
    const ef_arm *a = &s->arm[j];
    double gap[EF_MAX_SEEDS], vs[EF_MAX_SEEDS], m[3];
    int sp = 0, dv = 0;
    fprintf(f, "| `%s` | ", a->name);
    if (!isnan(ef_mean(a->served, a->n)))
      fprintf(f, "%.4f (%.4f)", ef_mean(a->served, a->n),
              ef_sd(a->served, a->n));
    fprintf(f, " | ");
    ef_gap_ci(s, a, EF_SERVED, gap, m);
    ef_print_gap(f, gap, a->n, m);
    fprintf(f, " | %.4f (%.4f) | ", ef_mean(a->loss, a->n),
            ef_sd(a->loss, a->n));
    for (k = 0; k < a->n; k++) {
      fprintf(f, "%s%.4f", k ? " / " : "", a->loss[k]);
      vs[k] = f32 ? 100.0 * (a->loss[k] - ef_at(f32, a->seed[k])) /
                        ef_at(f32, a->seed[k])
                  : NAN;
      sp += a->spikes[k];
      dv += a->diverged[k];
    }
    if (a == f32 || isnan(ef_mean(vs, a->n)))
      fprintf(f, " | | ");
    else
      fprintf(f, " | %+.2f%% (%.2f) | ", ef_mean(vs, a->n), ef_sd(vs, a->n));
    ef_gap_ci(s, a, EF_F32, gap, m);
    ef_print_gap(f, gap, a->n, m);
    fprintf(f, " | %.2f%% | ", 100.0 * ef_mean(a->hf, a->n));
    if (isnan(ef_mean(a->flops, a->n)))
      fprintf(f, "|");
    else
      fprintf(f, "%.2f%% |", 100.0 * ef_mean(a->flops, a->n));
    fprintf(f, " %d | %d |\n", sp, dv);
  }
  /* Paired: row against column, mean of the per-seed relative differences
     (negative: the row ends lower, better), its interval and the seeds the
     row wins; on the served evaluation where every run has it. */
  ev = served ? EF_SERVED : EF_F32;
  fprintf(f,
          "\nPaired by seed, row against column (%s): mean of (row - "
          "column) / column in %%, its 95%% interval, and the seeds where "
          "the row ends lower.\n\n|  |",
          ev == EF_SERVED ? "served" : "f32 path");
  for (c = 0; c < s->n_arms; c++) fprintf(f, " `%s` |", s->arm[c].name);
  fprintf(f, "\n|---|");
  for (c = 0; c < s->n_arms; c++) fprintf(f, "---|");
  fprintf(f, "\n");
  for (j = 0; j < s->n_arms; j++) {
    const ef_arm *a = &s->arm[j];
    fprintf(f, "| `%s` |", a->name);
    for (c = 0; c < s->n_arms; c++) {
      const ef_arm *b = &s->arm[c];
      double d[EF_MAX_SEEDS], lo, hi;
      int wins = 0, n = 0;
      if (b == a) {
        fprintf(f, " |");
        continue;
      }
      for (k = 0; k < a->n; k++) {
        double x = ef_loss(a, k, ev), y = ef_at_ev(b, a->seed[k], ev);
        if (isnan(y)) continue;
        d[n++] = 100.0 * (x - y) / y;
        wins += x < y;
      }
      ef_boot(d, n, &lo, &hi);
      if (n == 0)
        fprintf(f, " |");
      else if (isnan(lo))
        fprintf(f, " %+.2f (%d/%d) |", ef_mean(d, n), wins, n);
      else
        fprintf(f, " %+.2f [%+.2f, %+.2f] (%d/%d) |", ef_mean(d, n), lo, hi,
                wins, n);
    }
    fprintf(f, "\n");
  }
}

static void ef_report(const char *root) {
  char path[1024];
  FILE *f;
  int i;
  snprintf(path, sizeof path, "%.900s/report.md", root);
  f = ef_open(path, "w");
  fprintf(f, "## Closed-loop efficacy\n\nFinal validation loss (LM: bits "
             "per byte; MLP: test cross-entropy), lower is better, in two "
             "evaluations: served (each unit's forward on the path its "
             "last training step ran: the format, or f32 where it ran "
             "high) and the f32 path (every forward in f32). gap "
             "recovered = (lowp - arm) / (lowp - f32), per seed, in the "
             "same setting and evaluation (served: lowp on its format, f32 "
             "on f32); [95%% CI]: a paired bootstrap over seeds (2000 "
             "draws, a fixed RNG seed); a setting whose lowp - f32 "
             "interval holds 0 has no measurable gap; hf unit-steps: the share "
             "of unit-steps on the "
             "high-fidelity path; hf FLOPs: the share of the units' GEMM "
             "FLOPs there (frontier.svg: gap recovered against it, a curve "
             "per placement rule).\n");
  for (i = 0; i < ef_n_set; i++) ef_report_setting(f, &ef_set[i]);
  if (fclose(f) != 0) ef_die("writing %s failed", path);
}

static const char *EF_COLORS[] = {
    "#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#1f77b4", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
    "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
    "#756bb1", "#636363", "#000000"};
#define EF_N_COLORS (int)(sizeof EF_COLORS / sizeof *EF_COLORS)

/* One panel of a plot: its title and frame, the gap axis (ylo .. yhi %,
   a gridline every 50, 0 and 100 darker), the x axis (0 .. xmax %, four
   ticks) and its label, and the y label where ylabel is not NULL (the
   first panel). */
static void ef_panel(FILE *f, double x0, double y0, double pw, double ph,
                     double ylo, double yhi, double xmax, const char *title,
                     const char *xlabel, const char *ylabel) {
  int t;
  fprintf(f,
          "<text x='%.0f' y='%.0f' text-anchor='middle' "
          "font-size='13'>%s</text>\n<rect x='%.0f' y='%.0f' "
          "width='%.0f' height='%.0f' fill='none' stroke='#444'/>\n",
          x0 + pw / 2, y0 - 10, title, x0, y0, pw, ph);
  for (t = -100; t <= 150; t += 50) { /* y ticks */
    double y = y0 + ph * (yhi - t) / (yhi - ylo);
    fprintf(f,
            "<line x1='%.0f' x2='%.0f' y1='%.1f' y2='%.1f' "
            "stroke='%s'/>\n<text x='%.0f' y='%.1f' "
            "text-anchor='end'>%d%%</text>\n",
            x0, x0 + pw, y, y, t == 100 || t == 0 ? "#bbb" : "#eee", x0 - 4,
            y + 4, t);
  }
  for (t = 0; t <= 4; t++) { /* x ticks */
    double x = x0 + pw * t / 4;
    fprintf(f,
            "<line x1='%.1f' x2='%.1f' y1='%.0f' y2='%.0f' "
            "stroke='#888'/>\n<text x='%.1f' y='%.0f' "
            "text-anchor='middle'>%.1f%%</text>\n",
            x, x, y0 + ph, y0 + ph + 4, x, y0 + ph + 16, xmax * t / 4);
  }
  fprintf(f, "<text x='%.0f' y='%.0f' text-anchor='middle'>%s</text>\n",
          x0 + pw / 2, y0 + ph + 34, xlabel);
  if (ylabel)
    fprintf(f,
            "<text transform='translate(12,%.0f) rotate(-90)' "
            "text-anchor='middle'>%s</text>\n",
            y0 + ph / 2, ylabel);
}

/* One panel per setting; x: hf unit-steps (%), y: gap recovered (%), held
   to [-100, 150] (a point beyond sits on the edge, drawn hollow). Colours
   follow the arm's name across panels; the legend stands right of them. */
static void ef_svg(const char *root) {
  char path[1024], names[EF_MAX_ARMS * 2][EF_NAME];
  int n_names = 0, i, j, k, t;
  const double pw = 300, ph = 240, ml = 50, mt = 30, gapx = 70;
  double W, H, ylo = -100, yhi = 150, xmax = 1;
  FILE *f;
  for (i = 0; i < ef_n_set; i++)
    for (j = 0; j < ef_set[i].n_arms; j++) {
      const ef_arm *a = &ef_set[i].arm[j];
      if (ef_all_f32(a)) continue;
      for (k = 0; k < a->n; k++)
        if (100 * a->hf[k] > xmax) xmax = 100 * a->hf[k];
      for (t = 0; t < n_names; t++)
        if (strcmp(names[t], a->name) == 0) break;
      if (t == n_names && n_names < EF_MAX_ARMS * 2)
        snprintf(names[n_names++], EF_NAME, "%.47s", a->name);
    }
  xmax = ceil(xmax / 2) * 2;
  W = ml + ef_n_set * (pw + gapx) + 150;
  H = mt + ph + 50;
  if (H < mt + 16.0 * n_names + 20) H = mt + 16.0 * n_names + 20;
  snprintf(path, sizeof path, "%.900s/efficacy.svg", root);
  f = ef_svg_open(path, W, H);
  for (i = 0; i < ef_n_set; i++) {
    double x0 = ml + i * (pw + gapx), y0 = mt;
    ef_panel(f, x0, y0, pw, ph, ylo, yhi, xmax, ef_set[i].name,
             "unit-steps on the high-fidelity path",
             i == 0 ? "lowp gap recovered" : NULL);
    for (j = 0; j < ef_set[i].n_arms; j++) {
      const ef_arm *a = &ef_set[i].arm[j];
      if (ef_all_f32(a)) continue;
      for (t = 0; t < n_names; t++)
        if (strcmp(names[t], a->name) == 0) break;
      for (k = 0; k < a->n; k++) {
        double g = 100 * ef_gap_lead(&ef_set[i], a, k), gy = g;
        int out;
        if (isnan(g)) continue;
        out = g < ylo || g > yhi;
        gy = g < ylo ? ylo : g > yhi ? yhi : g;
        fprintf(f,
                "<circle cx='%.1f' cy='%.1f' r='3.5' fill='%s' "
                "stroke='%s'/>\n",
                x0 + pw * 100 * a->hf[k] / xmax,
                y0 + ph * (yhi - gy) / (yhi - ylo),
                out ? "none" : EF_COLORS[t % EF_N_COLORS],
                EF_COLORS[t % EF_N_COLORS]);
      }
    }
  }
  for (t = 0; t < n_names; t++) {
    double x = ml + ef_n_set * (pw + gapx), y = mt + 16.0 * t;
    fprintf(f,
            "<circle cx='%.0f' cy='%.0f' r='4' fill='%s'/>\n<text x='%.0f' "
            "y='%.0f'>%s</text>\n",
            x, y, EF_COLORS[t % EF_N_COLORS], x + 8, y + 4, names[t]);
  }
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0) ef_die("writing %s failed", path);
}

/* The placement rule an arm belongs to: place-RULE-B's "place-RULE";
   any other arm is a rule of its own. */
static void ef_rule(const char *arm, char *rule) {
  const char *dash = strrchr(arm, '-');
  size_t n = strlen(arm);
  if (strncmp(arm, "place-", 6) == 0 && dash && dash[1] &&
      strspn(dash + 1, "0123456789") == strlen(dash + 1))
    n = (size_t)(dash - arm);
  snprintf(rule, EF_NAME, "%.*s", (int)n, arm);
}

/* The frontier: one panel per setting with hf_flops, EF_ROW_PANELS to a
   row; x: hf FLOPs (%), y: gap recovered (%), each arm's mean over its
   seeds, held to [-100, 150] (hollow beyond). A rule's arms are joined in
   order of FLOPs; colours follow the rule across panels. */
#define EF_ROW_PANELS 4
static void ef_frontier_svg(const char *root) {
  char path[1024], rules[EF_MAX_ARMS * 2][EF_NAME], rule[EF_NAME];
  int n_rules = 0, n_panels = 0, i, j, k, t, p, cols, rows;
  const double pw = 340, ph = 260, ml = 50, mt = 30, gapx = 70, gapy = 80;
  double W, H, ylo = -100, yhi = 150, xmax = 5;
  FILE *f;
  for (i = 0; i < ef_n_set; i++) {
    int has = 0;
    for (j = 0; j < ef_set[i].n_arms; j++) {
      const ef_arm *a = &ef_set[i].arm[j];
      double x = 100 * ef_mean(a->flops, a->n);
      if (ef_all_f32(a) || isnan(x)) continue;
      has = 1;
      if (x > xmax) xmax = x;
      ef_rule(a->name, rule);
      for (t = 0; t < n_rules; t++)
        if (strcmp(rules[t], rule) == 0) break;
      if (t == n_rules && n_rules < EF_MAX_ARMS * 2)
        snprintf(rules[n_rules++], EF_NAME, "%s", rule);
    }
    n_panels += has;
  }
  xmax = ceil(xmax / 5) * 5;
  cols = n_panels < 1 ? 1 : n_panels < EF_ROW_PANELS ? n_panels : EF_ROW_PANELS;
  rows = n_panels < 1 ? 1 : (n_panels + EF_ROW_PANELS - 1) / EF_ROW_PANELS;
  W = ml + cols * (pw + gapx) + 150;
  H = mt + rows * (ph + gapy) - gapy + 50;
  if (H < mt + 16.0 * n_rules + 20) H = mt + 16.0 * n_rules + 20;
  snprintf(path, sizeof path, "%.900s/frontier.svg", root);
  f = ef_svg_open(path, W, H);
  for (i = 0, p = 0; i < ef_n_set; i++) {
    const ef_setting *s = &ef_set[i];
    double x0 = ml + (p % EF_ROW_PANELS) * (pw + gapx),
           y0 = mt + (p / EF_ROW_PANELS) * (ph + gapy);
    int has = 0;
    for (j = 0; j < s->n_arms; j++)
      has |= !ef_all_f32(&s->arm[j]) &&
             !isnan(ef_mean(s->arm[j].flops, s->arm[j].n));
    if (!has) continue;
    p++;
    ef_panel(f, x0, y0, pw, ph, ylo, yhi, xmax, s->name,
             "GEMM FLOPs on the high-fidelity path (mean over seeds)",
             p == 1 ? "lowp gap recovered (mean)" : NULL);
    for (t = 0; t < n_rules; t++) {
      double xs[EF_MAX_ARMS], ys[EF_MAX_ARMS];
      int n = 0;
      const char *col = EF_COLORS[t % EF_N_COLORS];
      for (j = 0; j < s->n_arms; j++) {
        const ef_arm *a = &s->arm[j];
        double gap[EF_MAX_SEEDS], x = 100 * ef_mean(a->flops, a->n), g;
        if (ef_all_f32(a) || isnan(x)) continue;
        ef_rule(a->name, rule);
        if (strcmp(rule, rules[t]) != 0) continue;
        for (k = 0; k < a->n; k++) gap[k] = ef_gap_lead(s, a, k);
        g = 100 * ef_mean(gap, a->n);
        if (isnan(g)) continue;
        for (k = n; k > 0 && xs[k - 1] > x; k--) /* in order of FLOPs */
          xs[k] = xs[k - 1], ys[k] = ys[k - 1];
        xs[k] = x;
        ys[k] = g;
        n++;
      }
      if (n > 1) {
        fprintf(f, "<polyline fill='none' stroke='%s' points='", col);
        for (k = 0; k < n; k++)
          fprintf(f, "%s%.1f,%.1f", k ? " " : "", x0 + pw * xs[k] / xmax,
                  y0 + ph *
                           (yhi - (ys[k] < ylo   ? ylo
                                   : ys[k] > yhi ? yhi
                                                 : ys[k])) /
                           (yhi - ylo));
        fprintf(f, "'/>\n");
      }
      for (k = 0; k < n; k++) {
        int out = ys[k] < ylo || ys[k] > yhi;
        double gy = ys[k] < ylo ? ylo : ys[k] > yhi ? yhi : ys[k];
        fprintf(f,
                "<circle cx='%.1f' cy='%.1f' r='4' fill='%s' stroke='%s'/>\n",
                x0 + pw * xs[k] / xmax, y0 + ph * (yhi - gy) / (yhi - ylo),
                out ? "none" : col, col);
      }
    }
  }
  for (t = 0; t < n_rules; t++) {
    double x = ml + cols * (pw + gapx), y = mt + 16.0 * t;
    fprintf(f,
            "<circle cx='%.0f' cy='%.0f' r='4' fill='%s'/>\n<text x='%.0f' "
            "y='%.0f'>%s</text>\n",
            x, y, EF_COLORS[t % EF_N_COLORS], x + 8, y + 4, rules[t]);
  }
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0) ef_die("writing %s failed", path);
}

int main(int argc, char **argv) {
  char path[1024], line[4096];
  FILE *f;
  if (argc != 2 || strlen(argv[1]) > 900) {
    fprintf(stderr, "usage: efficacy_report DIR (make efficacy writes it)\n");
    return 2;
  }
  ef_scan(argv[1]);
  ef_csv(argv[1]);
  ef_report(argv[1]);
  ef_svg(argv[1]);
  ef_frontier_svg(argv[1]);
  snprintf(path, sizeof path, "%.900s/report.md", argv[1]);
  f = ef_open(path, "r");
  while (fgets(line, sizeof line, f)) fputs(line, stdout);
  fclose(f);
  printf("\noutputs in %s/: summary.csv report.md efficacy.svg "
         "frontier.svg\n",
         argv[1]);
  return 0;
}
