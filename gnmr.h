/* gnmr.h - v0.7.0 - runtime stability control for low-precision training.
   MIT license (see the end of this file). No warranty.

   GNMR (Gradient Norm-to-Mean Ratio) watches every "recoverable unit" of a
   model: an operator or parameter group that has a cheap low-precision path
   and a high-fidelity path. Each step it compares the unit's gradient norm
   with the unit's own historical mean (GNMR) and with its recent short window
   (delta-GNMR), and moves the riskiest units to the high-fidelity path for a
   short lock interval, never more than `max_recovering` at once.

   Do this:
       #define GNMR_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Every other file includes it without the define (or every
   file defines GNMR_STATIC too, for a private copy each). Link with -lm
   (the norm helpers call sqrt).

   A whole program (examples/quickstart.c is this, compiled):
       gnmr_config cfg = gnmr_config_default();    // defaults: table below
       cfg.max_recovering = 2;                     // maxO, <= the unit count
       gnmr_slot slots[N];                         // the state: your memory
       gnmr_ctl ctl;
       int rc = gnmr_init(&ctl, &cfg, slots, N);
       if (rc != GNMR_OK) puts(gnmr_strerror(rc));
       for (each training step) {
           float norms[N];                         // unit u's gradient L2 norm
           gnmr_decision d[N];                     // or NULL: counters only
           rc = gnmr_step(&ctl, norms, d);
           if (rc != GNMR_OK) break;               // refused: d is unset
           // unit u's gradient times d[u].scale (1 calm, 0 NaN/Inf):
           // gnmr_scale_f32(grad_u, n_u, d[u].scale) per tensor;
           // next step, unit u runs high-fidelity iff gnmr_recovering(&ctl, u)
           // (0 or 1 only; gnmr_recovering_check says why a 0 is a refusal)
       }

   Units, slots and the controller. The caller owns all memory: a gnmr_ctl
   and one block of N gnmr_slot, which the controller lays out as one array
   per field (a slot is not one unit's record: never copy or move slots on
   their own). Fields of gnmr_ctl are the library's: read state through
   gnmr_counters_get and gnmr_unit_info, change settings with
   gnmr_reconfigure, copy a controller with a checkpoint (save, then load
   into another initialised one). A struct copy shares the slots: once
   either copy changes state, the other is refused (GNMR_ESTATE); a field
   edited by hand is refused too (a seal over the controller's fields).
   Moving the controller together with its whole slot block, byte for
   byte, is fine. No heap, no I/O, no global state but the one-time choice
   of SIMD path.

   Two sets of rules; config.rule picks one: PAPER, the default (rules 1-8:
   the paper's; gnmr_config_default() adds rule 9, gnmr_config_paper() is
   0.1's rules bit for bit on any positive norm but in warm-up, where rule
   5 clips a norm above tau_r m and restarts a history above tau_r^2 g),
   or NOISE (rules N0-N9:
   thresholds in units of each unit's own fluctuation, falls as well as
   rises, and a step-level verdict; gnmr_config_noise()). The default was
   chosen by what training ends at, not by detection figures: in closed
   loop the paper rules recover more of the low-precision gap than the
   noise-aware ones wherever the faults are sporadic, and neither fixes a
   systematic loss (a format that makes every step a little worse).
   Where NOISE wins, and why it stays: detection, not recovery. On a noisy
   norm it raises far fewer false alarms, what a monitor-only controller
   (max_recovering 0, spike_policy PASS) that alerts a person needs. The
   figures of both live in bench/RESULTS.md ("Closed-loop efficacy",
   "Detection").

   What to feed it. A unit's gradient norm is the signal the rules below
   are written for, but any non-negative per-unit quantity with a stable
   level can be a unit of its own, under the same budget. The one that
   pays: each recoverable unit's forward signal, the relative error of its
   low-precision GEMM input against the true one, ||Q(x) - x|| / ||x||
   (on the high-fidelity path, the error Q would give at the current
   scale), as units U .. 2U-1 beside the gradient norms 0 .. U-1; the unit
   runs high-fidelity when either of its two is recovering. A stale or
   saturating scale shows in it at its own layer on its first step, where
   the gradient norm shows it late and in every layer after. In closed
   loop it recovers more of the gap than gradient norms alone on injected
   faults, and is mixed over a global clip (bench/RESULTS.md, "Closed-loop
   efficacy"). Fed both, take gnmr_config_forward() (ratio_threshold 8,
   delta_threshold 6): on the test half of the settings suite (named
   training settings split by a hash of the name into a tune half, where
   defaults are chosen, and a test half, where they are reported) it keeps
   calm runs, noisy ones included, on the high-fidelity path a small
   fraction as often as the defaults on gradient norms do, and recovers
   more of the faults' gap; the forward signals catch the faults its
   higher gradient thresholds let pass (bench/RESULTS.md, "Settings
   suite"). Where the caller cannot compute the forward signal, gradient
   norms alone with the defaults stay the rule the manual assumes; where
   those norms have heavy tails (small batches, heavy-tailed data), take
   gnmr_config_calm() (rule 10), which keeps the defaults' clipping and
   admits far fewer calm unit-steps.
   lab/train_lm.c and train_stress.c do this (their forward-signal runs).

   Rules of one step, both modes. Rule 0 comes first, rule 9 after each
   mode's own rules, rule 10 (when on) after it, before rules 6-7 (N8); a
   unit rules 0 and 9 do not take goes through its mode's rules.
     0  g exactly 0 (+0 or -0): absent, no observation. A frozen layer, a
        LoRA factor before its first update, an MoE expert that got no
        tokens, a layer whose turn has not come: no gradient is no news.
        Flag ABSENT, KEEP, scale 1 (even on a GLOBAL step, which it took no
        part in), ratio, delta and score 0; k, the statistics and the run
        of rule 9 are not touched, no slot is taken (a locked unit counts
        its lock down, rule 6). Before 0.4 a zero entered the mean, which
        then never left 0: every later step of the unit was risky, clipped
        to scale 0 and held in recovery.
     9  level shift, when shift_steps = P > 0 (gnmr_config_default() and
        gnmr_config_noise(); 0 in gnmr_config_paper()): a unit flagged on
        P finite observations in a row in one direction (PAPER: RATIO or
        DELTA; NOISE: RISE, or FALL) whose norms held steady, with lo and
        hi their least and greatest and L the library's log (rule N0):
          steady  L(hi) - L(lo) <= shift_spread * jump, jump > 0, where
                  jump = L(lo) - level for rises, level - L(hi) for falls,
                  level L(max(m, eps)) (PAPER) or mu (NOISE) after this
                  step's rules;
        is at a new level, not a fault: its history restarts there (PAPER
        m = (lo + hi) / 2 and every stored ratio 1; NOISE mu = (L(lo) +
        L(hi)) / 2 and p = 0; k goes on), flag SHIFT, not risky, scale 1,
        score 0, and a lock ends this step (RELEASE, cooldown starts). A
        run that is not steady starts over, so a level that settles is
        learned within about 2P steps; a calm observation ends a run; a
        non-finite or absent step neither ends nor extends it. A fault that
        holds one level for P steps is learned too: P is the price of
        that, chosen in closed loop with the spread (bench/RESULTS.md,
        "Training events"). Without it (the paper's rules) a unit whose level
        moves up for good is clipped to tau_r m and renewed step after step
        while m creeps up by about (1 - beta)(tau_r - 1) m a step: a 10x
        shift stays clipped for well over a hundred steps.
    10  admission band, when band_k = K > 0 (0 in gnmr_config_default();
        4 in gnmr_config_calm()): each unit keeps a band on L(g) (rule
        N0), a centre c and a deviation v, averages with weight w =
        max(1/(n+1), 1/32) after n observations (each finite g > 0 is
        one; c = L(g) at the first). With V = max(v, 0.1), once n >=
        warmup_steps, a g with L(g) > c + K V is above the band, far above
        when also L(g) - c >= ln 100; a non-finite g is far above. Then the
        band learns g: l = L(g) clamped to [c - K V, c + K V] once n >=
        warmup_steps (a spike cannot widen it), v += w (|l - c| - v), c +=
        w (l - c). A risky unit's run counts its risky steps above the band
        in a row (up to band_steps; any other step but an absent one ends
        it). A risky unit is admitted (rule 7) or renewed (rule 6) only
        when its run reaches band_steps or it is far above now; otherwise
        it is flagged BAND and stays KEEP (a lock that runs out is
        released), its scale rule 8's (a spike is clipped all the same).
        A FALL is never above the band. Why: on a calm run whose norms
        have heavy tails (small batches, heavy-tailed data) the ratio
        tests flag a unit every few steps, and the defaults admit a few
        percent of unit-steps; such norms seldom sit K deviations above
        the unit's own history on two steps running, where injected
        faults did, or came 100x over it. Not the default: where the
        defaults' admissions buy loss on a calm run (a format's own loss
        on every step, FP4's, is inside the band), the band gives it up
        (bench/RESULTS.md, "The calm preset in the library"). The band is
        learned on every step of every unit, so the step takes the scalar
        rules (no calm lanes); turning it on or off with gnmr_reconfigure
        starts it afresh.

   Rules of one step, PAPER mode. For every unit u, with g its norm this
   step (not 0: rule 0), k its finite observations so far and m its
   historical mean before this step:
     1  non-finite g (NaN, +-Inf): risky, flag NONFINITE, score +inf,
        scale 0; m, k and the window are not touched.
     2  ratio  = g / max(m, eps); 1 while k = 0.
     3  delta  = ratio - mean of the unit's last min(k, W) stored ratios;
        0 while k = 0.
     4  risky  = k >= warmup_steps and (ratio > tau_r or delta > tau_d)
        (flags RATIO, DELTA; WARMUP while k < warmup_steps);
        score  = max(ratio / tau_r, delta / tau_d).
     5  history (finite g only): x = min(g, tau_r * m) when risky or in
        warm-up (0 < k < warmup_steps), else g: a spike cannot inflate its
        own history, from a unit's second observation on. k += 1;
        m += max(1/k, 1 - beta) * (x - m); the window gets min(ratio, tau_r).
        In warm-up a fault is neither flagged nor scaled (rules 4, 8), but
        it would otherwise stay in the mean every later step is read by
        (one x1000 norm let later x20 faults pass unclipped for hundreds of
        steps). The first observation has no history to be read by: it is
        m. So in warm-up, where the cap lets m rise at most tau_r-fold a
        step, a history more than tau_r^2 above g (tau_r^2 g < m: a fault
        on the first observations, or a fall) restarts at g instead: m =
        g, every stored ratio 1, k += 1 (ratio, delta, score as above,
        WARMUP, scale 1). tau_r^2, not tau_r: a restart from one low norm
        of a noisy unit late in warm-up would hold m low for many steps.
   Then across units:
     6  a unit in recovery counts its lock down: HOLD while steps are left;
        at zero, RELEASE (cooldown_steps of cooldown start) unless it is
        risky this step (and, with rule 10, out of its band), which renews
        the lock (HOLD + RENEWED) in its slot (never while more units
        recover than max_recovering allows, which only gnmr_reconfigure
        can cause).
     7  admission: risky units on the cheap path and out of cooldown
        (non-finite ignores cooldown; with rule 10, out of their band) are
        ranked by score, highest first, ties by lower unit index; the best
        take the free slots (max_recovering minus the units still locked,
        at least 0) with RECOVER and a lock of L = lock_steps. The rest
        stay KEEP, flagged OVER_BUDGET (or COOLDOWN). A unit admitted at
        step t runs the high-fidelity path on steps t+1 ... t+L exactly.
     8  scale of this step's gradient: 1 when calm, 0 when non-finite; for a
        risky unit per spike_policy: PASS 1, CLIP min(1, tau_r * m / g),
        SKIP 0. A fault in warm-up is not risky, so its own gradient keeps
        scale 1 (rule N9 alike): with no history yet, nothing tells it
        from the fast moves of a run's first steps, which a clip would cut;
        rules 5 and N5 keep it out of the history, and a non-finite norm
        still gets scale 0.

   Rules of one step, NOISE mode. Per unit: g (not 0), k as above; mu its
   log-mean,
   s its fluctuation, p its last deviation (all in natural-log units).
     N0 L(x): the library's log of max(x, eps) from the bits (exponent, and
        a series in y = (f-1)/(f+1) of the mantissa f): |error| < 2e-5,
        increasing; plain IEEE operations, so every path gives the same
        bits. No libm function runs per unit.
     N1 non-finite g: as rule 1 (NONFINITE, score +inf, scale 0); mu, s,
        p, k untouched.
     N2 dr = L(g) - mu. The first finite observation sets mu = L(g), s =
        p = 0, k = 1 and flags nothing.
     N3 the step-level view, before any unit's decision, over the settled
        units (finite g > 0, k >= max(warmup_steps, 1): a first observation
        has no mean to be read against), n of them:
          c = the lower median of their dr on a grid of 1/256 (its bin's
              centre; +-8 at most); 0 when n < common_min_units. Counted
              with integer histograms: the same c in any order of units.
          G = sqrt(sum of g^2 over the finite units > 0), the global norm,
              summed in one fixed order (blocks of 256 units, eight lanes
              u % 8 in a block, folded pairwise; blocks in order) so every
              path gives its bits; it keeps its own mu, s, p, k by rules
              N2, N4-N7 with c = 0 (not on a step with no such unit).
          GLOBAL when G has max(warmup_steps, 1) observations, n >=
              common_min_units, and either c > L(global_ratio) (at least
              half the settled units rose that much together), or L(G) -
              mu_G > L(global_ratio) with at least global_frac * n units'
              dr above L(global_ratio). A step where every unit rises a
              little (a hard batch) is neither a local fault nor GLOBAL.
     N4 d = dr - c (the unit's own part), e = d - ar * p (what the last
        deviation does not predict), S = max(s, fluct_floor). Once k >=
        warmup_steps (WARMUP before):
          RISE (flag RATIO) when e > z_rise * S and d > L(min_rise);
          FALL (flag FALL)  when e < -z_fall * S and d < L(max_fall), if
                            two_sided;
        score = e / (z_rise S) for a rise, -e / (z_fall S) for a fall,
        else 0. decision.delta = e (decision fields: below).
     N5 mean (finite g only): k += 1; a = max(1/k, 1 - history_decay);
        mu += a * dr clamped to [-z_fall S, z_rise S]: a spike moves mu by
        at most a z_rise S. In warm-up (k <= warmup_steps after the count)
        S is still being learned, so the clamp here and N6's cap hold only
        on a step rule N4 would call a RISE (e > z_rise S, d > L(min_rise)),
        and a step it would call a FALL (e < -z_fall S, d < L(max_fall),
        two_sided or not: a fault on the first observations, or a fall)
        restarts the level instead: mu += dr (mu = L(g)), p = 0, s as it
        was (N6, N7 skip the step). A fault in warm-up then moves mu and s
        as one after it does (unchecked, one x1000 norm early in warm-up
        left later faults clipped well above the calm level for hundreds
        of steps).
        The global norm's history (rule N3) follows the same rules.
     N6 fluctuation, from the second observation on: s += max(1/(k-1),
        1 - fluct_decay) * (|e| - s), |e| capped at winsor * S once k >
        warmup_steps (in warm-up: N5): a spike moves s by at most (1 -
        fluct_decay) winsor S.
     N7 p = d clamped to [-z_fall S, z_rise S], only on a step not flagged
        and with |e| <= hold * S: the next step of an event is judged
        against the level before it.
     N8 locks, renewal, cooldown and admission as rules 6-7; a FALL is risky
        like a RISE. On a GLOBAL step only NONFINITE units are admitted:
        trouble shared by most units is no local fault, promotions cannot
        fix it (the global policy's scale is what acts on it), and a
        budget spent on it would be missing for the local faults that
        follow; locks still count down and renew.
     N9 scale: spike_policy on a flagged unit: PASS 1; CLIP a RISE to
        exp(mu + c + z_rise S) / g = exp(z_rise S - d) (the library's own
        exp; never above 1), a FALL 1 (CLIP never scales a unit up); SKIP
        0. On a GLOBAL step every unit's scale is then multiplied by the
        global policy's: NONE 1, CLIP min(1, exp(L(global_ratio) - (L(G) -
        mu_G))), i.e. G brought back to global_ratio times its mean, SKIP 0.
   gnmr_step_info reads the last step's verdict: G, L(G) - mu_G and its
   exp, c, the settled units, the units flagged, rises and falls, GLOBAL
   and the global scale. The step is one pass over the units more than
   PAPER mode's; on the AVX-512 path both passes take eight units at a
   time (the units not calm take the scalar rules, with the same bits);
   bench/RESULTS.md, "Controller", has the cost.

   Decision fields (gnmr_decision), one meaning in both modes unless a
   mode is named:
       ratio   g over the unit's mean level before this step: PAPER g /
               max(m, eps) (rule 2); NOISE exp(L(g) - mu), i.e. g / exp(mu),
               exp(mu) being the level NOISE tracks (a geometric mean of the
               unit's norms, each step's move capped by rule N5), to L's
               2e-5. 1 at a unit's first observation; the norm itself when
               non-finite. A 10x spike over a steady level reads about 10.
       delta   mode-specific: PAPER delta-GNMR (rule 3); NOISE e, the
               residual rule N4 thresholds (d less ar times the last
               deviation; d itself is log(ratio) minus gnmr_step_info's
               common); the norm itself when non-finite.
       score   how far past its threshold, >= 1 when flagged, the order of
               rule 7: PAPER max(ratio / tau_r, delta / tau_d), every step;
               NOISE e / (z_rise S) for a rise, -e / (z_fall S) for a fall,
               0 when not flagged; +inf when non-finite.
       scale   multiply this step's gradient of the unit by it (rules 8,
               N9): 1 when calm, never above 1, 0 when non-finite.
       flags, action  below.
   An absent unit (rule 0) reads ratio, delta and score 0, scale 1; a
   unit whose level shift is learned (rule 9) reads score 0, scale 1.

   Actions (gnmr_decision.action; gnmr_action_name names them):
       KEEP     on the cheap path next step (calm, or risky and refused)
       RECOVER  admitted this step: high-fidelity from the next step
       HOLD     in recovery (every step of a lock, renewals included)
       RELEASE  the lock ran out: back on the cheap path next step
   Using the decisions. Multiply this step's gradient of unit u by
   d[u].scale with gnmr_scale_f32 (_f16, _bf16) on each of its tensors,
   before the optimizer reads them:
       for (i = 0; i < n_tensors; i++)   // grad[i]: tensor i's gradient
         gnmr_scale_f32(grad[i], t[i].n, d[t[i].unit].scale);
   It writes 0 where the scale is 0, so a unit with a NaN or Inf norm
   reaches the optimizer as 0 (grad *= 0 would keep the NaN), and leaves
   the memory alone where it is 1. Run unit u on its high-fidelity path
   next step exactly when gnmr_recovering(&ctl, u) is 1 (RECOVER, then
   HOLD through the lock). With delayed scaling (FP8: a scale from a
   history of amax values), start a unit's amax history afresh when it is
   admitted (RECOVER): the history holds the fault's values, and a unit
   that came back after its lock would meet a scale the fault left stale;
   the high-fidelity steps refill it (the demos do this:
   lab/train_stress.c, lab/train_lm.c).

   Flags (bits of gnmr_decision.flags; gnmr_flag_name names them): RATIO
   (NOISE: a rise), DELTA, NONFINITE, OVER_BUDGET, COOLDOWN, WARMUP,
   RENEWED, FALL (NOISE), GLOBAL (NOISE: on every unit of a GLOBAL step but
   an absent one), ABSENT (rule 0), SHIFT (rule 9), BAND (rule 10: risky,
   in its band, not admitted).

   Configuration (gnmr_config_default; gnmr_config_check names the first
   field it refuses, gnmr_init and gnmr_reconfigure check the same):
       field            symbol  valid                 default
       ratio_threshold  tau_r   finite, > 1           2.0
       delta_threshold  tau_d   finite, > 0           1.5
       history_decay    beta    (0, 1]; 1 = mean      0.99
       eps                      finite, > 0           1e-12
       delta_window     W       1 ... 16              8
       warmup_steps             any                   16 (NOISE: 50)
       max_recovering   maxO    <= units; 0 = watch   1
       lock_steps       L       >= 1                  8
       cooldown_steps           any                   4
       spike_policy             PASS, CLIP, SKIP      CLIP
       rule                     PAPER, NOISE          PAPER
     NOISE mode's (checked in both modes, read in NOISE mode only; tau_r,
     tau_d and W are PAPER mode's only):
       two_sided                0, 1                  1
       z_rise                   finite, > 0           4.25
       z_fall                   finite, > 0           6
       min_rise                 finite, > 1           2
       max_fall                 (0, 1)                0.5
       ar                       [0, 1)                0.5
       hold                     finite, > 0           3.5
       fluct_decay              (0, 1]                0.995
       winsor                   finite, >= 1          3
       fluct_floor              finite, >= 0          0.01
       global_ratio             finite, > 1           2
       global_frac              (0, 1]                0.25
       common_min_units         >= 1                  8
       global_policy            NONE, CLIP, SKIP      NONE
     Both modes (rule 9):
       shift_steps      P       0 = off, 2..4096      16
       shift_spread             finite, >= 0          1
     Both modes (rule 10):
       band_k           K       0 = off; finite, >= 0 0 (calm: 4)
       band_steps               1..4096               2
   gnmr_config_paper() is 0.1's defaults exactly (rule PAPER, warmup 16,
   shift_steps 0); gnmr_config_noise() the defaults with rule NOISE and
   warmup 50; gnmr_config_forward() the defaults with ratio_threshold 8 and
   delta_threshold 6, for forward signals beside gradient norms;
   gnmr_config_calm() the defaults with band_k 4, for gradient norms alone
   with heavy tails. The NOISE values come from lab/detect (bench/RESULTS.md,
   "Detection"). The code reads defaults and ranges from one list
   (GNMR__CONFIG, in the implementation); tests/test_rules.c holds this
   table to it.
   Watching: max_recovering = 0 admits nobody. Every risky unit stays
   KEEP, flagged OVER_BUDGET, and nothing runs high-fidelity; the rules
   that do not need a slot still act: the history (rule 5) and the scale
   (rules 8, N9). Under the default spike_policy CLIP a spike's gradient
   is still clipped (a x100 spike over a steady mean gets scale about
   tau_r / 100 = 0.02): this is the watch-and-clip setting, for a trainer
   without a cheaper path to leave (an fp32 trainer: the controller then
   acts as a per-unit gradient clip against each unit's own history). A
   monitor that changes nothing: max_recovering = 0 and spike_policy =
   GNMR_SPIKE_PASS (every scale 1 but a non-finite unit's 0).

   Placement (gnmr_place_*, rules P1-P7): a second, separate rule for the
   format's own loss (FP4: every step a little worse, no step much worse),
   where the rules above do nothing. It holds units on the high-fidelity
   path by a budget of compute, not of units: each unit has a cost (its
   GEMM FLOPs per step, given at init) and the high-fidelity units' cost
   over the run stays within a share B of the units' total. Where the
   caller tells it the run's planned steps T (planned_steps), it fires
   when the credit it banked carries the fired units' GEMMs to step T: the
   end of the run, where the format's loss is made (bench/RESULTS.md,
   "Settings suite"). Not told T, it reads, per unit and
   step, what the optimizer moved the weights by against what the format
   resolves of them, and fires when that falls against the run's own
   history (the LM demo: bench/RESULTS.md, "Placement"; it misfires on
   runs without warm-up and with SGD, same section). A fired unit runs the
   GEMMs of cfg.gemms high-fidelity (per GEMM: a third of its cost
   each). The controller (gnmr_step) does
   not see it and is not changed by it; a unit runs high-fidelity when
   either says so. Each step, after the optimizer's update, for each unit
   u (C the sum of the costs c_u):
     P1 signals: a = ||W_t+1 - W_t||, the update's norm, and q = ||Q(W_t) -
        W_t||, the weights' quantization error as the cheap path used them.
        A finite negative one refuses the whole step (GNMR_ENORM). A NaN or
        Inf a or q, or q = 0, is no observation: the unit's state is not
        touched this step. After the fire (P5) the signals are checked but
        not read.
     P2 m = a at the unit's first observation, else update_decay m + (1 -
        update_decay) a; r = m / q (a non-finite r: no observation); M =
        max(M, r), the unit's running maximum.
     P3 the run's level x = sum of c_u r_u / M_u over the units observed
        this step with M_u > 0, over the sum of their c_u: 1 at the peak of
        every unit, falling as the learning rate decays (or the weights
        grow). Scaling a unit's a or q by a constant changes nothing
        (rounding aside). A step with no such unit, or where a term's
        c r overflows (r near DBL_MAX), has no level: P4 and P5 skip it.
     P4 its fast and slow means: F = S = x at the first level, then F =
        fast_decay F + (1 - fast_decay) x, S = slow_decay S + (1 -
        slow_decay) x.
     P5 fire, once. Told T: at the first step t (0-based) where the
        credit after this step's earning, with what the R - 1 steps after
        the next earn, pays the fired units' cost S on each of the R = T -
        1 - t steps left (S: C, or its GEMMs' share, P6), or where S <= B C,
        or t >= T - 1; the level is not read. Not told T: from the level's
        (warmup_steps + 1)-th step on, when x < fire_level (a low level) or
        F < fall_ratio S (a fall, at any level: a WSD decay). Every unit
        fires, for good, in the order of r_u / M_u at its last observation
        (0 without a maximum), lowest first, ties by the lower index.
     P6 budget, a token bucket: every step earns B C (the first at init;
        the credit saturates at DBL_MAX rather than overflow), and the
        fired units, in firing order, run their GEMMs of cfg.gemms
        high-fidelity on the next step while the credit covers what they
        cost (c_u times the share of its GEMMs, a third each), which is
        paid. So through
        any step t the high-fidelity cost is at most B C (t + 1), without
        the run's length; the credit banked before the fire is what the
        late phase spends, so a rule that fires early runs out before the
        end (RESULTS: why the level is low).
     P7 the final placement. Told T, the call of step T - 2 decides the
        last planned step: a unit whose pay exceeds the credit by rounding
        alone (a relative 1e-9, as P5's) is paid, the credit going to 0,
        so the units the plan carries to the end all run it. The calls of
        steps t >= T - 1 decide steps past the plan: they pay nothing and
        change no unit's GEMMs (the credit still earns), so after the last
        planned step each unit holds the GEMMs it ran on that step, and a
        checkpoint taken then restores them. That is the placement the
        trained model was fitted to: serve it with those GEMMs
        high-fidelity (serve HIGH; with serve LOW no forward GEMM is
        placed, and the model is served on the format). A run continued
        past its plan runs on it at its cost, outside the budget: give the
        new plan to a new placer. A run that fires only there fires with
        no unit high.
   The level's defaults (fire_level, fall_ratio) were read off one trace
   of the LM demo's uncontrolled low-precision run; RESULTS ("Placement")
   has them on other runs and settings, and where they lose to the late
   switch that is told the schedule. planned_steps has no default a
   library could know: give it. gemms defaults to the whole unit, which
   any caller can switch; a trainer that switches GEMMs one by one should
   weigh GNMR_GEMM_FWD (the settings suite's tune half and test half:
   RESULTS, "Settings suite") for a model served in high precision. serve
   says how the trained model will be served: GNMR_SERVE_HIGH, its placed
   GEMMs in high precision (P7); GNMR_SERVE_LOW, on the low format, where
   a forward that ran high-fidelity at the end would leave weights fitted
   to f32 forwards and served on the format's (RESULTS, "FP4 as served"):
   the placer then drops GNMR_GEMM_FWD from gemms and places backward
   GEMMs only (a gemms of the forward alone is refused). Placement
   configuration
   (gnmr_place_config_default; gnmr_place_config_check names the field):
       field            symbol  valid                 default
       budget           B       (0, 1]                0.1
       update_decay             [0, 1)                0.95
       fire_level               [0, 1)                0.05
       fall_ratio               [0, 1); 0 = no fall   0.6
       fast_decay               [0, 1)                0.9
       slow_decay               [0, 1)                0.99
       warmup_steps             any                   50
       planned_steps    T       any; 0 = not told     0
       gemms                    1..7 (GNMR_GEMM_*)    GNMR_GEMM_ALL
       serve                    GNMR_SERVE_HIGH, or   GNMR_SERVE_HIGH
                                LOW with a backward
                                GEMM in gemms
   The state is the caller's: a gnmr_place and a block of n
   gnmr_place_unit, opaque (read a unit with gnmr_place_unit_info), sealed
   as the controller's: a placer edited by hand or a struct copy whose
   twin has stepped is refused (GNMR_ESTATE). The step is one path of
   GNMR_HOSTDEV plain C, the sums of P3 in unit order
   (examples/cuda/gnmr_ctl.cuh runs it in one device thread): a few
   microseconds a step for a model's few hundred units (bench/RESULTS.md,
   "Placement").
   The LM
   demo feeds it (lab/train_lm.c); its decisions are the demo's own
   prototype's bit for bit (tests/test_place.c,
   tests/test_lm.c). Checkpoints: gnmr_place_checkpoint_*,
   the controller's format rules (CRC-32, validated whole), format version
   2, magic "GNMRPLCE".

   API at a glance (every public function; declarations below):
       gnmr_version              GNMR_VERSION_STRING, from the library
       gnmr_strerror             a GNMR_E* code's meaning
       gnmr_config_default       the library's defaults: the paper rules
       gnmr_config_paper         0.1's defaults exactly, rule PAPER
       gnmr_config_noise         the noise-aware rules, rule NOISE
       gnmr_config_forward       the defaults, for forward signals too
       gnmr_config_calm          the defaults with rule 10's band on
       gnmr_config_check         a config valid for n units? names the field
       gnmr_init                 a controller over the caller's slots
       gnmr_reconfigure          new settings for a running controller
       gnmr_step                 one step: norms in, decisions out
       gnmr_recovering           1 if unit u runs high-fidelity next step
       gnmr_recovering_check     why gnmr_recovering would answer 0 unasked
       gnmr_action_name          "KEEP", "RECOVER", "HOLD", "RELEASE"
       gnmr_flag_name            one GNMR_FLAG_* bit's name
       gnmr_flags_string         a flags word as names joined by '|'
       gnmr_counters_get         a unit's or the controller's counters
       gnmr_unit_info            a unit's state after the last step
       gnmr_step_info            the last step's verdict (gnmr_step_report)
       gnmr_checkpoint_size      bytes a checkpoint takes
       gnmr_checkpoint_save      the controller into a buffer
       gnmr_checkpoint_load      a buffer into a controller, config included
       gnmr_checkpoint_config    a checkpoint's config, without loading
       gnmr_sumsq_f32, gnmr_sumsq_f16, gnmr_sumsq_bf16
                                 canonical sum of squares of one tensor
       gnmr_stats_f32, gnmr_stats_f16, gnmr_stats_bf16
                                 the same, with amax and the NaN/Inf count
       gnmr_unit_sumsq           per-unit sums of squares over tensors
       gnmr_unit_norms           per-unit norms over tensors
       gnmr_scale_f32, gnmr_scale_f16, gnmr_scale_bf16
                                 a decision's scale applied to a gradient
       gnmr_f16_to_f32, gnmr_bf16_to_f32  one element's value (inline)
       gnmr_isa_active, gnmr_isa_supported, gnmr_isa_force, gnmr_isa_name
                                 the norm helpers' SIMD path
       gnmr_ctl_isa_active, gnmr_ctl_isa_force  the controller's path
     Placement (rules P1-P7):
       gnmr_place_config_default the placer's defaults
       gnmr_place_config_check   a placer config valid? names the field
       gnmr_place_init           a placer over the caller's unit states
       gnmr_place_step           one step: update and error norms in,
                                 next step's high-fidelity units out
       gnmr_place_high           unit u's GEMMs high-fidelity next step
       gnmr_place_unit_info      a unit's state, and the firing order
       gnmr_place_info           steps, the fire's step, level, credit
       gnmr_place_checkpoint_size  bytes a placer's checkpoint takes
       gnmr_place_checkpoint_save  the placer into a buffer
       gnmr_place_checkpoint_load  a buffer into a placer

   Errors: every function that can fail returns GNMR_OK (0) or a negative
   GNMR_E* code (gnmr_strerror names it), and a refused call changes nothing:
   not the controller, not the slots, not the output (one exception:
   gnmr_checkpoint_save into too small a buffer still reports the size
   needed in *written). NaN and Inf norms are signals (rule 1), never
   errors; a finite negative norm is GNMR_ENORM.
       code            meaning                        returned by
       GNMR_EINVAL     a NULL pointer, or an argument every call that takes
                       out of range (a unit >= n; a   a pointer, a unit,
                       tensor of an unknown dtype,    tensors or a scale
                       NULL data or a unit >= n; a
                       scale outside [0, 1])
       GNMR_ESIZE      buffer too small; checkpoint   checkpoint_save,
                       truncated or too long          _load, _config,
                                                      flags_string
       GNMR_ECORRUPT   checkpoint fails its CRC or    checkpoint_load,
                       holds what no step can reach   _config
       GNMR_EVERSION   checkpoint of another format   checkpoint_load,
                       version (0.1-0.6's 1 to 4)     _config
       GNMR_EMISMATCH  checkpoint of another number   checkpoint_load,
                       of units                       _config
       GNMR_ECONFIG    a config field out of range    config_check, init,
                       (gnmr_config_check names it)   reconfigure
       GNMR_ENORM      a finite negative norm         step, place_step
                       (placement: signal)
       GNMR_ESTATE     controller not from gnmr_init, step, reconfigure,
                       edited by hand, a stale copy;  recovering_check,
                       (save) a state it could not    counters_get,
                       load back                      unit_info, step_info,
                                                      checkpoint_save,
                                                      _load, _config
       GNMR_EISA       instruction set not available  isa_force,
                                                      ctl_isa_force
   The placer's functions (gnmr_place_*) answer with the same codes for
   the same causes: EINVAL also for n_units 0 or a cost out of range,
   ECONFIG for its config, ESTATE for a placer not from gnmr_place_init,
   and its checkpoint's as the controller's.
   gnmr_recovering never returns a code (0 where gnmr_recovering_check
   refuses); gnmr_checkpoint_size answers 0 where a save would be refused.

   Checkpoints: gnmr_checkpoint_save / _load, a portable little-endian
   format with a CRC-32; a load validates everything before it writes, and
   a run continued from it decides exactly as one never interrupted, in
   either mode, and gnmr_step_info reads the saved step's verdict. A load
   replaces the config the controller was initialised with by the saved
   one (the run resumes under the rules it was saved with; a
   gnmr_reconfigure after the load changes them);
   gnmr_checkpoint_config reads the saved config and names the first field
   that differs from the controller's, without loading. Format
   version 5 (0.7: rule 10's config and bands); other versions (0.1's 1,
   0.2.0's 2 without the verdict, 0.3's 3, 0.4-0.6's 4) are refused
   (GNMR_EVERSION): start the controller afresh (its statistics settle
   within warmup_steps).

   Norm helpers: gnmr_sumsq_*, gnmr_stats_*, gnmr_unit_sumsq and
   gnmr_unit_norms compute the norms with exact squares, double sums and one
   fixed order of additions (chunks of GNMR_SUM_CHUNK, GNMR_SUM_LANES lanes,
   lanes folded by halves, chunks by a pairwise tree), so the scalar path,
   every SIMD path and a CUDA device give the same bits.

   Build macros (define before including):
       GNMR_IMPLEMENTATION  emit the implementation in this translation unit
       GNMR_STATIC          every symbol static (private to one file)
       GNMR_ASSERT(x)       internal invariant check (default: assert.h);
                            never used on anything a caller passes or sets
       GNMR_NO_SIMD         scalar code only
       GNMR_NO_AVX512, GNMR_NO_AVX2, GNMR_NO_NEON
                            switch one SIMD path off

   Fast-math: a file built with -ffast-math or -Ofast (gcc, clang) may hold
   the implementation: NaN/Inf are told by their bits and the library's own
   functions are compiled with fast-math off. Other compilers' fast-math
   stops the build with an #error.

   Determinism: the same inputs give the same decisions bit for bit. Built
   with -ffp-contract=off (nvcc: --fmad=false) the host, every SIMD path and
   a CUDA device agree bit for bit.
*/
#ifndef GNMR_H
#define GNMR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* memcpy: the inline element conversions */

#define GNMR_VERSION_MAJOR 0
#define GNMR_VERSION_MINOR 7
#define GNMR_VERSION_PATCH 0
#define GNMR_VERSION_STRING "0.7.0"

#ifdef GNMR_STATIC
#define GNMR__STATIC_INTERFACE /* the implementation checks it matches */
#if defined(__GNUC__) || defined(__clang__)
#define GNMR_DEF static __attribute__((unused))
#else
#define GNMR_DEF static
#endif
#else
#define GNMR_DEF extern
#endif

#if defined(__CUDACC__)
#define GNMR_HOSTDEV __host__ __device__
#else
#define GNMR_HOSTDEV
#endif

/* The short window is a compile-time constant so every translation unit (and
   every checkpoint) agrees on the layout of gnmr_slot. */
#define GNMR_WINDOW_MAX 16

/* The largest shift_steps (rule 9): a run's length is kept in 15 bits. */
#define GNMR_SHIFT_STEPS_MAX 4096

/* Canonical summation of the norm helpers: chunks of GNMR_SUM_CHUNK elements,
   GNMR_SUM_LANES lanes per chunk (one CUDA warp). Fixed: they define the bits.
 */
#define GNMR_SUM_CHUNK 4096
#define GNMR_SUM_LANES 32

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

enum {
  GNMR_OK = 0,
  GNMR_EINVAL = -1,    /* NULL pointer or argument out of range */
  GNMR_ESIZE = -2,     /* buffer too small, or checkpoint truncated/too long */
  GNMR_ECORRUPT = -3,  /* checkpoint failed its checksum or its contents */
  GNMR_EVERSION = -4,  /* checkpoint written by another format version */
  GNMR_EMISMATCH = -5, /* checkpoint holds another number of units */
  GNMR_ECONFIG = -6,   /* a configuration field is out of range */
  GNMR_ENORM = -7,     /* a finite negative gradient norm */
  GNMR_ESTATE = -8,    /* controller not from gnmr_init, edited, or stale */
  GNMR_EISA = -9       /* instruction set not available on this CPU/build */
};

GNMR_DEF const char *gnmr_strerror(int code);
GNMR_DEF const char *gnmr_version(void);

/* ---- configuration ----------------------------------------------------- */

/* spike_policy: what happens to this step's gradient of a risky unit
   (PASS: unchanged; CLIP: scaled down, PAPER to tau_r times the mean, NOISE
   a rise to z_rise fluctuations above its level, a fall left alone (rules
   8, N9); SKIP: 0). */
enum { GNMR_SPIKE_PASS = 0, GNMR_SPIKE_CLIP = 1, GNMR_SPIKE_SKIP = 2 };

/* rule: PAPER runs rules 1-8, NOISE rules N1-N9 (top of this file). */
enum { GNMR_RULE_PAPER = 0, GNMR_RULE_NOISE = 1 };

/* global_policy (NOISE mode): every unit's scale on a GLOBAL step (NONE:
   unchanged, CLIP: the global norm brought back to global_ratio times its
   mean, SKIP: 0). */
enum { GNMR_GLOBAL_NONE = 0, GNMR_GLOBAL_CLIP = 1, GNMR_GLOBAL_SKIP = 2 };

typedef struct gnmr_config {
  /* PAPER: tau_r, a ratio above this is risky; finite, > 1 */
  double ratio_threshold;
  /* PAPER: tau_d, delta-GNMR above this is risky; finite, > 0 */
  double delta_threshold;
  /* beta in (0, 1]: weight of the history; 1 = plain mean of all of it */
  double history_decay;
  /* floor of the mean in the ratio; finite, > 0 */
  double eps;
  /* PAPER: W, the short window of delta-GNMR, 1 ... GNMR_WINDOW_MAX */
  uint32_t delta_window;
  /* finite observations a unit needs before it can be flagged */
  uint32_t warmup_steps;
  /* maxO: units in recovery at once, <= the unit count; 0 = watch: nobody
     admitted, scales still given (under CLIP: watch-and-clip) */
  uint32_t max_recovering;
  /* L >= 1: steps on the high-fidelity path once admitted */
  uint32_t lock_steps;
  /* steps after a release before the unit may be admitted again */
  uint32_t cooldown_steps;
  /* GNMR_SPIKE_*: this step's gradient of a risky unit */
  int spike_policy;
  /* GNMR_RULE_PAPER or GNMR_RULE_NOISE. The fields below are NOISE mode's
     (rules N1-N9); PAPER mode checks them but does not read them. */
  int rule;
  /* 1: falls are flagged too (FALL); 0: rises only */
  uint32_t two_sided;
  /* z_rise: a rise's residual above this many fluctuations; finite, > 0 */
  double z_rise;
  /* z_fall: a fall's residual below minus this many; finite, > 0 */
  double z_fall;
  /* a rise also needs the unit's own part above this ratio; finite, > 1 */
  double min_rise;
  /* a fall also needs the unit's own part below this ratio; (0, 1) */
  double max_fall;
  /* weight of the last deviation in the prediction; [0, 1) */
  double ar;
  /* the last deviation is kept only within +-hold fluctuations; > 0 */
  double hold;
  /* weight of the fluctuation's history, (0, 1] */
  double fluct_decay;
  /* a residual enters the fluctuation capped at winsor times it; >= 1 */
  double winsor;
  /* the fluctuation's floor, in log units; finite, >= 0 */
  double fluct_floor;
  /* GLOBAL needs the common or global log-deviation above L(this); > 1 */
  double global_ratio;
  /* ... or that share of the settled units above it; (0, 1] */
  double global_frac;
  /* settled units needed for a common view and a verdict; >= 1 */
  uint32_t common_min_units;
  /* GNMR_GLOBAL_*: every unit's scale on a GLOBAL step */
  int global_policy;
  /* Both modes (rule 9): P, flagged steps in a row after which a unit whose
     norm held steady is taken to have moved to a new level; 0 = off, else
     2 ... GNMR_SHIFT_STEPS_MAX */
  uint32_t shift_steps;
  /* Both modes (rule 10): risky steps in a row above the admission band
     before a unit is admitted; 1 ... GNMR_SHIFT_STEPS_MAX */
  uint32_t band_steps;
  /* steady: the run's log-spread at most this many times its log-jump from
     the old level; finite, >= 0 */
  double shift_spread;
  /* Both modes (rule 10): K, the admission band's width in deviations of
     the unit's own log norm; 0 = off (every risky unit is a candidate),
     else finite, > 0 */
  double band_k;
} gnmr_config;

/* The library's defaults (table above). */
GNMR_DEF gnmr_config gnmr_config_default(void);
/* 0.1's defaults exactly, with rule = GNMR_RULE_PAPER (NOISE fields at
   their defaults). */
GNMR_DEF gnmr_config gnmr_config_paper(void);
/* The noise-aware rules (rule = GNMR_RULE_NOISE, warmup 50), the other
   fields as gnmr_config_paper(). */
GNMR_DEF gnmr_config gnmr_config_noise(void);
/* For gradient norms alone on a run whose norms have heavy tails (small
   batches, heavy-tailed data): the defaults with band_k 4 (rule 10), so a
   risky unit is clipped as by the defaults but admitted only when it
   leaves its own noise band (bench/RESULTS.md, "The calm preset in the
   library"). */
GNMR_DEF gnmr_config gnmr_config_calm(void);
/* For a controller fed each unit's forward signal beside its gradient norm
   ("What to feed it"): the defaults with ratio_threshold 8 and
   delta_threshold 6, chosen on the tune half of the settings suite
   (bench/RESULTS.md, "Settings suite"). */
GNMR_DEF gnmr_config gnmr_config_forward(void);
/* GNMR_OK, or GNMR_ECONFIG with *field naming the first field out of range
   (max_recovering also when above n_units; "n_units" when n_units is 0 and
   max_recovering is not: a controller over no units can only watch);
   *field is NULL when valid. field may be NULL. GNMR_EINVAL for a NULL cfg
   (*field untouched). gnmr_init and gnmr_reconfigure refuse what this
   refuses: call it with their arguments to learn which field. */
GNMR_DEF int gnmr_config_check(const gnmr_config *cfg, uint32_t n_units,
                               const char **field);

/* ---- controller state (caller-owned, allocation-free) ------------------ */

/* The counters, each kept per unit and as a total of the controller:
     risky           unit-steps flagged risky (non-finite included)
     nonfinite       unit-steps with a NaN/Inf norm
     admissions      RECOVER decisions
     renewals        locks renewed at expiry
     recovery_steps  unit-steps run on the high-fidelity path
     over_budget     risky, eligible, refused for lack of a slot
     falls           unit-steps flagged FALL (NOISE mode)
     absent          unit-steps with a norm of exactly 0 (rule 0)
     level_shifts    new levels learned (rule 9)
   Adding one is a line here, its meaning above and the step counting it:
   slots, checkpoint and gnmr_counters follow. */
#define GNMR__COUNTERS(X)                                                      \
  X(risky, uint64_t, ONE)                                                      \
  X(nonfinite, uint64_t, ONE)                                                  \
  X(admissions, uint64_t, ONE)                                                 \
  X(renewals, uint64_t, ONE)                                                   \
  X(recovery_steps, uint64_t, ONE)                                             \
  X(over_budget, uint64_t, ONE)                                                \
  X(falls, uint64_t, ONE)                                                      \
  X(absent, uint64_t, ONE)                                                     \
  X(level_shifts, uint64_t, ONE)

/* Every field of a unit, listed once: X(name, C type, shape), shape ONE (a
   value per unit), RING (GNMR_WINDOW_MAX values: the last stored ratios,
   observation k in element k mod GNMR_WINDOW_MAX, each in an array of its
   own) or PAIR (two values side by side: one 16-byte record a unit, so a
   step that touches it touches one cache line, not two arrays). The slot size,
   the layout and the checkpoint follow; a checkpoint saves the state, in this
   order, each value as the little-endian bits of its type. The scratch is
   the step's working space, never saved (score and heap are zero between
   steps). */
#define GNMR__UNIT_STATE(X)                                                    \
  X(mean, double, ONE)           /* m, the historical mean */                  \
  X(window_sum, double, ONE)     /* sum of the last min(k, W) ratios */        \
  X(window, float, RING)         /* the stored ratios */                       \
  X(finite_steps, uint64_t, ONE) /* k, finite observations */                  \
  X(log_mean, double, ONE)       /* mu, NOISE mode's log-mean */               \
  X(fluct, double, ONE)          /* s, its fluctuation */                      \
  X(last_dev, double, ONE)       /* p, its last deviation */                   \
  X(band_centre, double, ONE)    /* rule 10: the band's centre, c */           \
  X(band_dev, double, ONE)       /* ... and its deviation, v */                \
  GNMR__COUNTERS(X)                                                            \
  X(shift_run, uint64_t, PAIR) /* rule 9's run (gnmr__run_*) */                \
  X(lock, uint32_t, ONE)       /* steps of recovery left */                    \
  X(cooldown, uint32_t, ONE)   /* steps of cooldown left */                    \
  X(band_seen, uint32_t, ONE)  /* rule 10: observations it learned from */     \
  X(band_run, uint32_t, ONE)   /* ... risky steps above it in a row */
#define GNMR__UNIT_SCRATCH(X)                                                  \
  X(score, double, ONE)  /* > 0 while the unit waits for a slot */             \
  X(dev, double, ONE)    /* NOISE: L(g) - mu, this step's (rule N2) */         \
  X(heap, uint32_t, ONE) /* admission heap; the candidates from the back */
#define GNMR__COUNT_ONE 1
#define GNMR__COUNT_RING GNMR_WINDOW_MAX
#define GNMR__COUNT_PAIR 2
#define GNMR__BYTES(name, type, shape) /* a term of a sum */                   \
  +sizeof(type) * GNMR__COUNT_##shape  /* NOLINT(bugprone-macro-parentheses) */
#define GNMR__UNIT_BYTES                                                       \
  (0 GNMR__UNIT_STATE(GNMR__BYTES) GNMR__UNIT_SCRATCH(GNMR__BYTES))
#define GNMR__FIELD(name, type, shape) type name;

/* Storage for one unit: plain data of fixed size, opaque. gnmr_init lays a
   block of N out as a header of 8 bytes, then one array per field, so the
   block is one whole: never copy or move single slots. */
typedef struct gnmr_slot {
  /* cppcheck-suppress unusedStructMember */
  uint64_t opaque[(GNMR__UNIT_BYTES + 8 + 7) / 8];
} gnmr_slot;

/* The global norm's history (NOISE mode, rule N3): the statistics of one
   more unit, saved in the checkpoint after the totals. */
#define GNMR__GLOBAL(X)                                                        \
  X(global_log_mean, double, ONE)                                              \
  X(global_fluct, double, ONE)                                                 \
  X(global_last_dev, double, ONE)                                              \
  X(global_k, uint64_t, ONE)

/* The step-level verdict of the last step (gnmr_step_info). NOISE mode
   fills it all; PAPER mode only `flagged` (the rest 0, global_scale 1). In
   the checkpoint: after a load it reads as when it was saved. */
typedef struct gnmr_step_report {
  double global_norm;  /* G: root of the sum of the finite units' g^2 */
  double global_dev;   /* L(G) minus its log-mean before this step (0
                          while G has no history) */
  double global_ratio; /* G over its mean: exp(global_dev), the library's
                          own exp */
  double common;       /* c: the settled units' common deviation (rule N3) */
  double global_scale; /* what the global policy multiplied every scale by */
  uint32_t settled;    /* units in the common view: finite, k >= max(warmup,
                          1) */
  uint32_t flagged;    /* units risky this step, non-finite included */
  uint32_t rises;      /* units flagged RATIO (NOISE: a rise) */
  uint32_t falls;      /* units flagged FALL */
  uint32_t global;     /* 1 on a GLOBAL step */
  /* cppcheck-suppress unusedStructMember */
  uint32_t reserved_; /* 0 */
} gnmr_step_report;

/* The verdict's fields in the checkpoint (reserved_ is not saved). */
#define GNMR__REPORT(X)                                                        \
  X(global_norm, double, ONE)                                                  \
  X(global_dev, double, ONE)                                                   \
  X(global_ratio, double, ONE)                                                 \
  X(common, double, ONE)                                                       \
  X(global_scale, double, ONE)                                                 \
  X(settled, uint32_t, ONE)                                                    \
  X(flagged, uint32_t, ONE)                                                    \
  X(rises, uint32_t, ONE)                                                      \
  X(falls, uint32_t, ONE)                                                      \
  X(global, uint32_t, ONE)

/* The controller. Its fields are the library's: reading them is fine,
   writing them is not (change settings with gnmr_reconfigure). A struct
   copy shares the slots: once either of the two changes the state, the
   other is refused with GNMR_ESTATE, as is a controller edited by hand. A
   copy that runs on its own is made with a checkpoint: save, then load
   into another controller initialised over its own slots. One move is
   allowed: the controller and its whole block of slots copied byte for
   byte (into device memory, say), units set to the moved slots, and only
   the moved one used from then on. */
typedef struct gnmr_ctl {
  gnmr_config cfg;
  gnmr_slot *units;
  uint32_t n_units;
  uint32_t recovering;       /* units with lock > 0 */
  uint32_t peak_recovering;  /* highest `recovering` seen */
  uint32_t magic;            /* set by gnmr_init */
  uint64_t full_weight_from; /* first k with 1/k <= 1 - beta (derived) */
  uint64_t fluct_full_from;  /* ... with 1/k <= 1 - fluct_decay (derived) */
  uint64_t gen;  /* advanced by every change; also in the slots' header */
  uint64_t seal; /* hash of every field above but units and magic */
  uint64_t steps;
  uint64_t global_steps;      /* GLOBAL steps */
  GNMR__COUNTERS(GNMR__FIELD) /* the totals */
  GNMR__GLOBAL(GNMR__FIELD)   /* the global norm's history */
  gnmr_step_report report;    /* the last step's verdict */
} gnmr_ctl;

/* Checks cfg (gnmr_config_check), zeroes the slots. GNMR_ECONFIG: the
   field is named by gnmr_config_check(cfg, n_units, &field), the same
   check on the same arguments. n_units 0 is valid only with
   max_recovering 0 (otherwise the field named is "n_units"). */
GNMR_DEF int gnmr_init(gnmr_ctl *ctl, const gnmr_config *cfg, gnmr_slot *units,
                       uint32_t n_units);

/* New settings for a running controller, from its next step on. cfg is
   checked whole as by gnmr_init (GNMR_ECONFIG: nothing changes). The
   state follows:
     max_recovering below the units in recovery: they keep their slots
       until their locks run out, but while more units recover than the
       budget allows, a lock that runs out is released (never renewed) and
       nobody is admitted; admissions resume once a slot is free within it;
     lock_steps, cooldown_steps lowered: locks and cooldowns left are cut
       to the new length (raised: those running keep theirs);
     ratio_threshold lowered: stored ratios above it are cut to it, as the
       step would have stored them, and the window sums re-derived;
     delta_window changed: the window sums re-derived from the stored
       ratios (the last GNMR_WINDOW_MAX are always kept);
     history_decay, fluct_decay: the weight of later observations (the
       means stay);
     rule changed: every unit's statistics (k, both modes' means, the
       window, s, p) and the global norm's history start afresh, so the
       new rule warms up on its own observations (locks, cooldowns and
       counters are kept).
   eps, delta_threshold, warmup_steps, spike_policy and the other NOISE
   fields hold no state. Counters and peak_recovering are kept. */
GNMR_DEF int gnmr_reconfigure(gnmr_ctl *ctl, const gnmr_config *cfg);

/* ---- one step ---------------------------------------------------------- */

enum {
  GNMR_ACTION_KEEP = 0,
  GNMR_ACTION_RECOVER = 1,
  GNMR_ACTION_HOLD = 2,
  GNMR_ACTION_RELEASE = 3
};

enum {
  GNMR_FLAG_RATIO = 1u << 0,       /* PAPER: ratio > tau_r; NOISE: a rise */
  GNMR_FLAG_DELTA = 1u << 1,       /* PAPER: delta-GNMR above tau_d */
  GNMR_FLAG_NONFINITE = 1u << 2,   /* norm was NaN or +-Inf */
  GNMR_FLAG_OVER_BUDGET = 1u << 3, /* risky, eligible, no free slot */
  GNMR_FLAG_COOLDOWN = 1u << 4,    /* risky but still cooling down */
  GNMR_FLAG_WARMUP = 1u << 5,      /* too few observations to be flagged */
  GNMR_FLAG_RENEWED = 1u << 6,     /* lock ran out while risky: renewed */
  GNMR_FLAG_FALL = 1u << 7,        /* NOISE: below its expected level */
  GNMR_FLAG_GLOBAL = 1u << 8,      /* NOISE: on every unit of a GLOBAL step */
  GNMR_FLAG_ABSENT = 1u << 9,      /* norm exactly 0: no observation */
  GNMR_FLAG_SHIFT = 1u << 10,      /* a new level learned this step */
  GNMR_FLAG_BAND = 1u << 11        /* risky, not admitted: in its band */
};

/* The manual's "Decision fields" defines each field once, per mode. */
typedef struct gnmr_decision {
  /* g over the unit's mean level before this step, in both modes */
  double ratio;
  /* PAPER: delta-GNMR; NOISE: e, the residual rule N4 thresholds */
  double delta;
  /* how far past its threshold (>= 1 when flagged); +inf if non-finite */
  double score;
  /* multiply this step's gradient of the unit by it */
  double scale;
  /* GNMR_FLAG_* */
  uint32_t flags;
  /* GNMR_ACTION_KEEP / _RECOVER / _HOLD / _RELEASE */
  int32_t action;
} gnmr_decision;

/* norms[u]: unit u's gradient L2 norm. NaN/Inf are legal; a finite negative
   norm is refused (GNMR_ENORM). out may be NULL. */
GNMR_DEF GNMR_HOSTDEV int gnmr_step(gnmr_ctl *ctl, const float *norms,
                                    gnmr_decision *out);

/* 1 if unit u runs the high-fidelity path next step, else 0: never
   anything else, so `if (gnmr_recovering(&ctl, u))` is safe to copy. A
   call gnmr_recovering_check refuses answers 0 (the cheap path). Made to be
   called per unit: it reads the slots without the seal's check. */
GNMR_DEF GNMR_HOSTDEV int gnmr_recovering(const gnmr_ctl *ctl, uint32_t u);
/* Why gnmr_recovering(ctl, u) would answer 0 for lack of an answer:
   GNMR_OK, GNMR_EINVAL (ctl NULL, u >= n_units) or GNMR_ESTATE (ctl not
   initialised, or a copy left behind). Once per step is enough. */
GNMR_DEF GNMR_HOSTDEV int gnmr_recovering_check(const gnmr_ctl *ctl,
                                                uint32_t u);

/* "KEEP", "RECOVER", "HOLD", "RELEASE"; "?" for any other value. */
GNMR_DEF const char *gnmr_action_name(int action);
/* "RATIO", "DELTA", ... for one GNMR_FLAG_* bit; NULL for anything else. */
GNMR_DEF const char *gnmr_flag_name(uint32_t flag);
/* flags as their names joined by '|' ("" for none; unknown bits as one hex
   number), NUL-terminated. GNMR_ESIZE where cap is too small (buf
   untouched); GNMR_FLAGS_STRING_MAX bytes always do. */
#define GNMR_FLAGS_STRING_MAX 112
GNMR_DEF int gnmr_flags_string(uint32_t flags, char *buf, size_t cap);

typedef struct gnmr_counters {
  uint64_t steps;             /* steps taken */
  uint64_t global_steps;      /* GLOBAL steps among them */
  uint64_t finite_steps;      /* observations that entered the statistics */
  GNMR__COUNTERS(GNMR__FIELD) /* risky, nonfinite, ...: see GNMR__COUNTERS */
  uint32_t recovering;        /* now (controller: units; unit: 0 or 1) */
  uint32_t peak_recovering;   /* controller only: most units at once */
} gnmr_counters;

/* unit = UINT32_MAX (GNMR_ALL_UNITS) reads the controller's totals. */
#define GNMR_ALL_UNITS 0xFFFFFFFFu
GNMR_DEF int gnmr_counters_get(const gnmr_ctl *ctl, uint32_t unit,
                               gnmr_counters *out);

/* A unit as the last step left it. */
typedef struct gnmr_unit_state {
  double mean;            /* m: the historical mean of its norms */
  double window_mean;     /* mean of its last min(k, W) stored ratios (0
                             while k = 0): what delta-GNMR subtracts */
  uint32_t lock_left;     /* steps left on the high-fidelity path */
  uint32_t cooldown_left; /* steps before it may be admitted again */
  double log_mean;        /* NOISE: mu, s, p (rules N2-N7) */
  double fluct;
  double last_dev;
  gnmr_counters counters; /* as gnmr_counters_get: finite_steps is k,
                             recovering is lock_left > 0 */
  double band_centre;     /* rule 10: c and v of the band on L(g) */
  double band_dev;
  uint32_t band_seen; /* observations the band learned from */
  uint32_t band_run;  /* risky steps above it in a row */
} gnmr_unit_state;
GNMR_DEF int gnmr_unit_info(const gnmr_ctl *ctl, uint32_t u,
                            gnmr_unit_state *out);
/* The last step's verdict (gnmr_step_report). */
GNMR_DEF int gnmr_step_info(const gnmr_ctl *ctl, gnmr_step_report *out);

/* ---- checkpoint -------------------------------------------------------- */

/* Bytes a checkpoint of ctl takes (0 if ctl is not usable). */
GNMR_DEF size_t gnmr_checkpoint_size(const gnmr_ctl *ctl);
/* buf NULL: only *written = size. cap too small: GNMR_ESIZE, *written = size.
 */
GNMR_DEF int gnmr_checkpoint_save(const gnmr_ctl *ctl, void *buf, size_t cap,
                                  size_t *written);
/* Into a controller initialised over the same number of units; restores its
   config and state, or changes nothing. The config is the checkpoint's: the
   one ctl was initialised with is replaced (gnmr_checkpoint_config first,
   to see what would change). */
GNMR_DEF int gnmr_checkpoint_load(gnmr_ctl *ctl, const void *buf, size_t len);
/* What gnmr_checkpoint_load(ctl, buf, len) would do to ctl's config, without
   loading: the same checks and codes; on GNMR_OK *out (out may be NULL) is
   the checkpoint's config and *differs (may be NULL) the first field of it
   whose bits differ from ctl->cfg's, NULL when none does. Refused, it
   writes nothing. ctl is never changed. */
GNMR_DEF int gnmr_checkpoint_config(const gnmr_ctl *ctl, const void *buf,
                                    size_t len, gnmr_config *out,
                                    const char **differs);

/* ---- placement (rules P1-P7, top of this file) ------------------------- */

/* The placer's settings (gnmr_place_config_default; the manual's table). */
typedef struct gnmr_place_config {
  /* B: share of the units' cost (FLOPs) on the high-fidelity path; (0, 1] */
  double budget;
  /* weight of the history in each unit's mean update norm; [0, 1) */
  double update_decay;
  /* the run fires when its level (rule P3) is below this; [0, 1) */
  double fire_level;
  /* ... or when the level's fast mean is below this times its slow; [0, 1)
   */
  double fall_ratio;
  /* weight of the history in the level's fast mean; [0, 1) */
  double fast_decay;
  /* ... and in its slow mean; [0, 1) */
  double slow_decay;
  /* steps with a level before the run may fire (by its level); any */
  uint32_t warmup_steps;
  /* T, the steps the caller plans to run; 0: not told (rule P5) */
  uint32_t planned_steps;
  /* the GEMMs a fired unit runs high-fidelity, GNMR_GEMM_* bits; 1..7 */
  uint32_t gemms;
  /* how the trained model will be served, GNMR_SERVE_*: HIGH, the placed
     GEMMs high-fidelity; LOW, on the low format, so the forward GEMM stays
     on it in training too (gemms' GNMR_GEMM_FWD is dropped) */
  uint32_t serve;
} gnmr_place_config;

/* A unit's three GEMMs (gnmr_place_config.gemms, gnmr_place_high): each
   costs a third of the unit (2 N in out FLOPs of its 6 N in out). */
#define GNMR_GEMM_FWD 1u   /* forward: y = x W */
#define GNMR_GEMM_DGRAD 2u /* input gradient: dx = dy W^T */
#define GNMR_GEMM_WGRAD 4u /* weight gradient: dW = x^T dy */
#define GNMR_GEMM_ALL 7u

/* How the model will be served (gnmr_place_config.serve). */
#define GNMR_SERVE_HIGH 0u /* the placed GEMMs in high precision */
#define GNMR_SERVE_LOW 1u  /* every GEMM on the low format */

/* The defaults: budget 0.1, the rest as the manual's table. */
GNMR_DEF gnmr_place_config gnmr_place_config_default(void);
/* GNMR_OK, or GNMR_ECONFIG with *field (field may be NULL) naming the first
   field out of range, NULL when valid. GNMR_EINVAL for a NULL cfg. */
GNMR_DEF int gnmr_place_config_check(const gnmr_place_config *cfg,
                                     const char **field);

/* A placer unit's state, every field listed once: X(name, type), 8-byte
   fields first. It gives gnmr_place_unit_state, the layout of the unit
   block, the checkpoint's unit record and its checks. */
#define GNMR__PLACE_UNIT(X)                                                    \
  X(cost, double)      /* its cost per step (GEMM FLOPs), from init */         \
  X(update, double)    /* the mean of its update norm (rule P2) */             \
  X(ratio, double)     /* r, at its last observation */                        \
  X(ratio_max, double) /* its running maximum of r */                          \
  X(seen, uint64_t)    /* its observations */                                  \
  X(order, uint32_t)   /* entry k of the firing order: who fired k-th */       \
  X(high, uint32_t)    /* 1: high-fidelity on the next step */
#define GNMR__PLACE_FIELD(name, type) type name;
#define GNMR__PLACE_BYTES(name, type)                                          \
  +sizeof(type) /* NOLINT(bugprone-macro-parentheses) */
#define GNMR__PLACE_UNIT_BYTES (0 GNMR__PLACE_UNIT(GNMR__PLACE_BYTES))

/* One unit's state, as gnmr_place_unit_info reads it. */
typedef struct gnmr_place_unit_state {
  GNMR__PLACE_UNIT(GNMR__PLACE_FIELD)
} gnmr_place_unit_state;

/* Storage for one unit: plain data of fixed size, opaque. The caller owns a
   block of n; gnmr_place_init lays the block out as a header of 8 bytes,
   then one array per field, so the block is one whole: never copy or move
   single entries. Read a unit with gnmr_place_unit_info. */
typedef struct gnmr_place_unit {
  /* cppcheck-suppress unusedStructMember */
  uint64_t opaque[(GNMR__PLACE_UNIT_BYTES + 8 + 7) / 8];
} gnmr_place_unit;

/* The placer. Its fields are the library's: reading them is fine, writing
   them is not. A struct copy shares the units: once either of the two
   steps, the other is refused with GNMR_ESTATE, as is a placer edited by
   hand (its config included). A copy that runs on its own is made with a
   checkpoint. One move is allowed, as the controller's: the placer and its
   whole unit block copied byte for byte, units set to the moved block, and
   only the moved one used from then on. */
typedef struct gnmr_place {
  gnmr_place_config cfg;
  gnmr_place_unit *units;
  uint32_t n_units;
  uint32_t n_fired;  /* 0, or n_units once the run has fired (rule P5) */
  double total;      /* C: the sum of the costs, in unit order */
  double earn;       /* B x C: what a step earns (rule P6) */
  double credit;     /* what is left to spend, >= 0 */
  double level;      /* x, the last step's level (rule P3) */
  double level_fast; /* its fast and slow means (rule P4) */
  double level_slow;
  uint64_t steps;      /* gnmr_place_step calls that were not refused */
  uint64_t level_seen; /* steps with a level */
  uint64_t fired_step; /* the step that fired (0-based); UINT64_MAX: none */
  uint64_t gen;        /* advanced by every change; also in the units' header */
  uint64_t seal;       /* hash of what a step trusts (config, n, totals, gen) */
  uint32_t magic;      /* set by gnmr_place_init */
  uint32_t reserved_;
} gnmr_place;

/* A placer over the caller's n_units (>= 1) states, unit u costing
   costs[u] per step (finite, > 0; their sum finite): nothing fired, the
   credit one step's earning, no unit high-fidelity. GNMR_EINVAL: a NULL
   pointer, n_units 0, or a cost out of range; GNMR_ECONFIG: cfg
   (gnmr_place_config_check names the field). Refused, nothing changes. */
GNMR_DEF int gnmr_place_init(gnmr_place *pl, const gnmr_place_config *cfg,
                             gnmr_place_unit *units, const double *costs,
                             uint32_t n_units);
/* One training step, after its optimizer update: update[u] = ||W_t+1 -
   W_t||, qerr[u] = ||Q(W_t) - W_t|| (the unit's weights' quantization error
   as the cheap path used them), rules P1-P7. high (may be NULL) gets, per
   unit, the GEMMs it runs high-fidelity on the next step (cfg.gemms, or 0
   for none: with the default GNMR_GEMM_ALL, 7 means the whole unit). A
   finite
   negative signal: GNMR_ENORM; NULL pl, update or qerr: GNMR_EINVAL; a
   placer not from gnmr_place_init, edited by hand, or a struct copy whose
   twin has stepped: GNMR_ESTATE. Refused, nothing changes, high included. */
GNMR_DEF GNMR_HOSTDEV int gnmr_place_step(gnmr_place *pl, const double *update,
                                          const double *qerr, uint8_t *high);
/* The GEMMs (GNMR_GEMM_* bits: cfg.gemms, less GNMR_GEMM_FWD under
   GNMR_SERVE_LOW) unit u runs high-fidelity on the next step; 0 for none,
   and for a NULL or uninitialised placer or a unit >= n. Told the plan,
   after its last step: the final placement (rule P7), the GEMMs to serve
   high-fidelity. */
GNMR_DEF GNMR_HOSTDEV int gnmr_place_high(const gnmr_place *pl, uint32_t u);
/* Unit u's state into *out, its order field the u-th entry of the firing
   order (the unit that fired u-th; 0 before the fire). GNMR_EINVAL: NULL,
   or u >= n; GNMR_ESTATE: a placer not from gnmr_place_init. */
GNMR_DEF int gnmr_place_unit_info(const gnmr_place *pl, uint32_t u,
                                  gnmr_place_unit_state *out);

typedef struct gnmr_place_report {
  uint64_t steps;      /* steps so far */
  uint64_t fired_step; /* the step that fired (0-based); UINT64_MAX: none */
  double level;        /* the last level x (rule P3); 0 before the first */
  double credit;       /* the credit left after the last decision */
  double high_cost;    /* cost of the units high-fidelity on the next step */
  double high_share;   /* ... over C */
} gnmr_place_report;
GNMR_DEF int gnmr_place_info(const gnmr_place *pl, gnmr_place_report *out);

/* Checkpoints of a placer, as the controller's: little-endian, CRC-32,
   version 2; a load validates everything before it writes, restores config,
   costs and state (into a placer initialised over the same number of
   units), and a run continued from it decides exactly as one never
   interrupted. Size 0 where a save would be refused. */
GNMR_DEF size_t gnmr_place_checkpoint_size(const gnmr_place *pl);
GNMR_DEF int gnmr_place_checkpoint_save(const gnmr_place *pl, void *buf,
                                        size_t cap, size_t *written);
GNMR_DEF int gnmr_place_checkpoint_load(gnmr_place *pl, const void *buf,
                                        size_t len);

/* ---- norm helpers ------------------------------------------------------ */

enum { GNMR_DTYPE_F32 = 0, GNMR_DTYPE_F16 = 1, GNMR_DTYPE_BF16 = 2 };

typedef struct gnmr_tensor_stats {
  double sumsq;       /* canonical sum of squares (Inf/NaN if any non-finite) */
  double amax;        /* largest |x| over the finite elements */
  uint64_t nonfinite; /* count of NaN/Inf elements */
} gnmr_tensor_stats;

typedef struct gnmr_tensor {
  const void *data; /* n elements of dtype; any alignment */
  size_t n;
  int dtype;     /* GNMR_DTYPE_F32, GNMR_DTYPE_F16 (IEEE binary16 bits),
                    GNMR_DTYPE_BF16 */
  uint32_t unit; /* unit the tensor belongs to */
} gnmr_tensor;

/* Canonical sum of squares (same bits on every path; any alignment). stats
   also gives amax and the NaN/Inf count, in the same pass. x == NULL with
   n > 0 reads as a NaN sum; out == NULL does nothing. */
GNMR_DEF double gnmr_sumsq_f32(const float *x, size_t n);
GNMR_DEF double gnmr_sumsq_f16(const uint16_t *x, size_t n);
GNMR_DEF double gnmr_sumsq_bf16(const uint16_t *x, size_t n);
GNMR_DEF void gnmr_stats_f32(const float *x, size_t n, gnmr_tensor_stats *out);
GNMR_DEF void gnmr_stats_f16(const uint16_t *x, size_t n,
                             gnmr_tensor_stats *out);
GNMR_DEF void gnmr_stats_bf16(const uint16_t *x, size_t n,
                              gnmr_tensor_stats *out);

/* sumsq[u] = sum over the tensors of unit u, added in tensor order, in
   double (the vector a distributed job all-reduces). Any tensor order. */
GNMR_DEF int gnmr_unit_sumsq(const gnmr_tensor *t, size_t nt, double *sumsq,
                             uint32_t n_units);
/* norms[u] = (float)sqrt(sumsq[u]) of the above, bit for bit: any tensor
   order, a unit's tensors added in the order they appear; units without
   tensors get 0. Allocation-free: sums are kept for up to 256 units at a
   time, so with more units the tensor list (headers only: each tensor's data
   is read once) is scanned once per 256 units. */
GNMR_DEF int gnmr_unit_norms(const gnmr_tensor *t, size_t nt, float *norms,
                             uint32_t n_units);

/* Applying a decision: x[i] *= scale for every i < n, the buffer the
   gradient lives in (writable: gnmr_tensor's data is const, so the norm
   helpers take read-only memory, and these take the buffer itself).
   scale is a decision's, in [0, 1]:
     1        nothing is read or written (a calm unit costs no pass);
     0        every element becomes +0, NaN and Inf included: a unit with a
              non-finite norm (rule 1) goes to the optimizer as 0, where
              x * 0 would keep its NaN and Inf;
     between  each element times scale, the product in double rounded to
              float (f16, bf16: then to the format, to nearest even); a
              NaN stays NaN and an Inf stays Inf.
   GNMR_EINVAL, writing nothing: x NULL with n > 0, or a scale that no
   decision has (NaN, below 0, above 1). */
GNMR_DEF int gnmr_scale_f32(float *x, size_t n, double scale);
GNMR_DEF int gnmr_scale_f16(uint16_t *x, size_t n, double scale);
GNMR_DEF int gnmr_scale_bf16(uint16_t *x, size_t n, double scale);

/* One element's exact value as float. Inline and GNMR_HOSTDEV: callable from
   host and CUDA device code in any translation unit, with no
   GNMR_IMPLEMENTATION there and no -rdc. (The other GNMR_HOSTDEV functions,
   gnmr_step, gnmr_recovering and gnmr_recovering_check, are defined once, in
   the implementation's file: device code in another .cu file calls them with
   relocatable device code, nvcc -rdc=true, or defines GNMR_STATIC and
   GNMR_IMPLEMENTATION itself for a private copy.) No casts in these two:
   what every C++ file sees stays clean under -Wold-style-cast (an
   initialisation widens). */
static inline GNMR_HOSTDEV float gnmr_bf16_to_f32(uint16_t h) {
  uint32_t bits = h;
  float f;
  bits <<= 16;
  memcpy(&f, &bits, 4);
  return f;
}

/* IEEE binary16 bits; subnormals, Inf and NaN payloads kept. */
static inline GNMR_HOSTDEV float gnmr_f16_to_f32(uint16_t h) {
  uint32_t sign = h & 0x8000u;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu, bits;
  float f;
  sign <<= 16;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else { /* subnormal: normalise; exact in f32 */
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      exp--;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  memcpy(&f, &bits, 4);
  return f;
}

/* ---- dispatch ---------------------------------------------------------- */

enum {
  GNMR_ISA_SCALAR = 0,
  GNMR_ISA_SSE2 = 1,
  GNMR_ISA_AVX2 = 2,
  GNMR_ISA_AVX512 = 3,
  GNMR_ISA_NEON = 4
};

/* The norm helpers' path: the first one this build and CPU can run in the
   architecture's preference list (x86: AVX-512, AVX2, SSE2, scalar; aarch64:
   NEON, scalar; cpuid + xgetbv on x86), chosen at first use. force changes
   it for the process (not meant to race with norm calls in other threads).
   The paths give the same bits; only speed differs. */
GNMR_DEF int gnmr_isa_active(void);
/* 1 if this CPU and build can run isa. */
GNMR_DEF int gnmr_isa_supported(int isa);
/* GNMR_EISA where unsupported; the norm helpers only. */
GNMR_DEF int gnmr_isa_force(int isa);
GNMR_DEF const char *gnmr_isa_name(int isa);

/* The controller's path, chosen on its own: GNMR_ISA_AVX512 (eight calm
   units per step at a time) where this build and CPU have it, else
   GNMR_ISA_SCALAR. Both give the same bits. force takes either of the two
   (GNMR_EISA otherwise, or where AVX-512 is not available); the same
   threading caveat as gnmr_isa_force. */
GNMR_DEF int gnmr_ctl_isa_active(void);
GNMR_DEF int gnmr_ctl_isa_force(int isa);

#ifdef __cplusplus
}
#endif
#endif /* GNMR_H */

/* The one error code of the CUDA headers (examples/cuda/gnmr_norms.cuh and
   gnmr_ctl.cuh), defined here, the file both include: a CUDA call failed,
   and the plan's or controller's cuda_error holds the cudaError_t. It is
   not one of gnmr.h's codes (gnmr_strerror does not know it). */
#ifndef GNMR_CUDA_ECUDA
#define GNMR_CUDA_ECUDA (-100)
#endif

/* IEEE single precision or nothing, for the CUDA headers' kernels: nvcc
   --use_fast_math (llm.c's default) flushes f32 subnormals to zero
   (--ftz=true) and fuses multiply-adds, and the bits would no longer be
   this file's. nvcc 13 defines no macro for it (the headers #error on
   __USE_FAST_MATH__ where a compiler does), so one kernel in each header
   starts with gnmr__cuda_ieee_guard(), which is enough to fail the build:
   it asks NVVM (__nvvm_reflect("__CUDA_FTZ"), libdevice's own switch,
   folded at compile time) and under --ftz=true calls a function that
   exists nowhere, so ptxas stops the build naming it (make cuda checks
   both headers). Nothing calls it outside those kernels. */
#if defined(__CUDACC__) && !defined(GNMR__CUDA_IEEE_GUARD)
#define GNMR__CUDA_IEEE_GUARD
extern "C" __device__ int __nvvm_reflect(const char *);
extern "C" __device__ void
gnmr_cuda_needs_ieee_floats_build_without_use_fast_math(void);
static __device__ __forceinline__ void gnmr__cuda_ieee_guard(void) {
  if (__nvvm_reflect("__CUDA_FTZ"))
    gnmr_cuda_needs_ieee_floats_build_without_use_fast_math();
}
#endif

/* ======================================================================== */
#ifdef GNMR_IMPLEMENTATION
#ifndef GNMR__IMPLEMENTED
#define GNMR__IMPLEMENTED

/* The private names the CUDA headers (gnmr_ctl.cuh, gnmr_norms.cuh) use,
   the contract between them and this file: a change to any of these
   changes those headers in the same commit, and a name not listed here is
   not theirs to use (tests/test_cuda_host.c checks both headers against
   this list). Every function listed is GNMR_HOSTDEV.
     GNMR__IMPLEMENTED     the implementation is in this translation unit
     gnmr__rules           the rules of one step, read once from the config
     gnmr__rules_of        fills gnmr__rules from a controller
     gnmr__soa             the units' arrays, carved from the slots
     gnmr__carve           gnmr__soa over a controller's slots
     gnmr__usable          the controller's guard (initialised, not moved)
     gnmr__unit_step       rules 0-6, 8-10 / N1, N2, N4-N9 for one unit:
                           GNMR__EV_* bits
     GNMR__EV_             the bits gnmr__unit_step returns
     GNMR__EV_CANDIDATE    the unit is a candidate for admission
     gnmr__tally           one step's sums over the units
     GNMR__TALLY           its fields, X(name, type, bit), in array order
     GNMR__TALLY_N         its field count
     GNMR__TALLY_WIDE      how many of them are 64-bit (they come first)
     GNMR__TALLY_AT_       a field's index (GNMR__TALLY_AT_risky ...)
     gnmr__tally_layout    the static assertion of that array layout
     gnmr__admit_count     rule 7's free slots: how many to admit
     gnmr__step_totals     the step's counters and report from the tally
     gnmr__step_verdict    rule N3's step-level verdict
     gnmr__commit          the step's end: the guard's step count moves
     gnmr__finite32        a float is finite (no FP environment needed)
     gnmr__observed32      ... and not +-0: a norm rule 0 counts
     gnmr__mul             an exact product, never contracted into an FMA
     gnmr__fold8           eight lane sums folded in the canonical order
     gnmr__grid            a log deviation on the verdict's histogram grid
     gnmr__grid_centre     the deviation a bin of that grid stands for
     gnmr__log             the natural log every path shares
     gnmr__cuda_ieee_guard a kernel's first line: no --use_fast_math */

/* GNMR_DEF was fixed by the first #include in this file: an implementation
   that silently came out extern (or static) would be worse than an error. */
#if defined(GNMR_STATIC) != defined(GNMR__STATIC_INTERFACE)
#error "gnmr.h: define GNMR_STATIC before the first #include of gnmr.h"
#endif

#include <float.h>
#include <math.h>
#include <string.h>

/* SIMD paths compiled into this build (see "SIMD paths" and "dispatch"),
   with gcc and clang only: the x86 kernels need per-function target
   attributes. Under nvcc (__CUDACC__) only the scalar path is compiled: its
   host pass may reject target-attributed intrinsics, the scalar path gives
   the same bits, and no intrinsics are visible when __CUDA_ARCH__ is set. */
#if !defined(GNMR_NO_SIMD) && !defined(__CUDACC__) &&                          \
    (defined(__GNUC__) || defined(__clang__))
#if defined(__x86_64__) || defined(__i386__)
#define GNMR__X86 1
#define GNMR__SSE2 1
#ifndef GNMR_NO_AVX2
#define GNMR__AVX2 1
#endif
#ifndef GNMR_NO_AVX512
#define GNMR__AVX512 1
#endif
#define GNMR__TARGET_SSE2 __attribute__((target("sse2")))
#define GNMR__TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define GNMR__TARGET_AVX512                                                    \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__) && !defined(GNMR_NO_NEON)
#define GNMR__NEON 1
#include <arm_neon.h>
#endif
#endif

#ifndef GNMR_ASSERT
#include <assert.h>
#define GNMR_ASSERT(x) assert(x)
#endif

/* ---- fast-math ------------------------------------------------------------
   -ffast-math and -Ofast let the compiler assume that no value is NaN or
   Inf (-ffinite-math-only: isnan, isfinite and NaN-aware comparisons fold
   away, so a NaN norm would pass as calm) and reorder arithmetic
   (-fassociative-math, -freciprocal-math: the canonical sums and the
   scalar/AVX-512 agreement would lose their bits). Under them this file
   1. classifies floats by their bits (gnmr__finite32/64), never with
      isnan/isfinite or a comparison a NaN could reach;
   2. compiles its implementation with fast-math off (gcc: optimize
      pragma; clang: float_control(precise)), which keeps every order of
      operations written here. Intrinsics from <immintrin.h> keep the
      caller's flags under clang, so the AVX-512 step passes the sums it
      must not reorder through gnmr__keep8;
   3. refuses to build where it cannot do 2.
   The caller's FTZ/DAZ (which -ffast-math sets at program start) reads
   subnormal f32/bf16 values, norms included, as zero on every path alike. */
#if defined(__FAST_MATH__) ||                                                  \
    (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__) ||                 \
    defined(__ASSOCIATIVE_MATH__) || defined(__RECIPROCAL_MATH__)
#if defined(__CUDACC__)
#error "gnmr.h: host -ffast-math under nvcc is not supported"
#elif defined(__clang__)
#define GNMR__FP_PRECISE 1
#pragma float_control(precise, on, push)
#elif defined(__GNUC__)
/* gcc 12 drops the fast-math macros at pop_options: noted here, put back
   after the implementation, so the caller's code sees what it asked for. */
#define GNMR__FP_PRECISE 2
#ifdef __FAST_MATH__
#define GNMR__HAD_FAST_MATH
#endif
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#define GNMR__HAD_FINITE_MATH_ONLY
#endif
#ifdef __NO_MATH_ERRNO__
#define GNMR__HAD_NO_MATH_ERRNO
#endif
#ifdef __ASSOCIATIVE_MATH__
#define GNMR__HAD_ASSOCIATIVE_MATH
#endif
#ifdef __RECIPROCAL_MATH__
#define GNMR__HAD_RECIPROCAL_MATH
#endif
#ifdef __NO_SIGNED_ZEROS__
#define GNMR__HAD_NO_SIGNED_ZEROS
#endif
#ifdef __NO_TRAPPING_MATH__
#define GNMR__HAD_NO_TRAPPING_MATH
#endif
#pragma GCC push_options
#pragma GCC optimize("no-fast-math")
#else
#error "gnmr.h: -ffast-math needs gcc or clang (or build without it)"
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

static GNMR_HOSTDEV int gnmr__finite32(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  return (bits & 0x7FFFFFFFu) < 0x7F800000u;
}
/* Rule 0: finite and not +-0, a norm that is an observation. */
static GNMR_HOSTDEV int gnmr__observed32(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  return (bits & 0x7FFFFFFFu) - 1u < 0x7F7FFFFFu;
}
static GNMR_HOSTDEV int gnmr__finite64(double x) {
  uint64_t bits;
  memcpy(&bits, &x, 8);
  return (bits & UINT64_C(0x7FFFFFFFFFFFFFFF)) < UINT64_C(0x7FF0000000000000);
}

/* Rule N3: a block of 256 units' eight lane sums of g^2, folded in the
   one order every path (scalar, AVX-512, device) uses. */
static GNMR_HOSTDEV double gnmr__fold8(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* A layout promise checked at compile time: C11's and C++11's own form
   where there is one, else an array of negative size (C99, C++98, CUDA's
   older hosts), which is an error in every language alike. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define GNMR__STATIC_ASSERT(name, cond) static_assert(cond, #name)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) &&                    \
    __STDC_VERSION__ >= 201112L
#define GNMR__STATIC_ASSERT(name, cond) _Static_assert(cond, #name)
#else
#define GNMR__STATIC_ASSERT(name, cond)                                        \
  typedef char name[(cond) ? 1 : -1] /* NOLINT(bugprone-macro-parentheses) */
#endif

#define GNMR__MAGIC 0x524d4e47u /* "GNMR" */

/* The controller's AVX-512 path: x86-64 builds with the AVX-512 kernels,
   taken when the CPU has it (gnmr_ctl_isa_active; gnmr_ctl_isa_force turns
   it off), whatever path the norm helpers use. */
#if defined(GNMR__AVX512) && defined(__x86_64__)
#define GNMR__CTL_AVX512 1
#else
#define GNMR__CTL_AVX512 0
#endif

GNMR_DEF const char *gnmr_strerror(int code) {
  switch (code) {
  case GNMR_OK: return "ok";
  case GNMR_EINVAL: return "invalid argument (NULL pointer or out of range)";
  case GNMR_ESIZE:
    return "buffer too small, or checkpoint truncated or too long";
  case GNMR_ECORRUPT: return "checkpoint corrupted";
  case GNMR_EVERSION: return "checkpoint from another format version";
  case GNMR_EMISMATCH: return "checkpoint holds another number of units";
  case GNMR_ECONFIG: return "configuration field out of range";
  case GNMR_ENORM: return "negative gradient norm";
  case GNMR_ESTATE:
    return "controller or placer not initialised, edited by hand, or a stale "
           "copy";
  case GNMR_EISA: return "instruction set not available";
  default: return "unknown error";
  }
}

GNMR_DEF const char *gnmr_version(void) { return GNMR_VERSION_STRING; }

/* ---- configuration ----------------------------------------------------- */

static int gnmr__finite_above(double x, double floor_) {
  return gnmr__finite64(x) && x > floor_;
}

/* Every field of gnmr_config with its default and its valid range (c the
   config, n the unit count), listed once: gnmr_config_default() is the
   defaults, gnmr_config_paper() the same with rule 9 off; checked, sealed,
   saved and loaded in this order. Rule 9's settings were chosen in closed
   loop (bench/RESULTS.md, "Training events"). The ratio
   threshold is the demo sweep's best of 2, 3, 5 (bench/RESULTS.md, "MLP
   demo: the settings sweep and the defaults"); the NOISE fields
   (two_sided on) come from lab/detect (bench/RESULTS.md, "Detection");
   the manual's table lists the same (tests/test_rules.c holds them to it). */
#define GNMR__CONFIG(X)                                                        \
  X(ratio_threshold, 2.0, gnmr__finite_above(c->ratio_threshold, 1.0))         \
  X(delta_threshold, 1.5, gnmr__finite_above(c->delta_threshold, 0.0))         \
  X(history_decay, 0.99,                                                       \
    gnmr__finite_above(c->history_decay, 0.0) && c->history_decay <= 1.0)      \
  X(eps, 1e-12, gnmr__finite_above(c->eps, 0.0))                               \
  X(delta_window, 8,                                                           \
    c->delta_window >= 1 && c->delta_window <= GNMR_WINDOW_MAX)                \
  X(warmup_steps, 16, 1)                                                       \
  X(max_recovering, 1, c->max_recovering <= n)                                 \
  X(lock_steps, 8, c->lock_steps >= 1)                                         \
  X(cooldown_steps, 4, 1)                                                      \
  X(spike_policy, GNMR_SPIKE_CLIP,                                             \
    c->spike_policy >= GNMR_SPIKE_PASS && c->spike_policy <= GNMR_SPIKE_SKIP)  \
  X(rule, GNMR_RULE_PAPER,                                                     \
    c->rule == GNMR_RULE_PAPER || c->rule == GNMR_RULE_NOISE)                  \
  X(two_sided, 1, c->two_sided <= 1)                                           \
  X(z_rise, 4.25, gnmr__finite_above(c->z_rise, 0.0))                          \
  X(z_fall, 6.0, gnmr__finite_above(c->z_fall, 0.0))                           \
  X(min_rise, 2.0, gnmr__finite_above(c->min_rise, 1.0))                       \
  X(max_fall, 0.5, gnmr__finite_above(c->max_fall, 0.0) && c->max_fall < 1.0)  \
  X(ar, 0.5, gnmr__finite64(c->ar) && c->ar >= 0.0 && c->ar < 1.0)             \
  X(hold, 3.5, gnmr__finite_above(c->hold, 0.0))                               \
  X(fluct_decay, 0.995,                                                        \
    gnmr__finite_above(c->fluct_decay, 0.0) && c->fluct_decay <= 1.0)          \
  X(winsor, 3.0, gnmr__finite64(c->winsor) && c->winsor >= 1.0)                \
  X(fluct_floor, 0.01,                                                         \
    gnmr__finite64(c->fluct_floor) && c->fluct_floor >= 0.0)                   \
  X(global_ratio, 2.0, gnmr__finite_above(c->global_ratio, 1.0))               \
  X(global_frac, 0.25,                                                         \
    gnmr__finite_above(c->global_frac, 0.0) && c->global_frac <= 1.0)          \
  X(common_min_units, 8, c->common_min_units >= 1)                             \
  X(global_policy, GNMR_GLOBAL_NONE,                                           \
    c->global_policy >= GNMR_GLOBAL_NONE &&                                    \
        c->global_policy <= GNMR_GLOBAL_SKIP)                                  \
  X(shift_steps, 16,                                                           \
    c->shift_steps == 0 ||                                                     \
        (c->shift_steps >= 2 && c->shift_steps <= GNMR_SHIFT_STEPS_MAX))       \
  X(shift_spread, 1.0,                                                         \
    gnmr__finite64(c->shift_spread) && c->shift_spread >= 0.0)                 \
  X(band_steps, 2,                                                             \
    c->band_steps >= 1 && c->band_steps <= GNMR_SHIFT_STEPS_MAX)               \
  X(band_k, 0.0, gnmr__finite64(c->band_k) && c->band_k >= 0.0)

GNMR_DEF gnmr_config gnmr_config_default(void) {
  gnmr_config c;
#define GNMR__DEFAULT(name, value, valid) c.name = value;
  GNMR__CONFIG(GNMR__DEFAULT)
#undef GNMR__DEFAULT
  return c;
}

GNMR_DEF gnmr_config gnmr_config_paper(void) {
  gnmr_config c = gnmr_config_default();
  c.shift_steps = 0; /* the paper's rules: no level is ever learned */
  return c;
}

GNMR_DEF gnmr_config gnmr_config_noise(void) {
  gnmr_config c = gnmr_config_default();
  c.rule = GNMR_RULE_NOISE;
  c.warmup_steps = 50; /* norms fall fast in the first steps (lab/detect) */
  return c;
}

GNMR_DEF gnmr_config gnmr_config_calm(void) {
  gnmr_config c = gnmr_config_default();
  /* read off the tune half's heavy-tailed settings (K 3 and 4 tried);
     bench/RESULTS.md, "Calm admission rules, gradient norms alone" */
  c.band_k = 4.0;
  return c;
}

GNMR_DEF gnmr_config gnmr_config_forward(void) {
  gnmr_config c = gnmr_config_default();
  /* the tune half's choice: calm runs there under 1% of unit-steps, the
     faults left to the forward signals (bench/RESULTS.md, "Settings
     suite") */
  c.ratio_threshold = 8.0;
  c.delta_threshold = 6.0;
  return c;
}

GNMR_DEF int gnmr_config_check(const gnmr_config *c, uint32_t n,
                               const char **field) {
  const char *bad = NULL;
  if (!c) return GNMR_EINVAL;
#define GNMR__CHECK(name, value, valid)                                        \
  if (!bad && !(valid)) bad = #name;
  GNMR__CONFIG(GNMR__CHECK)
#undef GNMR__CHECK
  /* max_recovering is within range of any count but 0: a count of 0 where
     units are asked for is the count's mistake, named as such. */
  if (bad && n == 0 && strcmp(bad, "max_recovering") == 0) bad = "n_units";
  if (field) *field = bad;
  return bad ? GNMR_ECONFIG : GNMR_OK;
}

/* w = max(1/k, 1 - beta) without a division per step: 1/k falls with k, so
   from the first k where fl(1/k) <= 1 - beta on, w is 1 - beta. */
static uint64_t gnmr__full_weight_from(double beta) {
  double floor_w = 1.0 - beta;
  double approx;
  uint64_t k;
  if (!(floor_w > 0.0)) return UINT64_MAX;
  approx = 1.0 / floor_w;
  if (!(approx < 9.0e18)) return UINT64_MAX;
  k = (uint64_t)approx;
  if (k < 1) k = 1;
  while (k > 1 && 1.0 / (double)(k - 1) <= floor_w) k--;
  while (1.0 / (double)k > floor_w) k++;
  return k;
}

/* ---- the controller's own checks, and gnmr_init ----------------------------
   gen advances with every change of state and is also kept, with n_units,
   in the header of the slots: a struct copy whose twin has moved on finds
   another value there. seal hashes what a step trusts without re-checking
   it, so a controller edited by hand does not match it. Both cost O(1). */

static GNMR_HOSTDEV uint32_t *gnmr__header(const gnmr_ctl *ctl) {
  return (uint32_t *)(void *)ctl->units; /* gen, n_units */
}

/* One term of the seal: the bits of a field times its own odd constant.
   Any change of one field changes the sum; the products are independent,
   so the seal costs a few nanoseconds. */
static GNMR_HOSTDEV void gnmr__mix(uint64_t *h, uint64_t *k, const void *v,
                                   size_t n) {
  uint64_t x = 0;
  memcpy(&x, v, n);
  *h += x * *k;
  *k += UINT64_C(0x9E3779B97F4A7C16); /* even: k stays odd */
}

static GNMR_HOSTDEV uint64_t gnmr__seal(const gnmr_ctl *ctl) {
  const gnmr_config *c = &ctl->cfg;
  uint64_t h = GNMR__MAGIC, k = UINT64_C(0xD6E8FEB86659FD93);
#define GNMR__MIX(name, value, valid)                                          \
  gnmr__mix(&h, &k, &c->name, sizeof c->name);
  GNMR__CONFIG(GNMR__MIX)
#undef GNMR__MIX
  gnmr__mix(&h, &k, &ctl->n_units, 4);
  gnmr__mix(&h, &k, &ctl->recovering, 4);
  gnmr__mix(&h, &k, &ctl->peak_recovering, 4);
  gnmr__mix(&h, &k, &ctl->full_weight_from, 8);
  gnmr__mix(&h, &k, &ctl->fluct_full_from, 8);
  gnmr__mix(&h, &k, &ctl->gen, 8);
  return h;
}

/* Initialised, and not a copy left behind (what gnmr_recovering needs). */
static GNMR_HOSTDEV int gnmr__current(const gnmr_ctl *ctl) {
  return ctl->magic == GNMR__MAGIC &&
         (ctl->n_units == 0 ||
          (ctl->units && gnmr__header(ctl)[0] == (uint32_t)ctl->gen &&
           gnmr__header(ctl)[1] == ctl->n_units));
}

/* ... and not edited by hand: every other entry point. */
static GNMR_HOSTDEV int gnmr__usable(const gnmr_ctl *ctl) {
  return gnmr__current(ctl) && ctl->seal == gnmr__seal(ctl);
}

/* After every change of state. */
static GNMR_HOSTDEV void gnmr__commit(gnmr_ctl *ctl) {
  ctl->gen++;
  if (ctl->n_units > 0) {
    gnmr__header(ctl)[0] = (uint32_t)ctl->gen;
    gnmr__header(ctl)[1] = ctl->n_units;
  }
  ctl->seal = gnmr__seal(ctl);
}

GNMR_DEF int gnmr_init(gnmr_ctl *ctl, const gnmr_config *cfg, gnmr_slot *units,
                       uint32_t n_units) {
  gnmr_config c;
  int rc;
  if (!ctl || !cfg || (n_units > 0 && !units)) return GNMR_EINVAL;
  rc = gnmr_config_check(cfg, n_units, NULL);
  if (rc != GNMR_OK) return rc;
  c = *cfg; /* cfg may be ctl->cfg */
  memset(ctl, 0, sizeof *ctl);
  if (n_units > 0) memset(units, 0, sizeof *units * n_units);
  ctl->cfg = c;
  ctl->units = units;
  ctl->n_units = n_units;
  ctl->full_weight_from = gnmr__full_weight_from(c.history_decay);
  ctl->fluct_full_from = gnmr__full_weight_from(c.fluct_decay);
  ctl->report.global_scale = 1.0;
  ctl->magic = GNMR__MAGIC;
  gnmr__commit(ctl);
  return GNMR_OK;
}

/* ---- unit state, structure of arrays --------------------------------------
   The caller's gnmr_slot array is opaque storage: the controller lays it out
   as a header (gnmr__header), then one array per field of GNMR__UNIT_STATE
   and GNMR__UNIT_SCRATCH (N means, then N window sums, ...), so a step
   reads and writes each field contiguously and eight units fit one AVX-512
   register. The 8-byte fields come first, then the 4-byte ones, so every
   array starts aligned. Element i of a field of unit u is at [i * N + u]:
   the ring of stored ratios keeps slot s of unit u at window[s * N + u];
   observation k (0-based) of a unit goes to slot k mod 16, so the last
   W <= 16 ratios are always there and no head index is kept. */

#define GNMR__RING (GNMR_WINDOW_MAX - 1)
#define GNMR__K_MAX (UINT64_C(1) << 62) /* largest k a checkpoint may hold */

/* Layout promises the code relies on, checked at compile time: fields of 8
   or 4 bytes (so the arrays stay aligned), and a decision is 4 doubles then
   flags, action. */
#define GNMR__SIZE_OK(name, type, shape)                                       \
  &&(sizeof(type) == 8 || sizeof(type) == 4)
GNMR__STATIC_ASSERT(gnmr__fields_align, 1 GNMR__UNIT_STATE(GNMR__SIZE_OK)
                                            GNMR__UNIT_SCRATCH(GNMR__SIZE_OK));
GNMR__STATIC_ASSERT(gnmr__decision_layout,
                    sizeof(gnmr_decision) == 40 &&
                        offsetof(gnmr_decision, flags) == 32);

#define GNMR__POINTER(name, type, shape) type *name;
typedef struct gnmr__soa {
  GNMR__UNIT_STATE(GNMR__POINTER) GNMR__UNIT_SCRATCH(GNMR__POINTER)
} gnmr__soa;

/* The arrays of 8-byte fields first, then the others, each in list order:
   at[1] is where the next 8-byte array goes, at[0] the next other one. */
#define GNMR__BYTES8(name, type, shape) /* a term of a sum */                  \
  +(sizeof(type) == 8 ? sizeof(type) * GNMR__COUNT_##shape : 0) /* NOLINT */
static GNMR_HOSTDEV gnmr__soa gnmr__carve(gnmr_slot *units, uint32_t n) {
  gnmr__soa s;
  unsigned char *base = (unsigned char *)(void *)units + 8; /* the header */
  size_t at[2];
  at[0] = (0 GNMR__UNIT_STATE(GNMR__BYTES8) GNMR__UNIT_SCRATCH(GNMR__BYTES8)) *
          (size_t)n;
  at[1] = 0;
#define GNMR__PLACE(name, type, shape)                                         \
  s.name = (type *)(void *)(base + at[sizeof(type) == 8]);                     \
  at[sizeof(type) == 8] += sizeof(type) * GNMR__COUNT_##shape * (size_t)n;
  GNMR__UNIT_STATE(GNMR__PLACE)
  /* cppcheck-suppress unreadVariable */
  GNMR__UNIT_SCRATCH(GNMR__PLACE)
#undef GNMR__PLACE
  return s;
}

/* One unit's state gathered from the arrays (checkpoint, tests). */
#define GNMR__DECL_ONE(type, name) type name;
#define GNMR__DECL_RING(type, name) type name[GNMR_WINDOW_MAX];
#define GNMR__DECL_PAIR(type, name) type name[2];
#define GNMR__MEMBER(name, type, shape) GNMR__DECL_##shape(type, name)
typedef struct gnmr__unit_state {
  GNMR__UNIT_STATE(GNMR__MEMBER)
} gnmr__unit_state;

/* Element i of a field x of a gnmr__unit_state, for each i. */
#define GNMR__AT_ONE(x, i) (x)
#define GNMR__AT_RING(x, i) (x)[i]
#define GNMR__AT_PAIR(x, i) (x)[i]
/* Where element i of unit u of a field is in its array of n units. */
#define GNMR__IDX_ONE(i, n, u) (u)
#define GNMR__IDX_RING(i, n, u) ((size_t)(i) * (n) + (u))
#define GNMR__IDX_PAIR(i, n, u) (2 * (size_t)(u) + (i))
#define GNMR__EACH(shape) for (i = 0; i < GNMR__COUNT_##shape; i++)

static void gnmr__unit_get(const gnmr__soa *s, uint32_t n, uint32_t u,
                           gnmr__unit_state *out) {
  uint32_t i;
#define GNMR__GET(name, type, shape)                                           \
  GNMR__EACH(shape)                                                            \
  GNMR__AT_##shape(out->name, i) = s->name[GNMR__IDX_##shape(i, n, u)];
  GNMR__UNIT_STATE(GNMR__GET)
#undef GNMR__GET
}

static void gnmr__unit_set(const gnmr__soa *s, uint32_t n, uint32_t u,
                           gnmr__unit_state *in) {
  uint32_t i;
#define GNMR__SET(name, type, shape)                                           \
  GNMR__EACH(shape)                                                            \
  s->name[GNMR__IDX_##shape(i, n, u)] = GNMR__AT_##shape(in->name, i);
#define GNMR__CLEAR(name, type, shape)                                         \
  GNMR__EACH(shape) s->name[GNMR__IDX_##shape(i, n, u)] = 0;
  GNMR__UNIT_STATE(GNMR__SET)
  GNMR__UNIT_SCRATCH(GNMR__CLEAR)
#undef GNMR__SET
#undef GNMR__CLEAR
}

/* What the window keeps of a ratio already capped at tau_r: a float, held
   at FLT_MAX where a tau_r beyond the float range would make it +inf. (A
   float can also round up past tau_r itself: the loader allows for both.) */
static GNMR_HOSTDEV float gnmr__window_value(double capped) {
  return capped < (double)FLT_MAX ? (float)capped : FLT_MAX;
}

/* Sum of the last `window` ratios before observation k, oldest first. The
   step keeps a running sum and replaces it with this once per lap of the
   ring, so rounding never builds up. */
static GNMR_HOSTDEV double gnmr__window_sum(const gnmr__soa *s, uint32_t n,
                                            uint32_t u, uint64_t k,
                                            uint32_t window) {
  double sum = 0.0;
  uint32_t i;
  for (i = window; i > 0; i--)
    sum += (double)s->window[(size_t)((k - i) & GNMR__RING) * n + u];
  return sum;
}

/* ---- gnmr_reconfigure: new settings for a running controller ------------- */

GNMR_DEF int gnmr_reconfigure(gnmr_ctl *ctl, const gnmr_config *cfg) {
  gnmr_config c;
  gnmr__soa s;
  uint32_t n, u, i;
  float cap;
  int rc;
  if (!ctl || !cfg) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  rc = gnmr_config_check(cfg, ctl->n_units, NULL);
  if (rc != GNMR_OK) return rc;
  c = *cfg;
  n = ctl->n_units;
  s = gnmr__carve(ctl->units, n);
  cap = gnmr__window_value(c.ratio_threshold);
  for (u = 0; u < n; u++) {
    const uint64_t k = s.finite_steps[u];
    int resum = c.delta_window != ctl->cfg.delta_window;
    if (s.lock[u] > c.lock_steps) s.lock[u] = c.lock_steps;
    if (s.cooldown[u] > c.cooldown_steps) s.cooldown[u] = c.cooldown_steps;
    for (i = 0; i < GNMR_WINDOW_MAX; i++) {
      float *r = &s.window[(size_t)i * n + u];
      if (*r > cap) {
        *r = cap;
        resum = 1;
      }
    }
    if (resum)
      s.window_sum[u] = gnmr__window_sum(
          &s, n, u, k, k < c.delta_window ? (uint32_t)k : c.delta_window);
    if (s.band_run[u] > c.band_steps) s.band_run[u] = c.band_steps;
  }
  if ((c.band_k > 0.0) != (ctl->cfg.band_k > 0.0) && n > 0) {
    /* rule 10 turned on or off: a band starts afresh, or is not kept */
    memset(s.band_centre, 0, sizeof *s.band_centre * n);
    memset(s.band_dev, 0, sizeof *s.band_dev * n);
    memset(s.band_seen, 0, sizeof *s.band_seen * n);
    memset(s.band_run, 0, sizeof *s.band_run * n);
  }
  if (c.rule != ctl->cfg.rule && n > 0) {
    /* the statistics of both modes, and k, which they share */
    memset(s.mean, 0, sizeof *s.mean * n);
    memset(s.window_sum, 0, sizeof *s.window_sum * n);
    memset(s.window, 0, sizeof *s.window * n * GNMR_WINDOW_MAX);
    memset(s.finite_steps, 0, sizeof *s.finite_steps * n);
    memset(s.log_mean, 0, sizeof *s.log_mean * n);
    memset(s.fluct, 0, sizeof *s.fluct * n);
    memset(s.last_dev, 0, sizeof *s.last_dev * n);
    /* rule 9's runs, which count in k */
    memset(s.shift_run, 0, sizeof *s.shift_run * 2 * n);
  }
  if (c.rule != ctl->cfg.rule) {
#define GNMR__ZERO(name, type, shape) ctl->name = 0;
    GNMR__GLOBAL(GNMR__ZERO)
#undef GNMR__ZERO
  }
  ctl->cfg = c;
  ctl->full_weight_from = gnmr__full_weight_from(c.history_decay);
  ctl->fluct_full_from = gnmr__full_weight_from(c.fluct_decay);
  gnmr__commit(ctl);
  return GNMR_OK;
}

/* ---- the step's machinery, shared by both rule sets ------------------------
   What every rule and path of a step uses: products rounded on their own,
   the rules' constants, what a unit's step reports and the step's tally,
   the step's working state; then the AVX-512 copies' primitives. Plain IEEE
   operations in a fixed order (every product that meets an add through
   gnmr__mul), so the host, every SIMD path and a device give the same
   bits; no libm function runs per unit. */

/* a * b rounded on its own, never fused with the add or subtract that
   follows: compilers contract a * b + c into an FMA under
   -ffp-contract=fast (GCC's default in GNU C modes) or --fmad=true (nvcc),
   and one rounding instead of two would make the scalar path, the AVX-512
   path and a CUDA device disagree. */
static GNMR_HOSTDEV double gnmr__mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  double p = a * b;
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  __asm__("" : "+x"(p));
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
  __asm__("" : "+w"(p));
#endif
  return p;
#endif
}

/* The constants of one step's rules, read once from the controller. */
typedef struct gnmr__rules {
  double tau_r, tau_d, eps, inv_tau_r, inv_tau_d, inv_window, floor_w;
  uint64_t warmup, full_weight_from;
  uint64_t settle; /* N3: max(warmup, 1) observations make a unit settled */
  uint32_t n, window, lock_steps, cooldown_steps;
  uint32_t shift_steps; /* rule 9: P, 0 = off */
  double shift_spread;
  double band_k;       /* rule 10: K, 0 = off */
  uint32_t band_steps; /* ... and its run */
  int band;            /* band_k > 0 */
  int policy;
  int renew; /* 0 while more units recover than max_recovering allows */
  /* NOISE mode (rules N1-N9); the last three set by the step's phase 2 */
  int noise, two_sided;
  double z_rise, z_fall, ar, hold, winsor, fluct_floor, fluct_w, log_floor;
  double l_min_rise, l_max_fall, l_global;
  uint64_t fluct_full_from;
  double common, global_scale;
  int global;
} gnmr__rules;

/* The per-unit rules inlined into the step's loops on the host (a call
   per unit, and the config re-read after it, cost about a third of the
   scalar NOISE step); a device build keeps nvcc's own choice. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define GNMR__HOT __inline__ __attribute__((always_inline))
/* ... and the rare work of flagged steps kept out of them (its registers
   would be the loops' to save) */
#define GNMR__COLD __attribute__((noinline, cold))
#else
#define GNMR__HOT
#define GNMR__COLD
#endif
/* A test whose rare side is kept off the straight path (rule 0's zeros and
   rule 1's NaNs ahead of the rules: 3-6% of the scalar step). */
#if defined(__GNUC__) || defined(__clang__)
#define GNMR__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GNMR__UNLIKELY(x) (x)
#endif

/* What one unit's step adds to the controller's totals: bits returned by
   gnmr__unit_step, summed by the caller. */
enum {
  GNMR__EV_RISKY = 1u << 0,     /* rules 1, 4 */
  GNMR__EV_NONFINITE = 1u << 1, /* rule 1 */
  GNMR__EV_HELD = 1u << 2,      /* rule 6: a step on the high-fidelity path */
  GNMR__EV_RENEWED = 1u << 3,   /* rule 6 */
  GNMR__EV_LOCKED = 1u << 4,    /* rule 6: still locked after this step */
  GNMR__EV_CANDIDATE = 1u << 5, /* rule 7: waits for a slot */
  GNMR__EV_RISE = 1u << 6,      /* rule N4 */
  GNMR__EV_FALL = 1u << 7,      /* rule N4 */
  GNMR__EV_ABSENT = 1u << 8,    /* rule 0 */
  GNMR__EV_SHIFT = 1u << 9      /* rule 9 */
};

/* What phase 3 adds up over one step's units, on the CPU or a device:
   X(field, type, bit), each the number of units whose gnmr__unit_step
   returned that GNMR__EV_* bit, the 64-bit ones first. The device sums
   them as one array in this order (gnmr__tally_layout holds it to that);
   candidates, counted apart, also index the heap scratch. */
#define GNMR__TALLY(X)                                                         \
  X(risky, uint64_t, GNMR__EV_RISKY)                                           \
  X(nonfinite, uint64_t, GNMR__EV_NONFINITE)                                   \
  X(held, uint64_t, GNMR__EV_HELD)                                             \
  X(renewed, uint64_t, GNMR__EV_RENEWED)                                       \
  X(locked, uint32_t, GNMR__EV_LOCKED)                                         \
  X(rises, uint32_t, GNMR__EV_RISE)                                            \
  X(falls, uint32_t, GNMR__EV_FALL)                                            \
  X(absent, uint32_t, GNMR__EV_ABSENT)                                         \
  X(shifts, uint32_t, GNMR__EV_SHIFT)
#define GNMR__TALLY_FIELD(name, type, bit) type name;
typedef struct gnmr__tally {
  GNMR__TALLY(GNMR__TALLY_FIELD)
  uint32_t candidates;
} gnmr__tally;
#undef GNMR__TALLY_FIELD

/* Field i of the tally, and how many there are (GNMR__TALLY_N) and of 64
   bits (GNMR__TALLY_WIDE): field i lies at 8 i while i < WIDE, at 8 WIDE +
   4 (i - WIDE) after, with no padding, as the device's array reads it. */
#define GNMR__TALLY_INDEX(name, type, bit) GNMR__TALLY_AT_##name,
#define GNMR__TALLY_IS_WIDE(name, type, bit)                                   \
  +(sizeof(type) == 8) /* NOLINT(bugprone-macro-parentheses) */
enum {
  GNMR__TALLY(GNMR__TALLY_INDEX) GNMR__TALLY_N,
  GNMR__TALLY_WIDE = 0 GNMR__TALLY(GNMR__TALLY_IS_WIDE)
};
#undef GNMR__TALLY_IS_WIDE
#undef GNMR__TALLY_INDEX
#define GNMR__TALLY_PLACED(name, type, bit)                                    \
  &&offsetof(gnmr__tally, name) ==                                             \
      (GNMR__TALLY_AT_##name < GNMR__TALLY_WIDE                                \
           ? 8 * (size_t)GNMR__TALLY_AT_##name                                 \
           : 8 * (size_t)GNMR__TALLY_WIDE +                                    \
                 4 * (size_t)(GNMR__TALLY_AT_##name - GNMR__TALLY_WIDE))
GNMR__STATIC_ASSERT(gnmr__tally_layout, 1 GNMR__TALLY(GNMR__TALLY_PLACED));
#undef GNMR__TALLY_PLACED

/* Unit u's bits ev added to the tally; a candidate is listed in heap. The
   host's loops and the device's emulation in the tests count with it. */
static GNMR__HOT GNMR_HOSTDEV void
gnmr__tally_add(gnmr__tally *t, uint32_t *heap, unsigned ev, uint32_t u) {
  if (ev == 0) return;
#define GNMR__TALLY_COUNT(name, type, bit) t->name += (ev & (bit)) != 0;
  GNMR__TALLY(GNMR__TALLY_COUNT)
#undef GNMR__TALLY_COUNT
  if (ev & GNMR__EV_CANDIDATE) heap[t->candidates++] = u;
}

/* One step on the CPU: the rules, the arrays, and the totals so far. */
typedef struct gnmr__step_ctx {
  gnmr__rules r;
  gnmr__soa s;
  const float *norms;
  gnmr_decision *out;
  gnmr__tally t;
  gnmr_step_report report; /* NOISE mode: rule N3's verdict */
} gnmr__step_ctx;

#if GNMR__CTL_AVX512
/* v exactly as computed: clang gives intrinsics the caller's fast-math
   flags, which let it turn wsum + (stored - evicted) into (wsum + stored) -
   evicted (it does in a small case), away from the scalar path's bits. */
GNMR__TARGET_AVX512
static __m512d gnmr__keep8(__m512d v) {
  __asm__("" : "+v"(v));
  return v;
}

/* gnmr__mul, eight lanes wide. */
GNMR__TARGET_AVX512
static __m512d gnmr__mul8(__m512d a, __m512d b) {
  __m512d p = _mm512_mul_pd(a, b);
  __asm__("" : "+v"(p));
  return p;
}

/* An add, subtract or divide exactly as written: under clang's fast-math
   flags (which intrinsics keep) an unguarded a * (1 + b) became a + a * b,
   one FMA, in this file's first NOISE-mode build with -Ofast. */
GNMR__TARGET_AVX512
static __m512d gnmr__add8(__m512d a, __m512d b) {
  return gnmr__keep8(_mm512_add_pd(a, b));
}
GNMR__TARGET_AVX512
static __m512d gnmr__sub8(__m512d a, __m512d b) {
  return gnmr__keep8(_mm512_sub_pd(a, b));
}
GNMR__TARGET_AVX512
static __m512d gnmr__div8(__m512d a, __m512d b) {
  return gnmr__keep8(_mm512_div_pd(a, b));
}

/* gnmr__observed32 of eight norms' bits, as a mask. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static __mmask8
gnmr__observed8(__m256i bits) {
  const __m256i mag = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  /* finite and not 0 with the constants the finite test had: no register
     more for the unit loops to keep */
  return _mm256_cmplt_epu32_mask(mag, _mm256_set1_epi32(0x7F800000)) &
         _mm256_test_epi32_mask(mag, mag);
}

/* Eight decisions are 40 doubles of memory, written as five vectors:
   lane l of vector j holds field F = (8j + l) % 5 of unit U = (8j + l) / 5
   (F: 0 ratio, 1 delta, 2 score, 3 scale, 4 flags and action as one
   word). Each vector is three permutes: the first takes ratio (index U)
   and delta (8 + U) into the F 0/1 lanes and leaves its own index bits in
   the rest: 1.0 for the scale, 0 (flags 0, KEEP) elsewhere; the second
   takes the score (8 + U) into the F 2 lanes; under warm-up a third puts
   WARMUP into the F 4 lanes (index U, from the low bits). Plain stores of
   the same 40 doubles made the calm step 10-30% slower at N = 4096
   (bench/RESULTS.md). */
#define GNMR__P(j, l) (8 * (j) + (l))
#define GNMR__F(j, l) (GNMR__P(j, l) % 5)
#define GNMR__U(j, l) (GNMR__P(j, l) / 5)
#define GNMR__FROM_A(j, l)                                                     \
  (GNMR__F(j, l) == 0   ? GNMR__U(j, l)                                        \
   : GNMR__F(j, l) == 1 ? 8 + GNMR__U(j, l)                                    \
   : GNMR__F(j, l) == 3 ? 0x3FF0000000000000 /* 1.0 */                         \
                        : 0)
#define GNMR__FROM_B(j, l)                                                     \
  (GNMR__F(j, l) == 2   ? 8 + GNMR__U(j, l)                                    \
   : GNMR__F(j, l) == 4 ? GNMR__U(j, l)                                        \
                        : 0)
#define GNMR__ROW(T, j)                                                        \
  { T(j, 0), T(j, 1), T(j, 2), T(j, 3), T(j, 4), T(j, 5), T(j, 6), T(j, 7) }
/* the lanes of vector j that hold field f, as a mask */
#define GNMR__LANE(j, l, f) ((GNMR__F(j, l) == (f)) << (l))
#define GNMR__LANES(j, f)                                                      \
  (GNMR__LANE(j, 0, f) | GNMR__LANE(j, 1, f) | GNMR__LANE(j, 2, f) |           \
   GNMR__LANE(j, 3, f) | GNMR__LANE(j, 4, f) | GNMR__LANE(j, 5, f) |           \
   GNMR__LANE(j, 6, f) | GNMR__LANE(j, 7, f))
static const long long gnmr__from_a[5][8] = {
    GNMR__ROW(GNMR__FROM_A, 0), GNMR__ROW(GNMR__FROM_A, 1),
    GNMR__ROW(GNMR__FROM_A, 2), GNMR__ROW(GNMR__FROM_A, 3),
    GNMR__ROW(GNMR__FROM_A, 4)};
static const long long gnmr__from_b[5][8] = {
    GNMR__ROW(GNMR__FROM_B, 0), GNMR__ROW(GNMR__FROM_B, 1),
    GNMR__ROW(GNMR__FROM_B, 2), GNMR__ROW(GNMR__FROM_B, 3),
    GNMR__ROW(GNMR__FROM_B, 4)};

/* The ten tables as vectors, made opaque: a unit loop keeps them in
   registers through its pass instead of reloading them for every eight
   units (gcc left it to its register allocator, which reloaded them once
   the scalar rules grew: 7-13% of a calm step, bench/RESULTS.md). */
#define GNMR__LANE_TABLE(i)                                                    \
  lanes[i] = _mm512_loadu_si512(                                               \
      (const void *)((i) < 5 ? gnmr__from_a[i] : gnmr__from_b[(i) % 5]));      \
  __asm__("" : "+v"(lanes[i]))
#define GNMR__LANE_TABLES(lanes)                                               \
  do {                                                                         \
    GNMR__LANE_TABLE(0);                                                       \
    GNMR__LANE_TABLE(1);                                                       \
    GNMR__LANE_TABLE(2);                                                       \
    GNMR__LANE_TABLE(3);                                                       \
    GNMR__LANE_TABLE(4);                                                       \
    GNMR__LANE_TABLE(5);                                                       \
    GNMR__LANE_TABLE(6);                                                       \
    GNMR__LANE_TABLE(7);                                                       \
    GNMR__LANE_TABLE(8);                                                       \
    GNMR__LANE_TABLE(9);                                                       \
  } while (0)
#undef GNMR__ROW
#undef GNMR__FROM_B
#undef GNMR__FROM_A
#endif

/* ---- PAPER rules (1-5, 8): the scalar reference, its AVX-512 copy ------ */

/* Unit u's PAPER history restarted at a level (rule 9, and rule 5 in
   warm-up): m = level and every stored ratio 1, as at that level; k is the
   unit's count after this step. */
static GNMR__HOT GNMR_HOSTDEV void gnmr__paper_level(const gnmr__rules *c,
                                                     const gnmr__soa *s,
                                                     uint32_t u, double level,
                                                     uint64_t k) {
  const uint32_t filled = k < GNMR_WINDOW_MAX ? (uint32_t)k : GNMR_WINDOW_MAX;
  uint32_t i;
  s->mean[u] = level;
  for (i = 0; i < filled; i++) s->window[(size_t)i * c->n + u] = 1.0f;
  s->window_sum[u] = (double)(k < c->window ? (uint32_t)k : c->window);
}

/* Rules 2-5 and 8 for unit u, finite g: ratio, delta, score and the own
   scale, the mean and the window. Returns GNMR_FLAG_RATIO and
   GNMR_FLAG_DELTA (risky), GNMR_FLAG_WARMUP or 0. */
static GNMR__HOT GNMR_HOSTDEV uint32_t gnmr__paper_unit(
    const gnmr__rules *c, const gnmr__soa *s, uint32_t u, double g,
    double *ratio_, double *delta_, double *score_, double *scale_) {
  const double m = s->mean[u];
  const uint64_t k = s->finite_steps[u];
  double ratio, delta, score, scale = 1.0, x = g, w, evicted = 0.0;
  float stored;
  uint32_t flags;
  int risky;
  /* rules 2, 3 */
  if (k >= c->window) {
    ratio = g / (m > c->eps ? m : c->eps);
    delta = ratio - gnmr__mul(s->window_sum[u], c->inv_window);
    evicted =
        (double)s->window[(size_t)((k - c->window) & GNMR__RING) * c->n + u];
  } else if (k > 0) {
    ratio = g / (m > c->eps ? m : c->eps);
    delta = ratio - s->window_sum[u] / (double)(uint32_t)k;
  } else {
    ratio = 1.0;
    delta = 0.0;
  }
  /* rule 4 */
  if (k < c->warmup)
    flags = GNMR_FLAG_WARMUP;
  else
    flags = (ratio > c->tau_r ? (uint32_t)GNMR_FLAG_RATIO : 0u) |
            (delta > c->tau_d ? (uint32_t)GNMR_FLAG_DELTA : 0u);
  risky = (flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) != 0;
  score = ratio * c->inv_tau_r;
  if (delta * c->inv_tau_d > score) score = delta * c->inv_tau_d;
  /* rule 5 in warm-up: a history more than tau_r^2 above this norm (a
     fault on the first observations) restarts from it */
  if (GNMR__UNLIKELY(k > 0 && k < c->warmup &&
                     gnmr__mul(c->tau_r, gnmr__mul(c->tau_r, g)) < m)) {
    s->finite_steps[u] = k + 1;
    gnmr__paper_level(c, s, u, g, k + 1);
    *ratio_ = ratio;
    *delta_ = delta;
    *score_ = score;
    *scale_ = 1.0;
    return flags;
  }
  /* rules 5, 8: a spike cannot inflate its own history, warm-up included
     (from the second observation: the first has no history to read it by);
     only a risky one is scaled */
  if ((risky || (k > 0 && k < c->warmup)) && g > c->tau_r * m) {
    x = c->tau_r * m;
    if (risky && c->policy == GNMR_SPIKE_CLIP) scale = x / g;
  }
  if (risky && c->policy == GNMR_SPIKE_SKIP) scale = 0.0;
  w = k + 1 < c->full_weight_from ? 1.0 / (double)(k + 1) : c->floor_w;
  s->finite_steps[u] = k + 1;
  s->mean[u] = m + gnmr__mul(w, x - m);
  stored = gnmr__window_value(ratio < c->tau_r ? ratio : c->tau_r);
  s->window[(size_t)(k & GNMR__RING) * c->n + u] = stored;
  s->window_sum[u] += (double)stored - evicted;
  if (((k + 1) & GNMR__RING) == 0)
    s->window_sum[u] = gnmr__window_sum(s, c->n, u, k + 1, c->window);
  *ratio_ = ratio;
  *delta_ = delta;
  *score_ = score;
  *scale_ = scale;
  return flags;
}

#if GNMR__CTL_AVX512
/* Most units on most steps are calm: finite, past the first W observations
   and past warm-up (where rule 5 may clip or restart the history), not
   locked, not cooling down, not risky. For such units rules 2-6 and 8 reduce to
   straight arithmetic, done here eight lanes wide with the same IEEE operations
   in the same order as gnmr__paper_unit, so the bits are the same (with
   -ffp-contract=off, as everywhere). Other lanes are left untouched and
   returned as a mask for gnmr__unit_step. No gathers: they are slow where the
   Downfall microcode mitigation is in place. The maskz_ forms of the
   conversions avoid g++'s uninitialised-variable warnings inside its own
   headers. */
/* Rule 5's window for the calm lanes of gnmr__paper8_avx512 (k their
   counts before this step): the ratio stored, the one W back evicted from
   the running sum, and once per lap the sum replaced by gnmr__window_sum.
   One ring row for all eight while their counts agree (they differ only
   after a non-finite step), else lane by lane. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static void
gnmr__paper8_window(gnmr__step_ctx *c, uint32_t u, __mmask8 calm, __m512i k,
                    __m512i k1, __m512d ratio, __m512d wsum) {
  const gnmr__soa *s = &c->s;
  const size_t n = c->r.n;
  __m256 stored, evicted;
  __mmask8 resync;
  uint64_t ks[8];
  int lane, same;
  stored = _mm512_maskz_cvtpd_ps(
      0xFF,
      _mm512_maskz_min_pd(
          0xFF, _mm512_maskz_min_pd(0xFF, ratio, _mm512_set1_pd(c->r.tau_r)),
          _mm512_set1_pd((double)FLT_MAX)));
  _mm512_storeu_si512((void *)ks, k);
  same =
      _mm512_cmpeq_epi64_mask(k, _mm512_set1_epi64((long long)ks[0])) == 0xFF;
  if (same) {
    evicted = _mm256_loadu_ps(s->window +
                              ((ks[0] - c->r.window) & GNMR__RING) * n + u);
    _mm256_mask_storeu_ps(s->window + (ks[0] & GNMR__RING) * n + u, calm,
                          stored);
  } else {
    float e[8], f[8];
    _mm256_storeu_ps(f, stored);
    for (lane = 0; lane < 8; lane++) {
      size_t at = u + (size_t)lane;
      e[lane] = 0.0f;
      if (!(calm & (1u << lane))) continue;
      e[lane] = s->window[((ks[lane] - c->r.window) & GNMR__RING) * n + at];
      s->window[(ks[lane] & GNMR__RING) * n + at] = f[lane];
    }
    evicted = _mm256_setr_ps(e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]);
  }
  wsum = _mm512_add_pd(
      wsum, gnmr__keep8(_mm512_sub_pd(_mm512_maskz_cvtps_pd(0xFF, stored),
                                      _mm512_maskz_cvtps_pd(0xFF, evicted))));
  /* once per lap: row by row, oldest first, while the counts agree, else
     lane by lane */
  resync = calm & _mm512_testn_epi64_mask(k1, _mm512_set1_epi64(GNMR__RING));
  if (resync && same) {
    __m512d sum = _mm512_setzero_pd();
    uint32_t i;
    for (i = c->r.window; i > 0; i--)
      sum = gnmr__keep8(_mm512_add_pd(
          sum,
          _mm512_maskz_cvtps_pd(
              0xFF, _mm256_loadu_ps(s->window +
                                    ((ks[0] + 1 - i) & GNMR__RING) * n + u))));
    wsum = _mm512_mask_mov_pd(wsum, resync, sum);
  }
  _mm512_mask_storeu_pd(s->window_sum + u, calm, wsum);
  for (lane = 0; resync && !same && lane < 8; lane++)
    if (resync & (1u << lane))
      s->window_sum[u + (uint32_t)lane] = gnmr__window_sum(
          s, c->r.n, u + (uint32_t)lane, ks[lane] + 1, c->r.window);
}

/* Eight calm units' decisions: scale 1 (rule 8), flags WARMUP (lanes not
   in warm) or 0, KEEP. The caller's scalar steps overwrite the lanes that
   were not calm. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static void
gnmr__paper8_decisions(gnmr__step_ctx *c, uint32_t u, const __m512i *lanes,
                       __m512d ratio, __m512d delta, __mmask8 warm) {
  const __m512d a = _mm512_mul_pd(ratio, _mm512_set1_pd(c->r.inv_tau_r));
  const __m512d b = _mm512_mul_pd(delta, _mm512_set1_pd(c->r.inv_tau_d));
  const __m512d score = _mm512_maskz_max_pd(0xFF, b, a);
  const __m512d tails = _mm512_castsi512_pd(
      _mm512_maskz_set1_epi64((__mmask8)~warm, GNMR_FLAG_WARMUP));
  double *d = (double *)(void *)(c->out + u);
#define GNMR__DECISIONS8(j)                                                    \
  do {                                                                         \
    const __m512i b_ = lanes[5 + (j)];                                         \
    __m512d v_ = _mm512_mask2_permutex2var_pd(                                 \
        ratio, lanes[j], (__mmask8)(GNMR__LANES(j, 0) | GNMR__LANES(j, 1)),    \
        delta);                                                                \
    v_ = _mm512_mask_permutex2var_pd(v_, (__mmask8)GNMR__LANES(j, 2), b_,      \
                                     score);                                   \
    if (warm != 0xFF)                                                          \
      v_ = _mm512_mask_permutexvar_pd(v_, (__mmask8)GNMR__LANES(j, 4), b_,     \
                                      tails);                                  \
    _mm512_storeu_pd(d + (size_t)8 * (j), v_);                                 \
  } while (0)
  GNMR__DECISIONS8(0);
  GNMR__DECISIONS8(1);
  GNMR__DECISIONS8(2);
  GNMR__DECISIONS8(3);
  GNMR__DECISIONS8(4);
#undef GNMR__DECISIONS8
}

GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static unsigned
gnmr__paper8_avx512(gnmr__step_ctx *c, uint32_t u, const __m512i *lanes) {
  const gnmr__soa *s = &c->s;
  __m512d g, m, wsum, mm, ratio, delta, w;
  __m512i k, k1;
  __m256i busy, norm_bits;
  __mmask8 calm, warm, young;

  norm_bits = _mm256_loadu_si256((const __m256i *)(const void *)(c->norms + u));
  g = _mm512_maskz_cvtps_pd(0xFF, _mm256_castsi256_ps(norm_bits));
  k = _mm512_loadu_si512((const void *)(s->finite_steps + u));
  busy = _mm256_or_si256(
      _mm256_loadu_si256((const __m256i *)(const void *)(s->lock + u)),
      _mm256_loadu_si256((const __m256i *)(const void *)(s->cooldown + u)));
  /* Observed (finite, not 0) by the norms' bits, as in gnmr__unit_step:
     clang gives an FP compare intrinsic the caller's fast-math flags (no
     NaN, no Inf). */
  calm = (__mmask8)(gnmr__observed8(norm_bits) &
                    _mm512_cmp_epu64_mask(
                        k, _mm512_set1_epi64((long long)c->r.window),
                        _MM_CMPINT_NLT) &
                    _mm256_cmpeq_epi32_mask(busy, _mm256_setzero_si256()));
  if (!calm) return 0xFF;

  /* rules 2-4 */
  m = _mm512_loadu_pd(s->mean + u);
  wsum = _mm512_loadu_pd(s->window_sum + u);
  /* MAXPD(a, b) is a > b ? a : b and MINPD(a, b) a < b ? a : b, exactly
     the scalar rules' selects, ties and NaNs included. */
  mm = _mm512_maskz_max_pd(0xFF, m, _mm512_set1_pd(c->r.eps));
  ratio = _mm512_div_pd(g, mm);
  delta =
      _mm512_sub_pd(ratio, gnmr__mul8(wsum, _mm512_set1_pd(c->r.inv_window)));
  warm = _mm512_cmp_epu64_mask(k, _mm512_set1_epi64((long long)c->r.warmup),
                               _MM_CMPINT_NLT);
  /* risky lanes, and lanes in warm-up (rule 5 may clip or restart their
     history) */
  calm =
      (__mmask8)(calm & warm &
                 ~(_mm512_mask_cmp_pd_mask(
                       warm, ratio, _mm512_set1_pd(c->r.tau_r), _CMP_GT_OQ) |
                   _mm512_mask_cmp_pd_mask(
                       warm, delta, _mm512_set1_pd(c->r.tau_d), _CMP_GT_OQ)));
  if (!calm) return 0xFF;

  /* rule 5 for the calm lanes; the caller steps the others one by one */
  k1 = _mm512_add_epi64(k, _mm512_set1_epi64(1));
  young = _mm512_cmp_epu64_mask(
      k1, _mm512_set1_epi64((long long)c->r.full_weight_from), _MM_CMPINT_LT);
  w = _mm512_set1_pd(c->r.floor_w);
  if (young) /* a division only while some unit is still young */
    w = _mm512_mask_div_pd(w, young, _mm512_set1_pd(1.0),
                           _mm512_maskz_cvtepu64_pd(0xFF, k1));
  _mm512_mask_storeu_pd(s->mean + u, calm,
                        _mm512_add_pd(m, gnmr__mul8(w, _mm512_sub_pd(g, m))));
  _mm512_mask_storeu_epi64((void *)(s->finite_steps + u), calm, k1);
  gnmr__paper8_window(c, u, calm, k, k1, ratio, wsum);
  if (c->out) gnmr__paper8_decisions(c, u, lanes, ratio, delta, warm);
  return (__mmask8)~calm;
}
#endif

/* ---- NOISE rules (N0-N9): each scalar reference, then its AVX-512 copy ----
   The AVX-512 copies (eight units at a time) take gnmr__log's,
   gnmr__noise_history's and gnmr__grid's operations in their order, so the
   bits are those of the scalar rules; the lanes of a unit that is not
   finite, still warming up, locked, cooling down or flagged are left to
   gnmr__unit_step. Every arithmetic result passes through gnmr__keep8
   (gnmr__add8 and the others), so clang's fast-math flags cannot reorder
   any of it. */

#define GNMR__LN2 0.69314718055994530942

/* Rule N0: L(x), the library's log of max(x, lo) (lo >= DBL_MIN: a normal
   double), = e ln2 + 2y (1 + y^2/3 + y^4/5 + y^6/7) with x = f 2^e, f in
   [1, 2) read off the bits and y = (f - 1) / (f + 1): |error| < 2e-5 and
   increasing in x. */
static GNMR__HOT GNMR_HOSTDEV double gnmr__log(double x, double lo) {
  uint64_t b;
  double f, y, y2, t;
  int e;
  if (!(x > lo)) x = lo;
  memcpy(&b, &x, 8);
  e = (int)(b >> 52) - 1023;
  b = (b & UINT64_C(0x000FFFFFFFFFFFFF)) | UINT64_C(0x3FF0000000000000);
  memcpy(&f, &b, 8);
  y = (f - 1.0) / (f + 1.0);
  y2 = y * y;
  t = 1.0 / 5.0 + gnmr__mul(y2, 1.0 / 7.0);
  t = 1.0 / 3.0 + gnmr__mul(y2, t);
  t = 1.0 + gnmr__mul(y2, t);
  return gnmr__mul((double)e, GNMR__LN2) + gnmr__mul(2.0 * y, t);
}

#if GNMR__CTL_AVX512
/* Rule N0's L(max(x, lo)), gnmr__log eight lanes wide (x > 0 or lo). */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static __m512d
gnmr__log8(__m512d x, __m512d lo) {
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512i b = _mm512_castpd_si512(_mm512_maskz_max_pd(0xFF, x, lo));
  const __m512d e = _mm512_maskz_cvtepi64_pd(
      0xFF, _mm512_sub_epi64(_mm512_maskz_srli_epi64(0xFF, b, 52),
                             _mm512_set1_epi64(1023)));
  const __m512d f = _mm512_castsi512_pd(_mm512_or_si512(
      _mm512_and_si512(b, _mm512_set1_epi64(0x000FFFFFFFFFFFFFLL)),
      _mm512_set1_epi64(0x3FF0000000000000LL)));
  const __m512d y = gnmr__div8(gnmr__sub8(f, one), gnmr__add8(f, one));
  const __m512d y2 = gnmr__mul8(y, y);
  __m512d t = gnmr__add8(_mm512_set1_pd(1.0 / 5.0),
                         gnmr__mul8(y2, _mm512_set1_pd(1.0 / 7.0)));
  t = gnmr__add8(_mm512_set1_pd(1.0 / 3.0), gnmr__mul8(y2, t));
  t = gnmr__add8(one, gnmr__mul8(y2, t));
  return gnmr__add8(gnmr__mul8(e, _mm512_set1_pd(GNMR__LN2)),
                    gnmr__mul8(gnmr__mul8(_mm512_set1_pd(2.0), y), t));
}
#endif

/* exp(x) for x <= 0 (scales only): x = n ln2 + r, |r| < ln2, exp(r) by
   its series to r^13 (relative error < 2e-12), times 2^n from the bits;
   0 below 2^-1000. */
/* 1/i for the series: multiplies, not divides (gnmr__exp_neg8 too) */
#define GNMR__EXP_INV                                                          \
  {                                                                            \
    0.0, 1.0, 1.0 / 2.0, 1.0 / 3.0, 1.0 / 4.0, 1.0 / 5.0, 1.0 / 6.0,           \
        1.0 / 7.0, 1.0 / 8.0, 1.0 / 9.0, 1.0 / 10.0, 1.0 / 11.0, 1.0 / 12.0,   \
        1.0 / 13.0                                                             \
  }
#define GNMR__EXP_MIN (-693.0) /* below: 0 */
static GNMR_HOSTDEV double gnmr__exp_neg(double x) {
  static const double inv[14] = GNMR__EXP_INV;
  double r, t, p;
  uint64_t b;
  int n, i;
  if (!(x < 0.0)) return 1.0;
  if (x < GNMR__EXP_MIN) return 0.0;
  n = (int)(x * (1.0 / GNMR__LN2)); /* toward 0: n in [-1000, 0] */
  r = x - gnmr__mul((double)n, 0.693145751953125);
  r = r - gnmr__mul((double)n, 1.42860682030941723212e-06);
  t = 1.0;
  p = 1.0;
  for (i = 13; i >= 1; i--) p = 1.0 + gnmr__mul(gnmr__mul(p, r), inv[i]);
  b = (uint64_t)(n + 1023) << 52;
  memcpy(&t, &b, 8);
  return p * t;
}

#if GNMR__CTL_AVX512
/* gnmr__exp_neg eight lanes wide (x <= 0; 1 at -0 and 0, 0 below
   GNMR__EXP_MIN), its operations in its order. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static __m512d
gnmr__exp_neg8(__m512d x) {
  static const double inv[14] = GNMR__EXP_INV;
  const __m512d one = _mm512_set1_pd(1.0);
  const __mmask8 neg = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_LT_OQ);
  const __mmask8 tiny =
      _mm512_cmp_pd_mask(x, _mm512_set1_pd(GNMR__EXP_MIN), _CMP_LT_OQ);
  const __m512d xs =
      _mm512_maskz_max_pd(0xFF, x, _mm512_set1_pd(GNMR__EXP_MIN));
  const __m512i n = _mm512_maskz_cvttpd_epi64(
      0xFF, gnmr__mul8(xs, _mm512_set1_pd(1.0 / GNMR__LN2)));
  const __m512d nd = _mm512_maskz_cvtepi64_pd(0xFF, n);
  __m512d r, p = one;
  int i;
  r = gnmr__sub8(xs, gnmr__mul8(nd, _mm512_set1_pd(0.693145751953125)));
  r = gnmr__sub8(r, gnmr__mul8(nd, _mm512_set1_pd(1.42860682030941723212e-06)));
  for (i = 13; i >= 1; i--)
    p = gnmr__add8(one, gnmr__mul8(gnmr__mul8(p, r), _mm512_set1_pd(inv[i])));
  p = gnmr__mul8(p,
                 _mm512_castsi512_pd(_mm512_maskz_slli_epi64(
                     0xFF, _mm512_add_epi64(n, _mm512_set1_epi64(1023)), 52)));
  p = _mm512_mask_mov_pd(one, neg, p);
  return _mm512_mask_mov_pd(p, tiny, _mm512_setzero_pd());
}
#endif

/* exp(x) for any x: exp_neg(-|x|), inverted above 0 (+inf past 693). The
   global norm's ratio, and a NOISE-mode decision's ratio (rule N4). */
static GNMR_HOSTDEV double gnmr__exp(double x) {
  return x > 0.0 ? 1.0 / gnmr__exp_neg(-x) : gnmr__exp_neg(x);
}

/* Rule N3's grid: q(x) = floor((x + 8) 256) clamped to [0, 4095]. */
static GNMR__HOT GNMR_HOSTDEV uint32_t gnmr__grid(double x) {
  double y = (x + 8.0) * 256.0;
  return y <= 0.0 ? 0u : y >= 4095.0 ? 4095u : (uint32_t)y;
}

/* The centre of the grid's bin q: the common deviation c a median bin
   stands for. */
static GNMR_HOSTDEV double gnmr__grid_centre(uint32_t q) {
  return ((double)q + 0.5) / 256.0 - 8.0;
}

static GNMR__HOT GNMR_HOSTDEV double gnmr__clamp(double x, double lo,
                                                 double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Rules N2 and N4-N7 for one history (a unit's, or the global norm's with
   common = 0): dr = L(g) - mu. Returns GNMR_FLAG_RATIO (a rise),
   GNMR_FLAG_FALL, GNMR_FLAG_WARMUP or 0; *d, *e and *score as the rules
   name them (0 on the first observation; score 0 unless flagged), *room
   = z_rise S - d (rule N9's clip, in log units). */
static GNMR__HOT GNMR_HOSTDEV uint32_t
gnmr__noise_history(const gnmr__rules *c, double *mu, double *s, double *p,
                    uint64_t *k, double dr, double common, double *d_,
                    double *e_, double *score, double *room) {
  const uint64_t k0 = *k, k1 = k0 + 1;
  double d, e, S, hi, lo, a, x;
  uint32_t flags = k0 < c->warmup ? (uint32_t)GNMR_FLAG_WARMUP : 0u;
  int capped;
  *score = 0.0;
  if (k0 == 0) { /* mu is 0: dr is L(g) */
    *mu = dr;
    *s = 0.0;
    *p = 0.0;
    *k = 1;
    *d_ = *e_ = *room = 0.0;
    return flags;
  }
  d = dr - common;
  e = d - gnmr__mul(c->ar, *p);
  S = *s > c->fluct_floor ? *s : c->fluct_floor;
  hi = c->z_rise * S;
  lo = c->z_fall * S;
  *room = hi - d;
  if (!flags) {
    if (e > hi && d > c->l_min_rise) {
      flags = GNMR_FLAG_RATIO;
      *score = e / hi;
    } else if (c->two_sided && e < -lo && d < c->l_max_fall) {
      flags = GNMR_FLAG_FALL;
      *score = -e / lo;
    }
  }
  /* rule N5 in warm-up: a step rule N4 would call a FALL restarts the
     level from g; one it would call a RISE enters as after warm-up */
  capped = k1 > c->warmup;
  if (k0 < c->warmup) {
    if (GNMR__UNLIKELY(e < -lo && d < c->l_max_fall)) {
      *mu += dr;
      *p = 0.0;
      *k = k1;
      *d_ = d;
      *e_ = e;
      return flags;
    }
    capped = e > hi && d > c->l_min_rise;
  }
  /* rule N5 */
  a = k1 < c->full_weight_from ? 1.0 / (double)k1 : c->floor_w;
  *mu += gnmr__mul(a, capped ? gnmr__clamp(dr, -lo, hi) : dr);
  /* rule N6 */
  x = e < 0.0 ? -e : e;
  if (capped && x > c->winsor * S) x = c->winsor * S;
  a = k0 < c->fluct_full_from ? 1.0 / (double)k0 : c->fluct_w;
  *s += gnmr__mul(a, x - *s);
  /* rule N7 */
  if (!(flags & (GNMR_FLAG_RATIO | GNMR_FLAG_FALL)) && e <= c->hold * S &&
      e >= -(c->hold * S))
    *p = gnmr__clamp(d, -lo, hi);
  *k = k1;
  *d_ = d;
  *e_ = e;
  return flags;
}

/* Rules N2, N4-N7 and N9's own scale for unit u, finite g; the step's
   phase 2 has left dev[u] = L(g) - mu. *own is d, *delta e. */
static GNMR__HOT GNMR_HOSTDEV uint32_t
gnmr__noise_unit(const gnmr__rules *c, const gnmr__soa *s, uint32_t u,
                 double *own, double *delta, double *score, double *scale) {
  double room;
  uint32_t flags = gnmr__noise_history(
      c, &s->log_mean[u], &s->fluct[u], &s->last_dev[u], &s->finite_steps[u],
      s->dev[u], c->common, own, delta, score, &room);
  *scale = 1.0;
  if (flags & (GNMR_FLAG_RATIO | GNMR_FLAG_FALL)) {
    if (c->policy == GNMR_SPIKE_SKIP)
      *scale = 0.0;
    else if (c->policy == GNMR_SPIKE_CLIP && (flags & GNMR_FLAG_RATIO))
      *scale = gnmr__exp_neg(room); /* a FALL is never scaled up */
  }
  return flags;
}

#if GNMR__CTL_AVX512
/* Eight calm NOISE units' decisions: ratio exp(dr) (index U: gnmr__exp,
   exp_neg(-|dr|) inverted above 0; calm units are settled, k > 0), delta e
   (8 + U); the other fields from the index bits: score 0, scale 1.0, flags
   0 and KEEP. The caller's scalar steps overwrite the other lanes. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static void
gnmr__noise8_decisions(gnmr__step_ctx *c, uint32_t u, const __m512i *lanes,
                       __m512d dr, __m512d e) {
  double *o = (double *)(void *)(c->out + u);
  const __m512d en = gnmr__exp_neg8(_mm512_or_pd(dr, _mm512_set1_pd(-0.0)));
  const __m512d ratio = gnmr__keep8(_mm512_mask_div_pd(
      en, _mm512_cmp_pd_mask(dr, _mm512_setzero_pd(), _CMP_GT_OQ),
      _mm512_set1_pd(1.0), en));
#define GNMR__NOISE8(j)                                                        \
  _mm512_storeu_pd(o + (size_t)8 * (j),                                        \
                   _mm512_mask2_permutex2var_pd(                               \
                       ratio, lanes[j],                                        \
                       (__mmask8)(GNMR__LANES(j, 0) | GNMR__LANES(j, 1)), e))
  GNMR__NOISE8(0);
  GNMR__NOISE8(1);
  GNMR__NOISE8(2);
  GNMR__NOISE8(3);
  GNMR__NOISE8(4);
#undef GNMR__NOISE8
}

/* Phase 3 for eight units of a NOISE step that is not GLOBAL: the lanes
   of calm units (finite, settled as rule N3 says, no lock, no cooldown,
   neither a RISE nor a FALL) get rules N4-N7 and their decisions (d, e,
   score 0, scale 1, no flags, KEEP); returns the other lanes. */
GNMR__TARGET_AVX512 __inline__ __attribute__((always_inline)) static unsigned
gnmr__noise8_avx512(gnmr__step_ctx *c, uint32_t u, const __m512i *lanes) {
  const gnmr__soa *s = &c->s;
  const gnmr__rules *r = &c->r;
  const __m512d sign = _mm512_set1_pd(-0.0);
  const __m256i norm_bits =
      _mm256_loadu_si256((const __m256i *)(const void *)(c->norms + u));
  const __m512i k = _mm512_loadu_si512((const void *)(s->finite_steps + u));
  const __m256i busy = _mm256_or_si256(
      _mm256_loadu_si256((const __m256i *)(const void *)(s->lock + u)),
      _mm256_loadu_si256((const __m256i *)(const void *)(s->cooldown + u)));
  __m512d dr, p, sf, d, e, S, hi, lo, nlo, a, x, ws, hs;
  __m512i k1;
  __mmask8 calm, young;
  calm = (__mmask8)(gnmr__observed8(norm_bits) &
                    _mm512_cmp_epu64_mask(
                        k, _mm512_set1_epi64((long long)r->settle),
                        _MM_CMPINT_NLT) &
                    _mm256_cmpeq_epi32_mask(busy, _mm256_setzero_si256()));
  if (!calm) return 0xFF;
  dr = _mm512_loadu_pd(s->dev + u);
  p = _mm512_loadu_pd(s->last_dev + u);
  sf = _mm512_loadu_pd(s->fluct + u);
  /* rule N4 */
  d = gnmr__sub8(dr, _mm512_set1_pd(r->common));
  e = gnmr__sub8(d, gnmr__mul8(_mm512_set1_pd(r->ar), p));
  S = _mm512_maskz_max_pd(0xFF, sf, _mm512_set1_pd(r->fluct_floor));
  hi = gnmr__mul8(_mm512_set1_pd(r->z_rise), S);
  lo = gnmr__mul8(_mm512_set1_pd(r->z_fall), S);
  nlo = _mm512_xor_pd(lo, sign);
  calm &= (__mmask8) ~(
      _mm512_cmp_pd_mask(e, hi, _CMP_GT_OQ) &
      _mm512_cmp_pd_mask(d, _mm512_set1_pd(r->l_min_rise), _CMP_GT_OQ));
  if (r->two_sided)
    calm &= (__mmask8) ~(
        _mm512_cmp_pd_mask(e, nlo, _CMP_LT_OQ) &
        _mm512_cmp_pd_mask(d, _mm512_set1_pd(r->l_max_fall), _CMP_LT_OQ));
  if (!calm) return 0xFF;
  /* rule N5 (k + 1 > warmup_steps: the step's clamp), clamp(x, -lo, hi)
     as MAXPD(-lo, MINPD(hi, x)): x < -lo ? -lo : x > hi ? hi : x */
  k1 = _mm512_add_epi64(k, _mm512_set1_epi64(1));
  young = _mm512_cmp_epu64_mask(
      k1, _mm512_set1_epi64((long long)r->full_weight_from), _MM_CMPINT_LT);
  a = _mm512_set1_pd(r->floor_w);
  if (young)
    a = gnmr__keep8(_mm512_mask_div_pd(a, young, _mm512_set1_pd(1.0),
                                       _mm512_maskz_cvtepu64_pd(0xFF, k1)));
  _mm512_mask_storeu_pd(
      s->log_mean + u, calm,
      gnmr__add8(
          _mm512_loadu_pd(s->log_mean + u),
          gnmr__mul8(a, _mm512_maskz_max_pd(
                            0xFF, nlo, _mm512_maskz_min_pd(0xFF, hi, dr)))));
  /* rule N6: |e| (e < 0 ? -e : e), capped at winsor S */
  x = _mm512_mask_xor_pd(
      e, _mm512_cmp_pd_mask(e, _mm512_setzero_pd(), _CMP_LT_OQ), e, sign);
  ws = gnmr__mul8(_mm512_set1_pd(r->winsor), S);
  x = _mm512_maskz_min_pd(0xFF, ws, x);
  young = _mm512_cmp_epu64_mask(
      k, _mm512_set1_epi64((long long)r->fluct_full_from), _MM_CMPINT_LT);
  a = _mm512_set1_pd(r->fluct_w);
  if (young)
    a = gnmr__keep8(_mm512_mask_div_pd(a, young, _mm512_set1_pd(1.0),
                                       _mm512_maskz_cvtepu64_pd(0xFF, k)));
  _mm512_mask_storeu_pd(s->fluct + u, calm,
                        gnmr__add8(sf, gnmr__mul8(a, gnmr__sub8(x, sf))));
  /* rule N7: not flagged; -(hold S) <= e <= hold S */
  hs = gnmr__mul8(_mm512_set1_pd(r->hold), S);
  _mm512_mask_storeu_pd(
      s->last_dev + u,
      calm & _mm512_cmp_pd_mask(e, hs, _CMP_LE_OQ) &
          _mm512_cmp_pd_mask(e, _mm512_xor_pd(hs, sign), _CMP_GE_OQ),
      _mm512_maskz_max_pd(0xFF, nlo, _mm512_maskz_min_pd(0xFF, hi, d)));
  _mm512_mask_storeu_epi64((void *)(s->finite_steps + u), calm, k1);
  if (c->out) gnmr__noise8_decisions(c, u, lanes, dr, e);
  return (__mmask8)~calm;
}

#undef GNMR__LANES
#undef GNMR__LANE
#undef GNMR__U
#undef GNMR__F
#undef GNMR__P
#endif

/* Rule N3, the step-level view (phase 2). */

/* What phase 2's pass over the units gives (rule N3): G's sum of squares,
   the counts, and the grid bin of the settled units' lower median (bin:
   set only when settled >= common_min_units). */
typedef struct gnmr__common_sums {
  double sumsq;
  uint32_t settled, up, finite, bin;
} gnmr__common_sums;

/* The lower median's bin from the bins' counts: the first bin whose count
   with those below it exceeds rank = (settled - 1) / 2. The bins hold
   `settled` > rank counts, so it lies in one of the 64 blocks of 64 (the
   last, if none before) and the search stops inside the array. */
static GNMR_HOSTDEV uint32_t gnmr__median_bin(const uint32_t *hist,
                                              uint32_t settled) {
  const uint32_t rank = (settled - 1) / 2;
  uint32_t block, at, below = 0;
  for (block = 0; block < 63; block++) {
    uint32_t i, sum = 0;
    for (i = 0; i < 64; i++) sum += hist[block * 64 + i];
    if (below + sum > rank) break;
    below += sum;
  }
  for (at = block * 64; at < 4095 && below + hist[at] <= rank; at++)
    below += hist[at];
  return at;
}

/* Phase 2's pass on the scalar path (and a device's): the grid's 4096
   bins counted, 16 KiB on the stack, the median's found by sums of 64
   first. */
static GNMR_HOSTDEV void gnmr__common_scalar(const gnmr__step_ctx *c,
                                             uint32_t min_units,
                                             gnmr__common_sums *out) {
  const gnmr__rules *r = &c->r;
  const gnmr__soa *s = &c->s;
  uint32_t hist[4096], u, at, settled = 0, up = 0, finite = 0;
  double sumsq = 0.0, lane[8];
  memset(hist, 0, sizeof hist);
  for (at = 0; at < r->n; at += 256) { /* G's blocks of 256 */
    const uint32_t end = r->n - at > 256 ? at + 256 : r->n;
    memset(lane, 0, sizeof lane);
    for (u = at; u < end; u++) {
      const double g = (double)c->norms[u];
      if (gnmr__observed32(c->norms[u])) {
        const double dr = gnmr__log(g, r->log_floor) - s->log_mean[u];
        finite++;
        lane[u & 7] += gnmr__mul(g, g); /* g * g is exact: g is a float */
        s->dev[u] = dr;
        if (s->finite_steps[u] >= r->settle) {
          settled++;
          up += dr > r->l_global;
          hist[gnmr__grid(dr)]++;
        }
      }
    }
    sumsq += gnmr__fold8(lane);
  }
  out->sumsq = sumsq;
  out->settled = settled;
  out->up = up;
  out->finite = finite;
  out->bin = settled >= min_units ? gnmr__median_bin(hist, settled) : 0;
}

#if GNMR__CTL_AVX512
/* Phase 2's pass over the units, eight at a time (the last group masked):
   dev, G's sum of squares in its order (lane u % 8 of a block of 256 is
   lane u % 8 of the vector), the counts, and the median's bin. Up to
   GNMR__BINS_KEPT units, the settled units' bins are kept (16 bits each,
   4096 for the others) and the median is found by counting the kept bins
   at or below a few pivots with vector compares (gnmr__median_kept: one
   pass over at most 16 KiB on a calm step), much cheaper than counting
   4096 integer bins one unit at a time (0.5 of this pass's 1.3 ns per
   unit at N = 4096). Above it, the bins are counted as gnmr__common_scalar
   does. Either way the same bin as gnmr__median_bin: the first value
   whose count of bins at or below it exceeds the rank. */
#define GNMR__BINS_KEPT 8192

/* The least and the greatest of eight unsigned 32-bit lanes. */
GNMR__TARGET_AVX512
static uint32_t gnmr__min8u(__m256i v) {
  uint32_t x[8], m, i;
  _mm256_storeu_si256((__m256i *)(void *)x, v);
  for (m = x[0], i = 1; i < 8; i++) m = x[i] < m ? x[i] : m;
  return m;
}
GNMR__TARGET_AVX512
static uint32_t gnmr__max8u(__m256i v) {
  uint32_t x[8], m, i;
  _mm256_storeu_si256((__m256i *)(void *)x, v);
  for (m = x[0], i = 1; i < 8; i++) m = x[i] > m ? x[i] : m;
  return m;
}

/* The sum of 32 16-bit lanes (each at most 256 here: exact). */
GNMR__TARGET_AVX512
static uint32_t gnmr__sum32w(__m512i v) {
  int32_t x[16]; /* stored: g++ 12's _mm512_reduce_add_epi32 warns */
  uint32_t i, sum = 0;
  _mm512_storeu_si512((void *)x, _mm512_madd_epi16(v, _mm512_set1_epi16(1)));
  for (i = 0; i < 16; i++) sum += (uint32_t)x[i];
  return sum;
}

/* The lower median's bin from the kept bins bin[0 .. end) (end a multiple
   of 32; 4096 where none): the smallest b in [lo, hi] (the settled bins'
   least and greatest) with more than rank bins at or below it. Each pass
   counts the bins at or below four pivots at once: the first pass's
   around guess (the last step's median; most steps' is within a bin of
   it), later ones spread over what is left (a fifth each). */
GNMR__TARGET_AVX512
static uint32_t gnmr__median_kept(const uint16_t *bin, uint32_t end,
                                  uint32_t rank, uint32_t lo, uint32_t hi,
                                  uint32_t guess) {
  const __m512i one = _mm512_set1_epi16(1);
  int first = 1;
  while (lo < hi) {
    uint32_t p[4], i, u, below;
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
    __m512i p0, p1, p2, p3;
    for (i = 0; i < 4; i++)
      p[i] = first && guess >= lo + 2 && guess + 1 < hi
                 ? guess - 2 + i                 /* g - 2 ... g + 1 */
                 : lo + (hi - lo) * (i + 1) / 5; /* in [lo, hi - 1] */
    first = 0;
    p0 = _mm512_set1_epi16((short)p[0]);
    p1 = _mm512_set1_epi16((short)p[1]);
    p2 = _mm512_set1_epi16((short)p[2]);
    p3 = _mm512_set1_epi16((short)p[3]);
    for (u = 0; u < end; u += 32) {
      const __m512i b = _mm512_loadu_si512((const void *)(bin + u));
      c0 = _mm512_mask_add_epi16(c0, _mm512_cmple_epu16_mask(b, p0), c0, one);
      c1 = _mm512_mask_add_epi16(c1, _mm512_cmple_epu16_mask(b, p1), c1, one);
      c2 = _mm512_mask_add_epi16(c2, _mm512_cmple_epu16_mask(b, p2), c2, one);
      c3 = _mm512_mask_add_epi16(c3, _mm512_cmple_epu16_mask(b, p3), c3, one);
    }
    for (i = 0; i < 4; i++) {
      below = gnmr__sum32w(i == 0 ? c0 : i == 1 ? c1 : i == 2 ? c2 : c3);
      if (below > rank) {
        if (p[i] < hi) hi = p[i];
      } else if (p[i] + 1 > lo) {
        lo = p[i] + 1;
      }
    }
  }
  return lo;
}
GNMR__TARGET_AVX512
static void gnmr__common_avx512(const gnmr__step_ctx *c, uint32_t min_units,
                                uint32_t guess, gnmr__common_sums *out) {
  union { /* 16 KiB either way */
    uint32_t hist[4096];
    uint16_t bin[GNMR__BINS_KEPT];
  } w;
  const gnmr__soa *s = &c->s;
  const uint32_t n = c->r.n;
  const int kept = n <= GNMR__BINS_KEPT;
  const __m512d lo = _mm512_set1_pd(c->r.log_floor);
  const __m512d lg = _mm512_set1_pd(c->r.l_global);
  const __m512i settle = _mm512_set1_epi64((long long)c->r.settle);
  const __m256i none = _mm256_set1_epi32(4096); /* above every bin */
  __m512d lane = _mm512_setzero_pd();
  __m256i qmin = none, qmax = _mm256_setzero_si256();
  uint32_t u, settled = 0, up = 0, finite = 0;
  double sumsq = 0.0;
  if (!kept) memset(w.hist, 0, sizeof w.hist);
  for (u = 0; u < n; u += 8) {
    const __mmask8 in =
        n - u >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (n - u)) - 1u);
    const __m256i bits =
        _mm256_maskz_loadu_epi32(in, (const void *)(c->norms + u));
    const __mmask8 fin = in & gnmr__observed8(bits); /* observed */
    __mmask8 set = 0;
    __m256i q = none;
    if ((u & 255) == 0) lane = _mm512_setzero_pd();
    if (fin) {
      const __m512d g = _mm512_maskz_cvtps_pd(0xFF, _mm256_castsi256_ps(bits));
      const __m512d dr = gnmr__sub8(
          gnmr__log8(g, lo), _mm512_maskz_loadu_pd(fin, s->log_mean + u));
      const __m512i k =
          _mm512_maskz_loadu_epi64(fin, (const void *)(s->finite_steps + u));
      set = _mm512_mask_cmp_epu64_mask(fin, k, settle, _MM_CMPINT_NLT);
      lane = gnmr__keep8(_mm512_mask_add_pd(lane, fin, lane, gnmr__mul8(g, g)));
      _mm512_mask_storeu_pd(s->dev + u, fin, dr);
      finite += (uint32_t)__builtin_popcount(fin);
      if (set) {
        /* gnmr__grid: (dr + 8) 256, 0 at or below 0, 4095 from 4095 up
           (MAXPD(y, 0) is y > 0 ? y : 0, MINPD(y, 4095) y < 4095 ? y :
           4095), then truncated */
        const __m512d y = gnmr__mul8(gnmr__add8(dr, _mm512_set1_pd(8.0)),
                                     _mm512_set1_pd(256.0));
        q = _mm256_mask_mov_epi32(
            none, set,
            _mm512_maskz_cvttpd_epu32(
                0xFF,
                _mm512_maskz_min_pd(
                    0xFF, _mm512_maskz_max_pd(0xFF, y, _mm512_setzero_pd()),
                    _mm512_set1_pd(4095.0))));
        qmin = _mm256_min_epu32(qmin, q); /* 4096 where not settled */
        qmax = _mm256_mask_max_epu32(qmax, set, qmax, q);
        settled += (uint32_t)__builtin_popcount(set);
        up += (uint32_t)__builtin_popcount(
            _mm512_mask_cmp_pd_mask(set, dr, lg, _CMP_GT_OQ));
      }
    }
    if (kept) {
      _mm_storeu_si128((__m128i *)(void *)(w.bin + u),
                       _mm256_maskz_cvtepi32_epi16(0xFF, q));
    } else if (set) {
      uint32_t at[8], l;
      _mm256_storeu_si256((__m256i *)(void *)at, q);
      for (l = 0; l < 8; l++)
        if (set & (1u << l)) w.hist[at[l]]++;
    }
    if ((u & 255) == 248 || n - u <= 8) {
      double l[8];
      _mm512_storeu_pd(l, lane);
      sumsq += gnmr__fold8(l);
    }
  }
  out->sumsq = sumsq;
  out->settled = settled;
  out->up = up;
  out->finite = finite;
  out->bin = 0;
  if (settled >= min_units && kept) {
    const uint32_t end = (n + 31) & ~31u;
    for (u = (n + 7) & ~7u; u < end; u += 8) /* the last vector's rest */
      _mm_storeu_si128((__m128i *)(void *)(w.bin + u), _mm_set1_epi16(4096));
    out->bin = gnmr__median_kept(w.bin, end, (settled - 1) / 2,
                                 gnmr__min8u(qmin), gnmr__max8u(qmax), guess);
  } else if (settled >= min_units) {
    out->bin = gnmr__median_bin(w.hist, settled);
  }
  _mm256_zeroupper(); /* as gnmr__units_paper_avx512 */
}
#endif

/* Phase 2's end, rule N3 (the device's step runs it too): with r->common
   set (the median, or 0 below common_min_units) and G's sum of squares
   summed in its order, G's history and the step's verdict. */
static GNMR_HOSTDEV void gnmr__step_verdict(gnmr_ctl *ctl, gnmr__rules *r,
                                            gnmr_step_report *rep, double sumsq,
                                            uint32_t finite, uint32_t settled,
                                            uint32_t up) {
  rep->settled = settled;
  rep->common = r->common;
  if (finite > 0) { /* G keeps its history as one more unit, c = 0 */
    const double gn = sqrt(sumsq);
    const int was_settled = ctl->global_k >= r->settle;
    const double gdr = gnmr__log(gn, r->log_floor) - ctl->global_log_mean;
    double d, e, score, room;
    rep->global_norm = gn;
    rep->global_dev = ctl->global_k ? gdr : 0.0;
    rep->global_ratio = gnmr__exp(rep->global_dev);
    (void)gnmr__noise_history(r, &ctl->global_log_mean, &ctl->global_fluct,
                              &ctl->global_last_dev, &ctl->global_k, gdr, 0.0,
                              &d, &e, &score, &room);
    r->global = was_settled && settled >= ctl->cfg.common_min_units &&
                (r->common > r->l_global ||
                 (gdr > r->l_global &&
                  (double)up >= ctl->cfg.global_frac * (double)settled));
    if (r->global) {
      rep->global = 1;
      if (ctl->cfg.global_policy == GNMR_GLOBAL_SKIP)
        r->global_scale = 0.0;
      else if (ctl->cfg.global_policy == GNMR_GLOBAL_CLIP)
        r->global_scale = gnmr__exp_neg(r->l_global - gdr);
      rep->global_scale = r->global_scale;
    }
  }
}

/* ---- level shifts (rule 9), shared by both rule sets ----------------------
   A norm that moves to a new level and stays there is no fault: a unit
   flagged on P = shift_steps observations in a row, in one direction, whose
   norms held steady, restarts its history at their level. Steady: on the
   library's log L, the run's spread L(hi) - L(lo) is at most shift_spread
   times its jump from the level the unit had, L(lo) - level for a rise,
   level - L(hi) for a fall (PAPER: level L(m); NOISE: mu). A run that is
   not steady starts over, so a level is learned within about 2P steps of
   settling. Only flagged steps touch the run's record: a calm one breaks
   the run by moving k past the run's last step. */

/* Rule 9's judgement of a run of P flagged observations of unit u, g in
   [lo, hi], k the unit's count: restarts the history at a steady run's
   level and returns 1, else 0. Inlined like the rest of rule 9: a call
   anywhere in the scalar unit loop, however rare, made the compiler
   reload the loop's constants on every unit (14 more instructions a calm
   unit, 10% of the scalar step; cachegrind, bench/RESULTS.md). */
static GNMR__HOT GNMR_HOSTDEV int
gnmr__shift_judge(const gnmr__rules *c, const gnmr__soa *s, uint32_t u,
                  float lo, float hi, uint32_t fall, uint64_t k) {
  double llo, lhi, level, jump;
  llo = gnmr__log((double)lo, c->log_floor);
  lhi = gnmr__log((double)hi, c->log_floor);
  level = c->noise ? s->log_mean[u] : gnmr__log(s->mean[u], c->log_floor);
  jump = fall ? level - lhi : llo - level;
  if (!(jump > 0.0 && lhi - llo <= gnmr__mul(c->shift_spread, jump))) return 0;
  if (c->noise) {
    s->log_mean[u] = gnmr__mul(0.5, llo + lhi);
    s->last_dev[u] = 0.0;
  } else { /* the run's middle */
    gnmr__paper_level(c, s, u, gnmr__mul(0.5, (double)lo + (double)hi), k);
  }
  s->level_shifts[u]++;
  return 1;
}

/* Rule 9's run of unit u, one 16-byte record (shape PAIR), all 0 when
   there is none: word 0 holds the unit's k after the run's last step,
   modulo 2^48, in bits 0-47, the run's length in bits 48-62 and 1 for a
   run of FALLs in bit 63; word 1 the bits of the run's least g in bits
   0-31 and of its greatest in bits 32-63. (k modulo 2^48 could join a run
   to one left 2^48 observations earlier: no training is that long.) */
#define GNMR__RUN_K ((UINT64_C(1) << 48) - 1)
#define GNMR__RUN_LEN(w) ((uint32_t)((w) >> 48) & 0x7FFFu)
#define GNMR__RUN_FALL(w) ((uint32_t)((w) >> 63))
static GNMR_HOSTDEV uint64_t gnmr__run_word(uint64_t k, uint32_t len,
                                            uint32_t fall) {
  return (k & GNMR__RUN_K) | (uint64_t)len << 48 | (uint64_t)fall << 63;
}
static GNMR_HOSTDEV uint64_t gnmr__run_span(float lo, float hi) {
  uint32_t a, b;
  memcpy(&a, &lo, 4);
  memcpy(&b, &hi, 4);
  return (uint64_t)a | (uint64_t)b << 32;
}
static GNMR_HOSTDEV float gnmr__run_bound(uint64_t span, int upper) {
  const uint32_t b = (uint32_t)(span >> (upper ? 32 : 0));
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* Rule 9 for unit u, flagged on a finite observation g (fall: a run of
   FALLs), after its rule set's rules have counted it (k its new count):
   the run goes on, or is judged. Returns 1 when the unit's history
   restarted at a new level. */
static GNMR__HOT GNMR_HOSTDEV int gnmr__level_shift(const gnmr__rules *c,
                                                    const gnmr__soa *s,
                                                    uint32_t u, float g,
                                                    uint32_t fall) {
  uint64_t *run = s->shift_run + 2 * (size_t)u;
  const uint64_t k = s->finite_steps[u], w = run[0];
  uint32_t len = GNMR__RUN_LEN(w);
  float lo = g, hi = g;
  if (len > 0 && ((w + 1) & GNMR__RUN_K) == (k & GNMR__RUN_K) &&
      GNMR__RUN_FALL(w) == fall) {
    const uint64_t span = run[1];
    const float plo = gnmr__run_bound(span, 0), phi = gnmr__run_bound(span, 1);
    if (plo < lo) lo = plo;
    if (phi > hi) hi = phi;
  } else {
    len = 0;
  }
  len++;
  if (len < c->shift_steps) { /* the run goes on */
    run[0] = gnmr__run_word(k, len, fall);
    run[1] = gnmr__run_span(lo, hi);
    return 0;
  }
  run[0] = run[1] = 0; /* judged: the next flagged step starts a new run */
  return gnmr__shift_judge(c, s, u, lo, hi, fall, k);
}

/* ---- locks and admission (rules 6, 7 and N8), shared by both rule sets -- */

/* Rule 6, and rule 7 up to the mark, for unit u after its rule set's rules
   (risky, score, flags so far): a lock counts down (HOLD), and at zero is
   renewed while risky (RENEWED) or released (RELEASE, cooldown starts); a
   unit out of recovery cools down (COOLDOWN while risky but NONFINITE), or,
   risky and eligible, waits for a slot: score[u] = its score. Returns the
   unit's GNMR__EV_* bits of rules 6 and 7. */
static GNMR__HOT GNMR_HOSTDEV unsigned
gnmr__unit_locks(const gnmr__rules *c, const gnmr__soa *s, uint32_t u,
                 int risky, double score, uint32_t *flags, int32_t *action) {
  unsigned ev = 0;
  if (s->lock[u] > 0) {
    s->recovery_steps[u]++;
    ev |= GNMR__EV_HELD;
    *action = GNMR_ACTION_HOLD;
    if (--s->lock[u] == 0) {
      if (risky && c->renew) {
        s->lock[u] = c->lock_steps;
        s->renewals[u]++;
        ev |= GNMR__EV_RENEWED;
        *flags |= GNMR_FLAG_RENEWED;
      } else {
        *action = GNMR_ACTION_RELEASE;
        s->cooldown[u] = c->cooldown_steps;
      }
    }
    if (s->lock[u] > 0) ev |= GNMR__EV_LOCKED;
  } else if (s->cooldown[u] > 0 || risky) {
    int cooling = s->cooldown[u] > 0;
    if (cooling) s->cooldown[u]--;
    if (cooling && risky && !(*flags & GNMR_FLAG_NONFINITE)) {
      *flags |= GNMR_FLAG_COOLDOWN;
    } else if (risky && (!c->global || (*flags & GNMR_FLAG_NONFINITE))) {
      /* rule N8: on a GLOBAL step only NONFINITE units are candidates */
      s->score[u] = score;
      ev |= GNMR__EV_CANDIDATE;
    }
  }
  return ev;
}

/* Rule 7's order: worse = lower score, then higher index, a strict total
   order, so the admitted set never depends on the order units were listed
   in. */

static GNMR_HOSTDEV int gnmr__worse(const gnmr__soa *s, uint32_t a,
                                    uint32_t b) {
  if (s->score[a] != s->score[b]) return s->score[a] < s->score[b];
  return a > b;
}

/* heap[0 .. size) as a min-heap, worst on top: moves heap[at] down. */
static GNMR_HOSTDEV void gnmr__sift_down(const gnmr__soa *s, uint32_t *heap,
                                         uint32_t size, uint32_t at) {
  uint32_t item = heap[at];
  for (;;) {
    uint32_t child = 2 * at + 1;
    if (child >= size) break;
    if (child + 1 < size && gnmr__worse(s, heap[child + 1], heap[child]))
      child++;
    if (!gnmr__worse(s, heap[child], item)) break;
    heap[at] = heap[child];
    at = child;
  }
  heap[at] = item;
}

/* Moves the best k of the n units in list[] to list[0 .. k), in place and
   in O(n log k): list[0 .. k) is made a min-heap (worst on top), and each
   later unit better than the top takes its place. */
static GNMR_HOSTDEV void gnmr__best_first(const gnmr__soa *s, uint32_t *list,
                                          uint32_t n, uint32_t k) {
  uint32_t i;
  if (k == 0 || k >= n) return;
  for (i = k / 2; i-- > 0;) gnmr__sift_down(s, list, k, i);
  for (i = k; i < n; i++)
    if (gnmr__worse(s, list[0], list[i])) {
      uint32_t t = list[0];
      list[0] = list[i];
      list[i] = t;
      gnmr__sift_down(s, list, k, 0);
    }
}

/* Rule 7's free slots: max_recovering less the units still locked after
   phase 3 (none while gnmr_reconfigure left more units recovering than it
   allows); returns how many candidates take one. */
static GNMR_HOSTDEV uint32_t gnmr__admit_count(const gnmr__tally *t,
                                               uint32_t max_recovering) {
  const uint32_t free_slots =
      t->locked < max_recovering ? max_recovering - t->locked : 0;
  return t->candidates < free_slots ? t->candidates : free_slots;
}

/* ---- the admission band (rule 10) ---------------------------------------- */

#define GNMR__BAND_SPAN 32.0 /* the band's averages: weight 1/32 once warm */
#define GNMR__BAND_FLOOR 0.1 /* the least deviation V, in log units */
#define GNMR__BAND_FAR 4.605170185988091 /* ln 100: far above, at once */

/* Rule 10 for unit u, after its rule set's rules and rule 9 (risky, the
   flags so far, g32 its norm): the band judges g, then learns it. Returns
   1 if the unit may take or keep a slot (rules 6, 7), else 0, and flags a
   risky unit it holds back BAND. Reads and writes unit u only. */
static GNMR__HOT GNMR_HOSTDEV int gnmr__band(const gnmr__rules *c,
                                             const gnmr__soa *s, uint32_t u,
                                             float g32, int risky,
                                             uint32_t *flags) {
  const uint32_t seen = s->band_seen[u];
  uint32_t run = s->band_run[u];
  int above = 2, ok;                       /* a non-finite norm is far above */
  if (*flags & GNMR_FLAG_ABSENT) return 0; /* rule 0: the run stays */
  if (gnmr__finite32(g32)) {
    const double centre = s->band_centre[u], dev = s->band_dev[u];
    const double v = dev > GNMR__BAND_FLOOR ? dev : GNMR__BAND_FLOOR;
    const double half = gnmr__mul(c->band_k, v);
    double l = gnmr__log((double)g32, c->log_floor);
    above = 0;
    if (seen >= c->warmup) { /* the band has learned enough to judge */
      if (l > centre + half) {
        above = l - centre >= GNMR__BAND_FAR ? 2 : 1;
        l = centre + half; /* a spike cannot widen the band */
      } else if (l < centre - half) {
        l = centre - half;
      }
    }
    if (seen == 0) {
      s->band_centre[u] = l;
    } else {
      const double w = (double)seen + 1.0 < GNMR__BAND_SPAN
                           ? 1.0 / ((double)seen + 1.0)
                           : 1.0 / GNMR__BAND_SPAN;
      const double off = l - centre;
      s->band_dev[u] = dev + gnmr__mul(w, (off < 0.0 ? -off : off) - dev);
      s->band_centre[u] = centre + gnmr__mul(w, off);
    }
    if (seen < UINT32_MAX) s->band_seen[u] = seen + 1;
  }
  run = risky && above ? (run < c->band_steps ? run + 1 : run) : 0;
  s->band_run[u] = run;
  ok = run >= c->band_steps || (risky && above == 2);
  if (risky && !ok) *flags |= GNMR_FLAG_BAND;
  return risky && ok;
}

/* ---- one unit, and phase 3's loops -----------------------------------------
 */

/* Rules 0-6 and 8-10 for unit u (0, N1, N2, N4-N9, 9 and 10 in NOISE
   mode): its decision (KEEP, HOLD or RELEASE), its statistics, its lock
   and cooldown. A unit that waits for a slot (rule 7, decided after every
   unit) is marked by score[u] = its score, > 0 (risky scores are >= 1 or
   +inf); whoever runs rule 7 clears every mark. Reads and writes unit u
   only, so units may be stepped in any order, or one CUDA thread each.
   band: c->band, as a constant where a loop is compiled for each value
   (the host's scalar loop), so the loop without the band has none of its
   code. */
static GNMR__HOT GNMR_HOSTDEV unsigned
gnmr__unit_step_with(const gnmr__rules *c, const gnmr__soa *s,
                     const float *norms, gnmr_decision *out, uint32_t u,
                     const int band) {
  const double g = (double)norms[u];
  double ratio, delta, score, scale = 1.0;
  uint32_t flags;
  int32_t action = GNMR_ACTION_KEEP;
  unsigned ev = 0;
  int risky;

  if (GNMR__UNLIKELY(!gnmr__observed32(norms[u]))) { /* rules 0, 1 */
    if (gnmr__finite32(norms[u])) {
      /* rule 0: a norm of 0 is no observation (a frozen layer, an expert
         that got no tokens): nothing is learned, nothing scaled */
      ratio = delta = score = 0.0;
      flags = GNMR_FLAG_ABSENT;
      risky = 0;
      s->absent[u]++;
      ev = GNMR__EV_ABSENT;
    } else {
      /* rule 1: a NaN/Inf never enters the mean or the window */
      ratio = delta = g;
      score = (double)INFINITY;
      flags = GNMR_FLAG_NONFINITE;
      risky = 1;
      scale = 0.0;
      s->nonfinite[u]++;
      ev = GNMR__EV_NONFINITE;
    }
  } else if (c->noise) {
    /* rules N2, N4-N7, N9; ratio g / exp(mu) = exp(dr), 1 at first */
    double own;
    flags = gnmr__noise_unit(c, s, u, &own, &delta, &score, &scale);
    ratio = out && s->finite_steps[u] > 1 ? gnmr__exp(s->dev[u]) : 1.0;
    risky = (flags & (GNMR_FLAG_RATIO | GNMR_FLAG_FALL)) != 0;
    if (risky) ev = flags & GNMR_FLAG_FALL ? GNMR__EV_FALL : GNMR__EV_RISE;
  } else {
    flags = gnmr__paper_unit(c, s, u, g, &ratio, &delta, &score, &scale);
    risky = (flags & (GNMR_FLAG_RATIO | GNMR_FLAG_DELTA)) != 0;
  }
  if (GNMR__UNLIKELY(risky) && c->shift_steps &&
      !(flags & GNMR_FLAG_NONFINITE) &&
      gnmr__level_shift(c, s, u, norms[u],
                        (flags & GNMR_FLAG_FALL) ? 1u : 0u)) {
    /* rule 9: not a fault; a lock ends this step (RELEASE): it is set to
       1 here, and gnmr__unit_locks below counts it down to 0 and, the
       unit no longer risky, releases it and starts its cooldown */
    flags = GNMR_FLAG_SHIFT;
    risky = 0;
    score = 0.0;
    scale = 1.0;
    ev = GNMR__EV_SHIFT;
    if (s->lock[u] > 1) s->lock[u] = 1;
  }
  if (risky) {
    s->falls[u] += (flags & GNMR_FLAG_FALL) != 0;
    s->risky[u]++;
    ev |= GNMR__EV_RISKY;
  }
  if (c->global && !(flags & GNMR_FLAG_ABSENT)) { /* rule N9 */
    flags |= GNMR_FLAG_GLOBAL;
    scale = gnmr__mul(scale, c->global_scale);
  }
  /* rule 10: a risky unit in its own band takes no slot (its scale
     stands) */
  ev |= gnmr__unit_locks(
      c, s, u, band ? gnmr__band(c, s, u, norms[u], risky, &flags) : risky,
      score, &flags, &action);
  if (out) {
    gnmr_decision *d = &out[u];
    d->ratio = ratio;
    d->delta = delta;
    d->score = score;
    d->scale = scale;
    d->flags = flags;
    d->action = action;
  }
  return ev;
}

/* The same, band read from the rules (a device's thread, a test): the
   CUDA controller's alone on the host, so maybe unused here. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))
#endif
static GNMR_HOSTDEV unsigned
gnmr__unit_step(const gnmr__rules *c, const gnmr__soa *s, const float *norms,
                gnmr_decision *out, uint32_t u) {
  return gnmr__unit_step_with(c, s, norms, out, u, c->band);
}

/* Unit u on the CPU: its rules, its share of the totals, and, if it waits
   for a slot, its index listed in the heap scratch for rule 7. Inlined
   into the scalar loop (a call per unit was about a tenth of the scalar
   step's instructions). */
static GNMR__HOT GNMR_HOSTDEV void
gnmr__unit_cpu_inline(gnmr__step_ctx *c, uint32_t u, const int band) {
  gnmr__tally_add(&c->t, c->s.heap,
                  gnmr__unit_step_with(&c->r, &c->s, c->norms, c->out, u, band),
                  u);
}

#if GNMR__CTL_AVX512
/* The same, out of line: the SIMD loops' lanes that are not calm. (Inlined
   there it would be compiled for their target, FMA included.) */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
__attribute__((noinline))
#endif
static GNMR_HOSTDEV void
gnmr__unit_cpu(gnmr__step_ctx *c, uint32_t u) {
  gnmr__unit_cpu_inline(c, u, 0); /* the band takes the scalar loop */
}
#endif

#if GNMR__CTL_AVX512
#define GNMR__AHEAD 64 /* units prefetched ahead */
/* The lanes the eight-wide loops leave, in order, held back and stepped
   between passes of the loop: with no call inside it, the loop keeps its
   constants in registers whatever registers the scalar rules use (with the
   call inside, a larger gnmr__unit_cpu cost the calm step 7-10% in
   reloads). Units are independent in phase 3 and the held lanes keep
   their order, so the candidates are listed as the scalar loop lists them. */
#define GNMR__HELD 64
/* Lanes set in rest, as units u + lane, appended to held[count ...);
   returns the new count. */
static __inline__ uint32_t gnmr__hold_lanes(uint32_t *held, uint32_t count,
                                            uint32_t u, unsigned rest) {
  for (; rest != 0; rest &= rest - 1)
    held[count++] = u + (uint32_t)__builtin_ctz(rest);
  return count;
}

/* The unit loop with the eight-wide path inlined, so the loop keeps its
   constants in registers; the lanes it leaves take the scalar rules. */
GNMR__TARGET_AVX512
static void gnmr__units_paper_avx512(gnmr__step_ctx *c) {
  uint32_t held[GNMR__HELD], u = 0, n = c->r.n, count, i;
  __m512i lanes[10];
  while (n - u >= 8) {
    GNMR__LANE_TABLES(lanes);
    for (count = 0; n - u >= 8 && count <= GNMR__HELD - 8; u += 8) {
      unsigned rest;
      /* Eight groups ahead, the three 8-byte fields: one line per group
         each. Without this the division waits on their loads (about 13%
         of the step at N = 4096; see bench/RESULTS.md). */
      if (n - u > GNMR__AHEAD) {
        _mm_prefetch((const char *)(c->s.mean + u + GNMR__AHEAD), _MM_HINT_T0);
        _mm_prefetch((const char *)(c->s.window_sum + u + GNMR__AHEAD),
                     _MM_HINT_T0);
        _mm_prefetch((const char *)(c->s.finite_steps + u + GNMR__AHEAD),
                     _MM_HINT_T0);
      }
      rest = gnmr__paper8_avx512(c, u, lanes);
      count = gnmr__hold_lanes(held, count, u, rest);
    }
    for (i = 0; i < count; i++) gnmr__unit_cpu(c, held[i]);
  }
  for (; u < n; u++) gnmr__unit_cpu(c, u);
  /* gcc 12 puts no vzeroupper at this function's return: without this
     one, a caller built without AVX (plain -O2: SSE code) ran at a third
     of its speed after every step (the LM demo under the controller: 7.1 s
     against 2.4 s for 60 steps, the same bits). */
  _mm256_zeroupper();
}

/* NOISE mode's unit loop (a step that is not GLOBAL): eight at a time, the
   lanes gnmr__noise8_avx512 leaves to the scalar rules. */
GNMR__TARGET_AVX512
static void gnmr__units_noise_avx512(gnmr__step_ctx *c) {
  uint32_t held[GNMR__HELD], u = 0, n = c->r.n, count, i;
  __m512i lanes[10];
  while (n - u >= 8) {
    GNMR__LANE_TABLES(lanes);
    for (count = 0; n - u >= 8 && count <= GNMR__HELD - 8; u += 8) {
      unsigned rest = gnmr__noise8_avx512(c, u, lanes);
      count = gnmr__hold_lanes(held, count, u, rest);
    }
    for (i = 0; i < count; i++) gnmr__unit_cpu(c, held[i]);
  }
  for (; u < n; u++) gnmr__unit_cpu(c, u);
  _mm256_zeroupper(); /* as gnmr__units_paper_avx512 */
}
#endif

/* ---- the step, in seven phases ---------------------------------------------
   gnmr_step reads the rules' constants once (gnmr__rules_of), then runs
   the phases in order, each a function below. The CUDA controller
   (examples/cuda/gnmr_ctl.cuh) runs the same phases as kernels and calls
   the functions marked *.
     phase     rules     function                 what it calls
     1 check   refusals  gnmr__step_check         gnmr__negative16_avx512
     2 common  N3        gnmr__step_common        gnmr__common_scalar or
               (NOISE)                            gnmr__common_avx512, then
                                                  gnmr__step_verdict*
     3 units   0-6, 8,   gnmr__step_units         gnmr__unit_step* per unit
               9; N1,                             (gnmr__paper_unit or
               N2, N4-                            gnmr__noise_unit, then
               N9                                 gnmr__level_shift,
                                                  gnmr__unit_locks), or the
                                                  rule set's eight-wide
                                                  loop; gnmr__tally_add
     4 select  7         gnmr__step_select        gnmr__admit_count,
                                                  gnmr__best_first
     5 admit   7         gnmr__step_admit         (RECOVER, lock L)
     6 refuse  7         gnmr__step_over_budget   (KEEP, OVER_BUDGET)
     7 totals  -         gnmr__step_totals*       (counters, the report)
   Phase 1's refusals (a finite negative norm, a NULL, a controller not
   usable) come before any rule. Rule N0 is gnmr__log, which phases 2 and
   3 call; N3 is phase 2's alone. The rules themselves: "PAPER rules",
   "NOISE rules" (each scalar function with its AVX-512 copy beside it),
   rules 0, 1 and 9's outcome in gnmr__unit_step, rule 9's runs in "level
   shifts", rules 6-7 and N8 in "locks and admission". */

/* The rules' constants of this step, from the controller (the device's
   kernels read them the same way). */
static GNMR_HOSTDEV void gnmr__rules_of(const gnmr_ctl *ctl, gnmr__rules *r) {
  r->tau_r = ctl->cfg.ratio_threshold;
  r->tau_d = ctl->cfg.delta_threshold;
  r->eps = ctl->cfg.eps;
  r->inv_tau_r = 1.0 / r->tau_r;
  r->inv_tau_d = 1.0 / r->tau_d;
  r->floor_w = 1.0 - ctl->cfg.history_decay;
  r->window = ctl->cfg.delta_window;
  r->inv_window = 1.0 / (double)r->window;
  r->warmup = ctl->cfg.warmup_steps;
  r->settle = r->warmup > 0 ? r->warmup : 1;
  r->full_weight_from = ctl->full_weight_from;
  r->n = ctl->n_units;
  r->lock_steps = ctl->cfg.lock_steps;
  r->cooldown_steps = ctl->cfg.cooldown_steps;
  r->shift_steps = ctl->cfg.shift_steps;
  r->shift_spread = ctl->cfg.shift_spread;
  r->band_k = ctl->cfg.band_k;
  r->band_steps = ctl->cfg.band_steps;
  r->band = r->band_k > 0.0;
  r->policy = ctl->cfg.spike_policy;
  r->renew = ctl->recovering <= ctl->cfg.max_recovering;
  r->noise = ctl->cfg.rule == GNMR_RULE_NOISE;
  r->two_sided = ctl->cfg.two_sided != 0;
  r->z_rise = ctl->cfg.z_rise;
  r->z_fall = ctl->cfg.z_fall;
  r->ar = ctl->cfg.ar;
  r->hold = ctl->cfg.hold;
  r->winsor = ctl->cfg.winsor;
  r->fluct_floor = ctl->cfg.fluct_floor;
  r->fluct_w = 1.0 - ctl->cfg.fluct_decay;
  r->fluct_full_from = ctl->fluct_full_from;
  r->log_floor = r->eps > DBL_MIN ? r->eps : DBL_MIN;
  r->l_min_rise = r->l_max_fall = r->l_global = 0.0;
  if (r->noise) { /* three library logs a step: only where they are read */
    r->l_min_rise = gnmr__log(ctl->cfg.min_rise, r->log_floor);
    r->l_max_fall = gnmr__log(ctl->cfg.max_fall, r->log_floor);
    r->l_global = gnmr__log(ctl->cfg.global_ratio, r->log_floor);
  }
  r->common = 0.0;
  r->global_scale = 1.0;
  r->global = 0;
}

#if GNMR__CTL_AVX512
/* Phase 1's refusal of a finite negative norm (not a rule: rule 0 is a
   norm of exactly 0), sixteen norms at a time; returns how many it looked
   at (the rest go to the scalar loop). */
GNMR__TARGET_AVX512
static uint32_t gnmr__negative16_avx512(const float *norms, uint32_t n,
                                        int *negative) {
  __m512i any = _mm512_setzero_si512();
  uint32_t u;
  for (u = 0; n - u >= 16; u += 16) {
    __m512i bits = _mm512_loadu_si512((const void *)(norms + u));
    __mmask16 bad = _mm512_cmplt_epu32_mask(
        _mm512_sub_epi32(bits, _mm512_set1_epi32((int)0x80000001u)),
        _mm512_set1_epi32(0x7F7FFFFF));
    any = _mm512_mask_set1_epi32(any, bad, 1);
  }
  *negative |= _mm512_test_epi32_mask(any, any) != 0;
  return u;
}
#endif

/* Phase 1, before any rule: NULLs, an uninitialised controller and a finite
   negative norm refuse the whole step, which then changes nothing. */
static GNMR_HOSTDEV int gnmr__step_check(const gnmr_ctl *ctl,
                                         const float *norms, int wide) {
  uint32_t n, u = 0;
  int negative = 0;
  if (!ctl) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  n = ctl->n_units;
  if (n > 0 && !norms) return GNMR_EINVAL;
#if GNMR__CTL_AVX512
  if (wide) u = gnmr__negative16_avx512(norms, n, &negative);
#else
  (void)wide;
#endif
  for (; u < n; u++) {
    /* Finite and below -0: the bits lie in (0x80000000, 0xFF800000). */
    uint32_t bits;
    memcpy(&bits, &norms[u], 4);
    negative |= bits - 0x80000001u < 0x7F7FFFFFu;
  }
  return negative ? GNMR_ENORM : GNMR_OK;
}

/* Phase 2, NOISE mode only, rule N3: every finite unit's dev = L(g) - mu,
   the common deviation c of the settled units (the lower median on the
   grid: the same value in any order of units), the global norm's history
   and the verdict; the rules of phase 3 read c, GLOBAL and the global
   scale. G's sum of squares has one fixed order, so a SIMD or device path
   can give the same bits: blocks of 256 units, eight partial sums in a
   block (unit u into lane u % 8, in order) folded as
   ((0+1)+(2+3))+((4+5)+(6+7)), the blocks' sums added in order. */
static GNMR_HOSTDEV void gnmr__step_common(gnmr_ctl *ctl, gnmr__step_ctx *c,
                                           int wide) {
  gnmr__rules *r = &c->r;
  gnmr_step_report *rep = &c->report;
  gnmr__common_sums sums;
  double sumsq;
  uint32_t settled, up, finite;
  memset(rep, 0, sizeof *rep);
  rep->global_scale = 1.0;
#if GNMR__CTL_AVX512
  if (wide)
    gnmr__common_avx512(c, ctl->cfg.common_min_units,
                        gnmr__grid(ctl->report.common), &sums);
  else
#else
  (void)wide;
#endif
    gnmr__common_scalar(c, ctl->cfg.common_min_units, &sums);
  sumsq = sums.sumsq;
  settled = sums.settled;
  up = sums.up;
  finite = sums.finite;
  if (settled >= ctl->cfg.common_min_units)
    r->common = gnmr__grid_centre(sums.bin);
  gnmr__step_verdict(ctl, r, rep, sumsq, finite, settled, up);
}

/* Phase 3, rules 0-6 and 8-10 (0, N1, N2, N4-N9, 9 and 10) for every unit;
   candidates listed for rule 7. */
static GNMR_HOSTDEV void gnmr__step_units(gnmr__step_ctx *c, int wide) {
  uint32_t u;
#if GNMR__CTL_AVX512
  if (wide) {
    if (c->r.noise)
      gnmr__units_noise_avx512(c);
    else
      gnmr__units_paper_avx512(c);
    return;
  }
#else
  (void)wide;
#endif
  if (c->r.band)
    for (u = 0; u < c->r.n; u++) gnmr__unit_cpu_inline(c, u, 1);
  else
    for (u = 0; u < c->r.n; u++) gnmr__unit_cpu_inline(c, u, 0);
}

/* Phase 4, rule 7: how many candidates fit the slots left free after
   releases and renewals, and those best first in the list. */
static GNMR_HOSTDEV uint32_t gnmr__step_select(gnmr__step_ctx *c,
                                               uint32_t max_recovering) {
  const uint32_t k = gnmr__admit_count(&c->t, max_recovering);
  gnmr__best_first(&c->s, c->s.heap, c->t.candidates, k);
  return k;
}

/* Phase 5, rule 7: the first k listed are admitted (RECOVER, lock L). */
static GNMR_HOSTDEV void gnmr__step_admit(gnmr__step_ctx *c, uint32_t k) {
  uint32_t i;
  for (i = 0; i < k; i++) {
    uint32_t u = c->s.heap[i];
    c->s.lock[u] = c->r.lock_steps;
    c->s.cooldown[u] = 0;
    c->s.score[u] = 0.0;
    c->s.admissions[u]++;
    if (c->out) c->out[u].action = GNMR_ACTION_RECOVER;
  }
}

/* Phase 6, rule 7: the rest stay KEEP, flagged OVER_BUDGET. */
static GNMR_HOSTDEV void gnmr__step_over_budget(gnmr__step_ctx *c, uint32_t k) {
  uint32_t i;
  for (i = k; i < c->t.candidates; i++) {
    uint32_t u = c->s.heap[i];
    c->s.score[u] = 0.0;
    c->s.over_budget[u]++;
    if (c->out) c->out[u].flags |= GNMR_FLAG_OVER_BUDGET;
  }
}

/* Phase 7: the controller's totals and the step's report, from the units'
   tally, the verdict and the k admitted (a device's step ends here too). */
static GNMR_HOSTDEV void gnmr__step_totals(gnmr_ctl *ctl, const gnmr__tally *t,
                                           const gnmr_step_report *rep,
                                           uint32_t k) {
  const uint32_t recovering = t->locked + k;
  ctl->risky += t->risky;
  ctl->nonfinite += t->nonfinite;
  ctl->recovery_steps += t->held;
  ctl->renewals += t->renewed;
  ctl->admissions += k;
  ctl->over_budget += t->candidates - k;
  ctl->recovering = recovering;
  if (recovering > ctl->peak_recovering) ctl->peak_recovering = recovering;
  ctl->steps++;
  ctl->falls += t->falls;
  ctl->absent += t->absent;
  ctl->level_shifts += t->shifts;
  ctl->global_steps += rep->global;
  ctl->report = *rep;
  ctl->report.flagged = (uint32_t)t->risky;
  ctl->report.rises = t->rises;
  ctl->report.falls = t->falls;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_step(gnmr_ctl *ctl, const float *norms,
                                    gnmr_decision *out) {
  gnmr__step_ctx c;
  uint32_t k;
#if GNMR__CTL_AVX512
  const int wide = gnmr_ctl_isa_active() == GNMR_ISA_AVX512;
#else
  const int wide = 0;
#endif
  int rc = gnmr__step_check(ctl, norms, wide);
  if (rc != GNMR_OK) return rc;
  gnmr__rules_of(ctl, &c.r);
  c.s = gnmr__carve(ctl->units, ctl->n_units);
  c.norms = norms;
  c.out = out;
  memset(&c.t, 0, sizeof c.t);
  memset(&c.report, 0, sizeof c.report);
  c.report.global_scale = 1.0;
  if (c.r.noise) gnmr__step_common(ctl, &c, wide);
  /* rule 10 learns from every unit's norm, calm or not: no calm lanes */
  gnmr__step_units(&c, wide && !(c.r.noise && c.r.global) && !c.r.band);
  k = gnmr__step_select(&c, ctl->cfg.max_recovering);
  gnmr__step_admit(&c, k);
  gnmr__step_over_budget(&c, k);
  gnmr__step_totals(ctl, &c.t, &c.report, k);
  gnmr__commit(ctl);
  return GNMR_OK;
}

/* ---- reading the state: recovering, counters, unit and step info, names - */

GNMR_DEF GNMR_HOSTDEV int gnmr_recovering_check(const gnmr_ctl *ctl,
                                                uint32_t u) {
  if (!ctl) return GNMR_EINVAL;
  if (!gnmr__current(ctl)) return GNMR_ESTATE;
  return u < ctl->n_units ? GNMR_OK : GNMR_EINVAL;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_recovering(const gnmr_ctl *ctl, uint32_t u) {
  if (gnmr_recovering_check(ctl, u) != GNMR_OK) return 0; /* the cheap path */
  return gnmr__carve(ctl->units, ctl->n_units).lock[u] > 0;
}

/* The controller's totals, listed once: counters, checkpoint. */
#define GNMR__TOTALS(X)                                                        \
  X(steps, uint64_t, ONE)                                                      \
  X(global_steps, uint64_t, ONE)                                               \
  GNMR__COUNTERS(X)                                                            \
  X(recovering, uint32_t, ONE)                                                 \
  X(peak_recovering, uint32_t, ONE)

GNMR_DEF int gnmr_counters_get(const gnmr_ctl *ctl, uint32_t unit,
                               gnmr_counters *out) {
  gnmr__soa s;
  gnmr_counters t;
  if (!ctl || !out) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  if (unit != GNMR_ALL_UNITS && unit >= ctl->n_units) return GNMR_EINVAL;
  s = gnmr__carve(ctl->units, ctl->n_units);
  memset(&t, 0, sizeof t);
  if (unit == GNMR_ALL_UNITS) {
#define GNMR__TOTAL(name, type, shape) t.name = ctl->name;
    uint32_t u;
    GNMR__TOTALS(GNMR__TOTAL)
#undef GNMR__TOTAL
    for (u = 0; u < ctl->n_units; u++) t.finite_steps += s.finite_steps[u];
  } else {
#define GNMR__OF_UNIT(name, type, shape) t.name = s.name[unit];
    GNMR__COUNTERS(GNMR__OF_UNIT)
#undef GNMR__OF_UNIT
    t.steps = ctl->steps;
    t.global_steps = ctl->global_steps;
    t.finite_steps = s.finite_steps[unit];
    t.recovering = s.lock[unit] > 0;
  }
  *out = t;
  return GNMR_OK;
}

GNMR_DEF int gnmr_unit_info(const gnmr_ctl *ctl, uint32_t u,
                            gnmr_unit_state *out) {
  gnmr_unit_state t;
  gnmr__soa s;
  uint64_t k;
  uint32_t recent;
  if (!ctl || !out) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  if (u >= ctl->n_units) return GNMR_EINVAL;
  gnmr_counters_get(ctl, u, &t.counters);
  s = gnmr__carve(ctl->units, ctl->n_units);
  k = s.finite_steps[u];
  recent = k < ctl->cfg.delta_window ? (uint32_t)k : ctl->cfg.delta_window;
  t.mean = s.mean[u];
  t.window_mean = recent ? s.window_sum[u] / (double)recent : 0.0;
  t.lock_left = s.lock[u];
  t.cooldown_left = s.cooldown[u];
  t.log_mean = s.log_mean[u];
  t.fluct = s.fluct[u];
  t.last_dev = s.last_dev[u];
  t.band_centre = s.band_centre[u];
  t.band_dev = s.band_dev[u];
  t.band_seen = s.band_seen[u];
  t.band_run = s.band_run[u];
  *out = t;
  return GNMR_OK;
}

GNMR_DEF int gnmr_step_info(const gnmr_ctl *ctl, gnmr_step_report *out) {
  if (!ctl || !out) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  *out = ctl->report;
  return GNMR_OK;
}

GNMR_DEF const char *gnmr_action_name(int action) {
  static const char *const names[] = {"KEEP", "RECOVER", "HOLD", "RELEASE"};
  return action >= 0 && action < 4 ? names[action] : "?";
}

static const char *const gnmr__flag_names[] = {
    "RATIO",    "DELTA",  "NONFINITE", "OVER_BUDGET",
    "COOLDOWN", "WARMUP", "RENEWED",   "FALL",
    "GLOBAL",   "ABSENT", "SHIFT",     "BAND"}; /* bit i: 1 << i */
#define GNMR__N_FLAGS (sizeof gnmr__flag_names / sizeof gnmr__flag_names[0])

GNMR_DEF const char *gnmr_flag_name(uint32_t flag) {
  uint32_t i;
  for (i = 0; i < GNMR__N_FLAGS; i++)
    if (flag == 1u << i) return gnmr__flag_names[i];
  return NULL;
}

GNMR_DEF int gnmr_flags_string(uint32_t flags, char *buf, size_t cap) {
  char s[GNMR_FLAGS_STRING_MAX];
  size_t len = 0, i;
  if (!buf) return GNMR_EINVAL;
  for (i = 0; i < GNMR__N_FLAGS; i++) {
    const char *name = gnmr__flag_names[i];
    if (!(flags & (1u << i))) continue;
    if (len) s[len++] = '|';
    while (*name) s[len++] = *name++;
  }
  flags &= ~((1u << GNMR__N_FLAGS) - 1u);
  if (flags) {
    int shift = 28;
    if (len) s[len++] = '|';
    s[len++] = '0';
    s[len++] = 'x';
    while (shift > 0 && !(flags >> shift)) shift -= 4;
    for (; shift >= 0; shift -= 4)
      s[len++] = "0123456789abcdef"[(flags >> shift) & 15u];
  }
  s[len] = '\0';
  if (cap <= len) return GNMR_ESIZE;
  memcpy(buf, s, len + 1);
  return GNMR_OK;
}

/* ---- checkpoint -----------------------------------------------------------
   Little-endian, field by field (never a struct dump), each value as the
   bits of its type:
     header  "GNMRCKPT", u32 version, u32 n_units, u32 GNMR_WINDOW_MAX, u32 0
     config  the fields of GNMR__CONFIG, in order (f64 tau_r, tau_d, beta,
             eps; u32 W, warmup, maxO, L, cooldown, policy)
     totals  GNMR__TOTALS (u64 steps, global_steps, the counters; u32
             recovering, peak)
     global  GNMR__GLOBAL (f64 log-mean, fluctuation, last deviation; u64 k)
     verdict GNMR__REPORT, the last step's (f64 G, L(G) - mu_G, G's ratio,
             c, global scale; u32 settled, flagged, rises, falls, global)
     units   GNMR__UNIT_STATE, unit by unit (f64 mean, window_sum; f32
             window[GNMR_WINDOW_MAX]; u64 k; f64 mu, s, p, the band's c,
             v; u64 the counters, rule 9's run; u32 lock, cooldown, the
             band's observations and run)
     trailer u32 CRC-32 (IEEE) of everything before it: it catches every
             single-bit flip and every burst up to 32 bits.
   A change to a list changes the format: bump GNMR__CKPT_VERSION. Version
   1 (0.1: no NOISE fields) is refused with GNMR_EVERSION rather than
   loaded into PAPER mode: it would set a resumed run's rules by the file,
   not by the caller's config; version 2 (0.2.0: no verdict) too, rather
   than loaded with a verdict the file does not hold; and version 4 (0.6:
   no band, rule 10), whose units have no band to resume. */

#define GNMR__CKPT_VERSION 5u
#define GNMR__CKPT_HEADER 24u
#define GNMR__CFG_BYTES(name, value, valid) /* a term of a sum */              \
  +sizeof(((gnmr_config *)0)->name) /* NOLINT(bugprone-macro-parentheses) */
#define GNMR__CKPT_CONFIG (0 GNMR__CONFIG(GNMR__CFG_BYTES))
#define GNMR__CKPT_TOTALS                                                      \
  (0 GNMR__TOTALS(GNMR__BYTES) GNMR__GLOBAL(GNMR__BYTES)                       \
       GNMR__REPORT(GNMR__BYTES))
#define GNMR__CKPT_UNIT (0 GNMR__UNIT_STATE(GNMR__BYTES))

static const char gnmr__ckpt_magic[8] = {'G', 'N', 'M', 'R',
                                         'C', 'K', 'P', 'T'};

static size_t gnmr__ckpt_size(uint32_t n_units) {
  return GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS +
         (size_t)n_units * GNMR__CKPT_UNIT + 4u;
}

/* A value of 4 or 8 bytes, as its bits, little-endian. */
static unsigned char *gnmr__put(unsigned char *p, const void *v, size_t n) {
  uint64_t bits = 0;
  uint32_t b32;
  size_t i;
  if (n == 4) {
    memcpy(&b32, v, 4);
    bits = b32;
  } else {
    memcpy(&bits, v, 8);
  }
  for (i = 0; i < n; i++) p[i] = (unsigned char)(bits >> (8 * i));
  return p + n;
}
static void gnmr__get(const unsigned char **p, void *v, size_t n) {
  uint64_t bits = 0;
  uint32_t b32;
  size_t i;
  for (i = 0; i < n; i++) bits |= (uint64_t)(*p)[i] << (8 * i);
  b32 = (uint32_t)bits;
  memcpy(v, n == 4 ? (const void *)&b32 : (const void *)&bits, n);
  *p += n;
}
static unsigned char *gnmr__put_u32(unsigned char *p, uint32_t v) {
  return gnmr__put(p, &v, 4);
}
static uint32_t gnmr__get_u32(const unsigned char **p) {
  uint32_t v;
  gnmr__get(p, &v, 4);
  return v;
}

static uint32_t gnmr__crc32(const unsigned char *p, size_t n) {
  uint32_t table[256], crc = 0xFFFFFFFFu;
  uint32_t i;
  for (i = 0; i < 256; i++) {
    uint32_t c = i;
    int j;
    for (j = 0; j < 8; j++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    table[i] = c;
  }
  while (n--) crc = table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

/* NOISE mode's statistics within what the rules can reach: |mu| stays
   within the range of L (a convex mix of L values, |L| < 710 for any
   double the rules read), |d| and so |p| below 2 * 710 + 8, s below
   twice that; the bounds keep every step's arithmetic finite. */
static int gnmr__noise_valid(double mu, double s, double p, uint64_t k) {
  return gnmr__finite64(mu) && gnmr__finite64(s) && gnmr__finite64(p) &&
         fabs(mu) <= 1024.0 && s >= 0.0 && s <= 8192.0 && fabs(p) <= 4096.0 &&
         k <= GNMR__K_MAX;
}

/* Rule 9's run: none (both words 0), or len flagged observations ending at
   k = at <= the unit's k (at and k modulo 2^48 when k is that large), g
   within [lo, hi], positive and finite; FALL runs only in NOISE mode. (len
   may reach P after a gnmr_reconfigure: the next flagged step judges it.) */
static int gnmr__shift_valid(const gnmr__unit_state *s, const gnmr_config *c) {
  const uint64_t w = s->shift_run[0], span = s->shift_run[1];
  const uint64_t at = w & GNMR__RUN_K;
  const uint32_t len = GNMR__RUN_LEN(w);
  const float lo = gnmr__run_bound(span, 0), hi = gnmr__run_bound(span, 1);
  if (len == 0) return w == 0 && span == 0;
  return (s->finite_steps > GNMR__RUN_K ||
          (at >= len && at <= s->finite_steps)) &&
         len <= GNMR_SHIFT_STEPS_MAX && gnmr__observed32(lo) &&
         gnmr__observed32(hi) && lo > 0.0f && lo <= hi &&
         GNMR__RUN_FALL(w) <= (c->rule == GNMR_RULE_NOISE ? 1u : 0u);
}

/* Rule 10's state: all 0 while the band is off; else c and v finite,
   within what L of a float or of eps gives (|c| <= 710, v <= 2 * 710, so
   below 2048 with room), v 0 until a second observation, c too until a
   first, and the run within band_steps. */
static int gnmr__band_valid(const gnmr__unit_state *s, const gnmr_config *c) {
  if (c->band_k == 0.0)
    return s->band_centre == 0.0 && s->band_dev == 0.0 && s->band_seen == 0 &&
           s->band_run == 0;
  return gnmr__finite64(s->band_centre) && fabs(s->band_centre) <= 1024.0 &&
         gnmr__finite64(s->band_dev) && s->band_dev >= 0.0 &&
         s->band_dev <= 2048.0 && (s->band_seen > 1 || s->band_dev == 0.0) &&
         (s->band_seen > 0 || s->band_centre == 0.0) &&
         s->band_run <= c->band_steps;
}

/* 1 if a unit's state could have come from gnmr_step under config c. */
static int gnmr__unit_valid(const gnmr__unit_state *s, const gnmr_config *c) {
  const float cap = gnmr__window_value(c->ratio_threshold);
  uint32_t i, filled, recent;
  double sum = 0.0;
  filled = s->finite_steps < GNMR_WINDOW_MAX ? (uint32_t)s->finite_steps
                                             : GNMR_WINDOW_MAX;
  /* 2^62 observations are out of reach of any run; beyond, k + 1 and the
     ring arithmetic would no longer be exact. */
  if (!gnmr__finite64(s->mean) || s->mean < 0.0 ||
      !gnmr__finite64(s->window_sum) || s->finite_steps > GNMR__K_MAX ||
      s->lock > c->lock_steps || s->cooldown > c->cooldown_steps ||
      (s->lock > 0 && s->cooldown > 0))
    return 0;
  /* NOISE mode never writes the paper rules' mean and window (they start
     at zero and stay there while k counts on): anything else there would
     not match k on a later step. */
  if (c->rule == GNMR_RULE_NOISE) {
    if (s->mean != 0.0 || s->window_sum != 0.0) return 0;
    filled = 0; /* every window entry must be 0 */
  }
  for (i = 0; i < GNMR_WINDOW_MAX; i++) {
    float r = s->window[i];
    uint32_t bits;
    memcpy(&bits, &r, 4);
    if (i < filled ? !gnmr__finite32(r) || r < 0.0f || r > cap
                   : (bits & 0x7FFFFFFFu) != 0)
      return 0;
  }
  /* The running sum is the exact sum of the last min(k, W) ratios (added
     oldest first) whenever k is a multiple of 16 (the step re-adds it once
     per lap, gnmr_reconfigure whenever it runs); each step in between adds
     at most two roundings of a value below (W + 2) cap. So after j = k mod
     16 steps it is within j (W + 2) cap 2^-52: a bound a loaded state
     keeps on every later step, so what was loaded can always be saved. */
  recent = s->finite_steps < c->delta_window ? (uint32_t)s->finite_steps
                                             : c->delta_window;
  for (i = recent; i > 0; i--)
    sum += (double)s->window[(s->finite_steps - i) & GNMR__RING];
  if (!(fabs(s->window_sum - sum) <=
        (double)(s->finite_steps & GNMR__RING) * (double)(c->delta_window + 2) *
            (double)cap * 2.220446049250313e-16 /* 2^-52 */))
    return 0;
  if (!gnmr__shift_valid(s, c) || !gnmr__band_valid(s, c)) return 0;
  return gnmr__noise_valid(s->log_mean, s->fluct, s->last_dev, s->finite_steps);
}

/* A verdict a step can write over n units: counts within n, G finite,
   its ratio the library's exp of its deviation (or all three 0: no finite
   unit, PAPER mode, or no step yet), c on the grid's range, a global scale
   in [0, 1] and 1 unless GLOBAL. */
static int gnmr__report_valid(const gnmr_step_report *r, uint32_t n) {
  double ratio = 0.0;
  if (!gnmr__finite64(r->global_dev) || fabs(r->global_dev) > 4096.0) return 0;
  if (r->global_norm != 0.0 || r->global_dev != 0.0 || r->global_ratio != 0.0)
    ratio = gnmr__exp(r->global_dev);
  return gnmr__finite64(r->global_norm) && r->global_norm >= 0.0 &&
         r->global_ratio == ratio && gnmr__finite64(r->common) &&
         fabs(r->common) <= 8.0 && r->global_scale >= 0.0 &&
         r->global_scale <= 1.0 && r->global <= 1u &&
         (r->global || r->global_scale == 1.0) && r->settled <= n &&
         r->flagged <= n && r->rises <= r->flagged &&
         r->falls <= r->flagged - r->rises && r->reserved_ == 0u;
}

/* Totals a checkpoint can carry: recovering = the units locked. */
static int gnmr__totals_valid(const gnmr_ctl *t, uint32_t locked) {
  return t->recovering == locked && t->recovering <= t->peak_recovering &&
         t->peak_recovering <= t->n_units && t->global_steps <= t->steps &&
         gnmr__noise_valid(t->global_log_mean, t->global_fluct,
                           t->global_last_dev, t->global_k) &&
         gnmr__report_valid(&t->report, t->n_units);
}

GNMR_DEF size_t gnmr_checkpoint_size(const gnmr_ctl *ctl) {
  if (!ctl || !gnmr__usable(ctl)) return 0;
  return gnmr__ckpt_size(ctl->n_units);
}

GNMR_DEF int gnmr_checkpoint_save(const gnmr_ctl *ctl, void *buf, size_t cap,
                                  size_t *written) {
  const gnmr_config *c;
  gnmr__soa units;
  unsigned char *p;
  size_t size;
  uint32_t u, i, locked = 0;
  if (!ctl || !written) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  c = &ctl->cfg;
  units = gnmr__carve(ctl->units, ctl->n_units);
  /* Never a checkpoint gnmr_checkpoint_load would refuse. */
  for (u = 0; u < ctl->n_units; u++) {
    gnmr__unit_state st;
    gnmr__unit_get(&units, ctl->n_units, u, &st);
    if (!gnmr__unit_valid(&st, c)) return GNMR_ESTATE;
    locked += st.lock > 0;
  }
  if (!gnmr__totals_valid(ctl, locked)) return GNMR_ESTATE;
  size = gnmr__ckpt_size(ctl->n_units);
  *written = size;
  if (!buf) return GNMR_OK;
  if (cap < size) return GNMR_ESIZE;
  p = (unsigned char *)buf;
  memcpy(p, gnmr__ckpt_magic, 8);
  p = gnmr__put_u32(p + 8, GNMR__CKPT_VERSION);
  p = gnmr__put_u32(p, ctl->n_units);
  p = gnmr__put_u32(p, GNMR_WINDOW_MAX);
  p = gnmr__put_u32(p, 0);
#define GNMR__PUT_CFG(name, value, valid)                                      \
  p = gnmr__put(p, &c->name, sizeof c->name);
  GNMR__CONFIG(GNMR__PUT_CFG)
#undef GNMR__PUT_CFG
#define GNMR__PUT_TOTAL(name, type, shape)                                     \
  p = gnmr__put(p, &ctl->name, sizeof(type));
  GNMR__TOTALS(GNMR__PUT_TOTAL)
  GNMR__GLOBAL(GNMR__PUT_TOTAL)
#undef GNMR__PUT_TOTAL
#define GNMR__PUT_REPORT(name, type, shape)                                    \
  p = gnmr__put(p, &ctl->report.name, sizeof(type));
  GNMR__REPORT(GNMR__PUT_REPORT)
#undef GNMR__PUT_REPORT
  for (u = 0; u < ctl->n_units; u++) {
    gnmr__unit_state st;
    gnmr__unit_get(&units, ctl->n_units, u, &st);
#define GNMR__PUT_UNIT(name, type, shape)                                      \
  GNMR__EACH(shape)                                                            \
  p = gnmr__put(p, &GNMR__AT_##shape(st.name, i), sizeof(type));
    GNMR__UNIT_STATE(GNMR__PUT_UNIT)
#undef GNMR__PUT_UNIT
  }
  p = gnmr__put_u32(p, gnmr__crc32((const unsigned char *)buf,
                                   (size_t)(p - (unsigned char *)buf)));
  GNMR_ASSERT((size_t)(p - (unsigned char *)buf) == size);
  return GNMR_OK;
}

/* Validates a checkpoint into t (config, totals), then, if apply, writes
   its units into ctl's slots. */
static int gnmr__ckpt_read(const gnmr_ctl *ctl, gnmr_ctl *t,
                           const unsigned char *buf, size_t len, int apply) {
  const unsigned char *p = buf;
  gnmr_config *c = &t->cfg;
  gnmr__soa units;
  uint32_t n, u, i, locked = 0;
  uint64_t k_max = 0;
  if (len < GNMR__CKPT_HEADER) return GNMR_ESIZE;
  if (memcmp(p, gnmr__ckpt_magic, 8) != 0) return GNMR_ECORRUPT;
  p += 8;
  if (gnmr__get_u32(&p) != GNMR__CKPT_VERSION) return GNMR_EVERSION;
  n = gnmr__get_u32(&p);
  if (n > (SIZE_MAX - gnmr__ckpt_size(0)) / GNMR__CKPT_UNIT ||
      len != gnmr__ckpt_size(n))
    return GNMR_ESIZE;
  p = buf + len - 4;
  if (gnmr__crc32(buf, len - 4) != gnmr__get_u32(&p)) return GNMR_ECORRUPT;
  p = buf + 16;
  if (gnmr__get_u32(&p) != GNMR_WINDOW_MAX || gnmr__get_u32(&p) != 0)
    return GNMR_ECORRUPT;
  if (n != ctl->n_units) return GNMR_EMISMATCH;
  memset(t, 0, sizeof *t);
  t->n_units = n;
#define GNMR__GET_CFG(name, value, valid)                                      \
  gnmr__get(&p, &c->name, sizeof c->name);
  GNMR__CONFIG(GNMR__GET_CFG)
#undef GNMR__GET_CFG
  if (gnmr_config_check(c, n, NULL) != GNMR_OK) return GNMR_ECORRUPT;
#define GNMR__GET_TOTAL(name, type, shape)                                     \
  gnmr__get(&p, &t->name, sizeof(type));
  GNMR__TOTALS(GNMR__GET_TOTAL)
  GNMR__GLOBAL(GNMR__GET_TOTAL)
#undef GNMR__GET_TOTAL
#define GNMR__GET_REPORT(name, type, shape)                                    \
  gnmr__get(&p, &t->report.name, sizeof(type));
  GNMR__REPORT(GNMR__GET_REPORT)
#undef GNMR__GET_REPORT
  units = gnmr__carve(ctl->units, n);
  for (u = 0; u < n; u++) {
    gnmr__unit_state st;
    memset(&st, 0, sizeof st);
#define GNMR__GET_UNIT(name, type, shape)                                      \
  GNMR__EACH(shape) gnmr__get(&p, &GNMR__AT_##shape(st.name, i), sizeof(type));
    GNMR__UNIT_STATE(GNMR__GET_UNIT)
#undef GNMR__GET_UNIT
    if (!gnmr__unit_valid(&st, c)) return GNMR_ECORRUPT;
    locked += st.lock > 0;
    if (st.finite_steps > k_max) k_max = st.finite_steps;
    if (apply) gnmr__unit_set(&units, n, u, &st);
  }
  /* NOISE mode: G observes every step on which any unit does (rule N3),
     so no unit has more observations than G. */
  if (c->rule == GNMR_RULE_NOISE && k_max > t->global_k) return GNMR_ECORRUPT;
  return gnmr__totals_valid(t, locked) ? GNMR_OK : GNMR_ECORRUPT;
}

GNMR_DEF int gnmr_checkpoint_load(gnmr_ctl *ctl, const void *buf, size_t len) {
  gnmr_ctl t;
  int rc;
  if (!ctl || !buf) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  /* Validate everything first: a refused load changes nothing. */
  rc = gnmr__ckpt_read(ctl, &t, (const unsigned char *)buf, len, 0);
  if (rc != GNMR_OK) return rc;
  gnmr__ckpt_read(ctl, &t, (const unsigned char *)buf, len, 1);
  ctl->cfg = t.cfg;
  ctl->full_weight_from = gnmr__full_weight_from(t.cfg.history_decay);
  ctl->fluct_full_from = gnmr__full_weight_from(t.cfg.fluct_decay);
#define GNMR__SET_TOTAL(name, type, shape) ctl->name = t.name;
  GNMR__TOTALS(GNMR__SET_TOTAL)
  GNMR__GLOBAL(GNMR__SET_TOTAL)
#undef GNMR__SET_TOTAL
  ctl->report = t.report;
  gnmr__commit(ctl);
  return GNMR_OK;
}

GNMR_DEF int gnmr_checkpoint_config(const gnmr_ctl *ctl, const void *buf,
                                    size_t len, gnmr_config *out,
                                    const char **differs) {
  gnmr_ctl t;
  const char *first = NULL;
  int rc;
  if (!ctl || !buf) return GNMR_EINVAL;
  if (!gnmr__usable(ctl)) return GNMR_ESTATE;
  rc = gnmr__ckpt_read(ctl, &t, (const unsigned char *)buf, len, 0);
  if (rc != GNMR_OK) return rc;
#define GNMR__DIFFERS(name, value, valid)                                      \
  if (!first && memcmp(&t.cfg.name, &ctl->cfg.name, sizeof t.cfg.name) != 0)   \
    first = #name;
  /* bit for bit, as the checkpoint stores them (every field is finite) */
  GNMR__CONFIG(GNMR__DIFFERS) /* NOLINT(bugprone-suspicious-memory-comparison,
                                 cert-exp42-c,cert-flp37-c) */
#undef GNMR__DIFFERS
  if (out) *out = t.cfg;
  if (differs) *differs = first;
  return GNMR_OK;
}

/* ---- placement --------------------------------------------------------------
   Rules P1-P7 (top of this file). The step is plain C on doubles, every
   product through gnmr__mul: the host and a CUDA device (one thread,
   examples/cuda/gnmr_ctl.cuh) give the same bits. */

#define GNMR__PLACE_MAGIC 0x504d4e47u /* "GNMP" */
#define GNMR__PLACE_VERSION 2u        /* 2: planned_steps, gemms (0.5) */

static int gnmr__place_share(double x) {
  return gnmr__finite64(x) && x >= 0.0 && x < 1.0;
}

/* Every field of gnmr_place_config with its default and its valid range,
   listed once (defaults, check, checkpoint). The level's defaults,
   fire_level and fall_ratio, were read off one trace of the LM demo's
   uncontrolled low-precision run (bench/RESULTS.md, "Placement").
   planned_steps 0: not told; gemms: the whole unit (the manual's
   table). */
#define GNMR__PLACE_CONFIG(X)                                                  \
  X(budget, 0.1, gnmr__finite_above(c->budget, 0.0) && c->budget <= 1.0)       \
  X(update_decay, 0.95, gnmr__place_share(c->update_decay))                    \
  X(fire_level, 0.05, gnmr__place_share(c->fire_level))                        \
  X(fall_ratio, 0.6, gnmr__place_share(c->fall_ratio))                         \
  X(fast_decay, 0.9, gnmr__place_share(c->fast_decay))                         \
  X(slow_decay, 0.99, gnmr__place_share(c->slow_decay))                        \
  X(warmup_steps, 50, 1)                                                       \
  X(planned_steps, 0, 1)                                                       \
  X(gemms, GNMR_GEMM_ALL, c->gemms >= 1 && c->gemms <= GNMR_GEMM_ALL)          \
  X(serve, GNMR_SERVE_HIGH,                                                    \
    c->serve == GNMR_SERVE_HIGH ||                                             \
        (c->serve == GNMR_SERVE_LOW && (c->gemms & ~GNMR_GEMM_FWD) != 0u))

GNMR_DEF gnmr_place_config gnmr_place_config_default(void) {
  gnmr_place_config c;
#define GNMR__DEFAULT(name, value, valid) c.name = value;
  GNMR__PLACE_CONFIG(GNMR__DEFAULT)
#undef GNMR__DEFAULT
  return c;
}

GNMR_DEF int gnmr_place_config_check(const gnmr_place_config *c,
                                     const char **field) {
  const char *bad = NULL;
  if (!c) return GNMR_EINVAL;
#define GNMR__CHECK(name, value, valid)                                        \
  if (!bad && !(valid)) bad = #name;
  GNMR__PLACE_CONFIG(GNMR__CHECK)
#undef GNMR__CHECK
  if (field) *field = bad;
  return bad ? GNMR_ECONFIG : GNMR_OK;
}

/* A block of n gnmr_place_unit is laid out as a header (gen, n), then one
   array per field of GNMR__PLACE_UNIT in its order (the n costs, then the
   n updates, ...), each array aligned to its type. */
#define GNMR__PLACE_SIZE_OK(name, type)                                        \
  &&(sizeof(type) == 8 || sizeof(type) == 4)
GNMR__STATIC_ASSERT(gnmr__place_fields_align,
                    1 GNMR__PLACE_UNIT(GNMR__PLACE_SIZE_OK));
#define GNMR__PLACE_POINTER(name, type) type *name;
typedef struct gnmr__place_soa {
  GNMR__PLACE_UNIT(GNMR__PLACE_POINTER)
} gnmr__place_soa;

static GNMR_HOSTDEV uint32_t *gnmr__place_header(const gnmr_place *pl) {
  return (uint32_t *)(void *)pl->units; /* gen, n_units */
}

static GNMR_HOSTDEV gnmr__place_soa gnmr__place_carve(const gnmr_place *pl) {
  gnmr__place_soa s;
  const size_t n = pl->n_units;
  unsigned char *p = (unsigned char *)(void *)pl->units + 8;
#define GNMR__PLACE_CARVE(name, type)                                          \
  s.name = (type *)(void *)p;                                                  \
  p += sizeof(type) * n;
  GNMR__PLACE_UNIT(GNMR__PLACE_CARVE)
#undef GNMR__PLACE_CARVE
  (void)p;
  return s;
}

/* Unit j's fields, and back. */
static void gnmr__place_unit_get(const gnmr_place *pl, uint32_t j,
                                 gnmr_place_unit_state *out) {
  const gnmr__place_soa s = gnmr__place_carve(pl);
#define GNMR__PLACE_GET(name, type) out->name = s.name[j];
  GNMR__PLACE_UNIT(GNMR__PLACE_GET)
#undef GNMR__PLACE_GET
}
static void gnmr__place_unit_set(const gnmr_place *pl, uint32_t j,
                                 const gnmr_place_unit_state *in) {
  const gnmr__place_soa s = gnmr__place_carve(pl);
#define GNMR__PLACE_SET(name, type) s.name[j] = in->name;
  /* s holds pointers into the unit block: the stores are the point */
  /* cppcheck-suppress unreadVariable */
  GNMR__PLACE_UNIT(GNMR__PLACE_SET)
#undef GNMR__PLACE_SET
}

/* The placer's guard, as the controller's (gnmr__seal): gen advances with
   every change and is kept in the units' header, so a struct copy whose
   twin has stepped finds another value there; the seal hashes the config
   and what a step trusts without re-checking it, so a placer edited by
   hand does not match it. */
static GNMR_HOSTDEV uint64_t gnmr__place_seal(const gnmr_place *pl) {
  const gnmr_place_config *c = &pl->cfg;
  uint64_t h = GNMR__PLACE_MAGIC, k = UINT64_C(0xD6E8FEB86659FD93);
#define GNMR__PLACE_MIX(name, value, valid)                                    \
  gnmr__mix(&h, &k, &c->name, sizeof c->name);
  GNMR__PLACE_CONFIG(GNMR__PLACE_MIX)
#undef GNMR__PLACE_MIX
  gnmr__mix(&h, &k, &pl->n_units, 4);
  gnmr__mix(&h, &k, &pl->n_fired, 4);
  gnmr__mix(&h, &k, &pl->total, 8);
  gnmr__mix(&h, &k, &pl->earn, 8);
  gnmr__mix(&h, &k, &pl->gen, 8);
  return h;
}

static GNMR_HOSTDEV int gnmr__place_ok(const gnmr_place *pl) {
  return pl->magic == GNMR__PLACE_MAGIC && pl->units && pl->n_units >= 1 &&
         gnmr__place_header(pl)[0] == (uint32_t)pl->gen &&
         gnmr__place_header(pl)[1] == pl->n_units &&
         (pl->n_fired == 0 || pl->n_fired == pl->n_units) &&
         pl->seal == gnmr__place_seal(pl);
}

/* After every change of state. */
static GNMR_HOSTDEV void gnmr__place_commit(gnmr_place *pl) {
  pl->gen++;
  gnmr__place_header(pl)[0] = (uint32_t)pl->gen;
  gnmr__place_header(pl)[1] = pl->n_units;
  pl->seal = gnmr__place_seal(pl);
}

GNMR_DEF int gnmr_place_init(gnmr_place *pl, const gnmr_place_config *cfg,
                             gnmr_place_unit *units, const double *costs,
                             uint32_t n) {
  double total = 0.0;
  uint32_t u;
  if (!pl || !cfg || !units || !costs || n == 0) return GNMR_EINVAL;
  if (gnmr_place_config_check(cfg, NULL) != GNMR_OK) return GNMR_ECONFIG;
  for (u = 0; u < n; u++) {
    if (!gnmr__finite_above(costs[u], 0.0)) return GNMR_EINVAL;
    total += costs[u];
  }
  if (!gnmr__finite64(total)) return GNMR_EINVAL;
  memset(pl, 0, sizeof *pl);
  pl->cfg = *cfg;
  pl->units = units;
  pl->n_units = n;
  pl->total = total;
  pl->earn = gnmr__mul(cfg->budget, total);
  pl->credit = pl->earn; /* the first step's, spent on nothing */
  pl->fired_step = UINT64_MAX;
  memset(units, 0, sizeof *units * n);
  memcpy(gnmr__place_carve(pl).cost, costs, sizeof *costs * n);
  pl->magic = GNMR__PLACE_MAGIC;
  gnmr__place_commit(pl);
  return GNMR_OK;
}

/* Rule P5's order: r / max (0 for a unit with no maximum yet), lowest
   first, ties by the lower index: a strict total order, so the heap sort
   below gives what a stable sort would. */
static GNMR_HOSTDEV double gnmr__place_key(double ratio, double ratio_max) {
  return ratio_max > 0.0 ? ratio / ratio_max : 0.0;
}
static GNMR_HOSTDEV int gnmr__place_before(const gnmr__place_soa *s, uint32_t a,
                                           uint32_t b) {
  const double ka = gnmr__place_key(s->ratio[a], s->ratio_max[a]),
               kb = gnmr__place_key(s->ratio[b], s->ratio_max[b]);
  return ka < kb || (ka == kb && a < b);
}
static GNMR_HOSTDEV void gnmr__place_sift(const gnmr__place_soa *s,
                                          uint64_t root, uint64_t end) {
  uint32_t *o = s->order;
  for (;;) {
    uint64_t child = 2 * root + 1;
    uint32_t t;
    if (child >= end) return;
    if (child + 1 < end && gnmr__place_before(s, o[child], o[child + 1]))
      child++;
    if (!gnmr__place_before(s, o[root], o[child])) return;
    t = o[root];
    o[root] = o[child];
    o[child] = t;
    root = child;
  }
}
/* P5's fire, with or without a plan: every unit, for good, in P5's order,
   and the step it fired at. */
static GNMR_HOSTDEV void gnmr__place_fire(gnmr_place *pl) {
  const gnmr__place_soa s = gnmr__place_carve(pl);
  const uint32_t n = pl->n_units;
  uint32_t *o = s.order, u;
  for (u = 0; u < n; u++) o[u] = u;
  for (u = n / 2; u-- > 0;) gnmr__place_sift(&s, u, n);
  for (u = n; u > 1; u--) {
    const uint32_t t = o[0];
    o[0] = o[u - 1];
    o[u - 1] = t;
    gnmr__place_sift(&s, 0, u - 1);
  }
  pl->n_fired = n;
  pl->fired_step = pl->steps;
}

/* P1's refusal: a finite negative signal (-0 and -Inf are not), told by
   the bits; one pass without an early exit. */
static GNMR_HOSTDEV int gnmr__place_negative(const double *x, uint32_t n) {
  uint32_t u, bad = 0;
  for (u = 0; u < n; u++) {
    uint64_t b;
    memcpy(&b, &x[u], 8);
    /* sign set, magnitude in (0, Inf): b in (0x8000..0, 0xFFF0..0) */
    bad |= (uint32_t)(b - UINT64_C(0x8000000000000001) <
                      UINT64_C(0x7FEFFFFFFFFFFFFF));
  }
  return bad != 0;
}

/* P2 and P3's terms for unit u: 1 if it is observed, with *term its
   c r / M (0 when M is 0) and *cost its c (0 when M is 0). */
static GNMR_HOSTDEV int gnmr__place_unit(const gnmr__place_soa *s, uint32_t u,
                                         double a, double q, double wu,
                                         double wa, double *term,
                                         double *cost) {
  double m, r;
  *term = 0.0;
  *cost = 0.0;
  if (!gnmr__finite64(a) || !gnmr__finite64(q) || !(q > 0.0)) return 0;
  m = s->seen[u] ? gnmr__mul(wu, s->update[u]) + gnmr__mul(wa, a) : a;
  r = m / q;
  if (!gnmr__finite64(r)) return 0;
  s->update[u] = m;
  s->ratio[u] = r;
  if (r > s->ratio_max[u]) s->ratio_max[u] = r;
  s->seen[u]++;
  if (s->ratio_max[u] > 0.0) { /* P3 */
    *term = gnmr__mul(s->cost[u], r) / s->ratio_max[u];
    *cost = s->cost[u];
  }
  return 1;
}

/* P1: a finite negative signal in either array refuses the step whole,
   before any change. */
static GNMR_HOSTDEV int gnmr__place_refused(const double *update,
                                            const double *qerr, uint32_t n) {
  return gnmr__place_negative(update, n) || gnmr__place_negative(qerr, n);
}

/* P2-P5 over the units (the run has not fired). The sums in unit order: a
   unit not counted adds +0, which leaves a sum >= +0 as it was. */
static GNMR_HOSTDEV void
gnmr__place_observe(gnmr_place *pl, const double *update, const double *qerr) {
  const gnmr__place_soa s = gnmr__place_carve(pl);
  const gnmr_place_config *c = &pl->cfg;
  const double wu = c->update_decay, wa = 1.0 - c->update_decay;
  double sum = 0.0, weight = 0.0;
  uint32_t u;
  for (u = 0; u < pl->n_units; u++) { /* P2, P3 */
    double term, cost;
    if (gnmr__place_unit(&s, u, update[u], qerr[u], wu, wa, &term, &cost)) {
      sum += term;
      weight += cost;
    }
  }
  /* sum is finite but where a term's c r overflowed (r near DBL_MAX) */
  if (weight > 0.0 && gnmr__finite64(sum)) {
    const double x = sum / weight;
    if (pl->level_seen) { /* P4 */
      pl->level_fast = gnmr__mul(c->fast_decay, pl->level_fast) +
                       gnmr__mul(1.0 - c->fast_decay, x);
      pl->level_slow = gnmr__mul(c->slow_decay, pl->level_slow) +
                       gnmr__mul(1.0 - c->slow_decay, x);
    } else {
      pl->level_fast = x;
      pl->level_slow = x;
    }
    pl->level = x;
    pl->level_seen++;
    if (c->planned_steps == 0 && pl->level_seen > c->warmup_steps && /* P5 */
        (x < c->fire_level ||
         pl->level_fast < gnmr__mul(c->fall_ratio, pl->level_slow)))
      gnmr__place_fire(pl);
  }
}

/* The GEMMs a fired unit runs high-fidelity: cfg.gemms, less the forward
   GEMM for a model served on the low format. */
static GNMR_HOSTDEV uint32_t gnmr__place_gemms(const gnmr_place *pl) {
  return pl->cfg.serve == GNMR_SERVE_LOW ? pl->cfg.gemms & ~GNMR_GEMM_FWD
                                         : pl->cfg.gemms;
}

/* What a fired unit of cost c pays a step: its GEMMs' share of c (c
   itself for all three). */
static GNMR_HOSTDEV double gnmr__place_pay(const gnmr_place *pl, double c) {
  const uint32_t g = gnmr__place_gemms(pl);
  const double k = (double)((g & 1u) + (g >> 1 & 1u) + (g >> 2 & 1u));
  return k == 3.0 ? c : gnmr__mul(c, k) / 3.0;
}

/* P5 with a plan T (call t = pl->steps decides step t + 1): R = T - 1 - t
   steps are left. Due when the credit now, with what R - 1 more steps
   earn, pays the fired units' S on each of them: credit + (R - 1) B C >=
   R S (less a relative 1e-9: rounding); or S <= B C (every step pays for
   itself); or R = 0 (past the plan). */
static GNMR_HOSTDEV int gnmr__place_due(const gnmr_place *pl, double credit) {
  const double S = gnmr__place_pay(pl, pl->total);
  const uint64_t t = pl->steps, T = pl->cfg.planned_steps;
  if (t + 1 >= T || S <= pl->earn) return 1;
  /* the credit, a sum of t + 2 earnings, may fall short of its exact
     value by their rounding: a relative 1e-9 absorbs it */
  return (credit - pl->earn) / (S - pl->earn) >=
         (double)(T - 1 - t) * (1.0 - 1e-9);
}

/* Rule P7: told the plan T, the call of step t >= T - 1 decides a step
   past the plan. */
static GNMR_HOSTDEV int gnmr__place_past_plan(const gnmr_place *pl) {
  return pl->cfg.planned_steps != 0 &&
         pl->steps + 1 >= (uint64_t)pl->cfg.planned_steps;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_place_step(gnmr_place *pl, const double *update,
                                          const double *qerr, uint8_t *high) {
  double credit;
  uint32_t n;
  if (!pl || !update || !qerr) return GNMR_EINVAL;
  if (!gnmr__place_ok(pl)) return GNMR_ESTATE;
  n = pl->n_units;
  if (gnmr__place_refused(update, qerr, n)) return GNMR_ENORM; /* P1 */
  if (pl->n_fired == 0) gnmr__place_observe(pl, update, qerr);
  credit = pl->credit + pl->earn;             /* P6 */
  if (!(credit <= DBL_MAX)) credit = DBL_MAX; /* saturates: stays finite */
  if (pl->n_fired == 0 && pl->cfg.planned_steps &&
      gnmr__place_due(pl, credit)) /* P5 with a plan */
    gnmr__place_fire(pl);
  if (pl->n_fired == 0) { /* every unit low: its high is 0 since init */
    if (high) memset(high, 0, n);
  } else if (gnmr__place_past_plan(pl)) { /* P7: the placement stays */
    const gnmr__place_soa s = gnmr__place_carve(pl);
    if (high) {
      uint32_t u;
      for (u = 0; u < n; u++) high[u] = (uint8_t)s.high[u];
    }
  } else { /* every unit fired: each visited once, in firing order */
    const gnmr__place_soa s = gnmr__place_carve(pl);
    const uint32_t gemms = gnmr__place_gemms(pl);
    /* P7: the last planned step's pays what rounding alone leaves short */
    const double slack =
        pl->cfg.planned_steps != 0 &&
                pl->steps + 2 == (uint64_t)pl->cfg.planned_steps
            ? 1e-9
            : 0.0;
    uint32_t k;
    for (k = 0; k < n; k++) {
      const uint32_t v = s.order[k];
      const double pay = gnmr__place_pay(pl, s.cost[v]);
      const uint32_t on = credit >= pay - gnmr__mul(slack, pay) ? gemms : 0u;
      if (on) credit = credit > pay ? credit - pay : 0.0;
      s.high[v] = on;
      if (high) high[v] = (uint8_t)on;
    }
  }
  pl->credit = credit;
  pl->steps++;
  gnmr__place_commit(pl);
  return GNMR_OK;
}

GNMR_DEF GNMR_HOSTDEV int gnmr_place_high(const gnmr_place *pl, uint32_t u) {
  if (!pl || !gnmr__place_ok(pl) || u >= pl->n_units) return 0;
  return (int)gnmr__place_carve(pl).high[u];
}

GNMR_DEF int gnmr_place_unit_info(const gnmr_place *pl, uint32_t u,
                                  gnmr_place_unit_state *out) {
  if (!pl || !out) return GNMR_EINVAL;
  if (!gnmr__place_ok(pl)) return GNMR_ESTATE;
  if (u >= pl->n_units) return GNMR_EINVAL;
  gnmr__place_unit_get(pl, u, out);
  return GNMR_OK;
}

GNMR_DEF int gnmr_place_info(const gnmr_place *pl, gnmr_place_report *out) {
  double cost = 0.0;
  uint32_t u;
  gnmr__place_soa s;
  if (!pl || !out) return GNMR_EINVAL;
  if (!gnmr__place_ok(pl)) return GNMR_ESTATE;
  s = gnmr__place_carve(pl);
  for (u = 0; u < pl->n_units; u++)
    if (s.high[u]) cost += gnmr__place_pay(pl, s.cost[u]);
  out->steps = pl->steps;
  out->fired_step = pl->fired_step;
  out->level = pl->level;
  out->credit = pl->credit;
  out->high_cost = cost;
  out->high_share = cost / pl->total;
  return GNMR_OK;
}

/* The placer's checkpoint: magic, version, n; the config (serve where
   version 2 before 0.6 wrote a reserved 0: GNMR_SERVE_HIGH, the same);
   the placer's state; each unit's state; CRC-32 of all before it. Each
   value as the little-endian bits of its type. A change to a list changes
   the format: bump GNMR__PLACE_VERSION. */
#define GNMR__PLACE_STATE(X)                                                   \
  X(n_fired, uint32_t)                                                         \
  X(reserved_, uint32_t)                                                       \
  X(total, double)                                                             \
  X(earn, double)                                                              \
  X(credit, double)                                                            \
  X(level, double)                                                             \
  X(level_fast, double)                                                        \
  X(level_slow, double)                                                        \
  X(steps, uint64_t)                                                           \
  X(level_seen, uint64_t)                                                      \
  X(fired_step, uint64_t)
#define GNMR__PLACE_CFG_BYTES(name, value, valid)                              \
  +sizeof(((gnmr_place_config *)0)->name) /* NOLINT */
#define GNMR__PLACE_HEADER 16u
#define GNMR__PLACE_FIXED                                                      \
  (GNMR__PLACE_HEADER + (0 GNMR__PLACE_CONFIG(GNMR__PLACE_CFG_BYTES)) +        \
   (0 GNMR__PLACE_STATE(GNMR__PLACE_BYTES)))

static const char gnmr__place_magic[8] = {'G', 'N', 'M', 'R',
                                          'P', 'L', 'C', 'E'};

static size_t gnmr__place_size(uint32_t n) {
  return GNMR__PLACE_FIXED + (size_t)n * GNMR__PLACE_UNIT_BYTES + 4u;
}

/* Unit j's state, from memory (src a gnmr_place) or from a checkpoint's
   bytes (src its first unit). */
typedef void (*gnmr__place_get_fn)(const void *src, uint32_t j,
                                   gnmr_place_unit_state *out);
static void gnmr__place_get_mem(const void *src, uint32_t j,
                                gnmr_place_unit_state *out) {
  gnmr__place_unit_get((const gnmr_place *)src, j, out);
}
static void gnmr__place_get_buf(const void *src, uint32_t j,
                                gnmr_place_unit_state *out) {
  const unsigned char *p =
      (const unsigned char *)src + (size_t)j * GNMR__PLACE_UNIT_BYTES;
#define GNMR__GET_UNIT(name, type) gnmr__get(&p, &out->name, sizeof(type));
  GNMR__PLACE_UNIT(GNMR__GET_UNIT)
#undef GNMR__GET_UNIT
}

static int gnmr__place_nonneg(double x) {
  return gnmr__finite64(x) && x >= 0.0;
}

/* What steps can reach: t's config, totals and every unit (get(src, j)).
   The firing order is checked strictly increasing in rule P5's order,
   which makes it a permutation without a scratch array. */
static int gnmr__place_valid(const gnmr_place *t, gnmr__place_get_fn get,
                             const void *src) {
  const int fired = t->n_fired == t->n_units;
  double total = 0.0;
  uint32_t j;
  gnmr_place_unit_state a, b;
  if (gnmr_place_config_check(&t->cfg, NULL) != GNMR_OK || t->reserved_ != 0)
    return 0;
  if (t->n_fired != 0 && !fired) return 0;
  if (!gnmr__place_nonneg(t->credit) || !gnmr__place_nonneg(t->level) ||
      !gnmr__place_nonneg(t->level_fast) || !gnmr__place_nonneg(t->level_slow))
    return 0;
  if (t->level_seen > t->steps ||
      (t->level_seen == 0 &&
       (t->level != 0.0 || t->level_fast != 0.0 || t->level_slow != 0.0)))
    return 0;
  if (fired ? t->fired_step >= t->steps : t->fired_step != UINT64_MAX) return 0;
  for (j = 0; j < t->n_units; j++) {
    get(src, j, &a);
    if (!gnmr__finite_above(a.cost, 0.0) || !gnmr__place_nonneg(a.update) ||
        !gnmr__place_nonneg(a.ratio) || !gnmr__place_nonneg(a.ratio_max) ||
        a.ratio > a.ratio_max || a.seen > t->steps ||
        (a.high != 0 && a.high != gnmr__place_gemms(t)) ||
        a.order >= t->n_units || (!fired && (a.order != 0 || a.high)))
      return 0;
    if (a.seen == 0 && (a.update != 0.0 || a.ratio_max != 0.0)) return 0;
    total += a.cost;
  }
  /* the values, as a step computes them (a NaN differs from both) */
  if (total != t->total || gnmr__mul(t->cfg.budget, total) != t->earn) return 0;
  if (fired)
    for (j = 1; j < t->n_units; j++) {
      gnmr_place_unit_state ua, ub;
      get(src, j - 1, &a);
      get(src, j, &b);
      get(src, a.order, &ua);
      get(src, b.order, &ub);
      {
        const double ka = gnmr__place_key(ua.ratio, ua.ratio_max),
                     kb = gnmr__place_key(ub.ratio, ub.ratio_max);
        if (!(ka < kb || (ka == kb && a.order < b.order))) return 0;
      }
    }
  return 1;
}

GNMR_DEF size_t gnmr_place_checkpoint_size(const gnmr_place *pl) {
  if (!pl || !gnmr__place_ok(pl)) return 0;
  return gnmr__place_size(pl->n_units);
}

GNMR_DEF int gnmr_place_checkpoint_save(const gnmr_place *pl, void *buf,
                                        size_t cap, size_t *written) {
  const gnmr_place_config *c;
  unsigned char *p;
  size_t size;
  uint32_t u;
  if (!pl || !written) return GNMR_EINVAL;
  if (!gnmr__place_ok(pl) || !gnmr__place_valid(pl, gnmr__place_get_mem, pl))
    return GNMR_ESTATE;
  size = gnmr__place_size(pl->n_units);
  *written = size;
  if (!buf) return GNMR_OK;
  if (cap < size) return GNMR_ESIZE;
  c = &pl->cfg;
  p = (unsigned char *)buf;
  memcpy(p, gnmr__place_magic, 8);
  p = gnmr__put_u32(p + 8, GNMR__PLACE_VERSION);
  p = gnmr__put_u32(p, pl->n_units);
#define GNMR__PUT_CFG(name, value, valid)                                      \
  p = gnmr__put(p, &c->name, sizeof c->name);
  GNMR__PLACE_CONFIG(GNMR__PUT_CFG)
#undef GNMR__PUT_CFG
#define GNMR__PUT_STATE(name, type) p = gnmr__put(p, &pl->name, sizeof(type));
  GNMR__PLACE_STATE(GNMR__PUT_STATE)
#undef GNMR__PUT_STATE
  for (u = 0; u < pl->n_units; u++) {
    gnmr_place_unit_state st;
    gnmr__place_unit_get(pl, u, &st);
#define GNMR__PUT_UNIT(name, type) p = gnmr__put(p, &st.name, sizeof(type));
    GNMR__PLACE_UNIT(GNMR__PUT_UNIT)
#undef GNMR__PUT_UNIT
  }
  p = gnmr__put_u32(p, gnmr__crc32((const unsigned char *)buf,
                                   (size_t)(p - (unsigned char *)buf)));
  GNMR_ASSERT((size_t)(p - (unsigned char *)buf) == size);
  return GNMR_OK;
}

GNMR_DEF int gnmr_place_checkpoint_load(gnmr_place *pl, const void *buf,
                                        size_t len) {
  const unsigned char *b = (const unsigned char *)buf, *p;
  gnmr_place t;
  uint32_t n, u;
  if (!pl || !buf) return GNMR_EINVAL;
  if (!gnmr__place_ok(pl)) return GNMR_ESTATE;
  if (len < GNMR__PLACE_HEADER) return GNMR_ESIZE;
  if (memcmp(b, gnmr__place_magic, 8) != 0) return GNMR_ECORRUPT;
  p = b + 8;
  if (gnmr__get_u32(&p) != GNMR__PLACE_VERSION) return GNMR_EVERSION;
  n = gnmr__get_u32(&p);
  if (n > (SIZE_MAX - gnmr__place_size(0)) / GNMR__PLACE_UNIT_BYTES ||
      len != gnmr__place_size(n))
    return GNMR_ESIZE;
  p = b + len - 4;
  if (gnmr__crc32(b, len - 4) != gnmr__get_u32(&p)) return GNMR_ECORRUPT;
  if (n != pl->n_units) return GNMR_EMISMATCH;
  memset(&t, 0, sizeof t);
  t.n_units = n;
  p = b + GNMR__PLACE_HEADER;
#define GNMR__GET_CFG(name, value, valid)                                      \
  gnmr__get(&p, &t.cfg.name, sizeof t.cfg.name);
  GNMR__PLACE_CONFIG(GNMR__GET_CFG)
#undef GNMR__GET_CFG
#define GNMR__GET_STATE(name, type) gnmr__get(&p, &t.name, sizeof(type));
  GNMR__PLACE_STATE(GNMR__GET_STATE)
#undef GNMR__GET_STATE
  /* Everything validated before anything is written. */
  if (!gnmr__place_valid(&t, gnmr__place_get_buf, p)) return GNMR_ECORRUPT;
  t.units = pl->units;
  for (u = 0; u < n; u++) {
    gnmr_place_unit_state st;
    gnmr__place_get_buf(p, u, &st);
    gnmr__place_unit_set(&t, u, &st);
  }
  t.magic = GNMR__PLACE_MAGIC;
  t.gen = pl->gen; /* a change: a copy of pl is stale after it */
  *pl = t;
  gnmr__place_commit(pl);
  return GNMR_OK;
}

/* ---- norm helpers ---------------------------------------------------------
   Canonical summation: element i of a chunk of GNMR_SUM_CHUNK goes to lane
   i mod 32; each lane adds its squares in order, in double, from +0; lanes
   fold by halves (16, 8, 4, 2, 1: a warp shuffle-down); chunk sums combine
   by a bottom-up pairwise tree, an odd last one carried up. Squares of
   f32/f16/bf16 values are exact in double, so fixing the order of additions
   fixes the bits on every path.

   Every path runs the one driver below (gnmr__sum). A path only supplies a
   kernel that adds whole rows of 32 elements into the 32 lane sums; a
   chunk's last partial row is copied into a zero-padded row first (adding
   +0 to a lane sum, which is >= +0, changes nothing, and no path reads past
   the end). The fold, the chunk tree and the non-finite handling exist once.

   amax: kernels track magnitudes as the element's bits with the sign
   cleared, which order like the values. Finite squares cannot overflow a
   chunk (4096 * FLT_MAX^2 < DBL_MAX), so a chunk holds a NaN/Inf exactly when
   its sum is not finite; only such a chunk is read again, to count them and
   keep them out of amax. The fast loop never tests for them.

   FTZ/DAZ: with DAZ (x86) or FZ (aarch64) set by the caller, the conversion
   to double reads f32 and bf16 subnormals as zero on every path alike, the
   scalar one included, so paths still agree; f16 subnormals are f32 normals
   and always count. */

/* Bottom-up pairwise tree over chunk sums, streamed: a binary counter of
   partial sums, folded top-down at the end (the same tree as pairing level
   by level with the odd last one carried up). */
typedef struct gnmr__tree {
  double level[64];
  uint64_t chunks;
  int depth;
} gnmr__tree;

static void gnmr__tree_add(gnmr__tree *t, double chunk_sum) {
  uint64_t c;
  t->level[t->depth++] = chunk_sum;
  for (c = ++t->chunks; (c & 1u) == 0; c >>= 1) {
    t->depth--;
    t->level[t->depth - 1] += t->level[t->depth];
  }
}

static double gnmr__tree_sum(gnmr__tree *t) {
  while (t->depth > 1) {
    t->depth--;
    t->level[t->depth - 1] += t->level[t->depth];
  }
  return t->depth ? t->level[0] : 0.0;
}

static double gnmr__lane_fold(double *lane) {
  int half, j;
  for (half = GNMR_SUM_LANES / 2; half >= 1; half /= 2)
    for (j = 0; j < half; j++) lane[j] += lane[j + half];
  return lane[0];
}

static size_t gnmr__elem_size(int dtype) {
  return dtype == GNMR_DTYPE_F32 ? 4 : 2;
}

/* An element's magnitude: its bits with the sign cleared. */
static uint32_t gnmr__mag_at(const unsigned char *p, int dtype) {
  uint32_t b32;
  uint16_t b16;
  if (dtype == GNMR_DTYPE_F32) {
    memcpy(&b32, p, 4);
    return b32 & 0x7FFFFFFFu;
  }
  memcpy(&b16, p, 2);
  return b16 & 0x7FFFu;
}

static int gnmr__mag_finite(uint32_t mag, int dtype) {
  if (dtype == GNMR_DTYPE_F32) return mag < 0x7F800000u;
  return mag < (dtype == GNMR_DTYPE_F16 ? 0x7C00u : 0x7F80u);
}

static float gnmr__mag_value(uint32_t mag, int dtype) {
  float f;
  if (dtype == GNMR_DTYPE_F16) return gnmr_f16_to_f32((uint16_t)mag);
  if (dtype == GNMR_DTYPE_BF16) return gnmr_bf16_to_f32((uint16_t)mag);
  memcpy(&f, &mag, 4);
  return f;
}

/* A path's kernel: adds the squares of rows * GNMR_SUM_LANES elements of
   dtype at x (any alignment) into lane[i mod GNMR_SUM_LANES], in increasing
   i; with mag != NULL it also raises *mag to the largest magnitude read,
   NaN/Inf included. */
typedef void (*gnmr__rows_fn)(const void *x, size_t rows, int dtype,
                              double *lane, uint32_t *mag);

/* The scalar path, the reference every other path must match; one loop per
   dtype (dtype a constant in each, once inlined). */
static void gnmr__rows_scalar_of(const unsigned char *p, size_t rows, int dtype,
                                 double *lane, uint32_t *mag) {
  size_t size = gnmr__elem_size(dtype), r;
  int j;
  for (r = 0; r < rows; r++) {
    for (j = 0; j < GNMR_SUM_LANES; j++, p += size) {
      uint32_t m = gnmr__mag_at(p, dtype);
      double v = (double)gnmr__mag_value(m, dtype);
      lane[j] += v * v;
      if (mag && m > *mag) *mag = m;
    }
  }
}

static void gnmr__rows_scalar(const void *x, size_t rows, int dtype,
                              double *lane, uint32_t *mag) {
  const unsigned char *p = (const unsigned char *)x;
  if (dtype == GNMR_DTYPE_F32)
    gnmr__rows_scalar_of(p, rows, GNMR_DTYPE_F32, lane, mag);
  else if (dtype == GNMR_DTYPE_F16)
    gnmr__rows_scalar_of(p, rows, GNMR_DTYPE_F16, lane, mag);
  else
    gnmr__rows_scalar_of(p, rows, GNMR_DTYPE_BF16, lane, mag);
}

static gnmr__rows_fn gnmr__active_rows(void);

/* A chunk with a NaN/Inf read again: counts them, and raises *mag over the
   finite elements only. */
static void gnmr__nonfinite_chunk(const unsigned char *p, size_t n, int dtype,
                                  uint32_t *mag, uint64_t *nonfinite) {
  size_t size = gnmr__elem_size(dtype), i;
  for (i = 0; i < n; i++, p += size) {
    uint32_t m = gnmr__mag_at(p, dtype);
    if (!gnmr__mag_finite(m, dtype))
      ++*nonfinite;
    else if (m > *mag)
      *mag = m;
  }
}

/* The canonical sum of x[0..n) with one path's kernel; with mag != NULL also
   the largest finite magnitude and the count of NaN/Inf elements. */
static double gnmr__sum(gnmr__rows_fn rows, const void *x, size_t n, int dtype,
                        uint32_t *mag, uint64_t *nonfinite) {
  const unsigned char *p = (const unsigned char *)x;
  size_t size = gnmr__elem_size(dtype), start;
  gnmr__tree tree;
  memset(&tree, 0, sizeof tree);
  for (start = 0; start < n; start += GNMR_SUM_CHUNK) {
    const unsigned char *chunk = p + start * size;
    size_t len = n - start < GNMR_SUM_CHUNK ? n - start : GNMR_SUM_CHUNK;
    size_t full = len / GNMR_SUM_LANES, tail = len % GNMR_SUM_LANES;
    double lane[GNMR_SUM_LANES] = {0};
    uint32_t chunk_mag = 0, *want_mag = mag ? &chunk_mag : NULL;
    double sum;
    if (full > 0) rows(chunk, full, dtype, lane, want_mag);
    if (tail > 0) {
      union {
        double align; /* cppcheck-suppress unusedStructMember */
        unsigned char bytes[GNMR_SUM_LANES * 4];
      } row;
      memset(&row, 0, sizeof row);
      memcpy(row.bytes, chunk + full * GNMR_SUM_LANES * size, tail * size);
      rows(row.bytes, 1, dtype, lane, want_mag);
    }
    sum = gnmr__lane_fold(lane);
    if (mag) {
      if (!gnmr__finite64(sum))
        gnmr__nonfinite_chunk(chunk, len, dtype, mag, nonfinite);
      else if (chunk_mag > *mag)
        *mag = chunk_mag;
    }
    gnmr__tree_add(&tree, sum);
  }
  return gnmr__tree_sum(&tree);
}

/* x == NULL with n > 0 is a caller bug: it reads as a NaN norm (which the
   controller treats as a numerical failure), never as a crash. */
static void gnmr__stats(const void *x, size_t n, int dtype,
                        gnmr_tensor_stats *out) {
  uint32_t mag = 0;
  uint64_t nonfinite = 0;
  if (!out) return;
  if (!x && n > 0) {
    out->sumsq = out->amax = (double)NAN;
    out->nonfinite = 0;
    return;
  }
  out->sumsq = gnmr__sum(gnmr__active_rows(), x, n, dtype, &mag, &nonfinite);
  out->amax = (double)gnmr__mag_value(mag, dtype);
  out->nonfinite = nonfinite;
}

static double gnmr__sumsq(const void *x, size_t n, int dtype) {
  if (!x && n > 0) return (double)NAN;
  return gnmr__sum(gnmr__active_rows(), x, n, dtype, NULL, NULL);
}

GNMR_DEF void gnmr_stats_f32(const float *x, size_t n, gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_DTYPE_F32, out);
}
GNMR_DEF void gnmr_stats_f16(const uint16_t *x, size_t n,
                             gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_DTYPE_F16, out);
}
GNMR_DEF void gnmr_stats_bf16(const uint16_t *x, size_t n,
                              gnmr_tensor_stats *out) {
  gnmr__stats(x, n, GNMR_DTYPE_BF16, out);
}
GNMR_DEF double gnmr_sumsq_f32(const float *x, size_t n) {
  return gnmr__sumsq(x, n, GNMR_DTYPE_F32);
}
GNMR_DEF double gnmr_sumsq_f16(const uint16_t *x, size_t n) {
  return gnmr__sumsq(x, n, GNMR_DTYPE_F16);
}
GNMR_DEF double gnmr_sumsq_bf16(const uint16_t *x, size_t n) {
  return gnmr__sumsq(x, n, GNMR_DTYPE_BF16);
}

static int gnmr__tensors_valid(const gnmr_tensor *t, size_t nt,
                               uint32_t n_units) {
  size_t i;
  if (nt > 0 && !t) return 0;
  for (i = 0; i < nt; i++)
    if (t[i].unit >= n_units || (t[i].n > 0 && !t[i].data) ||
        (t[i].dtype != GNMR_DTYPE_F32 && t[i].dtype != GNMR_DTYPE_F16 &&
         t[i].dtype != GNMR_DTYPE_BF16))
      return 0;
  return 1;
}

GNMR_DEF int gnmr_unit_sumsq(const gnmr_tensor *t, size_t nt, double *sumsq,
                             uint32_t n_units) {
  size_t i;
  if ((n_units > 0 && !sumsq) || !gnmr__tensors_valid(t, nt, n_units))
    return GNMR_EINVAL;
  for (i = 0; i < n_units; i++) sumsq[i] = 0.0;
  for (i = 0; i < nt; i++)
    sumsq[t[i].unit] += gnmr__sumsq(t[i].data, t[i].n, t[i].dtype);
  return GNMR_OK;
}

/* Units gnmr_unit_norms sums at once, on the stack (2 KiB). */
#define GNMR__NORM_UNITS 256

GNMR_DEF int gnmr_unit_norms(const gnmr_tensor *t, size_t nt, float *norms,
                             uint32_t n_units) {
  double sum[GNMR__NORM_UNITS];
  uint32_t base, width, u;
  size_t i;
  if ((n_units > 0 && !norms) || !gnmr__tensors_valid(t, nt, n_units))
    return GNMR_EINVAL;
  /* Units [base, base + width) per pass; a tensor outside them is skipped
     by one unsigned compare (unit - base wraps around below base). */
  for (base = 0; base < n_units; base += width) {
    width = n_units - base;
    if (width > GNMR__NORM_UNITS) width = GNMR__NORM_UNITS;
    for (u = 0; u < width; u++) sum[u] = 0.0;
    for (i = 0; i < nt; i++)
      if (t[i].unit - base < width)
        sum[t[i].unit - base] += gnmr__sumsq(t[i].data, t[i].n, t[i].dtype);
    for (u = 0; u < width; u++) norms[base + u] = (float)sqrt(sum[u]);
  }
  return GNMR_OK;
}

/* ---- applying decisions -------------------------------------------------- */

/* The nearest f16 (IEEE binary16 bits) to f, ties to even; NaN stays a
   (quiet) NaN, beyond the range Inf. */
static uint16_t gnmr__f32_to_f16(float f) {
  uint32_t b, a, sign, r, shift, rest, half;
  memcpy(&b, &f, 4);
  sign = (b >> 16) & 0x8000u;
  a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 */
  if (a >= 0x38800000u) { /* a normal f16: rebias, round off 13 bits */
    a -= 0x38000000u;
    return (uint16_t)(sign | ((a + 0xFFFu + ((a >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return (uint16_t)sign; /* below 2^-25: 0 */
  /* a subnormal f16: the significand in units of 2^-24 */
  shift = 126u - (a >> 23);
  a = (a & 0x7FFFFFu) | 0x800000u;
  r = a >> shift;
  rest = a & ((1u << shift) - 1u);
  half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (r & 1u))) r++;
  return (uint16_t)(sign | r);
}

/* The nearest bf16 to f, ties to even; NaN stays a (quiet) NaN. */
static uint16_t gnmr__f32_to_bf16(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40u);
  return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

/* The checks of gnmr_scale_*: GNMR_OK when x may be scaled by scale. */
static int gnmr__scale_valid(const void *x, size_t n, double scale) {
  if (!x && n > 0) return GNMR_EINVAL;
  if (!gnmr__finite64(scale) || scale < 0.0 || scale > 1.0) return GNMR_EINVAL;
  return GNMR_OK;
}

GNMR_DEF int gnmr_scale_f32(float *x, size_t n, double scale) {
  size_t i;
  int rc = gnmr__scale_valid(x, n, scale);
  if (rc != GNMR_OK || scale == 1.0) return rc;
  if (scale == 0.0) {
    for (i = 0; i < n; i++) x[i] = 0.0f;
    return GNMR_OK;
  }
  for (i = 0; i < n; i++) x[i] = (float)((double)x[i] * scale);
  return GNMR_OK;
}

GNMR_DEF int gnmr_scale_f16(uint16_t *x, size_t n, double scale) {
  size_t i;
  int rc = gnmr__scale_valid(x, n, scale);
  if (rc != GNMR_OK || scale == 1.0) return rc;
  for (i = 0; i < n; i++)
    x[i] =
        scale == 0.0
            ? (uint16_t)0
            : gnmr__f32_to_f16((float)((double)gnmr_f16_to_f32(x[i]) * scale));
  return GNMR_OK;
}

GNMR_DEF int gnmr_scale_bf16(uint16_t *x, size_t n, double scale) {
  size_t i;
  int rc = gnmr__scale_valid(x, n, scale);
  if (rc != GNMR_OK || scale == 1.0) return rc;
  for (i = 0; i < n; i++)
    x[i] = scale == 0.0 ? (uint16_t)0
                        : gnmr__f32_to_bf16(
                              (float)((double)gnmr_bf16_to_f32(x[i]) * scale));
  return GNMR_OK;
}

/* ---- SIMD paths -----------------------------------------------------------
   Each path keeps the 32 lane sums in registers, converts elements to
   double exactly (cvtps2pd, F16C/NEON half conversions, bf16 by a shift)
   and adds x*x with a fused multiply-add where it has one: x*x is exact in
   double, so fma(x, x, s) rounds once, like s + x*x. Loads are unaligned.

   The row loop is written once (GNMR__ROWS, at the end of this section);
   a path supplies only its primitives, gnmr__<path>_*:
     acc                 its vector of D double lane sums (32 / D of them)
     top                 its vector of running magnitude maxima
     load(lane), store(lane, v)  D lane sums into an acc and back
     enter(a, dt), leave(a, dt)  a path may keep another lane order inside
                           the loop for a dtype (AVX-512 bf16 does)
     add16(a, p, dt)     the 16 elements of dtype dt at p, squares added
                           into a[0 .. 16 / D), element i into lane i
     max32(top, p, dt)   top raised to the magnitudes of the 32 at p
     fold(top, dt)       the largest magnitude in top
   Primitives are forced inline and the loop is instantiated per dtype, so
   dt is a constant in them and their dtype branches fold away. */

#define GNMR__PRIM __inline__ __attribute__((always_inline)) static
/* Loops over a path's accumulators unrolled in full, so that they stay in
   registers. */
#ifdef __clang__
#define GNMR__UNROLL _Pragma("unroll")
#else
#define GNMR__UNROLL _Pragma("GCC unroll 16")
#endif

/* Streaming reads: asking for the line ahead keeps more misses in flight
   than the hardware prefetcher alone, which stops at each 4 KiB page. One
   page ahead (4 KiB), into L2 (locality 2: prefetcht1 on x86), the next
   page's TLB walk and first lines are under way before its loads arrive.
   Against 1 KiB into L1 it gained on an Intel Xeon VM and made no clear
   difference on an AMD Zen 3 one (bench/RESULTS.md, "Norm helpers"). A
   prefetch never faults, so running past the end is safe. */
#define GNMR__PREFETCH(p, row_bytes)                                           \
  do {                                                                         \
    __builtin_prefetch((p) + 4096, 0, 2);                                      \
    if ((row_bytes) > 64) __builtin_prefetch((p) + 4096 + 64, 0, 2);           \
  } while (0)

#define GNMR__ESIZE(dt) ((size_t)((dt) == GNMR_DTYPE_F32 ? 4 : 2))

/* One dtype's rows: lane sums in, the loop, lane sums out, the max fold. */
#define GNMR__ROWS_OF(P, D, dt)                                                \
  do {                                                                         \
    size_t k;                                                                  \
    GNMR__UNROLL                                                               \
    for (k = 0; k < 32 / (D); k++) a[k] = gnmr__##P##_load(lane + (D)*k);      \
    gnmr__##P##_enter(a, dt);                                                  \
    for (r = 0; r < rows; r++, p += 32 * GNMR__ESIZE(dt)) {                    \
      GNMR__PREFETCH(p, 32 * GNMR__ESIZE(dt));                                 \
      gnmr__##P##_add16(a, p, dt);                                             \
      gnmr__##P##_add16(a + 16 / (D), p + 16 * GNMR__ESIZE(dt), dt);           \
      if (mag) top = gnmr__##P##_max32(top, p, dt);                            \
    }                                                                          \
    gnmr__##P##_leave(a, dt);                                                  \
    GNMR__UNROLL                                                               \
    for (k = 0; k < 32 / (D); k++) gnmr__##P##_store(lane + (D)*k, a[k]);      \
    if (mag) {                                                                 \
      uint32_t m = gnmr__##P##_fold(top, dt);                                  \
      if (m > *mag) *mag = m;                                                  \
    }                                                                          \
  } while (0)

/* gnmr__rows_P: a gnmr__rows_fn from path P's primitives (D doubles per
   accumulator, compiled for TARGET). */
#define GNMR__ROWS(P, TARGET, D)                                               \
  static TARGET void gnmr__rows_##P(const void *x, size_t rows, int dtype,     \
                                    double *lane, uint32_t *mag) {             \
    const unsigned char *p = (const unsigned char *)x;                         \
    gnmr__##P##_acc a[32 / (D)];                                               \
    gnmr__##P##_top top = gnmr__##P##_top0();                                  \
    size_t r;                                                                  \
    if (dtype == GNMR_DTYPE_F32)                                               \
      GNMR__ROWS_OF(P, D, GNMR_DTYPE_F32);                                     \
    else if (dtype == GNMR_DTYPE_F16)                                          \
      GNMR__ROWS_OF(P, D, GNMR_DTYPE_F16);                                     \
    else                                                                       \
      GNMR__ROWS_OF(P, D, GNMR_DTYPE_BF16);                                    \
  }

#ifdef GNMR__SSE2
/* D = 2. SSE2 has no half conversion: f16 magnitudes (sign dropped; squares
   do not need it) are rebuilt as f32 bits with integer operations,
   subnormals as m * 2^-24 from integers, so no subnormal ever enters the
   FPU (DAZ-safe). No unsigned 32-bit max either: a signed one is right for
   magnitudes, which are < 2^31. */
typedef __m128d gnmr__sse2_acc;
typedef __m128i gnmr__sse2_top;

GNMR__PRIM GNMR__TARGET_SSE2 __m128 gnmr__sse2_f16(__m128i m) {
  __m128i bits =
      _mm_add_epi32(_mm_slli_epi32(m, 13), _mm_set1_epi32(0x38000000));
  __m128i infnan = _mm_cmpgt_epi32(m, _mm_set1_epi32(0x7BFF));
  __m128 sub = _mm_castsi128_ps(_mm_cmplt_epi32(m, _mm_set1_epi32(0x400)));
  __m128 subv =
      _mm_mul_ps(_mm_cvtepi32_ps(m), _mm_set1_ps(5.9604644775390625e-8f));
  bits = _mm_add_epi32(bits, _mm_and_si128(infnan, _mm_set1_epi32(0x38000000)));
  return _mm_or_ps(_mm_and_ps(sub, subv),
                   _mm_andnot_ps(sub, _mm_castsi128_ps(bits)));
}

/* Four floats into lane sums a[0] (elements 0, 1) and a[1] (2, 3). */
GNMR__PRIM GNMR__TARGET_SSE2 void gnmr__sse2_sq4(__m128d *a, __m128 f) {
  __m128d lo = _mm_cvtps_pd(f), hi = _mm_cvtps_pd(_mm_movehl_ps(f, f));
  a[0] = _mm_add_pd(a[0], _mm_mul_pd(lo, lo));
  a[1] = _mm_add_pd(a[1], _mm_mul_pd(hi, hi));
}

GNMR__PRIM GNMR__TARGET_SSE2 __m128i gnmr__sse2_u128(const unsigned char *p) {
  return _mm_loadu_si128((const __m128i *)(const void *)p);
}

GNMR__PRIM GNMR__TARGET_SSE2 __m128i gnmr__sse2_top0(void) {
  return _mm_setzero_si128();
}
#define gnmr__sse2_load _mm_loadu_pd
#define gnmr__sse2_store _mm_storeu_pd
#define gnmr__sse2_enter(a, dt) (void)0
#define gnmr__sse2_leave(a, dt) (void)0

GNMR__PRIM GNMR__TARGET_SSE2 void
gnmr__sse2_add16(__m128d *a, const unsigned char *p, int dt) {
  const __m128i zero = _mm_setzero_si128(), abs = _mm_set1_epi16(0x7FFF);
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      gnmr__sse2_sq4(a + 2 * k, _mm_castsi128_ps(gnmr__sse2_u128(p + 16 * k)));
    return;
  }
  GNMR__UNROLL
  for (k = 0; k < 2; k++) {
    __m128i h = gnmr__sse2_u128(p + 16 * k);
    __m128 lo, hi;
    if (dt == GNMR_DTYPE_BF16) {
      lo = _mm_castsi128_ps(_mm_unpacklo_epi16(zero, h));
      hi = _mm_castsi128_ps(_mm_unpackhi_epi16(zero, h));
    } else {
      __m128i m = _mm_and_si128(h, abs);
      lo = gnmr__sse2_f16(_mm_unpacklo_epi16(m, zero));
      hi = gnmr__sse2_f16(_mm_unpackhi_epi16(m, zero));
    }
    gnmr__sse2_sq4(a + 4 * k, lo);
    gnmr__sse2_sq4(a + 4 * k + 2, hi);
  }
}

GNMR__PRIM GNMR__TARGET_SSE2 __m128i gnmr__sse2_max32(__m128i top,
                                                      const unsigned char *p,
                                                      int dt) {
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    const __m128i abs = _mm_set1_epi32(0x7FFFFFFF);
    GNMR__UNROLL
    for (k = 0; k < 8; k++) {
      __m128i m = _mm_and_si128(gnmr__sse2_u128(p + 16 * k), abs);
      __m128i gt = _mm_cmpgt_epi32(m, top);
      top = _mm_or_si128(_mm_and_si128(gt, m), _mm_andnot_si128(gt, top));
    }
  } else {
    const __m128i abs = _mm_set1_epi16(0x7FFF);
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      top = _mm_max_epi16(top, _mm_and_si128(gnmr__sse2_u128(p + 16 * k), abs));
  }
  return top;
}

GNMR__PRIM GNMR__TARGET_SSE2 uint32_t gnmr__sse2_fold(__m128i top, int dt) {
  uint32_t t[4], m = 0;
  size_t k;
  if (dt != GNMR_DTYPE_F32) /* 16-bit maxima to 32-bit lanes */
    top = _mm_max_epi16(_mm_srli_epi32(top, 16),
                        _mm_and_si128(top, _mm_set1_epi32(0xFFFF)));
  _mm_storeu_si128((__m128i *)(void *)t, top);
  GNMR__UNROLL
  for (k = 0; k < 4; k++)
    if (t[k] > m) m = t[k];
  return m;
}

GNMR__ROWS(sse2, GNMR__TARGET_SSE2, 2)
#endif /* GNMR__SSE2 */

#ifdef GNMR__AVX2
/* D = 4. */
typedef __m256d gnmr__avx2_acc;
typedef __m256i gnmr__avx2_top;

GNMR__PRIM GNMR__TARGET_AVX2 __m256d gnmr__avx2_sq(__m256d acc, __m128 f) {
  __m256d d = _mm256_cvtps_pd(f);
  return _mm256_fmadd_pd(d, d, acc);
}

GNMR__PRIM GNMR__TARGET_AVX2 __m256i gnmr__avx2_u256(const unsigned char *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* Eight f16/bf16 elements to eight floats, in order. */
GNMR__PRIM GNMR__TARGET_AVX2 __m256 gnmr__avx2_half8(const unsigned char *p,
                                                     int dt) {
  __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
  if (dt == GNMR_DTYPE_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

GNMR__PRIM GNMR__TARGET_AVX2 __m256i gnmr__avx2_top0(void) {
  return _mm256_setzero_si256();
}
#define gnmr__avx2_load _mm256_loadu_pd
#define gnmr__avx2_store _mm256_storeu_pd
#define gnmr__avx2_enter(a, dt) (void)0
#define gnmr__avx2_leave(a, dt) (void)0

GNMR__PRIM GNMR__TARGET_AVX2 void
gnmr__avx2_add16(__m256d *a, const unsigned char *p, int dt) {
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      a[k] = gnmr__avx2_sq(
          a[k], _mm_loadu_ps((const float *)(const void *)p + 4 * k));
    return;
  }
  { /* both conversions before the FMAs: GCC keeps the order (+4% bf16) */
    __m256 f0 = gnmr__avx2_half8(p, dt), f1 = gnmr__avx2_half8(p + 16, dt);
    a[0] = gnmr__avx2_sq(a[0], _mm256_castps256_ps128(f0));
    a[1] = gnmr__avx2_sq(a[1], _mm256_extractf128_ps(f0, 1));
    a[2] = gnmr__avx2_sq(a[2], _mm256_castps256_ps128(f1));
    a[3] = gnmr__avx2_sq(a[3], _mm256_extractf128_ps(f1, 1));
  }
}

GNMR__PRIM GNMR__TARGET_AVX2 __m256i gnmr__avx2_max32(__m256i top,
                                                      const unsigned char *p,
                                                      int dt) {
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    const __m256i abs = _mm256_set1_epi32(0x7FFFFFFF);
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      top = _mm256_max_epu32(
          top, _mm256_and_si256(gnmr__avx2_u256(p + 32 * k), abs));
  } else {
    const __m256i abs = _mm256_set1_epi16(0x7FFF);
    GNMR__UNROLL
    for (k = 0; k < 2; k++)
      top = _mm256_max_epu16(
          top, _mm256_and_si256(gnmr__avx2_u256(p + 32 * k), abs));
  }
  return top;
}

GNMR__PRIM GNMR__TARGET_AVX2 uint32_t gnmr__avx2_fold(__m256i top, int dt) {
  uint32_t t[8], m = 0;
  size_t k;
  if (dt != GNMR_DTYPE_F32) /* 16-bit maxima to 32-bit lanes */
    top = _mm256_max_epu32(_mm256_srli_epi32(top, 16),
                           _mm256_and_si256(top, _mm256_set1_epi32(0xFFFF)));
  _mm256_storeu_si256((__m256i *)(void *)t, top);
  GNMR__UNROLL
  for (k = 0; k < 8; k++)
    if (t[k] > m) m = t[k];
  return m;
}

GNMR__ROWS(avx2, GNMR__TARGET_AVX2, 4)
#endif /* GNMR__AVX2 */

#ifdef GNMR__AVX512
/* g++ 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug
   105593) when they are inlined into C++ code: silence it for this path. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* D = 8. bf16 has its own lane order inside the loop: a 32-bit word holds
   elements 2j (low half) and 2j+1 (high half), and a shift and a mask make
   both f32 with no widening and no lane crossing; so a[0]/a[1] hold the
   even/odd lanes of 0..15 and a[2]/a[3] those of 16..31, reordered by in
   and out. */
typedef __m512d gnmr__avx512_acc;
typedef __m512i gnmr__avx512_top;

GNMR__PRIM GNMR__TARGET_AVX512 __m512d gnmr__avx512_sq(__m512d acc, __m256 f) {
  __m512d d = _mm512_cvtps_pd(f);
  return _mm512_fmadd_pd(d, d, acc);
}

GNMR__PRIM GNMR__TARGET_AVX512 __m256i
gnmr__avx512_u256(const unsigned char *p) {
  return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

GNMR__PRIM GNMR__TARGET_AVX512 __m512i gnmr__avx512_top0(void) {
  return _mm512_setzero_si512();
}

#define gnmr__avx512_load _mm512_loadu_pd
#define gnmr__avx512_store _mm512_storeu_pd

/* Lanes 0..15 of a[0], a[1] (and 16..31 of a[2], a[3]) to even/odd. */
GNMR__PRIM GNMR__TARGET_AVX512 void gnmr__avx512_enter(__m512d *a, int dt) {
  const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
  __m512d l0 = a[0], l1 = a[1], l2 = a[2], l3 = a[3];
  if (dt != GNMR_DTYPE_BF16) return;
  a[0] = _mm512_permutex2var_pd(l0, even, l1);
  a[1] = _mm512_permutex2var_pd(l0, odd, l1);
  a[2] = _mm512_permutex2var_pd(l2, even, l3);
  a[3] = _mm512_permutex2var_pd(l2, odd, l3);
}

/* And back: even/odd zipped into order. */
GNMR__PRIM GNMR__TARGET_AVX512 void gnmr__avx512_leave(__m512d *a, int dt) {
  const __m512i zip_lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
  const __m512i zip_hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  __m512d e0 = a[0], o0 = a[1], e1 = a[2], o1 = a[3];
  if (dt != GNMR_DTYPE_BF16) return;
  a[0] = _mm512_permutex2var_pd(e0, zip_lo, o0);
  a[1] = _mm512_permutex2var_pd(e0, zip_hi, o0);
  a[2] = _mm512_permutex2var_pd(e1, zip_lo, o1);
  a[3] = _mm512_permutex2var_pd(e1, zip_hi, o1);
}

GNMR__PRIM GNMR__TARGET_AVX512 void
gnmr__avx512_add16(__m512d *a, const unsigned char *p, int dt) {
  if (dt == GNMR_DTYPE_F32) {
    const float *f = (const float *)(const void *)p;
    a[0] = gnmr__avx512_sq(a[0], _mm256_loadu_ps(f));
    a[1] = gnmr__avx512_sq(a[1], _mm256_loadu_ps(f + 8));
  } else if (dt == GNMR_DTYPE_F16) {
    __m512 f = _mm512_cvtph_ps(gnmr__avx512_u256(p));
    a[0] = gnmr__avx512_sq(a[0], _mm512_castps512_ps256(f));
    a[1] = gnmr__avx512_sq(
        a[1], _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
  } else {
    __m256i v = gnmr__avx512_u256(p);
    const __m256i high = _mm256_set1_epi32((int)0xFFFF0000u);
    a[0] = gnmr__avx512_sq(a[0], _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    a[1] =
        gnmr__avx512_sq(a[1], _mm256_castsi256_ps(_mm256_and_si256(v, high)));
  }
}

GNMR__PRIM GNMR__TARGET_AVX512 __m512i
gnmr__avx512_max32(__m512i top, const unsigned char *p, int dt) {
  if (dt == GNMR_DTYPE_F32) {
    const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF);
    top = _mm512_max_epu32(top, _mm512_and_si512(_mm512_loadu_si512(p), abs));
    return _mm512_max_epu32(top,
                            _mm512_and_si512(_mm512_loadu_si512(p + 64), abs));
  }
  return _mm512_max_epu16(
      top, _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi16(0x7FFF)));
}

GNMR__PRIM GNMR__TARGET_AVX512 uint32_t gnmr__avx512_fold(__m512i top, int dt) {
  if (dt != GNMR_DTYPE_F32) /* 16-bit maxima to 32-bit lanes */
    top = _mm512_max_epu32(_mm512_srli_epi32(top, 16),
                           _mm512_and_si512(top, _mm512_set1_epi32(0xFFFF)));
  return (uint32_t)_mm512_reduce_max_epu32(top);
}

GNMR__ROWS(avx512, GNMR__TARGET_AVX512, 8)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif /* GNMR__AVX512 */

#ifdef GNMR__NEON
/* D = 2. Magnitude maxima in 32-bit lanes for f32, 16-bit for halves. */
typedef float64x2_t gnmr__neon_acc;
typedef uint32x4_t gnmr__neon_top;
#define GNMR__TARGET_NEON

/* Four floats into lane sums a[0] (elements 0, 1) and a[1] (2, 3). */
GNMR__PRIM void gnmr__neon_sq4(float64x2_t *a, float32x4_t f) {
  float64x2_t lo = vcvt_f64_f32(vget_low_f32(f)), hi = vcvt_high_f64_f32(f);
  a[0] = vfmaq_f64(a[0], lo, lo);
  a[1] = vfmaq_f64(a[1], hi, hi);
}

GNMR__PRIM uint32x4_t gnmr__neon_top0(void) { return vdupq_n_u32(0); }
#define gnmr__neon_load vld1q_f64
#define gnmr__neon_store vst1q_f64
#define gnmr__neon_enter(a, dt) (void)0
#define gnmr__neon_leave(a, dt) (void)0

GNMR__PRIM void gnmr__neon_add16(float64x2_t *a, const unsigned char *p,
                                 int dt) {
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      gnmr__neon_sq4(a + 2 * k, vreinterpretq_f32_u8(vld1q_u8(p + 16 * k)));
    return;
  }
  GNMR__UNROLL
  for (k = 0; k < 2; k++) {
    uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(p + 16 * k));
    float32x4_t lo, hi;
    if (dt == GNMR_DTYPE_F16) {
      lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
      hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(h));
    } else {
      lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
      hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
    gnmr__neon_sq4(a + 4 * k, lo);
    gnmr__neon_sq4(a + 4 * k + 2, hi);
  }
}

GNMR__PRIM uint32x4_t gnmr__neon_max32(uint32x4_t top, const unsigned char *p,
                                       int dt) {
  size_t k;
  if (dt == GNMR_DTYPE_F32) {
    const uint32x4_t abs = vdupq_n_u32(0x7FFFFFFFu);
    GNMR__UNROLL
    for (k = 0; k < 8; k++)
      top = vmaxq_u32(
          top, vandq_u32(vreinterpretq_u32_u8(vld1q_u8(p + 16 * k)), abs));
  } else {
    const uint16x8_t abs = vdupq_n_u16(0x7FFFu);
    uint16x8_t t = vreinterpretq_u16_u32(top);
    GNMR__UNROLL
    for (k = 0; k < 4; k++)
      t = vmaxq_u16(t,
                    vandq_u16(vreinterpretq_u16_u8(vld1q_u8(p + 16 * k)), abs));
    top = vreinterpretq_u32_u16(t);
  }
  return top;
}

GNMR__PRIM uint32_t gnmr__neon_fold(uint32x4_t top, int dt) {
  if (dt == GNMR_DTYPE_F32) return vmaxvq_u32(top);
  return vmaxvq_u16(vreinterpretq_u16_u32(top));
}

GNMR__ROWS(neon, GNMR__TARGET_NEON, 2)
#endif /* GNMR__NEON */

/* ---- dispatch -------------------------------------------------------------
   The norm helpers take the first path of their architecture's preference
   list that this build and CPU can run (gnmr_isa_force overrides it); the
   controller's AVX-512 step has a choice of its own (gnmr_ctl_isa_force).
   The two choices are the library's only global mutable state, read and
   written atomically where the compiler offers it. x86: cpuid leaves 1 and
   7, and xgetbv to check that the OS saves the YMM/ZMM registers. */

static const int gnmr__isa_preference[] = {
#if defined(__x86_64__) || defined(__i386__)
    GNMR_ISA_AVX512, GNMR_ISA_AVX2, GNMR_ISA_SSE2,
#elif defined(__aarch64__)
    GNMR_ISA_NEON,
#endif
    GNMR_ISA_SCALAR};

/* [0]: the norm helpers' path, [1]: the controller's; -1 until chosen. */
static int gnmr__isa_choice[2] = {-1, -1};

static int gnmr__isa_get(int which) {
#if defined(__GNUC__) || defined(__clang__)
  return __atomic_load_n(&gnmr__isa_choice[which], __ATOMIC_RELAXED);
#else
  return gnmr__isa_choice[which];
#endif
}

static void gnmr__isa_set(int which, int isa) {
#if defined(__GNUC__) || defined(__clang__)
  __atomic_store_n(&gnmr__isa_choice[which], isa, __ATOMIC_RELAXED);
#else
  gnmr__isa_choice[which] = isa;
#endif
}

#ifdef GNMR__X86
static int gnmr__x86_has(int isa) {
  unsigned a, b, c, d, b7 = 0, xcr0 = 0, xcr0_hi;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  if (isa == GNMR_ISA_SSE2) return (int)((d >> 26) & 1u);
  /* OSXSAVE, AVX, FMA, F16C */
  if ((c & 0x38001000u) != 0x38001000u) return 0;
  __asm__ __volatile__("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  (void)xcr0_hi;
  if (__get_cpuid_max(0, NULL) >= 7) __cpuid_count(7, 0, a, b7, c, d);
  if (isa == GNMR_ISA_AVX2) /* XMM+YMM state; AVX2 */
    return (xcr0 & 0x6u) == 0x6u && ((b7 >> 5) & 1u);
  if (isa == GNMR_ISA_AVX512) /* + opmask, ZMM state; AVX2, F, DQ, BW, VL */
    return (xcr0 & 0xE6u) == 0xE6u && (b7 & 0xC0030020u) == 0xC0030020u;
  return 0;
}
#endif

GNMR_DEF int gnmr_isa_supported(int isa) {
  switch (isa) {
  case GNMR_ISA_SCALAR: return 1;
#ifdef GNMR__X86
#ifdef GNMR__AVX2
  case GNMR_ISA_AVX2:
#endif
#ifdef GNMR__AVX512
  case GNMR_ISA_AVX512:
#endif
  case GNMR_ISA_SSE2: return gnmr__x86_has(isa);
#endif
#ifdef GNMR__NEON
  case GNMR_ISA_NEON: return 1;
#endif
  default: return 0;
  }
}

GNMR_DEF int gnmr_isa_active(void) {
  int isa = gnmr__isa_get(0);
  if (isa < 0) {
    size_t i = 0;
    while (!gnmr_isa_supported(gnmr__isa_preference[i])) i++;
    isa = gnmr__isa_preference[i]; /* the list ends with SCALAR */
    gnmr__isa_set(0, isa);
  }
  return isa;
}

GNMR_DEF int gnmr_isa_force(int isa) {
  if (!gnmr_isa_supported(isa)) return GNMR_EISA;
  gnmr__isa_set(0, isa);
  return GNMR_OK;
}

/* AVX-512 where the controller's kernels are compiled in and the CPU has
   it; scalar otherwise. */
static int gnmr__ctl_isa_supported(int isa) {
  if (isa == GNMR_ISA_SCALAR) return 1;
  return GNMR__CTL_AVX512 && isa == GNMR_ISA_AVX512 &&
         gnmr_isa_supported(GNMR_ISA_AVX512);
}

GNMR_DEF int gnmr_ctl_isa_active(void) {
  int isa = gnmr__isa_get(1);
  if (isa < 0) {
    isa = gnmr__ctl_isa_supported(GNMR_ISA_AVX512) ? GNMR_ISA_AVX512
                                                   : GNMR_ISA_SCALAR;
    gnmr__isa_set(1, isa);
  }
  return isa;
}

GNMR_DEF int gnmr_ctl_isa_force(int isa) {
  if (!gnmr__ctl_isa_supported(isa)) return GNMR_EISA;
  gnmr__isa_set(1, isa);
  return GNMR_OK;
}

GNMR_DEF const char *gnmr_isa_name(int isa) {
  switch (isa) {
  case GNMR_ISA_SCALAR: return "scalar";
  case GNMR_ISA_SSE2: return "sse2";
  case GNMR_ISA_AVX2: return "avx2";
  case GNMR_ISA_AVX512: return "avx512";
  case GNMR_ISA_NEON: return "neon";
  default: return "unknown";
  }
}

static gnmr__rows_fn gnmr__active_rows(void) {
  switch (gnmr_isa_active()) {
#ifdef GNMR__SSE2
  case GNMR_ISA_SSE2: return gnmr__rows_sse2;
#endif
#ifdef GNMR__AVX2
  case GNMR_ISA_AVX2: return gnmr__rows_avx2;
#endif
#ifdef GNMR__AVX512
  case GNMR_ISA_AVX512: return gnmr__rows_avx512;
#endif
#ifdef GNMR__NEON
  case GNMR_ISA_NEON: return gnmr__rows_neon;
#endif
  default: return gnmr__rows_scalar;
  }
}

#ifdef __cplusplus
}
#endif
#if defined(GNMR__FP_PRECISE) && GNMR__FP_PRECISE == 1
#pragma float_control(pop)
#elif defined(GNMR__FP_PRECISE)
#pragma GCC pop_options
#if defined(GNMR__HAD_FAST_MATH) && !defined(__FAST_MATH__)
#define __FAST_MATH__ 1
#endif
#ifdef GNMR__HAD_FINITE_MATH_ONLY
#undef __FINITE_MATH_ONLY__
#define __FINITE_MATH_ONLY__ 1
#endif
#if defined(GNMR__HAD_NO_MATH_ERRNO) && !defined(__NO_MATH_ERRNO__)
#define __NO_MATH_ERRNO__ 1
#endif
#if defined(GNMR__HAD_ASSOCIATIVE_MATH) && !defined(__ASSOCIATIVE_MATH__)
#define __ASSOCIATIVE_MATH__ 1
#endif
#if defined(GNMR__HAD_RECIPROCAL_MATH) && !defined(__RECIPROCAL_MATH__)
#define __RECIPROCAL_MATH__ 1
#endif
#if defined(GNMR__HAD_NO_SIGNED_ZEROS) && !defined(__NO_SIGNED_ZEROS__)
#define __NO_SIGNED_ZEROS__ 1
#endif
#if defined(GNMR__HAD_NO_TRAPPING_MATH) && !defined(__NO_TRAPPING_MATH__)
#define __NO_TRAPPING_MATH__ 1
#endif
#endif
#endif /* GNMR__IMPLEMENTED */
#endif /* GNMR_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the gnmr.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
*/
