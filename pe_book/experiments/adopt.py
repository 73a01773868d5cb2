"""Taking a profile's artifacts and models from another profile that computed them under the same keys.

Keys are configurations, so an artifact of profile ``source`` whose key the ``target`` profile's
plan names holds exactly what the target would compute: the same model pretrained on the same
data with the same recipe, and so on. A pretrained model found under the same key is also
installed in the target's work folder, so that the target's later stages (other fine-tuning
seeds, the length extrapolation) use it instead of training it again. A snapshot of a long run is
the model of a run of that length (the anytime schedules make it bit-identical, which
``tests/training/test_pretrain.py`` checks), so a study's snapshot serves as a shorter profile's
final model; its ``result.json`` then names the target's run, and ``adopted_from`` the snapshot.
The other way round, a shorter profile's finished run is the first steps of a study's run: the
study's run begins from its last checkpoint and trains only the steps that remain.

Nothing is recomputed and nothing in the source is changed; every copy is checked against its
manifest and written atomically.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from pe_book.experiments.results import Results
from pe_book.experiments.runner import Runner
from pe_lib.errors import InputError
from pe_lib.io import MANIFEST, atomic_dir, atomic_write_text, manifested_dir, read_json, write_json, write_manifest
from pe_lib.training.checkpoints import extend, finished_result, latest_checkpoint
from pe_lib.training.pretrain_config import run_identity


@dataclass
class Adopted:
    artifacts: list[Path] = field(default_factory=list)  # the target's new artifact folders
    models: list[Path] = field(default_factory=list)  # the target's new model folders
    extended: list[Path] = field(default_factory=list)  # the target's run folders begun from a shorter run


def artifact_key(folder: Path) -> str:
    """The key of an artifact folder ``<stage>-<key>``."""
    return folder.name.rsplit("-", 1)[1]


def stored_by_key(runner: Results) -> dict[tuple[str, str], Path]:
    """``(variant, key) -> artifact folder`` of every artifact in ``runner``'s store that its checked
    reader reads (a manifest vouching for each of its files)."""
    return {(folder.parent.name, artifact_key(folder)): folder for folder in runner.store.artifact_folders()
            if runner.store.read(folder) is not None}


def adopt(target: Runner, source: Runner) -> Adopted:
    """Copy into ``target``'s store every artifact its plan lacks that ``source``'s store holds under
    the same key, and install every model of ``source``'s runs that ``target`` names by the same key."""
    done = Adopted()
    found = stored_by_key(source)
    for planned in target.plan():
        origin = found.get((planned.variant, artifact_key(planned.folder)))
        if planned.stored or origin is None:
            continue
        with atomic_dir(planned.folder) as work:
            shutil.copytree(origin, work, dirs_exist_ok=True)
        done.artifacts.append(planned.folder)
    shared = [v for v in target.profile.variants if v in source.profile.variants]
    models = {source.pretrain_key(v, p, steps): (v, p, steps) for v, p, steps in (source.models(shared) if shared else [])}
    for variant, p, steps in target.models(list(target.profile.variants)):
        match = models.get(target.pretrain_key(variant, p, steps))
        if match is not None and install_model(target, (variant, p, steps), source, match):
            done.models.append(target.model_dir(variant, p, steps))
        if match is not None and target.snapshot(steps) is not None and source.snapshot(match[2]) is None \
                and begin_from(target, variant, p, source.run_dir(*match[:2])):
            done.extended.append(target.run_dir(variant, p))
    return done


def begin_from(target: Runner, variant: str, pretrain_seed: int, shorter: Path) -> bool:
    """Start ``target``'s run of a variant's pretraining seed from the finished run folder
    ``shorter`` whose final model is one of the run's snapshots (its first steps, under an anytime
    schedule), when ``shorter`` keeps its last checkpoint and the target's run is not begun; True
    when started."""
    if finished_result(shorter) is None or latest_checkpoint(shorter) is None:
        return False  # not trained here (or adopted, which keeps no checkpoint): the run starts at step 0
    return extend(shorter, target.run_dir(variant, pretrain_seed), target.model_config(variant),
                  target.run_pretrain_config(pretrain_seed))


def install_model(target: Runner, model: tuple[str, int, int], source: Runner, match: tuple[str, int, int]) -> bool:
    """Install ``source``'s saved model ``match`` as ``target``'s ``model`` (variant, pretraining
    seed, steps) when the target lacks it and the source has it; True when installed."""
    variant, p, steps = model
    origin = source.model_dir(*match).parent  # the run folder, or the snapshot folder
    if target.model_dir(*model).exists() or not (origin / "model").exists():
        return False
    run_dir = target.run_dir(variant, p)
    result = {**read_json(origin / "result.json"),
              **run_identity(target.model_config(variant), target.run_pretrain_config(p)), "adopted_from": str(origin)}
    if target.snapshot(steps) is not None:  # a snapshot of the target's run
        with manifested_dir(target.model_dir(*model).parent, "adopted snapshot") as work:
            shutil.copytree(origin / "model", work / "model", ignore=shutil.ignore_patterns(MANIFEST))
            write_json(work / "result.json", result)
        return True
    run_dir.mkdir(parents=True, exist_ok=True)  # the target's final model: a finished run folder
    with manifested_dir(run_dir / "model", "adopted model") as work:
        shutil.copytree(origin / "model", work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
    curve = (source.run_dir(*match[:2]) / "curve.jsonl").read_text().splitlines()
    atomic_write_text(run_dir / "curve.jsonl", "".join(f"{line}\n" for line in curve
                                                       if line.strip() and json.loads(line)["step"] <= steps))
    write_json(run_dir / "result.json", result)
    write_manifest(run_dir, ("result.json", "curve.jsonl", f"model/{MANIFEST}"))  # last: the run is finished
    return True


def rekey_auto_precision(target: Runner) -> list[Path]:
    """Store under ``target``'s keys the artifacts that its store holds under the keys of the same
    profile with precision "auto", where those ran in the target's explicit precision. "auto" means
    fp32 on some machines and bf16 on others, so a profile that is continued on other machines
    names its precision; the numbers it stored under "auto" are those of the precision they ran in,
    which the stored pretrainings record (all must be the target's). Each artifact is copied stage by
    stage (same variant, same stage name) with its payload and provenance, takes the target's
    configuration and names the folder it came from (``rekeyed_from``); the old folder, which the
    target would never read, is removed. Returns the new folders."""
    profile, precision = target.profile, target.profile.pretrain.precision
    if precision == "auto" or profile.finetune.precision != precision:
        raise InputError(f"profile {profile.name}: rekeying needs one explicit precision for pretraining and "
                         f"fine-tuning, got {precision} and {profile.finetune.precision}")
    auto = target.with_profile(replace(profile, pretrain=replace(profile.pretrain, precision="auto"),
                                       finetune=replace(profile.finetune, precision="auto")))
    ran = auto.stored_precision()
    if ran not in ("", precision):
        raise InputError(f"profile {profile.name}: its stored models ran in {ran}, not {precision}; "
                         "they cannot take its keys")
    new = {(planned.variant, planned.stage): planned for planned in target.plan()}
    done = []
    for old in auto.plan():
        planned = new[(old.variant, old.stage)]
        if not old.stored or old.folder == planned.folder:
            continue
        if not planned.stored:
            document = read_json(old.folder / "artifact.json")
            document["provenance"] = {**document["provenance"], "config": planned.config, "rekeyed_from": old.folder.name}
            with atomic_dir(planned.folder) as work:
                write_json(work / "artifact.json", document)
                if (old.folder / "arrays.npz").exists():
                    shutil.copyfile(old.folder / "arrays.npz", work / "arrays.npz")
                write_manifest(work)
            done.append(planned.folder)
        shutil.rmtree(old.folder)
    return done
