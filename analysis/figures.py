"""The report's figures: the NLC paper's (figures 2, 3A-C, 4, 7, 8, 9, 10; appendix E.2 says what each
plots) and more (other metrics, proxies and baselines vs test error, sibling panels, predictor ranking,
NLC pruning), the design space (error EDFs per axis, good ranges as shaded bands, window scores in the
ranking), several studies side by side (``COMPARISON_FIGURES``, drawn from a list of ``FigureData``), and
training curves from a ``curves`` table (``fig_curves``).

Each figure function takes a ``FigureData`` (one dataset) and returns a ``matplotlib.figure.Figure``
drawn without pyplot (no display, no global state; rendering to PNG uses Agg). As in the paper, each
point is one architecture, a quantity on a log axis is correlated on its log, and each panel's title
gives the Pearson correlation, its p-value and Kendall's tau. Scatter plots show the study's random
draws (``variant == "base"``) so that the titles match the correlation table; sibling architectures
appear in the paired panels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

import seaborn as sns

from .columns import PREDICTOR_BY_COLUMN, SIBLING_LEVELS, axis_level
from .plotting import BLACK, BLUE, GREEN, GREY, RED, THEME, new_figure, set_log
from .edf import ErrorEDF
from .pruning import PAPER_WINDOW, pruning_curve
from .stats import pearson_on_scale, sibling_pairs, sign_test, statistic_and_p
from scipy import stats as sps


# "Better than random" for figures 7 and 8: the NLC paper omits architectures above 80% test error on
# CIFAR10 (10 classes) and 50% on waveform-noise (3 classes); MNIST has 10 classes like CIFAR10. Other
# datasets: 90% of the chance error 1 - 1/classes (our choice; the paper gives no rule).
RANDOM_THRESHOLD = {"cifar10": 0.8, "mnist": 0.8, "waveform-noise": 0.5}


def random_threshold(dataset: str, d_out: int | None) -> float:
    if dataset in RANDOM_THRESHOLD:
        return RANDOM_THRESHOLD[dataset]
    if not d_out or d_out < 2:
        return math.inf
    return 0.9 * (1.0 - 1.0 / d_out)


@dataclass
class FigureData:
    """What one dataset's figures draw from: every finished architecture (``arch``), the correlation
    table rows of the dataset (``corr``), the NLC window of the pruning analysis, and the design-space
    analysis (error EDFs, good ranges, window predictors)."""

    dataset: str
    arch: pd.DataFrame
    corr: pd.DataFrame = field(default_factory=pd.DataFrame)
    window: tuple[float, float] = PAPER_WINDOW
    edf: ErrorEDF | None = None  # ``analysis.edf`` of the dataset
    good: pd.DataFrame = field(default_factory=pd.DataFrame)  # ``analysis.good_ranges``
    windows: pd.DataFrame = field(default_factory=pd.DataFrame)  # ``analysis.window_predictors``
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)  # the ``curves`` rows of the architectures drawn

    @property
    def sample(self) -> pd.DataFrame:
        if "variant" not in self.arch.columns:
            return self.arch
        return self.arch[self.arch["variant"] == "base"]

    @property
    def threshold(self) -> float:
        d = self.arch["d_out"].dropna() if "d_out" in self.arch.columns else pd.Series(dtype=float)
        return random_threshold(self.dataset, int(d.iloc[0]) if len(d) else None)


def fmt_p(p) -> str:
    """A p-value for a table cell or a figure title: 3 decimals, scientific below 1e-3, a dash when missing."""
    if p is None or not np.isfinite(p):
        return "–"
    if p == 0:
        return "< 1e-300"  # below the smallest double scipy resolves
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def correlation_title(df: pd.DataFrame, x: str, y: str, logx: bool, logy: bool = False) -> str:
    """"r = ... (p = ...), tau = ..." of the plotted points; Pearson on the log of a log-axis quantity."""
    xs = df[x].to_numpy(np.float64)
    ys = df[y].to_numpy(np.float64)
    if logy:
        with np.errstate(divide="ignore", invalid="ignore"):
            ys = np.where(ys > 0, np.log10(np.where(ys > 0, ys, 1)), np.nan)
    r, p, n = pearson_on_scale(xs, ys, logx)
    ok = np.isfinite(xs) & np.isfinite(ys)
    tau, _ = statistic_and_p(sps.kendalltau, xs[ok], ys[ok])
    if not np.isfinite(r):
        return f"n = {n}: too few points for a correlation"
    p_text = fmt_p(p)
    return f"r = {r:.2f} (p {p_text if p_text.startswith('<') else '= ' + p_text}), τ = {tau:.2f}, n = {n}"


def label(column: str) -> str:
    extra = {"test_error": "test error", "nlc_after": "NLC after training", "bias_after": "bias after training",
             "lr": "selected starting learning rate", "lr_index": "selected run (1 = lowest rate)",
             "nlc": "NLC before training", "bias": "bias before training", "train_error": "train error",
             "error_perturbation": "error-preserving perturbation (trained)"}
    if column in extra:
        return extra[column]
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p else column


def _plottable(df: pd.DataFrame, x: str, y: str, logx: bool, logy: bool) -> pd.DataFrame:
    ok = np.isfinite(df[x].to_numpy(np.float64)) & np.isfinite(df[y].to_numpy(np.float64))
    if logx:
        ok &= df[x].to_numpy(np.float64) > 0
    if logy:
        ok &= df[y].to_numpy(np.float64) > 0
    return df[ok]


def point_kind(df: pd.DataFrame) -> pd.Series:
    """Figure 2's colouring: red = high output bias, blue = skip connections, black = the rest (a high-bias
    architecture with skips is red: the bias is what the paper singles out as ruinous)."""
    kind = pd.Series("other", index=df.index)
    kind[df["skip"].astype(str) != "none"] = "skips"
    kind[df["high_bias"].fillna(False).astype(bool)] = "high bias"
    return kind


def scatter(ax, df: pd.DataFrame, x: str, y: str, *, logx=False, logy=False, colored=False, title=None,
            color=BLACK, size=12) -> None:
    """One scatter panel, with the correlation of its points in the title (unless ``title`` is given)."""
    pts = _plottable(df, x, y, logx, logy)
    with rc_context(THEME):
        if len(pts):
            if colored:
                kinds = point_kind(pts)
                for kind, c in (("other", BLACK), ("skips", BLUE), ("high bias", RED)):
                    part = pts[kinds == kind]
                    if len(part):
                        ax.scatter(part[x], part[y], s=size, color=c, linewidths=0, alpha=0.8, label=kind)
                ax.legend(fontsize=7, loc="upper left", frameon=True)
            else:
                ax.scatter(pts[x], pts[y], s=size, color=color, linewidths=0, alpha=0.8)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        if logx and len(pts):
            set_log(ax, "x")
        if logy and len(pts):
            set_log(ax, "y")
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(y))
        ax.set_title(title if title is not None else correlation_title(pts, x, y, logx, logy), fontsize=8)


# -- the NLC paper's figures -----------------------------------------------------------------------------------

def fig2_nlc_vs_test_error(d: FigureData) -> Figure:
    """Figure 2: NLC before training vs test error; red = high output bias, blue = skips; inset: the
    magnified region 0.8 < NLC < 100."""
    fig, (ax,) = new_figure(panel=(6.0, 4.4))
    df = d.sample
    scatter(ax, df, "nlc", "test_error", logx=True, colored=True)
    inset = _plottable(df, "nlc", "test_error", True, False)
    inset = inset[(inset["nlc"] > 0.8) & (inset["nlc"] < 100)]
    if len(inset):
        with rc_context(THEME):
            sub = ax.inset_axes([0.62, 0.06, 0.36, 0.36])
            kinds = point_kind(inset)
            sub.scatter(inset["nlc"], inset["test_error"], s=5, linewidths=0,
                        c=kinds.map({"other": BLACK, "skips": BLUE, "high bias": RED}).to_list())
            set_log(sub, "x")
            sub.set_xlim(0.8, 100)
            sub.tick_params(labelsize=6)
            sub.set_title("0.8 < NLC < 100", fontsize=6)
    return fig


def fig3a_bias_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "bias", "test_error", logx=True)
    return fig


def fig3b_nlc_before_after(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "nlc", "nlc_after", logx=True, logy=True)
    _diagonal(ax)
    return fig


def fig3c_nlc_after_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "nlc_after", "test_error", logx=True)
    return fig


def fig1_fig3e_regions(d: FigureData) -> Figure:
    """Figure 1: NLC vs the relative diameter of linearly approximable regions (E.1; dashed: 1/NLC, the
    relation section 3 derives); figure 3E: NLC vs the maximal error-preserving perturbation of the trained
    network (E.3). Both are optional metrics: a panel says "no data" when the study did not compute it."""
    fig, axes = new_figure(ncols=2)
    scatter(axes[0], d.sample, "nlc", "lar_diameter", logx=True, logy=True)
    pts = _plottable(d.sample, "nlc", "lar_diameter", True, True)
    if len(pts):
        lo, hi = axes[0].get_xlim()
        grid = np.geomspace(lo, hi, 50)
        axes[0].plot(grid, 1.0 / grid, color=GREY, lw=0.8, ls="--", zorder=0)
    scatter(axes[1], d.sample, "nlc", "error_perturbation", logx=True, logy=True)
    return fig


def fig4_depth_vs_test_error(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, d.sample, "depth", "test_error")
    return fig


def _trained(d: FigureData) -> pd.DataFrame:
    """Figures 7 and 8 omit architectures "which did not achieve a better-than-random test error"."""
    df = d.sample
    return df[df["test_error"] < d.threshold]


def fig7_lr_index_histogram(d: FigureData) -> Figure:
    """Figure 7: how often each run (1 = lowest starting rate) was selected, better-than-random only."""
    fig, (ax,) = new_figure(panel=(6.0, 3.3))
    df = _trained(d)
    idx = df["lr_index"].dropna().astype(int).to_numpy() + 1
    n_runs = int(d.arch["n_runs"].max()) if d.arch["n_runs"].notna().any() else 40
    with rc_context(THEME):
        if len(idx):
            sns.histplot(x=idx, bins=np.arange(0.5, n_runs + 1.5), ax=ax, color=BLACK, edgecolor="white")
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        for edge in (5.5, n_runs - 4.5):  # the paper's check: never the lowest or highest five
            ax.axvline(edge, color=RED, lw=0.8, ls="--")
        ax.set_xlim(0.5, n_runs + 0.5)
        ax.set_xlabel(label("lr_index"))
        ax.set_ylabel("architectures")
        ax.set_title(f"{len(idx)} architectures with test error < {d.threshold:.2f}", fontsize=8)
    return fig


def fig8_lr_vs_nlc(d: FigureData) -> Figure:
    fig, (ax,) = new_figure()
    scatter(ax, _trained(d), "nlc", "lr", logx=True, logy=True)
    return fig


def fig9_bias(d: FigureData) -> Figure:
    """Figure 9: bias before vs after training (A), bias after training vs test error (B), NLC vs bias
    before training (C)."""
    fig, axes = new_figure(ncols=3)
    df = d.sample
    scatter(axes[0], df, "bias", "bias_after", logx=True, logy=True)
    _diagonal(axes[0])
    scatter(axes[1], df, "bias_after", "test_error", logx=True)
    scatter(axes[2], df, "nlc", "bias", logx=True, logy=True)
    return fig


def fig10_skips_side_by_side(d: FigureData) -> Figure:
    """Figure 10: figure 2 split into architectures without (left) and with (right) skip connections."""
    fig, axes = new_figure(ncols=2)
    df = d.sample
    for ax, has, name in ((axes[0], False, "without skips"), (axes[1], True, "with skips")):
        part = df[(df["skip"].astype(str) != "none") == has]
        pts = _plottable(part, "nlc", "test_error", True, False)
        scatter(ax, part, "nlc", "test_error", logx=True, colored=True,
                title=f"{name}: {correlation_title(pts, 'nlc', 'test_error', True)}")
    _share_limits(axes)
    return fig


def _diagonal(ax) -> None:
    lo, hi = ax.get_xlim()
    ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.8, ls="--", zorder=0)


def _share_limits(axes) -> None:
    have = [a for a in axes if a.collections]
    if len(have) < 2:
        return
    xs = [a.get_xlim() for a in have]
    ys = [a.get_ylim() for a in have]
    for a in have:
        a.set_xlim(min(x[0] for x in xs), max(x[1] for x in xs))
        a.set_ylim(min(y[0] for y in ys), max(y[1] for y in ys))


# -- more: other predictors vs test error ------------------------------------------------------------------------

METRIC_GRID = ("ar", "variability", "gvcs", "grad_length", "nlc_tau", "linear_approx_error")
PROXY_GRID = ("grad_norm", "snip", "synflow", "jacob_cov", "nwot")
BASELINE_GRID = ("num_params", "width", "flops")


def _grid(d: FigureData, columns: tuple[str, ...], ncols: int = 3) -> Figure:
    present = [c for c in columns if c in d.sample.columns]
    nrows = max(1, math.ceil(len(present) / ncols))
    fig, axes = new_figure(ncols=ncols, nrows=nrows)
    for ax, col in zip(axes, present):
        p = PREDICTOR_BY_COLUMN.get(col)
        scatter(ax, d.sample, col, "test_error", logx=bool(p and p.log))
        good_band(ax, d, col)
    for ax in axes[len(present):]:
        ax.set_visible(False)
    return fig


def fig_metrics(d: FigureData) -> Figure:
    """Activation ratio (the variability paper, *Variability of Neural Networks and Han-Layer*, eq. 5),
    variability (Yu and Zhang, *Householder-Absolute Neural Layers*, eq. 3) and the gradient confounders of
    the NLC paper's section 6 vs test error."""
    return _grid(d, METRIC_GRID)


def fig_proxies(d: FigureData) -> Figure:
    """Zero-cost proxies at initialization vs test error."""
    return _grid(d, PROXY_GRID)


def fig_baselines(d: FigureData) -> Figure:
    """Trivial baselines vs test error (depth is figure 4)."""
    return _grid(d, BASELINE_GRID)


def sibling_figure(d: FigureData, axis: str) -> Figure:
    """Paired panels of one sibling axis: for each pair of levels (A, B), the test error of B against A
    for the sibling pairs (below the diagonal: B is better), with the median difference and the sign
    test in the title; last panel: NLC vs test error of all architectures, coloured by level."""

    levels = SIBLING_LEVELS[axis]
    combos = [(a, b) for i, a in enumerate(levels) for b in levels[i + 1:]]
    fig, axes = new_figure(ncols=len(combos) + 1)
    for ax, (a, b) in zip(axes, combos):
        pairs = sibling_pairs(d.arch, axis, a, b)
        if not len(pairs):
            _unpaired(ax, d.sample, axis, a, b)
            continue
        t = sign_test((pairs["test_error_b"] - pairs["test_error_a"]).to_numpy(np.float64))
        title = f"{t['n_pairs']} sibling pairs: median Δ = {t['median']:.3f}, sign test p = {fmt_p(t['p_sign'])}"
        contexts = sorted(c for c in pairs["context"].unique() if c)
        if len(contexts) == 1:
            title += f"\n{contexts[0]}"
        scatter(ax, pairs, "test_error_a", "test_error_b", title=title, color=BLUE)
        if len(contexts) > 1:  # pairs that differ in more than the axis: each kind in its own colour
            with rc_context(THEME):
                for context, c in zip(contexts, sns.color_palette("deep")[1:]):
                    part = pairs[pairs["context"] == context]
                    ax.scatter(part["test_error_a"], part["test_error_b"], s=12, color=c, linewidths=0,
                               label=context)
                ax.legend(fontsize=6)
        ax.set_xlabel(f"test error, {a}")
        ax.set_ylabel(f"test error, {b}")
        lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
        hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
        ax.plot([lo, hi], [lo, hi], color=GREY, lw=0.8, ls="--", zorder=0)
    ax = axes[-1]
    df = _plottable(d.arch, "nlc", "test_error", True, False)
    level = axis_level(df, axis)
    with rc_context(THEME):
        if len(df):
            for value, c in zip(levels, sns.color_palette("deep")):
                part = df[level == value]
                if len(part):
                    ax.scatter(part["nlc"], part["test_error"], s=10, color=c, linewidths=0, alpha=0.8, label=value)
            set_log(ax, "x")
            ax.legend(fontsize=7, title=axis, title_fontsize=7)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        ax.set_xlabel(label("nlc"))
        ax.set_ylabel(label("test_error"))
        ax.set_title(f"all architectures (siblings included) by {axis}", fontsize=8)
    return fig


def _unpaired(ax, sample: pd.DataFrame, axis: str, a: str, b: str) -> None:
    """Without sibling pairs: the test error of the random draws at level a and at level b side by side,
    with the Mann-Whitney U test (unpaired, so confounded by every other axis)."""
    level = axis_level(sample, axis)
    groups = [sample.loc[(level == v) & sample["test_error"].notna(), "test_error"].to_numpy(np.float64)
              for v in (a, b)]
    with rc_context(THEME):
        if all(len(g) for g in groups):
            ax.boxplot(groups, widths=0.5, medianprops={"color": RED}, flierprops={"markersize": 2})
            ax.set_xticks([1, 2], [f"{a} (n={len(groups[0])})", f"{b} (n={len(groups[1])})"])
            p = sps.mannwhitneyu(groups[0], groups[1]).pvalue if min(map(len, groups)) > 1 else math.nan
            ax.set_title(f"no sibling pairs; random draws: median Δ = "
                         f"{np.median(groups[1]) - np.median(groups[0]):.3f}, Mann-Whitney p = {fmt_p(p)}", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no sibling pairs, and not both levels\namong the random draws", ha="center",
                    va="center", transform=ax.transAxes, color=GREY)
            ax.set_title(f"{a} vs {b}", fontsize=8)
        ax.set_ylabel("test error")


def abs_interval(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval [lo, hi] of tau mapped through |.|: [0, max(|lo|, |hi|)] when it straddles 0."""
    straddle = (lo < 0) & (hi > 0)
    a, b = np.abs(lo), np.abs(hi)
    return np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b)


def fig_ranking(d: FigureData) -> Figure:
    """Every predictor's |Kendall tau| with test error and its bootstrap interval, best first; trivial
    baselines in grey, the best baseline's level as a dashed line; the window scores of the U-shaped
    metrics (``window_rows``) in green beside them."""
    c = d.corr[np.isfinite(d.corr["kendall"])] if len(d.corr) else d.corr
    c = pd.concat([c, window_rows(d.windows)], ignore_index=True) if len(c) else c
    fig, (ax,) = new_figure(panel=(6.0, max(2.5, 0.28 * len(c) + 1.0)), left=2.2)
    with rc_context(THEME):
        if len(c):
            c = c.assign(abs_tau=c["kendall"].abs()).sort_values("abs_tau", ascending=False)
            colors = [GREY if k == "baseline" else (BLUE if k == "proxy" else (GREEN if k == "window" else BLACK))
                      for k in c["kind"]]
            y = np.arange(len(c))
            ax.barh(y, c["abs_tau"], color=colors)
            lo, hi = abs_interval(c["kendall_lo"].to_numpy(float), c["kendall_hi"].to_numpy(float))
            err = np.vstack([np.clip(c["abs_tau"] - lo, 0, None), np.clip(hi - c["abs_tau"], 0, None)])
            ax.errorbar(c["abs_tau"], y, xerr=np.nan_to_num(err), fmt="none", ecolor=RED, lw=0.8, capsize=2)
            ax.set_yticks(y, [f"{lbl} ({'+' if t >= 0 else '−'})" for lbl, t in zip(c["label"], c["kendall"])],
                          fontsize=7)
            ax.invert_yaxis()
            base = c[c["kind"] == "baseline"]
            if len(base):
                ax.axvline(base["abs_tau"].max(), color=GREY, ls="--", lw=0.8)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
        ax.set_xlabel("|Kendall τ| with test error (sign in brackets; bars: bootstrap interval)")
        ax.set_title("black: init metrics, blue: proxies, grey: trivial baselines,\ngreen: window scores "
                     "(out of sample; bars: spread over splits)", fontsize=7)
    return fig


def fig_pruning(d: FigureData) -> Figure:
    """NLC pruning trade-off: keeping only architectures with NLC in [lo, hi], as hi grows, the share of
    training time saved and the best test error lost (regret)."""
    fig, axes = new_figure(ncols=2)
    curve = pruning_curve(d.arch, lo=d.window[0])
    with rc_context(THEME):
        for ax, col, name in ((axes[0], "saved_fraction", "share of compute saved"),
                              (axes[1], "regret", "regret (best test error lost)")):
            ok = curve[np.isfinite(curve[col])]
            if len(ok):
                ax.plot(ok["hi"], ok[col], color=BLACK, marker="o", ms=3, lw=1)
                set_log(ax, "x")
                ax.axvline(d.window[1], color=RED, ls="--", lw=0.8)
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color=GREY)
            ax.set_xlabel(f"upper end of the NLC window [{d.window[0]:g}, hi]")
            ax.set_ylabel(name)
            ax.set_title(f"{name} (dashed: hi = {d.window[1]:g})", fontsize=8)
    return fig


@dataclass(frozen=True)
class FigureSpec:
    key: str
    caption: str
    draw: Callable[[FigureData], Figure]
    group: str  # "paper" | "more" | "design" | "training"


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("fig2", "Figure 2: NLC before training vs test error. Red: high output bias "
               "(bias > 1000); blue: skip connections. Inset: 0.8 < NLC < 100.", fig2_nlc_vs_test_error, "paper"),
    FigureSpec("fig3a", "Figure 3A: output bias before training vs test error.", fig3a_bias_vs_test_error, "paper"),
    FigureSpec("fig3b", "Figure 3B: NLC before vs after training (dashed: equal).", fig3b_nlc_before_after, "paper"),
    FigureSpec("fig3c", "Figure 3C: NLC after training vs test error.", fig3c_nlc_after_vs_test_error, "paper"),
    FigureSpec("fig1-3e", "Figure 1: NLC vs relative diameter of linearly approximable regions (dashed: 1/NLC); "
               "figure 3E: NLC vs maximal error-preserving perturbation of the trained network. Optional "
               "metrics (MetricOptions lar / perturbation): \"no data\" when the study did not compute them.",
               fig1_fig3e_regions, "paper"),
    FigureSpec("fig4", "Figure 4: depth vs test error.", fig4_depth_vs_test_error, "paper"),
    FigureSpec("fig7", "Figure 7: how often each training run (1 = lowest starting learning rate) gave the "
               "lowest validation error; architectures with a random test error omitted. Dashed: the five "
               "lowest and highest runs, which should never be chosen.", fig7_lr_index_histogram, "paper"),
    FigureSpec("fig8", "Figure 8: starting learning rate of the selected run vs NLC; architectures with a "
               "random test error omitted.", fig8_lr_vs_nlc, "paper"),
    FigureSpec("fig9", "Figure 9: bias before vs after training (A), bias after training vs test error (B), "
               "NLC vs bias before training (C).", fig9_bias, "paper"),
    FigureSpec("fig10", "Figure 10: figure 2 for architectures without (left) and with (right) skip "
               "connections; red: high output bias.", fig10_skips_side_by_side, "paper"),
    FigureSpec("ranking", "Predictor ranking by |Kendall τ| with test error, with bootstrap intervals.",
               fig_ranking, "more"),
    FigureSpec("metrics", "Activation ratio, variability, gradient confounders and the activation's NLC_τ(1) "
               "and linear-approximation error vs test error (shaded: good range, black line: its best value).",
               fig_metrics, "more"),
    FigureSpec("proxies", "Zero-cost proxies at initialization vs test error (shaded: good range).", fig_proxies,
               "more"),
    FigureSpec("baselines", "Trivial baselines vs test error (shaded: good range).", fig_baselines, "more"),
    FigureSpec("weights", "Householder vs dense: paired siblings and all architectures.",
               lambda d: sibling_figure(d, "weights"), "more"),
    FigureSpec("param", "GmP vs SP: paired siblings (labelled by what input mean normalization does in the pair: "
               "it switches with GmP under imn = auto) and all architectures.",
               lambda d: sibling_figure(d, "param"), "more"),
    FigureSpec("imn", "Input mean normalization off vs on (Chen and Ge, eq. 16): paired siblings and all "
               "architectures.", lambda d: sibling_figure(d, "imn"), "more"),
    FigureSpec("norm", "Normalization kinds: paired siblings and all architectures.",
               lambda d: sibling_figure(d, "norm"), "more"),
    FigureSpec("skip", "Skips vs no skips: paired siblings and all architectures.",
               lambda d: sibling_figure(d, "skip"), "more"),
    FigureSpec("curves", "Training curves of the selected run of the best and of typical architectures (pycls's "
               "plot_curves): the monitored error, the mean training loss and the learning rate per epoch.",
               lambda d: fig_curves(d.curves, d.arch), "training"),
    FigureSpec("nlc-trajectory", "The NLC during training of the same runs (metrics: nlc_trajectory), with the "
               "NLC paper's window [1, 3] shaded.", lambda d: fig_nlc_trajectory(d.curves, d.arch), "training"),
    FigureSpec("pruning", "NLC-guided pruning: compute saved and best test error lost as the NLC window widens.",
               fig_pruning, "more"),
    FigureSpec("edf", "Error EDFs per level of every sampled axis (Radosavovic et al. 2019, section 3): the share "
               "of architectures with test error at most e. Legend: level, n | min | mean. Dashed: the "
               "complexity-normalized EDF, where the levels differ in size.", lambda d: fig_edf(d), "design"),
    FigureSpec("good-ranges", "Good ranges (pycls's empirical bootstrap) of the NLC, bias, depth and the numeric "
               "axes against test error; shaded: where the best architectures of 25% subsamples fall (2.5th to 97.5th "
               "percentile), black line: their median; red dashes on the NLC: the NLC paper's window [1, 3]. The "
               "other factors' bands are on their own scatters below (more predictors).", lambda d: fig_good_ranges(d),
               "design"),
)


# -- the design space: error EDFs, good ranges, window scores, several studies, training curves ------------------

def window_rows(windows: pd.DataFrame) -> pd.DataFrame:
    """The window scores that join the predictor ranking: those of the U-shaped metrics (and always the
    NLC's), as rows shaped like the correlation table's (``kendall`` = the mean out-of-sample tau, its
    interval the spread over the splits), of kind "window"."""
    if not len(windows):
        return pd.DataFrame()
    w = windows[(windows["u_shaped"] | (windows["metric"] == "nlc")) & np.isfinite(windows["tau"])]
    return pd.DataFrame({"predictor": w["metric"] + ":window", "label": "window: " + w["label"],
                         "kind": "window", "kendall": w["tau"], "kendall_lo": w["tau_lo"],
                         "kendall_hi": w["tau_hi"]})


def _edf_panel(ax, e: ErrorEDF, dataset: str, axis: str, *, normalized: bool = True, title: str | None = None,
               colors: dict | None = None, legend: str = "stats") -> None:
    """One axis' EDFs: a step line per level; dashed, the normalized EDF where the axis has more than one
    shared complexity bin (the levels differ in size). ``colors``: level -> colour (default: in order);
    ``legend``: "stats" (level: n | min | mean), "levels" (the names) or "none"."""
    lv = e.levels[(e.levels["dataset"] == dataset) & (e.levels["axis"] == axis)]
    cv = e.curves[(e.curves["dataset"] == dataset) & (e.curves["axis"] == axis)]
    ks = e.ks[(e.ks["dataset"] == dataset) & (e.ks["axis"] == axis)]
    differ = normalized and len(lv) and int(lv["bins"].max()) > 1
    colors = colors or dict(zip(lv["level"], sns.color_palette("deep", len(lv))))
    with rc_context(THEME):
        for _, row in lv.iterrows():
            c = cv[cv["level"] == row["level"]].sort_values("error")
            x = np.concatenate([[c["error"].iloc[0]], c["error"].to_numpy()])
            text = (f"{row['level']}: {int(row['n'])} | {row['min']:.3f} | {row['mean']:.3f}" if legend == "stats"
                    else row["level"])
            ax.plot(x, np.concatenate([[0.0], c["cdf"].to_numpy()]), drawstyle="steps-post",
                    color=colors[row["level"]], lw=1.2, label=text)
            if differ and np.isfinite(c["normalized_cdf"]).any():
                ax.plot(x, np.concatenate([[0.0], c["normalized_cdf"].to_numpy()]), drawstyle="steps-post",
                        color=colors[row["level"]], lw=0.9, ls="--")
        if legend != "none":
            ax.legend(fontsize=6, title="n | min | mean" if legend == "stats" else None, title_fontsize=6,
                      loc="lower right")
        ax.set_xlabel("test error")
        ax.set_ylabel("cumulative share")
        ax.set_ylim(0, 1.02)
        if title is None:
            top = ks.loc[ks["ks"].idxmax()] if len(ks) else None
            title = axis if top is None else (f"{axis}: largest KS {top['ks']:.2f} ({top['a']} vs {top['b']}, "
                                              f"p = {fmt_p(top['p'])})")
        ax.set_title(title, fontsize=7)


def _edf_axes(e: ErrorEDF | None, dataset: str) -> list[str]:
    if e is None or not len(e.levels):
        return []
    return list(dict.fromkeys(e.levels.loc[e.levels["dataset"] == dataset, "axis"]))


def fig_edf(d: FigureData) -> Figure:
    """Error EDFs per level of every sampled axis with at least two levels (``analysis.edf``)."""
    axes_names = _edf_axes(d.edf, d.dataset)
    ncols = 3
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(axes_names) / ncols)))
    for ax, axis in zip(axes, axes_names):
        _edf_panel(ax, d.edf, d.dataset, axis)
    if not axes_names:
        axes[0].text(0.5, 0.5, "no axis has two levels among the random draws", ha="center", va="center",
                     transform=axes[0].transAxes, color=GREY)
    for ax in axes[max(1, len(axes_names)):]:
        ax.set_visible(False)
    return fig


def _band(ax, low: float, best: float, high: float, log: bool) -> None:
    if np.isfinite(low) and np.isfinite(high):
        ax.axvspan(low, high, color=BLUE, alpha=0.15, lw=0, zorder=0)
    if np.isfinite(best):
        ax.axvline(best, color=BLACK, lw=0.9, zorder=1)


def _ranged(good: pd.DataFrame, dataset: str | None = None) -> pd.DataFrame:
    g = good if dataset is None or not len(good) else good[good["dataset"] == dataset]
    return g[(g["n"] >= 3) & np.isfinite(g["low"]) & (g["min"] < g["max"])] if len(g) else g


def good_band(ax, d: FigureData, column: str) -> None:
    """The good range of ``column`` (``analysis.good_ranges``) shaded on a factor-vs-error scatter, its best
    value as a black line (pycls's ``plot_values``), the range in the title; on the NLC, the paper's
    window [1, 3] dashed in red."""
    g = _ranged(d.good, d.dataset)
    r = g[g["factor"] == column] if len(g) else g
    if not len(r):
        return
    r = r.iloc[0]
    _band(ax, r["low"], r["best"], r["high"], bool(r["log"]))
    if column == "nlc":
        for edge in PAPER_WINDOW:
            ax.axvline(edge, color=RED, lw=0.8, ls="--", zorder=1)
    ax.set_title(f"{ax.get_title()}\ngood range [{r['low']:.3g}, {r['high']:.3g}], best {r['best']:.3g}"
                 + (" (U-shaped)" if r["u_shaped"] else ""), fontsize=7)


def fig_good_ranges(d: FigureData) -> Figure:
    """The factors with a good range (``analysis.good_ranges``) that no other scatter of the report shows
    (the NLC, bias, depth, the numeric axes: the metric, proxy and baseline grids carry their own bands)
    against test error, the random draws as points, the good range shaded (``good_band``)."""
    g = _ranged(d.good, d.dataset)
    g = g[~g["factor"].isin(METRIC_GRID + PROXY_GRID + BASELINE_GRID)] if len(g) else g
    ncols = 4
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(g) / ncols)), panel=(4.2, 3.5))
    for ax, (_, r) in zip(axes, g.iterrows()):
        scatter(ax, d.sample, r["factor"], "test_error", logx=bool(r["log"]), size=8, title=label(r["factor"]))
        good_band(ax, d, r["factor"])
    if not len(g):
        axes[0].text(0.5, 0.5, "no factor has a good range", ha="center", va="center", transform=axes[0].transAxes,
                     color=GREY)
    for ax in axes[max(1, len(g)):]:
        ax.set_visible(False)
    return fig


# Several studies (one per dataset) side by side, as pycls compares sweeps (``plot_edf``, ``plot_trends``).

def fig_edf_compare(datas: list[FigureData]) -> Figure:
    """Rows: the axes with two levels in at least one study; columns: the studies; each panel the axis'
    error EDFs in that study (plain), one colour per level across the row, the x range shared along it
    (the levels' n | min | mean are in each study's own EDF figure)."""
    names = list(dict.fromkeys(a for d in datas for a in _edf_axes(d.edf, d.dataset)))
    fig, axes = new_figure(ncols=len(datas), nrows=max(1, len(names)), panel=(4.2, 3.0))
    grid = np.asarray(axes).reshape(max(1, len(names)), len(datas))
    for i, axis in enumerate(names):
        levels = list(dict.fromkeys(lv for d in datas if d.edf is not None
                                    for lv in d.edf.levels.loc[(d.edf.levels["dataset"] == d.dataset)
                                                               & (d.edf.levels["axis"] == axis), "level"]))
        colors = dict(zip(levels, sns.color_palette("deep", len(levels))))
        for j, d in enumerate(datas):
            ax = grid[i, j]
            if axis in _edf_axes(d.edf, d.dataset):
                _edf_panel(ax, d.edf, d.dataset, axis, normalized=False, title=f"{d.dataset}: {axis}", colors=colors,
                           legend="levels" if j == 0 else "none")
            else:
                ax.text(0.5, 0.5, f"{axis}: fewer than two levels", ha="center", va="center",
                        transform=ax.transAxes, color=GREY)
                ax.set_title(f"{d.dataset}: {axis}", fontsize=7)
        lo = min(ax.get_xlim()[0] for ax in grid[i])
        hi = max(ax.get_xlim()[1] for ax in grid[i])
        for ax in grid[i]:
            ax.set_xlim(lo, hi)
    if not names:
        grid[0, 0].text(0.5, 0.5, "no axis has two levels", ha="center", va="center", transform=grid[0, 0].transAxes,
                        color=GREY)
    return fig


def fig_good_ranges_compare(datas: list[FigureData]) -> Figure:
    """Per factor, one column per study (pycls's ``plot_trends``): the factor's observed range (light band),
    its good range (darker band) and the best value (points), so where the good architectures lie can be
    compared across datasets."""
    ranged = [_ranged(d.good, d.dataset).set_index("factor") for d in datas]
    factors = list(dict.fromkeys(f for g in ranged for f in g.index))
    ncols = 4
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(factors) / ncols)))
    xs = np.arange(len(datas))
    with rc_context(THEME):
        for ax, factor in zip(axes, factors):
            rows = [g.loc[factor] if factor in g.index else None for g in ranged]
            get = lambda key: np.array([r[key] if r is not None else np.nan for r in rows], dtype=float)  # noqa: E731
            ax.fill_between(xs, get("min"), get("max"), color=GREY, alpha=0.15, lw=0, step="mid")
            ax.fill_between(xs, get("low"), get("high"), color=BLUE, alpha=0.3, lw=0, step="mid")
            ax.plot(xs, get("best"), "o-", color=BLACK, ms=4, lw=0.8)
            if factor == "nlc":
                for edge in PAPER_WINDOW:
                    ax.axhline(edge, color=RED, lw=0.8, ls="--")
            log = any(r is not None and bool(r["log"]) for r in rows)
            if log and np.nanmin(get("min")) > 0:
                set_log(ax, "y")
            ax.set_xticks(xs, [d.dataset for d in datas], fontsize=7)
            ax.set_xlim(-0.5, len(datas) - 0.5)
            ax.set_title(label(factor), fontsize=8)
    if not factors:
        axes[0].text(0.5, 0.5, "no factor has a good range", ha="center", va="center", transform=axes[0].transAxes,
                     color=GREY)
    for ax in axes[max(1, len(factors)):]:
        ax.set_visible(False)
    return fig


@dataclass(frozen=True)
class ComparisonSpec:
    key: str
    caption: str
    draw: Callable[[list[FigureData]], Figure]


COMPARISON_FIGURES: tuple[ComparisonSpec, ...] = (
    ComparisonSpec("compare-edf", "Error EDFs of the same axes side by side across studies (one column per study).",
                   fig_edf_compare),
    ComparisonSpec("compare-good-ranges", "Good ranges across studies: per factor, the observed range (light), the "
                   "good range (dark) and the best value (points) of each study; on the NLC, the paper's [1, 3] "
                   "dashed in red.", fig_good_ranges_compare),
)


# Training curves (pycls's ``plot_curves``), drawn from a ``curves`` table: one row per architecture, run and
# epoch with the columns below. The trainer does not write that table yet; this draws any DataFrame of that
# shape, and the report will add it when studies carry one.
CURVE_COLUMNS = ("arch_id", "lr_index", "epoch", "train_loss", "monitored_error", "lr")
_SPLIT_LABEL = {"val": "validation error", "train": "training error"}


def curve_architectures(arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3,
                        target: str = "test_error") -> list[tuple[str, str]]:
    """(arch_id, why) of the ``n_best`` lowest-``target`` architectures and the ``n_typical`` closest to the
    median ``target`` (the others), best first."""
    a = arch[np.isfinite(arch[target].to_numpy(np.float64))].sort_values([target, "arch_id"], kind="stable")
    best = a.head(n_best)
    rest = a.iloc[n_best:]
    typical = rest.iloc[np.argsort(np.abs(rest[target].to_numpy(np.float64) - a[target].median()),
                                   kind="stable")[:n_typical]] if len(rest) else rest
    return ([(i, f"best #{k + 1}") for k, i in enumerate(best["arch_id"])]
            + [(i, "typical") for i in typical.sort_values(target, kind="stable")["arch_id"]])


def selected_curves(curves: pd.DataFrame, arch: pd.DataFrame, arch_id: str) -> pd.DataFrame:
    """The curve of ``arch_id``'s selected run (its ``lr_index``), by epoch."""
    selected = arch.set_index("arch_id")["lr_index"]
    run = curves[(curves["arch_id"] == arch_id) & (curves["lr_index"] == selected.get(arch_id))]
    return run.sort_values("epoch")


def fig_curves(curves: pd.DataFrame, arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3) -> Figure:
    """The selected run's training curves of the best and of typical architectures (``curve_architectures``; the
    ``curves`` table, docs/results.md), one panel each, as pycls's ``plot_curves``: the monitored error (solid;
    the validation error, or the training error under the long protocol; absent under a steps schedule) and
    the mean training loss (dashed) per epoch, the learning rate as steps on a log axis at the right (its
    divisions show where the patience ran out), the best monitored error as a dotted line."""
    missing = [c for c in CURVE_COLUMNS if c not in curves.columns]
    if missing:
        raise ValueError(f"fig_curves: the curves table lacks {', '.join(missing)} (needs {', '.join(CURVE_COLUMNS)})")
    chosen = curve_architectures(arch, n_best, n_typical)
    ncols = 3
    fig, axes = new_figure(ncols=ncols, nrows=max(1, math.ceil(len(chosen) / ncols)))
    for ax, (arch_id, why) in zip(axes, chosen):
        run = selected_curves(curves, arch, arch_id)
        split = str(run["monitored"].iloc[0]) if len(run) and "monitored" in run.columns else "val"
        with rc_context(THEME):
            if len(run):
                if np.isfinite(run["monitored_error"].to_numpy(np.float64)).any():
                    ax.plot(run["epoch"], run["monitored_error"], color=BLUE, lw=1.2,
                            label=_SPLIT_LABEL.get(split, split))
                    ax.axhline(run["monitored_error"].min(), color=BLUE, lw=0.7, ls=":")
                ax.plot(run["epoch"], run["train_loss"], color=BLACK, lw=0.9, ls="--", label="training loss")
                lr_ax = ax.twinx()
                lr_ax.plot(run["epoch"], run["lr"], color=RED, lw=0.8, drawstyle="steps-post", label="learning rate")
                lr_ax.set_yscale("log")
                lr_ax.set_ylabel("learning rate", color=RED, fontsize=7)
                lr_ax.tick_params(labelsize=6, colors=RED)
                lr_ax.grid(False)
                ax.legend(fontsize=6, loc="upper right")
            else:
                ax.text(0.5, 0.5, "no curve of the selected run", ha="center", va="center", transform=ax.transAxes,
                        color=GREY)
            err = arch.loc[arch["arch_id"] == arch_id, "test_error"]
            ax.set_title(f"{why}: {arch_id} (test error {float(err.iloc[0]):.3f})", fontsize=7)
            ax.set_xlabel("epoch")
            ax.set_ylabel("error / loss")
    for ax in axes[max(1, len(chosen)):]:
        ax.set_visible(False)
    return fig


def fig_nlc_trajectory(curves: pd.DataFrame, arch: pd.DataFrame, n_best: int = 3, n_typical: int = 3) -> Figure:
    """The NLC during training of the selected run of the best and of typical architectures: the points of the
    ``nlc`` column (the epochs of ``metrics: {nlc_trajectory: [...]}``; epoch 0 is the initialization) on a log
    axis, one line per architecture, with the NLC paper's window [1, 3] shaded."""
    chosen = curve_architectures(arch, n_best, n_typical)
    fig, axes = new_figure(ncols=1)
    ax = axes[0]
    with rc_context(THEME):
        ax.axhspan(*PAPER_WINDOW, color=GREEN, alpha=0.12, lw=0, label="the NLC paper's [1, 3]")
        drawn = 0
        for (arch_id, why), c in zip(chosen, sns.color_palette("deep", len(chosen))):
            run = selected_curves(curves, arch, arch_id)
            run = run[np.isfinite(run["nlc"].to_numpy(np.float64)) & (run["nlc"] > 0)] if len(run) else run
            if len(run):
                err = float(arch.loc[arch["arch_id"] == arch_id, "test_error"].iloc[0])
                ax.plot(run["epoch"], run["nlc"], marker="o", ms=3, lw=1.0, color=c,
                        label=f"{why}: {arch_id} ({err:.3f})")
                drawn += 1
        if drawn:
            ax.set_yscale("log")
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "no NLC trajectory recorded", ha="center", va="center", transform=ax.transAxes,
                    color=GREY)
        ax.set_xlabel("epoch")
        ax.set_ylabel("NLC of the selected run")
        ax.set_title("NLC during training (legend: test error)", fontsize=8)
    return fig
