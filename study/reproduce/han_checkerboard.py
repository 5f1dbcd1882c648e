"""``han-checkerboard``: Yu and Zhang, *Householder-Absolute Neural Layers*, Tables 3 and 4 (section 3.2.1), and
the variability paper (*Variability of Neural Networks and Han-Layer*, ICLR 2022 submission), Table 7 (appendix
D.2): HanNets against fully-connected nets on the 12 x 12 checkerboard, and the ablation of Householder weights
and ABS activations, run as the authors' public code runs them (``han_nets``).

The data (Yu and Zhang, section 3.1; the variability paper, B.1 and D.1): "6561 mesh points in a 12 x 12 block
checkerboard over the square [-1, 1]^2 [...] endowed with 0 or 1 labels according to their locations. We
randomly pick 25% mesh points, about 1640, as our training set"; the test set is the other 75% (4921).
``study.datasets.checkerboard`` draws the board as the authors' generator does (12 x 12 squares of 6 x 6 points
in the central 72 x 72, a zero frame around them); the training set here is its seeded training split and the
test set everything else.

The networks (``han_nets.HanArch``: layers, initialization, two outputs, loss, rate schedule and evaluation as
the authors' code). Yu and Zhang write "depth x width", counting hidden layers (Table 3: FCNet1, 6 x 100, has
51002 parameters), the variability paper width x depth (D.3: "100 x 6 for FCNet", FCNet1), so Table 7's
"100 x 17" is 17 hidden layers of width 100. The row keys keep each paper's own notation (``Net.frame``). The
ablation (Table 4, 20 x 30; Table 7, 100 x 17) swaps the layer type (H: the HanNet's structure, its dense layers
orthogonal; FC: the code's FCNet class, Kaiming) and the activation (ABS, ReLU).

The protocol (Yu and Zhang, section 3.1 and Table 2, as the code runs it): the mean squared error of the two
outputs against the label, SGD with momentum 0.9, batches of 100, 40,000 iterations, the rate divided by 5 at
1/2, 7/10 and 9/10 of them; the starting rates are the code's (``HANNET_RATES`` for the HanNet structure,
``FCNET_RATES`` for the FCNets: the papers' text names 10 rates from 0.001 to 1, ``PAPER_RATES``), each with its
own initialization, as the code builds a new net for every rate; the test accuracy evaluated every 100
iterations and "select the best result as the output": one paper run (a seed) is the best test accuracy over its
rates and evaluations, and the row is the mean over runs ("the average of 5 runs").

What is found per initialization: each trained net (a seed at one rate) either reaches the paper's level or
stalls well below it, so beside the mean the JSON and the note give the fraction of initializations whose best
reaches ``level`` (the paper's mean less two printed standard deviations, or less one point where none is
printed), overall and at each rate.

Rows ``test_accuracy:<H|FC>+<ABS|ReLU>:<frame>`` and ``test_accuracy:FCNet<k>:<frame>``, in percent as the papers
print them, compared by ``result``'s one rule: each printed value is a mean over 5 runs, an ESTIMATE, so ours
agrees within one unit of its last printed digit plus two standard errors of the difference between the
paper's mean over 5 runs and ours over n, each run spread by the paper's printed "+-" (Table 3), or, where the
paper prints no spread (Tables 4 and 7), by the standard deviation of ours (``mean_spread``). The variability
paper has no FC + ReLU run at 100 x 17: that row is a claim (``paper`` null), Table 7's conclusion that both
components are needed: below H + ABS at 100 x 17. A row whose runs never beat the constant prediction 0 by a
point (``CONSTANT_MARGIN``) cannot test its claim ("cannot tell").

Scales: ``paper`` is all of it (11 nets, 5 seeds, the code's rates); ``quick`` keeps the protocol whole (40,000
iterations) for Table 3's HanNet (the code's 4 rates, ``QUICK_SEEDS`` seeds) and FCNet1 (3 of the code's 9
rates); ``tiny`` (the test suite's) trains every net for 20 iterations at 1 rate. The JSON and the page say
what a scale cut.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .reproduction import Context, Measured, Reproduction, offer, sub_seed
from .result import Row, mean_spread

PAPER = (
    "Yu and Zhang, *Householder-Absolute Neural Layers*; the variability paper (*Variability of Neural "
    "Networks and Han-Layer*)"
)
PAPER_RATES = (0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0)  # the text (section 3.1)
HANNET_RATES = (0.025, 0.05, 0.075, 0.1)  # the authors' code, its HanNet (HouseholderNet) runs
FCNET_RATES = (0.001, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25)  # the authors' code, its FCNet runs
ITERATIONS, BATCH = 40_000, 100  # Table 2 and the code
PAPER_RUNS = 5  # "we always run 5 times starting from 5 different random initializations"
BLOCKS = 12
CONSTANT_MARGIN = 1.0  # points of test accuracy above the constant prediction 0 a row needs to test its claim
REPORTED = (
    "the best test accuracy along training (evaluated every 100 iterations) over the rates, each rate its own "
    "initialization, as the authors' code reports it; the mean over seeds"
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
    paper: str | None  # the printed test accuracy in percent; None: the paper ran no such net
    spread: str | None  # the printed "±" of Table 3; None: none printed
    source: str  # the table (and row) the number comes from

    @property
    def quantity(self) -> str:
        return f"test_accuracy:{self.name}:{self.frame}"

    @property
    def arch(self):
        """The net as the authors' code builds it: HanNets orthogonal, FCNets (its ``Net`` class) Kaiming."""
        from .han_nets import HanArch

        init = "orthogonal" if self.householder else "kaiming"
        return HanArch(self.hidden, self.width, self.householder, self.activation, init)

    @property
    def rates(self) -> tuple[float, ...]:
        """The code's starting rates for this net: its HanNet list for the HanNet structure, else its FCNet list."""
        return HANNET_RATES if self.householder else FCNET_RATES

    @property
    def level(self) -> float | None:
        """The paper's level in percent: its mean less two printed standard deviations, or less one point."""
        if self.paper is None:
            return None
        return float(self.paper) - (2.0 * float(self.spread) if self.spread is not None else 1.0)


def _ablation(
    layers: str, act: str, hidden: int, width: int, frame: str, paper: str | None, spread: str | None, source: str
) -> Net:
    return Net(f"{layers}+{act}", hidden, width, frame, layers == "H", act.lower(), paper, spread, source)


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
    Net("FCNet1", 6, 100, "6x100", False, "relu", "85.27", "0.35", "Yu and Zhang, Table 3"),
    Net("FCNet2", 10, 100, "10x100", False, "relu", "85.34", "0.38", "Yu and Zhang, Table 3"),
    Net("FCNet3", 6, 300, "6x300", False, "relu", "85.61", "0.17", "Yu and Zhang, Table 3"),
)
BY_QUANTITY = {n.quantity: n for n in NETS}
# Table 3's parameter counts (the code's two outputs): a test checks them against the nets.
TABLE3_PARAMS = {
    "test_accuracy:H+ABS:20x30": 3032,
    "test_accuracy:FCNet1:6x100": 51002,
    "test_accuracy:FCNet2:10x100": 91402,
    "test_accuracy:FCNet3:6x300": 453002,
}
CLAIM_AGAINST = {"test_accuracy:FC+ReLU:100x17": "test_accuracy:H+ABS:100x17"}


@dataclass(frozen=True)
class Settings:
    seeds: int  # paper runs per net (the paper: 5); each trains one initialization per rate
    iterations: int  # SGD steps of every run (the paper: 40,000)
    nets: tuple[str, ...]  # the quantities run
    rates: dict | None = None  # quantity -> its starting rates where a scale cuts them; None: the code's
    evaluate_every: int = 100  # iterations between evaluations of the test accuracy (the code: 100)

    def rates_of(self, net: Net) -> tuple[float, ...]:
        return tuple((self.rates or {}).get(net.quantity, net.rates))


QUICK_NETS = ("test_accuracy:H+ABS:20x30", "test_accuracy:FCNet1:6x100")  # Table 3's headline: HanNet vs FCNet1
QUICK_SEEDS = 2
SCALES = {
    # every net, 1 rate for 20 iterations, evaluated twice: checks that everything runs, nothing of the paper's
    # numbers
    "tiny": Settings(
        seeds=1,
        iterations=20,
        nets=tuple(BY_QUANTITY),
        rates={q: (0.05,) for q in BY_QUANTITY},
        evaluate_every=10,
    ),
    # the full protocol, Table 3's HanNet (the code's 4 rates) and FCNet1 (3 of the code's 9: its forward and
    # backward cost 17 times the HanNet's), QUICK_SEEDS seeds
    "quick": Settings(
        seeds=QUICK_SEEDS,
        iterations=ITERATIONS,
        nets=QUICK_NETS,
        rates={"test_accuracy:FCNet1:6x100": (0.005, 0.01, 0.025)},
    ),
    "paper": Settings(seeds=PAPER_RUNS, iterations=ITERATIONS, nets=tuple(BY_QUANTITY)),
}


# -- data ---------------------------------------------------------------------------------------------------


def checkerboard_data(seed: int):
    """The 12 x 12 board split as the papers split it: ``train`` the 1640 points of ``load_dataset("checkerboard",
    seed)``'s training split, ``test`` the other 4921; ``val`` is ``test`` (the papers have no validation split)."""
    import torch

    from ..datasets import checkerboard
    from ..datasets.dataset import Split

    data = checkerboard.load(seed, BLOCKS)
    test = Split(torch.cat([data.val.x, data.test.x]), torch.cat([data.val.y, data.test.y]))
    return SimpleNamespace(train=data.train, val=test, test=test, d_in=2, meta=data.meta)


def constant_accuracy(data) -> float:
    """The test accuracy in percent of the constant prediction 0 (the majority label)."""
    return 100.0 * float((data.test.y == 0).double().mean())


# -- the reproduction -----------------------------------------------------------------------------------------


def net_seeds(seed: int, net: Net, count: int, n_rates: int) -> tuple[int, list[list[int]]]:
    """(minibatch seed, initialization seeds [seed][rate]) of ``net``: keyed by its name, so a net draws the same
    whatever else a scale runs; every rate its own initialization, as the code builds a net per rate."""
    key = zlib.crc32(net.quantity.encode())
    return sub_seed(seed, key), [[sub_seed(seed, key, j, k) for k in range(n_rates)] for j in range(count)]


def train_net(net: Net, data, seed: int, seeds: int, rates, iterations: int, evaluate_every: int, device=None):
    """Train ``net``'s runs (``seeds`` x ``rates``, each its own initialization) on ``data`` (``.train``,
    ``.test``); the outcome (``han_nets.Trained``), the initialization seeds [seed][rate] and the seconds taken."""
    import time

    from .han_nets import train

    order_seed, init_seeds = net_seeds(seed, net, seeds, len(rates))
    t0 = time.perf_counter()
    out = train(
        net.arch,
        [s for row in init_seeds for s in row],
        [r for _ in range(seeds) for r in rates],
        data.train.x,
        data.train.y,
        data.test.x,
        data.test.y,
        iterations=iterations,
        batch=BATCH,
        order_seed=order_seed,
        evaluate_every=evaluate_every,
        device=device,
    )
    return out, init_seeds, time.perf_counter() - t0


def outcome_results(net: Net, out, init_seeds, rates, seconds: float) -> dict:
    """What the JSON keeps of one net's training (accuracies in percent): per seed (a paper run) the best over its
    rates (the row's values), and every run (a seed at a rate, its own initialization): its best along training,
    where, its final test and training accuracy; the fraction of initializations at the paper's level."""
    n = len(rates)
    grid = lambda a: [[float(v) for v in a[j * n : (j + 1) * n]] for j in range(len(init_seeds))]  # noqa: E731
    best = grid(100.0 * out.best)
    final = grid(100.0 * out.final_test)
    # a run that diverged before its first evaluation has no best (NaN): the best of the others
    reported = [float(np.nanmax(v)) if np.isfinite(v).any() else float("nan") for v in best]
    level = net.level
    flat = np.array([v for row in best for v in row])
    reached = None if level is None else int(np.sum(np.nan_to_num(flat, nan=-1.0) >= level))
    return {
        "params": net.arch.num_params,
        "seconds": seconds,
        "rates": list(rates),
        "init_seeds": init_seeds,
        "test_accuracy_best": reported,  # per seed: the reported value
        "mean": float(np.mean(reported)),
        "sd": float(np.std(reported, ddof=1)) if len(reported) > 1 else None,
        "best_lr": [rates[int(np.nanargmax(v))] if np.isfinite(v).any() else None for v in best],
        "test_accuracy_final": [float(np.nanmax(v)) for v in final],  # per seed: its best rate at the last iteration
        # every run: [seed][rate]
        "test_accuracy_best_per_rate": best,
        "best_iteration_per_rate": grid(out.best_iteration),
        "test_accuracy_final_per_rate": final,
        "train_accuracy_final_per_rate": grid(100.0 * out.final_train),
        "diverged_per_rate": [[bool(v) for v in row] for row in grid(out.diverged)],
        "level": level,
        "initializations": int(flat.size),
        "reached_level": reached,
        "reached_level_per_rate": None
        if level is None
        else [int(np.sum(np.nan_to_num(np.array(best)[:, k], nan=-1.0) >= level)) for k in range(n)],
    }


def per_init_text(q: str, r: dict) -> str:
    """One line: how many initializations of ``q`` reached the paper's level, and each one's best."""
    bests = ", ".join(f"{v:.1f}" for row in r["test_accuracy_best_per_rate"] for v in row)
    if r["level"] is None:
        return f"{q}: best per initialization {bests}"
    return (
        f"{q}: {r['reached_level']} of {r['initializations']} initializations reach {r['level']:.2f}% (the "
        f"paper's level); per rate {dict(zip(r['rates'], r['reached_level_per_rate']))} of {len(r['init_seeds'])}; "
        f"best per initialization {bests}"
    )


def rows_of(nets, results: dict[str, dict], constant: float) -> list[Row]:
    """The rows of ``nets`` (quantities) from ``results`` (``outcome_results``), the mean over seeds against the
    paper's number (or the claim below its ``CLAIM_AGAINST``); "cannot tell" where no run of the net beat the
    constant prediction's test accuracy ``constant`` (percent) by ``CONSTANT_MARGIN`` points."""
    rows = []
    for q in nets:
        net, ours = BY_QUANTITY[q], results[q]["test_accuracy_best"]
        mean = float(np.mean(ours))
        if net.paper is None:
            other = CLAIM_AGAINST[q]
            below = other in results and mean < results[other]["mean"]
            row = Row.claim(
                q,
                mean,
                below,
                f"below {other} ({net.source}; its conclusion: both Householder weights and ABS are needed); "
                "best along training",
            )
        else:
            spread = mean_spread(ours, PAPER_RUNS, None if net.spread is None else float(net.spread))
            row = Row.printed(q, net.paper, mean, estimated=True, spread=spread)
            row = dataclasses.replace(row, tolerance=f"{row.tolerance}; {net.source}; best along training")
        for who in [q] + ([CLAIM_AGAINST[q]] if q in CLAIM_AGAINST and CLAIM_AGAINST[q] in results else []):
            best_run = float(np.nanmax([v for r in results[who]["test_accuracy_best_per_rate"] for v in r] + [-1.0]))
            if best_run < constant + CONSTANT_MARGIN:
                row = row.cannot_tell(
                    f"no run of {who} beat the constant prediction 0 ({constant:.1f}%) by {CONSTANT_MARGIN:g} "
                    f"point (best {best_run:.1f}%): nothing trained at this scale"
                )
                break
        rows.append(row)
    return rows


def reproduce(ctx: Context) -> Measured:
    s: Settings = ctx.settings
    data = checkerboard_data(ctx.seed)
    constant = constant_accuracy(data)
    results: dict[str, dict] = {}
    stacks = {}
    for i, q in enumerate(s.nets):
        ctx.count(i, len(s.nets), "nets trained")
        net = BY_QUANTITY[q]
        rates = s.rates_of(net)
        ctx.say(
            f"han-checkerboard: {q} ({net.arch.num_params:,} parameters): {s.seeds} seed(s) x {len(rates)} rates, "
            f"each its own initialization, {s.iterations:,} iterations"
        )
        out, init_seeds, seconds = train_net(net, data, ctx.seed, s.seeds, rates, s.iterations, s.evaluate_every)
        results[q] = outcome_results(net, out, init_seeds, rates, seconds)
        stacks[q] = out.stack
        ctx.say(
            f"han-checkerboard: {q}: mean {results[q]['mean']:.2f}% ({seconds:.0f} s); {per_init_text(q, results[q])}"
        )
        ctx.count(i + 1, len(s.nets), "nets trained")
    rows = rows_of(s.nets, results, constant)
    cut = [q for q in BY_QUANTITY if q not in s.nets]
    figures = [
        (
            "Left: each net's reported accuracy per seed (dots: mean and range; crosses: the papers; open circles: "
            "the best final accuracy); right: every initialization's best test accuracy along training against "
            "its starting rate, the dashed lines the paper's level.",
            figure(results),
        )
    ]
    views = [q for q in ("test_accuracy:FCNet1:6x100", "test_accuracy:H+ABS:20x30") if q in stacks]
    if views:
        figures.append(
            (
                "As the paper's figure 1: the board, and the function learnt by "
                + " and ".join(views)
                + " (the run of the best final test accuracy, at its last iteration) "
                "rounded to 0 or 1, on a grid four times finer than the data's.",
                top_views({q: stacks[q] for q in views}, results),
            )
        )
    return Measured(
        rows,
        figures=figures,
        data=_data_text(data, ctx.seed),
        note=_note(s, cut, results),
        extra={
            "reported": REPORTED,
            "cut_at_this_scale": cut,
            "constant_accuracy": constant,
            "nets": {q: _describe(BY_QUANTITY[q], s) for q in s.nets},
            "protocol": {
                "loss": "mse of both outputs against the 0/1 label",
                "optimizer": "sgd, momentum 0.9, no dampening, no weight decay",
                "batch": BATCH,
                "batches": "each iteration 100 training points drawn without replacement (no epochs)",
                "iterations": s.iterations,
                "rate_divided_by_5_at": [0.5, 0.7, 0.9],
                "evaluate_every_iterations": s.evaluate_every,
            },
            "results": results,
        },
    )


def _describe(net: Net, s: Settings) -> dict:
    arch = net.arch
    kinds = [k for k, _, _ in arch.layers()]
    return {
        "hidden_layers": net.hidden,
        "width": net.width,
        "frame": net.frame,
        "outputs": arch.outputs,
        "params": arch.num_params,
        "householder_layers": kinds.count("reflection"),
        "dense_layers": kinds.count("dense"),
        "activation": arch.activation,
        "dense_weights": arch.init,
        "biases": "U(±1/√fan_in) (nn.Linear's; the Householder layers' too)",
        "householder_vectors": "unit length, uniform direction (torch's orthogonal_ of [n, 1])"
        if net.householder
        else None,
        "rates": list(s.rates_of(net)),
        "paper": net.paper,
        "paper_spread": net.spread,
        "level": net.level,
        "source": net.source,
    }


def _data_text(data, seed: int) -> str:
    src = data.meta["source"]
    return (
        f"the 12 x 12 checkerboard as the authors' generator builds it: the {src['points']:,} points of the 81 x 81 "
        f"grid on [-1, 1]^2, 12 x 12 squares of 6 x 6 points in its central 72 x 72, {src['label_1_points']:,} "
        f"labelled 1, the {src['edge_points']:,} points of the frame around them labelled 0; {len(data.train):,} "
        f"(25%) for training, drawn with seed {seed}, the other {len(data.test):,} for testing"
    )


def _note(s: Settings, cut: list[str], results: dict[str, dict]) -> str:
    scale = (
        f"This scale: {s.seeds} seed(s) per net (the paper: {PAPER_RUNS}), {s.iterations:,} iterations (the paper: "
        f"{ITERATIONS:,}), the test accuracy evaluated every {s.evaluate_every} iterations (the code: 100)"
    )
    cut_rates = [q for q in s.nets if s.rates_of(BY_QUANTITY[q]) != BY_QUANTITY[q].rates]
    if cut_rates:
        scale += "; rates cut to " + "; ".join(f"{q}: {list(s.rates_of(BY_QUANTITY[q]))}" for q in cut_rates)
    scale += "."
    if cut:
        scale += " Not run at this scale (their rows are absent): " + ", ".join(cut) + "."
    return "\n\n".join(
        [
            f"Reported: {REPORTED}. The authors' public code (its checkerboard main.py) builds a new net for every "
            "starting rate and keeps the best test accuracy over the evaluations every 100 iterations and over the "
            "rates; the papers average 5 such runs. JSON 'results' holds every initialization's best, its "
            "iteration and its final accuracy. There is no validation split. Always predicting 0 scores about "
            "60.5% (3969 of the 6561 points).",
            "Per initialization (the finding beside the mean): "
            + " | ".join(per_init_text(q, r) for q, r in results.items()),
            "Nets, initialization, outputs, loss, rates and evaluation are the authors' code's (docs/datasets.md "
            "lists where it differs from the papers' text): two outputs regressing the label (mean squared error), "
            "accuracy from their mean rounded to 0 or 1; HanNets' dense layers orthogonal with gain 1 (input and "
            "output layers included), Householder vectors of unit length, every bias U(±1/√fan_in); FCNets (and the "
            "FC ablation nets) Kaiming normal, no batch normalization; starting rates "
            f"{list(HANNET_RATES)} for the HanNet structure, {list(FCNET_RATES)} for the FCNets (the text: 10 rates "
            "from 0.001 to 1). Minibatches: 100 points drawn afresh every iteration. Float64 here (the code: "
            "float32).",
            scale,
        ]
    )


# -- figures ---------------------------------------------------------------------------------------------------


def figure(results: dict[str, dict]):
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
    set_title(ax, "best over rates, per seed")
    for q in names:
        r = results[q]
        xs = [rate for row in r["test_accuracy_best_per_rate"] for rate in r["rates"]]
        ys = [v for row in r["test_accuracy_best_per_rate"] for v in row]
        (dots,) = ax_lr.plot(xs, ys, "o", ms=4, alpha=0.7, label=q.split(":", 1)[1])
        if r["level"] is not None:
            ax_lr.axhline(r["level"], ls="--", lw=1, color=dots.get_color())
    set_log(ax_lr, "x")
    ax_lr.set_xlabel("starting learning rate")
    ax_lr.set_ylabel("best test accuracy along training (%)")
    ax_lr.legend()
    set_title(ax_lr, "every initialization")
    return fig


def top_views(stacks: dict, results: dict[str, dict]):
    """The board's labels and each net's mean output rounded to 0 or 1 (the run of the best final test accuracy),
    on a 321 x 321 grid of [-1, 1]^2."""
    import torch

    from archstudy.analysis.plotting import new_figure, set_title

    from ..datasets import checkerboard

    fig, axes = new_figure(ncols=1 + len(stacks), panel=(3.0, 3.0))
    x, y, _ = checkerboard.board(BLOCKS)
    side = checkerboard.GRID
    extent = (-1, 1, -1, 1)
    axes[0].imshow(y.reshape(side, side).T, origin="lower", extent=extent, cmap="coolwarm", vmin=0, vmax=1)
    set_title(axes[0], "the board (all 6561 points)")
    fine = torch.linspace(-1.0, 1.0, 321, dtype=torch.float64)
    grid = torch.cartesian_prod(fine, fine)
    for ax, (q, stack) in zip(axes[1:], stacks.items()):
        final = np.array([v for row in results[q]["test_accuracy_final_per_rate"] for v in row])
        run = int(np.nanargmax(final))
        with torch.no_grad():
            f = stack(grid)[run].mean(dim=1).reshape(321, 321).cpu().numpy()
        ax.imshow((f > 0.5).T, origin="lower", extent=extent, cmap="coolwarm", vmin=0, vmax=1)
        set_title(ax, f"{q.split(':', 1)[1]}: final test {final[run]:.1f}%")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return fig


REPRODUCTION = Reproduction(
    name="han-checkerboard",
    paper=PAPER,
    source="Yu and Zhang's Tables 3 and 4 (section 3.2.1), the variability paper's Table 7 (appendix D.2)",
    summary="best test accuracy along training on the authors' 12x12 checkerboard of HanNet 20x30, FCNets 6x100, "
    "10x100, 6x300 and the H/FC x ABS/ReLU ablation at 20x30 and 100x17 (width x depth), nets, initialization and "
    "protocol as the authors' code; the fraction of initializations reaching the paper's level",
    scales=SCALES,
    cost={
        "tiny": "not measured at an idle machine (about 2 min at load 12 on 2 cores, 2026-11-27)",
        "quick": "15.4 min measured: the HanNet's 8 runs and FCNet1's 6, 40,000 iterations each",
        "paper": "hours (estimated): 11 nets, 5 seeds, 4 or 9 rates each",
    },
    reproduce=reproduce,
)
offer(REPRODUCTION, order=50)
