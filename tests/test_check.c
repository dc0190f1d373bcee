/* test_check.c - the runner's own counts (tests/check.h): a case that
   skips counts as skipped, not passed; one that failed before it skipped
   counts as failed. */
#include "tests/check.h"

static int inner_ran_past_skip;

TEST(inner_passes) { EXPECT(1 + 1 == 2); }
TEST(inner_skips) {
  SKIP("nothing to run here");
  inner_ran_past_skip = 1;
}
TEST(inner_fails_then_skips) {
  check__failed_here = 1; /* as a failed EXPECT, without its message */
  SKIP("too late: a check already failed");
}

TEST(a_skip_counts_as_skipped_and_a_failure_before_it_as_failed) {
  static const check_case inner[] = {CHECK_CASE(inner_passes),
                                     CHECK_CASE(inner_skips),
                                     CHECK_CASE(inner_fails_then_skips)};
  check_counts k;
  printf("  (expected below: one ok, one skip, one FAIL)\n");
  k = check_run(inner, sizeof inner / sizeof inner[0], NULL);
  EXPECT_EQ_INT(k.passed, 1);
  EXPECT_EQ_INT(k.skipped, 1);
  EXPECT_EQ_INT(k.failed, 1);
  EXPECT(!inner_ran_past_skip);
  k = check_run(inner, sizeof inner / sizeof inner[0], "inner_skips");
  EXPECT(k.passed == 0 && k.skipped == 1 && k.failed == 0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(a_skip_counts_as_skipped_and_a_failure_before_it_as_failed)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
