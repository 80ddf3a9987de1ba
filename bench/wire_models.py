"""What declaring the verdict as a pydantic model costs per verdict, against the
hand-written dict it replaced (``Verdict.as_dict`` + ``json.dumps``).

    .venv/bin/python -m bench.wire_models [--count 20000]

On a winding verdict (every field set that can be, the heaviest ordinary
answer) and an off-duty one (carries the synthetic stream): serialise on the
server, parse on the client. Microseconds per verdict, best of five runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import timeit
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from curfew_client.wire import VerdictAnswer, synthetic_stream
from pydantic import TypeAdapter

from curfew_core.engine import RequestContext, Verdict, decide

SHANGHAI = ZoneInfo("Asia/Shanghai")


def legacy_as_dict(verdict: Verdict) -> dict[str, Any]:
    """The engine's ``as_dict`` as it was before the wire model (the baseline)."""
    return {
        "state": verdict.state.value,
        "schedule_state": verdict.schedule_state.value,
        "action": verdict.action.value,
        "reply": verdict.reply,
        "stream": synthetic_stream(verdict.reply) if verdict.reply is not None else None,
        "max_tokens": verdict.max_tokens,
        "persona": verdict.persona,
        "tools": verdict.tools,
        "reasoning_effort": verdict.reasoning_effort,
        "progress": None if verdict.progress is None else round(verdict.progress, 4),
        "peak": verdict.peak,
        "reason": verdict.reason,
        "exempt": verdict.exempt,
        "dry_run": verdict.dry_run,
        "valid_until": verdict.valid_until.isoformat(),
        "at": verdict.at.isoformat(),
        "budget": verdict.budget,
        "override": verdict.override,
        "override_until": None
        if verdict.override_until is None
        else verdict.override_until.isoformat(),
        "debug_at": None if verdict.debug_at is None else verdict.debug_at.isoformat(),
        "would": verdict.would,
    }


def best_us(call: Callable[[], object], count: int) -> float:
    runs = timeit.repeat(call, number=count, repeat=5)
    return min(runs) / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20000)
    args, _ = parser.parse_known_args()
    # The server's own mapping (selectors.verdicts.verdict_answer) is measured,
    # not a copy of it: that needs Django's settings, not a database.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings_test")
    import django

    django.setup()
    from curfew_core.schedules import config as schedule_config
    from curfew_core.selectors.verdicts import verdict_answer

    def fields(verdict: Verdict) -> dict[str, Any]:
        return dict(verdict_answer(verdict, max_age=60))

    schedule = schedule_config.build(schedule_config.with_defaults({}))
    adapter = TypeAdapter(VerdictAnswer)
    cases = {
        "winding": decide(
            datetime(2026, 9, 29, 23, 30, tzinfo=SHANGHAI),
            schedule,
            RequestContext(max_tokens=4096),
        ),
        "off-duty": decide(datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI), schedule),
    }
    print(f"{'µs per verdict':<58}{'winding':>10}{'off-duty':>10}")
    rows: dict[str, list[float]] = {}
    for name, verdict in cases.items():
        wire = json.dumps({**legacy_as_dict(verdict), "max_age": 60}, ensure_ascii=False)
        model = VerdictAnswer(**fields(verdict))
        assert json.loads(model.model_dump_json()) == json.loads(wire), name

        def legacy_parse(wire: str = wire) -> object:
            payload = json.loads(wire)
            datetime.fromisoformat(payload["valid_until"])
            datetime.fromisoformat(payload["at"])
            return payload

        timings = {
            "server, before: as_dict + json.dumps": lambda v=verdict: json.dumps(
                {**legacy_as_dict(v), "max_age": 60}, ensure_ascii=False
            ),
            "server: verdict_answer + model_dump_json (the API's path)": lambda v=verdict: (
                verdict_answer(v, max_age=60).model_dump_json()
            ),
            "server: model_construct + model_dump_json (no checks)": lambda v=verdict: (
                VerdictAnswer.model_construct(**fields(v)).model_dump_json()
            ),
            "server: TypeAdapter.validate_python + dump_json": lambda v=verdict: adapter.dump_json(
                adapter.validate_python(fields(v))
            ),
            "server: VerdictAnswer(**fields) + model_dump + json.dumps": lambda v=verdict: (
                json.dumps(VerdictAnswer(**fields(v)).model_dump(mode="json"), ensure_ascii=False)
            ),
            "client, before: json.loads + two fromisoformat": legacy_parse,
            "client: VerdictAnswer.model_validate_json": lambda w=wire: (
                VerdictAnswer.model_validate_json(w)
            ),
        }
        for label, call in timings.items():
            rows.setdefault(label, []).append(best_us(call, args.count))
    for label, values in rows.items():
        print(f"{label:<58}" + "".join(f"{value:>10.1f}" for value in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
