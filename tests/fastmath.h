/* fastmath.h - lets a test stay honest when it is built with -ffast-math
   or -Ofast (the Makefile's fast-math lane), and does nothing otherwise.

   Include it after gnmr.h (check.h and fuzz.h do), so that gnmr.h itself
   is compiled with the caller's flags: that is what the lane tests. From
   here on, the test's own code
   - classifies by bits: isnan, isinf and isfinite fold to constants under
     -ffinite-math-only (gcc folds isfinite even where the pragma below is
     in effect), so they are redefined here;
   - computes its reference values with fast-math off (the same pragmas
     gnmr.h uses), so a reference model is not reassociated away from the
     bits it pins. */
#ifndef TESTS_FASTMATH_H
#define TESTS_FASTMATH_H

#if defined(__FAST_MATH__) ||                                                  \
    (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__) ||                 \
    defined(__ASSOCIATIVE_MATH__) || defined(__RECIPROCAL_MATH__)
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Only gcc and clang get here: gnmr.h refuses fast-math elsewhere. */
static uint64_t fastmath__bits(double x) {
  uint64_t b;
  memcpy(&b, &x, 8);
  return b & UINT64_C(0x7FFFFFFFFFFFFFFF);
}
__attribute__((unused)) static int fastmath_isnan(double x) {
  return fastmath__bits(x) > UINT64_C(0x7FF0000000000000);
}
__attribute__((unused)) static int fastmath_isinf(double x) {
  return fastmath__bits(x) == UINT64_C(0x7FF0000000000000);
}
__attribute__((unused)) static int fastmath_isfinite(double x) {
  return fastmath__bits(x) < UINT64_C(0x7FF0000000000000);
}
/* A float argument converts exactly (NaN stays NaN, Inf stays Inf). */
#undef isnan
#undef isinf
#undef isfinite
#define isnan(x) fastmath_isnan((double)(x))
#define isinf(x) fastmath_isinf((double)(x))
#define isfinite(x) fastmath_isfinite((double)(x))

#if defined(__clang__)
#pragma float_control(precise, on, push)
#elif defined(__GNUC__)
#pragma GCC optimize("no-fast-math")
#endif
#endif

#endif
