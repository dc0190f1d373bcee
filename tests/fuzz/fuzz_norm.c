/* fuzz_norm.c - libFuzzer harness for the norm helpers.

   Input: a header (dtype, length, misalignment, tensor split, FTZ/DAZ) and
   a pattern of element bytes, tiled (each tile a little different) up to
   the length, so inputs of a few bytes reach several GNMR_SUM_CHUNK chunks
   and odd trees of chunk sums.

   Every instruction-set path this CPU and build can run (gnmr_isa_supported)
   is forced in turn and must give the scalar path's bits: sums of squares,
   amax, non-finite counts, per-unit sums and norms. The harness also holds
   its own reference of the canonical summation (gnmr.h, "norm helpers"), built
   level by level rather than streamed, so the scalar path itself is checked and
   the comparison can fail even where scalar is the only path. Non-finite
   inputs: the sum must be NaN when an element is NaN, else +Inf, on every
   path; amax and the non-finite count stay exact. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/fuzz/fuzz.h"

#include <math.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define FUZZ_HAVE_MXCSR 1
#endif

#define MAX_CHUNKS 9u
#define MAX_ELEMS (MAX_CHUNKS * GNMR_SUM_CHUNK)
#define MAX_TENSORS 4u
#define N_UNITS 3u

static double values[MAX_ELEMS];
static unsigned char storage[MAX_ELEMS * 4u + 16u];
static unsigned char aligned_copy[MAX_ELEMS * 4u + 16u];

/* binary16 to double by arithmetic, not by bit surgery like gnmr.h. */
static double ref_f16(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0x1F)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexp((double)mant, -24);
  else
    v = ldexp((double)(mant + 1024), exp - 25);
  return sign ? -v : v;
}

static double ref_element(const unsigned char *p, int dtype) {
  if (dtype == GNMR_DTYPE_F32) {
    float f;
    memcpy(&f, p, 4);
    return (double)f;
  } else {
    uint16_t h = (uint16_t)(p[0] | p[1] << 8);
    if (dtype == GNMR_DTYPE_F16) return ref_f16(h);
    {
      uint32_t bits = (uint32_t)h << 16;
      float f;
      memcpy(&f, &bits, 4);
      return (double)f;
    }
  }
}

/* The canonical sum, as gnmr.h states it: lanes per chunk, lanes folded
   by halves, chunk sums paired level by level, an odd last one carried. */
static double ref_sumsq(const double *v, size_t n) {
  double sums[MAX_CHUNKS];
  size_t chunks = 0, start, count;
  for (start = 0; start < n; start += GNMR_SUM_CHUNK) {
    double lane[GNMR_SUM_LANES];
    size_t i, half;
    memset(lane, 0, sizeof lane);
    for (i = start; i < n && i < start + GNMR_SUM_CHUNK; i++)
      lane[(i - start) % GNMR_SUM_LANES] += v[i] * v[i];
    for (half = GNMR_SUM_LANES / 2; half >= 1; half /= 2)
      for (i = 0; i < half; i++) lane[i] += lane[i + half];
    sums[chunks++] = lane[0];
  }
  if (chunks == 0) return 0.0;
  for (count = chunks; count > 1; count = (count + 1) / 2) {
    size_t k;
    for (k = 0; k + 1 < count; k += 2) sums[k / 2] = sums[k] + sums[k + 1];
    if (count % 2) sums[count / 2] = sums[count - 1];
  }
  return sums[0];
}

static void ref_stats(const double *v, size_t n, gnmr_tensor_stats *out) {
  size_t i;
  out->sumsq = ref_sumsq(v, n);
  out->amax = 0.0;
  out->nonfinite = 0;
  for (i = 0; i < n; i++) {
    if (!isfinite(v[i]))
      out->nonfinite++;
    else if (fabs(v[i]) > out->amax)
      out->amax = fabs(v[i]);
  }
}

static int has_nan(const double *v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (isnan(v[i])) return 1;
  return 0;
}

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* A sum over data holding non-finite elements: NaN if one is NaN, else
   +Inf. Bits otherwise. */
static void check_sum(double got, double want, int any_nonfinite, int any_nan) {
  if (!any_nonfinite)
    FUZZ_CHECK(same_bits(got, want));
  else if (any_nan)
    FUZZ_CHECK(isnan(got));
  else
    FUZZ_CHECK(isinf(got) && got > 0.0);
}

static void check_stats(const gnmr_tensor_stats *got,
                        const gnmr_tensor_stats *want, int any_nan) {
  FUZZ_CHECK(got->nonfinite == want->nonfinite);
  FUZZ_CHECK(same_bits(got->amax, want->amax));
  check_sum(got->sumsq, want->sumsq, want->nonfinite > 0, any_nan);
}

typedef struct results {
  gnmr_tensor_stats stats;
  double sumsq;
  double unit_sumsq[N_UNITS];
  float unit_norms[N_UNITS];
  int sumsq_rc, norms_rc;
} results;

/* Everything one path computes over the data. */
static void compute(results *res, const void *aligned, size_t n, int dtype,
                    const gnmr_tensor *t, size_t nt) {
  if (dtype == GNMR_DTYPE_F32) {
    gnmr_stats_f32((const float *)aligned, n, &res->stats);
    res->sumsq = gnmr_sumsq_f32((const float *)aligned, n);
  } else if (dtype == GNMR_DTYPE_F16) {
    gnmr_stats_f16((const uint16_t *)aligned, n, &res->stats);
    res->sumsq = gnmr_sumsq_f16((const uint16_t *)aligned, n);
  } else {
    gnmr_stats_bf16((const uint16_t *)aligned, n, &res->stats);
    res->sumsq = gnmr_sumsq_bf16((const uint16_t *)aligned, n);
  }
  res->sumsq_rc = gnmr_unit_sumsq(t, nt, res->unit_sumsq, N_UNITS);
  res->norms_rc = gnmr_unit_norms(t, nt, res->unit_norms, N_UNITS);
}

/* Refused tensor lists leave the outputs alone. */
static void check_refusals(const gnmr_tensor *t, size_t nt) {
  gnmr_tensor bad[MAX_TENSORS + 1];
  double sums[N_UNITS];
  float norms[N_UNITS];
  size_t i;
  memcpy(bad, t, sizeof bad[0] * nt);
  for (i = 0; i < N_UNITS; i++) {
    sums[i] = -7.0;
    norms[i] = -7.0f;
  }
  bad[nt] = t[0];
  bad[nt].unit = N_UNITS; /* out of range */
  FUZZ_CHECK(gnmr_unit_sumsq(bad, nt + 1, sums, N_UNITS) == GNMR_EINVAL);
  FUZZ_CHECK(gnmr_unit_norms(bad, nt + 1, norms, N_UNITS) == GNMR_EINVAL);
  bad[nt] = t[0];
  bad[nt].dtype = 3;
  FUZZ_CHECK(gnmr_unit_sumsq(bad, nt + 1, sums, N_UNITS) == GNMR_EINVAL);
  bad[nt] = t[0];
  bad[nt].data = NULL;
  bad[nt].n = 1;
  FUZZ_CHECK(gnmr_unit_norms(bad, nt + 1, norms, N_UNITS) == GNMR_EINVAL);
  FUZZ_CHECK(gnmr_unit_sumsq(NULL, 1, sums, N_UNITS) == GNMR_EINVAL);
  FUZZ_CHECK(gnmr_unit_norms(t, nt, NULL, N_UNITS) == GNMR_EINVAL);
  for (i = 0; i < N_UNITS; i++)
    FUZZ_CHECK(sums[i] == -7.0 && norms[i] == -7.0f);
}

/* Sets or clears FTZ and DAZ where the CPU has them; 0 where it does not. */
static int set_ftz_daz(int on) {
#ifdef FUZZ_HAVE_MXCSR
  static unsigned int saved;
  if (on) {
    saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);
  } else {
    _mm_setcsr(saved);
  }
  return 1;
#else
  (void)on;
  return 0;
#endif
}

/* Every runnable path but scalar must give scalar's results. */
static void check_paths(const results *scalar, const void *aligned, size_t n,
                        int dtype, const gnmr_tensor *t, size_t nt,
                        int any_nan) {
  results path;
  int isa;
  for (isa = GNMR_ISA_SCALAR + 1; isa <= GNMR_ISA_NEON; isa++) {
    size_t u;
    if (!gnmr_isa_supported(isa)) {
      FUZZ_CHECK(gnmr_isa_force(isa) == GNMR_EISA);
      continue;
    }
    FUZZ_CHECK(gnmr_isa_force(isa) == GNMR_OK);
    FUZZ_CHECK(gnmr_isa_active() == isa);
    memset(&path, 0xAB, sizeof path);
    compute(&path, aligned, n, dtype, t, nt);
    check_stats(&path.stats, &scalar->stats, any_nan);
    check_sum(path.sumsq, scalar->sumsq, scalar->stats.nonfinite > 0, any_nan);
    FUZZ_CHECK(path.sumsq_rc == GNMR_OK && path.norms_rc == GNMR_OK);
    for (u = 0; u < N_UNITS; u++) {
      if (isfinite(scalar->unit_sumsq[u])) {
        FUZZ_CHECK(same_bits(path.unit_sumsq[u], scalar->unit_sumsq[u]));
        FUZZ_CHECK(memcmp(&path.unit_norms[u], &scalar->unit_norms[u],
                          sizeof(float)) == 0);
      } else {
        FUZZ_CHECK(isnan(path.unit_sumsq[u]) == isnan(scalar->unit_sumsq[u]));
        FUZZ_CHECK(!isfinite(path.unit_norms[u]));
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_reader r;
  uint8_t head, split;
  int dtype, ftz, active;
  size_t esize, n, i, pattern_len, offset, nt, cut[MAX_TENSORS + 1];
  const uint8_t *pattern;
  gnmr_tensor t[MAX_TENSORS + 1];
  gnmr_tensor_stats want;
  results scalar;
  int any_nan;

  r.p = data;
  r.left = size;
  head = fuzz_u8(&r);
  dtype = head % 3;
  ftz = (head >> 2) & 1;
  esize = dtype == GNMR_DTYPE_F32 ? 4u : 2u;
  offset = (head >> 3) & 7u;
  split = fuzz_u8(&r);
  if (head & 0x80) {
    n = ((size_t)fuzz_u8(&r) << 8 | fuzz_u8(&r)) % (MAX_ELEMS + 1u);
  } else {
    n = 0; /* the pattern itself, untiled */
  }
  pattern = r.p;
  pattern_len = r.left / esize * esize;
  if (!(head & 0x80)) n = pattern_len / esize;
  if (n > MAX_ELEMS) n = MAX_ELEMS;

  /* Tile the pattern; each tile flips a different low mantissa bit. */
  for (i = 0; i < n; i++) {
    unsigned char *dst = storage + offset + i * esize;
    if (pattern_len == 0) {
      memset(dst, 0, esize);
    } else {
      size_t at = (i * esize) % pattern_len, tile = (i * esize) / pattern_len;
      memcpy(dst, pattern + at, esize);
      dst[0] ^= (unsigned char)(tile & 7u);
    }
    values[i] = ref_element(dst, dtype);
  }
  memcpy(aligned_copy, storage + offset, n * esize);
  any_nan = has_nan(values, n);

  /* Up to MAX_TENSORS tensors over the (misaligned) data; units in any
     order (the unit number wraps around), a unit's tensors not always
     adjacent. */
  nt = 1u + split % MAX_TENSORS;
  cut[0] = 0;
  for (i = 1; i < nt; i++) {
    size_t c = n ? (size_t)fuzz_u32(&r) % (n + 1u) : 0;
    cut[i] = c < cut[i - 1] ? cut[i - 1] : c;
  }
  cut[nt] = n;
  for (i = 0; i < nt; i++) {
    t[i].data = storage + offset + cut[i] * esize;
    t[i].n = cut[i + 1] - cut[i];
    t[i].dtype = dtype;
    t[i].unit = (uint32_t)((i * (1u + (split >> 4))) / 2u % N_UNITS);
  }
  check_refusals(t, nt);

  active = gnmr_isa_active();
  FUZZ_CHECK(gnmr_isa_supported(GNMR_ISA_SCALAR));
  FUZZ_CHECK(gnmr_isa_force(-1) == GNMR_EISA && gnmr_isa_active() == active);
  FUZZ_CHECK(gnmr_isa_force(GNMR_ISA_NEON + 1) == GNMR_EISA &&
             gnmr_isa_active() == active);

  /* Scalar against the reference (without FTZ/DAZ: the reference is the
     IEEE definition). */
  FUZZ_CHECK(gnmr_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
  FUZZ_CHECK(gnmr_isa_active() == GNMR_ISA_SCALAR);
  compute(&scalar, aligned_copy, n, dtype, t, nt);
  ref_stats(values, n, &want);
  check_stats(&scalar.stats, &want, any_nan);
  check_sum(scalar.sumsq, want.sumsq, want.nonfinite > 0, any_nan);
  FUZZ_CHECK(scalar.sumsq_rc == GNMR_OK && scalar.norms_rc == GNMR_OK);
  {
    double unit_sum[N_UNITS] = {0.0, 0.0, 0.0};
    size_t u;
    for (i = 0; i < nt; i++)
      unit_sum[t[i].unit] += ref_sumsq(values + cut[i], t[i].n);
    for (u = 0; u < N_UNITS; u++) {
      int nonfinite = !isfinite(unit_sum[u]);
      if (!nonfinite) {
        FUZZ_CHECK(same_bits(scalar.unit_sumsq[u], unit_sum[u]));
        FUZZ_CHECK(scalar.unit_norms[u] == (float)sqrt(unit_sum[u]));
      } else {
        FUZZ_CHECK(!isfinite(scalar.unit_sumsq[u]));
        FUZZ_CHECK(!isfinite(scalar.unit_norms[u]));
      }
    }
  }

  /* Every other runnable path against scalar, with FTZ/DAZ set when the
     input says so (scalar recomputed under the same mode). */
  if (ftz && set_ftz_daz(1)) {
    FUZZ_CHECK(gnmr_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    compute(&scalar, aligned_copy, n, dtype, t, nt);
    check_paths(&scalar, aligned_copy, n, dtype, t, nt, any_nan);
    set_ftz_daz(0);
  } else {
    check_paths(&scalar, aligned_copy, n, dtype, t, nt, any_nan);
  }
  FUZZ_CHECK(gnmr_isa_force(active) == GNMR_OK);
  return 0;
}
