"""``pe-book check-results``: the integrity of a results folder, against its manifests and the commit.

Two checks, both needed: every artifact folder's files match their ``manifest.json`` (a flipped bit,
a truncation, a manifest that vouches for nothing), and every committed file under the folder is
byte for byte its blob at ``HEAD`` (an artifact whose number was changed and its manifest re-hashed
passes the first check; only the commit shows it). Files that are not committed are named too, and
so are symbolic links to folders (git commits the link, never the files it leads to); they fail the
check with ``--committed-only`` (CI: a clean clone has none). Reads only; one line a problem.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

MANIFEST = "manifest.json"


def configure(parser) -> None:
    parser.add_argument("--results", default="results", help="the results folder to check (default: results/)")
    parser.add_argument("--committed-only", action="store_true",
                        help="also fail on files under the folder that are not committed (a clean clone has none)")


def run(args) -> int:
    from pe_lib.errors import InputError

    results = Path(args.results)
    if not results.is_dir():
        raise InputError(f"no results folder {results}")
    problems = manifest_problems(results)
    changed, uncommitted, files = git_problems(results)
    linked = linked_folders(results)
    problems += [f"{path}: differs from its blob at HEAD (git diff HEAD -- {path} shows how)" for path in changed]
    if args.committed_only:
        problems += [f"{path}: not committed" for path in uncommitted]
        problems += [link_problem(link) for link in linked]
    for line in problems:
        print(f"pe-book check-results: {line}")
    artifacts = len(artifact_folders(results))
    summary = (f"{results}: {artifacts} artifacts, {files} committed files; "
               f"{len(problems)} problem(s)" if problems else
               f"{results}: {artifacts} artifacts, every manifest hash matches and all {files} committed files "
               f"are their blobs at HEAD")
    print(summary + ("" if args.committed_only else unchecked_note(uncommitted, linked)))
    return 1 if problems else 0


def artifact_folders(results: Path) -> list[Path]:
    """Every ``<profile>/<variant>/<stage>-<key>`` folder (temporaries of a running writer aside)."""
    return sorted(f for f in results.glob("*/*/*") if f.is_dir() and not any(p.startswith(".") for p in f.parts[-3:]))


def linked_folders(results: Path) -> list[Path]:
    """The symbolic links to folders under ``results`` (hidden ones aside), which the walk over its
    files does not enter: their files are never committed, only the links."""
    return sorted(p for p in results.rglob("*") if p.is_symlink() and p.is_dir()
                  and not any(part.startswith(".") for part in p.relative_to(results).parts))


def link_problem(link: Path) -> str:
    """The line of a symbolic link to a folder under the results folder."""
    return (f"{link}: a symbolic link to a folder ({link.readlink()}); git commits the link, never the files "
            "in it: put the folder itself there")


def unchecked_note(uncommitted: list[str], linked: list[Path]) -> str:
    """The summary's note of what is not checked against git (no problem without ``--committed-only``)."""
    note = ""
    if uncommitted:
        note += (f"; {len(uncommitted)} file(s) not committed, not checked against git "
                 f"(first: {uncommitted[0]})")
    if linked:
        note += (f"; {len(linked)} symbolic link(s) to a folder, whose files git never commits "
                 f"(first: {linked[0]})")
    return note


def manifest_problems(results: Path) -> list[str]:
    """One line per artifact folder that does not match its manifest (or has none that vouches for
    it and for every file in it)."""
    from pe_lib.errors import CorruptFileError
    from pe_lib.io import verify_manifest

    problems = []
    for folder in artifact_folders(results):
        try:
            verify_manifest(folder, required=["artifact.json"], complete=True)
        except CorruptFileError as error:
            problems.append(str(error))
    return problems


def git_problems(results: Path) -> tuple[list[str], list[str], int]:
    """(committed files under ``results`` whose content is not their blob at HEAD, deleted ones
    included; files there that HEAD does not have; how many files HEAD has there). Content is
    hashed, never judged by git's cached file times, so a file altered with its time kept is found."""
    from pe_lib.errors import InputError

    def git(*argv: str, stdin: str | None = None) -> str:
        done = subprocess.run(["git", *argv], cwd=results, input=stdin, capture_output=True, text=True)
        if done.returncode != 0:
            raise InputError(f"{results} is not in a git checkout with a commit ({done.stderr.strip() or 'git failed'}); "
                             "the check compares the results with their blobs at HEAD")
        return done.stdout

    prefix = git("rev-parse", "--show-prefix").strip()
    blobs = {}
    for line in git("ls-tree", "-r", "-z", "--full-name", "HEAD", "--", ".").split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            blobs[path[len(prefix):]] = meta.split()[2]  # relative to results/
    here = sorted(str(p.relative_to(results)) for p in results.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(results).parts))
    present = [path for path in sorted(blobs) if (results / path).is_file()]
    hashes = git("hash-object", "--stdin-paths", stdin="".join(f"{(results / p).resolve()}\n" for p in present)).split() if present else []
    changed = [results / p for p, h in zip(present, hashes) if blobs[p] != h]
    changed += [results / p for p in sorted(blobs) if not (results / p).is_file()]
    uncommitted = [results / p for p in here if p not in blobs]
    return [str(p) for p in changed], [str(p) for p in uncommitted], len(blobs)
