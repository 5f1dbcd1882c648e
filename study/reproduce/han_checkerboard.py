"""``han-checkerboard``: Yu and Zhang, *Householder-Absolute Neural Layers*, Tables 3 and 4 (section 3.2.1), and
the variability paper (*Variability of Neural Networks and Han-Layer*, ICLR 2022 submission), Table 7 (appendix
D.2): HanNets against fully-connected nets on the 12 x 12 checkerboard, and the ablation of Householder weights
and ABS activations.

The data (Yu and Zhang, section 3.1; the variability paper, B.1 and D.1): "6561 mesh points in a 12 x 12 block
checkerboard over the square [-1, 1]^2 [...] endowed with 0 or 1 labels according to their locations. We
randomly pick 25% mesh points, about 1640, as our training set"; the test set is the other 75% (4921, the
variability paper's Table 4). ``study.datasets.checkerboard`` draws the board (points on a block edge labelled
0, as B.1 does for its 8 x 8 board); the training set here is its seeded training split (1640 points) and the
test set everything else.

The networks. Yu and Zhang write "depth x width", counting hidden layers (Table 3: FCNet1, 6 x 100, has 51002
parameters = a 2 -> 100 input layer, five 100 x 100 layers and a 100 -> 2 output layer), so their "20 x 30" is
``ArchSpec(depth=21, width=30)``. The variability paper writes width x depth: "the network architecture is 100 x 17
for HanNet and 100 x 6 for FCNet" (D.3; 100 x 6 is FCNet1), so Table 7's "100 x 17" is 17 hidden layers of width
100, ``ArchSpec(depth=18, width=100)``. The row keys keep each paper's own notation (``Net.frame``). The HanNet's
"first and the last hidden layers are fully connected" with "orthogonal initialization" and Householder layers
(Algorithm 1) between them: ``dense_ends=1``, 17 Householder layers at 20 x 30, 3032 parameters with two outputs as
Table 3 counts them (ours have one output regressing the 0/1 label of section 3.1: 3001). The FCNets use "Kaiming
initialization [6]" (He, Zhang, Ren and Sun, *Delving Deep into Rectifiers*, 2015: normal, fan_in, gain
sqrt(2)). The ablation (Table 4, 20 x 30; Table 7, 100 x 17) swaps the layer type (H: the HanNet's structure; FC:
every layer dense, Kaiming-initialized under ReLU as the FCNets, orthogonal under ABS: ``_ablation`` says why) and
the activation (ABS, ReLU) of that framework. Every net is exactly the paper's: plain relu(s) and |s|
(``scale_activation=False``: appendix C of the NLC paper would use sqrt(2) relu(s)), no normalization, no skips,
no debiasing, Householder vectors u ~ N(0, I); a test checks every net's hidden layers and parameter count
against Tables 3 and 7.

Biases (``BIAS_INIT``, ``HOUSEHOLDER_BIAS``). Neither paper states how the biases of these nets start; both say
"All the training is done using PyTorch" (Yu and Zhang 3.1, the variability paper D.1), whose ``nn.Linear``
starts its bias uniform in +-1/sqrt(fan_in) whatever init the weights get: every dense layer here has that
bias (``bias_init="uniform_fan_in"``). The variability paper's "i.i.d. standard normal" biases (B.1) belong to
its B.2 experiments (figure 8), not to Table 7 (D.1 and D.2). The Householder layers' bias b (Algorithm 1) is
stated nowhere and is no ``nn.Linear``: OUR CHOICE, measured both ways (docs/reproductions.md), is
``HOUSEHOLDER_BIAS``.

The protocol (Yu and Zhang, section 3.1 and Table 2): mean squared error, SGD with momentum 0.9, batches of
100, 40,000 iterations, each of the 10 starting rates {0.001, ..., 1} (one stacked model), "the initial
learning rate is annealed by a factor of 5 at the fractions 1/2, 7/10 and 9/10 of the training durations", and
"select the best result as the output", "for each test instance, we always run 5 times starting from 5
different random initializations [...] the average of 5 runs" (the initializations in one stack,
``train_architecture(init_seeds=...)``). Accuracy is the fraction of points whose output rounds to their label
(f > 1/2: "rounding computed function to 0 or 1").

What is reported. "The best result" is the best test accuracy over the 10 rates AND along training: Yu and
Zhang's figure 5 shows a HanNet's "best testing accuracy" (96.5%) beside its last-iteration one (about 90%), the
variability paper's figure 10 "the best testing accuracies", and its B.1 outputs "the best result [...]
regardless of where it occurs during training". So the test error of every run is evaluated every
``Settings.test_every`` epochs (``Protocol.test_every``; an epoch is 17 iterations) and each initialization's row
value is its best test accuracy over rates and epochs (``Outcome.best_along_training``); the best final accuracy
(each initialization's best rate at its last iteration) is in the JSON beside it (``results``:
``test_accuracy_best`` and ``test_accuracy_final``). Every output says which is reported.

Rows ``test_accuracy:<H|FC>+<ABS|ReLU>:<frame>`` and ``test_accuracy:FCNet<k>:<frame>``, in percent as the papers
print them, compared by ``result``'s one rule: each printed value is a mean over 5 runs, an ESTIMATE, so ours
agrees within one unit of its last printed digit plus two standard errors of the difference between the
paper's mean over 5 runs and ours over n, each run spread by the paper's printed "+-" (Table 3), or, where the
paper prints no spread (Tables 4 and 7), by the standard deviation of ours (``mean_spread``). The variability
paper has no FC + ReLU run at 100 x 17: that row is a claim (``paper`` null), Table 7's conclusion that both
components are needed: below H + ABS at 100 x 17.

Scales: ``paper`` is all of it (11 nets, 5 initializations, mean and standard deviation; hours on a CPU);
``quick`` keeps the protocol whole (10,000 iterations do not reproduce the HanNet) and cuts the nets to Table
3's HanNet and FCNet1 and the initializations to QUICK_SEEDS; ``tiny`` (the test suite's) trains every net for
32 steps at 2 rates. The JSON and the page say what a scale cut.
"""

from __future__ import annotations

import dataclasses
import typing
import zlib
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from archstudy.sampling import ArchSpec

from .reproduction import Context, Measured, Reproduction, sub_seed
from .result import Row, mean_spread

PAPER = (
    "Yu and Zhang, *Householder-Absolute Neural Layers*; the variability paper (*Variability of Neural "
    "Networks and Han-Layer*)"
)
RATES = (0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)  # section 3.1
ITERATIONS, BATCH, MOMENTUM = 40_000, 100, 0.9  # Table 2 (weight decay 0)
STEP_AT, DIVISION = (0.5, 0.7, 0.9), 5.0  # "annealed by a factor of 5 at the fractions 1/2, 7/10 and 9/10"
PAPER_RUNS = 5  # "we always run 5 times starting from 5 different random initializations"
BLOCKS = 12
BIAS_INIT = "uniform_fan_in"  # the dense layers: PyTorch's nn.Linear default (module docstring)
HOUSEHOLDER_BIAS = "zero"  # the Householder layers: our choice, both measured (module docstring)
REPORTED = (
    "the best test accuracy along training (over the rates and the epochs where the test error was "
    "evaluated), as the papers report it; the best final one is in the JSON"
)


@dataclass(frozen=True)
class Net:
    """One network of the tables: ``name`` (H+ABS, ..., FCNet1), hidden layers and their width, the paper's
    printed "a x b" (``frame``), and the paper's number."""

    name: str
    hidden: int  # hidden layers
    width: int  # of every hidden layer
    frame: str  # the paper's own "depth x width" (Yu and Zhang) or "width x depth" (the variability paper)
    householder: bool
    activation: str  # "abs" | "relu"
    init: str  # of the dense layers: "orthogonal" | "kaiming"
    paper: str | None  # the printed test accuracy in percent; None: the paper ran no such net
    spread: str | None  # the printed "±" of Table 3; None: none printed
    source: str  # the table (and row) the number comes from

    @property
    def quantity(self) -> str:
        return f"test_accuracy:{self.name}:{self.frame}"

    def spec(self, d_out: int = 1) -> ArchSpec:
        """The net as an ``ArchSpec`` (``d_out=2``: as Table 3 counts its parameters)."""
        householder: dict[str, Any] = (
            dict(weights="householder", dense_ends=1, householder_bias=HOUSEHOLDER_BIAS) if self.householder else {}
        )
        return ArchSpec(
            depth=self.hidden + 1,
            width=self.width,
            d_in=2,
            d_out=d_out,
            activation=self.activation,
            init=self.init,
            scale_activation=False,
            bias_init=BIAS_INIT,
            preset="han-checkerboard",
            **householder,
        )


def _ablation(
    layers: str, act: str, hidden: int, width: int, frame: str, paper: str | None, spread: str | None, source: str
) -> Net:
    # The H nets are the HanNet's structure (its dense layers orthogonal). The FC nets are FCNets: ReLU ones
    # Kaiming-initialized as the FCNets of section 3.2.1; ABS ones orthogonal, since Kaiming's gain sqrt(2) would
    # double an ABS layer's second moment (2^19 over 20 x 30) where the authors' own multiplier for ABS keeps it
    # (sqrt(1/d), the variability paper's appendix A), as orthogonal weights do.
    init = "kaiming" if layers == "FC" and act == "ReLU" else "orthogonal"
    return Net(f"{layers}+{act}", hidden, width, frame, layers == "H", act.lower(), init, paper, spread, source)


TABLE4 = "Yu and Zhang, Table 4"
TABLE7 = "the variability paper, Table 7"
NETS: tuple[Net, ...] = (
    # Table 4's (a) is Table 3's HanNet, printed there with its spread over the 5 runs
    _ablation("H", "ABS", 20, 30, "20x30", "99.52", "0.27", "Yu and Zhang, Table 3 (HanNet; Table 4 (a): 99.5)"),
    _ablation("H", "ReLU", 20, 30, "20x30", "76.8", None, f"{TABLE4} (b)"),
    _ablation("FC", "ABS", 20, 30, "20x30", "82.6", None, f"{TABLE4} (c)"),
    _ablation("FC", "ReLU", 20, 30, "20x30", "82.3", None, f"{TABLE4} (d)"),
    # "100 x 17": width x depth (module docstring): 17 hidden layers of width 100
    _ablation("H", "ABS", 17, 100, "100x17", "99.2", None, f"{TABLE7} (a)"),
    _ablation("H", "ReLU", 17, 100, "100x17", "66.2", None, f"{TABLE7} (b)"),
    _ablation("FC", "ABS", 17, 100, "100x17", "85.3", None, f"{TABLE7} (c)"),
    _ablation("FC", "ReLU", 17, 100, "100x17", None, None, f"{TABLE7}: not run (three configurations only)"),
    Net("FCNet1", 6, 100, "6x100", False, "relu", "kaiming", "85.27", "0.35", "Yu and Zhang, Table 3"),
    Net("FCNet2", 10, 100, "10x100", False, "relu", "kaiming", "85.34", "0.38", "Yu and Zhang, Table 3"),
    Net("FCNet3", 6, 300, "6x300", False, "relu", "kaiming", "85.61", "0.17", "Yu and Zhang, Table 3"),
)
BY_QUANTITY = {n.quantity: n for n in NETS}
# Table 3's parameter counts (two outputs; ours have one, ``Net.spec``): a test checks them against the specs.
TABLE3_PARAMS = {
    "test_accuracy:H+ABS:20x30": 3032,
    "test_accuracy:FCNet1:6x100": 51002,
    "test_accuracy:FCNet2:10x100": 91402,
    "test_accuracy:FCNet3:6x300": 453002,
}
CLAIM_AGAINST = {"test_accuracy:FC+ReLU:100x17": "test_accuracy:H+ABS:100x17"}


@dataclass(frozen=True)
class Settings:
    seeds: int  # initializations per net (the paper: 5), stacked with the rates
    iterations: int  # SGD steps of every run (the paper: 40,000)
    rates: tuple  # starting learning rates (the paper: the 10 of RATES)
    nets: tuple  # the quantity keys trained at this scale (the paper: all of NETS)
    test_every: int  # epochs (of 17 iterations) between evaluations of every run's test error, and after the last


QUICK_NETS = ("test_accuracy:H+ABS:20x30", "test_accuracy:FCNet1:6x100")  # Table 3's headline: HanNet vs FCNet1
QUICK_SEEDS = 2
SCALES = {
    # every net, 2 rates for 32 steps: checks that everything runs, nothing of the paper's numbers
    "tiny": Settings(seeds=1, iterations=32, rates=(0.01, 0.025), nets=tuple(BY_QUANTITY), test_every=1),
    # the full protocol (10,000 iterations do not reproduce the HanNet's accuracy: a prototype reached 77% at
    # 10,000 and 97% at 40,000), Table 3's HanNet and FCNet1 only, QUICK_SEEDS initializations
    # the test error every 10 epochs (170 iterations; every epoch nearly doubles the cost on a CPU)
    "quick": Settings(seeds=QUICK_SEEDS, iterations=ITERATIONS, rates=RATES, nets=QUICK_NETS, test_every=10),
    # every epoch, the finest resolution of "the best result along training"
    "paper": Settings(seeds=PAPER_RUNS, iterations=ITERATIONS, rates=RATES, nets=tuple(BY_QUANTITY), test_every=1),
}


# -- data ---------------------------------------------------------------------------------------------------


def checkerboard_data(seed: int):
    """The 12 x 12 board split as the papers split it: ``train`` the 1640 points of ``load_dataset("checkerboard",
    seed)``'s training split, ``test`` the other 4921; ``val`` is ``test`` (the papers have no validation split,
    and the step schedule evaluates none during training)."""
    import torch

    from ..datasets import checkerboard
    from ..datasets.dataset import Split

    data = checkerboard.load(seed, BLOCKS)
    test = Split(torch.cat([data.val.x, data.test.x]), torch.cat([data.val.y, data.test.y]))
    return SimpleNamespace(train=data.train, val=test, test=test, d_in=2, meta=data.meta)


# -- the reproduction -----------------------------------------------------------------------------------------


class ScheduleSettings(typing.Protocol):  # typing's (``protocol`` imports the study's Protocol)
    """What ``protocol`` reads of a reproduction's settings (this module's ``Settings`` and ``han_flipped``'s)."""

    @property
    def iterations(self) -> int: ...
    @property
    def rates(self) -> tuple: ...
    @property
    def test_every(self) -> int: ...


def protocol(settings: ScheduleSettings):
    from ..experiment.protocol import Protocol

    return Protocol(
        preset="han-checkerboard",
        loss="mse",
        momentum=MOMENTUM,
        batch_size=BATCH,
        schedule="steps",
        iterations=settings.iterations,
        step_at=STEP_AT,
        division_factor=DIVISION,
        selection="test",
        lrs=settings.rates,
        test_every=settings.test_every,
    )


def net_seeds(seed: int, net: Net, count: int) -> tuple[int, list[int]]:
    """(data-order seed, initialization seeds) of ``net``: keyed by its name, so a net draws the same whatever
    else a scale runs."""
    key = zlib.crc32(net.quantity.encode())
    return sub_seed(seed, key), [sub_seed(seed, key, k) for k in range(count)]


def outcome_results(out, spec: ArchSpec) -> dict:
    """What the JSON keeps of one net's training (accuracies in percent): per initialization its best test
    accuracy along training (over rates and epochs: the row's value) and its best final one (each
    initialization's best rate at its last iteration), with that rate; every run's final and best."""
    best_along = [100.0 * (1.0 - e) for e in out.best_along_training()]
    n = out.n_rates
    per_init = [best_along[j * n : (j + 1) * n] for j in range(len(out.init_seeds))]
    final = out.best_per_seed()
    # a run that diverged before its first evaluation has no best (NaN): the best of the others (np.nanmax;
    # Python's max would depend on where the NaN lies)
    reported = [float(np.nanmax(v)) if np.isfinite(v).any() else float("nan") for v in per_init]
    return {
        "params": spec.num_params,
        "seconds": out.train_s,
        "init_seeds": list(out.init_seeds),
        "test_accuracy_best": reported,  # per initialization: the reported value
        "mean": float(np.mean(reported)),
        "sd": float(np.std(reported, ddof=1)) if len(reported) > 1 else None,
        "best_lr": [
            out.seed_runs(j)[int(np.nanargmax(v))].lr if np.isfinite(v).any() else None for j, v in enumerate(per_init)
        ],
        "test_accuracy_final": [100.0 * (1.0 - r.test_error) for r in final],  # its best rate at the last iteration
        "train_accuracy_final": [100.0 * (1.0 - r.train_error) for r in final],
        "best_final_lr": [r.lr for r in final],
        # every run: [initialization][rate]
        "test_accuracy_best_per_rate": per_init,
        "test_accuracy_final_per_rate": [
            [100.0 * (1.0 - r.test_error) for r in out.seed_runs(j)] for j in range(len(out.init_seeds))
        ],
        "diverged_per_rate": [[r.diverged for r in out.seed_runs(j)] for j in range(len(out.init_seeds))],
    }


def reproduce(ctx: Context) -> Measured:
    from ..training import train_architecture

    s: Settings = ctx.settings
    data = checkerboard_data(ctx.seed)
    p = protocol(s)
    results: dict[str, dict] = {}
    networks = {}
    for q in s.nets:
        net = BY_QUANTITY[q]
        spec = net.spec()
        order_seed, init_seeds = net_seeds(ctx.seed, net, s.seeds)
        ctx.say(
            f"han-checkerboard: {q} ({spec.num_params:,} parameters): {s.seeds} initialization(s) x "
            f"{len(s.rates)} rates, {s.iterations:,} iterations"
        )
        out = train_architecture(spec, data, seed=order_seed, protocol=p, device=ctx.device, init_seeds=init_seeds)
        results[q] = outcome_results(out, spec)
        networks[q] = out.network
        ctx.say(
            f"han-checkerboard: {q}: best test accuracy along training {results[q]['mean']:.2f}%, best final "
            f"{float(np.mean(results[q]['test_accuracy_final'])):.2f}% ({out.train_s:.0f} s)"
        )
    rows = []
    for q in s.nets:
        net, ours = BY_QUANTITY[q], results[q]["test_accuracy_best"]
        mean = float(np.mean(ours))
        if net.paper is None:
            other = CLAIM_AGAINST[q]
            below = other in results and mean < results[other]["mean"]
            rows.append(
                Row.claim(
                    q,
                    mean,
                    below,
                    f"below {other} ({net.source}; its conclusion: both Householder "
                    "weights and ABS are needed); best along training",
                )
            )
        else:
            spread = mean_spread(ours, PAPER_RUNS, None if net.spread is None else float(net.spread))
            row = Row.printed(q, net.paper, mean, estimated=True, spread=spread)
            rows.append(dataclasses.replace(row, tolerance=f"{row.tolerance}; {net.source}; best along training"))
    cut = [q for q in BY_QUANTITY if q not in s.nets]
    figures = [
        (
            "Each net's best test accuracy along training (dots: mean and range over initializations; crosses: "
            "the papers; open circles: the best final accuracy); right: the best along training against the "
            "starting rate (mean over initializations).",
            figure(results, s.rates),
        )
    ]
    views = [q for q in ("test_accuracy:FCNet1:6x100", "test_accuracy:H+ABS:20x30") if q in networks]
    if views:
        figures.append(
            (
                "As the paper's figure 1: the board, and the function learnt by "
                + " and ".join(views)
                + " (the run of the best final test accuracy, at its last iteration) "
                "rounded to 0 or 1, on a grid four times finer than the data's.",
                top_views({q: networks[q] for q in views}, results, ctx.device),
            )
        )
    return Measured(
        rows,
        figures=figures,
        data=_data_text(data, ctx.seed),
        note=_note(s, cut),
        extra={
            "reported": REPORTED,
            "cut_at_this_scale": cut,
            "nets": {q: _describe(BY_QUANTITY[q]) for q in s.nets},
            "protocol": p.to_dict(),
            "selected_by": p.selected_by,
            "results": results,
        },
    )


def _describe(net: Net) -> dict:
    spec = net.spec()
    kinds = [layer.kind for layer in spec.layers()]
    return {
        "spec": spec.to_dict(),
        "params": spec.num_params,
        "params_with_2_outputs": net.spec(2).num_params,
        "hidden_layers": net.hidden,
        "width": net.width,
        "frame": net.frame,
        "householder_layers": kinds.count("householder"),
        "dense_layers": kinds.count("dense"),
        "bias_init": spec.bias_init,
        "householder_bias": spec.householder_bias if net.householder else None,
        "paper": net.paper,
        "paper_spread": net.spread,
        "source": net.source,
    }


def _data_text(data, seed: int) -> str:
    src = data.meta["source"]
    return (
        f"the 12 x 12 checkerboard: the {src['points']:,} points of the 81 x 81 grid on [-1, 1]^2, "
        f"{src['label_1_points']:,} labelled 1, {src['edge_points']:,} on block edges labelled 0; "
        f"{len(data.train):,} (25%) for training, drawn with seed {seed}, the other {len(data.test):,} for testing"
    )


def _note(s: Settings, cut: list[str]) -> str:
    scale = (
        f"This scale: {s.seeds} initialization(s) per net (the paper: {PAPER_RUNS}), {s.iterations:,} "
        f"iterations (the paper: {ITERATIONS:,}), {len(s.rates)} starting rates (the paper: {len(RATES)}), the "
        f"test error evaluated every {s.test_every} epoch(s) of 17 iterations (and after the last)."
    )
    if cut:
        scale += " Not run at this scale (their rows are absent): " + ", ".join(cut) + "."
    return "\n\n".join(
        [
            f'Reported: {REPORTED} (Yu and Zhang 3.1: "select the best result as the output"; their figure 5 and '
            "the variability paper's figure 10 give the best testing accuracy along training, its B.1 \"the best "
            'result [...] regardless of where it occurs during training"). Each row is the mean over initializations '
            "of each initialization's best test accuracy over its 10 rates and its epochs; JSON 'results' holds it "
            "per initialization ('test_accuracy_best') beside the best final accuracy ('test_accuracy_final', each "
            "initialization's best rate at its last iteration). There is no validation split. Always predicting 0 "
            "scores about 56% (3673 of the 6561 points).",
            "Outputs: one, trained on the 0/1 label with the mean squared error; accuracy counts the output rounded to "
            "the label (f > 1/2). The parameter counts of Yu and Zhang's Table 3 (3032, 51002, 91402, 453002) are "
            "those of the same nets with two outputs (the variability paper's B.1 regresses two copies of the label, "
            "(0, 0) or (1, 1)); ours have one, 31 to 301 parameters fewer (JSON 'nets'). Table 7's \"100 x 17\" is "
            'width x depth, as the variability paper writes its nets (D.3: "100 x 6 for FCNet", FCNet1): 17 hidden '
            "layers of width 100.",
            "Weights: FCNet1-3 Kaiming (normal, fan_in, gain √2) as section 3.2.1; the HanNet's dense layers "
            "orthogonal (the input layer a Haar-orthogonal 30 x 2 block times √15, appendix C's rule of the NLC "
            "paper: the papers name no init for the input and output layers). The ablation's FC nets (the papers "
            "name no init for them): ReLU ones Kaiming like the FCNets; ABS ones orthogonal, since Kaiming's gain "
            "would double an ABS layer's second moment (2^19 over 20 layers) and the authors' own multiplier for ABS, "
            "√(1/d) (the variability paper, appendix A), keeps it as orthogonal weights do.",
            f"Biases: every dense layer's starts uniform in ±1/√fan_in ('{BIAS_INIT}'), PyTorch's nn.Linear default: "
            "neither paper states a bias init and both trained with PyTorch (Yu and Zhang 3.1, the variability paper "
            "D.1). The Householder layers' bias (Algorithm 1's b) is stated nowhere: our choice, "
            f"'{HOUSEHOLDER_BIAS}' (householder_bias), both measured (docs/reproductions.md).",
            scale,
        ]
    )


# -- figures ---------------------------------------------------------------------------------------------------


def figure(results: dict[str, dict], rates):
    from archstudy.analysis.plotting import BLACK, GREY, RED, new_figure, set_log, set_title

    fig, (ax, ax_lr) = new_figure(ncols=2, panel=(4.8, 3.8), left=1.3)
    names = list(results)
    y = -np.arange(len(names))  # the first net on top
    acc = [np.asarray(results[q]["test_accuracy_best"]) for q in names]
    mean = np.array([a.mean() for a in acc])
    ax.errorbar(
        mean,
        y,
        xerr=[mean - [a.min() for a in acc], [a.max() for a in acc] - mean],
        fmt="o",
        ms=4,
        color=BLACK,
        label="here: best along training (mean, range)",
    )
    ax.scatter(
        [np.mean(results[q]["test_accuracy_final"]) for q in names],
        y,
        marker="o",
        facecolors="none",
        edgecolors=GREY,
        zorder=3,
        label="here: best final (mean)",
    )
    printed = [(float(paper), y[i]) for i, q in enumerate(names) if (paper := BY_QUANTITY[q].paper)]
    if printed:
        ax.scatter(*zip(*printed), marker="x", color=RED, zorder=3, label="the papers")
    ax.set_yticks(y, [q.split(":", 1)[1] for q in names])
    ax.set_xlabel("test accuracy (%)")
    ax.legend()
    set_title(ax, "best over rates, per initialization")
    for q in names:
        ax_lr.plot(
            rates,
            np.mean(results[q]["test_accuracy_best_per_rate"], axis=0),
            marker="o",
            ms=3,
            lw=1,
            label=q.split(":", 1)[1],
        )
    set_log(ax_lr, "x")
    ax_lr.set_xlabel("starting learning rate")
    ax_lr.set_ylabel("best test accuracy along training (%)")
    ax_lr.legend()
    set_title(ax_lr, "every rate (mean over initializations)")
    return fig


def top_views(networks: dict, results: dict[str, dict], device):
    """The board's labels and each network's output rounded to 0 or 1, on a 321 x 321 grid of [-1, 1]^2."""
    import torch

    from archstudy.analysis.plotting import new_figure, set_title

    from ..datasets import checkerboard

    fig, axes = new_figure(ncols=1 + len(networks), panel=(3.0, 3.0))
    x, y, _ = checkerboard.board(BLOCKS)
    side = checkerboard.GRID
    extent = (-1, 1, -1, 1)
    axes[0].imshow(y.reshape(side, side).T, origin="lower", extent=extent, cmap="coolwarm", vmin=0, vmax=1)
    set_title(axes[0], "the board (all 6561 points)")
    fine = torch.linspace(-1.0, 1.0, 321, dtype=torch.float64)
    grid = torch.cartesian_prod(fine, fine).to(device)
    for ax, (q, net) in zip(axes[1:], networks.items()):
        with torch.no_grad():
            f = net(grid).reshape(321, 321).cpu().numpy()
        ax.imshow((f > 0.5).T, origin="lower", extent=extent, cmap="coolwarm", vmin=0, vmax=1)
        final = max(results[q]["test_accuracy_final"])
        set_title(ax, f"{q.split(':', 1)[1]}: final test {final:.1f}%")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return fig


REPRODUCTION = Reproduction(
    name="han-checkerboard",
    paper=PAPER,
    source="Yu and Zhang's Tables 3 and 4 (section 3.2.1), the variability paper's Table 7 (appendix D.2)",
    summary="best test accuracy along training on the 12x12 checkerboard of HanNet 20x30, FCNets 6x100, 10x100, "
    "6x300 and the H/FC x ABS/ReLU ablation at 20x30 and 100x17 (width x depth), the papers' protocol and "
    "report",
    scales=SCALES,
    cost={
        "tiny": "15 s",
        "quick": "23 min measured: the HanNet and FCNet1, 2 initializations, 40,000 iterations",
        "paper": "about 6 h (estimated from 200 iterations of each net)",
    },
    reproduce=reproduce,
)
