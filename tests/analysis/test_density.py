"""Scatter panels that show density (analysis.plotting.density): the way a panel is drawn follows its number of
points (opaque markers, transparent markers, hexagonal bins from ``HEXBIN_FROM``), the figure's caption says
which, and a panel of many points is a picture of their density, not an ink blot: its hexagons are those an
independent nearest-centre count finds, and its shades follow the density the points were drawn from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, PolyCollection
from scipy import stats as sps
from scipy.spatial import cKDTree

from archstudy.analysis.figures import FigureData, fig2_nlc_vs_test_error
from archstudy.analysis.figures.base import scatter
from archstudy.analysis.plotting import (
    BLACK,
    HEX_ACROSS,
    HEXBIN,
    HEXBIN_FROM,
    MODE_NOTES,
    POINTS,
    TRANSPARENT,
    density,
    density_notes,
    new_figure,
    points,
    scatter_mode,
)


def _gaussian(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"nlc": rng.normal(0.0, 1.0, n), "test_error": rng.normal(0.0, 1.0, n)})


def test_the_mode_follows_the_number_of_points():
    # opaque up to the count where ``points`` turns transparent (opacity sqrt(80 / n) < 0.9 from n = 99)
    assert scatter_mode(1) == scatter_mode(98) == POINTS
    assert points(98)["alpha"] >= 0.9 > points(99)["alpha"]
    assert scatter_mode(99) == scatter_mode(HEXBIN_FROM - 1) == TRANSPARENT
    assert scatter_mode(HEXBIN_FROM) == scatter_mode(100_000) == HEXBIN
    for n, mode in ((50, POINTS), (2_000, TRANSPARENT), (HEXBIN_FROM + 1, HEXBIN)):
        fig, (ax,) = new_figure()
        assert scatter(ax, _gaussian(n), "nlc", "test_error") == n
        markers = [c for c in ax.collections if isinstance(c, PathCollection)]
        hexes = [c for c in ax.collections if isinstance(c, PolyCollection) and not isinstance(c, PathCollection)]
        if mode == HEXBIN:
            assert not markers and len(hexes) == 1
        else:
            assert len(markers) == 1 and len(markers[0].get_offsets()) == n and not hexes
            assert markers[0].get_alpha() == points(n)["alpha"]
        # the caption's line (the report prints it under the figure) says which; opaque points need none
        assert density_notes(fig) == ([MODE_NOTES[mode]] if mode in MODE_NOTES else [])


def test_the_report_prints_how_a_figure_was_drawn_in_its_caption():
    from archstudy.analysis.drawing import Drawer, FigureJob

    df = _gaussian(HEXBIN_FROM).assign(nlc=lambda d: np.exp(d["nlc"]), skip="none", high_bias=False, variant="base")
    job = FigureJob("f", "fig2", "Figure 2.", "s", lambda: fig2_nlc_vs_test_error(FigureData("waveform-noise", df)))
    html = Drawer(processes=1).html(job)
    assert f'<span class="drawn-as">{MODE_NOTES[HEXBIN]}</span>'.replace("'", "&#x27;") in html


def _hex_centres(extent: tuple[float, float, float, float], nx: int) -> tuple[np.ndarray, float, float]:
    """Every centre of a hexagonal grid of ``nx`` hexagons across ``extent`` (two offset rectangular lattices,
    the second shifted by half a cell each way), and the cell's width and height."""
    xmin, xmax, ymin, ymax = extent
    ny = int(nx / math.sqrt(3))
    sx, sy = (xmax - xmin) / nx, (ymax - ymin) / ny
    a = np.array([(i, j) for i in range(nx + 1) for j in range(ny + 1)], float)
    b = np.array([(i + 0.5, j + 0.5) for i in range(nx) for j in range(ny)])
    centres = np.vstack([a, b]) * [sx, sy] + [xmin, ymin]
    return centres, sx, sy


def test_the_hexagons_with_data_are_those_an_independent_count_finds():
    df = _gaussian(30_000, seed=1)
    x, y = df["nlc"].to_numpy(), df["test_error"].to_numpy()
    fig, (ax,) = new_figure()
    assert density(ax, [(x, y, BLACK, None)]) == HEXBIN
    (drawn,) = ax.collections
    # independently: each point to its nearest centre, distance measured in hexagon units (a regular hexagon's
    # rows are sqrt(3) x its half-width apart, hence the factor on y)
    centres, sx, sy = _hex_centres((x.min(), x.max(), y.min(), y.max()), HEX_ACROSS)
    scale = np.array([1 / sx, math.sqrt(3) / sy])
    _, nearest = cKDTree(centres * scale).query(np.column_stack([x, y]) * scale)
    occupied, n_in = np.unique(nearest, return_counts=True)
    assert len(drawn.get_offsets()) == len(occupied)
    assert np.allclose(np.sort(drawn.get_offsets(), axis=0), np.sort(centres[occupied], axis=0), atol=1e-6 * sx)

    # each bin's colour: black mixed with white by its count on a log scale, 1/4 of black at one point
    def key(xy: np.ndarray) -> list[tuple[int, int]]:  # a centre in half cells, an integer pair
        return [tuple(k) for k in np.round((xy - [x.min(), y.min()]) / [sx / 2, sy / 2]).astype(int)]

    by_centre = dict(zip(key(centres[occupied]), n_in))
    counts = np.array([by_centre[k] for k in key(np.asarray(drawn.get_offsets()))], float)
    shade = 0.25 + 0.75 * np.log(counts) / np.log(counts.max())
    black = np.array([0x22, 0x22, 0x22]) / 255
    assert np.allclose(np.asarray(drawn.get_facecolor())[:, :3], 1 - shade[:, None] * (1 - black))


def _darkness_against_density(n: int, draw) -> tuple[float, float]:
    """(Spearman's rho between the darkness of the rendered panel and the standard normal density, at a 15 x 15
    grid of points of [-2.5, 2.5]^2; the share of those points rendered at 90% of full darkness or more)."""
    df = _gaussian(n, seed=2)
    fig, (ax,) = new_figure()
    draw(ax, df)
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3, 3)
    ax.grid(False)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[:, :, :3].mean(axis=2) / 255.0
    g = np.linspace(-2.5, 2.5, 15)
    gx, gy = [v.ravel() for v in np.meshgrid(g, g)]
    px = ax.transData.transform(np.column_stack([gx, gy]))
    rows = (image.shape[0] - px[:, 1]).astype(int)
    cols = px[:, 0].astype(int)
    dark = 1.0 - np.array([image[r - 1 : r + 2, c - 1 : c + 2].mean() for r, c in zip(rows, cols)])
    truth = np.exp(-(gx**2 + gy**2) / 2)
    return float(sps.spearmanr(dark, truth).statistic), float(np.mean(dark >= 0.9 * dark.max()))


def test_a_panel_of_many_points_shows_their_density_not_an_ink_blot():
    n = 100_000

    def as_markers(ax, df):  # how every scatter was drawn before: markers at opacity 0.3
        ax.scatter(df["nlc"], df["test_error"], color=BLACK, zorder=3, **points(n))

    rho_old, blot_old = _darkness_against_density(n, as_markers)
    rho_new, blot_new = _darkness_against_density(n, lambda ax, df: scatter(ax, df, "nlc", "test_error"))
    # markers saturate: two thirds of the square (out to 1.6 standard deviations, where the density is a quarter
    # of its peak) is one blot at full darkness (measured: 0.68); bins: darkness follows the density, the darkest
    # tenth of shades only where the density is above about 0.4 of its peak (measured: 0.15)
    assert blot_old > 0.5 and blot_new < blot_old / 3
    assert rho_new > 0.97 > rho_old
