/* The CUDA controller's step (examples/cuda/gnmr_ctl.cuh), run on the CPU:
   the kernels' own bodies, executed thread by thread and phase by phase as
   the grid runs them (barriers between phases), with the blocks of the scan
   in a random order and the candidate list in a random order, as the
   device's scheduling and atomics may leave them. Both launch shapes: the
   four kernels (scan, verdict, units, admit) and the one-block kernel of up
   to GNMR_CUDA_FUSED_MAX units. Every step must give gnmr_step's return
   code, decisions, state, totals and step report bit for bit, in both rule
   sets (NOISE: the median's histogram, G's sum in its fixed order, GLOBAL
   steps under each global policy). A perturbed emulation must be caught.
   No GPU needed. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"
#include "tests/random_config.h"
#define GNMR_CUDA_IMPLEMENTATION
#include "examples/cuda/gnmr_ctl.cuh"

#define MAX_UNITS 70000u
#define MAX_BLOCKS (MAX_UNITS / 256 + 1)

static gnmr_slot slots_a[MAX_UNITS], slots_b[MAX_UNITS];
static float norms[MAX_UNITS];
static gnmr_decision out_a[MAX_UNITS], out_b[MAX_UNITS];
static unsigned char ckpt_a[1024 + MAX_UNITS * 256],
    ckpt_b[1024 + MAX_UNITS * 256];

/* ---- the grid, emulated ------------------------------------------------ */

/* Threads of the admit block: the device's, and odd counts that make the
   strided loops uneven. */
static uint32_t admit_threads = GNMR_CUDA_ADMIT_THREADS;
/* 1: the four kernels whatever the count (the device takes them above
   GNMR_CUDA_FUSED_MAX units only). */
static int force_grid;
/* A wrong emulation the tests must catch: 1 a block's lanes added in
   another order, 2 one settled unit counted in the lowest bin instead of
   its own (a lost atomic), 3 the verdict's c not passed to the units, 4 a
   block's counts without its first warp's row, 5 (the grid's select) one
   of a block's digit counts added to the digit below. */
static int perturb;
/* The scan's per-block sums of squares (device memory on a GPU). */
static double block_sumsq[MAX_BLOCKS];

static void shuffle(uint32_t *list, uint32_t n) {
  uint32_t i;
  for (i = n; i > 1; i--) {
    uint32_t j = (uint32_t)(check_rand() % i), t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
}

/* Block b's sum of squares from its eight lanes (or perturbed). */
static double block_sum(const float *x, uint32_t n, uint32_t b) {
  double lanes[8], seq = 0.0;
  uint32_t j;
  for (j = 0; j < 8; j++) lanes[j] = gnmr_cuda__lane(x, n, b, j);
  if (perturb != 1) return gnmr__fold8(lanes);
  for (j = 0; j < 8; j++) seq += lanes[j];
  return seq;
}

/* One block's histogram merged into hist (the scan's atomics). */
static void merge_bins(uint32_t *hist, uint32_t *block_hist) {
  uint32_t i;
  if (perturb == 2)
    for (i = GNMR_CUDA_BINS; i-- > 1;)
      if (block_hist[i]) {
        block_hist[i]--;
        block_hist[0]++;
        break;
      }
  for (i = 0; i < GNMR_CUDA_BINS; i++) hist[i] += block_hist[i];
}

/* gnmr_cuda__block_count over a block of T threads (T a multiple of 32):
   each warp's counts as its ballots give them, a row per warp, then thread
   k's column: sums[k]. */
static void block_count(const unsigned *bits, uint32_t T, uint32_t K,
                        uint32_t *sums) {
  static uint32_t table[GNMR_CUDA__COUNT_WARPS][GNMR_CUDA__COUNTS];
  uint32_t warp, lane, k;
  for (warp = 0; warp < T / 32; warp++)
    for (k = 0; k < K; k++) {
      uint32_t ballot = 0, c = 0;
      for (lane = 0; lane < 32; lane++)
        ballot |= ((bits[32 * warp + lane] >> k) & 1u) << lane;
      for (; ballot; ballot &= ballot - 1) c++; /* __popc */
      table[warp][k] = c;
    }
  if (perturb == 4) memset(table[0], 0, sizeof table[0]);
  for (k = 0; k < K; k++) sums[k] = gnmr_cuda__column(&table[0][0], T / 32, k);
}

/* The scan's three counts of a block of T threads starting at unit
   first (thread t: unit first + t, past the last NOT_FINITE), each thread's
   bin counted in hist. */
static void scan_block(const gnmr__rules *r, const gnmr__soa *s, const float *x,
                       uint32_t first, uint32_t T, uint32_t *hist,
                       gnmr_cuda_work *w) {
  static unsigned bits[GNMR_CUDA_ADMIT_THREADS];
  uint32_t t, sums[3];
  for (t = 0; t < T; t++) {
    int up;
    const uint32_t code = gnmr_cuda__scan(r, s, x, first + t, &up);
    if (code < GNMR_CUDA_BINS) hist[code]++;
    bits[t] = gnmr_cuda__scan_bits(code, up);
  }
  block_count(bits, T, 3, sums);
  w->finite += sums[GNMR_CUDA__FINITE];
  w->settled += sums[GNMR_CUDA__SETTLED];
  w->up += sums[GNMR_CUDA__UP];
}

/* The units of a block of T threads starting at unit first: each unit's
   rules, candidates listed, the block's tally added field by field. */
static void units_block(const gnmr_ctl *ctl, const gnmr__rules *r,
                        const float *x, gnmr_decision *out, gnmr_cuda_work *w,
                        uint32_t first, uint32_t T, int first_digit) {
  static unsigned bits[GNMR_CUDA_ADMIT_THREADS];
  static uint32_t block_hist[256];
  const gnmr__soa s = gnmr__carve(ctl->units, ctl->n_units);
  uint32_t t, k, sums[GNMR__TALLY_N];
  memset(block_hist, 0, sizeof block_hist);
  for (t = 0; t < T; t++) {
    const unsigned ev = gnmr_cuda__unit(ctl, r, x, out, w, first + t);
    if (ev & GNMR__EV_CANDIDATE) {
      s.heap[w->t.candidates++] = first + t;
      if (first_digit) block_hist[gnmr_cuda__first_digit(&s, first + t)]++;
    }
    bits[t] = gnmr_cuda__tally_bits(ev);
  }
  /* the grid's select: the block's first digits into w->sel's */
  for (k = 0; k < 256; k++) w->sel.hist[k] += block_hist[k];
  block_count(bits, T, GNMR__TALLY_N, sums);
  for (k = 0; k < GNMR__TALLY_N; k++)
    gnmr_cuda__tally_field_add(&w->t, k, sums[k]);
}

/* The median's search as the kernels run it: 64 threads a phase. */
static uint32_t median_search(const uint32_t *hist, uint32_t settled) {
  gnmr_cuda_median m;
  uint32_t bin_sums[64], t;
  m.block = m.below = m.bin = 9999; /* shows if no thread writes */
  for (t = 0; t < 64; t++) bin_sums[t] = gnmr_cuda__bin_sum(hist, t);
  for (t = 0; t < 64; t++) gnmr_cuda__median_block(&m, bin_sums, settled, t);
  if (m.block < 64)
    for (t = 0; t < 64; t++) gnmr_cuda__median_bin(&m, hist, settled, t);
  return m.bin;
}

/* The scan and verdict kernels. */
static void emulate_scan_verdict(gnmr_ctl *ctl, gnmr_cuda_work *w,
                                 const float *x) {
  static uint32_t order[MAX_BLOCKS], block_hist[GNMR_CUDA_BINS];
  const uint32_t n = ctl->n_units, blocks = (n + 255) / 256;
  uint32_t i, t;
  for (i = 0; i < blocks; i++) order[i] = i;
  shuffle(order, blocks);
  for (i = 0; i < blocks; i++) {
    const uint32_t b = order[i];
    const int usable = gnmr__usable(ctl); /* thread 0 */
    gnmr__rules r;
    if (!usable && b == 0) w->unusable = 1;
    gnmr__rules_of(ctl, &r);
    for (t = 0; t < 256; t++) gnmr_cuda__check(x, n, 256 * b + t, w);
    if (!usable || !r.noise) continue;
    memset(block_hist, 0, sizeof block_hist);
    {
      const gnmr__soa s = gnmr__carve(ctl->units, n);
      scan_block(&r, &s, x, 256 * b, GNMR_CUDA_UNIT_THREADS, block_hist, w);
    }
    block_sumsq[b] = block_sum(x, n, b);
    merge_bins(w->hist, block_hist);
  }
  /* verdict */
  /* G: the kernel stages the block sums, adding them in the one order */
  gnmr_cuda__verdict_rules(ctl, w, median_search(w->hist, w->settled),
                           gnmr_cuda__add_blocks(0.0, block_sumsq, blocks));
  memset(w->hist, 0, sizeof w->hist);
}

/* The fused kernel's first phases: the same functions over one block;
   r: the rules it keeps from the step's start. */
static void emulate_fused_scan_verdict(gnmr_ctl *ctl, gnmr_cuda_work *w,
                                       const float *x, gnmr__rules *r) {
  static uint32_t hist[GNMR_CUDA_BINS];
  const uint32_t n = ctl->n_units, blocks = (n + 255) / 256;
  const uint32_t T = gnmr_cuda__fused_threads(n);
  const int usable = gnmr__usable(ctl);
  uint32_t bin = 0, u, i;
  if (!usable) w->unusable = 1;
  gnmr__rules_of(ctl, r);
  memset(hist, 0, sizeof hist);
  for (u = 0; u < n; u++) gnmr_cuda__check(x, n, u, w);
  if (usable && r->noise) {
    const gnmr__soa s = gnmr__carve(ctl->units, n);
    for (u = 0; u < n; u += T) scan_block(r, &s, x, u, T, hist, w);
    if (perturb == 2) {
      static uint32_t moved[GNMR_CUDA_BINS];
      memset(moved, 0, sizeof moved);
      merge_bins(moved, hist);
      memcpy(hist, moved, sizeof hist);
    }
    for (i = 0; i < blocks; i++) block_sumsq[i] = block_sum(x, n, i);
    bin = median_search(hist, w->settled);
  }
  gnmr_cuda__verdict(ctl, w, r, bin,
                     usable && r->noise
                         ? gnmr_cuda__add_blocks(0.0, block_sumsq, blocks)
                         : 0.0);
}

/* One digit of a block's select from the counts in sel->hist (T threads):
   the chunks, then the digit found and fixed by its finder (need read by
   every thread before); 0 if no thread found it, or more than one. */
static int emulate_digit(gnmr_cuda_select *sel, uint32_t T) {
  const uint32_t need = sel->need, depth = sel->depth;
  uint32_t t, found = 0;
  for (t = 0; t < T; t++) gnmr_cuda__select_chunks(sel, t, T);
  for (t = 0; t < T; t++) {
    gnmr_cuda__select_find(sel, need, t, T);
    found += sel->depth != depth + 8 * found; /* this thread fixed one */
  }
  if (found != 1) {
    printf("  the select fixed %u digits (need %u)\n", found, need);
    check__failed_here = 1;
    return 0;
  }
  return 1;
}

/* The select's remaining digits in one block of T threads
   (gnmr_cuda__select_rest); 0 on a failure. */
static int emulate_rest(gnmr_cuda_select *sel, const gnmr__soa *s, uint32_t T) {
  uint32_t t;
  while (gnmr_cuda__select_more(sel)) {
    for (t = 0; t < T; t++) gnmr_cuda__select_clear(sel, t, T);
    for (t = 0; t < T; t++) gnmr_cuda__select_count(sel, s, t, T);
    if (!emulate_digit(sel, T)) return 0;
  }
  return 1;
}

/* The select and rule 7 of the admit kernel, after admit_begin: each
   phase thread by thread, barriers between them. */
static void emulate_select_admit(gnmr_cuda_select *sel, const gnmr__soa *s,
                                 gnmr_decision *out, uint32_t lock_steps) {
  const uint32_t T = admit_threads;
  uint32_t t;
  if (sel->status != GNMR_OK) return;
  if (!emulate_rest(sel, s, T)) return;
  for (t = 0; t < T; t++) gnmr_cuda__admit_units(sel, s, out, lock_steps, t, T);
}

/* ---- the select over the grid, emulated --------------------------------
   Above GNMR_CUDA_GRID_SELECT_MIN units (or, to test it at every count,
   whenever grid_select says so on the four kernels' path): the units
   kernel's blocks count the first digit of their candidates into w->sel's
   histogram and its last block starts the select and fixes that digit;
   each pass launch's blocks (pass_threads threads each, as many as cover
   the units) count
   their slices of the candidate list into their own histograms in a
   random order and add them into w->sel's, and the last of them copies
   the counts, clears w->sel's and fixes the digit, the last launch's
   finishing the select in one block; then rule 7 over the grid's blocks
   in a random order, with block 0's thread 0 ending the step at a random
   point among them. */
static int grid_select;
static uint32_t pass_threads = GNMR_CUDA_ADMIT_THREADS;
static int grid_passes = GNMR_CUDA_GRID_PASSES;
/* Pass launches that counted a digit (large_unit_counts needs some). */
static uint64_t grid_pass_seen;

static void emulate_pass(const gnmr_ctl *ctl, gnmr_cuda_work *w, int finish) {
  static uint32_t order[MAX_UNITS], block_hist[256];
  static gnmr_cuda_select sel; /* the last block's shared copy */
  const uint32_t n = ctl->n_units, T = pass_threads, blocks = (n + T - 1) / T;
  const gnmr__soa s = gnmr__carve(ctl->units, n);
  uint32_t i, t, b;
  memset(sel.hist, 0, sizeof sel.hist);
  gnmr_cuda__select_copy_state(&sel, &w->sel); /* the kernel's thread 0 */
  if (!gnmr_cuda__select_more(&sel)) return;
  grid_pass_seen++;
  for (i = 0; i < blocks; i++) order[i] = i;
  shuffle(order, blocks);
  for (i = 0; i < blocks; i++) {
    memset(block_hist, 0, sizeof block_hist);
    for (t = 0; t < T; t++)
      gnmr_cuda__select_count_into(&sel, &s, block_hist, order[i] * T + t,
                                   blocks * T);
    if (perturb == 5) /* one count a digit too low */
      for (b = 255; b > 0; b--)
        if (block_hist[b]) {
          block_hist[b]--;
          block_hist[b - 1]++;
          break;
        }
    for (b = 0; b < 256; b++) w->sel.hist[b] += block_hist[b];
  }
  /* the last block */
  memcpy(sel.hist, w->sel.hist, sizeof sel.hist);
  memset(w->sel.hist, 0, sizeof w->sel.hist);
  if (!emulate_digit(&sel, T)) return;
  if (finish && !emulate_rest(&sel, &s, T)) return;
  gnmr_cuda__select_copy_state(&w->sel, &sel);
}

/* After the units: the grid's select, rule 7 and the step's end. */
static void emulate_grid_select(gnmr_ctl *ctl, gnmr_cuda_work *w,
                                gnmr_decision *out) {
  static uint32_t order[MAX_BLOCKS];
  const uint32_t n = ctl->n_units, blocks = (n + 255) / 256;
  const uint32_t end_at = (uint32_t)(check_rand() % (uint64_t)(blocks + 1));
  const gnmr__soa s = gnmr__carve(ctl->units, n);
  uint32_t i, t;
  int p;
  /* the units kernel's last block: the first digit's counts, the start */
  {
    static gnmr_cuda_select sel;
    memcpy(sel.hist, w->sel.hist, sizeof sel.hist);
    memset(w->sel.hist, 0, sizeof w->sel.hist);
    gnmr_cuda__select_start(&sel, gnmr_cuda__step_status(w), w->t.candidates,
                            w->t.locked, ctl->cfg.max_recovering);
    if (gnmr_cuda__select_more(&sel) && !emulate_digit(&sel, 256)) return;
    gnmr_cuda__select_copy_state(&w->sel, &sel);
  }
  for (p = 0; p < grid_passes; p++) emulate_pass(ctl, w, p + 1 == grid_passes);
  for (i = 0; i < blocks; i++) order[i] = i;
  shuffle(order, blocks);
  for (i = 0; i <= blocks; i++) {
    if (i == end_at) gnmr_cuda__admit_end(&w->sel, ctl, w);
    if (i < blocks && w->sel.status == GNMR_OK)
      for (t = 0; t < 256; t++)
        gnmr_cuda__admit_units(&w->sel, &s, out, ctl->cfg.lock_steps,
                               order[i] * 256 + t, blocks * 256);
  }
}

/* gnmr_cuda_step: its kernels, or its one-block kernel. */
static int emulated_step(gnmr_ctl *ctl, gnmr_cuda_work *w, const float *x,
                         gnmr_decision *out) {
  const uint32_t n = ctl->n_units;
  const int grid = n > GNMR_CUDA_FUSED_MAX || force_grid;
  /* the grid's select (from the units kernel on) */
  const int gsel = grid && (n > GNMR_CUDA_GRID_SELECT_MIN || grid_select);
  /* threads of a units block, or of the one block's passes */
  const uint32_t T =
      grid ? GNMR_CUDA_UNIT_THREADS : gnmr_cuda__fused_threads(n);
  gnmr_cuda_select sel;
  gnmr__rules r;
  uint32_t u, *heap;
  if (grid)
    emulate_scan_verdict(ctl, w, x);
  else
    emulate_fused_scan_verdict(ctl, w, x, &r);
  if (perturb == 3) w->common = w->rules.common = 0.0;
  /* units: each block copies the verdict's rules (the one block keeps
     its own, the verdict's added); per-block sums */
  if (grid)
    r = w->rules;
  else
    gnmr_cuda__rules_verdict(w, &r);
  heap = gnmr__carve(ctl->units, n).heap;
  for (u = 0; u < n; u += T) units_block(ctl, &r, x, out, w, u, T, gsel);
  if (w->t.candidates > 1) shuffle(heap, w->t.candidates);
  /* admit */
  if (gsel) {
    emulate_grid_select(ctl, w, out);
    return w->status;
  }
  gnmr_cuda__admit_begin(&sel, ctl, w);
  if (sel.status == GNMR_OK) {
    const gnmr__soa s = gnmr__carve(ctl->units, n);
    emulate_select_admit(&sel, &s, out, ctl->cfg.lock_steps);
  }
  gnmr_cuda__admit_end(&sel, ctl, w);
  return w->status;
}

/* ---- comparison -------------------------------------------------------- */

static int same_state(const gnmr_ctl *a, const gnmr_ctl *b) {
  size_t na = 0, nb = 0;
  uint32_t u;
  const gnmr__soa s = gnmr__carve(b->units, b->n_units);
  if (gnmr_checkpoint_save(a, ckpt_a, sizeof ckpt_a, &na) != GNMR_OK ||
      gnmr_checkpoint_save(b, ckpt_b, sizeof ckpt_b, &nb) != GNMR_OK)
    return 0;
  for (u = 0; u < b->n_units; u++)
    if (s.score[u] != 0.0) return 0; /* every mark cleared */
  /* one commit per step that passed: the same generation and seal */
  {
    gnmr_step_report ra, rb;
    if (gnmr_step_info(a, &ra) != GNMR_OK ||
        gnmr_step_info(b, &rb) != GNMR_OK || memcmp(&ra, &rb, sizeof ra) != 0)
      return 0;
  }
  return na == nb && memcmp(ckpt_a, ckpt_b, na) == 0 &&
         a->recovering == b->recovering &&
         a->peak_recovering == b->peak_recovering && a->gen == b->gen &&
         a->seal == b->seal;
}

/* 1: make_norms plays the quiet units' script instead of its kinds. */
static int scripted;

/* Norms for one step of a given kind (or of the script: units that go
   quiet or change level, rules 0 and 9). */
static void make_norms(uint32_t n, int kind, uint32_t step) {
  uint32_t u;
  for (u = 0; u < n; u++) {
    const uint64_t r = check_rand();
    float v = 1.0f + (float)(r % 1000) * 1e-4f;
    if (scripted) {
      switch (u % 5) {
      case 1: v = step < 10 ? 0.0f : 1.0f; break;   /* zero, then active */
      case 2: v = r % 10 == 0 ? v : 0.0f; break;    /* an expert, 10% */
      case 3: v *= step < 20 ? 1.0f : 10.0f; break; /* a level shift */
      case 4: v *= step < 30 ? 1.0f : 0.1f; break;  /* one down */
      default: break;
      }
      norms[u] = v;
      continue;
    }
    switch (kind) {
    case 0: break; /* calm */
    case 1:
      if (r % 13 == 0) v *= 40.0f;
      break; /* spikes */
    case 2:
      if (r % 5 == 0) v = (float)NAN;
      break; /* NaN */
    case 3:  /* +-Inf, huge */
      if (r % 9 == 0) v = (r >> 8) & 1 ? (float)INFINITY : -(float)INFINITY;
      if (r % 9 == 1) v = 3e38f;
      break;
    case 4: v = (r % 3 == 0) ? 64.0f : 1.0f; break; /* exact ties */
    case 5: v = (float)NAN; break;                  /* every unit +inf score */
    case 6: /* one-ulp apart: scores differ in their lowest bits */
      v = 50.0f;
      {
        uint32_t bits, k = (uint32_t)(r % 64);
        memcpy(&bits, &v, 4);
        bits += k;
        memcpy(&v, &bits, 4);
      }
      break;
    case 7:
      if (u == step % n) v = -1.0f;
      break;                                      /* refused step */
    case 8: v = 0.0f; break;                      /* zeros */
    case 9: v *= 3.0f + (float)(step % 3); break; /* every unit rises */
    case 10:
      if (r % 2 == 0) v *= 4.0f;
      break; /* half of them: the median on the edge */
    case 11:
      if (r % 7 == 0) v *= 0.05f;
      break; /* falls */
    default:
      if (r % 4 == 0) v *= 8.0f;
      break; /* a quarter rise: G up, the median not */
    }
    norms[u] = v;
  }
}

/* ---- the host-side path switch, emulated --------------------------------
   gnmr_cuda_paths: create fills both buffers from the state; publish k,
   after step k, packs the (emulated) device's locks into buffer k % 2, the
   copy landing at once (the earliest it can); at the start of each step the
   host reads the last publish's buffer. It must hold the CPU controller's
   gnmr_recovering after the step before, for every unit, and the publish
   of the step it is reading in must go to the other buffer. */
static uint32_t path_buffers[2][MAX_UNITS / 32 + 1];
/* High-fidelity bits the host read over all runs (the test needs some). */
static uint64_t path_high_seen;

static void paths_pack(uint32_t *dst, const gnmr_ctl *dev) {
  const uint32_t n = dev->n_units, *lock = gnmr__carve(dev->units, n).lock;
  uint32_t w;
  for (w = 0; w < GNMR_CUDA_PATH_WORDS(n); w++)
    dst[w] = gnmr_cuda_path_word(lock, n, w);
}

static void paths_create(gnmr_cuda_path_turns *turns, const gnmr_ctl *dev) {
  turns->host[0] = path_buffers[0];
  turns->host[1] = path_buffers[1];
  turns->published = 0;
  paths_pack(path_buffers[0], dev);
  paths_pack(path_buffers[1], dev);
}

static void paths_publish(gnmr_cuda_path_turns *turns, const gnmr_ctl *dev) {
  paths_pack(gnmr_cuda_path_target(turns), dev);
  turns->published++;
}

/* 1 if bits say what gnmr_recovering(cpu, u) says, for every unit, and
   nothing past the last unit. */
static int paths_match(const uint32_t *bits, const gnmr_ctl *cpu) {
  const uint32_t n = cpu->n_units;
  uint32_t u;
  for (u = 0; u < n; u++) {
    if (gnmr_cuda_path_high(bits, u) != gnmr_recovering(cpu, u)) return 0;
    path_high_seen += (uint64_t)gnmr_cuda_path_high(bits, u);
  }
  return n % 32 == 0 || bits[n / 32] >> (n % 32) == 0;
}

/* If set, both controllers take reconf_cfg by gnmr_reconfigure before step
   reconf_step. */
static uint32_t reconf_step;
/* make_norms' kinds of input */
#define KINDS 13
static gnmr_config reconf_cfg;

/* 1: run_pair says nothing about a difference (the perturbation test). */
static int quiet;
/* 1: run_pair takes the four kernels and the grid's select at any count. */
static int always_grid;
/* Steps of the last run_pair that were GLOBAL (gnmr_step's count), and
   the absent unit-steps and level shifts of all runs. */
static uint64_t global_seen, absent_seen, shifts_seen;

/* Runs `steps` steps of both controllers on the same norms. */
static int run_pair(const gnmr_config *cfg, uint32_t n, uint32_t steps,
                    uint32_t calm, int kinds) {
  gnmr_ctl a, b;
  gnmr_cuda_work w;
  gnmr_cuda_path_turns turns;
  uint32_t step;
  memset(&w, 0, sizeof w);
  force_grid = n <= GNMR_CUDA_FUSED_MAX && (always_grid || check_rand() % 2);
  /* the grid's select on the four kernels' path at any count, with blocks
     of other widths and other numbers of grid passes */
  grid_select = always_grid || check_rand() % 2;
  pass_threads = check_rand() % 3 == 0
                     ? 32 * (1 + (uint32_t)(check_rand() % 32))
                     : GNMR_CUDA_ADMIT_THREADS;
  grid_passes = check_rand() % 3 == 0 ? 1 + (int)(check_rand() % 11)
                                      : GNMR_CUDA_GRID_PASSES;
  if (gnmr_init(&a, cfg, slots_a, n) != GNMR_OK ||
      gnmr_init(&b, cfg, slots_b, n) != GNMR_OK)
    return 0;
  paths_create(&turns, &b);
  for (step = 0; step < steps; step++) {
    const int kind = (int)(check_rand() % (uint64_t)kinds);
    const int with_out = (int)(check_rand() % 4) != 0;
    /* the host at the start of the step: the last step's decisions */
    const uint32_t *held = gnmr_cuda_path_latest(&turns);
    int ra, rb;
    if (!paths_match(held, &a)) {
      if (!quiet)
        printf("  n %u step %u: the host's path bits differ\n", n, step);
      return 0;
    }
    if (reconf_step > 0 && step == reconf_step) {
      ra = gnmr_reconfigure(&a, &reconf_cfg);
      rb = gnmr_reconfigure(&b, &reconf_cfg);
      if (ra != GNMR_OK || rb != GNMR_OK) return 0;
    }
    make_norms(n, step < calm ? 0 : kind, step); /* calm first */
    /* the same bytes in both outputs, so an unwritten field compares too */
    memset(out_a, (int)(step & 0xFF), sizeof out_a[0] * n);
    memset(out_b, (int)(step & 0xFF), sizeof out_b[0] * n);
    ra = gnmr_step(&a, norms, with_out ? out_a : NULL);
    rb = emulated_step(&b, &w, norms, with_out ? out_b : NULL);
    if (ra != rb) {
      if (!quiet) printf("  n %u step %u: rc %d vs %d\n", n, step, ra, rb);
      return 0;
    }
    { /* between steps the grid select's counts are 0 (the next step's) */
      uint32_t bin;
      for (bin = 0; bin < 256; bin++)
        if (w.sel.hist[bin] != 0) {
          if (!quiet)
            printf("  n %u step %u: the select's counts left\n", n, step);
          return 0;
        }
    }
    if (with_out && memcmp(out_a, out_b, sizeof out_a[0] * n) != 0) {
      if (!quiet)
        printf("  n %u step %u kind %d: decisions differ\n", n, step, kind);
      return 0;
    }
    /* the whole state: every step for small counts, else every 8th */
    if ((n <= 4096 || step % 8 == 7 || step + 1 == steps) &&
        !same_state(&a, &b)) {
      if (!quiet)
        printf("  n %u step %u kind %d: state differs\n", n, step, kind);
      return 0;
    }
    /* the end of the device step: publish, never into the held buffer */
    if (gnmr_cuda_path_target(&turns) == held) return 0;
    paths_publish(&turns, &b);
  }
  global_seen += a.global_steps;
  absent_seen += a.absent;
  shifts_seen += a.level_shifts;
  return 1;
}

/* ---- tests ------------------------------------------------------------- */

TEST(small_unit_counts_every_kind_of_input) {
  static const uint32_t sizes[] = {1,   2,   3,    5,    8,    31,  255,
                                   256, 257, 1000, 2048, 2049, 2305};
  size_t i;
  int trial;
  const int trials = check_quick() ? 8 : 24; /* 8: each admit width */
  for (trial = 0; trial < trials; trial++)
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      const gnmr_config cfg = random_config(sizes[i]);
      if (sizes[i] > 1000 && trial % 8 != 0) continue;
      admit_threads = trial % 3 == 0 ? 1 + (uint32_t)(check_rand() % 300)
                                     : GNMR_CUDA_ADMIT_THREADS;
      REQUIRE(run_pair(&cfg, sizes[i], 60, 20, KINDS));
    }
  admit_threads = GNMR_CUDA_ADMIT_THREADS;
}

/* The host-side path switch over spiky runs of both rule sets: the host
   reads step t's decisions at step t + 1 (run_pair checks every unit of
   every step of every test), and some of them are high fidelity. */
TEST(host_reads_step_t_paths_at_t_plus_1) {
  static const uint32_t sizes[] = {1, 31, 32, 33, 300, 2049, 4100};
  size_t i;
  path_high_seen = 0;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gnmr_config cfg = i % 2 ? gnmr_config_paper() : gnmr_config_noise();
    cfg.max_recovering = 1 + sizes[i] / 8;
    EXPECT(run_pair(&cfg, sizes[i], 60, 20, 3));
  }
  EXPECT(path_high_seen > 0);
}

TEST(zero_units) {
  const gnmr_config cfg = random_config(0);
  REQUIRE(run_pair(&cfg, 0, 3, 0, 1));
}

TEST(quiet_units_and_level_shifts) {
  /* rules 0 and 9 through the device's kernels: units at 0 (absent), an
     expert routed one step in ten, levels that move up and down for good;
     both rule sets, runs of 2-9 steps, any spread */
  static const uint32_t sizes[] = {5, 40, 300, 5000};
  size_t i;
  int trial;
  absent_seen = shifts_seen = 0;
  scripted = 1;
  for (trial = 0; trial < 8; trial++)
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      gnmr_config cfg = random_config(sizes[i]);
      cfg.warmup_steps = (uint32_t)(check_rand() % 4);
      cfg.shift_steps = 2 + (uint32_t)(check_rand() % 8);
      cfg.shift_spread = (double)(check_rand() % 5) / 2.0;
      if (!run_pair(&cfg, sizes[i], 70, 0, 1)) {
        scripted = 0;
        REQUIRE(0);
      }
    }
  scripted = 0;
  printf("  %llu absent unit-steps, %llu level shifts\n",
         (unsigned long long)absent_seen, (unsigned long long)shifts_seen);
  EXPECT(absent_seen > 0 && shifts_seen > 0);
}

TEST(large_unit_counts) {
  static const uint32_t sizes[] = {4096, 65536, MAX_UNITS};
  size_t i;
  grid_pass_seen = 0;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gnmr_config cfg = random_config(sizes[i]);
    cfg.warmup_steps = 2;
    cfg.common_min_units = 8;
    REQUIRE(run_pair(&cfg, sizes[i], 24, 4, KINDS));
    cfg.max_recovering = 3; /* a small budget: the select works hardest */
    cfg.rule = GNMR_RULE_NOISE - cfg.rule; /* and the other rule set */
    REQUIRE(run_pair(&cfg, sizes[i], 16, 4, KINDS));
  }
  /* the grid's select counted digits (above GNMR_CUDA_GRID_SELECT_MIN
     units every step takes it) */
  printf("  %llu grid select passes\n", (unsigned long long)grid_pass_seen);
  EXPECT(grid_pass_seen > 0);
}

TEST(renewals_and_cooldowns) {
  /* long locks, spikes every step: locks run out while risky (renewed),
     and released units come back through cooldown */
  int trial;
  for (trial = 0; trial < 40; trial++) {
    gnmr_config cfg = random_config(64);
    cfg.lock_steps = 1 + (uint32_t)(trial % 3);
    cfg.cooldown_steps = (uint32_t)(trial % 4);
    cfg.warmup_steps = 0;
    cfg.max_recovering = 1 + (uint32_t)(trial % 16);
    REQUIRE(run_pair(&cfg, 64, 120, 20, KINDS));
  }
}

TEST(reconfigured_mid_run) {
  /* fewer slots than units in recovery (no renewals, no admissions until
     they drain), more slots, other thresholds, windows and locks */
  int trial;
  for (trial = 0; trial < 40; trial++) {
    const uint32_t n = 1 + (uint32_t)(check_rand() % 200);
    gnmr_config cfg = random_config(n);
    cfg.max_recovering = n;
    cfg.warmup_steps = 0;
    reconf_cfg = random_config(n);
    if (trial % 2) reconf_cfg.max_recovering = (uint32_t)(trial / 8);
    if (reconf_cfg.max_recovering > n) reconf_cfg.max_recovering = n;
    reconf_step = 30 + (uint32_t)(check_rand() % 20);
    if (!run_pair(&cfg, n, 90, 20, KINDS)) {
      reconf_step = 0;
      REQUIRE(0);
    }
  }
  reconf_step = 0;
}

TEST(noise_defaults_through_the_warmup) {
  /* the noise-aware rules' defaults (gnmr_config_noise(): warmup 50,
     common_min_units 8), past the warm-up, with budgets from none to
     every unit */
  static const uint32_t sizes[] = {1, 8, 77, 1000, 5000};
  size_t i;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gnmr_config cfg = gnmr_config_noise();
    cfg.max_recovering = (uint32_t)(check_rand() % (sizes[i] + 1));
    REQUIRE(run_pair(&cfg, sizes[i], sizes[i] > 1000 ? 70 : 100, 52, KINDS));
  }
}

TEST(global_steps_under_each_policy) {
  /* GLOBAL steps (every unit up, or G up with a share of the units):
     rule N8's admissions, N9's scale times the global policy's */
  static const uint32_t sizes[] = {8, 300, 2048, 3000};
  int policy, trial;
  size_t i;
  global_seen = 0;
  for (policy = GNMR_GLOBAL_NONE; policy <= GNMR_GLOBAL_SKIP; policy++)
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
      for (trial = 0; trial < (sizes[i] > 1000 ? 1 : 3); trial++) {
        gnmr_config cfg = random_config(sizes[i]);
        cfg.rule = GNMR_RULE_NOISE;
        cfg.global_policy = policy;
        cfg.common_min_units = 1 + (uint32_t)(check_rand() % 8);
        cfg.warmup_steps = 3;
        cfg.max_recovering = sizes[i] / 4;
        REQUIRE(run_pair(&cfg, sizes[i], 50, 10, KINDS));
      }
  EXPECT(global_seen > 20); /* the rule was exercised */
  printf("  %llu GLOBAL steps\n", (unsigned long long)global_seen);
}

TEST(a_perturbed_emulation_is_caught) {
  /* the comparison can fail: a block's lanes added in another order, one
     count in the wrong bin, the median not passed on, a warp's counts
     lost, or a grid select's count in the wrong digit must each show up
     as a difference within a few runs, in both launch shapes */
  static const uint32_t sizes[] = {300, 3000};
  size_t i;
  gnmr_config plain = random_config(300);
  plain.rule = GNMR_RULE_NOISE;
  plain.warmup_steps = 2;
  plain.common_min_units = 1;
  REQUIRE(run_pair(&plain, 300, 40, 4, KINDS)); /* unperturbed: equal */
  quiet = 1;
  for (perturb = 1; perturb <= 5; perturb++)
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      always_grid = perturb == 5;
      int trial, caught = 0;
      for (trial = 0; trial < 6 && !caught; trial++) {
        gnmr_config cfg = random_config(sizes[i]);
        cfg.rule = GNMR_RULE_NOISE;
        cfg.warmup_steps = 2;
        cfg.common_min_units = 1;
        /* a select's digits matter only where more units are risky than
           there are free slots: keep the slots few */
        if (perturb == 5) cfg.max_recovering = 1 + sizes[i] / 64;
        caught = !run_pair(&cfg, sizes[i], 40, 4, KINDS);
      }
      if (!caught)
        printf("  perturbation %d, n %u: not caught\n", perturb, sizes[i]);
      EXPECT(caught);
    }
  perturb = 0;
  quiet = 0;
  always_grid = 0;
}

/* The median's two-phase search alone against gnmr.h's walk
   (gnmr__median_bin) on counts built to sit on its edges: everything in
   one bin (the first, the last), empty blocks, the rank on a block's or a
   bin's border, a single count, and counts that sum to less than settled
   (the walk then ends on the last bin; so must the search). */
TEST(median_search_equals_the_walk) {
  static uint32_t hist[GNMR_CUDA_BINS];
  uint32_t trial, i, mismatches = 0;
  for (trial = 0; trial < 4000; trial++) {
    const uint32_t kind = trial % 8;
    uint32_t settled = 0, at;
    memset(hist, 0, sizeof hist);
    switch (kind) {
    case 0: hist[0] = 1 + (uint32_t)(check_rand() % 1000); break;
    case 1: hist[4095] = 1 + (uint32_t)(check_rand() % 1000); break;
    case 2: /* two bins in different blocks, the rank on the border */
      at = (uint32_t)(check_rand() % 4096);
      hist[at] = 2 + (uint32_t)(check_rand() % 50);
      hist[(at + 64 * (1 + check_rand() % 63)) % 4096] += hist[at];
      break;
    case 3: /* a few counts anywhere */
      for (i = 0; i < 1 + check_rand() % 8; i++)
        hist[check_rand() % 4096] += 1 + (uint32_t)(check_rand() % 3);
      break;
    case 4: /* a band of a block and a half */
      at = (uint32_t)(check_rand() % 4000);
      for (i = at; i < at + 96 && i < 4096; i++)
        hist[i] = (uint32_t)(check_rand() % 3);
      break;
    default: /* many counts around the middle */
      for (i = 0; i < 1000; i++) {
        const double g =
            2048.0 + 300.0 * (check_uniform() - 0.5) * (double)(1 + kind - 5);
        hist[(uint32_t)g]++;
      }
    }
    for (i = 0; i < GNMR_CUDA_BINS; i++) settled += hist[i];
    if (settled == 0) settled = 1;
    if (trial % 50 == 7) settled += 1 + (uint32_t)(check_rand() % 40);
    if (median_search(hist, settled) != gnmr__median_bin(hist, settled))
      mismatches++;
  }
  EXPECT(mismatches == 0);
  if (mismatches) printf("  %u of 4000 counts: another bin\n", mismatches);
}

/* The select alone, on scores built to be hard: shared high bytes, one-ulp
   differences, exact ties, +inf, the smallest and largest doubles. The
   admitted set must be the k best by (score descending, index ascending). */
static double hard_score(uint64_t r) {
  double v;
  uint64_t bits;
  switch (r % 7) {
  case 0: return (double)INFINITY;
  case 1: return 5e-324;
  case 2: return 1.7976931348623157e308;
  case 3: return 1.5;
  case 4:
    v = 2.0;
    memcpy(&bits, &v, 8);
    bits += (r >> 8) % 300;
    memcpy(&v, &bits, 8);
    return v;
  case 5: return 1.0 + (double)((r >> 8) % 4);
  default: return 0.5 + (double)(r >> 11) * 1e-16;
  }
}

static uint32_t rank_of(const gnmr__soa *s, const uint32_t *list, uint32_t c,
                        uint32_t u) {
  uint32_t i, beat = 0;
  for (i = 0; i < c; i++) beat += gnmr__worse(s, u, list[i]) ? 1u : 0u;
  return beat;
}

TEST(select_matches_a_full_ranking) {
  static gnmr_slot slots[1024];
  int trial;
  for (trial = 0; trial < 200; trial++) {
    const uint32_t n = 1 + (uint32_t)(check_rand() % 1024);
    gnmr__soa s = gnmr__carve(slots, n);
    gnmr_cuda_select sel;
    gnmr_cuda_work w;
    gnmr_ctl ctl;
    uint32_t u, c = 0, *list;
    gnmr_config cfg = gnmr_config_paper();
    cfg.max_recovering = (uint32_t)(check_rand() % (uint64_t)(n + 1));
    cfg.lock_steps = 1; /* an admitted unit: lock 1 */
    REQUIRE(gnmr_init(&ctl, &cfg, slots, n) == GNMR_OK);
    s = gnmr__carve(slots, n);
    list = s.heap;
    for (u = 0; u < n; u++)
      if (check_rand() % 3 != 0) {
        s.score[u] = hard_score(check_rand());
        list[c++] = u;
      }
    shuffle(list, c);
    memset(&w, 0, sizeof w);
    w.t.candidates = c;
    gnmr_cuda__admit_begin(&sel, &ctl, &w);
    admit_threads = 1 + (uint32_t)(check_rand() % 1024);
    {
      /* keep the scores: admit_units clears them */
      static double kept[1024];
      memcpy(kept, s.score, sizeof kept[0] * n);
      if (trial % 2) { /* the grid's select: any block width and passes */
        pass_threads = 32 * (1 + (uint32_t)(check_rand() % 32));
        grid_passes = 1 + (int)(check_rand() % 11);
        for (u = 0; u < c; u++) /* the units kernel's first digits */
          w.sel.hist[gnmr_cuda__first_digit(&s, list[u])]++;
        emulate_grid_select(&ctl, &w, NULL);
        sel = w.sel;
      } else {
        emulate_select_admit(&sel, &s, NULL, 1);
      }
      memcpy(s.score, kept, sizeof kept[0] * n);
    }
    for (u = 0; u < c; u++) {
      const uint32_t unit = list[u];
      const int admitted = s.lock[unit] == 1;
      const int best = rank_of(&s, list, c, unit) < sel.k;
      EXPECT_EQ_INT(admitted, best);
      if (admitted != best) break;
    }
  }
  admit_threads = GNMR_CUDA_ADMIT_THREADS;
  pass_threads = GNMR_CUDA_ADMIT_THREADS;
  grid_passes = GNMR_CUDA_GRID_PASSES;
}

TEST(refused_steps_change_nothing) {
  gnmr_config cfg = random_config(300);
  gnmr_ctl b;
  gnmr_cuda_work w;
  size_t na, nb;
  uint32_t u;
  REQUIRE(run_pair(&cfg, 300, 30, 20, 4));
  REQUIRE(gnmr_init(&b, &cfg, slots_b, 300) == GNMR_OK);
  memset(&w, 0, sizeof w);
  make_norms(300, 1, 0);
  REQUIRE(emulated_step(&b, &w, norms, out_b) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_save(&b, ckpt_a, sizeof ckpt_a, &na) == GNMR_OK);
  for (u = 0; u < 300; u++) out_a[u] = out_b[u];
  norms[17] = -0.5f;
  EXPECT_EQ_INT(emulated_step(&b, &w, norms, out_b), GNMR_ENORM);
  EXPECT_EQ_INT(w.first_error, GNMR_ENORM);
  REQUIRE(gnmr_checkpoint_save(&b, ckpt_b, sizeof ckpt_b, &nb) == GNMR_OK);
  EXPECT(na == nb && memcmp(ckpt_a, ckpt_b, na) == 0);
  EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
  norms[17] = 1.0f;
  {
    /* edited by hand (the seal no longer matches), a stale struct copy
       (its twin stepped on), not a controller: refused as gnmr_step
       refuses them, and nothing changes */
    static gnmr_slot before[300];
    gnmr_ctl edited = b, stale = b, twin;
    memcpy(before, slots_b, sizeof before);
    edited.cfg.lock_steps++;
    EXPECT_EQ_INT(gnmr_step(&edited, norms, NULL), GNMR_ESTATE);
    EXPECT_EQ_INT(emulated_step(&edited, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
    twin = b;
    REQUIRE(emulated_step(&twin, &w, norms, NULL) == GNMR_OK);
    memcpy(before, slots_b, sizeof before);
    EXPECT_EQ_INT(gnmr_step(&stale, norms, NULL), GNMR_ESTATE);
    EXPECT_EQ_INT(emulated_step(&stale, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    b.magic = 0; /* not a controller */
    EXPECT_EQ_INT(emulated_step(&b, &w, norms, out_b), GNMR_ESTATE);
    EXPECT(memcmp(before, slots_b, sizeof before) == 0);
    EXPECT(memcmp(out_a, out_b, sizeof out_a[0] * 300) == 0);
  }
}

/* The device placer (gnmr_ctl.cuh's one-thread kernel over a device copy
   of a gnmr_place) against gnmr_place_step on the host: the copy made as
   gnmr_cuda_place_create makes it (the struct with its units pointer
   moved), the kernel's body run for 1000 steps of a decaying signal with
   NaNs, zeros and a refused step: the same high-fidelity units, state and
   codes bit for bit, and the run fires. */
#define PLACE_UNITS 300u
static double place_unit_noise(void) { /* in [-1, 1) */
  return (double)(check_rand() >> 11) / 4503599627370496.0 - 1.0;
}
static gnmr_place_unit place_a[PLACE_UNITS], place_b[PLACE_UNITS];
/* Step t's signals of a run of `steps`: the update falls with a cosine
   learning rate, the quantization error grows; a NaN update and a zero
   error now and then (no observation). */
static void place_signal(uint32_t t, uint32_t steps, double *up, double *q) {
  const double lr = 0.1 + 0.45 * (1 + cos(3.14159265358979 * t / steps));
  uint32_t u;
  for (u = 0; u < PLACE_UNITS; u++) {
    up[u] = lr * (1 + 0.2 * place_unit_noise()) * (1 + u % 5);
    q[u] = (1 + 2.0 * t / steps) * (1 + 0.01 * place_unit_noise());
  }
  if (t % 97 == 3) up[t % PLACE_UNITS] = (double)NAN;
  if (t % 89 == 5) q[(t * 7) % PLACE_UNITS] = 0.0;
}
/* The scale kernel's element: a non-finite gradient (rule 8's scale 0)
   becomes 0, not NaN * 0; other scales are the double product (the first
   GPU run of 0.4 found train_step's NaN surviving its scale of 0). */
TEST(scale_zero_clears_a_non_finite_gradient) {
  const double bad[4] = {(double)NAN, (double)INFINITY, -(double)INFINITY,
                         -2.5};
  int i;
  for (i = 0; i < 4; i++) {
    const double y = gnmr_cuda__scaled(bad[i], 0.0);
    EXPECT(y == 0.0 && !signbit(y));
  }
  EXPECT(gnmr_cuda__scaled(3.0, 0.5) == 1.5);
  EXPECT(isnan(gnmr_cuda__scaled((double)NAN, 0.5)));
}

TEST(placer_kernel_body_equals_gnmr_place_step) {
  gnmr_place a, b;
  gnmr_place_config c = gnmr_place_config_default();
  double costs[PLACE_UNITS], up[PLACE_UNITS], q[PLACE_UNITS];
  uint8_t high_a[PLACE_UNITS], high_b[PLACE_UNITS];
  int32_t status[2] = {GNMR_OK, GNMR_OK};
  uint32_t u, t;
  int same = 1;
  for (u = 0; u < PLACE_UNITS; u++) costs[u] = 1 + (double)(u % 7);
  c.budget = 0.2;
  REQUIRE(gnmr_place_init(&a, &c, place_a, costs, PLACE_UNITS) == GNMR_OK);
  memcpy(place_b, place_a, sizeof place_b); /* create's two copies */
  b = a;
  b.units = place_b;
  for (t = 0; t < 1000; t++) {
    place_signal(t, 1000, up, q);
    if (t == 400) q[17] = -1.0; /* refused: neither changes */
    EXPECT_EQ_INT(gnmr_place_step(&a, up, q, high_a),
                  t == 400 ? GNMR_ENORM : GNMR_OK);
    gnmr_cuda__place_one(&b, up, q, high_b, status);
    EXPECT_EQ_INT(status[0], t == 400 ? GNMR_ENORM : GNMR_OK);
    if (t != 400 && memcmp(high_a, high_b, sizeof high_a) != 0) same = 0;
  }
  EXPECT(same);
  EXPECT_EQ_INT(status[1], GNMR_ENORM); /* the first refused step's */
  EXPECT(memcmp(place_a, place_b, sizeof place_a) == 0);
  b.units = place_a;
  EXPECT(memcmp(&a, &b, sizeof a) == 0);
  EXPECT_EQ_INT(a.n_fired, PLACE_UNITS);
}

/* The same, told the plan T and run 100 steps past it, for the GEMM bits:
   serve LOW with the backward GEMMs, serve LOW with all three (the placer
   drops the forward), serve HIGH with the forward alone. Every step the
   kernel's high[] equals gnmr_place_step's byte for byte and
   gnmr_place_high's; each entry is 0 or the placed GEMMs (cfg.gemms, less
   the forward under LOW), so no forward bit under LOW; the run fires
   before the plan's end with some unit placed; and every call past the
   plan (the calls of steps k >= T - 1, k counting the calls not refused:
   rule P7) hands back the last planned step's placement (the call of step
   T - 2's). */
#define PLACE_PLAN 300u
TEST(placer_kernel_body_gemm_bits_serve_and_past_the_plan) {
  static const uint32_t cases[3][3] = {
      /* serve, gemms, the GEMMs a placed unit runs high */
      {GNMR_SERVE_LOW, GNMR_GEMM_DGRAD | GNMR_GEMM_WGRAD,
       GNMR_GEMM_DGRAD | GNMR_GEMM_WGRAD},
      {GNMR_SERVE_LOW, GNMR_GEMM_ALL, GNMR_GEMM_DGRAD | GNMR_GEMM_WGRAD},
      {GNMR_SERVE_HIGH, GNMR_GEMM_FWD, GNMR_GEMM_FWD}};
  double costs[PLACE_UNITS], up[PLACE_UNITS], q[PLACE_UNITS];
  uint8_t high_a[PLACE_UNITS], high_b[PLACE_UNITS], planned[PLACE_UNITS];
  uint32_t i, u, t, k;
  for (u = 0; u < PLACE_UNITS; u++) costs[u] = 1 + (double)(u % 7);
  for (i = 0; i < 3; i++) {
    gnmr_place a, b;
    gnmr_place_config c = gnmr_place_config_default();
    int32_t status[2] = {GNMR_OK, GNMR_OK};
    uint32_t same = 1, other_bits = 0, fwd_low = 0, moved = 0, placed = 0;
    c.budget = 0.2;
    c.serve = cases[i][0];
    c.gemms = cases[i][1];
    c.planned_steps = PLACE_PLAN;
    REQUIRE(gnmr_place_init(&a, &c, place_a, costs, PLACE_UNITS) == GNMR_OK);
    memcpy(place_b, place_a, sizeof place_b); /* create's two copies */
    b = a;
    b.units = place_b;
    for (t = k = 0; t < PLACE_PLAN + 100; t++) {
      place_signal(t, PLACE_PLAN, up, q);
      if (t == 100) q[17] = -1.0; /* refused: neither changes */
      EXPECT_EQ_INT(gnmr_place_step(&a, up, q, high_a),
                    t == 100 ? GNMR_ENORM : GNMR_OK);
      gnmr_cuda__place_one(&b, up, q, high_b, status);
      EXPECT_EQ_INT(status[0], t == 100 ? GNMR_ENORM : GNMR_OK);
      if (t == 100) continue;
      if (memcmp(high_a, high_b, sizeof high_a) != 0) same = 0;
      for (u = 0; u < PLACE_UNITS; u++) {
        if (high_b[u] != 0 && high_b[u] != cases[i][2]) other_bits++;
        if (c.serve == GNMR_SERVE_LOW && (high_b[u] & GNMR_GEMM_FWD)) fwd_low++;
        if (gnmr_place_high(&b, u) != (int)high_b[u]) same = 0;
        if (k == PLACE_PLAN - 2) placed += high_b[u] != 0;
      }
      if (k == PLACE_PLAN - 2) memcpy(planned, high_b, sizeof planned);
      if (k >= PLACE_PLAN - 1 && memcmp(planned, high_b, sizeof planned) != 0)
        moved++; /* P7: past the plan nothing changes */
      k++;
    }
    EXPECT_EQ_INT(k, a.steps); /* every call but the refused one counted */
    EXPECT(same);
    EXPECT_EQ_INT(other_bits, 0);
    EXPECT_EQ_INT(fwd_low, 0);
    EXPECT_EQ_INT(moved, 0);
    EXPECT(placed > 0);
    EXPECT_EQ_INT(status[1], GNMR_ENORM);
    EXPECT(a.n_fired == PLACE_UNITS && a.fired_step < PLACE_PLAN - 2);
    EXPECT(memcmp(place_a, place_b, sizeof place_a) == 0);
    b.units = place_a;
    EXPECT(memcmp(&a, &b, sizeof a) == 0);
    printf("  serve %s, gemms %u: %u of %u units placed at the plan's end\n",
           c.serve == GNMR_SERVE_LOW ? "LOW" : "HIGH", c.gemms, placed,
           PLACE_UNITS);
  }
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(small_unit_counts_every_kind_of_input),
      CHECK_CASE(host_reads_step_t_paths_at_t_plus_1),
      CHECK_CASE(zero_units),
      CHECK_CASE(quiet_units_and_level_shifts),
      CHECK_CASE(large_unit_counts),
      CHECK_CASE(renewals_and_cooldowns),
      CHECK_CASE(reconfigured_mid_run),
      CHECK_CASE(noise_defaults_through_the_warmup),
      CHECK_CASE(global_steps_under_each_policy),
      CHECK_CASE(a_perturbed_emulation_is_caught),
      CHECK_CASE(median_search_equals_the_walk),
      CHECK_CASE(select_matches_a_full_ranking),
      CHECK_CASE(refused_steps_change_nothing),
      CHECK_CASE(scale_zero_clears_a_non_finite_gradient),
      CHECK_CASE(placer_kernel_body_equals_gnmr_place_step),
      CHECK_CASE(placer_kernel_body_gemm_bits_serve_and_past_the_plan)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
