/* ckpt_seeds.c - writes the checkpoint seeds of the fuzz_ckpt corpus in
   the current format (run it again when the format's version changes):
     cc -std=c99 -I. tests/fuzz/ckpt_seeds.c -lm -o ckpt_seeds &&
     ./ckpt_seeds tests/fuzz/corpus/ckpt
   Each seed is the harness's mode byte, then a checkpoint (whose bytes the
   harness also reads norms from). seed-v1-refused (0.1's format, refused with
   GNMR_EVERSION) is kept as it was written. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static unsigned char buf[1 << 14];

static int write_seed(const char *dir, const char *name, unsigned char mode,
                      const unsigned char *ck, size_t len) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (!f) return 1;
  fputc(mode, f);
  fwrite(ck, 1, len, f);
  return fclose(f) != 0;
}

/* A 3-unit controller after 40 steps with a spike, a NaN and a fall. */
static size_t saved(int rule) {
  static gnmr_slot slots[3];
  gnmr_config c = gnmr_config_paper();
  gnmr_ctl ctl;
  float norms[3];
  size_t len = 0;
  uint32_t s, u;
  c.rule = rule;
  c.max_recovering = 1;
  c.warmup_steps = 4;
  c.common_min_units = 1;
  if (gnmr_init(&ctl, &c, slots, 3) != GNMR_OK) return 0;
  for (s = 0; s < 40; s++) {
    for (u = 0; u < 3; u++) norms[u] = 1.0f + 0.05f * (float)((s * 7 + u) % 5);
    if (s == 20) norms[1] = 40.0f;
    if (s == 25) norms[2] = NAN;
    if (s == 30) norms[0] = 0.01f;
    if (gnmr_step(&ctl, norms, NULL) != GNMR_OK) return 0;
  }
  if (gnmr_checkpoint_save(&ctl, buf, sizeof buf, &len) != GNMR_OK) return 0;
  return len;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  size_t len = saved(GNMR_RULE_PAPER);
  int bad = len == 0;
  const size_t unit0 =
      GNMR__CKPT_HEADER + GNMR__CKPT_CONFIG + GNMR__CKPT_TOTALS;
  uint64_t k = UINT64_MAX - 1;
  bad |= write_seed(dir, "seed-valid-3units", 0, buf, len);
  bad |= write_seed(dir, "seed-valid-3units-forged-crc", 1, buf, len);
  /* unit 0's k near the end of its range (CRC forged by mode 1) */
  gnmr__put(buf + unit0 + 80, &k, 8);
  bad |= write_seed(dir, "regress-finite-steps-wrap", 1, buf, len);
  len = saved(GNMR_RULE_NOISE);
  bad |= len == 0;
  bad |= write_seed(dir, "seed-valid-3units-noise", 0, buf, len);
  bad |= write_seed(dir, "seed-valid-3units-noise-forged-crc", 1, buf, len);
  if (bad) fprintf(stderr, "ckpt_seeds: failed\n");
  return bad;
}
