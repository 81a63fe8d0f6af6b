"""Tests of implicit_bias.extrapolation.homogeneous (the theory of Kang et al., Sec. 4.2)."""

import math

import pytest
import torch

from implicit_bias import homogeneous as hn
from implicit_bias.extrapolation import homogeneous as H


def test_sphere_data_shapes_norms_and_balance():
    X, y = H.sphere_clusters(400, 10, n_clusters=4, positive_fraction=0.75, seed=3)
    assert X.shape == (400, 10) and y.shape == (400,)
    assert torch.allclose(X.norm(dim=1), torch.ones(400, dtype=X.dtype))
    assert set(y.tolist()) == {-1.0, 1.0}
    assert 0.65 < float((y > 0).double().mean()) < 0.85
    X2, y2 = H.sphere_clusters(400, 10, n_clusters=4, positive_fraction=0.75, seed=3)
    assert torch.equal(X, X2) and torch.equal(y, y2)
    U = H.sphere_uniform(50, 10, seed=1)
    assert torch.allclose(U.norm(dim=1), torch.ones(50, dtype=U.dtype))


@pytest.mark.parametrize("kwargs", [dict(n_clusters=3), dict(positive_fraction=1.0), dict(d=1)])
def test_sphere_data_rejects_bad_parameters(kwargs):
    args = dict(n=10, d=5) | kwargs
    with pytest.raises(ValueError):
        H.sphere_clusters(**args)


def test_forward_matches_a_loop_and_is_homogeneous():
    W = hn.init_weights(2, 3, 5, 7, 0)
    X = torch.randn(11, 5, dtype=torch.float64)
    out = hn.forward(W, X)
    for e in range(2):
        h = X
        for M in W[:-1]:
            h = torch.relu(h @ M[e].T)
        assert torch.allclose(out[e], (h @ W[-1][e].T).squeeze(-1))
    # degree L in the parameters, degree 1 in the input
    assert torch.allclose(hn.forward([2.0 * M for M in W], X), 8.0 * out)
    assert torch.allclose(hn.forward(W, 0.3 * X), 0.3 * out)


def test_train_flow_separates_and_keeps_layers_balanced():
    X, y = H.sphere_clusters(60, 6, n_clusters=2, seed=0)
    W = hn.init_weights(2, 3, 6, 8, 1)
    hist = H.train_flow(W, X, y, steps=400, eta=0.01, every=100)
    assert float(hist.stacked("J")[-1].max()) < 0  # summed exponential loss below 1
    assert bool(((y * hn.forward(W, X)) > 0).all())
    sq = hist.stacked("layer_sq")[-1]
    assert float((sq.max(-1).values / sq.min(-1).values).max()) < 1.2
    assert hist.halfway is not None and len(hist.steps) == 5


def test_margin_one_balanced_representative():
    X, y = H.sphere_clusters(60, 6, n_clusters=2, seed=0)
    W = hn.init_weights(2, 3, 6, 8, 1)
    H.train_flow(W, X, y, steps=300, eta=0.01)
    Wb = hn.margin_normalize(W, X, y)
    q = (y * hn.forward(Wb, X)).min(-1).values
    assert torch.allclose(q, torch.ones(2, dtype=q.dtype))
    fro = torch.stack([M.pow(2).sum((1, 2)).sqrt() for M in Wb], -1)
    assert torch.allclose(fro, fro[:, :1].expand_as(fro))
    # the same classifier, up to a positive factor
    ratio = hn.forward(Wb, X) / hn.forward(W, X)
    assert torch.allclose(ratio, ratio[:, :1].expand_as(ratio))


def test_chain_and_split_bounds_hold():
    W = hn.init_weights(3, 4, 5, 6, 2)
    X = torch.randn(40, 5, dtype=torch.float64)
    lhs, rhs = H.chain_bound(W, X)
    assert bool((lhs <= rhs * (1 + 1e-12)).all())
    for k in (1, 2, 6):
        s = H.split_bound(W, X, j=2, k=k)
        assert bool((s["abs_f"] <= s["bound"] * (1 + 1e-12) + 1e-15).all())
    with pytest.raises(ValueError):
        H.split_bound(W, X, j=4)


def test_split_bound_is_exact_for_rank_one_middle_layer():
    # W_2 = s u v^T: with k = 1 the rest term has coefficient s_2 = 0
    torch.manual_seed(0)
    W1 = torch.randn(1, 4, 3, dtype=torch.float64)
    u, v = torch.rand(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    W2 = (u[:, None] * v[None, :]).unsqueeze(0)
    W3 = torch.rand(1, 1, 4, dtype=torch.float64)
    s = H.split_bound([W1, W2, W3], torch.randn(10, 3, dtype=torch.float64), j=1, k=1)
    assert float(torch.linalg.svdvals(W2)[0, 1]) < 1e-12
    assert bool((s["abs_f"] <= s["bound"] + 1e-12).all())


def test_margin_points():
    q = torch.tensor([[1.0, 1.02, 1.2, 3.0]])
    assert H.margin_points(q, 0.05).tolist() == [[True, True, False, False]]
    with pytest.raises(ValueError):
        H.margin_points(q, -1.0)


def test_lemma_d4_bounds_limits():
    C = 2.0
    big = 10**6
    assert H.lemma_d4_bound(big, 2, C, "statement") == pytest.approx(1.0, abs=1e-4)
    assert H.lemma_d4_bound(big, 2, C, "proof") == pytest.approx(1 / math.sqrt(2), abs=1e-4)
    # at L = L' + ... both are below 1, and the statement is always the larger one for C > sqrt 2
    for L in (3, 4, 8, 16):
        assert H.lemma_d4_bound(L, 2, C, "proof") < H.lemma_d4_bound(L, 2, C, "statement") < 1
    with pytest.raises(ValueError):
        H.lemma_d4_bound(2, 2, C)
    with pytest.raises(ValueError):
        H.lemma_d4_bound(4, 2, C, "other")


def test_smoothed_margin_and_cosine():
    J = torch.tensor([[-2.0]])
    assert float(H.smoothed_normalized_margin(J, torch.tensor([[2.0]]), 2)) == pytest.approx(0.5)
    a = [torch.ones(2, 3, 3)]
    assert torch.allclose(H.direction_cosine(a, [2 * a[0]]), torch.ones(2))


def test_input_homogeneity_with_an_output_bias():
    """f~(lambda x) - b = lambda (f~(x) - b) for lambda >= 0: degree 1 in the input (Prop. 4.2's class)."""
    W = hn.init_weights(2, 4, 5, 6, 1)
    X = torch.randn(9, 5, dtype=torch.float64)
    b = torch.tensor([0.3, -1.2], dtype=torch.float64)
    f = hn.forward(W, X, b)
    for lam in (0.0, 0.1, 2.5):
        assert torch.allclose(hn.forward(W, lam * X, b) - b[:, None], lam * (f - b[:, None]), atol=1e-12)


def test_spectral_complexity_on_known_matrices():
    m = 4
    eye = torch.eye(m, dtype=torch.float64).unsqueeze(0)
    # one identity layer: ||W||_op = 1, ||W^T||_{2,1} = m, so R = m
    assert float(H.spectral_complexity([eye])) == pytest.approx(m)
    # two identity layers: R = 1 * (2 m^{2/3})^{3/2}
    assert float(H.spectral_complexity([eye, eye])) == pytest.approx((2 * m ** (2 / 3)) ** 1.5)
    # scaling a layer by c scales R by c
    assert float(H.spectral_complexity([3.0 * eye, eye])) == pytest.approx(3.0 * (2 * m ** (2 / 3)) ** 1.5)


def test_margin_bound_term_is_scale_invariant():
    X, y = H.sphere_clusters(40, 6, n_clusters=2, seed=0)
    W = hn.init_weights(2, 3, 6, 8, 0)
    H.train_flow(W, X, y, 300, 0.01)
    t = H.margin_bound_term(W, X, y)
    assert t.shape == (2,) and bool((t > 0).all())
    assert torch.allclose(H.margin_bound_term([2.0 * M for M in W], X, y), t)


# --- the measurements of the page 04_theory ---------------------------------------------------


def _two_layer_sum() -> list[torch.Tensor]:
    """f(x) = relu(x_1) + relu(x_2): W_1 = I_2, W_2 = (1, 1), one member."""
    return [torch.eye(2, dtype=torch.float64).unsqueeze(0), torch.ones(1, 1, 2, dtype=torch.float64)]


def test_frobenius_norms_and_layer_balance():
    W = [torch.full((2, 3, 4), 0.5, dtype=torch.float64), torch.ones(2, 1, 3, dtype=torch.float64)]
    assert torch.allclose(hn.layer_norms(W), torch.tensor([[math.sqrt(3.0), math.sqrt(3.0)]] * 2, dtype=torch.float64))
    hist = H.FlowHistory(layer_sq=[torch.ones(2, 3), torch.tensor([[1.0, 4.0, 1.0], [9.0, 9.0, 9.0]])])
    assert torch.allclose(H.layer_balance(hist), torch.tensor([2.0, 1.0]))


def test_max_relative_drop_on_a_known_history():
    # depth 1 and norm 1, so the smoothed margin is -J; only records with J < 0 count
    J = torch.tensor([[0.5, 1.0, 1.0], [-1.0, 1.0, -1.0], [-2.0, 1.0, -2.0], [-1.5, 1.0, -3.0], [-3.0, -1.0, -4.0]],
                     dtype=torch.float64)
    hist = H.FlowHistory(J=list(J), norm=[torch.ones(3, dtype=torch.float64)] * 5)
    # member 0: margins 1, 2, 1.5, 3 -> one drop of 0.5 / 2; member 1: one record; member 2: monotone
    assert torch.allclose(H.max_relative_drop(hist, 1), torch.tensor([0.25, 0.0, 0.0], dtype=torch.float64))


def test_prop41_check_on_a_known_network():
    W = _two_layer_sum()  # ||W_2||_op = sqrt 2
    X_tr, y_tr = torch.eye(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)  # gamma = 1
    X_te = torch.tensor([[0.6, 0.8], [0.5, 0.0]], dtype=torch.float64)  # f = 1.4 (kept), 0.5 (not)
    y_te = torch.ones(2, dtype=torch.float64)
    X_ood = torch.tensor([[-0.6, 0.8]], dtype=torch.float64)  # f_1 = (0, 0.8)
    c = H.prop41_check(W, X_tr, y_tr, X_te, y_te, X_ood)
    assert torch.allclose(c["frac"], torch.tensor([0.5], dtype=torch.float64))
    assert torch.allclose(c["R"], torch.tensor([[0.75 * math.sqrt(2)]], dtype=torch.float64))
    assert torch.allclose(c["ood_ratio"], torch.tensor([[0.8 / 0.75]], dtype=torch.float64))
    # chain slack 1 - E|f| / (sqrt2 E||f_1||): 1 - 0.95 / (0.75 sqrt2) held out, 1 - 1/sqrt2 OOD
    assert torch.allclose(c["slack"], torch.tensor([1 - 0.95 / (0.75 * math.sqrt(2))], dtype=torch.float64))
    # and R_j >= frac, the chain inequality on the kept points, for trained networks
    X, y = H.sphere_clusters(80, 6, n_clusters=2, seed=0)
    Wt = hn.init_weights(2, 3, 6, 8, 1)
    H.train_flow(Wt, X[:40], y[:40], 300, 0.01)
    ct = H.prop41_check(Wt, X[:40], y[:40], X[40:], y[40:], H.sphere_uniform(30, 6, seed=2))
    assert ct["R"].shape == (2, 2) and ct["ood_ratio"].shape == (2, 2)
    assert bool((ct["R"] >= ct["frac"][:, None] * (1 - 1e-12)).all()) and bool((ct["slack"] >= -1e-12).all())


def test_middle_singular_ratios_on_diagonal_layers():
    eye = torch.eye(3, dtype=torch.float64).unsqueeze(0)
    W = [eye, torch.diag(torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64)).unsqueeze(0),
         torch.diag(torch.tensor([4.0, 0.0, 4.0], dtype=torch.float64)).unsqueeze(0), torch.ones(1, 1, 3, dtype=torch.float64)]
    r = H.middle_singular_ratios(W, k=3)
    assert r.shape == (3, 1, 2)
    assert torch.allclose(r[:, 0, 0], torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64))  # W_2
    assert torch.allclose(r[:, 0, 1], torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))  # W_3: rank two
    with pytest.raises(ValueError):
        H.middle_singular_ratios(W[:1] + W[-1:])
    with pytest.raises(ValueError):
        H.middle_singular_ratios(W, k=4)


def test_split_summary_under_input_scaling():
    # OOD inputs = 2 x held-out inputs: outputs double (degree 1 in the input), projection shares do not change
    W = [M.abs() for M in hn.init_weights(3, 4, 5, 6, 2)]  # positive: no input gives 0 / 0
    X = torch.rand(40, 5, dtype=torch.float64)
    sp = H.split_summary(W, X, 2.0 * X, j=2, ks=(1, 2, 6))
    assert sp.violation <= 1e-12
    assert torch.allclose(sp.out_ratio, torch.full((3,), 2.0, dtype=torch.float64))
    for k in (1, 2, 6):
        assert torch.allclose(sp.proj_ratio[k], torch.ones(3, dtype=torch.float64))
        direct = H.split_bound(W, X, 2, k)
        assert sp.tightness[k] == pytest.approx(float((direct["abs_f"] / direct["bound"]).mean()))
    assert torch.allclose(sp.energy_share[6], torch.ones(3, dtype=torch.float64))  # k = width: all the energy
    assert bool((sp.energy_share[1] <= sp.energy_share[2]).all())


def test_output_bias_measurements():
    W, X = _two_layer_sum(), torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)  # f = 1, 2
    b = torch.tensor([0.3], dtype=torch.float64)
    assert torch.allclose(H.bias_share(W, X, b), torch.tensor([0.2], dtype=torch.float64))  # 0.3 / 1.5
    assert H.input_homogeneity_error(W, X, b, lams=(1.0,)) == 0.0
    Wr = hn.init_weights(2, 4, 5, 6, 1)
    assert H.input_homogeneity_error(Wr, torch.randn(9, 5, dtype=torch.float64),
                                     torch.tensor([0.3, -1.2], dtype=torch.float64)) < 1e-12
    b_hist = torch.tensor([[0.0, 0.0], [0.5, 4.0], [0.6, 5.0]], dtype=torch.float64)
    assert torch.allclose(H.bias_drift(b_hist, 1), torch.tensor([0.1, 0.2], dtype=torch.float64))  # /max(1,|b|)


def test_bias_sign_agreement_counts():
    y = torch.tensor([1.0, 1.0, 1.0, -1.0])  # OCS sign +1
    margins = torch.tensor([[1.0, 5.0, 5.0, 1.0],    # margin points {0, 3}: label sum 0, left out
                            [1.0, 5.0, 5.0, 5.0],    # {0}: +1
                            [5.0, 5.0, 5.0, 1.0]])   # {3}: -1
    a = H.bias_sign_agreement(torch.tensor([-0.1, 0.2, 0.3]), margins, y, eps=0.05)
    assert (a.margin, a.decided, a.ocs, a.members, a.ocs_sign) == (1, 2, 2, 3, 1.0)
