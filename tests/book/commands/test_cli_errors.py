"""Every error a user can cause is one line on stderr and exit status 1 (argparse's usage errors:
one line and status 2); ``--debug`` shows the traceback. Also the command line's own behaviour:
``--version``, ``python -m pe_book``, a closed pipe, ``--task`` choices."""
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from support import StoreLockHolder, tmpfs
from transformers import BertTokenizer

from pe_lib import PEBertForMaskedLM
from pe_book.cli import main
from pe_lib.errors import InputError
from pe_lib.io import sha256_file, write_json

WORDS = "good bad film plot the was a cat dog sat".split()


def one_line(capsys, argv: list[str], status: int = 1) -> str:
    """Run the CLI; check its exit status and that stderr holds exactly one error line."""
    capsys.readouterr()  # what the test's own setup printed
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse
        code = exit_.code
    assert code == status
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("warning:")]
    assert len(errors) == 1, errors
    return errors[0]


@pytest.fixture
def folders(tmp_path):
    """Paths for the results, the work folder and the cache (so the CLI never touches ~/.cache)."""
    return ["--results", str(tmp_path / "results"), "--work", str(tmp_path / "work"), "--cache", str(tmp_path / "cache")]


@pytest.fixture
def tokenizer_dir(tmp_path) -> Path:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    folder = tmp_path / "tokenizer"
    BertTokenizer(vocab=str(vocab)).save_pretrained(folder)
    return folder


def corpus_file(tmp_path, lines: int) -> Path:
    path = tmp_path / f"corpus-{lines}.txt"
    path.write_text("\n".join(" ".join(WORDS[(i + j) % len(WORDS)] for j in range(20)) for i in range(lines)) + "\n")
    return path


@pytest.mark.parametrize("argv, message", [
    (["run", "--variants", "ape-bogus"], "unknown position embedding 'ape-bogus' in 'ape-bogus'; valid basic names: none, ape-learned"),
    (["run", "--tasks", "bogus"], "unknown task 'bogus'; valid tasks: cola, sst2"),
    (["run", "--variants", "ape-learned+untie-cls"], "'untie-cls' unties [CLS] from a relative score bias, so "
                                                     "'ape-learned+untie-cls' needs one of rpe-learned"),
])
def test_bad_variants_and_tasks(argv, message, folders, capsys):
    line = one_line(capsys, argv + folders)
    assert line.startswith(f"pe-book run: error: {message}") and line.endswith("(--debug shows the traceback)")


def test_debug_shows_the_traceback(folders):
    with pytest.raises(InputError, match="unknown position embedding"):
        main(["--debug", "run", "--variants", "ape-bogus", *folders])


def test_a_step_count_below_one_is_a_usage_error(capsys):
    line = one_line(capsys, ["pretrain", "--variant", "ape-learned", "--steps", "-5"], status=2)
    assert line.startswith("pe-book pretrain: error: argument --steps:") and "-5" in line


def test_unknown_task_for_finetune_names_the_choices(capsys, tmp_path):
    line = one_line(capsys, ["finetune", "--model", str(tmp_path), "--task", "bogus"], status=2)
    assert "invalid choice: 'bogus'" in line and "'sst2'" in line


@pytest.mark.parametrize("command", [["properties"], ["finetune", "--task", "sst2", "--model"]])
def test_a_model_folder_that_does_not_exist(command, capsys, tmp_path):
    line = one_line(capsys, [*command, str(tmp_path / "nowhere")])
    assert line.endswith(f"error: no model folder {tmp_path / 'nowhere'} (--debug shows the traceback)")


def test_a_config_with_a_wrongly_typed_value(make_config, capsys, tmp_path):
    PEBertForMaskedLM(make_config()).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "hidden_size": "x"}))
    assert f"{tmp_path}/config.json: hidden_size is 'x', expected an integer of at least 1" in one_line(capsys, ["properties", str(tmp_path)])


@pytest.mark.parametrize("key, value, expected", [
    ("num_attention_heads", 2.0, "an integer of at least 1 like 12"),
    ("num_hidden_layers", [2], "an integer of at least 1 like 12"),
    ("num_hidden_layers", -1, "an integer of at least 1 like 12"),
    ("num_hidden_layers", True, "an integer of at least 1 like 12"),
    ("max_position_embeddings", 24.5, "an integer of at least 1 like 512"),
    ("hidden_dropout_prob", "x", "a number like 0.1"),
    ("hidden_dropout_prob", 1.5, "a probability between 0 and 1 like 0.1"),
    ("position_embedding", 5, "a string like 'ape-learned'"),
    ("vocab_size", 10**12, "an integer of at most 16,777,216 like 30522"),
    ("max_position_embeddings", 10**9, "an integer of at most 16,777,216 like 512"),
])
@pytest.mark.parametrize("command", [["properties"], ["finetune", "--task", "sst2", "--model"]])
def test_a_wrongly_typed_or_impossible_config_value_is_one_line(key, value, expected, command, make_config, capsys, tmp_path):
    folder = tmp_path / "model"
    PEBertForMaskedLM(make_config()).save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, key: value}))
    line = one_line(capsys, [*command, str(folder), "--cache", str(tmp_path / "cache")] if command[0] == "finetune"
                    else [*command, str(folder)])
    assert f"cannot read the model config of {folder}: {folder}/config.json: {key} is {value!r}, expected {expected}" in line


def test_truncated_weights(make_config, capsys, tmp_path):
    PEBertForMaskedLM(make_config()).save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    assert f"cannot read the model weights {weights}" in one_line(capsys, ["properties", str(tmp_path)])


@pytest.fixture
def read_only(tmp_path):
    """A folder nobody may write into: chmod for a user; for root (who ignores modes) a read-only tmpfs."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    yield from tmpfs(folder, "ro,size=1m")


def test_a_read_only_cache(read_only, capsys, tmp_path):
    line = one_line(capsys, ["run", "--cache", str(read_only / "cache"), "--results", str(tmp_path / "results")])
    assert f"cache folder {read_only / 'cache'} is not writable" in line and "PE_LIB_CACHE" in line


def test_a_read_only_results_folder(read_only, capsys, tmp_path):
    line = one_line(capsys, ["run", "--results", str(read_only / "results"), "--work", str(tmp_path / "work"),
                             "--cache", str(tmp_path / "cache")])
    assert f"the artifact store {read_only}/results/smoke cannot be written" in line


def test_a_corpus_too_short_for_one_block(tokenizer_dir, capsys, tmp_path):
    line = one_line(capsys, ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus_file(tmp_path, 12)),
                             "--tokenizer", str(tokenizer_dir), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")])
    assert "not enough for one block of 64; give a longer corpus" in line


def test_a_corpus_file_of_too_few_lines(tokenizer_dir, capsys, tmp_path):
    line = one_line(capsys, ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus_file(tmp_path, 5)),
                             "--tokenizer", str(tokenizer_dir), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache")])
    assert line.startswith(f"pe-book pretrain: error: {tmp_path / 'corpus-5.txt'} has 5 non-empty lines; --corpus-file "
                           "needs at least 10")


def test_an_offline_task_without_a_packaged_copy(make_config, capsys, tmp_path):
    PEBertForMaskedLM(make_config()).save_pretrained(tmp_path / "model")
    line = one_line(capsys, ["finetune", "--model", str(tmp_path / "model"), "--task", "qnli", "--cache", str(tmp_path / "cache")])
    assert "task 'qnli': there is no packaged offline analogue" in line


def test_the_store_lock_held_by_another_process(folders, capsys, tmp_path):
    with StoreLockHolder(tmp_path / "results") as pid:
        line = one_line(capsys, ["run", *folders])
    assert f"the artifact store {tmp_path}/results/smoke is in use by another run (pid {pid})" in line


class Trap:
    def __reduce__(self):
        return (eval, ("open(__import__('os').environ['TRAP'], 'w').write('pwned')",))


def test_a_refused_pickle_is_set_aside_and_the_run_rebuilt(tokenizer_dir, capsys, tmp_path, monkeypatch):
    run = tmp_path / "run"
    argv = ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus_file(tmp_path, 120)), "--tokenizer",
            str(tokenizer_dir), "--out", str(run), "--cache", str(tmp_path / "cache"), "--steps", "2", "--batch-size", "2",
            "--no-progress"]
    assert main(argv) == 0
    (checkpoint,) = (run / "checkpoints").glob("step-*")
    (checkpoint / "trainer_state.pt").write_bytes(pickle.dumps(Trap()))
    write_json(checkpoint / "manifest.json", {n: sha256_file(checkpoint / n) for n in ("model.safetensors", "trainer_state.pt", "state.json")})
    for name in ("manifest.json", "result.json"):  # as if killed before the run finished
        (run / name).unlink()
    monkeypatch.setenv("TRAP", str(tmp_path / "pwned"))
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    refused = [line for line in err if "refused checkpoint" in line]
    assert len(refused) == 1 and refused[0].startswith("warning: refused checkpoint") and "set aside as" in refused[0]
    assert not (tmp_path / "pwned").exists() and (run / "refused" / checkpoint.name).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(argv) == 0  # rebuilt: no longer fails, no longer warns


def test_a_full_disk_is_one_line(tokenizer_dir, capsys, tmp_path, monkeypatch):
    import pe_lib.training.checkpoints as checkpoints_module
    from faults.test_disk_full import SAFETENSORS_FULL
    from safetensors import SafetensorError

    def full(model, path):
        raise SafetensorError(SAFETENSORS_FULL)

    monkeypatch.setattr(checkpoints_module, "save_model", full)
    run = tmp_path / "run"
    line = one_line(capsys, ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus_file(tmp_path, 120)),
                             "--tokenizer", str(tokenizer_dir), "--out", str(run), "--cache", str(tmp_path / "cache"),
                             "--steps", "2", "--batch-size", "2", "--no-progress"])
    assert line.startswith(f"pe-book pretrain: error: disk full while writing checkpoint {run}/checkpoints/step-00000002; ")
    assert sorted(p.name for p in run.rglob("*.part*")) == []


# ----------------------------------------------------------------------------- the command line itself


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("pe-book 0.")


def test_python_dash_m_and_a_closed_pipe_end_quietly():
    """``python -m pe_book variants --all | head``: a reader that is gone ends the command quietly."""
    read, write = os.pipe()
    os.close(read)  # the reader has already stopped reading
    try:
        done = subprocess.run([sys.executable, "-m", "pe_book", "variants", "--all"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.stderr == "", "no BrokenPipeError traceback"
    assert done.returncode == 1


def test_the_command_is_named_after_its_package_and_is_the_only_way_in():
    """``pe-book`` is ``pe_book.cli:main`` (as ``python -m pe_book``) and the only console script:
    the former ``pe-lib`` script and ``former_main`` are gone, every subcommand is a module of
    ``pe_book.commands`` (``data`` no longer in the library), the benchmark and the book check have
    no ``main`` of their own, and ``python -m pe_lib`` names the command."""
    import importlib.util
    import tomllib

    from pe_book import cli
    from pe_book.publishing import book_check

    root = Path(__file__).resolve().parents[3]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"pe-book": "pe_book.cli:main"}
    assert not hasattr(cli, "former_main") and not hasattr(cli, "FORMER_NAME")
    assert all(module.startswith("pe_book.commands.") for module, _ in cli.COMMANDS.values())
    assert {"data", "bench", "check-book"} <= set(cli.COMMANDS)
    assert importlib.util.find_spec("pe_lib.data.cli") is None and importlib.util.find_spec("pe_book.bench.__main__") is None
    assert not hasattr(book_check, "main")
    library = subprocess.run([sys.executable, "-m", "pe_lib"], capture_output=True, text=True, timeout=120)
    assert library.returncode == 2 and library.stdout == ""
    assert len(library.stderr.splitlines()) == 1 and "pe-book (or python -m pe_book)" in library.stderr


def test_requires_python_matches_the_pins():
    root = Path(__file__).resolve().parents[3]
    assert 'requires-python = ">=3.11"' in (root / "pyproject.toml").read_text()


def test_an_interrupt_is_one_line_and_status_130(folders, capsys, monkeypatch):
    import pe_book.commands.run as run_command

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "run", interrupted)
    assert "interrupted; finished artifacts and checkpoints are kept" in one_line(capsys, ["run", *folders], status=130)
    with pytest.raises(KeyboardInterrupt):
        main(["run", "--debug", *folders])


def test_an_estimate_needs_a_dry_run(folders, capsys):
    line = one_line(capsys, ["run", "--estimate-from", "scale"] + folders)
    assert line.startswith("pe-book run: error: --estimate-from goes with --dry-run")


# ----------------------------------------------------------------------------- issue 39: every bad value one line


@pytest.fixture
def ape_model(make_config, tmp_path) -> Path:
    """A saved 2-layer ape-learned model (no offset table: no rpe proximity)."""
    folder = tmp_path / "ape-model"
    PEBertForMaskedLM(make_config("ape-learned")).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("argv, option, says", [
    (["pretrain", "--variant", "ape-learned", "--seed", "-1"], "--seed", "must be at least 0, got -1"),
    (["finetune", "--model", "M", "--task", "sst2", "--seed", "-1"], "--seed", "must be at least 0, got -1"),
    (["finetune", "--model", "M", "--task", "sst2", "--epochs", "-1"], "--epochs", "must be a finite number above 0, got -1"),
    (["finetune", "--model", "M", "--task", "sst2", "--epochs", "0"], "--epochs", "must be a finite number above 0, got 0"),
    (["finetune", "--model", "M", "--task", "sst2", "--epochs", "nan"], "--epochs", "must be a finite number above 0, got nan"),
    (["finetune", "--model", "M", "--task", "sst2", "--epochs", "inf"], "--epochs", "must be a finite number above 0, got inf"),
    (["finetune", "--model", "M", "--task", "sst2", "--tokenizer", "/missing"], "--tokenizer", "no folder /missing"),
    (["pretrain", "--variant", "ape-learned", "--corpus-file", "/missing"], "--corpus-file", "no file /missing"),
    (["pretrain", "--variant", "ape-learned", "--tokenizer", "/missing"], "--tokenizer", "no folder /missing"),
    (["properties", "M", "--length", "0"], "--length", "must be at least 3, got 0"),
    (["properties", "M", "--length", "-5"], "--length", "must be at least 3, got -5"),
    (["properties", "M", "--length", "x"], "--length", "expected an integer of at least 3, got 'x'"),
    (["properties", "M", "--layer", "-1"], "--layer", "must be at least 0, got -1"),
    (["properties", "M", "--window", "0"], "--window", "must be at least 3, got 0"),
    (["properties", "M", "--window", "-3"], "--window", "must be at least 3, got -3"),
    (["properties", "M", "--heatmap", "/missing/x.png"], "--heatmap", "cannot write /missing/x.png: no folder /missing"),
])
def test_a_bad_option_value_is_one_line_with_status_2(argv, option, says, capsys):
    line = one_line(capsys, argv, status=2)
    assert line.startswith(f"pe-book {argv[0]}: error: argument {option}: {says}"), line


@pytest.mark.parametrize("argv, says", [
    (["--layer", "99"], "argument --layer: the model has 2 layers (0 to 1), got 99"),
    (["--kind", "rpe"], "argument --kind: a ape-learned model has no rpe proximity; it has: ape, probe"),
])
def test_an_option_value_the_model_refutes_is_one_line_with_status_2(argv, says, ape_model, capsys):
    line = one_line(capsys, ["properties", str(ape_model), *argv], status=2)
    assert line == f"pe-book properties: error: {says} (pe-book properties --help shows the usage)"


def test_a_valid_length_is_used_not_the_default(ape_model, capsys):
    capsys.readouterr()
    assert main(["properties", str(ape_model), "--length", "5", "--kind", "ape", "--window", "3", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"ape"}


@pytest.mark.parametrize("where", ["component", "path"])
def test_an_over_long_path_is_one_line(where, capsys, tmp_path):
    long = tmp_path / ("a" * 300) if where == "component" else tmp_path.joinpath(*["b" * 200] * 25)
    line = one_line(capsys, ["run", "--results", str(long), "--work", str(tmp_path / "work"), "--cache", str(tmp_path / "cache")])
    assert line.startswith("pe-book run: error: path too long (File name too long: ") and "use a shorter one" in line


def test_an_over_long_out_folder_of_pretrain_is_one_line(tokenizer_dir, capsys, tmp_path):
    line = one_line(capsys, ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus_file(tmp_path, 400)),
                             "--tokenizer", str(tokenizer_dir), "--out", str(tmp_path / ("a" * 300)), "--steps", "1",
                             "--cache", str(tmp_path / "cache")])
    assert line.startswith("pe-book pretrain: error: path too long (File name too long: ")



# ----------------------------------------------------------------------------- issue 59: silent or misleading


def without(folder: Path, name: str) -> None:
    """Rewrite ``folder``'s model.safetensors without the parameter ``name``."""
    from safetensors.torch import load_file, save_file

    weights = {key: value for key, value in load_file(folder / "model.safetensors").items() if key != name}
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def model_folder(make_config, tmp_path, **config) -> Path:
    """A saved 2-layer ape-learned model whose config.json then gets the values ``config``."""
    folder = tmp_path / "model"
    PEBertForMaskedLM(make_config("ape-learned")).save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**saved, **config}))
    return folder


def model_command(command: str, folder: Path, tmp_path) -> list[str]:
    return (["properties", str(folder)] if command == "properties"
            else ["finetune", "--model", str(folder), "--task", "sst2", "--cache", str(tmp_path / "cache")])


@pytest.mark.parametrize("command", ["properties", "finetune"])
def test_weights_without_their_position_table_are_one_line_naming_it(command, make_config, capsys, tmp_path):
    folder = model_folder(make_config, tmp_path)
    without(folder, "bert.embeddings.position.weight")
    line = one_line(capsys, model_command(command, folder, tmp_path))
    assert line.startswith(f"pe-book {command}: error: cannot load the model weights of {folder}: its "
                           "weights lack bert.embeddings.position.weight, which would be random")


@pytest.mark.parametrize("command", ["properties", "finetune"])
def test_weights_of_another_variant_are_one_line_naming_the_parameter(command, make_config, capsys, tmp_path):
    folder = model_folder(make_config, tmp_path, position_embedding="none")  # its weights: a position table
    line = one_line(capsys, model_command(command, folder, tmp_path))
    assert (f"cannot load the model weights of {folder}: its weights hold bert.embeddings.position.weight, "
            "which a none model has no place for") in line


@pytest.mark.parametrize("command", ["properties", "finetune"])
def test_a_config_of_another_shape_than_its_weights_is_one_line(command, make_config, capsys, tmp_path):
    folder = model_folder(make_config, tmp_path, intermediate_size=128)
    line = one_line(capsys, model_command(command, folder, tmp_path))
    assert (f"cannot load the model weights of {folder}: bert.layers.0.ffn_in.bias is (64,) in its weights "
            "and (128,) by its config.json (6 parameter(s) differ)") in line


def test_a_config_file_for_a_model_folder_is_one_line(make_config, capsys, tmp_path):
    config = model_folder(make_config, tmp_path) / "config.json"
    line = one_line(capsys, ["properties", str(config)])
    assert line.startswith(f"pe-book properties: error: {config} is a file; expected a model folder")


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_an_empty_tokenizer_folder_is_one_line_naming_the_files_expected(command, capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    argv = (["pretrain", "--variant", "ape-learned"] if command == "pretrain"
            else ["finetune", "--model", str(tmp_path), "--task", "sst2"])
    line = one_line(capsys, [*argv, "--tokenizer", str(tmp_path / "empty")], status=2)
    assert line.startswith(f"pe-book {command}: error: argument --tokenizer: {tmp_path / 'empty'} holds no "
                           "tokenizer: expected tokenizer.json or vocab.txt in it")


def pretrain_argv(tmp_path, tokenizer_dir, corpus: Path, out: Path) -> list[str]:
    """A 2-step pretraining of the corpus file ``corpus`` into ``out``."""
    return ["pretrain", "--variant", "ape-learned", "--corpus-file", str(corpus), "--tokenizer",
            str(tokenizer_dir), "--out", str(out), "--cache", str(tmp_path / "cache"), "--steps", "2",
            "--batch-size", "2", "--no-progress"]


def contents(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) with its text."""
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return {str(p): p.read_text() for p in files}


@pytest.mark.parametrize("out, says", [
    ("file", "is a file, not a run folder"),
    ("folder of the user's", "is not a pretraining run folder: it holds notes"),
])
def test_an_out_that_is_no_run_folder_is_one_line_and_left_untouched(out, says, tokenizer_dir, capsys,
                                                                     tmp_path):
    target = tmp_path / "out"
    if out == "file":
        target.write_text("mine")
    else:
        (target / "notes").mkdir(parents=True)
        (target / "notes" / ".draft.part").write_text("mine")
        (target / "manifest.json").write_text("{}")
    before = contents(target)
    line = one_line(capsys, pretrain_argv(tmp_path, tokenizer_dir, corpus_file(tmp_path, 120), target))
    assert line.startswith(f"pe-book pretrain: error: {target} {says}")
    assert contents(target) == before


def test_a_corpus_file_that_is_not_utf8_is_one_line_naming_the_offset(tokenizer_dir, capsys, tmp_path):
    corpus = corpus_file(tmp_path, 120)
    corpus.write_bytes(b"good film\xe9" + corpus.read_bytes())  # a latin-1 e acute
    line = one_line(capsys, pretrain_argv(tmp_path, tokenizer_dir, corpus, tmp_path / "run"))
    assert line.startswith(f"pe-book pretrain: error: {corpus} is not UTF-8 text: byte 0xe9 at offset 9 ")


def heatmap_argv(model: Path, heatmap: Path) -> list[str]:
    return ["properties", str(model), "--length", "5", "--heatmap", str(heatmap)]


def test_a_heatmap_in_a_read_only_folder_is_one_line(ape_model, read_only, capsys):
    line = one_line(capsys, heatmap_argv(ape_model, read_only / "h.png"))
    assert line.startswith(f"pe-book properties: error: {read_only} cannot be written (")
    assert list(read_only.iterdir()) == []


def test_a_heatmap_on_a_full_disk_is_one_line(ape_model, capsys, tmp_path, monkeypatch):
    import errno

    import pe_lib.io

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pe_lib.io.os, "fsync", full)
    line = one_line(capsys, heatmap_argv(ape_model, tmp_path / "h.png"))
    assert line.startswith(f"pe-book properties: error: disk full while writing heatmap "
                           f"{tmp_path / 'h.png'}; nothing half-written was kept")
    assert not (tmp_path / "h.png").exists() and list(tmp_path.glob(".h.png*")) == []


@pytest.mark.parametrize("argv, status, says", [
    (["--variants", "rpe-learned+untie-cls+untie-cls"], 1,
     "error: 'rpe-learned+untie-cls+untie-cls' names 'untie-cls' more than once; name each part of a variant "
     "once"),
    (["--variants", "ape-sin+rpe-learned", "rpe-learned+ape-sin"], 2,
     "error: argument --variants: ape-sin+rpe-learned is named more than once (ape-sin+rpe-learned, "
     "rpe-learned+ape-sin); name each once"),
    (["--tasks", "cola", "sst2", "cola"], 2,
     "error: argument --tasks: cola is named more than once (cola, cola)"),
])
def test_a_variant_or_task_named_twice_is_one_line(argv, status, says, folders, capsys):
    line = one_line(capsys, ["run", "--dry-run", *argv, *folders], status=status)
    assert line.startswith(f"pe-book run: {says}")


@pytest.mark.parametrize("assignment, says", [
    ("pretrain.lr=nan", "PretrainConfig.lr must be a finite number above 0, got nan"),
    ("model.hidden_size=0", "model.hidden_size is 0, expected an integer of at least 1 like 768"),
    ("model.num_attention_heads=3", "hidden_size 64 is not a multiple of num_attention_heads 3: "
                                    "num_attention_heads must divide 64"),
])
def test_a_set_value_the_model_or_optimiser_would_fail_on_is_one_line(assignment, says, folders, capsys):
    line = one_line(capsys, ["run", "--dry-run", "--set", assignment, *folders])
    assert line.startswith(f"pe-book run: error: --set {assignment}: {says}")
