"""Feedforward networks as weighted DAGs, their paths, and the tree decomposition of
Le & Jegelka (2022), Lemma 2: ``nu = mu o h``.

A :class:`DAGNetwork` is a directed acyclic graph ``G = (V, E, w)`` with input vertices (each
reading one coordinate of ``x``), one output vertex ``o`` and a positively 1-homogeneous
activation on every other vertex (``'relu'``, ``'leaky'`` or ``'linear'``). Skip connections
are just edges between non-consecutive layers; several input vertices may read the same
coordinate of ``x`` (this is how the unrolled tree of Lemma 6 reads its inputs).

What the module computes (paper numbering):

- ``nu(x)``: :meth:`DAGNetwork.forward`, in float64, batched over inputs and weight vectors;
- paths and their counts (Def. 4): :func:`enumerate_paths` (depth-first) and
  :func:`count_paths` (dynamic programming, exact integers);
- the path enumeration function ``h(x) = (x_p prod_{e in p} w_e)_p`` and its absolute-valued
  variant ``h'`` (Lemma 5): :func:`path_enumeration`;
- the unrolled tree ``T_G`` (Defs. 8-9, Lemma 6): :func:`unroll`;
- the pull-back of weights through a vertex with one out-edge (Lemma 7): :func:`pull_back`,
  and all of them in breadth-first order from the root (proof of Lemma 5): :func:`pull_back_all`;
- the tree networks ``mu'`` (Lemma 5) and ``mu`` (Lemma 2), built from the *signs* of the
  weights only: :func:`decompose`;
- builders: :func:`layered` (fully connected, optional skip edges), :func:`random_dag`,
  :func:`from_mlp` (a bias-free :class:`implicit_bias.models.MLP`);
- a round-off scale for comparisons (:func:`abs_path_sum`, :func:`roundoff_constant`) and a
  matplotlib drawing (:func:`draw`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = ("relu", "leaky", "linear")
D64 = torch.float64
#: unit round-off of float64 (``2**-53``)
UNIT_ROUNDOFF = 2.0**-53


@dataclass(eq=False)
class DAGNetwork:
    """A feedforward network on a DAG (Def. 1 of Le & Jegelka).

    Args:
        n_vertices: number of vertices, labelled ``0 .. n_vertices - 1``.
        edges: ``(E, 2)`` integer tensor of edges ``(u, v)``, i.e. ``u -> v``.
        weights: ``(E,)`` edge weights (stored as float64).
        inputs: the input vertices (no in-edges).
        output: the output vertex (no out-edges).
        activations: one of :data:`ACTIVATIONS` per vertex (ignored for input vertices).
        input_index: the coordinate of ``x`` each input vertex reads (default ``0, 1, ...``);
            repeated coordinates are allowed.
        input_scale: a multiplier per input vertex (default 1); Lemma 7 applied at an input
            vertex moves a weight into it.
        negative_slope: slope of ``'leaky'`` vertices on the negative side.
    """

    n_vertices: int
    edges: torch.Tensor
    weights: torch.Tensor
    inputs: tuple[int, ...]
    output: int
    activations: tuple[str, ...]
    input_index: tuple[int, ...] | None = None
    input_scale: torch.Tensor | None = None
    negative_slope: float = 0.1
    _levels: list[np.ndarray] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.edges = torch.as_tensor(self.edges, dtype=torch.long).reshape(-1, 2)
        self.weights = torch.as_tensor(self.weights, dtype=D64).reshape(-1)
        self.inputs = tuple(int(i) for i in self.inputs)
        self.activations = tuple(self.activations)
        V, E = self.n_vertices, len(self.edges)
        if len(self.weights) != E:
            raise ValueError(f"{E} edges but {len(self.weights)} weights")
        if len(self.activations) != V:
            raise ValueError(f"{V} vertices but {len(self.activations)} activations")
        bad = sorted({a for a in self.activations if a not in ACTIVATIONS})
        if bad:
            raise ValueError(f"unknown activation(s) {bad}; use one of {ACTIVATIONS}")
        if E and (int(self.edges.min()) < 0 or int(self.edges.max()) >= V):
            raise ValueError("an edge names a vertex outside 0 .. n_vertices - 1")
        if E and bool((self.edges[:, 0] == self.edges[:, 1]).any()):
            raise ValueError("self-loops are not allowed")
        pairs = {tuple(e) for e in self.edges.tolist()}
        if len(pairs) != E:
            raise ValueError("parallel edges are not allowed (merge them into one weight)")
        if len(set(self.inputs)) != len(self.inputs) or not self.inputs:
            raise ValueError("inputs must be a non-empty list of distinct vertices")
        if self.output in self.inputs:
            raise ValueError("the output vertex cannot be an input vertex")
        heads = set(self.edges[:, 1].tolist())
        tails = set(self.edges[:, 0].tolist())
        if heads & set(self.inputs):
            raise ValueError("input vertices cannot have in-edges")
        if self.output in tails:
            raise ValueError("the output vertex cannot have out-edges")
        lonely = [v for v in range(V) if v not in heads and v not in self.inputs]
        if lonely:
            raise ValueError(f"non-input vertices without in-edges: {lonely[:5]}")
        if self.input_index is None:
            self.input_index = tuple(range(len(self.inputs)))
        self.input_index = tuple(int(i) for i in self.input_index)
        if len(self.input_index) != len(self.inputs) or min(self.input_index) < 0:
            raise ValueError("input_index needs one non-negative coordinate per input vertex")
        if self.input_scale is None:
            self.input_scale = torch.ones(len(self.inputs), dtype=D64)
        self.input_scale = torch.as_tensor(self.input_scale, dtype=D64).reshape(-1)
        self._levels = self._compute_levels()

    # ----- structure -------------------------------------------------------------------
    def _compute_levels(self) -> list[np.ndarray]:
        """Edge indices grouped by the level of their head (longest path from an input):
        evaluating the levels in order evaluates the network. Raises on a cycle."""
        V = self.n_vertices
        ed = self.edges.numpy()
        indeg = np.bincount(ed[:, 1], minlength=V) if len(ed) else np.zeros(V, int)
        out_edges: list[list[int]] = [[] for _ in range(V)]
        for k, (u, _) in enumerate(ed):
            out_edges[u].append(k)
        level = np.zeros(V, dtype=int)
        queue = deque(v for v in range(V) if indeg[v] == 0)
        seen = 0
        indeg = indeg.copy()
        while queue:
            u = queue.popleft()
            seen += 1
            for k in out_edges[u]:
                v = ed[k, 1]
                level[v] = max(level[v], level[u] + 1)
                indeg[v] -= 1
                if indeg[v] == 0:
                    queue.append(v)
        if seen != V:
            raise ValueError("the graph has a directed cycle: a feedforward network needs a DAG")
        self.vertex_level = level
        if not len(ed):
            return []
        head_level = level[ed[:, 1]]
        return [np.nonzero(head_level == lv)[0] for lv in range(1, int(level.max()) + 1)]

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    @property
    def d(self) -> int:
        """Dimension of the input ``x``."""
        return max(self.input_index) + 1

    def in_edges(self, v: int) -> list[int]:
        return torch.nonzero(self.edges[:, 1] == v).flatten().tolist()

    def out_edges(self, v: int) -> list[int]:
        return torch.nonzero(self.edges[:, 0] == v).flatten().tolist()

    def hidden(self) -> list[int]:
        """Vertices that are neither inputs nor the output."""
        return [v for v in range(self.n_vertices) if v not in self.inputs and v != self.output]

    def is_tree(self) -> bool:
        """Def. 3: the underlying undirected graph is a tree (connected, ``|E| = |V| - 1``)."""
        if self.n_edges != self.n_vertices - 1:
            return False
        parent = list(range(self.n_vertices))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for u, v in self.edges.tolist():
            ru, rv = find(u), find(v)
            if ru == rv:
                return False
            parent[ru] = rv
        return True

    def longest_path(self) -> int:
        """``alpha_G``: the number of edges of the longest input-output path."""
        return int(self.vertex_level[self.output])

    def max_in_degree(self) -> int:
        if not self.n_edges:
            return 0
        return int(torch.bincount(self.edges[:, 1], minlength=self.n_vertices).max())

    def with_weights(self, weights: torch.Tensor, input_scale: torch.Tensor | None = None
                     ) -> DAGNetwork:
        """The same graph with other weights (and optionally other input scales)."""
        return DAGNetwork(self.n_vertices, self.edges, weights, self.inputs, self.output,
                          self.activations, self.input_index,
                          self.input_scale if input_scale is None else input_scale,
                          self.negative_slope)

    # ----- evaluation ------------------------------------------------------------------
    def _act(self, pre: torch.Tensor) -> torch.Tensor:
        kinds = np.array(self.activations)
        relu = torch.as_tensor(kinds == "relu")
        leaky = torch.as_tensor(kinds == "leaky")
        out = pre
        if bool(leaky.any()):
            out = torch.where(leaky, F.leaky_relu(pre, self.negative_slope), out)
        if bool(relu.any()):
            out = torch.where(relu, pre.clamp_min(0.0), out)
        return out

    def pre_activations(self, X: torch.Tensor, weights: torch.Tensor | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(pre, post)`` of every vertex, each ``(..., n, V)`` (inputs: ``pre = post``)."""
        w = self.weights if weights is None else torch.as_tensor(weights, dtype=D64)
        X = torch.as_tensor(X, dtype=D64)
        if X.dim() != 2:
            raise ValueError(f"X must be (n, d), got shape {tuple(X.shape)}")
        if X.shape[1] < self.d:
            raise ValueError(f"the network reads {self.d} coordinates, X has {X.shape[1]}")
        batch = w.shape[:-1]
        n, V = X.shape[0], self.n_vertices
        inputs = torch.tensor(self.inputs)
        vals = X[:, list(self.input_index)] * self.input_scale
        post = X.new_zeros(*batch, n, V).index_add(-1, inputs, vals.expand(*batch, n, -1))
        pre = post
        tails, heads = self.edges[:, 0], self.edges[:, 1]
        for idx in self._levels:
            idx_t = torch.as_tensor(idx)
            contrib = w[..., None, idx_t] * post[..., tails[idx_t]]
            lvl = X.new_zeros(*batch, n, V).index_add(-1, heads[idx_t], contrib)
            pre = pre + lvl
            post = post + self._act(lvl)  # act(0) = 0 off this level
        return pre, post

    def forward(self, X: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """``nu(x)`` for every row of ``X`` (``(n, d)``): shape ``(n,)``, or ``(B, n)`` when
        ``weights`` is a batch ``(B, E)`` of weight vectors for this graph."""
        return self.pre_activations(X, weights)[1][..., self.output]

    __call__ = forward


# ----- paths --------------------------------------------------------------------------
@dataclass
class Paths:
    """The input-output paths of a graph (Def. 4).

    ``edges[p]`` lists the edge indices of path ``p`` from its input vertex to the output,
    padded with ``-1``; ``start[p]`` is the position (in ``net.inputs``) of its input vertex.
    """

    edges: torch.Tensor
    lengths: torch.Tensor
    start: torch.Tensor
    n_edges_graph: int

    def __len__(self) -> int:
        return len(self.edges)

    def incidence(self) -> torch.Tensor:
        """``(rho, E)`` 0/1 matrix: ``[p, e] = 1`` iff edge ``e`` lies on path ``p``."""
        M = torch.zeros(len(self), self.n_edges_graph + 1, dtype=D64)
        M.scatter_(1, torch.where(self.edges < 0, self.n_edges_graph, self.edges), 1.0)
        return M[:, :-1]

    def vertex_incidence(self, net: DAGNetwork) -> torch.Tensor:
        """``(rho, V)`` 0/1 matrix: ``[p, v] = 1`` iff path ``p`` visits vertex ``v``."""
        M = torch.zeros(len(self), net.n_vertices + 1, dtype=D64)
        heads = torch.cat([net.edges[:, 1], torch.tensor([net.n_vertices])])
        idx = torch.where(self.edges < 0, self.n_edges_graph, self.edges)
        M.scatter_(1, heads[idx], 1.0)
        starts = torch.tensor(net.inputs)[self.start]
        M[torch.arange(len(self)), starts] = 1.0
        return M[:, :-1]

    def products(self, weights: torch.Tensor) -> torch.Tensor:
        """``prod_{e in p} w_e`` for every path: ``(..., rho)`` for weights ``(..., E)``."""
        w = torch.as_tensor(weights, dtype=D64)
        padded = torch.cat([w, torch.ones_like(w[..., :1])], dim=-1)
        idx = torch.where(self.edges < 0, self.n_edges_graph, self.edges)
        return padded[..., idx].prod(-1)


def enumerate_paths(net: DAGNetwork, max_paths: int = 1_000_000) -> Paths:
    """All input-output paths, by depth-first search from each input vertex (in the order
    of ``net.inputs``, out-edges in edge order). Raises if there are more than ``max_paths``."""
    out: list[list[int]] = [[] for _ in range(net.n_vertices)]
    for k, (u, _) in enumerate(net.edges.tolist()):
        out[u].append(k)
    heads = net.edges[:, 1].tolist()
    found: list[list[int]] = []
    starts: list[int] = []
    for s, i in enumerate(net.inputs):
        stack: list[tuple[int, list[int]]] = [(i, [])]
        while stack:
            v, path = stack.pop()
            if v == net.output:
                found.append(path)
                starts.append(s)
                if len(found) > max_paths:
                    raise ValueError(f"more than max_paths={max_paths} paths; raise the cap")
                continue
            for k in reversed(out[v]):
                stack.append((heads[k], path + [k]))
    L = max((len(p) for p in found), default=0)
    edges = torch.full((len(found), L), -1, dtype=torch.long)
    for r, p in enumerate(found):
        edges[r, : len(p)] = torch.tensor(p, dtype=torch.long)
    lengths = torch.tensor([len(p) for p in found], dtype=torch.long)
    return Paths(edges, lengths, torch.tensor(starts, dtype=torch.long), net.n_edges)


def suffix_counts(net: DAGNetwork) -> list[int]:
    """Number of paths from each vertex to the output (exact integers; 1 for the output)."""
    count = [0] * net.n_vertices
    count[net.output] = 1
    order = np.argsort(-net.vertex_level, kind="stable")
    out: list[list[int]] = [[] for _ in range(net.n_vertices)]
    for u, v in net.edges.tolist():
        out[u].append(v)
    for v in order:
        if v != net.output:
            count[v] = sum(count[b] for b in out[v])
    return count


def count_paths(net: DAGNetwork) -> int:
    """``rho``: the number of input-output paths, by dynamic programming (exact)."""
    c = suffix_counts(net)
    return sum(c[i] for i in net.inputs)


def path_enumeration(net: DAGNetwork, X: torch.Tensor, paths: Paths | None = None,
                     weights: torch.Tensor | None = None, absolute: bool = False
                     ) -> torch.Tensor:
    """``h(x) = (x_p prod_{e in p} w_e)_p`` (Def. 4), or ``h'`` with ``|w_e|`` (Lemma 5).

    Returns ``(n, rho)`` (or ``(B, n, rho)`` for a batch of weights). Input scales of the
    network count as weights of the input vertex.
    """
    paths = enumerate_paths(net) if paths is None else paths
    w = net.weights if weights is None else torch.as_tensor(weights, dtype=D64)
    scale = net.input_scale[paths.start]
    if absolute:
        w, scale = w.abs(), scale.abs()
    X = torch.as_tensor(X, dtype=D64)
    coord = torch.tensor(net.input_index)[paths.start]
    prod = paths.products(w) * scale
    return X[:, coord] * prod[..., None, :]


def path_activations(net: DAGNetwork, X: torch.Tensor, paths: Paths | None = None
                     ) -> torch.Tensor:
    """``Z_p(x)`` of Eq. (1): the product of the activation slopes ``sigma'(z_v)`` of the
    non-input vertices on path ``p`` (1 or 0 for ReLU; autograd's convention
    ``relu'(0) = 0``). Shape ``(n, rho)``; then ``nu(x) = sum_p Z_p(x) h_p(x)``."""
    paths = enumerate_paths(net) if paths is None else paths
    pre, _ = net.pre_activations(X)
    kinds = np.array(net.activations)
    slope = torch.ones_like(pre)
    relu = torch.as_tensor(kinds == "relu")
    leaky = torch.as_tensor(kinds == "leaky")
    slope = torch.where(relu & (pre <= 0), 0.0, slope)
    slope = torch.where(leaky & (pre < 0), net.negative_slope, slope)
    heads = torch.cat([net.edges[:, 1], torch.tensor([-1])])  # pad -> dummy
    idx = torch.where(paths.edges < 0, net.n_edges, paths.edges)
    vert = heads[idx]  # (rho, L), -1 for padding
    padded = torch.cat([slope, torch.ones_like(slope[:, :1])], dim=1)
    vert = torch.where(vert < 0, net.n_vertices, vert)
    return padded[:, vert].prod(-1)


# ----- unrolling (Defs. 8-9, Lemma 6) -----------------------------------------------------
@dataclass
class Unrolled:
    """The unrolled tree ``T_G`` (Def. 9) with its bookkeeping.

    ``tree`` is a :class:`DAGNetwork` whose vertex ``t`` is the path ``suffix[t]`` of ``G``
    (edge indices from its first vertex to ``o``; the root is the empty path ``{o}``);
    ``origin_edge[k]`` is the edge ``e_p`` of ``G`` that tree edge ``k`` copies,
    ``origin_vertex[t]`` the vertex ``v_p`` of ``G``; ``leaf_path[t]`` is the index of the
    input-output path ``suffix[t]`` in ``paths`` for input vertices of the tree, else ``-1``.
    Vertices are numbered in breadth-first order from the root.
    """

    tree: DAGNetwork
    suffix: list[tuple[int, ...]]
    origin_edge: torch.Tensor
    origin_vertex: torch.Tensor
    leaf_path: torch.Tensor
    paths: Paths

    def tree_weights(self, weights: torch.Tensor) -> torch.Tensor:
        """Weights of ``T_G`` for weights ``(..., E)`` of ``G``: ``T_G[w](pq) = G[w](e_p)``."""
        return torch.as_tensor(weights, dtype=D64)[..., self.origin_edge]


def unroll(net: DAGNetwork, paths: Paths | None = None, max_vertices: int = 1_000_000
           ) -> Unrolled:
    """Unroll ``G`` into the tree ``T_G`` of Def. 9: one vertex per path from any vertex to
    the output (the Hasse diagram of suffix paths), edges oriented from the longer path
    (closer to the inputs) to the shorter one, weight ``w(e_p)``, activation ``sigma(v_p)``."""
    paths = enumerate_paths(net) if paths is None else paths
    path_id = {tuple(p[p >= 0].tolist()): r for r, p in enumerate(paths.edges)}
    in_edges: list[list[int]] = [[] for _ in range(net.n_vertices)]
    for k, (_, v) in enumerate(net.edges.tolist()):
        in_edges[v].append(k)
    tails = net.edges[:, 0].tolist()
    input_pos = {v: s for s, v in enumerate(net.inputs)}
    suffix: list[tuple[int, ...]] = [()]
    vertex = [net.output]
    t_edges: list[tuple[int, int]] = []
    origin: list[int] = []
    queue = deque([0])
    while queue:
        t = queue.popleft()
        for k in in_edges[vertex[t]]:
            child = len(suffix)
            if child >= max_vertices:
                raise ValueError(f"the unrolled tree has more than {max_vertices} vertices")
            suffix.append((k, *suffix[t]))
            vertex.append(tails[k])
            t_edges.append((child, t))
            origin.append(k)
            queue.append(child)
    leaves = [t for t, v in enumerate(vertex) if v in input_pos]
    tree = DAGNetwork(
        n_vertices=len(suffix),
        edges=torch.tensor(t_edges, dtype=torch.long).reshape(-1, 2),
        weights=net.weights[torch.tensor(origin, dtype=torch.long)],
        inputs=tuple(leaves),
        output=0,
        activations=tuple(net.activations[v] for v in vertex),
        input_index=tuple(net.input_index[input_pos[vertex[t]]] for t in leaves),
        input_scale=net.input_scale[[input_pos[vertex[t]] for t in leaves]],
        negative_slope=net.negative_slope,
    )
    leaf_path = torch.full((len(suffix),), -1, dtype=torch.long)
    for t in leaves:
        leaf_path[t] = path_id[suffix[t]]
    return Unrolled(tree, suffix, torch.tensor(origin, dtype=torch.long),
                    torch.tensor(vertex, dtype=torch.long), leaf_path, paths)


# ----- pull-back (Lemma 7) and the decomposition (Lemmas 5 and 2) ---------------------------
def pull_back(net: DAGNetwork, v: int) -> DAGNetwork:
    """Lemma 7: move ``|w_f|`` of the single out-edge ``f`` of ``v`` into ``v``'s in-edges
    (or into the input scale if ``v`` is an input vertex), leaving ``sgn(w_f)`` on ``f``.
    The network computes the same function (positive homogeneity of ``sigma_v``)."""
    if v == net.output:
        raise ValueError("the output vertex has no out-edge to pull back")
    outs = net.out_edges(v)
    if len(outs) != 1:
        raise ValueError(f"Lemma 7 needs a single out-edge; vertex {v} has {len(outs)}")
    f = outs[0]
    w = net.weights.clone()
    scale = net.input_scale.clone()
    a = w[f].abs()
    if v in net.inputs:
        s = net.inputs.index(v)
        scale[s] = scale[s] * a
    else:
        ins = torch.tensor(net.in_edges(v), dtype=torch.long)
        w[ins] = w[ins] * a
    w[f] = torch.sign(w[f])
    return net.with_weights(w, scale)


def pull_back_all(tree: DAGNetwork) -> DAGNetwork:
    """Apply :func:`pull_back` to every non-root vertex of a tree network in breadth-first
    order from the output (proof of Lemma 5). Afterwards every edge weight is a sign and each
    leaf's input scale is the product of ``|w|`` along its path to the root."""
    if not tree.is_tree():
        raise ValueError("pull_back_all needs a tree network (Def. 3)")
    w = tree.weights.clone()
    scale = tree.input_scale.clone()
    ed = tree.edges.numpy()
    out_edge = np.full(tree.n_vertices, -1)
    in_lists: list[list[int]] = [[] for _ in range(tree.n_vertices)]
    for k, (u, v) in enumerate(ed):
        out_edge[u] = k
        in_lists[v].append(k)
    children: list[list[int]] = [[] for _ in range(tree.n_vertices)]
    for u, v in ed:
        children[v].append(u)
    order, queue = [], deque([tree.output])
    while queue:
        t = queue.popleft()
        order.append(t)
        queue.extend(children[t])
    input_pos = {v: s for s, v in enumerate(tree.inputs)}
    for t in order[1:]:
        f = out_edge[t]
        a = w[f].abs()
        if t in input_pos:
            scale[input_pos[t]] = scale[input_pos[t]] * a
        elif in_lists[t]:
            ins = torch.tensor(in_lists[t], dtype=torch.long)
            w[ins] = w[ins] * a
        w[f] = torch.sign(w[f])
    return tree.with_weights(w, scale)


@dataclass
class Decomposition:
    """``nu = mu o h = mu' o h'`` (Lemmas 2 and 5).

    ``mu_abs`` (``mu'``) is ``T_G`` with the sign of each weight; its input vertex for path
    ``p`` reads coordinate ``p`` of ``h'(x)``. ``mu`` subdivides each leaf edge of ``mu'``
    with a linear vertex; the new edge from the leaf carries ``sgn(prod_{e in p} w_e)`` so
    that ``mu`` reads ``h(x)``. Both depend on ``sgn(w)`` only.
    """

    paths: Paths
    unrolled: Unrolled
    mu_abs: DAGNetwork
    mu: DAGNetwork

    def h(self, net: DAGNetwork, X: torch.Tensor, weights: torch.Tensor | None = None,
          absolute: bool = False) -> torch.Tensor:
        return path_enumeration(net, X, self.paths, weights, absolute)


def decompose(net: DAGNetwork, paths: Paths | None = None) -> Decomposition:
    """Build ``mu'`` and ``mu`` of Lemmas 5 and 2 from the signs of ``net``'s weights."""
    U = unroll(net, paths)
    paths = U.paths
    T = U.tree
    signs = torch.sign(T.weights)
    leaves = list(T.inputs)
    leaf_ids = U.leaf_path[torch.tensor(leaves, dtype=torch.long)].tolist()
    mu_abs = DAGNetwork(T.n_vertices, T.edges, signs, T.inputs, T.output, T.activations,
                        input_index=tuple(leaf_ids), negative_slope=T.negative_slope)
    # mu: subdivide each leaf edge (leaf -> parent) with a new linear vertex s
    path_sign = torch.sign(paths.products(net.weights) * net.input_scale[paths.start])
    edges = T.edges.clone()
    weights = signs.clone()
    new_edges, new_weights, acts = [], [], list(T.activations)
    out_edge = {int(u): k for k, u in enumerate(T.edges[:, 0].tolist())}
    for leaf, p in zip(leaves, leaf_ids):
        s = len(acts)
        acts.append("linear")
        k = out_edge[leaf]
        edges[k, 0] = s  # s -> parent keeps w[mu'](leaf parent)
        new_edges.append((leaf, s))
        new_weights.append(float(path_sign[p]))
    mu = DAGNetwork(
        n_vertices=len(acts),
        edges=torch.cat([edges, torch.tensor(new_edges, dtype=torch.long).reshape(-1, 2)]),
        weights=torch.cat([weights, torch.tensor(new_weights, dtype=D64)]),
        inputs=T.inputs, output=T.output, activations=tuple(acts),
        input_index=tuple(leaf_ids), negative_slope=T.negative_slope,
    )
    return Decomposition(paths, U, mu_abs, mu)


# ----- round-off scale ---------------------------------------------------------------------
def abs_path_sum(net: DAGNetwork, X: torch.Tensor, weights: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """``S(x) = sum_p |h_p(x)|``, computed without enumerating paths: the network with
    ``|w|``, ``|x|`` and linear activations. It bounds every intermediate value of ``nu``."""
    w = net.weights if weights is None else torch.as_tensor(weights, dtype=D64)
    lin = DAGNetwork(net.n_vertices, net.edges, net.weights.abs(), net.inputs, net.output,
                     ("linear",) * net.n_vertices, net.input_index, net.input_scale.abs())
    return lin.forward(torch.as_tensor(X, dtype=D64).abs(), w.abs())


def roundoff_constant(net: DAGNetwork) -> int:
    """``c = (2 alpha + 2)(Delta + 1)``: first-order constant of the round-off bound
    ``|nu(x) - mu(h(x))| <= c u S(x)`` (``alpha`` longest path, ``Delta`` max in-degree,
    ``u = 2^-53``, ``S`` from :func:`abs_path_sum`); see the chapter *Paths and trees*."""
    return (2 * net.longest_path() + 2) * (net.max_in_degree() + 1)


# ----- builders ------------------------------------------------------------------------------
def _gaussian(shape: tuple[int, ...], std: float, generator: torch.Generator | None
              ) -> torch.Tensor:
    return torch.randn(shape, generator=generator, dtype=D64) * std


def layered(widths: Sequence[int], skip_prob: float = 0.0, generator: torch.Generator | None = None,
            activation: str = "relu", output_activation: str = "linear",
            init_std: float | None = None) -> DAGNetwork:
    """A layered DAG with layer sizes ``widths = (d, n_2, ..., n_L, 1)``: fully connected
    between consecutive layers (Def. 2) and, with probability ``skip_prob``, an edge between
    every pair of vertices in non-consecutive layers (skip connections). ``skip_prob=1``
    gives the complete layered DAG with ``rho = d prod_i (1 + n_i)`` paths. Weights are
    ``N(0, 1/fan_in)`` unless ``init_std`` is given."""
    widths = list(widths)
    if len(widths) < 2 or widths[-1] != 1 or min(widths) < 1:
        raise ValueError(f"widths must be (d, n_2, ..., 1) with positive sizes, got {widths}")
    if not 0.0 <= skip_prob <= 1.0:
        raise ValueError(f"skip_prob must be in [0, 1], got {skip_prob}")
    starts = np.cumsum([0, *widths])
    layer_of = np.repeat(np.arange(len(widths)), widths)
    V = int(starts[-1])
    edges = []
    for a in range(len(widths) - 1):
        for b in range(a + 1, len(widths)):
            for v in range(starts[b], starts[b + 1]):
                for u in range(starts[a], starts[a + 1]):
                    if b == a + 1:
                        edges.append((u, v))
                    elif skip_prob > 0:
                        r = torch.rand((), generator=generator, dtype=D64)
                        if float(r) < skip_prob:
                            edges.append((u, v))
    E = torch.tensor(edges, dtype=torch.long)
    fan_in = torch.bincount(E[:, 1], minlength=V).to(D64)[E[:, 1]]
    w = torch.randn(len(E), generator=generator, dtype=D64)
    w = w * (init_std if init_std is not None else fan_in.rsqrt())
    acts = tuple(activation if 0 < layer_of[v] < len(widths) - 1 else
                 (output_activation if layer_of[v] == len(widths) - 1 else "linear")
                 for v in range(V))
    return DAGNetwork(V, E, w, tuple(range(widths[0])), V - 1, acts)


def random_dag(n_inputs: int, n_hidden: int, edge_prob: float = 0.4,
               generator: torch.Generator | None = None, n_coords: int | None = None,
               activations: Sequence[str] = ("relu",), output_activation: str = "linear",
               negative_slope: float = 0.1) -> DAGNetwork:
    """A random feedforward network: vertices ``0..n_inputs-1`` are inputs, then
    ``n_hidden`` hidden vertices, then the output. Every pair ``u < v`` (``u`` not the
    output, ``v`` not an input) is an edge with probability ``edge_prob``; each hidden vertex
    gets at least one in-edge and one out-edge (so skip connections of every length occur).
    With ``n_coords < n_inputs`` several input vertices read the same coordinate of ``x``
    (shared inputs). Hidden activations are drawn uniformly from ``activations``; weights
    are ``N(0, 1/fan_in)``."""
    if n_inputs < 1 or n_hidden < 0:
        raise ValueError("need n_inputs >= 1 and n_hidden >= 0")
    if not 0.0 <= edge_prob <= 1.0:
        raise ValueError(f"edge_prob must be in [0, 1], got {edge_prob}")
    n_coords = n_inputs if n_coords is None else n_coords
    if not 1 <= n_coords <= n_inputs:
        raise ValueError(f"n_coords must be in [1, n_inputs], got {n_coords}")
    V = n_inputs + n_hidden + 1
    out = V - 1

    def randint(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi, (), generator=generator))

    A = torch.rand(V, V, generator=generator, dtype=D64) < edge_prob
    A = torch.triu(A, diagonal=1)
    A[:, :n_inputs] = False
    A[out, :] = False
    for v in range(n_inputs, V):  # every non-input vertex gets an in-edge
        if not bool(A[:v, v].any()):
            A[randint(0, v), v] = True
    for u in range(n_inputs, out):  # every hidden vertex gets an out-edge
        if not bool(A[u, u + 1:].any()):
            A[u, randint(u + 1, V)] = True
    if not bool(A[:, out].any()):
        A[randint(0, out), out] = True
    E = torch.nonzero(A)
    fan_in = A.sum(0).to(D64)[E[:, 1]]
    w = torch.randn(len(E), generator=generator, dtype=D64) * fan_in.rsqrt()
    acts = ["linear"] * n_inputs
    for _ in range(n_hidden):
        acts.append(activations[randint(0, len(activations))])
    acts.append(output_activation)
    if n_coords == n_inputs:
        index = tuple(range(n_inputs))
    else:
        index = tuple(list(range(n_coords)) + [randint(0, n_coords)
                                               for _ in range(n_inputs - n_coords)])
    return DAGNetwork(V, E, w, tuple(range(n_inputs)), out, tuple(acts), index,
                      negative_slope=negative_slope)


def from_mlp(model: nn.Module) -> DAGNetwork:
    """The DAG of a bias-free :class:`implicit_bias.models.MLP` with one output.

    Vertices are numbered layer by layer; the edges of layer ``l`` come in the row-major
    order of ``W_l`` (shape ``(out, in)``), so the DAG's weight vector is
    ``cat([W_1.flatten(), ..., W_L.flatten()])`` (see :func:`mlp_weight_vector`)."""
    layers = getattr(model, "layers", None)
    if layers is None or not all(isinstance(layer, nn.Linear) for layer in layers):
        raise ValueError("from_mlp expects an implicit_bias.models.MLP (a list of nn.Linear)")
    if any(layer.bias is not None for layer in layers):
        raise ValueError("from_mlp needs a bias-free MLP (models.MLP(..., bias=False))")
    if layers[-1].out_features != 1:
        raise ValueError("from_mlp needs a scalar output (d_out=1)")
    act = getattr(model, "act", None)
    slope = 0.1
    if isinstance(act, nn.ReLU):
        kind = "relu"
    elif isinstance(act, nn.LeakyReLU):
        kind, slope = "leaky", float(act.negative_slope)
    elif isinstance(act, nn.Identity):
        kind = "linear"
    else:
        raise ValueError(f"activation {act!r} is not positively 1-homogeneous")
    dims = [layers[0].in_features] + [layer.out_features for layer in layers]
    starts = np.cumsum([0, *dims])
    edges = []
    for l in range(len(layers)):
        for i in range(dims[l + 1]):
            for j in range(dims[l]):
                edges.append((starts[l] + j, starts[l + 1] + i))
    V = int(starts[-1])
    acts = ["linear"] * dims[0] + [kind] * int(sum(dims[1:-1])) + ["linear"]
    return DAGNetwork(V, torch.tensor(edges), mlp_weight_vector(model), tuple(range(dims[0])),
                      V - 1, tuple(acts), negative_slope=slope)


def mlp_weight_vector(model: nn.Module) -> torch.Tensor:
    """``cat([W_1.flatten(), ..., W_L.flatten()])`` in float64 (the order of :func:`from_mlp`)."""
    return torch.cat([layer.weight.detach().to(D64).reshape(-1) for layer in model.layers])


def rescale_neuron(net: DAGNetwork, v: int, c: float | torch.Tensor,
                   weights: torch.Tensor | None = None) -> torch.Tensor:
    """Weights after the positive rescaling symmetry at hidden vertex ``v``: in-edges times
    ``c``, out-edges divided by ``c`` (``c > 0``). ``nu`` and ``h`` are unchanged."""
    if v in net.inputs or v == net.output:
        raise ValueError("rescaling acts on hidden vertices only")
    c = torch.as_tensor(c, dtype=D64)
    if bool((c <= 0).any()):
        raise ValueError("the rescaling factor must be positive")
    w = (net.weights if weights is None else torch.as_tensor(weights, dtype=D64)).clone()
    ins = torch.tensor(net.in_edges(v), dtype=torch.long)
    outs = torch.tensor(net.out_edges(v), dtype=torch.long)
    w[..., ins] = w[..., ins] * c
    w[..., outs] = w[..., outs] / c
    return w


# ----- drawing -------------------------------------------------------------------------------
def layout(net: DAGNetwork) -> np.ndarray:
    """``(V, 2)`` positions: ``x`` is the level (inputs left, output right). Trees are laid
    out with consecutive leaves and parents at the mean of their children; other DAGs spread
    each level's vertices evenly."""
    pos = np.zeros((net.n_vertices, 2))
    if net.is_tree():
        children: list[list[int]] = [[] for _ in range(net.n_vertices)]
        for u, v in net.edges.tolist():
            children[v].append(u)
        depth = np.zeros(net.n_vertices)
        counter = [0.0]

        def place(t: int, dpt: int) -> float:
            depth[t] = dpt
            if not children[t]:
                y = counter[0]
                counter[0] += 1.0
            else:
                y = float(np.mean([place(c, dpt + 1) for c in children[t]]))
            pos[t, 1] = -y
            return y

        place(net.output, 0)
        pos[:, 0] = depth.max() - depth
        return pos
    lv = net.vertex_level.copy()
    lv[list(net.inputs)] = 0
    for level in np.unique(lv):
        vs = np.nonzero(lv == level)[0]
        pos[vs, 0] = level
        pos[vs, 1] = -(np.arange(len(vs)) - (len(vs) - 1) / 2)
    return pos


def draw(net: DAGNetwork, ax, labels: Sequence[str] | None = None, edge_fmt: str = "{:+.2f}",
         pos: np.ndarray | None = None, colors: Sequence[str] | None = None,
         label_pos: float | Sequence[float] = 0.4) -> None:
    """Draw ``net`` on a matplotlib axis (no graphviz): vertices as labelled circles,
    edges as arrows labelled with their weights (``edge_fmt``; ``None`` for no labels).

    ``label_pos`` places each weight label at that fraction of the way from the edge's source
    to its target: one number for all edges, or one per edge (to keep labels of crossing edges
    apart)."""
    pos = layout(net) if pos is None else pos
    labels = [str(v) for v in range(net.n_vertices)] if labels is None else labels
    fracs = np.broadcast_to(np.asarray(label_pos, dtype=float), (net.n_edges,)) \
        if np.ndim(label_pos) == 0 else np.asarray(label_pos, dtype=float)
    if fracs.shape != (net.n_edges,) or not np.all((fracs >= 0) & (fracs <= 1)):
        raise ValueError(f"label_pos must be one number or {net.n_edges} numbers in [0, 1], "
                         f"got {label_pos!r}")
    for k, (u, v) in enumerate(net.edges.tolist()):
        ax.annotate("", xy=pos[v], xytext=pos[u],
                    arrowprops=dict(arrowstyle="-|>", color="0.45", lw=0.9,
                                    shrinkA=9, shrinkB=9))
        if edge_fmt is not None:
            m = (1 - fracs[k]) * pos[u] + fracs[k] * pos[v]
            ax.text(m[0], m[1], edge_fmt.format(float(net.weights[k])), fontsize=6.5,
                    ha="center", va="center", color="0.1",
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
    for v in range(net.n_vertices):
        if colors is not None:
            c = colors[v]
        elif v in net.inputs:
            c = "#56B4E9"
        elif v == net.output:
            c = "#E69F00"
        else:
            c = "#F0F0F0"
        ax.scatter([pos[v, 0]], [pos[v, 1]], s=260, c=c, edgecolors="0.2", zorder=3)
        ax.text(pos[v, 0], pos[v, 1], labels[v], fontsize=7, ha="center", va="center",
                zorder=4)
    ax.set_axis_off()
    ax.margins(0.12)
