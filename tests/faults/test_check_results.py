"""``pe-book check-results``: a forged but consistent artifact (a number changed and its manifest
re-hashed) passes every manifest check; the check against the commit finds it."""
import json
import shutil
import subprocess

import pytest

from pe_book.cli import main
from pe_book.experiments.store import Store
from pe_lib.io import sha256_file, write_json


def git(repo, *argv):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A git repository with one committed artifact (and its arrays) under results/."""
    git(tmp_path, "init", "-q")
    store = Store(tmp_path / "results", "cpu")
    folder = store.save("t5-bias", "finetune-sst2-p0-seed0", {"seed": 0}, {"accuracy": 0.73}, wall_s=1.0,
                        arrays={"phi": [[1.0, 0.5], [0.5, 1.0]]}).folder
    git(tmp_path, "add", "results")
    git(tmp_path, "commit", "-q", "-m", "results")
    return tmp_path, folder


def check(capsys, repo, *extra):
    capsys.readouterr()
    code = main(["check-results", "--results", str(repo / "results"), *extra])
    return code, capsys.readouterr().out.splitlines()


def test_committed_results_pass(repo, capsys):
    code, lines = check(capsys, repo[0])
    assert code == 0 and lines == [f"{repo[0] / 'results'}: 1 artifacts, every manifest hash matches and all 3 "
                                   "committed files are their blobs at HEAD"]


def test_a_forged_but_consistent_artifact_is_found(repo, capsys):
    root, folder = repo
    document = json.loads((folder / "artifact.json").read_text())
    document["payload"]["accuracy"] = 0.99
    write_json(folder / "artifact.json", document)
    write_json(folder / "manifest.json", {name: sha256_file(folder / name) for name in ("artifact.json", "arrays.npz")})
    assert Store(root / "results", "cpu").read(folder).payload["accuracy"] == 0.99, "the manifests alone pass it"
    code, lines = check(capsys, root)
    assert code == 1
    assert f"pe-book check-results: {folder / 'artifact.json'}: differs from its blob at HEAD" in "\n".join(lines)
    assert f"pe-book check-results: {folder / 'manifest.json'}: differs from its blob at HEAD" in "\n".join(lines)
    assert lines[-1].endswith("2 problem(s)")


def test_a_file_altered_with_its_size_and_time_kept_is_found(repo, capsys):
    root, folder = repo
    path = folder / "artifact.json"
    stat, text = path.stat(), path.read_text()
    path.write_text(text.replace("0.73", "0.93"))
    import os
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # git's cached times would call it unchanged
    code, lines = check(capsys, root)
    assert code == 1 and f"{path} fails its sha256 check" in lines[0] and f"{path}: differs from its blob" in lines[1]


@pytest.mark.parametrize("manifest", [{}, []])
def test_a_manifest_that_vouches_for_nothing_is_named(manifest, repo, capsys):
    root, folder = repo
    (folder / "manifest.json").write_text(json.dumps(manifest))
    code, lines = check(capsys, root)
    assert code == 1 and lines[0] == f"pe-book check-results: {folder / 'manifest.json'} lists no files"


def test_a_deleted_file_is_named(repo, capsys):
    root, folder = repo
    (folder / "arrays.npz").unlink()
    code, lines = check(capsys, root)
    assert code == 1 and f"pe-book check-results: {folder / 'arrays.npz'} is missing" in lines
    assert f"pe-book check-results: {folder / 'arrays.npz'}: differs from its blob at HEAD (git diff HEAD -- " \
           f"{folder / 'arrays.npz'} shows how)" in lines


def test_an_uncommitted_artifact_is_named_and_fails_only_when_asked(repo, capsys):
    root, _ = repo
    new = Store(root / "results", "cpu").save("rope", "finetune-sst2-p0-seed0", {"seed": 0}, {"accuracy": 0.7}, wall_s=1.0).folder
    code, lines = check(capsys, root)
    assert code == 0 and "2 file(s) not committed, not checked against git" in lines[-1]
    code, lines = check(capsys, root, "--committed-only")
    assert code == 1 and f"pe-book check-results: {new / 'artifact.json'}: not committed" in lines


def test_outside_a_git_checkout_is_one_line(tmp_path, capsys):
    Store(tmp_path / "results", "cpu").save("rope", "x", {"seed": 0}, {"a": 1}, wall_s=1.0)
    capsys.readouterr()
    assert main(["check-results", "--results", str(tmp_path / "results")]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and "is not in a git checkout with a commit" in errors[0]


def test_a_file_that_the_manifest_does_not_list_is_named(repo, capsys):
    root, folder = repo
    (folder / "model").mkdir()
    (folder / "model" / "model.safetensors").write_bytes(b"weights no manifest vouches for")
    code, lines = check(capsys, root)
    assert code == 1 and lines[0] == f"pe-book check-results: {folder / 'manifest.json'} does not list " \
                                      "model/model.safetensors"


@pytest.mark.parametrize("linked", ["profile", "artifact"])
def test_a_symlinked_folder_is_named_and_fails_with_committed_only(linked, repo, tmp_path, capsys):
    """git commits a symbolic link, never the files it leads to: a results folder with a linked
    profile or artifact folder (here: a copy of a committed one under another name) is not a
    committed one."""
    root, folder = repo
    original = folder.parent.parent if linked == "profile" else folder
    elsewhere = tmp_path / "elsewhere" / original.name
    shutil.copytree(original, elsewhere)
    link = original.with_name(original.name + "-link")
    link.symlink_to(elsewhere, target_is_directory=True)
    code, lines = check(capsys, root)
    assert code == 0 and lines[-1].endswith(f"; 1 symbolic link(s) to a folder, whose files git never "
                                            f"commits (first: {link})")
    code, lines = check(capsys, root, "--committed-only")
    assert code == 1 and f"pe-book check-results: {link}: a symbolic link to a folder ({elsewhere}); git " \
                         "commits the link, never the files in it: put the folder itself there" in lines
