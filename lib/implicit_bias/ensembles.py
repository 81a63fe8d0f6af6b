"""Many small networks trained as one batched computation.

The networks' parameters are stacked along a leading *ensemble* axis (``torch.func``'s
``stack_module_state``: a ``Linear`` weight of shape ``(out, in)`` becomes ``(E, out, in)``).
Seeds, init scales, learning rates and even datasets become a batch dimension, so an
experiment of hundreds of runs costs a few large tensor operations per step instead of a
Python loop over runs. :func:`train_ensemble` has two engines:

- **stacked** (MLPs of :class:`~implicit_bias.models.MLP` with one of the library's losses): the
  forward and a hand-derived backward are written with batched matrix products on the stacked
  weights themselves (``bmm``/``baddbmm``; the first layer of a shared dataset is one
  ``addmm`` for all members). Activations are kept *features first*, ``(E, width, n)``, so that
  every product has the samples as its long side; the update is fused into the weight-gradient
  product (``W <- (1 - lr wd) W - lr dZ H^T`` is one ``baddbmm_``). About 25 kernels a step
  for a depth-3 network, whatever the number of members.
- **vmap** (everything else: CNNs, ResNets, custom losses): one functional forward
  (``functional_call``) vectorised over the ensemble axis with ``vmap`` and differentiated with
  ``grad_and_value``.

Both give the updates of :func:`implicit_bias.train.train` run on each member alone, to float
rounding (``tests/test_ensembles.py``). Networks of different architectures (e.g. a depth
sweep) go through :func:`train_models`, which groups them by architecture and trains each group
as one computation.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, stack_module_state, vmap
from tqdm.auto import tqdm

from .models import MLP, as_matrix, weight_specs
from .runtime import quiet
from .train import LossFn, LossName, TrainingDiverged, loss_function

Params = dict[str, torch.Tensor]
EngineName = Literal["auto", "stacked", "vmap"]

#: losses the stacked engine differentiates by hand (the names of :func:`train.loss_function`)
STACKED_LOSSES = ("ce", "mse", "half_mse", "logistic", "exp")


@dataclass
class Ensemble:
    """Stacked parameters of ``size`` networks sharing the architecture of ``template``."""

    template: nn.Module
    params: Params
    buffers: Params

    @classmethod
    def from_models(cls, models: Sequence[nn.Module]) -> Ensemble:
        """Stack copies of the parameters of ``models`` (all of one architecture)."""
        if not models:
            raise ValueError("need at least one model")
        params, buffers = stack_module_state(list(models))
        params = {k: v.detach().clone() for k, v in params.items()}
        template = copy.deepcopy(models[0]).to("meta")
        return cls(template, params, buffers)

    @classmethod
    def build(cls, factory: Callable[[int], nn.Module], seeds: Sequence[int],
              device: torch.device | str = "cpu") -> Ensemble:
        """One network per seed: ``torch.manual_seed(seed); factory(seed)``."""
        models = []
        for seed in seeds:
            torch.manual_seed(seed)
            models.append(factory(seed).to(device))
        return cls.from_models(models)

    @property
    def size(self) -> int:
        return next(iter(self.params.values())).shape[0]

    @property
    def device(self) -> torch.device:
        return next(iter(self.params.values())).device

    @property
    def dtype(self) -> torch.dtype:
        return next(iter(self.params.values())).dtype

    def forward(self, X: torch.Tensor, batched_inputs: bool = False) -> torch.Tensor:
        """Outputs of every member: ``(size, n, out)``. ``X`` is shared ``(n, ...)`` or, with
        ``batched_inputs``, one dataset per member ``(size, n, ...)``."""
        f = lambda p, b, x: functional_call(self.template, (p, b), (x,))
        return vmap(f, in_dims=(0, 0, 0 if batched_inputs else None))(self.params, self.buffers, X)

    __call__ = forward

    def weight_matrices(self) -> list[torch.Tensor]:
        """Weight matrices in forward order, each stacked: ``(size, out, in)``."""
        return [as_matrix(self.params[name], kind, batch_dims=1)
                for name, kind in weight_specs(self.template)]

    def member(self, i: int) -> nn.Module:
        """The ``i``-th network as an ordinary module (a copy)."""
        model = copy.deepcopy(self.template).to_empty(device=self.device)
        state = {k: v[i] for k, v in {**self.params, **self.buffers}.items()}
        model.load_state_dict(state)
        return model


def mlp_layers(ens: Ensemble) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """``(W, b)`` of each layer of an ensemble of :class:`~implicit_bias.models.MLP`, in forward
    order: ``W`` is ``(E, out, in)`` and ``b`` is ``(E, out)`` or None. These are the ensemble's
    own tensors (not copies): writing into them changes the ensemble."""
    if type(ens.template) is not MLP:
        raise TypeError("mlp_layers needs an ensemble of models.MLP, "
                        f"got {type(ens.template).__name__}")
    n_layers = len(ens.template.layers)
    return [(ens.params[f"layers.{i}.weight"], ens.params.get(f"layers.{i}.bias"))
            for i in range(n_layers)]


def stacked_engine_unsupported(template: nn.Module, loss: LossName | LossFn) -> str | None:
    """Why the stacked engine cannot train ``template`` with ``loss`` (None when it can)."""
    if type(template) is not MLP:
        return f"the template is a {type(template).__name__}, not a models.MLP"
    if not isinstance(loss, str) or loss not in STACKED_LOSSES:
        return f"the loss {loss!r} is not one of {STACKED_LOSSES}"
    act = template.act
    if isinstance(act, nn.LeakyReLU) and act.negative_slope < 0:
        return "a leaky ReLU with a negative slope"
    if not isinstance(act, nn.ReLU | nn.LeakyReLU | nn.Identity | nn.Tanh):
        return f"the activation {type(act).__name__}"
    return None


@dataclass(frozen=True)
class Divergence:
    """Member ``member`` had a non-finite loss ``loss`` first at step ``step`` (learning rate
    ``lr``)."""

    member: int
    step: int
    lr: float
    loss: float

    def __str__(self) -> str:
        return (f"member {self.member} diverged at step {self.step} "
                f"(learning rate {self.lr:g}, loss {self.loss})")


@dataclass
class EnsembleHistory:
    """``loss``: ``(size, steps + 1)`` losses of every member at every step (CPU).
    ``records[name]``: values of each metric at ``record_steps``. ``diverged``: members whose
    loss became non-finite (only with ``on_diverge='record'``; their parameters are frozen at the
    step named in ``divergences``). ``engine``: the engine that ran (``'stacked'`` or
    ``'vmap'``)."""

    loss: torch.Tensor
    record_steps: list[int] = field(default_factory=list)
    records: dict[str, list[Any]] = field(default_factory=dict)
    diverged: torch.Tensor | None = None
    divergences: list[Divergence] = field(default_factory=list)
    engine: str = ""

    def stacked(self, name: str) -> torch.Tensor:
        """A recorded metric as one tensor, time first."""
        return torch.stack([torch.as_tensor(v) for v in self.records[name]])


EnsembleMetric = Callable[[Ensemble], Any]


# --- the stacked engine ---------------------------------------------------------------------

_LOG2E = 1.0 / math.log(2.0)  # exp(x) = exp2(x * log2(e))
_PAD_TO = 16  # sample counts are padded to a multiple of this when that costs little (see _padding)


def _padding(n: int, device: torch.device) -> int:
    """Zero samples to append so the sample axis (the rows' leading dimension of every
    activation) is a multiple of 16 floats. On the CPU, MKL's GEMM is up to 1.6x slower when the
    output's leading dimension is not (e.g. n = 1347). Only done when it adds under 3% of work;
    padded samples get zero output gradient, so they change no gradient and no loss."""
    pad = -n % _PAD_TO
    return pad if device.type == "cpu" and 0 < pad <= 0.03 * n else 0


def _stacked_targets(y: torch.Tensor, loss: str, E: int, n: int, k: int, batched: bool,
                     dtype: torch.dtype) -> torch.Tensor:
    """Targets in the stacked engine's layout, ``(k, n)`` or ``(E, k, n)``; class labels one-hot."""
    lead = (E,) if batched else ()
    if loss == "ce":
        if y.dtype.is_floating_point or y.shape != (*lead, n):
            raise ValueError(
                f"the stacked engine's 'ce' needs integer labels of shape {(*lead, n)}, "
                f"got {y.dtype} {tuple(y.shape)} (use engine='vmap' for soft labels)")
        if bool((y < 0).any()) or bool((y >= k).any()):
            raise ValueError(f"class labels must lie in [0, {k}) for a network with {k} outputs")
        onehot = torch.nn.functional.one_hot(y, k).to(dtype)
        return onehot.transpose(-1, -2).contiguous()
    if y.numel() != math.prod(lead) * n * k:
        raise ValueError(f"targets of shape {tuple(y.shape)} do not match {n} outputs "
                         f"of size {k} per member")
    return y.to(dtype).reshape(*lead, n, k).transpose(-1, -2).contiguous()


class _StackedMLP:
    """Forward, loss and hand-derived backward of an MLP ensemble on stacked weights.

    Shapes: weights ``W_l`` ``(E, out, in)`` (the ensemble's tensors, updated in place), inputs
    ``XT`` features first ``(in, m)`` (shared) or ``(E, in, m)``, activations ``(E, width, m)``,
    outputs ``(E, k, m)``. The update is fused into the weight-gradient product: one rate for
    all members is that product's scalar factor; one rate per member multiplies the output
    gradient before the backward pass (which is linear in it), so every weight gradient arrives
    already scaled.
    """

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor | None]], act: nn.Module,
                 loss: str) -> None:
        self.layers = layers
        self.E = layers[0][0].shape[0]
        self.loss = loss
        self.act = ("relu" if isinstance(act, nn.ReLU) else "leaky" if isinstance(act, nn.LeakyReLU)
                    else "tanh" if isinstance(act, nn.Tanh) else "linear")
        self.slope = float(getattr(act, "negative_slope", 0.0))
        self.k = layers[-1][0].shape[1]
        self.value: torch.Tensor | None = None
        self._inputs: list[torch.Tensor] = []
        self._grad: torch.Tensor | None = None
        self._ones: dict[int, torch.Tensor] = {}

    def gradient_factor(self, m: int) -> float:
        """The constant that turns :meth:`_loss` 's gradient into ``dLoss/dZ`` for ``m`` samples."""
        if self.loss == "mse":
            return 2.0 / (m * self.k)
        if self.loss in ("logistic", "exp"):
            return -1.0 / m
        return 1.0 / m

    def _loss(self, Z: torch.Tensor, T: torch.Tensor, colmask: torch.Tensor | None,
              m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss of every member ``(E,)`` over the ``m`` real samples, and its gradient with
        respect to the outputs ``Z`` ``(E, k, m + pad)`` up to :meth:`gradient_factor`
        (written over ``Z``'s storage where possible). Padded samples get zero gradient."""
        E = self.E
        if self.loss == "ce":
            logp = torch.log_softmax(Z, 1)
            flat = logp.reshape(E, -1)
            if T.dim() == 2:
                value = torch.mv(flat, T.reshape(-1)).mul_(-1.0 / m)
            else:
                value = torch.bmm(flat.unsqueeze(1), T.reshape(E, -1, 1)).view(E).mul_(-1.0 / m)
            grad = logp.mul_(_LOG2E).exp2_()          # softmax; exp2 is 3x faster than exp on CPU
            if colmask is not None:
                grad.mul_(colmask)
            return value, grad.sub_(T)
        if self.loss in ("mse", "half_mse"):
            R = Z.sub_(T)
            if colmask is not None:
                R.mul_(colmask)
            flat = R.reshape(E, 1, -1)
            c = 1.0 / (m * self.k) if self.loss == "mse" else 0.5 / m
            return torch.bmm(flat, flat.transpose(1, 2)).view(E).mul_(c), R
        # logistic, exp: labels in {-1, +1}, 0 on padded samples (so their gradient is 0)
        neg_margins = Z.mul_(T).neg_()
        weights = (colmask / m if colmask is not None
                   else torch.full((Z.shape[-1],), 1.0 / m, dtype=Z.dtype, device=Z.device))
        if self.loss == "logistic":
            per_sample = torch.nn.functional.softplus(neg_margins)
            grad = neg_margins.sigmoid_()
        else:
            grad = neg_margins.mul_(_LOG2E).exp2_()
            per_sample = grad
        value = torch.mv(per_sample.reshape(E, -1), weights)
        return value, grad.mul_(T)

    def _activate_(self, Z: torch.Tensor) -> torch.Tensor:
        if self.act == "relu":
            return Z.relu_()
        if self.act == "leaky":
            return torch.nn.functional.leaky_relu_(Z, self.slope)
        if self.act == "tanh":
            return Z.tanh_()
        return Z

    def _activation_backward_(self, dA: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        """``dL/dZ`` from ``dL/dA`` and the activation's output ``A``, written over ``dA`` (the
        kernels autograd uses for these activations)."""
        if self.act == "relu":
            return torch.ops.aten.threshold_backward.grad_input(dA, A, 0, grad_input=dA)
        if self.act == "leaky":
            return torch.ops.aten.leaky_relu_backward.grad_input(dA, A, self.slope, True,
                                                                 grad_input=dA)
        if self.act == "tanh":
            return torch.ops.aten.tanh_backward.grad_input(dA, A, grad_input=dA)
        return dA

    def forward(self, XT: torch.Tensor, T: torch.Tensor, colmask: torch.Tensor | None,
                m: int) -> torch.Tensor:
        """Losses ``(E,)`` at the current weights on ``m`` samples (plus padding); keeps what
        :meth:`update` needs."""
        E, width = self.E, XT.shape[-1]
        inputs = [XT]
        H = XT
        last = len(self.layers) - 1
        for i, (W, b) in enumerate(self.layers):
            out = W.shape[1]
            if H.dim() == 2:   # shared data: the first layer of all members is one product
                W2 = W.view(E * out, -1)
                Z = torch.addmm(b.view(E * out, 1), W2, H) if b is not None else torch.mm(W2, H)
                Z = Z.view(E, out, width)
            else:
                Z = torch.baddbmm(b.view(E, out, 1), W, H) if b is not None else torch.bmm(W, H)
            if i < last:
                Z = self._activate_(Z)
                inputs.append(Z)
            H = Z
        self.value, self._grad = self._loss(H, T, colmask, m)
        self._inputs = inputs
        return self.value

    def update(self, rate: float | torch.Tensor, decay: float | torch.Tensor,
               alive: torch.Tensor | None) -> None:
        """One descent step in place from the last :meth:`forward`: ``W <- decay W - rate dL/dW``.
        ``rate``: the learning rate times :meth:`gradient_factor`, a float or ``(E, 1, 1)``;
        ``decay``: ``1 - lr * weight_decay``, a float or ``(E, 1, 1)``. Members not ``alive``
        keep their parameters exactly, even where their gradient is not finite."""
        E = self.E
        dZ = self._grad
        m = dZ.shape[-1]
        if isinstance(rate, torch.Tensor):   # one rate per member: scale the output gradient
            dZ.mul_(rate)
            alpha = -1.0
        else:                                # one rate for all: let the products scale
            alpha = -rate
        if alive is not None:
            # where(), not a zero rate: a diverged member's gradient may be inf/NaN (0 * inf = NaN)
            zero = torch.zeros((), dtype=dZ.dtype, device=dZ.device)
            dZ = torch.where(alive.view(E, 1, 1), dZ, zero)
        ones = self._ones.get(m)
        if ones is None:
            ones = self._ones[m] = torch.ones(m, dtype=dZ.dtype, device=dZ.device)
        per_member_decay = isinstance(decay, torch.Tensor)
        beta = 1.0 if per_member_decay else float(decay)
        for i in range(len(self.layers) - 1, -1, -1):
            W, b = self.layers[i]
            Hin = self._inputs[i]
            dA = torch.bmm(W.transpose(1, 2), dZ) if i > 0 else None   # before W changes
            out = W.shape[1]
            # record mode: update copies, then keep the frozen members' old values (their
            # activations, hence their weight gradients, may be inf/NaN even with dZ = 0)
            Wn = W if alive is None else W.clone()
            bn = b if (alive is None or b is None) else b.clone()
            if per_member_decay:
                Wn.mul_(decay)
                if bn is not None:
                    bn.mul_(decay.view(E, 1))
            if Hin.dim() == 2:
                Wn.view(E * out, -1).addmm_(dZ.view(E * out, m), Hin.t(), beta=beta, alpha=alpha)
            else:
                Wn.baddbmm_(dZ, Hin.transpose(1, 2), beta=beta, alpha=alpha)
            if bn is not None:
                bn.view(E * out).addmv_(dZ.view(E * out, m), ones, beta=beta, alpha=alpha)
            if alive is not None:
                torch.where(alive.view(E, 1, 1), Wn, W, out=W)
                if b is not None:
                    torch.where(alive.view(E, 1), bn, b, out=b)
            if dA is not None:
                dZ = self._activation_backward_(dA, Hin)
        self._inputs, self._grad = [], None


class _Batches:
    """The data of each step: all of it (full batch) or mini-batches of ``batch_size`` samples
    along ``axis``, drawn as :func:`train.train` draws them (``torch.randint`` on the CPU with
    ``generator``, one draw per step; drawn ``chunk`` steps at a time, which gives the same
    indices and moves them to the device once per chunk)."""

    def __init__(self, tensors: Sequence[torch.Tensor], axes: Sequence[int], n: int,
                 batch_size: int | None, generator: torch.Generator | None,
                 chunk: int = 256) -> None:
        self.tensors, self.axes, self.n = list(tensors), list(axes), n
        self.batch_size, self.generator, self.chunk = batch_size, generator, chunk
        self.device = tensors[0].device
        self.drawn: torch.Tensor | None = None

    def get(self, step: int) -> list[torch.Tensor]:
        if self.batch_size is None:
            return self.tensors
        row = step % self.chunk
        if row == 0 or self.drawn is None:
            idx = torch.randint(0, self.n, (self.chunk, self.batch_size), generator=self.generator,
                                device="cpu")
            self.drawn = idx.to(self.device)
        idx = self.drawn[row]
        return [t.index_select(a, idx) for t, a in zip(self.tensors, self.axes)]


class _Engine:
    """One engine's steps. :meth:`forward` gives the losses ``(E,)`` at the current parameters
    on the batch of ``step``, marks members with a non-finite loss as dead in ``alive`` (record
    mode) and, with ``update``, also takes the descent step (fused, so that a group of members
    is updated while its activations are still in cache); otherwise :meth:`update` takes it
    later (when metrics must see the parameters in between)."""

    def forward(self, step: int, update: bool, alive: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError  # pragma: no cover

    def update(self, alive: torch.Tensor | None) -> None:
        raise NotImplementedError  # pragma: no cover


class _StepSizes:
    """Each member's step size at a step: its learning rate, or with ``loss_scaled`` the
    norm-adaptive ``min(lr / L(w_t), max_lr)`` of :func:`train.train` (a tensor, so no host
    synchronisation). A float when every member takes the same fixed step."""

    def __init__(self, rates: torch.Tensor, loss_scaled: bool, max_lr: float) -> None:
        self.rates, self.loss_scaled, self.max_lr = rates, loss_scaled, max_lr
        E = len(rates)
        self.uniform = not loss_scaled and (E == 1 or bool((rates == rates[0]).all()))
        self.first = float(rates[0])

    def __call__(self, value: torch.Tensor, members: slice = slice(None)) -> float | torch.Tensor:
        """Step sizes of ``members`` whose losses are ``value``."""
        if self.loss_scaled:
            return torch.clamp(self.rates[members] / value, max=self.max_lr)
        return self.first if self.uniform else self.rates[members]


#: on the CPU, members are trained in groups whose largest activation tensor stays under this
#: size (one huge batched product with a short inner dimension is bound by memory traffic:
#: 64 MLPs 64-256-256-10 on 1347 samples run ~1.3x faster in groups of 2 than all at once)
_CPU_GROUP_BYTES = 4 * 2**20


def _member_groups(E: int, per_member_bytes: int, device: torch.device) -> list[slice]:
    if device.type != "cpu":
        return [slice(0, E)]
    size = max(1, min(E, _CPU_GROUP_BYTES // max(per_member_bytes, 1)))
    return [slice(start, min(start + size, E)) for start in range(0, E, size)]


class _StackedEngine(_Engine):
    def __init__(self, ens: Ensemble, X: torch.Tensor, y: torch.Tensor, loss: str,
                 sizes: _StepSizes, weight_decay: float, batched: bool, batch_size: int | None,
                 generator: torch.Generator | None, n: int) -> None:
        for name, p in ens.params.items():  # the products view the weights as matrices
            if not p.is_contiguous():
                ens.params[name] = p.contiguous()
        layers = mlp_layers(ens)
        E, k = ens.size, layers[-1][0].shape[1]
        X = X.flatten(2) if batched else X.flatten(1)
        XT = X.transpose(-1, -2).contiguous()
        T = _stacked_targets(y, loss, E, n, k, batched, ens.dtype)
        self.m = n if batch_size is None else batch_size
        self.pad = _padding(self.m, ens.device)
        self.colmask: torch.Tensor | None = None
        if self.pad:
            self.colmask = torch.ones(self.m + self.pad, dtype=XT.dtype, device=XT.device)
            self.colmask[self.m:] = 0
        if self.pad and batch_size is None:   # pad once; mini-batches are padded as drawn
            XT, T = self._padded(XT), self._padded(T)
        self.data = _Batches([XT, T], [-1, -1], n, batch_size, generator)
        widest = max(W.shape[1] for W, _ in layers)
        per_member = widest * (self.m + self.pad) * layers[0][0].element_size()
        self.groups = []
        for members in _member_groups(E, per_member, ens.device):
            views = [(W[members], None if b is None else b[members]) for W, b in layers]
            self.groups.append((members, _StackedMLP(views, ens.template.act, loss)))
        self.factor = self.groups[0][1].gradient_factor(self.m)
        self.sizes, self.weight_decay = sizes, weight_decay
        self.minibatches = batch_size is not None

    def _padded(self, A: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(A, (0, self.pad))

    def _update(self, members: slice, net: _StackedMLP, alive: torch.Tensor | None) -> None:
        step = self.sizes(net.value, members)
        if isinstance(step, torch.Tensor):
            step = step.view(-1, 1, 1)
        decay = 1 - step * self.weight_decay if self.weight_decay else 1.0
        net.update(step * self.factor, decay, None if alive is None else alive[members])

    def forward(self, step: int, update: bool, alive: torch.Tensor | None) -> torch.Tensor:
        XT, T = self.data.get(step)
        if self.pad and self.minibatches:
            XT, T = self._padded(XT), self._padded(T)
        values = []
        for members, net in self.groups:
            value = net.forward(XT if XT.dim() == 2 else XT[members],
                                T if T.dim() == 2 else T[members], self.colmask, self.m)
            if alive is not None:
                alive[members].logical_and_(torch.isfinite(value))
            if update:
                self._update(members, net, alive)
            values.append(value)
        return values[0] if len(values) == 1 else torch.cat(values)

    def update(self, alive: torch.Tensor | None) -> None:
        for members, net in self.groups:
            self._update(members, net, alive)


class _VmapEngine(_Engine):
    def __init__(self, ens: Ensemble, X: torch.Tensor, y: torch.Tensor, loss: LossName | LossFn,
                 sizes: _StepSizes, weight_decay: float, batched: bool, batch_size: int | None,
                 generator: torch.Generator | None, n: int) -> None:
        loss_fn = loss_function(loss)

        def member_loss(p: Params, b: Params, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return loss_fn(functional_call(ens.template, (p, b), (x,)), t)

        data_dim = 0 if batched else None
        self.grad_fn = vmap(grad_and_value(member_loss), in_dims=(0, 0, data_dim, data_dim))
        axis = 1 if batched else 0
        self.data = _Batches([X, y], [axis, axis], n, batch_size, generator)
        self.ens, self.sizes, self.weight_decay = ens, sizes, weight_decay
        self.grads: Params = {}
        self.value: torch.Tensor | None = None

    def forward(self, step: int, update: bool, alive: torch.Tensor | None) -> torch.Tensor:
        with torch.enable_grad():
            self.grads, values = self.grad_fn(self.ens.params, self.ens.buffers,
                                              *self.data.get(step))
        self.value = values.detach()
        if alive is not None:
            alive.logical_and_(torch.isfinite(self.value))
        if update:
            self.update(alive)
        return self.value

    def update(self, alive: torch.Tensor | None) -> None:
        step = self.sizes(self.value)
        if not isinstance(step, torch.Tensor):
            step = torch.full_like(self.value, step)
        for name, p in self.ens.params.items():
            g = self.grads[name]
            if self.weight_decay:
                g = g + self.weight_decay * p
            shape = (-1, *[1] * (p.dim() - 1))
            delta = step.view(shape) * g
            if alive is not None:
                # where(), not 0 * g: a diverged member's gradient may be inf/NaN (0 * inf = NaN)
                delta = torch.where(alive.view(shape), delta, torch.zeros_like(delta))
            p.sub_(delta)
        self.grads = {}


def _engine_for(ens: Ensemble, loss: LossName | LossFn, engine: EngineName) -> str:
    if engine not in ("auto", "stacked", "vmap"):
        raise ValueError(f"unknown engine {engine!r}; use 'auto', 'stacked' or 'vmap'")
    if engine == "vmap":
        return "vmap"
    reason = stacked_engine_unsupported(ens.template, loss)
    if reason is None:
        return "stacked"
    if engine == "stacked":
        raise ValueError(f"engine='stacked' cannot train this ensemble: {reason}. "
                         "Use engine='auto' or 'vmap'.")
    return "vmap"


def train_ensemble(
    ens: Ensemble,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    loss: LossName | LossFn = "ce",
    steps: int = 1000,
    lr: float | torch.Tensor = 0.1,
    weight_decay: float = 0.0,
    batched_data: bool = False,
    batch_size: int | None = None,
    generator: torch.Generator | None = None,
    loss_scaled_lr: bool = False,
    max_lr: float = float("inf"),
    record_every: int | None = None,
    metrics: Mapping[str, EnsembleMetric] | None = None,
    on_diverge: Literal["raise", "record"] = "raise",
    check_every: int = 100,
    engine: EngineName = "auto",
    member_ids: Sequence[int] | None = None,
    progress: bool | None = None,
    desc: str = "ensemble",
) -> EnsembleHistory:
    """Gradient descent on every member at once (in place on ``ens.params``).

    Each member takes exactly the steps :func:`implicit_bias.train.train` (``optimizer='gd'``,
    or ``'sgd'`` with ``batch_size``) would take on it alone. ``lr`` is a float or one rate per
    member (``(size,)``): a learning-rate sweep is a batch dimension too. With ``batched_data``
    every member has its own dataset: ``X`` is ``(size, n, ...)`` and ``y`` is ``(size, n, ...)``.
    ``batch_size`` switches to mini-batch SGD: at every step all members see the same ``batch_size``
    samples, drawn with replacement with ``generator`` as :func:`train.train` draws them.
    ``loss_scaled_lr`` takes each member's step ``min(lr / L(w_t), max_lr)`` from its own loss
    (:func:`train.train`'s norm-adaptive step for separable data).
    ``metrics`` maps names to ``f(ensemble) -> value`` recorded every ``record_every`` steps (and
    at the first and last). A non-finite loss raises :class:`TrainingDiverged` naming the member,
    the step and its learning rate (checked every ``check_every`` steps), or with
    ``on_diverge='record'`` freezes that member (the others go on unaffected) and reports it in
    ``history.divergences``.

    ``engine``: ``'auto'`` takes the stacked engine (batched products, hand-derived backward)
    for a :class:`~implicit_bias.models.MLP` with a loss named in :data:`STACKED_LOSSES`, and
    ``vmap`` otherwise; ``'stacked'`` or ``'vmap'`` force one (``'stacked'`` raises if it cannot).
    ``member_ids``: the numbers that name the members in messages and in ``history.divergences``
    (default ``0 .. size - 1``; :func:`train_models` passes the caller's indices).
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if on_diverge not in ("raise", "record"):
        raise ValueError(f"on_diverge must be 'raise' or 'record', got {on_diverge!r}")
    if check_every < 1:
        raise ValueError(f"check_every must be >= 1, got {check_every}")
    which = _engine_for(ens, loss, engine)
    E, device, dtype = ens.size, ens.device, ens.dtype
    rates = torch.as_tensor(lr, dtype=dtype, device=device)
    rates = rates.expand(E) if rates.dim() == 0 else rates
    if rates.shape != (E,):
        raise ValueError(f"lr must be a float or have shape ({E},), got {tuple(rates.shape)}")
    if batched_data and (X.shape[0] != E or y.shape[0] != E):
        raise ValueError(f"with batched_data, X and y need a leading axis of size {E} (one "
                         f"dataset per member), got {tuple(X.shape)} and {tuple(y.shape)}")
    n = X.shape[1] if batched_data else X.shape[0]
    if batch_size is not None and not 1 <= batch_size:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if loss_scaled_lr and batch_size is not None:
        raise ValueError("loss_scaled_lr is implemented for full-batch gradient descent only "
                         "(as in train.train)")
    ids = list(range(E)) if member_ids is None else [int(i) for i in member_ids]
    if len(ids) != E:
        raise ValueError(f"member_ids must name {E} members, got {len(ids)}")

    losses = torch.full((E, steps + 1), float("nan"), dtype=torch.float64, device=device)
    alive = torch.ones(E, dtype=torch.bool, device=device)
    record_mode = on_diverge == "record"
    history = EnsembleHistory(loss=losses, engine=which)
    show = (not quiet()) if progress is None else progress
    checked = 0

    def record() -> None:
        with torch.no_grad():
            for name, fn in (metrics or {}).items():
                value = fn(ens)
                history.records.setdefault(name, []).append(
                    value.detach().cpu() if isinstance(value, torch.Tensor) else value)

    def check(upto: int) -> None:
        nonlocal checked
        window = losses[:, checked : upto + 1]
        bad = ~torch.isfinite(window)
        if on_diverge == "raise" and bool(bad.any()):
            member, offset = (int(v) for v in bad.nonzero()[0])
            raise TrainingDiverged(
                f"training diverged: member {ids[member]} of the ensemble has loss "
                f"{float(window[member, offset])} at step {checked + offset} (learning rate "
                f"{float(rates[member]):g}). Lower its learning rate or initialisation scale, "
                "or pass on_diverge='record' to freeze diverging members and go on."
            )
        checked = upto + 1

    sizes = _StepSizes(rates, loss_scaled_lr, max_lr)
    if which == "stacked":
        runner: _Engine = _StackedEngine(ens, X, y, loss, sizes, weight_decay, batched_data,
                                         batch_size, generator, n)
    else:
        runner = _VmapEngine(ens, X, y, loss, sizes, weight_decay, batched_data, batch_size,
                             generator, n)

    with torch.no_grad():
        for step in tqdm(range(steps + 1), disable=not show, desc=desc, mininterval=1.0):
            due = step % record_every == 0 or step == steps if record_every else False
            recording = bool(metrics) and due
            fused = step < steps and not recording
            losses[:, step] = runner.forward(step, fused, alive if record_mode else None)
            if recording:
                history.record_steps.append(step)
                record()
            if step % check_every == 0 or step == steps:
                check(step)
            if step < steps and not fused:
                runner.update(alive if record_mode else None)
    history.loss = losses.cpu()
    history.diverged = (~alive).cpu()
    history.divergences = _divergences(history.loss, rates, ids)
    return history


def _divergences(loss: torch.Tensor, rates: torch.Tensor, ids: Sequence[int]) -> list[Divergence]:
    """The first non-finite loss of every member that has one."""
    bad = ~torch.isfinite(loss)
    out = []
    for member in bad.any(1).nonzero().flatten().tolist():
        step = int(bad[member].nonzero()[0])
        out.append(Divergence(ids[member], step, float(rates[member]), float(loss[member, step])))
    return out


# --- networks of several architectures ------------------------------------------------------

def architecture_key(model: nn.Module) -> tuple:
    """Two models train in one ensemble iff their keys are equal: same class, same module tree
    and hyperparameters (its ``repr``), same parameter and buffer names, shapes, dtypes, devices."""
    tensors = [*model.named_parameters(), *model.named_buffers()]
    return (type(model).__module__, type(model).__qualname__, repr(model),
            tuple((name, tuple(t.shape), t.dtype, str(t.device)) for name, t in tensors))


@dataclass
class ModelsHistory:
    """What :func:`train_models` recorded, in the caller's order of models.

    ``loss``: ``(N, steps + 1)``; ``diverged``: ``(N,)``; ``divergences``: named by the caller's
    indices. ``groups``: one ``(indices, ensemble, history)`` per architecture, in order of first
    appearance; recorded metrics are in each group's history (their shapes differ across groups).
    """

    loss: torch.Tensor
    diverged: torch.Tensor
    divergences: list[Divergence]
    groups: list[tuple[list[int], Ensemble, EnsembleHistory]]

    def group_of(self, i: int) -> tuple[int, EnsembleHistory]:
        """Position of model ``i`` in its group's ensemble, and that group's history."""
        for indices, _, hist in self.groups:
            if i in indices:
                return indices.index(i), hist
        raise IndexError(f"no model {i} (there are {len(self.loss)})")


def train_models(
    models: Sequence[nn.Module],
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    lr: float | Sequence[float] | torch.Tensor = 0.1,
    batched_data: bool = False,
    desc: str = "models",
    **kwargs: Any,
) -> ModelsHistory:
    """Train networks of possibly different architectures (e.g. a depth sweep with several seeds
    per depth), each architecture as one ensemble; the models are trained in place.

    Models are grouped by :func:`architecture_key`; each group runs :func:`train_ensemble`
    (``kwargs``: ``loss``, ``steps``, ``weight_decay``, ``batch_size``, ``generator``,
    ``record_every``, ``metrics``, ``on_diverge``, ``check_every``, ``engine``, ``progress``), so
    every model takes the steps :func:`implicit_bias.train.train` would take on it alone.
    ``lr``: one rate, or one per model. With ``batched_data``, ``X`` and ``y`` hold one dataset
    per model along their first axis. Results come back in the caller's order. With mini-batches
    (``batch_size``) every group draws its own batches from ``generator`` in turn, so a model's
    batches depend on the groups trained before it.
    """
    if not models:
        raise ValueError("need at least one model")
    N = len(models)
    rates = torch.as_tensor(lr, dtype=torch.float64)
    rates = rates.expand(N) if rates.dim() == 0 else rates
    if rates.shape != (N,):
        raise ValueError(f"lr must be a float or one rate per model ({N}), "
                         f"got shape {tuple(rates.shape)}")
    if batched_data and (X.shape[0] != N or y.shape[0] != N):
        raise ValueError(f"with batched_data, X and y need a leading axis of size {N} (one "
                         f"dataset per model), got {tuple(X.shape)} and {tuple(y.shape)}")
    groups: dict[tuple, list[int]] = {}
    for i, model in enumerate(models):
        groups.setdefault(architecture_key(model), []).append(i)
    results: list[tuple[list[int], Ensemble, EnsembleHistory]] = []
    for g, indices in enumerate(groups.values()):
        ens = Ensemble.from_models([models[i] for i in indices])
        pick = torch.tensor(indices)
        Xg, yg = (X[pick.to(X.device)], y[pick.to(y.device)]) if batched_data else (X, y)
        hist = train_ensemble(ens, Xg, yg, lr=rates[pick].to(ens.dtype).to(ens.device),
                              batched_data=batched_data, member_ids=indices,
                              desc=f"{desc} (group {g + 1} of {len(groups)})", **kwargs)
        with torch.no_grad():
            for j, i in enumerate(indices):
                state = {k: v[j] for k, v in {**ens.params, **ens.buffers}.items()}
                models[i].load_state_dict(state)
        results.append((indices, ens, hist))
    steps = results[0][2].loss.shape[1]
    loss = torch.empty(N, steps, dtype=torch.float64)
    diverged = torch.zeros(N, dtype=torch.bool)
    for indices, _, hist in results:
        loss[indices] = hist.loss
        diverged[indices] = hist.diverged
    divergences = sorted((d for _, _, h in results for d in h.divergences), key=lambda d: d.member)
    return ModelsHistory(loss, diverged, divergences, results)
