"""Schedules: one home for what a schedule is and how input becomes one.

- :mod:`.declaration`: every setting declared once (type, default, bounds,
  help); the API's schema, the form and the validators derive from it;
- :mod:`.values`: the value types, limits and patterns the declaration uses;
- :mod:`.config`: the one validation layer (``apply_changes``, ``build``);
- :mod:`.override_commands`: override requests (overtime, off, pretend) parsed;
- :mod:`.messages`: validation messages, English plus template and
  parameters, so each door says them in its own language.

The rules themselves (what a schedule decides) are the engine's
(``curfew_core.engine``); writes are ``services.schedules`` and
``services.overrides``.
"""
