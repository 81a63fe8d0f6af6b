"""Implicit regularisation towards rank minimisation (Timor, Vardi & Shamir, ALT 2023): the code of
the part ``chapters/rank_minimization/``.

- :mod:`.two_neuron`          the batched two-point, two-neuron gradient-flow simulator and its closed forms
- :mod:`.deep_constructions`  the low-rank interpolating constructions of Theorems 4-5
- :mod:`.deep_training`       minimum-norm interpolants, normalised gradient flow on the exponential loss, KKT residuals
- :mod:`.depth_helps`         the experiments, reports and figures of the page on depth (Theorems 4-5, Lemma 1)
"""
