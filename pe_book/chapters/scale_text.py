"""Chapter 13 (scale) in words: the text and the shown tables of its notebook, from what
:func:`pe_book.chapters.scale.compute` and :func:`pe_book.chapters.trend.read` give (a part of
chapter 13 beside :mod:`pe_book.chapters.scale`)."""
from __future__ import annotations

from pe_book.chapters import common, scale


def million_tokens(tokens):
    """A budget in words: "4.1 million tokens"."""
    return f"{tokens / 1e6:.1f} million tokens"


def styled_screen(runs):
    """A fine-tuning screen's table: examples as counts, scores to one decimal, a dash where a run is missing."""
    table = scale.finetune_screen_table(runs)
    return (table.style.format({c: "{:,.0f}" if c[1] == "training examples" else "{:.1f}" for c in table.columns},
                               na_rep="—").set_table_attributes('class="dataframe"'))


def best_runs(runs):
    """A fine-tuning screen's best test score on each task, in words: "sst2 78.9 with 10,000 examples; ..."."""
    return "; ".join(f"{r.task} {r.test:.1f} with {r['training examples']:,} examples"
                     for _, r in scale.best_per_task(runs).iterrows())


def criterion_verdict(value):
    """A criterion's cell: pass, fail, or (None) not decidable."""
    return {True: "pass", False: "fail", None: "not decidable"}[value]


def shown_criteria(criteria):
    """The criteria at each budget (tokens; steps are tokens over the tokens of a step), as shown."""
    shown = criteria.drop(columns="steps").assign(**{key: criteria[key].map(criterion_verdict) for key in ("a", "b", "c")})
    return (shown.style.format({"tokens": "{:,.0f}", "loss_gap": "{:+.3f}", "a_null_rate": "{:.3f}", "monotonicity": "{:+.3f}",
                                "monotonicity_local": "{:+.3f}", "best_classification": "{:.1f}",
                                "minus_bag_of_words": "{:+.1f}"}, na_rep="—")
            .relabel_index([scale.LABELS.get(c, c) for c in shown.columns], axis="columns")
            .hide(axis="index").set_table_attributes('class="dataframe"'))


def affordable_text(row):
    """The largest budget whose priced part fits the hours (a row of study.cpu_costs, or None), in words."""
    if row is None:
        return f"none of the budgets fits {scale.CPU_HOURS:g} hours"
    hours, unpriced = row["total (h)"], int(row["without a measured rate"])
    cost = (f"{hours:.1f} hours" if hours >= 0.05 else "under 0.1 hours" if hours > 0
            else "nothing with a measured rate left to compute")
    if unpriced:
        cost += f", plus {common.plural(unpriced, 'artifact')} whose cost has no measured rate"
    return f"{int(row['tokens']):,} tokens ({int(row['steps']):,} steps): {cost}"


def change_text(change):
    """One fine-tuning setting the cpu profile changes on a task: "epochs 10 against the study's 2"."""
    return f"{change.setting} {change.cpu} against the study's {change.study}"


def caps_text(caps):
    """Caps on training examples (cap -> tasks): "4,000 for cola, sst2 and all for squad"."""
    return " and ".join(f"{'all' if cap is None else f'{cap:,}'} for {', '.join(tasks)}" for cap, tasks in caps.items())


def departures_text(departures):
    """How the cpu profile trains unlike the study apart from its length (scale.Departures), in words."""
    parts = list(departures.settings)
    if departures.finetuning:
        parts.append("fine-tuning of " + "; ".join(f"{task} ({', '.join(map(change_text, changes))})"
                                                    for task, changes in departures.finetuning.items()))
    if departures.precision:
        p = departures.precision
        ran = f", which ran in {p.study_ran_in}" if p.study_ran_in else ""
        parts.append(f"precision ({p.pretraining} for pretraining, {p.finetuning} for fine-tuning, "
                     f"against the study's {p.study}{ran})")
    if departures.caps:
        cpu_caps, study_caps = departures.caps
        parts.append(f"training examples (at most {caps_text(cpu_caps)}, against the study's {caps_text(study_caps)})")
    return "; ".join(parts) or "none"


def standing_text(tokens, smallest):
    """Where a budget stands against the study's smallest budget at which all three criteria hold."""
    if smallest is None:
        return "no stored budget of the study meets all three criteria"
    if tokens == smallest:
        return "the smallest budget of the study at which all three criteria hold"
    side = "below" if tokens < smallest else "above"
    return f"{side} the smallest budget of the study at which all three criteria hold ({million_tokens(smallest)})"


def below_text(unmet):
    """The criteria that do not hold at each smaller budget of the study (tokens -> criteria), in words."""
    if not unmet:
        return "the study stores no smaller budget"
    return "; ".join(f"at {million_tokens(tokens)} "
                     + (f"it fails or cannot decide {', '.join(f'({k})' for k in keys)}" if keys else "all three hold")
                     for tokens, keys in unmet.items())


def spending_text(s):
    """What the cpu profile's run has cost and what the rest will (scale.Spending), in words."""
    against = f"{'within' if s.total_hours <= scale.CPU_HOURS else 'over'} the {scale.CPU_HOURS:g} hours asked"
    if s.stored == s.planned:
        return f"{s.spent_hours:.1f} hours for all {s.stored} artifacts (the sum of their recorded wall times), {against}"
    unpriced = f", and {s.unpriced} artifacts have no measured rate yet" if s.unpriced else ""
    return (f"{s.spent_hours:.1f} hours for the {s.stored} of {s.planned} artifacts stored; the other "
            f"{s.planned - s.stored} are estimated at {s.rest_hours:.1f} hours (at the rates its own artifacts "
            f"measured, the study's where it has none yet){unpriced}: {s.total_hours:.1f} hours in all, {against}")


def shared_text(shared):
    """The models the study and the cpu profile both hold at its budget (scale.SharedModels), in words."""
    if shared is None:
        return "no model of the cpu profile is stored yet"
    taken = f" ({shared.taken} more the study took from the cpu profile)" if shared.taken else ""
    if not shared.trained_twice:
        return ("the study and the cpu profile trained no model twice at this budget yet" + taken if shared.taken
                else "the study and the cpu profile share no stored model at this budget yet")
    gap = "" if shared.same_loss == shared.trained_twice else f"; the largest difference is {shared.largest_gap:.2e} nats"
    return (f"{shared.same_loss} of the {shared.trained_twice} models that both trained (same variant and pretraining "
            f"seed) have the same validation loss to the last bit{gap}{taken}")


def trend_status(t, trend_profile: str) -> str:
    """What the trend's runs hold, in words (t: a :class:`pe_book.chapters.trend.Trend`, or None
    when the book leaves it out; ``trend_profile``: the profile they were read from)."""
    if t is None:
        return ("not part of this book (the parameter `trend_profile` is empty; the cpu book sets it to the "
                "profile `trend`)")
    reference = (f"each run's variance is borrowed from profile {t.cited['trend_reference']}"
                 if t.cited["trend_reference"] != "none" else "no profile lends a variance, so no interval is drawn")
    return (f"profile {trend_profile} holds {t.cited['trend_runs']} of its {t.cited['trend_planned']} fine-tunings "
            f"({t.cited['trend_variants']}; budgets {t.cited['trend_budgets']} tokens); {reference}")
