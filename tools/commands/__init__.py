"""The commands of ``deltaguard``, one module each, all of one shape: ``HELP``, an ``options``
decorator (the command's click options), ``request(**options)`` (the options as a typed
request; a contradiction is a :class:`click.UsageError`), and ``run(request)``, which does the
work, prints the report and returns the exit code (:class:`~deltaguard.tools.exit_codes.ExitCode`).
:mod:`deltaguard.tools.cli` only registers them."""
