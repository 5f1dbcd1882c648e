"""Independent numpy references the tests compare the library against (imported by name from tests/)."""

import numpy as np


def unit_from_angles(theta: np.ndarray) -> np.ndarray:
    """Chen and Ge, *Neural Characteristic Activation Value Analysis*, eq. 10, coordinate by coordinate:
    u_k = sin t_1 ... sin t_{k-1} cos t_k, the last coordinate sin t_1 ... sin t_{n-1}."""
    n = theta.shape[-1] + 1
    u = np.empty(theta.shape[:-1] + (n,))
    for k in range(n):
        sines = np.prod(np.sin(theta[..., :k]), axis=-1) if k else 1.0
        u[..., k] = sines * (np.cos(theta[..., k]) if k < n - 1 else 1.0)
    return u
