"""The NLC window rule of pruning at launch: which NLC window [lo, hi] a study trains inside.

A rule of the experiment, not of its report: with ``nlc_window: auto`` (``StudyConfig``) it decides which
architectures a study trains, so it is declared here once, beside the config, and the run machinery
(``study.execution.pruning``) and the analysis (``analysis.good_ranges.nlc_good_range``) both compute with it. A
resumed study recomputes the same window from the same rows and seed.

The NLC paper's own window is [1, 3] (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 4,
figure 2; section 7 proposes discarding architectures before training). The study's own candidate is the NLC's
good range, by the empirical bootstrap of pycls (``good_range``). ``window_of`` decides whether the pilot is large
enough for that band to be used instead, from the bootstrap itself: the band must not move much if the study were
drawn again. The points are resampled with replacement R = 100 times, the band recomputed each time, and the
root-mean-square distance of each end from the study's own (in decades of NLC: the bootstrap's estimate of the
end's error, its spread and its bias together) required to be at most a third of the band's own width and of the
paper's window's (log10 3 = 0.48 decades):

    large enough  <=>  subsample >= 5 architectures  and  rms(log10 low*_r - log10 low), rms(log10 high*_r - log10 high)
                       <= min(width, log10 3) / 3

(width = log10 high - log10 low > 0). With fewer than 5 architectures per subsample the "best of a subsample"
is close to a random architecture (pycls's 25% of n < 20). docs/analysis.md gives how the criterion behaves on
synthetic windowed populations.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from archstudy.sampling.constraints import Bounds

from .good_range import CONFIDENCE, N_BOOT, STABILITY_DRAWS, SUBSAMPLE, band_stability, good_range, subsample_size

# An NLC window [lo, hi], declared once: what pruning at launch (``StudyConfig.nlc_window``), the report's pruning
# (``analysis.pruning``) and both commands' ``--nlc-window`` (``LO,HI`` or ``LO HI``) take. The NLC is >= 0.
WINDOW = Bounds(0.0)
PAPER_WINDOW = (1.0, 3.0)
STABILITY_RATIO = 1 / 3  # an end may move (rms) by at most this share of the band's width and ...
STABILITY_DECADES = math.log10(PAPER_WINDOW[1] / PAPER_WINDOW[0]) / 3  # ... of the paper's [1, 3], in decades
MIN_SUBSAMPLE = 5  # architectures per bootstrap subsample for a best-of-subsample to mean anything


def window_of(
    nlc: ArrayLike,
    error: ArrayLike,
    *,
    sample: float = SUBSAMPLE,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    draws: int = STABILITY_DRAWS,
    fallback: tuple[float, float] = PAPER_WINDOW,
) -> dict[str, Any]:
    """The NLC window of the architectures with NLC ``nlc`` and test error ``error`` (one dataset): their NLC good
    range (``low``, ``best``, ``high``), the root-mean-square distances of its ends from the band's own over
    ``draws`` resamples (``sd_low``, ``sd_high``, in decades) and its ``width`` in decades, whether they are
    ``large_enough`` for it to be the window (module docstring) and if not the ``reason``; ``lo``, ``hi``: the
    window to use, the band when large enough, else ``fallback`` (the NLC paper's [1, 3]), named by ``source``
    ("study" or "paper"). Points whose NLC or error is not finite, or whose NLC is not positive, are left out;
    ``n`` counts the others."""
    x, y = np.asarray(nlc, dtype=np.float64), np.asarray(error, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[ok], y[ok]
    n = len(x)
    m = subsample_size(n, sample) if n else 0
    low, best, high = good_range(x, y, log=True, sample=sample, n_boot=n_boot, confidence=confidence, seed=seed)
    width = math.log10(high / low) if n else math.nan
    sd_low = sd_high = math.nan
    if n < 2:
        reason = f"{n} architecture(s) with a finite NLC and test error"
    elif m < MIN_SUBSAMPLE:
        reason = (
            f"{n} architectures: a bootstrap subsample holds {m} (< {MIN_SUBSAMPLE}), so its best is "
            "nearly a random architecture"
        )
    elif not width > 0:
        reason = "the band has no width: one NLC is the best of nearly every subsample"
    else:
        sd_low, sd_high = band_stability(
            x, y, sample=sample, n_boot=n_boot, confidence=confidence, draws=draws, seed=seed, around=(low, high)
        )
        worst, limit = max(sd_low, sd_high), min(STABILITY_RATIO * width, STABILITY_DECADES)
        reason = (
            ""
            if worst <= limit
            else (
                f"the band is not stable: an end moves by {worst:.2f} decades (rms over {draws} resamples of the "
                f"study), more than {limit:.2f} (a third of its width {width:.2f} or of the paper's window's)"
            )
        )
    large = reason == ""
    lo, hi = (low, high) if large else tuple(float(v) for v in fallback)
    return {
        "n": n,
        "subsample": m,
        "low": low,
        "best": best,
        "high": high,
        "sd_low": sd_low,
        "sd_high": sd_high,
        "width": width,
        "large_enough": large,
        "reason": reason,
        "lo": lo,
        "hi": hi,
        "source": "study" if large else "paper",
    }


def pilot_window(nlc: ArrayLike, error: ArrayLike, seed: int = 0) -> dict[str, Any]:
    """The window of pruning at launch with ``nlc_window: auto``, from the NLC and test error of every pilot
    architecture (siblings included): ``window_of`` (lo, hi, source, n, reason). A deterministic function of the
    points and ``seed``: the driver computes it to prune, the report again to say what was pruned by which
    window."""
    w = window_of(nlc, error, seed=seed)
    if not w["n"]:
        return {
            "lo": PAPER_WINDOW[0],
            "hi": PAPER_WINDOW[1],
            "source": "paper",
            "n": 0,
            "reason": "no pilot architecture with a finite NLC and test error",
        }
    return {
        "lo": float(w["lo"]),
        "hi": float(w["hi"]),
        "source": str(w["source"]),
        "n": int(w["n"]),
        "reason": str(w["reason"]),
    }
