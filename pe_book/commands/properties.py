"""``pe-book properties MODEL``: the property indicators of a model's position embeddings.

For a PEBert model: APE dot products, RPE offset-vector dot products and identical-word probing.
For any other HuggingFace checkpoint or hub id (BERT, RoBERTa, GPT-2, ...): the dot products of its
absolute position-embedding matrix; a model without one (e.g. rotary positions) is a clear error."""
from __future__ import annotations

import json


def configure(parser) -> None:
    from pe_book.commands.common import at_least, new_file, non_negative_int
    from pe_lib.probing import PROXIMITY_KINDS

    parser.add_argument("model", help="folder or hub id of a PEBert model or of any HF model with an absolute PE matrix")
    parser.add_argument("--kind", nargs="+", choices=PROXIMITY_KINDS, help="which proximities (default: all the model has)")
    parser.add_argument("--length", type=at_least(3), help="positions (APE/probe) or 2k+1 offsets (RPE) to use")
    parser.add_argument("--layer", type=non_negative_int, default=0, help="layer for RPE vectors and probing (default: 0)")
    parser.add_argument("--window", type=at_least(3), default=8, help="local monotonicity window (default: 8)")
    parser.add_argument("--heatmap", type=new_file, help="save the proximity heatmaps to this PNG file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def available_kinds(model) -> list[str]:
    kinds = ["ape"] if model.embeddings.position is not None else []
    relative = model.relative_for(0)
    if relative is not None and relative.has_offset_table:
        kinds.append("rpe")
    return kinds + ["probe"]


def run(args) -> int:
    from pe_book.commands.common import BadOptionValue, check_weights, load_model, model_config
    from pe_lib.errors import InputError
    from pe_lib.config import PEBertConfig
    from pe_lib.probing import absolute_position_matrix, proximity
    from pe_lib.properties import indicators

    config = model_config(args.model)
    check_weights(args.model)
    model = load_model(args.model, config).base_model.eval()  # the encoder, without a task's head
    if isinstance(config, PEBertConfig):
        title = config.position_embedding
        has = available_kinds(model)
        kinds = args.kind or has
        if not set(kinds) <= set(has):
            raise BadOptionValue("--kind", f"a {title} model has no {', '.join(k for k in kinds if k not in has)} "
                                           f"proximity; it has: {', '.join(has)}")
        if args.layer >= config.num_hidden_layers:
            raise BadOptionValue("--layer", f"the model has {config.num_hidden_layers} layers (0 to "
                                            f"{config.num_hidden_layers - 1}), got {args.layer}")
        phis = {kind: proximity(model, kind, length=args.length, layer=args.layer) for kind in kinds}
    else:
        if args.kind not in (None, ["ape"]):
            raise InputError(f"only --kind ape applies to a {config.model_type!r} model")
        try:
            name, matrix = absolute_position_matrix(model)
        except ValueError as error:
            raise InputError(f"{args.model}: {error}") from None
        matrix = matrix[: args.length] if args.length else matrix
        title = f"{config.model_type} ({name}, {matrix.shape[0]} positions)"
        phis = {"ape": matrix @ matrix.T}
    table = {kind: indicators(phi, window=args.window) for kind, phi in phis.items()}
    if args.json:
        print(json.dumps(table, indent=2))
    else:
        print(f"{title}  ({args.model})")
        print(f"{'proximity':10s} {'monotonicity':>13s} {'local mono.':>12s} {'transl. inv.':>13s} {'symmetry':>9s}")
        for kind, row in table.items():
            print(f"{kind:10s} {row['monotonicity']:13.3f} {row['monotonicity_local']:12.3f} "
                  f"{row['translation_invariance']:13.3f} {row['symmetry']:9.3f}")
    if args.heatmap:
        save_heatmaps(phis, args.heatmap, title)
    return 0


def save_heatmaps(phis: dict, path: str, title: str) -> None:
    """The proximity heatmaps as one image at ``path`` (PNG, or the format its suffix names), written
    atomically: a read-only folder or a full disk is one error line, and no half-written file is left."""
    import io
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pe_lib.io import atomic_write_bytes, explain_disk_full

    fig, axes = plt.subplots(1, len(phis), figsize=(4 * len(phis), 3.6), squeeze=False)
    for ax, (kind, phi) in zip(axes[0], phis.items()):
        image = ax.imshow(phi, cmap="viridis")
        ax.set_title(kind)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.suptitle(title)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format=os.path.splitext(path)[1][1:] or "png", dpi=120)
    plt.close(fig)
    with explain_disk_full(f"heatmap {path}"):
        atomic_write_bytes(path, png.getvalue())
