/* fuzz_place.c - libFuzzer harness for the placer (gnmr_place_*): its step
   and its checkpoint.

   The first byte picks a mode:
     0  the rest is a placer checkpoint, loaded as it is;
     1  the same with its CRC-32 trailer forged to match, so the loader's
        field checks are what stands between the bytes and the placer;
     2  a valid checkpoint (of a placer the bytes drive) hit by one burst of
        up to 32 bits, or truncated or extended: always refused, with the
        error the format says;
     3  a valid checkpoint with edits (bytes, 32-bit words, doubles at and
        next to the values a field holds) and a forged CRC;
     4  a placer the bytes drive: configs and costs of any bits, then
        signals of any bits (0, NaN, Inf, negative, huge), every call
        checked against the manual's contract.
   Whatever the mode: a refused call leaves the placer, its units and the
   `high` output byte-identical; an accepted buffer is exactly what
   gnmr_place_checkpoint_save writes for the state it loaded, and the
   placer it gives steps, saves a checkpoint that loads again, and decides
   as the copy does. Mode 4 also runs every step twice, on the scalar path
   and on AVX-512 where the CPU has it, and holds the two to the same bits;
   checks that the output equals gnmr_place_high; and that the cost run
   high-fidelity through step t stays within B C (t + 1) (rule P6). The
   input is copied into a buffer of its exact size, so ASan sees any read
   past its end. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/fuzz/fuzz.h"

#include <float.h>
#include <math.h>

#define PLACE_MAX_UNITS 24u
#define PLACE_CKPT_MAX 4096u

typedef char
    place_ckpt_fits[GNMR__PLACE_FIXED +
                                PLACE_MAX_UNITS * GNMR__PLACE_UNIT_BYTES + 4u <=
                            PLACE_CKPT_MAX
                        ? 1
                        : -1];

static gnmr_place_unit target_units[PLACE_MAX_UNITS];
static gnmr_place_unit again_units[PLACE_MAX_UNITS];
static gnmr_place_unit source_units[PLACE_MAX_UNITS];
static gnmr_place_unit other_units[PLACE_MAX_UNITS];
static unsigned char resaved[PLACE_CKPT_MAX], copy_ck[PLACE_CKPT_MAX];

/* ---- what the bytes draw ------------------------------------------------ */

/* A signal: mostly ordinary positive values, then the edges. */
static double place_signal(fuzz_reader *r) {
  uint8_t k = fuzz_u8(r);
  switch (k % 16) {
  case 0: return 0.0;
  case 1: return NAN;
  case 2: return INFINITY;
  case 3: return k >= 0x80 ? -(double)(1 + fuzz_u8(r)) : -0.0;
  case 4: return fuzz_f64_bits(r);
  case 5: return DBL_MAX;
  case 6: return 5e-324;
  default: return (1.0 + fuzz_u8(r) / 16.0) * ldexp(1.0, (k >> 4) - 8);
  }
}

/* A cost: mostly valid, then zero, negative, non-finite, or so large that
   the sum overflows. */
static double place_cost(fuzz_reader *r) {
  uint8_t k = fuzz_u8(r);
  if (k < 0xE0) return 1.0 + (double)(k % 7) * 0.5;
  switch (k % 8) {
  case 0: return 0.0;
  case 1: return -1.0;
  case 2: return NAN;
  case 3: return INFINITY;
  case 4: return DBL_MAX;
  case 5: return 5e-324;
  default: return fuzz_f64_bits(r);
  }
}

/* A config: each field from its valid values first, then the edges and
   beyond (0xF0 and up reads raw bits). */
static gnmr_place_config place_config(fuzz_reader *r) {
  static const double budget[] = {0.1,  0.5,       1.0, 1e-300,  0.0,
                                  -0.1, 1.0000001, NAN, INFINITY};
  static const double unit[] = {0.5, 0.0,     0.9, 0.999999, 0.05,
                                1.0, -1e-300, NAN, INFINITY};
  gnmr_place_config c = gnmr_place_config_default();
  uint8_t sel = fuzz_u8(r);
  if (sel & 1) return c;
  c.budget = fuzz_pick(r, budget, sizeof budget / sizeof budget[0]);
  c.update_decay = fuzz_pick(r, unit, sizeof unit / sizeof unit[0]);
  c.fire_level = fuzz_pick(r, unit, sizeof unit / sizeof unit[0]);
  c.fall_ratio = fuzz_pick(r, unit, sizeof unit / sizeof unit[0]);
  c.fast_decay = fuzz_pick(r, unit, sizeof unit / sizeof unit[0]);
  c.slow_decay = fuzz_pick(r, unit, sizeof unit / sizeof unit[0]);
  c.warmup_steps = fuzz_u8(r) % 12u;
  if (sel & 2) c.serve = fuzz_u8(r) % 3u;          /* 2 refused */
  if (sel & 4) c.planned_steps = fuzz_u8(r) % 48u; /* 0: not told */
  if (sel & 8) c.gemms = fuzz_u8(r) % 9u;          /* 0 and 8 refused */
  return c;
}

/* ---- snapshots: a refused call changes nothing --------------------------- */

typedef struct place_snapshot {
  gnmr_place pl;
  gnmr_place_unit units[PLACE_MAX_UNITS];
} place_snapshot;

static void place_snap(place_snapshot *s, const gnmr_place *pl,
                       const gnmr_place_unit *units) {
  memcpy(&s->pl, pl, sizeof *pl);
  memcpy(s->units, units, sizeof s->units);
}

static int place_same(const place_snapshot *s, const gnmr_place *pl,
                      const gnmr_place_unit *units) {
  return memcmp(&s->pl, pl, sizeof *pl) == 0 &&
         memcmp(s->units, units, sizeof s->units) == 0;
}

static int has_finite_negative(const double *x, uint32_t n) {
  uint32_t u;
  for (u = 0; u < n; u++)
    if (x[u] < 0.0 && isfinite(x[u])) return 1;
  return 0;
}

/* One step under the contract: refused (GNMR_ENORM, exactly when a signal
   is finite and negative) changes nothing, high included; accepted, high
   is what gnmr_place_high says. */
static int step_checked(gnmr_place *pl, gnmr_place_unit *units, const double *a,
                        const double *q, uint8_t *high) {
  static place_snapshot snap;
  uint32_t u, n = pl->n_units;
  int rc;
  place_snap(&snap, pl, units);
  memset(high, 0xEE, PLACE_MAX_UNITS);
  rc = gnmr_place_step(pl, a, q, high);
  if (has_finite_negative(a, n) || has_finite_negative(q, n)) {
    FUZZ_CHECK(rc == GNMR_ENORM);
    FUZZ_CHECK(place_same(&snap, pl, units));
    for (u = 0; u < PLACE_MAX_UNITS; u++) FUZZ_CHECK(high[u] == 0xEE);
    return rc;
  }
  FUZZ_CHECK(rc == GNMR_OK);
  for (u = 0; u < n; u++)
    FUZZ_CHECK(high[u] == (uint8_t)gnmr_place_high(pl, u));
  for (; u < PLACE_MAX_UNITS; u++) FUZZ_CHECK(high[u] == 0xEE);
  return rc;
}

static void draw_signals(fuzz_reader *r, uint32_t n, double *a, double *q) {
  uint32_t u;
  for (u = 0; u < n; u++) {
    a[u] = place_signal(r);
    q[u] = place_signal(r);
  }
}

/* ---- checkpoints ----------------------------------------------------------
 */

/* A placer with some history over n units, so a partial write would show. */
static void make_target(gnmr_place *pl, uint32_t n) {
  gnmr_place_config cfg = gnmr_place_config_default();
  double costs[PLACE_MAX_UNITS], a[PLACE_MAX_UNITS], q[PLACE_MAX_UNITS];
  uint32_t u, s;
  cfg.warmup_steps = 1;
  for (u = 0; u < n; u++) costs[u] = 1.0 + u;
  memset(target_units, 0x77, sizeof target_units);
  FUZZ_CHECK(gnmr_place_init(pl, &cfg, target_units, costs, n) == GNMR_OK);
  for (s = 0; s < 4; s++) {
    for (u = 0; u < n; u++) {
      a[u] = s == 3 ? 0.01 : 1.0 + 0.25 * u;
      q[u] = 1.0;
    }
    FUZZ_CHECK(gnmr_place_step(pl, a, q, NULL) == GNMR_OK);
  }
}

/* After an accepted load: the buffer is canonical, and the state behaves
   as its copy does. */
static void check_accepted(gnmr_place *pl, const unsigned char *buf, size_t len,
                           fuzz_reader *r) {
  gnmr_place again;
  gnmr_place_config cfg = gnmr_place_config_default();
  double costs[PLACE_MAX_UNITS], a[PLACE_MAX_UNITS], q[PLACE_MAX_UNITS];
  uint8_t h1[PLACE_MAX_UNITS], h2[PLACE_MAX_UNITS];
  uint32_t n = pl->n_units, u, s;
  size_t written = 0, w2 = 0;
  FUZZ_CHECK(gnmr_place_config_check(&pl->cfg, NULL) == GNMR_OK);
  FUZZ_CHECK(gnmr_place_checkpoint_save(pl, resaved, sizeof resaved,
                                        &written) == GNMR_OK);
  FUZZ_CHECK(written == len && memcmp(resaved, buf, len) == 0);
  FUZZ_CHECK(gnmr_place_checkpoint_size(pl) == len);
  for (s = 0; s < 4; s++) {
    draw_signals(r, n, a, q);
    step_checked(pl, target_units, a, q, h1);
  }
  /* Still a state a checkpoint carries; its copy continues alike. */
  FUZZ_CHECK(gnmr_place_checkpoint_save(pl, resaved, sizeof resaved,
                                        &written) == GNMR_OK);
  for (u = 0; u < n; u++) costs[u] = 1.0;
  FUZZ_CHECK(gnmr_place_init(&again, &cfg, again_units, costs, n) == GNMR_OK);
  FUZZ_CHECK(gnmr_place_checkpoint_load(&again, resaved, written) == GNMR_OK);
  for (s = 0; s < 3; s++) {
    draw_signals(r, n, a, q);
    if (step_checked(pl, target_units, a, q, h1) != GNMR_OK) continue;
    FUZZ_CHECK(step_checked(&again, again_units, a, q, h2) == GNMR_OK);
    FUZZ_CHECK(memcmp(h1, h2, n) == 0);
  }
  FUZZ_CHECK(gnmr_place_checkpoint_save(pl, resaved, sizeof resaved,
                                        &written) == GNMR_OK);
  FUZZ_CHECK(gnmr_place_checkpoint_save(&again, copy_ck, sizeof copy_ck, &w2) ==
             GNMR_OK);
  FUZZ_CHECK(w2 == written && memcmp(resaved, copy_ck, written) == 0);
}

/* Loads buf into a target over n units: refused means unchanged. */
static int load_checked(const unsigned char *buf, size_t len, uint32_t n,
                        fuzz_reader *r) {
  static place_snapshot snap;
  gnmr_place target;
  int rc;
  make_target(&target, n);
  place_snap(&snap, &target, target_units);
  rc = gnmr_place_checkpoint_load(&target, buf, len);
  if (rc != GNMR_OK) {
    FUZZ_CHECK(rc == GNMR_ESIZE || rc == GNMR_ECORRUPT || rc == GNMR_EVERSION ||
               rc == GNMR_EMISMATCH);
    FUZZ_CHECK(place_same(&snap, &target, target_units));
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
  return n >= 1 && n <= PLACE_MAX_UNITS ? n : 1;
}

/* A placer the bytes drive (init as drawn, or the defaults where that is
   refused), stepped up to 80 times; its checkpoint into out. */
static size_t make_valid(fuzz_reader *r, unsigned char *out) {
  gnmr_place pl;
  gnmr_place_config cfg = place_config(r);
  double costs[PLACE_MAX_UNITS], a[PLACE_MAX_UNITS], q[PLACE_MAX_UNITS];
  uint32_t n = 1u + fuzz_u8(r) % PLACE_MAX_UNITS, u, s, steps;
  size_t written = 0;
  for (u = 0; u < n; u++) costs[u] = place_cost(r);
  if (gnmr_place_init(&pl, &cfg, source_units, costs, n) != GNMR_OK) {
    cfg = gnmr_place_config_default();
    cfg.warmup_steps = 2;
    for (u = 0; u < n; u++) costs[u] = 1.0 + u % 3;
    FUZZ_CHECK(gnmr_place_init(&pl, &cfg, source_units, costs, n) == GNMR_OK);
  }
  steps = fuzz_u8(r) % 80u;
  for (s = 0; s < steps; s++) {
    int calm = fuzz_u8(r) & 1;
    for (u = 0; u < n; u++) {
      /* calm: a level that decays, so the run fires */
      a[u] = calm ? 1.0 / (1.0 + s) : place_signal(r);
      q[u] = calm ? 1.0 : place_signal(r);
    }
    (void)gnmr_place_step(&pl, a, q, NULL); /* a negative: refused */
  }
  FUZZ_CHECK(gnmr_place_checkpoint_save(&pl, out, PLACE_CKPT_MAX, &written) ==
             GNMR_OK);
  return written;
}

/* An edit of mode 3 at a 4-byte boundary of the body: a byte, a 32-bit
   value, or (at a double's place) a double near the edges or one ulp from
   the value there, where the loader's exact checks (sums, products,
   ratio <= maximum) sit. */
static void edit(fuzz_reader *r, unsigned char *buf, size_t len) {
  static const double doubles[] = {0.0, -0.0,     1.0,    0.5,     -1.0,
                                   NAN, INFINITY, 1e-300, DBL_MAX, 5e-324};
  static const uint32_t words[] = {0,           1,  2,  0xFFFFFFFFu,
                                   0x7FFFFFFFu, 24, 25, 0x80000000u};
  size_t body = len - 4, at = 4u * ((size_t)fuzz_u32(r) % (body / 4));
  uint8_t kind = fuzz_u8(r);
  if (kind % 4 == 0) {
    buf[at + (kind >> 6)] = fuzz_u8(r);
  } else if (kind % 4 == 1) {
    fuzz_put_u32(buf + at, words[fuzz_u8(r) % (sizeof words / 4)]);
  } else if (at % 8 == 0 && at + 8 <= body) {
    double v;
    memcpy(&v, buf + at, 8); /* little-endian hosts only (as the tests) */
    if (kind % 4 == 2)
      v = doubles[fuzz_u8(r) % (sizeof doubles / sizeof doubles[0])];
    else
      v = nextafter(v, (kind & 0x80) ? INFINITY : -INFINITY);
    memcpy(buf + at, &v, 8);
  }
}

/* ---- mode 4: a placer driven, on two paths ------------------------------- */

static void drive(fuzz_reader *r) {
  static place_snapshot snap;
  gnmr_place a_pl, b_pl;
  gnmr_place_config cfg = place_config(r);
  gnmr_place_report rep;
  double costs[PLACE_MAX_UNITS], a[PLACE_MAX_UNITS], q[PLACE_MAX_UNITS];
  double spent = 0.0;
  uint8_t ha[PLACE_MAX_UNITS], hb[PLACE_MAX_UNITS];
  const int best = gnmr_ctl_isa_active(), vector = best == GNMR_ISA_AVX512;
  uint32_t n = fuzz_u8(r) % (PLACE_MAX_UNITS + 1u), u, s, steps;
  size_t wa = 0, wb = 0;
  int rc, bad_cost = 0;
  double total = 0.0;
  for (u = 0; u < n; u++) {
    costs[u] = place_cost(r);
    if (!(costs[u] > 0.0 && costs[u] <= DBL_MAX)) bad_cost = 1;
    total += costs[u];
  }
  /* init: refused exactly as the manual says, and then untouched */
  memset(&a_pl, 0x55, sizeof a_pl);
  memset(source_units, 0x66, sizeof source_units);
  place_snap(&snap, &a_pl, source_units);
  rc = gnmr_place_init(&a_pl, &cfg, source_units, costs, n);
  if (gnmr_place_config_check(&cfg, NULL) != GNMR_OK)
    FUZZ_CHECK(rc == GNMR_ECONFIG || rc == GNMR_EINVAL);
  if (n == 0 || bad_cost || !(total <= DBL_MAX))
    FUZZ_CHECK(rc == GNMR_EINVAL || rc == GNMR_ECONFIG);
  if (rc != GNMR_OK) {
    FUZZ_CHECK(rc == GNMR_EINVAL || rc == GNMR_ECONFIG);
    FUZZ_CHECK(place_same(&snap, &a_pl, source_units));
    cfg = gnmr_place_config_default();
    cfg.warmup_steps = fuzz_u8(r) % 8u;
    if (n == 0) n = 1;
    for (u = 0; u < n; u++) costs[u] = 1.0 + u % 4;
    FUZZ_CHECK(gnmr_place_init(&a_pl, &cfg, source_units, costs, n) == GNMR_OK);
  }
  FUZZ_CHECK(gnmr_place_init(&b_pl, &a_pl.cfg, other_units, costs, n) ==
             GNMR_OK);
  steps = fuzz_u8(r) % 128u;
  for (s = 0; s < steps; s++) {
    uint8_t how = fuzz_u8(r);
    if (how & 1) {
      draw_signals(r, n, a, q);
    } else { /* a decaying level, so that the run fires */
      for (u = 0; u < n; u++) {
        a[u] = 1.0 / (1.0 + s + (how >> 4));
        q[u] = 1.0;
      }
    }
    FUZZ_CHECK(gnmr_ctl_isa_force(GNMR_ISA_SCALAR) == GNMR_OK);
    rc = step_checked(&a_pl, source_units, a, q, ha);
    if (vector) FUZZ_CHECK(gnmr_ctl_isa_force(GNMR_ISA_AVX512) == GNMR_OK);
    FUZZ_CHECK(step_checked(&b_pl, other_units, a, q, hb) == rc);
    if (rc != GNMR_OK) continue;
    FUZZ_CHECK(memcmp(ha, hb, n) == 0);
    FUZZ_CHECK(gnmr_place_info(&a_pl, &rep) == GNMR_OK);
    FUZZ_CHECK(rep.credit >= 0.0 && rep.credit <= DBL_MAX);
    /* rule P7: the decisions of steps past a plan keep its last placement,
       outside the budget; P6 bounds the plan's steps */
    if (a_pl.cfg.planned_steps != 0 &&
        rep.steps >= (uint64_t)a_pl.cfg.planned_steps)
      continue;
    /* rule P6: through step t, at most B C (t + 1) */
    for (u = 0; u < n; u++) /* a third of the cost per GEMM */
      spent +=
          costs[u] * ((ha[u] & 1) + (ha[u] >> 1 & 1) + (ha[u] >> 2 & 1)) / 3.0;
    FUZZ_CHECK(spent <= a_pl.earn * (double)(rep.steps + 1u) * (1.0 + 1e-9));
  }
  /* the two paths' states, to the bit; a checkpoint round trip */
  FUZZ_CHECK(gnmr_place_checkpoint_save(&a_pl, resaved, sizeof resaved, &wa) ==
             GNMR_OK);
  FUZZ_CHECK(gnmr_place_checkpoint_save(&b_pl, copy_ck, sizeof copy_ck, &wb) ==
             GNMR_OK);
  FUZZ_CHECK(wa == wb && memcmp(resaved, copy_ck, wa) == 0);
  FUZZ_CHECK(load_checked(resaved, wa, n, r) == GNMR_OK);
  FUZZ_CHECK(gnmr_ctl_isa_force(best) == GNMR_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static unsigned char valid[PLACE_CKPT_MAX], bad[PLACE_CKPT_MAX + 16];
  fuzz_reader r;
  unsigned char *buf;
  uint8_t mode;
  size_t len, i;

  if (size == 0) return 0;
  mode = data[0] % 5;
  r.p = data + 1;
  r.left = size - 1;
  if (mode == 4) {
    drive(&r);
    return 0;
  }
  if (mode <= 1) {
    /* The buffer is the input; the harness reads signals after it from a
       copy of the same bytes (any bytes will do). */
    len = size - 1;
    buf = fuzz_dup(data + 1, len);
    if (mode == 1) fuzz_forge_crc(buf, len);
    load_checked(buf, len, claimed_units(buf, len), &r);
    free(buf);
    return 0;
  }

  len = make_valid(&r, valid);
  memcpy(bad, valid, len);
  if (mode == 2) {
    fuzz_load_damaged(&r, valid, len, bad, claimed_units(valid, len),
                      load_checked);
    return 0;
  }

  /* mode 3 */
  {
    uint8_t edits = 1u + fuzz_u8(&r) % 8u;
    for (i = 0; i < edits; i++) edit(&r, bad, len);
    fuzz_forge_crc(bad, len);
    buf = fuzz_dup(bad, len);
    load_checked(buf, len, claimed_units(valid, len), &r);
    free(buf);
  }
  return 0;
}
