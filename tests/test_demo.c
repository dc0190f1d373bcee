/* test_demo.c - the training stress demo: its quantizers against the formats'
   value tables, its MLP gradients against finite differences, the loss
   plot's y range against a spike, and a short end-to-end run that must
   write well-formed CSV files and pictures (tests/svg_check.h), and the
   command line (lab/common.h's option table). */
#define TRAIN_STRESS_NO_MAIN
#include "../lab/train_stress.c"
#include "check.h"
#include "svg_check.h"
#include "child.h"
#include <unistd.h>

/* Where this test writes: a directory of its own (the Makefile passes
   "<program>.out"), so the test programs can run side by side
   (tests/run.sh). */
#ifndef TEST_OUT
#define TEST_OUT "build/test_demo_out"
#endif

/* ---- quantizers ------------------------------------------------------------
 */

static float q(const char *fmt, float x) {
  return lp_quantize(x, lp_format_find(fmt));
}

TEST(e4m3_known_values) {
  EXPECT(q("e4m3", 1.0f) == 1.0f);
  EXPECT(q("e4m3", 448.0f) == 448.0f);
  EXPECT(q("e4m3", 1.0625f) == 1.0f);  /* tie: 1.000 vs 1.001, even */
  EXPECT(q("e4m3", 1.1875f) == 1.25f); /* tie: 1.001 vs 1.010, even */
  EXPECT(q("e4m3", 1.06f) == 1.0f);    /* below the tie */
  EXPECT(q("e4m3", 1.07f) == 1.125f);  /* above the tie */
  EXPECT(q("e4m3", 240.0f) == 240.0f); /* 1.111 x 2^7 */
  EXPECT(q("e4m3", 464.0f) == 448.0f); /* tie at the top saturates */
  EXPECT(q("e4m3", 500.0f) == 448.0f); /* saturates, no NaN */
  EXPECT(q("e4m3", -1e30f) == -448.0f);
  EXPECT(q("e4m3", (float)INFINITY) == 448.0f);
  EXPECT(q("e4m3", -(float)INFINITY) == -448.0f);
  EXPECT(isnan(q("e4m3", (float)NAN)));
  EXPECT(q("e4m3", 0.015625f) == 0.015625f);         /* smallest normal 2^-6 */
  EXPECT(q("e4m3", ldexpf(1, -9)) == ldexpf(1, -9)); /* smallest subnormal */
  EXPECT(q("e4m3", ldexpf(1, -10)) == 0.0f);         /* tie to zero */
  EXPECT(q("e4m3", 3 * ldexpf(1, -10)) == ldexpf(1, -8));    /* tie, even */
  EXPECT(q("e4m3", 5 * ldexpf(1, -10)) == ldexpf(1, -8));    /* tie, even */
  EXPECT(q("e4m3", 7 * ldexpf(1, -9)) == 7 * ldexpf(1, -9)); /* subnormal */
  EXPECT(signbit(q("e4m3", -0.0f)) && q("e4m3", -0.0f) == 0.0f);
  EXPECT(signbit(q("e4m3", -ldexpf(1, -11)))); /* underflow keeps the sign */
}

TEST(e5m2_known_values) {
  EXPECT(q("e5m2", 57344.0f) == 57344.0f);
  EXPECT(q("e5m2", 61440.0f) == 57344.0f); /* tie at the top saturates */
  EXPECT(q("e5m2", 1e6f) == 57344.0f);
  EXPECT(q("e5m2", (float)INFINITY) == 57344.0f);
  EXPECT(isnan(q("e5m2", (float)NAN)));
  EXPECT(q("e5m2", 1.125f) == 1.0f); /* tie: 1.00 vs 1.01, even */
  EXPECT(q("e5m2", 1.375f) == 1.5f); /* tie: 1.01 vs 1.10, even */
  EXPECT(q("e5m2", 3.0f) == 3.0f);
  EXPECT(q("e5m2", ldexpf(1, -16)) == ldexpf(1, -16)); /* smallest subnormal */
  EXPECT(q("e5m2", ldexpf(1, -17)) == 0.0f);           /* tie to zero */
  EXPECT(q("e5m2", 3 * ldexpf(1, -17)) == ldexpf(1, -15));
  EXPECT(q("e5m2", -ldexpf(1, -14)) == -ldexpf(1, -14)); /* smallest normal */
}

TEST(e2m1_known_values) {
  /* E2M1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6. */
  EXPECT(q("e2m1", 0.25f) == 0.0f); /* tie: 0 vs 0.5, even */
  EXPECT(q("e2m1", 0.5f) == 0.5f);  /* the only subnormal */
  EXPECT(q("e2m1", 0.75f) == 1.0f); /* tie: 0.5 (odd) vs 1.0 (even) */
  EXPECT(q("e2m1", 1.25f) == 1.0f); /* tie: 1.0 vs 1.5 */
  EXPECT(q("e2m1", 1.75f) == 2.0f); /* tie: 1.5 vs 2.0 */
  EXPECT(q("e2m1", 2.5f) == 2.0f);  /* tie: 2 vs 3 */
  EXPECT(q("e2m1", 3.5f) == 4.0f);  /* tie: 3 vs 4 */
  EXPECT(q("e2m1", 5.0f) == 4.0f);  /* tie: 4 vs 6 */
  EXPECT(q("e2m1", -5.1f) == -6.0f);
  EXPECT(q("e2m1", 7.0f) == 6.0f); /* saturates */
  EXPECT(q("e2m1", 1e9f) == 6.0f);
  EXPECT(q("e2m1", -(float)INFINITY) == -6.0f);
  EXPECT(isnan(q("e2m1", (float)NAN))); /* no NaN code: NaN is let through */
}

/* The formats' value tables decoded from their bit fields, independently of
   lp_quantize: (value, mantissa's last bit) for every non-negative code. */
static int decode_table(const char *fmt, double *val, int *odd) {
  int ebits = fmt[1] - '0', mbits = fmt[3] - '0';
  int bias = (1 << (ebits - 1)) - 1, n = 0, e, m;
  for (e = 0; e < (1 << ebits); e++)
    for (m = 0; m < (1 << mbits); m++) {
      if (strcmp(fmt, "e4m3") == 0 && e == 15 && m == 7) continue; /* NaN */
      if (strcmp(fmt, "e5m2") == 0 && e == 31) continue; /* Inf, NaN */
      val[n] = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                      : ldexp(1.0 + (double)m / (1 << mbits), e - bias);
      odd[n++] = m & 1;
    }
  return n;
}

TEST(quantizers_match_value_tables) {
  static const char *fmts[] = {"e4m3", "e5m2", "e2m1"};
  double val[256];
  int odd[256], f, i, k, n;
  for (f = 0; f < 3; f++) {
    const lp_format *tf = lp_format_find(fmts[f]);
    n = decode_table(fmts[f], val, odd);
    EXPECT(val[n - 1] == tf->max);
    for (i = 0; i < 20000; i++) {
      /* Log-uniform magnitudes across and beyond the range, both signs; and
         every exact midpoint between neighbours. */
      float x;
      double best = 0.0, a;
      if (i < n - 1)
        x = (float)((val[i] + val[i + 1]) / 2);
      else
        x = (float)(tf->max * pow(2.0, -30.0 * check_uniform() + 3.0));
      if (check_rand() & 1) x = -x;
      a = fabs((double)x);
      for (k = 0; k < n; k++) {
        double dk = fabs(a - val[k]), db = fabs(a - best);
        if (dk < db || (dk == db && !odd[k])) best = val[k];
      }
      if (a > tf->max) best = tf->max;
      if (fabs((double)lp_quantize(x, tf)) != best) {
        printf("  %s: q(%.9g) = %.9g, table says %.9g\n", fmts[f], x,
               lp_quantize(x, tf), best);
        check__failed_here = 1;
        break;
      }
    }
  }
}

TEST(delayed_scaling_saturates_a_burst) {
  /* The scale comes from the history, so a burst this step saturates at the
     historical amax; the next step's scale has seen the burst. */
  const lp_format *f = lp_format_find("e4m3");
  lp_scaler s;
  float x[2] = {0.5f, 100.0f}, out[2], sc;
  memset(&s, 0, sizeof s);
  EXPECT(lp_scaler_scale(&s, f, 2.0f) == 448.0f / 2.0f); /* no history */
  lp_scaler_push(&s, 2.0f);
  sc = lp_scaler_scale(&s, f, lp_amax(x, 2));
  EXPECT(sc == 448.0f / 2.0f);
  lp_quantize_tensor(x, 2, f, sc, out);
  EXPECT(out[0] == 0.5f);
  EXPECT(out[1] == 2.0f); /* saturated */
  lp_scaler_push(&s, lp_amax(x, 2));
  EXPECT(lp_scaler_scale(&s, f, 1.0f) == 448.0f / 100.0f);
}

TEST(stale_scale_saturates_over_and_flushes_under) {
  /* A stale scale 64x too large (the default) clips the layer's quantized
     input at its amax / 64; 64x too small (--stale under) puts every FP4
     E2M1 value below half its smallest step: all of them flush to zero. */
  static const int dims[TS_LAYERS + 1] = {8, 4, 4, 4, 2};
  enum { B = 4, NX = B * 8 };
  ts_model m;
  ts_path p;
  demo_rng r = {7};
  float x[NX], y[B * 4], amax = 0.0f;
  int i, dir, zeros, above;
  for (i = 0; i < NX; i++) {
    x[i] = 0.5f + (float)i / NX;
    if (x[i] > amax) amax = x[i];
  }
  for (dir = -1; dir <= 1; dir += 2) {
    ts_model_init(&m, dims, B, &r);
    memset(&p, 0, sizeof p);
    p.fmt = lp_format_find("e2m1");
    ts_layer_forward(&m.layer[0], x, B, &p, y); /* the amax history */
    p.stale = dir;
    ts_layer_forward(&m.layer[0], x, B, &p, y);
    for (i = zeros = above = 0; i < NX; i++) {
      zeros += m.layer[0].xq[i] == 0.0f;
      above += m.layer[0].xq[i] > amax / 64.0f * 1.0001f;
    }
    if (dir < 0)
      EXPECT_EQ_INT(zeros, NX);
    else {
      EXPECT_EQ_INT(zeros, 0);
      EXPECT_EQ_INT(above, 0);
      EXPECT(m.layer[0].xq[NX - 1] > amax / 64.0f * 0.99f); /* saturated */
    }
    ts_model_free(&m);
  }
}

/* ---- gradients vs finite differences --------------------------------------
 */

TEST(mlp_gradients_match_finite_differences) {
  static const int dims[TS_LAYERS + 1] = {6, 9, 8, 7, 4};
  enum { B = 5 };
  ts_model m;
  ts_path paths[TS_LAYERS];
  demo_rng r = {42};
  float x[B * 6];
  uint8_t y[B];
  int l, i, bad = 0, checked = 0;
  ts_model_init(&m, dims, B, &r);
  memset(paths, 0, sizeof paths);
  for (i = 0; i < B * 6; i++) x[i] = (float)demo_normal(&r);
  for (i = 0; i < B; i++) y[i] = (uint8_t)(i % 4);
  for (l = 0; l < TS_LAYERS; l++)
    for (i = 0; i < m.layer[l].out; i++)
      m.layer[l].b[i] = (float)(0.1 * demo_normal(&r));
  ts_forward(&m, x, y, B, paths, NULL);
  ts_backward(&m, y, B);
  for (l = 0; l < TS_LAYERS; l++) {
    ts_layer *L = &m.layer[l];
    int nw = L->in * L->out, k;
    for (k = 0; k < nw + L->out; k++) {
      float *p = k < nw ? &L->w[k] : &L->b[k - nw];
      double g = k < nw ? L->dw[k] : L->db[k - nw], h = 1e-3, lp, lm, fd;
      float keep = *p;
      *p = keep + (float)h;
      lp = ts_forward(&m, x, y, B, paths, NULL);
      *p = keep - (float)h;
      lm = ts_forward(&m, x, y, B, paths, NULL);
      *p = keep;
      fd = (lp - lm) / (2 * h);
      checked++;
      if (fabs(fd - g) > 2e-3 + 2e-2 * fabs(fd)) {
        if (bad < 5)
          printf("  layer %d param %d: analytic %.6g, finite diff %.6g\n", l, k,
                 g, fd);
        bad++;
      }
    }
  }
  EXPECT_EQ_INT(checked, 238);
  EXPECT_EQ_INT(bad, 0);
  ts_model_free(&m);
}

/* ---- end to end -------------------------------------------------------------
 */

/* Lines of a CSV file, each with `fields` comma-separated fields; returns the
   number of data lines or -1 if the header or any line is off. */
static int csv_check(const char *path, const char *header, int fields,
                     void (*row)(char **f)) {
  FILE *f = fopen(path, "r");
  char line[512];
  int rows = 0;
  if (!f) return -1;
  if (!fgets(line, sizeof line, f) || strcmp(line, header) != 0) {
    fclose(f);
    return -1;
  }
  while (fgets(line, sizeof line, f)) {
    char *cols[24], *c = line;
    int n = 0;
    if (line[strlen(line) - 1] != '\n') break;
    line[strlen(line) - 1] = 0;
    for (;;) {
      if (n < 24) cols[n] = c;
      n++;
      c = strchr(c, ',');
      if (!c) break;
      *c++ = 0;
    }
    if (n != fields) {
      fclose(f);
      return -1;
    }
    if (row) row(cols);
    rows++;
  }
  fclose(f);
  return rows;
}

static int row_errors;

static int is_number(const char *s) {
  char *end;
  double v = strtod(s, &end);
  return *s && !*end && isfinite(v);
}

static void summary_row(char **f) {
  int i, a = arm_find(f[0]), gnmr = a >= 0 && ARMS[a].kind == ARM_GNMR;
  if (a < 0 || strcmp(f[2], "e4m3") != 0) row_errors++;
  for (i = 4; i < 18; i++)
    if (!is_number(f[i])) row_errors++;
  /* the f32 arm is served on the f32 path */
  if (a >= 0 && ARMS[a].f32 && (strcmp(f[4], f[16]) || strcmp(f[5], f[17])))
    row_errors++;
  /* caught within the faults, in-fault admissions within the admissions */
  if (atoi(f[11]) > atoi(f[10]) || atoi(f[13]) > atoi(f[12]) ||
      atoi(f[15]) > atoi(f[14]))
    row_errors++;
  if (!gnmr && atoi(f[11]) + atoi(f[13]) + atoi(f[14]) != 0) row_errors++;
  if (atof(f[5]) < 0 || atof(f[5]) > 1 || atof(f[6]) < 0 || atof(f[6]) > 1)
    row_errors++;
  /* recovery only in the GNMR arms */
  if (!gnmr && atof(f[6]) != 0) row_errors++;
  /* no overhead where no control runs (the run has no global clip) */
  if (a >= 0 && (ARMS[a].kind == ARM_F32 || ARMS[a].kind == ARM_LOWP) &&
      atof(f[9]) != 0)
    row_errors++;
}

static void trace_row(char **f) {
  if (!is_number(f[0]) || !is_number(f[1]) || atoi(f[1]) >= TS_LAYERS)
    row_errors++;
  if (strcmp(f[5], "KEEP") && strcmp(f[5], "RECOVER") && strcmp(f[5], "HOLD") &&
      strcmp(f[5], "RELEASE"))
    row_errors++;
}

/* The run below: built-in task (64 inputs), hidden 16,16,16. A burst names
   the first input channel it hits, below the layer's width; a stale scale
   hits no channel (-1). */
static void stress_row(char **f) {
  int unit = atoi(f[3]), channel = atoi(f[5]);
  int width = unit == 0 ? 64 : 16;
  if (!is_number(f[1]) || !is_number(f[2]) || unit < 0 || unit >= TS_LAYERS)
    row_errors++;
  if (strcmp(f[4], "burst") == 0) {
    if (channel < 0 || channel >= width) row_errors++;
  } else if (strcmp(f[4], "stale") != 0 || channel != -1) {
    row_errors++;
  }
}

/* 1 if the file holds every string of the NULL-terminated list. */
static int file_has_all(const char *path, const char *const *want) {
  static char buf[1 << 20];
  FILE *f = fopen(path, "rb");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  for (; *want; want++)
    if (!strstr(buf, *want)) return 0;
  return 1;
}

/* A 40-step spike (4% of the values: a fault, as the EMA holds it) and a
   diverged arm: the y range keeps the curves' detail, and what it leaves
   out is drawn on the edge with a marker. */
TEST(loss_plot_range_survives_a_spike) {
  enum { N = 400 };
  static float flat[N], spiky[N], gone[N];
  float *curves[3];
  static const int arms[3] = {0, 1, 4}; /* black, red, green */
  double lo, hi;
  int s;
  for (s = 0; s < N; s++) {
    flat[s] = (float)(2.0 - s / (double)N);
    spiky[s] = s >= 200 && s < 240 ? 1e4f : flat[s] + 0.1f;
    gone[s] = s < 300 ? flat[s] - 0.05f : (float)NAN;
  }
  curves[0] = flat;
  curves[1] = spiky;
  curves[2] = gone;
  demo_loss_range(curves, 3, N, 0, &lo, &hi);
  /* every value but the spike's inside, and the span still of the curves */
  EXPECT(lo <= 0.95 && lo > 0.0);
  EXPECT(hi >= 2.1 && hi < 2.3);
  demo_mkdir(TEST_OUT);
  demo_svg_loss(TEST_OUT "/range.svg", "test", "loss", curves, arms, 3, N, 0);
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/range.svg"), 0);
  EXPECT_EQ_INT(svg_dash_errors(TEST_OUT "/range.svg"), 0);
  {
    /* the spike's marker and the diverged arm's, at the top edge */
    static const char *const marks[] = {
        "<polygon class=\"clipped\" fill=\"#d62728\"",
        "<polygon class=\"clipped\" fill=\"#2ca02c\"", NULL};
    EXPECT(file_has_all(TEST_OUT "/range.svg", marks));
  }
}

/* Two arms that train alike are one line on the plot: the legend says
   which runs on which (make demo's gnmr-noise ran under lowp unseen); an
   arm of its own is named alone, and the legend's column fits the text. */
TEST(loss_plot_legend_names_a_curve_drawn_on_another) {
  enum { N = 300 };
  static float a[N], b[N], c[N];
  float *curves[3];
  static const int arms[3] = {1, 5, 0}; /* lowp, gnmr-noise, f32 */
  int s;
  for (s = 0; s < N; s++) {
    a[s] = (float)(2.0 - s / (double)N);
    b[s] = a[s] + 1e-4f;                      /* within a pixel of a */
    c[s] = a[s] - 0.4f * (float)(s > N / 10); /* apart after 10% */
  }
  curves[0] = a;
  curves[1] = b;
  curves[2] = c;
  demo_mkdir(TEST_OUT);
  demo_svg_loss(TEST_OUT "/coincide.svg", "test", "loss", curves, arms, 3, N,
                0);
  {
    static const char *const names[] = {">lowp, on gnmr-noise</text>",
                                        ">gnmr-noise, on lowp</text>",
                                        ">f32</text>", NULL};
    EXPECT(file_has_all(TEST_OUT "/coincide.svg", names));
  }
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/coincide.svg"), 0);
  EXPECT_EQ_INT(svg_dash_errors(TEST_OUT "/coincide.svg"), 0);
}

TEST(demo_runs_end_to_end) {
  char *argv[] = {"train_stress", "--steps", "40", "--hidden",
                  "16,16,16",     "--batch", "32", "--stress",
                  "100",          "--seeds", "2",  "--out",
                  TEST_OUT,       "--quiet"};
  int argc = (int)(sizeof argv / sizeof argv[0]);
  row_errors = 0;
  REQUIRE(train_stress_main(argc, argv) == 0);
  EXPECT_EQ_INT(csv_check(TEST_OUT "/summary.csv",
                          "arm,seed,format,stress,test_loss,test_acc,"
                          "recovery_fraction,loss_spikes,diverged,"
                          "overhead_pct,bursts,bursts_caught,stales,"
                          "stales_caught,admissions,admissions_in_fault,"
                          "test_loss_served,test_acc_served\n",
                          18, summary_row),
                2 * TS_N_DEFAULT_ARMS);
  EXPECT_EQ_INT(csv_check(TEST_OUT "/trace.csv",
                          "step,unit,norm,gnmr,delta,action\n", 6, trace_row),
                40 * TS_LAYERS);
  EXPECT(csv_check(TEST_OUT "/stress.csv",
                   "seed,start,steps,unit,kind,channel\n", 6, stress_row) > 0);
  EXPECT_EQ_INT(row_errors, 0);
  EXPECT(file_starts_with(TEST_OUT "/loss.svg", "<svg"));
  {
    /* Axis labels and ticks, curves clipped to the plot area. */
    static const char *const loss_svg[] = {
        "<clipPath id=\"plot\">", "<g clip-path=\"url(#plot)\">",
        ">step</text>",           ">training loss</text>",
        "text-anchor=\"end\">",   NULL};
    EXPECT(file_has_all(TEST_OUT "/loss.svg", loss_svg));
  }
  EXPECT(file_starts_with(TEST_OUT "/recovery.svg", "<svg"));
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/loss.svg"), 0);
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/recovery.svg"), 0);
  EXPECT_EQ_INT(svg_dash_errors(TEST_OUT "/loss.svg"), 0);
  EXPECT_EQ_INT(svg_label_errors(TEST_OUT "/recovery.svg"), 0);
}

/* ---- the peer arms gstab and spam (lab/arms.h) ----------------------
 */

/* gstab on synthetic norms: unchanged in the warm-up; after it a calm norm
   below mean + 3 sd of the history passes untouched, a x100 spike comes out
   at exactly the bound computed before the step, and the statistics take
   the bounded norm, not the spike. */
TEST(gstab_bounds_a_spike_by_the_history_and_passes_calm_norms) {
  arm_gstab s, warm, before;
  double scale, limit, g;
  int i;
  memset(&s, 0, sizeof s);
  memset(&warm, 0, sizeof warm);
  for (i = 0; i < 5; i++) EXPECT_EQ_BITS(arm_gstab_scale(&warm, 1.0), 1.0);
  EXPECT_EQ_BITS(arm_gstab_scale(&warm, 100.0), 1.0); /* warm-up: no bound */
  for (i = 0; i < 40; i++)
    EXPECT_EQ_BITS(arm_gstab_scale(&s, 1.0 + 0.1 * sin(i)), 1.0);
  REQUIRE(s.n == 40 && s.var > 0);
  before = s;
  limit = before.mean + 3.0 * sqrt(before.var);
  g = before.mean + 1.5 * sqrt(before.var); /* calm: below the bound */
  EXPECT_EQ_BITS(arm_gstab_scale(&s, g), 1.0);
  before = s;
  limit = before.mean + 3.0 * sqrt(before.var);
  g = 100.0 * before.mean; /* a spike */
  scale = arm_gstab_scale(&s, g);
  EXPECT(scale < 0.05);
  EXPECT_NEAR(scale * g, limit, 1e-12 * limit);
  /* the EMAs took the bounded norm: the mean moves 2% of the way to it */
  EXPECT_NEAR(s.mean, before.mean + 0.02 * (limit - before.mean), 1e-12);
  EXPECT(s.mean < 1.1 * before.mean);
  /* non-finite: dropped, not observed; exactly 0 (frozen): not observed */
  before = s;
  EXPECT_EQ_BITS(arm_gstab_scale(&s, NAN), 0.0);
  EXPECT_EQ_BITS(arm_gstab_scale(&s, INFINITY), 0.0);
  EXPECT_EQ_BITS(arm_gstab_scale(&s, 0.0), 1.0);
  EXPECT(memcmp(&s, &before, sizeof s) == 0);
}

/* spam's clip: exactly the entries with g^2 > 5000 v become sign(g)
   sqrt(5000 v); v = 0 leaves an entry alone. The reset: the moments are
   zeroed at step 500 (and 1000), not before; the learning rate's cosine
   warm-up over the 150 updates from the reset. */
TEST(spam_clips_the_entries_over_the_threshold_and_resets_at_500) {
  /* 5000 v = 5 for the first five: the bound is sqrt(5) = 2.236 */
  float g[7] = {2.0f, -3.0f, 100.0f, -2.2f, 0.0f, 7.0f, -7.0f},
        v[7] = {1e-3f, 1e-3f, 1e-3f, 1e-3f, 1e-3f, 0.0f, 0.0f}, want[7];
  float w[6], dw[6], mw[6], vw[6], b[3], db[3], mb[3], vb[3];
  ts_layer L;
  int i;
  double bound = sqrt(5000.0 * (double)1e-3f);
  for (i = 0; i < 7; i++) want[i] = g[i];
  want[1] = (float)-bound;
  want[2] = (float)bound;
  EXPECT_EQ_INT(ts_spam_clip(g, v, 7), 2);
  for (i = 0; i < 7; i++) EXPECT_EQ_BITS(g[i], want[i]);
  EXPECT_EQ_BITS(arm_spam_entry(-1e30, 1e-3), -sqrt(ARM_SPAM_THETA * 1e-3));
  EXPECT_EQ_BITS(arm_spam_entry(1e30, 0.0), 1e30);

  EXPECT(!arm_spam_resets(0) && !arm_spam_resets(499));
  EXPECT(arm_spam_resets(500) && arm_spam_resets(1000));
  EXPECT(!arm_spam_resets(501) && !arm_spam_resets(999));
  EXPECT_EQ_BITS(arm_spam_lr_scale(0), 1.0);
  EXPECT_EQ_BITS(arm_spam_lr_scale(499), 1.0);
  EXPECT_NEAR(arm_spam_lr_scale(500), 0.5 * (1 - cos(3.141592653589793 / 150)),
              1e-15);
  EXPECT(arm_spam_lr_scale(500) > 0 && arm_spam_lr_scale(500) < 1e-3);
  EXPECT_NEAR(arm_spam_lr_scale(574), 0.5, 1e-12); /* k = 75 of 150 */
  EXPECT(arm_spam_lr_scale(648) < 1.0);            /* k = 149 */
  EXPECT_EQ_BITS(arm_spam_lr_scale(649), 1.0);     /* k = 150: done */
  EXPECT_NEAR(arm_spam_lr_scale(1000), arm_spam_lr_scale(500), 0);

  memset(&L, 0, sizeof L);
  L.in = 2, L.out = 3;
  L.w = w, L.dw = dw, L.mw = mw, L.vw = vw;
  L.b = b, L.db = db, L.mb = mb, L.vb = vb;
  for (i = 0; i < 6; i++) dw[i] = 1.0f, mw[i] = 0.5f, vw[i] = 1.0f;
  for (i = 0; i < 3; i++) db[i] = -1.0f, mb[i] = 0.5f, vb[i] = 1.0f;
  dw[4] = 1000.0f; /* 1e6 > 5000: clipped to sqrt(5000) */
  EXPECT_EQ_INT(ts_spam_step(&L, 499), 1);
  EXPECT_EQ_BITS(dw[4], (float)sqrt(5000.0));
  for (i = 0; i < 6; i++) EXPECT(mw[i] == 0.5f && vw[i] == 1.0f);
  dw[4] = 1000.0f;
  EXPECT_EQ_INT(ts_spam_step(&L, 500), 0); /* reset: v = 0, no clip */
  EXPECT_EQ_BITS(dw[4], 1000.0f);
  for (i = 0; i < 6; i++) EXPECT(mw[i] == 0.0f && vw[i] == 0.0f);
  for (i = 0; i < 3; i++) EXPECT(mb[i] == 0.0f && vb[i] == 0.0f);
}

/* The served evaluation: each layer as its last step ran it (a layer on
   the f32 path in f32, faults dropped); lowp's differs from its f32-path
   evaluation (the quantized forward), f32's is the same bits. */
TEST(served_evaluation_uses_the_quantized_forward) {
  char *argv[] = {"train_stress", "--hidden", "16,16,16",
                  "--batch",      "32",       "--quiet"};
  ts_opts o;
  ts_data train, test;
  ts_result f, l;
  ts_path last[TS_LAYERS], served[TS_LAYERS];
  int i;
  memset(last, 0, sizeof last);
  for (i = 0; i < TS_LAYERS; i++) last[i].fmt = &LP_FORMATS[2];
  last[1].fmt = NULL, last[1].track = 1; /* high on the last step */
  last[0].burst = 1, last[0].stale = 1;
  ts_served_paths(last, served);
  EXPECT(served[0].fmt == &LP_FORMATS[2] && !served[0].burst &&
         !served[0].stale);
  EXPECT(served[1].fmt == NULL && !served[1].track);
  ts_parse(&o, (int)(sizeof argv / sizeof argv[0]), argv);
  ts_synthetic(&train, &test);
  o.steps = 30;
  f = ts_train(&o, arm_find("f32"), 1, &train, &test, NULL, 0, NULL);
  l = ts_train(&o, arm_find("lowp"), 1, &train, &test, NULL, 0, NULL);
  EXPECT_EQ_BITS(f.test_loss_served, f.test_loss);
  EXPECT_EQ_BITS(f.test_acc_served, f.test_acc);
  EXPECT(isfinite(l.test_loss_served) && l.test_loss_served != l.test_loss);
  printf("  f32 %.5f; lowp %.5f, served %.5f\n", f.test_loss, l.test_loss,
         l.test_loss_served);
  free(f.loss), free(l.loss);
  ts_data_free(&train);
  ts_data_free(&test);
}

/* Each peer arm trains end to end on the built-in task with faults: a
   finite loss at every step, and a run that is not lowp's. spam also over
   its reset (520 steps), to a test loss below chance. */
TEST(gstab_and_spam_run_end_to_end) {
  char *argv[] = {"train_stress", "--hidden", "16,16,16", "--batch",
                  "32",           "--stress", "100",      "--quiet"};
  ts_opts o;
  ts_data train, test;
  ts_result lowp, r;
  static const char *const arms[] = {"gstab", "spam"};
  demo_event ev[TS_MAX_EVENTS];
  int a, i, bad, n_ev;
  ts_parse(&o, (int)(sizeof argv / sizeof argv[0]), argv);
  ts_synthetic(&train, &test);
  o.steps = 40;
  n_ev = ts_make_events(o.stress, o.steps, TS_LAYERS, 1 << 16, 1, ev,
                        TS_MAX_EVENTS);
  REQUIRE(n_ev > 0);
  lowp = ts_train(&o, arm_find("lowp"), 1, &train, &test, ev, n_ev, NULL);
  for (a = 0; a < 2; a++) {
    REQUIRE(arm_find(arms[a]) >= 0 && ARMS[arm_find(arms[a])].extra);
    r = ts_train(&o, arm_find(arms[a]), 1, &train, &test, ev, n_ev, NULL);
    for (i = bad = 0; i < o.steps; i++) bad += !isfinite(r.loss[i]);
    EXPECT_EQ_INT(bad, 0);
    EXPECT(isfinite(r.test_loss)); /* 40 steps: not yet below chance */
    EXPECT(memcmp(r.loss, lowp.loss, sizeof(float) * (size_t)o.steps) != 0);
    printf("  %s: test loss %.4f (lowp %.4f)\n", arms[a], r.test_loss,
           lowp.test_loss);
    free(r.loss);
  }
  o.steps = 520;
  n_ev = ts_make_events(o.stress, o.steps, TS_LAYERS, 1 << 16, 1, ev,
                        TS_MAX_EVENTS);
  r = ts_train(&o, arm_find("spam"), 1, &train, &test, ev, n_ev, NULL);
  for (i = bad = 0; i < o.steps; i++) bad += !isfinite(r.loss[i]);
  EXPECT_EQ_INT(bad, 0);
  EXPECT(isfinite(r.test_loss) && !r.diverged);
  free(r.loss);
  free(lowp.loss);
  ts_data_free(&train);
  ts_data_free(&test);
}

/* The two readability checks fail where they must: a 9 px letter on its
   frame's bottom edge (0.4's raster), a letter clear of it but too small,
   two curves in one dash pattern, a legend sample not in its curve's. */
static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

TEST(svg_checks_catch_unreadable_pictures) {
  static const char frame[] =
      "<svg viewBox=\"0 0 200 100\">\n<rect class=\"lane\" x=\"10\" "
      "y=\"32\" width=\"180\" height=\"26\"/>\n<rect class=\"fault\" "
      "x=\"50\" y=\"31\" width=\"6\" height=\"28\"/>\n";
  char text[1024];
  demo_mkdir(TEST_OUT);
  snprintf(text, sizeof text,
           "%s<text class=\"fault\" x=\"50\" y=\"61\" "
           "font-size=\"9\">B</text>\n</svg>\n",
           frame);
  write_text(TEST_OUT "/bad_label.svg", text);
  EXPECT(svg_label_errors(TEST_OUT "/bad_label.svg") >= 2);
  snprintf(text, sizeof text,
           "%s<text class=\"fault\" x=\"53\" y=\"27\" font-size=\"9\" "
           "text-anchor=\"middle\">B</text>\n</svg>\n",
           frame);
  write_text(TEST_OUT "/bad_label.svg", text);
  EXPECT_EQ_INT(svg_label_errors(TEST_OUT "/bad_label.svg"), 1);
  snprintf(text, sizeof text,
           "%s<text class=\"fault\" x=\"53\" y=\"27\" font-size=\"11\" "
           "text-anchor=\"middle\">B</text>\n</svg>\n",
           frame);
  write_text(TEST_OUT "/bad_label.svg", text);
  EXPECT_EQ_INT(svg_label_errors(TEST_OUT "/bad_label.svg"), 0);
  write_text(TEST_OUT "/bad_dash.svg",
             "<svg viewBox=\"0 0 9 9\">\n"
             "<polyline stroke-dasharray=\"none\" points=\"1,1\"/>\n"
             "<polyline stroke-dasharray=\"3 3\" points=\"1,1\"/>\n"
             "<polyline stroke-dasharray=\"3 3\" points=\"1,1\"/>\n"
             "<g class=\"legend\">\n<line stroke-dasharray=\"none\"/>\n"
             "<line stroke-dasharray=\"3 3\"/>\n"
             "<line stroke-dasharray=\"3\"/>\n</g>\n</svg>\n");
  EXPECT_EQ_INT(svg_dash_errors(TEST_OUT "/bad_dash.svg"), 2);
}

/* The persist2 arm's admissions (lab/arms.h): a unit flagged once is not
   admitted, flagged twice in a row it is, for lock steps, one unit at a
   time, then cools down before it may come back. */
TEST(persist2_admits_only_a_risk_that_persists) {
  arm_persist p;
  gnmr_decision d[2];
  float x[2] = {1, 1};
  int adm[2], step, admitted_at = -1, on = 0;
  EXPECT_EQ_INT(arm_persist_init(&p, "gnmr-persist2", 3), ARM_ADMIT_PERSIST);
  memset(d, 0, sizeof d);
  d[0].flags = GNMR_FLAG_RATIO; /* step 0: one flagged step, then calm */
  arm_persist_step(&p, d, x, 2, 3, 2, adm);
  EXPECT(!adm[0] && !adm[1] && p.left[0] == 0);
  d[0].flags = 0;
  arm_persist_step(&p, d, x, 2, 3, 2, adm);
  EXPECT(!adm[0] && p.run[0] == 0);
  /* both flagged from step 2 on: unit 1 scores higher and goes first */
  d[0].flags = GNMR_FLAG_DELTA, d[0].score = 1.5;
  d[1].flags = GNMR_FLAG_RATIO, d[1].score = 4.0;
  for (step = 2; step < 12; step++) {
    on += p.left[1] > 0; /* on the high-fidelity path this step */
    arm_persist_step(&p, d, x, 2, 3, 2, adm);
    if (adm[1] && admitted_at < 0) admitted_at = step;
    EXPECT(!(adm[0] && p.left[1] > 0)); /* one at a time */
    if (step == 3) EXPECT(adm[1] && !adm[0]);
  }
  EXPECT_EQ_INT(admitted_at, 3);
  EXPECT(on >= 3);
  EXPECT(p.left[0] > 0 || p.cool[0] > 0 || p.left[1] > 0); /* turns taken */
}

/* A calm unit's norms alternating 1 and 1.5 for the band's warm-up and
   more (its centre and sd settle inside); returns the steps taken. */
static int band_settle(arm_persist *p, gnmr_decision *d, float *x, int *adm) {
  int step;
  for (step = 0; step < 64; step++) {
    x[0] = step % 2 ? 1.5f : 1.0f;
    arm_persist_step(p, d, x, 1, 3, 2, adm);
    EXPECT(!adm[0]);
  }
  return step;
}

/* The band arm (lab/arms.h): a flagged norm inside the unit's own band is
   not admitted, even on many steps in a row; one above it twice in a row
   is; a x1000 norm once is, at once; a NaN norm is; a spike does not widen
   the band (the same spike later is still above it). */
TEST(band_admits_what_leaves_the_units_own_band) {
  arm_persist p;
  gnmr_decision d[1];
  float x[1];
  int adm[1], i;
  double centre, sd;
  EXPECT_EQ_INT(arm_persist_init(&p, "gnmr-band3", 3), ARM_ADMIT_BAND);
  memset(d, 0, sizeof d);
  band_settle(&p, d, x, adm);
  EXPECT(p.seen[0] == 64 && p.sd[0] > 0.1 && p.sd[0] < 0.3);
  /* flagged inside the band: never admitted */
  d[0].flags = GNMR_FLAG_RATIO;
  for (i = 0; i < 10; i++) {
    x[0] = 1.5f;
    arm_persist_step(&p, d, x, 1, 3, 2, adm);
    EXPECT(!adm[0]);
  }
  /* above the band on one step (x 10, under the x 100 margin): clipped,
     not admitted; the band barely moves */
  centre = p.centre[0], sd = p.sd[0];
  x[0] = 10.0f * (float)exp(centre);
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(!adm[0] && p.run[0] == 1);
  EXPECT(p.centre[0] - centre < 0.5 * sd);
  x[0] = 1.0f;
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(!adm[0] && p.run[0] == 0);
  /* unflagged above the band: not admitted (the controller's flag is
     needed) */
  d[0].flags = 0;
  for (i = 0; i < 3; i++) {
    x[0] = 10.0f * (float)exp(p.centre[0]);
    arm_persist_step(&p, d, x, 1, 3, 2, adm);
    EXPECT(!adm[0]);
  }
  /* flagged above it twice in a row: admitted on the second */
  d[0].flags = GNMR_FLAG_RATIO;
  x[0] = 10.0f * (float)exp(p.centre[0]);
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(!adm[0]);
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(adm[0] && p.left[0] == 3);
  /* a x1000 norm on a fresh unit, once: admitted at once; NaN too */
  arm_persist_init(&p, "gnmr-band4", 3);
  EXPECT(p.k == 4);
  d[0].flags = 0;
  band_settle(&p, d, x, adm);
  d[0].flags = GNMR_FLAG_RATIO;
  x[0] = 1000.0f;
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(adm[0]);
  arm_persist_init(&p, "gnmr-band4", 3);
  x[0] = (float)NAN;
  d[0].flags = GNMR_FLAG_NONFINITE;
  arm_persist_step(&p, d, x, 1, 3, 2, adm);
  EXPECT(adm[0] && p.seen[0] == 0); /* and not observed */
  /* in the warm-up nothing is above the band */
  arm_persist_init(&p, "gnmr-band3", 3);
  d[0].flags = GNMR_FLAG_RATIO;
  for (i = 0; i < 8; i++) {
    x[0] = (float)pow(10.0, i);
    arm_persist_step(&p, d, x, 1, 3, 2, adm);
    EXPECT(!adm[0]);
  }
}

/* The bucket arm (lab/arms.h): flagged on every step for T steps, a unit
   runs the high-fidelity path at most lock + rate T steps; the first flag
   is admitted at once. */
TEST(bucket_bounds_a_units_admissions) {
  arm_persist p;
  gnmr_decision d[1];
  float x[1] = {1};
  int adm[1], step, on = 0, first = -1;
  const int T = 2000, lock = 8;
  EXPECT_EQ_INT(arm_persist_init(&p, "gnmr-bucket", lock), ARM_ADMIT_BUCKET);
  EXPECT_EQ_INT(arm_persist_init(&p, "gnmr", lock), ARM_ADMIT_NONE);
  arm_persist_init(&p, "gnmr-bucket", lock);
  memset(d, 0, sizeof d);
  d[0].flags = GNMR_FLAG_RATIO;
  for (step = 0; step < T; step++) {
    on += p.left[0] > 0;
    arm_persist_step(&p, d, x, 1, lock, 4, adm);
    if (adm[0] && first < 0) first = step;
  }
  EXPECT_EQ_INT(first, 0);
  EXPECT(on <= lock + ARM_BUCKET_RATE * T);
  EXPECT(on >= ARM_BUCKET_RATE * T); /* and it does spend it */
}

/* ---- the command line ------------------------------------------------------
 */

TEST(options_land_where_the_table_says) {
  char *argv[] = {"train_stress", "--seeds", "3",        "--hidden", "10,20,30",
                  "--tau-r",      "2.5",     "--lock",   "5",        "--freeze",
                  "2:40",         "--stale", "under",    "--quiet",  "--format",
                  "e5m2",         "--arms",  "f32,gnmr", "--out",    "x"};
  ts_opts o;
  ts_parse(&o, (int)(sizeof argv / sizeof argv[0]), argv);
  EXPECT_EQ_INT(o.seeds, 3);
  EXPECT(o.hidden[0] == 10 && o.hidden[1] == 20 && o.hidden[2] == 30);
  EXPECT(o.gnmr.ratio_threshold == 2.5);
  EXPECT_EQ_INT((int)o.gnmr.lock_steps, 5);
  EXPECT_EQ_INT(o.set_lock, 1);
  EXPECT_EQ_INT(o.set_max_rec, 0); /* not given: the arms keep their own */
  EXPECT_EQ_INT(o.set_tau_r, 1);   /* every GNMR arm takes it, as --lock */
  EXPECT_EQ_INT(o.set_tau_d, 0);
  EXPECT(o.freeze.index == 2 && o.freeze.pct == 40);
  EXPECT_EQ_INT(o.stale_under, 1);
  EXPECT_EQ_INT(o.quiet, 1);
  EXPECT(strcmp(o.fmt->name, "e5m2") == 0);
  EXPECT(o.n_arms == 2 && o.arms[0] == TS_ARM_F32 && o.arms[1] == TS_ARM_GNMR);
  EXPECT(strcmp(o.out_dir, "x") == 0);
  EXPECT_EQ_INT(o.steps, 1000); /* untouched: the default */
}

CHILD_PARSER(parse_in_child, ts_opts, ts_parse)

TEST(options_refuse_bad_values) {
  static const char *bad[][2] = {
      {"--seeds", "0"},
      {"--seeds", "x"},
      {"--bogus", "1"},
      {"--hidden", "1,2"},
      {"--hidden", "1,2,3x"},
      {"--format", "nvfp4"},
      {"--freeze", "9:10"},
      {"--stale", "sideways"},
      {"--lr", "nan"},
      {"--window", "99"},
      {"--arms", "nope"},
      {"--max-rec", "-1"},
      {"--arms", "place-gnmr-10"},
  };
  char *argv[3];
  size_t k;
  int taken = 0;
  argv[0] = (char *)"train_stress";
  for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    argv[1] = (char *)bad[k][0];
    argv[2] = (char *)bad[k][1];
    if (parse_in_child(argv, 3, NULL) != 1) {
      fprintf(stderr, "  taken: %s %s\n", argv[1], argv[2]);
      taken++;
    }
  }
  EXPECT_EQ_INT(taken, 0);
  argv[1] = (char *)"--seeds"; /* no value */
  EXPECT_EQ_INT(parse_in_child(argv, 2, NULL), 1);
  argv[2] = (char *)"7"; /* the control: a good one */
  EXPECT_EQ_INT(parse_in_child(argv, 3, NULL), 0);
}

/* --help exits 0 and prints every row with the default it has in the code. */
TEST(help_prints_each_option_and_its_default) {
  const char *path = TEST_OUT "/help.txt";
  char *argv[] = {"train_stress", "--help"}, line[512], want[64];
  int seen_tau = 0, seen_steps = 0, seen_hidden = 0, seen_help = 0;
  FILE *f;
  demo_mkdir(TEST_OUT);
  EXPECT_EQ_INT(parse_in_child(argv, 2, path), 0);
  REQUIRE(f = fopen(path, "r"));
  snprintf(want, sizeof want, "(default %g)",
           gnmr_config_default().ratio_threshold);
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "--tau-r X") && strstr(line, want)) seen_tau = 1;
    if (strstr(line, "--steps N") && strstr(line, "(default 1000)"))
      seen_steps = 1;
    if (strstr(line, "--hidden A,B,C") && strstr(line, "(default 256,128,64)"))
      seen_hidden = 1;
    if (strstr(line, "--help")) seen_help = 1;
  }
  fclose(f);
  EXPECT(seen_tau && seen_steps && seen_hidden && seen_help);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(svg_checks_catch_unreadable_pictures),
      CHECK_CASE(e4m3_known_values),
      CHECK_CASE(e5m2_known_values),
      CHECK_CASE(e2m1_known_values),
      CHECK_CASE(stale_scale_saturates_over_and_flushes_under),
      CHECK_CASE(quantizers_match_value_tables),
      CHECK_CASE(delayed_scaling_saturates_a_burst),
      CHECK_CASE(mlp_gradients_match_finite_differences),
      CHECK_CASE(loss_plot_range_survives_a_spike),
      CHECK_CASE(loss_plot_legend_names_a_curve_drawn_on_another),
      CHECK_CASE(demo_runs_end_to_end),
      CHECK_CASE(served_evaluation_uses_the_quantized_forward),
      CHECK_CASE(gstab_bounds_a_spike_by_the_history_and_passes_calm_norms),
      CHECK_CASE(spam_clips_the_entries_over_the_threshold_and_resets_at_500),
      CHECK_CASE(gstab_and_spam_run_end_to_end),
      CHECK_CASE(persist2_admits_only_a_risk_that_persists),
      CHECK_CASE(band_admits_what_leaves_the_units_own_band),
      CHECK_CASE(bucket_bounds_a_units_admissions),
      CHECK_CASE(options_land_where_the_table_says),
      CHECK_CASE(options_refuse_bad_values),
      CHECK_CASE(help_prints_each_option_and_its_default),
  };
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
