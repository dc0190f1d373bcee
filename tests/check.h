/* check.h - the tests' tiny runner (in the spirit of utest.h).

   TEST(name) { ... } defines a test; list it in a CHECK_SUITE.
   EXPECT(cond)   records a failure and goes on.
   REQUIRE(cond)  records a failure and leaves the test.
   EXPECT_EQ_BITS(a, b) compares two doubles bit for bit.
   SKIP(why)      leaves a test that cannot run here (no AVX-512, a build
                  without a feature): it counts as skipped, not passed, unless
                  a check failed before it.
   check_quick()  1 under GNMR_TEST_QUICK (the sanitizer and valgrind
                  lanes set it): a test that repeats one property over
                  many inputs may then check a sample of them; `make test`
                  runs them all.
   Run with --filter=SUBSTRING to run only matching tests. The runner prints
   one line per test and closes with the plain line
   "N passed, N failed, N skipped". */
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/splitmix.h"
#include "tests/fastmath.h"

#if defined(__GNUC__) || defined(__clang__)
#define CHECK_UNUSED __attribute__((unused))
#else
#define CHECK_UNUSED
#endif

static int check__failed_here, check__skipped_here;

CHECK_UNUSED static int check_quick(void) {
  const char *q = getenv("GNMR_TEST_QUICK");
  return q && *q && strcmp(q, "0") != 0;
}

#define TEST(name) static void name(void)

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("  %s:%d: expected %s\n", __FILE__, __LINE__, #cond);             \
      check__failed_here = 1;                                                  \
    }                                                                          \
  } while (0)

#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("  %s:%d: required %s\n", __FILE__, __LINE__, #cond);             \
      check__failed_here = 1;                                                  \
      return;                                                                  \
    }                                                                          \
  } while (0)

#define SKIP(why)                                                              \
  do {                                                                         \
    printf("  skipped: %s\n", why);                                            \
    check__skipped_here = 1;                                                   \
    return;                                                                    \
  } while (0)

#define EXPECT_EQ_INT(a, b)                                                    \
  do {                                                                         \
    long long check__a = (long long)(a), check__b = (long long)(b);            \
    if (check__a != check__b) {                                                \
      printf("  %s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b,  \
             check__a, check__b);                                              \
      check__failed_here = 1;                                                  \
    }                                                                          \
  } while (0)

#define EXPECT_EQ_BITS(a, b)                                                   \
  do {                                                                         \
    double check__a = (a), check__b = (b);                                     \
    if (memcmp(&check__a, &check__b, sizeof check__a) != 0) {                  \
      printf("  %s:%d: %s == %s bitwise: %.17g != %.17g\n", __FILE__,          \
             __LINE__, #a, #b, check__a, check__b);                            \
      check__failed_here = 1;                                                  \
    }                                                                          \
  } while (0)

#define EXPECT_NEAR(a, b, tol)                                                 \
  do {                                                                         \
    double check__a = (a), check__b = (b);                                     \
    if (!(fabs(check__a - check__b) <= (tol))) {                               \
      printf("  %s:%d: %s ~ %s: %.17g vs %.17g (tol %g)\n", __FILE__,          \
             __LINE__, #a, #b, check__a, check__b, (double)(tol));             \
      check__failed_here = 1;                                                  \
    }                                                                          \
  } while (0)

typedef struct check_case {
  const char *name;
  void (*fn)(void);
} check_case;

#define CHECK_CASE(fn)                                                         \
  { #fn, fn }

/* What a run of cases counted. */
typedef struct check_counts {
  int passed, failed, skipped;
} check_counts;

/* Runs the cases whose name holds filter (all for NULL), one line each: a
   case that failed is FAIL, one that skipped and failed nothing is skip. */
CHECK_UNUSED static check_counts check_run(const check_case *cases, size_t n,
                                           const char *filter) {
  check_counts k = {0, 0, 0};
  size_t c;
  for (c = 0; c < n; c++) {
    if (filter && !strstr(cases[c].name, filter)) continue;
    check__failed_here = check__skipped_here = 0;
    cases[c].fn();
    printf("%s %s\n",
           check__failed_here    ? "FAIL"
           : check__skipped_here ? "skip"
                                 : "ok  ",
           cases[c].name);
    if (check__failed_here)
      k.failed++;
    else if (check__skipped_here)
      k.skipped++;
    else
      k.passed++;
  }
  check__failed_here = check__skipped_here = 0;
  return k;
}

/* Runs the cases; returns the process exit status. */
CHECK_UNUSED static int check_main(const check_case *cases, size_t n, int argc,
                                   char **argv) {
  const char *filter = NULL;
  check_counts k;
  int i;
  for (i = 1; i < argc; i++)
    if (strncmp(argv[i], "--filter=", 9) == 0) filter = argv[i] + 9;
  k = check_run(cases, n, filter);
  printf("%d passed, %d failed, %d skipped\n", k.passed, k.failed, k.skipped);
  return k.failed ? 1 : 0;
}

/* A small deterministic generator for the tests (tests/splitmix.h). */
static uint64_t check_rand_state = 0x9E3779B97F4A7C15ull;
CHECK_UNUSED static uint64_t check_rand(void) {
  return splitmix_next(&check_rand_state);
}
CHECK_UNUSED static double check_uniform(void) {
  return splitmix_uniform(&check_rand_state);
}
/* Uniform in [-1, 1) as a function of (u, t, salt), no state: a scripted
   world the same on every run and in any order of reading (splitmix64's
   finaliser over the three). */
CHECK_UNUSED static double check_noise(uint32_t u, uint32_t t, uint32_t salt) {
  uint64_t x = ((uint64_t)u << 40) ^ ((uint64_t)t << 8) ^ salt;
  return (double)(splitmix_next(&x) >> 11) / 4503599627370496.0 - 1.0;
}

/* A whole file as a string (malloc'd; the caller frees), or NULL. */
CHECK_UNUSED static char *check_read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long len;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (text = (char *)malloc((size_t)len + 1)))
    text[fread(text, 1, (size_t)len, f)] = '\0';
  fclose(f);
  return text;
}

#endif
