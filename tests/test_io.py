import pytest

from pe_lib.io import atomic_dir, atomic_write_text, content_key, read_json, sha256_file, write_json


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
