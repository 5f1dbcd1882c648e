"""Zero-cost proxies at initialization, over EVERY trainable tensor.

The NAS literature computes these over ``nn.Linear.weight`` / ``nn.Conv2d.weight`` only; here every tensor
of ``net.named_parameters()`` counts: dense weights and biases, Householder vectors ``u`` (Yu and Zhang),
GmP angles ``theta``, offsets ``lam`` and radii ``r`` (Chen and Ge). Each ``*_by_tensor`` function returns one
term per tensor, so a test can see that none is silently skipped; the proxy is the sum of the terms.

The loss is the study's training loss, softmax cross-entropy of f(x) / c_out, averaged over the
minibatch; networks run in batch mode with their running statistics untouched (NLC paper, section G).

* grad_norm (Abdelfattah et al., *Zero-Cost Proxies for Lightweight NAS*, 2021):
      sum_t |dL/dtheta_t|_2
* snip (Lee et al., *SNIP: Single-shot Network Pruning based on Connection Sensitivity*, 2019, as a proxy in
  Abdelfattah et al. 2021):
      sum_t sum |theta_t * dL/dtheta_t|
* synflow (Tanaka et al., *Pruning Neural Networks without Any Data by Iteratively Conserving Synaptic Flow*,
  2020, eq. 8 with the "linearized" network of their Algorithm 1):
      sum_t sum theta_t * dR/dtheta_t,  R = 1^T f_|theta|(1)
  every parameter and buffer replaced by its absolute value (Abdelfattah et al.'s reference code makes
  the whole ``state_dict`` positive: this also covers the fixed skip projection), evaluated in float64
  and evaluation mode (batchnorm and GmP's input mean use their running statistics; a single all-ones
  input has no batch statistics) on one all-ones input, theta_t the positive values.
  Householder vectors enter only through their direction (u . dR/du = 0 exactly) and GmP's |theta| does
  not make u(theta) positive (the score can be negative): docs/metrics.md.
* jacob_cov (Mellor et al., *Neural Architecture Search without Training*, 2021, v1): J = d(sum_j f(x, j))/dx per
  example of a minibatch, Sigma_J its correlation matrix across examples with eigenvalues lambda_1..lambda_B,
      -sum_i [log(lambda_i + k) + 1 / (lambda_i + k)],  k = 1e-5.
* NWOT (Mellor et al. 2021, v2): binary code c_x over all N_A activation units,
      K_H[a, b] = N_A - Hamming(c_a, c_b),  score = log|det K_H|,
  NaN when K_H is singular (rank below the batch size), decided exactly (``integer_det_is_zero``).
  The code of a unit is which side of tau's kinks its argument u = d s + t lies on (s the pre-activation,
  d and t the dilation and shift of c tau(d s + t) + b; the kinks are the activation's declared
  ``Base.kinks``): for one kink k the bit u > k (relu: active / inactive as in the paper; abs, selu,
  even_tanh and odd_square: their kink at 0), for several the index of the linear piece u lies in, the
  number of kinks below it, so the Hamming distance counts the units whose pieces differ. A smooth
  activation (tanh, sigmoid, gaussian, square) has no kink: its bit is the sign of u, the point of symmetry
  of each. torch's own activation modules, if a foreign network uses them, give the sign of their input.

Mellor et al. use minibatches of 128 (``study.experiment.metric_options.PROXY_BATCH``, the default
``proxy_batch_size``).
A non-finite score (a network whose output or gradients overflow, a singular kernel, a constant Jacobian)
is reported as NaN by ``study.measure``.
"""

from __future__ import annotations

import copy
import math
from typing import Callable, cast

import numpy as np
import torch
from torch import nn

from archstudy.sampling import ArchSpec

from ..nn.layers import DTYPE, ActivationLayer
from .gradients import scaled_cross_entropy
from .nlc import batch_mode
from .registry import Measuring, measures

JACOB_COV_K = 1e-5  # Mellor et al. (2021) v1, the regularizer of the eigenvalues

# torch's activation modules, for networks not built by ``study.nn.network``: the code bit is the input's sign.
_TORCH_ACTIVATIONS = (
    nn.ReLU,
    nn.LeakyReLU,
    nn.ELU,
    nn.SELU,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.Softplus,
    nn.Hardtanh,
    nn.Mish,
)


def _single(net: nn.Module) -> nn.Module:
    if getattr(net, "runs", 1) != 1:
        raise ValueError(f"the proxies take one network, this one stacks {net.runs}: use net.select(k)")
    return net


def _trainable(net: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(name, p) for name, p in net.named_parameters() if p.requires_grad]


def loss_gradients(
    net: nn.Module, x: torch.Tensor, y: torch.Tensor, c_out: float = 1.0
) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, theta, dL/dtheta) for every trainable tensor, L the mean scaled cross-entropy on (x, y)."""
    params = _trainable(_single(net))
    with batch_mode(net), torch.enable_grad():
        loss = scaled_cross_entropy(net(x), y, c_out)
        grads = torch.autograd.grad(loss, [p for _, p in params])
    return [(name, p.detach(), g) for (name, p), g in zip(params, grads)]


def grad_norm_terms(grads) -> dict[str, float]:
    """|dL/dtheta_t|_2 per tensor, from ``loss_gradients``."""
    return {name: float(torch.linalg.vector_norm(g)) for name, _, g in grads}


def snip_terms(grads) -> dict[str, float]:
    """sum |theta_t * dL/dtheta_t| per tensor, from ``loss_gradients``."""
    return {name: float((p * g).abs().sum()) for name, p, g in grads}


def grad_norm_by_tensor(net: nn.Module, x: torch.Tensor, y: torch.Tensor, c_out: float = 1.0) -> dict[str, float]:
    return grad_norm_terms(loss_gradients(net, x, y, c_out))


def snip_by_tensor(net: nn.Module, x: torch.Tensor, y: torch.Tensor, c_out: float = 1.0) -> dict[str, float]:
    return snip_terms(loss_gradients(net, x, y, c_out))


def grad_norm(net: nn.Module, x: torch.Tensor, y: torch.Tensor, c_out: float = 1.0) -> float:
    """grad_norm = sum over trainable tensors of |dL/dtheta_t|_2 (Abdelfattah et al. 2021)."""
    return sum(grad_norm_by_tensor(net, x, y, c_out).values())


def snip(net: nn.Module, x: torch.Tensor, y: torch.Tensor, c_out: float = 1.0) -> float:
    """snip = sum over trainable tensors of sum |theta_t * dL/dtheta_t| (Lee et al. 2019)."""
    return sum(snip_by_tensor(net, x, y, c_out).values())


def synflow_by_tensor(net: nn.Module, d_in: int | None = None) -> dict[str, float]:
    """sum theta_t * dR/dtheta_t per tensor on the all-positive copy of ``net`` (see the module docstring)."""
    _single(net)
    if d_in is None:
        if not hasattr(net, "spec"):
            raise ValueError("synflow needs d_in for a network without an ArchSpec")
        d_in = cast(ArchSpec, net.spec).d_in
    twin = copy.deepcopy(net)  # the network itself is never touched
    with torch.no_grad():
        for t in twin.state_dict(keep_vars=True).values():
            if t.is_floating_point():
                t.abs_()
    twin.eval()
    params = _trainable(twin)
    ones = torch.ones(1, d_in, dtype=DTYPE, device=params[0][1].device)
    with torch.enable_grad():
        r = twin(ones).sum()
        grads = torch.autograd.grad(r, [p for _, p in params])
    return {name: float((p.detach() * g).sum()) for (name, p), g in zip(params, grads)}


def synflow(net: nn.Module, d_in: int | None = None) -> float:
    """synflow = sum_t sum |theta_t| * dR/d|theta_t|, R the output sum of the all-positive net on ones (Tanaka
    et al. 2020), in float64."""
    return sum(synflow_by_tensor(net, d_in).values())


def output_sum_jacobian(f: Callable, x: torch.Tensor) -> torch.Tensor:
    """Rows d(sum_j f(x_b, j))/dx_b of a minibatch ``x`` (batch mode): [B, d_in]."""
    xb = x.detach().clone().requires_grad_(True)
    with batch_mode(f), torch.enable_grad():
        out = f(xb)
        (g,) = torch.autograd.grad(out.sum(), xb)
    return g


def jacob_cov_of(jac: torch.Tensor, k: float = JACOB_COV_K) -> float:
    """-sum_i [log(lambda_i + k) + 1/(lambda_i + k)], lambda the eigenvalues of the rows' correlation matrix."""
    j = jac.detach().cpu().numpy()
    if not np.isfinite(j).all():
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(j)  # a constant row has no correlation: NaN
    if not np.isfinite(corr).all():
        return math.nan
    ev = np.linalg.eigvalsh(corr)
    return float(-np.sum(np.log(ev + k) + 1.0 / (ev + k)))


def jacob_cov(f: Callable, x: torch.Tensor, k: float = JACOB_COV_K) -> float:
    """Mellor et al. (2021) v1 score of the input Jacobians of a minibatch ``x`` (see the module docstring)."""
    return jacob_cov_of(output_sum_jacobian(f, x), k)


# Where a smooth activation (no declared kink) splits its argument: its point of symmetry, 0 for each of them.
_SMOOTH_CUTS = (0.0,)


def pieces(u: torch.Tensor, kinks: tuple[float, ...]) -> torch.Tensor:
    """The linear piece of tau each argument ``u`` lies in: the number of ``kinks`` below it (int64), so for one
    kink k the bit u > k; for none (a smooth tau) the sign bit u > 0 (module docstring)."""
    code = torch.zeros(u.shape, dtype=torch.int64, device=u.device)
    for k in kinks or _SMOOTH_CUTS:
        code += u > k
    return code


def activation_codes(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Codes [B, N_A] (int64) of a minibatch: for each unit, the piece of tau its argument d s + t lies in
    (``pieces``: 1 or 0, past tau's kink or not, for an activation with one kink)."""
    _single(net)
    codes, hooks = [], []

    def study_hook(module, args):
        s = args[0]
        act = module.act
        u = pieces(s * act.dilation + act.shift, act.base.kinks)
        codes.append(u.reshape(-1, s.shape[-2], s.shape[-1])[0])

    def torch_hook(module, args):
        s = args[0]
        codes.append(pieces(s, ()).reshape(-1, s.shape[-2], s.shape[-1])[0])

    for m in net.modules():
        if isinstance(m, ActivationLayer):
            hooks.append(m.register_forward_pre_hook(study_hook))
        elif isinstance(m, _TORCH_ACTIVATIONS):
            hooks.append(m.register_forward_pre_hook(torch_hook))
    try:
        with batch_mode(net), torch.no_grad():
            net(x)
    finally:
        for h in hooks:
            h.remove()
    if not codes:
        raise ValueError("NWOT needs activation units: the network has no activation layer")
    return torch.cat(codes, dim=1)


# -- exact singularity of the NWOT kernel ------------------------------------------------------------------------
#
# K_H = A A^T with A = [C, 1 - C] a 0/1 matrix, so K_H is an integer Gram matrix: rank K_H = rank A <= N_A + 1
# (the columns of A span 1 and the N_A columns of C), and det K_H is an integer >= 0. Floating point cannot tell
# an exactly singular K_H from a nonsingular one: slogdet of a rank-126 kernel of 128 examples returns a finite
# "score". The determinant is decided exactly instead, by modular arithmetic: det K_H mod p for primes p just
# below 2^21 (``det_mod``). One nonzero residue proves det != 0. Zero residues for primes whose product exceeds
# Hadamard's bound |det K| <= prod_a |k_a|_2 prove det = 0, by the Chinese remainder theorem: det is then a
# multiple of that product and smaller than it in absolute value. Cost: one O(B^3) elimination for a
# nonsingular kernel; about B log2(|k_a|) / 20 of them for a singular one (128 examples, 128 units: 65).

_MODULUS_BITS = 21


def _is_prime(n: int) -> bool:
    """Miller-Rabin with bases 2, 3, 5, 7: deterministic below 3,215,031,751."""
    if n < 2:
        return False
    for p in (2, 3, 5, 7):
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in (2, 3, 5, 7):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes(count: int) -> list[int]:
    """The ``count`` largest primes below 2^21, largest first (each above 2^20)."""
    out: list[int]
    out, n = [], (1 << _MODULUS_BITS) - 1
    while len(out) < count:
        if _is_prime(n):
            out.append(n)
        n -= 2
    return out


def det_mod(k: np.ndarray, p: int) -> int:
    """det k mod p (in [0, p)) of a square integer matrix, by Gaussian elimination over GF(p) for a prime
    p < 2^21. Only the pivot row and column are reduced at each step: an update subtracts products below
    p^2 < 2^42, so after all n steps an entry stays below (n + 1) 2^42 < 2^63 (n < 2^20), and the n^2 work
    of a step is one multiply-subtract (a modulo of the whole block would cost three times as much)."""
    m = np.mod(np.asarray(k, dtype=np.int64), p)
    n, det = m.shape[0], 1
    if n >= 1 << 20:
        raise ValueError(f"det_mod: a {n} x {n} matrix could overflow int64")
    for i in range(n):
        col = m[i:, i] % p
        nonzero = np.flatnonzero(col)
        if not len(nonzero):
            return 0
        j = int(nonzero[0])
        if j:
            m[[i, i + j]] = m[[i + j, i]]
            col[[0, j]] = col[[j, 0]]
            det = p - det
        pivot = int(col[0])
        det = det * pivot % p
        row = m[i, i:] % p * pow(pivot, p - 2, p) % p
        m[i + 1 :, i:] -= np.outer(col[1:], row)
    return det


def hadamard_bits(k: np.ndarray) -> float:
    """log2 of Hadamard's bound prod_a |k_a|_2 >= |det k| (the squared row norms summed exactly in int64)."""
    sq = (np.asarray(k, dtype=np.int64) ** 2).sum(axis=1)
    return float(sum(0.5 * math.log2(int(v)) if v > 0 else -math.inf for v in sq))


def _crt_primes(k: np.ndarray) -> list[int]:
    """Primes whose product exceeds twice Hadamard's bound of k (each prime > 2^20; one spare for the
    rounding of log2)."""
    return _primes(math.ceil((hadamard_bits(k) + 1.0) / (_MODULUS_BITS - 1)) + 1)


def integer_det_is_zero(k: np.ndarray) -> bool:
    """Exactly whether det k = 0 for a square integer matrix whose squared row norms fit in int64 (see above)."""
    if hadamard_bits(k) == -math.inf:
        return True  # a zero row
    # Stops at the first nonzero residue: one prime settles a nonsingular matrix (a prime that divides a
    # nonzero det only costs the next one).
    return all(det_mod(k, p) == 0 for p in _crt_primes(k))


def integer_det(k: np.ndarray) -> int:
    """det k exactly, as a Python int: its residues modulo ``_crt_primes(k)`` combined by the Chinese
    remainder theorem, read as the symmetric residue (|det k| is below half the product)."""
    if hadamard_bits(k) == -math.inf:
        return 0
    residue, modulus = 0, 1
    for p in _crt_primes(k):
        t = (det_mod(k, p) - residue) * pow(modulus, -1, p) % p
        residue, modulus = residue + modulus * t, modulus * p
    return residue if 2 * residue < modulus else residue - modulus


def one_hot_codes(codes: torch.Tensor) -> np.ndarray:
    """A = [C == 0, C == 1, ...] as int64 [B, N_A x pieces]: A A^T = K_H (``hamming_kernel``), and rank K_H =
    rank A. For binary codes A = [1 - C, C]."""
    c = codes.detach().cpu().numpy().astype(np.int64)
    return np.hstack([(c == p).astype(np.int64) for p in range(int(c.max(initial=0)) + 1)])


def hamming_kernel(codes: torch.Tensor) -> np.ndarray:
    """K_H[a, b] = N_A - Hamming(c_a, c_b), the units where examples a and b lie in the same piece, exactly, as
    int64: sum_p [c_a = p].[c_b = p], for binary codes c_a.c_b + (1 - c_a).(1 - c_b)."""
    a = one_hot_codes(codes)
    return a @ a.T


def rank_bound(codes: torch.Tensor) -> int:
    """An upper bound of rank K_H: 1 + sum over units of (pieces seen - 1). The columns of A
    (``one_hot_codes``) of one unit sum to the ones vector, so each unit adds at most its pieces less one to the
    span of 1; for binary codes at most N_A + 1."""
    c = np.sort(codes.detach().cpu().numpy(), axis=0)
    return 1 + int((c[1:] != c[:-1]).sum())  # per unit, the pieces seen less one: the changes down its sorted column


def nwot_of(codes: torch.Tensor) -> float:
    """log det K_H, K_H[a, b] = N_A - Hamming(c_a, c_b); NaN when K_H is singular (rank < batch size).

    K_H is an integer Gram matrix, so it is singular or positive definite with det >= 1. Singularity is
    decided exactly (``integer_det_is_zero``): the cheap certain cases first (two examples with one code,
    or ``rank_bound`` below the batch size: for binary codes fewer than batch - 1 units, rank K_H <= N_A + 1),
    then modular determinants. A nonsingular kernel
    scores its float64 log-determinant, or the log of its exact determinant where rounding gives a sign
    other than +1 (it is positive definite)."""
    kernel = hamming_kernel(codes)
    b = codes.shape[0]
    distinct = len(np.unique(codes.detach().cpu().numpy(), axis=0))
    if rank_bound(codes) < b or distinct < b or integer_det_is_zero(kernel):
        return math.nan
    sign, logdet = np.linalg.slogdet(kernel.astype(np.float64))
    if sign <= 0 or not math.isfinite(logdet):
        return math.log(integer_det(kernel))  # rounding beat a nonsingular kernel: its exact determinant
    return float(logdet)


def nwot(net: nn.Module, x: torch.Tensor) -> float:
    """NWOT (Mellor et al. 2021 v2): log-determinant of the activation-pattern kernel of a minibatch ``x``."""
    return nwot_of(activation_codes(net, x))


@measures("grad_norm", "snip", "synflow", "jacob_cov", "nwot", stream=2)
def measure_proxies(m: Measuring, seed: int) -> dict:
    """The zero-cost proxies on one random training minibatch of ``proxy_batch_size`` (synflow: an all-ones
    input), grad_norm and snip from the same loss gradients."""
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randperm(m.x.shape[0], generator=gen)[: m.options.proxy_batch_size].to(m.device)
    xp, yp = m.x.index_select(0, idx), m.y.index_select(0, idx)
    grads = loss_gradients(m.net, xp, yp, m.c_out)
    return {
        "grad_norm": sum(grad_norm_terms(grads).values()),
        "snip": sum(snip_terms(grads).values()),
        "synflow": synflow(m.net, m.spec.d_in),
        "jacob_cov": jacob_cov_of(output_sum_jacobian(m.net, xp)),
        "nwot": nwot_of(activation_codes(m.net, xp)),
    }
