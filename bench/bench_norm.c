/* bench_norm - throughput of the norm helpers, per dtype and per path, for
   sizes from 1 KiB to 1 GiB, beside references measured in the same run:
     plain     a plain scalar loop: double s += (double)x[i] * x[i]
     probe     the fastest streaming read we can write (AVX-512 or AVX2
               loads OR-reduced, unrolled; once more with software prefetch
               one page ahead into L2, as the library's kernels do), the
               bus ceiling
     snrm2     cblas_snrm2 (OpenBLAS), when built with -DHAVE_CBLAS
   Repetitions are chosen by time; each figure is the median of several
   samples, with the spread (max - min) / median. A sink keeps the work.

   usage: bench_norm [--paths=all|best] [--max-bytes=N] [--csv FILE]
          bench_norm --targets  the speed targets, as ratios measured
                                alternately (both sides see the same load),
                                the -O2 / -march=native builds among them
          bench_norm --targets=out-of-cache  only the 256 MiB ratios to
                                the read probes, f32 (sumsq, stats) and
                                f16/bf16 sumsq (make ab-norm)
          bench_norm --kernels  AVX2 f32 row kernels other than the
                                library's against the read probe, on
                                max-bytes / 4 of f32 (256 MiB, out of
                                cache, by default): what was tried
                                (bench/RESULTS.md, "Norm helpers")
          --offset=B            the data B bytes past a page boundary
                                (0 by default: page-aligned, as a large
                                tensor from a caching allocator is) */
#define _POSIX_C_SOURCE 200112L
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include "tests/splitmix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_CBLAS
#include <cblas.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_PROBE 1
#endif

static volatile double sink;
static FILE *csv;

static const char *dtype_name(int dtype) {
  return dtype == GNMR_DTYPE_F32   ? "f32"
         : dtype == GNMR_DTYPE_F16 ? "f16"
                                   : "bf16";
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- references -------------------------------------------------------- */

static double plain_f32(const void *x, size_t n) {
  const float *f = (const float *)x;
  double s = 0.0;
  size_t i;
  for (i = 0; i < n; i++) s += (double)f[i] * (double)f[i];
  return s;
}

#ifdef HAVE_PROBE
__attribute__((target("avx512f"))) static double
probe_avx512(const void *x, size_t bytes, int pf) {
  const unsigned char *p = (const unsigned char *)x;
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  size_t i;
  for (i = 0; i + 256 <= bytes; i += 256) {
    if (pf) {
      __builtin_prefetch(p + i + 4096, 0, 2);
      __builtin_prefetch(p + i + 4096 + 64, 0, 2);
      __builtin_prefetch(p + i + 4096 + 128, 0, 2);
      __builtin_prefetch(p + i + 4096 + 192, 0, 2);
    }
    a = _mm512_or_si512(a, _mm512_loadu_si512(p + i));
    b = _mm512_or_si512(b, _mm512_loadu_si512(p + i + 64));
    c = _mm512_or_si512(c, _mm512_loadu_si512(p + i + 128));
    d = _mm512_or_si512(d, _mm512_loadu_si512(p + i + 192));
  }
  a = _mm512_or_si512(_mm512_or_si512(a, b), _mm512_or_si512(c, d));
  return (double)_mm512_reduce_or_epi32(a);
}
__attribute__((target("avx2"))) static double probe_avx2(const void *x,
                                                         size_t bytes, int pf) {
  const unsigned char *p = (const unsigned char *)x;
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  int t[8], k, r = 0;
  size_t i;
  for (i = 0; i + 128 <= bytes; i += 128) {
    if (pf) {
      __builtin_prefetch(p + i + 4096, 0, 2);
      __builtin_prefetch(p + i + 4096 + 64, 0, 2);
    }
    a = _mm256_or_si256(a, _mm256_loadu_si256((const __m256i *)(p + i)));
    b = _mm256_or_si256(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
    c = _mm256_or_si256(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
    d = _mm256_or_si256(d, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
  }
  a = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
  _mm256_storeu_si256((__m256i *)t, a);
  for (k = 0; k < 8; k++) r |= t[k];
  return (double)r;
}
#endif

/* ---- measurement ------------------------------------------------------- */

enum {
  K_LIB_SUMSQ,
  K_LIB_STATS,
  K_PLAIN,
  K_PROBE,
  K_PROBE_PF,
  K_SNRM2,
  K_NATIVE,
  K_KERNEL
};

#ifdef HAVE_NATIVE /* bench_norm_native.c: the library built -march=native */
double bench_native_sumsq(int dtype, const void *x, size_t n);
#endif

typedef struct job {
  int kind, dtype, kernel; /* kernel: an index into kernels[] (K_KERNEL) */
  const void *x;
  size_t n, bytes;
} job;

#if defined(HAVE_PROBE) && defined(GNMR__AVX2)
/* ---- other AVX2 f32 row kernels ------------------------------------------
   Variants of the library's AVX2 f32 loop (gnmr__rows_avx2: 16-byte loads
   converted to double, 8 accumulators of 4 lanes, one FMA each a row, two
   prefetches a page ahead into L2), each run through the library's driver
   (gnmr__sum), so every canonical one must return the library's bits. A
   row's work is the library's own primitive (gnmr__avx2_add16). */
/* A row kernel with AHEAD (a statement on p) before each row's work. */
#define KERNEL(name, AHEAD)                                                    \
  GNMR__TARGET_AVX2 static void name(const void *x, size_t rows, int dtype,    \
                                     double *lane, uint32_t *mag) {            \
    const unsigned char *p = (const unsigned char *)x;                         \
    __m256d a[8];                                                              \
    __m256i touch = _mm256_setzero_si256();                                    \
    size_t r;                                                                  \
    int k;                                                                     \
    (void)dtype;                                                               \
    (void)mag;                                                                 \
    GNMR__UNROLL                                                               \
    for (k = 0; k < 8; k++) a[k] = _mm256_loadu_pd(lane + 4 * k);              \
    for (r = 0; r < rows; r++, p += 128) {                                     \
      AHEAD;                                                                   \
      gnmr__avx2_add16(a, p, GNMR_DTYPE_F32);                                  \
      gnmr__avx2_add16(a + 4, p + 64, GNMR_DTYPE_F32);                         \
    }                                                                          \
    GNMR__UNROLL                                                               \
    for (k = 0; k < 8; k++) _mm256_storeu_pd(lane + 4 * k, a[k]);              \
    touch_sink += _mm256_extract_epi32(touch, 0);                              \
  }

static volatile int touch_sink;
#define PF(d, loc) __builtin_prefetch(p + (d), 0, loc)
KERNEL(k_no_prefetch, (void)0)
KERNEL(k_1k_l1, (PF(1024, 3), PF(1024 + 64, 3)))
KERNEL(k_8k_l2, (PF(8192, 2), PF(8192 + 64, 2)))
KERNEL(k_half_lines, PF(4096, 2))
/* One line a page, two pages ahead: the TLB walk early, the rest left to
   the hardware. */
KERNEL(k_page_8k, if (((uintptr_t)p & 4095) == 0) PF(8192, 2))
/* 1 KiB ahead with the non-temporal hint (prefetchnta). */
KERNEL(k_nta_1k, (PF(1024, 0), PF(1024 + 64, 0)))
/* In bursts: every line of a block at once, at the block's first row
   (the buffer starts on a page boundary, --offset=0). */
#define BURST(d, span, loc)                                                    \
  if (((uintptr_t)p & ((span)-1)) == 0) {                                      \
    int q_;                                                                    \
    for (q_ = 0; q_ < (span); q_ += 64) PF((d) + q_, loc);                     \
  }
KERNEL(k_burst_8k, BURST(8192, 4096, 2))
KERNEL(k_burst_nta, BURST(1024, 1024, 0))
KERNEL(k_touch_1k,
       touch = _mm256_or_si256(
           touch, _mm256_or_si256(
                      _mm256_loadu_si256((const __m256i *)(p + 1024)),
                      _mm256_loadu_si256((const __m256i *)(p + 1024 + 64)))))

/* 32-byte loads, each converted as two halves. */
__attribute__((target("avx2,fma"))) static void
k_wide_loads(const void *x, size_t rows, int dtype, double *lane,
             uint32_t *mag) {
  const unsigned char *p = (const unsigned char *)x;
  __m256d a[8];
  size_t r;
  int k;
  (void)dtype;
  (void)mag;
  GNMR__UNROLL
  for (k = 0; k < 8; k++) a[k] = _mm256_loadu_pd(lane + 4 * k);
  for (r = 0; r < rows; r++, p += 128) {
    PF(4096, 2);
    PF(4096 + 64, 2);
    GNMR__UNROLL
    for (k = 0; k < 4; k++) {
      __m256 f = _mm256_loadu_ps((const float *)(p + 32 * k));
      __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
      __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
      a[2 * k] = _mm256_fmadd_pd(lo, lo, a[2 * k]);
      a[2 * k + 1] = _mm256_fmadd_pd(hi, hi, a[2 * k + 1]);
    }
  }
  GNMR__UNROLL
  for (k = 0; k < 8; k++) _mm256_storeu_pd(lane + 4 * k, a[k]);
}

/* Not canonical (a float sum, 4 vector operations per 128 bytes where the
   canonical kernels need 16): what the arithmetic's density costs. */
__attribute__((target("avx2,fma"))) static double f32_fma(const void *x,
                                                          size_t bytes) {
  const unsigned char *p = (const unsigned char *)x;
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a, v;
  float t[8];
  size_t i;
  int k;
  double s = 0.0;
  for (i = 0; i + 128 <= bytes; i += 128) {
    v = _mm256_loadu_ps((const float *)(p + i));
    a = _mm256_fmadd_ps(v, v, a);
    v = _mm256_loadu_ps((const float *)(p + i + 32));
    b = _mm256_fmadd_ps(v, v, b);
    v = _mm256_loadu_ps((const float *)(p + i + 64));
    c = _mm256_fmadd_ps(v, v, c);
    v = _mm256_loadu_ps((const float *)(p + i + 96));
    d = _mm256_fmadd_ps(v, v, d);
  }
  _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  for (k = 0; k < 8; k++) s += (double)t[k];
  return s;
}

/* The library's row kernel and order, but two chunks read at once, a page
   of each in turn: two streams for the hardware prefetchers. Canonical (the
   same bits) where the bytes are a whole number of chunk pairs. */
static double two_streams(const void *x, size_t bytes) {
  const unsigned char *p = (const unsigned char *)x;
  size_t cb = GNMR_SUM_CHUNK * 4, nc = bytes / cb, c, r;
  gnmr__tree tree;
  double lane[2][GNMR_SUM_LANES];
  int s;
  memset(&tree, 0, sizeof tree);
  for (c = 0; c + 2 <= nc; c += 2) {
    memset(lane, 0, sizeof lane);
    for (r = 0; r < GNMR_SUM_CHUNK / GNMR_SUM_LANES; r += 32)
      for (s = 0; s < 2; s++)
        gnmr__rows_avx2(p + (c + s) * cb + r * 128, 32, GNMR_DTYPE_F32, lane[s],
                        NULL);
    for (s = 0; s < 2; s++) gnmr__tree_add(&tree, gnmr__lane_fold(lane[s]));
  }
  return gnmr__tree_sum(&tree);
}

/* Not canonical: the library's kernel over all bytes in one call, no
   per-chunk call, fold or tree: what the driver costs. */
static double one_call(const void *x, size_t bytes) {
  double lane[GNMR_SUM_LANES] = {0};
  gnmr__rows_avx2(x, bytes / 128, GNMR_DTYPE_F32, lane, NULL);
  return gnmr__lane_fold(lane);
}

/* The read probe with 16-byte loads, 8 a row as the canonical kernels
   issue them: what the load count alone costs. */
GNMR__TARGET_AVX2 static double probe16(const void *x, size_t bytes) {
  const unsigned char *p = (const unsigned char *)x;
  __m128i a[8];
  size_t i;
  int k;
  GNMR__UNROLL
  for (k = 0; k < 8; k++) a[k] = _mm_setzero_si128();
  for (i = 0; i + 128 <= bytes; i += 128) {
    GNMR__UNROLL
    for (k = 0; k < 8; k++)
      a[k] = _mm_or_si128(a[k], _mm_loadu_si128((const __m128i *)(p + i) + k));
  }
  for (k = 1; k < 8; k++) a[0] = _mm_or_si128(a[0], a[k]);
  return (double)_mm_cvtsi128_si32(a[0]);
}

static double probe_prefetch(const void *x, size_t bytes) {
  return probe_avx2(x, bytes, 1);
}

static const struct {
  gnmr__rows_fn fn;                      /* a canonical row kernel, or */
  double (*whole)(const void *, size_t); /* a reference over all bytes */
  const char *what;
} kernels[] = {
    {gnmr__rows_avx2, NULL, "library: 4 KiB ahead into L2"},
    {k_no_prefetch, NULL, "no software prefetch"},
    {k_1k_l1, NULL, "1 KiB ahead into L1 (0.2)"},
    {k_8k_l2, NULL, "8 KiB ahead into L2"},
    {k_half_lines, NULL, "4 KiB ahead, every other line"},
    {k_page_8k, NULL, "one line a page, 8 KiB ahead"},
    {k_nta_1k, NULL, "1 KiB ahead, non-temporal"},
    {k_burst_8k, NULL, "a page at once, 8 KiB ahead"},
    {k_burst_nta, NULL, "1 KiB at once, 1 KiB ahead, nta"},
    {k_touch_1k, NULL, "loads 1 KiB ahead, no prefetch"},
    {k_wide_loads, NULL, "32-byte loads, 4 KiB ahead"},
    {NULL, f32_fma, "f32 FMA (not canonical)"},
    {NULL, probe_prefetch, "probe + prefetch 4 KiB into L2"},
    {NULL, two_streams, "2 chunks at once, a page in turn"},
    {NULL, one_call, "one call (not canonical)"},
    {NULL, probe16, "probe, 16-byte loads"},
};
#define N_KERNELS (int)(sizeof kernels / sizeof kernels[0])
#endif

static double run_once(const job *j) {
  gnmr_tensor_stats s;
  switch (j->kind) {
  case K_LIB_SUMSQ:
    if (j->dtype == GNMR_DTYPE_F32)
      return gnmr_sumsq_f32((const float *)j->x, j->n);
    if (j->dtype == GNMR_DTYPE_F16)
      return gnmr_sumsq_f16((const uint16_t *)j->x, j->n);
    return gnmr_sumsq_bf16((const uint16_t *)j->x, j->n);
  case K_LIB_STATS:
    if (j->dtype == GNMR_DTYPE_F32)
      gnmr_stats_f32((const float *)j->x, j->n, &s);
    if (j->dtype == GNMR_DTYPE_F16)
      gnmr_stats_f16((const uint16_t *)j->x, j->n, &s);
    if (j->dtype == GNMR_DTYPE_BF16)
      gnmr_stats_bf16((const uint16_t *)j->x, j->n, &s);
    return s.sumsq + s.amax;
  case K_PLAIN: return plain_f32(j->x, j->n);
#ifdef HAVE_PROBE
  case K_PROBE:
  case K_PROBE_PF:
    return __builtin_cpu_supports("avx512f")
               ? probe_avx512(j->x, j->bytes, j->kind == K_PROBE_PF)
               : probe_avx2(j->x, j->bytes, j->kind == K_PROBE_PF);
#endif
#ifdef HAVE_NATIVE
  case K_NATIVE: return bench_native_sumsq(j->dtype, j->x, j->n);
#endif
#if defined(HAVE_PROBE) && defined(GNMR__AVX2)
  case K_KERNEL:
    return kernels[j->kernel].fn ? gnmr__sum(kernels[j->kernel].fn, j->x, j->n,
                                             GNMR_DTYPE_F32, NULL, NULL)
                                 : kernels[j->kernel].whole(j->x, j->bytes);
#endif
#ifdef HAVE_CBLAS
  case K_SNRM2: return (double)cblas_snrm2((int)j->n, (const float *)j->x, 1);
#endif
  default: return 0.0;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Seconds per call: median over samples, each sample long enough to time. */
static double measure(const job *j, double *spread) {
  double t[21], t0, once;
  long reps = 1, r;
  int samples, k;
  t0 = now();
  sink += run_once(j); /* warm-up, and a first estimate */
  once = now() - t0;
  /* short samples, many of them: on a shared machine the median is then a
     sample that no other job interrupted */
  if (once < 1e-3) reps = (long)(1e-3 / (once > 1e-9 ? once : 1e-9)) + 1;
  samples = once > 0.05 ? 3 : once > 5e-3 ? 7 : 21;
  for (k = 0; k < samples; k++) {
    t0 = now();
    for (r = 0; r < reps; r++) sink += run_once(j);
    t[k] = (now() - t0) / (double)reps;
  }
  qsort(t, (size_t)samples, sizeof t[0], cmp_double);
  *spread = (t[samples - 1] - t[0]) / t[samples / 2];
  return t[samples / 2];
}

/* One timed batch of calls, long enough to time (>= 1 ms). */
static double sample(const job *j, long reps) {
  double t0 = now();
  long r;
  for (r = 0; r < reps; r++) sink += run_once(j);
  return (now() - t0) / (double)reps;
}

/* Calls per sample: about 0.25 ms, short enough that many samples run
   between other jobs' time slices. */
static long reps_for(const job *j) {
  double t0 = now(), once;
  sink += run_once(j);
  once = now() - t0;
  return once < 2.5e-4 ? (long)(2.5e-4 / (once > 1e-9 ? once : 1e-9)) + 1 : 1;
}

/* Speed of a over speed b (per element when per_elem, else per byte),
   sampled alternately so that both see the same machine load: the median
   over the rounds, and the lowest and highest. */
static double ratio(const job *a, const job *b, int per_elem, double *lo,
                    double *hi, double *best) {
  double r[31], wa = per_elem ? (double)a->n : (double)a->bytes;
  double wb = per_elem ? (double)b->n : (double)b->bytes, ma = 1e30, mb = 1e30;
  long ra = reps_for(a), rb = reps_for(b);
  int k, rounds = a->bytes > ((size_t)1 << 26) ? 7 : 31;
  for (k = 0; k < rounds; k++) {
    double ta = sample(a, ra), tb = sample(b, rb);
    r[k] = (wa / ta) / (wb / tb);
    if (ta < ma) ma = ta;
    if (tb < mb) mb = tb;
  }
  qsort(r, (size_t)rounds, sizeof r[0], cmp_double);
  *lo = r[0];
  *hi = r[rounds - 1];
  *best = (wa / ma) / (wb / mb);
  return r[rounds / 2];
}

/* Met or missed is decided on the median ratio; the ratio of each side's
   fastest sample is shown beside it. */
static void target(const char *what, const job *a, const job *b, int per_elem,
                   double want) {
  double lo, hi, best, m = ratio(a, b, per_elem, &lo, &hi, &best);
  printf("| %-40s | %6.2f | %6.2f | %5.2f .. %5.2f | >= %.2f | %s |\n", what, m,
         best, lo, hi, want, m >= want ? "met" : "MISSED");
  fflush(stdout);
  if (csv)
    fprintf(csv, "target,%s,%.4f,%.4f,%.4f,%.4f,%.2f\n", what, m, best, lo, hi,
            want);
}

static void report(const job *j, const char *what) {
  double spread, sec = measure(j, &spread);
  double gbs = (double)j->bytes / sec * 1e-9, ges = (double)j->n / sec * 1e-9;
  char size[32];
  if (j->bytes >= (1u << 30))
    sprintf(size, "%lu GiB", (unsigned long)(j->bytes >> 30));
  else if (j->bytes >= (1u << 20))
    sprintf(size, "%lu MiB", (unsigned long)(j->bytes >> 20));
  else
    sprintf(size, "%lu KiB", (unsigned long)(j->bytes >> 10));
  printf("| %-4s | %7s | %-14s | %7.2f | %7.2f | %5.1f%% |\n",
         dtype_name(j->dtype), size, what, gbs, ges, 100 * spread);
  fflush(stdout);
  if (csv)
    fprintf(csv, "%s,%lu,%s,%.4f,%.4f,%.4f\n", dtype_name(j->dtype),
            (unsigned long)j->bytes, what, gbs, ges, spread);
}

/* Gradient-like values: a sum of uniforms, scaled; no NaN, no subnormals. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float gauss(void) {
  double g = 0;
  int i;
  for (i = 0; i < 4; i++) g += splitmix_uniform(&rng) - 0.5;
  return (float)(g * 1e-2);
}

static void fill(void *buf, size_t bytes, int dtype) {
  size_t i;
  if (dtype == GNMR_DTYPE_F32) {
    float *f = (float *)buf;
    for (i = 0; i < bytes / 4; i++) f[i] = gauss();
  } else {
    uint16_t *h = (uint16_t *)buf;
    for (i = 0; i < bytes / 2; i++) {
      float f = gauss();
      uint32_t b;
      memcpy(&b, &f, 4);
      if (dtype == GNMR_DTYPE_BF16)
        h[i] = (uint16_t)(b >> 16);
      else /* |f| < 0.02: an f16 normal or subnormal, truncated */
        h[i] = (uint16_t)(((b >> 16) & 0x8000u) |
                          (fabsf(f) < 6.1035156e-05f
                               ? (uint32_t)(fabsf(f) * 16777216.0f)
                               : ((((b >> 23) & 0xFFu) - 112u) << 10) |
                                     ((b >> 13) & 0x3FFu)));
    }
  }
}

static job make_job(int kind, int dtype, const void *x, size_t bytes) {
  job j;
  j.kind = kind;
  j.dtype = dtype;
  j.x = x;
  j.bytes = bytes;
  j.n = bytes / (dtype == GNMR_DTYPE_F32 ? 4 : 2);
  j.kernel = 0;
  return j;
}

/* --kernels: each kernel against the read probe, sampled alternately
   (probe, kernel 0, probe, kernel 1, ...) for many rounds; the median ratio
   and the quartiles. */
static void kernels_vs_probe(unsigned char *f32, size_t big) {
#if defined(HAVE_PROBE) && defined(GNMR__AVX2)
  enum { ROUNDS = 41 };
  static double r[N_KERNELS][ROUNDS];
  job probe = make_job(K_PROBE, GNMR_DTYPE_F32, f32, big), k[N_KERNELS];
  double want;
  long reps[N_KERNELS], probe_reps = reps_for(&probe);
  int i, round;
  if (!gnmr_isa_supported(GNMR_ISA_AVX2)) {
    printf("bench_norm --kernels: no AVX2 here\n");
    return;
  }
  want = gnmr_sumsq_f32((const float *)f32, big / 4);
  for (i = 0; i < N_KERNELS; i++) {
    k[i] = make_job(K_KERNEL, GNMR_DTYPE_F32, f32, big);
    k[i].kernel = i;
  }
  for (i = 0; i < N_KERNELS; i++) reps[i] = reps_for(&k[i]);
  for (round = 0; round < ROUNDS; round++)
    for (i = 0; i < N_KERNELS; i++) {
      double tp = sample(&probe, probe_reps), tk = sample(&k[i], reps[i]);
      r[i][round] = tp / tk;
    }
  printf("\n%lu KiB f32, %d rounds\n\n| kernel | bits | kernel / probe: "
         "median | quartiles |\n|---|---|---|---|\n",
         (unsigned long)(big >> 10), ROUNDS);
  for (i = 0; i < N_KERNELS; i++) {
    double got = run_once(&k[i]);
    qsort(r[i], ROUNDS, sizeof r[i][0], cmp_double);
    printf("| %-32s | %s | %.3f | %.3f .. %.3f |\n", kernels[i].what,
           got == want      ? "same"
           : !kernels[i].fn ? "-"
                            : "DIFFER",
           r[i][ROUNDS / 2], r[i][ROUNDS / 4], r[i][3 * ROUNDS / 4]);
  }
#else
  (void)f32;
  (void)big;
  printf("bench_norm --kernels: x86 AVX2 builds only\n");
#endif
}

/* The norm helpers' speed targets, each an interleaved ratio. The f32, f16 and
   bf16 data sit side by side in buf (three regions of `big` bytes). */
static void targets(unsigned char *buf, size_t big, int out_of_cache_only) {
  const size_t small = 64 * 1024;
  unsigned char *f32 = buf, *f16 = buf + big, *bf16 = buf + 2 * big;
  job a, b;
  char what[64];
  int d;
  printf("\n| target: A / B | median | best/best | range | wanted | |\n"
         "|---|---|---|---|---|---|\n");
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F32, f32, big);
  b = make_job(K_PROBE, GNMR_DTYPE_F32, f32, big);
  /* out of cache: the target is 0.95 of the plain read probe */
  sprintf(what, "f32 sumsq / read probe, %lu MiB", (unsigned long)(big >> 20));
  target(what, &a, &b, 0, 0.95);
  b.kind = K_PROBE_PF;
  sprintf(what, "f32 sumsq / probe+prefetch, %lu MiB",
          (unsigned long)(big >> 20));
  target(what, &a, &b, 0, 0.90);
  a.kind = K_LIB_STATS;
  b.kind = K_PROBE;
  sprintf(what, "f32 stats / read probe, %lu MiB", (unsigned long)(big >> 20));
  target(what, &a, &b, 0, 0.95);
  for (d = GNMR_DTYPE_F16; d <= GNMR_DTYPE_BF16; d++) {
    unsigned char *x = d == GNMR_DTYPE_F16 ? f16 : bf16;
    a = make_job(K_LIB_SUMSQ, d, x, big);
    b = make_job(K_PROBE, d, x, big);
    sprintf(what, "%s sumsq / read probe, %lu MiB", dtype_name(d),
            (unsigned long)(big >> 20));
    target(what, &a, &b, 0, 0.95);
  }
  if (out_of_cache_only) return;
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F32, f32, small);
#ifdef HAVE_CBLAS
  b = make_job(K_SNRM2, GNMR_DTYPE_F32, f32, small);
  target("f32 sumsq / cblas_snrm2, 64 KiB", &a, &b, 1, 3.0);
#endif
  b = make_job(K_PLAIN, GNMR_DTYPE_F32, f32, small);
  target("f32 sumsq / plain loop, 64 KiB", &a, &b, 1, 10.0);
  b = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F32, f32, small);
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F16, f16, small);
  target("f16 / f32 sumsq elem/s, 64 KiB", &a, &b, 1, 1.0);
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_BF16, bf16, small);
  target("bf16 / f32 sumsq elem/s, 64 KiB", &a, &b, 1, 1.0);
  b = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F32, f32, big);
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_F16, f16, big / 2);
  sprintf(what, "f16 / f32 sumsq elem/s, %lu MiB f32",
          (unsigned long)(big >> 20));
  target(what, &a, &b, 1, 1.0);
  a = make_job(K_LIB_SUMSQ, GNMR_DTYPE_BF16, bf16, big / 2);
  sprintf(what, "bf16 / f32 sumsq elem/s, %lu MiB f32",
          (unsigned long)(big >> 20));
  target(what, &a, &b, 1, 1.0);
#ifdef HAVE_NATIVE
  {
    int dtype, k;
    for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++)
      for (k = 0; k < 2; k++) {
        size_t bytes = k ? big : small;
        a = make_job(K_LIB_SUMSQ, dtype, buf + (size_t)dtype * big, bytes);
        b = a;
        b.kind = K_NATIVE;
        sprintf(what, "-O2 / -march=native, %s %lu %s", dtype_name(dtype),
                (unsigned long)(k ? bytes >> 20 : bytes >> 10),
                k ? "MiB" : "KiB");
        target(what, &a, &b, 1, 0.95);
      }
  }
#endif
}

int main(int argc, char **argv) {
  size_t max_bytes = (size_t)1 << 30, bytes;
  size_t offset = 0;
  int all_paths = 1, best, dtype, i, isa, mode = 0;
  unsigned char *mem, *buf;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--paths=best") == 0) all_paths = 0;
    if (strcmp(argv[i], "--targets") == 0) mode = 1;
    if (strcmp(argv[i], "--targets=out-of-cache") == 0) mode = 2;
    if (strcmp(argv[i], "--kernels") == 0) mode = 3;
    if (strncmp(argv[i], "--max-bytes=", 12) == 0)
      max_bytes = (size_t)strtoull(argv[i] + 12, NULL, 10);
    if (strncmp(argv[i], "--offset=", 9) == 0)
      offset = (size_t)strtoull(argv[i] + 9, NULL, 10) % 4096;
    if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
      csv = fopen(argv[++i], "w");
      if (!csv) {
        perror(argv[i]);
        return 1;
      }
      fprintf(csv, "dtype,bytes,what,gb_per_s,gelem_per_s,spread\n");
    }
  }
  mem = (unsigned char *)malloc(max_bytes + 8192);
  buf = mem ? mem + (4096 - (uintptr_t)mem % 4096) % 4096 + offset : NULL;
  if (!buf) {
    fprintf(stderr, "bench_norm: cannot allocate %lu bytes\n",
            (unsigned long)max_bytes);
    return 1;
  }
#if defined(HAVE_CBLAS) && defined(OPENBLAS_VERSION)
  openblas_set_num_threads(1);
#endif
  best = gnmr_isa_active();
  if (mode) { /* f32, f16, bf16 side by side, max_bytes / 4 each */
    size_t big = max_bytes / 4;
    for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++)
      fill(buf + (size_t)dtype * big, big, dtype);
    printf("gnmr %s, default path %s\n", gnmr_version(), gnmr_isa_name(best));
    if (mode == 3)
      kernels_vs_probe(buf, big);
    else
      targets(buf, big, mode == 2);
    free(mem);
    return 0;
  }
  printf("gnmr %s, default path %s, paths:", gnmr_version(),
         gnmr_isa_name(best));
  for (isa = 0; isa <= GNMR_ISA_NEON; isa++)
    if (gnmr_isa_supported(isa)) printf(" %s", gnmr_isa_name(isa));
  printf("\n\n| dtype | size | what | GB/s | Gelem/s | spread |\n"
         "|---|---|---|---|---|---|\n");
  for (dtype = GNMR_DTYPE_F32; dtype <= GNMR_DTYPE_BF16; dtype++) {
    fill(buf, max_bytes, dtype);
    for (bytes = 1024; bytes <= max_bytes; bytes *= 4) {
      job j;
      char what[32];
      j.dtype = dtype;
      j.x = buf;
      j.bytes = bytes;
      j.n = bytes / (dtype == GNMR_DTYPE_F32 ? 4 : 2);
      for (isa = GNMR_ISA_NEON; isa >= 0; isa--) {
        if (!gnmr_isa_supported(isa) || (!all_paths && isa != best)) continue;
        gnmr_isa_force(isa);
        j.kind = K_LIB_SUMSQ;
        sprintf(what, "sumsq %s", gnmr_isa_name(isa));
        report(&j, what);
        if (isa == best) {
          j.kind = K_LIB_STATS;
          sprintf(what, "stats %s", gnmr_isa_name(isa));
          report(&j, what);
        }
      }
      gnmr_isa_force(best);
      if (dtype == GNMR_DTYPE_F32 && all_paths) {
        j.kind = K_PLAIN;
        report(&j, "plain loop");
#ifdef HAVE_CBLAS
        j.kind = K_SNRM2;
        report(&j, "cblas_snrm2");
#endif
      }
#ifdef HAVE_PROBE
      if (dtype == GNMR_DTYPE_F32) {
        j.kind = K_PROBE;
        report(&j, "read probe");
        j.kind = K_PROBE_PF;
        report(&j, "probe+prefetch");
      }
#endif
    }
  }
  printf("\n(sink %g)\n", sink);
  if (csv) fclose(csv);
  free(mem);
  return 0;
}
