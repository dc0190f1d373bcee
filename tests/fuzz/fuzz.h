/* fuzz.h - shared by the libFuzzer harnesses in tests/fuzz/.

   FUZZ_CHECK(cond) aborts with file, line and condition when an invariant
   fails: libFuzzer reports the abort as a crash and saves the input.
   fuzz_reader hands out the input bytes; once they run out it hands out
   zeros, so every input, however short, is a complete program. Include
   after gnmr.h (the checkpoint helpers return its error codes). */
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

/* Mostly valid values first (a zero byte picks entry 0), then the edges of
   the valid ranges, then invalid ones; a byte >= 0xF0 reads raw bits. */
FUZZ_UNUSED static double fuzz_pick(fuzz_reader *r, const double *table,
                                    size_t n) {
  uint8_t sel = fuzz_u8(r);
  if (sel >= 0xF0) return fuzz_f64_bits(r);
  return table[sel % n];
}

FUZZ_UNUSED static uint32_t fuzz_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* A copy of p[0 .. len) in a buffer of exactly len bytes (1 if len is 0),
   so ASan sees a read past its end; the caller frees it. */
FUZZ_UNUSED static uint8_t *fuzz_dup(const uint8_t *p, size_t len) {
  uint8_t *buf = (uint8_t *)malloc(len ? len : 1);
  FUZZ_CHECK(buf != NULL);
  if (len) memcpy(buf, p, len);
  return buf;
}

/* ---- checkpoints: both formats (the controller's and the placer's) open
   with an 8-byte magic, a 32-bit version and a 32-bit unit count, and end
   in a CRC-32 of what precedes it. */

FUZZ_UNUSED static void fuzz_forge_crc(uint8_t *buf, size_t len) {
  if (len >= 4) fuzz_put_u32(buf + len - 4, fuzz_crc32(buf, len - 4));
}

/* The error a damaged-but-otherwise-valid buffer of the same length must
   get: the loaders check magic, version, size (the unit count), then the
   checksum. */
FUZZ_UNUSED static int fuzz_header_error(const uint8_t *valid,
                                         const uint8_t *bad) {
  size_t i;
  for (i = 0; i < 8; i++)
    if (valid[i] != bad[i]) return GNMR_ECORRUPT;
  for (; i < 12; i++)
    if (valid[i] != bad[i]) return GNMR_EVERSION;
  for (; i < 16; i++)
    if (valid[i] != bad[i]) return GNMR_ESIZE;
  return GNMR_ECORRUPT;
}

/* The valid checkpoint valid[0 .. len) damaged into bad (room for len + 16
   bytes): truncated, extended, or hit by one burst of up to 32 bits. Sets
   *bad_len; returns the error a load must give, or GNMR_OK where the
   burst fell off the end and changed nothing. */
FUZZ_UNUSED static int fuzz_damage(fuzz_reader *r, const uint8_t *valid,
                                   size_t len, uint8_t *bad, size_t *bad_len) {
  uint8_t kind = fuzz_u8(r);
  size_t i;
  memcpy(bad, valid, len);
  *bad_len = len;
  if (kind % 4 == 0) {
    *bad_len = (size_t)fuzz_u32(r) % len; /* truncated */
    return GNMR_ESIZE;
  }
  if (kind % 4 == 1) {
    *bad_len = len + 1u + fuzz_u8(r) % 16u; /* trailing bytes */
    for (i = len; i < *bad_len; i++) bad[i] = fuzz_u8(r);
    return GNMR_ESIZE;
  }
  {
    size_t at = (size_t)fuzz_u32(r) % len;
    uint32_t mask = fuzz_u32(r);
    if (mask == 0) mask = 1;
    for (i = 0; i < 4 && at + i < len; i++)
      bad[at + i] ^= (uint8_t)(mask >> (8 * i));
  }
  if (memcmp(bad, valid, len) == 0) return GNMR_OK;
  return fuzz_header_error(valid, bad);
}

/* A target's load under its contract: buf[0 .. len) into a host of n
   units; returns the code. */
typedef int (*fuzz_load_fn)(const unsigned char *buf, size_t len, uint32_t n,
                            fuzz_reader *r);

/* Mode 2 of the checkpoint targets: the valid checkpoint valid[0 .. len),
   of n units, damaged into bad (fuzz_damage) and loaded from a buffer of
   its exact size, must get the error the damage calls for. */
FUZZ_UNUSED static void fuzz_load_damaged(fuzz_reader *r, const uint8_t *valid,
                                          size_t len, uint8_t *bad, uint32_t n,
                                          fuzz_load_fn load) {
  size_t bad_len;
  uint8_t *buf;
  const int want = fuzz_damage(r, valid, len, bad, &bad_len);
  if (want == GNMR_OK) return; /* the burst fell off the end */
  buf = fuzz_dup(bad, bad_len);
  FUZZ_CHECK(load(buf, bad_len, n, r) == want);
  free(buf);
}

#endif
