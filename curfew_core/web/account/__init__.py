"""The Account section (``/account/``): password, other sessions, language and
timezone, sign-up and password reset. ``forms`` are its Django forms, ``views``
the doors."""
