/* suite.c - issue 39's settings suite (make suite, make suite-quick).

   Named training settings that vary what users vary, each run on the arms
   the reports need, over 3 seeds, by the training demos
   (lab/train_lm.c, lab/train_stress.c):

     optimizer  AdamW, SGD with momentum, Lion (sign-based)
     schedule   cosine to lr/10, WSD, linear to lr/10, constant, inverse
                square root
     warm-up    none, short (5% of the steps: the demo's), long (20%)
     lr         low, the demo's, high (per optimizer: AdamW 1e-3, 2e-3,
                4e-3; SGD 0.3 and Lion 1e-3 taken as their demo values;
                the MLP's demo value is 1e-3)
     model      the MLP (train_stress, 128,64,32), the LM demo at width
                64 (2 blocks, 4 heads) and at width 96 (2 blocks, 4 heads)
     format     FP8 E4M3 per tensor; E4M3 with E5M2 output gradients; FP4
                E2M1 per tensor; NVFP4 (E2M1, a scale per 1x16 block)
     events     calm (no fault; FP8, where low precision costs little),
                noisy (calm, and small batches: the LM 2 sequences of the
                demo's 8, the MLP 16 rows of its 128; heavy-tailed
                gradient noise), faults (injected: LM 24, MLP 8 per 1000
                steps), natural (FP4: the format alone hurts), heavy
                (calm with heavy tails: the MLP's inputs Student-t with 3
                degrees of freedom (train_stress --heavy 3) in batches of
                16, the LM one sequence a step)

   Not the full grid: SUITE below, 30 settings, each value in at least one
   (20 until 2026-11-28, when four noisy ones were added under the same
   rule, and 24 until the six heavy-tailed ones of 2026-11-29:
   bench/RESULTS.md, "Settings suite").
   LM runs take 500 steps, MLP runs 1000 (the demo's default): about 1.8
   hours on 2 cores, measured on a 2-vCPU Xeon (bench/RESULTS.md,
   "Settings suite").
   Settings marked clip run every arm on a global clip of 1.0 (what
   production trainers run anyway; there the clip arm is lowp and is not
   run).

   Arms: f32, lowp, clip (in the fault settings: a peer), gnmr (the
   controller's defaults), forward (gnmr_config_forward() fed forward
   signals too; in every setting but the FP4 LM ones without faults, where
   the placer is the question), and in the LM
   settings in FP4 (E2M1, NVFP4), where the placer applies,
   place-plan-10 and place-planf-10 (gnmr.h's placer at 10% of the GEMM
   FLOPs told the planned steps: every GEMM of a fired unit, the library's
   default, and its forward GEMMs alone; not told, its 0.4 rule, arm
   place-gnmr-10, is in bench/RESULTS.md) beside the late switch told the
   schedule, place-late-10 (every unit on f32 for the last 10% of steps:
   told, the placer spends the same FLOPs). The fault settings also run
   the peers gstab (GradientStabilizer-style) and, under AdamW, spam
   (SPAM-style; lab/arms.h).

   THE SPLIT, fixed before any tuning: a setting's half is the lowest bit
   of the 32-bit FNV-1a hash of its name (offset basis 2166136261, prime
   16777619, over the name's bytes): 0 tune, 1 test. Defaults and
   thresholds are chosen on the tune half only; every report lists the
   test half first. `suite list` prints each setting's hash and half, and
   every command checks that both halves hold each format.

   Usage:
     suite list                        the settings, test half first
     suite run DIR [options]           runs what DIR lacks, then report
     suite report DIR                  DIR/summary.csv, DIR/frontier.svg
     suite means FILE [--only A,B]     means over settings, per-seed gaps
                                       read from a CSV (suite_means_file)
   run's options: --jobs J (runs at once, default 2), --steps N (every run;
   default LM 500, MLP 1000), --seeds N (default 3),
   --eval N (LM validation windows), --only A,B (those settings), --arms
   A,B (those arms in every setting run, instead of the suite's: a
   comparison of its own, in a DIR of its own, as a run that exists is not
   run again), --bin DIR
   (where train_lm and train_stress are, default build), --data DIR (the
   fortune files).

   A run is one setting and seed: DIR/<setting>/s<seed>/, the demo's own
   outputs; the tune half's run first. It is written under DIR/.tmp and moved in
   place when it succeeds, so `run` is resumable: it skips every run whose
   summary.csv is there (delete DIR, or a setting's folder, to run it again).

   report (also run's last step) reads them with lab/efficacy.c and
   writes DIR/summary.csv, one row per setting, arm and seed: setting,
   half, arm, seed, val_loss (LM: bits per byte; MLP: test cross-entropy),
   hf_unit_steps (the share of unit-steps on the high-fidelity path; 1 for
   the arms that run every unit in f32),
   hf_flops (of the units' GEMM FLOPs; the LM demo only), gap_recovered
   ((lowp - arm) / (lowp - f32), same seed); and DIR/frontier.svg
   (efficacy.c's: gap recovered against hf FLOPs, a panel per LM setting,
   test half first).

   Define SUITE_NO_MAIN to include this file in a test without its
   main(). */
#define main efficacy_report_main
#include "efficacy.c"
#undef main

#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SU_MLP, SU_LM, SU_LM_WIDE };
enum { SU_CALM, SU_NOISY, SU_FAULTS, SU_NATURAL, SU_HEAVY };
static const char *const SU_MODEL[] = {"mlp", "lm-w64", "lm-w96"};
static const char *const SU_EVENTS[] = {"calm", "noisy", "faults", "natural",
                                        "heavy"};

/* One setting. format: e4m3, e5m2g (E4M3, E5M2 output gradients), e2m1,
   nvfp4. optimizer, schedule, warmup: the LM demo's options (the MLP's
   are AdamW, cosine from its own warm-up: "-"). lr_level: low, demo,
   high, against the optimizer's own demo value. */
typedef struct suite_setting {
  const char *name;
  int model;
  const char *format, *optimizer, *schedule, *warmup, *lr, *lr_level;
  int events, clip;
} suite_setting;

/* clang-format off */
static const suite_setting SUITE[] = {
/* name                   model       format   optim    sched       warmup lr      level   events      clip */
  {"lm-e5m2g-calm",       SU_LM,      "e5m2g", "adamw", "cosine",   "5%",  "2e-3", "demo", SU_CALM,    0},
  {"lm-e4m3-noisy",       SU_LM,      "e4m3",  "adamw", "constant", "20%", "2e-3", "demo", SU_NOISY,   0},
  {"lm-e5m2g-sgd-noisy",  SU_LM,      "e5m2g", "sgd",   "cosine",   "5%",  "0.3",  "demo", SU_NOISY,   0},
  {"lm-e4m3-lion-noisy",  SU_LM,      "e4m3",  "lion",  "linear",   "5%",  "1e-3", "demo", SU_NOISY,   0},
  {"lm-e4m3-lion-faults", SU_LM,      "e4m3",  "lion",  "wsd",      "0",   "1e-3", "demo", SU_FAULTS,  0},
  {"lm-e4m3-calm",        SU_LM,      "e4m3",  "adamw", "linear",   "20%", "1e-3", "low",  SU_CALM,    0},
  {"lm-e5m2g-sgd-faults", SU_LM,      "e5m2g", "sgd",   "linear",   "5%",  "0.3",  "demo", SU_FAULTS,  0},
  {"lm-e2m1-clip",        SU_LM,      "e2m1",  "adamw", "cosine",   "5%",  "4e-3", "high", SU_NATURAL, 1},
  {"lm-e2m1-nowarm",      SU_LM,      "e2m1",  "adamw", "cosine",   "0",   "2e-3", "demo", SU_NATURAL, 0},
  {"lm-e2m1-sgd",         SU_LM,      "e2m1",  "sgd",   "cosine",   "5%",  "0.3",  "demo", SU_NATURAL, 0},
  {"lm-e2m1-lion-wsd",    SU_LM,      "e2m1",  "lion",  "wsd",      "5%",  "1e-3", "demo", SU_NATURAL, 1},
  {"lm-e2m1-invsqrt",     SU_LM,      "e2m1",  "adamw", "invsqrt",  "20%", "4e-3", "high", SU_NATURAL, 0},
  {"lm-e2m1-const-lowlr", SU_LM,      "e2m1",  "adamw", "constant", "5%",  "1e-3", "low",  SU_NATURAL, 0},
  {"lm-e2m1-faults",      SU_LM,      "e2m1",  "adamw", "linear",   "5%",  "2e-3", "demo", SU_FAULTS,  0},
  {"lm-nvfp4-clip",       SU_LM,      "nvfp4", "adamw", "cosine",   "5%",  "4e-3", "high", SU_NATURAL, 1},
  {"lm-nvfp4-invsqrt",    SU_LM,      "nvfp4", "adamw", "invsqrt",  "0",   "2e-3", "demo", SU_NATURAL, 0},
  {"lm-nvfp4-sgd-wsd",    SU_LM,      "nvfp4", "sgd",   "wsd",      "20%", "0.3",  "demo", SU_NATURAL, 0},
  {"lmw-e2m1-clip",       SU_LM_WIDE, "e2m1",  "adamw", "cosine",   "5%",  "2e-3", "demo", SU_NATURAL, 1},
  {"lmw-nvfp4-wsd",       SU_LM_WIDE, "nvfp4", "adamw", "wsd",      "5%",  "2e-3", "demo", SU_NATURAL, 0},
  {"lmw-e4m3-noisy",      SU_LM_WIDE, "e4m3",  "adamw", "wsd",      "5%",  "2e-3", "demo", SU_NOISY,   0},
  {"mlp-e4m3-faults",     SU_MLP,     "e4m3",  "-",     "-",        "-",   "1e-3", "demo", SU_FAULTS,  0},
  {"mlp-e4m3-calm",       SU_MLP,     "e4m3",  "-",     "-",        "-",   "1e-3", "demo", SU_CALM,    0},
  {"mlp-e4m3-noisy",      SU_MLP,     "e4m3",  "-",     "-",        "-",   "1e-3", "demo", SU_NOISY,   0},
  {"mlp-e2m1-clip",       SU_MLP,     "e2m1",  "-",     "-",        "-",   "3e-3", "high", SU_NATURAL, 1},
  {"mlp-e4m3-heavy",      SU_MLP,     "e4m3",  "-",     "-",        "-",   "1e-3", "demo", SU_HEAVY,   0},
  {"mlp-e4m3-heavy-hilr", SU_MLP,     "e4m3",  "-",     "-",        "-",   "3e-3", "high", SU_HEAVY,   0},
  {"lm-e4m3-heavy",       SU_LM,      "e4m3",  "adamw", "cosine",   "5%",  "2e-3", "demo", SU_HEAVY,   0},
  {"lmw-e5m2g-heavy",     SU_LM_WIDE, "e5m2g", "adamw", "linear",   "5%",  "2e-3", "demo", SU_HEAVY,   0},
  {"lm-e4m3-sgd-heavy",   SU_LM,      "e4m3",  "sgd",   "cosine",   "5%",  "0.3",  "demo", SU_HEAVY,   0},
  {"mlp-e4m3-heavy-lowlr",SU_MLP,     "e4m3",  "-",     "-",        "-",   "3e-4", "low",  SU_HEAVY,   0},
};
/* clang-format on */
#define SUITE_N (int)(sizeof SUITE / sizeof SUITE[0])
static const char *const SU_FORMATS[] = {"e4m3", "e5m2g", "e2m1", "nvfp4"};
#define SU_N_FORMATS 4

/* The split: FNV-1a (32 bits) of the name; its lowest bit, 1: test. */
static uint32_t suite_fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}
static int suite_test_half(const suite_setting *s) {
  return (int)(suite_fnv1a(s->name) & 1u);
}
static const char *suite_half(const suite_setting *s) {
  return suite_test_half(s) ? "test" : "tune";
}

static int suite_fp4(const suite_setting *s) {
  return strcmp(s->format, "e2m1") == 0 || strcmp(s->format, "nvfp4") == 0;
}

/* The halves as the rule gave them when it was fixed (2026-11-27, before
   any tuning), written down: every command refuses to run where the rule
   and this record disagree, so a renamed or added setting, or a changed
   rule, shows in the diff of this list. The other settings are the tune
   half: lm-e4m3-calm, lm-e5m2g-sgd-faults, lm-e2m1-lion-wsd,
   lm-e2m1-invsqrt, lm-e2m1-faults, lm-nvfp4-clip, lmw-e2m1-clip,
   mlp-e4m3-faults, mlp-e4m3-calm, and the later
   lm-e4m3-lion-noisy and lmw-e4m3-noisy (their four names were chosen
   before they were hashed; two fell to each half), and four of the
   heavy-tailed settings (2026-11-29): mlp-e4m3-heavy, mlp-e4m3-heavy-hilr,
   lm-e4m3-heavy, lmw-e5m2g-heavy. Those four names were chosen before they
   were hashed and all fell to the tune half; two more were then chosen,
   again before hashing and kept wherever they fell, and both fell to the
   test half (lm-e4m3-sgd-heavy, mlp-e4m3-heavy-lowlr). */
static const char *const SUITE_TEST_HALF[] = {
    "lm-e5m2g-calm",       "lm-e4m3-noisy",     "lm-e4m3-lion-faults",
    "lm-e2m1-clip",        "lm-e2m1-nowarm",    "lm-e2m1-sgd",
    "lm-e2m1-const-lowlr", "lm-nvfp4-invsqrt",  "lm-nvfp4-sgd-wsd",
    "lmw-nvfp4-wsd",       "mlp-e2m1-clip",     "lm-e5m2g-sgd-noisy",
    "mlp-e4m3-noisy",      "lm-e4m3-sgd-heavy", "mlp-e4m3-heavy-lowlr"};
#define SUITE_N_TEST (int)(sizeof SUITE_TEST_HALF / sizeof *SUITE_TEST_HALF)

/* The settings of set[0..n) whose half by the rule is not the record's
   (SUITE_TEST_HALF), said on `why` where it is not NULL. */
static int suite_record_errors(const suite_setting *set, int n, FILE *why) {
  int i, k, bad = 0;
  for (i = 0; i < n; i++) {
    int listed = 0;
    for (k = 0; k < SUITE_N_TEST; k++)
      listed |= strcmp(set[i].name, SUITE_TEST_HALF[k]) == 0;
    if (listed != suite_test_half(&set[i])) {
      if (why)
        fprintf(why,
                "suite: %s falls to the %s half by the rule, to the %s "
                "half by the record\n",
                set[i].name, suite_half(&set[i]), listed ? "test" : "tune");
      bad++;
    }
  }
  return bad;
}

/* Both halves of set[0..n) hold every format and every model; the number
   of (half, value) pairs missing (0: the split holds), each said on `why`
   where it is not NULL. */
static int suite_split_gaps(const suite_setting *set, int n, FILE *why) {
  int h, k, i, gaps = 0;
  for (h = 0; h < 2; h++) {
    for (k = 0; k < SU_N_FORMATS + 3; k++) {
      int seen = 0;
      for (i = 0; i < n; i++)
        if (suite_test_half(&set[i]) == h &&
            (k < SU_N_FORMATS ? strcmp(set[i].format, SU_FORMATS[k]) == 0
                              : set[i].model == k - SU_N_FORMATS))
          seen = 1;
      if (!seen) {
        if (why)
          fprintf(why, "suite: the %s half has no %s setting\n",
                  h ? "test" : "tune",
                  k < SU_N_FORMATS ? SU_FORMATS[k]
                                   : SU_MODEL[k - SU_N_FORMATS]);
        gaps++;
      }
    }
  }
  return gaps;
}

/* The settings in report order: the test half, then the tune half, each
   in SUITE's order; order[] gets their indices. */
static void suite_order(int *order) {
  int h, i, n = 0;
  for (h = 1; h >= 0; h--)
    for (i = 0; i < SUITE_N; i++)
      if (suite_test_half(&SUITE[i]) == h) order[n++] = i;
}

/* The arms of setting s (a static buffer: use it before the next call). */
static const char *suite_arms(const suite_setting *s) {
  static char arms[256];
  const int fp4_lm = s->model != SU_MLP && suite_fp4(s),
            adam = s->model == SU_MLP || strcmp(s->optimizer, "adamw") == 0;
  /* clip is a peer for faults: the settings without faults skip it (0.4's
     RESULTS has it on the FP4 runs, the tune half's on the calm MLP) */
  const int clip = !s->clip && s->events == SU_FAULTS,
            /* the controller's settings: its forward-signal choice too */
      forward = !fp4_lm || s->events == SU_FAULTS;
  snprintf(arms, sizeof arms, "f32,lowp%s,gnmr%s%s%s%s", clip ? ",clip" : "",
           forward ? ",forward" : "",
           fp4_lm ? ",place-plan-10,place-planf-10,place-late-10" : "",
           s->events == SU_FAULTS ? ",gstab" : "",
           s->events == SU_FAULTS && adam ? ",spam" : "");
  return arms;
}

/* The demo's options for setting s (no arms, seeds, steps or output). */
static void suite_args(const suite_setting *s, char *buf, size_t cap) {
  int fp8g = strcmp(s->format, "e5m2g") == 0;
  buf[0] = 0;
  if (s->model == SU_MLP) {
    snprintf(buf, cap, "--hidden 128,64,32 --format %s --lr %s%s%s%s",
             s->format, s->lr, s->events == SU_FAULTS ? " --stress 8" : "",
             s->events == SU_NOISY   ? " --batch 16"
             : s->events == SU_HEAVY ? " --heavy 3 --batch 16"
                                     : "",
             s->clip ? " --global-clip 1.0" : "");
    return;
  }
  snprintf(buf, cap,
           "--format %s%s --optimizer %s --schedule %s --warmup %s --lr "
           "%s%s%s%s%s",
           fp8g ? "e4m3" : s->format, fp8g ? " --grad-format e5m2" : "",
           s->optimizer, s->schedule, s->warmup, s->lr,
           s->model == SU_LM_WIDE ? " --dim 96 --heads 4" : "",
           s->events == SU_FAULTS ? " --stress 24" : "",
           s->events == SU_NOISY   ? " --batch 2"
           : s->events == SU_HEAVY ? " --batch 1"
                                   : "",
           s->clip ? " --global-clip 1.0" : "");
}

static void suite_list(void) {
  int order[SUITE_N], k;
  char args[512];
  suite_order(order);
  printf("%-20s %-4s %-8s %-7s %-5s %-5s %-8s %-6s %-5s %-4s %s\n", "setting",
         "half", "fnv1a", "model", "fmt", "optim", "sched", "warmup", "lr",
         "clip", "events");
  for (k = 0; k < SUITE_N; k++) {
    const suite_setting *s = &SUITE[order[k]];
    printf("%-20s %-4s %08x %-7s %-5s %-5s %-8s %-6s %-5s %-4s %s\n", s->name,
           suite_half(s), (unsigned)suite_fnv1a(s->name), SU_MODEL[s->model],
           s->format, s->optimizer, s->schedule, s->warmup, s->lr,
           s->clip ? "yes" : "no", SU_EVENTS[s->events]);
  }
  printf("\ncommands (plus --seed S --seeds 1 --steps N --arms A --out D):\n");
  for (k = 0; k < SUITE_N; k++) {
    const suite_setting *s = &SUITE[order[k]];
    suite_args(s, args, sizeof args);
    printf("  %s: %s %s --arms %s\n", s->name,
           s->model == SU_MLP ? "train_stress" : "train_lm", args,
           suite_arms(s));
  }
}

/* ---- running ------------------------------------------------------------- */

typedef struct suite_opts {
  const char *dir, *bin, *data, *only;
  const char *arms; /* --arms: every selected setting's arms, or NULL */
  int jobs, steps, seeds, eval;
} suite_opts;

static int suite_selected(const suite_opts *o, const char *name) {
  const char *p = o->only;
  size_t n = strlen(name);
  if (!p) return 1;
  while (*p) {
    size_t w = strcspn(p, ",");
    if (w == n && strncmp(p, name, n) == 0) return 1;
    p += w + (p[w] == ',');
  }
  return 0;
}

static int suite_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static double suite_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct suite_job {
  int setting, seed;
  pid_t pid;
  double t0;
} suite_job;

/* A run's steps: --steps, else the model's default. */
static int suite_steps(const suite_opts *o, const suite_setting *s) {
  return o->steps > 0 ? o->steps : s->model == SU_MLP ? 1000 : 500;
}

/* What a run of setting s costs, in units of an MLP arm-step: its arms
   times its steps times the model's cost per arm-step, read off the
   2-vCPU Xeon on 2026-11-28 (an MLP arm of 1000 steps took about
   3 s, the LM's 500 about 45 s at width 64 and 85 s at width 96; a noisy
   LM run, batch 2 of 8, about 0.3 of that; a heavy-tailed one, batch 1,
   about the same, 13 s at width 64, its validation the most of it). Only the
   progress line's estimate of what is left reads it. */
static double suite_cost(const suite_opts *o, const suite_setting *s) {
  const char *a = suite_arms(s);
  int arms = 1;
  for (; *a; a++) arms += *a == ',';
  return arms * (double)suite_steps(o, s) *
         (s->model == SU_MLP  ? 1.0
          : s->model == SU_LM ? 30.0
                              : 57.0) *
         (s->model != SU_MLP && (s->events == SU_NOISY || s->events == SU_HEAVY)
              ? 0.3
              : 1.0);
}

/* Starts job j: a child that runs the demo into DIR/.tmp/<setting>-s<seed>
   (its log beside it) and exits with its status. */
static pid_t suite_start(const suite_opts *o, const suite_job *j) {
  const suite_setting *s = &SUITE[j->setting];
  char args[512], cmd[8192], tmp[1024];
  pid_t pid;
  int steps = suite_steps(o, s);
  suite_args(s, args, sizeof args);
  snprintf(tmp, sizeof tmp, "%s/.tmp/%s-s%d", o->dir, s->name, j->seed);
  if (s->model == SU_MLP)
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && %s/train_stress --quiet %s --seed %d --seeds 1 "
             "--steps %d --arms %s --out '%s' > '%s.log' 2>&1",
             tmp, o->bin, args, j->seed, steps,
             o->arms ? o->arms : suite_arms(s), tmp, tmp);
  else
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && %s/train_lm --quiet --threads 1 --data '%s' "
             "--setting %s %s --seed %d --seeds 1 --steps %d --eval %d "
             "--arms %s --out '%s' > '%s.log' 2>&1",
             tmp, o->bin, o->data, s->name, args, j->seed, steps,
             o->eval > 0 ? o->eval : 512, o->arms ? o->arms : suite_arms(s),
             tmp, tmp);
  fflush(stdout);
  pid = fork();
  if (pid < 0) ef_die("fork failed");
  if (pid == 0) {
    int rc = system(cmd);
    _exit(rc == 0 ? 0 : 1);
  }
  return pid;
}

/* Runs every selected setting x seed whose DIR/<setting>/s<seed>/
   summary.csv is missing, o->jobs at a time; progress on
   stdout. The tune half runs first (SUITE's order backwards): a session
   can read it while the test half runs, and a suite cut short leaves what
   tuning needs. Returns the number of runs that failed. */
static int suite_run(const suite_opts *o) {
  suite_job todo[SUITE_N * 16], running[16];
  int order[SUITE_N], n = 0, done = 0, failed = 0, skipped = 0, k, s, r;
  int n_run = 0, next = 0, seeds = o->seeds > 0 ? o->seeds : 3;
  double t_start = suite_now(), busy = 0, cost_done = 0, cost_all = 0;
  char path[1200];
  if (strchr(o->dir, '\'') || strchr(o->data, '\''))
    ef_die("no quotes in DIR or --data");
  suite_order(order);
  for (k = SUITE_N - 1; k >= 0; k--) { /* the tune half first */
    if (!suite_selected(o, SUITE[order[k]].name)) continue;
    for (s = 1; s <= seeds && s <= 16; s++) {
      snprintf(path, sizeof path, "%s/%s/s%d/summary.csv", o->dir,
               SUITE[order[k]].name, s);
      if (suite_exists(path)) {
        skipped++;
        continue;
      }
      todo[n].setting = order[k];
      todo[n].seed = s;
      n++;
    }
  }
  for (k = 0; k < n; k++) cost_all += suite_cost(o, &SUITE[todo[k].setting]);
  printf("suite: %d run(s) to do, %d already in %s, %d at a time\n", n, skipped,
         o->dir, o->jobs);
  snprintf(path, sizeof path, "mkdir -p '%s/.tmp'", o->dir);
  if (n > 0 && system(path) != 0) ef_die("cannot create %s/.tmp", o->dir);
  while (done < n) {
    int status;
    pid_t pid;
    while (n_run < o->jobs && next < n) {
      running[n_run] = todo[next++];
      running[n_run].t0 = suite_now();
      running[n_run].pid = suite_start(o, &running[n_run]);
      n_run++;
    }
    pid = wait(&status);
    if (pid < 0) ef_die("wait failed");
    for (r = 0; r < n_run && running[r].pid != pid; r++) continue;
    if (r == n_run) continue;
    {
      const suite_job *j = &running[r];
      const suite_setting *st = &SUITE[j->setting];
      double took = suite_now() - j->t0, elapsed;
      int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      char tmp[1100], dst[1100], cmd[2400];
      snprintf(tmp, sizeof tmp, "%s/.tmp/%s-s%d", o->dir, st->name, j->seed);
      snprintf(dst, sizeof dst, "%s/%s/s%d", o->dir, st->name, j->seed);
      if (ok) {
        snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && rm -rf '%s'", o->dir,
                 st->name, dst);
        ok = system(cmd) == 0 && rename(tmp, dst) == 0;
      }
      done++;
      failed += !ok;
      busy += took;
      cost_done += suite_cost(o, st);
      elapsed = suite_now() - t_start;
      /* what is left at the time per unit of cost so far, o->jobs at a
         time (the settings' costs differ up to a hundredfold) */
      printf("[%d/%d] %-20s seed %d (%s) %s in %.0f s; %.0f s so far, about "
             "%.0f s left\n",
             done, n, st->name, j->seed, suite_half(st), ok ? "done" : "FAILED",
             took, elapsed,
             busy / cost_done * (cost_all - cost_done) / o->jobs);
      if (!ok) printf("  its log: %s.log\n", tmp);
      fflush(stdout);
      running[r] = running[--n_run];
    }
  }
  if (n > 0)
    printf("suite: %d run(s) in %.0f s (%.0f s of runs), %d failed\n", n,
           suite_now() - t_start, busy, failed);
  return failed;
}

/* ---- the report ---------------------------------------------------------- */

/* The setting of SUITE named `name`, or -1. */
static int suite_find(const char *name) {
  int i;
  for (i = 0; i < SUITE_N; i++)
    if (strcmp(SUITE[i].name, name) == 0) return i;
  return -1;
}

/* The mean over `used` settings of each one's mean served gap recovered
   over its seeds (gap[i * EF_MAX_SEEDS + k], k < n[i]: per seed, paired
   with lowp and f32 of that seed), and its interval (ef_boot_groups: each
   setting's seeds resampled on their own; the settings are not
   resampled, so the interval is conditional on them). */
static double suite_mean_over(const double *gap, const int *n, int used,
                              double *lo, double *hi) {
  double sum = 0;
  int i;
  for (i = 0; i < used; i++) sum += ef_mean(gap + i * EF_MAX_SEEDS, n[i]);
  ef_boot_groups(gap, n, used, lo, hi);
  return used ? sum / used : NAN;
}

static const char SUITE_MEANS_NOTE[] =
    "[95%% CI]: a paired bootstrap over seeds, each setting's seeds "
    "resampled on their own (%d draws, a fixed RNG seed); conditional on "
    "these settings: the settings are not resampled, so it says nothing of "
    "settings not run\n";

/* Per half (test first) and arm: the mean over settings of the arm's
   served gap recovered (its mean over seeds), over the settings whose
   lowp - f32 served gap is measurable (ef_measurable) only, its interval
   (suite_mean_over), and how many settings those are of the arm's.
   ef_set[0 .. n) in report order; on out. */
static void suite_means(int n, FILE *out) {
  static double gaps[EF_MAX_SETTINGS * EF_MAX_SEEDS];
  int ns[EF_MAX_SETTINGS];
  char names[EF_MAX_ARMS][EF_NAME];
  int n_names = 0, h, i, j, t;
  for (i = 0; i < n; i++)
    for (j = 0; j < ef_set[i].n_arms; j++) {
      const ef_arm *a = &ef_set[i].arm[j];
      if (ef_all_f32(a) || strcmp(a->name, "lowp") == 0) continue;
      for (t = 0; t < n_names; t++)
        if (strcmp(names[t], a->name) == 0) break;
      if (t == n_names && n_names < EF_MAX_ARMS)
        snprintf(names[n_names++], EF_NAME, "%s", a->name);
    }
  fprintf(out, "\nmeans of the served gap recovered over the settings with a "
               "measurable served gap [95%% CI] (settings counted / settings "
               "run):\n");
  for (h = 1; h >= 0; h--)
    for (t = 0; t < n_names; t++) {
      double m, lo, hi;
      int used = 0, run = 0;
      for (i = 0; i < n; i++) {
        const ef_setting *s = &ef_set[i];
        const ef_arm *a = ef_find(s, names[t]);
        double ci[3];
        if (!a || suite_test_half(&SUITE[suite_find(s->name)]) != h) continue;
        run++;
        if (!ef_measurable(s, EF_SERVED, &m, &lo, &hi)) continue;
        ef_gap_ci(s, a, EF_SERVED, gaps + used * EF_MAX_SEEDS, ci);
        if (isnan(ci[0])) continue;
        ns[used++] = a->n;
      }
      if (run == 0) continue;
      fprintf(out, "  %-4s %-18s ", h ? "test" : "tune", names[t]);
      if (used) {
        m = suite_mean_over(gaps, ns, used, &lo, &hi);
        ef_print_ci(out, m, lo, hi, 1);
        fprintf(out, " (%d/%d)\n", used, run);
      } else
        fprintf(out, "%7s (0/%d)\n", "-", run);
    }
  fprintf(out, SUITE_MEANS_NOTE, EF_BOOT);
}

/* suite means FILE [--only A,B]: the same means and intervals
   (suite_mean_over) from per-seed figures in a CSV whose header names the
   columns setting, arm, seed and gap_recovered_served (a fraction; the
   suite's summary.csv has them, or figures written down from a report).
   Every setting in FILE, or in --only, counts: no lowp or f32 loss is read,
   so the caller names the settings with a measurable gap. Rows with an
   empty gap are skipped. On out; returns 0, or 1 where FILE holds no such
   row. */
static int suite_means_file(const char *path, const char *only, FILE *out) {
  static double gaps[EF_MAX_ARMS][EF_MAX_SETTINGS * EF_MAX_SEEDS];
  static char arms[EF_MAX_ARMS][EF_NAME], sets[EF_MAX_SETTINGS][EF_NAME];
  static int ns[EF_MAX_ARMS][EF_MAX_SETTINGS];
  FILE *f = ef_open(path, "r");
  char line[1024], hline[1024], *head[64], *v[64];
  int nh, c_set, c_arm, c_seed, c_gap, n_arms = 0, n_sets = 0, a, i, rows = 0;
  suite_opts sel;
  memset(&sel, 0, sizeof sel);
  sel.only = only;
  memset(ns, 0, sizeof ns);
  if (!fgets(hline, sizeof hline, f)) ef_die("%s is empty", path);
  nh = ef_split(hline, head, 64);
  c_set = ef_column(head, nh, "setting", NULL);
  c_arm = ef_column(head, nh, "arm", NULL);
  c_seed = ef_column(head, nh, "seed", NULL);
  c_gap = ef_column(head, nh, "gap_recovered_served", NULL);
  if (c_set < 0 || c_arm < 0 || c_seed < 0 || c_gap < 0)
    ef_die("%s: no setting, arm, seed and gap_recovered_served columns", path);
  while (fgets(line, sizeof line, f)) {
    int n = ef_split(line, v, 64);
    if (n < nh || !v[c_gap][0] || !suite_selected(&sel, v[c_set])) continue;
    for (a = 0; a < n_arms && strcmp(arms[a], v[c_arm]) != 0; a++) continue;
    for (i = 0; i < n_sets && strcmp(sets[i], v[c_set]) != 0; i++) continue;
    if (a == EF_MAX_ARMS || i == EF_MAX_SETTINGS)
      ef_die("%s: more than %d arms or %d settings", path, EF_MAX_ARMS,
             EF_MAX_SETTINGS);
    if (a == n_arms) snprintf(arms[n_arms++], EF_NAME, "%.47s", v[c_arm]);
    if (i == n_sets) snprintf(sets[n_sets++], EF_NAME, "%.47s", v[c_set]);
    if (ns[a][i] == EF_MAX_SEEDS)
      ef_die("%s: %s, %s: more than %d seeds", path, sets[i], arms[a],
             EF_MAX_SEEDS);
    gaps[a][i * EF_MAX_SEEDS + ns[a][i]++] = atof(v[c_gap]);
    rows++;
  }
  fclose(f);
  if (rows == 0) {
    fprintf(stderr, "suite: no gap_recovered_served figure in %s\n", path);
    return 1;
  }
  fprintf(out,
          "means of the served gap recovered over the settings of %s "
          "[95%% CI] (settings):\n",
          path);
  for (a = 0; a < n_arms; a++) {
    /* the arm's settings, packed in FILE's order */
    double m, lo, hi;
    int used = 0, nn[EF_MAX_SETTINGS];
    for (i = 0; i < n_sets; i++)
      if (ns[a][i] > 0) {
        if (used != i)
          memcpy(gaps[a] + used * EF_MAX_SEEDS, gaps[a] + i * EF_MAX_SEEDS,
                 sizeof(double) * EF_MAX_SEEDS);
        nn[used++] = ns[a][i];
      }
    m = suite_mean_over(gaps[a], nn, used, &lo, &hi);
    fprintf(out, "  %-18s ", arms[a]);
    ef_print_ci(out, m, lo, hi, 1);
    fprintf(out, " (%d)\n", used);
  }
  fprintf(out, SUITE_MEANS_NOTE, EF_BOOT);
  return 0;
}

/* Reads DIR with efficacy.c, keeps the suite's settings in report order
   (test half first), writes DIR/summary.csv and DIR/frontier.svg and a
   table on stdout. */
static void suite_report(const char *dir) {
  static ef_setting keep[EF_MAX_SETTINGS];
  int order[SUITE_N], n = 0, k, i, j, m;
  char path[1100];
  FILE *f;
  ef_scan(dir);
  suite_order(order);
  for (k = 0; k < SUITE_N; k++)
    for (i = 0; i < ef_n_set; i++)
      if (strcmp(ef_set[i].name, SUITE[order[k]].name) == 0)
        keep[n++] = ef_set[i];
  for (i = 0; i < n; i++) ef_set[i] = keep[i];
  ef_n_set = n;
  if (n == 0) ef_die("no setting of the suite in %s", dir);
  snprintf(path, sizeof path, "%.900s/summary.csv", dir);
  f = ef_open(path, "w");
  fprintf(f, "setting,half,arm,seed,val_loss,hf_unit_steps,hf_flops,"
             "gap_recovered,val_loss_served,gap_recovered_served\n");
  printf("\n%-20s %-4s %-14s %5s %9s %9s %9s %9s %9s  %s\n", "setting", "half",
         "arm", "seeds", "val_loss", "gap_rec", "hf_steps", "hf_flops",
         "served", "gap_rec served [95% CI]");
  for (i = 0; i < n; i++) {
    const ef_setting *s = &ef_set[i];
    const char *half = suite_half(&SUITE[suite_find(s->name)]);
    double gm, glo, ghi;
    int meas = ef_measurable(s, EF_SERVED, &gm, &glo, &ghi);
    if (!isnan(gm)) {
      printf("%-20s %-4s lowp - f32 served ", s->name, half);
      ef_print_ci(stdout, gm, glo, ghi, 0);
      printf("%s\n", meas         ? ": measurable"
                     : isnan(glo) ? ": one seed, no interval"
                                  : ": no measurable gap (left out of the "
                                    "means)");
    }
    for (j = 0; j < s->n_arms; j++) {
      ef_arm *a = &ef_set[i].arm[j];
      double gap[EF_MAX_SEEDS], gs[EF_MAX_SEEDS], ci[3];
      for (m = 0; m < a->n; m++) {
        if (ef_all_f32(a)) a->hf[m] = 1; /* the demos count control only */
        gap[m] = ef_gap(s, a, m);
        gs[m] = ef_gap_ev(s, a, m, EF_SERVED);
        fprintf(f, "%s,%s,%s,%d,%.6f,%.6f,", s->name, half, a->name, a->seed[m],
                a->loss[m], a->hf[m]);
        if (isnan(a->flops[m]))
          fprintf(f, ",");
        else
          fprintf(f, "%.6f,", a->flops[m]);
        if (!isnan(gap[m])) fprintf(f, "%.4f", gap[m]);
        fprintf(f, ",");
        if (!isnan(a->served[m])) fprintf(f, "%.6f", a->served[m]);
        fprintf(f, ",");
        if (!isnan(gs[m])) fprintf(f, "%.4f", gs[m]);
        fprintf(f, "\n");
      }
      printf("%-20s %-4s %-14s %5d %9.4f ", s->name, half, a->name, a->n,
             ef_mean(a->loss, a->n));
      if (isnan(ef_mean(gap, a->n)))
        printf("%9s ", "");
      else
        printf("%8.0f%% ", 100 * ef_mean(gap, a->n));
      printf("%8.2f%% ", 100 * ef_mean(a->hf, a->n));
      if (isnan(ef_mean(a->flops, a->n)))
        printf("%9s ", "");
      else
        printf("%8.2f%% ", 100 * ef_mean(a->flops, a->n));
      if (isnan(ef_mean(a->served, a->n)))
        printf("%9s  ", "");
      else
        printf("%9.4f  ", ef_mean(a->served, a->n));
      ef_gap_ci(s, a, EF_SERVED, gs, ci);
      ef_print_ci(stdout, ci[0], ci[1], ci[2], 1);
      printf("\n");
    }
  }
  if (fclose(f) != 0) ef_die("writing %s failed", path);
  suite_means(n, stdout);
  /* The frontier's panels: each setting's name and half. */
  for (i = 0; i < n; i++) {
    char name[EF_NAME];
    snprintf(name, sizeof name, "%.38s (%s)", ef_set[i].name,
             suite_half(&SUITE[suite_find(ef_set[i].name)]));
    memcpy(ef_set[i].name, name, sizeof name);
  }
  ef_frontier_svg(dir);
  printf("\nval_loss: LM bits per byte, MLP test cross-entropy (mean over "
         "seeds); gap_rec: (lowp - arm) / (lowp - f32), same seed;\n"
         "hf_steps, hf_flops: the shares of unit-steps and of the units' GEMM "
         "FLOPs on the high-fidelity path (hf_flops: LM only)\n"
         "outputs in %s/: summary.csv frontier.svg, and each run's own in "
         "<setting>/s<seed>/\n",
         dir);
}

static void suite_usage(void) {
  fprintf(stderr,
          "usage: suite list | suite run DIR [--jobs J] [--steps N] "
          "[--seeds N] [--eval N] [--only A,B] [--arms A,B] [--bin DIR] "
          "[--data DIR] | "
          "suite report DIR | suite means FILE [--only A,B]\n");
  exit(2);
}

static int suite_int(const char *v, int lo, int hi) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || end == v || x < lo || x > hi) suite_usage();
  return (int)x;
}

#ifndef SUITE_NO_MAIN
int main(int argc, char **argv) {
  suite_opts o;
  int i;
  if (suite_split_gaps(SUITE, SUITE_N, stderr) != 0 ||
      suite_record_errors(SUITE, SUITE_N, stderr) != 0)
    return 1;
  if (argc == 2 && strcmp(argv[1], "list") == 0) {
    suite_list();
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "report") == 0) {
    suite_report(argv[2]);
    return 0;
  }
  if ((argc == 3 || (argc == 5 && strcmp(argv[3], "--only") == 0)) &&
      strcmp(argv[1], "means") == 0)
    return suite_means_file(argv[2], argc == 5 ? argv[4] : NULL, stdout);
  if (argc < 3 || strcmp(argv[1], "run") != 0) suite_usage();
  memset(&o, 0, sizeof o);
  o.dir = argv[2];
  o.bin = "build";
  o.data = "/usr/share/games/fortunes";
  o.jobs = 2;
  for (i = 3; i + 1 < argc; i += 2) {
    const char *f = argv[i], *v = argv[i + 1];
    if (strcmp(f, "--jobs") == 0)
      o.jobs = suite_int(v, 1, 16);
    else if (strcmp(f, "--steps") == 0)
      o.steps = suite_int(v, 2, 10000000);
    else if (strcmp(f, "--seeds") == 0)
      o.seeds = suite_int(v, 1, 16);
    else if (strcmp(f, "--eval") == 0)
      o.eval = suite_int(v, 1, 1 << 20);
    else if (strcmp(f, "--only") == 0)
      o.only = v;
    else if (strcmp(f, "--arms") == 0)
      o.arms = v;
    else if (strcmp(f, "--bin") == 0)
      o.bin = v;
    else if (strcmp(f, "--data") == 0)
      o.data = v;
    else
      suite_usage();
  }
  if (i != argc || strlen(o.dir) > 900) suite_usage();
  if (o.arms && (strlen(o.arms) > 1000 || !o.arms[0] ||
                 strspn(o.arms, "abcdefghijklmnopqrstuvwxyz0123456789.,-") !=
                     strlen(o.arms)))
    ef_die("--arms: a comma-separated list of the demo's arm names");
  if (o.only)
    for (i = 0; o.only[i];) {
      char name[EF_NAME];
      size_t w = strcspn(o.only + i, ",");
      snprintf(name, sizeof name, "%.*s", (int)w, o.only + i);
      if (suite_find(name) < 0) ef_die("--only: no setting '%s'", name);
      i += (int)w + (o.only[i + (int)w] == ',');
    }
  if (suite_run(&o) != 0) return 1;
  suite_report(o.dir);
  return 0;
}
#endif
