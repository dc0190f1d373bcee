"""The bridge's units as a user builds them (gnmr.h 0.4): a gradient that
is missing is absent, not zero; groups that cannot be meant are refused at
construction; a config out of range names its field; the module works
copied out of the repository.

Absent (gnmr.h 0.4): a unit whose norm is exactly 0 is KEEP with scale 1
and flag ABSENT, its history untouched. The bridge gives norm 0 to a unit
none of whose parameters has a .grad, and a parameter without .grad adds
nothing to its unit's norm."""

import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "torch"))
import gnmr_torch as G  # noqa: E402

ABSENT = 1 << G.FLAGS.index("ABSENT")


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1))


def data(steps, seed=1):
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(8, 1, generator=gen)
    for _ in range(steps):
        x = torch.randn(16, 8, generator=gen)
        yield x, torch.tanh(x @ w)


def test_missing_grad_adds_nothing_and_no_grad_is_absent():
    m = mlp()
    ctl = G.Controller({"a": m[0].parameters(), "b": m[2].parameters(),
                        "c": m[4].parameters()})
    x, y = next(data(1))
    ((m(x) - y) ** 2).mean().backward()
    want_a = float(m[0].weight.grad.double().norm())
    m[0].bias.grad = None      # a parameter of a with no gradient
    m[2].weight.grad = None    # b: none of its parameters has one
    m[2].bias.grad = None
    norms = ctl.unit_norms()
    assert norms[1] == 0.0
    assert norms[0] == pytest.approx(want_a, rel=1e-6)
    res = ctl.step()
    d = res.decisions["b"]
    assert d.action == "KEEP" and d.scale == 1.0 and d.flags & ABSENT
    assert res.absent == ["b"] and "b" not in res.flagged
    assert not res.decisions["a"].flags & ABSENT


def train(model, ctl, steps, before=None, opt_lr=0.05):
    """SGD steps with the controller; before(step) may change the model.
    Returns each step's StepResult and each watched unit's gradient norm
    after the scales were applied."""
    opt = torch.optim.SGD(model.parameters(), lr=opt_lr)
    out = []
    for step, (x, y) in enumerate(data(steps)):
        if before:
            before(step)
        opt.zero_grad(set_to_none=True)
        ((model(x) - y) ** 2).mean().backward()
        res = ctl.step()
        after = {n: sum(float(p.grad.double().norm() ** 2)
                        for p in ps if p.grad is not None) ** 0.5
                 for n, ps in zip(ctl.names, ctl.params)}
        out.append((res, after))
        opt.step()
    return out


def test_frozen_then_unfrozen_layer_is_not_zeroed():
    """The first layer frozen for 20 steps (no .grad), then trained: absent
    while frozen; afterwards scale 1, its gradient kept, never stuck in
    recovery (0.3 zeroed it on every step after the unfreezing)."""
    m = mlp()
    ctl = G.Controller({"first": m[0].parameters(),
                        "rest": list(m[2].parameters())
                        + list(m[4].parameters())},
                       config={"max_recovering": 1})

    def freeze(step):
        for p in m[0].parameters():
            p.requires_grad_(step >= 20)

    run = train(m, ctl, 120, freeze)
    for step, (res, after) in enumerate(run):
        d = res.decisions["first"]
        if step < 20:
            assert d.flags & ABSENT and d.scale == 1.0, step
            continue
        assert not d.flags & ABSENT, step
        assert d.scale == 1.0, "step %d: %r" % (step, d)
        assert after["first"] > 0 and after["first"] == pytest.approx(
            res.norms["first"], rel=1e-5), step
        assert "first" not in res.recovering, step
    c = ctl.counters("first")
    assert c["admissions"] == 0 and c["finite_steps"] == 100
    assert c["absent"] == 20


def test_lora_zero_initialised_factor():
    """y = base(x) + x A B with B = 0 at start (LoRA): A's gradient is an
    all-zero tensor on the first step (norm 0: absent), then grows from
    nothing; it must keep scale 1 and never be admitted for that."""
    torch.manual_seed(3)
    base = torch.nn.Linear(8, 1)
    for p in base.parameters():
        p.requires_grad_(False)
    A = torch.nn.Parameter(torch.randn(8, 4) * 0.3)
    B = torch.nn.Parameter(torch.zeros(4, 1))

    class Lora(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.A, self.B, self.base = A, B, base

        def forward(self, x):
            return self.base(x) + x @ self.A @ self.B

    model = Lora()
    ctl = G.Controller({"lora_A": [A], "lora_B": [B]},
                       config={"max_recovering": 1})
    run = train(model, ctl, 80)
    first, _ = run[0]
    assert first.norms["lora_A"] == 0.0  # B = 0: dL/dA = 0 exactly
    assert first.decisions["lora_A"].flags & ABSENT
    assert first.norms["lora_B"] > 0
    for step, (res, after) in enumerate(run[1:], 1):
        d = res.decisions["lora_A"]
        assert res.norms["lora_A"] > 0 and not d.flags & ABSENT, step
        assert d.scale == 1.0 and after["lora_A"] > 0, step
    assert ctl.counters("lora_A")["admissions"] == 0
    assert ctl.counters("lora_A")["absent"] == 1


def test_moe_expert_with_gradient_on_10_percent_of_steps():
    """An expert routed on 10% of steps (no .grad on the others): scale 1
    and ABSENT when idle, and admitted on under 2% of its active steps
    (0.3, which read the idle steps as norm 0, admitted such a unit on
    about half of them)."""
    torch.manual_seed(4)
    shared = torch.nn.Linear(8, 1)
    expert = torch.nn.Linear(8, 1)
    gen = torch.Generator().manual_seed(5)
    steps = 1000
    active = (torch.rand(steps, generator=gen) < 0.1).tolist()
    routed = {"on": False}

    class Moe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shared, self.expert = shared, expert

        def forward(self, x):
            y = self.shared(x)
            return y + self.expert(x) if routed["on"] else y

    def route(step):
        routed["on"] = active[step]

    ctl = G.Controller({"shared": shared.parameters(),
                        "expert": expert.parameters()},
                       config={"max_recovering": 1})
    run = train(Moe(), ctl, steps, route, opt_lr=0.02)
    n_active = sum(active)
    assert 70 < n_active < 130
    for step, (res, after) in enumerate(run):
        d = res.decisions["expert"]
        if not active[step]:
            assert d.flags & ABSENT and d.scale == 1.0, step
        else:
            assert not d.flags & ABSENT and res.norms["expert"] > 0, step
    c = ctl.counters("expert")
    assert c["finite_steps"] == n_active and c["absent"] == steps - n_active
    assert c["admissions"] < 0.02 * n_active, c


def test_level_shift_is_learned_and_a_spike_after_it_still_caught():
    """A unit whose norm moves up 10x for good (gnmr.h rule 9, on in the
    default config) is clipped on at most 60 steps after the move and
    counted as a level shift; a 50x spike 300 steps later is still flagged
    and clipped. Norms fed by name, as a trainer with its own norms does."""
    gen = torch.Generator().manual_seed(9)
    ctl = G.Controller(["calm", "moves"], config={"max_recovering": 1})
    shift_at, spike_at, clipped = 100, 400, 0
    for step in range(600):
        e = (torch.rand(2, generator=gen) - 0.5) * 0.04
        level = 10.0 if step >= shift_at else 1.0
        moves = level * (50.0 if step == spike_at else 1.0) * (1 + float(e[1]))
        res = ctl.step(norms=[1 + float(e[0]), moves])
        d = res.decisions["moves"]
        if step == spike_at:
            assert "RATIO" in d.flag_names and d.scale < 0.1, d
        elif step >= shift_at:
            clipped += d.scale < 1.0
        assert res.decisions["calm"].scale == 1.0
    assert clipped <= 60, clipped
    assert ctl.counters("moves")["level_shifts"] == 1


def test_groups_that_cannot_be_meant_are_refused():
    m = mlp()
    gen = m[0].parameters()
    list(gen)
    with pytest.raises(ValueError, match="exhausted"):
        G.Controller({"a": gen})
    with pytest.raises(ValueError, match="no parameters"):
        G.Controller({"a": m[0].parameters(), "b": []})
    with pytest.raises(ValueError, match="in unit 'a' and in unit 'b'"):
        G.Controller({"a": m[0].parameters(),
                      "b": [m[2].weight, m[0].bias]})
    with pytest.raises(ValueError, match="one unit"):
        G.Controller({"a": [m[0].weight, m[0].weight]})
    with pytest.raises(TypeError, match="one tensor"):
        G.Controller({"a": m[0].weight})
    with pytest.raises(KeyError, match="'0.wieght'"):
        G.Controller({"0.wieght": "a", "2.weight": "b"},
                     named_parameters=m.named_parameters())
    named = m.named_parameters()
    list(named)
    with pytest.raises(ValueError, match="exhausted"):
        G.Controller(lambda n: "u", named_parameters=named)
    with pytest.raises(ValueError, match="no parameter was mapped"):
        G.Controller(lambda n: None, named_parameters=m.named_parameters())
    ctl = G.Controller({"a": m[0].parameters()})
    with pytest.raises(KeyError, match="no unit 'b'"):
        ctl.recovering("b")
    with pytest.raises(KeyError):
        ctl.attach("b", torch.nn.Identity())
    with pytest.raises(ValueError, match="norms="):
        G.Controller(["a", "b"]).step()


def test_units_none_with_named_parameters_says_what_was_expected():
    m = mlp()
    for units in (None, 3, ["a", "b"]):
        with pytest.raises(TypeError, match="a dict {parameter name: unit "
                           "name} or a function"):
            G.Controller(units, named_parameters=m.named_parameters())


def test_a_step_with_every_unit_absent_warns_once():
    """step() after zero_grad(set_to_none=True): every unit reads absent
    and decides KEEP; the bridge says so, once."""
    import warnings
    m = mlp()
    ctl = G.Controller({"a": m[0].parameters(), "b": m[2].parameters()})
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x, y = next(data(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ((m(x) - y) ** 2).mean().backward()
        ctl.step()  # the right order: no warning
        assert not caught
        for _ in range(3):
            ((m(x) - y) ** 2).mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            res = ctl.step()  # the wrong order
            assert res.absent == ["a", "b"]
    assert len(caught) == 1 and issubclass(caught[0].category,
                                           RuntimeWarning)
    assert "every unit is absent" in str(caught[0].message)
    assert "zero_grad" in str(caught[0].message)


@pytest.mark.parametrize("field,value", [("lock_steps", 0),
                                         ("ratio_threshold", 0.5),
                                         ("history_decay", 1.5),
                                         ("max_recovering", 3)])
def test_config_out_of_range_names_the_field(field, value):
    m = mlp()
    units = {"a": m[0].parameters(), "b": m[2].parameters()}
    with pytest.raises(G.GnmrError) as info:
        G.Controller(units, config={field: value})
    assert info.value.field == field and field in str(info.value)
    assert info.value.code == G.GNMR_ECONFIG
    ctl = G.Controller({"a": m[0].parameters(), "b": m[2].parameters()})
    before = ctl.checkpoint()
    with pytest.raises(G.GnmrError) as info:
        ctl.reconfigure(**{field: value})
    assert info.value.field == field
    assert ctl.checkpoint() == before


def test_module_copied_out_of_the_repository(tmp_path):
    """gnmr_torch.py alone in another folder: a clear error without the
    library (how to build it, GNMR_LIB), and it runs with GNMR_LIB."""
    src = os.path.join(ROOT, "examples", "torch", "gnmr_torch.py")
    dst = tmp_path / "gnmr_torch.py"
    dst.write_text(open(src).read())
    code = ("import torch, gnmr_torch as g\n"
            "p = torch.nn.Parameter(torch.ones(3)); p.grad = torch.ones(3)\n"
            "print(g.Controller({'u': [p]}).step().norms['u'])\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GNMR_LIB", "PYTHONPATH")}

    def run(extra):
        return subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path),
                              env=dict(env, **extra), capture_output=True,
                              text=True, timeout=120)

    r = run({})
    assert r.returncode != 0
    assert "GNMR_LIB" in r.stderr and "make libgnmr" in r.stderr
    r = run({"GNMR_LIB": str(tmp_path / "nowhere.so")})
    assert r.returncode != 0 and "nowhere.so: no such file" in r.stderr
    lib = os.path.join(ROOT, "build", "libgnmr.so")
    r = run({"GNMR_LIB": lib})
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == pytest.approx(3 ** 0.5, rel=1e-7)
    (tmp_path / "libgnmr.so").write_bytes(open(lib, "rb").read())
    r = run({})  # the library beside the module
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == pytest.approx(3 ** 0.5, rel=1e-7)


def test_flag_names_are_the_librarys():
    lib = G.load_library()
    assert [lib.gnmr_flag_name(1 << i).decode()
            for i in range(len(G.FLAGS))] == list(G.FLAGS)


def test_printouts_say_what_each_rule_set_sets():
    """A decision prints its ratio; the step's report prints only what the
    rule set fills (the paper rules set `flagged` alone)."""
    for rule, noise in (("PAPER", False), ("NOISE", True)):
        ctl = G.Controller(["a", "b"], config={
            "rule": rule, "warmup_steps": 2, "max_recovering": 1})
        for step in range(60):
            ctl.step(norms=[1.0 + 0.01 * (step % 3), 1.0])
        res = ctl.step(norms=[50.0, 1.0])
        d = res.decisions["a"]
        assert "a" in res.flagged
        assert ("ratio=%.4g" % d.ratio) in repr(d) and d.ratio > 10
        text = repr(res.report)
        assert res.report.flagged == 1 and "flagged=1" in text
        assert ("rises=" in text) == noise and ("global=" in text) == noise
        if noise:
            assert res.report.rises == 1
