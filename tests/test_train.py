"""Training loops of `implicit_bias.train` against closed-form recursions."""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from implicit_bias import models, train

D = torch.float64


def least_squares(n: int = 20, d: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=D)
    y = X @ torch.randn(d, generator=g, dtype=D) + 0.1 * torch.randn(n, generator=g, dtype=D)
    return X, y


def blobs(n: int = 90, d: int = 5, k: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    centres = 2 * torch.randn(k, d, generator=g)
    return centres[y] + torch.randn(n, d, generator=g), y


def linear_model(d: int, w0: torch.Tensor) -> nn.Module:
    lin = models.MLP(d, 1, depth=1, bias=False).double()
    with torch.no_grad():
        lin.layers[0].weight.copy_(w0[None])
    return lin


# --- GD is the closed-form recursion ----------------------------------------------------

@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_gd_on_least_squares_matches_recursion(weight_decay: float) -> None:
    X, y = least_squares()
    n, d = X.shape
    w = torch.linspace(-1, 1, d, dtype=D)
    model = linear_model(d, w)
    eta, steps = 0.1, 30
    hist = train.train(model, X, y, loss="half_mse", steps=steps, lr=eta,
                       weight_decay=weight_decay, progress=False)
    losses = []
    for _ in range(steps):
        r = X @ w - y
        losses.append(0.5 * (r**2).mean())
        w = w - eta * (X.T @ r / n + weight_decay * w)
    losses.append(0.5 * ((X @ w - y) ** 2).mean())
    assert hist.loss.shape == (steps + 1,)
    assert torch.allclose(hist.loss, torch.stack(losses), rtol=1e-12, atol=0)
    assert torch.allclose(model.layers[0].weight[0], w, rtol=1e-12, atol=1e-14)


def test_gd_with_a_schedule_uses_the_rate_of_each_step() -> None:
    X, y = least_squares(seed=1)
    n, d = X.shape
    w = torch.zeros(d, dtype=D)
    model = linear_model(d, w)
    sched = train.warmup(train.cosine(0.2, 10, final=0.1), 3)
    train.train(model, X, y, loss="half_mse", steps=10, lr=sched, progress=False)
    for t in range(10):
        w = w - sched(t) * X.T @ (X @ w - y) / n
    assert torch.allclose(model.layers[0].weight[0], w, rtol=1e-12)


def test_schedules() -> None:
    c = train.cosine(1.0, 100, final=0.1)
    assert c(0) == pytest.approx(1.0) and c(100) == pytest.approx(0.1) and c(500) == pytest.approx(0.1)
    assert c(50) == pytest.approx(0.55)
    w = train.warmup(train.constant(0.4), 4)
    assert [w(t) for t in range(5)] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4])


def test_loss_scaled_lr_step() -> None:
    g = torch.Generator().manual_seed(2)
    X = torch.randn(10, 3, generator=g, dtype=D)
    y = torch.sign(X[:, 0])
    w = torch.tensor([0.1, -0.2, 0.3], dtype=D)
    model = linear_model(3, w)
    eta = 0.5
    hist = train.train(model, X, y, loss="logistic", steps=3, lr=eta, loss_scaled_lr=True, progress=False)
    for _ in range(3):
        w_ = w.clone().requires_grad_(True)
        L = F.softplus(-y * (X @ w_)).mean()
        (grad,) = torch.autograd.grad(L, w_)
        w = w - eta / L.detach() * grad
    assert torch.allclose(model.layers[0].weight[0], w, rtol=1e-12)
    assert hist.loss[-1] < hist.loss[0]
    # with a cap the step is min(eta / L, max_lr)
    w0 = torch.tensor([0.1, -0.2, 0.3], dtype=D)
    capped = linear_model(3, w0)
    train.train(capped, X, y, loss="logistic", steps=1, lr=eta, loss_scaled_lr=True, max_lr=0.01,
                progress=False)
    w_ = w0.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.softplus(-y * (X @ w_)).mean(), w_)
    assert torch.allclose(capped.layers[0].weight[0], w0 - 0.01 * grad, rtol=1e-12)


# --- divergence -------------------------------------------------------------------------

def test_divergence_names_step_and_learning_rate() -> None:
    X, y = least_squares(n=30, d=6, seed=3)
    X, y = X.float(), y.float()
    torch.manual_seed(0)

    def fresh() -> nn.Module:
        torch.manual_seed(0)
        return models.MLP(6, 1, width=8, depth=3)

    with pytest.raises(train.TrainingDiverged) as info:
        train.train(fresh(), X, y[:, None], loss="mse", steps=400, lr=50.0, progress=False)
    msg = str(info.value)
    assert "learning rate 50" in msg
    step = int(re.search(r"at step (\d+)", msg).group(1))
    # the named step is the first non-finite one: one step earlier trains without error
    hist = train.train(fresh(), X, y[:, None], loss="mse", steps=step - 1, lr=50.0, progress=False)
    assert torch.isfinite(hist.loss).all()
    with pytest.raises(train.TrainingDiverged, match=f"at step {step} "):
        train.train(fresh(), X, y[:, None], loss="mse", steps=step, lr=50.0, progress=False)
    assert issubclass(train.TrainingDiverged, RuntimeError)


def test_divergence_with_a_schedule_names_that_steps_rate() -> None:
    X, y = least_squares(seed=4)
    model = linear_model(4, torch.zeros(4, dtype=D))
    with pytest.raises(train.TrainingDiverged, match=r"learning rate 1e\+06"):
        train.train(model, X, y, loss="half_mse", steps=500, lr=lambda t: 1e6, check_every=7,
                    progress=False)


def test_bad_arguments() -> None:
    X, y = blobs()
    net = models.MLP(5, 3, width=4, depth=2)
    with pytest.raises(ValueError, match="steps"):
        train.train(net, X, y, steps=-1, progress=False)
    with pytest.raises(ValueError, match="full-batch"):
        train.train(net, X, y, steps=1, batch_size=8, progress=False)
    with pytest.raises(ValueError, match="loss_scaled_lr"):
        train.train(net, X, y, steps=1, optimizer="adam", loss_scaled_lr=True, progress=False)
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        train.train(net, X, y, steps=1, optimizer="lbfgs", progress=False)  # type: ignore[arg-type]


# --- SGD and Adam -----------------------------------------------------------------------

@pytest.mark.parametrize("optimizer,lr,kw", [("sgd", 0.1, dict(momentum=0.9)), ("adam", 1e-2, {})])
def test_sgd_and_adam_decrease_the_loss(optimizer: str, lr: float, kw: dict) -> None:
    X, y = blobs()
    torch.manual_seed(0)
    net = models.MLP(5, 3, width=16, depth=2)
    g = torch.Generator().manual_seed(0)
    hist = train.train(net, X, y, steps=150, lr=lr, optimizer=optimizer, batch_size=16,
                       generator=g, progress=False, **kw)
    assert hist.loss[-10:].mean() < 0.5 * hist.loss[:10].mean()
    assert train.accuracy(net, X, y) > 0.8


def test_sgd_is_reproducible_with_a_generator() -> None:
    X, y = blobs(seed=1)
    finals = []
    for _ in range(2):
        torch.manual_seed(0)
        net = models.MLP(5, 3, width=8, depth=2)
        train.train(net, X, y, steps=20, lr=0.1, optimizer="sgd", batch_size=8,
                    generator=torch.Generator().manual_seed(5), progress=False)
        finals.append(torch.cat([p.flatten() for p in net.parameters()]))
    assert torch.equal(finals[0], finals[1])


# --- recording --------------------------------------------------------------------------

@pytest.mark.parametrize("steps,expected", [(10, [0, 3, 6, 9, 10]), (9, [0, 3, 6, 9]), (0, [0])])
def test_recorder_steps(steps: int, expected: list[int]) -> None:
    X, y = blobs()
    net = models.MLP(5, 3, width=4, depth=3)
    rec = train.Recorder(3, {"norms": train.layer_norms_metric, "spectra": train.spectra_metric,
                             "w00": lambda m: m.layers[0].weight[0, 0]})
    hist = train.train(net, X, y, steps=steps, lr=0.05, recorder=rec, progress=False)
    assert hist.record_steps == expected
    assert hist.stacked("norms").shape == (len(expected), 3)
    assert len(hist["spectra"]) == len(expected)
    assert [s.shape[0] for s in hist["spectra"][0]] == [4, 4, 3]
    # the last record is the final model
    assert hist.stacked("w00")[-1].item() == net.layers[0].weight[0, 0].item()
    assert hist.records["w00"][0].grad_fn is None


def test_recorder_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="every"):
        train.Recorder(0, {})


# --- losses and accuracy ----------------------------------------------------------------

def test_loss_function_values() -> None:
    g = torch.Generator().manual_seed(6)
    out = torch.randn(5, 3, generator=g, dtype=D)
    tgt = torch.randn(5, 3, generator=g, dtype=D)
    labels = torch.tensor([0, 2, 1, 1, 0])
    assert train.loss_function("ce")(out, labels).item() == pytest.approx(
        float(-(out.log_softmax(1)[torch.arange(5), labels]).mean()))
    assert train.loss_function("mse")(out, tgt).item() == pytest.approx(float(((out - tgt) ** 2).mean()))
    assert train.loss_function("half_mse")(out, tgt).item() == pytest.approx(
        float(0.5 * ((out - tgt) ** 2).sum(1).mean()))
    f = torch.randn(6, 1, generator=g, dtype=D)
    s = torch.tensor([1.0, -1, 1, -1, 1, 1], dtype=D)
    assert train.loss_function("logistic")(f, s).item() == pytest.approx(
        float(torch.log1p(torch.exp(-s * f[:, 0])).mean()))
    assert train.loss_function("exp")(f, s).item() == pytest.approx(float(torch.exp(-s * f[:, 0]).mean()))
    custom = lambda o, t: o.sum()
    assert train.loss_function(custom) is custom


def test_square_losses_with_one_output_do_not_broadcast() -> None:
    """A one-output model gives (n, 1) while targets are often (n,)."""
    f = torch.tensor([[1.0], [2.0], [3.0]], dtype=D)
    y = torch.tensor([1.0, 2.0, 5.0], dtype=D)
    assert train.loss_function("half_mse")(f, y).item() == pytest.approx(0.5 * 4 / 3)
    assert train.loss_function("mse")(f, y).item() == pytest.approx(4 / 3)
    with pytest.raises(ValueError, match=r"outputs of shape \(3, 2\) do not match targets of shape \(3,\)"):
        train.loss_function("half_mse")(torch.zeros(3, 2), y)


def test_unknown_loss_lists_the_names() -> None:
    with pytest.raises(ValueError, match="unknown loss 'hinge'.*'ce', 'mse', 'half_mse', 'logistic', 'exp'"):
        train.loss_function("hinge")  # type: ignore[arg-type]


def test_accuracy() -> None:
    class Fixed(nn.Module):
        def __init__(self, out: torch.Tensor) -> None:
            super().__init__()
            self.out = out

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out

    X = torch.zeros(4, 1)
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])
    assert train.accuracy(Fixed(logits), X, torch.tensor([0, 1, 1, 1])) == pytest.approx(0.75)
    scores = torch.tensor([[0.5], [-2.0], [1.0], [-0.1]])
    assert train.accuracy(Fixed(scores), X, torch.tensor([1.0, -1.0, -1.0, 1.0])) == pytest.approx(0.5)
    assert train.accuracy(Fixed(scores[:, 0]), X, torch.tensor([1.0, -1.0, 1.0, -1.0])) == 1.0
    assert math.isclose(train.accuracy(Fixed(scores), X, torch.ones(4)), 0.5)


# --- norm-adaptive training, log-spaced recording, plateau detector (saddle-to-saddle part) ---

def test_log_spaced_steps() -> None:
    steps = train.log_spaced_steps(10_000, 20)
    assert steps[0] == 0 and steps[-1] == 10_000 and steps == sorted(set(steps))
    assert len(steps) <= 20 and steps[1] == 1
    gaps = [b - a for a, b in zip(steps[1:], steps[2:])]
    assert gaps[-1] > 10 * gaps[0]                      # denser early
    assert train.log_spaced_steps(1, 5) == [0, 1]
    with pytest.raises(ValueError):
        train.log_spaced_steps(100, 1)


def test_scheduled_recorder_records_at_the_given_steps() -> None:
    X, y = blobs()
    model = models.MLP(5, 3, 8, 2)
    rec = train.ScheduledRecorder([0, 3, 7], {"norms": train.layer_norms_metric})
    hist = train.train(model, X, y, steps=10, lr=0.01, recorder=rec, progress=False)
    assert hist.record_steps == [0, 3, 7, 10]


def _stacked(seed: int = 0, R: int = 3, dims=(5, 7, 6, 3), std: float = 0.3) -> list[torch.Tensor]:
    return models.gaussian_weights(list(dims), std, (R,), generator=torch.Generator().manual_seed(seed))


def test_norm_adaptive_rate_formula() -> None:
    Ws = _stacked()
    sq = sum(W.pow(2).flatten(1).sum(1) for W in Ws)
    L = len(Ws)
    assert torch.allclose(train.norm_adaptive_rate(Ws, 10.0), 10.0 * sq.sqrt() ** (2 - L))
    assert torch.allclose(train.norm_adaptive_rate(Ws, 2.0, radius=math.sqrt(L)),
                          2.0 * (sq / L).sqrt() ** (2 - L))


@pytest.mark.parametrize("loss", ["ce", "half_mse"])
def test_train_norm_adaptive_step_matches_autograd(loss: str) -> None:
    """One full-batch step of the hand-written backward equals gradient descent with autograd,
    for every stacked network, with the norm-adaptive step."""
    X, y = blobs(n=30)
    X = X.double()
    Ws = _stacked(R=2)
    if loss == "half_mse":
        y = torch.nn.functional.one_hot(y, 3).double()
    expected = []
    for r in range(2):
        Wr = [W[r].clone().requires_grad_(True) for W in Ws]
        h = X
        for i, W in enumerate(Wr):
            h = h @ W.T
            if i < 2:
                h = torch.relu(h)
        value = train.loss_function(loss)(h, y)
        grads = torch.autograd.grad(value, Wr)
        rate = 0.5 * float(sum(W.detach().pow(2).sum() for W in Wr)) ** ((2 - 3) / 2)
        expected.append([W.detach() - rate * g for W, g in zip(Wr, grads)])
    hist = train.train_norm_adaptive(Ws, X, y, loss=loss, steps=1, eta0=0.5, progress=False)
    for r in range(2):
        for W, E in zip(Ws, expected[r]):
            assert torch.allclose(W[r], E, rtol=1e-12, atol=1e-14)
    assert hist.loss.shape == (2, 2) and hist.rate.shape == (2, 2)


def test_train_norm_adaptive_minibatches_records_and_reproducibility() -> None:
    X, y = blobs(n=60)
    runs = []
    for _ in range(2):
        Ws = _stacked(seed=1, std=0.5)
        hist = train.train_norm_adaptive(
            Ws, X.double(), y, steps=20, eta0=0.5, batch_size=8,
            generator=torch.Generator().manual_seed(3), record_steps=[0, 5], step_offset=0,
            metrics={"norm": lambda W: sum(w.pow(2).flatten(1).sum(1) for w in W)}, progress=False)
        runs.append((Ws, hist))
    (W_a, h_a), (W_b, h_b) = runs
    assert all(torch.equal(a, b) for a, b in zip(W_a, W_b))
    assert h_a.record_steps == [0, 5, 20] and h_a.stacked("norm").shape == (3, 3)
    # a run split in two segments records on one global schedule
    hist = train.train_norm_adaptive(_stacked(), X.double(), y, steps=5, eta0=0.1,
                                     record_steps=[12], step_offset=10, metrics={"n": lambda W: 0.0},
                                     progress=False)
    assert hist.record_steps == [12, 15]


def test_train_norm_adaptive_bad_input_and_divergence() -> None:
    X, y = blobs(n=30)
    Ws = _stacked()
    with pytest.raises(ValueError, match="stacked"):
        train.train_norm_adaptive([Ws[0][0]], X.double(), y, steps=1)
    with pytest.raises(ValueError, match="requires_grad"):
        train.train_norm_adaptive([W.requires_grad_(True) for W in _stacked()], X.double(), y, steps=1)
    with pytest.raises(train.TrainingDiverged, match=r"run \d+ has loss .* at step \d+ \(step size"):
        # depth 2: the step is eta0 whatever the norm, and a huge one overflows
        train.train_norm_adaptive(_stacked(dims=(5, 7, 3)), X.double(), torch.nn.functional.one_hot(y, 3).double(),
                                  loss="half_mse", steps=50, eta0=1e3, check_every=1, progress=False)


def _staircase(T: int = 2000) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.arange(T + 1, dtype=torch.float64)
    step = lambda c, w: torch.sigmoid((t - c) / w)
    return t, 2.3 - 0.8 * step(500, 15) - 1.0 * step(1300, 15)


def test_detect_plateaus_on_a_staircase() -> None:
    t, loss = _staircase()
    p = train.detect_plateaus(t, loss)
    assert p.n_saddles == 2
    (a0, b0), (a1, b1) = p.saddles
    assert a0 == 0 and 400 < b0 < 500 and 500 < a1 < 700 and 1150 < b1 < 1300
    assert p.levels[0] == pytest.approx(2.3, abs=0.01) and p.levels[1] == pytest.approx(1.5, abs=0.02)
    assert 500 < p.escapes[0] < 700 and p.drop_share > 0.9
    # noise that the smoothing absorbs does not change the answer
    g = torch.Generator().manual_seed(0)
    noisy = loss + 0.005 * torch.randn(loss.shape, generator=g, dtype=torch.float64)
    assert train.detect_plateaus(t, noisy).n_saddles == 2


def test_detect_plateaus_finds_no_saddle_in_smooth_decays() -> None:
    t = torch.linspace(0, 1, 1001, dtype=torch.float64)
    for rate in (1.0, 5.0, 20.0):
        assert train.detect_plateaus(t, 2.3 * torch.exp(-rate * t)).n_saddles == 0
    assert train.detect_plateaus(t, 2.3 - 2.0 * t).n_saddles == 0
    flat = train.detect_plateaus(t, torch.full_like(t, 2.3))
    assert flat.n_saddles == 0 and len(flat.plateaus) == 1


def test_detect_plateaus_bad_input() -> None:
    with pytest.raises(ValueError, match="increasing"):
        train.detect_plateaus([0, 2, 1], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="at least 3"):
        train.detect_plateaus([0, 1], [1.0, 0.5])
    with pytest.raises(ValueError, match="non-finite"):
        train.detect_plateaus([0, 1, 2], [1.0, float("nan"), 0.5])
