"""The Replies & voice section (``/replies/``): what is said, and to whom the
curfew applies; a section of the settings form (``schedule.section``) with its
exemption pickers (``exempt_picker``)."""
