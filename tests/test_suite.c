/* test_suite.c - the settings suite (lab/suite.c, issue 39): the split
   rule against FNV-1a's published values and fixed halves, both halves
   holding every format and model, each setting's arms, and every LM
   setting's options as the LM demo reads them (lab/train_lm.c's own
   parser, in a child: a bad option exits). */
#define TRAIN_LM_NO_MAIN
#include "../lab/train_lm.c"
#define SUITE_NO_MAIN
#include "../lab/suite.c"
#include "check.h"
#include "child.h"

/* FNV-1a (32 bits) against the reference values of its authors' test
   suite; the halves of three names, fixed before any tuning. */
TEST(split_is_the_fnv1a_hash_lowest_bit) {
  suite_setting s;
  EXPECT(suite_fnv1a("") == 0x811c9dc5u);
  EXPECT(suite_fnv1a("a") == 0xe40c292cu);
  EXPECT(suite_fnv1a("foobar") == 0xbf9cf968u);
  memset(&s, 0, sizeof s);
  s.name = "lm-e2m1-clip"; /* 0x831b6d79 */
  EXPECT(strcmp(suite_half(&s), "test") == 0);
  s.name = "mlp-e4m3-calm"; /* 0xa9cce8be */
  EXPECT(strcmp(suite_half(&s), "tune") == 0);
  s.name = "lmw-e2m1-clip"; /* 0x9a425110 */
  EXPECT(strcmp(suite_half(&s), "tune") == 0);
}

/* The halves written in lab/suite.c are the rule's; a setting renamed
   (or added) into the test half without its record is caught. */
TEST(recorded_halves_are_the_rules) {
  suite_setting moved[SUITE_N];
  char name[32];
  int i, n_test = 0;
  EXPECT_EQ_INT(suite_record_errors(SUITE, SUITE_N, NULL), 0);
  for (i = 0; i < SUITE_N; i++) n_test += suite_test_half(&SUITE[i]);
  EXPECT_EQ_INT(n_test, SUITE_N_TEST);
  memcpy(moved, SUITE, sizeof moved);
  moved[0].name = name;
  for (i = 0; i < 100; i++) { /* the first "renamed-N" the rule calls test */
    snprintf(name, sizeof name, "renamed-%d", i);
    if (suite_test_half(&moved[0])) break;
  }
  REQUIRE(i < 100);
  EXPECT_EQ_INT(suite_record_errors(moved, SUITE_N, NULL), 1);
}

/* Both halves hold every format and model, the test half is listed
   first, and the check finds a gap where there is one: the suite without
   its NVFP4 settings of the tune half. */
TEST(both_halves_cover_every_format_and_model) {
  suite_setting less[SUITE_N];
  int order[SUITE_N], k, n_test = 0, i, j, n = 0;
  EXPECT_EQ_INT(suite_split_gaps(SUITE, SUITE_N, NULL), 0);
  suite_order(order);
  for (k = 0; k < SUITE_N; k++) {
    n_test += suite_test_half(&SUITE[order[k]]);
    if (k > 0)
      EXPECT(suite_test_half(&SUITE[order[k]]) <=
             suite_test_half(&SUITE[order[k - 1]]));
  }
  EXPECT(n_test > 0 && n_test < SUITE_N);
  EXPECT(SUITE_N >= 16 && SUITE_N <= 30);
  for (i = 0; i < SUITE_N; i++) /* names are unique */
    for (j = i + 1; j < SUITE_N; j++)
      EXPECT(strcmp(SUITE[i].name, SUITE[j].name) != 0);
  for (i = 0; i < SUITE_N; i++)
    if (suite_test_half(&SUITE[i]) || strcmp(SUITE[i].format, "nvfp4") != 0)
      less[n++] = SUITE[i];
  REQUIRE(n < SUITE_N);
  EXPECT_EQ_INT(suite_split_gaps(less, n, NULL), 1);
}

/* The arms: the FP4 LM settings run the placer beside the told late
   switch; only the fault settings run clip (none of them on the global
   clip, where it would be lowp) and the other peers; the controller's
   forward-signal arm runs wherever the placer is not the only question;
   MLP settings run no placement arm (the MLP demo refuses them). */
TEST(arms_follow_the_setting) {
  int i;
  for (i = 0; i < SUITE_N; i++) {
    const suite_setting *s = &SUITE[i];
    const char *a = suite_arms(s);
    int fp4_lm = s->model != SU_MLP && suite_fp4(s);
    EXPECT(strncmp(a, "f32,lowp,", 9) == 0);
    EXPECT((strstr(a, ",clip,") != NULL) ==
           (!s->clip && s->events == SU_FAULTS));
    EXPECT((strstr(a, ",forward") != NULL) ==
           (!fp4_lm || s->events == SU_FAULTS));
    EXPECT((strstr(a, "gstab") != NULL) == (s->events == SU_FAULTS));
    EXPECT(strstr(a, "gnmr") != NULL);
    EXPECT((strstr(a, "place-planf-10") != NULL) == fp4_lm);
    EXPECT((strstr(a, "place-late-10") != NULL) == fp4_lm);
    EXPECT((strstr(a, "place-plan-10") != NULL) == fp4_lm);
  }
}

/* The progress line's estimate weighs each run by its arms, its steps and
   its model's cost per arm-step: an MLP run of 1000 steps is not an LM
   run of 500 (the estimate read them as equal, and said minutes where the
   suite takes hours). */
TEST(progress_weighs_runs_by_their_cost) {
  suite_opts o;
  const suite_setting *mlp = NULL, *lm = NULL, *wide = NULL, *noisy = NULL;
  int i;
  memset(&o, 0, sizeof o);
  for (i = 0; i < SUITE_N; i++) {
    if (strcmp(SUITE[i].name, "lmw-e4m3-noisy") == 0) noisy = &SUITE[i];
    if (strcmp(SUITE[i].name, "mlp-e4m3-calm") == 0) mlp = &SUITE[i];
    if (strcmp(SUITE[i].name, "lm-e4m3-calm") == 0) lm = &SUITE[i];
    if (strcmp(SUITE[i].name, "lmw-e2m1-clip") == 0) wide = &SUITE[i];
  }
  REQUIRE(mlp && lm && wide && noisy);
  /* f32,lowp,gnmr,forward; the same; f32,lowp,gnmr and three placers */
  EXPECT_EQ_BITS(suite_cost(&o, mlp), 4.0 * 1000 * 1);
  EXPECT_EQ_BITS(suite_cost(&o, lm), 4.0 * 500 * 30);
  EXPECT_EQ_BITS(suite_cost(&o, wide), 6.0 * 500 * 57);
  /* a batch of 2 sequences, not 8 */
  EXPECT_EQ_BITS(suite_cost(&o, noisy), 4.0 * 500 * 57 * 0.3);
  o.steps = 200; /* --steps: every run */
  EXPECT_EQ_BITS(suite_cost(&o, mlp), 4.0 * 200 * 1);
  EXPECT_EQ_BITS(suite_cost(&o, wide), 6.0 * 200 * 57);
}

/* The MLP settings' options: a noisy one trains on batches of 16 (the
   demo's 128: an eighth), a heavy-tailed one too, on Student-t inputs, the
   others on the demo's; faults and the clip as the setting says. */
TEST(mlp_settings_take_their_batch) {
  int i, noisy = 0;
  for (i = 0; i < SUITE_N; i++) {
    const suite_setting *s = &SUITE[i];
    char args[512];
    if (s->model != SU_MLP) continue;
    suite_args(s, args, sizeof args);
    EXPECT((strstr(args, " --batch 16") != NULL) ==
           (s->events == SU_NOISY || s->events == SU_HEAVY));
    EXPECT((strstr(args, " --heavy 3") != NULL) == (s->events == SU_HEAVY));
    EXPECT((strstr(args, " --stress 8") != NULL) == (s->events == SU_FAULTS));
    EXPECT((strstr(args, " --global-clip 1.0") != NULL) == s->clip);
    noisy += s->events == SU_NOISY;
  }
  EXPECT(noisy >= 1);
}

/* The heavy-tailed calm settings (issue 50) stand in both halves, an MLP
   and an LM one in each: the calm cost of a gradient-norm preset is tuned
   on one half and read on the other. */
TEST(heavy_tailed_settings_in_both_halves) {
  int i, seen[2][2];
  memset(seen, 0, sizeof seen);
  for (i = 0; i < SUITE_N; i++)
    if (SUITE[i].events == SU_HEAVY)
      seen[suite_test_half(&SUITE[i])][SUITE[i].model != SU_MLP] = 1;
  EXPECT(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
}

/* The LM demo's parser in a child: 0 if it took the options. */
CHILD_PARSER(lm_parse_in_child, lm_opts, lm_parse)

/* Splits a command line in place into argv after argv[0]. */
static int split_args(char *line, char **argv, int cap) {
  int n = 1;
  char *tok;
  argv[0] = (char *)"train_lm";
  for (tok = strtok(line, " "); tok && n < cap; tok = strtok(NULL, " "))
    argv[n++] = tok;
  return n;
}

/* Every LM setting's options, with its arms and the suite's steps, are
   taken by train_lm's parser, and land where the setting says; a broken
   option in the same line is refused (the check can fail). */
TEST(every_lm_setting_parses_in_the_demo) {
  char line[1024], *argv[64];
  int i, argc, lm = 0;
  for (i = 0; i < SUITE_N; i++) {
    const suite_setting *s = &SUITE[i];
    char args[512];
    lm_opts o;
    if (s->model == SU_MLP) continue;
    lm++;
    suite_args(s, args, sizeof args);
    snprintf(line, sizeof line, "%s --steps 500 --arms %s", args,
             suite_arms(s));
    argc = split_args(line, argv, 64);
    if (lm_parse_in_child(argv, argc, NULL) != 0) {
      printf("  %s: train_lm refuses %s\n", s->name, args);
      check__failed_here = 1;
      continue;
    }
    lm_parse(&o, argc, argv); /* it exits 0 in the child: safe here */
    EXPECT(strcmp(o.fmt->name,
                  strcmp(s->format, "e5m2g") == 0 ? "e4m3" : s->format) == 0);
    EXPECT((o.grad_fmt != NULL) == (strcmp(s->format, "e5m2g") == 0));
    EXPECT_EQ_INT(o.optimizer, demo_choice_find(LM_OPTIMIZERS, s->optimizer));
    EXPECT_EQ_INT(o.schedule, demo_choice_find(LM_SCHEDULES, s->schedule));
    EXPECT_EQ_INT(o.shape.C, s->model == SU_LM_WIDE ? 96 : 64);
    EXPECT_EQ_INT(o.shape.B, s->events == SU_NOISY   ? 2
                             : s->events == SU_HEAVY ? 1
                                                     : 8);
    EXPECT_EQ_INT(o.stress, s->events == SU_FAULTS ? 24 : 0);
    EXPECT((o.global_clip > 0) == s->clip);
  }
  EXPECT(lm >= 12);
  snprintf(line, sizeof line, "--format e2m1 --warmup 5%%%% --steps 500");
  argc = split_args(line, argv, 64);
  EXPECT_EQ_INT(lm_parse_in_child(argv, argc, NULL), 1);
}

#ifndef TEST_OUT
#define TEST_OUT "build/test_suite"
#endif

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  REQUIRE(f != NULL);
  fputs(text, f);
  REQUIRE(fclose(f) == 0);
}

static int text_has(const char *path, const char *needle) {
  static char buf[1 << 14];
  FILE *f = fopen(path, "r");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strstr(buf, needle) != NULL;
}

/* The suite's summary carries both evaluations: the served loss and the
   gap recovered on it (lowp served against f32) beside the f32 path's. */
TEST(report_carries_the_served_evaluation) {
  static const char *const row =
      "lm-e2m1-clip,f32,%d,e2m1,0.004,0,500,3.0%d,0,0,0,1,0,1,3.0%d\n"
      "lm-e2m1-clip,lowp,%d,e2m1,0.004,0,500,3.4%d,0,0,0,1,0,0,3.2%d\n"
      "lm-e2m1-clip,place-planf-10,%d,e2m1,0.004,0,500,3.1%d,0,0,0,1,0,0.1,"
      "3.3%d\n";
  char path[256], text[1024];
  int seed;
  REQUIRE(system("rm -rf " TEST_OUT " && mkdir -p " TEST_OUT
                 "/lm-e2m1-clip/s1 " TEST_OUT "/lm-e2m1-clip/s2") == 0);
  for (seed = 1; seed <= 2; seed++) {
    snprintf(text, sizeof text,
             "setting,arm,seed,format,lr,stress,steps,val_bpb,recovery_"
             "fraction,loss_spikes,diverged,seconds,overhead_pct,hf_flops,"
             "val_bpb_served\n");
    snprintf(text + strlen(text), sizeof text - strlen(text), row, seed, seed,
             seed, seed, seed, seed, seed, seed, seed);
    snprintf(path, sizeof path, TEST_OUT "/lm-e2m1-clip/s%d/summary.csv", seed);
    write_text(path, text);
  }
  ef_n_set = 0;
  suite_report(TEST_OUT);
  EXPECT(text_has(TEST_OUT "/summary.csv",
                  "setting,half,arm,seed,val_loss,hf_unit_steps,hf_flops,"
                  "gap_recovered,val_loss_served,gap_recovered_served\n"));
  /* seed 1: f32 path (3.41 - 3.11) / (3.41 - 3.01) = 0.75; served (3.21 -
     3.31) / (3.21 - 3.01) = -0.5 */
  EXPECT(text_has(TEST_OUT "/summary.csv",
                  "lm-e2m1-clip,test,place-planf-10,1,3.110000,0.000000,"
                  "0.100000,0.7500,3.310000,-0.5000\n"));
  EXPECT(text_has(TEST_OUT "/summary.csv",
                  "lm-e2m1-clip,test,f32,2,3.020000,1.000000,1.000000,,"
                  "3.020000,\n"));
}

/* The means over settings carry their interval, each setting's seeds
   resampled on their own, and say that it is conditional on the settings:
   from the suite's runs (the report's settings above: -50% on both seeds)
   and from a CSV of per-seed gaps (suite means FILE), where a setting of
   one seed leaves the mean without an interval and --only picks the
   settings. */
TEST(means_over_settings_carry_their_interval) {
  FILE *out;
  REQUIRE(system("mkdir -p " TEST_OUT) == 0);
  ef_n_set = 0;
  ef_scan(TEST_OUT); /* report_carries_the_served_evaluation's runs */
  REQUIRE(ef_n_set == 1);
  out = fopen(TEST_OUT "/means.txt", "w");
  REQUIRE(out != NULL);
  suite_means(ef_n_set, out);
  REQUIRE(fclose(out) == 0);
  EXPECT(text_has(TEST_OUT "/means.txt",
                  "  test place-planf-10     -50% [-50, -50] (1/1)\n"));
  EXPECT(text_has(TEST_OUT "/means.txt", "conditional on these settings: "
                                         "the settings are not resampled"));
  write_text(TEST_OUT "/gaps.csv", "setting,arm,seed,gap_recovered_served\n"
                                   "a,p,1,0.2\na,p,2,0.2\n"
                                   "b,p,1,0.6\nb,p,2,0.6\nb,p,3,0.6\n"
                                   "c,p,1,0.9\nc,p,2,\n"
                                   "a,q,1,0.1\na,q,2,0.3\n");
  out = fopen(TEST_OUT "/means.txt", "w");
  REQUIRE(out != NULL);
  EXPECT_EQ_INT(suite_means_file(TEST_OUT "/gaps.csv", "a,b", out), 0);
  REQUIRE(fclose(out) == 0);
  /* p: settings a and b, each on one value: 40%, zero width (pooled
     seeds would read 48%); q: one setting of 0.1 and 0.3 */
  EXPECT(text_has(TEST_OUT "/means.txt",
                  "  p                  40% [40, 40] (2)\n"));
  EXPECT(text_has(TEST_OUT "/means.txt",
                  "  q                  20% [10, 30] (1)\n"));
  out = fopen(TEST_OUT "/means.txt", "w");
  REQUIRE(out != NULL);
  EXPECT_EQ_INT(suite_means_file(TEST_OUT "/gaps.csv", NULL, out), 0);
  REQUIRE(fclose(out) == 0);
  /* c has one seed (its second row is empty): (0.2 + 0.6 + 0.9) / 3, no
     interval */
  EXPECT(text_has(TEST_OUT "/means.txt", "  p                  57% (3)\n"));
  write_text(TEST_OUT "/none.csv", "setting,arm,seed,gap_recovered_served\n"
                                   "a,p,1,\n");
  EXPECT_EQ_INT(suite_means_file(TEST_OUT "/none.csv", NULL, stdout), 1);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(split_is_the_fnv1a_hash_lowest_bit),
      CHECK_CASE(recorded_halves_are_the_rules),
      CHECK_CASE(both_halves_cover_every_format_and_model),
      CHECK_CASE(arms_follow_the_setting),
      CHECK_CASE(progress_weighs_runs_by_their_cost),
      CHECK_CASE(heavy_tailed_settings_in_both_halves),
      CHECK_CASE(mlp_settings_take_their_batch),
      CHECK_CASE(every_lm_setting_parses_in_the_demo),
      CHECK_CASE(report_carries_the_served_evaluation),
      CHECK_CASE(means_over_settings_carry_their_interval),
  };
  (void)train_lm_main;        /* the demo's main and the suite's commands run */
  (void)efficacy_report_main; /* in their own programs */
  (void)suite_list, (void)suite_run, (void)suite_int;
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
