"""The importance ranking of a study's design axes and measures at initialization (``analysis.importance``: fANOVA
through Optuna), for test error and for the selected learning rate: a description, with no verdict."""

from __future__ import annotations

from ..columns import PREDICTOR_BY_COLUMN
from ..html import esc, fmt, table
from ..importance import MAX_ROWS, MIN_ROWS, REPLICATES, Importance, available, importance, targets
from ..study_analysis import StudyAnalysis

FANOVA = (
    "Hutter, Hoos and Leyton-Brown, <i>An Efficient Approach for Assessing Hyperparameter Importance</i>, ICML 2014"
)


def _label(column: str) -> str:
    p = PREDICTOR_BY_COLUMN.get(column)
    return p.label if p is not None and p.kind != "baseline" else column.replace("_", " ")


def _table(imp: Importance) -> str:
    rows = [
        [esc(_label(r["feature"])), esc(r["kind"]), fmt(r["median"], 3), f"{fmt(r['low'], 3)} – {fmt(r['high'], 3)}"]
        for r in imp.table.to_dict("records")
    ]
    head = ["feature", "kind", "share of variance (median)", f"range over {imp.replicates} replicates"]
    left = f" ({imp.left_out:,} left out: no finite value of a feature drawn)" if imp.left_out else ""
    return (
        f"<h4>For {esc(imp.target)}</h4>"
        f'<p class="muted">{imp.rows:,} trained architectures{left}; each replicate a bootstrap resample of '
        f"{imp.per_replicate:,} of them with its own forest seed.</p>" + table(head, rows, left=2)
    )


def importance_html(s: StudyAnalysis) -> str:
    """The section: the method in a few words, then one table per target (module docstring)."""
    why = available()
    if why is not None:
        return f'<p class="missing">Not computed: the importance ranking {esc(why)}.</p>'
    intro = (
        '<p class="muted">fANOVA (' + FANOVA + "): a random forest of the target on the design axes that vary and the "
        "measures at initialization, and the share of the variance of its prediction over the whole space (each "
        "feature uniform over its range, log scale where the report plots it so) that each feature explains alone. "
        f"Through Optuna's FanovaImportanceEvaluator; {REPLICATES} replicates of at most {MAX_ROWS:,} architectures. "
        "A description, not a finding: correlated features (the NLC and depth, say) share their effect as the "
        "forest happens to split them, the shares leave out the interactions, and no significance is claimed.</p>"
    )
    parts = []
    for k, target in enumerate(targets(s.arch)):
        imp = importance(s.arch, target, seed=1000 * k)
        if imp is None:
            parts.append(
                f'<p class="missing">Fewer than {MIN_ROWS} trained architectures with every feature: no importance.</p>'
            )
            break
        parts.append(_table(imp))
    return intro + "".join(parts)
