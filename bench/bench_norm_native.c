/* The library once more, built with -march=native as a private copy
   (GNMR_STATIC), linked into bench_norm beside its plain -O2 copy: the two
   builds are then compared in one process, alternately, under the same load
   (runtime dispatch should leave -march=native nothing to add). */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

double bench_native_sumsq(int dtype, const void *x, size_t n);
double bench_native_sumsq(int dtype, const void *x, size_t n) {
  if (dtype == GNMR_DTYPE_F32) return gnmr_sumsq_f32((const float *)x, n);
  if (dtype == GNMR_DTYPE_F16) return gnmr_sumsq_f16((const uint16_t *)x, n);
  return gnmr_sumsq_bf16((const uint16_t *)x, n);
}
