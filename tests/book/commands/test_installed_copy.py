"""The commands of an installed copy (``pip install .``, run outside the repository): those that need
no clone work, the others say so in one line (the checkout is hidden here: ``checkout_root`` None)."""
import pytest

from book.commands.test_cli_errors import one_line
from pe_book.cli import main
from pe_book.commands import common


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.setattr(common, "checkout_root", lambda: None)
    for module in ("pe_book.commands.publish", "pe_book.commands.book"):  # their imported names
        monkeypatch.setattr(f"{module}.need_checkout", common.need_checkout, raising=False)
        monkeypatch.setattr(f"{module}.checkout_root", common.checkout_root, raising=False)


def test_this_test_runs_in_a_checkout():
    assert common.checkout_root() is not None and (common.checkout_root() / "notebooks").is_dir()


def test_publish_url_reads_the_installed_metadata(installed, capsys):
    assert main(["publish", "url"]) == 0
    assert capsys.readouterr().out.splitlines() == ["https://github.com/pe-book/pe-lib", "https://pe-book.github.io/pe-lib/"]


@pytest.mark.parametrize("argv, what", [
    (["book", "--profile", "cpu"], "pe-book book"),
    (["book", "--page", "out.ipynb"], "pe-book book"),
    (["publish", "colab", "--commit", "0" * 40, "--out", "x"], "pe-book publish colab"),
])
def test_what_needs_the_repository_says_so_in_one_line(installed, capsys, argv, what):
    line = one_line(capsys, argv)
    assert line.startswith(f"pe-book {argv[0]}: error: {what} needs a clone of the repository")
    assert "git clone https://github.com/pe-book/pe-lib" in line
