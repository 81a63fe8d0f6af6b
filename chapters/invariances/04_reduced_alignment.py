# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (implicit-bias book)
#     language: python
#     name: implicit-bias
# ---

# %% [markdown]
# # Reduced alignment for non-homogeneous networks
#
# Theorem 2 of {cite:t}`le2022training` is the paper's answer to an observation of
# {cite:t}`ji2019gradient`: in AlexNet trained on CIFAR-10, the last fully connected layers
# become strongly but not perfectly aligned, $\|W\|_2/\|W\|_F<1$. The theorem bounds
# $\|W\|_2^2/\|W\|_F^2$ from below for the last layers of a network whose first block is
# arbitrary (biases, any activation), followed by convolutions, ResNetFree blocks and fully
# connected layers. Its proof chains two auxiliary results, Lemma 9 (the two flattenings of a
# convolution tensor have comparable spectral norms) and Lemma 10 (the two matrix
# representations of a ResNetFree block have comparable spectral norms). This page restates
# the three results, checks Lemmas 9 and 10 exactly, with worst cases found by optimisation and
# explicit extremal instances, and checks the constants of the proof's telescoping step (its
# Eq. 71). {doc}`07_reduced_alignment_training` trains a network of the theorem's form.
#
# ```{admonition} What this page shows
# - The rank measure is the squared spectral-to-Frobenius ratio
#   $\rho(W)^2=\|W\|_2^2/\|W\|_F^2$ ({prf:ref}`def-spectral-frobenius-ratio`), the inverse of
#   the stable rank ({prf:ref}`def-stable-rank`); Theorem 2 bounds it from below.
# - Lemma 9 is true and sharp. Lemma 10 is true, but its constant $\frac18$ can be replaced by
#   the sharp $\frac12$, and the additive constant produced by its proof is not valid.
# - The telescoping step of the proof, Eq. (71), holds with the constant $\|C_l\|_2$, not with
#   the printed $\|C_l\|_2^2$.
# - These errors in the constants, and the AlexNet count of Appendix C, are arithmetic on
#   explicit instances: each is a counterexample row (`contradicts`: the printed statement fails
#   on the instance; the same on every seed and machine) and the unit tests check them.
# - Both lemmas, and the spectral half of the proof of Theorem 2, rest on the matrix invariance
#   of Theorem 1, which holds for linear tails but not for ReLU tails
#   ({doc}`06_pairwise_invariance`).
# ```

# %% tags=["parameters"]
profile = "ci"   # "ci": CPU, about twenty seconds; "full": more samples and longer searches
seed = 0
device = "auto"

# %%
PROFILES = {
    # n_random: random samples per shape; starts/opt_steps: random starts and Adam steps of the
    # worst-case searches
    "ci": dict(n_random=2000, starts=24, opt_steps=300),
    "full": dict(n_random=20_000, starts=128, opt_steps=2000),
}

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from myst_nb import glue

from implicit_bias.chapter import start_chapter
from implicit_bias.claims import Ledger

cfg, dev = start_chapter(PROFILES, profile=profile, seed=seed, device=device)
ledger = Ledger("invariances/04_reduced_alignment")
D = torch.float64
gen = torch.Generator().manual_seed(seed)
sq_norm2 = lambda M: torch.linalg.matrix_norm(M, 2) ** 2  # ||M||_2^2, batched
sq_frob = lambda M: M.pow(2).sum((-2, -1))

# %% [markdown]
# ## The statements
#
# :::{prf:definition} Convolutional tensors (Definition 10 of {cite:t}`le2022training`)
# :label: inv-def-conv-tensor
# :nonumber:
# The free parameters of a bias-free convolutional layer form a tensor
# $T\in\mathbb R^{a\times b\times c}$, where $a$ is the number of input channels, $b$ the
# number of entries of each filter (its spatial size, e.g. $b=3\cdot3$) and $c$ the number of
# output channels.
# :::
#
# :::{prf:definition} Matrix representation of a layer (Definition 7 of {cite:t}`le2022training`)
# :label: inv-def-matrix-representation
# :nonumber:
# The matrix representation of a ResNetFree block $r(x;U,Y,Z)=\sigma(U\sigma(Yx)+Zx)$ with
# $Y\in\mathbb R^{b\times a}$, $U\in\mathbb R^{c\times b}$, $Z\in\mathbb R^{c\times a}$ is
# $[U\ Z]\in\mathbb R^{c\times(b+a)}$; that of a convolutional tensor is a flattening; that of a
# fully connected layer is its weight matrix.
# :::
#
# :::{prf:theorem} Reduced alignment for non-homogeneous networks (Theorem 2 of {cite:t}`le2022training`)
# :label: inv-thm-reduced-alignment
# :nonumber:
# Assume the stable-sign regime (Assumption 1) and a differentiable loss (Assumption 3). Let
# $\nu$ consist of an arbitrary feedforward network $\eta$, followed by $K\ge0$ convolutional
# layers $T^{a_k,b_k,c_k}$, $k\in[K]$, followed by $M\ge0$ layers that are ResNetFree blocks or
# fully connected layers, and a final linear fully connected layer $\mathrm{Fin}$ with one
# output. For $j\in[K+M]$ let $W^{[j]}$ be the matrix representation of the $j$-th layer after
# $\eta$, $N_r(j)$ the number of ResNetFree blocks strictly between layer $j$ and
# $\mathrm{Fin}$, and $V_c(j)=\max\dim W^{[K+1]}\cdot\prod_{j<k\le K}\min(a_k,b_k)$ for the
# convolutional layers ($j\le K$) and $V_c(j)=1$ otherwise. Then there is $D\ge0$, fixed at
# initialisation, such that for almost every $t>0$ and all $j\in[K+M]$,
#
# \begin{equation*}
# \frac{1}{8^{N_r(j)}V_c(j)}\,\|W^{[j]}(t)\|_F^2-\|W^{[j]}(t)\|_2^2\le D. \tag{13}
# \end{equation*}
#
# If moreover $\|W^{[j]}(t)\|_F\to\infty$, then as $t\to\infty$
#
# \begin{equation*}
# \frac{1}{\min\big(\operatorname{rank}W^{[j]},\,8^{N_r(j)}V_c(j)\big)}\le
# \frac{\|W^{[j]}(t)\|_2^2}{\|W^{[j]}(t)\|_F^2}\le1, \tag{14}
# \end{equation*}
#
# and for the last fully connected layers ($N_r(j)=0$, $V_c(j)=1$) the normalised matrices
# converge to rank one, $\big\|W^{[j]}/\|W^{[j]}\|_F-u_jv_j^\top\big\|_F\to0$, with adjacent
# layers aligned, $|\langle v_{j+1},u_j\rangle|\to1$ (Equation (15)).
# :::
#
# As printed, $V_c$ is written with $M$ where the convolutional layers (indexed by $K$) are
# meant, and the proof uses the factor "$C=\max\dim W^{[M+1]}$" at the transition from the last
# convolution to the first dense layer, where the statement needs its inverse; the statement
# above is the reading that makes the indices consistent (Eqs. 14 and 15 also mix the indices
# $j$ and $k$; we write $j$ throughout). In the notation of the book the left side of (14) is
# $1/\operatorname{srank}(W^{[j]})=\rho(W^{[j]})^2$ ({prf:ref}`def-stable-rank`,
# {prf:ref}`def-spectral-frobenius-ratio`), so (14) says that the stable rank of $W^{[j]}$
# is at most $\min(\operatorname{rank}W^{[j]},8^{N_r(j)}V_c(j))$ in the limit. The proof telescopes two kinds of
# inequalities from the last layer backwards. Lemma 4 (a true invariance, checked in
# {doc}`01_conserved_quantities`) fixes $\|W^{[j]}\|_F^2-\|\mathrm{Fin}\|^2$, and
# $\|\mathrm{Fin}\|_F=\|\mathrm{Fin}\|_2$ because $\mathrm{Fin}$ is a vector. The matrix
# invariance of Theorem 1, $W_{l+1}^\top W_{l+1}-W_lW_l^\top=C_l$ constant, gives
# $\|W_l\|_2^2\ge\|W_{l+1}\|_2^2-\|C_l\|_2$ for adjacent layers written in compatible
# representations; changing representation costs the factors of Lemmas 9 and 10.

# %% [markdown]
# ## Lemma 9: two flattenings of a convolution tensor
#
# :::{prf:lemma} Lemma 9 of {cite:t}`le2022training`
# :label: inv-lem-flattenings
# :nonumber:
# Let $T\in\mathbb R^{a\times b\times c}$ and let $T_1\in\mathbb R^{c\times(ab)}$ and
# $T_2\in\mathbb R^{(bc)\times a}$ be its flattenings that keep the last, respectively the
# first, index as a matrix index. Then
#
# \begin{equation*}
# \frac{1}{\min(a,b)}\,\|T_1\|_2^2\le\|T_2\|_2^2. \tag{55}
# \end{equation*}
#
# :::
#
# ```{prf:proof}
# The paper cites Theorem 4.8 of {cite:t}`wang2017operator`. An elementary proof:
# $\|T_1\|_2=\max_{\|x\|=1}\|T\times_3x\|_F$, attained at some unit $x\in\mathbb R^c$;
# write $M=T\times_3x\in\mathbb R^{a\times b}$. Then
# $\|T_2\|_2=\max\{\langle T,p\otimes Q\rangle:\|p\|=1,\|Q\|_F=1\}\ge
# \max_{\|p\|=\|q\|=1}\langle T,p\otimes q\otimes x\rangle=\|M\|_2\ge
# \|M\|_F/\sqrt{\min(a,b)}=\|T_1\|_2/\sqrt{\min(a,b)}$. Equality holds for
# $T=\sum_{k\le\min(a,b)}e_k\otimes e_k\otimes w$ with any $w\in\mathbb R^c$: then
# $T_1=w\,\mathrm{vec}(I)^\top$ has $\|T_1\|_2^2=\min(a,b)\|w\|^2$ and $T_2$ has orthogonal
# columns of norm $\|w\|$ or $0$, so $\|T_2\|_2^2=\|w\|^2$. The constant $1/\min(a,b)$ is
# therefore the best possible.
# ```
#
# Three checks on shapes with $a,b,c\in\{2,\dots,5\}$: the ratio
# $\|T_1\|_2^2/(\min(a,b)\|T_2\|_2^2)$ on Gaussian tensors, its maximum found by Adam on
# $\log$ of the ratio from several random starts (a worst-case search), and its value on the
# extremal tensor. The lemma says the ratio never exceeds 1; the proof says the supremum is
# exactly 1 and attained. Tolerances: $10^{-12}$ relative for the inequality and the equality
# (float64 SVDs of matrices this small are accurate to a few units of $10^{-16}$), and "within
# 2%" for the search to approach the supremum.

# %%
def flat_out(T: torch.Tensor) -> torch.Tensor:
    """T (..., a, b, c) -> T_1 (..., c, a*b): output-channel flattening."""
    a, b, c = T.shape[-3:]
    return T.movedim(-1, -3).reshape(*T.shape[:-3], c, a * b)


def flat_in(T: torch.Tensor) -> torch.Tensor:
    """T (..., a, b, c) -> T_2 (..., b*c, a): input-channel flattening."""
    a, b, c = T.shape[-3:]
    return T.movedim(-3, -1).reshape(*T.shape[:-3], b * c, a)


def lemma9_ratio(T: torch.Tensor) -> torch.Tensor:
    """||T_1||_2^2 / (min(a, b) ||T_2||_2^2): at most 1 by Lemma 9."""
    a, b, _ = T.shape[-3:]
    return sq_norm2(flat_out(T)) / (min(a, b) * sq_norm2(flat_in(T)))


shapes9 = [(2, 2, 2), (2, 3, 4), (3, 3, 2), (4, 2, 3), (3, 5, 3), (5, 4, 2), (4, 4, 4)]
rand9, search9, extremal9 = [], [], []
for a, b, c in shapes9:
    rand9.append(float(lemma9_ratio(torch.randn(cfg["n_random"], a, b, c, generator=gen,
                                                dtype=D)).max()))
    T = torch.randn(cfg["starts"], a, b, c, generator=gen, dtype=D).requires_grad_(True)
    opt = torch.optim.Adam([T], lr=0.02)
    for _ in range(cfg["opt_steps"]):
        loss = -lemma9_ratio(T).log().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    search9.append(float(lemma9_ratio(T.detach()).max()))
    w = torch.randn(c, generator=gen, dtype=D)
    E = torch.zeros(a, b, c, dtype=D)
    for k in range(min(a, b)):
        E[k, k] = w
    extremal9.append(float(lemma9_ratio(E)))

for s, r, q, e in zip(shapes9, rand9, search9, extremal9):
    print(f"(a,b,c)={s}:  random max {r:.4f}   search max {q:.6f}   extremal {e:.15f}")
glue("inv-l9-rand", max(rand9), display=False)
glue("inv-l9-search-min", min(search9), display=False)
glue("inv-l9-search-max", max(search9), display=False)
ledger.below("lemma9-random", "Lemma 9", "Gaussian tensors satisfy Eq. (55): max of "
             "$\\lVert T_1\\rVert_2^2/(\\min(a,b)\\,\\lVert T_2\\rVert_2^2)$", "$\\le 1$", max(rand9),
             1 + 1e-12, fmt=".4f",
             items="lemma9", bearing="verifies",
             falsifier="a Gaussian tensor with $\\lVert T_1\\rVert_2^2 / (\\min(a,b)\\,\\lVert "
                       "T_2\\rVert_2^2) > 1$", origin="paper")
ledger.below("lemma9-search", "Lemma 9", "worst case found by optimisation still satisfies "
             "Eq. (55)", "$\\le 1$", max(search9), 1 + 1e-12, fmt=".6f", items="lemma9",
             bearing="verifies",
             falsifier="the optimiser finding a tensor with ratio above 1", origin="paper")
ledger.above("lemma9-search-tight", "Lemma 9", "search check: the optimisation approaches the "
             "bound in every shape (min over shapes of the best ratio)", "(tightness not "
             "discussed)", min(search9), 0.98, fmt=".4f", items="lemma9", bearing="control",
             origin="prior")
ledger.close("lemma9-extremal", "Lemma 9", "sharpness: the tensor "
             r"$\sum_k e_k\otimes e_k\otimes w$ attains $\min(a,b)$ exactly",
             "(tightness not discussed)",
             max(abs(e - 1) for e in extremal9), 0.0, atol=1e-12, fmt=".1e", items="lemma9",
             bearing="control", origin="theory: float64 round-off")

# %% [markdown]
# The worst ratio on Gaussian tensors is {glue:text}`inv-l9-rand:.3f`, far from the bound; the
# search pushes the ratio to between {glue:text}`inv-l9-search-min:.4f` and
# {glue:text}`inv-l9-search-max:.6f` of the bound, never above it, and the extremal tensor
# attains it to round-off. Lemma 9 is true and sharp.
#
# ## Lemma 10: the two representations of a ResNetFree block
#
# :::{prf:lemma} Lemma 10 of {cite:t}`le2022training`, as printed
# :label: inv-lem-resnet-switch
# :nonumber:
# For a ResNetFree block with $Y\in\mathbb R^{b\times a}$, $U\in\mathbb R^{c\times b}$ and
# $Z\in\mathbb R^{c\times a}$, let $A=[U\ Z]$ and $B=\begin{bmatrix}Y\\Z\end{bmatrix}$. Then
# $\|B\|_2^2\ge\frac18\|A\|_2^2-D'$, where $D'\ge0$ is fixed at initialisation.
# :::
#
# The proof uses the matrix invariance of Theorem 1 (point 3),
# $U^\top U-YY^\top=C_0$ for all $t$, and produces $D'=\frac14\|C_0\|_2^2$. Two steps of the
# printed proof are wrong: it starts from $\|B\|_2^2=(\lambda_{\max}(B^\top B))^2$, whereas
# $\|B\|_2^2=\lambda_{\max}(B^\top B)$, and it uses $\|Y\|_2^2\ge\|U\|_2^2-\|C_0\|_2^2$, whereas
# the invariance gives $\|Y\|_2^2=\lambda_{\max}(U^\top U-C_0)\ge\|U\|_2^2-\|C_0\|_2$. Done
# correctly, the argument gives a better constant:
#
# ```{prf:proposition} Corrected Lemma 10
# :label: inv-prop-resnet-switch
# :nonumber:
# For all matrices $U,Y,Z$ of these shapes, with $C_0=U^\top U-YY^\top$,
# $$\|B\|_2^2\ge\tfrac12\|A\|_2^2-\tfrac12\|C_0\|_2,$$
# and the constant $\frac12$ cannot be improved, even when $C_0=0$.
# ```
#
# ```{prf:proof}
# $\|B\|_2^2=\lambda_{\max}(Y^\top Y+Z^\top Z)\ge\max(\|Y\|_2^2,\|Z\|_2^2)\ge
# \frac12(\|Y\|_2^2+\|Z\|_2^2)$, and $\|A\|_2^2=\lambda_{\max}(UU^\top+ZZ^\top)\le
# \|U\|_2^2+\|Z\|_2^2$ (Weyl). With $\|Y\|_2^2\ge\|U\|_2^2-\|C_0\|_2$ the claim follows. For
# sharpness take $a=2$, $b=c=1$, $U=(1)$, $Y=(1\ 0)$, $Z=(0\ 1)$: $U^\top U=YY^\top=1$,
# $A=(1\ 0\ 1)$ has $\|A\|_2^2=2$ and $B=I_2$ has $\|B\|_2^2=1$.
# ```
#
# So the statement of Lemma 10 is true with room to spare wherever the block's matrix
# invariance holds, that is for linear blocks (for ReLU blocks the invariance itself fails off
# the diagonal), but the $D'$ produced by the
# proof is not a valid choice: with $Y=0$, $Z=0$ and $\|U\|_2^2=\varepsilon<\frac12$ one has
# $C_0=U^\top U$, $\|B\|_2^2=0$ and $\frac18\|A\|_2^2-\frac14\|C_0\|_2^2=
# \frac{\varepsilon}8-\frac{\varepsilon^2}4>0$.
#
# The checks: (i) on random blocks with $C_0=0$ (built as $U=PSR^\top$, $Y=RSO^\top$ with
# orthonormal $P,R,O$, so that $U^\top U=YY^\top=RS^2R^\top$), the ratio $\|B\|_2^2/\|A\|_2^2$
# is at least $\frac12$, and minimising it by Adam over $P,R,S,O,Z$ approaches $\frac12$;
# (ii) for unconstrained $U,Y,Z$ the gap
# $\big(\|B\|_2^2-\frac12\|A\|_2^2+\frac12\|C_0\|_2\big)/(\|U\|_F^2+\|Y\|_F^2+\|Z\|_F^2)$ stays
# non-negative under minimisation; (iii) the explicit instances above. Tolerances: $10^{-12}$
# (round-off of small SVDs), and "within 2%" for the searches to approach the constant.

# %%
def orthonormal(M: torch.Tensor) -> torch.Tensor:
    return torch.linalg.qr(M)[0]


def balanced_block(params: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """(U, Y, Z) with U^T U = Y Y^T from free parameters (P, R, s, O, Z); needs a, c >= b."""
    P_, R_, s_, O_, Z_ = params
    R = orthonormal(R_)
    S = torch.diag_embed(s_)
    return orthonormal(P_) @ S @ R.mT, R @ S @ orthonormal(O_).mT, Z_


def ab_ratio(U: torch.Tensor, Y: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """||B||_2^2 / ||A||_2^2 with A = [U Z], B = [Y; Z]."""
    return sq_norm2(torch.cat([Y, Z], -2)) / sq_norm2(torch.cat([U, Z], -1))


def corrected_gap(U: torch.Tensor, Y: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """(||B||^2 - ||A||^2 / 2 + ||C_0||_2 / 2) / (sum of squared norms): >= 0 if correct."""
    A, B = torch.cat([U, Z], -1), torch.cat([Y, Z], -2)
    C0 = torch.linalg.matrix_norm(U.mT @ U - Y @ Y.mT, 2)
    return (sq_norm2(B) - 0.5 * sq_norm2(A) + 0.5 * C0) / (sq_frob(U) + sq_frob(Y) + sq_frob(Z))


shapes10 = [(2, 1, 1), (3, 2, 3), (3, 2, 2), (5, 3, 5), (4, 4, 4)]  # (a, b, c), a, c >= b
rand10, search10, gap_rand, gap_search, balance_err = [], [], [], [], 0.0
for a, b, c in shapes10:
    n = cfg["n_random"] // 4
    init = lambda m: [torch.randn(m, c, b, generator=gen, dtype=D),
                      torch.randn(m, b, b, generator=gen, dtype=D),
                      torch.randn(m, b, generator=gen, dtype=D),
                      torch.randn(m, a, b, generator=gen, dtype=D),
                      torch.randn(m, c, a, generator=gen, dtype=D)]
    U, Y, Z = balanced_block(init(n))
    balance_err = max(balance_err, float((torch.linalg.matrix_norm(U.mT @ U - Y @ Y.mT, 2)
                                          / sq_norm2(U)).max()))
    rand10.append(float(ab_ratio(U, Y, Z).min()))
    params = [p.requires_grad_(True) for p in init(cfg["starts"])]
    opt = torch.optim.Adam(params, lr=0.02)
    for _ in range(cfg["opt_steps"]):
        loss = ab_ratio(*balanced_block(params)).log().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        search10.append(float(ab_ratio(*balanced_block(params)).min()))
    # the corrected inequality for unconstrained blocks
    free = [torch.randn(n, c, b, generator=gen, dtype=D), torch.randn(n, b, a, generator=gen,
            dtype=D), torch.randn(n, c, a, generator=gen, dtype=D)]
    gap_rand.append(float(corrected_gap(*free).min()))
    free = [torch.randn(cfg["starts"], *f.shape[1:], generator=gen, dtype=D).requires_grad_(True)
            for f in free]
    opt = torch.optim.Adam(free, lr=0.02)
    for _ in range(cfg["opt_steps"]):
        loss = corrected_gap(*free).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    gap_search.append(float(corrected_gap(*[f.detach() for f in free]).min()))

# explicit instances: sharpness of 1/2, and failure of the proof's D' = ||C_0||_2^2 / 4
U1, Y1, Z1 = (torch.tensor([[1.0]], dtype=D), torch.tensor([[1.0, 0.0]], dtype=D),
              torch.tensor([[0.0, 1.0]], dtype=D))
sharp = float(ab_ratio(U1, Y1, Z1))
eps = 0.1
U2, Y2, Z2 = (torch.tensor([[math.sqrt(eps)]], dtype=D), torch.zeros(1, 2, dtype=D),
              torch.zeros(1, 2, dtype=D))
C0_2 = float(torch.linalg.matrix_norm(U2.T @ U2 - Y2 @ Y2.T, 2))
paper_rhs = float(sq_norm2(torch.cat([U2, Z2], 1))) / 8 - C0_2**2 / 4
b_sq = float(sq_norm2(torch.cat([Y2, Z2], 0)))

for s, r, q, gr, gs in zip(shapes10, rand10, search10, gap_rand, gap_search):
    print(f"(a,b,c)={s}:  C0=0 random min {r:.4f}  search min {q:.6f}   "
          f"gap random min {gr:.4f}  gap search min {gs:.2e}")
print(f"max ||U^T U - Y Y^T||_2 / ||U||_2^2 of the constructed blocks: {balance_err:.1e}")
print(f"sharp instance: ||B||^2/||A||^2 = {sharp:.15f}")
print(f"proof's D' with eps={eps}: ||B||^2 = {b_sq:.3f} < ||A||^2/8 - ||C0||^2/4 = {paper_rhs:.4f}")
glue("inv-l10-search-min", min(search10), display=False)
glue("inv-l10-search-max", max(search10), display=False)
glue("inv-l10-rand-min", min(rand10), display=False)
glue("inv-l10-paper-rhs", paper_rhs, display=False)
ledger.below("lemma10-balanced", "Lemma 10", "construction check: the constructed blocks "
             "satisfy $U^\\top U = YY^\\top$ (relative error)", "-", balance_err, 1e-12, fmt=".1e",
             items="lemma10", bearing="control", origin="theory: float64 round-off")
ledger.above("lemma10-half-random", "Lemma 10", "balanced random blocks: "
             "$\\lVert B\\rVert_2^2/\\lVert A\\rVert_2^2\\ge 1/2$, hence $\\ge 1/8$ (min over samples)",
             "$\\ge 1/8$", min(rand10), 0.5 - 1e-12,
             fmt=".4f", items="lemma10", bearing="verifies",
             falsifier="a balanced random block with $\\lVert B\\rVert_2^2 / \\lVert A\\rVert_2^2 "
                       "< 1/2$",
             origin="theory: the corrected constant 1/2, proven on the page")
ledger.above("lemma10-half-search", "Lemma 10", "worst case found by optimisation: "
             "$\\lVert B\\rVert_2^2/\\lVert A\\rVert_2^2\\ge 1/2$, hence $\\ge 1/8$", "$\\ge 1/8$",
             min(search10), 0.5 - 1e-12,
             fmt=".6f", items="lemma10", bearing="verifies",
             falsifier="the search finding a balanced block with ratio below 1/2",
             origin="theory: the corrected constant 1/2, proven on the page",
             vtol=0.01)  # the search approaches the sharp bound; how close depends on its path
ledger.below("lemma10-half-tight", "Lemma 10", "sharpness: the optimisation approaches 1/2 in "
             "every shape (max over shapes of the best ratio)", "constant 1/8", max(search10),
             0.51, fmt=".4f", items="lemma10", bearing="control", origin="prior")
ledger.close("lemma10-sharp-instance", "Lemma 10", "sharpness: an explicit block with "
             "$U^\\top U = YY^\\top$ attains $\\lVert B\\rVert_2^2/\\lVert A\\rVert_2^2 = 1/2$",
             "constant 1/8", sharp, 0.5,
             atol=1e-12, fmt=".6f", items="lemma10", bearing="control",
             origin="theory: exact arithmetic (also a unit test)")
ledger.above("lemma10-corrected-gap", "Lemma 10", "the corrected statement: $\\lVert B\\rVert_2^2\\ge "
             "\\lVert A\\rVert_2^2/2 - \\lVert C_0\\rVert_2/2$ for all blocks (min normalised gap, random and searched)",
             "-", min(min(gap_rand), min(gap_search)), -1e-12, fmt=".1e", items="lemma10",
             bearing="control", origin="theory: float64 round-off",
             vtol=1e-3)  # the searched minimum is how close the search got to a sharp bound (0);
#                          it depends on the optimiser's path and differs across CPU kernels
ledger.above("lemma10-proof-constant", "Lemma 10 proof", "arithmetic on an explicit block (a "
             "counterexample, also a unit test): the proof's $D' = \\lVert C_0\\rVert_2^2/4$ fails, "
             "$\\lVert A\\rVert_2^2/8 - D' - \\lVert B\\rVert_2^2 > 0$", "valid $D'$", paper_rhs - b_sq,
             0.0, fmt=".4f",
             items="lemma10-proof", bearing="contradicts",
             falsifier="the explicit block satisfying the proof's inequality, $\\lVert "
                       "B\\rVert_2^2 \\ge \\lVert A\\rVert_2^2/8 - \\lVert C_0\\rVert_2^2/4$",
             origin="theory: exact arithmetic")

# %% [markdown]
# On balanced blocks the smallest ratio on random samples is
# {glue:text}`inv-l10-rand-min:.3f`, the worst cases found by optimisation lie between
# {glue:text}`inv-l10-search-min:.4f` and {glue:text}`inv-l10-search-max:.4f`, and the
# explicit block attains $\frac12$: the best constant in Lemma 10 is $\frac12$, not
# $\frac18$ (so the paper's $8^{N_r}$ in Theorem 2 can be replaced by $2^{N_r}$). The corrected
# inequality with $D'=\frac12\|C_0\|_2$ holds for every block the searches found, and the
# proof's $D'=\frac14\|C_0\|_2^2$ fails on the explicit small block, where the printed
# right-hand side is {glue:text}`inv-l10-paper-rhs:.4f` while $\|B\|_2^2=0$. See
# {doc}`/book/errata`.

# %% [markdown]
# ## The constants of the telescoping step (Eq. 71)
#
# The proof of Theorem 2 chains, for adjacent layers in compatible representations,
# $\|W_l(t)\|_2^2\ge C\,\|W_{l+1}(t)\|_2^2-D_l$ (its Eq. 71) with
# $D_l=\|W_{l+1}(0)^\top W_{l+1}(0)-W_l(0)W_l(0)^\top\|_2^2$, and $C=1$ between dense layers. If
# the matrix invariance holds, $W_lW_l^\top=W_{l+1}^\top W_{l+1}-C_l$ with $C_l$ the value at
# $t=0$, so $\|W_l\|_2^2=\lambda_{\max}(W_{l+1}^\top W_{l+1}-C_l)\ge\|W_{l+1}\|_2^2-\|C_l\|_2$: the
# constant is the norm of $C_l$, not its square, and when $\|C_l\|_2<1$ the printed constant is
# too small. The same explicit pair as for Lemma 10 shows it: $W_l=0$ and $W_{l+1}$ with
# $\|W_{l+1}\|_2^2=\varepsilon<1$ satisfy the invariance with $C_l=W_{l+1}^\top W_{l+1}$, and
# $0\ge\varepsilon-\varepsilon^2$ is false. (At the transition from the last convolution to the
# first dense layer the proof also uses "$C=\max\dim W^{[M+1]}$", which makes the earlier layer
# *larger* than the later one by that factor; the statement's $V_c$, which divides, needs
# $C=1/\max\dim W^{[M+1]}$.)
#
# The AlexNet example of Definition 11 is checked here too: the paper counts
# $l=\big((224-(11-4))/4\big)^2$ positions of a first-layer filter ($11\times11$, stride 4, no
# padding, $224\times224$ input); the count of an actual convolution is read from PyTorch.

# %%
eps71 = 0.1
W_next71 = torch.tensor([[math.sqrt(eps71), 0.0]], dtype=D)   # c x b with ||.||_2^2 = eps
W_l71 = torch.zeros(2, 3, dtype=D)                              # b x a, zero
C71 = float(torch.linalg.matrix_norm(W_next71.T @ W_next71 - W_l71 @ W_l71.T, 2))
printed71 = float(sq_norm2(W_next71)) - C71**2 - float(sq_norm2(W_l71))   # > 0 means violated
corrected71 = float(sq_norm2(W_next71)) - C71 - float(sq_norm2(W_l71))
paper_l = ((224 - (11 - 4)) / 4) ** 2


def conv_positions(size: int) -> int:
    out = torch.nn.functional.conv2d(torch.empty(1, 3, size, size, device="meta"),
                                     torch.empty(96, 3, 11, 11, device="meta"), stride=4)
    return int(out.shape[-1] * out.shape[-2])


l224, l227 = conv_positions(224), conv_positions(227)
print(f"Eq. (71) on the explicit pair (eps = {eps71}): ||W_l||^2 - (||W_l+1||^2 - D_l) = "
      f"{-printed71:.3f} with D_l = ||C||^2 (printed), {-corrected71:.3f} with D_l = ||C||")
print(f"AlexNet example: the paper's count {paper_l:.4f}; a stride-4 11x11 convolution has "
      f"{l224} positions on a 224x224 input ({int(l224 ** 0.5)}^2) and {l227} on 227x227")
glue("inv-eq71-printed", f"{printed71:.3f}", display=False)
glue("inv-alexnet-paper", f"{paper_l:.2f}", display=False)
glue("inv-alexnet-224", f"{l224}", display=False)
glue("inv-alexnet-227", f"{l227}", display=False)
ledger.above("eq71-printed-constant", "App. D, Eq. (71)", "arithmetic on an explicit pair (a "
             "counterexample, also a unit test): with $D_l = \\lVert C_l\\rVert_2^2$ as printed the telescoping "
             "inequality fails on a pair satisfying the invariance (amount by which it fails)",
             "valid $D_l$", printed71, 0.0, fmt=".3f", items="eq71", bearing="contradicts",
             falsifier="the explicit pair satisfying the printed inequality with $D_l = \\lVert "
                       "C_l\\rVert_2^2$ (amount at most 0)",
             origin="theory: exact arithmetic")
ledger.close("eq71-corrected-constant", "App. D, Eq. (71)", "negative control: with $D_l = "
             "\\lVert C_l\\rVert_2$ the same pair satisfies it with equality", "-", corrected71, 0.0,
             atol=1e-12, fmt=".1e", items="eq71", bearing="control",
             origin="theory: exact arithmetic")
ledger.holds("alexnet-count", "App. C, Def. 11 example", "arithmetic (also a unit test): the "
             "paper's count of filter positions is not an integer and differs from the "
             "convolution's (224 input, stride 4, no padding; value: the difference)",
             "$((224 - 7)/4)^2$", f"{paper_l:.2f} vs {l224}",
             abs(paper_l - round(paper_l)) > 1e-9 and round(paper_l) != l224, "differ",
             items="alexnet-count", bearing="contradicts",
             falsifier="the printed count an integer equal to the number of positions of the "
                       "convolution read from PyTorch", value=paper_l - l224, lo=0.5,
             origin="theory: exact arithmetic")

# %% [markdown]
# With the printed constant the inequality fails by {glue:text}`inv-eq71-printed` on the
# explicit pair, while the corrected constant gives equality. The AlexNet count as printed is
# {glue:text}`inv-alexnet-paper`, not an integer; the convolution has
# {glue:text}`inv-alexnet-224` positions on a $224\times224$ input and
# {glue:text}`inv-alexnet-227` ($55^2$, the number usually quoted for AlexNet) on
# $227\times227$. Both are on the errata page.
#
# ## Conclusion
#
# Lemma 9 is correct and sharp; Lemma 10 is correct with the sharp constant $\frac12$ in place
# of $\frac18$, and its proof's additive constant must be $\frac12\|C_0\|_2$ (erratum "Lemma 10:
# the constant is 1/2 (sharp), and the proof's $D'$ is not valid" on {doc}`/book/errata`); the
# telescoping step needs $\|C_l\|_2$ in place of $\|C_l\|_2^2$. With the corrected constants the
# factor $8^{N_r}$ of Theorem 2 becomes $2^{N_r}$. The chaining argument of Theorem 2 is sound
# only where the matrix invariance of Theorem 1 holds, that is for linear tails; for a ReLU tail
# the invariance drifts ({doc}`06_pairwise_invariance`), and the rank-one conclusion (15) for
# ReLU layers is the statement refuted in {doc}`03_alignment_low_rank_limit`.
# {doc}`07_reduced_alignment_training` follows the proof's quantities along a training run, and
# {doc}`05_motivating_experiment` the reduced alignment that motivated the theorem.
#
# ## Claims
#
# The thresholds: $10^{-12}$ relative is the round-off of float64 SVDs of these small matrices;
# "within 2%" for a search to approach a sharp bound, fixed before the runs. The smallest gap of
# the corrected Lemma 10 found by the search is how close the search got to a sharp bound, so it
# is compared across machines with a tolerance of $10^{-3}$.

# %% tags=["nbval-check-output"]
ledger.report()
