/* ========================================================================
   Frontier (--frontier N): rise recall where false alarms reach 0.1% (the
   target's ceiling), z_rise swept and the recall interpolated linearly in
   the false-alarm rate, for the rule and for variants of it: other
   predictors, evidence summed over an event's steps, and bounds that are
   given the synthetic trace's hidden truth. N seeds per sigma from the
   many-seeds base (not used to choose the defaults).
   ======================================================================== */

static int frontier(unsigned nseeds, unsigned long long base, const char *cpu,
                    const char *when) {
  static const double zs[] = {3.5, 3.65, 3.8, 3.9, 4.0, 4.1, 4.25, 4.4, 4.6};
  enum { NZ = sizeof zs / sizeof zs[0], NV = 11 };
  static const char *vname[NV] = {
      "the rule (defaults but z_rise)",
      "ar 0.7 (the synthetic noise's own correlation)",
      "no hold: p follows every step",
      "p follows flagged steps too",
      "evidence summed over an event's steps (ar 0.7, entered at 2.5 S)",
      "bound: the true noise scale in place of s",
      "bound: the true common factor in place of c",
      "bound: the true level and common factor in place of mu and c",
      "bound: the true level and common factor, ar 0.7",
      "bound: the true level, common factor and noise scale, ar 0.7, p "
      "follows flagged steps too",
      "bound: the true level, common factor and noise scale, ar 0.7, "
      "evidence summed"};
  static const unsigned sig_i[2] = {2, 3}; /* sigma 0.25, 0.4 */
  unsigned v, k, si, sd;
  fprintf(md, "## Detection frontier\n\n");
  fprintf(md,
          "`make detect-frontier` (`build/detect --frontier %u`): rise "
          "recall at 0.1%% false alarms (the target's ceiling) on %u seeds "
          "per sigma (1000 i + %llu + j, the many-seeds table's), z_rise "
          "swept over %.2f-%.2f and the recall interpolated linearly in the "
          "false-alarm rate between the two settings either side of 0.1%%. "
          "Rows below the first change one thing; the bounds are given the "
          "synthetic trace's hidden truth, which no detector has. Targets: "
          "0.93 at sigma 0.25, 0.82 at sigma 0.4. Machine: %s, one core; "
          "gcc -O2. gnmr.h %s. Run %s UTC.\n\n",
          nseeds, nseeds, base, zs[0], zs[NZ - 1], cpu, gnmr_version(), when);
  fprintf(md, "| variant | sigma 0.25: z_rise at 0.1%% | recall at 0.1%% | "
              "sigma 0.4: z_rise at 0.1%% | recall at 0.1%% |\n"
              "|---|---:|---:|---:|---:|\n");
  for (v = 0; v < NV; v++) {
    fprintf(md, "| %s |", vname[v]);
    for (si = 0; si < 2; si++) {
      double fa[NZ], rec[NZ];
      int done = 0;
      for (k = 0; k < NZ; k++) {
        proto_config c = proto_config_default();
        tally ty;
        memset(&ty, 0, sizeof ty);
        c.z_rise = zs[k];
        if (v == 1 || v == 4 || v == 8) c.ar = 0.7;
        if (v == 2) c.p_mode = 1;
        if (v == 3) c.p_mode = 2;
        if (v == 4) c.glr_w = 0.3, c.glr_enter = 2.5;
        if (v == 5) c.genie_scale = 0.85;
        if (v == 6) c.genie_common = 1;
        if (v >= 7) c.genie_level = c.genie_common = 1;
        if (v >= 9) c.genie_scale = 0.85, c.ar = 0.7;
        if (v == 9) c.p_mode = 2;
        if (v == 10) c.glr_w = 0.3, c.glr_enter = 2.5;
        for (sd = 0; sd < nseeds; sd++) {
          synth s;
          synth_make(&s, sigmas[sig_i[si]], 1000ull * sig_i[si] + base + sd);
          run_synth(&s, D_PROTO, &ty, &c);
          synth_free(&s);
        }
        fa[k] = 100.0 * ty.fa / ty.fa_n;
        rec[k] = ty.rise_hit / ty.rise_n;
      }
      for (k = 0; k + 1 < NZ && !done; k++)
        if (fa[k] >= 0.1 && fa[k + 1] <= 0.1) {
          double w =
              fa[k] == fa[k + 1] ? 0.0 : (fa[k] - 0.1) / (fa[k] - fa[k + 1]);
          fprintf(md, " %.2f | %.3f |", zs[k] + w * (zs[k + 1] - zs[k]),
                  rec[k] + w * (rec[k + 1] - rec[k]));
          done = 1;
        }
      if (!done)
        fprintf(md, " - | - (false alarms %.3f%%-%.3f%%) |", fa[NZ - 1], fa[0]);
    }
    fprintf(md, "\n");
    fflush(md);
  }
  return 0;
}
