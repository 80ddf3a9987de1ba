"""``python -m curfew_cli``: the ``curfew`` command."""

from curfew_cli.main import main

raise SystemExit(main())
