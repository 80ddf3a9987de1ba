"""A bench's page in docs/benchmarks: every run kept, the summary made anew.

Each run is stored in the page itself, as JSON in an HTML comment after its
section, so the next run reads them all back and writes the summary table
over every run (edge_floor, proxy_throughput, capsule_fanout).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Run = dict[str, Any]


def record_run(
    path: Path,
    run: Run,
    *,
    mark: str,
    header: str,
    summary_table: Callable[[list[Run]], str],
    run_section: Callable[[Run], str],
) -> None:
    """Add ``run`` to the page at ``path`` (made if missing)."""
    runs: list[Run] = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith(mark) and line.endswith(" -->"):
                runs.append(json.loads(line[len(mark) : -len(" -->")]))
    runs.append(run)
    parts = [header, "## Summary\n", summary_table(runs), "\n## Runs\n"]
    for one in runs:
        parts += [run_section(one), f"\n{mark}{json.dumps(one, sort_keys=True)} -->\n"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))
