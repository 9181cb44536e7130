"""deltaguard's command-line tools (the ``deltaguard`` console script)."""
