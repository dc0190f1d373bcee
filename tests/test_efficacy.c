/* test_efficacy.c - the efficacy report (lab/efficacy.c) on summary files
   written here, with known answers: the gap recovered, the high-fidelity
   share in unit-steps and in FLOPs, the pairing by seed, both demos' column
   names, a run that never started, the frontier by placement rule, the two
   evaluations (served, f32 path) and the paired bootstrap. */
#define main efficacy_report_main
#include "../lab/efficacy.c"
#undef main

#include "check.h"
#include "svg_check.h"

/* Where this test writes: a directory of its own (the Makefile passes
   "<program>.out"), so the test programs can run side by side
   (tests/run.sh). */
#ifndef TEST_OUT
#define TEST_OUT "build/test_efficacy"
#endif
#define DIR TEST_OUT

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  REQUIRE(f != NULL);
  fputs(text, f);
  REQUIRE(fclose(f) == 0);
}

/* Two settings: an LM one in two parts (val_bpb) and an MLP one (test_loss),
   and a third whose only file is empty. */
static void make_runs(void) {
  REQUIRE(system("rm -rf " DIR " && mkdir -p " DIR "/lm/a " DIR "/lm/b " DIR
                 "/mlp/all " DIR "/dead/x") == 0);
  write_file(DIR "/lm/a/summary.csv",
             "setting,arm,seed,format,lr,stress,steps,val_bpb,recovery_"
             "fraction,loss_spikes,diverged,seconds,overhead_pct\n"
             "lm,f32,1,e4m3,0.002,24,10,3.0,0,0,0,1,0\n"
             "lm,lowp,1,e4m3,0.002,24,10,4.0,0,7,0,1,0\n"
             "lm,f32,2,e4m3,0.002,24,10,3.2,0,0,0,1,0\n"
             "lm,lowp,2,e4m3,0.002,24,10,3.6,0,5,0,1,0\n");
  write_file(DIR "/lm/b/summary.csv",
             "setting,arm,seed,format,lr,stress,steps,val_bpb,recovery_"
             "fraction,loss_spikes,diverged,seconds,overhead_pct,hf_flops\n"
             "lm,gnmr,1,e4m3,0.002,24,10,3.25,0.05,2,0,1,0,0.04\n"
             "lm,gnmr,2,e4m3,0.002,24,10,3.5,0.03,1,0,1,0,0.02\n"
             "lm,place-late-5,1,e4m3,0.002,24,10,3.8,0.05,0,0,1,0,0.05\n"
             "lm,place-late-10,1,e4m3,0.002,24,10,3.5,0.1,0,0,1,0,0.1\n"
             "lm,place-nvfp4-20,1,e4m3,0.002,24,10,3.9,0.2,0,0,1,0,0.18\n");
  write_file(DIR "/mlp/all/summary.csv",
             "arm,seed,format,stress,test_loss,test_acc,recovery_fraction,"
             "loss_spikes,diverged,overhead_pct,bursts,bursts_caught,stales,"
             "stales_caught,admissions,admissions_in_fault\n"
             "f32,1,e4m3,8,0.5,0.8,0,0,0,0,0,0,0,0,0,0\n"
             "lowp,1,e4m3,8,1.0,0.7,0,3,1,0,0,0,0,0,0,0\n"
             "clip,1,e4m3,8,0.6,0.7,0,3,0,0,0,0,0,0,0,0\n");
  write_file(DIR "/dead/x/summary.csv", "");
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0, c;
  if (!f) return -1;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static int file_has(const char *path, const char *needle) {
  static char buf[1 << 16];
  FILE *f = fopen(path, "r");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strstr(buf, needle) != NULL;
}

TEST(gap_recovered_is_per_seed_against_the_same_settings_runs) {
  const ef_setting *lm;
  const ef_arm *g;
  make_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  REQUIRE(ef_n_set == 2); /* dead/ holds no rows */
  lm = &ef_set[0];
  EXPECT(strcmp(lm->name, "lm") == 0);
  EXPECT_EQ_INT(lm->n_arms, 6); /* parts a and b merged */
  g = ef_find(lm, "gnmr");
  REQUIRE(g != NULL);
  /* seed 1: (4.0 - 3.25) / (4.0 - 3.0); seed 2: (3.6 - 3.5) / (3.6 - 3.2) */
  EXPECT_NEAR(ef_gap(lm, g, 0), 0.75, 1e-12);
  EXPECT_NEAR(ef_gap(lm, g, 1), 0.25, 1e-12);
  EXPECT(isnan(ef_gap(lm, ef_find(lm, "f32"), 0)));
  EXPECT_NEAR(ef_mean(g->hf, g->n), 0.04, 1e-12);
  EXPECT_NEAR(ef_mean(g->flops, g->n), 0.03, 1e-12);
  /* part a has no hf_flops column: unknown, not zero */
  EXPECT(isnan(ef_mean(ef_find(lm, "lowp")->flops, 2)));
  /* the MLP's test_loss is its val_loss */
  EXPECT_NEAR(ef_gap(&ef_set[1], ef_find(&ef_set[1], "clip"), 0), 0.8, 1e-12);
}

/* A setting with both evaluations: f32 served as on its f32 path; lowp
   served on its format better than on the f32 path (the mismatch); a
   placement arm served in f32 better on the f32 path, worse served. */
static void make_served_runs(void) {
  REQUIRE(system("rm -rf " DIR " && mkdir -p " DIR "/fp4/all " DIR
                 "/flat/all") == 0);
  write_file(DIR "/fp4/all/summary.csv",
             "setting,arm,seed,format,lr,stress,steps,val_bpb,recovery_"
             "fraction,loss_spikes,diverged,seconds,overhead_pct,hf_flops,"
             "val_bpb_served\n"
             "fp4,f32,1,e2m1,0.002,0,10,3.00,0,0,0,1,0,1,3.00\n"
             "fp4,f32,2,e2m1,0.002,0,10,3.10,0,0,0,1,0,1,3.10\n"
             "fp4,f32,3,e2m1,0.002,0,10,3.20,0,0,0,1,0,1,3.20\n"
             "fp4,lowp,1,e2m1,0.002,0,10,3.40,0,0,0,1,0,0,3.20\n"
             "fp4,lowp,2,e2m1,0.002,0,10,3.50,0,0,0,1,0,0,3.30\n"
             "fp4,lowp,3,e2m1,0.002,0,10,3.60,0,0,0,1,0,0,3.40\n"
             "fp4,place-planf-10,1,e2m1,0.002,0,10,3.10,0,0,0,1,0,0.1,3.30\n"
             "fp4,place-planf-10,2,e2m1,0.002,0,10,3.20,0,0,0,1,0,0.1,3.40\n"
             "fp4,place-planf-10,3,e2m1,0.002,0,10,3.30,0,0,0,1,0,0.1,3.50\n");
  /* lowp - f32 of -0.1, +0.1, 0: an interval that holds 0 */
  write_file(DIR "/flat/all/summary.csv",
             "arm,seed,format,stress,test_loss,test_acc,recovery_fraction,"
             "loss_spikes,diverged,overhead_pct,bursts,bursts_caught,stales,"
             "stales_caught,admissions,admissions_in_fault,test_loss_served,"
             "test_acc_served\n"
             "f32,1,e4m3,8,0.5,0.8,0,0,0,0,0,0,0,0,0,0,0.5,0.8\n"
             "f32,2,e4m3,8,0.5,0.8,0,0,0,0,0,0,0,0,0,0,0.5,0.8\n"
             "f32,3,e4m3,8,0.5,0.8,0,0,0,0,0,0,0,0,0,0,0.5,0.8\n"
             "lowp,1,e4m3,8,0.4,0.8,0,0,0,0,0,0,0,0,0,0,0.4,0.8\n"
             "lowp,2,e4m3,8,0.6,0.8,0,0,0,0,0,0,0,0,0,0,0.6,0.8\n"
             "lowp,3,e4m3,8,0.5,0.8,0,0,0,0,0,0,0,0,0,0,0.5,0.8\n");
}

TEST(served_gap_is_lowp_served_against_f32_and_stands_beside_the_f32_path) {
  const ef_setting *s;
  const ef_arm *p;
  double m, lo, hi;
  make_served_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  REQUIRE(ef_n_set == 2);
  s = &ef_set[1];
  REQUIRE(strcmp(s->name, "fp4") == 0);
  p = ef_find(s, "place-planf-10");
  REQUIRE(p != NULL);
  EXPECT(ef_has_served(s));
  /* f32 path: (3.4 - 3.1) / (3.4 - 3.0); served: (3.2 - 3.3) / (3.2 - 3.0) */
  EXPECT_NEAR(ef_gap_ev(s, p, 0, EF_F32), 0.75, 1e-12);
  EXPECT_NEAR(ef_gap_ev(s, p, 0, EF_SERVED), -0.5, 1e-12);
  EXPECT_NEAR(ef_gap(s, p, 0), 0.75, 1e-12);
  /* lowp served: +0.2 over f32 on every seed, a measurable gap */
  EXPECT(ef_measurable(s, EF_SERVED, &m, &lo, &hi));
  EXPECT_NEAR(m, 0.2, 1e-9);
  EXPECT_NEAR(lo, 0.2, 1e-9);
  EXPECT_NEAR(hi, 0.2, 1e-9);
  /* flat: lowp - f32 of -0.1, +0.1, 0 */
  EXPECT(!ef_measurable(&ef_set[0], EF_SERVED, &m, &lo, &hi));
  EXPECT(lo < 0 && hi > 0);
  ef_csv(DIR);
  ef_report(DIR);
  EXPECT(file_has(DIR "/summary.csv", "fp4,place-planf-10,1,3.100000,0.7500,"
                                      "0.00000,0.10000,0,0,3.333,3.300000,"
                                      "-0.5000\n"));
  EXPECT(file_has(DIR "/summary.csv", "fp4,f32,1,3.000000,,0.00000,1.00000,0,"
                                      "0,0.000,3.000000,\n"));
  EXPECT(file_has(DIR "/report.md", "lowp - f32, served: +0.2000 [+0.2000, "
                                    "+0.2000]: a measurable gap"));
  EXPECT(file_has(DIR "/report.md", "no measurable gap (the interval holds "
                                    "0): left out of the means"));
  /* served: -50% on each seed; f32 path 75%, 67%, 60% */
  EXPECT(file_has(DIR "/report.md", "| -50% [-50, -50] (-50 / -50 / -50) |"));
  EXPECT(file_has(DIR "/report.md", "Paired by seed, row against column "
                                    "(served)"));
}

TEST(bootstrap_is_deterministic_and_knows_its_cases) {
  const double same[5] = {0.3, 0.3, 0.3, 0.3, 0.3},
               pos[5] = {0.10, 0.12, 0.09, 0.11, 0.13},
               mixed[6] = {-1, 1, -1, 1, -1, 1}, one[1] = {2.0},
               gaps[4] = {0.5, NAN, 0.7, 0.6};
  double lo, hi, lo2, hi2;
  ef_boot(same, 5, &lo, &hi); /* every seed equal: a zero-width interval */
  EXPECT_NEAR(lo, 0.3, 1e-12);
  EXPECT_NEAR(hi, 0.3, 1e-12);
  ef_boot(pos, 5, &lo, &hi); /* a clear positive gap: 0 left out */
  EXPECT(lo > 0.09 && lo < 0.11 && hi > 0.11 && hi <= 0.13);
  ef_boot(pos, 5, &lo2, &hi2); /* a fixed RNG seed: the same again */
  EXPECT_EQ_BITS(lo, lo2);
  EXPECT_EQ_BITS(hi, hi2);
  ef_boot(mixed, 6, &lo, &hi); /* no direction: the interval holds 0 */
  EXPECT(lo < 0 && hi > 0);
  ef_boot(one, 1, &lo, &hi); /* one seed: no interval */
  EXPECT(isnan(lo) && isnan(hi));
  ef_boot(gaps, 4, &lo, &hi); /* a NAN (no pair) is left out */
  EXPECT(lo >= 0.5 && hi <= 0.7 && lo < hi);
}

/* The bootstrap of a mean over settings resamples each setting's seeds on
   its own: settings whose seeds agree give a zero-width interval at the
   mean of the settings' means (0 on 2 seeds and 1 on 6: 0.5, where seeds
   pooled over settings would read 0.75 and, resampled together, a wide
   interval); known inputs give an interval that holds their mean of means
   and stays inside what any draw can reach; a setting with one seed, or
   no setting, gives none. */
TEST(bootstrap_over_settings_resamples_each_settings_seeds) {
  static const double a[5] = {0.10, 0.12, 0.09, 0.11, 0.13},
                      b[5] = {0.50, 0.55, 0.45, 0.52, 0.48};
  double x[3 * EF_MAX_SEEDS], lo, hi, lo2, hi2;
  int n[3] = {2, 6, 1}, i;
  for (i = 0; i < 3 * EF_MAX_SEEDS; i++) x[i] = i < EF_MAX_SEEDS ? 0.0 : 1.0;
  ef_boot_groups(x, n, 2, &lo, &hi);
  EXPECT_NEAR(lo, 0.5, 1e-12);
  EXPECT_NEAR(hi, 0.5, 1e-12);
  ef_boot_groups(x, n, 3, &lo, &hi); /* the third setting has one seed */
  EXPECT(isnan(lo) && isnan(hi));
  ef_boot_groups(x, n, 0, &lo, &hi);
  EXPECT(isnan(lo) && isnan(hi));
  for (i = 0; i < 5; i++) x[i] = a[i], x[EF_MAX_SEEDS + i] = b[i];
  x[EF_MAX_SEEDS + 5] = NAN; /* no pair: left out */
  n[0] = 5, n[1] = 6;
  ef_boot_groups(x, n, 2, &lo, &hi); /* mean of means 0.305 */
  EXPECT(lo < 0.305 && hi > 0.305);
  EXPECT(lo > 0.27 && hi < 0.34 && hi - lo > 0.01);
  EXPECT(!(lo <= 0.11 && hi >= 0.11)); /* neither setting's own mean */
  EXPECT(!(lo <= 0.5 && hi >= 0.5));
  ef_boot_groups(x, n, 2, &lo2, &hi2); /* a fixed RNG seed */
  EXPECT_EQ_BITS(lo, lo2);
  EXPECT_EQ_BITS(hi, hi2);
  /* one setting: ef_boot's interval */
  ef_boot(b, 5, &lo, &hi);
  ef_boot_groups(x + EF_MAX_SEEDS, n + 1, 1, &lo2, &hi2);
  EXPECT_EQ_BITS(lo, lo2);
  EXPECT_EQ_BITS(hi, hi2);
}

TEST(outputs_hold_every_row_and_the_paired_table) {
  make_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  ef_csv(DIR);
  ef_report(DIR);
  ef_svg(DIR);
  /* header + 9 LM rows + 3 MLP rows */
  EXPECT_EQ_INT(count_lines(DIR "/summary.csv"), 13);
  EXPECT(file_has(DIR "/summary.csv", "setting,arm,seed,val_loss,gap_"
                                      "recovered,hf_unit_steps,hf_flops,"
                                      "loss_spikes,diverged,vs_f32_pct,"
                                      "val_loss_served,gap_recovered_"
                                      "served\n"));
  /* no served column in these files: the served fields are empty */
  EXPECT(file_has(DIR "/summary.csv", "lm,gnmr,1,3.250000,0.7500,0.05000,"
                                      "0.04000,2,0,8.333,,\n"));
  EXPECT(file_has(DIR "/summary.csv", "lm,f32,2,3.200000,,0.00000,,0,0,0.000"));
  EXPECT(file_has(DIR "/summary.csv", "mlp,lowp,1,1.000000,0.0000,0.00000,,3,"
                                      "1,100.000"));
  EXPECT(file_has(DIR "/report.md", "| 4.00% | 3.00% | 3 | 0 |"));
  /* gnmr against f32 +8.33% and +9.38%; against lowp -18.75% and -2.78%;
     two seeds: the bootstrap's means run from one seed's to the other's */
  EXPECT(file_has(DIR "/report.md", "| `gnmr` | +8.85 [+8.33, +9.37] (0/2) | "
                                    "-10.76 [-18.75, -2.78] (2/2) | |"));
  EXPECT(file_has(DIR "/report.md", "| 50% [25, 75] (75 / 25) |"));
  /* the one-seed MLP setting: no interval */
  EXPECT(file_has(DIR "/report.md", "lowp - f32, f32 path: +0.5000: one seed"));
  EXPECT(file_has(DIR "/efficacy.svg", "<circle"));
  EXPECT_EQ_INT(svg_geometry_errors(DIR "/efficacy.svg"), 0);
}

/* The frontier: arms grouped by placement rule (the budget suffix dropped),
   a rule's arms joined in order of FLOPs; only settings with hf_flops. */
TEST(frontier_joins_a_rules_arms_in_order_of_flops) {
  char rule[EF_NAME];
  ef_rule("place-nvfp4-late-10", rule);
  EXPECT(strcmp(rule, "place-nvfp4-late") == 0);
  ef_rule("place-late-5", rule);
  EXPECT(strcmp(rule, "place-late") == 0);
  ef_rule("gnmr-noise", rule);
  EXPECT(strcmp(rule, "gnmr-noise") == 0);
  make_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  ef_frontier_svg(DIR);
  /* late-5 (5%, gap 20%) then late-10 (10%, gap 50%): x over 0..20%, y
     over -100..150% in a 340 x 260 panel at (50, 30) */
  EXPECT(file_has(DIR "/frontier.svg", "<polyline fill='none' stroke='#ff7f0e' "
                                       "points='135.0,165.2 220.0,134.0'/>"));
  EXPECT(file_has(DIR "/frontier.svg", ">place-nvfp4</text>"));
  EXPECT(!file_has(DIR "/frontier.svg", ">mlp</text>"));
  EXPECT_EQ_INT(svg_geometry_errors(DIR "/frontier.svg"), 0);
}

/* More than four panels wrap: the fifth opens a second row (a 340 x 260
   panel, 70 between panels, 80 between rows), inside the picture. */
TEST(frontier_wraps_to_rows_of_four_panels) {
  int i, lm = -1;
  make_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  for (i = 0; i < ef_n_set; i++)
    if (strcmp(ef_set[i].name, "lm") == 0) lm = i;
  REQUIRE(lm >= 0);
  ef_set[0] = ef_set[lm];
  for (i = 1; i < 5; i++) ef_set[i] = ef_set[0];
  for (i = 0; i < 5; i++) snprintf(ef_set[i].name, EF_NAME, "panel%d", i);
  ef_n_set = 5;
  ef_frontier_svg(DIR);
  EXPECT(file_has(DIR "/frontier.svg", "viewBox='0 0 1840 680'"));
  EXPECT(file_has(DIR "/frontier.svg",
                  "<text x='1450' y='20' text-anchor='middle' "
                  "font-size='13'>panel3</text>"));
  EXPECT(file_has(DIR "/frontier.svg",
                  "<text x='220' y='360' text-anchor='middle' "
                  "font-size='13'>panel4</text>"));
  EXPECT_EQ_INT(svg_geometry_errors(DIR "/frontier.svg"), 0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(gap_recovered_is_per_seed_against_the_same_settings_runs),
      CHECK_CASE(outputs_hold_every_row_and_the_paired_table),
      CHECK_CASE(
          served_gap_is_lowp_served_against_f32_and_stands_beside_the_f32_path),
      CHECK_CASE(bootstrap_is_deterministic_and_knows_its_cases),
      CHECK_CASE(bootstrap_over_settings_resamples_each_settings_seeds),
      CHECK_CASE(frontier_joins_a_rules_arms_in_order_of_flops),
      CHECK_CASE(frontier_wraps_to_rows_of_four_panels),
  };
  (void)efficacy_report_main;
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
