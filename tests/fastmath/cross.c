/* cross.c - gnmr.h built -Ofast gives the bits it gives built plain: one
   workload (tests/fastmath/run.c) through both builds, on every path this
   CPU runs, compared digest by digest. Linked without -Ofast, so no FTZ/DAZ:
   subnormal inputs count here too. */
#include "tests/fastmath/run.h"

#include <stdio.h>

int main(void) {
  static const char *names[] = {"scalar", "sse2", "avx2", "avx512", "neon"};
  int isa, passed = 0, failed = 0;
  for (isa = 0; isa < 5; isa++) {
    uint64_t c_plain, n_plain, c_fast, n_fast;
    if (!fastmath_supported_plain(isa)) continue;
    if (!fastmath_supported_ofast(isa)) {
      printf("FAIL %s: supported plain, not -Ofast\n", names[isa]);
      failed++;
      continue;
    }
    fastmath_run_plain(isa, &c_plain, &n_plain);
    fastmath_run_ofast(isa, &c_fast, &n_fast);
    if (c_plain < 16 || n_plain < 16) {
      printf("FAIL %s: the plain run stopped (%llu, %llu)\n", names[isa],
             (unsigned long long)c_plain, (unsigned long long)n_plain);
      failed++;
      continue;
    }
    printf("%s %-6s controller plain %016llx -Ofast %016llx\n",
           c_plain == c_fast ? "ok  " : "FAIL", names[isa],
           (unsigned long long)c_plain, (unsigned long long)c_fast);
    printf("%s %-6s norms      plain %016llx -Ofast %016llx\n",
           n_plain == n_fast ? "ok  " : "FAIL", names[isa],
           (unsigned long long)n_plain, (unsigned long long)n_fast);
    passed += (c_plain == c_fast) + (n_plain == n_fast);
    failed += (c_plain != c_fast) + (n_plain != n_fast);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
