"""The NLC paper's preprocessing of the image sets (appendix D.2), in float64::

    1. x <- (x - mean_i x(i)) / sd_i x(i)            each data point to mean 0, variance 1 over its features
    2. x <- x - mean_x x                              each feature to mean 0
    3. k  = smallest k with lambda_1 + .. + lambda_k >= 0.99 (lambda_1 + .. + lambda_d)
            (lambda: eigenvalues of the feature covariance, largest first: "via PCA, the number of
            dimensions that hold 99% of the variance"; the paper found 334 for MNIST, 810 for CIFAR10)
    4. x <- P^T x,  P a d x k submatrix of a d x d uniformly random (Haar) orthogonal matrix, seeded
    5. x <- x / c,  c = Q_{x,i} x(i) = sqrt(mean over points and features of x(i)^2)
            so that Q_{x,i} x(i) = 1

The PCA only chooses k; the map itself is the random orthogonal projection (step 4), not the principal
axes. Where the paper is silent on which points the statistics of steps 2, 3 and 5 come from, they come
from the TRAINING split only (after the train/val split) and are then applied unchanged to validation and
test, so no statistic of a held-out point leaks into the inputs; hence Q_{x,i} x(i) = 1 and the feature
means are 0 exactly on the training split and approximately on the others. Step 1 uses each point alone.
The covariance is the d x d matrix X^T X / N of the centred training points and only its eigenvalues
are computed (``eigvalsh``). Its N d^2 multiply-adds dominate: seconds for 50,000 x 784, tens of seconds
for 40,000 x 3072 on two cores; the result is cached per (dataset, seed, source files), see ``cache``.
"""

from __future__ import annotations

import numpy as np

from ..nn.network import orthogonal_submatrix

VARIANCE_HELD = 0.99


def normalize_points(x: np.ndarray) -> np.ndarray:
    """Step 1, in place on float64 [N, d]: each row to mean 0 and (ddof 0) variance 1. A constant row
    (sd = 0, e.g. a blank image) has no scale to normalize and becomes all zeros."""
    x -= x.mean(axis=1, keepdims=True)
    sd = np.sqrt(np.einsum("ij,ij->i", x, x) / x.shape[1])[:, None]
    np.divide(x, sd, out=x, where=sd > 0)
    return x


def variance_spectrum(centred: np.ndarray) -> np.ndarray:
    """The d eigenvalues of the covariance X^T X / N of centred data X [N, d], largest first (tiny
    negative round-off clipped to 0). With fewer points than features (a small training file) the
    N x N Gram matrix X X^T / N has the same nonzero eigenvalues and is far cheaper; the rest are 0."""
    n, d = centred.shape
    gram = centred.T @ centred if n >= d else centred @ centred.T
    gram /= n
    ev = np.clip(np.linalg.eigvalsh(gram)[::-1], 0.0, None)
    return np.concatenate([ev, np.zeros(d - len(ev))])


def dimension_holding(eigenvalues: np.ndarray, fraction: float = VARIANCE_HELD) -> int:
    """Step 3: the smallest k with sum of the k largest eigenvalues >= fraction * their total."""
    total = eigenvalues.sum()
    if not total > 0:
        raise ValueError("the training points have zero variance")
    held = np.cumsum(eigenvalues) / total
    return int(min(np.searchsorted(held, fraction, side="left") + 1, len(eigenvalues)))


def random_projection(d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Step 4's P: a d x k submatrix of a d x d Haar-random orthogonal matrix (P^T P = I_k)."""
    return orthogonal_submatrix(rng, d, k)


def quadratic_mean(x: np.ndarray) -> float:
    """Q_{x,i} x(i): the root mean square over all points and features."""
    return float(np.sqrt(np.einsum("ij,ij->", x, x) / x.size))


def paper_preprocessing(
    train: np.ndarray, val: np.ndarray, test: np.ndarray, rng: np.random.Generator, fraction: float = VARIANCE_HELD
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Steps 1-5 (module docstring) on raw [N, d] arrays of any numeric dtype; statistics from ``train``.

    Returns the three float64 [N, k] arrays and what was measured: k, the variance fraction the k
    largest eigenvalues hold, the scale c of step 5, the input dimension d and the constant points."""
    parts = [normalize_points(np.array(a, dtype=np.float64)) for a in (train, val, test)]
    constant = int(sum((np.ptp(a, axis=1) == 0).sum() for a in (train, val, test)))
    mean = parts[0].mean(axis=0)
    for a in parts:
        a -= mean
    eigenvalues = variance_spectrum(parts[0])
    k = dimension_holding(eigenvalues, fraction)
    projection = random_projection(train.shape[1], k, rng)
    projected = [a @ projection for a in parts]
    del parts
    scale = quadratic_mean(projected[0])
    for a in projected:
        a /= scale
    info = {
        "input_dimension": int(train.shape[1]),
        "pca_dimension": k,
        "variance_held": float(eigenvalues[:k].sum() / eigenvalues.sum()),
        "variance_held_by_one_less": float(eigenvalues[: k - 1].sum() / eigenvalues.sum()),
        "variance_target": fraction,
        "scale": scale,
        "constant_points": constant,
    }
    return projected[0], projected[1], projected[2], info
