"""Bottleneck structure in learned features (Jacot, NeurIPS 2023): the code of the part
``chapters/bottleneck/``. MLPs are handled as ``(weights, biases)`` lists (see
:func:`implicit_bias.models.mlp_weights_biases`), float64 for every check.

- :mod:`.jacobians`      closed-form per-sample input and partial Jacobians, NTK trace, Prop. 9's gradient
- :mod:`.bounds`         the finite-depth inequalities of Theorems 3, 6, 7 and Propositions 9, 13
- :mod:`.constructions`  the proofs' explicit networks (balanced linear, geometric and interpolation
  paths, planar identity, Example 20, parallel sum and stacking)
- :mod:`.structure`      learned rank, bottleneck runs, affine fits, representation measures
- :mod:`.tasks`          the data of Figure 1 (bottleneck-rank task) and Figure 2 (symmetry task)
- :mod:`.sweeps`         the depth sweep of Figure 1 trained with the batched engine, cached
- :mod:`.measures`       the depth sweep read network by network (ranks, costs, Theorem 6's and
  Corollary 8's quantities), distances between learned functions, the collapse factorial's table
- :mod:`.depth_sweep`    the depth sweep read on a set of networks (ranges, affine law, rates), the
  certificate's classes and the verdicts that survive them, Figure 1(a)/(b) redrawn
- :mod:`.symmetry`       Figure 2's measures: path crossings, orbit ratios, k-NN R^2, plane grids
"""
