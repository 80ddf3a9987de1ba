"""Answers exactly as the server writes them (instants as ``isoformat``)."""

from __future__ import annotations

from typing import Any

#: A winding verdict exactly as the server writes it (instants as ``isoformat``).
WINDING: dict[str, Any] = {
    "state": "winding",
    "schedule_state": "winding",
    "action": "clamp",
    "reply": None,
    "stream": None,
    "max_tokens": 1000,
    "persona": "You are tired.",
    "tools": "allow",
    "reasoning_effort": "low",
    "progress": 0.125,
    "peak": False,
    "reason": "2026-09-29 23:30 · winding",
    "exempt": False,
    "dry_run": False,
    "valid_until": "2026-09-29T23:31:00+08:00",
    "max_age": 60,
    "at": "2026-09-29T15:30:00+00:00",
    "budget": 1824,
    "override": None,
    "override_until": None,
    "debug_at": None,
    "would": None,
    "timezone": "Asia/Shanghai",
}

STATE: dict[str, Any] = {
    "state": "lights-out",
    "schedule_state": "on-duty",
    "reason": "forced off",
    "progress": None,
    "budget": None,
    "reply": "Zzz",
    "peak": False,
    "override": "off",
    "override_until": "2026-09-30T06:00:00+08:00",
    "overtime_left": None,
    "forced": True,
    "debug_at": None,
    "at": "2026-09-29T21:00:00+08:00",
    "valid_until": "2026-09-30T06:00:00+08:00",
    "timezone": "Asia/Shanghai",
    "enabled": True,
    "dry_run": False,
    "day": [{"start": "00:00", "end": "24:00", "state": "on-duty", "peak": False}],
}
