/* test_refuse.c - every public entry point, called with every kind of bad
   argument, must refuse with its error code and change nothing: not the
   controller, not its slots, not any output buffer. Each call runs against
   one "world" (a controller mid-run with units locked, cooling down and
   waiting, its slots, and every output buffer filled with a pattern), and
   the world is compared byte for byte before and after. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"
#include "tests/check.h"

#include <float.h>

#define N 37 /* two 16-wide blocks of the norm check and a scalar tail */
#define CK_MAX (1 << 14)

typedef struct world {
  gnmr_ctl ctl, twin, raw;
  gnmr_slot units[N];
  gnmr_decision d[N];
  gnmr_counters cnt;
  gnmr_unit_state info;
  unsigned char ck[CK_MAX];
  char text[GNMR_FLAGS_STRING_MAX];
  double sumsq[N];
  float norms_out[N];
  size_t written;
  const char *field;
  gnmr_config cfg;
} world;

static world w, before;
static float norms[N];
static unsigned char bad[CK_MAX];
static size_t ck_len;

static gnmr_config base_config(void) {
  gnmr_config c = gnmr_config_paper();
  c.max_recovering = 3;
  c.warmup_steps = 2;
  c.cooldown_steps = 5;
  c.lock_steps = 4;
  return c;
}

/* A controller mid-run: spikes on a few units, a NaN, so that some units
   are locked, some cool down; a valid checkpoint of it in w.ck; every
   output buffer filled with a pattern. */
static int setup(void) {
  gnmr_config c = base_config();
  uint32_t u, s;
  memset(&w, 0, sizeof w);
  if (gnmr_init(&w.ctl, &c, w.units, N) != GNMR_OK) return 0;
  for (s = 0; s < 40; s++) {
    for (u = 0; u < N; u++) norms[u] = 1.0f + 0.01f * (float)((s + u) % 7);
    if (s % 9 == 5) norms[s % N] = 50.0f;
    if (s == 33) norms[3] = NAN;
    if (s == 36) norms[4] = norms[5] = norms[6] = norms[7] = 80.0f;
    if (gnmr_step(&w.ctl, norms, w.d) != GNMR_OK) return 0;
  }
  if (gnmr_checkpoint_save(&w.ctl, w.ck, CK_MAX, &w.written) != GNMR_OK)
    return 0;
  ck_len = w.written;
  memset(w.d, 0xA5, sizeof w.d);
  memset(&w.cnt, 0xA5, sizeof w.cnt);
  memset(&w.info, 0xA5, sizeof w.info);
  memset(w.text, 0xA5, sizeof w.text);
  memset(w.sumsq, 0xA5, sizeof w.sumsq);
  memset(w.norms_out, 0xA5, sizeof w.norms_out);
  memset(&w.raw, 0xA5, sizeof w.raw); /* never initialised */
  memset(&w.cfg, 0xA5, sizeof w.cfg);
  w.field = "untouched";
  for (u = 0; u < N; u++) norms[u] = 1.0f;
  return 1;
}

/* The world before and after a call, byte for byte (memcpy, not struct
   assignment: padding bytes count too). */
#define SNAP() memcpy(&before, &w, sizeof w)
#define SAME() (memcmp(&w, &before, sizeof w) == 0)
#define REFUSED(call, code)                                                    \
  do {                                                                         \
    int rc_;                                                                   \
    SNAP();                                                                    \
    rc_ = (call);                                                              \
    EXPECT_EQ_INT(rc_, code);                                                  \
    if (!SAME()) {                                                             \
      printf("  %s:%d: %s changed the world\n", __FILE__, __LINE__, #call);    \
      check__failed_here = 1;                                                  \
    }                                                                          \
  } while (0)

static int units_recovering(void) {
  uint32_t u;
  int n = 0;
  for (u = 0; u < N; u++) n += gnmr_recovering(&w.ctl, u) == 1;
  return n;
}

TEST(the_world_is_mid_run) {
  gnmr_counters t;
  uint32_t u, cooling = 0;
  REQUIRE(setup());
  REQUIRE(gnmr_counters_get(&w.ctl, GNMR_ALL_UNITS, &t) == GNMR_OK);
  EXPECT(t.recovering > 0);
  EXPECT_EQ_INT(units_recovering(), t.recovering);
  for (u = 0; u < N; u++) {
    gnmr_unit_state s;
    REQUIRE(gnmr_unit_info(&w.ctl, u, &s) == GNMR_OK);
    cooling += s.cooldown_left > 0;
  }
  EXPECT(cooling > 0);
  EXPECT(t.over_budget > 0);
}

/* ---- configuration ------------------------------------------------------ */

/* Every way each field can be out of range. */
typedef struct bad_field {
  const char *field;
  gnmr_config c;
} bad_field;

static size_t bad_configs(bad_field *out, uint32_t n_units) {
  const double ratio[] = {1.0, 0.5, -2.0, 0.0, NAN, INFINITY, -INFINITY};
  const double delta[] = {0.0, -0.0, -1.0, NAN, INFINITY};
  const double decay[] = {0.0, -0.5, 1.0000001, NAN, INFINITY};
  const double eps[] = {0.0, -1e-9, NAN, INFINITY};
  const uint32_t window[] = {0, GNMR_WINDOW_MAX + 1, UINT32_MAX};
  const int policy[] = {-1, 3, 100, -2147483647 - 1};
  /* NOISE mode's fields (checked in either mode) */
  const int rule[] = {-1, 2, 100};
  const uint32_t two_sided[] = {2, UINT32_MAX};
  const double positive[] = {0.0, -0.0, -1.0, NAN, INFINITY};
  const double above1[] = {1.0, 0.5, -2.0, NAN, INFINITY};
  const double open01[] = {0.0, 1.0, -0.5, 1.5, NAN};
  const double ar[] = {-0.1, 1.0, NAN, INFINITY};
  const double winsor[] = {0.999, 0.0, NAN, INFINITY};
  const double floor_[] = {-1e-9, NAN, INFINITY};
  const double frac[] = {0.0, -1.0, 1.0000001, NAN};
  const uint32_t zero[] = {0};
  const int gpolicy[] = {-1, 3};
  size_t k = 0, i;
  const gnmr_config good = base_config();
#define BAD(name, values)                                                      \
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {                     \
    out[k].field = #name;                                                      \
    out[k].c = good;                                                           \
    out[k++].c.name = values[i];                                               \
  }
  BAD(ratio_threshold, ratio)
  BAD(delta_threshold, delta)
  BAD(history_decay, decay)
  BAD(eps, eps)
  BAD(delta_window, window)
  BAD(spike_policy, policy)
  BAD(rule, rule)
  BAD(two_sided, two_sided)
  BAD(z_rise, positive)
  BAD(z_fall, positive)
  BAD(min_rise, above1)
  BAD(max_fall, open01)
  BAD(ar, ar)
  BAD(hold, positive)
  BAD(fluct_decay, decay)
  BAD(winsor, winsor)
  BAD(fluct_floor, floor_)
  BAD(global_ratio, above1)
  BAD(global_frac, frac)
  BAD(common_min_units, zero)
  BAD(global_policy, gpolicy)
#undef BAD
  out[k].field = "lock_steps";
  out[k].c = good;
  out[k++].c.lock_steps = 0;
  out[k].field = "max_recovering";
  out[k].c = good;
  out[k++].c.max_recovering = n_units + 1;
  out[k].field = "max_recovering";
  out[k].c = good;
  out[k++].c.max_recovering = UINT32_MAX;
  return k;
}

TEST(config_check_names_the_field) {
  static bad_field b[128];
  size_t nb = bad_configs(b, N), i;
  gnmr_config good = base_config();
  const char *field = "x";
  REQUIRE(setup());
  for (i = 0; i < nb; i++) {
    field = NULL;
    EXPECT_EQ_INT(gnmr_config_check(&b[i].c, N, &field), GNMR_ECONFIG);
    EXPECT(field && strcmp(field, b[i].field) == 0);
    EXPECT_EQ_INT(gnmr_config_check(&b[i].c, N, NULL), GNMR_ECONFIG);
    if (strcmp(b[i].field, "max_recovering") != 0)
      EXPECT_EQ_INT(gnmr_config_check(&b[i].c, UINT32_MAX, NULL), GNMR_ECONFIG);
  }
  EXPECT_EQ_INT(gnmr_config_check(&good, N, &field), GNMR_OK);
  EXPECT(field == NULL);
  /* A NULL config: EINVAL, *field untouched. */
  REFUSED(gnmr_config_check(NULL, N, &w.field), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_config_check(NULL, UINT32_MAX, NULL), GNMR_EINVAL);
  /* The header's own snippet for fewer units than it asks for. */
  good.max_recovering = 4;
  EXPECT_EQ_INT(gnmr_config_check(&good, 3, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "max_recovering") == 0);
  /* No units at all: the count is named, not the budget it cannot hold. */
  EXPECT_EQ_INT(gnmr_config_check(&good, 0, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "n_units") == 0);
  good.max_recovering = 0; /* watching nothing is valid */
  EXPECT_EQ_INT(gnmr_config_check(&good, 0, &field), GNMR_OK);
  EXPECT(field == NULL);
  /* The first field out of range keeps its name with a count of 0. */
  good.eps = 0.0;
  good.max_recovering = 1;
  EXPECT_EQ_INT(gnmr_config_check(&good, 0, &field), GNMR_ECONFIG);
  EXPECT(field && strcmp(field, "eps") == 0);
}

TEST(init_refuses_and_changes_nothing) {
  static bad_field b[128];
  size_t nb = bad_configs(b, N), i;
  gnmr_config good = base_config();
  REQUIRE(setup());
  for (i = 0; i < nb; i++)
    REFUSED(gnmr_init(&w.ctl, &b[i].c, w.units, N), GNMR_ECONFIG);
  REFUSED(gnmr_init(NULL, &good, w.units, N), GNMR_EINVAL);
  REFUSED(gnmr_init(&w.ctl, NULL, w.units, N), GNMR_EINVAL);
  REFUSED(gnmr_init(&w.ctl, &good, NULL, N), GNMR_EINVAL);
  REFUSED(gnmr_init(&w.ctl, &w.ctl.cfg, NULL, N), GNMR_EINVAL);
}

TEST(reconfigure_refuses_and_changes_nothing) {
  static bad_field b[128];
  size_t nb = bad_configs(b, N), i;
  gnmr_config good = base_config();
  REQUIRE(setup());
  for (i = 0; i < nb; i++)
    REFUSED(gnmr_reconfigure(&w.ctl, &b[i].c), GNMR_ECONFIG);
  REFUSED(gnmr_reconfigure(NULL, &good), GNMR_EINVAL);
  REFUSED(gnmr_reconfigure(&w.ctl, NULL), GNMR_EINVAL);
  REFUSED(gnmr_reconfigure(&w.raw, &good), GNMR_ESTATE);
}

/* ---- the step ----------------------------------------------------------- */

TEST(step_refuses_a_negative_norm_at_every_position) {
  const float negatives[] = {-1.0f, -FLT_MIN, -1e-45f, -FLT_MAX, -0.5f};
  uint32_t p;
  size_t i;
  REQUIRE(setup());
  for (p = 0; p < N; p++)
    for (i = 0; i < sizeof negatives / sizeof negatives[0]; i++) {
      norms[p] = negatives[i];
      REFUSED(gnmr_step(&w.ctl, norms, w.d), GNMR_ENORM);
      REFUSED(gnmr_step(&w.ctl, norms, NULL), GNMR_ENORM);
      norms[p] = 1.0f;
    }
  /* Every norm negative. */
  for (p = 0; p < N; p++) norms[p] = -2.0f;
  REFUSED(gnmr_step(&w.ctl, norms, w.d), GNMR_ENORM);
  for (p = 0; p < N; p++) norms[p] = 1.0f;
}

TEST(step_refuses_null_and_uninitialised) {
  static world zero;
  REQUIRE(setup());
  REFUSED(gnmr_step(NULL, norms, w.d), GNMR_EINVAL);
  REFUSED(gnmr_step(&w.ctl, NULL, w.d), GNMR_EINVAL);
  REFUSED(gnmr_step(&w.raw, norms, w.d), GNMR_ESTATE);
  memset(&zero, 0, sizeof zero);
  w.twin = zero.ctl; /* zeroed */
  REFUSED(gnmr_step(&w.twin, norms, w.d), GNMR_ESTATE);
  REFUSED(gnmr_step(&w.twin, NULL, NULL), GNMR_ESTATE);
}

/* ---- every reader and writer on a controller it must not use ------------ */

/* Each call on ctl must refuse with code and leave the world alone;
   gnmr_recovering too unless only the seal shows what is wrong. */
static void all_refuse_but(gnmr_ctl *ctl, int code, int recovering_answers) {
  gnmr_config good = base_config();
  uint32_t u;
  REFUSED(gnmr_step(ctl, norms, w.d), code);
  REFUSED(gnmr_step(ctl, norms, NULL), code);
  REFUSED(gnmr_counters_get(ctl, GNMR_ALL_UNITS, &w.cnt), code);
  REFUSED(gnmr_counters_get(ctl, 0, &w.cnt), code);
  REFUSED(gnmr_unit_info(ctl, 0, &w.info), code);
  REFUSED(gnmr_checkpoint_save(ctl, w.ck, CK_MAX, &w.written), code);
  REFUSED(gnmr_checkpoint_save(ctl, NULL, 0, &w.written), code);
  REFUSED(gnmr_checkpoint_load(ctl, w.ck, ck_len), code);
  REFUSED(gnmr_checkpoint_config(ctl, w.ck, ck_len, &w.cfg, &w.field), code);
  REFUSED(gnmr_reconfigure(ctl, &good), code);
  for (u = 0; u < N; u += 9) {
    if (recovering_answers) {
      SNAP();
      EXPECT(gnmr_recovering(ctl, u) ==
             (int)(w.units != NULL && gnmr__carve(w.units, N).lock[u]));
      EXPECT(SAME());
    } else {
      REFUSED(gnmr_recovering_check(ctl, u), code);
      REFUSED(gnmr_recovering(ctl, u), 0); /* the cheap path */
    }
  }
  EXPECT_EQ_INT(gnmr_checkpoint_size(ctl), 0);
}

static void all_refuse(gnmr_ctl *ctl, int code) {
  all_refuse_but(ctl, code, 0);
}

TEST(uninitialised_and_zeroed_controllers_are_refused) {
  REQUIRE(setup());
  all_refuse(&w.raw, GNMR_ESTATE);
  memset(&w.raw, 0, sizeof w.raw);
  all_refuse(&w.raw, GNMR_ESTATE);
}

TEST(a_struct_copy_is_refused_once_either_moves_on) {
  int u;
  REQUIRE(setup());
  /* The copy steps: the original is left behind. */
  w.twin = w.ctl;
  REQUIRE(gnmr_step(&w.twin, norms, NULL) == GNMR_OK);
  all_refuse(&w.ctl, GNMR_ESTATE);
  /* A copy of it that runs on its own: checkpoint, load elsewhere. */
  REQUIRE(setup());
  w.twin = w.ctl;
  REQUIRE(gnmr_step(&w.ctl, norms, NULL) == GNMR_OK);
  all_refuse(&w.twin, GNMR_ESTATE);
  /* The one that moved on goes on; a reconfigure or a load moves on too. */
  for (u = 0; u < 3; u++) EXPECT_EQ_INT(gnmr_step(&w.ctl, norms, w.d), 0);
  w.twin = w.ctl;
  EXPECT_EQ_INT(gnmr_reconfigure(&w.ctl, &w.ctl.cfg), GNMR_OK);
  all_refuse(&w.twin, GNMR_ESTATE);
  w.twin = w.ctl;
  EXPECT_EQ_INT(gnmr_checkpoint_load(&w.ctl, w.ck, ck_len), GNMR_OK);
  all_refuse(&w.twin, GNMR_ESTATE);
}

TEST(a_controller_edited_by_hand_is_refused) {
  static world saved;
  int e;
  REQUIRE(setup());
  memcpy(&saved, &w, sizeof w);
  for (e = 0; e < 16; e++) {
    memcpy(&w, &saved, sizeof w);
    switch (e) {
    case 0: w.ctl.cfg.ratio_threshold = 3.0; break; /* valid, yet edited */
    case 1: w.ctl.cfg.delta_threshold = -1.0; break;
    case 2: w.ctl.cfg.history_decay = 0.5; break;
    case 3: w.ctl.cfg.eps = NAN; break;
    case 4: w.ctl.cfg.delta_window = 0; break;
    case 5: w.ctl.cfg.warmup_steps = 100; break;
    case 6: w.ctl.cfg.max_recovering = 0; break; /* the 0.1 abort */
    case 7: w.ctl.cfg.max_recovering = N + 5; break;
    case 8: w.ctl.cfg.lock_steps = 0; break;
    case 9: w.ctl.cfg.cooldown_steps = 0; break;
    case 10: w.ctl.cfg.spike_policy = 9; break;
    case 11: w.ctl.recovering += 1; break;
    case 12: w.ctl.n_units -= 1; break;
    case 13: w.ctl.full_weight_from = 1; break;
    case 14: w.ctl.peak_recovering = N + 1; break;
    default: w.ctl.magic ^= 1u; break;
    }
    /* gnmr_recovering checks the magic and the unit count, not the seal. */
    all_refuse_but(&w.ctl, GNMR_ESTATE, e != 12 && e != 15);
  }
  /* Undone, it runs again. */
  memcpy(&w, &saved, sizeof w);
  EXPECT_EQ_INT(gnmr_step(&w.ctl, norms, w.d), GNMR_OK);
}

/* ---- readers ------------------------------------------------------------ */

/* ---- the manual -------------------------------------------------------- */

/* The header's manual lists every public function in its API block and
   every error code in its error table: a function or a code added without
   its line there fails here. Run from the repository's root. */
static char manual_text[1 << 20];

TEST(manual_lists_every_function_and_error) {
  FILE *f = fopen("gnmr.h", "rb");
  size_t len;
  char *manual_end, *api, *errors, *iface, *end, *p;
  int names = 0, codes = 0;
  REQUIRE(f != NULL);
  len = fread(manual_text, 1, sizeof manual_text - 1, f);
  fclose(f);
  manual_text[len] = '\0';
  manual_end = strstr(manual_text, "*/");
  api = strstr(manual_text, "API at a glance");
  errors = strstr(manual_text, "   Errors:");
  iface = strstr(manual_text, "#ifndef GNMR_H");
  end = strstr(manual_text, "#endif /* GNMR_H */");
  REQUIRE(manual_end && api && errors && iface && end);
  REQUIRE(api < errors && errors < manual_end && manual_end < iface);
  /* Functions: each name called or declared in the interface (a name
     followed by '('), in the API block. */
  for (p = iface; (p = strstr(p, "gnmr_")) != NULL && p < end; p++) {
    char name[64];
    size_t n = 0;
    const char *q = p;
    if (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')) continue;
    while (n < sizeof name - 1 &&
           ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
      name[n++] = *q++;
    name[n] = '\0';
    if (*q != '(') continue; /* a type, not a function */
    {
      const char saved = *errors;
      char *hit;
      *errors = '\0';
      hit = strstr(api, name);
      while (hit && (hit[n] == '_' || (hit[n] >= 'a' && hit[n] <= 'z') ||
                     (hit[n] >= '0' && hit[n] <= '9')))
        hit = strstr(hit + 1, name);
      *errors = saved;
      if (!hit) {
        printf("  %s is not in the manual's API block\n", name);
        check__failed_here = 1;
      }
    }
    names++;
  }
  EXPECT(names >= 30);
  /* ... and the block names nothing the interface lacks (a function
     removed, its line left behind). */
  for (p = api; (p = strstr(p, "gnmr_")) != NULL && p < errors; p++) {
    char name[64], call[66];
    size_t n = 0;
    const char *q = p;
    if (p[-1] != ' ') continue; /* "(gnmr_step_report)": a type */
    while (n < sizeof name - 1 &&
           ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
      name[n++] = *q++;
    name[n] = '\0';
    sprintf(call, "%s(", name);
    if (!strstr(iface, call) || strstr(iface, call) > end) {
      printf("  the API block lists %s, which the interface lacks\n", name);
      check__failed_here = 1;
    }
  }
  /* Error codes: each GNMR_E* of the enum, in the error table. */
  for (p = iface; (p = strstr(p, "GNMR_E")) != NULL && p < end; p++) {
    char code[32];
    size_t n = 0;
    const char *q = p;
    while (n < sizeof code - 1 && ((*q >= 'A' && *q <= 'Z') || *q == '_'))
      code[n++] = *q++;
    code[n] = '\0';
    if (strncmp(q, " = -", 4) != 0) continue; /* not its definition */
    {
      const char saved = *manual_end;
      *manual_end = '\0';
      if (!strstr(errors, code)) {
        printf("  %s is not in the manual's error table\n", code);
        check__failed_here = 1;
      }
      *manual_end = saved;
    }
    codes++;
  }
  EXPECT_EQ_INT(codes, 9);
}

TEST(readers_refuse_bad_arguments_and_change_nothing) {
  REQUIRE(setup());
  REFUSED(gnmr_recovering_check(NULL, 0), GNMR_EINVAL);
  REFUSED(gnmr_recovering_check(&w.ctl, N), GNMR_EINVAL);
  REFUSED(gnmr_recovering_check(&w.ctl, GNMR_ALL_UNITS), GNMR_EINVAL);
  REFUSED(gnmr_recovering(NULL, 0), 0);
  REFUSED(gnmr_recovering(&w.ctl, N), 0);
  REFUSED(gnmr_recovering(&w.ctl, GNMR_ALL_UNITS), 0);
  /* The 0.1 bug: out->steps was written before the unit was checked. */
  REFUSED(gnmr_counters_get(&w.ctl, N, &w.cnt), GNMR_EINVAL);
  REFUSED(gnmr_counters_get(&w.ctl, GNMR_ALL_UNITS - 1, &w.cnt), GNMR_EINVAL);
  REFUSED(gnmr_counters_get(NULL, 0, &w.cnt), GNMR_EINVAL);
  REFUSED(gnmr_counters_get(&w.ctl, 0, NULL), GNMR_EINVAL);
  REFUSED(gnmr_unit_info(&w.ctl, N, &w.info), GNMR_EINVAL);
  REFUSED(gnmr_unit_info(&w.ctl, GNMR_ALL_UNITS, &w.info), GNMR_EINVAL);
  REFUSED(gnmr_unit_info(NULL, 0, &w.info), GNMR_EINVAL);
  REFUSED(gnmr_unit_info(&w.ctl, 0, NULL), GNMR_EINVAL);
  EXPECT_EQ_INT(gnmr_checkpoint_size(NULL), 0);
}

TEST(names_refuse_and_change_nothing) {
  size_t cap;
  const uint32_t all = 0xFFFFFFFFu;
  char full[GNMR_FLAGS_STRING_MAX];
  REQUIRE(setup());
  EXPECT(strcmp(gnmr_action_name(-1), "?") == 0);
  EXPECT(strcmp(gnmr_action_name(4), "?") == 0);
  EXPECT(gnmr_flag_name(0) == NULL);
  EXPECT(gnmr_flag_name(GNMR_FLAG_RATIO | GNMR_FLAG_DELTA) == NULL);
  EXPECT(gnmr_flag_name(1u << 31) == NULL);
  REFUSED(gnmr_flags_string(all, NULL, 100), GNMR_EINVAL);
  /* Every capacity short of the string refuses; the full one fits. */
  REQUIRE(gnmr_flags_string(all, full, sizeof full) == GNMR_OK);
  for (cap = 0; cap <= strlen(full); cap++)
    REFUSED(gnmr_flags_string(all, w.text, cap), GNMR_ESIZE);
  EXPECT_EQ_INT(gnmr_flags_string(all, w.text, cap), GNMR_OK);
  EXPECT(strcmp(w.text, full) == 0);
  EXPECT(strcmp(gnmr_strerror(12345), "unknown error") == 0);
}

/* ---- checkpoints -------------------------------------------------------- */

static void reseal(unsigned char *buf, size_t len) {
  gnmr__put_u32(buf + len - 4, gnmr__crc32(buf, len - 4));
}

TEST(checkpoint_save_refuses_and_changes_nothing) {
  size_t cap;
  REQUIRE(setup());
  REFUSED(gnmr_checkpoint_save(NULL, w.ck, CK_MAX, &w.written), GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_save(&w.ctl, w.ck, CK_MAX, NULL), GNMR_EINVAL);
  /* Too small: ESIZE, the buffer untouched; *written = the size needed is
     the answer, so the world is compared with it set. */
  for (cap = 0; cap < ck_len; cap += cap < 64 ? 1 : 97) {
    SNAP();
    w.written = 0;
    EXPECT_EQ_INT(gnmr_checkpoint_save(&w.ctl, w.ck, cap, &w.written),
                  GNMR_ESIZE);
    EXPECT_EQ_INT(w.written, ck_len);
    EXPECT(SAME());
  }
}

/* gnmr_checkpoint_config: the load's checks and codes, the saved config
   and the first field a load would change, and nothing loaded. */
TEST(checkpoint_config_reads_what_a_load_would_set) {
  static gnmr_slot own[N];
  static gnmr_ctl other, other_before;
  gnmr_config c = base_config();
  size_t cut, at;
  REQUIRE(setup());
  SNAP();
  EXPECT_EQ_INT(gnmr_checkpoint_config(&w.ctl, w.ck, ck_len, NULL, NULL),
                GNMR_OK);
  EXPECT(SAME());
  EXPECT_EQ_INT(gnmr_checkpoint_config(&w.ctl, w.ck, ck_len, &w.cfg, &w.field),
                GNMR_OK);
  EXPECT(w.field == NULL); /* its own checkpoint: the same config */
  EXPECT(memcmp(&w.cfg.history_decay, &c.history_decay, 8) == 0);
  EXPECT_EQ_INT(w.cfg.max_recovering, c.max_recovering);
  EXPECT_EQ_INT(w.cfg.rule, GNMR_RULE_PAPER);
  /* A controller initialised with the noise-aware rules: a load would
     replace its warmup first (the fields in their order), then its rule. */
  c = gnmr_config_noise();
  c.max_recovering = 3;
  c.lock_steps = 4;
  c.cooldown_steps = 5;
  REQUIRE(gnmr_init(&other, &c, own, N) == GNMR_OK);
  other_before = other;
  w.field = NULL;
  EXPECT_EQ_INT(gnmr_checkpoint_config(&other, w.ck, ck_len, &w.cfg, &w.field),
                GNMR_OK);
  EXPECT(w.field != NULL && strcmp(w.field, "warmup_steps") == 0);
  EXPECT_EQ_INT(w.cfg.rule, GNMR_RULE_PAPER);
  EXPECT_EQ_INT(w.cfg.warmup_steps, 2);
  EXPECT(memcmp(&other, &other_before, sizeof other) == 0);
  c.warmup_steps = 2;
  REQUIRE(gnmr_reconfigure(&other, &c) == GNMR_OK);
  EXPECT_EQ_INT(gnmr_checkpoint_config(&other, w.ck, ck_len, NULL, &w.field),
                GNMR_OK);
  EXPECT(w.field != NULL && strcmp(w.field, "rule") == 0);
  /* Refused as the load would be, writing nothing. */
  memset(&w.cfg, 0xA5, sizeof w.cfg);
  w.field = "untouched";
  REFUSED(gnmr_checkpoint_config(NULL, w.ck, ck_len, &w.cfg, &w.field),
          GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_config(&w.ctl, NULL, ck_len, &w.cfg, &w.field),
          GNMR_EINVAL);
  for (cut = 0; cut < ck_len; cut += 7)
    REFUSED(gnmr_checkpoint_config(&w.ctl, w.ck, cut, &w.cfg, &w.field),
            GNMR_ESIZE);
  for (at = 0; at < ck_len; at += 5) {
    int rc;
    memcpy(bad, w.ck, ck_len);
    bad[at] ^= 0x5A;
    rc = gnmr_checkpoint_load(&w.ctl, bad, ck_len); /* refused: unchanged */
    REFUSED(gnmr_checkpoint_config(&w.ctl, bad, ck_len, &w.cfg, &w.field), rc);
  }
  REFUSED(gnmr_checkpoint_config(&w.raw, w.ck, ck_len, &w.cfg, &w.field),
          GNMR_ESTATE);
}

TEST(checkpoint_load_refuses_every_bad_buffer_and_changes_nothing) {
  static gnmr_slot few[N - 1];
  static unsigned char other[CK_MAX];
  gnmr_ctl small;
  gnmr_config c = base_config();
  size_t cut, at, other_len = 0;
  REQUIRE(setup());
  REFUSED(gnmr_checkpoint_load(NULL, w.ck, ck_len), GNMR_EINVAL);
  REFUSED(gnmr_checkpoint_load(&w.ctl, NULL, ck_len), GNMR_EINVAL);
  /* Every truncation, and one byte too many. */
  for (cut = 0; cut < ck_len; cut++)
    REFUSED(gnmr_checkpoint_load(&w.ctl, w.ck, cut), GNMR_ESIZE);
  memcpy(bad, w.ck, ck_len);
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len + 1), GNMR_ESIZE);
  /* Every byte corrupted. */
  for (at = 0; at < ck_len; at++) {
    int rc;
    memcpy(bad, w.ck, ck_len);
    bad[at] ^= 0x5A;
    SNAP();
    rc = gnmr_checkpoint_load(&w.ctl, bad, ck_len);
    if (rc >= 0 || !SAME()) {
      printf("  byte %u: rc %d, %s\n", (unsigned)at, rc,
             SAME() ? "unchanged" : "changed");
      check__failed_here = 1;
      break;
    }
  }
  /* Another version; forged contents behind a valid CRC. */
  memcpy(bad, w.ck, ck_len);
  bad[8] = 1; /* 0.1's version */
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_EVERSION);
  bad[8] = 2; /* 0.2.0's version */
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_EVERSION);
  bad[8] = 3; /* 0.3's version */
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_EVERSION);
  bad[8] = 4; /* 0.4-0.6's version */
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_EVERSION);
  bad[8] = 6;
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_EVERSION);
  memcpy(bad, w.ck, ck_len);
  bad[24 + 7] ^= 0x80; /* ratio_threshold negative */
  reseal(bad, ck_len);
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_ECORRUPT);
  /* Another unit count. */
  REQUIRE(gnmr_init(&small, &c, few, N - 1) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_save(&small, other, CK_MAX, &other_len) == GNMR_OK);
  REFUSED(gnmr_checkpoint_load(&w.ctl, other, other_len), GNMR_EMISMATCH);
  /* Not a checkpoint at all. */
  memset(bad, 0, ck_len);
  REFUSED(gnmr_checkpoint_load(&w.ctl, bad, ck_len), GNMR_ECORRUPT);
  /* The untouched buffer loads. */
  EXPECT_EQ_INT(gnmr_checkpoint_load(&w.ctl, w.ck, ck_len), GNMR_OK);
}

/* ---- norm helpers and dispatch ------------------------------------------ */

TEST(norm_helpers_refuse_and_change_nothing) {
  static float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  gnmr_tensor t[2];
  int isa = gnmr_isa_active();
  REQUIRE(setup());
  t[0].data = x;
  t[0].n = 8;
  t[0].dtype = GNMR_DTYPE_F32;
  t[0].unit = 0;
  t[1] = t[0];
  REFUSED(gnmr_unit_sumsq(NULL, 2, w.sumsq, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_sumsq(t, 2, NULL, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_norms(NULL, 2, w.norms_out, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_norms(t, 2, NULL, N), GNMR_EINVAL);
  t[1].unit = N; /* out of range */
  REFUSED(gnmr_unit_sumsq(t, 2, w.sumsq, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_norms(t, 2, w.norms_out, N), GNMR_EINVAL);
  t[1].unit = 1;
  t[1].dtype = 7; /* no such dtype */
  REFUSED(gnmr_unit_sumsq(t, 2, w.sumsq, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_norms(t, 2, w.norms_out, N), GNMR_EINVAL);
  t[1].dtype = GNMR_DTYPE_F32;
  t[1].data = NULL; /* n > 0 elements at NULL */
  REFUSED(gnmr_unit_sumsq(t, 2, w.sumsq, N), GNMR_EINVAL);
  REFUSED(gnmr_unit_norms(t, 2, w.norms_out, N), GNMR_EINVAL);
  REFUSED(gnmr_isa_force(-1), GNMR_EISA);
  REFUSED(gnmr_isa_force(99), GNMR_EISA);
  EXPECT_EQ_INT(gnmr_isa_active(), isa);
  EXPECT_EQ_INT(gnmr_isa_supported(-1), 0);
  EXPECT_EQ_INT(gnmr_isa_supported(99), 0);
  /* the controller's path takes SCALAR or AVX512 only */
  isa = gnmr_ctl_isa_active();
  REFUSED(gnmr_ctl_isa_force(-1), GNMR_EISA);
  REFUSED(gnmr_ctl_isa_force(GNMR_ISA_SSE2), GNMR_EISA);
  REFUSED(gnmr_ctl_isa_force(GNMR_ISA_NEON), GNMR_EISA);
  EXPECT_EQ_INT(gnmr_ctl_isa_active(), isa);
}

/* ---- after all of it ---------------------------------------------------- */

TEST(refusals_leave_a_controller_that_still_works) {
  gnmr_ctl ref;
  static gnmr_slot ref_units[N];
  static gnmr_decision d[N];
  uint32_t s, u;
  REQUIRE(setup());
  /* The same controller, loaded from its checkpoint, runs alike. */
  REQUIRE(gnmr_init(&ref, &w.ctl.cfg, ref_units, N) == GNMR_OK);
  REQUIRE(gnmr_checkpoint_load(&ref, w.ck, ck_len) == GNMR_OK);
  all_refuse(&w.raw, GNMR_ESTATE);
  for (s = 0; s < 20; s++) {
    for (u = 0; u < N; u++) norms[u] = s == 5 && u == 2 ? 40.0f : 1.0f;
    REQUIRE(gnmr_step(&w.ctl, norms, w.d) == GNMR_OK);
    REQUIRE(gnmr_step(&ref, norms, d) == GNMR_OK);
    EXPECT(memcmp(w.d, d, sizeof d) == 0);
  }
}

int main(int argc, char **argv) {
  static const check_case cases[] = {
      CHECK_CASE(the_world_is_mid_run),
      CHECK_CASE(config_check_names_the_field),
      CHECK_CASE(init_refuses_and_changes_nothing),
      CHECK_CASE(reconfigure_refuses_and_changes_nothing),
      CHECK_CASE(step_refuses_a_negative_norm_at_every_position),
      CHECK_CASE(step_refuses_null_and_uninitialised),
      CHECK_CASE(uninitialised_and_zeroed_controllers_are_refused),
      CHECK_CASE(a_struct_copy_is_refused_once_either_moves_on),
      CHECK_CASE(a_controller_edited_by_hand_is_refused),
      CHECK_CASE(manual_lists_every_function_and_error),
      CHECK_CASE(readers_refuse_bad_arguments_and_change_nothing),
      CHECK_CASE(names_refuse_and_change_nothing),
      CHECK_CASE(checkpoint_save_refuses_and_changes_nothing),
      CHECK_CASE(checkpoint_config_reads_what_a_load_would_set),
      CHECK_CASE(checkpoint_load_refuses_every_bad_buffer_and_changes_nothing),
      CHECK_CASE(norm_helpers_refuse_and_change_nothing),
      CHECK_CASE(refusals_leave_a_controller_that_still_works)};
  return check_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
