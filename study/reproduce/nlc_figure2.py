"""``nlc-figure2``: Philipp and Carbonell, *The Nonlinearity Coefficient*, figures 2 and 3A (section 4): a real
study of the paper's architecture space on waveform-noise (``run_study``), then the figures' claims checked.

What the paper claims (section 4, "The NLC predicts test error" and "Further predictors"): "the test error is
highly related to the NLC"; "one must start with an NLC in a narrow range, approximately between 1 and 3, to
achieve optimal test error, and the further one deviates from that range, the worse the achievable test error
becomes"; the architectures with a very biased output (bias > 1000) "all [...] attain a high test error, even
if their NLC is small". The figures print correlations in their panels only, so every row is a claim
(``paper`` null):

* ``spearman:nlc_vs_test_error``: Spearman's rho of initial NLC and test error over the nets without high
  bias: positive and significant (two-sided p < 0.05);
* ``median_test_error:nlc_in_1_3``: the median test error of the nets (without high bias) whose initial NLC
  lies in [1, 3] is the lowest of the three NLC groups [1, 3], (3, 100] and above 100;
* ``median_test_error:nlc_above_100``: that of the nets above 100 is the highest of the three;
* ``median_test_error:high_bias``: every high-bias net is at a random test error, i.e. at or above figure 7's
  "better-than-random" threshold of waveform-noise (50%: ``analysis.figures.random_threshold``).

Scales: ``paper`` is the paper's study (250 architectures of the ``paper`` space at 1,000,000 parameters, the
E.2 protocol: a GPU job); ``quick`` (10-15 minutes on an idle 2-core machine, estimated from a 120-architecture
study's 53 minutes) and ``tiny`` (the test suite's) draw fewer architectures at a small budget (``quick``: 40 at
20,000 parameters) and train them with the ``quick`` protocol (8 starting rates) capped at 30 epochs (``tiny``:
2 rates, 2 epochs). The study stays in ``OUT/nlc-figure2-<scale>-seed<N>/`` for ``archstudy report``; running
the reproduction again resumes it (a finished study costs nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .reproduction import Context, Measured, Reproduction, offer
from .result import Row
from .nlc_table1 import PAPER

DATASET = "waveform-noise"
WINDOW = (1.0, 3.0)  # "approximately between 1 and 3"
FAR = 100.0  # the far group: initial NLC above this


@dataclass(frozen=True)
class Settings:
    architectures: int
    param_budget: int
    protocol: dict = field(default_factory=lambda: {"preset": "quick"})
    preset: str = "paper"


SCALES = {
    "tiny": Settings(architectures=8, param_budget=3000, protocol={"preset": "quick", "num_lrs": 2, "max_epochs": 2}),
    # 40: about 1 net in 25 of the paper's space has a high output bias, so fewer draws often hold none
    "quick": Settings(architectures=40, param_budget=20_000, protocol={"preset": "quick", "max_epochs": 30}),
    "paper": Settings(architectures=250, param_budget=1_000_000, protocol={"preset": "paper"}),
}


def study_dir(ctx: Context):
    return ctx.out / f"nlc-figure2-{ctx.scale}-seed{ctx.seed}"


def groups(arch):
    """The random draws split as the claims need: (without high bias, high bias), and the NLC groups of the former."""
    base = arch[arch["variant"] == "base"] if "variant" in arch.columns else arch
    high = base["high_bias"].fillna(False).astype(bool)
    low_bias, biased = base[~high], base[high]
    nlc = low_bias["nlc"]
    by_nlc = {
        "[1, 3]": low_bias[(nlc >= WINDOW[0]) & (nlc <= WINDOW[1])],
        "(3, 100]": low_bias[(nlc > WINDOW[1]) & (nlc <= FAR)],
        "above 100": low_bias[nlc > FAR],
    }
    return low_bias, biased, by_nlc


def claims(arch, threshold: float) -> tuple[list[Row], dict]:
    """The four rows from a study's architectures table (``analysis.load_results(...).architectures``). They
    cannot tell when no net without high bias trained below the random ``threshold`` (then every claim would rest
    on untrained nets), and the high-bias row cannot when no high-bias net was drawn."""
    from scipy import stats

    low_bias, biased, by_nlc = groups(arch)
    ok_pts = low_bias[np.isfinite(low_bias["nlc"]) & np.isfinite(low_bias["test_error"])]
    if len(ok_pts) >= 3:
        rho, p = stats.spearmanr(ok_pts["nlc"], ok_pts["test_error"])
    else:
        rho, p = float("nan"), float("nan")
    medians = {k: float(g["test_error"].median()) if len(g) else float("nan") for k, g in by_nlc.items()}
    known = {k: v for k, v in medians.items() if np.isfinite(v)}
    inner, far = medians["[1, 3]"], medians["above 100"]
    rows = [
        Row.claim(
            "spearman:nlc_vs_test_error",
            rho,
            bool(rho > 0 and p < 0.05),
            "positive and significant (p < 0.05): test error rises with the initial NLC; high-bias nets left out",
        ),
        Row.claim(
            "median_test_error:nlc_in_1_3",
            inner if len(by_nlc["[1, 3]"]) else None,
            np.isfinite(inner) and len(known) >= 2 and inner == min(known.values()),
            "lowest median of the NLC groups [1, 3], (3, 100], above 100 (high-bias nets left out): optimal "
            "test error needs an initial NLC of about 1 to 3",
        ),
        Row.claim(
            "median_test_error:nlc_above_100",
            far if len(by_nlc["above 100"]) else None,
            np.isfinite(far) and len(known) >= 2 and far == max(known.values()),
            "highest median of the three NLC groups: the further from [1, 3], the worse",
        ),
        Row.claim(
            "median_test_error:high_bias",
            float(biased["test_error"].median()) if len(biased) else None,
            len(biased) > 0 and bool((biased["test_error"] >= threshold).all()),
            f"every high-bias net (bias > 1000) at a random test error, >= {threshold:g} (figure 7's "
            "better-than-random threshold for waveform-noise)",
        ),
    ]
    if not (ok_pts["test_error"] < threshold).any():  # every claim would hold or fail on untrained nets alone
        why = f"no net without high bias reached a test error below {threshold:g} (random): none trained here"
        rows = [r.cannot_tell(why) for r in rows]
    elif not len(biased):
        rows[3] = rows[3].cannot_tell("no high-bias net among those drawn")
    facts = {
        "spearman_p": p,
        "n_without_high_bias": len(low_bias),
        "n_high_bias": len(biased),
        "group_sizes": {k: len(g) for k, g in by_nlc.items()},
        "group_medians": medians,
        "high_bias_test_errors": [float(v) for v in biased["test_error"]],
        "random_threshold": threshold,
    }
    return rows, facts


def reproduce(ctx: Context) -> Measured:
    from archstudy.analysis import load_results
    from archstudy.analysis.figures import (
        FigureData,
        fig2_nlc_vs_test_error,
        fig3a_bias_vs_test_error,
        random_threshold,
    )

    from ..execution.driver import run_study

    s: Settings = ctx.settings
    where = study_dir(ctx)
    config = {
        "dataset": DATASET,
        "architectures": s.architectures,
        "param_budget": s.param_budget,
        "preset": s.preset,
        "protocol": s.protocol,
        "seed": ctx.seed,
    }
    ctx.say(
        f"nlc-figure2: the study in {where} ({s.architectures} architectures of the '{s.preset}' space, "
        f"{s.param_budget:,} parameters)"
    )
    gpus = 1.0 if ctx.device.type == "cuda" else 0.0
    outcome = run_study(config, where, progress=ctx.progress, gpus_per_arch=gpus)
    results = load_results(where, runs=False)
    arch = results.architectures
    threshold = random_threshold(DATASET, 3)
    rows, facts = claims(arch, threshold)
    data = FigureData(DATASET, arch)
    note = (
        f"A study of {len(arch)} architectures drawn from the paper's space (appendix C) at "
        f"{s.param_budget:,} trainable parameters on waveform-noise, protocol {s.protocol}. The paper's study: "
        "250 architectures at 1,000,000 parameters, the E.2 protocol. Figure 2's NLC groups: [1, 3] "
        f"{facts['group_sizes']['[1, 3]']}, (3, 100] {facts['group_sizes']['(3, 100]']}, above 100 "
        f"{facts['group_sizes']['above 100']} nets; high bias {facts['n_high_bias']}."
    )
    if not outcome.complete:
        note += (
            f" The study is not complete ({outcome.total - outcome.finished_before - outcome.finished} "
            "architectures failed): the rows cover the finished ones."
        )
    return Measured(
        rows,
        figures=[
            (
                "Figure 2: NLC before training vs test error (red: high output bias, blue: skips).",
                fig2_nlc_vs_test_error(data),
            ),
            ("Figure 3A: output bias before training vs test error.", fig3a_bias_vs_test_error(data)),
        ],
        data=f"waveform-noise (Breiman's generator, dataset seed 0); the study: {where}",
        note=note,
        extra={"study": str(where), "architectures": len(arch), **facts},
    )


REPRODUCTION = Reproduction(
    name="nlc-figure2",
    paper=PAPER,
    source="figures 2 and 3A (section 4)",
    summary="a study of the paper's architecture space on waveform-noise, then figure 2's claims (NLC vs test error)",
    scales=SCALES,
    cost={
        "tiny": "40 s",
        "quick": "7.6 min measured (alone: its study takes both cores)",
        "paper": "days on 2 cores (estimated): a GPU job",
    },
    reproduce=reproduce,
    whole_machine=True,
)  # the study's workers take every core
offer(REPRODUCTION, order=30)
