"""What every figure of the report shares: the data a study's figures draw from (``FigureData``), the
declaration of a figure (``FigureSpec``, ``ComparisonSpec``) and the decorators that register one beside its
drawing function, the scatter panel with its correlation title, and how a figure says what it leaves out.

A figure is declared once, where it is drawn:

    @figure("fig4", "paper", "Figure 4: depth vs test error.")
    def fig4_depth_vs_test_error(d: FigureData) -> Figure: ...

key (the report's ``data-figure``), the report section it appears in (``analysis.report``'s sections), its
caption, what of ``FigureData`` it draws from besides the architectures (``needs``) and when it is not drawn
(``skip``: one line saying why, or None). The declarations register in ``DECLARED`` and ``DECLARED_COMPARISONS``,
which find the topic modules by importing every module of the package (``analysis.figures``: ``FIGURES``,
``COMPARISON_FIGURES``); the report draws each in its section, in the order its topic module declares them.

No figure draws an empty panel: a figure with nothing to draw raises ``NothingToDraw`` with the one line the
page shows instead, and one that leaves some of its panels out says so with ``omitted`` (the page prints the
line under the figure).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from archstudy.sampling.registry import Registry, as_defined
from archstudy.study.experiment.datasets import better_than_random
from archstudy.study.experiment.window_rule import PAPER_WINDOW

from ..columns import PREDICTOR_BY_COLUMN
from ..edf import ErrorEDF
from ..plotting import BLACK, BLUE, RED, THEME, density, set_log, set_title
from ..stats import pearson_on_scale, statistic_and_p
from scipy import stats as sps


def random_threshold(dataset: str, d_out: int | None) -> float:
    """ "Better than random" for figures 7 and 8: the dataset's declared threshold
    (``study.experiment.datasets``: the NLC paper's 80% for CIFAR10 and 50% for waveform-noise, CIFAR10's for
    the other 10-label image sets), or for an undeclared dataset 90% of the chance error 1 - 1/``d_out``."""
    return better_than_random(dataset, d_out)


class NothingToDraw(Exception):
    """Raised by a figure with no data for any of its panels; its message is the one line the page shows in
    the figure's place."""


def omitted(fig: Figure, line: str) -> None:
    """Records on ``fig`` that a panel was left out and why (the page prints each line under the figure)."""
    # a note of archstudy's own on matplotlib's Figure, which declares no such attribute
    fig.archstudy_omitted = [*getattr(fig, "archstudy_omitted", []), line]  # type: ignore[attr-defined]


def omissions(fig: Figure) -> list[str]:
    """The lines ``omitted`` recorded on ``fig``."""
    return list(getattr(fig, "archstudy_omitted", []))


@dataclass
class FigureData:
    """What one study's figures draw from: its finished architectures (``arch``) and dataset, and what the
    analysis computed of them that a figure draws (a figure declares which in its ``needs``). A study's analysis
    is one (``analysis.study_analysis.StudyAnalysis`` extends it), so the report hands it to its figures as it is; a
    test draws a figure from a ``FigureData`` of only what the figure needs. ``label``: the study's name in the
    report (its directory), which the figures of several studies use."""

    dataset: str
    arch: pd.DataFrame
    corr: pd.DataFrame = field(default_factory=pd.DataFrame)  # ``analysis.stats.correlations``
    pruning_window: tuple[float, float] = PAPER_WINDOW  # the NLC window of the pruning analysis
    edf: ErrorEDF | None = None  # ``analysis.edf`` of the dataset
    good: pd.DataFrame = field(default_factory=pd.DataFrame)  # ``analysis.good_ranges``
    window_scores: pd.DataFrame = field(default_factory=pd.DataFrame)  # ``analysis.range_predictors.range_predictors``
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)  # the ``curves`` rows of the architectures drawn
    # The joint predictor's held-out evaluation (``analysis.predict.Prediction``); anything else (None, the line
    # saying why there is none, the computation still running) draws no figure of it.
    predict: Any = None
    label: str = ""

    @property
    def sample(self) -> pd.DataFrame:
        if "variant" not in self.arch.columns:
            return self.arch
        return self.arch[self.arch["variant"] == "base"]

    @property
    def threshold(self) -> float:
        d = self.arch["d_out"].dropna() if "d_out" in self.arch.columns else pd.Series(dtype=float)
        return random_threshold(self.dataset, int(d.iloc[0]) if len(d) else None)

    @property
    def name(self) -> str:
        """The study's name in a figure of several studies: its label, else its dataset."""
        return self.label or self.dataset


def fmt_p(p: float | None) -> str:
    """A p-value for a table cell or a figure title: 3 decimals, scientific below 1e-3, a dash when missing."""
    if p is None or not np.isfinite(p):
        return "–"
    if p == 0:
        return "< 1e-300"  # below the smallest double scipy resolves
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


def correlation_title(df: pd.DataFrame, x: str, y: str, logx: bool, logy: bool = False) -> str:
    """ "r = ... (p = ...), tau = ..." of the plotted points; Pearson on the log of a log-axis quantity."""
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
    # no-break spaces around "=": a title wrapped to its panel breaks between the statistics, not inside one
    text = f"r = {r:.2f} (p {p_text if p_text.startswith('<') else '= ' + p_text}), τ = {tau:.2f}, n = {n}"
    return text.replace(" = ", "\u00a0=\u00a0").replace("p < ", "p\u00a0<\u00a0")


def label(column: str) -> str:
    extra = {
        "test_error": "test error",
        "nlc_after": "NLC after training",
        "bias_after": "bias after training",
        "lr": "selected starting learning rate",
        "lr_index": "selected run (1 = lowest rate)",
        "nlc": "NLC before training",
        "bias": "bias before training",
        "train_error": "train error",
        "error_perturbation": "error-preserving perturbation (trained)",
    }
    if column in extra:
        return extra[column]
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p else column


def _plottable(df: pd.DataFrame, x: str, y: str, logx: bool, logy: bool) -> pd.DataFrame:
    if x not in df.columns or y not in df.columns:
        return df.iloc[:0]
    ok = np.isfinite(df[x].to_numpy(np.float64)) & np.isfinite(df[y].to_numpy(np.float64))
    if logx:
        ok &= df[x].to_numpy(np.float64) > 0
    if logy:
        ok &= df[y].to_numpy(np.float64) > 0
    return df[ok]


def plottable(df: pd.DataFrame, x: str, y: str, logx: bool = False, logy: bool = False) -> int:
    """How many rows a scatter of ``y`` against ``x`` draws (finite, and positive on a log axis)."""
    return len(_plottable(df, x, y, logx, logy))


def point_kind(df: pd.DataFrame) -> pd.Series:
    """Figure 2's colouring: red = high output bias, blue = skip connections, black = the rest (a high-bias
    architecture with skips is red: the bias is what the paper singles out as ruinous)."""
    kind = pd.Series("other", index=df.index)
    kind[df["skip"].astype(str) != "none"] = "skips"
    kind[df["high_bias"].fillna(False).astype(bool)] = "high bias"
    return kind


KIND_COLORS = (("other", BLACK), ("skips", BLUE), ("high bias", RED))
JITTER_LEVELS = 8  # a numeric factor with at most this many distinct values is drawn as a strip (jittered)


def jittered(x: np.ndarray, log: bool = False) -> np.ndarray:
    """``x`` spread sideways by up to 15% of the gap between its distinct values where it has few
    (``JITTER_LEVELS``): the points of one value side by side instead of on one line (seeded: the same
    picture every time). Unchanged on a log axis or with more values."""
    levels = np.unique(x[np.isfinite(x)])
    if log or not 2 <= len(levels) <= JITTER_LEVELS:
        return x
    gap = float(np.min(np.diff(levels)))
    return x + np.random.default_rng(0).uniform(-0.15, 0.15, len(x)) * gap


def scatter(
    ax: Axes,
    df: pd.DataFrame,
    x: str,
    y: str,
    *,
    logx: bool = False,
    logy: bool = False,
    colored: bool = False,
    title: str | None = None,
    color: str = BLACK,
    size: float | None = None,
    jitter: bool = True,
) -> int:
    """One scatter panel, with the correlation of its points in the title (unless ``title`` is given); points
    drawn as their number asks (``plotting.density``: markers sized and transparent by their number, or from
    ``plotting.HEXBIN_FROM`` hexagonal bins shaded by count), above any band or line drawn on the panel;
    a numeric x of few values drawn as a strip (``jittered``). Returns the number of points drawn."""
    pts = _plottable(df, x, y, logx, logy)
    with rc_context(THEME):
        xs = pts[x].to_numpy(np.float64)
        xs = jittered(xs, logx) if jitter else xs
        ys = pts[y].to_numpy(np.float64)
        series: list[tuple[np.ndarray, np.ndarray, str, str | None]] = [(xs, ys, color, None)]
        if colored:
            kinds = point_kind(pts).to_numpy()
            series = [(xs[kinds == kind], ys[kinds == kind], c, kind) for kind, c in KIND_COLORS]
        density(ax, series, logx=logx, logy=logy, size=size)
        if logx and len(pts):
            set_log(ax, "x")
        if logy and len(pts):
            set_log(ax, "y")
        ax.set_xlabel(label(x))
        ax.set_ylabel(label(y))
        set_title(ax, title if title is not None else correlation_title(pts, x, y, logx, logy))
    return len(pts)


# -- declarations -------------------------------------------------------------------------------------------------

Draw = Callable[[FigureData], Figure]  # a figure of one study
DrawMany = Callable[[Sequence[FigureData]], Figure]  # a figure of several studies side by side


def _drawn(d: FigureData) -> str | None:
    return None


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a dataset's report section: ``key``, ``caption``, ``section`` (the key of the report
    section it appears in), ``draw`` (``FigureData`` -> ``Figure``; it raises ``NothingToDraw`` where it has
    nothing to draw), ``needs`` (the ``FigureData`` fields it draws from besides ``dataset`` and ``arch``),
    ``skip`` (``FigureData`` -> one line saying why it is not drawn for these data, or None: it is drawn) and
    ``note_skip`` (the page shows that line; False for a figure of an option that is off by default)."""

    key: str
    caption: str
    section: str
    draw: Draw
    needs: tuple[str, ...] = ()
    skip: Callable[[FigureData], str | None] = _drawn
    note_skip: bool = True

    @property
    def group(self) -> str:
        """The figure's kind: "training" (drawn from the training curves, which older studies lack), "paper"
        (the NLC paper's), "design" (the design space's sections), "more" (the rest)."""
        if "curves" in self.needs:
            return "training"
        return {"paper": "paper", "edf": "design", "good-ranges": "design"}.get(self.section, "more")


@dataclass(frozen=True)
class ComparisonSpec:
    """One figure of several studies side by side: ``key``, ``caption``, ``section`` (the key of the comparison
    section it appears in) and ``draw`` (a list of ``FigureData``, one per study -> ``Figure``)."""

    key: str
    caption: str
    draw: DrawMany
    section: str = ""


DATA_FIELDS = tuple(f.name for f in fields(FigureData) if f.name not in ("dataset", "arch", "label"))
# Every declaration by key, found by importing every module of this package (``sampling.registry``): a topic module
# declares its figures in the order the report draws those of a section.
DECLARED: Registry[FigureSpec] = Registry("figure", __package__, order=as_defined)
DECLARED_COMPARISONS: Registry[ComparisonSpec] = Registry("comparison figure", __package__, order=as_defined)


def _module(draw: Callable[..., Figure]) -> str:
    """The module that defines ``draw`` (a ``functools.partial``'s function's)."""
    return str(getattr(draw, "func", draw).__module__)


def declare_figure(spec: FigureSpec) -> FigureSpec:
    """Registers a figure (``figure`` does it for a drawing function of its own)."""
    if not set(spec.needs) <= set(DATA_FIELDS):
        raise ValueError(f"figure {spec.key!r} needs {spec.needs}: not fields of FigureData {DATA_FIELDS}")
    return DECLARED.register(spec.key, spec, module=_module(spec.draw))


def figure(
    key: str,
    section: str,
    caption: str,
    *,
    needs: tuple[str, ...] = (),
    skip: Callable[[FigureData], str | None] = _drawn,
    note_skip: bool = True,
) -> Callable[[Draw], Draw]:
    """Declares the decorated function (``FigureData`` -> ``Figure``) as the report's figure ``key``."""

    def register(draw: Draw) -> Draw:
        declare_figure(FigureSpec(key, caption, section, draw, tuple(needs), skip, note_skip))
        return draw

    return register


def comparison_figure(key: str, section: str, caption: str) -> Callable[[DrawMany], DrawMany]:
    """Declares the decorated function (list of ``FigureData`` -> ``Figure``) as a comparison figure."""

    def register(draw: DrawMany) -> DrawMany:
        DECLARED_COMPARISONS.register(key, ComparisonSpec(key, caption, draw, section), module=_module(draw))
        return draw

    return register
