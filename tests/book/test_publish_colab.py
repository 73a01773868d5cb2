"""The Colab notebook's first cell: safe to run twice (one clone, one install, the same folder),
and the hub off, so that online the chapters read the committed results (packaged data) instead
of computing from the hub's data under other keys."""
import os
import sys
import types

from pe_book import publish

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_first_cell_runs_twice_into_one_clone_with_the_hub_off(tmp_path, monkeypatch):
    calls = []

    def run(argv, check):  # git clone / checkout and pip install, recorded; a clone makes its folder
        calls.append(argv[:3] if argv[0] == "git" else argv[1:4])
        if argv[:2] == ["git", "clone"]:
            os.makedirs(os.path.join(argv[-1], ".git"))

    monkeypatch.setitem(sys.modules, "subprocess", types.SimpleNamespace(run=run))
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "PE_BOOK_CLONE"):  # online, as Colab is
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    cell = publish.colab_cell("https://github.com/o/r", COMMIT)
    for _ in range(2):
        exec(compile(cell, "colab-cell", "exec"), {})
        assert os.getcwd() == str(tmp_path / publish.CLONE)
    assert not (tmp_path / publish.CLONE / publish.CLONE).exists()  # no clone inside the clone
    assert calls == [["git", "clone", "--quiet"], ["git", "-C", str(tmp_path / publish.CLONE)], ["-m", "pip", "install"]]
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert sys.path.count(str(tmp_path / publish.CLONE)) == 1
    from pe_lib.data.cache import is_offline

    assert is_offline()  # the data source "auto" of the published profiles then means the packaged data
