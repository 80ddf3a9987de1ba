"""The decision ledger (issue 14): what the curfew did, recorded off the hot path.

- :mod:`.entry`: the plain record a door hands over (no Django);
- :mod:`.recorder`: ``record()`` appends to an in-process buffer; a background
  flusher writes batches at most every second and at exit (``flush()`` writes
  now, on the caller's thread, for tests and shutdown);
- :mod:`.hours`: the user's local hour of an instant, DST included (pure);
- :mod:`.savings`: requests not sent, tokens not generated, money (pure).
"""
