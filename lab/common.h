/* common.h - what the training demos (train_stress.c, train_lm.c) share:
   checked helpers that say file and line (llm.c style), the random numbers,
   option parsing, a few statistics and the two pictures (SVG, drawn here,
   no plotting library).

   Everything is static. Define DEMO_PROGRAM (the name error messages start
   with) before the include, and include after gnmr.h and arms.h. */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/splitmix.h"

#ifndef DEMO_PROGRAM
#error "define DEMO_PROGRAM (the program's name) before including common.h"
#endif

/* ---- checked helpers ----------------------------------------------------- */

static void demo_die(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, DEMO_PROGRAM ": %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}
#define DEMO_DIE(...) demo_die(__FILE__, __LINE__, __VA_ARGS__)

static void *demo_calloc(size_t n, size_t size, const char *file, int line) {
  void *p = calloc(n ? n : 1, size);
  if (!p) demo_die(file, line, "out of memory (%zu x %zu bytes)", n, size);
  return p;
}
#define DEMO_CALLOC(n, type)                                                   \
  ((type *)demo_calloc((n), sizeof(type), __FILE__, __LINE__))

static FILE *demo_fopen(const char *path, const char *mode, const char *file,
                        int line) {
  FILE *f = fopen(path, mode);
  if (!f) demo_die(file, line, "cannot open %s: %s", path, strerror(errno));
  return f;
}
#define DEMO_FOPEN(path, mode) demo_fopen((path), (mode), __FILE__, __LINE__)

/* The output directory, created when it is not writable yet. C99 has no
   mkdir(); POSIX mkdir -p through the shell keeps this short. */
static void demo_mkdir(const char *dir) {
  char cmd[1100], path[1100];
  FILE *probe;
  snprintf(path, sizeof path, "%s/.probe", dir);
  if ((probe = fopen(path, "w")) != NULL) {
    fclose(probe);
    remove(path);
    return;
  }
  if (strchr(dir, '\'')) DEMO_DIE("--out: no quotes in the directory name");
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  if (system(cmd) != 0) DEMO_DIE("cannot create directory %s", dir);
}

/* ---- random numbers (splitmix64: small, portable, deterministic) -------- */

typedef struct demo_rng {
  uint64_t s;
} demo_rng;

static double demo_uniform(demo_rng *r) { return splitmix_uniform(&r->s); }
static uint32_t demo_below(demo_rng *r, uint32_t n) {
  return (uint32_t)(demo_uniform(r) * n);
}
static double demo_normal(demo_rng *r) {
  double u1 = demo_uniform(r), u2 = demo_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- arithmetic ---------------------------------------------------------- */

/* y += a * x, the inner loop of every GEMM in the demos. Eight statements a
   step: at -O2 gcc vectorizes straight-line code but not a loop of unknown
   length, and this runs at about 4x the speed of the plain loop. Written
   once for every element type a demo builds with: DEMO_AXPY(name, real)
   defines static void name(real *y, real a, const real *x, int n). */
#define DEMO_AXPY(name, real)                                                  \
  static void name(real *restrict y, real a, const real *restrict x, int n) {  \
    int i = 0;                                                                 \
    for (; i + 8 <= n; i += 8) {                                               \
      y[i] += a * x[i];                                                        \
      y[i + 1] += a * x[i + 1];                                                \
      y[i + 2] += a * x[i + 2];                                                \
      y[i + 3] += a * x[i + 3];                                                \
      y[i + 4] += a * x[i + 4];                                                \
      y[i + 5] += a * x[i + 5];                                                \
      y[i + 6] += a * x[i + 6];                                                \
      y[i + 7] += a * x[i + 7];                                                \
    }                                                                          \
    for (; i < n; i++) y[i] += a * x[i];                                       \
  }

/* ---- command line -------------------------------------------------------- */

static int demo_parse_int(const char *s, int lo, int hi, const char *flag) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < lo || v > hi)
    DEMO_DIE("%s: expected an integer in %d..%d, got '%s'", flag, lo, hi, s);
  return (int)v;
}

/* A finite number; with `positive`, one above zero. */
static double demo_parse_double(const char *s, const char *flag, int positive) {
  char *end;
  double v = strtod(s, &end);
  if (*end || end == s || !isfinite(v) || (positive && !(v > 0)))
    DEMO_DIE("%s: expected a %snumber, got '%s'", flag,
             positive ? "positive " : "", s);
  return v;
}

/* --arms LIST: indices into ARMS (lab/arms.h), at most `cap`; "list"
   prints every arm's name and exits. */
static int demo_parse_arms(const char *list, int *arms, int cap) {
  char buf[2048], *tok;
  int a, n = 0;
  if (strcmp(list, "list") == 0) {
    for (a = 0; a < ARM_COUNT; a++) printf("%s\n", ARMS[a].name);
    exit(0);
  }
  snprintf(buf, sizeof buf, "%s", list);
  for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    a = arm_find(tok);
    if (a < 0)
      DEMO_DIE("--arms: unknown arm '%s' (--arms list names them)", tok);
    if (n == cap) DEMO_DIE("--arms: too many arms");
    arms[n++] = a;
  }
  if (n == 0) DEMO_DIE("--arms: empty list");
  return n;
}

/* A run of at most ARM_SPAM_RESET steps has no momentum reset in the spam
   arm (lab/arms.h): says so on stdout when `arms` has the arm. */
static void demo_note_spam(const int *arms, int n, int steps) {
  int a;
  for (a = 0; a < n; a++)
    if (ARMS[arms[a]].kind == ARM_SPAM && steps <= ARM_SPAM_RESET) {
      printf("note: arm %s: %d steps, no momentum reset (every %d steps)\n",
             ARMS[arms[a]].name, steps, ARM_SPAM_RESET);
      return;
    }
}

/* Appends to the string in buf (how --help's defaults are built). */
static void demo_cat(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  if (len < cap) vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* Appends the names of `arms` to buf, comma-separated. */
static void demo_show_arms(char *buf, size_t cap, const int *arms, int n) {
  int a;
  for (a = 0; a < n; a++)
    demo_cat(buf, cap, "%s%s", a ? "," : "", ARMS[arms[a]].name);
}

/* Training events that are not faults (--freeze, --shift): a layer or unit
   index and the point of the run, in percent of its steps, where the event
   happens; index -1: no event. */
typedef struct demo_at {
  int index, pct;
} demo_at;

/* "I:P" with I in 0..max_index and P in 0..100. */
static demo_at demo_parse_at(const char *v, const char *flag, int max_index) {
  demo_at at;
  char tail;
  if (sscanf(v, "%d:%d%c", &at.index, &at.pct, &tail) != 2 || at.index < 0 ||
      at.index > max_index || at.pct < 0 || at.pct > 100)
    DEMO_DIE("%s: expected INDEX:PERCENT with INDEX in 0..%d and PERCENT in "
             "0..100, got '%s'",
             flag, max_index, v);
  return at;
}

/* A demo's options are one table: a row names an option, the kind of its
   value, where the value goes and the line --help prints for it. The
   kinds, and what a row's dst points to:
     DEMO_FLAG  int, set to 1; the option takes no value
     DEMO_STR   const char *, the value itself
     DEMO_INT   int, an integer in lo..hi
     DEMO_U32   uint32_t, an integer in lo..hi
     DEMO_REAL  double, finite; lo 1: above zero
     DEMO_AT    demo_at, "I:P" with I in 0..hi
     DEMO_CHOICE int, the index of the value among arg's words ("a|b")
     DEMO_CALL  anything: parse(dst, value, name) reads it, show(buf, cap,
                dst) writes its default into buf (NULL: none shown)
   --help prints the usage, every row's default read from where its value
   goes (after the caller's defaults are set; a negative number or NULL
   string is "not given" and is not printed); a parsed row's `given` is 1. */
typedef enum demo_opt_kind {
  DEMO_FLAG,
  DEMO_STR,
  DEMO_INT,
  DEMO_U32,
  DEMO_REAL,
  DEMO_AT,
  DEMO_CHOICE,
  DEMO_CALL
} demo_opt_kind;

typedef struct demo_opt {
  const char *name, *arg; /* "--seed", "S" */
  demo_opt_kind kind;
  void *dst;
  int lo, hi;
  void (*parse)(void *dst, const char *value, const char *name);
  void (*show)(char *buf, size_t cap, const void *dst);
  const char *help; /* lines after the first start with '\n' */
  int given;
} demo_opt;

#define DEMO_OPT(name, arg, kind, dst, lo, hi, help)                           \
  { name, arg, kind, dst, lo, hi, NULL, NULL, help, 0 }
#define DEMO_OPT_CALL(name, arg, parse, show, dst, help)                       \
  { name, arg, DEMO_CALL, dst, 0, 0, parse, show, help, 0 }

/* The index of the word v among "a|b|c", or -1. */
static int demo_choice_find(const char *choices, const char *v) {
  size_t len = strlen(v), w;
  int k;
  for (k = 0;; k++) {
    w = strcspn(choices, "|");
    if (w == len && strncmp(choices, v, len) == 0) return k;
    if (!choices[w]) return -1;
    choices += w + 1;
  }
}

/* The default of a row, from where its value goes, into buf ("" if none). */
static void demo_opt_default(char *buf, size_t cap, const demo_opt *o) {
  buf[0] = 0;
  switch (o->kind) {
  case DEMO_STR:
    if (*(const char *const *)o->dst)
      snprintf(buf, cap, "%s", *(const char *const *)o->dst);
    break;
  case DEMO_INT:
    if (*(const int *)o->dst >= 0)
      snprintf(buf, cap, "%d", *(const int *)o->dst);
    break;
  case DEMO_U32:
    snprintf(buf, cap, "%u", (unsigned)*(const uint32_t *)o->dst);
    break;
  case DEMO_REAL:
    if (*(const double *)o->dst >= 0)
      snprintf(buf, cap, "%g", *(const double *)o->dst);
    break;
  case DEMO_CHOICE: {
    const char *w = o->arg;
    int k;
    for (k = *(const int *)o->dst; k > 0 && strchr(w, '|'); k--)
      w = strchr(w, '|') + 1;
    snprintf(buf, cap, "%.*s", (int)strcspn(w, "|"), w);
    break;
  }
  case DEMO_CALL:
    if (o->show) o->show(buf, cap, o->dst);
    break;
  case DEMO_FLAG:
  case DEMO_AT: break;
  }
}

/* Every row: the option at column 2, its help at column 17, then its
   default, on a line of its own where it would pass column 79. */
static void demo_usage(FILE *f, const demo_opt *opts, int n) {
  int r;
  fprintf(f, "usage: " DEMO_PROGRAM " [options]\n");
  for (r = 0; r < n; r++) {
    const demo_opt *o = &opts[r];
    const char *h = o->help, *nl;
    char def[256];
    int w = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "",
                    o->arg ? o->arg : "");
    if (w > 16) fprintf(f, "\n"), w = 0;
    for (;;) {
      int len = (nl = strchr(h, '\n')) ? (int)(nl - h) : (int)strlen(h);
      w += fprintf(f, "%*s%.*s", 17 - w, "", len, h);
      if (!nl) break;
      fprintf(f, "\n");
      h = nl + 1, w = 0;
    }
    demo_opt_default(def, sizeof def, o);
    if (def[0]) {
      if (w + 11 + (int)strlen(def) > 79) fprintf(f, "\n%16s", ""), w = 16;
      fprintf(f, " (default %s)", def);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "  --help         this text\n");
}

/* Reads argv[1..] against the table; --help (or -h) prints the usage and
   exits; an unknown option, a missing or bad value dies naming it. */
static void demo_parse_options(int argc, char **argv, demo_opt *opts, int n) {
  int i, r;
  for (i = 1; i < argc; i++) {
    const char *f = argv[i], *v;
    demo_opt *o = NULL;
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      demo_usage(stdout, opts, n);
      exit(0);
    }
    for (r = 0; r < n && !o; r++)
      if (strcmp(f, opts[r].name) == 0) o = &opts[r];
    if (!o) {
      demo_usage(stderr, opts, n);
      DEMO_DIE("unknown option '%s'", f);
    }
    o->given = 1;
    if (o->kind == DEMO_FLAG) {
      *(int *)o->dst = 1;
      continue;
    }
    if (i + 1 >= argc) DEMO_DIE("%s: expected a value (%s)", f, o->arg);
    v = argv[++i];
    switch (o->kind) {
    case DEMO_STR: *(const char **)o->dst = v; break;
    case DEMO_INT: *(int *)o->dst = demo_parse_int(v, o->lo, o->hi, f); break;
    case DEMO_U32:
      *(uint32_t *)o->dst = (uint32_t)demo_parse_int(v, o->lo, o->hi, f);
      break;
    case DEMO_REAL: *(double *)o->dst = demo_parse_double(v, f, o->lo); break;
    case DEMO_AT: *(demo_at *)o->dst = demo_parse_at(v, f, o->hi); break;
    case DEMO_CHOICE:
      if ((*(int *)o->dst = demo_choice_find(o->arg, v)) < 0)
        DEMO_DIE("%s: expected one of %s, got '%s'", f, o->arg, v);
      break;
    case DEMO_CALL: o->parse(o->dst, v, f); break;
    case DEMO_FLAG: break;
    }
  }
}

/* Whether the option `name` of the table was given. */
static __attribute__((unused)) int demo_given(const demo_opt *opts, int n,
                                              const char *name) {
  int r;
  for (r = 0; r < n; r++)
    if (strcmp(opts[r].name, name) == 0) return opts[r].given;
  DEMO_DIE("no option '%s' in the table", name);
  return 0;
}

/* --shift: the gain of the reparametrisation. At the step, the unit's
   weight and bias are divided by it and its output multiplied by it
   (y = g (x W/g + b/g)), so the model computes the same function; its
   gradient grows by g. Adam's moments are multiplied by g and g^2, the
   weight's amax history divided by g, and the unit's learning rate divided
   by g with its decay multiplied by g, so every later update of W = g W'
   is the one it would have been: training goes on unchanged (to rounding),
   and only the unit's gradient norm moves, up by g, for good. */
#define DEMO_SHIFT_GAIN 10.0

/* --freeze and --shift in --help, after "layer L" or "unit U" */
#define DEMO_FREEZE_HELP                                                       \
  "frozen for the first P% of steps: no gradient\n"                            \
  "(norms exactly 0), no update; then it trains"
#define DEMO_SHIFT_HELP                                                        \
  "reparametrised at P% of the steps: W/10, b/10,\n"                           \
  "output x 10 (the same function and updates, its\n"                          \
  "gradient x 10)"

/* ---- statistics over seeds ----------------------------------------------- */

static double demo_mean(const double *x, int n) {
  double s = 0.0;
  int i;
  for (i = 0; i < n; i++) s += x[i];
  return n ? s / n : 0.0;
}

static double demo_sd(const double *x, int n) {
  double m = demo_mean(x, n), s = 0.0;
  int i;
  for (i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
  return n > 1 ? sqrt(s / (n - 1)) : 0.0;
}

/* ---- the table's legend -------------------------------------------------- */

/* The lines under a demo's table: what its columns mean (columns, the
   demo's own lines), that gnmr is gnmr.h's defaults and what the other
   GNMR arms that ran are (their names, comma-separated, in others; "" for
   none), and where the plots and the data are. */
static void demo_legend(const char *const *columns, int n_columns,
                        const char *others, const char *out_dir,
                        const char *data) {
  int i;
  for (i = 0; i < n_columns; i++) printf("  %s\n", columns[i]);
  printf("  gnmr: gnmr.h's defaults (gnmr_config_default(), the paper rules)");
  if (others[0])
    printf(";\n  %s: non-default settings, kept for comparison "
           "(bench/RESULTS.md, Ablations: where each loses to gnmr)",
           others);
  printf("\nplots: %s/loss.svg (training loss per arm), %s/recovery.svg "
         "(where gnmr ran each unit on f32, and the faults)\n"
         "data:  %s in %s/\n",
         out_dir, out_dir, data, out_dir);
}

/* The GNMR arms of arms[0..n) other than "gnmr", comma-separated. */
static const char *demo_other_gnmr_arms(const int *arms, int n, char *buf,
                                        size_t cap) {
  size_t len = 0;
  int a;
  buf[0] = '\0';
  for (a = 0; a < n; a++) {
    const demo_arm *arm = &ARMS[arms[a]];
    if (arm->kind != ARM_GNMR || strcmp(arm->name, "gnmr") == 0) continue;
    if (len + strlen(arm->name) + 3 > cap) break;
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "",
                            arm->name);
  }
  return buf;
}

/* ---- pictures ------------------------------------------------------------ */

/* A colour per arm (its index in ARMS), the same in every picture. */
static const char *DEMO_COLORS[] = {"#000000", "#d62728", "#ff7f0e",
                                    "#9467bd", "#2ca02c", "#17becf",
                                    "#8c564b", "#e377c2", "#7f7f7f"};
#define DEMO_COLOR(a)                                                          \
  DEMO_COLORS[(a) % (int)(sizeof DEMO_COLORS / sizeof *DEMO_COLORS)]
/* A line style per curve of one plot (its place in the plot, not its arm):
   arms that train alike draw one over the other, so each curve has its own
   dash pattern and the earlier ones are wider, and a curve under another
   still shows at its edges. */
static const char *DEMO_DASHES[] = {"none",         "10 3", "4 3",
                                    "12 3 3 3",     "7 2",  "1 2",
                                    "12 3 1 3 1 3", "2 5",  "16 5"};
#define DEMO_N_DASHES (int)(sizeof DEMO_DASHES / sizeof *DEMO_DASHES)
#define DEMO_DASH(c) DEMO_DASHES[(c) % DEMO_N_DASHES]
#define DEMO_WIDTH(c, n) (1.0 + 2.0 * ((n)-1 - (c)) / ((n) > 1 ? (n)-1 : 1))

/* Axis ticks: a spacing of 1, 2 or 5 x 10^k giving about n ticks over span,
   and the decimals its labels need. */
static double demo_tick_step(double span, int n) {
  double raw = span / n, p, m;
  if (!(raw > 0.0)) return 1.0;
  p = pow(10.0, floor(log10(raw)));
  m = raw / p;
  return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}
static int demo_tick_decimals(double step) {
  int d = (int)-floor(log10(step) + 1e-9);
  return d > 0 ? d : 0;
}

/* The x axis of steps 0..last under a plot at (x0, y), pw wide: ticks,
   labels and its title. */
static void demo_svg_steps(FILE *f, double x0, double y, double pw,
                           double last) {
  double step = demo_tick_step(last, 8);
  int i, d;
  if (step < 1.0) step = 1.0;
  d = demo_tick_decimals(step);
  for (i = 0; i * step <= last + 1e-9; i++) {
    double x = x0 + pw * (i * step) / last;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" "
            "stroke=\"#888\"/>\n<text x=\"%.1f\" y=\"%g\" "
            "text-anchor=\"middle\">%.*f</text>\n",
            x, y, x, y + 5, x, y + 18, d, i * step);
  }
  fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step</text>\n",
          x0 + pw / 2, y + 34);
}

static int demo_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The y range of a loss plot: every finite value from step `skip` on
   that lies within Tukey's far-out fences (the lower quartile less 3
   interquartile ranges, the upper quartile plus 3), plus 5% either side.
   A fault spikes every low-precision arm at once and the EMA holds it for
   tens of steps, so one spike can be several percent of the values; the
   quartiles barely move with it, and every curve keeps its detail. What
   lies beyond the range runs on its edge (demo_svg_loss). */
static void demo_loss_range(float *const *curves, int n_curves, int steps,
                            int skip, double *lo, double *hi) {
  double *v = DEMO_CALLOC((size_t)n_curves * (size_t)steps, double), pad;
  size_t n = 0;
  int a, s;
  for (a = 0; a < n_curves; a++)
    for (s = skip; s < steps; s++)
      if (isfinite(curves[a][s])) v[n++] = curves[a][s];
  *lo = 0.0, *hi = 1.0;
  if (n > 0) {
    double q1, q3;
    size_t first = 0, last = n - 1;
    qsort(v, n, sizeof *v, demo_cmp_double);
    q1 = v[(size_t)(0.25 * (double)(n - 1) + 0.5)];
    q3 = v[(size_t)(0.75 * (double)(n - 1) + 0.5)];
    while (v[first] < q1 - 3.0 * (q3 - q1)) first++;
    while (v[last] > q3 + 3.0 * (q3 - q1)) last--;
    *lo = v[first];
    *hi = v[last];
  }
  free(v);
  if (!(*lo < *hi)) *lo -= 0.5, *hi += 0.5;
  pad = 0.05 * (*hi - *lo);
  *lo -= pad;
  *hi += pad;
}

/* Geometry of the loss plot: the plot area (x0, y0, pw, ph) with the legend
   to its right, outside the data, one line per curve. */
#define DEMO_PLOT_X0 70.0
#define DEMO_PLOT_Y0 30.0
#define DEMO_PLOT_W 700.0
#define DEMO_PLOT_H 360.0
#define DEMO_LEGEND_W 170.0
#define DEMO_LEGEND_ROW 16.0

/* Training loss per step: n_curves curves of `steps` values, curve a of the
   arm ARMS[arm[a]] (its colour and its name in the legend). The y range
   survives spikes (demo_loss_range, steps from `skip` on); a value beyond
   it, or a non-finite one, is drawn on the edge it passed, and where a
   curve runs onto an edge a triangle in its colour marks the clipped
   stretch. Axes with ticks and labels; the legend stands right of the
   plot, outside the data. */
/* Where value v of a curve is drawn: its y on the plot, held to the edge
   it passed (a non-finite one to the top). */
static double demo_loss_y(double v, double lo, double hi) {
  const double y0 = DEMO_PLOT_Y0, ph = DEMO_PLOT_H;
  if (!isfinite(v) || v > hi) return y0;
  if (v < lo) return y0 + ph;
  return y0 + ph * (1.0 - (v - lo) / (hi - lo));
}

/* Curve a's legend entry: its arm's name, and, where it is drawn within
   2 px of another curve on at least two thirds of the steps, "on" that
   curve's arm: the two are one line on the plot, and the legend says so
   (make demo's gnmr-noise ran on lowp, hidden under it). */
static void demo_loss_legend(char *buf, size_t cap, float *const *curves,
                             const int *arm, int n_curves, int a, int steps,
                             double lo, double hi) {
  int b, s, best = -1, best_near = 0;
  for (b = 0; b < n_curves; b++) {
    int near = 0;
    if (b == a) continue;
    for (s = 0; s < steps; s++)
      near += fabs(demo_loss_y(curves[a][s], lo, hi) -
                   demo_loss_y(curves[b][s], lo, hi)) < 2.0;
    if (near > best_near) best = b, best_near = near;
  }
  if (best >= 0 && 3 * best_near >= 2 * steps)
    snprintf(buf, cap, "%s, on %s", ARMS[arm[a]].name, ARMS[arm[best]].name);
  else
    snprintf(buf, cap, "%s", ARMS[arm[a]].name);
}

static void demo_svg_loss(const char *path, const char *title,
                          const char *ylabel, float *const *curves,
                          const int *arm, int n_curves, int steps, int skip) {
  const double x0 = DEMO_PLOT_X0, y0 = DEMO_PLOT_Y0, pw = DEMO_PLOT_W,
               ph = DEMO_PLOT_H;
  const double last = steps > 1 ? steps - 1 : 1;
  double W = x0 + pw + 20 + DEMO_LEGEND_W;
  double H = y0 + ph + 50, lo, hi, step;
  char(*legend)[64] = (char(*)[64])malloc(sizeof *legend * (size_t)n_curves);
  FILE *f;
  int a, s, i, d;
  if (!legend) DEMO_DIE("out of memory");
  if (H < y0 + DEMO_LEGEND_ROW * n_curves + 10)
    H = y0 + DEMO_LEGEND_ROW * n_curves + 10;
  demo_loss_range(curves, n_curves, steps, skip, &lo, &hi);
  for (a = 0; a < n_curves; a++) { /* the legend's column fits its text */
    demo_loss_legend(legend[a], sizeof legend[a], curves, arm, n_curves, a,
                     steps, lo, hi);
    if (W < x0 + pw + 20 + 36 + 7.0 * (double)strlen(legend[a]) + 10)
      W = x0 + pw + 20 + 36 + 7.0 * (double)strlen(legend[a]) + 10;
  }
  f = DEMO_FOPEN(path, "w");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" "
          "height=\"%g\" viewBox=\"0 0 %g %g\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n"
          "<defs><clipPath id=\"plot\"><rect x=\"%g\" y=\"%g\" width=\"%g\" "
          "height=\"%g\"/></clipPath></defs>\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%g\" y=\"%g\">%s</text>\n",
          W, H, W, H, x0, y0, pw, ph, x0, y0 - 10, title);
  /* y axis: ticks, labels, light grid lines */
  step = demo_tick_step(hi - lo, 6);
  d = demo_tick_decimals(step);
  for (i = (int)ceil(lo / step); i * step <= hi + 1e-9 * step; i++) {
    double y = y0 + ph * (1.0 - (i * step - lo) / (hi - lo));
    fprintf(f,
            "<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\" "
            "stroke=\"#eee\"/>\n<line x1=\"%g\" y1=\"%.1f\" x2=\"%g\" "
            "y2=\"%.1f\" stroke=\"#888\"/>\n<text x=\"%g\" y=\"%.1f\" "
            "text-anchor=\"end\">%.*f</text>\n",
            x0, y, x0 + pw, y, x0 - 5, y, x0, y, x0 - 8, y + 4, d, i * step);
  }
  demo_svg_steps(f, x0, y0 + ph, pw, last);
  fprintf(f,
          "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
          "stroke=\"#888\"/>\n<text x=\"0\" y=\"0\" text-anchor=\"middle\" "
          "transform=\"translate(16 %g) rotate(-90)\">%s</text>\n"
          "<g clip-path=\"url(#plot)\">\n",
          x0, y0, pw, ph, y0 + ph / 2, ylabel);
  for (a = 0; a < n_curves; a++) {
    const char *color = DEMO_COLOR(arm[a]);
    int edge; /* the edge the previous point was held to: -1, 0, 1 */
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.2f\" "
            "stroke-dasharray=\"%s\" points=\"",
            color, DEMO_WIDTH(a, n_curves), DEMO_DASH(a));
    for (s = 0; s < steps; s++)
      fprintf(f, "%.1f,%.1f ", x0 + pw * s / last,
              demo_loss_y(curves[a][s], lo, hi));
    fprintf(f, "\"/>\n");
    /* the clipped stretches, a triangle where each begins */
    edge = 0;
    for (s = 0; s < steps; s++) {
      double v = curves[a][s], x = x0 + pw * s / last;
      int out = !isfinite(v) || v > hi ? 1 : v < lo ? -1 : 0;
      if (out && out != edge) {
        double ye = out > 0 ? y0 : y0 + ph, tip = out > 0 ? 7 : -7;
        fprintf(f,
                "<polygon class=\"clipped\" fill=\"%s\" "
                "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                color, x - 4, ye + tip, x + 4, ye + tip, x, ye);
      }
      edge = out;
    }
  }
  fprintf(f, "</g>\n<g class=\"legend\">\n");
  for (a = 0; a < n_curves; a++) {
    double x = x0 + pw + 20, y = y0 + DEMO_LEGEND_ROW * a + 8;
    fprintf(f,
            "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
            "stroke-width=\"2\" stroke-dasharray=\"%s\"/>\n"
            "<text x=\"%g\" y=\"%g\">%s</text>\n",
            x, y, x + 30, y, DEMO_COLOR(arm[a]), DEMO_DASH(a), x + 36, y + 4,
            legend[a]);
  }
  fprintf(f, "</g>\n</svg>\n");
  free(legend);
  if (fclose(f) != 0) DEMO_DIE("writing %s failed", path);
}

/* A fault injected on a unit's low-cost path: steps start .. start+steps-1,
   its kind (the demo's own list) and where it lands (a channel or a head;
   -1 where it has no place). */
typedef struct demo_event {
  int start, steps, unit, kind, where;
} demo_event;

/* Units x steps: where the traced arm ran a unit on f32 (blue; rec[step *
   n_units + unit], NULL for none), and the injected faults (red frames,
   each with the letter letters[kind]). Each unit's row is a strip for the
   letters (DEMO_RASTER_LABEL, 11 px bold, centred over their frames) above
   its lane of bars and frames, so no letter touches a frame or a bar.
   Classes for tests/svg_check.h: rect "lane", "hf", "fault"; text
   "fault". */
#define DEMO_RASTER_LABEL 14.0 /* the letters' strip above each lane */
#define DEMO_RASTER_FONT 11    /* their size in px */
static void demo_svg_raster(const char *path, const char *title, int n_units,
                            const char *const *unit_name, int steps,
                            const uint8_t *rec, const demo_event *ev, int n_ev,
                            const char *letters) {
  const double x0 = 90, y0 = 30, pw = 900, rh = n_units > 8 ? 22 : 30;
  const double pitch = DEMO_RASTER_LABEL + rh;
  const double W = x0 + pw + 20, H = y0 + pitch * n_units + 44;
  double dx = pw / steps;
  FILE *f = DEMO_FOPEN(path, "w");
  int u, s, e;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" "
          "height=\"%g\" viewBox=\"0 0 %g %g\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%g\" y=\"18\">%s</text>\n",
          W, H, W, H, x0, title);
  for (u = 0; u < n_units; u++) {
    double y = y0 + pitch * u + DEMO_RASTER_LABEL; /* the lane's top */
    fprintf(f,
            "<text x=\"5\" y=\"%g\">%s</text>\n<rect class=\"lane\" "
            "x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" "
            "fill=\"#f4f4f4\"/>\n",
            y + rh / 2 + 4, unit_name[u], x0, y + 2, pw, rh - 4);
    for (s = 0; s < steps;) {
      int end = s;
      if (!rec || !rec[(size_t)s * (size_t)n_units + (size_t)u]) {
        s++;
        continue;
      }
      while (end < steps && rec[(size_t)end * (size_t)n_units + (size_t)u])
        end++;
      fprintf(f,
              "<rect class=\"hf\" x=\"%.2f\" y=\"%g\" width=\"%.2f\" "
              "height=\"%g\" fill=\"#1f77b4\"/>\n",
              x0 + dx * s, y + 4, dx * (end - s) > 1 ? dx * (end - s) : 1,
              rh - 8);
      s = end;
    }
  }
  for (e = 0; e < n_ev; e++) {
    double y = y0 + pitch * ev[e].unit + DEMO_RASTER_LABEL,
           w = dx * ev[e].steps;
    fprintf(f,
            "<rect class=\"fault\" x=\"%.2f\" y=\"%g\" width=\"%.2f\" "
            "height=\"%g\" fill=\"none\" stroke=\"#d62728\" "
            "stroke-width=\"1.5\"/>\n"
            "<text class=\"fault\" x=\"%.2f\" y=\"%g\" fill=\"#d62728\" "
            "font-size=\"%d\" font-weight=\"bold\" "
            "text-anchor=\"middle\">%c</text>\n",
            x0 + dx * ev[e].start - 1, y + 1, (w > 2 ? w : 2) + 2, rh - 2,
            x0 + dx * ev[e].start + w / 2, y - 3, DEMO_RASTER_FONT,
            letters[ev[e].kind]);
  }
  demo_svg_steps(f, x0, y0 + pitch * n_units, pw, steps);
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0) DEMO_DIE("writing %s failed", path);
}

#endif /* DEMO_COMMON_H */
