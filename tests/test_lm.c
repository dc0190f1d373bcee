/* test_lm.c - the language-model demo (examples/train_lm.c): every layer's
   backward pass against central differences, thread-count independence, the
   fortune reader and a short end-to-end run that must write well-formed
   files. Built twice: with -DLM_DOUBLE (the model in double) it runs the
   gradient check; without (the demo's own float build), the rest. */
#define TRAIN_LM_NO_MAIN
#include "../examples/train_lm.c"
#include "check.h"
#include "svg_check.h"

/* ---- gradients vs central differences (double build) ----------------------
 */

#ifdef LM_DOUBLE
/* Every parameter of a small model: the analytic gradient against
   (L(p + h) - L(p - h)) / 2h, in double. Covers the embeddings, both
   LayerNorms of each block and the final one, attention (through qkv),
   GELU, every linear unit and the cross-entropy. */
TEST(every_layer_backward_matches_central_differences) {
  lm_shape s = {8, 2, 2, 5, 2};
  lm_model m;
  lm_path paths[LM_MAX_UNITS];
  demo_rng r = {7};
  uint8_t tok[10], tgt[10];
  size_t i;
  int j, bad = 0, checked = 0, nonzero = 0;
  double worst = 0;
  lm_model_init(&m, s, &r);
  memset(paths, 0, sizeof paths);
  /* Larger weights than the GPT-2 init, so every nonlinearity bends. */
  for (i = 0; i < m.n_params; i++)
    m.params[i] = (lm_real)(0.3 * demo_normal(&r));
  for (j = 0; j < m.n_tensors; j++)
    if (m.tensors[j].unit < 0 && !m.tensors[j].decay) /* LayerNorm w, b */
      for (i = 0; i < m.tensors[j].n / 2; i++)
        m.params[m.tensors[j].off + i] += 1;
  for (j = 0; j < 10; j++) {
    tok[j] = (uint8_t)(j < 5 ? 65 + j : 70 + (j * 7) % 5);
    tgt[j] = (uint8_t)(66 + (j * 3) % 6);
  }
  lm_forward(&m, tok, tgt, paths);
  lm_backward(&m);
  for (j = 0; j < m.n_tensors; j++) {
    const lm_tensor *t = &m.tensors[j];
    for (i = 0; i < t->n; i++) {
      lm_real *p = &m.params[t->off + i], keep = *p;
      double g = m.grads[t->off + i], h = 1e-5, lp, lm, fd, err;
      *p = keep + h;
      lp = lm_forward(&m, tok, tgt, paths);
      *p = keep - h;
      lm = lm_forward(&m, tok, tgt, paths);
      *p = keep;
      fd = (lp - lm) / (2 * h);
      err = fabs(fd - g) / (1e-8 + fabs(fd));
      checked++;
      nonzero += fabs(g) > 1e-6;
      if (fabs(fd - g) > 1e-8 + 1e-6 * fabs(fd)) {
        if (bad < 5)
          printf("  tensor %d param %zu: analytic %.10g, central diff %.10g\n",
                 j, i, g, fd);
        bad++;
      }
      if (fabs(fd) > 1e-6 && err > worst) worst = err;
    }
  }
  printf("  %d parameters, %d with a gradient above 1e-6, worst relative "
         "error %.2g\n",
         checked, nonzero, worst);
  EXPECT_EQ_INT((size_t)checked, m.n_params);
  EXPECT(nonzero > 1000); /* not a check of zeros */
  EXPECT_EQ_INT(bad, 0);
  lm_model_free(&m);
}

/* The check can fail: a wrong backward (the GELU derivative off by 1%) is
   caught. */
TEST(gradient_check_catches_a_wrong_gelu_derivative) {
  lm_real x[3] = {(lm_real)-0.7, (lm_real)0.2, (lm_real)1.3}, y[3], dx[3],
          one[3] = {1, 1, 1};
  int i, bad = 0;
  lm_gelu_backward(one, x, 3, dx);
  for (i = 0; i < 3; i++) {
    lm_real keep = x[i];
    double h = 1e-6, lp, lm;
    x[i] = keep + h;
    lm_gelu_forward(x, 3, y);
    lp = y[i];
    x[i] = keep - h;
    lm_gelu_forward(x, 3, y);
    lm = y[i];
    x[i] = keep;
    EXPECT_NEAR(dx[i], (lp - lm) / (2 * h), 1e-8);
    bad += fabs(dx[i] * 1.01 - (lp - lm) / (2 * h)) > 1e-8;
  }
  EXPECT_EQ_INT(bad, 3);
}
#else

/* ---- threads (the demo's own float build) -------------------------------- */

/* Deterministic text: words from a small list, sentences, "%" lines. */
static void make_text(lm_text *t, size_t n, uint64_t seed) {
  static const char *words[] = {"the", "cat", "sat", "on", "a",  "mat",
                                "and", "dog", "ran", "to", "it", "fast"};
  demo_rng r;
  size_t cap = 0;
  r.s = seed;
  memset(t, 0, sizeof *t);
  while (t->n < n) {
    const char *w = words[demo_below(&r, 12)];
    lm_text_add(t, &cap, w, strlen(w));
    lm_text_add(t, &cap, demo_below(&r, 8) ? " " : ".\n",
                demo_below(&r, 8) ? 1 : 2);
  }
}

static lm_opts small_opts(void) {
  char *argv[] = {"train_lm"};
  lm_opts o;
  lm_parse(&o, 1, argv);
  o.shape.C = 16;
  o.shape.L = 2;
  o.shape.nh = 2;
  o.shape.T = 16;
  o.shape.B = 3; /* odd sizes: uneven splits between threads */
  o.steps = 60;
  o.eval_seqs = 6;
  o.stress = 100;
  o.quiet = 1;
  return o;
}

/* The same run on 1, 2 and 3 threads: the same bits (final parameters,
   every step's loss, validation loss), on the low-precision path with
   injected faults and with GNMR deciding. */
TEST(thread_count_does_not_change_a_bit) {
  lm_opts o = small_opts();
  lm_text train, val;
  demo_event ev[LM_MAX_EVENTS];
  int n_ev, a, t;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  n_ev = lm_make_events(o.stress, o.steps, &o.shape, 1, ev, LM_MAX_EVENTS);
  REQUIRE(n_ev == 6);
  for (a = 0; a < LM_N_ARMS; a++) {
    lm_result r[3];
    for (t = 0; t < 3; t++) {
      lm_threads = t + 1;
      r[t] = lm_train(&o, &LM_ARMS[a], 1, &train, &val, ev, n_ev, NULL);
    }
    for (t = 1; t < 3; t++) {
      EXPECT(r[t].param_hash == r[0].param_hash);
      EXPECT_EQ_BITS(r[t].val_bpb, r[0].val_bpb);
      EXPECT(memcmp(r[t].loss, r[0].loss, sizeof(float) * (size_t)o.steps) ==
             0);
    }
    EXPECT(isfinite(r[0].val_bpb) && r[0].val_bpb < 8.0);
    for (t = 0; t < 3; t++) free(r[t].loss);
  }
  lm_threads = 2;
  free(train.bytes);
  free(val.bytes);
}

/* The arms differ where they must: lowp is not f32 (else nothing is
   quantized), and a different seed changes the run. */
TEST(arms_and_seeds_differ) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result f, l, f2;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.steps = 10;
  f = lm_train(&o, &LM_ARMS[0], 1, &train, &val, NULL, 0, NULL);
  l = lm_train(&o, &LM_ARMS[1], 1, &train, &val, NULL, 0, NULL);
  f2 = lm_train(&o, &LM_ARMS[0], 2, &train, &val, NULL, 0, NULL);
  EXPECT(f.param_hash != l.param_hash);
  EXPECT(f.param_hash != f2.param_hash);
  EXPECT(f.loss[0] != l.loss[0]); /* quantized from the first step */
  free(f.loss), free(l.loss), free(f2.loss);
  free(train.bytes);
  free(val.bytes);
}

/* ---- data and end to end -------------------------------------------------
 */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

TEST(fortunes_split_by_fortune) {
  lm_text tr, va;
  REQUIRE(system("mkdir -p build/test_lm_data") == 0);
  /* Fortunes 0..4 in "a", 5..6 in "b"; 0 goes to validation (k % 20). */
  write_file("build/test_lm_data/a",
             "zero\n%\none\n%\ntwo\n%\nthree\n%\nfour\n");
  write_file("build/test_lm_data/b", "five\n%\nsix\n");
  write_file("build/test_lm_data/a.dat", "not text\n");
  lm_load_fortunes("build/test_lm_data", &tr, &va);
  REQUIRE(tr.bytes && va.bytes);
  EXPECT(va.n == 5 && memcmp(va.bytes, "zero\n", 5) == 0);
  EXPECT(tr.n == strlen("one\ntwo\nthree\nfour\nfive\nsix\n") &&
         memcmp(tr.bytes, "one\ntwo\nthree\nfour\nfive\nsix\n", tr.n) == 0);
  free(tr.bytes);
  free(va.bytes);
}

static int count_lines(const char *path, const char *header) {
  FILE *f = fopen(path, "r");
  char line[512];
  int n = 0;
  if (!f) return -1;
  if (!fgets(line, sizeof line, f) || strcmp(line, header) != 0) n = -1000;
  while (fgets(line, sizeof line, f)) n++;
  fclose(f);
  return n;
}

TEST(demo_runs_end_to_end) {
  lm_text t;
  FILE *f;
  char *argv[] = {"train_lm",
                  "--data",
                  "build/test_lm_data/e2e",
                  "--steps",
                  "30",
                  "--dim",
                  "16",
                  "--layers",
                  "1",
                  "--heads",
                  "2",
                  "--ctx",
                  "16",
                  "--batch",
                  "2",
                  "--eval",
                  "4",
                  "--stress",
                  "100",
                  "--seeds",
                  "2",
                  "--out",
                  "build/test_lm_out",
                  "--quiet"};
  size_t k;
  int a, n_default = 0;
  REQUIRE(system("mkdir -p build/test_lm_data/e2e") == 0);
  make_text(&t, 30000, 3);
  f = fopen("build/test_lm_data/e2e/text", "wb");
  REQUIRE(f != NULL);
  for (k = 0; k < t.n; k++) /* a sentence per fortune */
    if (t.bytes[k] == '.')
      fputs("\n%", f);
    else
      fputc(t.bytes[k], f);
  fclose(f);
  free(t.bytes);
  for (a = 0; a < LM_N_ARMS; a++) n_default += !LM_ARMS[a].extra;
  REQUIRE(n_default >= 5 && n_default < LM_N_ARMS);
  REQUIRE(train_lm_main((int)(sizeof argv / sizeof argv[0]), argv) == 0);
  EXPECT_EQ_INT(count_lines("build/test_lm_out/summary.csv",
                            "setting,arm,seed,format,lr,stress,steps,val_bpb,"
                            "recovery_fraction,loss_spikes,diverged,seconds,"
                            "overhead_pct\n"),
                2 * n_default);
  EXPECT_EQ_INT(
      count_lines("build/test_lm_out/loss.csv", "arm,seed,step,loss_bpb\n"),
      2 * n_default * 30);
  EXPECT_EQ_INT(count_lines("build/test_lm_out/trace.csv",
                            "step,unit,name,norm,ratio,delta,action\n"),
                30 * 5);
  EXPECT_EQ_INT(count_lines("build/test_lm_out/stress.csv",
                            "seed,start,steps,unit,name,kind,where\n"),
                2 * 3);
  EXPECT(file_starts_with("build/test_lm_out/loss.svg", "<svg"));
  EXPECT(file_starts_with("build/test_lm_out/recovery.svg", "<svg"));
  EXPECT_EQ_INT(svg_geometry_errors("build/test_lm_out/loss.svg"), 0);
  EXPECT_EQ_INT(svg_geometry_errors("build/test_lm_out/recovery.svg"), 0);
}
#endif

int main(int argc, char **argv) {
  static const check_case cases[] = {
#ifdef LM_DOUBLE
      CHECK_CASE(every_layer_backward_matches_central_differences),
      CHECK_CASE(gradient_check_catches_a_wrong_gelu_derivative),
#else
      CHECK_CASE(thread_count_does_not_change_a_bit),
      CHECK_CASE(arms_and_seeds_differ),
      CHECK_CASE(fortunes_split_by_fortune),
      CHECK_CASE(demo_runs_end_to_end),
#endif
  };
#ifdef LM_DOUBLE
  (void)train_lm_main; /* the whole program runs in the float build */
#endif
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
