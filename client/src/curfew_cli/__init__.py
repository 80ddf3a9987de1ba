"""The ``curfew`` command: Curfew inside the agent's harness.

``curfew status`` prints one line for a status bar, ``curfew hook claude-code``
and ``curfew hook codex`` answer a hook event, ``curfew login URL`` stores a
token. Installed with the client (``pip install ./client``).

A package of its own, beside ``curfew_client``: importing ``curfew_client``
imports httpx and pydantic (about 0.3 s), and ``curfew status`` runs every
few hundred milliseconds from a status bar, answered from a small file. This
package imports only the standard library until it must ask the server; then
it asks through ``curfew_client`` (the same verdicts, cache rules and outage
policies as a gateway).
"""
