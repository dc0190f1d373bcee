/* fuzz_ckpt.c - libFuzzer harness for gnmr_checkpoint_load.

   The first byte picks a mode:
     0  the rest is a checkpoint, loaded as it is;
     1  the same with its CRC-32 trailer forged to match, so the loader's
        field-by-field checks are what stands between the bytes and the
        controller;
     2  a valid checkpoint (from a controller the bytes drive) hit by one
        burst of up to 32 bits, or truncated or extended: always refused,
        with the error the format says;
     3  a valid checkpoint with any number of byte changes and a forged CRC.
   Whatever the mode: a refused load leaves the target byte-identical; an
   accepted buffer is exactly what gnmr_checkpoint_save writes for the state
   it loaded (nothing in it was ignored or repaired), and the controller it
   gives steps within the contract and saves a checkpoint that loads again.
   The input is copied into a buffer of its exact size, so ASan sees any
   read past its end. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/ctl_model.h"

#define CKPT_MAX 32768u

/* The format's offsets mode 3 edits (below) are those of version 5. */
typedef char
    fuzz_ckpt_layout[GNMR__CKPT_VERSION == 5 && GNMR__CKPT_CONFIG == 184 &&
                             GNMR__CKPT_TOTALS == 188 && GNMR__CKPT_UNIT == 232
                         ? 1
                         : -1];

static gnmr_slot target_units[FUZZ_MAX_UNITS + 1];
static gnmr_slot again_units[FUZZ_MAX_UNITS + 1];
static gnmr_slot source_units[FUZZ_MAX_UNITS + 1];
static unsigned char resaved[CKPT_MAX];

/* A controller with some history, so a partial write would show. */
static void make_target(gnmr_ctl *ctl, uint32_t n) {
  gnmr_config cfg = gnmr_config_paper();
  float norms[FUZZ_MAX_UNITS + 1];
  uint32_t u, s;
  cfg.max_recovering = n > 0 ? 1u : 0u;
  cfg.warmup_steps = 2;
  memset(target_units, 0x77, sizeof target_units);
  FUZZ_CHECK(gnmr_init(ctl, &cfg, target_units, n) == GNMR_OK);
  for (s = 0; s < 5; s++) {
    for (u = 0; u < n; u++) norms[u] = s == 4 && u == 0 ? 50.0f : 1.0f;
    FUZZ_CHECK(gnmr_step(ctl, norms, NULL) == GNMR_OK);
  }
}

/* After an accepted load: the buffer is canonical, and the state behaves. */
static void check_accepted(gnmr_ctl *ctl, const unsigned char *buf, size_t len,
                           fuzz_reader *r) {
  fuzz_shadow sh;
  gnmr_ctl again;
  gnmr_decision d1[FUZZ_MAX_UNITS + 1], d2[FUZZ_MAX_UNITS + 1];
  float norms[FUZZ_MAX_UNITS + 1];
  uint32_t n = ctl->n_units, u, s;
  size_t written = 0;

  FUZZ_CHECK(gnmr_config_check(&ctl->cfg, UINT32_MAX, NULL) == GNMR_OK);
  FUZZ_CHECK(ctl->cfg.max_recovering <= n);
  FUZZ_CHECK(gnmr_checkpoint_save(ctl, resaved, sizeof resaved, &written) ==
             GNMR_OK);
  FUZZ_CHECK(written == len && memcmp(resaved, buf, len) == 0);

  fuzz_shadow_sync(&sh, ctl);
  for (s = 0; s < 4; s++) {
    for (u = 0; u < n; u++) norms[u] = fuzz_norm(r);
    fuzz_step_checked(ctl, &sh, norms, d1);
  }
  /* Still a state a checkpoint can carry, and the copy continues alike. */
  FUZZ_CHECK(gnmr_checkpoint_save(ctl, resaved, sizeof resaved, &written) ==
             GNMR_OK);
  FUZZ_CHECK(gnmr_init(&again, &ctl->cfg, again_units, n) == GNMR_OK);
  FUZZ_CHECK(gnmr_checkpoint_load(&again, resaved, written) == GNMR_OK);
  for (u = 0; u < n; u++) norms[u] = fuzz_norm(r);
  if (gnmr_step(ctl, norms, d1) == GNMR_OK) {
    FUZZ_CHECK(gnmr_step(&again, norms, d2) == GNMR_OK);
    FUZZ_CHECK(n == 0 || memcmp(d1, d2, sizeof d1[0] * n) == 0);
  }
}

/* Loads buf into a target over n units: refused means unchanged. */
static int load_checked(const unsigned char *buf, size_t len, uint32_t n,
                        fuzz_reader *r) {
  static fuzz_snapshot snap;
  gnmr_ctl target;
  int rc;
  make_target(&target, n);
  fuzz_snap(&snap, &target, target_units, n);
  rc = gnmr_checkpoint_load(&target, buf, len);
  if (rc != GNMR_OK) {
    FUZZ_CHECK(rc == GNMR_ESIZE || rc == GNMR_ECORRUPT || rc == GNMR_EVERSION ||
               rc == GNMR_EMISMATCH);
    FUZZ_CHECK(fuzz_same(&snap, &target, target_units, n));
  } else {
    check_accepted(&target, buf, len, r);
  }
  return rc;
}

/* The unit count a buffer claims, if it is one the harness can host. */
static uint32_t claimed_units(const unsigned char *buf, size_t len) {
  uint32_t n;
  if (len < 16) return 1;
  n = fuzz_get_u32(buf + 12);
  return n <= FUZZ_MAX_UNITS ? n : 1;
}

/* A valid checkpoint of a controller driven by the input. */
static size_t make_valid(fuzz_reader *r, unsigned char *out) {
  gnmr_ctl ctl;
  gnmr_config cfg;
  float norms[FUZZ_MAX_UNITS + 1];
  uint32_t n = fuzz_u8(r) % (FUZZ_MAX_UNITS + 1u), u, s, steps;
  size_t written = 0;
  cfg = fuzz_config(r, n);
  if (gnmr_init(&ctl, &cfg, source_units, n) != GNMR_OK) {
    cfg = gnmr_config_paper();
    cfg.max_recovering = n / 2;
    FUZZ_CHECK(gnmr_init(&ctl, &cfg, source_units, n) == GNMR_OK);
  }
  steps = fuzz_u8(r) % 40u;
  for (s = 0; s < steps; s++) {
    int spiky = fuzz_u8(r) & 1;
    for (u = 0; u < n; u++)
      norms[u] = spiky ? fuzz_norm(r) : 1.0f + 0.125f * (float)((u + s) % 5u);
    if (gnmr_step(&ctl, norms, NULL) != GNMR_OK) continue; /* a negative */
  }
  FUZZ_CHECK(gnmr_checkpoint_save(&ctl, out, CKPT_MAX, &written) == GNMR_OK);
  return written;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned char valid[CKPT_MAX], bad[CKPT_MAX + 16];
  fuzz_reader r;
  unsigned char *buf;
  uint8_t mode;
  size_t len, i;

  if (size == 0) return 0;
  mode = data[0] % 4;
  if (mode <= 1) {
    /* The buffer is the input; the harness reads norms after it from a
       copy of the same bytes (any bytes will do). */
    len = size - 1;
    buf = fuzz_dup(data + 1, len);
    if (mode == 1) fuzz_forge_crc(buf, len);
    r.p = data + 1;
    r.left = size - 1;
    load_checked(buf, len, claimed_units(buf, len), &r);
    free(buf);
    return 0;
  }

  r.p = data + 1;
  r.left = size - 1;
  len = make_valid(&r, valid);
  memcpy(bad, valid, len);
  if (mode == 2) {
    fuzz_load_damaged(&r, valid, len, bad, claimed_units(valid, len),
                      load_checked);
    return 0;
  }

  /* mode 3: edits, checksum forged. An edit is a byte anywhere, or a small
     value written into one field of the format (gnmr.h, "checkpoint"), so
     that values just past each limit are easy to reach. */
  {
    /* Offsets of the 32-bit fields and of the low words of the 64-bit ones
       (the high words of mu, s, p: a double near 1): config W .. policy,
       rule, two_sided, common_min_units, global_policy, shift_steps,
       band_steps and band_k's high word; the totals and the global norm's
       k; the verdict's low words and counts; the header; then (from
       GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS) one unit's
       fields, rule 9's run and rule 10's band (the high words of its
       centre and deviation, its count and run) included. */
    static const uint16_t head_fields[] = {
        56,  60,  64,  68,  72,  76,  80,  84,  176, 180, 184, 196, 204, 208,
        216, 224, 232, 240, 248, 256, 264, 272, 280, 288, 296, 300, 328, 336,
        344, 352, 360, 368, 376, 380, 384, 388, 392, 12,  16,  20};
    static const uint16_t unit_fields[] = {
        0,   4,   8,   12,  16,  80,  84, 92,  100, 108, 128,
        200, 204, 208, 212, 216, 220, 76, 116, 124, 224, 228};
    const size_t unit0 =
        GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS;
    uint8_t edits = fuzz_u8(&r) % 16u;
    for (i = 0; i < edits; i++) {
      uint8_t kind = fuzz_u8(&r);
      size_t at;
      if (kind % 3 == 0) {
        at = (size_t)fuzz_u32(&r) % len;
        bad[at] = fuzz_u8(&r);
        continue;
      }
      if (kind % 3 == 1) {
        at = head_fields[fuzz_u8(&r) % (sizeof head_fields / 2)];
      } else {
        size_t units = (len - unit0 - 4u) / GNMR__CKPT_UNIT;
        if (units == 0) continue;
        at = unit0 + (fuzz_u8(&r) % units) * GNMR__CKPT_UNIT +
             unit_fields[fuzz_u8(&r) % (sizeof unit_fields / 2)];
      }
      if (at + 4 <= len - 4) fuzz_put_u32(bad + at, fuzz_pick_u32(&r, 24));
    }
    fuzz_forge_crc(bad, len);
    buf = fuzz_dup(bad, len);
    load_checked(buf, len, claimed_units(valid, len), &r);
    free(buf);
  }
  return 0;
}
