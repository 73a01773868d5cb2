"""``pe-book check-book`` (``pe_book.commands.check_book``): a line per page, its problems, the totals and
the exit status; the browser is stubbed (tests/book/publishing/test_book.py checks pages in Chromium)."""
from pe_book.cli import main
from pe_book.publishing import book_check
from pe_book.publishing.book_check import PageReport


def test_check_book_reports_each_page_and_fails_when_one_does(monkeypatch, capsys, tmp_path):
    calls = []

    def check_book(html, shots):
        calls.append((html, shots))
        return [PageReport("index.html", images=2, math=1, links=3), PageReport("a.html", problems=["nan in text"])]

    monkeypatch.setattr(book_check, "check_book", check_book)
    assert main(["check-book", "--html", str(tmp_path / "html"), "--screenshots", str(tmp_path / "shots")]) == 1
    assert calls == [(tmp_path / "html", tmp_path / "shots")]
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["ok   index.html: 2 images, 1 math, 3 local links", "FAIL a.html: 0 images, 0 math, 0 local links",
                       "       nan in text"]
    assert out[3].startswith(f"2 pages, 1 failed, screenshots in {tmp_path / 'shots'} (")


def test_check_book_passes_when_every_page_does(monkeypatch, capsys):
    monkeypatch.setattr(book_check, "check_book", lambda html, shots: [PageReport("index.html")])
    assert main(["check-book"]) == 0
    assert capsys.readouterr().out.startswith("ok   index.html")
