/* lowp.h - emulated low-precision GEMM inputs for the examples.

   Per-tensor quantization to OCP FP8 E4M3, FP8 E5M2 and FP4 E2M1 (round to
   nearest even, saturating), emulated in float, and delayed scaling from an
   amax history as Transformer Engine does it. Shared by train_stress.c and
   train_lm.c. Everything is static: include it once per program. */
#ifndef LOWP_H
#define LOWP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LP_AMAX_HISTORY 16 /* delayed scaling: amax history length */

/* Static, and no warning where a program uses only some of them. */
#if defined(__GNUC__) || defined(__clang__)
#define LP_FN static __attribute__((unused))
#else
#define LP_FN static
#endif

/* A minifloat with `mbits` mantissa bits, smallest normal exponent `emin`
   (subnormals below it) and largest finite value `max`. Every value it holds
   is exact in float, so quantization is emulated in float. `block` > 0: the
   format is scaled per block of that many values along the GEMM's inner
   dimension (NVFP4 style, each block's scale in E4M3 under a per-tensor
   scale; lp_quantize_block) instead of per tensor by delayed scaling. */
typedef struct lp_format {
  const char *name;
  int mbits;
  int emin;
  float max;
  int block;
} lp_format;

static const lp_format LP_FORMATS[] = {
    {"e4m3", 3, -6, 448.0f, 0},    /* OCP FP8 E4M3 (no Inf; NaN S.1111.111) */
    {"e5m2", 2, -14, 57344.0f, 0}, /* OCP FP8 E5M2 */
    {"e2m1", 1, 0, 6.0f, 0},       /* OCP FP4 E2M1 (no Inf, no NaN) */
    {"nvfp4", 1, 0, 6.0f, 16},     /* E2M1, a scale per 1x16 block */
};
#define LP_N_FORMATS (sizeof LP_FORMATS / sizeof LP_FORMATS[0])

LP_FN const lp_format *lp_format_find(const char *name) {
  size_t i;
  for (i = 0; i < LP_N_FORMATS; i++)
    if (strcmp(LP_FORMATS[i].name, name) == 0) return &LP_FORMATS[i];
  return NULL;
}

/* 2^k as a float, for -126 <= k <= 127 (exact, from the bits). */
LP_FN float lp_pow2f(int k) {
  uint32_t b = (uint32_t)(127 + k) << 23;
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* Nearest value of the format, ties to even, saturating: finite values and
   +-Inf beyond the largest go to +-max; the sign of zero is kept; NaN stays
   NaN (E2M1 has no NaN code: the emulation lets it through so that a NaN is
   never hidden). e = floor(log2 |x|) from the exponent bits (float
   subnormals read -127 and clamp to emin); |x| / quantum is a power-of-two
   scale, exact in float, below 2^(mbits+1); rintf() rounds ties to even in
   the default rounding mode, and the parity of the integer is the parity of
   the mantissa's last bit. Equal, bit for bit, to the double-precision
   frexp/ldexp/rint form over every float (checked exhaustively). */
LP_FN float lp_quantize(float x, const lp_format *f) {
  float a = fabsf(x), q;
  uint32_t bits;
  int e;
  if (isnan(x) || a == 0.0f) return x;
  if (!(a < f->max)) return x < 0 ? -f->max : f->max;
  memcpy(&bits, &a, sizeof bits);
  e = (int)(bits >> 23) - 127;
  if (e < f->emin) e = f->emin;
  q = rintf(a * lp_pow2f(f->mbits - e)) * lp_pow2f(e - f->mbits);
  if (q > f->max) q = f->max;
  return x < 0 ? -q : q;
}

/* Delayed scaling: the scale for this step comes from the largest amax of
   the last LP_AMAX_HISTORY steps (not from this tensor), scale = max / amax;
   this step's amax then enters the history. The first step has no history
   and scales by its own amax. */
typedef struct lp_scaler {
  float hist[LP_AMAX_HISTORY];
  int len, head;
} lp_scaler;

LP_FN float lp_scaler_scale(const lp_scaler *s, const lp_format *f,
                            float amax_now) {
  float amax = 0.0f;
  int i;
  for (i = 0; i < s->len; i++)
    if (s->hist[i] > amax) amax = s->hist[i];
  if (s->len == 0) amax = amax_now;
  if (!(amax > 0.0f) || !isfinite(amax)) return 1.0f;
  return f->max / amax;
}

LP_FN void lp_scaler_push(lp_scaler *s, float amax) {
  if (!isfinite(amax)) return;
  s->hist[s->head] = amax;
  s->head = (s->head + 1) % LP_AMAX_HISTORY;
  if (s->len < LP_AMAX_HISTORY) s->len++;
}

LP_FN float lp_amax(const float *x, size_t n) {
  float a = 0.0f;
  size_t i;
  for (i = 0; i < n; i++)
    if (fabsf(x[i]) > a) a = fabsf(x[i]);
  return a;
}

/* out = Q(x * scale) / scale, the dequantized GEMM input. */
LP_FN void lp_quantize_tensor(const float *x, size_t n, const lp_format *f,
                              float scale, float *out) {
  size_t i;
  for (i = 0; i < n; i++) out[i] = lp_quantize(x[i] * scale, f) / scale;
}

/* The forward signal of a unit (the demos' forward arms): the relative
   quantization error ||xq - x|| / ||x|| of its GEMM input over n values;
   xq is what the cheap path used (its faults included) or, when NULL, x
   quantized at `scale` in format f: on the f32 path, what the cheap path
   would do now. */
LP_FN float lp_quant_error(const float *x, const float *xq, size_t n,
                           const lp_format *f, float scale) {
  double err = 0, ref = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    double q = xq ? (double)xq[i]
                  : (double)(lp_quantize(x[i] * scale, f) / scale),
           d = q - (double)x[i];
    err += d * d;
    ref += (double)x[i] * (double)x[i];
  }
  return ref > 0 ? (float)sqrt(err / ref) : 0.0f;
}

/* NVFP4-style block scaling (formats with block > 0): a block (f->block
   values along the GEMM's inner dimension) is quantized as Q(x / s) x s
   with its own scale s, which maps the block's amax to f->max and is held
   in E4M3 relative to the tensor's scale (the tensor's amax / (f->max x
   448), lp_block_tensor_scale), as NVFP4 stores it. A scale that rounds to
   zero in E4M3 makes the block zeros (s = 0: the caller writes 0). */
LP_FN float lp_block_tensor_scale(float amax, const lp_format *f) {
  return amax / (f->max * LP_FORMATS[0].max);
}

LP_FN float lp_block_scale(float block_amax, const lp_format *f,
                           float tensor_scale) {
  if (!(tensor_scale > 0.0f) || !isfinite(tensor_scale)) return 0.0f;
  return lp_quantize(block_amax / f->max / tensor_scale, &LP_FORMATS[0]) *
         tensor_scale;
}

#endif /* LOWP_H */
