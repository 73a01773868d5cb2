"""The README's headline: one key figure and the headline table of a profile, generated from its
committed results, between two markers of ``README.md`` (``pe-book publish readme``).

Its first line states the scale every verdict holds at (model size, pretraining tokens, tasks,
seeds). The figure is the paper's (learned dot products of position and offset vectors after
pretraining, chapter 04); the table is the verdict on each of the paper's claims with its smallest
and largest effect and their intervals (each saying its level), its mean difference and the
smallest effect the seeds could detect, followed by which columns the models learned beyond every
order-free baseline (the rules that read word order beside them as references, never bars), the
rule's simulated false-verdict rate and power, and the best variant against the baselines
(chapter 08). Nothing is
computed: a profile whose results are incomplete is refused. ``pe-book publish readme --check``
(in ``make check-keys``) fails when the README's block or figure is no longer what the results
and this code give.
"""
from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pe_book import plots
from pe_book.chapters import findings
from pe_book.chapters.paper_figure import figure_panels
from pe_book.publishing.publish import PublishError, pages_url, repository_url
from pe_book.verdicts import gate, intervals, rule
from pe_lib.io import atomic_write_bytes, atomic_write_text

START, END = "<!-- headline:start -->", "<!-- headline:end -->"
ROOT = Path(__file__).resolve().parents[2]
COLUMNS = {"claim": "claim", "verdict": "verdict", "effects": "effects [interval] (points)",
           "mean difference": "mean difference (points)", "MDE": "smallest detectable (points)"}


def markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``table``'s columns (numbers to one decimal, NaN as —)."""
    def cell(value) -> str:
        if isinstance(value, float):
            return "—" if math.isnan(value) else f"{value:+.1f}"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def control_text(row) -> str:
    """``", +12.3 over none (low +4.5, 95% interval)"``: the best variant's gap to the control
    variant of a testability row, when the row has one and a gap was measured."""
    if not isinstance(row["control"], str) or row["control"] == row["best variant"] or row["gap"] != row["gap"]:
        return ""
    return f", {row['gap']:+.1f} over {row['control']} (low {row['gap low']:+.1f}, {intervals.interval_label(row['level'])})"


def reference_text(row) -> str:
    """``"; neighbour match 82.5, which reads word order (a reference, not a bar): within the
    interval"``: the rule that reads word order beside a testability row and where its best
    variant stands against it, when the row has one."""
    if not isinstance(row["reference"], str):
        return ""
    return (f"; {row['reference']} {row['reference score']:.1f}, which reads word order (a reference, not a bar): "
            f"{row['against reference']}")


def learned_line(column: str, row) -> str:
    """One column of the gate (a row of :func:`pe_book.verdicts.testability.testability`) in words."""
    interval = ("no interval: pretraining variance unknown" if row["low"] != row["low"]
                else f"low {row['low']:.1f}, {intervals.interval_label(row['level'])}")
    return (f"{column} ({row['tasks']}): " + ("learned: " if row["testable"] else "not testable: ")
            + f"{row['best variant']} {row['mean']:.1f} ({interval}) against {row['baseline']} "
            f"{row['baseline score']:.1f}" + control_text(row) + reference_text(row))


def verdict_cell(verdict: str, not_testable_on: str) -> str:
    """A verdict, with the columns it does not rest on when it rests on others."""
    if not not_testable_on or verdict.startswith(rule.NOT_TESTABLE):
        return verdict
    return f"{verdict} (not testable: {not_testable_on})"


def headline_block(runner, figure: str) -> str:
    """The README block (markers included): ``figure`` (a path relative to the README) and the table."""
    result = findings.compute(runner)
    table = result.verdicts.assign(verdict=[verdict_cell(v, on) for v, on in zip(result.verdicts["verdict"],
                                                                                 result.verdicts["not testable on"])])
    table = table[list(COLUMNS)].rename(columns=COLUMNS)
    profile = runner.profile.name
    learned = [learned_line(column, row) for column, row in result.testable.iterrows() if column in result.groups]
    return "\n".join([
        START,
        f"**Scale of the `{profile}` run, at which every verdict below holds:** {result.cited['scale_text']}.",
        "",
        f"![The paper's figure after pretraining, profile {profile}]({figure})",
        "",
        f"The paper's claims against the `{profile}` run (verdicts by the rule of the findings chapter, only on "
        "columns the models learned beyond every order-free baseline and, where the tasks need word order, beyond "
        "`none`):",
        "",
        markdown(table),
        "",
        "Which columns the models learned (best variant, chosen on the validation split among the variants with "
        f"at least {gate.GATE_SEEDS} pretraining seeds, against the best order-free baseline of each task and, "
        "where the tasks need word order, its gap to `none`, the variant that cannot see order; a rule that reads "
        "word order is a cheap model that uses positions, shown as a reference and never a bar):",
        "",
        *(f"- {line}" for line in learned),
        "",
        f"The rule on simulated runs of this design: {result.cited['operating_text']}.",
        "",
        f"Against the baselines: {result.cited['baselines_text']}",
        "",
        f"Generated by `pe-book publish readme --profile {profile}` from `results/{runner.profile.results_folder}`; "
        f"the book: {pages_url(repository_url(ROOT))}",
        END,
    ])


def figure_png(runner) -> bytes:
    """The paper's figure (chapter 04, after pretraining) as PNG bytes."""
    fig = plots.position_maps(figure_panels(runner, "trained"), ncols=3, size=(10 / 3, 3.5))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue()


def rendered(runner, root: Path = ROOT) -> tuple[str, Path, bytes]:
    """What ``root/README.md`` and its figure should hold for ``runner``'s complete store: the
    README's text, the figure's path and its bytes."""
    readme, profile = root / "README.md", runner.profile.name
    text = readme.read_text()
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise PublishError(f"{readme} needs one '{START}' line and one '{END}' line after it, where the headline goes")
    missing = sum(not a.stored for a in runner.plan())
    if missing:
        raise PublishError(f"the results of profile {profile} are incomplete ({missing} artifacts to compute): "
                           f"run `pe-book run --profile {profile}` first")
    figure = Path("book") / "_static" / f"headline-{profile}.png"
    block = headline_block(runner, figure.as_posix())
    return text[:text.index(START)] + block + text[text.index(END) + len(END):], root / figure, figure_png(runner)


def update_readme(runner, root: Path = ROOT) -> Path:
    """Rewrite the headline block of ``root/README.md`` and its figure from ``runner``'s complete store."""
    text, figure, png = rendered(runner, root)
    atomic_write_bytes(figure, png)  # creates the folder
    atomic_write_text(root / "README.md", text)
    return root / "README.md"


def check_readme(runner, root: Path = ROOT) -> None:
    """Refuse a README whose headline block or figure is not what ``runner``'s store gives now (the
    results or the code that summarises them changed since ``pe-book publish readme``)."""
    text, figure, png = rendered(runner, root)
    profile = runner.profile.name
    stale = [name for name, same in (("table", text == (root / "README.md").read_text()),
                                     (figure.name, figure.exists() and figure.read_bytes() == png)) if not same]
    if stale:
        raise PublishError(f"the README's headline ({' and '.join(stale)}) is not what {runner.store.root} gives; "
                           f"run `pe-book publish readme --profile {profile}` and commit README.md and {figure.relative_to(root)}")
