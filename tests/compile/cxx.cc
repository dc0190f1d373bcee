// The header built as C++ (the Makefile builds this as C++11 and C++17 with
// -Werror): the interface sits in extern "C", the implementation compiles.
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

TEST(cxx_controller_runs) {
  gnmr_config cfg = gnmr_config_paper(); // 0.1's rules: ratio 1 at first
  gnmr_slot units[3];
  gnmr_ctl ctl;
  gnmr_decision d[3];
  const float norms[3] = {1.0f, 2.0f, 3.0f};
  REQUIRE(gnmr_init(&ctl, &cfg, units, 3) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_step(&ctl, norms, d), GNMR_OK);
  EXPECT_EQ_INT(d[1].action, GNMR_ACTION_KEEP);
  EXPECT_EQ_BITS(d[1].ratio, 1.0);
}

TEST(cxx_norms_run) {
  const float x[2] = {3.0f, 4.0f};
  EXPECT_EQ_BITS(gnmr_sumsq_f32(x, 2), 25.0);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {CHECK_CASE(cxx_controller_runs),
                                     CHECK_CASE(cxx_norms_run)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
