"""Entry point: `python -m app.controller --help`."""

import gc
import sys

from app.controller.signals import exit_quietly_until_the_run_begins

# Before the heavy imports below (boto3, strands, pydantic): a Ctrl-C while they load is one
# line and exit 130, not a traceback.
exit_quietly_until_the_run_begins()

from app.controller.cli import main  # noqa: E402

code = main()
# NOTE: the run is over (its services stopped, its files written and its tree removed); what
# is left is the interpreter's exit, whose garbage collections over strands', boto3's and
# pydantic's objects would take a tenth of a second. Frozen objects are skipped by them; the
# memory goes back to the system with the process all the same.
gc.freeze()
sys.exit(code)
