import pytest

from pe_lib.errors import CorruptFileError
from pe_lib.io import (MANIFEST, atomic_dir, atomic_write_text, content_key, is_intact, manifested_dir, read_json,
                       remove_path, sha256_file, verified, verify_manifest, write_json, write_manifest)


def test_atomic_dir_leaves_nothing_on_failure_and_replaces_on_success(tmp_path):
    final = tmp_path / "thing"
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as work:
            (work / "half.txt").write_text("partial")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    with atomic_dir(final) as work:
        (work / "done.txt").write_text("ok")
    with atomic_dir(final) as work:
        (work / "new.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["thing"]


def test_atomic_text_and_json(tmp_path):
    write_json(tmp_path / "a" / "x.json", {"b": 1, "a": [1.5]})
    assert read_json(tmp_path / "a" / "x.json") == {"a": [1.5], "b": 1}
    atomic_write_text(tmp_path / "t.txt", "hello")
    assert sha256_file(tmp_path / "t.txt") == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "t.txt"]


def test_content_key_ignores_key_order_and_sees_values():
    assert content_key({"a": 1, "b": 2}) == content_key({"b": 2, "a": 1})
    assert content_key({"a": 1}) != content_key({"a": 2})


def test_a_manifested_folder_lists_every_file_and_is_trusted_only_while_it_matches(tmp_path):
    with manifested_dir(tmp_path / "f", "test folder") as work:
        (work / "a.txt").write_text("a")
        (work / "sub").mkdir()
        (work / "sub" / "b.bin").write_bytes(b"b")
    folder = tmp_path / "f"
    assert read_json(folder / MANIFEST) == {"a.txt": sha256_file(folder / "a.txt"), "sub/b.bin": sha256_file(folder / "sub/b.bin")}
    assert is_intact(folder, required=["a.txt"]) and verified(folder, "test folder")
    assert not is_intact(folder, required=["c.txt"]), "a required file the manifest leaves out"
    assert not is_intact(tmp_path / "absent") and not verified(tmp_path / "absent", "test folder")
    (folder / "a.txt").write_text("A")
    with pytest.raises(CorruptFileError, match="a.txt fails its sha256 check"):
        verify_manifest(folder)
    with pytest.warns(UserWarning, match="ignoring corrupt test folder: .*a.txt fails its sha256 check"):
        assert not verified(folder, "test folder")


@pytest.mark.parametrize(("manifest", "reason"), [
    ({}, "lists no files"), ([], "lists no files"), ({"a.txt": 1}, "not a sha256"), ({"gone.txt": "0" * 64}, "is missing")])
def test_a_manifest_that_vouches_for_nothing_is_never_trusted(tmp_path, manifest, reason):
    (tmp_path / "a.txt").write_text("a")
    write_json(tmp_path / MANIFEST, manifest)
    with pytest.raises(CorruptFileError, match=reason):
        verify_manifest(tmp_path)
    assert not is_intact(tmp_path)


def test_write_manifest_lists_the_named_files_alone(tmp_path):
    for name in ("b", "a", "extra"):
        (tmp_path / name).write_text(name)
    write_manifest(tmp_path, ["b", "a"])
    assert set(read_json(tmp_path / MANIFEST)) == {"a", "b"}


def test_remove_path_deletes_a_folder_a_file_and_only_the_link_to_a_folder(tmp_path):
    folder, file, target = tmp_path / "folder", tmp_path / "file", tmp_path / "target"
    (folder / "inner").mkdir(parents=True)
    file.write_text("x")
    target.mkdir()
    (target / "kept").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    for path in (folder, file, link, tmp_path / "gone"):
        remove_path(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]
    assert (target / "kept").exists()
