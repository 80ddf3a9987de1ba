"""collectstatic's compression: a compressed copy already beside its file is
kept only when it decompresses to exactly the file's bytes (so a re-run over a
folder takes seconds, not 15 s of brotli), and made again otherwise."""

from __future__ import annotations

import gzip
from pathlib import Path

import brotli
import pytest

from curfew_core.web.storage import QuickBrotliCompressor

TEXT = b"const capsule = 'curfew';\n" * 400


@pytest.fixture
def compressor() -> QuickBrotliCompressor:
    return QuickBrotliCompressor(quiet=True)


@pytest.fixture
def made(tmp_path: Path, compressor: QuickBrotliCompressor) -> Path:
    path = tmp_path / "capsule.js"
    path.write_bytes(TEXT)
    assert sorted(compressor.compress(str(path))) == [f"{path}.br", f"{path}.gz"]
    return path


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = QuickBrotliCompressor.compress_brotli

    def counted(data: bytes) -> bytes:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(QuickBrotliCompressor, "compress_brotli", staticmethod(counted))
    return calls


def test_matching_copies_are_kept_not_made_again(
    made: Path, compressor: QuickBrotliCompressor, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    assert sorted(compressor.compress(str(made))) == [f"{made}.br", f"{made}.gz"]
    assert calls == []


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(
            lambda p: Path(f"{p}.br").write_bytes(Path(f"{p}.br").read_bytes()[:20]),
            id="partial-br",
        ),
        pytest.param(lambda p: Path(f"{p}.gz").write_bytes(b"not gzip"), id="garbage-gz"),
        pytest.param(lambda p: Path(f"{p}.gz").unlink(), id="missing-gz"),
        pytest.param(
            lambda p: p.write_bytes(TEXT.replace(b"curfew", b"CURFEW")), id="changed-file"
        ),
        pytest.param(
            lambda p: Path(f"{p}.br").write_bytes(brotli.compress(b"another file")), id="foreign-br"
        ),
    ],
)
def test_a_stale_partial_or_missing_copy_is_made_again(
    made: Path, compressor: QuickBrotliCompressor, monkeypatch: pytest.MonkeyPatch, spoil: object
) -> None:
    spoil(made)  # type: ignore[operator]
    calls = _counting(monkeypatch)
    compressor.compress(str(made))
    assert calls == [len(made.read_bytes())]
    data = made.read_bytes()
    assert brotli.decompress(Path(f"{made}.br").read_bytes()) == data
    assert gzip.decompress(Path(f"{made}.gz").read_bytes()) == data
