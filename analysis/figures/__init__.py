"""The report's figures: one module per topic, each figure one function beside its declaration.

A declaration (``figures.base.figure``) says the key, the report's section, the caption, the data the figure needs
and when it is skipped. The topics:

    paper        the NLC paper's figures 1, 2, 3 (A-C and E), 4, 7, 8, 9, 10
    predictors   what predicts test error: the predictor ranking, the scatter grids of the other predictors
    siblings     the paired effects of sibling architectures
    design       the design space: error EDFs, good ranges, NLC-guided pruning
    curves       training curves and the NLC during training
    predict      the joint predictor of test error: held-out predictions, permutation importance, partial dependence
    compare      several studies side by side

This module holds the declarations, which register beside their functions (``base.DECLARED``, a
``sampling.registry`` registry that imports every module of the package): ``FIGURES`` (one study's figures, each
drawn from a ``FigureData``: the report gives each the study's ``analysis.study_analysis.StudyAnalysis``, which is one)
and ``COMPARISON_FIGURES`` (several studies', from a list of them), each topic module's in the order it declares
them; ``analysis.report`` draws each in the section it names. Every figure returns a ``matplotlib.figure.Figure``
drawn without pyplot (no display, no global state; rendering to PNG uses Agg). Adding a figure is its function and
declaration in its topic's module; a new topic module is found by being in the package.
"""

from __future__ import annotations

from .base import (
    DECLARED,
    DECLARED_COMPARISONS,
    ComparisonSpec,
    FigureData,
    FigureSpec,
    NothingToDraw,
    correlation_title,
    fmt_p,
    label,
    omissions,
    omitted,
    point_kind,
    random_threshold,
    scatter,
)
from .compare import fig_edf_compare, fig_errors_compare, fig_good_ranges_compare
from .curves import CURVE_COLUMNS, curve_architectures, fig_curves, fig_nlc_trajectory, selected_curves
from .design import fig_edf, fig_good_ranges, fig_pruning, good_band
from .paper import (
    fig1_fig3e_regions,
    fig1_regions,
    fig2_nlc_vs_test_error,
    fig3,
    fig3a_bias_vs_test_error,
    fig3b_nlc_before_after,
    fig3c_nlc_after_vs_test_error,
    fig4_depth_vs_test_error,
    fig7_lr_index_histogram,
    fig8_lr_vs_nlc,
    fig9_bias,
    fig10_skips_side_by_side,
)
from .predictors import (
    BASELINE_GRID,
    METRIC_GRID,
    PROXY_GRID,
    abs_interval,
    fig_baselines,
    fig_metrics,
    fig_proxies,
    fig_ranking,
    ranking_labels,
    window_rows,
)
from .siblings import sibling_figure

FIGURES: tuple[FigureSpec, ...] = tuple(DECLARED.values())
COMPARISON_FIGURES: tuple[ComparisonSpec, ...] = tuple(DECLARED_COMPARISONS.values())

__all__ = [
    "BASELINE_GRID",
    "COMPARISON_FIGURES",
    "CURVE_COLUMNS",
    "ComparisonSpec",
    "FIGURES",
    "FigureData",
    "FigureSpec",
    "METRIC_GRID",
    "NothingToDraw",
    "PROXY_GRID",
    "abs_interval",
    "correlation_title",
    "curve_architectures",
    "fig1_fig3e_regions",
    "fig1_regions",
    "fig2_nlc_vs_test_error",
    "fig3",
    "fig3a_bias_vs_test_error",
    "fig3b_nlc_before_after",
    "fig3c_nlc_after_vs_test_error",
    "fig4_depth_vs_test_error",
    "fig7_lr_index_histogram",
    "fig8_lr_vs_nlc",
    "fig9_bias",
    "fig10_skips_side_by_side",
    "fig_baselines",
    "fig_curves",
    "fig_edf",
    "fig_edf_compare",
    "fig_errors_compare",
    "fig_good_ranges",
    "fig_good_ranges_compare",
    "fig_metrics",
    "fig_nlc_trajectory",
    "fig_pruning",
    "fig_proxies",
    "fig_ranking",
    "fmt_p",
    "good_band",
    "label",
    "omissions",
    "omitted",
    "point_kind",
    "random_threshold",
    "ranking_labels",
    "scatter",
    "selected_curves",
    "sibling_figure",
    "window_rows",
]
