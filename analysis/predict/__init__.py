"""Predicting test error from everything measured at initialization, jointly, and which architectures to train.

The NLC paper ranks one metric at a time and proposes discarding architectures before training (section 7);
the zero-cost NAS proxies do the same with one proxy each. Here every init metric of a study predicts test
error together, with scikit-learn, and is judged the way a user would use it: on architectures it never saw.

**Features** (``features``): every init metric and zero-cost proxy of the results schema
(``columns.PREDICTORS`` of kind ``metric`` and ``proxy``: NLC, output bias, AR, variability, the gradient sizes,
NLC_tau(1) and the linear-approximation error of the activation, grad_norm, snip, synflow, jacob_cov, NWOT, the
region diameter where measured), on log10 where its scale is log (the correlation table's choice; a value with
no log, or not finite, is missing); optionally the architecture's own descriptors: depth, log10 width, and the
categories norm, activation, skip, weights and param. A feature needs 3 finite values and two distinct ones.

**Learners** (``LEARNERS``), each a scikit-learn estimator:

* ``linear``: each numeric feature's rank on the training rows (``QuantileTransformer``: its empirical CDF, u in
  [0, 1], so a metric spanning hundreds of decades and a new value beyond the training range both stay in
  bounds), the median u where missing, u together with u^2 (so that a window, error high on both sides of a
  good range, is representable: the NLC paper's figure 2), standardized, one-hot categories, and ridge
  regression with its penalty chosen by efficient leave-one-out on the training rows (``RidgeCV``);
* ``boosted``: gradient-boosted trees (``HistGradientBoostingRegressor``) on the features as they are, a
  missing value routed by each split as training found best;
* ``window``: the rank-based baseline, the best single metric's window predictor (``analysis.range_predictors``): on the
  training rows, each metric's good range (``study.experiment.good_range.good_range``, pycls's empirical
  bootstrap), the distance d of a value from its centre, the metric whose d has the largest Kendall tau with
  test error, and test error ~ a + b d by least squares (``LinearRegression``);
* ``nlc``: the same with the metric fixed to the NLC (``fit_predictor`` and ``rank --learner``; the evaluation's
  NLC alone is the paper's unfitted window, ``NLC_RULE``).

**Baselines**, scored as learners (``baseline_rules``, ``candidates``): each metric and proxy raw and unfitted, its
sign chosen on the training rows; NLC alone as the NLC paper proposes it, the distance of log10 NLC from the fixed
window [1, 3] (Philipp and Carbonell, *The Nonlinearity Coefficient*, section 7), nothing fitted; parameter count,
depth, width and FLOPs; and the descriptors alone (the ridge on depth, width and the categories).

**Held-out evaluation** (``predict_study``): grouped K-fold cross-validation with the base architecture
(``index``: a draw and its siblings share it) as the group, repeated with ``REPEATS`` fold seeds. Every learner is
scored on each held-out fold (Spearman's rho, Kendall's tau-b, R^2), so a fold's calibration offset cannot move
its rho (pooling the folds' predictions first biases rho by each fold's intercept, which moves against the fold's
held-out mean); the mean over the r x k fold scores has the corrected resampled t interval (Nadeau and Bengio,
*Inference for the Generalization Error*, 2003; ``corrected_interval``), which counts the split's variability. The
joint model and the best baseline are chosen inside each training fold by a grouped cross-validation of its rows
alone (``choose``: nested), never on the scores they are judged by; a fitted learner whose predictions are constant
in a held-out fold cannot fit and gets no rho. The verdict compares the joint model with the best baseline and
with NLC alone (paired per-fold differences of rho, the same interval); ``analysis.predict_simulation`` measures
how often it fires when nothing predicts. A study of more than ``MAX_ROWS`` trained architectures is
evaluated on a seeded random subsample of whole base architectures holding at most that many (``capped_rows``),
which the report says with both numbers: a random sample of base architectures is a study of that size drawn the
same way, so the verdict keeps its calibration at that size, and the cost stays bounded.
Ranking measures (``ranking_measures``): precision of the top K, NDCG@K
and regret; ``learning_curve``: held-out rho against the number of training architectures.

**Why it predicts**: permutation importance on the held-out folds (``sklearn.inspection.permutation_importance``,
scored by Spearman's rho, so an importance is the drop in held-out rho when a feature's values are shuffled) and
partial-dependence curves of the top metrics (``sklearn.inspection.partial_dependence``) of the model fitted on
the whole study; the NLC's should show the paper's window.

**Transfer** (``score_predictor``): a predictor fitted on one study (``fit_predictor``) scored on another's
architectures: does what was learned on waveform-noise hold on MNIST? Scored again on the new designs only
(``design_keys``: a design the source held, at another width or on other data, is no test of transfer).

**A fitted predictor is data** (``FittedPredictor``), read from scikit-learn's public API only: the ridge's and
the window's numbers (quantiles, medians, means, scales, coefficients and intercept; the window's metric, centre
and line), evaluated by numpy; the boosted trees' recipe (training table, target, seed, parameters, the
scikit-learn version) with their predictions on the training rows, refitted on loading and compared bit for bit
(another scikit-learn that grows other trees is refused in one line naming both versions); the feature list and
the study it came from (location, dataset, science fingerprint, rows), in a JSON file with its sha256 (``save``,
``load_predictor``). Loading runs no code (the rule of checkpoints): the file is parsed as JSON and checked field
by field; a file changed after it was saved is refused in one line.
"""

from __future__ import annotations

from .learners import JOINT, LABELS, LEARNERS, METRIC_FEATURES, MIN_ROWS, TARGET, fit_rows
from .evaluation import CANNOT_FIT, MAX_ROWS, NLC_RULE, REPEATS, Prediction, capped_rows, predict_study
from .persistence import FittedPredictor, fit_predictor, load_predictor, predictor_from, rank_rows, score_predictor
from .page import predict_html, report_prediction
from .lift import median_lift, paired_lift

__all__ = [
    "JOINT",
    "LABELS",
    "LEARNERS",
    "METRIC_FEATURES",
    "MIN_ROWS",
    "TARGET",
    "fit_rows",
    "CANNOT_FIT",
    "MAX_ROWS",
    "NLC_RULE",
    "REPEATS",
    "Prediction",
    "capped_rows",
    "predict_study",
    "FittedPredictor",
    "fit_predictor",
    "load_predictor",
    "predictor_from",
    "rank_rows",
    "score_predictor",
    "predict_html",
    "report_prediction",
    "median_lift",
    "paired_lift",
]
