"""analysis.columns: the predictors are the schema's columns declared with an ``AsPredictor``, in its order; the
report's grids are the predictors whose declaration names them."""

from dataclasses import asdict, fields

from archstudy.analysis.columns import BASELINES, PREDICTOR_BY_COLUMN, PREDICTORS, Predictor, figure_grid
from archstudy.study.experiment.schema import ARCHITECTURES, PREDICTOR_FIGURES, AsPredictor, columns, predictor_columns


def test_the_predictors_are_the_declared_columns_with_their_metadata():
    declared = predictor_columns()
    assert [p.column for p in PREDICTORS] == [c.name for c in declared]
    for p, c in zip(PREDICTORS, declared):
        assert asdict(p) == {**asdict(c.predictor), "column": c.name}  # the declaration's fields, not a copy of them
        assert {f.name for f in fields(Predictor)} == {f.name for f in fields(AsPredictor)} | {"column"}
    assert PREDICTOR_BY_COLUMN == {p.column: p for p in PREDICTORS}
    assert BASELINES == ("num_params", "depth", "width", "flops")
    assert {c.name for c in columns(ARCHITECTURES) if c.predictor} == set(PREDICTOR_BY_COLUMN)
    # NLC paper section 4: the NLC and the bias on log axes, correlated on their logs; depth linear (figure 4)
    assert PREDICTOR_BY_COLUMN["nlc"].log and PREDICTOR_BY_COLUMN["bias"].log and not PREDICTOR_BY_COLUMN["depth"].log


def test_a_grid_is_the_predictors_naming_it_in_order_and_a_predictor_is_in_at_most_one():
    grids = {k: figure_grid(k) for k in PREDICTOR_FIGURES}
    assert sum(len(g) for g in grids.values()) == sum(1 for p in PREDICTORS if p.figure)
    for key, grid in grids.items():
        assert list(grid) == [p.column for p in PREDICTORS if p.figure == key]
    assert figure_grid("nowhere") == ()
    assert Predictor("x", "other", False, "linear", column="x").figure == ""  # the catalog's fallback for other columns
