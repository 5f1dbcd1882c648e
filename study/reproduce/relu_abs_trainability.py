"""``relu-abs-trainability``: the variability paper (*Variability of Neural Networks and Han-Layer*, ICLR 2022
submission), figure 8 (appendix B.2), and Yu and Zhang, *Householder-Absolute Neural Layers*, figure 3 (section
2.1): fully-connected ReLU nets against fully-connected ABS nets of a fixed number of parameters trained by
gradient descent on the 8 x 8 checkerboard, against the number of hidden layers.

The data (the variability paper, B.1): "the 6561 mesh points of an 81 x 81 grid over the square [-1, 1]^2 [...]
8 by 8 checkerboard blocks [...] the surrounding edges all take the 0-label", split at random "25% as a training
set containing m = 1640 samples, and the remaining 75% as a testing set" (``study.datasets.checkerboard`` with
``blocks=8``, the board of the authors' generator: 9 x 9-point squares in the central 72 x 72 points, a zero
frame of 1377 points around them; the test set is its validation and test splits together). Yu and Zhang: "an
easier Checkerboard problem with 8 by 8 blocks".

The networks (B.1): "when we vary the number of hidden layers L, we adjust the width d so that the total number
of model parameters (i.e., weights and biases) is kept to a prescribed constant" (Yu and Zhang and figure 8's
third column: 3200; figure 8 also 1600 and 2400, at ``paper`` scale): an input layer, L hidden layers of width d
and an output layer, ``ArchSpec(depth=L + 1)``, d the width whose count with the paper's two outputs is closest
to the budget (``solve_width``; the paper instead adds or deletes "one or two nodes from some hidden layers", a
uniform width here). Ours have ONE output regressing the 0/1 label (the paper's two outputs regress two copies
of it, y = (0, 0) or (1, 1), eq. 18: the same minimizer; ours has d + 1 parameters fewer). "We initialize weight
matrices and bias vectors with i.i.d. standard normal random numbers, and the weight matrices are then scaled by
the Xavier/Kaiming initialization constants": biases N(0, 1) (``bias_init="normal"``), weights Kaiming
(N(0, 2 / fan_in)) under ReLU and Xavier (N(0, 2 / (fan_in + fan_out)), 1 / d on the square hidden layers,
which keeps the second moment of |s|) under ABS, as the variability paper's section 3.1 pairs them ("For ReLU
we use Kaiming initialization, and for [...] ABS we use Xavier initialization"); plain relu(s) and |s|.

The protocol (B.1): the least squares loss (eq. 18; the figure's loss axis, 0 to 0.25, is the mean over the
points and outputs, the pipeline's ``mse``), "the gradient descent method (instead of SGD) with 40000 iterations"
(full batch, no momentum), the 10 starting rates {0.001, 0.003, 0.006, 0.01, 0.03, 0.06, 0.1, 0.3, 0.6, 1.0},
each divided by 5 at iterations 20000, 28000 and 36000 (fractions 1/2, 7/10, 9/10), "10 different samples of
random initial parameters", and "we always record and output the best result in terms of the training error
regardless of where it occurs during training". One stack per net: 10 initializations x 10 rates.

What is reported, per net and initialization: the best training loss along training (the lowest full-batch loss
over all rates and all iterations: with one step per epoch, the curves' ``train_loss`` of every epoch is the loss
of that iterate); and the training and test accuracy (output rounded to 0 or 1) of the run whose final training
error is lowest, at its last iteration (the trainer evaluates accuracies at the end; the loss it records at every
step). Each depth's value is the mean over initializations, its spread the standard deviation, as figure 8.

Rows (claims; the figures print no number). "Near-zero loss" is OUR threshold, ``NEAR_ZERO`` = 0.02: below the
first tick (0.05) of figure 8's loss axis, under a tenth of the loss of the best constant (the variance of the
training labels, about 0.24).

* ``best_train_loss_min:ReLU:L>20``: "FCNet-ReLU is unable to reach near-zero loss values with more than 20 hidden
  layers" (both papers): the lowest mean best training loss over the ReLU depths above 20 is above NEAR_ZERO.
* ``best_train_loss_max:ABS:L>30``: "but FCNet-ABS still succeeds even after the hidden-layer number exceeds 30":
  the highest mean best training loss over the ABS depths above 30 is below NEAR_ZERO.
* ``best_train_loss:ABS-ReLU:L=<deepest ReLU>``: ABS below ReLU at the deepest depth both run ("confirming that
  ABS works better than ReLU in deeper DNNs").
* ``best_test_accuracy_depth:ReLU:3200`` (``paper`` scale, where the depths cover 10 to 15): "the best
  performance of the FCNet happens between L = 10 and L = 15" (the variability paper, B.2, third column).

Scales: ``paper`` is figure 8 (budgets 1600, 2400, 3200; ReLU at L = 2, ..., 20, 21, 23, ..., 31, ABS on to 41;
10 initializations x 10 rates, 40,000 iterations); ``quick`` the 3200 budget at a few depths each side of 20 and
30, 2 initializations, the 4 smallest rates, 3,000 iterations (what a CPU affords in minutes: fewer iterations can only
leave a loss higher, so the ReLU claim is then weak evidence and the ABS claim a harder test); ``tiny`` runs every
step for 8 iterations.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from archstudy.sampling import ArchSpec
from archstudy.sampling.width import solve_width

from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row

PAPER = (
    "the variability paper (*Variability of Neural Networks and Han-Layer*); Yu and Zhang, "
    "*Householder-Absolute Neural Layers*"
)
RATES = (0.001, 0.003, 0.006, 0.01, 0.03, 0.06, 0.1, 0.3, 0.6, 1.0)  # B.1
ITERATIONS = 40_000  # B.1: gradient descent, "40000 iterations without a stopping criterion"
STEP_AT, DIVISION = (0.5, 0.7, 0.9), 5.0  # "reduced by a factor of 5 [...] at iterations 20000, 28000, and 36000"
PAPER_INITS = 10  # "All trial instances are run with 10 different samples of random initial parameters"
BLOCKS = 8
TRAIN = 1640
NEAR_ZERO = 0.02  # our reading of "near-zero loss" (module docstring)
ACTIVATIONS = {"ReLU": ("relu", "kaiming"), "ABS": ("abs", "xavier")}  # B.1 / section 3.1: init per activation
# B.2: "L varying from 2 to 31 (with increment 1 up to 20 then increment 2 afterwards) for ReLU and extending to
# 41 for ABS"
RELU_DEPTHS = tuple(range(2, 21)) + tuple(range(21, 32, 2))
ABS_DEPTHS = RELU_DEPTHS + tuple(range(33, 42, 2))


@dataclass(frozen=True)
class Settings:
    budgets: tuple  # parameter counts (with two outputs, as the paper counts); the paper: 1600, 2400, 3200
    relu_depths: tuple  # hidden layers L
    abs_depths: tuple
    inits: int  # initializations per net (the paper: 10)
    iterations: int  # gradient-descent steps (the paper: 40,000)
    rates: tuple  # starting rates (the paper: RATES)


SCALES = {
    "tiny": Settings(budgets=(3200,), relu_depths=(21,), abs_depths=(21, 31), inits=1, iterations=8, rates=(0.01, 0.1)),
    # one net each side of 20 (ReLU) and of 30 (ABS) layers; the paper's 4 smallest rates (the larger ones
    # diverge within 300 steps from B.1's N(0, 1) biases: docs/reproductions.md), 3,000 iterations
    "quick": Settings(
        budgets=(3200,), relu_depths=(12, 23), abs_depths=(23, 35), inits=2, iterations=3_000, rates=RATES[:4]
    ),
    "paper": Settings(
        budgets=(1600, 2400, 3200),
        relu_depths=RELU_DEPTHS,
        abs_depths=ABS_DEPTHS,
        inits=PAPER_INITS,
        iterations=ITERATIONS,
        rates=RATES,
    ),
}
HEADLINE = 3200  # Yu and Zhang's figure 3, the variability paper's figure 8, third column


# -- data and nets ------------------------------------------------------------------------------------------


def checkerboard_data(seed: int):
    """The 8 x 8 board: ``train`` the 1640 points of the seeded training split, ``test`` (and ``val``) the other
    4921 (B.1 has no validation split)."""
    import torch

    from ..datasets import checkerboard
    from ..datasets.dataset import Split

    data = checkerboard.load(seed, BLOCKS)
    test = Split(torch.cat([data.val.x, data.test.x]), torch.cat([data.val.y, data.test.y]))
    return SimpleNamespace(train=data.train, val=test, test=test, d_in=2, meta=data.meta)


def net_spec(act: str, hidden: int, budget: int, d_out: int = 1) -> ArchSpec:
    """FCNet-``act`` ("ReLU" | "ABS") with ``hidden`` layers, its width the one whose count with two outputs is
    closest to ``budget``; ``d_out`` outputs (1: the one trained here)."""
    activation, init = ACTIVATIONS[act]
    spec = ArchSpec(
        depth=hidden + 1,
        width=2,
        d_in=2,
        d_out=2,
        activation=activation,
        init=init,
        scale_activation=False,
        bias_init="normal",
        preset="relu-abs-trainability",
    )
    return solve_width(spec, budget).replace(d_out=d_out)


def protocol(settings: Settings):
    from ..experiment.protocol import Protocol

    # full batch: one gradient-descent step per epoch; the final selection among rates by the training error
    return Protocol(
        preset="relu-abs-trainability",
        loss="mse",
        momentum=0.0,
        batch_size=TRAIN,
        schedule="steps",
        iterations=settings.iterations,
        step_at=STEP_AT,
        division_factor=DIVISION,
        monitor="train",
        lrs=settings.rates,
    )


def key(act: str, hidden: int, budget: int) -> str:
    return f"{act}:L={hidden}:{budget}"


def best_train_loss(out) -> list[float]:
    """Each run's lowest full-batch training loss along training (the curves' finite ``train_loss`` of every
    step; NaN where none is finite)."""
    best = [np.nan] * len(out.runs)
    c = out.curves
    for run, loss in zip(c["run"], c["train_loss"]):
        if np.isfinite(loss) and not loss >= best[run]:
            best[run] = float(loss)
    return best


def outcome_results(out, spec: ArchSpec) -> dict:
    """Per initialization: its best training loss along training over the rates, and the training and test
    accuracy (%) and rate of its run of lowest final training error."""
    n = out.n_rates
    per_run = best_train_loss(out)
    per_init = [per_run[j * n : (j + 1) * n] for j in range(len(out.init_seeds))]
    best = [float(np.nanmin(v)) if np.isfinite(v).any() else float("nan") for v in per_init]
    final = out.best_per_seed()
    return {
        "width": spec.width,
        "params": spec.num_params,
        "params_with_2_outputs": spec.replace(d_out=2).num_params,
        "seconds": out.train_s,
        "init_seeds": list(out.init_seeds),
        "best_train_loss": best,
        "best_train_loss_per_rate": per_init,
        "train_accuracy": [100.0 * (1.0 - r.train_error) for r in final],
        "test_accuracy": [100.0 * (1.0 - r.test_error) for r in final],
        "selected_lr": [r.lr for r in final],
        "diverged_per_rate": [[r.diverged for r in out.seed_runs(j)] for j in range(len(out.init_seeds))],
    }


def _mean(results: dict, k: str, field: str) -> float:
    v = np.asarray(results[k][field], dtype=float)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")


# -- the reproduction -----------------------------------------------------------------------------------------


def reproduce(ctx: Context) -> Measured:
    from ..training import train_architecture

    s: Settings = ctx.settings
    data = checkerboard_data(ctx.seed)
    p = protocol(s)
    results: dict[str, dict] = {}
    for _b, budget in enumerate(s.budgets):
        for a, (act, depths) in enumerate((("ReLU", s.relu_depths), ("ABS", s.abs_depths))):
            for hidden in depths:
                spec = net_spec(act, hidden, budget)
                k = key(act, hidden, budget)
                # seeds keyed by (activation, depth, budget), not by position: a net draws the same at every scale
                inits = [sub_seed(ctx.seed, budget, a, hidden, j) for j in range(s.inits)]
                out = train_architecture(
                    spec,
                    data,
                    seed=sub_seed(ctx.seed, budget, a, hidden),
                    protocol=p,
                    device=ctx.device,
                    init_seeds=inits,
                )
                results[k] = outcome_results(out, spec)
                ctx.say(
                    f"relu-abs-trainability: {k} (width {spec.width}, {spec.num_params} parameters): best "
                    f"training loss {_mean(results, k, 'best_train_loss'):.4f}, train / test accuracy "
                    f"{_mean(results, k, 'train_accuracy'):.1f} / {_mean(results, k, 'test_accuracy'):.1f}% "
                    f"({out.train_s:.0f} s)"
                )
    rows = _rows(s, results, label_variance(data))
    figures = [
        (
            "As the variability paper's figure 8 (Yu and Zhang's figure 3): against the number of hidden layers "
            "L, per budget (columns), the best training loss along training (log scale) and the final training "
            "and test accuracies (rows), mean and standard deviation over initializations; dotted: the "
            f"near-zero threshold {NEAR_ZERO}.",
            figure(s, results),
        )
    ]
    return Measured(
        rows,
        figures=figures,
        data=_data_text(data, ctx.seed),
        note=_note(s),
        extra={"near_zero": NEAR_ZERO, "protocol": p.to_dict(), "results": results},
    )


def label_variance(data) -> float:
    """The training loss of the best constant prediction: the variance of the 0/1 training labels."""
    return float(data.train.y.double().var(unbiased=False))


def _rows(s: Settings, results: dict, constant: float | None = None) -> list[Row]:
    """The claims (module docstring) from ``results``; with ``constant`` (the best constant's training loss,
    ``label_variance``), every row is "cannot tell" when no net of the run got below half of it: the scale
    trained nothing, so a net that did not train says nothing about its depth or activation."""
    budget = HEADLINE if HEADLINE in s.budgets else s.budgets[-1]

    def loss(act, hidden):
        return _mean(results, key(act, hidden, budget), "best_train_loss")

    rows = _claims(s, budget, loss, results)
    if constant is not None:
        lowest = float(np.nanmin([_mean(results, k, "best_train_loss") for k in results] + [np.inf]))
        if not lowest < constant / 2:
            why = (
                f"no net's best training loss went below half the best constant's ({constant:.3f}; lowest "
                f"{lowest:.3f}): nothing trained at this scale"
            )
            rows = [r.cannot_tell(why) for r in rows]
    return rows


def _claims(s: Settings, budget: int, loss, results: dict) -> list[Row]:
    rows = []
    deep_relu = [d for d in s.relu_depths if d > 20]
    if deep_relu:
        lowest = min(loss("ReLU", d) for d in deep_relu)
        rows.append(
            Row.claim(
                "best_train_loss_min:ReLU:L>20",
                lowest,
                lowest > NEAR_ZERO,
                f"above {NEAR_ZERO} (near zero, our threshold) at every L > 20 run ({', '.join(map(str, deep_relu))}): "
                '"FCNet-ReLU is unable to reach near-zero loss values with more than 20 hidden layers"; mean over '
                f"initializations of the best training loss along training, {budget} parameters",
            )
        )
    deep_abs = [d for d in s.abs_depths if d > 30]
    if deep_abs:
        highest = max(loss("ABS", d) for d in deep_abs)
        rows.append(
            Row.claim(
                "best_train_loss_max:ABS:L>30",
                highest,
                highest < NEAR_ZERO,
                f'below {NEAR_ZERO} at every L > 30 run ({", ".join(map(str, deep_abs))}): "FCNet-ABS still succeeds '
                'even after the hidden-layer number exceeds 30"; mean over initializations of the best training loss '
                f"along training, {budget} parameters",
            )
        )
    both = sorted(set(s.relu_depths) & set(s.abs_depths))
    deepest = both[-1]
    diff = loss("ABS", deepest) - loss("ReLU", deepest)
    rows.append(
        Row.claim(
            f"best_train_loss:ABS-ReLU:L={deepest}",
            diff,
            diff < 0,
            f"below 0 (ABS's best training loss below ReLU's at the deepest L both run, {budget} parameters): "
            '"confirming that ABS works better than ReLU in deeper DNNs"',
        )
    )
    window = [d for d in s.relu_depths if 10 <= d <= 15]
    if len(window) == 6:  # the claim needs the depths around and inside 10..15 (paper scale)
        acc = {d: _mean(results, key("ReLU", d, budget), "test_accuracy") for d in s.relu_depths}
        top = max(acc, key=lambda d: (acc[d], -d))
        rows.append(
            Row.claim(
                f"best_test_accuracy_depth:ReLU:{budget}",
                float(top),
                10 <= top <= 15,
                'between 10 and 15: "the best performance of the FCNet happens between L = 10 and L = 15" (the '
                "variability paper, B.2, third column); the L of the highest mean test accuracy",
            )
        )
    return rows


def _data_text(data, seed: int) -> str:
    src = data.meta["source"]
    return (
        f"the 8 x 8 checkerboard as the authors' generator builds it: the {src['points']:,} points of the 81 x 81 "
        f"grid on [-1, 1]^2, 8 x 8 squares of 9 x 9 points in its central 72 x 72, {src['label_1_points']:,} "
        f"labelled 1, the {src['edge_points']:,} points of the frame around them labelled 0; "
        f"{len(data.train):,} (25%) for training, drawn with seed {seed}, the other {len(data.test):,} for testing"
    )


def _note(s: Settings) -> str:
    return "\n\n".join(
        [
            "Reported per net: the mean over initializations of each initialization's best training loss along "
            "training (over its rates and every gradient-descent step: B.1's \"best result in terms of the training "
            'error regardless of where it occurs"), and the training and test accuracy at the last iteration of its '
            "run of lowest final training error (the trainer evaluates accuracies at the end only). The loss is the "
            "mean squared error over the points (figure 8's axis: the best constant scores the label variance, "
            f"about 0.24). Near zero: below {NEAR_ZERO}, our threshold (the papers give none).",
            "Nets: one output on the 0/1 label (the paper's two outputs regress two copies of it); the width is the "
            "one whose count with two outputs is closest to the budget, uniform over the hidden layers (JSON "
            "'results': width, params, params_with_2_outputs). Weights standard normal times the Kaiming constant "
            "(ReLU) or the Xavier one (ABS); biases standard normal (B.1).",
            f"This scale: budgets {', '.join(map(str, s.budgets))} (the paper: 1600, 2400, 3200); ReLU at L = "
            f"{', '.join(map(str, s.relu_depths))}, ABS at L = {', '.join(map(str, s.abs_depths))} (the paper: 2 to 31 "
            f"and to 41); {s.inits} initialization(s) (the paper: {PAPER_INITS}); {len(s.rates)} rates (the paper: "
            f"{len(RATES)}); {s.iterations:,} gradient-descent iterations (the paper: {ITERATIONS:,}), the divisions "
            "at 1/2, 7/10 and 9/10 of them.",
        ]
    )


# -- figure ----------------------------------------------------------------------------------------------------


def figure(s: Settings, results: dict):
    from archstudy.analysis.plotting import new_figure, set_log, set_title

    fig, axes = new_figure(nrows=2, ncols=len(s.budgets), panel=(3.8, 3.0))
    axes = np.asarray(axes).reshape(2, len(s.budgets))
    for col, budget in enumerate(s.budgets):
        for act, depths, marker in (("ReLU", s.relu_depths, "o"), ("ABS", s.abs_depths, "s")):
            for ax, fields in (
                (axes[0, col], ("best_train_loss",)),
                (axes[1, col], ("train_accuracy", "test_accuracy")),
            ):
                for f in fields:
                    v = [np.asarray(results[key(act, d, budget)][f], dtype=float) for d in depths]
                    mean = [np.nanmean(x) if np.isfinite(x).any() else np.nan for x in v]
                    sd = [np.nanstd(x) if np.isfinite(x).sum() > 1 else 0.0 for x in v]
                    label = f"{act} {f.replace('_', ' ')}"
                    ax.errorbar(
                        depths,
                        mean,
                        yerr=sd,
                        marker=marker,
                        ms=3,
                        lw=1,
                        capsize=2,
                        label=label,
                        ls="-" if f != "test_accuracy" else "--",
                    )
        axes[0, col].axhline(NEAR_ZERO, color="grey", ls=":", lw=1)
        set_log(axes[0, col], "y")  # from the near-zero threshold to the deep ABS nets' initial losses (tens)
        set_title(axes[0, col], f"{budget} parameters")
        axes[0, col].set_ylabel("best training loss (mse)")
        axes[1, col].set_ylabel("accuracy (%)")
        axes[1, col].set_xlabel("hidden layers L")
        for ax in axes[:, col]:
            ax.legend()
    return fig


REPRODUCTION = Reproduction(
    name="relu-abs-trainability",
    paper=PAPER,
    source="the variability paper's figure 8 (appendix B.2), Yu and Zhang's figure 3 (section 2.1)",
    summary="FCNet-ReLU against FCNet-ABS of 3200 parameters (and 1600, 2400) trained by gradient descent on the "
    "8x8 checkerboard against the number of hidden layers: deep ReLU nets get stuck, deep ABS nets reach "
    "near-zero training loss",
    scales=SCALES,
    cost={
        "tiny": "2 s",
        "quick": "4.7 min measured",
        "paper": "not run: 165 nets x 100 runs x 40,000 full-batch steps, GPU hours (estimated)",
    },
    reproduce=reproduce,
)
offer(REPRODUCTION, order=100)
