"""``make bench`` runs in production's configuration or not at all (issue 40).

Without PostgreSQL or Redis it must stop at once, saying which is missing and
where the SQLite benches are, never run them on SQLite in its place; and the
page it writes keeps each bench's last run, so a run of one bench replaces
only that bench's section.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import run_all


def test_without_redis_make_bench_stops_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []

    def run_one(script: Path, args: list[str], **_: object) -> tuple[str, int, float]:
        ran.append(script.stem)
        return "", 0, 0.0

    monkeypatch.setattr(run_all, "run_one", run_one)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there

    assert run_all.main([]) == 2

    said = capsys.readouterr().err
    assert "Redis at redis://127.0.0.1:1/0" in said
    assert "make bench-sqlite" in said
    assert ran == []


def test_the_sqlite_run_is_the_other_benches(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def run_one(script: Path, args: list[str], **_: object) -> tuple[str, int, float]:
        ran.append(script.stem)
        return "", 0, 0.0

    monkeypatch.setattr(run_all, "run_one", run_one)

    assert run_all.main(["--sqlite"]) == 0

    production = {b.name for b in run_all.PRODUCTION}
    assert "edge_floor" in ran
    assert "team_verdict" in ran
    assert not production & set(ran)
    assert not run_all.NOT_A_BENCH & set(ran)


def test_a_run_of_one_bench_keeps_the_others_on_the_page(tmp_path: Path) -> None:
    page = tmp_path / "make_bench.md"
    first = {b.name: _facts(b, "first") for b in run_all.PRODUCTION}
    page.write_text(run_all.production_page(first))
    again = run_all.kept_runs(page)
    again["cold_path"] = _facts(run_all.BY_NAME["cold_path"], "second")
    page.write_text(run_all.production_page(again))

    kept = run_all.kept_runs(page)

    assert set(kept) == set(first)
    assert kept["cold_path"]["output"] == "second"
    assert kept["edge_production"]["output"] == "first"
    assert page.read_text().count("## ") == len(run_all.PRODUCTION)


def _facts(bench: run_all.Bench, output: str) -> dict[str, object]:
    return run_all.ran_facts(bench, ["--x"], output, 1.0, 0, "0.00 0.00 0.00")
