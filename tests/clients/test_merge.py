"""``python -m tests.clients.run --only KEYS --write docs/clients.md``: the
rows of the tools run replace theirs, every other row stays as written before."""

from __future__ import annotations

from tests.clients import run

HEAD = "| tool | version | state | exit | the user saw | upstream | helpers | what | result |"
RULE = "| --- | --- | --- | ---: | --- | ---: | ---: | --- | --- |"


def page(stamp: str, *rows: str) -> str:
    cursor = f"| cursor | | | | | | | | {run.NOT_RUN['cursor']} |"
    lines = ["# The real tools", "", f"Run of {stamp}.", "", HEAD, RULE, *rows, cursor, ""]
    return "\n".join(lines)


def test_a_partial_run_replaces_its_own_rows_and_keeps_the_others() -> None:
    before = page(
        "2026-12-04 19:59 UTC, 302 s",
        "| aider | 1 | off duty | 0 | old | 0 | 0 | x | pass |",
        "| codex-hooks | 1 | off duty | 0 | old | 0 | 0 | x | **FAIL**: old |",
        "| llm | 1 | off duty | 0 | old | 0 | 0 | x | pass |",
        "| codex-hooks | 1 | on duty | 0 | old | 1 | 0 | x | pass |",
    )
    now = page(
        "2026-12-05 00:54 UTC, 145 s",
        "| codex-hooks | 2 | off duty | 0 | new | 0 | 0 | x | pass |",
        "| opencode-plugin | 2 | off duty | 1 | new | 0 | 0 | x | pass |",
    )
    text = run.merged(before, now, {"codex-hooks", "opencode-plugin"})
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == [
        HEAD,
        "| aider | 1 | off duty | 0 | old | 0 | 0 | x | pass |",
        "| codex-hooks | 2 | off duty | 0 | new | 0 | 0 | x | pass |",
        "| opencode-plugin | 2 | off duty | 1 | new | 0 | 0 | x | pass |",
        "| llm | 1 | off duty | 0 | old | 0 | 0 | x | pass |",
        f"| cursor | | | | | | | | {run.NOT_RUN['cursor']} |",
    ]
    assert (
        "Run of 2026-12-05 00:54 UTC, 145 s (codex-hooks, opencode-plugin); "
        "the other rows from the run of 2026-12-04 19:59 UTC, 302 s." in text
    )
    # The same tools run again: the other rows are still from that run.
    again = run.merged(text, now, {"codex-hooks", "opencode-plugin"})
    assert "the other rows from the run of 2026-12-04 19:59 UTC, 302 s." in again
    assert again.count("| codex-hooks |") == 1
    # Other tools run: the other rows are no longer from one run.
    other = run.merged(text, now, {"codex-hooks"})
    assert "the other rows from earlier runs" in other
