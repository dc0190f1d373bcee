#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"
TEST(placeholder) { EXPECT(1); }
int main(int argc, char **argv) {
  static const check_case cases[] = {CHECK_CASE(placeholder)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
