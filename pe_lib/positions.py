"""The position-embedding zoo: one small class per variant, a string registry, and the parser.

A variant name is one basic name or ``APE+RELATIVE`` (at most one absolute PE plus at most one
relative kind), e.g. ``"ape-sin-learned+rpe-learned"``. Every PE enters the encoder through one of
three integration points (as in x-transformers):

=============  =====================================================  ==========================
integration     what it does                                           variants
=============  =====================================================  ==========================
input           ``x_i = WE(w_i) + p_i`` before the first layer          ``ape-*``
score bias      ``s_ij = q_i.k_j / sqrt(d) + b_ij`` inside attention    ``rpe-*``, ``alibi``, ``t5-bias``
rotation        ``q_i, k_j`` rotated by angle ``w * position``          ``rope``
=============  =====================================================  ==========================

Offsets follow transformers v4's ``relative_key`` convention: ``m = i - j`` (query position minus
key position), clipped to ``[-k, k]`` with ``k = config.rpe_max_distance``.

Choices the paper leaves open, and what this module does (each is a config field):

* sinusoidal APE scale: the paper adds ``[sin(w x), cos(w x)]`` to word embeddings whose init std
  is 0.02; ``ape_sin_scale`` (default ``initializer_range * sqrt(2)``) puts the fixed table on the
  same per-dimension RMS as a freshly initialised learned APE, so neither starts dominant.
* RPE clipping distance ``k`` (Shaw et al.; NEZHA clips its sinusoidal RPE too): ``rpe_max_distance``.
* whether sinusoidal RPE is direction-blind: the seed summary says equal ``|i - j|`` share one
  vector, which holds for ``[sin(w|m|), cos(w|m|)]`` (``rpe_sin_direction_blind=True``, default);
  NEZHA's ``[sin(w m), cos(w m)]`` is the ``False`` setting.
* RPE vectors are per layer (Shaw et al.), shared by the heads, and sized like one head.
* the init of the learned tables (APE, RPE, T5 buckets): ``N(0, position_init_std)``, by default
  ``initializer_range``; 0 starts them at zero, so that a learned APE is not input noise at first.
* Huang et al. 2020's key-side term ``k_j . r_{i-j}`` (HF v4 ``relative_key_query``): ``rpe_key_query``.

A score-bias variant may also carry the modifier ``untie-cls`` (e.g. ``"rpe-learned+untie-cls"``):
TUPE's untying of ``[CLS]`` from positions (Ke et al. 2021), see :class:`UntiedCLS`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn as nn
from transformers import initialization as init

from pe_lib.errors import InputError, PositionOutOfRange
from pe_lib.sinusoid import frequencies

# ----------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type[nn.Module]] = {}


def register(name: str):
    """Class decorator: make ``name`` a basic variant that builds this class."""

    def wrap(cls):
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


@dataclass(frozen=True)
class Variant:
    """A parsed variant name: at most one absolute PE, at most one relative kind, and whether
    [CLS] is untied from the relative score bias."""

    absolute: str | None
    relative: str | None
    untie_cls: bool = False

    @property
    def name(self) -> str:
        parts = [p for p in (self.absolute, self.relative) if p] + ([UNTIE_CLS] if self.untie_cls else [])
        return "+".join(parts) if parts else "none"

    @property
    def is_absolute(self) -> bool:
        """Whether the variant adds an absolute PE to the input."""
        return self.absolute is not None

    @property
    def has_offset_table(self) -> bool:
        """Whether its relative kind is a table of offset vectors (the paper's RPEs), as its class declares."""
        return self.relative is not None and _REGISTRY[self.relative].has_offset_table


def parse_variant(name: str) -> Variant:
    """Parse ``"ape-x+rpe-y"``; raise InputError (a ValueError) naming the valid choices on bad input."""
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"variant must be a non-empty string; valid basic names: {', '.join(PE_VARIANTS)}")
    parts = [p.strip() for p in name.split("+")]
    unknown = [p for p in parts if p not in _REGISTRY and p != UNTIE_CLS]
    if unknown:
        raise InputError(
            f"unknown position embedding {unknown[0]!r} in {name!r}; "
            f"valid basic names: {', '.join(PE_VARIANTS)} (combine one ape-* with one relative kind by '+', "
            f"and add '+{UNTIE_CLS}' to a score-bias kind)"
        )
    repeated = [p for i, p in enumerate(parts) if p in parts[:i]]
    if repeated:
        raise InputError(f"{name!r} names {repeated[0]!r} more than once; name each part of a variant once")
    if UNTIE_CLS in parts:
        return _with_untied_cls(name, [p for p in parts if p != UNTIE_CLS])
    if "none" in parts:
        if len(parts) > 1:
            raise InputError(f"'none' cannot be combined with other position embeddings (got {name!r})")
        return Variant(None, None)
    absolutes = [p for p in parts if _REGISTRY[p].integration == "input"]
    relatives = [p for p in parts if _REGISTRY[p].integration != "input"]
    if len(absolutes) > 1:
        raise InputError(f"at most one absolute PE per variant, got {absolutes} in {name!r}")
    if len(relatives) > 1:
        raise InputError(f"at most one relative PE (rpe-*, rope, alibi, t5-bias) per variant, got {relatives} in {name!r}")
    return Variant(absolutes[0] if absolutes else None, relatives[0] if relatives else None)


def _with_untied_cls(name: str, parts: list[str]) -> Variant:
    """``parts + untie-cls``: only a relative kind that adds a score bias can be untied."""
    biases = _bias_kinds()
    base = parse_variant("+".join(parts)) if parts else Variant(None, None)
    if base.relative not in biases:
        raise InputError(f"{UNTIE_CLS!r} unties [CLS] from a relative score bias, so {name!r} needs one of "
                         f"{', '.join(biases)}")
    return Variant(base.absolute, base.relative, untie_cls=True)


def resolve_variants(requested: Sequence[str], default: Sequence[str]) -> list[str]:
    """Canonical variant names: ``requested`` (validated by :func:`parse_variant`, which
    raises an InputError naming the valid ones) or, when it is empty, ``default``. Duplicates are
    dropped, the order kept."""
    names = [parse_variant(v).name for v in (requested or default)]
    return list(dict.fromkeys(names))


def all_variants(untied: bool = False) -> list[str]:
    """Every valid variant name: the basic ones and every APE+relative combination (``untied``:
    also every score-bias variant with ``+untie-cls``)."""
    absolutes = [n for n, c in _REGISTRY.items() if c.integration == "input"]
    relatives = [n for n, c in _REGISTRY.items() if c.integration not in ("input", "none")]
    names = list(PE_VARIANTS) + [f"{a}+{r}" for a in absolutes for r in relatives]
    if untied:
        biases = _bias_kinds()
        names += [f"{n}+{UNTIE_CLS}" for n in names if parse_variant(n).relative in biases]
    return names


def _bias_kinds() -> list[str]:
    return [n for n, c in _REGISTRY.items() if c.integration == "bias"]


# ----------------------------------------------------------------------------- shared maths


def position_init_std(config) -> float:
    """The init std of the learned position tables: ``config.position_init_std``, else ``initializer_range``."""
    std = getattr(config, "position_init_std", None)
    return config.initializer_range if std is None else std


def sinusoid_frequencies(dim: int, base: float) -> torch.Tensor:
    """w_i = base^(-2i/dim), i = 0 .. dim/2 - 1 (Vaswani et al.), as a float32 tensor of shape (dim/2,)."""
    return torch.from_numpy(frequencies(dim, base)).float()  # (dim/2,)


def sinusoid(positions: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """[sin(w_i x), cos(w_i x)]_i for each x: (n,) x (D/2,) -> (n, D); <p_x, p_y> = sum_i cos(w_i (x-y))."""
    angles = positions.float()[:, None] * freqs[None, :]  # (n, D/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)  # (n, D)


def clipped_offsets(nq: int, nk: int, k: int, device=None) -> torch.Tensor:
    """Row index into an offset table: idx[i, j] = clamp(i - j, -k, k) + k, shape (nq, nk)."""
    i = torch.arange(nq, device=device)[:, None]
    j = torch.arange(nk, device=device)[None, :]
    return (i - j).clamp(-k, k) + k  # (nq, nk)


# ----------------------------------------------------------------------------- base classes


class PositionEmbedding(nn.Module):
    """Base class. ``integration`` is one of 'none', 'input', 'bias', 'rotation'."""

    name: ClassVar[str]
    integration: ClassVar[str]
    per_layer: ClassVar[bool] = False  # True: every layer owns an instance (RPE); False: one per model
    has_offset_table: ClassVar[bool] = False  # True: a table of offset vectors r_m (Shaw-style rpe-*)

    def reset_tensors(self) -> None:
        """(Re)initialise this module's own tensors. Uses ``transformers.initialization`` so that,
        inside ``from_pretrained``, tensors loaded from a checkpoint are left alone while fixed,
        non-persistent tables (frequencies, slopes) are recomputed."""


class Frequencies:
    """Mixin for sinusoidal PEs: ``freqs`` = base^(-2i/dim), a Parameter when trainable, else a
    buffer that is not saved (it is recomputed on load)."""

    def init_frequencies(self, dim: int, base: float, trainable: bool) -> None:
        self.freq_dim, self.freq_base = dim, base
        freqs = sinusoid_frequencies(dim, base)  # (dim/2,)
        if trainable:
            self.freqs = nn.Parameter(freqs)
        else:
            self.register_buffer("freqs", freqs, persistent=False)

    def reset_tensors(self) -> None:
        init.copy_(self.freqs, sinusoid_frequencies(self.freq_dim, self.freq_base))


class AbsolutePE(PositionEmbedding):
    """Added to the word embeddings: x_i = WE(w_i) + TE(t_i) + p_i, then LayerNorm."""

    integration = "input"
    max_positions: int | None = None  # None: defined for any position

    def vectors(self, positions: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, H)
        raise NotImplementedError

    def first(self, n: int, device=None) -> torch.Tensor:  # -> (n, H)
        """The vectors of positions 0 .. n-1 (checked against the table by the length alone, so a
        traced model has no test on values)."""
        self.check_range(n - 1)
        return self.vectors(torch.arange(n, device=device))  # (n, H)

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:  # (B, n) -> (B, n, H)
        """The vectors of given positions. Their range is checked in eager mode only: under
        ``torch.compile``/``torch.export`` it would be a branch on tensor values."""
        if not torch.compiler.is_compiling():
            self.check_range(int(position_ids.max()))
        flat = self.vectors(position_ids.reshape(-1))  # (B*n, H)
        return flat.view(*position_ids.shape, -1)  # (B, n, H)

    def check_range(self, position: int) -> None:
        """Raise :class:`PositionOutOfRange` when ``position`` is beyond the table."""
        if self.max_positions is not None and position >= self.max_positions:
            raise PositionOutOfRange(
                f"{self.name}: position {position} is beyond the maximum of {self.max_positions} positions "
                "(max_position_embeddings); use a shorter input or a relative/sinusoidal variant",
                position, self.max_positions
            )


class RelativePE(PositionEmbedding):
    """Enters attention. Subclasses override ``rotate`` (q/k rotation), ``bias`` (content-dependent
    score bias, per layer) or ``static_bias`` (content-independent, computed once per forward).
    ``untie`` (an :class:`UntiedCLS`, or None) rewrites the [CLS] row and column of either bias."""

    def __init__(self):
        super().__init__()
        self.untie: UntiedCLS | None = None

    def untied(self, bias: torch.Tensor) -> torch.Tensor:
        return bias if self.untie is None else self.untie(bias)

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return q, k

    def bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor | None:
        return None

    def static_bias(self, nq: int, nk: int, device) -> torch.Tensor | None:
        return None


@register("none")
class NoPE(PositionEmbedding):
    """No position information at all: self-attention is then permutation-equivariant."""

    integration = "none"


# ----------------------------------------------------------------------------- absolute PEs


@register("ape-learned")
class LearnedAPE(AbsolutePE):
    """BERT's fully learnable APE (Gehring et al. 2017): p_x = P[x], P in R^{L x H}, L = max_position_embeddings."""

    def __init__(self, config):
        super().__init__()
        self.max_positions = config.max_position_embeddings
        self.std = position_init_std(config)
        self.weight = nn.Parameter(torch.empty(config.max_position_embeddings, config.hidden_size))
        self.reset_tensors()

    def reset_tensors(self):
        init.normal_(self.weight, std=self.std)

    def vectors(self, positions):
        return self.weight[positions]  # (n, H)


@register("ape-sin")
class SinusoidalAPE(Frequencies, AbsolutePE):
    """Fixed sinusoidal APE (Vaswani et al. 2017): p_x = s [sin(w_i x), cos(w_i x)]_i, w_i = base^(-2i/H).

    <p_x, p_y> = s^2 sum_i cos(w_i (x - y)) = s^2 psi(x - y): translation invariant and symmetric;
    monotone only while psi'(m) < 0 (see ``pe_lib.sinusoid.monotonic_range``).
    ``s = config.ape_sin_scale`` (see the module docstring). No trainable parameters.
    """

    trainable = False

    def __init__(self, config):
        super().__init__()
        self.scale = config.ape_sin_scale
        self.init_frequencies(config.hidden_size, config.sinusoid_base, self.trainable)

    def vectors(self, positions):
        return self.scale * sinusoid(positions, self.freqs)  # (n, H)


@register("ape-sin-learned")
class LearnedSinusoidalAPE(SinusoidalAPE):
    """Learnable sinusoidal APE (new in the paper): the form of ``ape-sin`` with trainable w_i,
    initialised at base^(-2i/H). Still translation invariant and symmetric for any w; learning w moves
    the range where psi is monotone."""

    trainable = True


# ----------------------------------------------------------------------------- relative PEs (score bias)


class OffsetTableRPE(RelativePE):
    """Shaw-style RPE: one head-sized vector r_m per clipped offset m = clamp(i - j, -k, k).

        s_ij = (q_i . k_j + q_i . r_{i-j} [+ k_j . r_{i-j}]) / sqrt(d)

    The bracketed key-side term is Huang et al. 2020 (``rpe_key_query``). The relative term is
    computed without an (n, n, d) tensor: score q against the (2k'+1, d) table, then gather by the
    offset index (k' = min(k, n - 1): offsets beyond the sequence cannot occur).
    """

    integration = "bias"
    per_layer = True
    has_offset_table = True

    def __init__(self, config):
        super().__init__()
        self.max_distance = config.rpe_max_distance
        self.key_query = config.rpe_key_query
        self.head_dim = config.hidden_size // config.num_attention_heads

    def table(self, k: int) -> torch.Tensor:
        """Offset vectors r_{-k} .. r_{k}, shape (2k+1, d); row m + k holds r_m."""
        raise NotImplementedError

    def offset_vectors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(offsets, vectors) over the full clipping range, for plots and indicators."""
        k = self.max_distance
        return torch.arange(-k, k + 1), self.table(k)

    def bias(self, q, k):
        nq, nk = q.shape[-2], k.shape[-2]
        dist = min(self.max_distance, max(nq, nk) - 1)
        table = self.table(dist).to(q.dtype)  # (2k'+1, d)
        idx = clipped_offsets(nq, nk, dist, q.device)  # (nq, nk)
        scores = q @ table.T  # (B, h, nq, 2k'+1)
        rel = scores.gather(-1, idx.expand(*scores.shape[:-2], nq, nk))  # (B, h, nq, nk)
        if self.key_query:
            kscores = k @ table.T  # (B, h, nk, 2k'+1)
            rel = rel + kscores.gather(-1, idx.T.expand(*kscores.shape[:-2], nk, nq)).transpose(-1, -2)  # (B, h, nq, nk)
        return rel / math.sqrt(self.head_dim)  # (B, h, nq, nk)


@register("rpe-learned")
class LearnedRPE(OffsetTableRPE):
    """Fully learnable RPE (Shaw et al. 2018): a free vector per clipped offset and per layer, with
    distinct vectors for forward (i > j) and backward (i < j) offsets, so phi need not be symmetric."""

    def __init__(self, config):
        super().__init__(config)
        self.std = position_init_std(config)
        self.weight = nn.Parameter(torch.empty(2 * self.max_distance + 1, self.head_dim))
        self.reset_tensors()

    def reset_tensors(self):
        init.normal_(self.weight, std=self.std)

    def table(self, k):
        c = self.max_distance
        return self.weight[c - k : c + k + 1]  # (2k+1, d)


@register("rpe-sin")
class SinusoidalRPE(Frequencies, OffsetTableRPE):
    """Fixed sinusoidal RPE (NEZHA, Wei et al. 2019): r_m = [sin(w_i m'), cos(w_i m')]_i with
    w_i = base^(-2i/d) over the head size d, m' = |m| (direction-blind, the seed's reading) or m'
    = m (NEZHA's code) by ``rpe_sin_direction_blind``. No trainable parameters."""

    trainable = False

    def __init__(self, config):
        super().__init__(config)
        self.direction_blind = config.rpe_sin_direction_blind
        self.init_frequencies(self.head_dim, config.sinusoid_base, self.trainable)

    def table(self, k):
        offsets = torch.arange(-k, k + 1, device=self.freqs.device)  # (2k+1,)
        if self.direction_blind:
            offsets = offsets.abs()
        return sinusoid(offsets, self.freqs)  # (2k+1, d)


@register("rpe-sin-learned")
class LearnedSinusoidalRPE(SinusoidalRPE):
    """Learnable sinusoidal RPE (new in the paper): ``rpe-sin`` with trainable w_i per layer."""

    trainable = True


@register("alibi")
class ALiBi(RelativePE):
    """ALiBi (Press et al. 2022), bidirectional: b_ij = -slope_h |i - j|, slopes 2^(-8h/H') (geometric,
    Press et al.'s rule for head counts that are not powers of two). Fixed, symmetric, monotone."""

    integration = "bias"

    def __init__(self, config):
        super().__init__()
        self.n_heads = config.num_attention_heads
        self.register_buffer("slopes", self.head_slopes(self.n_heads), persistent=False)

    def reset_tensors(self):
        init.copy_(self.slopes, self.head_slopes(self.n_heads))

    @staticmethod
    def head_slopes(n_heads: int) -> torch.Tensor:
        def power_of_two(n):
            start = 2 ** (-8 / n)
            return [start ** (i + 1) for i in range(n)]

        closest = 2 ** math.floor(math.log2(n_heads))
        slopes = power_of_two(closest)
        if closest < n_heads:
            slopes += power_of_two(2 * closest)[0::2][: n_heads - closest]
        return torch.tensor(slopes)  # (h,)

    def static_bias(self, nq, nk, device):
        i = torch.arange(nq, device=device)[:, None]
        j = torch.arange(nk, device=device)[None, :]
        distance = (i - j).abs().float()  # (nq, nk)
        return -self.slopes.to(device)[:, None, None] * distance  # (h, nq, nk)


@register("t5-bias")
class T5Bias(RelativePE):
    """T5 relative bias (Raffel et al. 2020): a learned scalar per head and per log-bucket of j - i,
    bidirectional (half the buckets per direction; exact up to buckets/4, logarithmic up to
    ``t5_max_distance``), shared by all layers. Adds b_h(bucket(j - i)) to the scores."""

    integration = "bias"

    def __init__(self, config):
        super().__init__()
        self.num_buckets = config.t5_num_buckets
        self.max_distance = config.t5_max_distance
        self.std = position_init_std(config)
        self.weight = nn.Parameter(torch.empty(self.num_buckets, config.num_attention_heads))
        self.reset_tensors()

    def reset_tensors(self):
        init.normal_(self.weight, std=self.std)

    def buckets(self, relative: torch.Tensor) -> torch.Tensor:
        """T5's bidirectional bucketing of relative = key - query positions."""
        half = self.num_buckets // 2
        bucket = (relative > 0).long() * half
        distance = relative.abs()
        exact = half // 2
        log_part = exact + (
            torch.log(distance.float().clamp(min=1) / exact) / math.log(self.max_distance / exact) * (half - exact)
        ).long()
        log_part = log_part.clamp(max=half - 1)
        return bucket + torch.where(distance < exact, distance, log_part)

    def static_bias(self, nq, nk, device):
        relative = torch.arange(nk, device=device)[None, :] - torch.arange(nq, device=device)[:, None]  # (nq, nk)
        return self.weight[self.buckets(relative)].permute(2, 0, 1)  # (h, nq, nk)


# ----------------------------------------------------------------------------- [CLS] untying

UNTIE_CLS = "untie-cls"


class UntiedCLS(PositionEmbedding):
    """TUPE's [CLS] untying (Ke et al. 2021): [CLS] sits at position 0 of every input but is not a
    word of the sentence, so relating it to the others by offset ties it to the first word. Its
    row and column of the relative bias are reset:

        b'_0j = theta_1   (every j: what [CLS] attends to)
        b'_i0 = theta_2   (i > 0: how much each word attends to [CLS])
        b'_ij = b_ij      otherwise

    with learned scalars per head. TUPE's theta_1 is the same for the whole row, which softmax
    ignores (its gradient is zero), so it is fixed at 0 here; ``theta`` holds theta_2, shape (h,),
    starting at 0. Built with a score-bias PE (``rpe-*``, ``alibi``, ``t5-bias``) by ``+untie-cls``;
    one per relative module (per layer for ``rpe-*``, shared for ``alibi`` and ``t5-bias``)."""

    integration = "modifier"

    def __init__(self, config):
        super().__init__()
        self.theta = nn.Parameter(torch.empty(config.num_attention_heads))  # (h,)
        self.reset_tensors()

    def reset_tensors(self):
        init.zeros_(self.theta)

    def forward(self, bias: torch.Tensor) -> torch.Tensor:  # (..., h, nq, nk) -> the same tensor
        """Rewrites ``bias`` in place (two slices, O(n)): every bias module returns a fresh tensor
        that its backward does not need."""
        bias[..., 0, :] = 0.0  # (..., h, nk): the [CLS] row
        bias[..., 1:, 0] = self.theta.to(bias.dtype)[:, None]  # (..., h, nq - 1): the [CLS] column
        return bias


# ----------------------------------------------------------------------------- rotary


@register("rope")
class RoPE(Frequencies, RelativePE):
    """Rotary PE (Su et al. 2021): rotate each pair (q_{2i}, q_{2i+1}) -- here the halves
    (q_i, q_{i+d/2}) -- by angle w_i x, w_i = base^(-2i/d). Then q_x . k_y depends on x - y only."""

    integration = "rotation"

    def __init__(self, config):
        super().__init__()
        self.init_frequencies(config.hidden_size // config.num_attention_heads, config.rope_base, trainable=False)

    def rotate(self, q, k):
        n = q.shape[-2]
        angles = torch.arange(n, device=q.device).float()[:, None] * self.freqs[None, :]  # (n, d/2)
        cos = angles.cos().repeat(1, 2).to(q.dtype)  # (n, d)
        sin = angles.sin().repeat(1, 2).to(q.dtype)  # (n, d)
        return q * cos + self._rotate_half(q) * sin, k * cos + self._rotate_half(k) * sin  # (B, h, n, d) each

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)  # (..., d/2) each
        return torch.cat([-x2, x1], dim=-1)  # (..., d)


#: The basic variant names (combine one ``ape-*`` with one relative kind by ``+``).
PE_VARIANTS: tuple[str, ...] = tuple(_REGISTRY)


def build_absolute(variant: Variant, config) -> AbsolutePE | None:
    return _REGISTRY[variant.absolute](config) if variant.absolute else None


def build_relative(variant: Variant, config) -> nn.Module | None:
    """One module shared by the layers, or a ModuleList with one per layer (``per_layer`` classes),
    each with its own :class:`UntiedCLS` when the variant unties [CLS]."""
    if variant.relative is None:
        return None
    cls = _REGISTRY[variant.relative]
    modules = [cls(config) for _ in range(config.num_hidden_layers if cls.per_layer else 1)]
    if variant.untie_cls:
        for module in modules:
            module.untie = UntiedCLS(config)
    return nn.ModuleList(modules) if cls.per_layer else modules[0]
