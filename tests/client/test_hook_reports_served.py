"""``curfew hook`` against the real app: a decision made from the hook's
cached verdict is spooled, sent by ``curfew_cli.reports`` (its own urllib
request, not the gateway client's) and lands in the ledger once, beside the
server's own row for the verdict the hook asked for; and every report the
hook makes validates against the served OpenAPI document (the command cannot
import the server's model: this keeps the two from drifting)."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from curfew_cli import reports
from curfew_cli.config import load
from curfew_cli.hooks import run

from curfew_testkit.server import ServedApp

EVENT: dict[str, Any] = {
    "session_id": "hook-ledger-s",
    "transcript_path": "/home/ada/.claude/projects/app/s.jsonl",
    "cwd": "/home/ada/app",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_01",
}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _rows(app: ServedApp, token: str, want: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        page = httpx.get(
            f"{app.base_url}/api/v1/decisions",
            params={"session_id": str(EVENT["session_id"]), "per_page": 100},
            headers=_auth(token),
            timeout=10,
        )
        assert page.status_code == 200, page.text
        rows: list[dict[str, Any]] = page.json()["decisions"]
        if len(rows) >= want or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_a_cached_hook_decision_lands_in_the_ledger_once(
    api_app: ServedApp, tmp_path: Path
) -> None:
    token = api_app.create_user(f"hook-ledger-{secrets.token_hex(4)}")
    answer = httpx.post(
        f"{api_app.base_url}/api/v1/overrides",
        json={"debug": "2026-09-30 04:00"},  # asleep: the hook denies tools
        headers=_auth(token),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    env = {
        "CURFEW_URL": api_app.base_url,
        "CURFEW_TOKEN": token,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path),
    }
    raw = json.dumps(EVENT)
    said = [json.loads(run("claude-code", raw, env)) for _ in range(3)]  # asked, then cached x2
    for out in said:
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    settings = load(env)
    cache = str(tmp_path / "cache" / "curfew")
    where = reports.folder(cache, settings.identity)
    names = sorted(reports.waiting(where))
    assert len(names) == 2
    spooled = [json.loads((Path(where) / name).read_text()) for name in names]

    document = httpx.get(f"{api_app.base_url}/api/v1/openapi.json", timeout=10).json()
    operation = document["paths"]["/decisions"]["post"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    jsonschema.Draft202012Validator({"$ref": ref, "components": document["components"]}).validate(
        {"decisions": spooled}
    )

    assert reports.flush(settings, where) == 2  # the real request (urllib)
    assert reports.waiting(where) == []
    rows = _rows(api_app, token, 3)
    reported = sorted(row["id"] for row in rows if row["origin"] == "gateway")
    assert reported == sorted(report["id"] for report in spooled)
    [server_row] = [row for row in rows if row["origin"] != "gateway"]
    assert (server_row["origin"], server_row["action"]) == ("verdict", "short-circuit")
    # Sent again (a flusher killed before it deleted them): stored once.
    again = httpx.post(
        f"{api_app.base_url}/api/v1/decisions",
        json={"decisions": spooled},
        headers=_auth(token),
        timeout=10,
    )
    assert again.json() == {"received": 2, "stored": 0}
