/* test_lm.c - the language-model demo (lab/train_lm.c): every layer's
   backward pass against central differences, thread-count independence, the
   fortune reader and a short end-to-end run that must write well-formed
   files. Built twice: with -DLM_DOUBLE (the model in double) it runs the
   gradient check; without (the demo's own float build), the rest. */
#define TRAIN_LM_NO_MAIN
#include "../lab/train_lm.c"
#include "check.h"
#include "svg_check.h"
#include "child.h"

/* Where this test writes (TEST_OUT/out, TEST_OUT/data): a directory of its
   own (the Makefile passes "<program>.out"), so the test programs can run
   side by side (tests/run.sh). */
#ifndef TEST_OUT
#define TEST_OUT "build/test_lm"
#endif

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
    /* the threads split the GEMMs alike for every arm: under the
       sanitizers (check_quick) a sample of arms, the first two included */
    if (check_quick() && a > 1 && a % 12 != 0) continue;
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

/* The served evaluation: each unit's forward on the path its last step ran.
   A unit on the f32 path, or whose forward GEMM ran f32, is served in f32;
   a unit whose forward GEMM ran on the format keeps it (a backward GEMM on
   f32 does not change that); faults and signals are dropped. */
TEST(served_paths_follow_the_last_step) {
  const lp_format *f = lp_format_find("e2m1");
  lm_path last[4], served[4];
  memset(last, 0, sizeof last);
  last[0].fmt = f;                                 /* on the format */
  last[1].fmt = NULL;                              /* high: the f32 path */
  last[2].fmt = f, last[2].hf_gemms = LM_GEMM_FWD; /* forward placed */
  last[3].fmt = f, last[3].hf_gemms = LM_GEMM_DGRAD | LM_GEMM_WGRAD;
  last[0].outlier_gain = 8, last[0].stale = 1, last[0].measure = 1;
  lm_served_paths(last, 4, served);
  EXPECT(served[0].fmt == f && served[0].outlier_gain == 0 &&
         !served[0].stale && !served[0].measure);
  EXPECT(served[1].fmt == NULL);
  EXPECT(served[2].fmt == NULL);
  EXPECT(served[3].fmt == f && served[3].hf_gemms == 0);
}

/* The served evaluation of lowp runs the quantized forward: it differs from
   the f32 path's; the f32 arm is served on the f32 path, the same bits; a
   unit that ran high on the last step (the late switch: every unit) is
   served in f32, so the run's served figure is its f32-path one. */
TEST(served_evaluation_uses_the_quantized_forward) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result f, l, late, latedw;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.steps = 20;
  o.stress = 0;
  o.fmt = lp_format_find("e2m1");
  f = lm_train(&o, &LM_ARMS[arm_find("f32")], 1, &train, &val, NULL, 0, NULL);
  l = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, NULL, 0, NULL);
  late = lm_train(&o, &LM_ARMS[arm_find("place-late-10")], 1, &train, &val,
                  NULL, 0, NULL);
  latedw = lm_train(&o, &LM_ARMS[arm_find("place-latedw-20")], 1, &train, &val,
                    NULL, 0, NULL);
  EXPECT_EQ_BITS(f.val_bpb_served, f.val_bpb);
  EXPECT(isfinite(l.val_bpb_served) && l.val_bpb_served != l.val_bpb);
  EXPECT_EQ_BITS(late.val_bpb_served, late.val_bpb);
  /* the backward GEMMs high at the end: the forward stays on the format */
  EXPECT(isfinite(latedw.val_bpb_served) &&
         latedw.val_bpb_served != latedw.val_bpb);
  printf("  f32 %.4f; lowp %.4f served %.4f; late-10 %.4f; latedw-20 %.4f "
         "served %.4f\n",
         f.val_bpb, l.val_bpb, l.val_bpb_served, late.val_bpb, latedw.val_bpb,
         latedw.val_bpb_served);
  free(f.loss), free(l.loss), free(late.loss), free(latedw.loss);
  free(train.bytes);
  free(val.bytes);
}

/* lowp-jit: served on each tensor's own amax, its training lowp's, bit for
   bit; on E2M1 per tensor the served figure moves, on NVFP4 (a scale per
   block from the current amax anyway) it does not. lowp-srd: the input
   gradient reads stochastically rounded weights, so training differs from
   lowp's, and the forward does not (the first step's loss is lowp's). */
TEST(jit_serving_and_stochastic_dgrad_change_what_they_say) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result l, j, sr, nl, nj;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.steps = 12;
  o.stress = 0;
  o.fmt = lp_format_find("e2m1");
  l = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, NULL, 0, NULL);
  j = lm_train(&o, &LM_ARMS[arm_find(ARM_JIT_NAME)], 1, &train, &val, NULL, 0,
               NULL);
  sr = lm_train(&o, &LM_ARMS[arm_find(ARM_SRD_NAME)], 1, &train, &val, NULL, 0,
                NULL);
  EXPECT(j.param_hash == l.param_hash);
  EXPECT_EQ_BITS(j.val_bpb, l.val_bpb);
  EXPECT(isfinite(j.val_bpb_served) && j.val_bpb_served != l.val_bpb_served);
  EXPECT(sr.param_hash != l.param_hash);
  EXPECT_EQ_BITS(sr.loss[0], l.loss[0]);
  o.fmt = lp_format_find("nvfp4");
  nl = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, NULL, 0, NULL);
  nj = lm_train(&o, &LM_ARMS[arm_find(ARM_JIT_NAME)], 1, &train, &val, NULL, 0,
                NULL);
  EXPECT_EQ_BITS(nj.val_bpb_served, nl.val_bpb_served);
  printf("  e2m1 lowp served %.4f, jit %.4f; srd %.4f\n", l.val_bpb_served,
         j.val_bpb_served, sr.val_bpb_served);
  free(l.loss), free(j.loss), free(sr.loss), free(nl.loss), free(nj.loss);
  free(train.bytes);
  free(val.bytes);
}

/* Stochastic rounding (lm_round): each result is one of the two format
   values around x, the mean over draws is x (E2M1's grid, inside its
   range), a key of 0 rounds to nearest, and the draw is the value's own:
   the same key and index give the same result. */
TEST(stochastic_rounding_is_unbiased_between_neighbours) {
  const lp_format *f = lp_format_find("e2m1");
  static const float xs[] = {0.2f, 0.7f, 1.3f, 2.6f, 3.9f, 4.5f, -5.2f};
  size_t k, i;
  for (k = 0; k < sizeof xs / sizeof *xs; k++) {
    float x = xs[k], lo = -7, hi = 7;
    double sum = 0;
    const int n = 20000;
    static const float grid[] = {-6,   -4, -3,   -2, -1.5f, -1, -0.5f, 0,
                                 0.5f, 1,  1.5f, 2,  3,     4,  6}; /* E2M1's */
    for (i = 0; i + 1 < sizeof grid / sizeof *grid; i++) /* lo <= x < hi */
      if (grid[i] <= x && x < grid[i + 1]) lo = grid[i], hi = grid[i + 1];
    for (i = 0; i < (size_t)n; i++) {
      float q = lm_round(x, f, 12345, i);
      EXPECT(q == lo || q == hi);
      EXPECT_EQ_BITS(q, lm_round(x, f, 12345, i));
      sum += q;
    }
    EXPECT_NEAR(sum / n, x, 0.03);
    EXPECT_EQ_BITS(lm_round(x, f, 0, 7), lp_quantize(x, f));
  }
  EXPECT_EQ_BITS(lm_round(9.0f, f, 5, 1), 6.0f); /* saturates */
  EXPECT_EQ_BITS(lm_round(0.0f, f, 5, 1), 0.0f);
}

/* ---- placement -----------------------------------------------------------
 */

static int placed(const lm_placer *pl, int u) { return pl->fixed[u]; }

/* The rules' sets on the default model (2 blocks: qkv 3/28 of the FLOPs,
   attn_out 1/28, MLP up and down and the head 4/28 each). A static rule
   takes units in its order while they fit the budget. */
TEST(placement_rules_choose_their_units_within_the_budget) {
  lm_opts o = small_opts();
  lm_model m;
  lm_placer pl;
  demo_rng r = {1};
  int u, step, hf_unit_steps;
  double hf, total = 0;
  o.shape.C = 64;
  lm_model_init(&m, o.shape, &r);
  for (u = 0; u < m.n_units; u++) total += lm_unit_flops(&m.s, u);
  EXPECT_NEAR(lm_unit_flops(&m.s, 8) / total, 4.0 / 28, 1e-12);
  /* NVFP4-style at 20%: the head, then the last block back to front:
     b1.mlp_down and mlp_up no longer fit, attn_out does. */
  lm_place_init(&pl, "place-nvfp4-20", &m, 1000, 1);
  for (u = 0; u < m.n_units; u++)
    EXPECT_EQ_INT(placed(&pl, u), u == 8 || u == 5);
  EXPECT_EQ_INT(pl.late_from, 1000);
  /* Megatron-style at 20%: the first block's qkv and attn_out, then the
     last block's attn_out. */
  lm_place_init(&pl, "place-firstlast-20", &m, 1000, 1);
  for (u = 0; u < m.n_units; u++)
    EXPECT_EQ_INT(placed(&pl, u), u == 0 || u == 1 || u == 5);
  /* The late switch: every unit for the last 10% of steps. */
  lm_place_init(&pl, "place-late-10", &m, 1000, 1);
  EXPECT_EQ_INT(pl.late_from, 900);
  lm_place_step(&pl, 899);
  EXPECT_EQ_INT(pl.hf[8], 0);
  lm_place_step(&pl, 900);
  for (u = 0; u < m.n_units; u++) EXPECT_EQ_INT(pl.hf[u], LM_GEMM_ALL);
  /* per GEMM: the forward GEMMs alone cost a third, so they switch for
     the last 30% of steps at the same FLOPs */
  lm_place_init(&pl, "place-latef-10", &m, 1000, 1);
  EXPECT_EQ_INT(pl.late_from, 700);
  lm_place_step(&pl, 700);
  for (u = 0; u < m.n_units; u++) EXPECT_EQ_INT(pl.hf[u], LM_GEMM_FWD);
  lm_place_init(&pl, "place-latefd-10", &m, 1000, 1);
  EXPECT_EQ_INT(pl.late_from, 850);
  /* The combination spends the budget exactly: b1.attn_out (1/28) in
     space, the rest of 10% late. */
  lm_place_init(&pl, "place-nvfp4-late-10", &m, 1000, 1);
  for (hf = 0, step = 0; step < 1000; step++) {
    lm_place_step(&pl, step);
    for (u = 0; u < m.n_units; u++)
      hf += (pl.hf[u] != 0) * lm_unit_flops(&m.s, u) / total;
  }
  EXPECT_NEAR(hf / 1000, 0.10, 0.001);
  EXPECT_EQ_INT(placed(&pl, 5), 1);
  /* Random draws differ by draw and by seed, and fit the budget. */
  {
    lm_placer a, b, c;
    int same_ab = 1, same_ac = 1;
    lm_place_init(&a, "place-rand1-20", &m, 1000, 1);
    lm_place_init(&b, "place-rand2-20", &m, 1000, 1);
    lm_place_init(&c, "place-rand1-20", &m, 1000, 2);
    for (hf = 0, u = 0; u < m.n_units; u++) {
      same_ab &= a.fixed[u] == b.fixed[u];
      same_ac &= a.fixed[u] == c.fixed[u];
      hf += a.fixed[u] * lm_unit_flops(&m.s, u) / total;
    }
    EXPECT(!same_ab || !same_ac);
    EXPECT(hf > 0 && hf <= 0.20);
  }
  /* The token bucket of the measured rules: every unit fired from step 0
     still spends at most the budget, at every step of the run. */
  lm_place_init(&pl, "place-upd-max-10", &m, 1000, 1);
  for (u = 0; u < m.n_units; u++) pl.fired[pl.n_fired++] = u;
  for (hf = 0, hf_unit_steps = 0, step = 0; step < 1000; step++) {
    lm_place_step(&pl, step);
    for (u = 0; u < m.n_units; u++) {
      hf += (pl.hf[u] != 0) * lm_unit_flops(&m.s, u) / total;
      hf_unit_steps += pl.hf[u] != 0;
    }
    EXPECT(hf <= 0.10 * (step + 1) + 1e-9);
  }
  EXPECT(hf > 0.09 * 1000 && hf_unit_steps > 0);
  /* The late switch of some units only: the attention's input gradients
     (8/28 of the FLOPs, a third of it 9.5%: the whole run), the MLPs'
     (16/28: the last 52.5% of the steps) and the head's backward GEMMs
     (2/3 of 4/28: the whole run); no other unit, and never the forward. */
  {
    static const char *const arm[3] = {
        "place-latedattn-10", "place-latedmlp-10", "place-latedwhead-10"};
    static const int late_from[3] = {0, 475, 0};
    static const double want[3] = {8.0 / 28 / 3, 0.10, 4.0 / 28 * 2 / 3};
    int k;
    for (k = 0; k < 3; k++) {
      lm_place_init(&pl, arm[k], &m, 1000, 1);
      EXPECT_EQ_INT(pl.late_from, late_from[k]);
      for (hf = 0, step = 0; step < 1000; step++) {
        lm_place_step(&pl, step);
        for (u = 0; u < m.n_units; u++) {
          int cls = lm_unit_class(&m.s, u), in = k == 0   ? cls & LM_CLASS_ATTN
                                                 : k == 1 ? cls & LM_CLASS_MLP
                                                          : u == 8;
          EXPECT(!(pl.hf[u] & LM_GEMM_FWD));
          if (!in) EXPECT_EQ_INT(pl.hf[u], 0);
          hf += lm_gemm_count(pl.hf[u]) / 3.0 * lm_unit_flops(&m.s, u) / total;
        }
      }
      EXPECT_NEAR(hf / 1000, want[k], 0.001);
    }
  }
  lm_model_free(&m);
}

/* Placement per GEMM: a unit on the low-cost path with all three GEMMs on
   f32 computes what the f32 path computes, bit for bit (y, dx, dW, db);
   with the forward GEMM alone on f32, y is the f32 path's and the
   gradients are not (they read the quantized x and W). */
TEST(a_gemm_on_f32_reads_the_unquantized_inputs) {
  lm_opts o = small_opts();
  lm_model m;
  demo_rng r = {3};
  const int n = o.shape.B * o.shape.T;
  lm_linear *L;
  lm_real *x, *dy, *y[3], *dx[3], *dw[3], *db[3];
  size_t nx, ny, nw, i;
  int k;
  lm_model_init(&m, o.shape, &r);
  L = &m.unit[2]; /* b0.mlp_up: C x 4C */
  nx = (size_t)n * (size_t)L->in, ny = (size_t)n * (size_t)L->out;
  nw = (size_t)L->in * (size_t)L->out;
  x = DEMO_CALLOC(nx, lm_real);
  dy = DEMO_CALLOC(ny, lm_real);
  for (i = 0; i < nx; i++) x[i] = (lm_real)(demo_uniform(&r) - 0.5);
  for (i = 0; i < ny; i++) dy[i] = (lm_real)(demo_uniform(&r) - 0.5);
  for (k = 0; k < 3; k++) { /* f32 path; low, all on f32; low, forward */
    lm_path p;
    memset(&p, 0, sizeof p);
    if (k > 0) p.fmt = lp_format_find("e2m1");
    p.hf_gemms = k == 1 ? LM_GEMM_ALL : LM_GEMM_FWD;
    y[k] = DEMO_CALLOC(ny, lm_real);
    dx[k] = DEMO_CALLOC(nx, lm_real);
    dw[k] = DEMO_CALLOC(nw, lm_real);
    db[k] = DEMO_CALLOC((size_t)L->out, lm_real);
    lm_linear_forward(L, x, n, &p, y[k]);
    lm_linear_backward(L, dy, n, dx[k]);
    memcpy(dw[k], L->dw, nw * sizeof *L->dw);
    memcpy(db[k], L->db, (size_t)L->out * sizeof *L->db);
  }
  EXPECT(memcmp(y[0], y[1], ny * sizeof **y) == 0);
  EXPECT(memcmp(dx[0], dx[1], nx * sizeof **dx) == 0);
  EXPECT(memcmp(dw[0], dw[1], nw * sizeof **dw) == 0);
  EXPECT(memcmp(db[0], db[1], (size_t)L->out * sizeof **db) == 0);
  EXPECT(memcmp(y[0], y[2], ny * sizeof **y) == 0);
  EXPECT(memcmp(dx[0], dx[2], nx * sizeof **dx) != 0);
  EXPECT(memcmp(dw[0], dw[2], nw * sizeof **dw) != 0);
  for (k = 0; k < 3; k++) free(y[k]), free(dx[k]), free(dw[k]), free(db[k]);
  free(x), free(dy);
  lm_model_free(&m);
}

/* NVFP4-style block scaling: each 1x16 block has its own scale, so a block
   of small values keeps its resolution beside a block of large ones (one
   scale per tensor flushes it); the weight's blocks run down its columns. */
TEST(block_scales_are_per_block_along_the_inner_dimension) {
  const lp_format *nv = lp_format_find("nvfp4");
  lm_real x[2 * 32], q[2 * 32], w[32 * 2], wq[32 * 2];
  int i;
  REQUIRE(nv != NULL && nv->block == 16);
  /* Row 0: a block of 1000s, then a block of 1s; row 1 the other way. */
  for (i = 0; i < 64; i++)
    x[i] = (lm_real)(((i % 32 < 16) == (i < 32) ? 1000.0 : 1.0) *
                     (1 + (i % 7) / 7.0));
  lm_quantize_blocks(x, 2, 32, 0, nv, lm_amax(x, 64), 0, q);
  for (i = 0; i < 64; i++)
    EXPECT(fabs((double)(q[i] - x[i])) <= 0.3 * fabs((double)x[i]));
  /* The weight (32 x 2), x transposed: the same blocks down its columns. */
  for (i = 0; i < 64; i++) w[(i % 32) * 2 + i / 32] = x[i];
  lm_quantize_blocks(w, 32, 2, 1, nv, lm_amax(w, 64), 0, wq);
  for (i = 0; i < 64; i++) EXPECT(wq[(i % 32) * 2 + i / 32] == q[i]);
  /* Blocks across the weight's rows mix both magnitudes: the 1s are lost. */
  lm_quantize_blocks(w, 32, 2, 0, nv, lm_amax(w, 64), 0, wq);
  EXPECT(wq[1] == 0 && w[1] != 0);
}

/* hf_flops: the share of the units' GEMM FLOPs on the f32 path, exact for
   the late switch, 1 for f32, 0 for lowp; the placement arms run end to
   end and differ from lowp. */
TEST(hf_flops_counts_the_units_gemm_flops_on_the_f32_path) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result f, l, late, upd;
  int u;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.stress = 0;
  o.steps = 100;
  f = lm_train(&o, &LM_ARMS[arm_find("f32")], 1, &train, &val, NULL, 0, NULL);
  l = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, NULL, 0, NULL);
  late = lm_train(&o, &LM_ARMS[arm_find("place-late-10")], 1, &train, &val,
                  NULL, 0, NULL);
  upd = lm_train(&o, &LM_ARMS[arm_find("place-upd-max-20")], 1, &train, &val,
                 NULL, 0, NULL);
  EXPECT_NEAR(f.hf_flops, 1.0, 1e-12);
  EXPECT_NEAR(l.hf_flops, 0.0, 1e-12);
  EXPECT_NEAR(late.hf_flops, 0.10, 1e-12);
  EXPECT_NEAR(late.recovery_fraction, 0.10, 1e-12);
  for (u = 0; u < 9; u++) EXPECT_EQ_INT(late.unit_first_hf[u], 90);
  EXPECT(late.param_hash != l.param_hash);
  EXPECT(upd.hf_flops <= 0.20 + 1e-12);
  { /* per GEMM: the forward GEMMs for the last 30%, a tenth of the FLOPs;
       the library's placer told the plan spends the same */
    lm_result fw = lm_train(&o, &LM_ARMS[arm_find("place-latef-10")], 1, &train,
                            &val, NULL, 0, NULL),
              pf = lm_train(&o, &LM_ARMS[arm_find("place-planf-10")], 1, &train,
                            &val, NULL, 0, NULL);
    EXPECT_NEAR(fw.hf_flops, 0.10, 1e-12);
    EXPECT_NEAR(fw.recovery_fraction, 0.30, 1e-12);
    for (u = 0; u < 9; u++) EXPECT_EQ_INT(fw.unit_first_hf[u], 70);
    EXPECT(fw.param_hash != l.param_hash && fw.param_hash != late.param_hash);
    for (u = 0; u < 9; u++) EXPECT_EQ_INT(pf.unit_first_hf[u], 70);
    EXPECT(pf.hf_flops > 0.099 && pf.hf_flops <= 0.10 + 1e-12);
    free(fw.loss), free(pf.loss);
  }
  free(f.loss), free(l.loss), free(late.loss), free(upd.loss);
  free(train.bytes);
  free(val.bytes);
}

/* place-gnmr-B is the prototype upd-late's rule with the library's
   decisions: the same run, bit for bit, fired or not (tests/test_place.c
   holds the two rules to each other on synthetic signals). A short run at
   FP4 with a fast decay fires: the library's placer, and the run's hf
   FLOPs within the budget. */
TEST(library_placer_runs_as_the_prototype) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result a, b;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.stress = 0;
  o.steps = 300;
  o.fmt = lp_format_find("e2m1");
  o.lr = 4e-3;
  o.global_clip = 1.0;
  REQUIRE(o.fmt != NULL);
  a = lm_train(&o, &LM_ARMS[arm_find("place-upd-late-10")], 1, &train, &val,
               NULL, 0, NULL);
  b = lm_train(&o, &LM_ARMS[arm_find("place-gnmr-10")], 1, &train, &val, NULL,
               0, NULL);
  printf("  hf_flops %.4f / %.4f\n", a.hf_flops, b.hf_flops);
  EXPECT(a.param_hash == b.param_hash);
  EXPECT_EQ_BITS(a.val_bpb, b.val_bpb);
  EXPECT_EQ_BITS(a.hf_flops, b.hf_flops);
  EXPECT(b.hf_flops > 0 && b.hf_flops <= 0.10 + 1e-12);
  free(a.loss), free(b.loss);
  free(train.bytes);
  free(val.bytes);
}

/* --grad-format quantizes the low-cost path's output gradients only: lowp
   changes, f32 (every unit on the f32 path) does not, bit for bit. */
TEST(grad_format_touches_the_low_cost_path_only) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result f, l, fg, lg;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.stress = 0;
  o.steps = 20;
  o.fmt = lp_format_find("e2m1");
  f = lm_train(&o, &LM_ARMS[0], 1, &train, &val, NULL, 0, NULL);
  l = lm_train(&o, &LM_ARMS[1], 1, &train, &val, NULL, 0, NULL);
  o.grad_fmt = lp_format_find("e5m2");
  fg = lm_train(&o, &LM_ARMS[0], 1, &train, &val, NULL, 0, NULL);
  lg = lm_train(&o, &LM_ARMS[1], 1, &train, &val, NULL, 0, NULL);
  EXPECT(f.param_hash == fg.param_hash);
  EXPECT(l.param_hash != lg.param_hash);
  EXPECT(l.loss[0] == lg.loss[0]); /* the forward pass is the same */
  free(f.loss), free(l.loss), free(fg.loss), free(lg.loss);
  free(train.bytes);
  free(val.bytes);
}

/* The schedules: cosine from the peak to lr / 10; WSD flat until the last
   20% of steps, then linearly to lr / 10; linear to lr / 10; constant;
   the inverse square root from the warm-up's end. */
TEST(schedules_cosine_and_wsd) {
  lm_opts o = small_opts();
  o.steps = 1000;
  o.lr = 1.0;
  EXPECT_NEAR(lm_lr(&o, 0), 1.0 / 50, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 50), 1.0, 1e-12);
  EXPECT(lm_lr(&o, 500) < 0.6 && lm_lr(&o, 999) < 0.101);
  o.schedule = LM_SCHED_WSD;
  EXPECT_NEAR(lm_lr(&o, 50), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 799), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 900), 0.55, 1e-12);
  EXPECT(lm_lr(&o, 999) < 0.11);
}

TEST(schedules_linear_constant_invsqrt) {
  lm_opts o = small_opts();
  o.steps = 1000;
  o.lr = 1.0;
  o.schedule = LM_SCHED_LINEAR;
  EXPECT_NEAR(lm_lr(&o, 49), 1.0, 1e-12); /* the warm-up's last step */
  EXPECT_NEAR(lm_lr(&o, 50), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 525), 0.55, 1e-12); /* halfway down */
  EXPECT_NEAR(lm_lr(&o, 1000), 0.1, 1e-12);
  o.schedule = LM_SCHED_CONSTANT;
  EXPECT_NEAR(lm_lr(&o, 10), 11.0 / 50, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 999), 1.0, 1e-12);
  o.schedule = LM_SCHED_INVSQRT;
  EXPECT_NEAR(lm_lr(&o, 50), sqrt(50.0 / 51), 1e-12);
  EXPECT_NEAR(lm_lr(&o, 199), 0.5, 1e-12);
  /* Without a warm-up: the peak from step 0, the decay from the default
     warm-up's end (5% of the steps). */
  o.warmup = 0;
  o.warmup_pct = 0;
  EXPECT_NEAR(lm_lr(&o, 0), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 49), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 199), 0.5, 1e-12);
  o.schedule = LM_SCHED_COSINE;
  EXPECT_NEAR(lm_lr(&o, 0), 1.0, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 500), 0.55, 1e-12);
  /* A warm-up in steps, and in percent of them. */
  o.warmup = 200;
  EXPECT_NEAR(lm_lr(&o, 99), 0.5, 1e-12);
  EXPECT_NEAR(lm_lr(&o, 199), 1.0, 1e-12);
  o.warmup = 10;
  o.warmup_pct = 1;
  EXPECT_EQ_INT(lm_warmup_steps(&o), 100);
  EXPECT_NEAR(lm_lr(&o, 49), 0.5, 1e-12);
  o.steps = 5; /* 5% of 5 steps: still one step of warm-up */
  o.warmup = 5;
  EXPECT_EQ_INT(lm_warmup_steps(&o), 1);
}

/* SGD and Lion train (the loss falls), and each is its own run: not
   AdamW's, not each other's. */
TEST(optimizers_sgd_and_lion_train) {
  lm_opts o = small_opts();
  lm_text train, val;
  lm_result r[3];
  static const double lrs[3] = {2e-3, 0.3, 2e-3};
  int k;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.stress = 0;
  o.steps = 80;
  for (k = 0; k < 3; k++) {
    o.optimizer = k;
    o.lr = lrs[k];
    r[k] = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, NULL, 0,
                    NULL);
    printf("  %s: loss %.3f -> %.3f nats, val %.3f bits/byte\n",
           k == LM_OPT_ADAMW ? "adamw"
           : k == LM_OPT_SGD ? "sgd"
                             : "lion",
           (double)r[k].loss[0], (double)r[k].loss[o.steps - 1], r[k].val_bpb);
    EXPECT(r[k].loss[o.steps - 1] < 0.8 * r[k].loss[0]);
    EXPECT(isfinite(r[k].val_bpb) && r[k].val_bpb < 8.0);
  }
  EXPECT(r[0].param_hash != r[1].param_hash);
  EXPECT(r[0].param_hash != r[2].param_hash);
  EXPECT(r[1].param_hash != r[2].param_hash);
  for (k = 0; k < 3; k++) free(r[k].loss);
  free(train.bytes);
  free(val.bytes);
}

/* ---- the command line ------------------------------------------------------
 */

TEST(options_land_where_the_table_says) {
  char *argv[] = {"train_lm", "--optimizer", "lion", "--schedule",
                  "invsqrt",  "--warmup",    "10%",  "--lr",
                  "3e-4",     "--steps",     "400",  "--quiet"};
  char *argv2[] = {"train_lm",   "--optimizer", "sgd",
                   "--schedule", "linear",      "--warmup",
                   "0",          "--arms",      "f32,place-gnmr-10"};
  char *argv3[] = {"train_lm", "--schedule", "constant", "--warmup", "30"};
  lm_opts o;
  lm_parse(&o, (int)(sizeof argv / sizeof argv[0]), argv);
  EXPECT_EQ_INT(o.optimizer, LM_OPT_LION);
  EXPECT_EQ_INT(o.schedule, LM_SCHED_INVSQRT);
  EXPECT(o.warmup == 10 && o.warmup_pct == 1);
  EXPECT_EQ_INT(lm_warmup_steps(&o), 40);
  EXPECT(o.lr == 3e-4);
  lm_parse(&o, (int)(sizeof argv2 / sizeof argv2[0]), argv2);
  EXPECT_EQ_INT(o.optimizer, LM_OPT_SGD);
  EXPECT_EQ_INT(o.schedule, LM_SCHED_LINEAR);
  EXPECT_EQ_INT(lm_warmup_steps(&o), 0);
  EXPECT(o.n_arms == 2 && o.arms[1] == arm_find("place-gnmr-10"));
  lm_parse(&o, (int)(sizeof argv3 / sizeof argv3[0]), argv3);
  EXPECT_EQ_INT(o.schedule, LM_SCHED_CONSTANT);
  EXPECT(o.warmup == 30 && o.warmup_pct == 0);
  EXPECT_EQ_INT(o.optimizer, LM_OPT_ADAMW); /* untouched: the default */
  lm_parse(&o, 1, argv);                    /* the defaults */
  EXPECT(o.optimizer == LM_OPT_ADAMW && o.schedule == LM_SCHED_COSINE);
  EXPECT_EQ_INT(lm_warmup_steps(&o), 1500 / 20);
}

CHILD_PARSER(parse_in_child, lm_opts, lm_parse)

TEST(options_refuse_bad_values) {
  static const char *bad[][4] = {
      {"--optimizer", "adam", NULL, NULL},
      {"--optimizer", "", NULL, NULL},
      {"--schedule", "cos", NULL, NULL},
      {"--schedule", "invsqrt,", NULL, NULL},
      {"--warmup", "-1", NULL, NULL},
      {"--warmup", "x", NULL, NULL},
      {"--warmup", "%", NULL, NULL},
      {"--warmup", "5%%", NULL, NULL},
      {"--warmup", "51%", NULL, NULL},
      {"--warmup", "1500", NULL, NULL}, /* not fewer than the steps */
      {"--warmup", "10", "--steps", "10"},
      {"--shift", "1:40", "--optimizer", "sgd"},
      {"--arms", "spam", "--optimizer", "sgd"}, /* no second moment */
      {"--arms", "lowp,spam", "--optimizer", "lion"},
      {"--lr", "0", NULL, NULL},
  };
  char *argv[5];
  size_t k;
  int taken = 0, argc;
  argv[0] = (char *)"train_lm";
  for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    for (argc = 1; argc < 5 && bad[k][argc - 1]; argc++)
      argv[argc] = (char *)bad[k][argc - 1];
    if (parse_in_child(argv, argc, NULL) != 1) {
      fprintf(stderr, "  taken: %s %s\n", argv[1], argv[2]);
      taken++;
    }
  }
  EXPECT_EQ_INT(taken, 0);
  argv[1] = (char *)"--warmup"; /* no value */
  EXPECT_EQ_INT(parse_in_child(argv, 2, NULL), 1);
  argv[2] = (char *)"50%"; /* the controls: good ones */
  EXPECT_EQ_INT(parse_in_child(argv, 3, NULL), 0);
  argv[2] = (char *)"1499";
  EXPECT_EQ_INT(parse_in_child(argv, 3, NULL), 0);
  argv[1] = (char *)"--arms"; /* spam on AdamW, and gstab on SGD: good */
  argv[2] = (char *)"spam";
  EXPECT_EQ_INT(parse_in_child(argv, 3, NULL), 0);
  argv[2] = (char *)"gstab";
  argv[3] = (char *)"--optimizer";
  argv[4] = (char *)"sgd";
  EXPECT_EQ_INT(parse_in_child(argv, 5, NULL), 0);
}

/* --help exits 0 and prints each new option with its default. */
TEST(help_prints_each_option_and_its_default) {
  const char *path = TEST_OUT "/out/help.txt";
  char *argv[] = {"train_lm", "--help"}, text[16384];
  FILE *f;
  size_t n;
  demo_mkdir(TEST_OUT "/out");
  EXPECT_EQ_INT(parse_in_child(argv, 2, path), 0);
  REQUIRE(f = fopen(path, "r"));
  n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  EXPECT(strstr(text, "--optimizer adamw|sgd|lion") != NULL);
  EXPECT(strstr(text, "(default adamw)") != NULL);
  EXPECT(strstr(text, "--warmup N|P%") != NULL);
  EXPECT(strstr(text, "(default 5%)") != NULL);
  EXPECT(strstr(text, "--schedule cosine|wsd|linear|constant|invsqrt") != NULL);
  EXPECT(strstr(text, "(default cosine)") != NULL);
  EXPECT(strstr(text, "(default 0.002)") != NULL); /* --lr */
}

/* ---- the peer arms gstab and spam (lab/arms.h) ----------------------
 */

/* spam on the LM's AdamW: the clip takes exactly the entries with g^2 >
   5000 v to sign(g) sqrt(5000 v) (v = 0: left alone); at step 500, not
   499, every parameter's first and second moments are zeroed. */
TEST(spam_clips_the_entries_over_the_threshold_and_resets_at_500) {
  lm_opts o = small_opts();
  lm_model m;
  demo_rng r = {3};
  lm_real g[6] = {2, -3, 100, (lm_real)-2.2, 7, -7},
          v[6] = {
              (lm_real)1e-3, (lm_real)1e-3, (lm_real)1e-3, (lm_real)1e-3, 0, 0};
  double bound = sqrt(5000.0 * (double)v[0]);
  size_t i, bad = 0;
  EXPECT_EQ_INT(lm_spam_clip(g, v, 6), 2);
  EXPECT(g[0] == 2 && g[3] == (lm_real)-2.2 && g[4] == 7 && g[5] == -7);
  EXPECT_EQ_BITS(g[1], (lm_real)-bound);
  EXPECT_EQ_BITS(g[2], (lm_real)bound);
  lm_model_init(&m, o.shape, &r);
  for (i = 0; i < m.n_params; i++)
    m.grads[i] = (lm_real)0.5, m.m[i] = (lm_real)0.25, m.v[i] = 1;
  m.grads[7] = 1000; /* 1e6 > 5000 v */
  EXPECT_EQ_INT(lm_spam_step(&m, 499), 1);
  EXPECT_EQ_BITS(m.grads[7], (lm_real)sqrt(5000.0));
  for (i = 0; i < m.n_params; i++)
    bad += m.m[i] != (lm_real)0.25 || m.v[i] != 1;
  EXPECT_EQ_INT(bad, 0);
  m.grads[7] = 1000;
  EXPECT_EQ_INT(lm_spam_step(&m, 500), 0); /* v = 0 after the reset */
  EXPECT_EQ_BITS(m.grads[7], (lm_real)1000);
  for (i = 0; i < m.n_params; i++) bad += m.m[i] != 0 || m.v[i] != 0;
  EXPECT_EQ_INT(bad, 0);
  lm_model_free(&m);
}

/* gstab and spam train the LM end to end with injected faults: a finite
   loss at every step and a run that is not lowp's. */
TEST(gstab_and_spam_run_end_to_end) {
  lm_opts o = small_opts();
  lm_text train, val;
  demo_event ev[LM_MAX_EVENTS];
  static const char *const arms[] = {"gstab", "spam"};
  lm_result l, r;
  int a, i, bad, n_ev;
  make_text(&train, 20000, 1);
  make_text(&val, 2000, 2);
  o.steps = 40;
  n_ev = lm_make_events(o.stress, o.steps, &o.shape, 1, ev, LM_MAX_EVENTS);
  REQUIRE(n_ev > 0);
  l = lm_train(&o, &LM_ARMS[arm_find("lowp")], 1, &train, &val, ev, n_ev, NULL);
  for (a = 0; a < 2; a++) {
    REQUIRE(arm_find(arms[a]) >= 0 && LM_ARMS[arm_find(arms[a])].extra);
    r = lm_train(&o, &LM_ARMS[arm_find(arms[a])], 1, &train, &val, ev, n_ev,
                 NULL);
    for (i = bad = 0; i < o.steps; i++) bad += !isfinite(r.loss[i]);
    EXPECT_EQ_INT(bad, 0);
    EXPECT(isfinite(r.val_bpb) && !r.diverged);
    EXPECT(r.param_hash != l.param_hash);
    printf("  %s: val bpb %.4f (lowp %.4f)\n", arms[a], r.val_bpb, l.val_bpb);
    free(r.loss);
  }
  free(l.loss);
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
  REQUIRE(system("mkdir -p " TEST_OUT "/data") == 0);
  /* Fortunes 0..4 in "a", 5..6 in "b"; 0 goes to validation (k % 20). */
  write_file(TEST_OUT "/data/a", "zero\n%\none\n%\ntwo\n%\nthree\n%\nfour\n");
  write_file(TEST_OUT "/data/b", "five\n%\nsix\n");
  write_file(TEST_OUT "/data/a.dat", "not text\n");
  lm_load_fortunes(TEST_OUT "/data", &tr, &va);
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

/* The controller's unit groupings (--units): tensor gives every Linear's
   weight and bias and every LayerNorm's weight and bias a unit of its own,
   layer folds each LayerNorm into the Linear that reads it; either way every
   parameter but the embeddings' is in exactly one unit, and a unit's scale
   of 0 writes 0 over a NaN. */
TEST(unit_groupings_cover_each_parameter_once) {
  lm_shape s = {8, 2, 2, 5, 2};
  lm_model m;
  lm_groups g;
  demo_rng r = {3};
  int mode, p, j, U;
  lm_model_init(&m, s, &r);
  U = m.n_units;
  for (mode = LM_UNITS_TENSOR; mode <= LM_UNITS_LAYER; mode++) {
    unsigned char *hit = DEMO_CALLOC(m.n_params, unsigned char);
    size_t i, n_ln = 0, covered = 0, embed = 0;
    lm_groups_init(&g, &m, mode);
    EXPECT_EQ_INT(g.n, mode == LM_UNITS_TENSOR ? 2 * U + 2 * (2 * s.L + 1) : U);
    for (p = 0; p < g.n_pieces; p++)
      for (i = 0; i < g.len[p]; i++) hit[g.off[p] + i]++;
    for (j = 0; j < m.n_tensors; j++) {
      const lm_tensor *t = &m.tensors[j];
      int is_embed = t->unit < 0 && t->decay;
      for (i = 0; i < t->n; i++) {
        EXPECT_EQ_INT(hit[t->off + i], is_embed ? 0 : 1);
        covered += hit[t->off + i];
      }
      embed += is_embed ? t->n : 0;
    }
    EXPECT(covered + embed == m.n_params);
    for (p = 0; p < g.n; p++) n_ln += g.ln[p];
    /* tensor: 2 per LayerNorm, no path; layer: ln1 on qkv, ln2 on MLP up,
       the final one on the head */
    if (mode == LM_UNITS_TENSOR) {
      EXPECT_EQ_INT((int)n_ln, 2 * (2 * s.L + 1));
      for (p = 0; p < g.n; p++) EXPECT((g.path[p] < 0) == (g.ln[p] != 0));
    } else {
      EXPECT_EQ_INT((int)n_ln, 2 * s.L + 1);
      for (p = 0; p < g.n; p++) {
        EXPECT_EQ_INT(g.path[p], p);
        EXPECT_EQ_INT(g.ln[p],
                      p == 4 * s.L || p % 4 == LM_QKV || p % 4 == LM_MLP_UP);
      }
    }
    free(hit);
  }
  /* scale 0 over a NaN: 0, on the unit's pieces only */
  lm_groups_init(&g, &m, LM_UNITS_LAYER);
  m.grads[g.off[0]] = NAN;
  m.grads[m.unit[1].dw - m.grads] = 2;
  lm_group_scale(&m, &g, 0, 0.0);
  EXPECT(m.grads[g.off[0]] == 0);
  EXPECT(m.grads[m.unit[1].dw - m.grads] == 2);
  lm_model_free(&m);
}

TEST(demo_runs_end_to_end) {
  lm_text t;
  FILE *f;
  char *argv[] = {"train_lm",
                  "--data",
                  TEST_OUT "/data/e2e",
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
                  TEST_OUT "/out",
                  "--quiet"};
  size_t k;
  int a, n_default = 0;
  REQUIRE(system("mkdir -p " TEST_OUT "/data/e2e") == 0);
  make_text(&t, 30000, 3);
  f = fopen(TEST_OUT "/data/e2e/text", "wb");
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
  EXPECT_EQ_INT(count_lines(TEST_OUT "/out/summary.csv",
                            "setting,arm,seed,format,lr,stress,steps,val_bpb,"
                            "recovery_fraction,loss_spikes,diverged,seconds,"
                            "overhead_pct,hf_flops,val_bpb_served\n"),
                2 * n_default);
  EXPECT_EQ_INT(
      count_lines(TEST_OUT "/out/loss.csv", "arm,seed,step,loss_bpb\n"),
      2 * n_default * 30);
  EXPECT_EQ_INT(count_lines(TEST_OUT "/out/trace.csv",
                            "step,unit,name,norm,ratio,delta,action\n"),
                30 * 5);
  EXPECT_EQ_INT(count_lines(TEST_OUT "/out/stress.csv",
                            "seed,start,steps,unit,name,kind,where\n"),
                2 * 3);
  EXPECT(file_starts_with(TEST_OUT "/out/loss.svg", "<svg"));
  EXPECT(file_starts_with(TEST_OUT "/out/recovery.svg", "<svg"));
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/out/loss.svg"), 0);
  EXPECT_EQ_INT(svg_geometry_errors(TEST_OUT "/out/recovery.svg"), 0);
  EXPECT_EQ_INT(svg_dash_errors(TEST_OUT "/out/loss.svg"), 0);
  EXPECT_EQ_INT(svg_label_errors(TEST_OUT "/out/recovery.svg"), 0);
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
      CHECK_CASE(placement_rules_choose_their_units_within_the_budget),
      CHECK_CASE(a_gemm_on_f32_reads_the_unquantized_inputs),
      CHECK_CASE(block_scales_are_per_block_along_the_inner_dimension),
      CHECK_CASE(hf_flops_counts_the_units_gemm_flops_on_the_f32_path),
      CHECK_CASE(library_placer_runs_as_the_prototype),
      CHECK_CASE(grad_format_touches_the_low_cost_path_only),
      CHECK_CASE(schedules_cosine_and_wsd),
      CHECK_CASE(schedules_linear_constant_invsqrt),
      CHECK_CASE(optimizers_sgd_and_lion_train),
      CHECK_CASE(spam_clips_the_entries_over_the_threshold_and_resets_at_500),
      CHECK_CASE(gstab_and_spam_run_end_to_end),
      CHECK_CASE(options_land_where_the_table_says),
      CHECK_CASE(options_refuse_bad_values),
      CHECK_CASE(help_prints_each_option_and_its_default),
      CHECK_CASE(served_paths_follow_the_last_step),
      CHECK_CASE(served_evaluation_uses_the_quantized_forward),
      CHECK_CASE(jit_serving_and_stochastic_dgrad_change_what_they_say),
      CHECK_CASE(stochastic_rounding_is_unbiased_between_neighbours),
      CHECK_CASE(fortunes_split_by_fortune),
      CHECK_CASE(unit_groupings_cover_each_parameter_once),
      CHECK_CASE(demo_runs_end_to_end),
#endif
  };
#ifdef LM_DOUBLE
  (void)train_lm_main; /* the whole program runs in the float build */
#endif
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
