/* run.c - one fixed workload through a private copy of gnmr.h (GNMR_STATIC),
   reduced to digests of every output byte. The Makefile builds it twice,
   plain (-O2 -ffp-contract=off) and -Ofast, each exporting FASTMATH_RUN
   under its own name; tests/fastmath/cross.c links both and compares. The
   inputs are made from integers only, so both builds feed the same bits. */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/splitmix.h"
#include "tests/fastmath/run.h"

#include <string.h>

static uint64_t rng_state;
static uint64_t rng(void) { return splitmix_next(&rng_state); }

static void mix(uint64_t *h, const void *p, size_t n) { /* FNV-1a */
  const unsigned char *b = (const unsigned char *)p;
  while (n--) *h = (*h ^ *b++) * 0x100000001B3ull;
}

/* A gradient norm's bits: mostly near 1 (exponent 126-127), some spikes of
   2^3 to 2^9, and now and then NaN, +-Inf, -0, 0 or a subnormal; with wide,
   any magnitude over 130 binades instead of near 1. Bits, not
   floats: under -Ofast (-fno-signed-zeros) even returning 0.0f and -0.0f
   from two branches may merge them. */
static uint32_t norm_bits(int wide) {
  uint64_t r = rng();
  uint32_t mant = (uint32_t)(r >> 41), pick = (uint32_t)(r & 1023);
  if (wide && pick > 5) /* 2^-67 .. 2^62: window sums that round */
    return ((60u + (uint32_t)(r >> 10) % 130u) << 23) | mant;
  if (pick == 0) return 0x7FC00000u | mant; /* NaN */
  if (pick == 1) return 0x7F800000u;        /* +Inf */
  if (pick == 2) return 0xFF800000u;        /* -Inf */
  if (pick == 3) return 0x80000000u;        /* -0 */
  if (pick == 4) return 0;
  if (pick == 5) return mant; /* subnormal */
  if (pick < 40) return ((130u + pick % 7) << 23) | mant;
  return ((126u + (uint32_t)(r >> 10) % 2) << 23) | mant;
}

#define N_UNITS 37 /* four groups of eight and a tail */
#define STEPS 400

static uint64_t run_controller(int isa) {
  static gnmr_slot units[N_UNITS];
  static unsigned char ck[1 << 14];
  uint64_t h = 0xCBF29CE484222325ull;
  int cfg_i, step;
  for (cfg_i = 0; cfg_i < 6; cfg_i++) {
    /* 0-4: PAPER mode (its AVX-512 path); 5: NOISE mode, global CLIP */
    gnmr_config c = cfg_i == 5 ? gnmr_config_noise() : gnmr_config_paper();
    gnmr_ctl ctl;
    float norms[N_UNITS];
    gnmr_decision d[N_UNITS];
    size_t written = 0;
    uint32_t u;
    if (cfg_i == 1) c.spike_policy = GNMR_SPIKE_SKIP, c.max_recovering = 3;
    if (cfg_i == 2)
      c.ratio_threshold = 1.25, c.delta_window = 3, c.eps = 1e-300;
    if (cfg_i == 3) c.history_decay = 0.9, c.warmup_steps = 0, c.lock_steps = 2;
    if (cfg_i == 4) /* calm whatever the norms: the AVX-512 path's arithmetic */
      c.ratio_threshold = 1e30, c.delta_threshold = 1e30;
    if (cfg_i == 5)
      c.warmup_steps = 8, c.max_recovering = 3,
      c.global_policy = GNMR_GLOBAL_CLIP;
    rng_state = 1000u + (uint64_t)cfg_i;
    if (gnmr_isa_force(isa) != GNMR_OK) return 0;
    if (gnmr_init(&ctl, &c, units, N_UNITS) != GNMR_OK) return 1;
    for (step = 0; step < STEPS; step++) {
      uint32_t bits[N_UNITS];
      for (u = 0; u < N_UNITS; u++) bits[u] = norm_bits(cfg_i == 4);
      memcpy(norms, bits, sizeof norms);
      if (gnmr_step(&ctl, norms, d) != GNMR_OK) return 2;
      mix(&h, d, sizeof d);
    }
    if (gnmr_checkpoint_save(&ctl, ck, sizeof ck, &written) != GNMR_OK)
      return 3;
    mix(&h, ck, written);
    if (gnmr_checkpoint_load(&ctl, ck, written) != GNMR_OK) return 4;
  }
  return h;
}

/* Elements: any finite value of the dtype's range, sometimes NaN/Inf. */
static uint32_t elem_bits(int dtype) {
  uint64_t r = rng();
  uint32_t pick = (uint32_t)(r & 4095), b = (uint32_t)(r >> 32);
  if (dtype == GNMR_DTYPE_F32) {
    if (pick == 0) return 0x7FC00001u;
    if (pick == 1) return 0xFF800000u;
    return (b & 0x807FFFFFu) | ((1u + b % 253u) << 23);
  }
  if (pick == 0) return dtype == GNMR_DTYPE_F16 ? 0x7C00u : 0x7F80u;
  return dtype == GNMR_DTYPE_F16 ? (b & 0xFFFFu) % 0x7C00u | (b & 0x8000u)
                                 : (b & 0xFFFFu) % 0x7F80u | (b & 0x8000u);
}

static uint64_t run_norms(int isa) {
  static float f32[3 * GNMR_SUM_CHUNK + 77];
  static uint16_t h16[3 * GNMR_SUM_CHUNK + 77], b16[3 * GNMR_SUM_CHUNK + 77];
  const size_t lens[] = {0,
                         1,
                         31,
                         33,
                         GNMR_SUM_CHUNK,
                         2 * GNMR_SUM_CHUNK + 5,
                         3 * GNMR_SUM_CHUNK + 77};
  uint64_t h = 0xCBF29CE484222325ull;
  size_t i, l;
  int rep;
  if (gnmr_isa_force(isa) != GNMR_OK) return 0;
  rng_state = 7;
  for (rep = 0; rep < 3; rep++) {
    gnmr_tensor t[3];
    float unit_norms[2];
    double unit_sumsq[2];
    for (i = 0; i < 3 * GNMR_SUM_CHUNK + 77; i++) {
      uint32_t bits = elem_bits(GNMR_DTYPE_F32);
      memcpy(&f32[i], &bits, 4);
      h16[i] = (uint16_t)elem_bits(GNMR_DTYPE_F16);
      b16[i] = (uint16_t)elem_bits(GNMR_DTYPE_BF16);
    }
    for (l = 0; l < sizeof lens / sizeof lens[0]; l++) {
      gnmr_tensor_stats s[3];
      gnmr_stats_f32(f32, lens[l], &s[0]);
      gnmr_stats_f16(h16, lens[l], &s[1]);
      gnmr_stats_bf16(b16, lens[l], &s[2]);
      for (i = 0; i < 3; i++) {
        mix(&h, &s[i].sumsq, 8);
        mix(&h, &s[i].amax, 8);
        mix(&h, &s[i].nonfinite, 8);
      }
    }
    t[0].data = f32, t[0].n = 1000, t[0].dtype = GNMR_DTYPE_F32, t[0].unit = 0;
    t[1].data = h16, t[1].n = 9000, t[1].dtype = GNMR_DTYPE_F16, t[1].unit = 0;
    t[2].data = b16, t[2].n = 5000, t[2].dtype = GNMR_DTYPE_BF16, t[2].unit = 1;
    if (gnmr_unit_norms(t, 3, unit_norms, 2) != GNMR_OK ||
        gnmr_unit_sumsq(t, 3, unit_sumsq, 2) != GNMR_OK)
      return 1;
    mix(&h, unit_norms, sizeof unit_norms);
    mix(&h, unit_sumsq, sizeof unit_sumsq);
  }
  return h;
}

void FASTMATH_RUN(int isa, uint64_t *controller, uint64_t *norms) {
  *controller = run_controller(isa);
  *norms = run_norms(isa);
}

int FASTMATH_SUPPORTED(int isa) { return gnmr_isa_supported(isa); }
