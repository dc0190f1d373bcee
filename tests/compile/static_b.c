/* A private copy of the whole library: GNMR_STATIC makes every symbol static,
   so two such files link into one program beside the shared implementation. */
#define GNMR_STATIC
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

int static_b(void);
int static_b(void) {
  gnmr_config cfg = gnmr_config_default();
  return gnmr_config_check(&cfg, UINT32_MAX, NULL);
}
