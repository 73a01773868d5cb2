import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pe_book import plots


def test_small_multiples_give_each_line_a_titled_panel_and_switch_off_the_spare_ones():
    x = np.arange(4)
    fig = plots.line_facets({"a": (x, x * 2.0), "b": (x, -x), "c": (x, x ** 2)}, ncols=2, reference=1.0)
    shown = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in shown] == ["a", "b", "c"] and len(fig.axes) == 4
    assert all(len(ax.lines) == 2 for ax in shown)  # the line and its reference
    plt.close(fig)


def test_a_log_axis_is_ticked_at_the_measured_points_alone():
    fig, ax = plt.subplots()
    ax.plot([128, 512, 2048], [1, 2, 3])
    ax.set_xscale("log")
    plots.log_ticks(ax, [512, 128, 2048, 128], lambda v: f"{v:.0f} tokens")
    fig.canvas.draw()
    assert list(ax.get_xticks()) == [128, 512, 2048]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128 tokens", "512 tokens", "2048 tokens"]
    assert not any(t.get_text() for t in ax.xaxis.get_minorticklabels())
    plt.close(fig)


def test_score_panels_wrap_into_rows_that_fit_the_text_column():
    import pandas as pd

    index = pd.MultiIndex.from_product([["none", "ape-learned"], [0], [0, 1]], names=["variant", "pretrain_seed", "seed"])
    columns = ["sst2", "cola", "cloze", "cloze_v2", "average"]
    per_seed = pd.DataFrame(np.arange(len(index) * len(columns), dtype=float).reshape(len(index), -1),
                            index=index, columns=columns)
    fig = plots.score_panels(per_seed, columns, ["none", "ape-learned"], [({c: 1.0 for c in columns}, plots.BASELINE_STYLE)])
    shown = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in shown] == columns and len(fig.axes) == 6  # 2 rows of 3
    assert fig.get_figwidth() == 2.6 * 3 + 2
    plt.close(fig)


def test_effect_trends_draw_each_effect_per_column_with_its_interval_and_say_where_nothing_is_stored():
    effects = pd.DataFrame({"effect": ["a − b", "a − b", "c − b"], "column": ["x", "x", "x"],
                            "tokens": [1e6, 2e6, 1e6], "difference": [1.0, 2.0, -1.0], "low": [0.0, 1.0, float("nan")],
                            "high": [2.0, 3.0, float("nan")]})
    fig = plots.effect_trends(effects, ["x", "y"], [1e6, 2e6, 4e6], ncols=3)
    x, y, spare = fig.axes[:3]
    assert x.get_title() == "x" and y.get_title() == "y" and not spare.axison
    assert [t.get_text() for t in y.texts] == ["nothing stored"] and not x.texts
    assert len(x.containers) == 2, "one error-bar line per effect"
    assert x.containers[0].has_yerr and not x.containers[1].has_yerr, "no interval where the variance is unknown"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["a − b", "c − b"]
    plt.close(fig)
    empty = plots.effect_trends(effects.iloc[:0], ["x"], [1e6])
    assert [t.get_text() for t in empty.axes[0].texts] == ["nothing stored"] and not empty.legends
    plt.close(empty)
