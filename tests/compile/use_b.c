/* Interface only: uses the norm helpers from another translation unit. */
#include "gnmr.h"

double use_b(void);
double use_b(void) {
  float x[3] = {3.0f, 4.0f, 12.0f};
  return gnmr_sumsq_f32(x, 3);
}
