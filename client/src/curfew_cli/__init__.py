"""The ``curfew`` command: Curfew inside the agent's harness.

``curfew status`` prints one line for a status bar, ``curfew hook claude-code``
and ``curfew hook codex`` answer a hook event, ``curfew login URL`` stores a
token. Installed with the client (``pip install ./client``).

A package of its own, beside ``curfew_client``: importing ``curfew_client``
imports httpx and pydantic (about 0.3 s), and the command runs every few
hundred milliseconds (a status bar, a hook before each tool call). Its warm
paths read a small file and import only the standard library's light modules
(``json``, ``os``; no ``typing``, ``logging``, ``datetime`` or ``hashlib``):
``curfew status`` its cached state (``status``), a hook its cached verdict
(``verdicts``), spooling the decision for the ledger and forking its sender
(``reports``). A cold hook asks the server with the standard library's HTTP
(``urllib``) and checks the answer itself; only ``curfew status`` and
``curfew login`` asking the server import ``curfew_client`` (httpx, and the
wire's pydantic models).
"""
