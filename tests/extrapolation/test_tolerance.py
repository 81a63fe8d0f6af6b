"""Value tolerances from the spread of a claim over seeds."""

from __future__ import annotations

import pytest

from implicit_bias.claims import Ledger, compare
from implicit_bias.extrapolation.tolerance import set_seed_range_vtols


def _ledger(value: float) -> Ledger:
    led = Ledger("x/y")
    led.above("a", "s", "stat", "p", value, 0.0, bearing="control", origin="prior")
    led.above("b", "s", "stat", "p", value, 0.0, bearing="control", origin="prior")
    return led


def test_vtol_is_a_fraction_of_the_seed_range_and_compare_uses_it():
    ref = _ledger(0.5)
    whole = _ledger(0.5)
    set_seed_range_vtols(whole, {"a": 0.4})  # default: the whole range over seeds 0-4
    assert whole["a"].vtol == pytest.approx(0.4)
    set_seed_range_vtols(ref, {"a": 0.4}, fraction=0.25)
    assert ref["a"].vtol == pytest.approx(0.1) and ref["b"].vtol is None
    near, far = _ledger(0.59), _ledger(0.75)
    payload = lambda led: {"claims": [c.__dict__ | {"items": list(c.items)} for c in led.claims]}
    assert not [p for p in compare(payload(ref), payload(near)) if p.startswith("a:")]
    assert [p for p in compare(payload(ref), payload(far)) if p.startswith("a:")]


def test_bad_input_is_refused():
    led = _ledger(0.5)
    with pytest.raises(KeyError):
        set_seed_range_vtols(led, {"nope": 0.1})
    with pytest.raises(ValueError):
        set_seed_range_vtols(led, {"a": 0.0})
    with pytest.raises(ValueError):
        set_seed_range_vtols(led, {"a": 0.1}, fraction=0.0)
    set_seed_range_vtols(led, {"a": 0.1})
    with pytest.raises(ValueError):
        set_seed_range_vtols(led, {"a": 0.1})
