"""pe_book.plateau: none's plateau, its margin from none's seeds, when a curve leaves it, and the
summary and rank correlation over seeds."""
import math

import numpy as np
import pandas as pd
import pytest

from pe_book import plateau

STEPS = (500, 1000, 1500, 2000, 2500, 3000)
#: none's three seeds: a falling plateau, the seeds 0.01 apart at step 1,500 (SD 0.01) and 0.04 apart
#: at step 2,500 (SD 0.02), equal elsewhere.
NONE = [dict(zip(STEPS, losses)) for losses in ([6.3, 6.1, 6.01, 5.95, 5.94, 5.9],
                                                [6.3, 6.1, 6.00, 5.95, 5.92, 5.9],
                                                [6.3, 6.1, 5.99, 5.95, 5.90, 5.9])]


def base(k=plateau.K, floor=plateau.FLOOR) -> plateau.Plateau:
    return plateau.plateau(NONE, k, floor)


def test_the_plateau_is_nones_mean_and_the_margin_k_times_its_largest_seed_sd():
    line = base()
    assert line.steps == STEPS and line.seeds == 3
    assert line.loss == pytest.approx((6.3, 6.1, 6.0, 5.95, 5.92, 5.9))
    assert line.sd_max == pytest.approx(0.02)  # step 2,500: 5.94, 5.92, 5.90
    assert line.margin == pytest.approx(3 * 0.02) and not line.from_floor
    floored = base(floor=0.1)
    assert floored.margin == 0.1 and floored.from_floor
    one = plateau.plateau(NONE[:1])  # one seed: the spread is unknown, the floor holds
    assert math.isnan(one.sd_max) and one.margin == plateau.FLOOR and one.from_floor
    with pytest.raises(ValueError, match="at least one"):
        plateau.plateau([])


def test_a_curve_that_never_leaves_the_plateau_did_not_leave():
    line = base()
    stays = {s: x - 0.05 for s, x in line.line().items()}  # below the plateau, but within the margin (0.06)
    assert plateau.escape_step(stays, line) is None
    table = plateau.escapes({("none", 0): NONE[0], ("ape-learned", 0): stays}, line)
    assert table.loc[("ape-learned", 0), "escape"] is None  # "did not leave", never a step
    assert plateau.escape_text(table.loc[("ape-learned", 0), "escape"]) == "did not leave"
    assert all(plateau.escape_step(c, line) is None for c in NONE), "none's own seeds stay on their plateau"


def test_a_curve_leaves_at_the_first_step_from_which_it_stays_below():
    line = base()
    leaves = {s: x - (0.5 if s >= 2000 else 0.0) for s, x in line.line().items()}
    assert plateau.escape_step(leaves, line) == 2000
    dips = {**leaves, 1000: line.line()[1000] - 0.5}  # a dip that comes back does not count
    assert plateau.escape_step(dips, line) == 2000
    spikes = {**leaves, 2500: 7.0}  # a spike back above: it left for good only at 3,000
    assert plateau.escape_step(spikes, line) == 3000
    late = {**{s: x for s, x in line.line().items()}, 3000: 5.0}
    assert plateau.escape_step(late, line) == 3000  # leaves at its last evaluation
    returns = {**leaves, 3000: 5.9}
    assert plateau.escape_step(returns, line) is None  # back on the plateau at its budget: did not leave
    assert plateau.escape_step({**leaves, 3500: 1.0}, line) == 2000  # a step the plateau lacks is not judged
    edge = {s: x - line.margin for s, x in line.line().items()}  # exactly the margin below is not below it
    assert plateau.escape_step(edge, line) is None


def test_families():
    assert [plateau.family(v) for v in ("none", "ape-sin", "rpe-learned", "ape-learned+rpe-sin", "rope", "alibi",
                                        "t5-bias", "rpe-learned+untie-cls")] == [
        plateau.NONE, plateau.APE, plateau.RPE, plateau.APE_RELATIVE, plateau.MODERN, plateau.MODERN, plateau.MODERN,
        plateau.UNTIED]
    assert plateau.NONE not in plateau.RELATIVE_FAMILIES and plateau.APE not in plateau.RELATIVE_FAMILIES


def curves_leaving(steps_by_run):
    """Made-up curves that leave none's plateau at the given steps (None: never)."""
    line = base().line()
    return {run: {s: x - (0.5 if at is not None and s >= at else 0.0) for s, x in line.items()}
            for run, at in steps_by_run.items()}


def test_the_summary_per_variant():
    runs = {("none", 0): None, ("none", 1): None, ("ape-learned", 0): 1000, ("ape-learned", 1): 2000,
            ("ape-learned", 2): 3000, ("ape-sin", 0): 1500, ("ape-sin", 1): 2500, ("rope", 0): 500,
            ("alibi", 0): 1000, ("alibi", 1): None, ("rpe-learned", 0): 500, ("rpe-learned", 1): 500}
    table = plateau.escapes(curves_leaving(runs), base())
    assert table["escape"].tolist() == list(runs.values()) and (table["budget"] == 3000).all()
    summary = plateau.summary(table)
    assert summary.loc["none", "left"] == 0 and summary.loc["none", "interval"] == "did not leave"
    ape = summary.loc["ape-learned"]
    assert (ape["seeds"], ape["left"], ape["steps"], ape["mean"]) == (3, 3, "1,000, 2,000, 3,000", 2000)
    # t(0.975, 2) x SD 1000 / sqrt(3) = 2,484 either side, clipped to the steps evaluated (500 to 3,000)
    assert ape["interval"] == "95% t" and ape["low"] == 500 and ape["high"] == 3000
    narrow = plateau.summary(table, alpha=0.5).loc["ape-learned"]  # t(0.75, 2) = 0.8165: within the steps
    assert narrow["low"] == pytest.approx(2000 - 0.8164966 * 1000 / math.sqrt(3)) and narrow["interval"] == "50% t"
    sin = summary.loc["ape-sin"]
    assert (sin["mean"], sin["low"], sin["high"], sin["interval"]) == (2000, 1500, 2500, "range")
    assert math.isnan(summary.loc["rope", "low"]) and summary.loc["rope", "interval"] == "none"
    alibi = summary.loc["alibi"]  # one seed did not leave: no mean of the others
    assert alibi["left"] == 1 and math.isnan(alibi["mean"]) and alibi["interval"] == "not every seed left"
    shown = plateau.shown(summary)["mean [interval]"]
    assert shown["ape-sin"] == "2,000 (range 1,500 to 2,500)" and shown["rope"] == "500 (one seed)"
    assert shown["alibi"] == "1 of 2 left" and shown["none"] == "did not leave"
    assert shown["rpe-learned"] == "500 (every seed)" and shown["ape-learned"] == "2,000 [500, 3,000] (95% t)"
    relative = plateau.family_steps(table, plateau.RELATIVE_FAMILIES)
    assert relative == {"n": 5, "left": 4, "first": 500, "last": 1000, "last_variant": "alibi"}
    assert plateau.family_steps(table, [plateau.UNTIED]) == {"n": 0, "left": 0, "first": math.nan, "last": math.nan,
                                                             "last_variant": ""}


def test_the_rank_correlation_of_escape_steps_and_scores_over_the_ape_seeds():
    runs = {("none", 0): None, ("ape-learned", 0): 1000, ("ape-learned", 1): 2000, ("ape-sin", 0): 3000,
            ("ape-sin", 1): None, ("rpe-learned", 0): 500}
    table = plateau.escapes(curves_leaving(runs), base())
    index = pd.MultiIndex.from_tuples([("ape-learned", 0), ("ape-learned", 1), ("ape-sin", 0), ("ape-sin", 1),
                                       ("rpe-learned", 0)])
    scores = pd.DataFrame({"falls": [90.0, 80.0, 70.0, 60.0, 0.0], "rises": [1.0, 2.0, 3.0, 4.0, 99.0],
                           "constant": [5.0] * 5, "short": [1.0, 2.0, np.nan, np.nan, 3.0]}, index=index)
    rho = plateau.rank_correlation(table, scores)
    # the seed that did not leave ranks last; rpe-learned (not APE only) is left out
    assert rho.loc["falls", "rho"] == pytest.approx(-1.0) and rho.loc["falls", "n"] == 4
    assert rho.loc["rises", "rho"] == pytest.approx(1.0) and rho.loc["falls", "p"] < 0.01
    assert math.isnan(rho.loc["constant", "rho"]) and math.isnan(rho.loc["short", "rho"])
    assert rho.loc["short", "n"] == 2
