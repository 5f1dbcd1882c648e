"""The live view's change detection, state and JSON (``analysis.live_view``), against a synthetic study written
through the store's own write path (``study.perf.synthetic_store``), a unit of it taken out and committed back as
the driver commits a finished unit (``Store.write_tables``)."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats

from archstudy.analysis import live_view as lv
from archstudy.study.execution.store import ARCHITECTURES, CURVES, RUNS, Store
from archstudy.study.perf.synthetic_store import synthetic_config, write_synthetic_study

N, NUM_LRS = 8, 4


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("live") / "study"
    write_synthetic_study(str(out), N, num_lrs=NUM_LRS)
    return out


def held_back(finished: Path, tmp_path: Path, k: int = 1) -> tuple[Path, list[tuple[str, dict]]]:
    """A copy of the study without its last ``k`` units, and each unit's name and tables to commit it later."""
    study = tmp_path / "study"
    shutil.copytree(finished, study)
    names = sorted(p.stem for p in (study / ARCHITECTURES).glob("*.parquet"))
    names = names[len(names) - k :]
    out = []
    for name in names:
        tables = {kind: pq.read_table(study / kind / f"{name}.parquet") for kind in (ARCHITECTURES, RUNS, CURVES)}
        for kind in tables:
            (study / kind / f"{name}.parquet").unlink()
        out.append((name, tables))
    return study, out


def commit(study: Path, name: str, tables: dict) -> None:
    """Commit a finished unit as the driver does (runs, curves, then the architectures file)."""
    science = synthetic_config(N, num_lrs=NUM_LRS).science_json
    Store(str(study)).write_tables(
        name, tables[ARCHITECTURES], {RUNS: tables[RUNS], CURVES: tables[CURVES]}, science=science
    )


def test_the_listing_changes_with_a_finished_failed_or_started_unit_and_nothing_else(finished, tmp_path):
    study, [(name, tables)] = held_back(finished, tmp_path)
    before = lv.listing(str(study))
    assert sum(n.startswith("architectures/") for n, _ in before) == N - 1
    assert ("report.html", -1) in before and dict(before)["study.yaml"] > 0

    (study / ARCHITECTURES / f".{name}.parquet.tmp-1-abc").write_bytes(b"in flight")  # a write in flight
    (study / "runs" / f"{name}.parquet").write_bytes(b"x")  # the commit point is the architectures file
    assert lv.listing(str(study)) == before

    (study / "progress").mkdir(exist_ok=True)
    (study / "progress" / f"{name}.json").write_text("{}")  # the unit started
    started = lv.listing(str(study))
    assert started != before and lv.in_flight(started) == {name.split("-", 1)[1]}
    (study / "progress" / f"{name}.json").write_text('{"epoch": 3}')  # rewritten every few seconds
    (study / "checkpoints").mkdir(exist_ok=True)
    (study / "checkpoints" / f"{name}.pt").write_bytes(b"x")
    checkpointed = lv.listing(str(study))
    (study / "checkpoints" / f"{name}.pt").write_bytes(b"x" * 100)  # the trainer rewrites it as it trains
    assert lv.listing(str(study)) == checkpointed and lv.in_flight(checkpointed) == lv.in_flight(started)
    (study / "runs" / f"{name}.parquet").unlink()

    commit(study, name, tables)
    done = lv.listing(str(study))
    assert done != checkpointed and sum(n.startswith("architectures/") for n, _ in done) == N

    (study / "report.html").write_text("<html></html>")
    assert dict(lv.listing(str(study)))["report.html"] == len("<html></html>")


def test_the_watcher_reloads_only_when_the_listing_changed(finished, tmp_path):
    study, [(name, tables)] = held_back(finished, tmp_path)
    w = lv.Watcher(str(study))
    assert w.check() and w.version == 1 and w.reloads == 1
    assert not w.check() and w.version == 1 and w.reloads == 1  # nothing changed: no reload
    assert json.loads(w.since(1)) == {"version": 1, "error": None}
    first = json.loads(w.since(0))
    assert first["version"] == 1 and first["progress"]["finished"] == N - 1
    assert name.split("-", 1)[1] not in first["data"]["columns"]["arch_id"]

    commit(study, name, tables)
    assert w.check() and w.version == 2 and w.reloads == 2
    after = json.loads(w.since(1))
    assert after["progress"]["finished"] == N and after["progress"]["remaining"] == 0 and after["progress"]["complete"]
    assert name.split("-", 1)[1] in after["data"]["columns"]["arch_id"]


def test_a_failed_reload_keeps_the_last_state_and_says_why(finished, tmp_path):
    study, [(name, tables)] = held_back(finished, tmp_path)
    w = lv.Watcher(str(study))
    w.check()
    (study / ARCHITECTURES / f"{name}.parquet").write_bytes(b"PAR1 not parquet")  # listed as corrupt, not fatal
    yaml_text = (study / "study.yaml").read_text()
    (study / "study.yaml").write_text("architectures: [\n")  # unreadable config: the reload fails
    assert w.check()
    body = json.loads(w.since(0))
    assert body["error"] and "study.yaml" in body["error"] and body["progress"]["finished"] == N - 1
    assert json.loads(w.since(body["version"]))["error"] == body["error"]  # said in the short answer too
    assert not w.check()  # the same failure again: nothing new to say, and the study is read again at each check
    (study / "study.yaml").write_text(yaml_text)  # mended, with no other change to the listing: read and shown
    assert w.check() and json.loads(w.since(0))["error"] is None


def test_the_state_is_the_study_as_read(finished):
    """Progress counts from the files; each scatter panel's tau is Kendall's tau-b of its column with test error
    (scipy, independently); the leaderboard is the trained architectures by test error."""
    from archstudy.analysis import load_results

    state = json.loads(lv.json_bytes(lv.snapshot(str(finished))))
    arch = load_results(finished, runs=False).trained
    p = state["progress"]
    assert (p["finished"], p["trained"], p["running"], p["failed"], p["planned"], p["remaining"]) == (N, N, 0, 0, N, 0)
    assert p["eta"] is None  # nothing running
    panels = state["data"]["scatter"]
    assert panels and {"nlc", "bias"} <= {q["col"] for q in panels}
    for q in panels:
        x, y = arch[q["col"]].to_numpy(np.float64), arch["test_error"].to_numpy(np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        tau = stats.kendalltau(x[ok], y[ok]).statistic
        assert q["tau"] == pytest.approx(tau, rel=1e-3, abs=1e-4), q["col"]
    best = arch.sort_values("test_error")["arch_id"].tolist()
    html = state["leaderboard"]
    assert [html.index(a) for a in best] == sorted(html.index(a) for a in best)
    assert state["shown"] == N


def test_progress_counts_running_failed_and_remaining(finished, tmp_path):
    """Running: a unit with a checkpoint or a progress record (or both), not one that finished or failed."""
    study, held = held_back(finished, tmp_path, k=4)
    for sub in ("checkpoints", "progress", "failed"):
        (study / sub).mkdir(exist_ok=True)
    (study / "checkpoints" / f"{held[0][0]}.pt").write_bytes(b"x")
    (study / "progress" / f"{held[0][0]}.json").write_text("{}")
    (study / "progress" / f"{held[1][0]}.json").write_text("{}")
    (study / "failed" / f"{held[2][0]}.json").write_text(json.dumps({"reason": "diverged"}))
    (study / "progress" / f"{held[2][0]}.json").write_text("{}")  # failed: not running
    first = sorted(p.stem for p in (study / ARCHITECTURES).glob("*.parquet"))[0]
    (study / "checkpoints" / f"{first}.pt").write_bytes(b"x")  # finished (its checkpoint not yet deleted)
    p = lv.snapshot(str(study))["progress"]
    assert (p["finished"], p["running"], p["failed"], p["remaining"]) == (N - 4, 2, 1, 1)


def test_the_eta_is_the_recent_mean_interval_times_what_remains():
    t0 = pd.Timestamp("2026-11-28T01:00:00Z")
    stamps = pd.Series([t0 + pd.Timedelta(seconds=10 * k) for k in (4, 0, 3, 1, 2)])  # order does not matter
    assert lv.recent_rate_eta(stamps, left=7, running=2) == {"seconds": 7 * 40 / 4, "over": 5}
    many = pd.Series([t0 + pd.Timedelta(seconds=k * k) for k in range(30)])  # the last ETA_WINDOW finishes only
    first, last = 30 - lv.ETA_WINDOW, 29
    expected = 5 * (last**2 - first**2) / (lv.ETA_WINDOW - 1)
    assert lv.recent_rate_eta(many, left=5, running=1)["seconds"] == pytest.approx(expected, rel=1e-12)
    assert lv.recent_rate_eta(stamps, left=7, running=0) is None  # nothing running: no rate to go on
    assert lv.recent_rate_eta(stamps, left=0, running=2) is None
    assert lv.recent_rate_eta(stamps[:2], left=7, running=2) is None  # too few finishes
    assert lv.recent_rate_eta(pd.Series([t0] * 5), left=7, running=2) is None  # one instant: no rate


def test_a_slow_reload_spaces_the_checks_out():
    assert lv.pause(3.0, 0.0) == 3.0 and lv.pause(3.0, 1.0) == 3.0
    busy = lv.pause(3.0, 5.0)
    assert busy == lv.RELOAD_SHARE * 5.0 and 5.0 / (5.0 + busy) == pytest.approx(1 / (1 + lv.RELOAD_SHARE))


def test_the_server_answers_the_page_the_json_and_the_report(finished, tmp_path):
    study, _ = held_back(finished, tmp_path, k=0)

    def files() -> dict[str, tuple[int, int]]:
        return {str(f): (f.stat().st_size, f.stat().st_mtime_ns) for f in study.rglob("*") if f.is_file()}

    before = files()
    server = lv.LiveServer(str(study), port=0).start(watch=False)
    try:
        assert server.host == "127.0.0.1"
        page = urllib.request.urlopen(server.url).read().decode()
        assert page.count("Plotly") > 0 and page.count("<script>") == 3  # Plotly.js, the report's script, ours
        body = json.loads(urllib.request.urlopen(server.url + "data.json?since=0").read())
        assert body["version"] == 1 and body["report"] is False
        short = json.loads(urllib.request.urlopen(server.url + "data.json?since=1").read())
        assert short == {"version": 1, "error": None}
        rebound = urllib.request.Request(server.url, headers={"Host": f"attacker.example:{server.port}"})
        with pytest.raises(urllib.error.HTTPError, match="403"):  # DNS rebinding: another name for 127.0.0.1
            urllib.request.urlopen(rebound)
        named = urllib.request.Request(server.url + "data.json", headers={"Host": f"localhost:{server.port}"})
        assert json.loads(urllib.request.urlopen(named).read())["version"] == 1
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.url + "report.html")
        assert files() == before  # read only
        (study / "report.html").write_text("<p>the full report</p>")
        server.watcher.check()
        assert json.loads(urllib.request.urlopen(server.url + "data.json?since=1").read())["report"] is True
        assert urllib.request.urlopen(server.url + "report.html").read() == b"<p>the full report</p>"
    finally:
        server.stop()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None


@pytest.mark.skipif(sync_playwright is None, reason="the playwright Python package is not installed")
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package 'chromium')")
def test_the_live_page_shows_a_unit_that_finished_after_it_was_opened(finished, tmp_path):
    """In headless Chromium (the system's, no browser download): the page draws the study, then a unit is committed
    through the store's write path, and the page shows it (progress, leaderboard, every scatter plot) without being
    reloaded; nothing is fetched but from the server, no script fails, the page fits 1280 px."""
    study, [(name, tables)] = held_back(finished, tmp_path)
    arch_id = name.split("-", 1)[1]
    server = lv.LiveServer(str(study), port=0, poll_s=0.2).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(120_000)  # a loaded machine parses the 5 MB of Plotly.js slowly
            errors, fetched = [], []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def route(r):  # offline: only the server itself answers
                if r.request.url.startswith(server.url):
                    r.continue_()
                else:
                    fetched.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(server.url)
            panels = len(json.loads(server.watcher.since(0))["data"]["scatter"])
            drawn = f"document.querySelectorAll('#scatter .iplot .scatterlayer').length === {panels}"
            page.wait_for_function(f"document.querySelector('main').dataset.version === '1' && {drawn}")
            assert page.locator("#n-finished").text_content() == str(N - 1)
            assert arch_id not in page.locator("#leaderboard").text_content()
            page.evaluate("window.openedOnce = true")  # gone if the page reloads

            commit(study, name, tables)
            page.wait_for_function(f"document.getElementById('leaderboard').textContent.includes('{arch_id}')")
            assert page.evaluate("window.openedOnce === true")  # shown without a reload
            assert page.locator("#n-finished").text_content() == str(N)
            assert page.locator("#caution").text_content().startswith(f"caution: only {N} trained")  # N < FEW
            assert page.locator("#n-remaining").text_content() == "0"
            points = page.evaluate("[...document.querySelectorAll('#scatter .iplot')].map(d => +d.dataset.points)")
            assert len(points) == panels and max(points) == N
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            assert not fetched, fetched
            assert not errors, errors
            browser.close()
    finally:
        server.stop()


def test_the_running_units_and_the_drivers_forecast_are_taken_at_every_check_without_a_reload(finished, tmp_path):
    """A running unit's progress record and the driver's forecast (``driver.json``'s ``eta_s``, the command line's
    ETA) change without the listing changing: each check takes them (a new version, no reload of the study); the
    forecast is counted down from its heartbeat, and a driver gone (its heartbeat stale) has none."""
    import time

    from archstudy.study.execution.state import STALE_S

    study, [(name, _)] = held_back(finished, tmp_path)
    (study / "progress").mkdir(exist_ok=True)
    record = study / "progress" / f"{name}.json"
    rec = {"stage": "training", "epoch": 3, "max_epochs": 15, "live_runs": 8, "total_runs": 16}
    record.write_text(json.dumps(rec))
    beat = time.time() - 5.0
    driver = {"running": True, "heartbeat_unix": beat, "eta_s": 125.0}
    (study / "driver.json").write_text(json.dumps(driver))
    w = lv.Watcher(str(study))
    assert w.check() and w.reloads == 1
    live = json.loads(w.since(0))["live"]
    index = int(name.split("-")[0])
    assert live["units"] == [{"unit": name, "label": f"#{index}", "text": "epoch 3/15, 8 of 16 runs live"}]
    assert 119.0 <= live["driver_eta"]["seconds"] <= 120.0 + 1e-6 and live["driver_eta"]["eta_s"] == 125.0
    assert not w.check()  # the same record and forecast: nothing new (the countdown is the page's)
    record.write_text(json.dumps(rec | {"epoch": 4, "live_runs": 6}))
    assert w.check() and w.reloads == 1 and w.version == 2
    assert json.loads(w.since(1))["live"]["units"][0]["text"] == "epoch 4/15, 6 of 16 runs live"
    (study / "driver.json").write_text(json.dumps(driver | {"heartbeat_unix": time.time() - STALE_S - 1}))
    assert w.check() and json.loads(w.since(2))["live"]["driver_eta"] is None and w.reloads == 1
    assert lv.unit_text({"stage": "measuring"}) == "measuring"
