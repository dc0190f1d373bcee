/* What the targets table reads (noise-aware defaults). */
static double tg_rec[4], tg_fa[4], tg_fall12, tg_fa12, tg_grec12, tg_gfalse12;
static int tg_dominated[4]; /* a peer better on both recall and FA */
/* The same on the many-seeds table (0: not run; its peer: rolling 6). */
static double tm_rec[4], tm_fa[4], tm_fall12, tm_grec12, tm_gfalse12;
static int tm_dominated[4], tm_run;
static double tg_adm[2], tg_rise1[2], tg_glob[2];
static int tg_real = 0;
#define NSIG 4

/* The section's heading and what it measured on. */
static void table_intro(const char *cpu, const char *when) {
  fprintf(md, "## Detection\n\n");
  fprintf(md,
          "`lab/detect/`: which unit-steps each rule "
          "flags, against ground truth. Command: `make detect` (builds with "
          "`-O2`, unpacks `bench/data/` into `build/data/`, runs `build/detect "
          "--data build/data --md build/detect.md` and puts this section into "
          "bench/RESULTS.md). Machine: %s, one core; gcc -O2. gnmr.h %s. "
          "Run %s UTC.\n\n",
          cpu, gnmr_version(), when);
}

/* The synthetic tables: every detector per noise level, then held-out
   seeds. */
static void tables_synthetic(unsigned seeds, unsigned long long seed_base) {
  int si, k;
  /* ---- synthetic ---- */
  if (seeds) {
    fprintf(md, "### Synthetic traces with ground truth\n\n");
    fprintf(md,
            "64 units, 4000 steps, %u seeds per noise level (seeds 1000 i + "
            "%llu + j). Each unit: a "
            "log-uniform base scale (1e-3 to 1), log-normal AR(1) noise "
            "(correlation 0.7, innovation std sigma; the log's own std is "
            "1.4 sigma), a slow drift (a sine of amplitude 0.3 in the log, "
            "period 1500-6000 steps, and every unit halving over the run). "
            "Benign hard batches on 2%% of steps raise every unit 1.3-1.7x. "
            "Local events (start probability 0.08 per step after step 150): "
            "1-3 units for 1-5 steps, three quarters rises x1.8-x50, one "
            "quarter falls x0.02-x0.2 (log-uniform), 3%% of event unit-steps "
            "NaN. Global events (about one per 200 steps after step 200): "
            "1-3 steps, 70-100%% of units x3-x20 each (x0.8-1.25 jitter per "
            "unit); no local event within 3 steps of one.\n\n",
            seeds, seed_base);
    fprintf(md,
            "Recall: share of event units flagged (rise: RISE or NONFINITE; "
            "fall: FALL or NONFINITE) on some step of the event. False "
            "alarms: flagged unit-steps outside events and global events, per "
            "unit-step. Latency: steps from the event's start to its first "
            "flag (caught events). Admissions and recovery unit-steps per 1000 "
            "steps: maxO 4, lock 5, cooldown 4 (the library's own admissions "
            "for the paper rules; the same admission rules re-implemented for "
            "the others). Peers flag falls with their mirror rule (z below "
            "-threshold); the paper and AdaGC flag rises only. Each unit of an "
            "event counts once in recall. Rows: noise-aware = gnmr.h's NOISE "
            "mode (`gnmr_step`) with the prototype's defaults, checked bit for "
            "bit against `proto_step` in lab/detect/proto.h on every "
            "unit-step; each ablation changes one thing; the z_rise 4.1 "
            "variant shows the "
            "other side of the recall / false-alarm knee.\n\n");

    {
      tally ty[NSIG][D_COUNT], gc[NSIG], gr[NSIG];
      memset(ty, 0, sizeof ty);
      memset(gc, 0, sizeof gc);
      memset(gr, 0, sizeof gr);
      for (si = 0; si < NSIG; si++) {
        unsigned sd;
        for (sd = 0; sd < seeds; sd++) {
          synth s;
          synth_make(&s, sigmas[si], 1000ull * (unsigned)si + sd + seed_base);
          for (k = 0; k < D_COUNT; k++) run_synth(&s, k, &ty[si][k], NULL);
          run_synth_global_peers(&s, &gc[si], &gr[si]);
          synth_free(&s);
        }
      }
      for (si = 0; si < NSIG; si++) {
        fprintf(md,
                "**sigma %.2f** (%.0f rise and %.0f fall event units)\n\n"
                "| detector | rise recall | fall recall | false alarms | "
                "latency (steps) | admissions / 1000 steps | recovery "
                "unit-steps / 1000 steps |\n|---|---:|---:|---:|---:|---:|---:|"
                "\n",
                sigmas[si], ty[si][0].rise_n, ty[si][0].fall_n);
        for (k = 0; k < D_COUNT; k++) {
          tally *t = &ty[si][k];
          fprintf(md, "| %s | %.3f | %.3f | %.3f%% | %.2f | %.1f | %.0f |\n",
                  det_name[k], t->rise_hit / t->rise_n, t->fall_hit / t->fall_n,
                  100.0 * t->fa / t->fa_n,
                  t->rise_hit + t->fall_hit > 0
                      ? (t->rise_lat + t->fall_lat) /
                            (t->rise_hit + t->fall_hit)
                      : 0.0,
                  1000.0 * t->adm / t->steps, 1000.0 * t->rec / t->steps);
        }
        fprintf(md, "\n");
      }
      for (si = 0; si < NSIG; si++) {
        tally *p = &ty[si][D_PROTO];
        tg_rec[si] = p->rise_hit / p->rise_n;
        tg_fa[si] = 100.0 * p->fa / p->fa_n;
        for (k = D_PAPER; k <= D_ROLL6; k++) {
          tally *q = &ty[si][k];
          if (q->rise_hit / q->rise_n > tg_rec[si] &&
              100.0 * q->fa / q->fa_n < tg_fa[si])
            tg_dominated[si] = 1;
        }
      }
      tg_fall12 = ty[1][D_PROTO].fall_hit / ty[1][D_PROTO].fall_n;
      tg_fa12 = tg_fa[1];
      tg_grec12 = ty[1][D_PROTO].g_hit / ty[1][D_PROTO].g_n;
      tg_gfalse12 = 1e4 * ty[1][D_PROTO].g_false / ty[1][D_PROTO].g_free;
      fprintf(md,
              "**Global events**: recall (flagged on some step of "
              "the event) and false global steps per 10,000 steps outside "
              "global events (hard batches included).\n\n"
              "| sigma | events | noise-aware: recall | false / 10k | paper "
              "flags > 20%% of units: recall | false / 10k | rolling 6-sigma z "
              "of the global norm: recall | false / 10k |\n"
              "|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (si = 0; si < NSIG; si++) {
        tally *p = &ty[si][D_PROTO];
        fprintf(
            md, "| %.2f | %.0f | %.3f | %.1f | %.3f | %.1f | %.3f | %.1f |\n",
            sigmas[si], p->g_n, p->g_hit / p->g_n, 1e4 * p->g_false / p->g_free,
            gc[si].g_hit / gc[si].g_n, 1e4 * gc[si].g_false / gc[si].g_free,
            gr[si].g_hit / gr[si].g_n, 1e4 * gr[si].g_false / gr[si].g_free);
      }
      fprintf(md, "\n");
    }
    {
      /* Held-out seeds: the defaults were chosen on seeds 1-4 (and quick
         runs on seed 1); these traces did not choose them. */
      static const int hk[] = {D_PAPER, D_ROLL6, D_PROTO, D_PROTO_Z41,
                               D_ORACLE};
      tally ht[NSIG][5];
      unsigned sd;
      memset(ht, 0, sizeof ht);
      for (si = 1; si < NSIG; si++)
        for (sd = 0; sd < seeds; sd++) {
          synth s;
          synth_make(&s, sigmas[si],
                     1000ull * (unsigned)si + sd + seed_base + 500);
          for (k = 0; k < 5; k++) run_synth(&s, hk[k], &ht[si][k], NULL);
          synth_free(&s);
        }
      fprintf(md,
              "**Held-out seeds** (%u other seeds per sigma, 1000 i + %llu + "
              "j; not used to choose the defaults): rise recall / false "
              "alarms.\n\n"
              "| detector | sigma 0.12 | sigma 0.25 | sigma 0.40 |\n"
              "|---|---|---|---|\n",
              seeds, seed_base + 500);
      for (k = 0; k < 5; k++) {
        fprintf(md, "| %s |", det_name[hk[k]]);
        for (si = 1; si < NSIG; si++)
          fprintf(md, " %.3f / %.3f%% |", ht[si][k].rise_hit / ht[si][k].rise_n,
                  100.0 * ht[si][k].fa / ht[si][k].fa_n);
        fprintf(md, "\n");
      }
      fprintf(md, "\n");
    }
  }
}

/* The defaults on many seeds. */
static void table_many(unsigned many, unsigned long long many_base) {
  int si, k;
  if (many) {
    /* Many seeds: what the defaults give on average. Four seeds are not
       enough to read a target off to 0.01: a rise recall at sigma 0.4
       counts about 1700 events (standard error about 0.01), and seeds 1-4
       happen to sit above the mean there. */
    static const int mk[] = {D_ROLL6, D_PROTO, D_PROTO_Z41, D_ORACLE};
    enum { MK = sizeof mk / sizeof mk[0] };
    tally mt[NSIG][MK];
    unsigned sd;
    memset(mt, 0, sizeof mt);
    for (si = 1; si < NSIG; si++)
      for (sd = 0; sd < many; sd++) {
        synth s;
        synth_make(&s, sigmas[si], 1000ull * (unsigned)si + sd + many_base);
        for (k = 0; k < MK; k++) run_synth(&s, mk[k], &mt[si][k], NULL);
        synth_free(&s);
      }
    fprintf(md,
            "**Many seeds** (%u seeds per sigma, 1000 i + %llu + j; not used "
            "to choose the defaults): rise recall / false alarms, and for the "
            "noise-aware rule fall recall and global events.\n\n"
            "| detector | sigma 0.12 | sigma 0.25 | sigma 0.40 |\n"
            "|---|---|---|---|\n",
            many, many_base);
    for (k = 0; k < MK; k++) {
      fprintf(md, "| %s |", det_name[mk[k]]);
      for (si = 1; si < NSIG; si++)
        fprintf(md, " %.3f / %.3f%% |", mt[si][k].rise_hit / mt[si][k].rise_n,
                100.0 * mt[si][k].fa / mt[si][k].fa_n);
      fprintf(md, "\n");
    }
    fprintf(md, "| noise-aware: fall recall |");
    for (si = 1; si < NSIG; si++)
      fprintf(md, " %.3f |", mt[si][1].fall_hit / mt[si][1].fall_n);
    fprintf(md, "\n| noise-aware: global recall / false per 10k steps |");
    for (si = 1; si < NSIG; si++)
      fprintf(md, " %.3f / %.1f |", mt[si][1].g_hit / mt[si][1].g_n,
              1e4 * mt[si][1].g_false / mt[si][1].g_free);
    fprintf(md, "\n\n");
    for (si = 1; si < NSIG; si++) {
      tally *p = &mt[si][1], *q = &mt[si][0];
      tm_rec[si] = p->rise_hit / p->rise_n;
      tm_fa[si] = 100.0 * p->fa / p->fa_n;
      tm_dominated[si] = q->rise_hit / q->rise_n > tm_rec[si] &&
                         100.0 * q->fa / q->fa_n < tm_fa[si];
    }
    tm_fall12 = mt[1][1].fall_hit / mt[1][1].fall_n;
    tm_grec12 = mt[1][1].g_hit / mt[1][1].g_n;
    tm_gfalse12 = 1e4 * mt[1][1].g_false / mt[1][1].g_free;
    tm_run = 1;
  }
}

/* The real traces: false alarms, injected rises and falls, the verdict on
   the unstable runs. 1 where a trace cannot be read. */
static int tables_real(const char *data, unsigned reps) {
  int i, k;
  /* ---- real traces ---- */
  if (!data) {
    fprintf(md, "Real traces: left out (no --data DIR).\n");
    fprintf(stderr, "detect: no --data: real-trace tables left out\n");
  } else {
    static const char *stable[] = {"trace_bf16_lr1e-3", "trace_fp8_lr1e-3"};
    static const char *unstable[] = {"trace_bf16_lr2e-2_w10",
                                     "trace_bf16_lr3e-2_w100"};
    static const int rkinds[] = {D_PAPER,          D_ADAGC,      D_ZCLIP,
                                 D_ROLL3,          D_ROLL6,      D_PROTO,
                                 D_PROTO_NOCOMMON, D_PROTO_NOAR, D_PROTO_Z41};
    char path[1024];
    fprintf(md, "### Real traces (bench/data/)\n\n");
    fprintf(md,
            "One unit per tensor (77), maxO 4, lock 8 (the default), "
            "cooldown 4. Stable runs as recorded: admissions per 1000 steps "
            "and flagged unit-steps per 1000 unit-steps (every one a false "
            "alarm), global steps per 1000 steps. Injected: every 20-30 "
            "steps after step 200 one random unit x3-x50 (rises) or "
            "x0.02-x0.2 (falls), log-uniform, for 1-3 steps; %u repetitions "
            "with different draws; caught within 1 step = flagged on the "
            "event's first or second step (second only when the event lasts "
            "2+ steps).\n\n",
            reps);
    for (i = 0; i < 2; i++) {
      trace tr;
      snprintf(path, sizeof path, "%s/%s.csv", data, stable[i]);
      if (trace_load(&tr, path)) {
        fprintf(stderr, "detect: cannot read %s\n", path);
        return 1;
      }
      fprintf(md,
              "**%s** (%u steps)\n\n| detector | admissions / 1000 steps | "
              "flags / 1000 unit-steps | global / 1000 steps | rises "
              "caught within 1 step | rises caught | falls caught within 1 "
              "step | falls caught |\n|---|---:|---:|---:|---:|---:|---:|---:|"
              "\n",
              stable[i], tr.T);
      for (k = 0; k < (int)(sizeof rkinds / sizeof rkinds[0]); k++) {
        double a, f, g, rn = 0, r1 = 0, ra = 0, fn = 0, f1 = 0, fa = 0;
        run_real(&tr, tr.norms, rkinds[k], NULL, NULL, NULL, &a, &f, &g);
        run_inject(&tr, rkinds[k], NULL, 0, reps, &rn, &r1, &ra);
        run_inject(&tr, rkinds[k], NULL, 1, reps, &fn, &f1, &fa);
        if (rkinds[k] == D_PROTO) {
          tg_adm[i] = a;
          tg_rise1[i] = r1 / rn;
          tg_glob[i] = g;
          tg_real = 1;
        }
        if (rkinds[k] >= D_PROTO)
          fprintf(md, "| %s | %.1f | %.2f | %.2f |", det_name[rkinds[k]], a, f,
                  g);
        else
          fprintf(md, "| %s | %.1f | %.2f | - |", det_name[rkinds[k]], a, f);
        fprintf(md, " %.3f | %.3f | %.3f | %.3f |\n", r1 / rn, ra / rn, f1 / fn,
                fa / fn);
      }
      fprintf(md, "\n");
      free(tr.norms);
    }
    char jump_what[2][256];
    fprintf(md, "**Unstable runs**. Jump steps: the global norm "
                "above 2x the median of its previous 32 steps (a reference "
                "independent of every rule). Admissions per 1000 steps before "
                "(paper rules; noise-aware rule with the step-level view off: "
                "no common view, no gate) and after (noise-aware defaults: "
                "common view on, no admissions on GLOBAL steps). The jump "
                "steps that are not GLOBAL (second table) are rises of the "
                "global norm carried by a few large units, with fewer than a "
                "quarter of the units doubled, or jumps against a lull of the "
                "previous 32 steps that leave G under twice its own mean. "
                "The per-unit rule flags a unit on only some of them: in "
                "these runs those units are noisy, so their own thresholds "
                "are high.\n\n"
                "| trace | jump steps | global steps | jump steps flagged "
                "GLOBAL | other jump steps with a unit flagged RISE | "
                "global steps off jumps | admissions: paper | admissions: "
                "noise-aware, no step view | admissions: noise-aware |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (i = 0; i < 2; i++) {
      trace tr;
      char *gf;
      unsigned char *ufl;
      unsigned t, nj = 0, njf = 0, nju = 0, ng = 0, ngoff = 0;
      unsigned few_up = 0, carry4 = 0, top_of[NAMES_MAX], best = 0, g2 = 0;
      double *gdev;
      unsigned carry_n[NAMES_MAX + 1];
      double a0, a1, a2;
      proto_config off = proto_config_default();
      off.common_min_units = 0xFFFFFFFFu;
      off.global_gate = 0;
      snprintf(path, sizeof path, "%s/%s.csv", data, unstable[i]);
      if (trace_load(&tr, path)) {
        fprintf(stderr, "detect: cannot read %s\n", path);
        return 1;
      }
      gf = xcalloc(tr.T, 1);
      ufl = xcalloc((size_t)tr.T * tr.N, 1);
      if (tr.N > NAMES_MAX) {
        fprintf(stderr, "detect: %s: more than %d units\n", path, NAMES_MAX);
        return 1;
      }
      trace_load_names(path, tr.N);
      gdev = xcalloc(tr.T, sizeof(double));
      { /* L(G) - mu_G per step, as the defaults' verdict reads it */
        proto_config pc = proto_config_default();
        gnmr_config gc = lib_config(&pc, 8);
        gnmr_slot *sl = xcalloc(tr.N, sizeof(gnmr_slot));
        gnmr_ctl gctl;
        gnmr_step_report rep;
        if (gnmr_init(&gctl, &gc, sl, tr.N) != GNMR_OK) abort();
        for (t = 0; t < tr.T; t++) {
          if (gnmr_step(&gctl, tr.norms + (size_t)t * tr.N, NULL) != GNMR_OK ||
              gnmr_step_info(&gctl, &rep) != GNMR_OK)
            abort();
          gdev[t] = rep.global_dev;
        }
        free(sl);
      }
      memset(top_of, 0, sizeof top_of);
      memset(carry_n, 0, sizeof carry_n);
      run_real(&tr, tr.norms, D_PAPER, NULL, NULL, NULL, &a0, NULL, NULL);
      run_real(&tr, tr.norms, D_PROTO, &off, NULL, NULL, &a1, NULL, NULL);
      run_real(&tr, tr.norms, D_PROTO, NULL, ufl, gf, &a2, NULL, NULL);
      for (t = 0; t < tr.T; t++) {
        int jump = 0;
        if (t >= 32) {
          double w[32], G, med;
          unsigned j, u;
          for (j = 0; j < 32; j++) {
            double ss = 0.0;
            for (u = 0; u < tr.N; u++) {
              double g = tr.norms[(size_t)(t - 32 + j) * tr.N + u];
              ss += g * g;
            }
            w[j] = sqrt(ss);
          }
          {
            double ss = 0.0;
            for (u = 0; u < tr.N; u++) {
              double g = tr.norms[(size_t)t * tr.N + u];
              ss += g * g;
            }
            G = sqrt(ss);
          }
          med = proto_select(w, 32, 15);
          jump = G > 2.0 * med;
        }
        nj += (unsigned)jump;
        njf += (unsigned)(jump && gf[t]);
        if (jump && !gf[t]) {
          /* What it is: units above 2x the median of their own previous
             32 steps, and how few units carry 80% of the rise of G^2
             (each unit's g^2 minus the median of its previous 32). */
          unsigned u, any = 0, up = 0, m = 0, top = 0;
          double inc[NAMES_MAX], itot = 0.0, acc = 0.0;
          for (u = 0; u < tr.N; u++) {
            double w[32], g = tr.norms[(size_t)t * tr.N + u], med;
            unsigned j;
            any |= ufl[(size_t)t * tr.N + u] & (PF_RISE | PF_NONFINITE);
            for (j = 0; j < 32; j++) {
              double h = tr.norms[(size_t)(t - 32 + j) * tr.N + u];
              w[j] = h * h;
            }
            med = proto_select(w, 32, 15);
            up += g * g > 4.0 * med;
            inc[u] = g * g > med ? g * g - med : 0.0;
            itot += inc[u];
            if (inc[u] > inc[top]) top = u;
          }
          while (acc < 0.8 * itot && m < tr.N) {
            unsigned b = 0;
            for (u = 1; u < tr.N; u++)
              if (inc[u] > inc[b]) b = u;
            acc += inc[b];
            inc[b] = -1.0;
            m++;
          }
          nju += any != 0;
          g2 += gdev[t] > log(2.0);
          few_up += up * 4 < tr.N;
          carry4 += m <= 4;
          carry_n[m]++;
          top_of[top]++;
        }
        ng += (unsigned)gf[t];
        ngoff += (unsigned)(gf[t] && !jump);
      }
      fprintf(md, "| %s | %u | %u | %u | %u | %u | %.1f | %.1f | %.1f |\n",
              unstable[i], nj, ng, njf, nju, ngoff, a0, a1, a2);
      {
        unsigned u, half = 0, med_m = 0;
        for (u = 0; u < tr.N; u++)
          if (top_of[u] > top_of[best]) best = u;
        for (u = 0; u <= tr.N; u++) {
          half += carry_n[u];
          if (2 * half >= nj - njf) {
            med_m = u;
            break;
          }
        }
        snprintf(jump_what[i], sizeof jump_what[i],
                 "| %s | %u | %u | %u | %u | %u | %u | %s (%u) |\n",
                 unstable[i], nj - njf, g2, few_up, med_m, carry4, nju,
                 trace_names[best][0] ? trace_names[best] : "?", top_of[best]);
      }
      free(gf);
      free(gdev);
      free(ufl);
      free(tr.norms);
    }
    fprintf(md,
            "\nThe jump steps that are not GLOBAL, and what they are (a "
            "unit doubled: above 2x the median of its own previous 32 "
            "steps; the units that carry 80%% of the rise of G^2: each "
            "unit's g^2 minus the median of its previous 32, largest "
            "first):\n\n"
            "| trace | jump steps not GLOBAL | G above 2x its own mean "
            "(L(G) - mu_G > L(2)) | fewer than a quarter of the "
            "units doubled | units carrying 80%% of the rise of G^2 (median) | "
            "steps where at most 4 units carry it | a unit flagged RISE "
            "or NaN | largest contributor (steps) |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (i = 0; i < 2; i++) fprintf(md, "%s", jump_what[i]);
    fprintf(md, "\n");
  }
  return 0;
}

/* The targets, read off what the tables above left in tg_ and tm_. */
static void table_targets(unsigned seeds, unsigned many) {
  int si;
  if (seeds) {
    static const double want_rec[4] = {0.0, 0.97, 0.93, 0.82};
    fprintf(md,
            "### Targets, noise-aware rules\n\n"
            "Synthetic targets on the main seeds (%u per sigma) and on the "
            "many-seeds table (%u per sigma; there the only peer checked is "
            "the rolling 6-sigma z-score, the one nearest on false alarms); "
            "met = met on both.\n\n"
            "| target | main seeds | many seeds | met |\n|---|---|---|---|\n",
            seeds, many);
    for (si = 1; si < NSIG; si++) {
      int a = tg_fa[si] <= 0.1 && tg_rec[si] >= want_rec[si];
      int b = !tm_run || (tm_fa[si] <= 0.1 && tm_rec[si] >= want_rec[si]);
      fprintf(md,
              "| sigma %.2f: false alarms <= 0.1%%, rise recall >= %.2f | "
              "%.3f%%, %.3f |",
              sigmas[si], want_rec[si], tg_fa[si], tg_rec[si]);
      if (tm_run)
        fprintf(md, " %.3f%%, %.3f |", tm_fa[si], tm_rec[si]);
      else
        fprintf(md, " - |");
      fprintf(md, " %s |\n",
              a && b ? "yes"
              : tg_fa[si] <= 0.1 && (!tm_run || tm_fa[si] <= 0.1)
                  ? "**no** (recall)"
                  : "**no**");
    }
    for (si = 0; si < NSIG; si++) {
      int b = si > 0 && tm_run ? !tm_dominated[si] : 1;
      fprintf(md,
              "| sigma %.2f: no peer better on both recall and false alarms "
              "| %s | %s | %s |\n",
              sigmas[si], tg_dominated[si] ? "a peer is" : "none is",
              si > 0 && tm_run ? (tm_dominated[si] ? "a peer is" : "none is")
                               : "-",
              !tg_dominated[si] && b ? "yes" : "**no**");
    }
    fprintf(md,
            "| sigma 0.12: fall recall >= 0.9, false alarms <= 0.1%% | "
            "%.3f, %.3f%% |",
            tg_fall12, tg_fa12);
    if (tm_run)
      fprintf(md, " %.3f, %.3f%% |", tm_fall12, tm_fa[1]);
    else
      fprintf(md, " - |");
    fprintf(md, " %s |\n",
            tg_fall12 >= 0.9 && tg_fa12 <= 0.1 &&
                    (!tm_run || (tm_fall12 >= 0.9 && tm_fa[1] <= 0.1))
                ? "yes"
                : "**no**");
    fprintf(md,
            "| sigma 0.12: global recall >= 0.97, <= 1 false global per "
            "10,000 steps | %.3f, %.1f |",
            tg_grec12, tg_gfalse12);
    if (tm_run)
      fprintf(md, " %.3f, %.1f |", tm_grec12, tm_gfalse12);
    else
      fprintf(md, " - |");
    fprintf(md, " %s |\n",
            tg_grec12 >= 0.97 && tg_gfalse12 <= 1.0 &&
                    (!tm_run || (tm_grec12 >= 0.97 && tm_gfalse12 <= 1.0))
                ? "yes"
                : "**no**");
  }
  if (tg_real) {
    fprintf(md,
            "| stable runs: <= 5 admissions / 1000 steps | %.1f, %.1f | - | "
            "%s |\n",
            tg_adm[0], tg_adm[1],
            tg_adm[0] <= 5 && tg_adm[1] <= 5 ? "yes" : "**no**");
    fprintf(md,
            "| stable runs: >= 0.97 of injected rises within 1 step | "
            "%.3f, %.3f | - | %s |\n",
            tg_rise1[0], tg_rise1[1],
            tg_rise1[0] >= 0.97 && tg_rise1[1] >= 0.97 ? "yes" : "**no**");
    fprintf(md,
            "| stable runs: <= 1 global step / 1000 steps | %.2f, %.2f | - | "
            "%s |\n",
            tg_glob[0], tg_glob[1],
            tg_glob[0] <= 1 && tg_glob[1] <= 1 ? "yes" : "**no**");
  }
  fprintf(md, "\n");
}
