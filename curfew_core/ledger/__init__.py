"""The decision ledger (issue 14): its plain records and arithmetic, no I/O.

Recording is a service (``services.ledger_recorder``: ``record()`` appends to
an in-process buffer, a background flusher writes batches through
``services.ledger`` at most every second and at exit); what it records and
how a batch is shaped lives here:

- :mod:`.entry`: the plain record a door hands over (no Django);
- :mod:`.batch`: a batch's raw rows and tallies, in the shape they are stored;
- :mod:`.hours`: the user's local hour of an instant, DST included (pure);
- :mod:`.savings`: requests not sent, tokens not generated, money (pure).
"""
