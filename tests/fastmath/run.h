/* run.h - the two builds of tests/fastmath/run.c, as cross.c sees them. */
#ifndef TESTS_FASTMATH_RUN_H
#define TESTS_FASTMATH_RUN_H
#include <stdint.h>

/* Digests of the controller's decisions and checkpoints, and of the norm
   helpers' results, with the path isa forced (0 where it is not there). */
void fastmath_run_plain(int isa, uint64_t *controller, uint64_t *norms);
void fastmath_run_ofast(int isa, uint64_t *controller, uint64_t *norms);
int fastmath_supported_plain(int isa);
int fastmath_supported_ofast(int isa);
#endif
