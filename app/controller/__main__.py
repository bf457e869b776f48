"""Entry point: `python -m app.controller --help`."""

import sys

from app.controller.cli import main

sys.exit(main())
