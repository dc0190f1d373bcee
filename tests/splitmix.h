/* splitmix.h - splitmix64 (Steele, Lea and Flood, 2014), the one generator
   of the demos, the tests and the benchmarks: a 64-bit state advanced by a
   fixed odd constant, each output a finaliser of the state. Integers only,
   so the same sequence on every platform, compiler and -O level. Each user
   keeps its own state (and seed) and maps the outputs as it needs. */
#ifndef SPLITMIX_H
#define SPLITMIX_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define SPLITMIX_UNUSED __attribute__((unused))
#else
#define SPLITMIX_UNUSED
#endif

/* The next output of the generator whose state is *s. */
SPLITMIX_UNUSED static uint64_t splitmix_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The next output as a double in [0, 1): its top 53 bits over 2^53. */
SPLITMIX_UNUSED static double splitmix_uniform(uint64_t *s) {
  return (double)(splitmix_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
