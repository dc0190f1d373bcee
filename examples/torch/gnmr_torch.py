"""gnmr_torch - gnmr.h from a PyTorch training loop (standard library, ctypes
and torch only; `make libgnmr` builds the shared libraries it loads).

    import gnmr_torch
    ctl = gnmr_torch.Controller({"attn": attn.parameters(),
                                 "mlp": mlp.parameters()},
                                config={"max_recovering": 1})
    for batch in data:
        loss = model(batch); loss.backward()
        out = ctl.step()          # norms, gnmr_step, scales applied in place
        opt.step(); opt.zero_grad()
        # out.recovering: the units to run high-fidelity next step
        # (PrecisionSwitch modules attached with ctl.attach follow it)

One unit per named group (an iterable of parameters), or a mapping
{parameter name: unit name} with `named_parameters`. Per-unit norms come from
gnmr.h's CPU helpers (gnmr_unit_norms, on the tensors' own memory) or, for
CUDA tensors, from examples/cuda/gnmr_norms.cuh's kernels (build/
libgnmr_cuda.so): the gradients never leave the device, only one float per
unit does. Both give the same bits. f32, f16 and bf16 gradients are read as
they are; other dtypes are converted to f32 first, non-contiguous ones are
made contiguous (a copy on their own device).

Everything the controller decides is gnmr.h's: the configuration starts from
gnmr_config_default() of the library loaded (Controller(config={...})
overrides fields by name), errors are gnmr.h's codes raised as GnmrError
with gnmr_strerror's text, and a refused step changes nothing. A NaN or Inf
norm is a signal, never an error (gnmr.h rule 1): that unit's scale is 0 and
its gradient is zeroed (multiplying NaN by 0 would leave NaN). A unit with
no gradient (every .grad None) has norm 0: absent, not a fall to zero.

Distributed: under DDP nothing changes (every rank reads the same reduced
gradients); with gradients sharded over the ranks (ZeRO-2, FSDP with
use_orig_params=True) Controller(..., sharded=True) all-reduces the per-unit
sums of squares, one collective per step. See the Controller's docstring.

The library: $GNMR_LIB if set, else build/libgnmr.so of the checkout this
file sits in, else libgnmr.so beside this file (copy both to use the module
outside the repository); $GNMR_CUDA_LIB likewise for libgnmr_cuda.so.
"""

import ctypes
import math
import os
import warnings

import torch

__all__ = ["Controller", "GnmrError", "LayoutError", "RankMismatch",
           "StepResult",
           "Decision", "StepReport", "PrecisionSwitch", "FP8Delayed",
           "Placer", "GNMR_GEMM_FWD", "GNMR_GEMM_DGRAD", "GNMR_GEMM_WGRAD",
           "GNMR_GEMM_ALL", "GNMR_SERVE_HIGH", "GNMR_SERVE_LOW",
           "round_e4m3", "round_e5m2", "round_e2m1", "round_format",
           "quantize_nvfp4", "fake_quantize", "FORMATS", "load_library",
           "config_default", "config_calm", "c_step"]

# ---- the C structs, mirrored (gnmr.h); checked against the library ------

_u32, _i32, _u64, _d = (ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64,
                        ctypes.c_double)


class Config(ctypes.Structure):
    _fields_ = [("ratio_threshold", _d), ("delta_threshold", _d),
                ("history_decay", _d), ("eps", _d),
                ("delta_window", _u32), ("warmup_steps", _u32),
                ("max_recovering", _u32), ("lock_steps", _u32),
                ("cooldown_steps", _u32), ("spike_policy", ctypes.c_int),
                ("rule", ctypes.c_int), ("two_sided", _u32),
                ("z_rise", _d), ("z_fall", _d), ("min_rise", _d),
                ("max_fall", _d), ("ar", _d), ("hold", _d),
                ("fluct_decay", _d), ("winsor", _d), ("fluct_floor", _d),
                ("global_ratio", _d), ("global_frac", _d),
                ("common_min_units", _u32), ("global_policy", ctypes.c_int),
                ("shift_steps", _u32), ("band_steps", _u32),
                ("shift_spread", _d), ("band_k", _d)]


class StepReportC(ctypes.Structure):
    _fields_ = [("global_norm", _d), ("global_dev", _d),
                ("global_ratio", _d), ("common", _d), ("global_scale", _d),
                ("settled", _u32), ("flagged", _u32), ("rises", _u32),
                ("falls", _u32), ("global", _u32), ("reserved_", _u32)]


_COUNTERS = ["risky", "nonfinite", "admissions", "renewals",
             "recovery_steps", "over_budget", "falls", "absent",
             "level_shifts"]


class Ctl(ctypes.Structure):
    _fields_ = ([("cfg", Config), ("units", ctypes.c_void_p),
                 ("n_units", _u32), ("recovering", _u32),
                 ("peak_recovering", _u32), ("magic", _u32),
                 ("full_weight_from", _u64), ("fluct_full_from", _u64),
                 ("gen", _u64), ("seal", _u64), ("steps", _u64),
                 ("global_steps", _u64)]
                + [(c, _u64) for c in _COUNTERS]
                + [("global_log_mean", _d), ("global_fluct", _d),
                   ("global_last_dev", _d), ("global_k", _u64),
                   ("report", StepReportC)])


class DecisionC(ctypes.Structure):
    _fields_ = [("ratio", _d), ("delta", _d), ("score", _d), ("scale", _d),
                ("flags", _u32), ("action", _i32)]


class Counters(ctypes.Structure):
    _fields_ = ([("steps", _u64), ("global_steps", _u64),
                 ("finite_steps", _u64)]
                + [(c, _u64) for c in _COUNTERS]
                + [("recovering", _u32), ("peak_recovering", _u32)])


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_size_t),
                ("dtype", ctypes.c_int), ("unit", _u32)]


class PlaceConfig(ctypes.Structure):
    _fields_ = [("budget", _d), ("update_decay", _d), ("fire_level", _d),
                ("fall_ratio", _d), ("fast_decay", _d), ("slow_decay", _d),
                ("warmup_steps", _u32), ("planned_steps", _u32),
                ("gemms", _u32), ("serve", _u32)]


# The GEMMs of a Linear (gnmr.h's GNMR_GEMM_* bits): the forward y = x W,
# the input gradient dx = dy W^T, the weight gradient dW = x^T dy.
GNMR_GEMM_FWD, GNMR_GEMM_DGRAD, GNMR_GEMM_WGRAD = 1, 2, 4
GNMR_GEMM_ALL = 7
GNMR_SERVE_HIGH = 0  # gnmr_place_config.serve: placed GEMMs served high
GNMR_SERVE_LOW = 1   # ... every GEMM served on the low format


class PlaceUnitState(ctypes.Structure):
    """gnmr_place_unit_info's answer (the storage, gnmr_place_unit, is
    opaque: Python only allocates it, at the library's size)."""
    _fields_ = [("cost", _d), ("update", _d), ("ratio", _d),
                ("ratio_max", _d), ("seen", _u64), ("order", _u32),
                ("high", _u32)]


class Place(ctypes.Structure):
    _fields_ = [("cfg", PlaceConfig), ("units", ctypes.c_void_p),
                ("n_units", _u32), ("n_fired", _u32), ("total", _d),
                ("earn", _d), ("credit", _d), ("level", _d),
                ("level_fast", _d), ("level_slow", _d), ("steps", _u64),
                ("level_seen", _u64), ("fired_step", _u64),
                ("gen", _u64), ("seal", _u64),
                ("magic", _u32), ("reserved_", _u32)]


class PlaceReportC(ctypes.Structure):
    _fields_ = [("steps", _u64), ("fired_step", _u64), ("level", _d),
                ("credit", _d), ("high_cost", _d), ("high_share", _d)]


_MIRRORS = {"gnmr_config": Config,
            "gnmr_place_config": PlaceConfig, "gnmr_place_unit_state": PlaceUnitState,
            "gnmr_place": Place, "gnmr_place_report": PlaceReportC,
            "gnmr_step_report": StepReportC, "gnmr_ctl": Ctl,
            "gnmr_decision": DecisionC, "gnmr_counters": Counters,
            "gnmr_tensor": Tensor}

GNMR_OK, GNMR_EINVAL, GNMR_ESIZE, GNMR_ECONFIG = 0, -1, -2, -6
GNMR_CUDA_ECUDA = -100
DTYPE_F32, DTYPE_F16, DTYPE_BF16 = 0, 1, 2
_ENUMS = {"spike_policy": {"PASS": 0, "CLIP": 1, "SKIP": 2},
          "rule": {"PAPER": 0, "NOISE": 1},
          "global_policy": {"NONE": 0, "CLIP": 1, "SKIP": 2}}
ACTIONS = ("KEEP", "RECOVER", "HOLD", "RELEASE")
FLAGS = ("RATIO", "DELTA", "NONFINITE", "OVER_BUDGET", "COOLDOWN", "WARMUP",
         "RENEWED", "FALL", "GLOBAL", "ABSENT", "SHIFT", "BAND")
# Flags that say nothing is wrong: too few observations, no gradient.
_QUIET = (1 << FLAGS.index("WARMUP")) | (1 << FLAGS.index("ABSENT"))


class GnmrError(RuntimeError):
    """A gnmr.h error code (.code, negative) with gnmr_strerror's text;
    .field names the gnmr_config field out of range (GNMR_ECONFIG)."""

    def __init__(self, code, text, where="", field=None):
        self.code = code
        self.field = field
        super().__init__("%s%s (%d)" % (where + ": " if where else "", text,
                                        code))


class LayoutError(RuntimeError):
    """The ctypes mirror disagrees with the library's struct layout."""


class RankMismatch(RuntimeError):
    """The ranks of a job disagree where they must agree: their units
    (names, parameters, shapes, order) at the first step, or this step's
    decisions (Controller.check_decisions). Raised on every rank alike."""


# ---- loading ------------------------------------------------------------

_HERE = os.path.dirname(os.path.abspath(__file__))
_lib = None
_cuda_lib = None


def _find(name, env):
    """$env if set, else the build/ of the gnmr.h checkout this file sits
    in (examples/torch/), else this file's own folder (the module copied
    beside the library). Raises OSError saying how to build or point to
    the library."""
    path = os.environ.get(env)
    if path:
        if not os.path.exists(path):
            raise OSError("%s=%s: no such file" % (env, path))
        return path
    root = os.path.dirname(os.path.dirname(_HERE))
    tried = []
    if os.path.exists(os.path.join(root, "gnmr.h")):
        tried.append(os.path.join(root, "build", name))
    tried.append(os.path.join(_HERE, name))
    for path in tried:
        if os.path.exists(path):
            return path
    raise OSError(
        "%s not found (looked at %s). Build it with `make libgnmr` at the "
        "root of a gnmr.h checkout (it writes build/%s), then set %s to "
        "its path, or put it beside %s" % (
            name, ", ".join(tried), name, env, os.path.basename(__file__)))


def _check_layout(lib):
    """Every mirrored struct's size and every field's offset must equal the
    library's (gnmr_py_layout in gnmr_lib.c): else raise, before any call
    writes into memory laid out by a stale guess."""
    lib.gnmr_py_layout.restype = ctypes.c_size_t
    lib.gnmr_py_layout.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    unknown = ctypes.c_size_t(-1).value
    for cname, py in _MIRRORS.items():
        size = lib.gnmr_py_layout(cname.encode(), None)
        if size != ctypes.sizeof(py):
            raise LayoutError("%s: the library says %d bytes, the ctypes "
                              "mirror %d: gnmr.h changed; update "
                              "gnmr_torch.py" % (cname, size,
                                                 ctypes.sizeof(py)))
        for field, _ in py._fields_:
            off = lib.gnmr_py_layout(cname.encode(), field.encode())
            if off == unknown:
                continue  # not listed in gnmr_lib.c (the size still checks)
            if off != getattr(py, field).offset:
                raise LayoutError("%s.%s: offset %d in the library, %d in "
                                  "the ctypes mirror" % (
                                      cname, field, off,
                                      getattr(py, field).offset))
    for opaque in (b"gnmr_slot", b"gnmr_place_unit"):
        size = lib.gnmr_py_layout(opaque, None)
        if size == unknown or size == 0 or size % 8:
            raise LayoutError("%s: the library says %d bytes" % (
                opaque.decode(), size))
    return lib.gnmr_py_layout(b"gnmr_slot", None)


def load_library(path=None):
    """Loads build/libgnmr.so (or path, or $GNMR_LIB) once, checks the
    layouts and declares the functions used here."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    lib = ctypes.CDLL(path or _find("libgnmr.so", "GNMR_LIB"))
    # A slot is opaque (the library lays a block of them out as one array
    # per field): Python only allocates them, at the library's size.
    lib.gnmr_py_slot = _u64 * (_check_layout(lib) // 8)
    lib.gnmr_py_place_unit = _u64 * (
        lib.gnmr_py_layout(b"gnmr_place_unit", None) // 8)
    P, vp = ctypes.POINTER, ctypes.c_void_p
    sig = {
        "gnmr_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "gnmr_version": (ctypes.c_char_p, []),
        "gnmr_config_default": (Config, []),
        "gnmr_config_paper": (Config, []),
        "gnmr_config_forward": (Config, []),
        "gnmr_config_calm": (Config, []),
        "gnmr_config_check": (ctypes.c_int, [P(Config), _u32,
                                             P(ctypes.c_char_p)]),
        "gnmr_init": (ctypes.c_int, [P(Ctl), P(Config), vp, _u32]),
        "gnmr_reconfigure": (ctypes.c_int, [P(Ctl), P(Config)]),
        "gnmr_step": (ctypes.c_int, [P(Ctl), P(ctypes.c_float),
                                     P(DecisionC)]),
        "gnmr_recovering": (ctypes.c_int, [P(Ctl), _u32]),
        "gnmr_recovering_check": (ctypes.c_int, [P(Ctl), _u32]),
        "gnmr_step_info": (ctypes.c_int, [P(Ctl), P(StepReportC)]),
        "gnmr_counters_get": (ctypes.c_int, [P(Ctl), _u32, P(Counters)]),
        "gnmr_checkpoint_size": (ctypes.c_size_t, [P(Ctl)]),
        "gnmr_checkpoint_save": (ctypes.c_int, [P(Ctl), vp, ctypes.c_size_t,
                                                P(ctypes.c_size_t)]),
        "gnmr_checkpoint_load": (ctypes.c_int, [P(Ctl), vp,
                                                ctypes.c_size_t]),
        "gnmr_unit_norms": (ctypes.c_int, [P(Tensor), ctypes.c_size_t,
                                           P(ctypes.c_float), _u32]),
        "gnmr_unit_sumsq": (ctypes.c_int, [P(Tensor), ctypes.c_size_t,
                                           P(_d), _u32]),
        "gnmr_place_config_default": (PlaceConfig, []),
        "gnmr_place_config_check": (ctypes.c_int, [P(PlaceConfig),
                                                   P(ctypes.c_char_p)]),
        "gnmr_place_init": (ctypes.c_int, [P(Place), P(PlaceConfig), vp,
                                           P(_d), _u32]),
        "gnmr_place_step": (ctypes.c_int, [P(Place), P(_d), P(_d),
                                           P(ctypes.c_uint8)]),
        "gnmr_place_high": (ctypes.c_int, [P(Place), _u32]),
        "gnmr_place_info": (ctypes.c_int, [P(Place), P(PlaceReportC)]),
        "gnmr_place_unit_info": (ctypes.c_int, [P(Place), _u32,
                                                P(PlaceUnitState)]),
        "gnmr_place_checkpoint_save": (ctypes.c_int, [P(Place), vp,
                                                      ctypes.c_size_t,
                                                      P(ctypes.c_size_t)]),
        "gnmr_place_checkpoint_load": (ctypes.c_int, [P(Place), vp,
                                                      ctypes.c_size_t]),
        "gnmr_action_name": (ctypes.c_char_p, [ctypes.c_int]),
        "gnmr_flag_name": (ctypes.c_char_p, [_u32]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    if path is None:
        _lib = lib
    return lib


def _load_cuda():
    global _cuda_lib
    if _cuda_lib is None:
        lib = ctypes.CDLL(_find("libgnmr_cuda.so", "GNMR_CUDA_LIB"))
        vp = ctypes.c_void_p
        lib.gnmr_cuda_plan_new.restype = ctypes.c_int
        lib.gnmr_cuda_plan_new.argtypes = [ctypes.POINTER(Tensor),
                                           ctypes.c_size_t, _u32,
                                           ctypes.POINTER(vp)]
        lib.gnmr_cuda_plan_free.restype = None
        lib.gnmr_cuda_plan_free.argtypes = [vp]
        lib.gnmr_cuda_norms.restype = ctypes.c_int
        lib.gnmr_cuda_norms.argtypes = [vp, vp, vp]
        lib.gnmr_cuda_sumsq.restype = ctypes.c_int
        lib.gnmr_cuda_sumsq.argtypes = [vp, vp, vp]
        lib.gnmr_cuda_error_string.restype = ctypes.c_char_p
        lib.gnmr_cuda_error_string.argtypes = [vp]
        _cuda_lib = lib
    return _cuda_lib


def _raise(rc, where, lib=None, cfg=None, n_units=0):
    """GnmrError for rc; for GNMR_ECONFIG (cfg given) naming the field that
    gnmr_config_check finds out of range."""
    if rc != GNMR_OK:
        lib = lib or load_library()
        text, field = lib.gnmr_strerror(rc).decode(), None
        if rc == GNMR_ECONFIG and cfg is not None:
            name = ctypes.c_char_p()
            lib.gnmr_config_check(ctypes.byref(cfg), n_units,
                                  ctypes.byref(name))
            if name.value:
                field = name.value.decode()
                text = "gnmr_config.%s = %r is out of range (%s)" % (
                    field, getattr(cfg, field, None), text)
        raise GnmrError(rc, text, where, field)


def config_default(**overrides):
    """gnmr_config_default() of the library, with fields overridden by name
    (spike_policy, rule, global_policy also by their names: "CLIP")."""
    cfg = load_library().gnmr_config_default()
    _apply_config(cfg, overrides)
    return cfg


def config_calm(**overrides):
    """gnmr_config_calm() of the library (rule 10's admission band on),
    with fields overridden by name as config_default."""
    cfg = load_library().gnmr_config_calm()
    _apply_config(cfg, overrides)
    return cfg


def _apply_config(cfg, overrides):
    names = {f for f, _ in Config._fields_ if not f.endswith("_")}
    for key, value in dict(overrides or {}).items():
        if key not in names:
            raise KeyError("gnmr_config has no field %r" % key)
        if isinstance(value, str):
            try:
                value = _ENUMS[key][value.upper()]
            except KeyError:
                raise ValueError("%s: %r is not one of %s" % (
                    key, value, sorted(_ENUMS.get(key, {})))) from None
        setattr(cfg, key, value)


def config_dict(cfg):
    return {f: getattr(cfg, f) for f, _ in Config._fields_
            if not f.endswith("_")}


# ---- results ------------------------------------------------------------

class Decision:
    """One unit's gnmr_decision, with its action and flags by name."""
    __slots__ = ("unit", "ratio", "delta", "score", "scale", "flags",
                 "action")

    def __init__(self, unit, d):
        self.unit = unit
        self.ratio, self.delta, self.score = d.ratio, d.delta, d.score
        self.scale = d.scale
        self.flags = d.flags
        self.action = ACTIONS[d.action] if 0 <= d.action < 4 else "?"

    @property
    def flag_names(self):
        return [n for i, n in enumerate(FLAGS) if self.flags & (1 << i)]

    def __repr__(self):
        return "Decision(%s %s%s ratio=%.4g scale=%g)" % (
            self.unit, self.action,
            " " + "|".join(self.flag_names) if self.flags else "",
            self.ratio, self.scale)


class StepReport:
    """gnmr_step_info: the step-level verdict. Both rule sets set
    `flagged` (units flagged this step); only the noise-aware rules
    (`noise` True) set the rest: `rises`, `falls` (flagged up, down),
    `settled`, `global_norm`, `global_dev`, `global_ratio`, `common`,
    `global_` and `global_scale`. Under the paper rules those read 0
    (`global_scale` 1) and the printout leaves them out."""

    def __init__(self, r, noise=True):
        for f, _ in StepReportC._fields_:
            if f != "reserved_":
                setattr(self, f, getattr(r, f))
        self.global_ = bool(r.__getattribute__("global"))
        self.noise = noise

    def __repr__(self):
        if not self.noise:
            return "StepReport(flagged=%d)" % self.flagged
        return ("StepReport(flagged=%d, rises=%d, falls=%d, global=%s, "
                "global_scale=%g)" % (self.flagged, self.rises, self.falls,
                                      self.global_, self.global_scale))


class StepResult:
    """What step() returns: the norms read, a Decision per unit (by unit
    name, in unit order), the units on the high-fidelity path next step,
    and the step's verdict."""

    def __init__(self, names, norms, decisions, recovering, report):
        self.norms = dict(zip(names, norms))
        self.decisions = {n: Decision(n, d) for n, d in zip(names,
                                                            decisions)}
        self.recovering = [n for n, r in zip(names, recovering) if r]
        self.report = report

    @property
    def flagged(self):
        return [n for n, d in self.decisions.items() if d.flags & ~_QUIET]

    @property
    def absent(self):
        """Units with no gradient this step (norm 0: flag ABSENT)."""
        return [n for n, d in self.decisions.items()
                if d.flags & (1 << FLAGS.index("ABSENT"))]

    @property
    def admitted(self):
        return [n for n, d in self.decisions.items() if d.action == "RECOVER"]

    def __repr__(self):
        return "StepResult(recovering=%s, flagged=%s, %r)" % (
            self.recovering, self.flagged, self.report)


# ---- the controller -----------------------------------------------------

_DTYPES = {torch.float32: DTYPE_F32, torch.float16: DTYPE_F16,
           torch.bfloat16: DTYPE_BF16}


def _dist_ready():
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized()


def _f32(x):
    """x (a double) rounded to float32, as C's (float)x."""
    return ctypes.c_float(x).value


def _as_gnmr(t):
    """t itself when gnmr.h reads it as is, else a contiguous f32/f16/bf16
    copy on t's device (kept alive by the caller until the norms are in)."""
    if t.dtype not in _DTYPES:
        t = t.float()
    if not t.is_contiguous():
        t = t.contiguous()
    return t


class Controller:
    """A gnmr.h controller over units of parameters.

    units: {unit name: iterable of parameters}; or, with named_parameters
    (an iterable of (name, parameter) pairs, e.g. model.named_parameters()),
    {parameter name: unit name} or a function name -> unit name (None: not
    watched); or a list of unit names alone, for step(norms=...) with norms
    computed elsewhere. Refused at construction (ValueError/KeyError/
    TypeError, saying which): a unit with no parameters (an exhausted
    generator among them), a parameter in two units, a parameter name
    named_parameters does not have. config: overrides of
    gnmr_config_default() (gnmr_config_forward() with forward_signals=True)
    by field name; a value out of range raises GnmrError naming the field
    (.field).

    A parameter whose .grad is None adds nothing to its unit's norm; a unit
    with no gradient at all has norm 0, which gnmr.h reads as absent (KEEP,
    scale 1, flag ABSENT, its history untouched).

    Data parallel (DDP): nothing to add. After DDP's all-reduce every rank
    holds the same gradients, reads the same norms and decides the same,
    with no collective of its own but one at the first step: in a job of
    several ranks (torch.distributed initialised by then), the first step
    compares every rank's layout (units, their parameters' names and
    shapes, order; layout()) in one all_gather and raises RankMismatch on
    every rank where they differ (check_layout=False: not). A gradient
    changed on one rank after DDP's all-reduce (a hook writing into .grad,
    a rank-local clip) makes that rank decide alone: check_decisions()
    after step() compares the decisions in one all_gather.

    sharded=True: each rank holds a part of each gradient (a ZeRO-2 style
    slice, FSDP with use_orig_params=True). step() adds the ranks' per-unit
    sums of squares (float64) with one all_reduce over group (None: the
    default group), on the gradients' device, so every rank steps on the
    same norms; scales are applied to the local parts. grad_of(p) gives
    this rank's part of p's gradient (a tensor, None where it holds none;
    default p.grad). Sharded, unit_norms() is itself a collective: call it
    on every rank or on none (for logging, read step()'s result.norms).

    forward_signals=True: each unit u gets a second unit "u.fwd", fed by
    forward pre-hooks on the PrecisionSwitch modules attached to u
    (attach): the relative quantization error of their GEMM inputs under
    the switch's cheap format, sqrt(sum ||Q(x) - x||^2 / sum ||x||^2) over
    the unit's GEMMs and the step's forward passes (in training mode; in a
    job of several ranks the two sums are all-reduced, so every rank sees
    the same signal; whether to is decided at the first step, so the
    controller may be built before init_process_group). x is the GEMM's
    true input, Q(x) what the cheap path feeds its GEMM (on the
    high-fidelity path: what it would, at its current scale). A unit runs
    high fidelity while either of its two recovers; the forward unit's
    scale is not applied to gradients. forward_signals=None (the
    default) is off, and warns once at the first step if every unit then
    has a switch with a quantizer attached (where the bridge owns the
    quantizer, the settings suite chose forward signals); False is off
    without the warning.
    """

    def __init__(self, units, config=None, named_parameters=None, lib=None,
                 forward_signals=None, sharded=False, group=None,
                 grad_of=None, check_layout=True):
        self._lib = lib or load_library()
        names, params, self._norms_only, pnames = self._group(
            units, named_parameters)
        self._n_grad = len(names)
        if forward_signals:
            fwd = [n + ".fwd" for n in names]
            clash = sorted(set(fwd) & set(names))
            if clash:
                raise ValueError("forward_signals: unit names %s are taken "
                                 "by gradient units" % clash)
            names, params = names + fwd, params + [[] for _ in fwd]
            pnames = pnames + [[] for _ in fwd]
        self.names, self.params = names, params
        n = len(self.names)
        if n == 0:
            raise ValueError("no units")
        self._forward = bool(forward_signals)
        # None (the default): off, and said once at the first step where
        # every unit runs through a switch with a quantizer (the bridge
        # owns the quantizer: the settings suite's case for them)
        self._fwd_unsaid = forward_signals is None
        self._sharded = bool(sharded)
        self._grad_of = grad_of or (lambda p: p.grad)
        self._group_arg = group
        if self._sharded and not _dist_ready():
            raise RuntimeError("sharded=True: call torch.distributed."
                               "init_process_group before Controller")
        # Whether to all-reduce the forward sums, and the ranks' layouts
        # compared: decided at the first step (the process group may be
        # made after the controller).
        self._reduce = None
        self._layout_check = bool(check_layout)
        self._pnames = pnames
        self._warned_absent = False
        first = next((p for ps in self.params for p in ps), None)
        self._device = first.device if first is not None else \
            torch.device("cpu")
        # Fed forward signals too, the thresholds the settings suite chose
        # for them (gnmr_config_forward(): ratio 8, delta 6).
        self.config = (self._lib.gnmr_config_forward() if forward_signals
                       else self._lib.gnmr_config_default())
        _apply_config(self.config, config)
        self._ctl = Ctl()
        self._slots = (self._lib.gnmr_py_slot * n)()
        self._decisions = (DecisionC * n)()
        _raise(self._lib.gnmr_init(ctypes.byref(self._ctl),
                                   ctypes.byref(self.config), self._slots, n),
               "gnmr_init", self._lib, self.config, n)
        self._switches = {}
        self._cuda_plans = {}
        self._fwd_acc = {}
        self._hooks = []

    @staticmethod
    def _group(units, named_parameters):
        """(unit names, a list of parameters per unit, names only?)."""
        if named_parameters is None:
            if isinstance(units, (list, tuple)):
                names = [str(u) for u in units]
                if len(set(names)) != len(names):
                    raise ValueError("unit names repeat: %s" % names)
                return names, [[] for _ in names], True, [[] for _ in names]
            if not hasattr(units, "items"):
                raise TypeError("units: a dict {unit name: parameters}, a "
                                "list of unit names, or a mapping with "
                                "named_parameters")
            names, params, where = [], [], {}
            for key, group in units.items():
                if isinstance(group, torch.Tensor):
                    raise TypeError("unit %r: an iterable of parameters, "
                                    "not one tensor (write [p])" % key)
                once = iter(group) is group
                ps = list(group)
                if not ps:
                    raise ValueError(
                        "unit %r has no parameters%s" % (key, (
                            ": an exhausted iterator? (model.parameters() "
                            "can be read once; pass a list)") if once
                            else ""))
                for p in ps:
                    if not isinstance(p, torch.Tensor):
                        raise TypeError("unit %r: %r is not a parameter"
                                        % (key, p))
                names.append(str(key))
                params.append(ps)
            Controller._no_repeats(names, params, where)
            return names, params, False, [[None] * len(ps) for ps in params]
        if units is None or not (callable(units) or hasattr(units, "get")):
            raise TypeError(
                "units: with named_parameters, a dict {parameter name: unit "
                "name} or a function parameter name -> unit name (None: not "
                "watched), not %s" % type(units).__name__)
        pairs = list(named_parameters)
        if not pairs:
            raise ValueError("named_parameters yielded nothing (an "
                             "exhausted generator? model.named_parameters() "
                             "can be read once)")
        if callable(units):
            lookup = units
        else:
            known = {pname for pname, _ in pairs}
            unknown = sorted(k for k in units if k not in known)
            if unknown:
                raise KeyError("no parameter named %s (named_parameters has "
                               "%s)" % (", ".join(map(repr, unknown)),
                                        ", ".join(sorted(known)[:8]) + (
                                            ", ..." if len(known) > 8
                                            else "")))
            lookup = units.get
        names, params, where = [], [], {}
        for pname, p in pairs:
            u = lookup(pname)
            if u is None:
                continue
            u = str(u)
            if u not in names:
                names.append(u)
                params.append([])
            params[names.index(u)].append(p)
            where[id(p)] = pname
        if not names:
            raise ValueError("no parameter was mapped to a unit")
        Controller._no_repeats(names, params, where)
        return names, params, False, [[where[id(p)] for p in ps]
                                      for ps in params]

    @staticmethod
    def _no_repeats(names, params, where):
        """A gradient belongs to one unit: refuse a parameter in two."""
        owner = {}
        for name, ps in zip(names, params):
            for i, p in enumerate(ps):
                prev = owner.setdefault(id(p), name)
                if prev != name or any(q is p for q in ps[:i]):
                    raise ValueError(
                        "parameter %s is in unit %r and in unit %r: a "
                        "gradient belongs to one unit" % (
                            where.get(id(p), "of shape %s" % (
                                tuple(p.shape),)), prev, name))

    @property
    def n_units(self):
        return len(self.names)

    # -- norms --

    def _local_grads(self):
        """This rank's gradients as gnmr.h reads them, grouped by device:
        {device: [(tensor, unit)]}; a unit's tensors must share one."""
        by_dev, seen = {}, {}
        for u, ps in enumerate(self.params):
            for p in ps:
                g = self._grad_of(p)
                if g is None or g.numel() == 0:
                    continue  # absent: adds nothing
                if g.is_sparse:
                    raise TypeError("unit %s: sparse gradients are not "
                                    "supported" % self.names[u])
                if g.device.type not in ("cpu", "cuda"):
                    raise TypeError("unit %s: gradients on %s are not "
                                    "supported" % (self.names[u], g.device))
                if seen.setdefault(u, g.device) != g.device:
                    raise ValueError("unit %s has gradients on two devices; "
                                     "one unit's tensors must share one"
                                     % self.names[u])
                by_dev.setdefault(g.device, []).append((_as_gnmr(g), u))
        return by_dev

    def unit_norms(self):
        """The norm of every unit (a list of floats): the L2 norm of its
        gradients as gnmr_unit_norms gives it (sharded: of the sums of
        squares all-reduced over the ranks), then the forward signals."""
        self._first_step()
        U, n = self._n_grad, self.n_units
        fwd = self._fwd_sums() if self._forward else None
        if self._sharded:
            sums = self._grad_sums()
            if fwd is not None:
                sums = torch.cat([sums, fwd.to(sums.device)])
            torch.distributed.all_reduce(sums, group=self._group_arg)
            sums = sums.cpu().tolist()
            out = [_f32(math.sqrt(s)) for s in sums[:U]]
            fwd = sums[U:] if fwd is not None else None
        else:
            out = self._grad_norms()
            if fwd is not None:
                if self._reduce:
                    torch.distributed.all_reduce(fwd, group=self._group_arg)
                fwd = fwd.cpu().tolist()
        if fwd is not None:
            out += [_f32(math.sqrt(e / r)) if r > 0 else 0.0
                    for e, r in zip(fwd[:U], fwd[U:])]
        assert len(out) == n
        return out

    def _first_step(self):
        """Once, at the first step (or unit_norms), in a job of several
        ranks: whether the forward sums are all-reduced, and the layout
        check (one all_gather) before any collective that a mismatched
        layout would hang or misread."""
        if self._reduce is not None:
            return
        self._suggest_forward()
        ready = _dist_ready()
        many = ready and torch.distributed.get_world_size(
            self._group_arg) > 1
        self._reduce = self._sharded or (self._forward and many)
        if many and self._layout_check and not self._norms_only:
            self._compare_layouts()

    def _suggest_forward(self):
        """Warns once (forward_signals left at None) where every gradient
        unit has a switch with a quantizer attached: there the bridge owns
        the quantizer, and the settings suite chose forward signals with
        gnmr_config_forward() (bench/RESULTS.md, "Settings suite")."""
        if not self._fwd_unsaid:
            return
        self._fwd_unsaid = False
        owned = all(any(_quantizer(getattr(s, "cheap", None)) is not None
                        for s in self._switches.get(n, ()))
                    for n in self.names[:self._n_grad])
        if owned:
            warnings.warn(
                "gnmr_torch: every unit runs through a PrecisionSwitch with "
                "a quantizer, and forward_signals is off; there the settings "
                "suite chose Controller(..., forward_signals=True), which "
                "also takes gnmr_config_forward() (examples/README.md, "
                "'Forward signals'). forward_signals=False keeps gradient "
                "norms alone without this warning (warned once)",
                UserWarning)

    def layout(self):
        """What the ranks must share: the units in order, each with its
        parameters (their names where named_parameters gave them) and
        shapes (not under sharded=True, where a shard's shape is the
        rank's own), and the options that change the collectives."""
        units = []
        for name, ps, pn in zip(self.names, self.params, self._pnames):
            units.append([name, [[n, None if self._sharded else
                                  list(p.shape)] for n, p in zip(pn, ps)]])
        return {"units": units, "sharded": self._sharded,
                "forward_signals": self._forward}

    def _gather_digest(self, data):
        """Every rank's sha256 of data (bytes): one all_gather of 4 int64
        on the group's backend device."""
        import hashlib
        dist = torch.distributed
        dev = torch.device("cpu")
        if dist.get_backend(self._group_arg) == "nccl":
            dev = torch.device("cuda", torch.cuda.current_device())
        digest = hashlib.sha256(data).digest()
        mine = torch.tensor([int.from_bytes(digest[i:i + 8], "little",
                                            signed=True)
                             for i in range(0, 32, 8)], dtype=torch.int64,
                            device=dev)
        world = dist.get_world_size(self._group_arg)
        parts = [torch.zeros_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine, group=self._group_arg)
        return [p.cpu().tolist() for p in parts]

    def _compare_layouts(self):
        import json
        lay = self.layout()
        parts = self._gather_digest(json.dumps(lay).encode())
        differ = [r for r, p in enumerate(parts) if p != parts[0]]
        if differ:
            mine = ", ".join("%s (%d parameters)" % (u, len(ps))
                             for u, ps in lay["units"])
            raise RankMismatch(
                "the controller's units differ across ranks: rank%s %s "
                "differ%s from rank 0 (names, parameters, shapes and order "
                "must be the same on every rank; build the Controller from "
                "the same model and the same mapping everywhere). This "
                "rank's units: %s" % (
                    "s" if len(differ) > 1 else "",
                    ", ".join(map(str, differ)),
                    "" if len(differ) > 1 else "s", mine))

    def check_decisions(self):
        """One all_gather of a digest of this step's decisions (every
        unit's gnmr_decision bytes and recovering flag): raises
        RankMismatch on every rank if some rank decided otherwise (under
        DDP, a gradient changed on one rank after the all-reduce: a hook
        writing into .grad, a rank-local clip). Call it after step()."""
        dist = torch.distributed
        if not _dist_ready() or dist.get_world_size(self._group_arg) < 2:
            return
        rec = bytes(self._lib.gnmr_recovering(ctypes.byref(self._ctl), u)
                    == 1 for u in range(self.n_units))
        parts = self._gather_digest(bytes(self._decisions) + rec)
        differ = [r for r, p in enumerate(parts) if p != parts[0]]
        if differ:
            raise RankMismatch(
                "step %d: rank%s %s decided otherwise than rank 0 (a "
                "gradient changed on one rank after the all-reduce?); the "
                "replicas will diverge" % (
                    self._ctl.steps - 1, "s" if len(differ) > 1 else "",
                    ", ".join(map(str, differ))))

    def _grad_norms(self):
        out = [0.0] * self._n_grad
        for dev, lst in self._local_grads().items():
            if dev.type == "cpu":
                arr = (Tensor * len(lst))(*[
                    Tensor(g.data_ptr(), g.numel(), _DTYPES[g.dtype], u)
                    for g, u in lst])
                norms = (ctypes.c_float * self._n_grad)()
                _raise(self._lib.gnmr_unit_norms(arr, len(lst), norms,
                                                 self._n_grad),
                       "gnmr_unit_norms", self._lib)
            else:
                norms = torch.empty(self._n_grad, dtype=torch.float32,
                                    device=dev)
                self._cuda_enqueue(dev, lst, norms, "gnmr_cuda_norms")
                norms = norms.cpu().tolist()  # waits for the kernels
            for u in set(u for _, u in lst):
                out[u] = norms[u]
        return out

    def _grad_sums(self):
        """This rank's per-unit sums of squares, a float64 tensor on the
        gradients' device (0 for a unit it holds nothing of)."""
        U = self._n_grad
        by_dev = self._local_grads()
        dev = next((d for d in by_dev if d.type == "cuda"), self._device)
        sums = torch.zeros(U, dtype=torch.float64, device=dev)
        for d, lst in by_dev.items():
            if d.type == "cpu":
                arr = (Tensor * len(lst))(*[
                    Tensor(g.data_ptr(), g.numel(), _DTYPES[g.dtype], u)
                    for g, u in lst])
                part = (_d * U)()
                _raise(self._lib.gnmr_unit_sumsq(arr, len(lst), part, U),
                       "gnmr_unit_sumsq", self._lib)
                part = torch.tensor(list(part), dtype=torch.float64)
            else:
                part = torch.zeros(U, dtype=torch.float64, device=d)
                self._cuda_enqueue(d, lst, part, "gnmr_cuda_sumsq")
            sums += part.to(dev)  # each unit on one device: adds 0 elsewhere
        return sums

    def _cuda_enqueue(self, dev, lst, out, fn):
        lib = _load_cuda()
        key = tuple((g.data_ptr(), g.numel(), _DTYPES[g.dtype], u)
                    for g, u in lst)
        plan = self._cuda_plans.get(dev)
        if plan is None or plan[0] != key:
            if plan is not None:
                lib.gnmr_cuda_plan_free(plan[1])
                del self._cuda_plans[dev]
            arr = (Tensor * len(key))(*[Tensor(*k) for k in key])
            handle = ctypes.c_void_p()
            with torch.cuda.device(dev):
                rc = lib.gnmr_cuda_plan_new(arr, len(key), self._n_grad,
                                            ctypes.byref(handle))
            if rc != GNMR_OK:
                text = (lib.gnmr_cuda_error_string(handle).decode()
                        if rc == GNMR_CUDA_ECUDA else None)
                lib.gnmr_cuda_plan_free(handle)
                if text:
                    raise GnmrError(rc, "CUDA: " + text, "gnmr_norms_plan")
                _raise(rc, "gnmr_norms_plan_init", self._lib)
            plan = self._cuda_plans[dev] = (key, handle)
        stream = torch.cuda.current_stream(dev).cuda_stream
        with torch.cuda.device(dev):
            rc = getattr(lib, fn)(plan[1], out.data_ptr(), stream)
        if rc == GNMR_CUDA_ECUDA:
            raise GnmrError(rc, "CUDA: " + lib.gnmr_cuda_error_string(
                plan[1]).decode(), "gnmr_norms_enqueue")
        _raise(rc, "gnmr_norms_enqueue", self._lib)

    def __del__(self):
        plans = getattr(self, "_cuda_plans", None)
        if plans and _cuda_lib is not None:
            for _, handle in plans.values():
                _cuda_lib.gnmr_cuda_plan_free(handle)
            plans.clear()

    # -- forward signals --

    def _fwd_add(self, u, q, x):
        with torch.no_grad():
            x = x.double()
            acc = torch.stack([(q.double() - x).square().sum(),
                               x.square().sum()])
            prev = self._fwd_acc.get(u)
            self._fwd_acc[u] = acc if prev is None else prev + acc.to(
                prev.device)

    def _fwd_sums(self):
        """[error sums..., input sums...] (2 x n_grad float64) of the
        forward passes since the last step, then cleared."""
        U = self._n_grad
        dev = next((a.device for a in self._fwd_acc.values()), self._device)
        out = torch.zeros(2, U, dtype=torch.float64, device=dev)
        for u, acc in self._fwd_acc.items():
            out[:, u] = acc.to(dev)
        self._fwd_acc = {}
        return out.reshape(-1)

    def _hook(self, u, switch):
        quant = _quantizer(getattr(switch, "cheap", None))
        if quant is None:
            raise TypeError("forward_signals: %r (unit %s) has no cheap "
                            "path with a quantizer (a module with "
                            "quantize_input(x), as FP8Delayed)" % (
                                type(switch).__name__, self.names[u]))
        pending = []  # the switch's true input, until its quantizer runs

        def on_switch(module, args):
            if not module.training:
                return
            x = args[0].detach()
            if module.high_fidelity_now:
                self._fwd_add(u, quant.quantize_input(x), x)
            else:
                pending[:] = [x]

        def on_quantizer(module, args):
            if pending:
                x = pending.pop()
                self._fwd_add(u, quant.quantize_input(args[0].detach()), x)

        self._hooks.append(switch.register_forward_pre_hook(on_switch))
        self._hooks.append(quant.register_forward_pre_hook(on_quantizer))

    # -- the step --

    def step(self, norms=None, apply=True):
        """One gnmr_step. norms: the per-unit norms (a sequence of n_units
        floats, the same on every rank; None: computed from the gradients
        and, sharded or with forward signals on several ranks, reduced over
        them). apply: multiply each unit's gradients by its scale (zero
        them where the scale is 0). Returns a StepResult; raises GnmrError
        (nothing changed) on a refused step, ValueError/TypeError on
        malformed norms."""
        if norms is None:
            if self._norms_only:
                raise ValueError("units given as names alone: pass "
                                 "step(norms=[...])")
            norms = self.unit_norms()
        else:
            self._first_step()
            if isinstance(norms, torch.Tensor):
                norms = norms.detach().to("cpu", torch.float32).tolist()
        norms = list(norms)
        if len(norms) != self.n_units:
            raise ValueError("%d norms for %d units" % (len(norms),
                                                        self.n_units))
        buf = (ctypes.c_float * self.n_units)(*[float(x) for x in norms])
        _raise(self._lib.gnmr_step(ctypes.byref(self._ctl), buf,
                                   self._decisions), "gnmr_step", self._lib)
        if not self._warned_absent and all(
                x == 0.0 for x in list(buf)[:self._n_grad]):
            self._warned_absent = True
            warnings.warn(
                "gnmr_torch: every unit is absent (no gradient, or all "
                "zero) on step %d: is step() called after "
                "optimizer.zero_grad() or before backward()? The order is "
                "backward(), ctl.step(), optimizer.step(), zero_grad() "
                "(warned once)" % (self._ctl.steps - 1), RuntimeWarning,
                stacklevel=2)
        rec = [self._lib.gnmr_recovering(ctypes.byref(self._ctl), u) == 1
               for u in range(self.n_units)]
        res = StepResult(self.names, list(buf), self._decisions, rec,
                         self.report())
        if apply:
            self._apply_scales()
        self._restart_admitted()
        self._follow()
        return res

    def _restart_admitted(self):
        """gnmr.h's manual: a unit admitted this step (RECOVER, its own or
        its forward unit's) starts its amax histories afresh; its
        high-fidelity steps refill them (PrecisionSwitch.observe)."""
        for name, switches in self._switches.items():
            u = self.names.index(name)
            rec = ACTIONS.index("RECOVER")
            admitted = self._decisions[u].action == rec or (
                self._forward and
                self._decisions[u + self._n_grad].action == rec)
            if admitted:
                for s in switches:
                    if hasattr(s, "restart"):
                        s.restart()

    def step_scaled(self, scaler, optimizer, apply=True):
        """step() in a mixed-precision loop with a GradScaler
        (torch.cuda.amp.GradScaler, torch.amp.GradScaler):

            scaler.scale(loss).backward()
            res = ctl.step_scaled(scaler, opt)  # None: the scaler skips it
            scaler.step(opt)
            scaler.update()

        Unscales the gradients first (scaler.unscale_(optimizer), unless
        already done this step, e.g. for clipping), so the controller reads
        the true gradients and not ones times a loss scale that doubles and
        halves on its own schedule. A step in which the scaler found Inf or
        NaN (scaler.step will not step the optimizer) is skipped here too:
        returns None, the controller unchanged (the step's forward sums
        dropped). optimizer may be a list of them (every one unscaled; the
        step skipped if any found Inf). A disabled scaler: plain step()."""
        if scaler is None or not scaler.is_enabled():
            return self.step(apply=apply)
        opts = optimizer if isinstance(optimizer, (list, tuple)) else \
            [optimizer]
        states = getattr(scaler, "_per_optimizer_states", None)
        if states is None or not hasattr(scaler, "_found_inf_per_device"):
            raise TypeError("step_scaled: a torch GradScaler expected, not "
                            "%s" % type(scaler).__name__)
        found = 0.0
        for opt in opts:
            stage = states[id(opt)]["stage"]
            if getattr(stage, "name", None) != "UNSCALED":
                scaler.unscale_(opt)
            found += sum(float(v) for v in
                         scaler._found_inf_per_device(opt).values())
        if found:
            self._fwd_acc = {}
            return None
        return self.step(apply=apply)

    def _apply_scales(self):
        with torch.no_grad():
            for u in range(self._n_grad):
                scale = self._decisions[u].scale
                if scale == 1.0:
                    continue
                for p in self.params[u]:
                    g = self._grad_of(p)
                    if g is None:
                        continue
                    if scale == 0.0:
                        g.zero_()  # NaN * 0 would stay NaN
                    else:
                        g.mul_(scale)

    def _high(self, name):
        """True if unit name's modules run high fidelity next step: the
        unit, or its forward signal, recovers."""
        u = self.names.index(name)
        lib, ctl = self._lib, ctypes.byref(self._ctl)
        return lib.gnmr_recovering(ctl, u) == 1 or (
            self._forward and u < self._n_grad and
            lib.gnmr_recovering(ctl, u + self._n_grad) == 1)

    def _follow(self):
        for name, switches in self._switches.items():
            high = self._high(name)
            for s in switches:
                s.high_fidelity = high

    def _index(self, unit):
        if isinstance(unit, str):
            if unit not in self.names:
                raise KeyError("no unit %r (units: %s)" % (
                    unit, ", ".join(self.names)))
            return self.names.index(unit)
        return unit

    def recovering(self, unit):
        """True if unit (a name or index) runs high-fidelity next step."""
        u = self._index(unit)
        _raise(self._lib.gnmr_recovering_check(ctypes.byref(self._ctl), u),
               "gnmr_recovering", self._lib)
        return self._lib.gnmr_recovering(ctypes.byref(self._ctl), u) == 1

    def attach(self, unit, *switches):
        """PrecisionSwitch modules (anything with .high_fidelity) that
        follow unit: high fidelity exactly on the steps it (or, with
        forward signals, its forward unit) recovers."""
        u = self._index(unit)
        if u >= self._n_grad:
            raise KeyError("attach to a gradient unit, not %r" % unit)
        for s in switches:
            if self._forward:
                self._hook(u, s)
            s.high_fidelity = self._high(unit)
        self._switches.setdefault(unit, []).extend(switches)

    def report(self):
        r = StepReportC()
        _raise(self._lib.gnmr_step_info(ctypes.byref(self._ctl),
                                        ctypes.byref(r)), "gnmr_step_info",
               self._lib)
        return StepReport(r, noise=self._ctl.cfg.rule == 1)

    def counters(self, unit=None):
        """gnmr_counters_get as a dict (unit None: the totals)."""
        u = 0xFFFFFFFF if unit is None else self._index(unit)
        c = Counters()
        _raise(self._lib.gnmr_counters_get(ctypes.byref(self._ctl), u,
                                           ctypes.byref(c)),
               "gnmr_counters_get", self._lib)
        return {f: getattr(c, f) for f, _ in Counters._fields_}

    def reconfigure(self, **overrides):
        cfg = Config.from_buffer_copy(self._ctl.cfg)
        _apply_config(cfg, overrides)
        _raise(self._lib.gnmr_reconfigure(ctypes.byref(self._ctl),
                                          ctypes.byref(cfg)),
               "gnmr_reconfigure", self._lib, cfg, self.n_units)
        self.config = cfg

    # -- checkpoint --

    def checkpoint(self):
        """The controller's gnmr_checkpoint_save bytes."""
        size = ctypes.c_size_t()
        _raise(self._lib.gnmr_checkpoint_save(ctypes.byref(self._ctl), None,
                                              0, ctypes.byref(size)),
               "gnmr_checkpoint_save", self._lib)
        buf = ctypes.create_string_buffer(size.value)
        _raise(self._lib.gnmr_checkpoint_save(ctypes.byref(self._ctl), buf,
                                              size.value,
                                              ctypes.byref(size)),
               "gnmr_checkpoint_save", self._lib)
        return buf.raw[:size.value]

    def state_dict(self):
        """{"units": names, "checkpoint": the checkpoint bytes as a uint8
        tensor}: rides along torch.save, and torch.load(weights_only=True)
        reads it back. The config is inside the checkpoint."""
        return _state_of(self.names, self.checkpoint())

    def load_state_dict(self, state):
        """Restores config and state from state_dict()'s output; raises
        (and changes nothing) on other units or a checkpoint gnmr.h
        refuses (corrupt, truncated, another version or unit count)."""
        buf, size = _checkpoint_of(state, self.names, "Controller")
        _raise(self._lib.gnmr_checkpoint_load(ctypes.byref(self._ctl), buf,
                                              size),
               "gnmr_checkpoint_load", self._lib)
        self.config = Config.from_buffer_copy(self._ctl.cfg)
        self._follow()


def _state_of(names, checkpoint):
    """A state_dict() of the controller's or the placer's: their unit names
    and checkpoint bytes, as a uint8 tensor that rides along torch.save."""
    return {"units": list(names), "checkpoint": torch.frombuffer(
        bytearray(checkpoint), dtype=torch.uint8)}


def _checkpoint_of(state, names, owner):
    """The checkpoint of `state`, a state_dict() of an `owner` ("Controller"
    or "Placer") over the units `names`, as a ctypes buffer and its length.
    Raises TypeError or ValueError on anything else, before any C call;
    what the bytes hold is the library's to check."""
    if not isinstance(state, dict) or "checkpoint" not in state:
        raise TypeError("expected a %s.state_dict()" % owner)
    if list(state.get("units", [])) != names:
        raise ValueError("the state holds units %s, this %s %s"
                         % (state.get("units"), owner.lower(), names))
    data = state["checkpoint"]
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise TypeError("checkpoint: a 1-D uint8 tensor expected")
        data = bytes(data.cpu().tolist())
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError("checkpoint: bytes expected")
    return ctypes.create_string_buffer(bytes(data), len(data)), len(data)


def c_step(ctl, norms, lib=None):
    """gnmr_step on a bare Ctl (for tests that drive the C controller
    directly): returns the DecisionC array."""
    lib = lib or load_library()
    n = ctl.n_units
    out = (DecisionC * n)()
    buf = (ctypes.c_float * n)(*norms)
    _raise(lib.gnmr_step(ctypes.byref(ctl), buf, out), "gnmr_step", lib)
    return out


# ---- the placer -----------------------------------------------------------

def _linears(module):
    """The Linears of a unit's module: itself, a PrecisionSwitch's high
    path, or every Linear inside it."""
    if isinstance(module, torch.nn.Linear):
        return [module]
    if isinstance(module, PrecisionSwitch):
        return _linears(module.high)
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


class Placer:
    """gnmr.h's placer (its manual's rules P1-P7: gnmr_place_*): which
    units run high fidelity, within a budget (a share of the units' GEMM
    cost), from each unit's update norm ||W_t+1 - W_t|| against its
    weights' quantization error ||Q(W_t) - W_t||.

    units: {unit name: a module or an iterable of modules}: Linears, or
    PrecisionSwitch modules (the Linear of their high path; the placer
    drives their .placed_gemms: high fidelity while placed), or modules
    holding Linears. costs: per unit (None: from the shapes, per token, 6
    x in x out per Linear: the forward GEMM and the backward's two).
    config: gnmr_place_config fields over gnmr_place_config_default()
    (one out of range: GnmrError naming it, as gnmr_place_init refuses).
    serve says how the trained model will be served: GNMR_SERVE_HIGH (the
    default), its placed GEMMs high-fidelity; GNMR_SERVE_LOW, on the low
    format, so a placed unit runs only its backward GEMMs high and every
    forward stays on the format: gemms less GNMR_GEMM_FWD (.gemms), and
    a gemms of the forward alone is refused (GnmrError, field "serve").
    Placed GEMMs other than GNMR_GEMM_ALL (gemms such as GNMR_GEMM_DGRAD |
    GNMR_GEMM_WGRAD, or any under serve LOW) need every module of every
    unit to be a PrecisionSwitch over FP8Delayed (ValueError otherwise:
    other modules switch whole, forward included); a placed unit runs
    those GEMMs on the true operands and pays a third of its cost for
    each. .high_gemms holds each unit's bits for the next step (after the
    planned steps, the final placement: the GEMMs to serve high, none of
    them a forward under serve LOW), .high whether any is on.
    quantizer(weight, module) -> the weight as the cheap path uses it
    (None: the switch's cheap path's quantize_weight() where it has one,
    else E4M3 at the weight's own amax scale).

        loss.backward(); ctl.step()
        pl.snapshot()        # W_t and ||Q(W_t) - W_t||, before the update
        opt.step()
        pl.step()            # ||W_t+1 - W_t||, gnmr_place_step, switches

    step(update=[...], qerr=[...]) takes signals computed elsewhere.
    Errors as the Controller's (GnmrError, nothing changed); the ctypes
    mirrors are checked against the library's layout at load. Under DDP
    every rank holds the same weights and places the same."""

    def __init__(self, units, config=None, costs=None, quantizer=None,
                 lib=None):
        self._lib = lib or load_library()
        if not hasattr(units, "items"):
            raise TypeError("units: a dict {unit name: module or modules}")
        self.names, self.modules, self.linears = [], [], []
        for name, mods in units.items():
            mods = [mods] if isinstance(mods, torch.nn.Module) else \
                list(mods)
            lins = [lin for m in mods for lin in _linears(m)]
            if not lins:
                raise ValueError("unit %r has no Linear" % name)
            self.names.append(str(name))
            self.modules.append(mods)
            self.linears.append(lins)
        n = len(self.names)
        if n == 0:
            raise ValueError("no units")
        if costs is None:
            costs = [float(sum(6 * lin.in_features * lin.out_features
                               for lin in lins)) for lins in self.linears]
        costs = [float(c) for c in costs]
        if len(costs) != n:
            raise ValueError("%d costs for %d units" % (len(costs), n))
        self.costs = costs
        self._quantizer = quantizer
        self.config = self._lib.gnmr_place_config_default()
        names = {f for f, _ in PlaceConfig._fields_ if not f.endswith("_")}
        for key, value in dict(config or {}).items():
            if key not in names:
                raise KeyError("gnmr_place_config has no field %r" % key)
            setattr(self.config, key, value)
        self._check_config(self.config)
        self._check_switches(self.config)
        self._pl = Place()
        self._units = (self._lib.gnmr_py_place_unit * n)()
        rc = self._lib.gnmr_place_init(ctypes.byref(self._pl),
                                       ctypes.byref(self.config),
                                       self._units, (_d * n)(*costs), n)
        _raise(rc, "gnmr_place_init", self._lib)
        self.high = [False] * n
        self.high_gemms = [0] * n
        self._snap = None

    @property
    def n_units(self):
        return len(self.names)

    @property
    def gemms(self):
        """The GEMMs a placed unit runs high-fidelity (GNMR_GEMM_* bits):
        config.gemms, less GNMR_GEMM_FWD under GNMR_SERVE_LOW, as gnmr.h's
        placer places and pays them."""
        return _place_gemms(self.config)

    def _check_config(self, cfg):
        """gnmr_place_config_check: GnmrError (GNMR_ECONFIG, .field) for a
        field out of range, as gnmr_place_init would refuse it."""
        name = ctypes.c_char_p()
        rc = self._lib.gnmr_place_config_check(ctypes.byref(cfg),
                                               ctypes.byref(name))
        if rc != GNMR_ECONFIG:
            _raise(rc, "gnmr_place_config_check", self._lib)
            return
        field = name.value.decode() if name.value else None
        text = "gnmr_place_config.%s = %r is out of range" % (
            field, getattr(cfg, field, None))
        if field == "serve" and cfg.serve == GNMR_SERVE_LOW:
            text += (" with gemms = %d: GNMR_SERVE_LOW places backward "
                     "GEMMs only (GNMR_GEMM_DGRAD, GNMR_GEMM_WGRAD) and "
                     "gemms holds none" % cfg.gemms)
        elif field == "serve":
            text += (": GNMR_SERVE_HIGH (%d) or GNMR_SERVE_LOW (%d)"
                     % (GNMR_SERVE_HIGH, GNMR_SERVE_LOW))
        raise GnmrError(rc, text, "gnmr_place_init", field)

    def _check_switches(self, cfg):
        """ValueError unless the units' modules can run what cfg places:
        anything switches whole (GNMR_GEMM_ALL); some GEMMs of a Linear
        need a PrecisionSwitch whose cheap path's quantizer has
        high_gemms (FP8Delayed), which runs them on the true operands."""
        gemms = _place_gemms(cfg)
        if gemms == GNMR_GEMM_ALL:
            return
        bad = [nm for nm, mods in zip(self.names, self.modules)
               if not all(_gemm_switch(m) for m in mods)]
        if not bad:
            return
        if cfg.serve == GNMR_SERVE_LOW:
            why = ("gnmr_place_config.serve = GNMR_SERVE_LOW: a placed unit "
                   "runs its backward GEMMs (%d) high and its forward on the "
                   "format, the format it will be served in" % gemms)
        else:
            why = "gnmr_place_config.gemms = %r" % cfg.gemms
        raise ValueError(
            "%s; unit%s %s hold%s modules other than PrecisionSwitch over a "
            "quantizer with high_gemms (FP8Delayed), which only switch whole "
            "(GNMR_GEMM_ALL, 7: the forward too)" % (
                why, "s" if len(bad) > 1 else "", ", ".join(bad),
                "" if len(bad) > 1 else "s"))

    def _qweight(self, lin, mods):
        if self._quantizer is not None:
            return self._quantizer(lin.weight, lin)
        for m in mods:
            if isinstance(m, PrecisionSwitch) and (m.high is lin or any(
                    x is lin for x in _linears(m.high))):
                q = _quantizer(m.cheap)
                if q is not None and hasattr(q, "quantize_weight"):
                    return q.quantize_weight()
        w = lin.weight.detach()
        amax = float(w.abs().max()) if w.numel() else 0.0
        scale = E4M3_MAX / amax if amax > 0 and math.isfinite(amax) else 1.0
        return fake_quantize(w, scale, "e4m3")

    def snapshot(self):
        """Before the optimizer's update: keeps W_t and computes each
        unit's ||Q(W_t) - W_t|| (float64)."""
        with torch.no_grad():
            weights, qerr = [], []
            for lins, mods in zip(self.linears, self.modules):
                e = 0.0
                for lin in lins:
                    w = lin.weight.detach()
                    e += float((self._qweight(lin, mods).double()
                                - w.double()).square().sum())
                weights.append([lin.weight.detach().clone() for lin in lins])
                qerr.append(math.sqrt(e))
            self._snap = (weights, qerr)

    def signals(self):
        """(update, qerr) per unit: ||W_t+1 - W_t|| against snapshot()'s
        W_t, and snapshot()'s quantization errors."""
        if self._snap is None:
            raise RuntimeError("Placer.step(): call snapshot() before the "
                               "optimizer's update")
        weights, qerr = self._snap
        update = []
        with torch.no_grad():
            for lins, olds in zip(self.linears, weights):
                update.append(math.sqrt(sum(
                    float((lin.weight.detach().double() - old.double())
                          .square().sum()) for lin, old in zip(lins, olds))))
        return update, qerr

    def step(self, update=None, qerr=None):
        """One gnmr_place_step (after the optimizer's update); sets
        .placed on the units' switches and returns the list of units high
        fidelity on the next step. Raises GnmrError (nothing changed) on a
        refused step (a finite negative signal)."""
        if update is None and qerr is None:
            update, qerr = self.signals()
        elif update is None or qerr is None:
            raise ValueError("step: both update and qerr, or neither")
        update, qerr = [float(x) for x in update], [float(x) for x in qerr]
        n = self.n_units
        if len(update) != n or len(qerr) != n:
            raise ValueError("%d/%d signals for %d units" % (
                len(update), len(qerr), n))
        high = (ctypes.c_uint8 * n)()
        _raise(self._lib.gnmr_place_step(ctypes.byref(self._pl),
                                         (_d * n)(*update), (_d * n)(*qerr),
                                         high), "gnmr_place_step", self._lib)
        self._snap = None
        self.high_gemms = [int(h) for h in high]
        self.high = [bool(h) for h in high]
        self._follow()
        return [nm for nm, h in zip(self.names, self.high) if h]

    def _follow(self):
        for mods, g in zip(self.modules, self.high_gemms):
            for m in mods:
                if isinstance(m, PrecisionSwitch):
                    m.placed_gemms = g

    def unit_info(self, unit):
        """gnmr_place_unit_info of unit (a name or index) as a dict."""
        u = self.names.index(unit) if isinstance(unit, str) else unit
        out = PlaceUnitState()
        _raise(self._lib.gnmr_place_unit_info(ctypes.byref(self._pl), u,
                                              ctypes.byref(out)),
               "gnmr_place_unit_info", self._lib)
        return {f: getattr(out, f) for f, _ in PlaceUnitState._fields_}

    def report(self):
        """gnmr_place_info as a dict (fired_step None before the fire)."""
        r = PlaceReportC()
        _raise(self._lib.gnmr_place_info(ctypes.byref(self._pl),
                                         ctypes.byref(r)),
               "gnmr_place_info", self._lib)
        out = {f: getattr(r, f) for f, _ in PlaceReportC._fields_}
        if out["fired_step"] == 0xFFFFFFFFFFFFFFFF:
            out["fired_step"] = None
        return out

    def checkpoint(self):
        size = ctypes.c_size_t()
        _raise(self._lib.gnmr_place_checkpoint_save(
            ctypes.byref(self._pl), None, 0, ctypes.byref(size)),
            "gnmr_place_checkpoint_save", self._lib)
        buf = ctypes.create_string_buffer(size.value)
        _raise(self._lib.gnmr_place_checkpoint_save(
            ctypes.byref(self._pl), buf, size.value, ctypes.byref(size)),
            "gnmr_place_checkpoint_save", self._lib)
        return buf.raw[:size.value]

    def state_dict(self):
        """{"units": names, "checkpoint": gnmr_place_checkpoint_save's
        bytes as a uint8 tensor} (config and costs are inside)."""
        return _state_of(self.names, self.checkpoint())

    def load_state_dict(self, state):
        """Restores state_dict()'s output, its config included; raises
        (nothing changed) on other units, a checkpoint gnmr.h refuses, or
        a config these modules cannot run (ValueError, as __init__)."""
        buf, size = _checkpoint_of(state, self.names, "Placer")
        # The checkpoint's config wins: loaded into a scratch placer first,
        # so that one these modules cannot run (serve LOW or gemms over
        # modules that only switch whole) is refused with nothing changed.
        n = self.n_units
        scratch = Place()
        units = (self._lib.gnmr_py_place_unit * n)()
        _raise(self._lib.gnmr_place_init(ctypes.byref(scratch),
                                         ctypes.byref(self.config), units,
                                         (_d * n)(*self.costs), n),
               "gnmr_place_init", self._lib)
        _raise(self._lib.gnmr_place_checkpoint_load(ctypes.byref(scratch),
                                                    buf, size),
               "gnmr_place_checkpoint_load", self._lib)
        self._check_switches(scratch.cfg)
        _raise(self._lib.gnmr_place_checkpoint_load(ctypes.byref(self._pl),
                                                    buf, size),
               "gnmr_place_checkpoint_load", self._lib)
        self.config = PlaceConfig.from_buffer_copy(self._pl.cfg)
        self.costs = [self.unit_info(u)["cost"] for u in range(
            self.n_units)]  # the checkpoint's
        self.high_gemms = [self._lib.gnmr_place_high(
            ctypes.byref(self._pl), u) for u in range(self.n_units)]
        self.high = [g != 0 for g in self.high_gemms]
        self._snap = None
        self._follow()


# ---- the precision switch -----------------------------------------------

def _quantizer(cheap):
    """The quantizer of a cheap path: its first module with
    quantize_input(x) (FP8Delayed), or None."""
    if cheap is None or not isinstance(cheap, torch.nn.Module):
        return None
    return next((m for m in cheap.modules()
                 if hasattr(m, "quantize_input")), None)


def _place_gemms(cfg):
    """gnmr.h's GEMMs of a placed unit: cfg.gemms, less the forward GEMM for
    a model served on the low format (GNMR_SERVE_LOW)."""
    if cfg.serve == GNMR_SERVE_LOW:
        return cfg.gemms & ~GNMR_GEMM_FWD
    return cfg.gemms


def _gemm_switch(m):
    """True if m can be placed per GEMM: a PrecisionSwitch whose cheap
    path's quantizer has high_gemms (FP8Delayed)."""
    return isinstance(m, PrecisionSwitch) and hasattr(
        _quantizer(m.cheap), "high_gemms")


class PrecisionSwitch(torch.nn.Module):
    """Runs `cheap` normally and `high` while its unit recovers. The two
    should share their parameters (e.g. cheap = FP8Delayed(linear), high =
    linear): the unit's gradients are the same tensors on both paths.
    Controller.attach(unit, switch) sets .high_fidelity after each step;
    `with switch.forced(True):` overrides it for a block (evaluation in
    high fidelity, say).

    A Placer sets .placed_gemms, the GNMR_GEMM_* bits its unit runs
    high-fidelity: all of them (GNMR_GEMM_ALL; .placed is True) switch to
    `high` whole; some of them (a placer configured with gemms, e.g.
    GNMR_GEMM_DGRAD | GNMR_GEMM_WGRAD, or with serve GNMR_SERVE_LOW) stay
    on `cheap`, whose quantizer
    (FP8Delayed) runs those GEMMs on the true operands and the others on
    the quantized ones. forced(...) overrides placed_gemms too: forced
    False runs every GEMM on the cheap path."""

    def __init__(self, cheap, high):
        super().__init__()
        self.cheap, self.high = cheap, high
        self.high_fidelity = False
        self.placed_gemms = 0  # set by a Placer
        self._forced = None

    @property
    def placed(self):
        """True while a Placer holds the whole unit high (every GEMM);
        setting it sets placed_gemms to GNMR_GEMM_ALL or 0."""
        return self.placed_gemms == GNMR_GEMM_ALL

    @placed.setter
    def placed(self, value):
        self.placed_gemms = GNMR_GEMM_ALL if value else 0

    @property
    def high_fidelity_now(self):
        """The path the next forward takes: high while its unit recovers
        (.high_fidelity, from a Controller) or is placed there whole
        (.placed, from a Placer), unless forced."""
        if self._forced is not None:
            return self._forced
        return self.high_fidelity or self.placed

    def forward(self, *args, **kwargs):
        q = _quantizer(self.cheap)
        if self.high_fidelity_now:
            if self.training and args and q is not None and hasattr(
                    q, "observe"):
                q.observe(args[0])  # the history follows the true tensors
            return self.high(*args, **kwargs)
        gemms = self.placed_gemms if self._forced is None else 0
        if gemms and not hasattr(q, "high_gemms"):
            raise TypeError("placed_gemms = %d: the cheap path has no "
                            "quantizer with high_gemms (FP8Delayed)" % gemms)
        if hasattr(q, "high_gemms"):
            q.high_gemms = gemms
        return self.cheap(*args, **kwargs)

    def restart(self):
        """Starts the cheap path's scaling state afresh (its quantizer's
        restart(), if it has one): what Controller.step does when the
        switch's unit is admitted (RECOVER), as gnmr.h's manual says."""
        q = _quantizer(self.cheap)
        if q is not None and hasattr(q, "restart"):
            q.restart()

    def forced(self, high_fidelity):
        switch = self

        class _Forced:
            def __enter__(self):
                self.prev = switch._forced
                switch._forced = bool(high_fidelity)
                return switch

            def __exit__(self, *exc):
                switch._forced = self.prev
                return False

        return _Forced()


E4M3_MAX = 448.0

# The cheap formats, as lab/lowp.h has them: (mantissa bits, smallest
# normal exponent, largest finite value, block). OCP FP8 E4M3 and E5M2, OCP
# FP4 E2M1, and NVFP4 (E2M1 with a scale per block of 16 values along the
# last dimension, held in E4M3 under a per-tensor scale).
FORMATS = {"e4m3": (3, -6, 448.0, 0), "e5m2": (2, -14, 57344.0, 0),
           "e2m1": (1, 0, 6.0, 0), "nvfp4": (1, 0, 6.0, 16)}


def _round_emulated(x, mbits, emin, fmax):
    """x (float32, already in the format's range) rounded to the nearest
    value of the minifloat with mbits mantissa bits and normal exponents
    down to 2^emin (subnormals below), ties to even, in float32
    arithmetic. Exact: frexp gives the binade without a log, the step is a
    power of two, and torch.round rounds half to even."""
    a = x.abs()
    _, e = torch.frexp(a)  # a = m * 2^e, m in [0.5, 1)
    e = torch.clamp(e - 1, min=emin)  # the binade's exponent
    step = torch.pow(2.0, (e - mbits).to(torch.float32))
    q = torch.round(a / step) * step
    return torch.copysign(torch.clamp(q, max=fmax), x)


def _round_e4m3_emulated(x):
    """E4M3 (3 mantissa bits, exponents down to 2^-6, subnormals in steps
    of 2^-9) by _round_emulated."""
    return _round_emulated(x, 3, -6, E4M3_MAX)


_NATIVE = {"e4m3": getattr(torch, "float8_e4m3fn", None),
           "e5m2": getattr(torch, "float8_e5m2", None)}
_F8 = _NATIVE["e4m3"]


def round_format(x, fmt="e4m3", native=None):
    """x rounded to an element format of FORMATS ("e4m3", "e5m2", "e2m1";
    per element, no block scale), saturating to +-its largest value, in
    x's dtype: torch's float8 dtypes where this torch has them (2.1 and
    later) and native is not False, else the float32 emulation (torch
    1.13; always for E2M1). NaN stays NaN (E2M1 has no NaN code: the
    emulation lets it through, as lab/lowp.h does)."""
    mbits, emin, fmax, _ = FORMATS[fmt]
    cast = _NATIVE.get(fmt)
    use_native = (cast is not None) if native is None else native
    y = x.float().clamp(-fmax, fmax)
    y = y.to(cast).float() if use_native else _round_emulated(
        y, mbits, emin, fmax)
    return y.to(x.dtype)


def round_e4m3(x, native=None):
    """x rounded to FP8 E4M3 (OCP, saturating to +-448): round_format."""
    return round_format(x, "e4m3", native)


def round_e5m2(x, native=None):
    """x rounded to FP8 E5M2 (OCP, saturating to +-57344)."""
    return round_format(x, "e5m2", native)


def round_e2m1(x):
    """x rounded to FP4 E2M1 (OCP: 0, 0.5, 1, 1.5, 2, 3, 4, 6)."""
    return round_format(x, "e2m1", native=False)


def quantize_nvfp4(x, amax=None):
    """x (dequantized) as NVFP4 reads it, as lab/lowp.h and
    train_lm.c compute it: blocks of 16 values along the last dimension
    (a shorter last block where it does not divide), each as
    Q_e2m1(v / s) * s with its own scale s = Q_e4m3(block amax / 6 / t) * t
    under the tensor scale t = amax / (6 * 448) (amax: x's own unless
    given); a block whose scale rounds to 0 reads 0. float32 arithmetic."""
    mbits, emin, fmax, block = FORMATS["nvfp4"]
    y = x.float()
    shape = y.shape
    n = shape[-1] if y.dim() else 1
    y = y.reshape(-1, n)
    pad = (-n) % block
    if pad:
        y = torch.nn.functional.pad(y, (0, pad))
    y = y.reshape(y.shape[0], -1, block)
    if amax is None:
        amax = x.detach().abs().max().float() if x.numel() else \
            torch.tensor(0.0)
    t = torch.as_tensor(amax, dtype=torch.float32) / torch.tensor(
        fmax * E4M3_MAX, dtype=torch.float32)
    if not (bool(t > 0) and bool(torch.isfinite(t))):
        return torch.zeros_like(x)
    ba = y.abs().amax(dim=-1, keepdim=True)
    sc = _round_e4m3_emulated((ba / fmax / t).clamp(max=E4M3_MAX)) * t
    safe = torch.where(sc > 0, sc, torch.ones_like(sc))
    q = _round_emulated((y / safe).clamp(-fmax, fmax), mbits, emin,
                        fmax) * safe
    q = torch.where(sc > 0, q, torch.zeros_like(q))
    q = q.reshape(q.shape[0], -1)[:, :n]
    return q.reshape(shape).to(x.dtype)


def fake_quantize(x, scale, fmt="e4m3"):
    """x * scale rounded to fmt, divided back (the dequantized GEMM input);
    "nvfp4" scales per block itself (scale unused)."""
    if FORMATS[fmt][3]:
        return quantize_nvfp4(x)
    return round_format(x * scale, fmt) / scale


class _FakeQuant(torch.autograd.Function):
    """Forward: fake_quantize. Backward: the straight-through estimator
    (the gradient passes unchanged)."""

    @staticmethod
    def forward(ctx, x, scale, fmt="e4m3"):
        return fake_quantize(x, scale, fmt)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class _GemmPlacedLinear(torch.autograd.Function):
    """y = x W^T + b whose three GEMMs each read the true operands (the
    GEMM's GNMR_GEMM_* bit in gemms) or the fake-quantized ones xq, wq: the
    forward y from x, W or xq, wq; the input gradient dx = dy W or dy wq;
    the weight gradient dW = dy^T x or dy^T xq (lab/train_lm.c's GEMMs).
    The gradients reach x and W unchanged by the quantizers (the
    straight-through estimator, as _FakeQuant)."""

    @staticmethod
    def forward(ctx, x, w, b, xq, wq, gemms):
        ctx.save_for_backward(x if gemms & GNMR_GEMM_WGRAD else xq,
                              w if gemms & GNMR_GEMM_DGRAD else wq)
        ctx.has_bias = b is not None
        fwd = gemms & GNMR_GEMM_FWD
        return torch.nn.functional.linear(x if fwd else xq, w if fwd else wq,
                                          b)

    @staticmethod
    def backward(ctx, dy):
        xs, ws = ctx.saved_tensors
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = dy.matmul(ws)
        dy2 = dy.reshape(-1, dy.shape[-1])
        if ctx.needs_input_grad[1]:
            dw = dy2.t().matmul(xs.reshape(-1, xs.shape[-1]))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy2.sum(0)
        return dx, dw, db, None, None, None


class FP8Delayed(torch.nn.Module):
    """The cheap path of a Linear: its input and weight fake-quantised to
    FP8 E4M3 (fmt: any of FORMATS, "e5m2", "e2m1" too) with per-tensor
    delayed scaling, or to "nvfp4" with its block scales (no history
    used). Each tensor's scale is the format's largest value /
    (max of its last `history` amaxes * margin), from steps
    before this one (the amax of this step enters the history after it is
    used, as Transformer Engine's delayed scaling does), so an outlier that
    arrives overflows (saturates) this step and is scaled for later.
    Behind a PrecisionSwitch the histories follow the true tensors on the
    high-fidelity steps too (observe), and start afresh when the unit is
    admitted (restart, called by Controller.step on RECOVER).

    high_gemms (GNMR_GEMM_* bits, 0 by default; a PrecisionSwitch sets it
    from its Placer): those of the Linear's three GEMMs read the true x and
    W instead of their quantized values (the forward, the input gradient
    dx = dy W, the weight gradient dW = dy^T x), the others the quantized
    ones; the histories are pushed as on any cheap step."""

    def __init__(self, linear, history=16, margin=1.0, fmt="e4m3"):
        super().__init__()
        if fmt not in FORMATS:
            raise ValueError("fmt: %r is not one of %s" % (
                fmt, sorted(FORMATS)))
        self.linear = linear
        self.margin = margin
        self.fmt = fmt
        self.register_buffer("amax_x", torch.zeros(history))
        self.register_buffer("amax_w", torch.zeros(history))
        self.high_gemms = 0

    def _scale(self, hist, t):
        """The format's max / (the history's largest amax * margin); an empty
        history (the first step, or restarted) scales by t's own amax, as
        lab/lowp.h does."""
        m = float(hist.max())
        if not m > 0:
            m = float(t.detach().abs().max()) if t.numel() else 0.0
        m *= self.margin
        fmax = FORMATS[self.fmt][2]
        return fmax / m if m > 0 and math.isfinite(m) else 1.0

    def restart(self):
        """Empties both amax histories (on admission: the fault's amax
        values would leave a stale scale behind the lock)."""
        with torch.no_grad():
            self.amax_x.zero_()
            self.amax_w.zero_()

    def observe(self, x):
        """On a high-fidelity step: x's and the weight's amax enter the
        histories, as the cheap path's forward would push them, so the
        scales are current when the unit comes back (the C demos' f32
        steps do the same)."""
        self._push(self.amax_x, x)
        self._push(self.amax_w, self.linear.weight)

    def _push(self, hist, t):
        with torch.no_grad():
            a = t.detach().abs().max().float()
            if not bool(torch.isfinite(a)):
                return  # a NaN/Inf batch does not poison the scale
            hist.copy_(torch.roll(hist, 1))
            hist[0] = a

    def quantize_weight(self):
        """The weight as this step's GEMM would read it (the placer's
        Q(W)), at the weight's current scale."""
        with torch.no_grad():
            w = self.linear.weight.detach()
            return fake_quantize(w, self._scale(self.amax_w, w), self.fmt)

    def quantize_input(self, x):
        """x as this step's GEMM would read it: rounded to the format at
        the input's current scale (the forward signal's Q(x))."""
        with torch.no_grad():
            return fake_quantize(x, self._scale(self.amax_x, x), self.fmt)

    def forward(self, x):
        w = self.linear.weight
        sx, sw = self._scale(self.amax_x, x), self._scale(self.amax_w, w)
        if self.training:
            self._push(self.amax_x, x)
            self._push(self.amax_w, w)
        if self.high_gemms:
            with torch.no_grad():
                xq = fake_quantize(x.detach(), sx, self.fmt)
                wq = fake_quantize(w.detach(), sw, self.fmt)
            return _GemmPlacedLinear.apply(x, w, self.linear.bias, xq, wq,
                                           int(self.high_gemms))
        xq = _FakeQuant.apply(x, sx, self.fmt)
        wq = _FakeQuant.apply(w, sw, self.fmt)
        return torch.nn.functional.linear(xq, wq, self.linear.bias)
