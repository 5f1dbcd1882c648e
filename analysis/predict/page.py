"""The joint predictor's section of the HTML report (``report_prediction``, ``predict_html``)."""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd

from archstudy.sampling import SpecError

from .learners import LABELS
from .evaluation import CANNOT_FIT, Prediction, predict_study
from .persistence import FittedPredictor, score_predictor

# -- the report's section ---------------------------------------------------------------------------------------

REPORT_BOOT = 1000  # at most this many bootstrap resamples for the section (the report's --n-boot, capped)


def report_prediction(
    arch: pd.DataFrame, *, n_boot: int, seed: int, predictor: FittedPredictor | None = None
) -> Prediction | str:
    """The report's evaluation of one study's trained architectures (``predict_study``, with the scores of
    ``predictor`` fitted elsewhere in ``transfer``), or the line saying why there is none; where this study is
    too small for its own evaluation, the line still gives the transfer's score, or why it has none."""
    boot = max(1, min(n_boot, REPORT_BOOT))
    try:
        p = predict_study(arch, n_boot=boot, seed=seed)
    except SpecError as e:
        return f"No held-out evaluation: {e}." + (
            "" if predictor is None else " " + _transfer_line(predictor, arch, boot, seed)
        )
    if predictor is not None:
        p.transfer = score_predictor(predictor, arch, n_boot=boot, seed=seed)
    return p


def _transfer_line(predictor: FittedPredictor, arch: pd.DataFrame, n_boot: int, seed: int) -> str:
    """The transfer's score (``score_predictor``) in a sentence, or why it has none."""
    try:
        r = score_predictor(predictor, arch, n_boot=n_boot, seed=seed).iloc[0]
    except SpecError as e:
        return f"Transfer: the predictor fitted on another study cannot be scored here: {e}."
    return (
        f"Transfer: the predictor fitted on {r['source'] or 'another study'} ({r['label']}) ranks this study's "
        f"{int(r['n'])} trained architectures with Spearman ρ {r['spearman']:.2f} "
        f"[{r['spearman_lo']:.2f}, {r['spearman_hi']:.2f}] ({n_boot} bootstrap resamples over base architectures)."
    )


class _WithPrediction(Protocol):
    """What ``predict_html`` reads of a study's section (``study_analysis.StudyAnalysis``, whose module imports this
    one)."""

    predict: Any


def _own(scores: pd.DataFrame, learner: str, with_interval: Callable[[float, float, float], str]) -> str:
    """This study's own held-out rho of ``learner`` with its interval, or "–" where it was not evaluated."""
    if learner not in scores.index or scores.at[learner, "status"] == CANNOT_FIT:
        return "–"
    r = scores.loc[learner]
    return with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"])


def predict_html(s: _WithPrediction) -> str:
    """The report's section (``analysis.report``): the verdict, the held-out scores of every learner, the paired
    differences, the transfer from another study where asked, and how it was computed."""
    from ..html import esc, fmt, table, with_interval

    p = s.predict
    if not isinstance(p, Prediction):
        return f"<p>{esc(p or 'No held-out evaluation.')}</p>"
    rows, classes = [], []
    for _, r in p.scores.iterrows():
        label = esc(r["label"])
        if r["learner"] in ("joint", "baseline") and r["metric"]:
            label += f' <span class="muted">(most often: {esc(r["metric"])})</span>'
        if r["status"] == CANNOT_FIT:
            cells = [f"<i>{CANNOT_FIT}</i>", "–", "–", "–", "–"]
        else:
            cells = [
                with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
                with_interval(r["mae"], r["mae_lo"], r["mae_hi"], 3),
                with_interval(r["rmse"], r["rmse_lo"], r["rmse_hi"], 3),
            ]
        rows.append([label, fmt(int(r["scored_folds"])), *cells])
        classes.append("" if r["kind"] == "joint" else "baseline")
    n = int(p.scores["n"].iloc[0]) if len(p.scores) else 0
    sampled = p.of > n
    out = [
        f'<div class="box {p.level}">{esc(p.verdict)}</div>',
        *(
            [
                f'<p class="muted">Held out on a random {n:,} of the {p.of:,} trained architectures with a test '
                f"error (whole base architectures, seeded), so that its cost stays bounded: at most {p.max_rows:,} "
                "are evaluated.</p>"
            ]
            if sampled
            else []
        ),
        table(
            ["learner", "scored folds", "held-out Spearman ρ", "Kendall τ", "R²", "MAE", "RMSE"],
            rows,
            left=1,
            row_classes=classes,
        ),
    ]
    diff_rows = [
        [
            "joint model − " + ("best baseline" if r["versus"] == "baseline" else "NLC alone"),
            with_interval(r["diff"], r["lo"], r["hi"]),
        ]
        for _, r in p.versus.iterrows()
    ]
    out.append(table(["difference in held-out ρ", "paired, per fold, with its interval"], diff_rows, left=1))
    if p.ranker is not None or p.ranker_why:
        out.append(
            f'<p class="muted">A ranking of new architectures (<code>archstudy rank</code>) would use: '
            f"{esc(p.ranker or 'none')}: {esc(p.ranker_why)}.</p>"
        )
    if len(p.ranking):
        who = {"joint": "joint model", "baseline": "best baseline", "nlc": "NLC alone"}
        r_rows = [
            [
                esc(who.get(r["learner"], r["learner"])),
                fmt(int(r["k"])),
                with_interval(r["precision"], r["precision_lo"], r["precision_hi"]) + f" (chance {r['chance']:.2f})",
                with_interval(r["ndcg"], r["ndcg_lo"], r["ndcg_hi"]),
                with_interval(r["regret"], r["regret_lo"], r["regret_hi"], 4),
                with_interval(r["kendall_top"], r["kendall_top_lo"], r["kendall_top_hi"]),
            ]
            for _, r in p.ranking.iterrows()
        ]
        out.append(
            table(
                [
                    "ranking by",
                    "top K",
                    "precision of the top K",
                    "NDCG@K",
                    "regret (test error)",
                    "Kendall τ within the top K",
                ],
                r_rows,
                left=1,
            )
        )
    if len(p.curve):
        c_rows = [
            [fmt(round(r["train"])), with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"])]
            for _, r in p.curve.iterrows()
        ]
        out.append(
            table([f"training architectures ({LABELS[p.best]})", "held-out ρ (first fold seed)"], c_rows, left=0)
        )
    if len(p.transfer):
        own = p.scores.set_index("learner")
        t_rows = []
        for _, r in p.transfer.iterrows():
            t_rows.append(
                [
                    esc(r["source"] or "–"),
                    esc(r["source_dataset"] or "–"),
                    esc(r["label"]),
                    with_interval(r["spearman"], r["spearman_lo"], r["spearman_hi"]),
                    (
                        with_interval(r["spearman_new"], r["spearman_new_lo"], r["spearman_new_hi"])
                        + f"<br>{int(r['n_new'])} new, {int(r['shared'])} shared"
                        if np.isfinite(r["shared"])
                        else "– (designs not recorded)"
                    ),
                    with_interval(r["kendall"], r["kendall_lo"], r["kendall_hi"]),
                    with_interval(r["r2"], r["r2_lo"], r["r2_hi"]),
                    _own(own, r["learner"], with_interval),
                    _own(own, "nlc", with_interval),
                ]
            )
        out += [
            "<h4>Transfer: a predictor fitted on another study, scored on this one</h4>",
            table(
                [
                    "fitted on",
                    "its dataset",
                    "learner",
                    "Spearman ρ here",
                    "ρ on new designs only",
                    "Kendall τ",
                    "R²",
                    "this study's own held-out ρ (same learner)",
                    "NLC alone here (held out)",
                ],
                t_rows,
                left=3,
            ),
            '<p class="muted">Fitted on every trained architecture of the other study (or read from a saved '
            "predictor) and applied unchanged to this study's: the ranking it gives here against test error. "
            "R² compares predicted and actual error on this dataset's scale, which another dataset need not "
            "share; ρ and τ compare orders only. A design the predictor was trained on (the same spec but for its "
            "width and the data's dimensions: the same study seed draws the same designs on every dataset) is "
            "no test of transfer: ρ on new designs only leaves those out.</p>",
        ]
    names = ", ".join(esc(f.label) for f in p.features)
    out.append(
        f'<p class="muted">{"The sampled" if sampled else "Every"} trained architecture'
        f"{'s' if sampled else ''} with a test error; features: {names} (log10 where the "
        "correlation table uses log; a missing or non-finite value is left to the learner). Held out: "
        f"{p.folds}-fold grouped cross-validation over the {p.groups} base architectures (a draw and its siblings are "
        f"one group, never on both sides of a split), repeated with {p.repeats} fold seeds; each learner is scored "
        "on each held-out fold (so a fold's calibration offset cannot move its ρ); its interval adds the variance "
        "of a bootstrap of the base architectures, the held-out predictions held fixed, to the spread of the "
        "repeats' means (what other training sets change), its coverage measured on simulated studies. The joint "
        "model is ridge regression (RidgeCV) on each metric's rank u and u², or gradient-boosted trees "
        "(HistGradientBoostingRegressor), whichever scores higher in a grouped cross-validation inside the "
        "training folds alone; the best baseline is chosen the same way among the unfitted rules (each metric "
        "raw, its sign from the training folds; the NLC paper's window [1, 3]; parameter count, depth, width, "
        "FLOPs) and the descriptors alone. NLC alone is the paper's window, unfitted. A learner whose predictions "
        "were constant in a held-out fold cannot fit there and gets no ρ. Ranking measures: each fold's "
        "predictions centred, pooled, averaged over the repeats; their intervals resample the base "
        "architectures with the predictions held fixed. The box is green only when the joint model beats the "
        "best baseline; its verdicts are tests of the page's family (the findings), adjusted with every other "
        "test.</p>"
    )
    return "\n".join(out)
