"""pe_book.publishing.headline: the README's figure and table, written between its markers from a
complete store."""
import pytest

from pe_book.publishing import headline
from pe_book.publishing.publish import PublishError

ROOT_PYPROJECT = "[project.urls]\nRepository = \"https://github.com/pe-book/pe-lib\"\n"


@pytest.fixture
def root(tmp_path):
    (tmp_path / "pyproject.toml").write_text(ROOT_PYPROJECT)
    (tmp_path / "README.md").write_text(f"# title\n\nbefore\n{headline.START}\nold\n{headline.END}\nafter\n")
    return tmp_path


def test_the_headline_replaces_the_block_and_nothing_else(store, root, monkeypatch):
    monkeypatch.setattr(headline, "ROOT", root)
    headline.update_readme(store, root)
    text = (root / "README.md").read_text()
    assert text.startswith("# title\n\nbefore\n<!-- headline:start -->\n**Scale of the `test` run, at which every verdict "
                           "below holds:** 2-layer, 16-wide models of ") and text.endswith("<!-- headline:end -->\nafter\n")
    first = text.split("\n")[4]  # the block's first line states the scale: size, tokens, tasks, seeds
    assert "tokens each; 2 tasks (sst2, squad" in first and "fine-tuning seed" in first
    assert "\nold\n" not in text and (root / "book" / "_static" / "headline-test.png").stat().st_size > 1000
    assert "| cls-ape-best" not in text and "| Fully learnable APE is the best single PE" in text
    assert "https://pe-book.github.io/pe-lib/" in text
    assert "- order-free classification (sst2): " in text and "- span (squad): " in text and "bag of words " in text
    assert "The rule on simulated runs of this design: " in text
    assert "Against the baselines: On the order-free classification column, " in text
    assert "beyond every order-free baseline" in text and "every baseline" not in text.replace("every order-free", "")
    headline.update_readme(store, root)
    assert (root / "README.md").read_text() == text, "a second run writes the same README"


def test_the_check_refuses_a_headline_the_results_no_longer_give(store, root, monkeypatch):
    monkeypatch.setattr(headline, "ROOT", root)
    headline.update_readme(store, root)
    headline.check_readme(store, root)  # just written: what the store gives
    readme, figure = root / "README.md", root / "book" / "_static" / "headline-test.png"
    readme.write_text(readme.read_text().replace("| Fully learnable APE", "| Fully learned APE"))
    with pytest.raises(PublishError, match=r"headline \(table\) is not what .*results/test gives; run `pe-book publish readme"):
        headline.check_readme(store, root)
    headline.update_readme(store, root)
    figure.write_bytes(figure.read_bytes()[:-1])
    with pytest.raises(PublishError, match=r"headline \(headline-test.png\) is not"):
        headline.check_readme(store, root)


def test_markers_and_a_complete_store_are_required(store, root, tmp_path):
    (root / "README.md").write_text("# no markers\n")
    with pytest.raises(PublishError, match="needs one '<!-- headline:start -->' line"):
        headline.update_readme(store, root)


def test_an_incomplete_store_is_refused(store, root, monkeypatch):
    monkeypatch.setattr(type(store), "plan", lambda self, *a: [type("A", (), {"stored": False})()])
    with pytest.raises(PublishError, match="incomplete \\(1 artifacts to compute\\): run `pe-book run --profile test` first"):
        headline.update_readme(store, root)


def test_markdown_table():
    import pandas as pd

    table = pd.DataFrame({"claim": ["a|b"], "effect": [1.25], "MDE": [float("nan")]})
    assert headline.markdown(table) == "| claim | effect | MDE |\n|---|---|---|\n| a\\|b | +1.2 | — |"


def test_a_verdict_names_the_columns_it_does_not_rest_on():
    assert headline.verdict_cell("supported at this scale", "") == "supported at this scale"
    assert (headline.verdict_cell("contradicted at this scale", "no model beats constant on squad_v2")
            == "contradicted at this scale (not testable: no model beats constant on squad_v2)")
    verdict = "not testable at this scale: no model beats constant on squad_v2"
    assert headline.verdict_cell(verdict, "no model beats constant on squad_v2") == verdict


def test_a_learned_line_says_its_intervals_level_and_names_a_rule_that_reads_order_as_a_reference():
    import pandas as pd

    row = pd.Series({"tasks": "cloze, cloze_v2", "testable": True, "best variant": "x", "mean": 87.4, "low": 72.3,
                     "high": 102.5, "level": 0.95, "baseline": "absent word", "baseline score": 49.2, "control": "none",
                     "gap": 34.1, "gap low": 14.6, "reference": "neighbour match", "reference score": 82.5,
                     "against reference": "within the interval"})
    assert headline.learned_line("span", row) == (
        "span (cloze, cloze_v2): learned: x 87.4 (low 72.3, 95% interval) against absent word 49.2, +34.1 over none "
        "(low +14.6, 95% interval); neighbour match 82.5, which reads word order (a reference, not a bar): within the "
        "interval")
    plain = row.copy()
    plain[["control", "reference", "against reference"]] = None
    plain[["low", "high", "gap", "gap low"]] = float("nan")
    plain["testable"] = False
    assert headline.learned_line("span", plain) == ("span (cloze, cloze_v2): not testable: x 87.4 (no interval: "
                                                    "pretraining variance unknown) against absent word 49.2")
