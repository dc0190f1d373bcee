/* fuzz.h - shared by the libFuzzer harnesses in tests/fuzz/.

   FUZZ_CHECK(cond) aborts with file, line and condition when an invariant
   fails: libFuzzer reports the abort as a crash and saves the input.
   fuzz_reader hands out the input bytes; once they run out it hands out
   zeros, so every input, however short, is a complete program. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fastmath.h"

#if defined(__GNUC__) || defined(__clang__)
#define FUZZ_UNUSED __attribute__((unused))
#else
#define FUZZ_UNUSED
#endif

#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__,     \
              #cond);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)

typedef struct fuzz_reader {
  const uint8_t *p;
  size_t left;
} fuzz_reader;

FUZZ_UNUSED static uint8_t fuzz_u8(fuzz_reader *r) {
  if (r->left == 0) return 0;
  r->left--;
  return *r->p++;
}

FUZZ_UNUSED static uint32_t fuzz_u32(fuzz_reader *r) {
  uint32_t v = 0;
  int i;
  for (i = 0; i < 4; i++) v |= (uint32_t)fuzz_u8(r) << (8 * i);
  return v;
}

FUZZ_UNUSED static uint64_t fuzz_u64(fuzz_reader *r) {
  uint64_t lo = fuzz_u32(r);
  return lo | (uint64_t)fuzz_u32(r) << 32;
}

FUZZ_UNUSED static double fuzz_f64_bits(fuzz_reader *r) {
  uint64_t bits = fuzz_u64(r);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

FUZZ_UNUSED static float fuzz_f32_bits(fuzz_reader *r) {
  uint32_t bits = fuzz_u32(r);
  float v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* CRC-32 (IEEE, reflected), written independently of gnmr.h's: the harness
   uses it to forge checksums, so the loader's field checks get exercised. */
FUZZ_UNUSED static uint32_t fuzz_crc32(const uint8_t *p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  size_t i;
  int bit;
  for (i = 0; i < n; i++) {
    crc ^= p[i];
    for (bit = 0; bit < 8; bit++)
      crc = (crc & 1u) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return ~crc;
}

FUZZ_UNUSED static void fuzz_put_u32(uint8_t *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#endif
