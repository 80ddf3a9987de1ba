"""Benchmarks, run from the checkout as modules (``python -m bench.<name>``), so
``curfew_core`` and ``curfew_testkit`` import without path tricks."""
