"""``archstudy rank --from STUDY``: pick architectures before training them.

The question the NLC paper's title promises an answer to: given what an untrained network shows in seconds,
which architectures should one train? ``rank`` fits the joint predictor of test error on STUDY's trained
architectures (``analysis.predict``), draws N fresh architectures of STUDY's space (the same parameter budget,
dataset and protocol; a study seed of their own, ``sampling.plan.fresh_seed``, and no spec STUDY holds), measures
them at initialization only (a study whose config says ``measure_only``: Ray-parallel, resumable, with the
progress line, in ``DIR/measured``), ranks them by predicted test error and writes:

    DIR/predictor.json   the fitted predictor, as data (``analysis.predict.load_predictor`` reads it)
    DIR/ranked.parquet   the N architectures, best predicted first: every measured column, predicted_test_error,
                         predicted_rank
    DIR/study.yaml       the top K as a study (the same config, those draws as ``indices``): `archstudy run --config
                         DIR/study.yaml --out DIR/top` trains them as a normal study

Before anything is measured it runs the held-out evaluation on STUDY (``analysis.predict.predict_study``) and
ranks with the best predictor it found (``Prediction.ranker``: the joint model, the learner its folds chose; a
baseline rule, such as the NLC paper's window or a raw metric; or none), printing which, its held-out Spearman's
rho with its interval and the precision of its top K, and why; when none beats chance it refuses in one line naming
the scores (``--allow-weak-predictor`` ranks anyway, and the first line says so). ``--learner`` asks for one. The
scores go into predictor.json and ranked.parquet's metadata.

``--check K`` trains the top K, the top K of the simple NLC rule (nearest the NLC paper's window [1, 3]) and K
drawn at random from the N (one study, ``DIR/check``) and prints the lift of the ranking over each, median test
error of the other minus the top's, with a paired bootstrap interval and the rank-sum p-value: the honest measure
of whether the ranking is worth anything. With K of 3 or fewer it says the check cannot tell anything (the rank-sum
test cannot reach 0.05 whatever the errors).
Running the same command again resumes where it stopped; a larger N (or K) extends the studies.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import cast

from archstudy.sampling import UserError, config_yaml
from archstudy.sampling.constraints import Choice, Integer, check
from archstudy.sampling.plan import fresh_indices, fresh_seed, plan_study
from archstudy.sampling.regular_files import read_regular, write_whole
from archstudy.sampling.unit_names import MAX_ARCHITECTURES

from ..experiment.config import CONFIG_NAME, DEFAULT_PILOT, PROVENANCE_KEYS, RECORDED_KEYS, StudyConfig
from .run import Status, add_execution_arguments, execution_of
from .commands import subcommand

DEFAULT_N, DEFAULT_TOP = 100, 10
MEASURED, CHECK = "measured", "check"
CHECK_SEED = 3  # the random K of --check: numpy's generator seeded with (fresh seed, this)


@subcommand("rank", order=80, activity="ranking architectures", reads=("study",))
def register(sub) -> None:
    p = sub.add_parser(
        "rank",
        help="rank fresh architectures by predicted test error, before training them",
        description="Fit the joint predictor of test error on STUDY's trained architectures, draw N new "
        "architectures of STUDY's space (same budget, dataset and protocol, new seeds), measure them at "
        "initialization only (Ray-parallel, resumable), rank them by predicted test error and write "
        "DIR/ranked.parquet, DIR/predictor.json and DIR/study.yaml (the top K: `archstudy run --config "
        "DIR/study.yaml --out DIR/top` trains them). First it prints the predictor's held-out score and refuses one "
        "not shown to predict. --check K trains the top K, the NLC-window rule's top K and K drawn at random and "
        "prints the lift over each.",
    )
    p.add_argument(
        "--from",
        dest="study",
        required=True,
        metavar="STUDY",
        help="the study to learn from (a directory or URI with trained architectures)",
    )
    p.add_argument(
        "--architectures",
        type=int,
        default=DEFAULT_N,
        metavar="N",
        help="fresh architectures to measure and rank (default %(default)s)",
    )
    p.add_argument(
        "--top",
        type=int,
        metavar="K",
        help=f"architectures in DIR/study.yaml, best predicted first (default {DEFAULT_TOP}, or N if fewer)",
    )
    p.add_argument(
        "--out", metavar="DIR", help="where to write (default: STUDY-rank beside a local STUDY, else ./NAME-rank)"
    )
    p.add_argument(
        "--check",
        type=int,
        metavar="K",
        help="also train the top K, the top K of the NLC-window rule and K drawn at random from the N, "
        "and print the lift of the ranking over each with a paired interval",
    )
    p.add_argument(
        "--learner",
        default="auto",
        metavar="NAME",
        help="the predictor: linear, boosted, window or nlc (analysis.predict.LEARNERS); default "
        "%(default)s: the best the held-out evaluation found (the joint model, a baseline rule such as the NLC "
        "paper's window or a raw metric, or none: then rank refuses), named with its score and why",
    )
    p.add_argument(
        "--allow-weak-predictor",
        action="store_true",
        help="rank even when no predictor beats chance held out (by default rank refuses: such a ranking cannot be "
        "told from a random one); the output then says so in its first line",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="study seed of the fresh draws (default: derived from STUDY's seed, never equal to it)",
    )
    p.add_argument(
        "--root",
        metavar="DIR",
        help="read the dataset's files from DIR (the data must be STUDY's: its fingerprint is checked)",
    )
    add_execution_arguments(p, report=False)
    p.set_defaults(func=command)


def default_out(study: str) -> Path:
    """STUDY-rank beside a local study; NAME-rank in the current directory for an object-storage one."""
    text = os.fspath(study).rstrip("/")
    if "://" in text and not text.startswith("file://"):
        return Path(text.rsplit("/", 1)[-1] + "-rank")
    return Path(text.removeprefix("file://") + "-rank")


def _check_out(text: str, study: str) -> None:
    """Refuse, before anything is written, a DIR that is not rank's to write: a file, a URI (rank writes a local
    directory), a study (its study.yaml would be replaced by the top K's config), or a directory inside a study (a
    study's directory and everything under it belong to that study). DIR may be rank's own output (a study.yaml
    beside its predictor.json): running the same command again resumes it."""
    from ..experiment.location import names_a_uri, study_holding

    out = Path(text)
    if names_a_uri(text):
        raise UserError(f"rank: --out {text}: rank writes a local directory, not a URI; give a directory")
    if out.exists() and not out.is_dir():
        raise UserError(f"rank: --out {out} is a file, not a directory")
    holder = study_holding(out)
    if holder is not None and holder == os.path.abspath(os.path.expanduser(out)):
        raise UserError(
            f"rank: --out {out} is a study (it holds {CONFIG_NAME}); nothing was changed: rank writes the top K's "
            f"config as DIR/{CONFIG_NAME}, which would replace that study's: choose a new directory"
            + (f" (the default is {default_out(study)})" if Path(default_out(study)) != out else "")
        )
    if holder is not None:
        raise UserError(
            f"rank: --out {out} lies inside the study {holder} (it holds {CONFIG_NAME}); nothing was changed: a "
            "study's directory and everything under it belong to that study: choose a directory outside it"
        )


def _grown(directory: Path, wanted: list[int]) -> list[int]:
    """The draws a study in ``directory`` must hold to include ``wanted``: the ones it holds (its list of chosen
    draws, in its order), then the wanted ones it lacks, so that running again extends it (a study's draws only
    grow); ``wanted`` when there is no study yet."""
    path = directory / CONFIG_NAME
    if not path.is_file():
        return list(wanted)
    held = StudyConfig.from_yaml(read_regular(path, config_yaml.MAX_BYTES + 1, "a study.yaml"), where=os.fspath(path))
    old = list(range(held.architectures) if held.indices is None else held.indices[: held.architectures])
    have = set(old)
    return old + [i for i in wanted if i not in have]


def config_of(base: StudyConfig, seed: int, indices: list[int], *, measure_only: bool, root: str | None) -> StudyConfig:
    """STUDY's config for the draws ``indices`` of ``seed``: the same dataset, data, space, budget, protocol and
    metric options; no siblings and no pruning at launch (the predictor decides what is trained)."""
    d = {k: v for k, v in base.to_dict().items() if k not in PROVENANCE_KEYS}
    d.update(
        seed=seed,
        architectures=len(indices),
        indices=list(indices),
        siblings=[],
        nlc_window=None,
        nlc_pilot=DEFAULT_PILOT,
        measure_only=measure_only,
    )
    if root is not None:
        d["root"] = root
    return StudyConfig.from_dict(d)


def _study(config: StudyConfig, out: Path, args):
    from ..execution.driver import run_study

    return run_study(
        config,
        out,
        address=args.address,
        max_in_flight=args.max_in_flight,
        progress=sys.stderr,
        connect_timeout_s=args.connect_timeout_s,
        **execution_of(args),
    )


HELD_OUT_KEY = b"archstudy.held_out"  # ranked.parquet's metadata: the predictor's held-out scores, as JSON


def held_out(results, asked: str, study: str, allow: bool) -> tuple[dict, str]:
    """The held-out evaluation on STUDY (``analysis.predict.predict_study``: repeated grouped cross-validation),
    printed before anything is measured, and the predictor rank will use: with ``--learner auto`` the one the
    evaluation found best (``Prediction.ranker``: the joint model, a baseline rule, or none), named as the folds
    chose it, with its held-out Spearman's rho, its interval and why; with a learner asked, that one. When none
    beats chance (auto) or the asked learner's interval does not lie above 0, rank refuses in one line naming the
    scores, unless ``allow``; then the first line of its output says so. Returns (``Prediction.summary``, the
    learner to fit: ``linear``, ``boosted``, ``window``, ``nlc``, ``rule:NAME`` or ``descriptors``)."""
    from archstudy.analysis.predict import CANNOT_FIT, JOINT, predict_study
    from archstudy.sampling import SpecError

    from ..experiment.terminal import phase

    if not asked.startswith("rule:"):  # a learner that does not exist: one line before anything is evaluated
        from archstudy.analysis.predict import LEARNERS

        check("fit_predictor", "learner", Choice(("auto", "descriptors") + LEARNERS), asked)
    joint = (asked,) if asked in JOINT else JOINT
    learner: str | None
    try:
        what = f"the held-out evaluation on {study} (repeated grouped cross-validation)"
        with phase(sys.stderr, what, in_log=False):  # a refusal follows it: one line in a log
            evaluation = predict_study(results, importance=False, dependence=False, curve=False, joint=joint)
    except SpecError as e:
        evaluation, why = None, str(e)
    if evaluation is None:
        score, line, weak, learner = {"evaluated": False, "why": why}, f"no held-out score: {why}", True, asked
    else:
        score = evaluation.summary()
        learner, line, weak = _chosen(evaluation, asked, CANNOT_FIT)
    if weak and not allow:
        raise UserError(
            f"rank: the predictor of {study}: {line}: its ranking cannot be told from a random one: nothing was "
            "measured (--allow-weak-predictor ranks anyway)"
        )
    if learner in ("auto", None):
        learner = evaluation.best if evaluation is not None else "linear"
    if weak:
        print(
            f"archstudy rank: WARNING: ranking with a predictor that is not shown to predict ({line}): "
            "--allow-weak-predictor was given",
            flush=True,
        )
    print(f"archstudy rank: {line}", file=sys.stderr)
    return score, learner


SHOWN = 10  # rows of the ranking printed (ranked.parquet holds them all)
# The ranking's columns on a terminal: (column, header, width, format); at most 100 characters a line.
RANK_COLUMNS = (
    ("predicted_rank", "rank", 4, "d"),
    ("index", "draw", 7, "d"),
    ("predicted_test_error", "predicted", 9, ".4f"),
    ("depth", "depth", 5, "d"),
    ("width", "width", 5, "d"),
    ("activation", "activation", 10, "s"),
    ("norm", "norm", 5, "s"),
    ("skip", "skip", 12, "s"),
    ("weights", "weights", 11, "s"),
    ("param", "param", 5, "s"),
    ("nlc", "NLC", 8, ".3g"),
)


def top_table(ranked, n: int, learner: str) -> list[str]:
    """The first ``n`` rows of the ranking as the terminal shows them (``RANK_COLUMNS``: the predicted test error, the
    design and the NLC; at most 100 characters a line), after a line naming the predictor."""
    lines = [f"the top {n} of {len(ranked)} by the test error a {learner} predictor predicts:"]
    lines.append(" ".join(f"{h:>{w}}" if f != "s" else f"{h:<{w}}" for _, h, w, f in RANK_COLUMNS).rstrip())
    for r in ranked.head(n).to_dict("records"):
        cells = []
        for col, _, w, f in RANK_COLUMNS:
            v = r.get(col)
            if f == "s":
                cells.append(f"{str(v)[:w]:<{w}}")
            elif v is None or (isinstance(v, float) and v != v):
                cells.append(f"{'–':>{w}}")
            else:
                cells.append(f"{(int(v) if f == 'd' else float(v)):>{w}{f}}")
        lines.append(" ".join(cells).rstrip())
    return lines


WHO = {"joint": "the joint model", "baseline": "the best baseline", "nlc": "NLC alone (the NLC paper's window [1, 3])"}


def _chosen(evaluation, asked: str, cannot_fit: str) -> tuple[str | None, str, bool]:
    """(the learner to fit, the line that says what ranks and with which held-out score, whether it is weak)."""
    s = evaluation.scores.set_index("learner")
    setup = (
        f"{evaluation.folds}-fold grouped cross-validation over {evaluation.groups} base architectures, "
        f"{evaluation.repeats} fold seeds"
    )
    if asked == "auto":
        if evaluation.ranker is None:
            return None, f"no predictor beats chance held out ({setup}): {evaluation.ranker_why}", True
        row = _row_of(evaluation.ranker)
        r = s.loc[row]
        return (
            evaluation.ranker,
            (
                f"ranking with {WHO[row]}: {_named(evaluation, row)}, held-out Spearman ρ = {r['spearman']:.2f} "
                f"[{r['spearman_lo']:.2f}, {r['spearman_hi']:.2f}] ({setup}{_top(evaluation, row)}); why: "
                f"{evaluation.ranker_why}"
            ),
            False,
        )
    if asked not in s.index or asked not in ("linear", "boosted"):
        return asked, f"the {asked} learner (a single metric's fitted window) has no held-out evaluation", True
    r = s.loc["joint"]
    if r["status"] == cannot_fit or not math.isfinite(r["spearman"]):
        return asked, f"the {asked} predictor cannot fit (constant predictions in a held-out fold)", True
    line = (
        f"the {asked} predictor: held-out Spearman ρ = {r['spearman']:.2f} [{r['spearman_lo']:.2f}, "
        f"{r['spearman_hi']:.2f}] ({setup}{_top(evaluation, 'joint')})"
    )
    return asked, line, not (math.isfinite(r["spearman_lo"]) and r["spearman_lo"] > 0)


def _row_of(ranker: str) -> str:
    """The row of the evaluation a ranker's score is: the joint model's for a joint learner, NLC alone's for the
    NLC paper's window, else the best baseline's (the rule the folds chose most often)."""
    if ranker in ("linear", "boosted"):
        return "joint"
    return "nlc" if ranker == "rule:nlc" else "baseline"


def _named(evaluation, row: str) -> str:
    """What the folds actually chose for ``row``: the learner or rule, and in how many of the training folds."""
    from archstudy.analysis.predict import LABELS

    if row == "nlc":
        return "the rule itself, nothing chosen"
    picked = [c for c in evaluation.cv.picked.get(row, []) if c]
    chosen = evaluation.cv.most_picked(row)
    return f"{LABELS.get(chosen, chosen)}, chosen in {picked.count(chosen)} of {len(picked)} training folds"


def _top(evaluation, row: str) -> str:
    """The precision of the top K of ``row``'s ranking held out, with its interval, beside chance."""
    if not len(evaluation.ranking):
        return ""
    top = evaluation.ranking[evaluation.ranking["learner"] == row]
    return "".join(
        f"; precision of its top {int(t['k'])}: {t['precision']:.2f} [{t['precision_lo']:.2f}, "
        f"{t['precision_hi']:.2f}] (chance {t['chance']:.2f})"
        for _, t in top.iterrows()
    )


def too_small(k: int) -> bool:
    """Whether a check of K architectures per set cannot tell anything (``too_small_line``)."""
    from archstudy.analysis.predict.lift import smallest_rank_sum_p

    return smallest_rank_sum_p(k, k) > 0.05


def too_small_line(k_top: int, k_other: int) -> str:
    """What a check of so few architectures can tell: nothing, when even a perfect separation of the two sets
    could not make the exact rank-sum test significant (``analysis.predict.lift.smallest_rank_sum_p``)."""
    from archstudy.analysis.predict.lift import smallest_rank_sum_p, smallest_useful_k

    p = smallest_rank_sum_p(k_top, k_other)
    return (
        f"K = {k_top} is too small to tell anything: with {k_top} and {k_other} architectures the smallest possible "
        f"p of the rank-sum test is 2/C({k_top + k_other},{k_top}) = {p:.2g} > 0.05, whatever the errors "
        f"(--check {smallest_useful_k()} at least)"
    )


def nlc_rule_top(ranked, k: int) -> list[int]:
    """The top K of the simple NLC rule (the NLC paper's window [1, 3]): the draws whose NLC lies nearest the window
    (distance in decades, 0 inside; ``analysis.predict.NLC_RULE``), ties in the ranking's order, no NLC last."""
    import numpy as np

    from archstudy.analysis.predict import NLC_RULE

    d = NLC_RULE.values(ranked)
    order = np.lexsort((np.arange(len(d)), np.where(np.isfinite(d), d, np.inf)))
    return [int(i) for i in ranked["index"].to_numpy()[order][:k]]


def write_ranked(ranked, path: Path, score: dict | None) -> None:
    """``ranked`` as Parquet with the predictor's held-out scores in its metadata (``HELD_OUT_KEY``, JSON)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(ranked, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[HELD_OUT_KEY] = json.dumps(score or {}).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def command(args) -> int:
    status = Status()
    # At once on a terminal, before the analysis libraries and the study's tables load (seconds on a busy machine).
    status.now(f"rank: reading {args.study} and loading the predictor's libraries ...")
    try:
        from archstudy.analysis.predict import fit_predictor, fit_rows, paired_lift, rank_rows
        from archstudy.analysis.results import load_results
    finally:
        status.clear()

    from ..experiment.location import RANK_MARK, open_location
    from ..experiment.terminal import phase
    from ..execution.ray_session import ray_session

    n = check("rank", "architectures", Integer(1, MAX_ARCHITECTURES), args.architectures)
    top = min(DEFAULT_TOP, n) if args.top is None else check("rank", "top", Integer(1, n), args.top)
    k = None if args.check is None else check("rank", "check", Integer(1, n), args.check)
    if k is not None and too_small(k):
        print(f"archstudy rank: check: {too_small_line(k, k)}", file=sys.stderr)
    out = Path(args.out) if args.out else default_out(args.study)
    open_location(args.study)  # a malformed location is one line (study.experiment.location), as for every command
    _check_out(args.out or os.fspath(out), args.study)

    status.now(f"rank: reading {args.study} ...")
    try:
        results = load_results(args.study, runs=False)
    finally:
        status.clear()
    base = StudyConfig.from_dict(results.config)
    if base.measure_only:
        raise UserError(
            f"rank: {args.study} measured its architectures without training them (`archstudy rank` "
            "made it): learn from a study of trained architectures"
        )
    score, learner = held_out(results, args.learner, args.study, args.allow_weak_predictor)
    with phase(sys.stderr, f"fitting the {learner} predictor on {args.study}", in_log=False):
        predictor = fit_predictor(results, learner)
    predictor.held_out = score
    seed = fresh_seed(base.seed) if args.seed is None else check("rank", "seed", Integer(0, 2**63 - 1), args.seed)
    if seed == base.seed:
        raise UserError(f"rank: --seed {seed} is STUDY's own seed: its draws are in STUDY")
    held = {
        u.spec.content_id
        for u in plan_study(
            base.seed,
            base.architectures,
            cast(int, base.d_in),  # a study's config holds its data's dimensions
            cast(int, base.d_out),
            base.space_obj,
            base.param_budget,
            base.siblings,
            indices=base.indices,
        )
    }
    held |= set(results.architectures["arch_id"].astype(str))
    wanted = fresh_indices(
        seed, n, cast(int, base.d_in), cast(int, base.d_out), base.space_obj, base.param_budget, held
    )
    print(
        f"archstudy rank: {predictor.learner} predictor fitted on {predictor.source['rows']} trained architectures "
        f"of {args.study}; measuring {n} fresh architectures (study seed {seed}) at initialization in "
        f"{out / MEASURED}",
        file=sys.stderr,
    )

    import ray

    with contextlib.ExitStack() as session:
        if ray.is_initialized():
            session.enter_context(ray_session(args.address))
        else:  # one Ray for the measuring and the check's training; seconds, a minute on a loaded machine
            label = f"joining the Ray cluster at {args.address}" if args.address else "starting Ray here"
            with phase(sys.stderr, label, in_log=False):
                session.enter_context(ray_session(args.address))
        measured_config = config_of(base, seed, _grown(out / MEASURED, wanted), measure_only=True, root=args.root)
        done = _study(measured_config, out / MEASURED, args)
        # Written once the measured study has accepted the data (a wrong --root is refused before any write).
        predictor.save(out / RANK_MARK)
        measured = load_results(out / MEASURED, runs=False).architectures
        measured = measured[measured["index"].isin(wanted)]
        ranked = rank_rows(predictor, measured)
        write_ranked(ranked, out / "ranked.parquet", predictor.held_out)
        best = ranked["index"].astype(int).tolist()[:top]
        top_config = config_of(base, seed, best, measure_only=False, root=None)
        top_keys = {k: v for k, v in top_config.to_dict().items() if k not in RECORDED_KEYS}
        write_whole(
            out / CONFIG_NAME,
            f"# archstudy rank: the top {len(best)} of {len(ranked)} fresh architectures (study seed {seed}) by the "
            f"predicted test error of a {predictor.learner} predictor fitted on {args.study}.\n"
            f"# Train them as a study: archstudy run --config {out / CONFIG_NAME} --out {out / 'top'}\n"
            + config_yaml.dump(top_keys),
            "a study.yaml",
        )
        missing = f" ({n - len(ranked)} failed: `archstudy status {out / MEASURED}`)" if len(ranked) < n else ""
        print(
            f"wrote {out / 'ranked.parquet'} ({len(ranked)} architectures{missing}), {out / 'predictor.json'}, "
            f"{out / CONFIG_NAME} (the top {len(best)}: archstudy run --config {out / CONFIG_NAME} --out "
            f"{out / 'top'})"
        )
        print("\n".join(top_table(ranked, min(len(best), SHOWN), predictor.learner)))
        if k is None:
            return 0 if done.complete else 1
        import numpy as np

        pool = ranked["index"].astype(int).to_numpy()
        chosen = ranked["index"].astype(int).tolist()[:k]
        by_nlc = nlc_rule_top(ranked, k)
        drawn = (
            np.random.default_rng([seed, CHECK_SEED])
            .choice(np.sort(pool), size=min(k, len(pool)), replace=False)
            .tolist()
        )
        union = list(dict.fromkeys(chosen + by_nlc + drawn))
        checked = _study(
            config_of(base, seed, _grown(out / CHECK, union), measure_only=False, root=args.root), out / CHECK, args
        )
    trained = fit_rows(load_results(out / CHECK, runs=False)).set_index("index")["test_error"]
    errors = {int(i): float(e) for i, e in trained.items()}
    report: dict = {
        "top_indices": chosen,
        "nlc_rule_indices": by_nlc,
        "drawn_indices": drawn,
        "study_seed": seed,
        "learner": predictor.learner,
        "source": args.study,
        "held_out": predictor.held_out,
    }
    for name, other in (("nlc_rule", by_nlc), ("random", drawn)):
        report[name] = paired_lift(errors, chosen, other, seed=seed)
    write_whole(out / "check.json", json.dumps(report, indent=1) + "\n", "rank's check")
    for name, what in (("nlc_rule", "by the NLC-window rule"), ("random", "drawn at random")):
        r = report[name]
        print(
            f"check: the top {r['n_top']} by prediction: median test error {r['top']:.4f}; {r['n_other']} {what}: "
            f"median {r['other']:.4f}; lift ({name.replace('_', ' ')} - top) {r['lift']:+.4f} "
            f"[{r['lift_lo']:+.4f}, {r['lift_hi']:+.4f}] (95% paired bootstrap; rank-sum p {r['p_rank_sum']:.2g}; "
            f"{r['shared']} in both; {out / 'check.json'})"
            + (f"; {too_small_line(r['n_top'], r['n_other'])}" if r["too_small"] else "")
        )
    return 0 if done.complete and checked.complete else 1
