"""Degenerate measures (``analysis.degenerate``): flagged with why, left out of every fit, the stored rows untouched."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from archstudy.analysis import correlations, load_results
from archstudy.analysis.degenerate import NO_SIGNAL_BACK, OVERFLOW, SILENT, degenerate, without_degenerate
from archstudy.analysis.report.status import degenerate_html
from archstudy.study.experiment.schema import VANISHED_NLC

import synthetic_study as synth


def _study(tmp_path) -> pd.DataFrame:
    """A synthetic study's architectures with a vanished gradient (#0), an overflow (#1), a silent output (#2) and a
    negative synflow (#3: a signed measure, not degenerate)."""
    arch = load_results(synth.write_study(tmp_path / "s", n=24, dataset="waveform-noise")).architectures
    arch = arch.sort_values("index").reset_index(drop=True)
    arch.loc[0, "nlc"] = VANISHED_NLC / 10
    arch.loc[1, "gvcs"] = math.inf
    arch.loc[2, "variability"] = 0.0
    arch.loc[3, "synflow"] = -5.0
    return arch


def test_each_degenerate_value_is_flagged_with_its_reason(tmp_path):
    arch = _study(tmp_path)
    found = degenerate(arch)
    got = {(int(i), c, w) for i, c, w in zip(found["index"], found["column"], found["why"])}
    # the vanished gradient takes the measures made of it (AsPredictor.gradient) with the NLC
    assert got == {
        (0, "nlc", NO_SIGNAL_BACK),
        (0, "gvcs", NO_SIGNAL_BACK),
        (0, "grad_length", NO_SIGNAL_BACK),
        (1, "gvcs", OVERFLOW),
        (2, "variability", SILENT),
    }
    assert found.loc[(found["index"] == 0) & (found["column"] == "nlc"), "value"].item() == VANISHED_NLC / 10


def test_fits_leave_them_out_and_the_stored_table_keeps_them(tmp_path):
    arch = _study(tmp_path)
    before = arch.copy()
    masked = without_degenerate(arch)
    pd.testing.assert_frame_equal(arch, before)  # the caller's table is not changed
    assert np.isnan(masked.loc[0, ["nlc", "gvcs", "grad_length"]].to_numpy(float)).all()
    assert np.isnan(masked.loc[1, "gvcs"]) and np.isnan(masked.loc[2, "variability"])
    assert masked.loc[3, "synflow"] == -5.0 and masked.loc[1, "nlc"] == arch.loc[1, "nlc"]
    clean = masked.copy()
    assert without_degenerate(clean) is clean  # nothing degenerate: the same table, no copy
    # a fit through the analysis' door (architectures_table): Kendall of NLC against test error over the other
    # rows, as scipy computes it on them alone
    base = arch[arch["variant"] == "base"]
    keep = base.index != 0
    tau = sps.kendalltau(base.loc[keep, "nlc"], base.loc[keep, "test_error"]).statistic
    row = correlations(arch, predictors=["nlc"], n_boot=0).iloc[0]
    assert row["kendall"] == np.float64(tau) and int(row["n"]) == int(keep.sum())


def test_the_report_says_which_and_why(tmp_path):
    arch = _study(tmp_path)
    box = degenerate_html(arch)
    assert "Degenerate measures:" in box and "5 value(s) of 3 architecture(s)" in box
    assert "no signal back through the net" in box and "NLC 1e-05 (#0)" in box
    assert "overflow" in box and "variability V 0 (#2)" in box
    assert degenerate_html(without_degenerate(arch).drop(index=[0, 1, 2])) == ""
