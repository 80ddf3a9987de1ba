"""Whitenoise's hashed, compressed static storage, with brotli kept fast on
large files.

plotly.js's full bundle was 4.8 MB (the pages now load its basic bundle, 1.2
MB): brotli's top quality took over 20 s on it (twice: the plain and the
hashed copy) for about 10 % smaller output than quality 9, which took under a
second. Small files keep the top quality.

Whitenoise compresses every file again on every collectstatic, even over a
folder that holds the very same files: 15 s of CPU per run here. A compressed
copy already beside its file is kept when it decompresses to exactly the
file's bytes (a check a few hundred times faster than making it), so a re-run
(``bin/serve prepare`` over the last release's folder, each test server)
takes seconds. A stale, partial or foreign copy never matches and is made again.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import brotli  # type: ignore[import-untyped]
from whitenoise.compress import Compressor  # type: ignore[import-untyped]
from whitenoise.storage import (  # type: ignore[import-untyped]
    CompressedManifestStaticFilesStorage,
)

#: Above this size, brotli runs at ``LARGE_FILE_QUALITY`` instead of 11.
LARGE_FILE_BYTES = 512 * 1024
LARGE_FILE_QUALITY = 9


class QuickBrotliCompressor(Compressor):  # type: ignore[misc]
    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        quality = LARGE_FILE_QUALITY if len(data) > LARGE_FILE_BYTES else 11
        return bytes(brotli.compress(data, quality=quality))

    def compress(self, path: str) -> list[str]:
        kept = self._still_good(path)
        if kept is not None:
            return kept
        return list(super().compress(path))

    def _still_good(self, path: str) -> list[str] | None:
        """The compressed copies beside ``path``, if there is one for each
        enabled format and each decompresses to exactly ``path``'s bytes."""
        formats = []
        if self.use_brotli:
            formats.append((".br", brotli.decompress))
        if self.use_gzip:
            formats.append((".gz", gzip.decompress))
        if not formats:
            return None
        with open(path, "rb") as source:
            data = source.read()
        kept = []
        for suffix, decompress in formats:
            try:
                with open(path + suffix, "rb") as copy:
                    if decompress(copy.read()) != data:
                        return None
            except (OSError, EOFError, zlib.error, brotli.error):
                return None
            kept.append(path + suffix)
        return kept


class ManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):  # type: ignore[misc]
    def create_compressor(self, **kwargs: Any) -> Compressor:
        return QuickBrotliCompressor(**kwargs)
