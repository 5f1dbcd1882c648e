"""NLC-guided pruning: what the study's launch pruned and by which window, and what pruning would keep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..html import esc, fmt, table
from ..study_analysis import StudyAnalysis

if TYPE_CHECKING:
    pass


def launch_how(w: dict[str, Any]) -> str:
    """Where the window of pruning at launch (``study_analysis.launch_window``) came from, in one clause."""
    if w["given"]:
        return "given (<code>nlc_window</code>, <code>--nlc-window</code>)"
    why = (
        "its NLC good range"
        if w["source"] == "study"
        else f"the NLC paper's, as the pilot's own band is not usable: {esc(w['reason'])}"
    )
    return (
        f"<code>auto</code>: from the pilot, the {w['pilot']:,} finished architectures of indices below "
        f"{w['pilot_indices']:,}, all trained; {why}"
    )


def launch_html(s: StudyAnalysis) -> str:
    """What a study pruned at launch pruned, by which window, and the compute that saved (estimated)."""
    w, r, c = s.launch, s.results, s.savings
    if w is None:
        return ""
    pruned, trained = r.pruned, r.trained
    out = [
        f"<p><b>Pruned at launch</b> with the NLC window {window_text(w['lo'], w['hi'])}, {launch_how(w)}: "
        f"{len(pruned):,} of {r.n_finished:,} finished architectures were measured at initialization "
        f"({fmt(c['measure_h'])} h to build and measure them) and not trained; {len(trained):,} trained. Training "
        f"time saved, estimated: {fmt(c['saved_h'])} h (their FLOPs per example times the trained architectures' "
        f"training seconds per FLOP, {fmt(c['s_per_flop'] * 1e9, 3)} s per GFLOP: an estimate, since a pruned "
        "architecture might have trained for more or fewer epochs than a trained one).</p>"
    ]
    if len(pruned):
        show = pruned.sort_values(["index", "variant", "arch_id"]).head(100)
        rows = [
            [
                fmt(int(x["index"])),
                esc(x["arch_id"]),
                esc(x["variant"]),
                fmt(x["nlc"], 3),
                "below" if x["nlc"] < w["lo"] else "above" if x["nlc"] > w["hi"] else "not finite",
            ]
            for _, x in show.iterrows()
        ]
        more = f'<p class="muted">and {len(pruned) - len(show):,} more.</p>' if len(pruned) > len(show) else ""
        out.append(table(["index", "arch_id", "variant", "NLC at init", "window"], rows, left=3) + more)
    return "".join(out)


def pruning_html(s: StudyAnalysis) -> str:
    p = s.pruning
    if not len(p):
        return launch_html(s) + "<p>No trained architectures yet.</p>"
    rows = [
        [
            esc(r["label"]) + (" (used)" if k == 0 else ""),
            window_text(r["lo"], r["hi"]),
            fmt(int(r["n"])),
            fmt(int(r["n_kept"])),
            fmt(int(r["n_skipped"])),
            f"{fmt(r['saved_s'] / 3600)} h of {fmt(r['total_s'] / 3600)} h ({fmt(100 * r['saved_fraction'], 1)}%)",
            fmt(r["best_error"], 4),
            fmt(r["best_error_kept"], 4),
            fmt(r["regret"], 4),
        ]
        for k, (_, r) in enumerate(p.iterrows())
    ]
    return (
        launch_html(s)
        + window_choice_html(s)
        + table(
            [
                "window",
                "NLC window",
                "architectures",
                "kept",
                "skipped",
                "training time saved",
                "best test error",
                "best kept",
                "regret",
            ],
            rows,
            left=2,
        )
        + (
            '<p class="muted">An architecture is trained only if its NLC at initialization lies in the window (the '
            "NLC paper: optimal test error needs an initial NLC of about 1 to 3). The NLC is measured before training, "
            "so skipping saves the recorded training time; regret = best test error among the kept − best overall. "
            "All finished architectures count, siblings included.</p>"
        )
    )


def window_text(lo: float, hi: float) -> str:
    """[lo, hi] with 3 significant digits ("[0.912, 3.47]"; the paper's "[1, 3]")."""
    return f"[{lo:.3g}, {hi:.3g}]"


def window_choice_html(s: StudyAnalysis) -> str:
    """Which window the pruning analysis uses, and why."""
    w = s.own_nlc_window
    if s.pruning_window_given:
        return f"<p>Window {window_text(*s.pruning_window)}: given (<code>--nlc-window</code>).</p>"
    if not len(w):
        return "<p>Window: the NLC paper's [1, 3] (no finite NLC and test error to find the study's own).</p>"
    r = w.iloc[0]
    if r["large_enough"]:
        return (
            f"<p>Window: the study's own {window_text(r['lo'], r['hi'])}, its NLC's good range (the paper's "
            "is [1, 3]): the study is large enough, each end moving by at most "
            f"{fmt(max(r['sd_low'], r['sd_high']), 2)} decades over resamples of the study (see Good ranges).</p>"
        )
    return (
        f"<p>Window: the NLC paper's [1, 3]. The study is not large enough for its own window: {esc(r['reason'])}.</p>"
    )
