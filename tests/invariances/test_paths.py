"""Paths, path enumeration and the tree decomposition of `implicit_bias.invariances.paths`
(Le & Jegelka 2022, Def. 4 and Lemmas 2, 5, 6, 7) on graphs whose answers are known."""

from __future__ import annotations

import math

import pytest
import torch

from implicit_bias import models
from implicit_bias.invariances import paths as P

D = torch.float64


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def inputs(n: int, d: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=gen(seed), dtype=D)


def relative_error(net: P.DAGNetwork, X: torch.Tensor, other: torch.Tensor) -> float:
    """max |nu - other| / (c u S): below 2 means within the round-off bound of the chapter."""
    S = P.abs_path_sum(net, X)
    c = P.roundoff_constant(net)
    return float(((net(X) - other).abs() / (c * P.UNIT_ROUNDOFF * S)).max())


# --- counting paths ------------------------------------------------------------------------
@pytest.mark.parametrize("widths", [(3, 4, 3, 1), (2, 5, 4, 3, 1), (4, 1), (1, 7, 1)])
def test_fully_connected_count_is_product_of_widths(widths):
    net = P.layered(widths, generator=gen(0))
    rho = math.prod(widths)
    assert P.count_paths(net) == rho
    assert len(P.enumerate_paths(net)) == rho


@pytest.mark.parametrize("widths", [(2, 3, 1), (2, 3, 2, 4, 1), (3, 1, 1, 2, 1)])
def test_complete_layered_dag_count(widths):
    """With every skip edge present, a path picks any subset of hidden layers: d prod(1+n)."""
    net = P.layered(widths, skip_prob=1.0, generator=gen(1))
    rho = widths[0] * math.prod(1 + n for n in widths[1:-1])
    assert P.count_paths(net) == rho == len(P.enumerate_paths(net))


def test_dfs_and_dp_agree_on_random_dags():
    for s in range(20):
        net = P.random_dag(3, 7, 0.45, generator=gen(s), n_coords=2)
        assert len(P.enumerate_paths(net)) == P.count_paths(net)


def test_enumerated_paths_are_valid_and_distinct():
    net = P.random_dag(3, 6, 0.5, generator=gen(3))
    pa = P.enumerate_paths(net)
    seen = set()
    for r, p in enumerate(pa.edges.tolist()):
        p = [k for k in p if k >= 0]
        assert net.edges[p[0], 0] == net.inputs[int(pa.start[r])]
        assert net.edges[p[-1], 1] == net.output
        for a, b in zip(p[:-1], p[1:]):
            assert net.edges[a, 1] == net.edges[b, 0]
        seen.add(tuple(p))
    assert len(seen) == len(pa)


# --- h by hand -------------------------------------------------------------------------------
def test_h_on_two_layer_net_by_hand():
    # x (2) -> 2 ReLU hidden -> output; W1 = [[1, 2], [3, 4]] (out, in), a = [5, -6]
    model = models.MLP(2, 1, width=2, depth=2, bias=False)
    with torch.no_grad():
        model.layers[0].weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        model.layers[1].weight.copy_(torch.tensor([[5.0, -6.0]]))
    net = P.from_mlp(model)
    pa = P.enumerate_paths(net)
    x = torch.tensor([[0.5, -2.0]], dtype=D)
    H = P.path_enumeration(net, x, pa)[0]
    # path (input j -> hidden i -> o) has value x_j W1[i, j] a_i
    want = {(0, 0): 0.5 * 1 * 5, (0, 1): 0.5 * 3 * -6, (1, 0): -2 * 2 * 5, (1, 1): -2 * 4 * -6}
    got = {}
    for r, p in enumerate(pa.edges.tolist()):
        j = int(pa.start[r])
        i = int(net.edges[p[0], 1]) - 2
        got[(j, i)] = float(H[r])
    assert got == pytest.approx(want, abs=0)
    # nu = relu(0.5 - 4) * 5 - 6 * relu(1.5 - 8) = 0; check Eq. (1) and the model
    with torch.no_grad():
        assert float(net(x)) == float(model(x.float())) == 0.0


def test_h_absolute_and_sign():
    net = P.random_dag(2, 5, 0.5, generator=gen(4))
    X = inputs(10, 2)
    H = P.path_enumeration(net, X)
    Ha = P.path_enumeration(net, X, absolute=True)
    assert torch.equal(H.abs(), Ha.abs())
    pa = P.enumerate_paths(net)
    assert torch.equal(H.sign(), Ha.sign() * torch.sign(pa.products(net.weights)))


# --- homogeneity and multilinearity of h -----------------------------------------------------
def test_h_is_multilinear_in_edge_weights():
    net = P.random_dag(3, 6, 0.5, generator=gen(5))
    pa = P.enumerate_paths(net)
    X = inputs(7, 3)
    H = P.path_enumeration(net, X, pa)
    inc = pa.incidence()
    for e in range(net.n_edges):
        w = net.weights.clone()
        w[e] = w[e] * 4.0  # a power of two: exact
        H2 = P.path_enumeration(net, X, pa, weights=w)
        factor = torch.where(inc[:, e] > 0, 4.0, 1.0)
        assert torch.equal(H2, H * factor)


def test_h_is_homogeneous_in_a_cut_layer():
    net = P.layered((3, 4, 3, 1), generator=gen(6))
    X = inputs(5, 3)
    H = P.path_enumeration(net, X)
    first = torch.arange(12)  # the 3*4 edges of W_1 form a cut
    for c in (0.5, 3.0, 2.0**-7):
        w = net.weights.clone()
        w[first] *= c
        assert torch.allclose(P.path_enumeration(net, X, weights=w), c * H, rtol=1e-15, atol=0)


def test_rescaling_symmetry_leaves_h_unchanged():
    net = P.random_dag(3, 6, 0.5, generator=gen(7))
    X = inputs(20, 3)
    H = P.path_enumeration(net, X)
    for v in net.hidden():
        w2 = P.rescale_neuron(net, v, 2.0**5)  # dyadic: bitwise identical products
        assert torch.equal(P.path_enumeration(net, X, weights=w2), H)
        w3 = P.rescale_neuron(net, v, 3.7)
        assert torch.allclose(P.path_enumeration(net, X, weights=w3), H, rtol=1e-14, atol=0)
    with pytest.raises(ValueError):
        P.rescale_neuron(net, net.output, 2.0)
    with pytest.raises(ValueError):
        P.rescale_neuron(net, net.hidden()[0], -1.0)


# --- the decomposition -----------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_nu_equals_mu_of_h(seed):
    net = P.random_dag(3, 7, 0.45, generator=gen(seed), n_coords=2,
                       activations=("relu", "leaky", "linear"))
    X = inputs(300, 2, seed)
    dec = P.decompose(net)
    assert relative_error(net, X, dec.mu(P.path_enumeration(net, X, dec.paths))) <= 2.0
    Ha = P.path_enumeration(net, X, dec.paths, absolute=True)
    assert relative_error(net, X, dec.mu_abs(Ha)) <= 2.0
    rel = (net(X) - dec.mu(P.path_enumeration(net, X, dec.paths))).abs() / net(X).abs()
    assert float(rel[net(X).abs() > 1e-3].max()) <= 1e-12
    for tree in (dec.mu, dec.mu_abs):
        assert tree.is_tree()
        assert set(tree.weights.tolist()) <= {-1.0, 1.0}


def test_mu_depends_only_on_signs():
    net = P.random_dag(3, 7, 0.45, generator=gen(11))
    dec = P.decompose(net)
    w2 = net.weights * torch.exp(torch.randn(net.n_edges, generator=gen(12), dtype=D))
    dec2 = P.decompose(net.with_weights(w2))
    assert torch.equal(dec.mu.weights, dec2.mu.weights)
    assert torch.equal(dec.mu.edges, dec2.mu.edges)
    flipped = net.weights.clone()
    flipped[0] = -flipped[0]
    assert not torch.equal(P.decompose(net.with_weights(flipped)).mu.weights, dec.mu.weights)


def test_skip_connections_and_shared_inputs():
    # inputs 0, 1 read x_0; input 2 reads x_1; skips input -> output and hidden -> output
    edges = [(0, 3), (1, 3), (2, 4), (3, 4), (3, 5), (0, 5), (2, 5), (4, 5)]
    w = torch.tensor([0.7, -1.2, 0.4, 1.5, -0.8, 0.3, -0.6, 0.9], dtype=D)
    net = P.DAGNetwork(6, torch.tensor(edges), w, (0, 1, 2), 5,
                       ("linear",) * 3 + ("relu", "relu", "linear"), input_index=(0, 0, 1))
    assert net.d == 2
    assert P.count_paths(net) == 7
    X = inputs(200, 2)
    x0, x1 = X[:, 0], X[:, 1]
    z3 = torch.relu(0.7 * x0 - 1.2 * x0)
    z4 = torch.relu(0.4 * x1 + 1.5 * z3)
    want = -0.8 * z3 + 0.3 * x0 - 0.6 * x1 + 0.9 * z4
    assert torch.allclose(net(X), want, rtol=0, atol=1e-14)
    dec = P.decompose(net)
    assert relative_error(net, X, dec.mu(P.path_enumeration(net, X, dec.paths))) <= 2.0


def test_eq1_path_activations():
    net = P.random_dag(3, 6, 0.5, generator=gen(13), activations=("relu", "leaky"))
    X = inputs(100, 3)
    pa = P.enumerate_paths(net)
    Z = P.path_activations(net, X, pa)
    H = P.path_enumeration(net, X, pa)
    assert relative_error(net, X, (Z * H).sum(1)) <= 2.0


# --- unrolling and pull-back -----------------------------------------------------------------
def test_unrolled_tree_computes_nu():
    net = P.random_dag(3, 7, 0.45, generator=gen(14), n_coords=2)
    U = P.unroll(net)
    assert U.tree.is_tree()
    assert U.tree.n_vertices == sum(P.suffix_counts(net)[v] for v in range(net.n_vertices))
    assert len(U.tree.inputs) == P.count_paths(net)
    X = inputs(200, 2)
    assert relative_error(net, X, U.tree(X)) <= 2.0
    # the tree of a tree is itself (up to relabelling): same size
    assert P.unroll(U.tree).tree.n_vertices == U.tree.n_vertices


def test_unrolled_tree_is_oriented_from_children_to_parents():
    """The tree computes from the leaves (longer paths) to the root {o}: Def. 8 as printed
    orients its Hasse edges the other way (smaller set -> larger set), which would make the
    output a source (see the errata page)."""
    net = P.random_dag(2, 5, 0.5, generator=gen(21))
    T = P.unroll(net).tree
    heads, tails = T.edges[:, 1].tolist(), T.edges[:, 0].tolist()
    assert T.output not in tails and heads.count(T.output) == len(net.in_edges(net.output))
    assert all(leaf not in heads for leaf in T.inputs)


def test_pull_back_single_vertex_and_all():
    net = P.random_dag(3, 6, 0.5, generator=gen(15))
    T = P.unroll(net).tree
    X = inputs(100, 3)
    nu = net(X)
    for t in range(1, T.n_vertices):
        assert relative_error(net, X, P.pull_back(T, t)(X)) <= 2.0
    M = P.pull_back_all(T)
    assert set(M.weights.tolist()) <= {-1.0, 1.0}
    assert torch.equal(M.weights, torch.sign(T.weights))
    dec = P.decompose(net)
    leaf_paths = P.unroll(net).leaf_path[list(T.inputs)]
    prods = dec.paths.products(net.weights.abs())[leaf_paths]
    assert torch.allclose(M.input_scale, prods, rtol=1e-14, atol=0)
    assert relative_error(net, X, M(X)) <= 2.0
    assert nu.shape == M(X).shape
    with pytest.raises(ValueError, match="output"):
        P.pull_back(T, T.output)
    many = [v for v in net.hidden() if len(net.out_edges(v)) > 1]
    if many:
        with pytest.raises(ValueError, match="single out-edge"):
            P.pull_back(net, many[0])


# --- MLP conversion and validation -----------------------------------------------------------
@pytest.mark.parametrize("activation", ["relu", "leaky", "linear"])
def test_from_mlp_matches_model(activation):
    torch.manual_seed(0)
    model = models.MLP(5, 1, width=[4, 3], depth=3, bias=False, activation=activation).double()
    net = P.from_mlp(model)
    X = inputs(50, 5)
    with torch.no_grad():
        assert torch.allclose(net(X), model(X).squeeze(1), rtol=0, atol=1e-13)
    assert P.count_paths(net) == 5 * 4 * 3


def test_from_mlp_rejects_bias_and_vector_output():
    with pytest.raises(ValueError, match="bias-free"):
        P.from_mlp(models.MLP(3, 1, width=2, depth=2, bias=True))
    with pytest.raises(ValueError, match="scalar output"):
        P.from_mlp(models.MLP(3, 2, width=2, depth=2, bias=False))


def test_batched_weights():
    net = P.random_dag(2, 5, 0.5, generator=gen(16))
    W = net.weights * torch.exp(torch.randn(4, net.n_edges, generator=gen(17), dtype=D))
    X = inputs(30, 2)
    out = net(X, W)
    assert out.shape == (4, 30)
    for b in range(4):
        assert torch.equal(out[b], net.with_weights(W[b])(X))


def test_invalid_graphs_raise():
    acts = ("linear", "relu", "linear")
    with pytest.raises(ValueError, match="cycle"):
        P.DAGNetwork(4, torch.tensor([[0, 1], [1, 2], [2, 1], [2, 3]]), torch.ones(4), (0,), 3,
                     acts + ("linear",))
    with pytest.raises(ValueError, match="input vertices"):
        P.DAGNetwork(3, torch.tensor([[1, 0], [1, 2]]), torch.ones(2), (0,), 2, acts)
    with pytest.raises(ValueError, match="unknown activation"):
        P.DAGNetwork(3, torch.tensor([[0, 1], [1, 2]]), torch.ones(2), (0,), 2,
                     ("linear", "tanh", "linear"))
    with pytest.raises(ValueError, match="without in-edges"):
        P.DAGNetwork(4, torch.tensor([[0, 1], [1, 3], [2, 3]]), torch.ones(3), (0,), 3,
                     acts + ("linear",))


def test_vertex_incidence():
    net = P.layered((3, 4, 3, 1), generator=gen(18))
    M = P.enumerate_paths(net).vertex_incidence(net)
    # each path visits one vertex per layer; each hidden vertex of layer 2 lies on 3*3 paths
    assert torch.equal(M.sum(1), torch.full((36,), 4.0, dtype=D))
    assert torch.equal(M[:, 3:7].sum(0), torch.full((4,), 9.0, dtype=D))
    assert float(M[:, net.output].sum()) == 36


def test_draw_label_positions():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    net = P.DAGNetwork(n_vertices=3, edges=torch.tensor([[0, 1], [1, 2]]),
                       weights=torch.tensor([0.5, -2.0], dtype=torch.float64), inputs=(0,),
                       output=2, activations=("linear", "relu", "linear"))
    pos = torch.tensor([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]).numpy()
    fig, ax = plt.subplots()
    P.draw(net, ax, pos=pos, label_pos=[0.25, 0.75])
    xs = sorted(t.get_position()[0] for t in ax.texts if t.get_text() in ("+0.50", "-2.00"))
    assert xs == pytest.approx([0.25, 1.75])
    with pytest.raises(ValueError, match="label_pos"):
        P.draw(net, ax, label_pos=[0.5])
    with pytest.raises(ValueError, match="label_pos"):
        P.draw(net, ax, label_pos=1.5)
    plt.close(fig)
