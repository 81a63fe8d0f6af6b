"""Saddle-to-saddle dynamics in deep ReLU networks (Bantzis, Simon & Jacot): the saddle at the
origin, its escape directions and their low-rank structure.

Modules:

- :mod:`.localized`: the localized loss ``L_0 = Tr[G^T Y]`` and ``G = grad C(0)``, speeds on the
  unit and ``sqrt(L)`` spheres, the KKT residual of an escape direction, a closed-form escape
  direction, random points of the sphere (optionally with ``L_0 < 0``), the closed forms of
  Proposition 2.2 (norm, blow-up and escape times), gradient flow on ``L_0`` integrated in
  float64 (RK4) and time-changed gradient descent;
- :mod:`.escape`: the escape-direction solver (projected gradient descent on the sphere, restarts
  and width sweeps batched, float64, jitter, optional rank-one constraint);
- :mod:`.example1`: the eight points on the circle of Example 1, Eq. (2) and Eq. (6);
- :mod:`.structure`: per-layer tail energies, nonlinearity and stable ranks on the data, and
  their per-layer maximum (what Theorem 3.1 bounds);
- :mod:`.bounds`: the bounds of Theorem 3.1 and Propositions 3.3-3.4, the nearly rank-one data
  of Proposition 3.3, and Proposition 3.4 evaluated on a batch of networks;
- :mod:`.lifting`: the depth-lifting construction of Proposition 3.2, and its three properties
  measured over many networks;
- :mod:`.depths`: optimal escape directions across depths (cold restarts, lifted warm starts),
  the depths whose optimum the solver found rather than the lifting built, and a summary of
  those optima's layer structure;
- :mod:`.training`: the small-initialisation training runs of the MNIST experiment (Figs. 1, 3, 4),
  resumable in segments through the cache, with per-run initial scales, and training until the
  first escape with the exact end of the first plateau (Sec. 5, first conjecture);
- :mod:`.certificates`: certified optimal escape speeds of planar data at depths 2 and 3 (linear
  programs over sign patterns, with dual certificates);
- :mod:`.paper_step`: the paper's step size against chapter 5's enlarged one: runs on the second
  plateau continued at the paper's step for ten times the page's budget (a study run from the
  command line, its result committed as data and shown on the page);
- :mod:`.staircase`: the staircase share of a loss curve on a log-step axis, plateaus of absolute
  length, and the per-neuron imbalance that gradient flow conserves (weak balancedness).
"""
