"""The engine suite needs no Django: run it with ``-p no:django``."""

import sys
from pathlib import Path

# ``engine_support`` sits next to the tests and ``curfew_core`` two levels up;
# make both importable however pytest was started.
_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE), str(_HERE.parents[1])):
    if _path not in sys.path:
        sys.path.insert(0, _path)
