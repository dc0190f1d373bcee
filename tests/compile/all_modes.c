/* The header included in every mode one translation unit can hold, in the
   order a project that vendors it may end up with: the interface (twice:
   the include guard), then the implementation after it (twice: the
   GNMR__IMPLEMENTED guard). The Makefile builds this file as C, with
   -DGNMR_STATIC (every include then static), and as C++. Defining
   GNMR_STATIC only after the first include must stop the build: the
   Makefile checks that with -DALL_MODES_LATE_STATIC. */
#include "gnmr.h"
#include "gnmr.h"
#ifdef ALL_MODES_LATE_STATIC
#define GNMR_STATIC
#endif
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "gnmr.h"
#include "tests/check.h"

TEST(every_part_is_there_once) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_slot units[2];
  gnmr_ctl ctl;
  gnmr_decision d[2];
  const float norms[2] = {3.0f, 4.0f};
  const float x[2] = {3.0f, 4.0f};
  unsigned char buf[1024];
  size_t written = 0;
  REQUIRE(gnmr_init(&ctl, &cfg, units, 2) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_step(&ctl, norms, d), GNMR_OK);
  EXPECT_EQ_INT(gnmr_checkpoint_save(&ctl, buf, sizeof buf, &written), GNMR_OK);
  EXPECT_EQ_INT(gnmr_checkpoint_load(&ctl, buf, written), GNMR_OK);
  EXPECT_EQ_BITS(gnmr_sumsq_f32(x, 2), 25.0);
  EXPECT(strcmp(gnmr_version(), GNMR_VERSION_STRING) == 0);
  EXPECT(gnmr_isa_supported(GNMR_ISA_SCALAR) == 1);
}

int main(int argc, char **argv) {
  static const check_case cases[] = {CHECK_CASE(every_part_is_there_once)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
