"""Entry point: `python -m app.controller --help`."""

# First, before anything else loads: from here on a stop signal ends the program with one line
# and its exit code, never a traceback or a silent death (signals.py imports nothing heavy).
from app.controller.signals import Stopped, say, stop_signals_from_here

stop_signals_from_here()

import sys  # noqa: E402

try:
    from app.controller.undumpable import make_undumpable

    # Before anything is read that another process at this uid must not see: the cluster runs
    # the tools at the controller's own uid (app/controller/undumpable.py).
    make_undumpable()

    from app.controller.subreaper import adopt_orphans

    # Before any process starts: a sandbox a stop orphans is the controller's to end.
    adopt_orphans()

    import datetime  # noqa: F401 (loaded for pydantic_core, below)
    import gc

    from app.controller.standard_streams import reopen_closed

    # Before any file or socket can take the number of a closed standard descriptor.
    reopen_closed()
    # The modules below build many objects that live as long as the process (pydantic's
    # models, boto3's and botocore's tables), none of them garbage; the collector would walk
    # them over and over while they load. It is off while they load, and they are then frozen
    # (collections skip them) before it is on again for the run.
    gc.disable()
    # pydantic_core's Rust start imports datetime through the C API, and a stop signal that
    # interrupts that import panics there (exit 1 and a Rust backtrace, not one line): with
    # datetime loaded above, where a signal is an ordinary Stopped, it imports nothing.
    from app.controller.cli import main

    gc.freeze()
    gc.enable()

    code = main()
    # NOTE: the run is over (its services stopped, its files written and its tree removed);
    # what is left is the interpreter's exit, whose garbage collections over strands', boto3's
    # and pydantic's objects would take a tenth of a second. Frozen objects are skipped by
    # them; the memory goes back to the system with the process all the same.
    gc.freeze()
except Stopped as stopped:
    # Stopped while loading, or after the command ended (cli.main reports one within it).
    say(stopped.line())
    code = stopped.exit_code
sys.exit(code)
