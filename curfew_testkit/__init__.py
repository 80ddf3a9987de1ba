"""What the tests and the benchmarks both need, in one package both import.

- ``server``: the real app as its own ASGI server process (``ServedApp``);
- ``fake_upstream``: a recording OpenAI-compatible upstream on loopback;
- ``local_http``: the small threaded HTTP server both fakes are built on;
- ``loadgen``: the bounded asyncio load generator;
- ``engine_reference``: the engine's ``decide`` and ``segments`` before the
  per-date plans, the oracle of tests/engine/test_engine_fast_path.py and the
  baseline of bench/engine_speed.py.

Stdlib only (no Django): a benchmark or a test drives the app as a client would.
"""
