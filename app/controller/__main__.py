"""Entry point: `python -m app.controller --help`."""

import gc
import sys

from app.controller.signals import exit_quietly_until_the_run_begins

# Before the heavy imports below (boto3, strands, pydantic): a Ctrl-C while they load is one
# line and exit 130, not a traceback.
exit_quietly_until_the_run_begins()

# The modules below build many objects that live as long as the process (pydantic's models,
# boto3's and botocore's tables), none of them garbage; the collector would walk them over and
# over while they load. It is off while they load, and they are then frozen (collections skip
# them) before it is on again for the run.
gc.disable()
from app.controller.cli import main  # noqa: E402

gc.freeze()
gc.enable()

code = main()
# NOTE: the run is over (its services stopped, its files written and its tree removed); what
# is left is the interpreter's exit, whose garbage collections over strands', boto3's and
# pydantic's objects would take a tenth of a second. Frozen objects are skipped by them; the
# memory goes back to the system with the process all the same.
gc.freeze()
sys.exit(code)
