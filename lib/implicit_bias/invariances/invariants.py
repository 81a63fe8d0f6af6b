"""Conserved quantities of gradient flow in positively homogeneous networks, and their exact
bookkeeping under gradient descent (Le & Jegelka 2022, Lemma 3, Theorem 1, Lemma 4, Lemma 8,
Appendix F).

Vocabulary
----------
A *unit* is a hidden neuron, or the output channel of a convolution (all its spatial copies
share one kernel, Lemma 8). Its *in-weights* are the parameters that feed it (a row of ``W_l``,
the kernel ``K_l[c]``, a learnable skip weight, a bias when biases are counted as edges from a
constant input); its *out-weights* are the parameters that read it (a column of ``W_{l+1}``, the
slice ``K_{l+1}[:, c]``, the ``s*s`` columns of the first dense layer that read channel ``c``
after flattening, the next block's skip weights). A :class:`NeuronGroup` is a set of units that
share one layout, e.g. all neurons of one hidden layer.

For a unit ``v``, the *vertex-wise invariant* (Lemma 3, Eq. 4) is
``Q_v = ||in_v||^2 - ||out_v||^2``. If every in- and out-weight of ``v`` is learnable and the
network is positively 1-homogeneous in the pair (scale ``in_v`` by ``a > 0``, ``out_v`` by
``1/a``: the function does not change), then Euler's identity gives, for *every* sample and
with autograd's choice ``relu'(0) = 0``,

    <in_v, grad_in_v> - <out_v, grad_out_v> = 0,                                       (E)

so ``dQ_v/dt = 0`` under gradient flow. One gradient-descent step ``w' = w - eta g`` changes it
by exactly (Appendix F)

    Q_v(w') - Q_v(w) = -2 eta (E) + eta^2 (||g_in_v||^2 - ||g_out_v||^2)
                     = eta^2 (||g_in_v||^2 - ||g_out_v||^2),

so ``Q_v(w_t) - Q_v(w_0) - sum_{s<t} eta_s^2 (||g_in||^2 - ||g_out||^2)`` is zero up to
floating-point round-off. Max-pool is allowed: it acts within one channel and commutes with
positive scaling, so the rescaling symmetry (and (E)) survives it.

The *matrix invariant* of a group (Theorem 1, Eq. 6) is
``M = W_2^T W_2 - W_1 W_1^T`` (units x units), with ``W_1`` the stacked in-weights (one row per
unit) and ``W_2`` the stacked out-weights (one column per unit). Its diagonal is ``-Q``. Its
off-diagonal entries are conserved for linear activations, but for ReLU only while the two units
share their activation pattern (see the chapter). The *cut invariant* (Lemma 4) compares the
squared Frobenius norms of two *cuts*: sets of parameters that every input-output path crosses
exactly once.

Every function takes a dict of parameters (``named_parameters`` of a model, or the stacked
parameters of an :class:`~implicit_bias.ensembles.Ensemble`) and ``batch_dims``, the number of
leading axes (e.g. the ensemble axis) to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from ..ensembles import Ensemble
from ..models import MLP, ConvNet, ResidualBlock, ResNetMLP, activation_module
from ..train import LossFn, LossName, TrainingDiverged, loss_function

Params = Mapping[str, torch.Tensor]
Mode = Literal["row", "col"]

__all__ = [
    "Cut",
    "MixedNet",
    "NeuronGroup",
    "Term",
    "Tracked",
    "cut_corrections",
    "cut_norms",
    "first_order_terms",
    "gd_corrections",
    "homogeneous",
    "isolated_kink",
    "layer_cuts",
    "matrix_corrections",
    "matrix_first_order_terms",
    "matrix_invariants",
    "abs_matrix_invariants",
    "abs_matrix_corrections",
    "mlp_preactivations",
    "neuron_groups",
    "neuron_invariants",
    "neuron_scales",
    "param_grads",
    "push_from_zero_",
    "train_tracked",
    "weight_signs",
]


# --------------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class Term:
    """One parameter's share of the weights around a group of units.

    ``mode='row'``: unit ``u`` owns ``param[u, ...]`` (a weight row, a kernel ``K[c]``, a bias
    entry, a diagonal skip entry). ``mode='col'``: unit ``u`` owns ``param[:, u-th block of the
    second axis]``, the second axis being split into ``units`` equal blocks (a weight column; the
    slice ``K[:, c]`` of the next kernel; the ``s*s`` columns of a dense layer that read channel
    ``c`` of a flattened ``(c, s, s)`` feature map).
    """

    param: str
    mode: Mode


@dataclass(frozen=True)
class NeuronGroup:
    """Units sharing one layout. ``conserved`` says whether Lemma 3 applies (all incident
    weights learnable and counted, activation positively homogeneous); ``why`` explains a
    ``False``."""

    name: str
    units: int
    inputs: tuple[Term, ...]
    outputs: tuple[Term, ...]
    conserved: bool = True
    why: str = ""
    point: int | None = None  # the point of Theorem 1 whose pair (W_1, W_2) the group forms


@dataclass(frozen=True)
class Cut:
    """A set of whole parameters (Lemma 4's layer ``F``). ``conserved`` is False when it is not
    an input-output cut of a homogeneous network (then the invariance need not hold)."""

    name: str
    params: tuple[str, ...]
    conserved: bool = True
    why: str = ""


def homogeneous(act: nn.Module) -> bool:
    """True for positively 1-homogeneous activations (ReLU, leaky ReLU, identity)."""
    return isinstance(act, nn.ReLU | nn.LeakyReLU | nn.Identity)


def _unit_view(p: torch.Tensor, mode: Mode, units: int, batch_dims: int) -> torch.Tensor:
    """``p`` as ``(*batch, units, m)``: one row of weights per unit."""
    batch = p.shape[:batch_dims]
    core = p.shape[batch_dims:]
    if mode == "row":
        if core[0] != units:
            raise ValueError(f"row term has {core[0]} rows, expected {units} units")
        return p.reshape(*batch, units, -1)
    if mode == "col":
        if len(core) < 2 or core[1] % units:
            raise ValueError(f"col term of shape {tuple(core)} cannot be split into {units} units")
        v = p.reshape(*batch, core[0], units, -1)
        return v.movedim(batch_dims + 1, batch_dims).reshape(*batch, units, -1)
    raise ValueError(f"unknown term mode {mode!r}; use 'row' or 'col'")


def _group_inner(a: Params, b: Params, group: NeuronGroup, batch_dims: int) -> torch.Tensor:
    """``sum_in <a_in, b_in> - sum_out <a_out, b_out>`` per unit: ``(*batch, units)``."""
    total = None
    for sign, terms in ((1.0, group.inputs), (-1.0, group.outputs)):
        for t in terms:
            va = _unit_view(a[t.param], t.mode, group.units, batch_dims)
            vb = _unit_view(b[t.param], t.mode, group.units, batch_dims)
            part = sign * (va * vb).sum(-1)
            total = part if total is None else total + part
    assert total is not None
    return total


def _group_total(a: Params, group: NeuronGroup, batch_dims: int) -> torch.Tensor:
    """``||in||^2 + ||out||^2`` per unit: ``(*batch, units)``."""
    total = None
    for t in (*group.inputs, *group.outputs):
        part = _unit_view(a[t.param], t.mode, group.units, batch_dims).pow(2).sum(-1)
        total = part if total is None else total + part
    assert total is not None
    return total


def _group_gram(a: Params, b: Params, group: NeuronGroup, batch_dims: int) -> torch.Tensor:
    """``sum_out A_out^T B_out - sum_in A_in B_in^T`` (Eq. 6 orientation): ``(*batch, u, u)``."""
    total = None
    for sign, terms in ((-1.0, group.inputs), (1.0, group.outputs)):
        for t in terms:
            va = _unit_view(a[t.param], t.mode, group.units, batch_dims)
            vb = _unit_view(b[t.param], t.mode, group.units, batch_dims)
            part = sign * (va @ vb.transpose(-1, -2))
            total = part if total is None else total + part
    assert total is not None
    return total


def _lr_factor(lr: float | torch.Tensor, batch_dims: int, extra: int) -> float | torch.Tensor:
    if isinstance(lr, torch.Tensor) and lr.dim() > 0:
        if lr.dim() != batch_dims:
            raise ValueError(f"lr has {lr.dim()} dims, expected a scalar or {batch_dims} batch dims")
        return lr.reshape(*lr.shape, *([1] * extra))
    return lr


# --------------------------------------------------------------------------------- models


Stage = tuple  # ("conv", channels) | ("dense", width) | ("free", hidden, width)


class MixedNet(nn.Module):
    """A bias-free network of convolutions, dense layers and ResNetFree blocks, ending with a
    linear output layer ``fin``: one model holds several of the adjacent pairs of Theorem 1.

    ``stages`` is a sequence of ``("conv", channels)`` (3x3, padding 1, no pooling, so that with
    ``activation='linear'`` the whole network is linear), ``("dense", width)`` and
    ``("free", hidden, width)`` (a ResNetFree block ``act(U act(Y x) + Z x)`` with
    ``Y: hidden x d``, ``U: width x hidden``, ``Z: width x d``). Convolutions come first; the
    feature map is flattened channel-major before the first other stage. Every conv and dense
    stage is followed by the activation. Inputs are images ``(n, c, s, s)``.
    """

    def __init__(self, in_channels: int, image_size: int, stages: Sequence[Stage],
                 activation: str = "relu", init_scale: float = 1.0) -> None:
        super().__init__()
        kinds = [st[0] for st in stages]
        if not stages or any(k not in ("conv", "dense", "free") for k in kinds):
            raise ValueError(f"stages must be ('conv', c), ('dense', w) or ('free', h, w); got {stages}")
        first_other = next((i for i, k in enumerate(kinds) if k != "conv"), len(kinds))
        if "conv" in kinds[first_other:]:
            raise ValueError("convolutions must come before every dense or ResNetFree stage")
        self.kinds = kinds
        layers: list[nn.Module] = []
        c, size, d = in_channels, image_size, None
        for st in stages:
            if st[0] == "conv":
                layers.append(nn.Conv2d(c, st[1], 3, padding=1, bias=False))
                c = st[1]
                continue
            if d is None:
                d = c * size * size
            if st[0] == "dense":
                layers.append(nn.Linear(d, st[1], bias=False))
                d = st[1]
            else:
                layers.append(ResidualBlock(d, st[1], st[2], skip="free", bias=False,
                                            activation=activation))
                d = st[2]
        if d is None:
            d = c * size * size
        self.stages = nn.ModuleList(layers)
        self.fin = nn.Linear(d, 1, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                p.mul_(init_scale)
        self.act = activation_module(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for kind, layer in zip(self.kinds, self.stages):
            if kind != "conv" and h.dim() > 2:
                h = h.flatten(1)
            h = layer(h) if kind == "free" else self.act(layer(h))
        return self.fin(h.flatten(1) if h.dim() > 2 else h)


#: Theorem 1's point for a unit group, from the kind of the layer that feeds the units and the
#: kind of the layer that reads them ("fin" is the output layer, a fully-connected layer).
THEOREM1_POINT = {("conv", "conv"): 2, ("conv", "dense"): 5, ("conv", "fin"): 5,
                  ("conv", "free"): 6, ("dense", "dense"): 1, ("dense", "fin"): 1,
                  ("dense", "free"): 7, ("free", "free"): 4, ("free", "dense"): 7,
                  ("free", "fin"): 7}


def _mixed_groups(model: MixedNet) -> list[NeuronGroup]:
    groups: list[NeuronGroup] = []
    kinds = model.kinds
    for i, (kind, layer) in enumerate(zip(kinds, model.stages)):
        pre = f"stages.{i}."
        nxt = kinds[i + 1] if i + 1 < len(kinds) else "fin"
        if nxt == "fin":
            outs = [Term("fin.weight", "col")]
        elif nxt == "free":
            outs = [Term(f"stages.{i + 1}.Y.weight", "col"), Term(f"stages.{i + 1}.Z.weight", "col")]
        else:
            outs = [Term(f"stages.{i + 1}.weight", "col")]
        if kind == "free":
            groups.append(NeuronGroup(f"block {i + 1} middle", layer.Y.out_features,
                                      (Term(pre + "Y.weight", "row"),), (Term(pre + "U.weight", "col"),),
                                      point=3))
            ins = (Term(pre + "U.weight", "row"), Term(pre + "Z.weight", "row"))
            units = layer.U.out_features
        else:
            ins = (Term(pre + "weight", "row"),)
            units = layer.out_channels if kind == "conv" else layer.out_features
        point = THEOREM1_POINT[(kind, nxt)]
        reader = "fin" if nxt == "fin" else f"{nxt} {i + 2}"
        groups.append(NeuronGroup(f"{kind} {i + 1} -> {reader}", units, ins, tuple(outs), point=point))
    return groups


def neuron_groups(model: nn.Module, count_bias: bool = True) -> list[NeuronGroup]:
    """The unit groups of one of the book's models (:class:`~implicit_bias.models.MLP`,
    :class:`~implicit_bias.models.ConvNet`, :class:`~implicit_bias.models.ResNetMLP`,
    :class:`~implicit_bias.models.ResidualBlock`), in forward order.

    - MLP: every hidden layer (in: weight rows, plus the bias if ``count_bias``; out: the next
      layer's columns).
    - ConvNet: every conv layer's output channels (in: the kernel ``K_l[c]``; out: ``K_{l+1}[:, c]``
      or the ``s*s`` dense columns reading channel ``c``), then the hidden dense layers.
    - ResNetMLP: the ``inp`` neurons, then per block its middle neurons (``Y`` rows / ``U``
      columns) and its output neurons (in: ``U`` rows and the skip ``D_k`` or ``Z`` rows; out:
      the next block's ``Y`` columns and skip, or the last layer's columns). Units touching a
      fixed identity skip are returned with ``conserved=False``: the negative control.
    - ResidualBlock alone: its middle neurons.
    - :class:`MixedNet`: every stage's output units (conv channels, dense neurons, block
      outputs with in-weights ``[U Z]``) read by the next stage (its kernel slices, columns, or
      ``[Y; Z]`` columns), and each block's middle neurons; ``point`` names Theorem 1's case.

    Biases not counted (``count_bias=False`` on a model with biases) give ``conserved=False``.
    """
    act = getattr(model, "act", None)
    hom = act is not None and homogeneous(act)
    params = dict(model.named_parameters())

    def bias_terms(prefix: str) -> tuple[tuple[Term, ...], bool]:
        name = prefix + "bias"
        if name not in params:
            return (), True
        return ((Term(name, "row"),), True) if count_bias else ((), False)

    def group(name: str, units: int, inputs: Sequence[Term], outputs: Sequence[Term],
              ok: bool = True, why: str = "") -> NeuronGroup:
        if not hom:
            ok, why = False, why or f"activation {type(act).__name__} is not positively homogeneous"
        return NeuronGroup(name, units, tuple(inputs), tuple(outputs), ok, why)

    groups: list[NeuronGroup] = []
    if isinstance(model, MixedNet):
        out = _mixed_groups(model)
        if not hom:
            out = [group(g.name, g.units, g.inputs, g.outputs) for g in out]
        return out
    if isinstance(model, MLP):
        n = len(model.layers)
        for i in range(n - 1):
            b, ok = bias_terms(f"layers.{i}.")
            groups.append(group(f"hidden {i + 1}", model.layers[i].out_features,
                                [Term(f"layers.{i}.weight", "row"), *b],
                                [Term(f"layers.{i + 1}.weight", "col")], ok,
                                "" if ok else "bias not counted"))
        return groups
    if isinstance(model, ConvNet):
        convs, fcs = model.convs, model.fcs
        for i, conv in enumerate(convs):
            b, ok = bias_terms(f"convs.{i}.")
            nxt = f"convs.{i + 1}.weight" if i + 1 < len(convs) else "fcs.0.weight"
            groups.append(group(f"conv {i + 1} channels", conv.out_channels,
                                [Term(f"convs.{i}.weight", "row"), *b], [Term(nxt, "col")], ok,
                                "" if ok else "bias not counted"))
        for i in range(len(fcs) - 1):
            b, ok = bias_terms(f"fcs.{i}.")
            groups.append(group(f"dense {i + 1}", fcs[i].out_features,
                                [Term(f"fcs.{i}.weight", "row"), *b],
                                [Term(f"fcs.{i + 1}.weight", "col")], ok,
                                "" if ok else "bias not counted"))
        return groups
    if isinstance(model, ResidualBlock):
        b, ok = bias_terms("Y.")
        return [group("middle", model.Y.out_features, [Term("Y.weight", "row"), *b],
                      [Term("U.weight", "col")], ok, "" if ok else "bias not counted")]
    if isinstance(model, ResNetMLP):
        width = model.inp.out_features
        blocks = list(model.blocks)

        def reader_terms(k: int) -> tuple[list[Term], bool]:
            """Out-terms of the units feeding block ``k`` (or the last layer)."""
            if k == len(blocks):
                return [Term("out.weight", "col")], True
            blk, pre = blocks[k], f"blocks.{k}."
            terms = [Term(pre + "Y.weight", "col")]
            if blk.skip == "diagonal":
                terms.append(Term(pre + "D", "row"))
            elif blk.skip == "free":
                terms.append(Term(pre + "Z.weight", "col"))
            return terms, blk.skip != "identity"

        outs, ok_out = reader_terms(0)
        b, ok_b = bias_terms("inp.")
        groups.append(group("input layer", width, [Term("inp.weight", "row"), *b], outs,
                            ok_out and ok_b,
                            "" if ok_out and ok_b else
                            ("reads into a fixed identity skip" if not ok_out else "bias not counted")))
        for k, blk in enumerate(blocks):
            pre = f"blocks.{k}."
            b, ok_b = bias_terms(pre + "Y.")
            groups.append(group(f"block {k + 1} middle", blk.Y.out_features,
                                [Term(pre + "Y.weight", "row"), *b], [Term(pre + "U.weight", "col")],
                                ok_b, "" if ok_b else "bias not counted"))
            ins = [Term(pre + "U.weight", "row")]
            if blk.skip == "diagonal":
                ins.append(Term(pre + "D", "row"))
            elif blk.skip == "free":
                ins.append(Term(pre + "Z.weight", "row"))
            b, ok_b = bias_terms(pre + "U.")
            outs, ok_out = reader_terms(k + 1)
            ok_in = blk.skip != "identity"
            ok = ok_in and ok_out and ok_b
            why = ("fed or read by a fixed identity skip" if not (ok_in and ok_out)
                   else "" if ok_b else "bias not counted")
            groups.append(group(f"block {k + 1} output", blk.U.out_features, [*ins, *b], outs,
                                ok, why))
        return groups
    raise TypeError(f"neuron_groups does not know {type(model).__name__}; use MLP, ConvNet, "
                    "ResNetMLP or ResidualBlock")


def layer_cuts(model: nn.Module) -> list[Cut]:
    """Lemma 4's layers, in forward order: sets of parameters that every input-output path
    crosses exactly once. MLP / ConvNet: every weight (conv kernels count each free parameter
    once). ResNetMLP: ``inp``, then per learnable-skip block ``{Y, skip}`` and ``{U, skip}``
    (Theorem 1.4's ``[Y; Z]`` and ``[U Z]``), then ``out``; an identity-skip block has no cut
    inside it (paths through the skip avoid ``Y`` and ``U``). Models with biases give
    ``conserved=False`` cuts (paths starting at a bias avoid the earlier layers)."""
    params = dict(model.named_parameters())
    has_bias = any(name.endswith("bias") for name in params)
    act = getattr(model, "act", None)
    ok = not has_bias and act is not None and homogeneous(act)
    why = "" if ok else ("biases break the cut property" if has_bias else "activation not homogeneous")
    if isinstance(model, MLP):
        return [Cut(f"W{i + 1}", (f"layers.{i}.weight",), ok, why) for i in range(len(model.layers))]
    if isinstance(model, ConvNet):
        cuts = [Cut(f"conv {i + 1}", (f"convs.{i}.weight",), ok, why) for i in range(len(model.convs))]
        return cuts + [Cut(f"dense {i + 1}", (f"fcs.{i}.weight",), ok, why) for i in range(len(model.fcs))]
    if isinstance(model, ResNetMLP):
        cuts = [Cut("inp", ("inp.weight",), ok, why)]
        for k, blk in enumerate(model.blocks):
            pre = f"blocks.{k}."
            if blk.skip == "identity":
                continue
            skip = pre + ("D" if blk.skip == "diagonal" else "Z.weight")
            cuts.append(Cut(f"block {k + 1} [Y; S]", (pre + "Y.weight", skip), ok, why))
            cuts.append(Cut(f"block {k + 1} [U S]", (pre + "U.weight", skip), ok, why))
        return cuts + [Cut("out", ("out.weight",), ok, why)]
    if isinstance(model, ResidualBlock):
        raise ValueError("a lone ResidualBlock has no input-output cut when its skip is fixed; "
                         "wrap it in a ResNetMLP")
    raise TypeError(f"layer_cuts does not know {type(model).__name__}")


def push_from_zero_(model: nn.Module, floor: float) -> nn.Module:
    """In place, every weight ``w -> sgn(w) (|w| + floor / sqrt(fan_in))`` (``fan_in`` = the
    entries of one output unit's weights, e.g. ``in_channels * k * k`` for a kernel): the
    construction used to start a run in a stable sign regime (Assumption 1), where no weight
    is near zero. Returns the model."""
    with torch.no_grad():
        for name, w in model.named_parameters():
            if w.dim() < 2:
                continue
            fan_in = w[0].numel()
            w.copy_(torch.sign(w) * (w.abs() + floor / fan_in**0.5))
    return model


# --------------------------------------------------------------------------------- values


def neuron_invariants(params: Params, groups: Sequence[NeuronGroup],
                      batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Eq. (4): ``Q_v = ||in_v||^2 - ||out_v||^2`` per unit, ``{group: (*batch, units)}``."""
    return {g.name: _group_inner(params, params, g, batch_dims) for g in groups}


def first_order_terms(params: Params, grads: Params, groups: Sequence[NeuronGroup],
                      batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Euler's term ``<in_v, g_in_v> - <out_v, g_out_v>`` per unit (zero where Lemma 3 holds)."""
    return {g.name: _group_inner(params, grads, g, batch_dims) for g in groups}


def neuron_scales(params: Params, groups: Sequence[NeuronGroup],
                  batch_dims: int = 0) -> torch.Tensor:
    """``max_v (||in_v||^2 + ||out_v||^2)`` over all units of all groups: ``(*batch,)``. It bounds
    every ``|Q_v|`` and (Cauchy-Schwarz) every ``|M_uv|``: the natural scale for relative drifts."""
    return torch.stack([_group_total(params, g, batch_dims).amax(-1) for g in groups], -1).amax(-1)


def gd_corrections(grads: Params, groups: Sequence[NeuronGroup], lr: float | torch.Tensor,
                   batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Appendix F: the exact change of ``Q_v`` in one GD step ``w - lr g`` when (E) holds,
    ``lr^2 (||g_in_v||^2 - ||g_out_v||^2)``. ``lr`` may carry the batch dims."""
    f = _lr_factor(lr, batch_dims, 1)
    return {g.name: f * f * _group_inner(grads, grads, g, batch_dims) for g in groups}


def matrix_invariants(params: Params, groups: Sequence[NeuronGroup],
                      batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Eq. (6): ``M = W_2^T W_2 - W_1 W_1^T`` per group, ``(*batch, units, units)``; its
    diagonal is ``-Q`` of :func:`neuron_invariants`."""
    return {g.name: _group_gram(params, params, g, batch_dims) for g in groups}


def abs_matrix_invariants(params: Params, groups: Sequence[NeuronGroup],
                          batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """The absolute-valued pair form: ``|W_2|^T |W_2| - |W_1| |W_1|^T`` per group, whose
    ``(u, v)`` entry is ``sum_b |w_ub w_vb| - sum_a |w_au w_av|`` (the quantity whose derivative
    the proof of Eq. (5) computes, App. C Eqs. 40-43, and the form of Lemma 8, Eq. 47)."""
    a = {k: v.abs() for k, v in params.items()}
    return {g.name: _group_gram(a, a, g, batch_dims) for g in groups}


def abs_matrix_corrections(params: Params, grads: Params, groups: Sequence[NeuronGroup],
                           lr: float | torch.Tensor, batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Second-order change of :func:`abs_matrix_invariants` in one GD step when no weight
    changes sign: ``lr^2 (S_2 G_2)^T (S_2 G_2) - lr^2 (S_1 G_1)(S_1 G_1)^T`` with ``S`` the signs
    of the weights (``|w - lr g| = s w - lr s g`` while the sign ``s`` stays)."""
    f = _lr_factor(lr, batch_dims, 2)
    sg = {k: torch.sign(params[k]) * v for k, v in grads.items()}
    return {g.name: f * f * _group_gram(sg, sg, g, batch_dims) for g in groups}


def matrix_corrections(grads: Params, groups: Sequence[NeuronGroup], lr: float | torch.Tensor,
                       batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """Eqs. (81)-(85): ``lr^2 (G_2^T G_2 - G_1 G_1^T)``, the second-order change of ``M`` in one
    GD step. ``M`` changes by exactly this amount when the first-order term
    ``-lr (G_2^T W_2 + W_2^T G_2 - G_1 W_1^T - W_1 G_1^T)`` vanishes, which it does on the
    diagonal always and off the diagonal for linear networks."""
    f = _lr_factor(lr, batch_dims, 2)
    return {g.name: f * f * _group_gram(grads, grads, g, batch_dims) for g in groups}


def matrix_first_order_terms(params: Params, grads: Params, groups: Sequence[NeuronGroup],
                             batch_dims: int = 0) -> dict[str, torch.Tensor]:
    """``G_2^T W_2 + W_2^T G_2 - G_1 W_1^T - W_1 G_1^T`` per group: ``dM/dt = -`` this under
    gradient flow. Its diagonal is twice the (negated) Euler term of
    :func:`first_order_terms`; its off-diagonal vanishes for linear activations only."""
    return {g.name: _group_gram(grads, params, g, batch_dims) + _group_gram(params, grads, g, batch_dims)
            for g in groups}


def cut_norms(params: Params, cuts: Sequence[Cut], batch_dims: int = 0) -> torch.Tensor:
    """Squared Frobenius norm of every cut, stacked on the last axis: ``(*batch, n_cuts)``."""
    out = []
    for c in cuts:
        out.append(sum(params[p].pow(2).flatten(batch_dims).sum(-1) for p in c.params))
    return torch.stack(out, -1)


def cut_corrections(grads: Params, cuts: Sequence[Cut], lr: float | torch.Tensor,
                    batch_dims: int = 0) -> torch.Tensor:
    """``lr^2 ||G_F||_F^2`` per cut: the second-order change of ``||F||_F^2`` in one GD step.
    Differences between cuts of these are the Appendix F slack of Lemma 4."""
    f = _lr_factor(lr, batch_dims, 1)
    return f * f * cut_norms(grads, cuts, batch_dims)


def param_grads(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                loss: LossName | LossFn = "logistic") -> dict[str, torch.Tensor]:
    """Gradient of the full-batch loss with respect to every named parameter of ``model``."""
    names, ps = zip(*model.named_parameters())
    value = loss_function(loss)(model(X), y)
    return dict(zip(names, torch.autograd.grad(value, ps)))


# --------------------------------------------------------------------------------- monitors


def mlp_preactivations(params: Params, X: torch.Tensor, depth: int,
                       act: Callable[[torch.Tensor], torch.Tensor] = torch.relu) -> list[torch.Tensor]:
    """Hidden pre-activations ``z_1..z_{L-1}`` of an :class:`MLP` with parameters ``params``
    (unbatched; wrap in ``vmap`` for an ensemble), each ``(n, width)``."""
    h, out = X, []
    for i in range(depth - 1):
        z = h @ params[f"layers.{i}.weight"].T
        if f"layers.{i}.bias" in params:
            z = z + params[f"layers.{i}.bias"]
        out.append(z)
        h = act(z)
    return out


def euler_terms(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                count_bias: bool = True) -> dict[str, tuple[bool, float]]:
    """Euler's term of every unit group of ``model`` at its current weights, for the logistic
    loss on ``(X, y)``, relative to the Cauchy-Schwarz bound ``sqrt(neuron_scales(params) *
    neuron_scales(grads))``: ``{group: (Lemma 3 applies to it, max_v |E_v| / bound)}``. Where
    Lemma 3 applies the ratio is round-off (the identity of Eq. 12)."""
    p = {k: v.detach() for k, v in model.named_parameters()}
    g = param_grads(model, X, y, loss="logistic")
    groups = neuron_groups(model, count_bias=count_bias)
    bound = float((neuron_scales(p, groups) * neuron_scales(g, groups)).sqrt())
    fo = first_order_terms(p, g, groups)
    return {gr.name: (gr.conserved, float(fo[gr.name].abs().max()) / bound) for gr in groups}


def isolated_kink(X: torch.Tensor, W: torch.Tensor) -> tuple[int, int, float]:
    """A kink of a first layer ``W`` (units x d) that one sample crosses alone.

    Moving row ``u`` to ``w_u - (z_ui / ||x_i||^2) x_i`` puts the pre-activation ``z_ui`` of
    sample ``i`` exactly at 0; moving it further by ``delta`` along ``x_i / ||x_i||`` changes
    ``z_uj`` by ``delta <x_j, x_i> / ||x_i||``. Returns ``(u, i, delta_star)`` for the active
    pair (``z_ui > 0``) whose ``delta_star``, the smallest shift at which another sample of unit
    ``u`` changes sides, is largest: for ``|delta| < delta_star`` only sample ``i`` crosses."""
    Z = X @ W.T                                    # (n, units)
    G = X @ X.T
    sq = torch.diagonal(G)
    best = (-1, -1, -1.0)
    for u in range(W.shape[0]):
        moved = Z[None, :, u] - Z[:, u, None] * G / sq[:, None]      # z'_uj after zeroing z_ui
        speed = G.abs() / sq.sqrt()[:, None]                         # |<x_j, x_i>| / ||x_i||
        dist = torch.where(speed > 0, moved.abs() / speed, torch.inf)
        dist.fill_diagonal_(torch.inf)
        reach = torch.where(Z[:, u] > 0, dist.min(1).values, -torch.inf)
        i = int(torch.argmax(reach))
        if float(reach[i]) > best[2]:
            best = (u, i, float(reach[i]))
    if best[0] < 0:
        raise ValueError("no unit is active on any sample: there is no kink to cross")
    return best


def kink_quotients(net: nn.Module, X: torch.Tensor, y: torch.Tensor,
                   deltas: Sequence[float]) -> tuple[list[float], float]:
    """Lipschitz quotients of the logistic risk's gradient across a kink of ``net``'s first
    layer (``layers.0.weight``): the row and sample of :func:`isolated_kink` are moved so that
    that pre-activation is exactly 0, then ``q(delta) = ||grad R(w + delta e) - grad R(w - delta
    e)|| / (2 delta)`` for every ``delta``, with ``e`` the unit shift of that row along the sample.
    Returns the quotients and the reach of :func:`isolated_kink` (below it only that sample
    crosses). For a ReLU network ``q`` grows like ``1 / delta``; for a linear one it stays
    bounded (App. F's smoothness assumption). ``net`` is not modified."""
    p = {k: v.detach().clone() for k, v in net.named_parameters()}
    W1 = p["layers.0.weight"]
    u, i, reach = isolated_kink(X, W1)               # only sample i crosses for |delta| < reach
    W1[u] -= ((X[i] @ W1[u]) / X[i].pow(2).sum()) * X[i]  # now z_u(x_i) = 0 up to round-off
    e = torch.zeros_like(W1)
    e[u] = X[i] / X[i].norm()

    def grad_at(shift: float) -> torch.Tensor:
        q = {k: v.clone().requires_grad_(True) for k, v in p.items()}
        q["layers.0.weight"] = (p["layers.0.weight"] + shift * e).requires_grad_(True)
        out = functional_call(net, q, (X,)).squeeze(-1)
        value = torch.nn.functional.softplus(-y * out).mean()
        return torch.cat([g.flatten() for g in torch.autograd.grad(value, list(q.values()))])

    return [float((grad_at(d) - grad_at(-d)).norm()) / (2 * d) for d in deltas], reach


def weight_signs(params: Params, batch_dims: int = 0) -> torch.Tensor:
    """Signs of every parameter entry, concatenated: ``(*batch, n_params)`` (Assumption 1)."""
    return torch.cat([torch.sign(p).flatten(batch_dims) for p in params.values()], -1)


def sign_pattern(params: Params) -> torch.Tensor:
    """Assumption 1's monitor for :func:`train_tracked` (``monitors={"sign": sign_pattern}``) on
    an ensemble's parameters (member dimension first): whether each weight of each member is
    positive, ``(E, n_params)``; the tracker counts the entries that change between steps."""
    return weight_signs(params, 1) > 0


# --------------------------------------------------------------------------------- training


@dataclass
class Tracked:
    """What :func:`train_tracked` recorded, time first.

    ``steps``: the recorded steps. ``loss``: ``(E, steps + 1)``. ``time``: ``(R, E)`` elapsed
    gradient-flow time ``sum_s lr_s`` at each record. ``Q``/``Q_slack``: per group
    ``(R, E, units)``, the invariant and the accumulated Appendix F terms (so ``Q - Q_slack`` is
    conserved where Lemma 3 holds). ``M``/``M_slack``: the same for the matrices (if asked).
    ``cuts``/``cut_slack``: ``(R, E, n_cuts)``. ``flips``: per monitor, how many times each entry
    of its boolean pattern changed between consecutive steps (summed over the run).
    ``first_change``: per monitor, ``(E,)`` the first ``k`` such that the pattern at ``w_k``
    differs from the one at ``w_{k-1}`` (``steps + 1`` if it never changed), so the pattern is
    constant on ``w_0..w_{k-1}``.
    """

    steps: list[int]
    loss: torch.Tensor
    time: torch.Tensor
    Q: dict[str, torch.Tensor]
    Q_slack: dict[str, torch.Tensor]
    cuts: torch.Tensor | None = None
    cut_slack: torch.Tensor | None = None
    M: dict[str, torch.Tensor] = field(default_factory=dict)
    M_slack: dict[str, torch.Tensor] = field(default_factory=dict)
    M_abs: dict[str, torch.Tensor] = field(default_factory=dict)
    M_abs_slack: dict[str, torch.Tensor] = field(default_factory=dict)
    flips: dict[str, torch.Tensor] = field(default_factory=dict)
    first_change: dict[str, torch.Tensor] = field(default_factory=dict)

    def drift(self, name: str, corrected: bool = True) -> torch.Tensor:
        """``Q(t) - Q(0)`` (minus the Appendix F terms if ``corrected``): ``(R, E, units)``."""
        d = self.Q[name] - self.Q[name][0]
        return d - self.Q_slack[name] if corrected else d

    def matrix_drift(self, name: str, corrected: bool = True) -> torch.Tensor:
        """``M(t) - M(0)`` (minus the Appendix F terms if ``corrected``): ``(R, E, u, u)``."""
        d = self.M[name] - self.M[name][0]
        return d - self.M_slack[name] if corrected else d

    def abs_matrix_drift(self, name: str, corrected: bool = True) -> torch.Tensor:
        """The same for the absolute-valued form (:func:`abs_matrix_invariants`); the correction
        is exact only while no weight changes sign."""
        d = self.M_abs[name] - self.M_abs[name][0]
        return d - self.M_abs_slack[name] if corrected else d

    def cut_drift(self, corrected: bool = True) -> torch.Tensor:
        """Change of the adjacent-cut invariants ``||F_{k+1}||^2 - ||F_k||^2``: ``(R, E, n_cuts - 1)``."""
        if self.cuts is None or self.cut_slack is None:
            raise ValueError("no cuts were tracked")
        c = self.cuts - self.cut_slack if corrected else self.cuts
        inv = c[..., 1:] - c[..., :-1]
        return inv - inv[0]


def train_tracked(
    ens: Ensemble,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "logistic",
    steps: int = 1000,
    lr: float | torch.Tensor = 0.1,
    stop_after: torch.Tensor | None = None,
    record_every: int = 100,
    groups: Sequence[NeuronGroup] | None = None,
    cuts: Sequence[Cut] | None = None,
    matrices: bool = False,
    absolute: bool = False,
    monitors: Mapping[str, Callable[[dict[str, torch.Tensor]], torch.Tensor]] | None = None,
) -> Tracked:
    """Full-batch GD on every member of ``ens`` (in place), with exact invariant bookkeeping.

    The update is the one of :func:`~implicit_bias.ensembles.train_ensemble`:
    ``w <- w - lr_e g`` with ``lr`` a float or one rate per member. ``stop_after`` (``(E,)``
    integers) freezes member ``e`` after that many steps, so a sweep over ``lr`` at a *fixed
    gradient-flow time* ``T = lr_e * stop_after_e`` is one batched run. At every step the
    Appendix F terms ``lr^2 (||g_in||^2 - ||g_out||^2)`` (and their matrix and cut versions) are
    accumulated from the actual gradients. ``groups`` and ``cuts`` default to those of the
    template (:func:`neuron_groups`, :func:`layer_cuts`). ``matrices`` also tracks the matrices of
    Eq. (6) and ``absolute`` their absolute-valued form (both per group). ``monitors`` map a name to
    ``f(params) -> bool tensor (E, ...)`` evaluated every step; ``Tracked.flips`` counts the
    changes of each entry. Raises :class:`~implicit_bias.train.TrainingDiverged` on a
    non-finite loss.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if record_every < 1:
        raise ValueError(f"record_every must be >= 1, got {record_every}")
    loss_fn = loss_function(loss)
    E = ens.size
    first = next(iter(ens.params.values()))
    device, dtype = first.device, first.dtype
    rates = torch.as_tensor(lr, dtype=dtype, device=device)
    rates = rates.expand(E).clone() if rates.dim() == 0 else rates.clone()
    if rates.shape != (E,):
        raise ValueError(f"lr must be a float or have shape ({E},), got {tuple(rates.shape)}")
    if stop_after is not None:
        stop_after = torch.as_tensor(stop_after, device=device)
        if stop_after.shape != (E,) or bool((stop_after > steps).any()):
            raise ValueError(f"stop_after must have shape ({E},) with entries <= steps={steps}")
    if groups is None:
        groups = neuron_groups(ens.template)
    if cuts is None:
        try:
            cuts = layer_cuts(ens.template)
        except (ValueError, TypeError):
            cuts = []

    def member_loss(p, b, x, t):
        return loss_fn(functional_call(ens.template, (p, b), (x,)), t)

    step_fn = vmap(grad_and_value(member_loss), in_dims=(0, 0, None, None))
    losses = torch.full((E, steps + 1), float("nan"), dtype=torch.float64, device=device)
    zeros = lambda t: torch.zeros_like(t)
    Q_slack = {g.name: zeros(v) for g, v in zip(groups, neuron_invariants(ens.params, groups, 1).values())}
    M_slack = ({g.name: zeros(v) for g, v in zip(groups, matrix_invariants(ens.params, groups, 1).values())}
               if matrices else {})
    A_slack = ({g.name: zeros(v) for g, v in zip(groups, abs_matrix_invariants(ens.params, groups, 1).values())}
               if absolute else {})
    cut_slack = torch.zeros(E, len(cuts), dtype=dtype, device=device) if cuts else None
    elapsed = torch.zeros(E, dtype=dtype, device=device)
    prev = {k: f(ens.params) for k, f in (monitors or {}).items()}
    flips = {k: torch.zeros(v.shape, dtype=torch.int64, device=device) for k, v in prev.items()}
    never = steps + 1
    first_change = {k: torch.full((E,), never, dtype=torch.int64, device=device) for k in prev}
    rec: dict[str, list] = {"time": [], "cuts": [], "cut_slack": []}
    recQ: dict[str, list] = {g.name: [] for g in groups}
    recQs: dict[str, list] = {g.name: [] for g in groups}
    recM: dict[str, list] = {g.name: [] for g in groups} if matrices else {}
    recMs: dict[str, list] = {g.name: [] for g in groups} if matrices else {}
    recA: dict[str, list] = {g.name: [] for g in groups} if absolute else {}
    recAs: dict[str, list] = {g.name: [] for g in groups} if absolute else {}
    record_steps: list[int] = []

    def record(step: int) -> None:
        record_steps.append(step)
        rec["time"].append(elapsed.clone())
        for name, v in neuron_invariants(ens.params, groups, 1).items():
            recQ[name].append(v.clone())
            recQs[name].append(Q_slack[name].clone())
        if matrices:
            for name, v in matrix_invariants(ens.params, groups, 1).items():
                recM[name].append(v.clone())
                recMs[name].append(M_slack[name].clone())
        if absolute:
            for name, v in abs_matrix_invariants(ens.params, groups, 1).items():
                recA[name].append(v.clone())
                recAs[name].append(A_slack[name].clone())
        if cuts:
            rec["cuts"].append(cut_norms(ens.params, cuts, 1))
            rec["cut_slack"].append(cut_slack.clone())

    for step in range(steps + 1):
        grads, values = step_fn(ens.params, ens.buffers, X, y)
        losses[:, step] = values.detach()
        if step % record_every == 0 or step == steps:
            record(step)
        if step == steps:
            break
        with torch.no_grad():
            eff = rates if stop_after is None else torch.where(step < stop_after, rates, 0.0)
            for name, v in gd_corrections(grads, groups, eff, 1).items():
                Q_slack[name] += v
            if matrices:
                for name, v in matrix_corrections(grads, groups, eff, 1).items():
                    M_slack[name] += v
            if absolute:
                for name, v in abs_matrix_corrections(ens.params, grads, groups, eff, 1).items():
                    A_slack[name] += v
            if cuts:
                cut_slack += cut_corrections(grads, cuts, eff, 1)
            for name, p in ens.params.items():
                p.sub_(eff.view(-1, *[1] * (p.dim() - 1)) * grads[name])
            elapsed += eff
            for k, f in (monitors or {}).items():
                now = f(ens.params)
                changed = now != prev[k]
                flips[k] += changed.long()
                hit = changed.reshape(E, -1).any(-1) & (first_change[k] == never)
                first_change[k] = torch.where(hit, step + 1, first_change[k])
                prev[k] = now
    bad = ~torch.isfinite(losses)
    if bool(bad.any()):
        member, at = (int(v) for v in bad.nonzero()[0])
        raise TrainingDiverged(f"training diverged: member {member} has loss {float(losses[member, at])} "
                               f"at step {at} (learning rate {float(rates[member]):g}); lower the rate")
    stack = lambda xs: torch.stack(xs).cpu()
    return Tracked(
        steps=record_steps, loss=losses.cpu(), time=stack(rec["time"]),
        Q={k: stack(v) for k, v in recQ.items()}, Q_slack={k: stack(v) for k, v in recQs.items()},
        cuts=stack(rec["cuts"]) if cuts else None,
        cut_slack=stack(rec["cut_slack"]) if cuts else None,
        M={k: stack(v) for k, v in recM.items()}, M_slack={k: stack(v) for k, v in recMs.items()},
        M_abs={k: stack(v) for k, v in recA.items()}, M_abs_slack={k: stack(v) for k, v in recAs.items()},
        flips={k: v.cpu() for k, v in flips.items()},
        first_change={k: v.cpu() for k, v in first_change.items()},
    )
