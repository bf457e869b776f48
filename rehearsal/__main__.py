"""`python -m rehearsal`: see rehearsal/cli.py."""

import sys

from rehearsal.cli import main

sys.exit(main())
