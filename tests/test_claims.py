"""The claims ledger: verdicts, formatting, JSON."""

from __future__ import annotations

import json
import math

import pytest

from implicit_bias.claims import Claim, Ledger, ascii_math, compare

NAN, INF = float("nan"), float("inf")


def verdict(method: str, *args, **kw) -> str:
    led = Ledger("t")
    assert getattr(led, method)("c", "src", "stmt", "paper", *args, **kw) is None  # no stray repr
    return led["c"].verdict


def test_close() -> None:
    assert verdict("close", 1.05, 1.0, atol=0.1) == "PASS"
    assert verdict("close", 1.15, 1.0, atol=0.1) == "FAIL"
    assert verdict("close", 105.0, 100.0, rtol=0.05) == "PASS"  # bound atol + rtol * |target|
    assert verdict("close", 106.0, 100.0, rtol=0.05) == "FAIL"
    assert verdict("close", 0.9, 1.0, atol=0.05, rtol=0.05) == "PASS"
    assert verdict("close", 1.0, 1.0) == "PASS"  # exact equality with zero tolerance
    assert verdict("close", NAN, 1.0, atol=INF) == "FAIL"
    assert verdict("close", INF, INF, atol=1.0) == "FAIL"


def test_below_above_between() -> None:
    assert verdict("below", 0.5, 1.0) == "PASS"
    assert verdict("below", 1.0, 1.0) == "FAIL"  # strict
    assert verdict("below", NAN, 1.0) == "FAIL"
    assert verdict("below", -INF, 1.0) == "FAIL"
    assert verdict("above", 2.0, 1.0) == "PASS"
    assert verdict("above", 1.0, 1.0) == "FAIL"  # strict
    assert verdict("above", NAN, 1.0) == "FAIL"
    assert verdict("above", INF, 1.0) == "FAIL"
    assert verdict("between", 1.0, 1.0, 2.0) == "PASS"  # closed interval
    assert verdict("between", 2.0, 1.0, 2.0) == "PASS"
    assert verdict("between", 2.5, 1.0, 2.0) == "FAIL"
    assert verdict("between", NAN, -INF, INF) == "FAIL"


def test_holds() -> None:
    assert verdict("holds", "3 of 3", True) == "PASS"
    assert verdict("holds", "2 of 3", False) == "FAIL"
    import numpy as np

    led = Ledger("t")
    led.holds("c", "s", "st", "p", "x", np.bool_(True))
    assert led["c"].passed is True
    with pytest.raises(KeyError, match="no claim 'nope'"):
        led["nope"]


def test_measured_accepts_tensors_and_numpy() -> None:
    import numpy as np
    import torch

    led = Ledger("t")
    led.close("a", "s", "st", "p", torch.tensor(0.5, dtype=torch.float64), 0.5)
    led.below("b", "s", "st", "p", np.float32(0.1), 1.0)
    assert led["a"].passed and led["b"].passed
    assert led.claims[1].measured == "0.1"


def test_duplicate_id_raises() -> None:
    led = Ledger("t")
    led.above("x", "s", "st", "p", 1.0, 0.0)
    with pytest.raises(ValueError, match="duplicate claim id 'x'"):
        led.below("x", "s", "st", "p", 1.0, 2.0)
    assert len(led.claims) == 1


def make_ledger() -> Ledger:
    led = Ledger("part/01_slug")
    led.close("lemma3", "Lemma 3", "the invariant is conserved", "exactly 0", 1.23456e-9, 0.0, atol=1e-6,
              items="lemma3", bearing="supports")
    led.below("rank", "Fig. 2", "the rank drops", "rank 1", 0.31415, 0.5, items=["fig2", "thm1"],
              bearing="qualifies", proxy=True)
    led.between("rho", "Thm 1", "rho stays in range", "[0.5, 1]", NAN, 0.5, 1.0, items="thm1",
                bearing="contradicts")
    led.holds("order", "Sec. 4", "deeper is lower rank", "monotone", "3 < 5 < 8", True)
    return led


def test_table_format_is_stable() -> None:
    expected = """\
id      source   bearing            paper      measured   tolerance         verdict
------  -------  -----------------  ---------  ---------  ----------------  -------
lemma3  Lemma 3  supports           exactly 0  1.23e-09   |x - 0| <= 1e-06  PASS
rank    Fig. 2   qualifies (proxy)  rank 1     0.314      < 0.5             PASS
rho     Thm 1    contradicts        [0.5, 1]   nan        in [0.5, 1]       FAIL
order   Sec. 4   -                  monotone   3 < 5 < 8  exact             PASS
3 of 4 claims hold.

Statements:
  lemma3: the invariant is conserved
  rank: the rank drops
  rho: rho stays in range
  order: deeper is lower rank"""
    led = make_ledger()
    assert led.table() == expected
    assert not led.all_passed
    assert make_ledger().table() == expected  # deterministic


def test_report_prints_the_table(capsys) -> None:
    led = make_ledger()
    led.report()
    assert led.table() in capsys.readouterr().out


def test_json_round_trip() -> None:
    led = make_ledger()
    data = json.loads(led.to_json())
    assert data["chapter"] == "part/01_slug"
    assert [r["verdict"] for r in data["claims"]] == ["PASS", "PASS", "FAIL", "PASS"]
    rebuilt = [Claim.from_dict(r) for r in data["claims"]]
    assert rebuilt[1].items == ("fig2", "thm1") and rebuilt[1].proxy and rebuilt[1].bearing == "qualifies"
    assert rebuilt == led.claims
    assert json.loads(json.dumps(data)) == data
    assert math.isnan(float(data["claims"][2]["measured"]))  # NaN travels as the string "nan"


def test_all_passed_on_empty_and_passing_ledgers() -> None:
    led = Ledger("t")
    assert led.all_passed
    led.above("a", "s", "st", "p", 1.0, 0.0)
    assert led.all_passed
    assert "1 of 1 claims hold." in led.table()


def test_bearing_must_be_known() -> None:
    with pytest.raises(ValueError, match="bearing must be one of"):
        Ledger("t").above("x", "s", "st", "p", 1.0, 0.0, items="thm1", bearing="agrees")


def test_html_escapes_and_marks_verdicts() -> None:
    led = make_ledger()
    led.holds("esc", "s", "a < b & c", "p", "<x>", True, items="i", bearing="control")
    page = led.html()
    assert "a &lt; b &amp; c" in page and "&lt;x&gt;" in page
    assert page.count('class="claim-fail"') == 1 and page.count('class="claim-pass"') == 4
    assert "bearing-contradicts" in page and "4 of 5 claims hold." in page


def test_data_used_is_printed_and_glued() -> None:
    led = make_ledger()
    led.uses_data("the digits (fallback: MNIST not found)")
    assert "Data: the digits (fallback: MNIST not found)" in led.table()
    assert json.loads(led.to_json())["data"] == "the digits (fallback: MNIST not found)"
    assert "Data: the digits" in led.html()
    assert "Data:" not in make_ledger().table()


def test_numeric_claims_record_value_region_and_margin() -> None:
    led = make_ledger()
    lemma3, rank, rho, order = led.claims
    assert lemma3.value == pytest.approx(1.23456e-9) and (lemma3.lo, lemma3.hi) == (-1e-6, 1e-6)
    assert lemma3.margin == pytest.approx(1e-6 - 1.23456e-9)
    assert (rank.lo, rank.hi) == (None, 0.5) and rank.margin == pytest.approx(0.5 - 0.31415)
    assert rho.value is None and rho.margin is None  # NaN: no number, no margin
    assert order.value is None and order.margin is None
    led.above("up", "s", "st", "p", 0.8, 1.0)
    assert led["up"].margin == pytest.approx(-0.2)  # failing side: negative
    led.holds("count", "s", "st", "p", "4 of 5", True, value=4, lo=3)
    assert led["count"].margin == 1.0 and led["count"].hi is None


def test_origin_must_name_a_known_kind() -> None:
    led = Ledger("t")
    led.below("a", "s", "st", "p", 0.1, 1.0, origin="after-seeds: lowered from 2 after seed 3")
    assert led["a"].origin_kind == "after-seeds"
    led.below("b", "s", "st", "p", 0.1, 1.0, origin="theory")
    assert led["b"].origin_kind == "theory"
    with pytest.raises(ValueError, match="origin must start with one of"):
        led.below("c", "s", "st", "p", 0.1, 1.0, origin="tuned")


def _payload(led: Ledger) -> dict:
    return json.loads(led.to_json())


def test_compare_accepts_machine_noise_and_rejects_real_changes() -> None:
    def ledger(value: float, bearing: str = "supports", bound: float = 0.5, vtol=None) -> Ledger:
        led = Ledger("t")
        led.below("x", "s", "st", "p", value, bound, bearing=bearing, vtol=vtol)
        led.holds("h", "s", "st", "p", f"{value:.5f} somewhere", True)
        return led

    ref = _payload(ledger(0.300))
    assert compare(ref, _payload(ledger(0.300))) == []
    assert compare(ref, _payload(ledger(0.320))) == []  # within 10% of 0.32 + 10% of 0.5
    problems = compare(ref, _payload(ledger(0.400)))
    assert len(problems) == 1 and problems[0].startswith("x: value 0.4 is not within")
    assert compare(ref, _payload(ledger(0.400, vtol=0.2))) != []  # only the committed vtol counts
    assert compare(_payload(ledger(0.3, vtol=0.2)), _payload(ledger(0.400))) == []
    flipped = compare(ref, _payload(ledger(0.6)))  # the verdict flips: reported with the numbers
    assert any(p.startswith("x: verdict is 'FAIL', committed 'PASS'") for p in flipped)
    assert compare(ref, _payload(ledger(0.3, bearing="qualifies"))) == [
        "x: bearing is 'qualifies', committed 'supports'"]
    other = Ledger("t")
    other.below("y", "s", "st", "p", 0.3, 0.5)
    assert "claim ids differ: missing ['x', 'h'], new ['y']" in compare(ref, _payload(other))[0]


def test_compare_near_zero_uses_the_threshold_scale() -> None:
    def ledger(value: float) -> dict:
        led = Ledger("t")
        led.close("drift", "s", "st", "p", value, 0.0, atol=1e-6)
        return _payload(led)

    assert compare(ledger(1e-15), ledger(5e-15)) == []  # 400% apart, but both ~0 on a 1e-6 scale
    assert compare(ledger(1e-15), ledger(5e-7)) != []


def test_a_falsifier_is_shown_with_its_row_and_travels_in_json() -> None:
    """``falsifier=`` is shown (escaped) with its row on the site and in the text table, survives
    the JSON round trip, and a claim without one writes no ``falsifier`` key (the glued ledgers of
    older notebooks compare equal); ``verifies`` is a known bearing."""
    led = Ledger("t")
    led.below("f", "Lemma 2", "the identity holds", "exact", 1e-15, 1e-10, items="lem2", bearing="verifies",
              origin="theory", falsifier="a residual above 1e-10 & <b>not</b> round-off")
    led.above("g", "Fig. 1", "the gap opens", "a gap", 2.0, 1.0, items="fig1", bearing="supports", origin="prior")
    page = led.html()
    assert page.count('class="claim-falsifier"') == 1
    assert "&amp; <span class=\"nowrap\">&lt;b&gt;not&lt;/b&gt;</span> round-off" in page and "<b>not</b>" not in page
    assert "  f: the identity holds [fails if: a residual above 1e-10 & <b>not</b> round-off]" in led.table()
    assert "  g: the gap opens\n" in led.table() + "\n"  # no falsifier: nothing appended
    rows = json.loads(led.to_json())["claims"]
    assert "falsifier" in rows[0] and "falsifier" not in rows[1]
    assert [Claim.from_dict(r) for r in rows] == led.claims
    assert led["f"].bearing == "verifies" and "verifies" in page


@pytest.mark.parametrize("text, found", [
    ("the excess eta^2 falls", ["eta"]),                      # a Greek name (and its power)
    ("the step size grows like L^-2", ["L^-"]),
    ("x^T x stays positive", ["x^T"]),
    ("||theta||^2 = kL", ["||", "theta", "||"]),
    ("a ratio <= 0.8 or >= 1, R1 != 0", ["<=", ">=", "!="]),
    ("the best speed is sqrt(2) - 1", ["sqrt("]),
    ("at lambda = 1e-3 the rank of W_mid is 2", ["lambda", "W_m"]),
    ("sigma_k of the Jacobian", ["sigma_k"]),
])
def test_ascii_math_is_found(text: str, found: list[str]) -> None:
    """ASCII math in a statement (what the page would show raw instead of rendering) is found."""
    assert ascii_math(text) == found


@pytest.mark.parametrize("text", [
    r"the ratio $\lVert W\rVert_2 / \lVert W\rVert_F$ stays below $1$ at $\eta^2 \le 10^{-3}$",
    r"$Q_v$ minus the accumulated $\lambda\,\lVert\theta\rVert^2$; at most $\sqrt2 - 1$",
    "the alphabet of a metallic beta-version: sigmoid etas, lambdas and thetas in a tautology",
    "its data are metadata; a theta-shaped rhombus, the phrase 'at most', one-hot + 3 (mean - 2 SE)",
    "depth 8 minus depth 2, bias start x length, 28x28 images, 1e-3, 2,000 steps, the model_dir option",
    "a falsifiable claim: the KL (to the OCS) falls, 1/L coefficient, log-log slope in [-2.1, -1.9]",
])
def test_ascii_math_spares_english_and_inline_math(text: str) -> None:
    """Ordinary English (words holding a Greek name, ids, numbers, ranges) and math written as
    ``$...$`` are not reported."""
    assert ascii_math(text) == []
