/* Norm helpers: every path this CPU can run gives the bits of the scalar path
   and of an independent canonical reference written here from gnmr.h's
   statement of the canonical summation;
   sums are checked against an exact reference (a fixed-point
   superaccumulator); NaN/Inf, FTZ/DAZ, dispatch and the unit API.
   --big=N sets the size of the large accuracy case (default 64M). */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#include <float.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#ifndef TEST_NORM_BIG
#define TEST_NORM_BIG (1u << 26)
#endif
static size_t big_n = TEST_NORM_BIG;

#define CHUNK GNMR_SUM_CHUNK

/* ---- element values, independent of the library ------------------------ */

static double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, -24);
  else
    v = ldexp((double)(m + 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

static double f32_bits_value(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return (double)f;
}

static size_t esize(int dtype) { return dtype == GNMR_DTYPE_F32 ? 4 : 2; }

static double elem(const void *x, size_t i, int dtype) {
  const unsigned char *p = (const unsigned char *)x + i * esize(dtype);
  uint32_t b32;
  uint16_t b16;
  if (dtype == GNMR_DTYPE_F32) {
    memcpy(&b32, p, 4);
    return f32_bits_value(b32);
  }
  memcpy(&b16, p, 2);
  if (dtype == GNMR_DTYPE_F16) return f16_value(b16);
  return f32_bits_value((uint32_t)b16 << 16);
}

/* ---- the canonical summation, as gnmr.h states it --------------------- */

static void ref_stats(const void *x, size_t n, int dtype,
                      gnmr_tensor_stats *out) {
  size_t nchunks = (n + CHUNK - 1) / CHUNK, c, m;
  double *sums = (double *)malloc((nchunks ? nchunks : 1) * sizeof(double));
  out->amax = 0.0;
  out->nonfinite = 0;
  for (c = 0; c < nchunks; c++) {
    double lane[GNMR_SUM_LANES] = {0};
    size_t i, end = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
    int half, j;
    for (i = c * CHUNK; i < end; i++) {
      double v = elem(x, i, dtype);
      lane[(i - c * CHUNK) % GNMR_SUM_LANES] += v * v;
      if (!isfinite(v))
        out->nonfinite++;
      else if (fabs(v) > out->amax)
        out->amax = fabs(v);
    }
    for (half = GNMR_SUM_LANES / 2; half >= 1; half /= 2)
      for (j = 0; j < half; j++) lane[j] += lane[j + half];
    sums[c] = lane[0];
  }
  /* pairs (0,1), (2,3), ... level by level; an odd last one carried up */
  for (m = nchunks; m > 1;) {
    size_t j, k = 0;
    for (j = 0; j + 1 < m; j += 2) sums[k++] = sums[j] + sums[j + 1];
    if (m % 2) sums[k++] = sums[m - 1];
    m = k;
  }
  out->sumsq = nchunks ? sums[0] : 0.0;
  free(sums);
}

/* ---- the library, by dtype ---------------------------------------------- */

static void lib_stats(const void *x, size_t n, int dtype,
                      gnmr_tensor_stats *s) {
  if (dtype == GNMR_DTYPE_F32)
    gnmr_stats_f32((const float *)x, n, s);
  else if (dtype == GNMR_DTYPE_F16)
    gnmr_stats_f16((const uint16_t *)x, n, s);
  else
    gnmr_stats_bf16((const uint16_t *)x, n, s);
}

static double lib_sumsq(const void *x, size_t n, int dtype) {
  if (dtype == GNMR_DTYPE_F32) return gnmr_sumsq_f32((const float *)x, n);
  if (dtype == GNMR_DTYPE_F16) return gnmr_sumsq_f16((const uint16_t *)x, n);
  return gnmr_sumsq_bf16((const uint16_t *)x, n);
}

static int paths[8], n_paths, best_isa;

static void find_paths(void) {
  int isa;
  best_isa = gnmr_isa_active();
  n_paths = 0;
  for (isa = GNMR_ISA_SCALAR; isa <= GNMR_ISA_NEON; isa++)
    if (gnmr_isa_supported(isa)) paths[n_paths++] = isa;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, 8) == 0; }

static const char *dtype_name(int dtype) {
  return dtype == GNMR_DTYPE_F32   ? "f32"
         : dtype == GNMR_DTYPE_F16 ? "f16"
                                   : "bf16";
}

/* Every path against `want` (stats) bit for bit; sumsq of the sumsq-only
   entry point too. Returns the number of mismatches, prints the first. */
static int paths_match(const void *x, size_t n, int dtype,
                       const gnmr_tensor_stats *want, const char *what) {
  int p, bad = 0;
  for (p = 0; p < n_paths; p++) {
    gnmr_tensor_stats s;
    double sq;
    gnmr_isa_force(paths[p]);
    lib_stats(x, n, dtype, &s);
    sq = lib_sumsq(x, n, dtype);
    if (!same_bits(s.sumsq, want->sumsq) || !same_bits(sq, want->sumsq) ||
        !same_bits(s.amax, want->amax) || s.nonfinite != want->nonfinite) {
      if (!bad)
        printf("  %s %s n=%lu path %s: sumsq %.17g/%.17g want %.17g, amax "
               "%.9g want %.9g, nonfinite %lu want %lu\n",
               what, dtype_name(dtype), (unsigned long)n,
               gnmr_isa_name(paths[p]), s.sumsq, sq, want->sumsq, s.amax,
               want->amax, (unsigned long)s.nonfinite,
               (unsigned long)want->nonfinite);
      bad++;
    }
  }
  gnmr_isa_force(best_isa);
  return bad;
}

/* All paths and the reference agree on x[0..n). */
static int check_input(const void *x, size_t n, int dtype, const char *what) {
  gnmr_tensor_stats want;
  ref_stats(x, n, dtype, &want);
  return paths_match(x, n, dtype, &want, what);
}

/* ---- data -------------------------------------------------------------- */

enum { PAT_FULL_RANGE, PAT_SPECIAL, PAT_GAUSS, PAT_COUNT };

/* A finite element of dtype, as its bits. */
static uint32_t gen_bits(int dtype, int pattern) {
  uint32_t r = (uint32_t)check_rand();
  if (pattern == PAT_SPECIAL) {
    /* +-0, smallest/largest subnormal, smallest normal, 1, largest finite */
    static const uint32_t f32s[] = {0x0u,      0x1u,        0x7FFFFFu,
                                    0x800000u, 0x3F800000u, 0x7F7FFFFFu};
    static const uint32_t f16s[] = {0x0u,   0x1u,    0x3FFu,
                                    0x400u, 0x3C00u, 0x7BFFu};
    static const uint32_t bf16s[] = {0x0u,  0x1u,    0x7Fu,
                                     0x80u, 0x3F80u, 0x7F7Fu};
    uint32_t sign =
        (r >> 31) ? (dtype == GNMR_DTYPE_F32 ? 0x80000000u : 0x8000u) : 0;
    unsigned k = (r >> 8) % 8;
    if (k >= 6) return gen_bits(dtype, PAT_FULL_RANGE);
    return sign | (dtype == GNMR_DTYPE_F32   ? f32s[k]
                   : dtype == GNMR_DTYPE_F16 ? f16s[k]
                                             : bf16s[k]);
  }
  if (pattern == PAT_GAUSS) {
    double g = 0.0;
    int i;
    float f;
    uint32_t b;
    for (i = 0; i < 4; i++) g += check_uniform() - 0.5;
    f = (float)(g * 1e-3);
    memcpy(&b, &f, 4);
    if (dtype == GNMR_DTYPE_BF16) return b >> 16;
    if (dtype == GNMR_DTYPE_F16) { /* to f16 by rounding down, finite */
      double a = fabs((double)f) * 16777216.0; /* units of 2^-24 */
      uint32_t s = (b >> 31) ? 0x8000u : 0;
      int e = 0;
      if (a < 1024.0) return s | (uint32_t)a;
      while (a >= 2048.0) {
        a /= 2;
        e++;
      }
      return s | (uint32_t)((e + 1) << 10) | ((uint32_t)a - 1024u);
    }
    return b;
  }
  /* every finite value: random bits, the all-ones exponent avoided */
  if (dtype == GNMR_DTYPE_F32) {
    if ((r & 0x7F800000u) == 0x7F800000u) r &= 0xFF7FFFFFu;
    return r;
  }
  r &= 0xFFFFu;
  if (dtype == GNMR_DTYPE_F16 && (r & 0x7C00u) == 0x7C00u) r &= 0xFBFFu;
  if (dtype == GNMR_DTYPE_BF16 && (r & 0x7F80u) == 0x7F80u) r &= 0xFF7Fu;
  return r;
}

static void put_bits(void *x, size_t i, int dtype, uint32_t bits) {
  unsigned char *p = (unsigned char *)x + i * esize(dtype);
  uint16_t h = (uint16_t)bits;
  if (dtype == GNMR_DTYPE_F32)
    memcpy(p, &bits, 4);
  else
    memcpy(p, &h, 2);
}

static void fill(void *x, size_t n, int dtype, int pattern) {
  size_t i;
  for (i = 0; i < n; i++) put_bits(x, i, dtype, gen_bits(dtype, pattern));
}

/* ---- bit identity ------------------------------------------------------ */

/* The controller's AVX-512 step: x86-64 builds with the AVX-512 kernels. */
#if defined(__x86_64__) && !defined(GNMR_NO_SIMD) && !defined(GNMR_NO_AVX512)
#define CTL_AVX512 1
#else
#define CTL_AVX512 0
#endif

TEST(dispatch) {
  int isa;
  /* the architecture's preference list, best first */
#if defined(__x86_64__) || defined(__i386__)
  static const int prefer[] = {GNMR_ISA_AVX512, GNMR_ISA_AVX2, GNMR_ISA_SSE2,
                               GNMR_ISA_SCALAR};
#elif defined(__aarch64__)
  static const int prefer[] = {GNMR_ISA_NEON, GNMR_ISA_SCALAR};
#else
  static const int prefer[] = {GNMR_ISA_SCALAR};
#endif
  size_t i = 0;
  EXPECT(gnmr_isa_supported(GNMR_ISA_SCALAR));
  EXPECT(gnmr_isa_supported(best_isa));
  while (!gnmr_isa_supported(prefer[i])) i++;
  EXPECT_EQ_INT(best_isa, prefer[i]); /* the first supported one was chosen */
#if defined(__x86_64__) || defined(__i386__)
  EXPECT(!gnmr_isa_supported(GNMR_ISA_NEON));
#else
  EXPECT(!gnmr_isa_supported(GNMR_ISA_SSE2));
  EXPECT(!gnmr_isa_supported(GNMR_ISA_AVX2));
  EXPECT(!gnmr_isa_supported(GNMR_ISA_AVX512));
#endif
  EXPECT_EQ_INT(gnmr_isa_force(-1), GNMR_EISA);
  EXPECT_EQ_INT(gnmr_isa_force(99), GNMR_EISA);
  EXPECT_EQ_INT(gnmr_isa_active(), best_isa); /* refused: unchanged */
  for (isa = 0; isa <= GNMR_ISA_NEON; isa++) {
    if (!gnmr_isa_supported(isa)) continue;
    EXPECT_EQ_INT(gnmr_isa_force(isa), GNMR_OK);
    EXPECT_EQ_INT(gnmr_isa_active(), isa);
  }
  gnmr_isa_force(best_isa);
  for (isa = 0; isa <= GNMR_ISA_NEON; isa++) {
    if (gnmr_isa_supported(isa)) continue;
    EXPECT_EQ_INT(gnmr_isa_force(isa), GNMR_EISA);
    EXPECT_EQ_INT(gnmr_isa_active(), best_isa); /* refused: unchanged */
  }
  EXPECT(strcmp(gnmr_isa_name(GNMR_ISA_AVX512), "avx512") == 0);
  EXPECT(strcmp(gnmr_isa_name(GNMR_ISA_SCALAR), "scalar") == 0);
  EXPECT(strcmp(gnmr_isa_name(42), "unknown") == 0);
#if !defined(GNMR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__))
  /* the library's cpuid/xgetbv against the compiler's own detection */
  EXPECT_EQ_INT(gnmr_isa_supported(GNMR_ISA_SSE2),
                __builtin_cpu_supports("sse2") != 0);
#ifndef GNMR_NO_AVX2
  EXPECT_EQ_INT(gnmr_isa_supported(GNMR_ISA_AVX2),
                __builtin_cpu_supports("avx2") &&
                    __builtin_cpu_supports("fma"));
#endif
#ifndef GNMR_NO_AVX512
  EXPECT_EQ_INT(gnmr_isa_supported(GNMR_ISA_AVX512),
                __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw"));
#endif
#endif
#if !defined(GNMR_NO_SIMD) && !defined(GNMR_NO_NEON) && defined(__aarch64__)
  EXPECT_EQ_INT(best_isa, GNMR_ISA_NEON);
#endif
#ifdef GNMR_NO_SIMD
  EXPECT_EQ_INT(n_paths, 1);
#endif
  /* the controller's path is chosen on its own: forcing the norm helpers'
     changes nothing there, and the other way round */
  {
    int ctl = gnmr_ctl_isa_active();
    EXPECT(ctl == GNMR_ISA_SCALAR || ctl == GNMR_ISA_AVX512);
    EXPECT_EQ_INT(ctl, CTL_AVX512 && gnmr_isa_supported(GNMR_ISA_AVX512)
                           ? GNMR_ISA_AVX512
                           : GNMR_ISA_SCALAR);
    EXPECT_EQ_INT(gnmr_isa_force(GNMR_ISA_SCALAR), GNMR_OK);
    EXPECT_EQ_INT(gnmr_ctl_isa_active(), ctl);
    gnmr_isa_force(best_isa);
    EXPECT_EQ_INT(gnmr_ctl_isa_force(GNMR_ISA_SCALAR), GNMR_OK);
    EXPECT_EQ_INT(gnmr_ctl_isa_active(), GNMR_ISA_SCALAR);
    EXPECT_EQ_INT(gnmr_isa_active(), best_isa);
    EXPECT_EQ_INT(gnmr_ctl_isa_force(GNMR_ISA_SSE2), GNMR_EISA);
    EXPECT_EQ_INT(gnmr_ctl_isa_force(GNMR_ISA_AVX2), GNMR_EISA);
    EXPECT_EQ_INT(gnmr_ctl_isa_force(GNMR_ISA_NEON), GNMR_EISA);
    EXPECT_EQ_INT(gnmr_ctl_isa_force(-1), GNMR_EISA);
    EXPECT_EQ_INT(gnmr_ctl_isa_active(), GNMR_ISA_SCALAR); /* unchanged */
    EXPECT_EQ_INT(gnmr_ctl_isa_force(GNMR_ISA_AVX512),
                  ctl == GNMR_ISA_AVX512 ? GNMR_OK : GNMR_EISA);
    EXPECT_EQ_INT(gnmr_ctl_isa_active(), ctl);
  }
  printf("  paths:");
  for (isa = 0; isa < n_paths; isa++) printf(" %s", gnmr_isa_name(paths[isa]));
  printf(" (default %s)\n", gnmr_isa_name(best_isa));
}

static const size_t fixed_lengths[] = {0,
                                       1,
                                       2,
                                       31,
                                       32,
                                       33,
                                       63,
                                       64,
                                       65,
                                       CHUNK - 1,
                                       CHUNK,
                                       CHUNK + 1,
                                       2 * CHUNK,
                                       3 * CHUNK + 17,
                                       5 * CHUNK + 31,
                                       7 * CHUNK,
                                       11 * CHUNK + 1};

TEST(paths_match_reference_all_lengths) {
  size_t max_n = 11 * CHUNK + 8, k;
  unsigned char *buf = (unsigned char *)malloc((max_n + 4) * 4);
  int dtype, pattern, bad = 0, cases = 0;
  REQUIRE(buf);
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++)
    for (pattern = 0; pattern < PAT_COUNT; pattern++)
      for (k = 0; k < sizeof fixed_lengths / sizeof *fixed_lengths; k++) {
        size_t n = fixed_lengths[k], off = k % 4; /* unaligned starts too */
        fill(buf, max_n + 4, dtype, pattern);
        bad += check_input(buf + off * esize(dtype), n, dtype, "fixed");
        cases++;
      }
  EXPECT_EQ_INT(bad, 0);
  printf("  %d cases x %d paths\n", cases, n_paths);
  free(buf);
}

TEST(paths_match_reference_random_lengths) {
  size_t max_n = 9 * CHUNK;
  unsigned char *buf = (unsigned char *)malloc((max_n + 8) * 4);
  int t, bad = 0;
  REQUIRE(buf);
  for (t = 0; t < 120; t++) {
    int dtype = t % 3, pattern = (t / 3) % PAT_COUNT;
    size_t n = (size_t)(check_rand() % (t < 60 ? 200 : max_n));
    size_t off = (size_t)(check_rand() % 7);
    fill(buf, max_n + 8, dtype, pattern);
    bad += check_input(buf + off * esize(dtype), n, dtype, "random");
  }
  EXPECT_EQ_INT(bad, 0);
  free(buf);
}

/* The order of additions matters: 1 then 127 squares of 2^-54 in one lane
   rounds to 1 (each is below half an ulp); the reverse order does not. So
   paths agreeing on such data agree on the order, not by luck. */
TEST(paths_match_where_order_matters) {
  size_t n = CHUNK, i;
  float *x = (float *)calloc(n, sizeof(float));
  gnmr_tensor_stats a, b;
  REQUIRE(x);
  for (i = 0; i < n; i += GNMR_SUM_LANES) x[i] = (float)ldexp(1.0, -27);
  x[0] = 1.0f;
  ref_stats(x, n, GNMR_DTYPE_F32, &a);
  EXPECT_EQ_BITS(a.sumsq, 1.0);
  EXPECT_EQ_INT(check_input(x, n, GNMR_DTYPE_F32, "absorbed"), 0);
  for (i = 0; i < n / 2; i++) {
    float t = x[i];
    x[i] = x[n - 1 - i];
    x[n - 1 - i] = t;
  }
  ref_stats(x, n, GNMR_DTYPE_F32, &b);
  EXPECT_EQ_BITS(b.sumsq, 1.0 + 127 * ldexp(1.0, -54));
  EXPECT_EQ_INT(check_input(x, n, GNMR_DTYPE_F32, "reversed"), 0);
  /* mixed scales over several chunks and a tail */
  free(x);
  n = 6 * CHUNK + 77;
  x = (float *)malloc(n * sizeof(float));
  REQUIRE(x);
  for (i = 0; i < n; i++) {
    int e = (int)(check_rand() % 40) - 20;
    x[i] = (float)ldexp(1.0 + check_uniform(), e);
  }
  EXPECT_EQ_INT(check_input(x, n, GNMR_DTYPE_F32, "mixed scales"), 0);
  free(x);
}

/* Any alignment: byte offsets through the void* tensor interface. */
TEST(paths_match_at_byte_offsets) {
  size_t n = 2 * CHUNK + 45, off;
  unsigned char *buf = (unsigned char *)malloc(n * 4 + 8);
  int dtype, bad = 0;
  REQUIRE(buf);
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++)
    for (off = 1; off < 4; off++) {
      unsigned char *al = (unsigned char *)malloc(n * 4);
      gnmr_tensor t;
      double want, got;
      int p;
      REQUIRE(al);
      fill(al, n, dtype, PAT_FULL_RANGE);
      memcpy(buf + off, al, n * esize(dtype));
      want = lib_sumsq(al, n, dtype); /* the same values, aligned */
      t.data = buf + off;
      t.n = n;
      t.dtype = dtype;
      t.unit = 0;
      for (p = 0; p < n_paths; p++) {
        gnmr_isa_force(paths[p]);
        EXPECT_EQ_INT(gnmr_unit_sumsq(&t, 1, &got, 1), GNMR_OK);
        if (!same_bits(got, want)) bad++;
      }
      gnmr_isa_force(best_isa);
      free(al);
    }
  EXPECT_EQ_INT(bad, 0);
  free(buf);
}

/* ---- NaN / Inf ---------------------------------------------------------- */

TEST(nonfinite_counted_and_kept_out_of_amax) {
  static const uint32_t f32_bad[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                     0xFFC00001u, 0x7F800001u};
  static const uint32_t f16_bad[] = {0x7C00u, 0xFC00u, 0x7E00u, 0xFE01u,
                                     0x7C01u};
  static const uint32_t bf16_bad[] = {0x7F80u, 0xFF80u, 0x7FC0u, 0xFFC1u,
                                      0x7F81u};
  size_t n = 3 * CHUNK + 20, i;
  unsigned char *x = (unsigned char *)malloc(n * 4);
  int dtype, t, bad = 0;
  REQUIRE(x);
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++) {
    const uint32_t *pal = dtype == GNMR_DTYPE_F32   ? f32_bad
                          : dtype == GNMR_DTYPE_F16 ? f16_bad
                                                    : bf16_bad;
    for (t = 0; t < 12; t++) {
      gnmr_tensor_stats want;
      size_t count = t == 0 ? 1 : 1 + (size_t)(check_rand() % 40), put = 0;
      int has_nan = 0, p;
      fill(x, n, dtype, PAT_GAUSS);
      /* first, last, chunk edges, the tail row, and random places */
      for (i = 0; i < count; i++) {
        size_t at = i == 0   ? (t % 2 ? n - 1 : 0)
                    : i == 1 ? CHUNK - 1
                    : i == 2 ? CHUNK
                    : i == 3 ? n - 5
                             : (size_t)(check_rand() % n);
        uint32_t b = pal[check_rand() % 5];
        put_bits(x, at, dtype, b);
      }
      for (i = 0; i < n; i++) {
        double v = elem(x, i, dtype);
        if (!isfinite(v)) put++;
        if (isnan(v)) has_nan = 1;
      }
      ref_stats(x, n, dtype, &want);
      EXPECT_EQ_INT(want.nonfinite, put);
      for (p = 0; p < n_paths; p++) {
        gnmr_tensor_stats s;
        double sq;
        gnmr_isa_force(paths[p]);
        lib_stats(x, n, dtype, &s);
        sq = lib_sumsq(x, n, dtype);
        if (s.nonfinite != put || !same_bits(s.amax, want.amax) ||
            isfinite(s.sumsq) || isfinite(sq) ||
            (has_nan ? !isnan(s.sumsq) || !isnan(sq)
                     : !(s.sumsq > 0 && sq > 0))) {
          printf("  %s path %s: nonfinite %lu want %lu, amax %g want %g, "
                 "sumsq %g\n",
                 dtype_name(dtype), gnmr_isa_name(paths[p]),
                 (unsigned long)s.nonfinite, (unsigned long)put, s.amax,
                 want.amax, s.sumsq);
          bad++;
        }
        EXPECT(isfinite(s.amax));
      }
      gnmr_isa_force(best_isa);
    }
  }
  EXPECT_EQ_INT(bad, 0);
  free(x);
}

TEST(all_nonfinite_gives_zero_amax) {
  float x[40];
  gnmr_tensor_stats s;
  int i, p;
  for (i = 0; i < 40; i++) x[i] = i % 2 ? INFINITY : -INFINITY;
  for (p = 0; p < n_paths; p++) {
    gnmr_isa_force(paths[p]);
    gnmr_stats_f32(x, 40, &s);
    EXPECT_EQ_INT(s.nonfinite, 40);
    EXPECT_EQ_BITS(s.amax, 0.0);
    EXPECT(isinf(s.sumsq) && s.sumsq > 0);
  }
  gnmr_isa_force(best_isa);
}

/* ---- FTZ / DAZ ----------------------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_FTZ 1
static unsigned ftz_on(void) {
  unsigned old = _mm_getcsr();
  _mm_setcsr(old | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) */
  return old;
}
static void ftz_off(unsigned old) { _mm_setcsr(old); }
#elif defined(__aarch64__)
#define HAVE_FTZ 1
static unsigned ftz_on(void) {
  uint64_t old;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(old));
  __asm__ __volatile__("msr fpcr, %0" : : "r"(old | (1u << 24))); /* FZ */
  return (unsigned)old;
}
static void ftz_off(unsigned old) {
  uint64_t v = old;
  __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
}
#endif

#ifdef HAVE_FTZ
/* Paths agree with each other under FTZ/DAZ; data without subnormals gives
   the bits it gives without; f16 subnormals still count (they are f32
   normals); f32/bf16 subnormals read as zero on every path. */
TEST(ftz_daz_paths_agree) {
  size_t n = 2 * CHUNK + 50, i;
  unsigned char *x = (unsigned char *)malloc(n * 4);
  unsigned char *z = (unsigned char *)malloc(n * 4);
  int dtype, pattern, bad = 0;
  REQUIRE(x && z);
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++)
    for (pattern = 0; pattern < PAT_COUNT; pattern++) {
      gnmr_tensor_stats plain, flushed, zeroed;
      unsigned old;
      fill(x, n, dtype, pattern);
      memcpy(z, x, n * esize(dtype));
      for (i = 0; i < n; i++) { /* subnormals -> 0 */
        double v = elem(x, i, dtype);
        int sub = v != 0 && fabs(v) < (dtype == GNMR_DTYPE_F16 ? 0.0 : FLT_MIN);
        if (sub) put_bits(z, i, dtype, 0);
      }
      gnmr_isa_force(GNMR_ISA_SCALAR);
      lib_stats(x, n, dtype, &plain);
      lib_stats(z, n, dtype, &zeroed);
      old = ftz_on();
      gnmr_isa_force(GNMR_ISA_SCALAR);
      lib_stats(x, n, dtype, &flushed);
      bad += paths_match(x, n, dtype, &flushed, "ftz/daz");
      ftz_off(old);
      if (pattern == PAT_GAUSS || dtype == GNMR_DTYPE_F16) {
        EXPECT(same_bits(flushed.sumsq, plain.sumsq));
        EXPECT(same_bits(flushed.amax, plain.amax));
      } else {
        EXPECT(same_bits(flushed.sumsq, zeroed.sumsq));
        EXPECT(same_bits(flushed.amax, zeroed.amax));
      }
    }
  EXPECT_EQ_INT(bad, 0);
  free(x);
  free(z);
}
#endif

/* ---- accuracy against an exact sum --------------------------------------- */

/* Exact sum of squares: a fixed-point integer in 32-bit limbs (held in 64-bit
   words so carries can wait), bit k worth 2^(k - EXACT_BIAS). Covers every
   square of an f32 (2^-298 .. 2^256) with room for 2^31 additions. */
#define EXACT_LIMBS 24
#define EXACT_BIAS 320
typedef struct exact_sum {
  uint64_t limb[EXACT_LIMBS];
  uint64_t adds;
} exact_sum;

static void exact_normalise(exact_sum *a) {
  uint64_t carry = 0;
  int k;
  for (k = 0; k < EXACT_LIMBS; k++) {
    uint64_t v = a->limb[k] + carry;
    a->limb[k] = v & 0xFFFFFFFFu;
    carry = v >> 32;
  }
  a->adds = 0;
}

/* Adds m * 2^shift, m < 2^64 split in 32-bit halves, shift >= 0. */
static void exact_add(exact_sum *a, uint64_t m, int shift) {
  int k = shift / 32, b = shift % 32;
  uint64_t lo = (m & 0xFFFFFFFFu) << b, hi = (m >> 32) << b;
  a->limb[k] += lo & 0xFFFFFFFFu;
  a->limb[k + 1] += (lo >> 32) + (hi & 0xFFFFFFFFu);
  a->limb[k + 2] += hi >> 32;
  if (++a->adds >= (1u << 30)) exact_normalise(a);
}

/* x = mant * 2^exp exactly (mant < 2^27): adds x^2. */
static void exact_add_sq(exact_sum *a, uint64_t mant, int exp) {
  if (mant == 0) return;
  exact_add(a, mant * mant, 2 * exp + EXACT_BIAS);
}

static void exact_add_f32(exact_sum *a, float f) {
  uint32_t b;
  int e;
  uint64_t m;
  memcpy(&b, &f, 4);
  e = (int)((b >> 23) & 0xFF);
  m = b & 0x7FFFFFu;
  if (e == 0)
    e = 1;
  else
    m |= 0x800000u;
  exact_add_sq(a, m, e - 150);
}

/* A double with at most 27 significant bits. */
static void exact_add_sq_double(exact_sum *a, double d) {
  int e;
  double f = frexp(fabs(d), &e);
  exact_add_sq(a, (uint64_t)ldexp(f, 27), e - 27);
}

static long double exact_value(exact_sum *a) {
  long double v = 0;
  int k;
  exact_normalise(a);
  for (k = EXACT_LIMBS - 1; k >= 0; k--) v = v * 4294967296.0L + a->limb[k];
  return ldexpl(v, -EXACT_BIAS);
}

static int exact_cmp(exact_sum *a, exact_sum *b) {
  int k;
  exact_normalise(a);
  exact_normalise(b);
  for (k = EXACT_LIMBS - 1; k >= 0; k--)
    if (a->limb[k] != b->limb[k]) return a->limb[k] < b->limb[k] ? -1 : 1;
  return 0;
}

/* sign of S - m^2 */
static int exact_cmp_sq(exact_sum *s, double m) {
  exact_sum q;
  memset(&q, 0, sizeof q);
  exact_add_sq_double(&q, m);
  return exact_cmp(s, &q);
}

/* The correctly rounded f32 of sqrt(S), decided exactly: the candidate moves
   until S lies between the squares of its two rounding midpoints. */
static float exact_sqrt_f32(exact_sum *s) {
  float c = (float)sqrtl(exact_value(s));
  while (c > 0 && c <= FLT_MAX) {
    float down = nextafterf(c, 0.0f), up = nextafterf(c, INFINITY);
    double lo = ((double)c + (double)down) / 2,
           hi = ((double)c + (double)up) / 2;
    int below = c > 0 ? exact_cmp_sq(s, lo) : 1, above = exact_cmp_sq(s, hi);
    if (below < 0)
      c = down;
    else if (above > 0)
      c = up;
    else if (below == 0) { /* a tie: to even */
      uint32_t b;
      memcpy(&b, &c, 4);
      return (b & 1u) ? down : c;
    } else if (above == 0) {
      uint32_t b;
      memcpy(&b, &c, 4);
      return (b & 1u) ? up : c;
    } else
      return c;
  }
  return c;
}

static int within_one_ulp(float got, float want) {
  return got == want || got == nextafterf(want, 0.0f) ||
         got == nextafterf(want, INFINITY);
}

/* Checks sumsq against S (relative error <= 1e-13) and the f32 norm of
   gnmr_unit_norms against the correctly rounded sqrt(S) (within 1 ulp),
   on every path. */
static void check_accuracy(const void *x, size_t n, int dtype, exact_sum *s,
                           const char *what) {
  long double exact = exact_value(s);
  float want_norm = exact_sqrt_f32(s);
  double worst = 0;
  int p, exact_norms = 0;
  gnmr_tensor t;
  t.data = x;
  t.n = n;
  t.dtype = dtype;
  t.unit = 0;
  for (p = 0; p < n_paths; p++) {
    float norm = -1;
    double sq, rel;
    gnmr_isa_force(paths[p]);
    sq = lib_sumsq(x, n, dtype);
    rel = (double)(fabsl((long double)sq - exact) / exact);
    if (rel > worst) worst = rel;
    EXPECT(rel <= 1e-13);
    EXPECT_EQ_INT(gnmr_unit_norms(&t, 1, &norm, 1), GNMR_OK);
    EXPECT(within_one_ulp(norm, want_norm));
    exact_norms += norm == want_norm;
  }
  gnmr_isa_force(best_isa);
  printf("  %s: n=%lu, worst relative error %.3g, norm correctly rounded on "
         "%d/%d paths\n",
         what, (unsigned long)n, worst, exact_norms, n_paths);
}

/* 64M values in [0, 1): a float accumulator stalls at 2^24 and loses a
   quarter of the sum; the canonical sum stays within 1e-13. */
TEST(accuracy_where_float_fails) {
  size_t n = big_n, i;
  float *x = (float *)malloc(n * sizeof(float));
  exact_sum s;
  float naive = 0.0f;
  long double exact;
  double loss;
  REQUIRE(x);
  memset(&s, 0, sizeof s);
  for (i = 0; i < n; i++) {
    x[i] = (float)check_uniform();
    exact_add_f32(&s, x[i]);
    naive += x[i] * x[i];
  }
  exact = exact_value(&s);
  loss = (double)(1.0L - (long double)naive / exact);
  printf("  naive float accumulation loses %.1f%%\n", 100 * loss);
  if (n >= (1u << 26)) EXPECT(loss > 0.2);
  check_accuracy(x, n, GNMR_DTYPE_F32, &s, "uniform [0,1)");
  free(x);
}

TEST(accuracy_wide_range_all_dtypes) {
  size_t n = 300000, i;
  unsigned char *x = (unsigned char *)malloc(n * 4);
  int dtype;
  REQUIRE(x);
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++) {
    exact_sum s;
    memset(&s, 0, sizeof s);
    for (i = 0; i < n; i++) {
      /* every finite f16; f32 and bf16 over 2^-100 .. 2^100, subnormals
         included, so that the norm stays finite in f32 */
      uint32_t b = gen_bits(dtype, PAT_FULL_RANGE), e = 0;
      if (i % 1000) e = (uint32_t)(27 + check_rand() % 200);
      if (dtype == GNMR_DTYPE_F32) b = (b & 0x807FFFFFu) | (e << 23);
      if (dtype == GNMR_DTYPE_BF16) b = (b & 0x807Fu) | (e << 7);
      put_bits(x, i, dtype, b);
      exact_add_f32(&s, (float)elem(x, i, dtype));
    }
    check_accuracy(x, n, dtype, &s, dtype_name(dtype));
  }
  free(x);
}

/* The public conversions, every 16-bit pattern: the value (f16: as the
   IEEE definition gives it), bit for bit; NaN payloads and signs kept. */
TEST(public_conversions_every_pattern) {
  uint32_t h;
  int bad = 0;
  for (h = 0; h <= 0xFFFFu; h++) {
    float f16 = gnmr_f16_to_f32((uint16_t)h),
          bf = gnmr_bf16_to_f32((uint16_t)h);
    uint32_t got16, gotb, want16;
    memcpy(&got16, &f16, 4);
    memcpy(&gotb, &bf, 4);
    if ((h & 0x7C00u) == 0x7C00u) { /* Inf, NaN: exponent all ones */
      want16 = (h & 0x8000u) << 16 | 0x7F800000u | (h & 0x3FFu) << 13;
    } else {
      float w = (float)f16_value((uint16_t)h);
      memcpy(&want16, &w, 4);
    }
    if (got16 != want16 || gotb != h << 16) {
      if (!bad++)
        printf("  %04x: f16 %08x want %08x, bf16 %08x\n", (unsigned)h,
               (unsigned)got16, (unsigned)want16, (unsigned)gotb);
    }
  }
  EXPECT_EQ_INT(bad, 0);
}

/* ---- units ----------------------------------------------------------------
 */

TEST(unit_norms_mixed_dtypes_in_tensor_order) {
  enum { NT = 7, NU = 4 };
  static const int dt[NT] = {GNMR_DTYPE_F32, GNMR_DTYPE_BF16, GNMR_DTYPE_F16,
                             GNMR_DTYPE_F32, GNMR_DTYPE_F16,  GNMR_DTYPE_BF16,
                             GNMR_DTYPE_F32};
  static const uint32_t unit_of[NT] = {0, 0, 0, 2, 2, 3, 3};
  static const size_t len[NT] = {5000, 33, 9000, 1, 4097, 0, 70000};
  unsigned char *data[NT];
  gnmr_tensor t[NT];
  double sumsq[NU], want[NU] = {0, 0, 0, 0};
  float norms[NU];
  int i, p;
  for (i = 0; i < NT; i++) {
    data[i] = (unsigned char *)malloc(len[i] * 4 + 4);
    REQUIRE(data[i]);
    fill(data[i], len[i], dt[i], PAT_GAUSS);
    t[i].data = data[i];
    t[i].n = len[i];
    t[i].dtype = dt[i];
    t[i].unit = unit_of[i];
    want[unit_of[i]] += lib_sumsq(data[i], len[i], dt[i]); /* tensor order */
  }
  for (p = 0; p < n_paths; p++) {
    int u;
    gnmr_isa_force(paths[p]);
    EXPECT_EQ_INT(gnmr_unit_sumsq(t, NT, sumsq, NU), GNMR_OK);
    EXPECT_EQ_INT(gnmr_unit_norms(t, NT, norms, NU), GNMR_OK);
    for (u = 0; u < NU; u++) {
      EXPECT_EQ_BITS(sumsq[u], want[u]);
      EXPECT_EQ_BITS((double)norms[u], (double)(float)sqrt(want[u]));
    }
    EXPECT_EQ_BITS(sumsq[1], 0.0); /* a unit without tensors */
  }
  gnmr_isa_force(best_isa);
  /* unit_sumsq takes any order: reversed tensors, same sums as long as
     each unit's own tensors keep their order */
  {
    gnmr_tensor r[NT];
    double rs[NU];
    for (i = 0; i < NT; i++) r[i] = t[(i + 3) % NT]; /* units 2,2,3,3,0,0,0 */
    EXPECT_EQ_INT(gnmr_unit_sumsq(r, NT, rs, NU), GNMR_OK);
    for (i = 0; i < NU; i++) EXPECT_EQ_BITS(rs[i], want[i]);
  }
  for (i = 0; i < NT; i++) free(data[i]);
}

/* Tensors in any order, units interleaved, more units than gnmr_unit_norms
   sums at once: each unit's norm is the sqrt of its tensors' sums added in
   the order they appear, bit for bit, and the same bits as the tensors
   sorted by unit (each unit's own order kept), the only order 0.1 took. */
TEST(unit_norms_any_order) {
  enum { NT = 1500, NU = 700, MAXLEN = 300 };
  static unsigned char data[NT][MAXLEN * 4];
  static gnmr_tensor t[NT], sorted[NT];
  static double want[NU], sumsq[NU];
  static float norms[NU], norms_sorted[NU];
  size_t i, k = 0;
  uint32_t u;
  int p, runs = 0;
  for (i = 0; i < NT; i++) {
    int dt = (int)(check_rand() % 3);
    size_t n = (size_t)(check_rand() % MAXLEN);
    fill(data[i], n, dt, PAT_GAUSS);
    t[i].data = data[i];
    t[i].n = n;
    t[i].dtype = dt;
    /* units 0..NU-2 at random (NU-1 gets none), so units split across
       the whole list */
    t[i].unit = (uint32_t)(check_rand() % (NU - 1));
  }
  for (u = 0; u < NU; u++) want[u] = 0.0;
  for (i = 0; i < NT; i++)
    want[t[i].unit] += lib_sumsq(t[i].data, t[i].n, t[i].dtype);
  for (i = 1; i < NT; i++) runs += t[i].unit < t[i - 1].unit;
  EXPECT(runs > NT / 4);   /* far from sorted */
  for (u = 0; u < NU; u++) /* stable sort by unit */
    for (i = 0; i < NT; i++)
      if (t[i].unit == u) sorted[k++] = t[i];
  REQUIRE(k == NT);
  for (p = 0; p < n_paths; p++) {
    gnmr_isa_force(paths[p]);
    EXPECT_EQ_INT(gnmr_unit_norms(t, NT, norms, NU), GNMR_OK);
    EXPECT_EQ_INT(gnmr_unit_norms(sorted, NT, norms_sorted, NU), GNMR_OK);
    EXPECT_EQ_INT(gnmr_unit_sumsq(t, NT, sumsq, NU), GNMR_OK);
    for (u = 0; u < NU; u++) {
      EXPECT_EQ_BITS(sumsq[u], want[u]);
      EXPECT_EQ_BITS((double)norms[u], (double)(float)sqrt(want[u]));
      EXPECT_EQ_BITS((double)norms[u], (double)norms_sorted[u]);
    }
    EXPECT_EQ_BITS((double)norms[NU - 1], 0.0); /* a unit without tensors */
  }
  gnmr_isa_force(best_isa);
  /* the unit count at the edges of a pass: 1, 255, 256, 257 units */
  {
    static const uint32_t counts[] = {1, 255, 256, 257};
    size_t c;
    for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      uint32_t nu = counts[c];
      for (u = 0; u < nu; u++) want[u] = 0.0;
      for (i = 0; i < NT; i++) {
        sorted[i] = t[i];
        sorted[i].unit = (uint32_t)((i * 7u) % nu);
        want[sorted[i].unit] += lib_sumsq(t[i].data, t[i].n, t[i].dtype);
      }
      EXPECT_EQ_INT(gnmr_unit_norms(sorted, NT, norms, nu), GNMR_OK);
      for (u = 0; u < nu; u++)
        EXPECT_EQ_BITS((double)norms[u], (double)(float)sqrt(want[u]));
    }
  }
}

TEST(unit_errors_refused_whole) {
  float x[4] = {1, 2, 3, 4}, norms[2] = {-7.0f, -7.0f};
  double sums[2] = {-7.0, -7.0};
  gnmr_tensor t[2];
  gnmr_tensor_stats s;
  t[0].data = x;
  t[0].n = 4;
  t[0].dtype = GNMR_DTYPE_F32;
  t[0].unit = 1;
  t[1] = t[0];
  t[1].unit = 0; /* unsorted: fine for both */
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, norms, 2), GNMR_OK);
  EXPECT(norms[0] == (float)sqrt(30.0) && norms[1] == (float)sqrt(30.0));
  EXPECT_EQ_INT(gnmr_unit_sumsq(t, 2, sums, 2), GNMR_OK);
  EXPECT_EQ_BITS(sums[0], 30.0);
  sums[0] = sums[1] = -7.0;
  norms[0] = norms[1] = -7.0f;
  t[1].unit = 2; /* bad unit */
  EXPECT_EQ_INT(gnmr_unit_sumsq(t, 2, sums, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, norms, 2), GNMR_EINVAL);
  t[1].unit = 1;
  t[1].dtype = 7; /* bad dtype */
  EXPECT_EQ_INT(gnmr_unit_sumsq(t, 2, sums, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, norms, 2), GNMR_EINVAL);
  t[1].dtype = GNMR_DTYPE_F32;
  t[1].data = NULL; /* NULL data with n > 0 */
  EXPECT_EQ_INT(gnmr_unit_sumsq(t, 2, sums, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, norms, 2), GNMR_EINVAL);
  EXPECT(sums[0] == -7.0 && sums[1] == -7.0);
  EXPECT(norms[0] == -7.0f && norms[1] == -7.0f);
  t[1].n = 0; /* ... but NULL data with n = 0 is an empty tensor */
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, norms, 2), GNMR_OK);
  EXPECT(norms[0] == 0.0f && norms[1] == (float)sqrt(30.0));
  EXPECT_EQ_INT(gnmr_unit_sumsq(NULL, 1, sums, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(NULL, 1, norms, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_sumsq(t, 2, NULL, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(t, 2, NULL, 2), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_unit_norms(NULL, 0, NULL, 0), GNMR_OK);
  EXPECT_EQ_INT(gnmr_unit_norms(NULL, 0, norms, 2), GNMR_OK);
  EXPECT(norms[0] == 0.0f && norms[1] == 0.0f);
  /* the element functions: NULL data reads as a NaN norm, never a crash */
  EXPECT(isnan(gnmr_sumsq_f32(NULL, 3)));
  EXPECT_EQ_BITS(gnmr_sumsq_bf16(NULL, 0), 0.0);
  gnmr_stats_f16(NULL, 5, &s);
  EXPECT(isnan(s.sumsq));
  gnmr_stats_f32(x, 4, NULL);
}

/* ---- applying a decision's scale (gnmr_scale_*) ------------------------ */

/* The nearest pattern to v >= 0 among the non-negative finite ones of a
   16-bit format (from_bits, patterns 0 .. top, increasing), ties to the
   even pattern: by bisection, apart from the library's rounding. */
static uint16_t nearest16(double v, float (*from_bits)(uint16_t),
                          uint32_t top) {
  uint32_t lo = 0, hi = top, mid;
  double a, b;
  while (hi - lo > 1) { /* from_bits(lo) <= v < from_bits(hi), or v at top */
    mid = (lo + hi) / 2;
    if ((double)from_bits((uint16_t)mid) <= v)
      lo = mid;
    else
      hi = mid;
  }
  a = v - (double)from_bits((uint16_t)lo);
  b = (double)from_bits((uint16_t)hi) - v;
  if (a < b || (a == b && !(lo & 1u))) return (uint16_t)lo;
  return (uint16_t)hi;
}

/* NaN and Inf told by the bits: under -Ofast isnan and isinf fold away. */
static int nan32(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return (b & 0x7FFFFFFFu) > 0x7F800000u;
}
static int inf32(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return (b & 0x7FFFFFFFu) == 0x7F800000u;
}
/* 1 where the program runs with subnormal f32 inputs read as 0 (DAZ; an
   -Ofast build sets it at its start): f32 and bf16 subnormals then read
   as 0 (the manual's fast-math note), and are not compared. */
static int daz_on(void) {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & 0x0040u) != 0;
#elif defined(__aarch64__)
  uint64_t fpcr;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr >> 24) & 1u;
#else
  return 0;
#endif
}

static float f16_bits(uint16_t h) { return gnmr_f16_to_f32(h); }
static float bf16_bits(uint16_t h) { return gnmr_bf16_to_f32(h); }

/* Every f16 and bf16 pattern under the scales a decision takes: 1 changes
   no bit, 0 writes +0 (NaN and Inf included), others give the nearest
   value to the float product (ties to even), NaN stays NaN, Inf Inf. */
TEST(scale_every_16_bit_pattern) {
  static uint16_t x[65536];
  const double scales[] = {1.0, 0.0, 0.3, 2.0 * 1.0212 / 49.03, 0.5};
  const int daz = daz_on();
  size_t i, k;
  int dt, bad = 0;
  for (dt = 0; dt < 2; dt++) {
    float (*from_bits)(uint16_t) = dt == 0 ? f16_bits : bf16_bits;
    const uint32_t top = dt == 0 ? 0x7BFFu : 0x7F7Fu; /* largest finite */
    for (k = 0; k < sizeof scales / sizeof scales[0]; k++) {
      for (i = 0; i < 65536; i++) x[i] = (uint16_t)i;
      EXPECT_EQ_INT(dt == 0 ? gnmr_scale_f16(x, 65536, scales[k])
                            : gnmr_scale_bf16(x, 65536, scales[k]),
                    GNMR_OK);
      for (i = 0; i < 65536; i++) {
        const float in = from_bits((uint16_t)i), out = from_bits(x[i]);
        uint16_t want;
        if (daz && dt == 1 && scales[k] != 1.0 &&
            ((i & 0x7F80u) == 0 ||
             fabs((double)in) * scales[k] < (double)FLT_MIN))
          continue;
        if (scales[k] == 1.0)
          want = (uint16_t)i;
        else if (scales[k] == 0.0)
          want = 0;
        else if (nan32(in))
          want = nan32(out) ? x[i] : (uint16_t)0x7FFF; /* any NaN */
        else if (inf32(in))
          want = (uint16_t)i;
        else {
          const float p = (float)((double)in * scales[k]);
          want = nearest16(fabs((double)p), from_bits, top);
          if (signbit(p)) want |= 0x8000u;
        }
        if (x[i] != want && bad++ < 5)
          printf("  %s %04zx x %.17g: %04x, want %04x\n",
                 dt == 0 ? "f16" : "bf16", i, scales[k], x[i], want);
      }
    }
  }
  EXPECT_EQ_INT(bad, 0);
}

TEST(scale_f32_nan_inf_zero_one_and_a_clip) {
  float x[8], y[8];
  const double clip = 2.0 * 1.0212 / 49.03; /* a CLIP decision's scale */
  size_t i;
  const float in[8] = {1.0f,      -2.5f,  NAN,  INFINITY,
                       -INFINITY, 3e-39f, 0.0f, -FLT_MAX};
  /* scale 1: not a bit changes, a NaN's payload included */
  memcpy(x, in, sizeof x);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, 1.0), GNMR_OK);
  EXPECT(memcmp(x, in, sizeof x) == 0);
  /* scale 0: +0 everywhere, NaN and Inf included (x * 0 would keep NaN) */
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, 0.0), GNMR_OK);
  for (i = 0; i < 8; i++) {
    uint32_t bits;
    memcpy(&bits, &x[i], 4);
    EXPECT_EQ_INT(bits, 0);
  }
  memcpy(x, in, sizeof x);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, -0.0), GNMR_OK);
  EXPECT(x[2] == 0.0f && !signbit(x[2]) && x[3] == 0.0f);
  /* a clip: the product in double, rounded once to float */
  memcpy(x, in, sizeof x);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, clip), GNMR_OK);
  for (i = 0; i < 8; i++) {
    if (nan32(in[i])) {
      EXPECT(nan32(x[i]));
    } else if (!daz_on() || i != 5) { /* 5: subnormal, 0 under DAZ */
      EXPECT_EQ_BITS(x[i], (float)((double)in[i] * clip));
    }
  }
  EXPECT(inf32(x[3]) && x[3] > 0.0f && inf32(x[4]) && x[4] < 0.0f);
  /* refused whole: nothing written */
  memcpy(x, in, sizeof x);
  memcpy(y, in, sizeof y);
  EXPECT_EQ_INT(gnmr_scale_f32(NULL, 8, 0.5), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f32(NULL, 0, 0.5), GNMR_OK);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, (double)NAN), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, -0.25), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, 1.5), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, (double)INFINITY), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f32(x, 8, nextafter(1.0, 2.0)), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f16(NULL, 1, 0.5), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_bf16(NULL, 1, 0.5), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_f16((uint16_t *)(void *)x, 2, -1.0), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_scale_bf16((uint16_t *)(void *)x, 2, 2.0), GNMR_EINVAL);
  EXPECT(memcmp(x, y, sizeof x) == 0);
}

/* A decision applied: a unit whose norm is NaN gets scale 0 (rule 1), and
   its gradient reaches the optimizer as zeros; a clipped one at tau_r m. */
TEST(scale_applies_a_decision) {
  gnmr_config c = gnmr_config_default();
  gnmr_slot slots[2];
  gnmr_ctl ctl;
  gnmr_decision d[2];
  float g0[3], g1[3], norms[2];
  int t, i;
  REQUIRE(gnmr_init(&ctl, &c, slots, 2) == GNMR_OK);
  for (t = 0; t < 40; t++) {
    for (i = 0; i < 3; i++) g0[i] = g1[i] = 0.5f;
    if (t == 39) {
      g0[1] = NAN;
      g1[0] = 40.0f;
    }
    norms[0] = (float)sqrt(gnmr_sumsq_f32(g0, 3));
    norms[1] = (float)sqrt(gnmr_sumsq_f32(g1, 3));
    REQUIRE(gnmr_step(&ctl, norms, d) == GNMR_OK);
    REQUIRE(gnmr_scale_f32(g0, 3, d[0].scale) == GNMR_OK);
    REQUIRE(gnmr_scale_f32(g1, 3, d[1].scale) == GNMR_OK);
  }
  EXPECT_EQ_BITS(d[0].scale, 0.0);
  for (i = 0; i < 3; i++) EXPECT_EQ_BITS(g0[i], 0.0f);
  EXPECT(d[1].scale > 0.0 && d[1].scale < 1.0);
  /* the clipped gradient's norm: tau_r times the unit's calm norm */
  EXPECT_NEAR(sqrt(gnmr_sumsq_f32(g1, 3)), 2.0 * sqrt(0.75), 1e-5);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(dispatch),
      CHECK_CASE(paths_match_reference_all_lengths),
      CHECK_CASE(paths_match_reference_random_lengths),
      CHECK_CASE(paths_match_where_order_matters),
      CHECK_CASE(paths_match_at_byte_offsets),
      CHECK_CASE(nonfinite_counted_and_kept_out_of_amax),
      CHECK_CASE(all_nonfinite_gives_zero_amax),
#ifdef HAVE_FTZ
      CHECK_CASE(ftz_daz_paths_agree),
#endif
      CHECK_CASE(accuracy_where_float_fails),
      CHECK_CASE(accuracy_wide_range_all_dtypes),
      CHECK_CASE(public_conversions_every_pattern),
      CHECK_CASE(unit_norms_mixed_dtypes_in_tensor_order),
      CHECK_CASE(unit_norms_any_order),
      CHECK_CASE(unit_errors_refused_whole),
      CHECK_CASE(scale_every_16_bit_pattern),
      CHECK_CASE(scale_f32_nan_inf_zero_one_and_a_clip),
      CHECK_CASE(scale_applies_a_decision)};
  int i;
  for (i = 1; i < argc; i++)
    if (strncmp(argv[i], "--big=", 6) == 0)
      big_n = (size_t)strtoul(argv[i] + 6, NULL, 10);
  find_paths();
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
