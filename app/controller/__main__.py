"""Entry point: `python -m app.controller --help`."""

import sys

from app.controller.signals import exit_quietly_until_the_run_begins

# Before the heavy imports below (boto3, strands, pydantic): a Ctrl-C while they load is one
# line and exit 130, not a traceback.
exit_quietly_until_the_run_begins()

from app.controller.cli import main  # noqa: E402

sys.exit(main())
