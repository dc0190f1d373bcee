/* test_efficacy.c - the efficacy report (bench/efficacy.c) on summary files
   written here, with known answers: the gap recovered, the high-fidelity
   share, the pairing by seed, both demos' column names, a run that never
   started. */
#define main efficacy_report_main
#include "../bench/efficacy.c"
#undef main

#include "check.h"
#include "svg_check.h"

#define DIR "build/test_efficacy"

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
             "fraction,loss_spikes,diverged,seconds,overhead_pct\n"
             "lm,gnmr,1,e4m3,0.002,24,10,3.25,0.05,2,0,1,0\n"
             "lm,gnmr,2,e4m3,0.002,24,10,3.5,0.03,1,0,1,0\n");
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
  EXPECT_EQ_INT(lm->n_arms, 3); /* parts a and b merged */
  g = ef_find(lm, "gnmr");
  REQUIRE(g != NULL);
  /* seed 1: (4.0 - 3.25) / (4.0 - 3.0); seed 2: (3.6 - 3.5) / (3.6 - 3.2) */
  EXPECT_NEAR(ef_gap(lm, g, 0), 0.75, 1e-12);
  EXPECT_NEAR(ef_gap(lm, g, 1), 0.25, 1e-12);
  EXPECT(isnan(ef_gap(lm, ef_find(lm, "f32"), 0)));
  EXPECT_NEAR(ef_mean(g->hf, g->n), 0.04, 1e-12);
  /* the MLP's test_loss is its val_loss */
  EXPECT_NEAR(ef_gap(&ef_set[1], ef_find(&ef_set[1], "clip"), 0), 0.8, 1e-12);
}

TEST(outputs_hold_every_row_and_the_paired_table) {
  make_runs();
  ef_n_set = 0;
  ef_scan(DIR);
  ef_csv(DIR);
  ef_report(DIR);
  ef_svg(DIR);
  /* header + 6 LM rows + 3 MLP rows */
  EXPECT_EQ_INT(count_lines(DIR "/summary.csv"), 10);
  EXPECT(file_has(DIR "/summary.csv", "lm,gnmr,1,3.250000,0.7500,0.05000,2,"
                                      "0,8.333\n"));
  EXPECT(file_has(DIR "/summary.csv", "lm,f32,2,3.200000,,0.00000,0,0,0.000"));
  EXPECT(file_has(DIR "/summary.csv", "mlp,lowp,1,1.000000,0.0000,0.00000,3,"
                                      "1,100.000"));
  /* gnmr against f32 +8.33% and +9.38%; against lowp -18.75% and -2.78% */
  EXPECT(
      file_has(DIR "/report.md", "| `gnmr` | +8.85 (0/2) | -10.76 (2/2) | |"));
  EXPECT(file_has(DIR "/report.md", "| 50% (75 / 25) |"));
  EXPECT(file_has(DIR "/efficacy.svg", "<circle"));
  EXPECT_EQ_INT(svg_geometry_errors(DIR "/efficacy.svg"), 0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(gap_recovered_is_per_seed_against_the_same_settings_runs),
      CHECK_CASE(outputs_hold_every_row_and_the_paired_table),
  };
  (void)efficacy_report_main;
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
