"""pe_book.verdicts.intervals: how every interval says its level."""
from __future__ import annotations

import pytest

from pe_book.verdicts import intervals


@pytest.mark.parametrize("level, over, what, text", [
    (0.95, 1, "", "95% interval"), (1 - 0.05 / 2, 2, "baselines", "97.5% interval (Bonferroni over 2 baselines)"),
    (1 - 0.05 / 4, 4, "", "98.8% interval (Bonferroni over 4)"), (1 - 0.05 / 6, 6, "", "99.2% interval (Bonferroni over 6)"),
    (1 - 0.05 / 1000, 1000, "", "99.995% interval (Bonferroni over 1000)")])
def test_every_interval_label_names_its_level(level, over, what, text):
    assert intervals.interval_label(level, over, what=what) == text
    assert intervals.interval_label(0.95, plural=True) == "95% intervals"
