"""The team tests share the API tests' frozen clock."""

from tests.api.conftest import clock

__all__ = ["clock"]
