"""The drawing pieces every figure of archstudy shares (the report's, the reproductions'): one theme (no pyplot:
no display, no global state; a ``matplotlib.figure.Figure`` rendered with Agg), figures laid out on fixed
margins, the colours, points that stay visible and transparent where they overlap, and from ``HEXBIN_FROM``
points on a panel hexagonal bins shaded by count instead (``density``: a study of 100,000 architectures is a
picture of where they lie, not an ink blot), log axes that keep a scale, and rendering to PNG, SVG or PDF.

Sizes are those the reader sees. The report shows a figure at its size in inches times ``CSS_DPI`` CSS pixels
(96, the CSS inch), so a font of ``MIN_PT`` points in the figure is ``MIN_PT`` points on the page, and it
encodes ``PIXEL_RATIO`` PNG pixels per CSS pixel (sharp on high-density screens). No figure is wider than
``MAX_WIDTH`` inches, which fits the page's column at a 1280-pixel window, so the page never scales it down.

The margins are fixed in inches (a layout engine measures every tick label of every panel and costs about half
the drawing again): ``new_figure`` leaves room for one or more title lines, the tick labels and the axis labels
at the theme's sizes, and ``text_width`` measures a column of labels (the predictor ranking's) to size a margin
for them.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from cycler import cycler
from matplotlib import rc_context
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.gridspec import GridSpec
from matplotlib.ticker import FuncFormatter, Locator, MaxNLocator, NullLocator

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

RED, BLUE, BLACK, GREY, GREEN = "#d62728", "#1f77b4", "#222222", "#999999", "#2ca02c"
# Colours of levels and series (seaborn's "deep" palette, without importing seaborn for it).
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")

MIN_PT = 9.0  # the smallest type of any figure, in points at its displayed size
CSS_DPI = 96  # CSS pixels per inch: the page shows a figure at its size in inches times this
PIXEL_RATIO = 2  # PNG pixels per CSS pixel
MAX_WIDTH = 12.2  # inches: 1171 CSS pixels, inside the page's column (1232 pixels at a 1280-pixel window, 1217
# where the browser shows a scroll bar)
DPI = 80  # the default of ``to_png`` (the report and the reproductions' pages use ``render``)

TEXT = "#262626"
THEME: dict[RcKeyType, Any] = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.edgecolor": "#cccccc",
    "axes.linewidth": 0.8,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e3e3e3",
    "grid.linewidth": 0.7,
    "grid.linestyle": "-",
    "axes.labelcolor": TEXT,
    "text.color": TEXT,
    "xtick.color": TEXT,
    "ytick.color": TEXT,
    "xtick.direction": "out",
    "ytick.direction": "out",
    "xtick.major.size": 3.0,
    "ytick.major.size": 3.0,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.pad": 2.5,
    "ytick.major.pad": 2.5,
    "xtick.minor.visible": False,
    "ytick.minor.visible": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Liberation Sans", "sans-serif"],
    "font.size": 10.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 10.0,
    "figure.titlesize": 10.0,
    "xtick.labelsize": MIN_PT,
    "ytick.labelsize": MIN_PT,
    "legend.fontsize": MIN_PT,
    "legend.title_fontsize": MIN_PT,
    "legend.frameon": True,
    "legend.framealpha": 0.85,
    "legend.edgecolor": "#cccccc",
    "legend.borderaxespad": 0.4,
    "legend.handlelength": 1.5,
    "legend.handletextpad": 0.5,
    "legend.labelspacing": 0.3,
    # A fixed title height: otherwise matplotlib measures every tick label of every panel to place titles.
    "axes.titley": 1.0,
    "axes.titlepad": 4.0,
    "axes.labelpad": 3.0,
    "axes.prop_cycle": cycler(color=PALETTE),
    "lines.linewidth": 1.3,
    "lines.solid_capstyle": "round",
    "patch.linewidth": 0.0,
    "axes.xmargin": 0.04,
    "axes.ymargin": 0.05,
    "axes.formatter.useoffset": False,
    "axes.formatter.limits": (-4, 6),
    "pdf.fonttype": 42,  # TrueType in PDFs: text a journal's tools can edit
}
PANEL = (3.1, 2.7)  # inches per panel: three across fit ``MAX_WIDTH``

# Inches the fixed margins leave: a line of title (10 pt), the tick labels and an axis label (9 and 10 pt).
LINE = 0.19  # one line of 10-pt text with its leading
BOTTOM = 0.62  # x tick labels and the x label
LEFT = 0.82  # y tick labels of up to six characters and the y label
RIGHT = 0.2
GAP_W = 0.85  # between two panels side by side: the right one's y tick labels and label
GAP_H = 0.72  # between two rows, besides the lower row's titles: the upper row's x tick labels and label


@dataclass
class Layout:
    """The fixed margins of a figure, in inches (``new_figure``); ``relayout`` sizes the room above the rows from
    the titles finally drawn."""

    ncols: int
    nrows: int
    panel: tuple[float, ...]
    left: float
    right: float
    gap_w: float
    legend_rows: int
    spec: GridSpec | None = None

    def apply(self, fig: Figure, title_lines: int) -> None:
        assert self.spec is not None  # set by ``new_figure`` before the first call
        pw, ph = self.panel
        top = 0.12 + LINE * title_lines + LINE * 1.25 * self.legend_rows
        gap_h = GAP_H + LINE * title_lines
        fixed = self.left + (self.ncols - 1) * self.gap_w + self.right
        pw = min(pw, (MAX_WIDTH - fixed) / self.ncols)  # never wider than the page's column
        w = fixed + self.ncols * pw
        h = top + self.nrows * ph + (self.nrows - 1) * gap_h + BOTTOM
        fig.set_size_inches(w, h)
        self.spec.update(
            left=self.left / w,
            right=1 - self.right / w,
            bottom=BOTTOM / h,
            top=1 - top / h,
            wspace=self.gap_w / pw,
            hspace=gap_h / ph,
        )
        for ax in fig.axes:
            ss = ax.get_subplotspec()
            if ss is not None and ss.get_topmost_subplotspec().get_gridspec() is self.spec:
                ax.set_position(ss.get_position(fig))


def new_figure(
    ncols: int = 1,
    nrows: int = 1,
    panel: Sequence[float] = PANEL,
    left: float = LEFT,
    *,
    n: int | None = None,
    legend_rows: int = 0,
    right: float = RIGHT,
    gap_w: float = GAP_W,
) -> tuple[Figure, np.ndarray]:
    """A figure of ``ncols`` x ``nrows`` panels of ``panel`` inches, on fixed margins in inches: ``left`` for
    the y tick labels and label, room above the figure for ``legend_rows`` rows of a figure legend
    (``figure_legend``) and above each row for its titles (``relayout``, when the figure is rendered, makes
    it as many lines as the longest title). ``n``: only the first n panels are made (a grid with fewer panels
    than cells has no empty panels). Returns the figure and its panels in reading order."""
    count = ncols * nrows if n is None else n
    layout = Layout(ncols, nrows, tuple(panel), left, right, gap_w, legend_rows)
    with rc_context(THEME):
        fig = Figure()
        layout.spec = fig.add_gridspec(nrows, ncols)
        axes = [fig.add_subplot(layout.spec[k // ncols, k % ncols]) for k in range(count)]
    # The layout rides on the figure for ``relayout``: an attribute of ours, unknown to matplotlib's stubs.
    fig.archstudy_layout = layout  # type: ignore[attr-defined]
    layout.apply(fig, 1)
    return fig, np.array(axes, dtype=object)


def title_lines(fig: Figure) -> int:
    """The most lines of any visible panel's title."""
    lines = [
        t.get_text().count("\n") + 1
        for ax in fig.axes
        if ax.get_visible()
        # matplotlib keeps the left and right titles in private attributes, absent from its stubs
        for t in (ax.title, ax._left_title, ax._right_title)  # type: ignore[attr-defined]
        if t.get_text()
    ]
    return max(lines, default=0)


def relayout(fig: Figure) -> None:
    """The room above each row of a ``new_figure`` made as many lines as its longest title (a title drawn
    after the figure was made may have wrapped to several)."""
    layout = getattr(fig, "archstudy_layout", None)
    if layout is not None:
        layout.apply(fig, title_lines(fig))


def panels(n: int, ncols: int = 3, panel: Sequence[float] = PANEL, **kw: Any) -> tuple[Figure, np.ndarray]:
    """``new_figure`` with exactly ``n`` panels (at least one), ``ncols`` across (fewer when ``n`` is smaller)."""
    n = max(1, n)
    ncols = min(ncols, n)
    return new_figure(ncols=ncols, nrows=math.ceil(n / ncols), panel=panel, n=n, **kw)


def figure_legend(
    fig: Figure, handles: Sequence[Artist], labels: Sequence[str], ncol: int | None = None, title: str | None = None
) -> None:
    """A legend across the top of the figure, above the panels' titles (room made by ``legend_rows``), so
    that it covers no data."""
    if not handles:
        return
    with rc_context(THEME):
        fig.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 1.0),
            borderaxespad=0.3,
            ncol=ncol or len(handles),
            frameon=False,
            title=title,
            columnspacing=1.2,
        )


def points(n: int) -> dict[str, Any]:
    """Marker size and transparency of a scatter of ``n`` points: every point visible (at least 3.5 pt across)
    and, where there are many, transparent enough that overlapping series and the points under others show."""
    size = 18.0 if n <= 200 else 14.0
    alpha = float(np.clip(math.sqrt(80.0 / max(n, 1)), 0.3, 0.9))
    return {"s": size, "alpha": alpha, "linewidths": 0}


# A panel of this many points or more is drawn as hexagonal bins shaded by count instead of as markers
# (``scatter_mode``). Why 5,000: a marker of ``points`` is a disc of 14 pt^2 (3.7 pt across, 11 pt^2 of ink) at
# opacity 0.3 from 900 points on, and a panel (``PANEL``) is about 220 x 190 pt, 42,000 pt^2. 5,000 markers are
# 55,000 pt^2 of ink: where they gather on a quarter of the panel (as architectures do, around the typical NLC
# and error) every spot lies under about 6 of them, 1 - 0.7^6 = 88% dark, and the eye cannot tell 6 layers from
# 60: the densest region is one blot whatever its density. Below it, transparency still shows where points
# pile up (``points``); above it, a bin's shade does, on a log scale, from one architecture to tens of thousands.
HEXBIN_FROM = 5_000
HEX_ACROSS = 36  # hexagons across a panel of ``PANEL`` width (about 6 pt each; scaled with a wider panel)

POINTS, TRANSPARENT, HEXBIN = "points", "transparent", "hexbin"
# What each way of drawing a scatter says under its figure (``density_notes``); opaque points need no word.
MODE_NOTES = {
    TRANSPARENT: "Points are drawn semi-transparent (down to opacity 0.3 on a panel of many): darker where they "
    "overlap.",
    HEXBIN: f"Panels of {HEXBIN_FROM:,} points or more are drawn as hexagonal bins: a bin's shade grows with the "
    "logarithm of the number of architectures in it, from the palest (one) to the full colour (the fullest bin), "
    "and its colour mixes the colours of the kinds in it by their counts.",
}


def scatter_mode(n: int) -> str:
    """How a scatter of ``n`` points on one panel is drawn: ``"points"`` (few: markers at opacity 0.9 or more,
    each one distinct), ``"transparent"`` (markers whose opacity, ``points``, falls with their number: where they
    overlap they darken) or ``"hexbin"`` (from ``HEXBIN_FROM``: hexagonal bins shaded by count)."""
    if n >= HEXBIN_FROM:
        return HEXBIN
    return TRANSPARENT if points(n)["alpha"] < 0.9 else POINTS


def _finite(x: np.ndarray, log: bool) -> np.ndarray:
    ok: np.ndarray = np.isfinite(x)
    return ok & (x > 0) if log else ok


def density(
    ax: Axes,
    series: Sequence[tuple[np.ndarray, np.ndarray, str, str | None]],
    *,
    logx: bool = False,
    logy: bool = False,
    size: float | None = None,
) -> str:
    """Draws the series ``(x, y, colour, label)`` of one scatter panel the way their total number asks
    (``scatter_mode``): markers (sized and transparent by ``points``), or hexagonal bins of all of them coloured
    by the series in each and shaded by its count (``_hexbins``). Points that are not finite (or not positive on
    a log axis) are left out. Records the mode's line under the figure (``density_notes``) and returns the mode."""
    kept = []
    for x, y, color, lab in series:
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        ok = _finite(x, logx) & _finite(y, logy)
        kept.append((x[ok], y[ok], color, lab))
    n = sum(len(x) for x, *_ in kept)
    mode = scatter_mode(n)
    with rc_context(THEME):
        if mode != HEXBIN:
            style = points(n) | ({"s": size} if size is not None else {})
            for x, y, color, lab in kept:
                if len(x):
                    ax.scatter(x, y, color=color, label=lab, zorder=3, **style)
        else:
            _hexbins(ax, [(x, y, color) for x, y, color, _ in kept if len(x)], logx, logy)
    fig = ax.get_figure()
    if mode in MODE_NOTES and isinstance(fig, Figure):
        note_density(fig, MODE_NOTES[mode])
    return mode


def _hexbins(ax: Axes, series: list[tuple[np.ndarray, np.ndarray, str]], logx: bool, logy: bool) -> None:
    """Hexagonal bins of all the series' points on one grid (``HEX_ACROSS`` across the panel): a bin's colour is
    the mean of the series' colours weighted by their counts in it (a bin of one series has its colour), mixed
    with white by the bin's total count n on a log scale, from a quarter of the colour at n = 1 to all of it at
    the fullest bin: shade = 0.25 + 0.75 log(n) / log(max n)."""
    tx = np.concatenate([np.log10(x) if logx else x for x, _, _ in series])
    ty = np.concatenate([np.log10(y) if logy else y for _, y, _ in series])
    fig = ax.get_figure()
    width = ax.get_position().width * fig.get_figwidth() if isinstance(fig, Figure) else PANEL[0]
    grid: dict[str, Any] = {
        "gridsize": max(12, round(HEX_ACROSS * width / PANEL[0])),
        "extent": (*_span(tx), *_span(ty)),
        "xscale": "log" if logx else "linear",
        "yscale": "log" if logy else "linear",
        "linewidths": 0,
    }
    per_series = []
    for x, y, _ in series:  # every bin of the grid (mincnt 0), in the grid's order: the counts of each series
        bins = ax.hexbin(x, y, mincnt=0, **grid)
        per_series.append(np.asarray(bins.get_array(), np.float64))
        bins.remove()
    counts = np.vstack(per_series)  # (series, bins)
    total = counts.sum(axis=0)
    have = total > 0
    drawn = ax.hexbin(
        np.concatenate([x for x, _, _ in series]), np.concatenate([y for _, y, _ in series]), mincnt=1, zorder=3, **grid
    )
    rgb = np.array([to_rgb(c) for _, _, c in series])
    mix = (counts[:, have].T @ rgb) / total[have, None]
    top = float(total.max())
    shade = 0.25 + 0.75 * (np.log(total[have]) / math.log(top) if top > 1 else np.ones(int(have.sum())))
    drawn.set_array(None)
    drawn.set_facecolor(1.0 - shade[:, None] * (1.0 - mix))


def _span(v: np.ndarray) -> tuple[float, float]:
    """The range of ``v``, widened by half a unit where it is a single value (a grid needs a width)."""
    lo, hi = float(v.min()), float(v.max())
    return (lo - 0.5, hi + 0.5) if hi <= lo else (lo, hi)


def note_density(fig: Figure, line: str) -> None:
    """Records on ``fig`` the line that says how its scatters were drawn (once, however many panels say it)."""
    have = density_notes(fig)
    if line not in have:
        # a note of archstudy's own on matplotlib's Figure, which declares no such attribute
        fig.archstudy_density = [*have, line]  # type: ignore[attr-defined]


def density_notes(fig: Figure) -> list[str]:
    """The lines ``note_density`` recorded on ``fig``: the report prints them in the figure's caption."""
    return list(getattr(fig, "archstudy_density", []))


class LegibleLogLocator(Locator):
    """Ticks of a log axis that always give a scale: every k-th decade over many decades (at most ``numticks``
    labels), 1-2-5 steps over one to three decades, and below one decade evenly spaced values (``MaxNLocator``
    on the values themselves); never fewer than three inside the view when the view spans a finite range."""

    def __init__(self, numticks: int = 7) -> None:
        self.numticks = numticks

    def __call__(self) -> np.ndarray:  # type: ignore[override]  # see ``tick_values``
        assert self.axis is not None  # a locator is called only once set on an axis
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    # matplotlib's stubs say Sequence[float], but its own locators return arrays, as this one does
    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:  # type: ignore[override]
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not (vmin > 0 and np.isfinite(vmax) and vmax > vmin):
            return np.array([vmin]) if vmin > 0 else np.array([])
        lo, hi = math.log10(vmin), math.log10(vmax)
        span = hi - lo
        if span >= 3:
            step = max(1, math.ceil(span / (self.numticks - 1)))
            first = math.floor(lo / step) * step
            ticks = 10.0 ** np.arange(first, math.ceil(hi) + step, step)
        elif span >= 0.9:
            decades = 10.0 ** np.arange(math.floor(lo), math.ceil(hi) + 1)
            ticks = np.sort(np.concatenate([decades * m for m in (1.0, 2.0, 5.0)]))
        else:
            # an array already (typed a Sequence by matplotlib's stubs): asarray returns it as it is
            ticks = np.asarray(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax))
            ticks = ticks[ticks > 0]
        inside = ticks[(ticks >= vmin * (1 - 1e-9)) & (ticks <= vmax * (1 + 1e-9))]
        if len(inside) < 3:  # a view between ticks of the rule: three evenly spaced values of its own
            nice = np.asarray(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax))
            nice = nice[(nice > 0) & (nice >= vmin) & (nice <= vmax)]
            inside = nice if len(nice) >= 3 else np.geomspace(vmin, vmax, 3)
        return inside


def _label(v: float, _pos: int | None = None) -> str:
    """A log axis' tick label as plain text, 3 significant digits ("0.01", "1", "1000", "1e+06"): mathtext labels
    (10^k) cost more to lay out than the whole plot."""
    return f"{float(f'{v:.3g}'):g}"


def set_log(ax: Axes, which: str = "x") -> None:
    """A log axis with at least three labelled ticks in view (``LegibleLogLocator``), no minor ticks (a
    13-decade NLC axis would get ~120), labels as plain numbers."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LegibleLogLocator())
    axis.set_major_formatter(FuncFormatter(_label))
    axis.set_minor_locator(NullLocator())


def text_width(texts: Sequence[object], size: float = MIN_PT) -> float:
    """The width in inches of the widest of ``texts`` at ``size`` points in the theme's font."""
    if not texts:
        return 0.0
    # 72 dpi: one pixel is one point (backend_agg is unannotated: typed as the base renderer it is)
    renderer: RendererBase = RendererAgg(1, 1, 72)  # type: ignore[no-untyped-call]
    with rc_context(THEME):
        prop = FontProperties(size=size)
        widest = max(renderer.get_text_width_height_descent(str(t), prop, ismath=False)[0] for t in texts)
    return widest / 72.0


def wrap(text: str, width_in: float, size: float = 10.0) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``size`` points (an average glyph of the
    theme's font is about 0.58 em wide; a word longer than a line keeps its own line)."""
    import textwrap

    chars = max(12, int(width_in * 72 / (0.58 * size)))
    return "\n".join(
        part
        for line in text.split("\n")
        for part in (textwrap.wrap(line, chars, break_long_words=False) if len(line) > chars else [line])
    )


def set_title(ax: Axes, text: str, size: float = 10.0) -> None:
    """A panel's title, wrapped to the panel's width (``relayout`` makes room for its lines)."""
    fig = ax.get_figure()
    assert isinstance(fig, Figure)  # a panel of a ``new_figure`` (a subfigure has no width of its own)
    width = ax.get_position().width * fig.get_figwidth()
    ax.set_title(wrap(text, width, size), fontsize=size)


@dataclass(frozen=True)
class Image:
    """A rendered figure: ``data`` (bytes of ``fmt``) and its displayed size in CSS pixels."""

    data: bytes
    fmt: str
    width: int
    height: int

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


FORMATS = ("png", "svg", "pdf")


def render(fig: Figure, fmt: str = "png") -> Image:
    """The figure as ``fmt`` (PNG at ``PIXEL_RATIO`` pixels per CSS pixel, fast zlib; SVG and PDF as vectors),
    with the size it is shown at."""
    buf = io.BytesIO()
    extra: dict[str, Any] = {"pil_kwargs": {"compress_level": 3}} if fmt == "png" else {}
    relayout(fig)
    with rc_context(THEME):
        fig.savefig(buf, format=fmt, dpi=CSS_DPI * PIXEL_RATIO, metadata=_metadata(fmt), **extra)
    w, h = fig.get_size_inches()
    return Image(buf.getvalue(), fmt, round(w * CSS_DPI), round(h * CSS_DPI))


def _metadata(fmt: str) -> dict[str, None]:
    """No creation date or tool version in the files: the same figure gives the same bytes."""
    if fmt == "png":
        return {"Software": None}
    if fmt == "svg":
        return {"Date": None, "Creator": None}
    return {"CreationDate": None, "Producer": None, "Creator": None}


def to_png(fig: Figure, dpi: int = DPI) -> bytes:
    buf = io.BytesIO()
    relayout(fig)
    with rc_context(THEME):
        fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
