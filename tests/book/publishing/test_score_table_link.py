"""The findings chapter links the built profile's score table, and the book's build writes it there."""
import re

import pandas as pd

from pe_book.publishing import book

ROOT = book.ROOT


def test_the_build_writes_the_score_table_where_the_findings_chapter_links_it(tmp_path, monkeypatch):
    asked = []

    def table(profile, results):
        asked.append((profile, results))
        return pd.DataFrame({"variant": ["rope"], "value": [0.5]})

    monkeypatch.setattr("pe_book.results_data.score_table", table)
    (tmp_path / "book" / "_static").mkdir(parents=True)
    path = book.write_score_table("cpu", tmp_path)
    assert asked == [("cpu", tmp_path / "results")] and path.read_text() == "variant,value\nrope,0.5\n"
    (target,) = re.findall(r"\{download\}`[^`<]*<([^>]+)>`", (ROOT / "notebooks" / "08_findings.py").read_text())
    assert tmp_path / "book" / target == path
