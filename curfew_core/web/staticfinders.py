"""Serve Plotly's JavaScript from the installed ``plotly`` package itself.

The page runs offline, so plotly.js cannot come from a CDN, and a copy kept in
git would drift from the pinned package. This finder offers exactly one file,
``plotly/plotly.min.js``, straight from the package's ``package_data`` (the
rest of that folder, sample data sets and templates, is not static content).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PREFIX = "plotly"
FILENAME = "plotly.min.js"


def package_data() -> Path:
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(package_data()))
        self.storage.prefix = PREFIX  # type: ignore[attr-defined]

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        if not (package_data() / FILENAME).is_file():
            return [Error(f"the plotly package has no {FILENAME}", id="curfew.E001")]
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        if path.replace("\\", "/") != f"{PREFIX}/{FILENAME}":
            return [] if find_all else None
        match = os.path.join(str(package_data()), FILENAME)
        return [match] if find_all else match

    def list(self, ignore_patterns: Any) -> Any:
        yield FILENAME, self.storage
