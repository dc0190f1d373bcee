/* gnmr_lib.c - gnmr.h as one shared library for examples/torch/gnmr_torch.py
   (make libgnmr builds build/libgnmr.so from it). The implementation, plus
   one function the Python side reads the struct layouts from: ctypes
   mirrors the structs by hand, and a mirror that drifted from gnmr.h would
   write past the controller's memory, so gnmr_torch.py compares the size of
   every struct it mirrors and the offset of every field with these when it
   loads the library, and refuses a mismatch. */
#define GNMR_IMPLEMENTATION
#include "gnmr.h"

#include <stddef.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define GNMR_PY_EXPORT __attribute__((visibility("default")))
#else
#define GNMR_PY_EXPORT
#endif

typedef struct gnmr_py_row {
  const char *type, *field; /* field NULL: the struct's size */
  size_t value;
} gnmr_py_row;

#define GNMR_PY_SIZE(t)                                                        \
  { #t, NULL, sizeof(t) }
#define GNMR_PY_OFF(t, f)                                                      \
  { #t, #f, offsetof(t, f) }

static const gnmr_py_row gnmr_py_rows[] = {
    GNMR_PY_SIZE(gnmr_config),
    GNMR_PY_OFF(gnmr_config, ratio_threshold),
    GNMR_PY_OFF(gnmr_config, delta_threshold),
    GNMR_PY_OFF(gnmr_config, history_decay),
    GNMR_PY_OFF(gnmr_config, eps),
    GNMR_PY_OFF(gnmr_config, delta_window),
    GNMR_PY_OFF(gnmr_config, warmup_steps),
    GNMR_PY_OFF(gnmr_config, max_recovering),
    GNMR_PY_OFF(gnmr_config, lock_steps),
    GNMR_PY_OFF(gnmr_config, cooldown_steps),
    GNMR_PY_OFF(gnmr_config, spike_policy),
    GNMR_PY_OFF(gnmr_config, rule),
    GNMR_PY_OFF(gnmr_config, two_sided),
    GNMR_PY_OFF(gnmr_config, z_rise),
    GNMR_PY_OFF(gnmr_config, z_fall),
    GNMR_PY_OFF(gnmr_config, min_rise),
    GNMR_PY_OFF(gnmr_config, max_fall),
    GNMR_PY_OFF(gnmr_config, ar),
    GNMR_PY_OFF(gnmr_config, hold),
    GNMR_PY_OFF(gnmr_config, fluct_decay),
    GNMR_PY_OFF(gnmr_config, winsor),
    GNMR_PY_OFF(gnmr_config, fluct_floor),
    GNMR_PY_OFF(gnmr_config, global_ratio),
    GNMR_PY_OFF(gnmr_config, global_frac),
    GNMR_PY_OFF(gnmr_config, common_min_units),
    GNMR_PY_OFF(gnmr_config, global_policy),
    GNMR_PY_OFF(gnmr_config, shift_steps),
    GNMR_PY_OFF(gnmr_config, band_steps),
    GNMR_PY_OFF(gnmr_config, shift_spread),
    GNMR_PY_OFF(gnmr_config, band_k),
    GNMR_PY_SIZE(gnmr_slot),
    GNMR_PY_SIZE(gnmr_step_report),
    GNMR_PY_OFF(gnmr_step_report, global_norm),
    GNMR_PY_OFF(gnmr_step_report, global_dev),
    GNMR_PY_OFF(gnmr_step_report, global_ratio),
    GNMR_PY_OFF(gnmr_step_report, common),
    GNMR_PY_OFF(gnmr_step_report, global_scale),
    GNMR_PY_OFF(gnmr_step_report, settled),
    GNMR_PY_OFF(gnmr_step_report, flagged),
    GNMR_PY_OFF(gnmr_step_report, rises),
    GNMR_PY_OFF(gnmr_step_report, falls),
    GNMR_PY_OFF(gnmr_step_report, global),
    GNMR_PY_OFF(gnmr_step_report, reserved_),
    GNMR_PY_SIZE(gnmr_ctl),
    GNMR_PY_OFF(gnmr_ctl, cfg),
    GNMR_PY_OFF(gnmr_ctl, units),
    GNMR_PY_OFF(gnmr_ctl, n_units),
    GNMR_PY_OFF(gnmr_ctl, recovering),
    GNMR_PY_OFF(gnmr_ctl, peak_recovering),
    GNMR_PY_OFF(gnmr_ctl, magic),
    GNMR_PY_OFF(gnmr_ctl, full_weight_from),
    GNMR_PY_OFF(gnmr_ctl, fluct_full_from),
    GNMR_PY_OFF(gnmr_ctl, gen),
    GNMR_PY_OFF(gnmr_ctl, seal),
    GNMR_PY_OFF(gnmr_ctl, steps),
    GNMR_PY_OFF(gnmr_ctl, global_steps),
    GNMR_PY_OFF(gnmr_ctl, risky),
    GNMR_PY_OFF(gnmr_ctl, nonfinite),
    GNMR_PY_OFF(gnmr_ctl, admissions),
    GNMR_PY_OFF(gnmr_ctl, renewals),
    GNMR_PY_OFF(gnmr_ctl, recovery_steps),
    GNMR_PY_OFF(gnmr_ctl, over_budget),
    GNMR_PY_OFF(gnmr_ctl, falls),
    GNMR_PY_OFF(gnmr_ctl, absent),
    GNMR_PY_OFF(gnmr_ctl, level_shifts),
    GNMR_PY_OFF(gnmr_ctl, global_log_mean),
    GNMR_PY_OFF(gnmr_ctl, global_fluct),
    GNMR_PY_OFF(gnmr_ctl, global_last_dev),
    GNMR_PY_OFF(gnmr_ctl, global_k),
    GNMR_PY_OFF(gnmr_ctl, report),
    GNMR_PY_SIZE(gnmr_decision),
    GNMR_PY_OFF(gnmr_decision, ratio),
    GNMR_PY_OFF(gnmr_decision, delta),
    GNMR_PY_OFF(gnmr_decision, score),
    GNMR_PY_OFF(gnmr_decision, scale),
    GNMR_PY_OFF(gnmr_decision, flags),
    GNMR_PY_OFF(gnmr_decision, action),
    GNMR_PY_SIZE(gnmr_counters),
    GNMR_PY_OFF(gnmr_counters, steps),
    GNMR_PY_OFF(gnmr_counters, global_steps),
    GNMR_PY_OFF(gnmr_counters, finite_steps),
    GNMR_PY_OFF(gnmr_counters, risky),
    GNMR_PY_OFF(gnmr_counters, falls),
    GNMR_PY_OFF(gnmr_counters, absent),
    GNMR_PY_OFF(gnmr_counters, level_shifts),
    GNMR_PY_OFF(gnmr_counters, recovering),
    GNMR_PY_OFF(gnmr_counters, peak_recovering),
    GNMR_PY_SIZE(gnmr_place_config),
    GNMR_PY_OFF(gnmr_place_config, budget),
    GNMR_PY_OFF(gnmr_place_config, update_decay),
    GNMR_PY_OFF(gnmr_place_config, fire_level),
    GNMR_PY_OFF(gnmr_place_config, fall_ratio),
    GNMR_PY_OFF(gnmr_place_config, fast_decay),
    GNMR_PY_OFF(gnmr_place_config, slow_decay),
    GNMR_PY_OFF(gnmr_place_config, warmup_steps),
    GNMR_PY_OFF(gnmr_place_config, planned_steps),
    GNMR_PY_OFF(gnmr_place_config, gemms),
    GNMR_PY_OFF(gnmr_place_config, serve),
    GNMR_PY_SIZE(gnmr_place_unit), /* opaque storage: its size only */
    GNMR_PY_SIZE(gnmr_place_unit_state),
    GNMR_PY_OFF(gnmr_place_unit_state, cost),
    GNMR_PY_OFF(gnmr_place_unit_state, update),
    GNMR_PY_OFF(gnmr_place_unit_state, ratio),
    GNMR_PY_OFF(gnmr_place_unit_state, ratio_max),
    GNMR_PY_OFF(gnmr_place_unit_state, seen),
    GNMR_PY_OFF(gnmr_place_unit_state, order),
    GNMR_PY_OFF(gnmr_place_unit_state, high),
    GNMR_PY_SIZE(gnmr_place),
    GNMR_PY_OFF(gnmr_place, cfg),
    GNMR_PY_OFF(gnmr_place, units),
    GNMR_PY_OFF(gnmr_place, n_units),
    GNMR_PY_OFF(gnmr_place, n_fired),
    GNMR_PY_OFF(gnmr_place, total),
    GNMR_PY_OFF(gnmr_place, earn),
    GNMR_PY_OFF(gnmr_place, credit),
    GNMR_PY_OFF(gnmr_place, level),
    GNMR_PY_OFF(gnmr_place, level_fast),
    GNMR_PY_OFF(gnmr_place, level_slow),
    GNMR_PY_OFF(gnmr_place, steps),
    GNMR_PY_OFF(gnmr_place, level_seen),
    GNMR_PY_OFF(gnmr_place, fired_step),
    GNMR_PY_OFF(gnmr_place, gen),
    GNMR_PY_OFF(gnmr_place, seal),
    GNMR_PY_OFF(gnmr_place, magic),
    GNMR_PY_OFF(gnmr_place, reserved_),
    GNMR_PY_SIZE(gnmr_place_report),
    GNMR_PY_OFF(gnmr_place_report, steps),
    GNMR_PY_OFF(gnmr_place_report, fired_step),
    GNMR_PY_OFF(gnmr_place_report, level),
    GNMR_PY_OFF(gnmr_place_report, credit),
    GNMR_PY_OFF(gnmr_place_report, high_cost),
    GNMR_PY_OFF(gnmr_place_report, high_share),
    GNMR_PY_SIZE(gnmr_tensor),
    GNMR_PY_OFF(gnmr_tensor, data),
    GNMR_PY_OFF(gnmr_tensor, n),
    GNMR_PY_OFF(gnmr_tensor, dtype),
    GNMR_PY_OFF(gnmr_tensor, unit),
};

/* The size of type (field NULL) or the offset of type.field; (size_t)-1
   for a name this build does not know (a field gone from gnmr.h). */
GNMR_PY_EXPORT size_t gnmr_py_layout(const char *type, const char *field) {
  size_t i;
  if (!type) return (size_t)-1;
  for (i = 0; i < sizeof gnmr_py_rows / sizeof gnmr_py_rows[0]; i++) {
    const gnmr_py_row *r = &gnmr_py_rows[i];
    if (strcmp(r->type, type) != 0) continue;
    if (!field && !r->field) return r->value;
    if (field && r->field && strcmp(r->field, field) == 0) return r->value;
  }
  return (size_t)-1;
}
