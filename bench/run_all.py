"""``make bench``: run every benchmark script in bench/ in turn.

Each script prints its own small table. Scripts starting with ``_`` are helpers.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("*.py")):
        if script.name.startswith("_") or script.name == Path(__file__).name:
            continue
        print(f"\n=== {script.name}", flush=True)
        started = time.monotonic()
        module = f"bench.{script.stem}"
        result = subprocess.run([sys.executable, "-m", module, *sys.argv[1:]], cwd=HERE.parent)
        print(f"--- {script.name}: exit {result.returncode} in {time.monotonic() - started:.0f}s")
        if result.returncode:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
