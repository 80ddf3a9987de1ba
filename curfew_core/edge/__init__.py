"""The edge: where every HTTP request meets the site.

- ``doors``: every door declared once (prefix, dialect, body limit, credential,
  the routes the edge serves and each handler by dotted path);
- ``declare``: the shape of that table (``Door``, ``Route``, ``Table``);
- ``app``: the one ASGI pipeline for token doors, Django behind it for the rest;
- ``dialects``: each door's refusals and failures, in its client's protocol;
- ``heads``: Django's Host check, HTTPS redirect and answer headers, per head;
- ``caller``: the live token and its user's rows, warm or with one thread hop;
- ``threads``: the shared pool that hop goes to;
- ``request``: what a handler is given; ``send``: its answer over ASGI;
- ``scope``: an ASGI scope read in every shape the spec allows;
- ``lifespan``: a server's stop writes the process's last batches.
"""
