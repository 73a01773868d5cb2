"""Chapter "Length extrapolation" (11): MLM loss of every pretrained variant on inputs longer than
its pretraining length, per length and per position in the input."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book.chapters import common
from pe_lib import extrapolation
from pe_lib.positions import parse_variant, resolve_variants

#: The panels of the per-position figure, by what kind of position information a variant has.
FAMILIES = ("no PE or APE only", "RPE (Shaw / NEZHA)", "APE + relative", "RoPE, ALiBi, T5 bias")


def family(variant: str) -> str:
    """The panel of a variant (one of :data:`FAMILIES`)."""
    parsed = parse_variant(variant)
    if parsed.relative is None:
        return FAMILIES[0]
    if parsed.absolute is not None:
        return FAMILIES[2]
    return FAMILIES[1] if parsed.has_offset_table else FAMILIES[3]


# ----------------------------------------------------------------------------- tables of the payloads
# (the records of pe_lib.extrapolation.length_extrapolation, one payload per variant)


def _label(multiplier: float) -> str:
    return f"{multiplier:g}x"


def loss_table(payloads: Mapping[str, Mapping]) -> pd.DataFrame:
    """Rows: variants; columns ``(quantity, "Nx")`` for quantity ``loss`` and ``perplexity``, NaN
    where the variant cannot run at that length (see :func:`cannot_run`)."""
    rows = {}
    for variant, payload in payloads.items():
        row = {}
        for r in payload["records"]:
            ok = r["status"] == extrapolation.OK
            row[("loss", _label(r["multiplier"]))] = r["loss"] if ok else math.nan
            row[("perplexity", _label(r["multiplier"]))] = r["perplexity"] if ok else math.nan
        rows[variant] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table.rename_axis("variant")


def cannot_run(payloads: Mapping[str, Mapping]) -> pd.DataFrame:
    """Every (variant, length) that cannot run, with the reason."""
    rows = [{"variant": v, "length": r["length"], "multiplier": _label(r["multiplier"]), "reason": r["reason"]}
            for v, payload in payloads.items() for r in payload["records"] if r["status"] == extrapolation.CANNOT_RUN]
    return pd.DataFrame(rows, columns=["variant", "length", "multiplier", "reason"])


def degradation(table: pd.DataFrame, low: str = "1x", high: str | None = None) -> pd.Series:
    """``loss(high) - loss(low)`` per variant from :func:`loss_table` (``high``: the longest
    length), smallest first; variants that cannot run at either length are left out."""
    losses = table["loss"]
    high = high or losses.columns[-1]
    return (losses[high] - losses[low]).dropna().sort_values(kind="stable").rename(f"loss {high} - loss {low}")


def _at(payload: Mapping, multiplier: float | None) -> Mapping | None:
    """The record of ``payload`` at ``multiplier`` (default: the longest), if the variant ran there."""
    records = payload["records"]
    target = multiplier if multiplier is not None else max(r["multiplier"] for r in records)
    return next((r for r in records if r["multiplier"] == target and r["status"] == extrapolation.OK), None)


BUCKET_COLUMNS = ["variant", "length", "multiplier", "start", "end", "centre", "loss", "se", "change", "change_se",
                  "count"]


def bucket_frame(payloads: Mapping[str, Mapping], multiplier: float | None = None) -> pd.DataFrame:
    """Long table of the loss by position bucket at ``multiplier`` (default: the longest of each
    payload), with its paired change against the same tokens at the reference length: columns
    :data:`BUCKET_COLUMNS`. Variants that cannot run there are left out, as are empty buckets."""
    rows = []
    for variant, payload in payloads.items():
        r = _at(payload, multiplier)
        if r is None:
            continue
        rows += [{"variant": variant, "length": r["length"], "multiplier": _label(r["multiplier"]),
                  "start": b["start"], "end": b["end"], "centre": (b["start"] + b["end"] - 1) / 2, "loss": b["loss"],
                  "se": b["se"], "change": b.get("change", math.nan), "change_se": b.get("change_se", math.nan),
                  "count": b["count"]} for b in r["buckets"] if b["count"]]
    return pd.DataFrame(rows, columns=BUCKET_COLUMNS)


INSIDE_BEYOND_COLUMNS = ["loss inside", "loss beyond", "change inside", "change beyond", "change beyond se"]


def inside_beyond(payloads: Mapping[str, Mapping], multiplier: float | None = None) -> pd.DataFrame:
    """At ``multiplier`` (default: the longest of each payload), the loss of the tokens at positions
    inside the pretraining length and beyond it, and the change of each group against the same
    tokens at the reference length (with the standard error of the change beyond); rows: the
    variants that ran there with tokens beyond the pretraining length."""
    rows = {}
    for variant, payload in payloads.items():
        r = _at(payload, multiplier)
        if r is None or r["beyond"] is None:
            continue
        inside, beyond = r["inside"], r["beyond"]
        rows[variant] = dict(zip(INSIDE_BEYOND_COLUMNS, (
            inside["loss"], beyond["loss"], inside.get("change", math.nan), beyond.get("change", math.nan),
            beyond.get("change_se", math.nan))))
    return pd.DataFrame.from_dict(rows, orient="index", columns=INSIDE_BEYOND_COLUMNS).rename_axis("variant")



@dataclass
class LengthExtrapolation:
    """What the chapter shows: the loss ``table`` (``loss`` and ``perplexity`` per length
    multiplier), the ``change`` from 1x to the longest length (smallest first), why a variant
    ``cannot_run`` a length, the per-position ``buckets``, the ``split`` inside / beyond the
    pretraining length and ``cited``, by glue name."""
    names: list[str]
    train_length: int
    table: pd.DataFrame
    change: pd.Series
    cannot_run: pd.DataFrame
    buckets: pd.DataFrame
    split: pd.DataFrame
    cited: dict

    @property
    def multipliers(self) -> list[str]:
        return list(self.table["loss"].columns)

    def shown(self) -> pd.DataFrame:
        """Loss per length, the change to the longest, and perplexity per length, in one table."""
        longest = self.multipliers[-1]
        return pd.concat([self.table["loss"].add_prefix("loss "),
                          self.change.reindex(self.table.index).rename(f"change {longest} - 1x"),
                          self.table["perplexity"].add_prefix("perplexity ")], axis=1)

    def change_text(self, variant: str, at: str | None = None) -> str:
        """The change of ``variant``'s loss from 1x to ``at`` (default: the longest) in nats, or why there is none."""
        if variant not in self.table.index:
            return "not run"
        value = self.table.loc[variant, ("loss", at or self.multipliers[-1])] - self.table.loc[variant, ("loss", "1x")]
        return "cannot run" if math.isnan(value) else f"{value:+.3f}"

    def rank_text(self, variant: str) -> str:
        """'k of n: change' in the ranking by change to the longest length (1: the smallest)."""
        if variant not in self.change.index:
            return self.change_text(variant)
        return f"{list(self.change.index).index(variant) + 1} of {len(self.change)}: {self.change_text(variant)}"


def compute(runner, variants: Sequence[str] = ()) -> LengthExtrapolation:
    """Length extrapolation of ``variants`` (default: the profile's); as stored."""
    names = resolve_variants(variants, runner.profile.variants)
    artifacts = {name: runner.extrapolation(name) for name in names}
    payloads = {name: a.payload for name, a in artifacts.items()}
    first = next(iter(payloads.values()))
    table = loss_table(payloads)
    multipliers = list(table["loss"].columns)
    if "1x" not in multipliers:
        raise ValueError(f"this chapter compares with the pretraining length: the profile's extrapolation_multipliers "
                         f"must include 1, got {multipliers}")
    result = LengthExtrapolation(names, first["train_length"], table, degradation(table),
                                 cannot_run(payloads), bucket_frame(payloads),
                                 inside_beyond(payloads), {})
    lengths = [r["length"] for r in first["records"]]
    result.cited = {
        "n_variants": len(names), "train_length": first["train_length"],
        "lengths": ", ".join(map(str, lengths[:-1])) + f" and {lengths[-1]}" if len(lengths) > 1 else str(lengths[0]),
        "max_positions": runner.profile.model["max_position_embeddings"], "stream_tokens": first["stream_tokens"],
        "scored_tokens": first["scored_tokens"], "bucket": first["bucket"],
        "precision": ", ".join(sorted({p["precision"] for p in payloads.values()})),
        "seed": next(iter(artifacts.values())).provenance["config"]["seed"],
        "mask_percent": 100 * runner.profile.pretrain.mask_prob,
        "wall_s": sum(a.provenance["wall_s"] for a in artifacts.values()),
        "n_cannot_run": result.cannot_run["variant"].nunique(),
        "cannot_run_list": ", ".join(dict.fromkeys(result.cannot_run["variant"])) or "none",
        **_observations(result), **_seed_spread(runner, names)}
    return result


def _seed_spread(runner, names: Sequence[str]) -> dict:
    """How far the MLM loss at any length differs between the pretraining seeds of a variant (the
    chapter shows seed 0): the largest spread, its variant and length, and how many variants have
    several seeds."""
    widest = common.largest_spread(common.seed_spread(common.over_pretraining_seeds(
        runner.profile, names, lambda v, p: loss_table(
            {v: runner.extrapolation(v, p).payload})["loss"].loc[v].to_dict())))
    return {"seed_variants": widest["variants"], "seed_spread_max": widest["value"],
            "seed_spread_variant": widest["variant"], "seed_spread_length": widest["column"]}


def _observations(result: LengthExtrapolation) -> dict:
    """The rankings and changes the prose quotes."""
    table, change, multipliers = result.table, result.change, result.multipliers
    ranked_1x = table[("loss", "1x")].dropna().sort_values()
    second = "2x" if "2x" in multipliers else multipliers[min(1, len(multipliers) - 1)]
    order = result.split["change beyond"].dropna().sort_values()
    split = result.split
    return {
        "longest": multipliers[-1], "best_1x": str(ranked_1x.index[0]), "best_1x_loss": ranked_1x.iloc[0],
        "n_all_lengths": len(change),
        "least_change_variant": str(change.index[0]) if len(change) else "none",
        "least_change": change.iloc[0] if len(change) else math.nan,
        "most_change_variant": str(change.index[-1]) if len(change) else "none",
        "most_change": change.iloc[-1] if len(change) else math.nan,
        "none_change": result.change_text("none"),
        **{f"rank_{v.replace('-', '_')}": result.rank_text(v) for v in ("alibi", "ape-sin", "rpe-learned", "rope", "t5-bias")},
        "second": second, "ape_learned_2x_change": result.change_text("ape-learned", second),
        "n_split": len(order),
        "largest_jump_variant": str(order.index[-1]) if len(order) else "none",
        "largest_jump": order.iloc[-1] if len(order) else math.nan,
        "smallest_jump_variant": str(order.index[0]) if len(order) else "none",
        "smallest_jump": order.iloc[0] if len(order) else math.nan,
        "none_jump": f"{split.loc['none', 'change beyond']:+.3f}" if "none" in split.index else "not run",
    }
