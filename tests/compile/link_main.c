/* Links the implementation file, two interface-only files and two
   GNMR_STATIC files into one program, and checks that each part works. */
#include "gnmr.h"
#include "tests/check.h"

int use_a(void);
double use_b(void);
int static_a(void);
int static_b(void);

TEST(interface_files_use_the_one_implementation) {
  EXPECT_EQ_INT(use_a(), GNMR_OK);
  EXPECT_EQ_BITS(use_b(), 169.0);
  EXPECT(strcmp(gnmr_version(), GNMR_VERSION_STRING) == 0);
}

TEST(static_copies_link_beside_it) {
  EXPECT_EQ_INT(static_a(), GNMR_OK);
  EXPECT_EQ_INT(static_b(), GNMR_OK);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(interface_files_use_the_one_implementation),
      CHECK_CASE(static_copies_link_beside_it)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
