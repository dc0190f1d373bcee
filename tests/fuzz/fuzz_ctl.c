/* fuzz_ctl.c - libFuzzer harness for the controller.

   The input is a program: a unit count and a config (PAPER or NOISE mode,
   with NOISE mode's fields and global policies drawn too; mostly valid,
   sometimes not), then operations until the bytes run out: steps with arbitrary
   norms (NaN, +-Inf, negative, subnormal, huge), runs of calm steps, checkpoint
   round trips, reconfigures (op byte 0xFF) and calls that must be refused.
   Two controllers run it side
   by side: A never interrupted, B saved and loaded into a fresh controller
   whenever the program says so; they must agree bit for bit. Every step is
   checked against the contract (ctl_model.h). The whole program then runs a
   second time over differently dirtied memory and must give the same
   decisions (replay). */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/ctl_model.h"

enum {
  OP_STEP,
  OP_STEP_B_NO_OUT, /* B steps with out = NULL: same state */
  OP_CALM,          /* a run of calm steps, cheap in bytes */
  OP_ROUND_TRIP,    /* B: save, init another controller, load, continue */
  OP_REFUSED,       /* calls that must fail and change nothing */
  OP_COMPARE,       /* A and B checkpoints byte-identical */
  OP_COUNT
};

typedef struct side {
  gnmr_ctl ctl;
  gnmr_slot units[2][FUZZ_MAX_UNITS + 1];
  int slot; /* which units array the controller is using */
  fuzz_shadow shadow;
} side;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  while (n--) h = (h ^ *b++) * 0x100000001B3ull;
  return h;
}

static unsigned char ckpt_a[32768], ckpt_b[32768], ckpt_bad[32768];

static void compare_sides(const side *a, const side *b) {
  size_t wa = 0, wb = 0;
  FUZZ_CHECK(gnmr_checkpoint_save(&a->ctl, ckpt_a, sizeof ckpt_a, &wa) ==
             GNMR_OK);
  FUZZ_CHECK(gnmr_checkpoint_save(&b->ctl, ckpt_b, sizeof ckpt_b, &wb) ==
             GNMR_OK);
  FUZZ_CHECK(wa == wb && memcmp(ckpt_a, ckpt_b, wa) == 0);
}

/* Save B, load it into a controller over the other units array that was
   initialised with another config, continue there. */
static void round_trip(side *b, fuzz_reader *r) {
  gnmr_config other = gnmr_config_paper();
  gnmr_ctl fresh;
  uint32_t n = b->ctl.n_units;
  int next = !b->slot;
  size_t written = 0, need = gnmr_checkpoint_size(&b->ctl);
  FUZZ_CHECK(need > 0 && need <= sizeof ckpt_b);
  /* Asking for the size, then a buffer one byte short, then the real one. */
  FUZZ_CHECK(gnmr_checkpoint_save(&b->ctl, NULL, 0, &written) == GNMR_OK);
  FUZZ_CHECK(written == need);
  written = 0;
  FUZZ_CHECK(gnmr_checkpoint_save(&b->ctl, ckpt_b, need - 1, &written) ==
             GNMR_ESIZE);
  FUZZ_CHECK(written == need);
  FUZZ_CHECK(gnmr_checkpoint_save(&b->ctl, ckpt_b, need, &written) == GNMR_OK);
  other.max_recovering = fuzz_u8(r) % (n + 1);
  other.lock_steps = 1u + fuzz_u8(r) % 4;
  memset(b->units[next], 0xC3, sizeof b->units[next]);
  FUZZ_CHECK(gnmr_init(&fresh, &other, b->units[next], n) == GNMR_OK);
  FUZZ_CHECK(gnmr_checkpoint_load(&fresh, ckpt_b, written) == GNMR_OK);
  /* The old controller and its units are left behind, dirtied. */
  memset(b->units[b->slot], 0x3C, sizeof b->units[b->slot]);
  b->ctl = fresh;
  b->slot = next;
}

/* Each of these must be refused and leave A byte-identical. */
static void refused_calls(side *a, fuzz_reader *r) {
  static fuzz_snapshot snap;
  gnmr_ctl *ctl = &a->ctl;
  gnmr_slot *units = a->units[a->slot];
  uint32_t n = ctl->n_units;
  float norms[FUZZ_MAX_UNITS];
  gnmr_decision d[FUZZ_MAX_UNITS];
  gnmr_counters cnt;
  gnmr_config bad = ctl->cfg;
  size_t written = 0, i;
  uint8_t which = fuzz_u8(r);

  fuzz_snap(&snap, ctl, units, n);
#define REFUSED(call, code)                                                    \
  do {                                                                         \
    FUZZ_CHECK((call) == (code));                                              \
    FUZZ_CHECK(fuzz_same(&snap, ctl, units, n));                               \
  } while (0)

  /* A finite negative norm anywhere refuses the whole step. */
  if (n > 0) {
    for (i = 0; i < n; i++) norms[i] = 1.0f;
    norms[which % n] = (which & 0x80) ? -FLT_MIN : -1.0f;
    REFUSED(gnmr_step(ctl, norms, d), GNMR_ENORM);
    REFUSED(gnmr_step(ctl, NULL, d), GNMR_EINVAL);
  }
  REFUSED(gnmr_step(NULL, norms, d), GNMR_EINVAL);
  REFUSED(gnmr_recovering_check(ctl, n), GNMR_EINVAL);
  REFUSED(gnmr_recovering_check(ctl, UINT32_MAX - 1u), GNMR_EINVAL);
  REFUSED(gnmr_recovering(ctl, n), 0); /* refused: the cheap path */
  REFUSED(gnmr_recovering(ctl, UINT32_MAX - 1u), 0);
  REFUSED(gnmr_counters_get(ctl, n, &cnt), GNMR_EINVAL);
  REFUSED(gnmr_counters_get(ctl, 0, NULL), GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_save(ctl, NULL, 0, NULL), GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_save(ctl, ckpt_bad, 3, &written), GNMR_ESIZE);

  /* Re-initialising with a broken config refuses and keeps the old state. */
  switch (which % 20) {
  case 0: bad.ratio_threshold = 1.0; break;
  case 1: bad.delta_threshold = 0.0; break;
  case 2: bad.history_decay = 0.0; break;
  case 3: bad.eps = NAN; break;
  case 4: bad.delta_window = GNMR_WINDOW_MAX + 1u; break;
  case 5: bad.lock_steps = 0; break;
  case 6: bad.spike_policy = 7; break;
  case 7: bad.max_recovering = n + 1u; break;
  case 9: bad.rule = 2; break;
  case 10: bad.two_sided = 2; break;
  case 11: bad.z_rise = 0.0; break;
  case 12: bad.z_fall = INFINITY; break;
  case 13: bad.max_fall = 1.0; break;
  case 14: bad.ar = 1.0; break;
  case 15: bad.fluct_decay = 0.0; break;
  case 16: bad.winsor = 0.5; break;
  case 17: bad.global_frac = 0.0; break;
  case 18: bad.common_min_units = 0; break;
  case 19: bad.global_policy = 3; break;
  default: bad.delta_window = 0; break;
  }
  REFUSED(gnmr_init(ctl, &bad, units, n), GNMR_ECONFIG);
  REFUSED(gnmr_init(ctl, NULL, units, n), GNMR_EINVAL);
  if (n > 0) REFUSED(gnmr_init(ctl, &ctl->cfg, NULL, n), GNMR_EINVAL);

  /* A corrupted copy of A's own checkpoint: one burst of up to 32 bits,
     which CRC-32 always catches. */
  FUZZ_CHECK(gnmr_checkpoint_save(ctl, ckpt_bad, sizeof ckpt_bad, &written) ==
             GNMR_OK);
  {
    size_t at = fuzz_u32(r) % written;
    uint32_t flip = fuzz_u32(r) | 1u;
    for (i = 0; i < 4 && at + i < written; i++)
      ckpt_bad[at + i] ^= (unsigned char)(flip >> (8 * i));
    FUZZ_CHECK(gnmr_checkpoint_load(ctl, ckpt_bad, written) != GNMR_OK);
    FUZZ_CHECK(fuzz_same(&snap, ctl, units, n));
    for (i = 0; i < 4 && at + i < written; i++)
      ckpt_bad[at + i] ^= (unsigned char)(flip >> (8 * i));
  }
  /* Truncated, too long, NULL. */
  REFUSED(gnmr_checkpoint_load(ctl, ckpt_bad, written - 1 - which % 8),
          GNMR_ESIZE);
  REFUSED(gnmr_checkpoint_load(ctl, ckpt_bad, written + 1), GNMR_ESIZE);
  REFUSED(gnmr_checkpoint_load(ctl, NULL, written), GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_load(NULL, ckpt_bad, written), GNMR_EINVAL);
  /* Another number of units. */
  {
    gnmr_config cfg1 = gnmr_config_paper();
    gnmr_slot other_units[FUZZ_MAX_UNITS + 1];
    gnmr_ctl other;
    size_t w2 = 0;
    cfg1.max_recovering = 0;
    FUZZ_CHECK(gnmr_init(&other, &cfg1, other_units, n + 1u) == GNMR_OK);
    FUZZ_CHECK(gnmr_checkpoint_save(&other, ckpt_bad, sizeof ckpt_bad, &w2) ==
               GNMR_OK);
    REFUSED(gnmr_checkpoint_load(ctl, ckpt_bad, w2), GNMR_EMISMATCH);
  }
#undef REFUSED

  /* An uninitialised controller refuses everything and stays as it was. */
  {
    gnmr_ctl raw, raw_copy;
    memset(&raw, which, sizeof raw);
    raw.magic = 0;
    raw_copy = raw;
    for (i = 0; i < FUZZ_MAX_UNITS; i++) norms[i] = 1.0f;
    FUZZ_CHECK(gnmr_step(&raw, norms, d) == GNMR_ESTATE);
    FUZZ_CHECK(gnmr_recovering_check(&raw, 0) == GNMR_ESTATE);
    FUZZ_CHECK(gnmr_recovering(&raw, 0) == 0);
    FUZZ_CHECK(gnmr_counters_get(&raw, 0, &cnt) == GNMR_ESTATE);
    FUZZ_CHECK(gnmr_checkpoint_size(&raw) == 0);
    FUZZ_CHECK(gnmr_checkpoint_save(&raw, ckpt_bad, sizeof ckpt_bad,
                                    &written) == GNMR_ESTATE);
    FUZZ_CHECK(gnmr_checkpoint_load(&raw, ckpt_a, 16) == GNMR_ESTATE);
    FUZZ_CHECK(memcmp(&raw, &raw_copy, sizeof raw) == 0);
  }
}

/* Both sides get the same new config: refused whole (nothing changes) or
   taken by both, which then still agree and still pass every check. */
static void reconfigure_both(side *a, side *b, fuzz_reader *r) {
  static fuzz_snapshot snap;
  uint32_t n = a->ctl.n_units;
  gnmr_config c = fuzz_config_any(r, n);
  int ra, rb;
  fuzz_snap(&snap, &a->ctl, a->units[a->slot], n);
  ra = gnmr_reconfigure(&a->ctl, &c);
  rb = gnmr_reconfigure(&b->ctl, &c);
  FUZZ_CHECK(ra == rb && ra == gnmr_config_check(&c, n, NULL));
  if (ra != GNMR_OK) {
    FUZZ_CHECK(fuzz_same(&snap, &a->ctl, a->units[a->slot], n));
    return;
  }
  FUZZ_CHECK(memcmp(&a->ctl.cfg, &c, sizeof c) == 0);
  fuzz_shadow_sync(&a->shadow, &a->ctl);
  fuzz_shadow_sync(&b->shadow, &b->ctl);
}

static void step_both(side *a, side *b, const float *norms, int b_no_out,
                      uint64_t *digest) {
  gnmr_decision da[FUZZ_MAX_UNITS + 1], db[FUZZ_MAX_UNITS + 1];
  uint32_t n = a->ctl.n_units, u;
  int ra, rb;
  memset(da, 0xEE, sizeof da);
  memset(db, 0xEE, sizeof db);
  ra = fuzz_step_checked(&a->ctl, &a->shadow, norms, da);
  if (b_no_out) {
    rb = gnmr_step(&b->ctl, norms, NULL);
    FUZZ_CHECK(rb == ra);
    if (rb == GNMR_OK)
      for (u = 0; u < n; u++)
        FUZZ_CHECK(gnmr_recovering(&b->ctl, u) == gnmr_recovering(&a->ctl, u));
  } else {
    rb = fuzz_step_checked(&b->ctl, &b->shadow, norms, db);
    FUZZ_CHECK(rb == ra);
    if (ra == GNMR_OK) FUZZ_CHECK(memcmp(da, db, sizeof da[0] * n) == 0);
  }
  /* A refused step wrote nothing into out. */
  if (ra != GNMR_OK) FUZZ_CHECK(da[0].flags == 0xEEEEEEEEu);
  *digest = fnv(*digest, &ra, sizeof ra);
  if (ra == GNMR_OK) *digest = fnv(*digest, da, sizeof da[0] * n);
  for (u = 0; u < n; u++) {
    int rec = gnmr_recovering(&a->ctl, u);
    *digest = fnv(*digest, &rec, sizeof rec);
  }
}

/* Runs the program once over units dirtied with `fill`; returns a digest of
   every decision and every refusal. */
static uint64_t run(const uint8_t *data, size_t size, int fill) {
  static side a, b;
  fuzz_reader r;
  gnmr_config cfg;
  uint32_t n, u, s;
  uint64_t digest = 0xCBF29CE484222325ull;
  float norms[FUZZ_MAX_UNITS + 1];
  int rc;

  r.p = data;
  r.left = size;
  n = fuzz_u8(&r) % (FUZZ_MAX_UNITS + 1u);
  cfg = fuzz_config_any(&r, n);
  memset(&a, fill, sizeof a);
  memset(&b, fill ^ 0xFF, sizeof b);

  /* init validates the config; a refused init leaves everything alone. */
  {
    static fuzz_snapshot snap;
    fuzz_snap(&snap, &a.ctl, a.units[0], n);
    rc = gnmr_init(&a.ctl, &cfg, a.units[0], n);
    FUZZ_CHECK(rc == gnmr_config_check(&cfg, UINT32_MAX, NULL) ||
               (rc == GNMR_ECONFIG && cfg.max_recovering > n));
    if (rc != GNMR_OK) {
      FUZZ_CHECK(rc == GNMR_ECONFIG);
      FUZZ_CHECK(fuzz_same(&snap, &a.ctl, a.units[0], n));
      return fnv(digest, &rc, sizeof rc);
    }
  }
  FUZZ_CHECK(gnmr_init(&b.ctl, &cfg, b.units[0], n) == GNMR_OK);
  a.slot = b.slot = 0;
  fuzz_shadow_sync(&a.shadow, &a.ctl);
  fuzz_shadow_sync(&b.shadow, &b.ctl);

  while (r.left > 0) {
    uint8_t op = fuzz_u8(&r);
    if (op == 0xFF) {
      reconfigure_both(&a, &b, &r);
      continue;
    }
    switch (op % OP_COUNT) {
    case OP_STEP:
    case OP_STEP_B_NO_OUT:
      for (u = 0; u < n; u++) norms[u] = fuzz_norm(&r);
      step_both(&a, &b, norms, op % OP_COUNT == OP_STEP_B_NO_OUT, &digest);
      if (op % OP_COUNT == OP_STEP_B_NO_OUT)
        fuzz_shadow_sync(&b.shadow, &b.ctl);
      break;
    case OP_CALM: {
      uint32_t steps = 1u + fuzz_u8(&r) % 32u;
      for (s = 0; s < steps; s++) {
        for (u = 0; u < n; u++) norms[u] = 1.0f + 0.01f * (float)((u + s) % 7u);
        step_both(&a, &b, norms, 0, &digest);
      }
      break;
    }
    case OP_ROUND_TRIP:
      round_trip(&b, &r);
      fuzz_shadow_sync(&b.shadow, &b.ctl);
      break;
    case OP_REFUSED: refused_calls(&a, &r); break;
    default: compare_sides(&a, &b); break;
    }
  }
  compare_sides(&a, &b);
  return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t first = run(data, size, 0xA5);
  uint64_t second = run(data, size, 0x5A);
  FUZZ_CHECK(first == second);
  return 0;
}
