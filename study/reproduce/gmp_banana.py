"""``gmp-banana``: Chen and Ge, *Neural Characteristic Activation Value Analysis*, section 3.5 and figure 3: one
hidden layer of 10 ReLU units on the 2-D banana set under four parameterizations (SP, WN, BN, GmP), trained with
Adam; how the units' characteristic activation boundaries move during training, and the resulting fits; and
figure 2(c): how far the characteristic points of 100 units move per step on 1-D Levy regression.

The analysis (section 3.1, eq. 7-9): a ReLU unit ReLU(w^T x + b) has the characteristic activation boundary
B = {x : w^T x + b = 0} (eq. 7), its spatial location phi = -b w / (w^T w) (eq. 8), and its angle the direction
u = w / |w| (eq. 9). Every parameterization here computes, for each hidden unit, an effective pre-activation
w_eff^T x + b_eff, w_eff pointing into the unit's active side, so B, phi and u are read the same way for all four:

* SP: w_eff = w, b_eff = b.
* WN (Salimans and Kingma, *Weight Normalization*, eq. 2): ReLU(g v^T x / |v| + b): w_eff = g v / |v|, b_eff = b;
  the output layer is weight-normalized too, as in the authors' code.
* BN (Ioffe and Szegedy): ReLU(gamma (w^T x + b - mu) / s + beta), mu and s^2 = var + 1e-3 the batch's
  statistics in training and their moving averages (momentum 0.99, Keras's ``BatchNormalization``) at test time
  and for the boundaries, as the authors' code reads them: w_eff = gamma w / s, b_eff = gamma (b - mu) / s + beta.
* GmP (eq. 15): r ReLU(u(theta)^T x + lambda), u(theta) = (cos theta, sin theta) in 2-D (eq. 10,
  ``study.nn.gmp.direction_from_angles``): w_eff = u(theta), b_eff = lambda (r scales the output, not B).

Section 3.4: a step eps of SP's w turns the boundary by the angle <w, w + eps> of eq. 12, unbounded in [0, pi]
when |w| is small (WN: eq. 14, the same form); GmP's turn is at most |eps| (Theorem 3, eq. 13). With Adam, a
parameter's step is at most lr (1 - beta1) / sqrt(1 - beta2) (Kingma and Ba, *Adam*, section 2.1), so under GmP
the boundary turns by at most that many radians per step.

The experiment is the authors' notebook's (their public code, ``2d_banana``): the standard banana set (``banana``:
from the file named by ``--root``), 1,000 of its 5,300 rows, standardized, 800 for training and 200 for testing;
one hidden layer of 10 ReLU units and a sigmoid output, binary cross-entropy; Keras's Glorot-uniform weights and
zero biases in every layer (WN: g = |v| of that draw; BN: gamma 1, beta 0; GmP: theta the angle of the draw,
lambda = b / |w| = 0 and r = |w|, the code's ``GlorotUniformHyperSpherical``, so every parameterization starts as
the same function up to BN's standardization; the paper's section 4.3 says r = 1); Adam (Keras's betas and
epsilon 1e-7, the project's optimizer) on minibatches of 128 reshuffled every epoch, for up to 5,000 epochs; the
rate divided by 10 when the test accuracy has not risen by 1e-4 for 50 epochs (Keras's ``ReduceLROnPlateau``), and
training stopped when it has not risen for 100 epochs, the weights of its best epoch restored (``EarlyStopping``
with ``restore_best_weights``; the authors validate on the test set, and so does this). Every initialization is
one draw shared by the four parameterizations; each trains at 0.01 and at 0.1 (the authors: GmP at 0.1, the others
at 0.01, "a 10x larger learning rate").

Rows (claims: the paper prints no number), judged by ``verdict``'s rule over the initializations (the
replicates):

* ``max_angle_step_deg:GmP:lr=0.1``: in every initialization, the largest turn max_t max_i |Delta theta_i,t| of
  a unit's boundary in one step (eq. 12) at most Adam's bound (Theorem 3, figure 3i);
* ``log10_max_angle_step_over_gmp:P:lr=0.1`` (P = SP, WN, BN): the Hodges-Lehmann shift of log10 of that largest
  turn over GmP's (the exact Mann-Whitney interval) above 0: "under other parameterizations the change can be up to
  180 degrees at some steps";
* ``log10_max_location_step_over_gmp:P:lr=0.1``: the same for the largest jump of a unit's spatial location phi in
  one step (the trajectories of figure 3a-h, "smoother evolution means higher training stability"): above 0;
* ``test_accuracy_minus_gmp:P:lr=0.01``: the shift of P's test accuracy at 0.01 (the authors' rate for it) under
  GmP's at 0.1, below 0: GmP "achieves the highest test accuracy among all compared methods" (figure 3j-m); on
  the 200 shared test points;
* ``test_accuracy_large_minus_small_rate:P`` (P = SP, WN, BN, GmP): the shift of P's test accuracy at 0.1 over its
  accuracy at 0.01, above 0 for GmP and below 0 for the others: where the best rate lies (sections 5.2 and 5.3,
  "the optimal learning rate is 0.1 for GmP and 0.01 for all the other methods", found by cross-validation on
  ImageNet32 and the UCI sets; figure 3's two rates). Without the banana file these rows cannot tell, and every
  row of figure 3 names the stand-in it was measured on.

Figure 2(c) (section 3.5), a measured claim: "under GmP the maximum change max_i |Delta phi_i,t| = max_i
|phi_i,t+1 - phi_i,t| at each train step t is always smaller than 1 throughout training, while under other
parameterizations the changes can be up to 2^16 at some steps", on a 1-D Levy regression with 100 ReLU units. Set
up as the authors' ``1d_levy`` code has it: 50 training points uniform on [-10, 10], labels Levy(x) +
N(0, 0.1^2), the test set -10, -9.9, .., 10; one hidden layer of 100 ReLU units and a linear output,
Glorot-uniform weights and zero biases; the mean absolute error; full-batch Adam at 0.1 for GmP and 0.01 for the
others. In 1-D a unit is ReLU(w x + b), its characteristic point phi = -b / w; GmP's direction is the fixed sign of
w (eq. 15 in 1-D, theta in {0, pi}), its lambda trained, r = 1 (section 4.3; the authors' code starts r at |w|).
Not done for it: the code's ReduceLROnPlateau and early stopping; the output layer is the same dense layer under
all four (the authors' WN net also weight-normalizes it; in 1-D, WN's hidden units then move exactly as SP's:
d sign(v) / dv = 0, so v stays and g follows SP's |w|). Rows ``log2_max_location_step:P:levy``, per
initialization log2 of its largest step: GmP's below 0 in every one ("always smaller than 1"), the others' mean
at least 16 (a typical run: the paper shows one per parameterization).

Training is an explicit float64 loop (``train``), all initializations and both rates of one parameterization
stacked: the claims need every unit's boundary after every step, which the stacked trainer does not expose, and
WN and BN before ReLU are not families of the space.

Scales: ``paper`` the authors' 5,000 epochs; ``quick`` a cut of the epochs only (``Settings.epochs``; the epochs
each parameterization ran before every run had stopped, and each run's best epoch, are in the JSON); ``tiny`` 2
initializations for 3 epochs (seconds, for the tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..nn.gmp import direction_from_angles
from ..training.optim import Adam
from . import banana
from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row
from .verdict import above, below, each, mean, shift

PAPER = "Chen and Ge, *Neural Characteristic Activation Value Analysis*"
PARAMETERIZATIONS = ("SP", "WN", "BN", "GmP")
OTHERS = ("SP", "WN", "BN")
UNITS = 10  # figure 3's caption and the authors' notebook: 10 ReLU units
BETAS, ADAM_EPS = (0.9, 0.999), 1e-7  # Keras's Adam, the authors' optimizer
BN_EPS, BN_MOMENTUM = 1e-3, 0.99  # Keras's BatchNormalization
BATCH = 128
PLATEAU_FACTOR, PLATEAU_PATIENCE, PLATEAU_DELTA = 0.1, 50, 1e-4  # ReduceLROnPlateau(patience=100 // 2)
STOP_PATIENCE = 100  # EarlyStopping(patience=100, restore_best_weights=True)
LRS = (0.01, 0.1)  # the authors' lr_others and lr_gmp
DTYPE = torch.float64
LEVY_UNITS = 100  # figure 2: "a one-hidden-layer network with 100 ReLU units"
LEVY_TRAIN = 50  # the authors' code: 50 training points
LEVY_RANGE = 10.0  # uniform on [-10, 10]
LEVY_NOISE = 0.1  # sd of the label noise
LEVY_LRS = {"SP": 0.01, "WN": 0.01, "BN": 0.01, "GmP": 0.1}  # the authors' code (lr_others, lr_gmp)
LEVY_SPIKE = 16.0  # "the changes can be up to 2^16 at some steps"


@dataclass(frozen=True)
class Settings:
    epochs: int  # the most epochs of figure 3's training (the authors: 5,000)
    inits: int  # initializations (replicates), each trained under every parameterization at both rates
    levy_steps: int  # full-batch Adam steps of figure 2(c)'s Levy regression


SCALES = {
    "tiny": Settings(epochs=3, inits=2, levy_steps=60),
    "quick": Settings(epochs=1500, inits=10, levy_steps=5000),
    "paper": Settings(epochs=5000, inits=10, levy_steps=10000),
}


def adam_bound(lr: float) -> float:
    """The largest step Adam takes on one parameter, lr (1 - beta1) / sqrt(1 - beta2) (Kingma and Ba, section
    2.1, the case 1 - beta1 > sqrt(1 - beta2)), or lr when that is larger; under GmP also the largest turn of a
    unit's boundary per step in 2-D (Theorem 3, eq. 13: one angle, |Delta u| angle = |Delta theta|)."""
    b1, b2 = BETAS
    return lr * max(1.0, (1 - b1) / math.sqrt(1 - b2))


def glorot(g: torch.Generator, fan_in: int, fan_out: int, shape) -> torch.Tensor:
    """Keras's Glorot-uniform draw: U(+-sqrt(6 / (fan_in + fan_out)))."""
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(shape, generator=g, dtype=DTYPE) * 2 - 1) * limit


def initial(kind: str, seeds: list[int]) -> dict[str, torch.Tensor]:
    """The parameters of one net per seed [models, ...] (module docstring): the same Glorot draw under every
    parameterization, turned into ``kind``'s parameters."""
    w = torch.stack([glorot(torch.Generator().manual_seed(s), 2, UNITS, (UNITS, 2)) for s in seeds])
    a = torch.stack([glorot(torch.Generator().manual_seed(s + 1), UNITS, 1, (UNITS,)) for s in seeds])
    zeros = torch.zeros(len(seeds), UNITS, dtype=DTYPE)
    out = {"a": a, "c": torch.zeros(len(seeds), 1, dtype=DTYPE)}
    if kind == "SP":
        out.update(w=w, b=zeros)
    elif kind == "WN":
        out.update(v=w, g=w.norm(dim=-1), b=zeros, a_g=a.norm(dim=-1, keepdim=True))
    elif kind == "BN":
        out.update(w=w, b=zeros, gamma=torch.ones_like(zeros), beta=zeros.clone())
    else:  # the authors' GlorotUniformHyperSpherical: the draw's angle, lambda = b / |w| = 0, r = |w|
        out.update(theta=torch.atan2(w[..., 1], w[..., 0]), lam=zeros, r=w.norm(dim=-1))
    return out


@dataclass
class Moving:
    """BN's moving statistics [models, UNITS] (Keras's initial 0 and 1)."""

    mean: torch.Tensor
    var: torch.Tensor


def effective(kind: str, p: dict[str, torch.Tensor], moving: Moving | None):
    """(w_eff [M, UNITS, 2], b_eff [M, UNITS], scale [M, UNITS]): each unit as scale * ReLU(w_eff^T x + b_eff),
    BN's at its moving statistics (module docstring)."""
    if kind == "SP":
        return p["w"], p["b"], torch.ones_like(p["b"])
    if kind == "WN":
        return p["g"][..., None] * p["v"] / p["v"].norm(dim=-1, keepdim=True), p["b"], torch.ones_like(p["b"])
    if kind == "BN":
        assert moving is not None
        s = torch.sqrt(moving.var + BN_EPS)
        w_eff = (p["gamma"] / s)[..., None] * p["w"]
        return w_eff, p["gamma"] * (p["b"] - moving.mean) / s + p["beta"], torch.ones_like(s)
    return direction_from_angles(p["theta"][..., None]), p["lam"], p["r"]


def logits(kind: str, p: dict[str, torch.Tensor], x: torch.Tensor, moving: Moving | None, train: bool = False):
    """[M, N]: the output logit of every model at its points ``x`` [M, N, 2]; BN with the batch's statistics when
    ``train`` (updating ``moving`` in place), else the moving ones."""
    if kind == "BN" and train:
        assert moving is not None
        pre = torch.einsum("mud,mnd->mnu", p["w"], x) + p["b"][:, None]
        mu, var = pre.mean(1), pre.var(1, unbiased=False)
        with torch.no_grad():
            moving.mean.mul_(BN_MOMENTUM).add_(mu.detach(), alpha=1 - BN_MOMENTUM)
            moving.var.mul_(BN_MOMENTUM).add_(var.detach(), alpha=1 - BN_MOMENTUM)
        hidden = torch.relu(
            p["gamma"][:, None] * (pre - mu[:, None]) / torch.sqrt(var[:, None] + BN_EPS) + p["beta"][:, None]
        )
    else:
        w, b, scale = effective(kind, p, moving)
        hidden = scale[:, None] * torch.relu(torch.einsum("mud,mnd->mnu", w, x) + b[:, None])
    a = p["a_g"] * p["a"] / p["a"].norm(dim=-1, keepdim=True) if kind == "WN" else p["a"]
    return torch.einsum("mnu,mu->mn", hidden, a) + p["c"]


def boundaries(kind, p, moving):
    """(u [M, UNITS, 2] the boundaries' unit normals, phi [M, UNITS, 2] their spatial locations, eq. 8-9)."""
    w, b, _ = effective(kind, p, moving)
    norm = w.norm(dim=-1, keepdim=True)
    return w / norm, -b[..., None] * w / norm**2


@dataclass
class Schedule:
    """Keras's ReduceLROnPlateau and EarlyStopping on the test accuracy, one per model (module docstring)."""

    lr: torch.Tensor  # [M] the current rates
    best_plateau: torch.Tensor
    wait_plateau: torch.Tensor
    best: torch.Tensor  # the best test accuracy (EarlyStopping's)
    wait: torch.Tensor
    best_epoch: torch.Tensor
    active: torch.Tensor  # [M] bool: still training

    @classmethod
    def start(cls, lrs: torch.Tensor) -> "Schedule":
        m = len(lrs)
        minus = torch.full((m,), -math.inf, dtype=DTYPE)
        zero = torch.zeros(m, dtype=torch.long)
        return cls(
            lrs.clone(),
            minus.clone(),
            zero.clone(),
            minus.clone(),
            zero.clone(),
            zero - 1,
            torch.ones(m, dtype=torch.bool),
        )

    def epoch_end(self, accuracy: torch.Tensor, epoch: int) -> torch.Tensor:
        """Both callbacks after ``epoch`` (from 0) at the models' test ``accuracy``; returns which models improved
        (their weights are the new best to restore). Stopped models stay stopped."""
        better = (accuracy > self.best_plateau + PLATEAU_DELTA) & self.active
        self.best_plateau = torch.where(better, accuracy, self.best_plateau)
        self.wait_plateau = torch.where(better, 0, self.wait_plateau + self.active.long())
        cut = (self.wait_plateau >= PLATEAU_PATIENCE) & self.active
        self.lr = torch.where(cut, self.lr * PLATEAU_FACTOR, self.lr)
        self.wait_plateau = torch.where(cut, 0, self.wait_plateau)
        improved = (accuracy > self.best) & self.active
        self.best = torch.where(improved, accuracy, self.best)
        self.best_epoch = torch.where(improved, epoch, self.best_epoch)
        self.wait = torch.where(improved, 0, self.wait + self.active.long())
        self.active &= ~((self.wait >= STOP_PATIENCE) & (epoch > 0))
        return improved


def train(kind: str, s: Settings, seeds: list[int], data, trail_models: int) -> dict:
    """Every initialization at both rates of ``kind`` (models ordered rate-major), trained together by the
    authors' protocol (module docstring); returns per step the largest turn (degrees) and location step of each
    model [steps, M], each model's test accuracy at its restored best epoch [M], the boundaries' locations of the
    first ``trail_models`` models at every epoch [E, trail_models, UNITS, 2], and the final parameters."""
    x_train, y_train, x_test, y_test = data
    models = len(LRS) * len(seeds)
    p = initial(kind, seeds * len(LRS))
    for v in p.values():
        v.requires_grad_(True)
    names = list(p)
    opt = Adam(BETAS[0], BETAS[1], ADAM_EPS)
    slots = opt.view(opt.init({n: p[n].detach() for n in names}), names)
    moving = Moving(torch.zeros(models, UNITS, dtype=DTYPE), torch.ones(models, UNITS, dtype=DTYPE))
    sched = Schedule.start(torch.tensor([r for r in LRS for _ in seeds], dtype=DTYPE))
    best = {n: p[n].detach().clone() for n in names}
    best_moving = Moving(moving.mean.clone(), moving.var.clone())
    shuffle = torch.Generator().manual_seed(seeds[0] + 7)
    x_eval = x_test.expand(models, *x_test.shape)
    angle, location, trail = [], [], []
    with torch.no_grad():
        u, phi = boundaries(kind, p, moving)
    epochs_run = 0
    for epoch in range(s.epochs):
        order = torch.argsort(torch.rand(models, len(x_train), generator=shuffle), dim=1)
        for start in range(0, len(x_train), BATCH):
            idx = order[:, start : start + BATCH]
            z = logits(kind, p, x_train[idx], moving, train=True)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y_train[idx], reduction="none").mean(1)
            grads = torch.autograd.grad(loss.sum(), [p[n] for n in names])
            with torch.no_grad():
                opt.update([p[n] for n in names], list(grads), slots, torch.where(sched.active, sched.lr, 0.0))
                frozen = ~sched.active
                moving.mean[frozen], moving.var[frozen] = best_moving.mean[frozen], best_moving.var[frozen]
                u_next, phi_next = boundaries(kind, p, moving)
                cos = (u * u_next).sum(-1).clamp(-1.0, 1.0)
                angle.append(torch.rad2deg(torch.arccos(cos)).amax(-1))  # eq. 12, the largest over units
                location.append((phi_next - phi).norm(dim=-1).amax(-1))
                u, phi = u_next, phi_next
        with torch.no_grad():
            accuracy = ((logits(kind, p, x_eval, moving) > 0).to(DTYPE) == y_test).to(DTYPE).mean(1)
            was_active = sched.active.clone()
            improved = sched.epoch_end(accuracy, epoch)
            for n in names:
                best[n][improved] = p[n][improved]
            best_moving.mean[improved], best_moving.var[improved] = moving.mean[improved], moving.var[improved]
            stopped = was_active & ~sched.active
            _restore(p, best, moving, best_moving, stopped)
            u, phi = boundaries(kind, p, moving)  # a restore is no training step: the next step starts from it
            trail.append(phi[:trail_models].clone())
        epochs_run = epoch + 1
        if not sched.active.any():
            break
    with torch.no_grad():
        _restore(p, best, moving, best_moving, sched.active)
        accuracy = ((logits(kind, p, x_eval, moving) > 0).to(DTYPE) == y_test).to(DTYPE).mean(1)
    return {
        "angle": torch.stack(angle).numpy(),
        "location": torch.stack(location).numpy(),
        "accuracy": accuracy.numpy(),
        "best_epoch": sched.best_epoch.tolist(),
        "epochs_run": epochs_run,
        "trail": torch.stack(trail).numpy(),
        "params": {k: v.detach() for k, v in p.items()},
        "moving": moving,
    }


def _restore(p, best, moving: Moving, best_moving: Moving, which: torch.Tensor) -> None:
    """The models ``which`` back at their best epoch's weights (``restore_best_weights``)."""
    for n in p:
        p[n][which] = best[n][which]
    moving.mean[which], moving.var[which] = best_moving.mean[which], best_moving.var[which]


# -- figure 2(c): the characteristic points of 100 units on 1-D Levy regression --------------------------------


def levy(x: np.ndarray) -> np.ndarray:
    """The Levy function in one dimension, w = 1 + (x - 1) / 4: sin^2(pi w) + (w - 1)^2 (1 + sin^2(2 pi w))
    (the d-dimensional sum over i < d is empty; Chen and Ge's ``levy_normalized``)."""
    w = 1.0 + (x - 1.0) / 4.0
    return np.sin(np.pi * w) ** 2 + (w - 1.0) ** 2 * (1.0 + np.sin(2.0 * np.pi * w) ** 2)


def levy_data(n: int, seed: int) -> tuple[np.ndarray, ...]:
    """(x_train [n, 1] uniform on [-10, 10], y_train = levy + N(0, 0.1^2), x_test the 201 points -10, -9.9, .., 10,
    y_test = levy there): the authors' figure 2 setup (50 training points)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-LEVY_RANGE, LEVY_RANGE, (n, 1))
    y = levy(x[:, 0]) + rng.normal(0.0, LEVY_NOISE, n)
    x_test = np.linspace(-LEVY_RANGE, LEVY_RANGE, 201)[:, None]
    return x, y, x_test, levy(x_test[:, 0])


def initial_1d(kind: str, seeds: list[int]) -> dict[str, torch.Tensor]:
    """The 1-D nets of ``LEVY_UNITS`` ReLU units and a dense linear output, Glorot-uniform weights and zero biases
    (Keras's defaults, as the authors' code), the same draw under every parameterization: SP (w, b); WN (v, g = |v|,
    b: the same function); BN (w, b, gamma = 1, beta = 0); GmP (section 4.3 and eq. 15 in 1-D: the direction
    sign(w) fixed, lambda = 0, r = 1)."""
    models = len(seeds)
    w = torch.empty(models, LEVY_UNITS, dtype=DTYPE)
    a = torch.empty(models, LEVY_UNITS, dtype=DTYPE)
    limit = math.sqrt(6.0 / (1 + LEVY_UNITS))  # Glorot uniform, fan_in + fan_out = 1 + units (both layers)
    for k, seed in enumerate(seeds):
        g = torch.Generator().manual_seed(seed)
        w[k] = (torch.rand(LEVY_UNITS, generator=g, dtype=DTYPE) * 2 - 1) * limit
        a[k] = (torch.rand(LEVY_UNITS, generator=g, dtype=DTYPE) * 2 - 1) * limit
    b = torch.zeros_like(w)
    out = {"a": a, "c": torch.zeros(models, 1, dtype=DTYPE)}
    if kind == "SP":
        out.update(w=w, b=b)
    elif kind == "WN":
        out.update(v=w, g=w.abs(), b=b)
    elif kind == "BN":
        out.update(w=w, b=b, gamma=torch.ones_like(w), beta=torch.zeros_like(w))
    else:
        out.update(lam=b.clone(), r=torch.ones_like(w))
    return out


def effective_1d(kind: str, p: dict[str, torch.Tensor], x_train: torch.Tensor, sign: torch.Tensor):
    """(w_eff, b_eff, scale) [M, units]: each unit as scale * ReLU(w_eff x + b_eff), as ``effective`` in 1-D (BN
    over the full batch; GmP: w_eff the fixed direction ``sign``, b_eff = lambda, scale r)."""
    if kind == "SP":
        return p["w"], p["b"], torch.ones_like(p["b"])
    if kind == "WN":
        return p["g"] * torch.sign(p["v"]), p["b"], torch.ones_like(p["b"])
    if kind == "BN":
        pre = p["w"][:, None] * x_train[:, 0][None, :, None] + p["b"][:, None]
        mu, sd = pre.mean(1), torch.sqrt(pre.var(1, unbiased=False) + 1e-5)
        return p["gamma"] * p["w"] / sd, p["gamma"] * (p["b"] - mu) / sd + p["beta"], torch.ones_like(mu)
    return sign, p["lam"], p["r"]


def train_levy(kind: str, steps: int, lr: float, seeds: list[int], data) -> dict:
    """Full-batch Adam at ``lr`` on the mean absolute error (the authors' loss) for every seed at once: the
    largest move of a unit's characteristic point per step, max_i |phi_i,t+1 - phi_i,t| with phi = -b_eff / w_eff
    (eq. 8 in 1-D) [steps, M], and the test RMSE [M]."""
    x_train, y_train, x_test, y_test = data
    p = initial_1d(kind, seeds)
    sign = torch.sign(initial_1d("SP", seeds)["w"])
    for v in p.values():
        v.requires_grad_(True)
    names = list(p)
    opt = Adam(BETAS[0], BETAS[1], ADAM_EPS)
    slots = opt.view(opt.init({n: p[n].detach() for n in names}), names)
    rate = torch.full((len(seeds),), lr, dtype=DTYPE)

    def predict(x):
        w, b, scale = effective_1d(kind, p, x_train, sign)
        hidden = scale[:, None] * torch.relu(w[:, None] * x[:, 0][None, :, None] + b[:, None])
        return torch.einsum("mnu,mu->mn", hidden, p["a"]) + p["c"]

    def location():
        w, b, _ = effective_1d(kind, p, x_train, sign)
        return -b / w

    steps_taken = torch.empty(steps, len(seeds), dtype=DTYPE)
    with torch.no_grad():
        phi = location()
    for t in range(steps):
        loss = (predict(x_train) - y_train).abs().mean(1).sum()
        grads = torch.autograd.grad(loss, [p[n] for n in names])
        with torch.no_grad():
            opt.update([p[n] for n in names], list(grads), slots, rate)
            nxt = location()
            steps_taken[t] = (nxt - phi).abs().amax(-1)
            phi = nxt
    with torch.no_grad():
        rmse = torch.sqrt(((predict(x_test) - y_test) ** 2).mean(1))
    return {"location": steps_taken.numpy(), "rmse": rmse.numpy()}


def levy_rows(s: Settings, seed: int):
    """Figure 2(c)'s claim as rows (module docstring), each net at the authors' rate (``LEVY_LRS``), per
    initialization its largest step. Returns (rows, extra keys of the JSON, note, figure)."""
    x, y, xt, yt = levy_data(LEVY_TRAIN, sub_seed(seed, 3))
    data = tuple(torch.from_numpy(v) for v in (x, y, xt, yt))
    seeds = [sub_seed(seed, 4, k) for k in range(s.inits)]
    runs = {k: train_levy(k, s.levy_steps, LEVY_LRS[k], seeds, data) for k in PARAMETERIZATIONS}
    largest = {k: np.log2(runs[k]["location"].max(0)) for k in PARAMETERIZATIONS}  # per initialization
    rows = []
    for k in PARAMETERIZATIONS:
        if k == "GmP":
            rows.append(
                Row.claim(
                    "log2_max_location_step:GmP:levy",
                    each(largest[k], estimate=float(largest[k].max())),
                    below(0.0),
                    'below 0 in every initialization (a step below 1): under GmP max_i |Delta phi_i,t| is "always '
                    f'smaller than 1 throughout training" (figure 2c), rate {LEVY_LRS[k]:g}; measured: the largest',
                )
            )
        else:
            rows.append(
                Row.claim(
                    f"log2_max_location_step:{k}:levy",
                    mean(largest[k]),
                    above(LEVY_SPIKE),
                    f'at least {LEVY_SPIKE:g}: under {k} the changes "can be up to 2^16 at some steps" (figure 2c), '
                    f"rate {LEVY_LRS[k]:g}; the mean over initializations of log2 of each one's largest step",
                )
            )
    note = (
        f"Figure 2(c): one hidden layer of {LEVY_UNITS} ReLU units on the 1-D Levy function, {LEVY_TRAIN} training "
        f"points uniform on [-10, 10] with noise sd {LEVY_NOISE}, full-batch Adam on the mean absolute error for "
        f"{s.levy_steps} steps at the authors' rates (GmP {LEVY_LRS['GmP']:g}, the others {LEVY_LRS['SP']:g}; their "
        "code also lowers the rate on plateaus and stops early, not done here), Glorot-uniform weights, zero biases, "
        "GmP's r = 1. Largest step of a characteristic point per initialization, log2: "
        + "; ".join(f"{k} " + ", ".join(f"{v:.1f}" for v in largest[k]) for k in PARAMETERIZATIONS)
        + ". Test RMSE (median): "
        + ", ".join(f"{k} {float(np.median(runs[k]['rmse'])):.3g}" for k in PARAMETERIZATIONS)
        + "."
    )
    extra = {
        "levy_log2_max_location_step": {k: largest[k].tolist() for k in PARAMETERIZATIONS},
        "levy_test_rmse": {k: runs[k]["rmse"].tolist() for k in PARAMETERIZATIONS},
    }
    return rows, extra, note, location_steps(runs)


# -- the reproduction ---------------------------------------------------------------------------------------


def banana_data(root, seed: int) -> tuple[tuple[torch.Tensor, ...], str | None, str]:
    """(x_train, y_train, x_test, y_test as tensors; None, or why the data is a stand-in; what it is)."""
    if root is not None:
        path = banana.locate(root)
        x, y = banana.read(path)
        stand_in, what = None, f"the banana set from {path} ({len(x):,} rows)"
    else:
        x, y = banana.stand_in(sub_seed(seed, 0))
        stand_in = "the banana file is not here (--root names its directory): stand-in two-moons data"
        what = f"STAND-IN: {len(x):,} two-moons points (noise sd {banana.STAND_IN_NOISE}); {stand_in.split(':')[0]}"
    parts = banana.authors_split(x, y, seed)
    what += (
        f"; the authors' preprocessing: {banana.SUBSET:,} rows, {len(parts[0])} for training and {len(parts[2])} "
        "for testing, standardized"
    )
    return tuple(torch.from_numpy(a) for a in parts), stand_in, what


def figure3_rows(runs: dict, s: Settings, stand_in: str | None) -> list[Row]:
    """Figure 3's rows (module docstring) from ``train``'s outcome per parameterization."""
    n = s.inits
    big, small = len(LRS) - 1, 0

    def at(kind, key, j):  # the models of rate j: [n] per-initialization values
        values = runs[kind][key]
        return values.max(0)[j * n : (j + 1) * n] if values.ndim == 2 else values[j * n : (j + 1) * n]

    label = f"; {stand_in}" if stand_in else ""
    bound = math.degrees(adam_bound(LRS[big]))
    rows = [
        Row.claim(
            f"max_angle_step_deg:GmP:lr={LRS[big]:g}",
            each(at("GmP", "angle", big), estimate=float(at("GmP", "angle", big).max())),
            below(bound),
            f"at most {bound:.3g} degrees in every initialization (Adam's largest step through Theorem 3): GmP's "
            f"angular updates stay stable at the large rate (figure 3i); measured: the largest{label}",
        )
    ]
    for what, key, words in (
        ("max_angle_step", "angle", "turn of a unit's boundary in one step (figure 3i: up to 180 degrees)"),
        ("max_location_step", "location", "jump of a unit's spatial location phi in one step (figure 3a-h)"),
    ):
        gmp = np.log10(np.maximum(at("GmP", key, big), 1e-300))
        for k in OTHERS:
            ours = np.log10(np.maximum(at(k, key, big), 1e-300))
            rows.append(
                Row.claim(
                    f"log10_{what}{'_deg' if key == 'angle' else ''}_over_gmp:{k}:lr={LRS[big]:g}",
                    shift(ours, gmp),
                    above(0.0),
                    f"above 0: {k}'s largest {words} above GmP's (measured: the shift of log10 of it over GmP's)"
                    + label,
                ).checking(f"figure 3: GmP's {what.replace('_', ' ')} the smallest at the large rate")
            )
    gmp_acc = at("GmP", "accuracy", big)
    for k in OTHERS:
        row = Row.claim(
            f"test_accuracy_minus_gmp:{k}:lr={LRS[small]:g}",
            shift(at(k, "accuracy", small), gmp_acc),
            below(0.0),
            f"below 0: {k}'s test accuracy at its rate {LRS[small]:g} under GmP's at {LRS[big]:g} (measured: the "
            "shift; figure 3j-m, GmP the highest)" + label,
        ).checking("figure 3j-m: GmP at the 10x rate has the highest test accuracy of all compared")
        rows.append(row.cannot_tell(stand_in) if stand_in else row)
    # where the best rate lies: the authors' cross-validation finds 0.1 for GmP and 0.01 for every other method
    # (sections 5.2 and 5.3), and figure 3 trains each at its own, "a 10x larger learning rate" for GmP
    for k in PARAMETERIZATIONS:
        gmp = k == "GmP"
        row = Row.claim(
            f"test_accuracy_large_minus_small_rate:{k}",
            shift(at(k, "accuracy", big), at(k, "accuracy", small)),
            above(0.0) if gmp else below(0.0),
            f"{'above' if gmp else 'below'} 0: {k}'s test accuracy at {LRS[big]:g} over its accuracy at "
            f"{LRS[small]:g} (measured: the shift), so its best rate of the two is the "
            f"{'larger' if gmp else 'smaller'}" + label,
        ).checking("sections 5.2-5.3: the best rate is 0.1 under GmP and 0.01 under the other parameterizations")
        rows.append(row.cannot_tell(stand_in) if stand_in else row)
    return rows


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    data, stand_in, what = banana_data(ctx.root, ctx.seed)
    ctx.say(f"gmp-banana: figure 2(c), Levy regression, {s.inits} initializations x 4, {s.levy_steps} Adam steps")
    levy_table, levy_extra, levy_note, levy_figure = levy_rows(s, ctx.seed)
    seeds = [sub_seed(ctx.seed, 2, k) for k in range(s.inits)]
    runs = {}
    for i, kind in enumerate(PARAMETERIZATIONS):
        ctx.count(i, len(PARAMETERIZATIONS), "parameterizations trained")
        ctx.say(f"gmp-banana: {kind}, {s.inits} initializations x {len(LRS)} rates, up to {s.epochs} epochs")
        runs[kind] = train(kind, s, seeds, data, trail_models=s.inits + 1)
    rows = figure3_rows(runs, s, stand_in) + levy_table
    return Measured(
        rows,
        figures=figures(runs, s, data, levy_figure),
        data=what,
        note=_note(runs, s, stand_in, levy_note),
        extra={
            "learning_rates": list(LRS),
            "stand_in": stand_in,
            "adam_bound_deg": math.degrees(adam_bound(LRS[-1])),
            "max_angle_step_deg": {k: runs[k]["angle"].max(0).tolist() for k in PARAMETERIZATIONS},
            "max_location_step": {k: runs[k]["location"].max(0).tolist() for k in PARAMETERIZATIONS},
            "test_accuracy": {k: runs[k]["accuracy"].tolist() for k in PARAMETERIZATIONS},
            "best_epoch": {k: runs[k]["best_epoch"] for k in PARAMETERIZATIONS},
            "epochs_run": {k: runs[k]["epochs_run"] for k in PARAMETERIZATIONS},
            **levy_extra,
        },
    )


def _note(runs: dict, s: Settings, stand_in: str | None, levy_note: str) -> str:
    n = s.inits
    return "\n\n".join(
        [
            f"The authors' notebook's experiment (module docstring): {UNITS} ReLU units, a sigmoid output, binary "
            f"cross-entropy, Glorot-uniform weights, Adam (betas {BETAS}, epsilon {ADAM_EPS:g}) on minibatches of "
            f"{BATCH}, up to {s.epochs} epochs (the authors: 5,000), the rate divided by {1 / PLATEAU_FACTOR:g} after "
            f"{PLATEAU_PATIENCE} epochs without a rise of the test accuracy, stopped after {STOP_PATIENCE} and the "
            "best "
            f"epoch's weights restored; {n} initializations, each under all four at {LRS[0]:g} and {LRS[1]:g}. "
            "Epochs run before every model of a parameterization had stopped: "
            + ", ".join(f"{k} {runs[k]['epochs_run']}" for k in PARAMETERIZATIONS)
            + ".",
            (f"Data: {stand_in}, so the accuracy rows cannot tell." if stand_in else "Data: the standard banana set.")
            + " Test accuracy per initialization: "
            + "; ".join(
                f"{k} lr={lr:g} " + ", ".join(f"{v:.3f}" for v in runs[k]["accuracy"][j * n : (j + 1) * n])
                for k in PARAMETERIZATIONS
                for j, lr in enumerate(LRS)
            )
            + ". The authors' notebook prints, for its one run each: GmP (0.1) 0.885, SP (0.01) 0.800, BN (0.01) "
            "0.875, WN (0.01) 0.810.",
            "Per initialization at the rate 0.1, the largest angle step (degrees): "
            + "; ".join(
                f"{k} " + ", ".join(f"{v:.3g}" for v in runs[k]["angle"].max(0)[n : 2 * n]) for k in PARAMETERIZATIONS
            )
            + ".",
            levy_note,
        ]
    )


# -- figures ----------------------------------------------------------------------------------------------------


def figures(runs: dict, s: Settings, data, levy_figure) -> list:
    x_tr, y_tr, x_te, y_te = (a.numpy() for a in data)
    bound = math.degrees(adam_bound(LRS[-1]))
    return [
        (
            f"Figure 3a-h: the spatial locations phi (eq. 8) of the {UNITS} units at the end of every epoch (one "
            "colour per unit, a dot at the end), the first initialization, over the training data; top row the rate "
            f"{LRS[0]:g}, bottom row {LRS[1]:g}.",
            trajectories(runs, s, x_tr, y_tr),
        ),
        (
            f"Figure 3i: the largest angle step max_i |Delta theta_i,t| (eq. 12) at each step, rate {LRS[1]:g}, the "
            f"first initialization; the dashed line is GmP's bound {bound:.3g} degrees.",
            angle_steps(runs, s, bound),
        ),
        (
            f"Figure 3j-m: the fits at the restored best epoch (the first initialization; GmP at {LRS[1]:g}, the "
            f"others at {LRS[0]:g}, the authors' rates): the predicted probability, the decision boundary (black), "
            "the test data and the units' spatial locations (red stars).",
            fits(runs, s, x_te, y_te),
        ),
        (
            "Figure 2(c): the largest move of a characteristic point max_i |Δφ_i,t| at each step of the 1-D "
            "Levy regression (100 units), the first initialization, log2 scale; each net at the authors' rate.",
            levy_figure,
        ),
    ]


def location_steps(runs):
    from archstudy.analysis.plotting import PALETTE, new_figure

    fig, (ax,) = new_figure(panel=(6.0, 3.0))
    for kind, color in zip(PARAMETERIZATIONS, PALETTE):
        steps = runs[kind]["location"][:, 0]
        ax.plot(np.arange(1, len(steps) + 1), np.log2(np.maximum(steps, 2.0**-30)), color=color, lw=0.7, label=kind)
    ax.axhline(0.0, color="k", ls="--", lw=0.8)
    ax.set_xlabel("Adam step t")
    ax.set_ylabel("log2 max_i |Δφ_i,t|")
    ax.legend()
    return fig


def _scatter(ax, x, y):
    ax.scatter(x[:, 0], x[:, 1], c=np.where(y > 0, "#4c72b0", "#dd8452"), s=3, alpha=0.35, lw=0)
    ax.set_xlim(-3.0, 3.0)
    ax.set_ylim(-3.0, 3.0)


def trajectories(runs, s: Settings, x, y):
    from archstudy.analysis.plotting import PALETTE, new_figure, set_title

    fig, axes = new_figure(ncols=len(PARAMETERIZATIONS), nrows=len(LRS), panel=(2.6, 2.4))
    axes = np.asarray(axes).reshape(len(LRS), len(PARAMETERIZATIONS))
    for j, lr in enumerate(LRS):
        for col, kind in enumerate(PARAMETERIZATIONS):
            ax = axes[j, col]
            _scatter(ax, x, y)
            trail = runs[kind]["trail"][:, j * s.inits]  # [E, UNITS, 2]
            for i in range(UNITS):
                color = PALETTE[i % len(PALETTE)]
                ax.plot(trail[:, i, 0], trail[:, i, 1], color=color, lw=0.8)
                ax.plot(trail[-1, i, 0], trail[-1, i, 1], "o", color=color, ms=3)
            set_title(ax, f"{kind}, lr {lr:g}")
    return fig


def angle_steps(runs, s: Settings, bound: float):
    from archstudy.analysis.plotting import PALETTE, new_figure, set_log

    fig, (ax,) = new_figure(panel=(6.0, 3.0))
    for kind, color in zip(PARAMETERIZATIONS, PALETTE):
        a = runs[kind]["angle"][:, s.inits]
        ax.plot(np.arange(1, len(a) + 1), np.maximum(a, 1e-6), color=color, lw=0.7, label=kind)
    ax.axhline(bound, color="k", ls="--", lw=0.8)
    set_log(ax, "y")
    ax.set_xlabel("Adam step t")
    ax.set_ylabel("max_i |Δθ_i,t| (degrees)")
    ax.legend()
    return fig


def fits(runs, s: Settings, x, y):
    from archstudy.analysis.plotting import new_figure, set_title

    fig, axes = new_figure(ncols=len(PARAMETERIZATIONS), panel=(2.6, 2.4))
    g1, g2 = np.meshgrid(np.linspace(-3.0, 3.0, 100), np.linspace(-3.0, 3.0, 100))
    grid = torch.from_numpy(np.stack([g1.ravel(), g2.ravel()], 1))[None]
    for ax, kind in zip(np.ravel(axes), PARAMETERIZATIONS):
        m = s.inits if kind == "GmP" else 0  # the authors' rates: GmP at 0.1, the others at 0.01
        p = {k: v[m : m + 1] for k, v in runs[kind]["params"].items()}
        moving = runs[kind]["moving"]
        one = Moving(moving.mean[m : m + 1], moving.var[m : m + 1])
        with torch.no_grad():
            prob = torch.sigmoid(logits(kind, p, grid, one))[0].numpy().reshape(g1.shape)
            _, phi = boundaries(kind, p, one)
        ax.contourf(g1, g2, prob, levels=20, cmap="RdBu", alpha=0.5)
        ax.contour(g1, g2, prob, levels=[0.5], colors="k", linewidths=1.5)
        _scatter(ax, x, y)
        ax.plot(phi[0, :, 0], phi[0, :, 1], "*", color="red", ms=8)
        set_title(ax, f"{kind} lr {LRS[1 if kind == 'GmP' else 0]:g}: test {runs[kind]['accuracy'][m]:.3f}")
    return fig


REPRODUCTION = Reproduction(
    name="gmp-banana",
    paper=PAPER,
    source="figure 3 and figure 2(c) (section 3.5)",
    summary="10 ReLU units on the standard 2-D banana set (--root; else a labelled two-moons stand-in), SP vs WN vs "
    "BN vs GmP trained as the authors' notebook: how far the characteristic activation boundaries jump per step, "
    "and the test accuracy; 100 units on 1-D Levy regression: how far the characteristic points move per step",
    scales=SCALES,
    cost={
        "tiny": "10 s (estimated)",
        "quick": "54 s measured (2026-12-04)",
        "paper": "10 min (estimated)",
    },
    reproduce=reproduce,
    reads_root="banana",
)
offer(REPRODUCTION, order=130)
