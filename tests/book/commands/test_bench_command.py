"""``pe-book bench`` (``pe_book.commands.bench``): its options, the report and the file it writes; the
measurements themselves are stubbed (tests/book/test_bench.py tests the sections' parts)."""
import json

import pytest

from book.commands.test_cli_errors import one_line
from pe_book.bench import sections
from pe_book.cli import main

MACHINE = {"cpu": "a CPU", "cores": 2, "versions": {"torch": "2.x"}, "torch_threads": 2}


@pytest.fixture
def measured(monkeypatch):
    """The plans :func:`pe_book.bench.sections.measure` was given; it returns one hf row."""
    plans = []

    def measure(plan, stored_precision=None):
        plans.append((plan, stored_precision))
        return {"machine": MACHINE, "created": "now", "git_commit": "abc", "configs": [],
                "hf": [{"seq": 128, "dtype": "fp32", "pe_lib_tok_s": 2.0, "hf_tok_s": 1.0, "speedup": 2.0}]}

    monkeypatch.setattr(sections, "measure", measure)
    return plans


def test_bench_prints_the_report_and_writes_the_json(measured, capsys, tmp_path):
    path = tmp_path / "bench.json"
    assert main(["bench", "--sections", "hf", "--seqs", "128", "--rounds", "2", "--json", str(path)]) == 0
    plan, stored = measured[0]
    assert (plan.sections, plan.seqs, plan.rounds, stored) == (["hf"], [128], 2, None)
    assert "[hf]       seq  128 fp32: pe_lib       2 tok/s, hf       1 tok/s, speedup 2.00x" in capsys.readouterr().out
    assert json.loads(path.read_text())["hf"][0]["speedup"] == 2.0


def test_bench_update_keeps_the_other_sections_and_passes_the_stored_precision(measured, tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"machine": MACHINE, "mfu": [{"mfu": 0.3}], "precision": {"type": {"rows": []}}}))
    assert main(["bench", "--sections", "hf", "precision", "--json", str(path), "--update"]) == 0
    assert measured[0][1] == {"type": {"rows": []}}
    stored = json.loads(path.read_text())
    assert stored["mfu"] == [{"mfu": 0.3}] and stored["hf"][0]["speedup"] == 2.0


@pytest.mark.parametrize("value, says", [("2", "must be in (0, 1], got 2"), ("x", "must be a number in (0, 1], got 'x'")])
def test_a_finetune_fraction_outside_0_1_is_a_usage_error(value, says, capsys):
    line = one_line(capsys, ["bench", "--finetune-fraction", value], status=2)
    assert line.startswith(f"pe-book bench: error: argument --finetune-fraction: {says}")


def test_an_unknown_section_names_the_sections(capsys):
    line = one_line(capsys, ["bench", "--sections", "speed"], status=2)
    assert "invalid choice: 'speed'" in line and "'dry-run'" in line
