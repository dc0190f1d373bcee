/* Interface only: uses the controller from another translation unit. */
#include "gnmr.h"

int use_a(void);
int use_a(void) {
  gnmr_config cfg = gnmr_config_default();
  gnmr_slot units[2];
  gnmr_ctl ctl;
  float norms[2] = {1.0f, 2.0f};
  int rc = gnmr_init(&ctl, &cfg, units, 2);
  if (rc != GNMR_OK) return rc;
  return gnmr_step(&ctl, norms, NULL);
}
