"""The README's "Your own case", as a person follows it: its three commands, and between the
first two the edits it describes (prices changed, a fourth supplier added)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from pathlib import Path

from tests.support.docs import README, section

CASE_NAME = "my-case"
# The fourth supplier the README adds, cheaper than the first and within every requirement.
DELTA = {"id": "delta", "name": "Delta Systems"}
DELTA_FIGURES = {"price_usd": 55000, "delivery_days": 18, "warranty_months": 24}
ASTER_PRICE = 58000
EXPECTED_WINNER = "delta"


def readme_commands(folder: Path) -> list[list[str]]:
    """The README's own-case commands, with this interpreter and ``folder`` in their places."""
    block = re.search(r"```sh\n(.*?)```", section(README, "Your own case"), flags=re.DOTALL)
    assert block, "the README's own case shows no commands"
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        assert words[0] == ".venv/bin/python", line
        commands.append(
            [sys.executable, *(str(folder) if w == CASE_NAME else w for w in words[1:])]
        )
    return commands


def _rewrite(path: Path, **changes: object) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    document.update(changes)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def edit_as_the_readme_says(folder: Path) -> None:
    """Changes a price, and adds a fourth supplier: an entry in case.json with no digest yet,
    and a proposal copied from another with its supplier_id, name and figures changed."""
    proposals = folder / "proposals"
    _rewrite(proposals / "aster.json", price_usd=ASTER_PRICE)
    shutil.copy(proposals / "aster.json", proposals / "delta.json")
    _rewrite(proposals / "delta.json", supplier_id=DELTA["id"], name=DELTA["name"], **DELTA_FIGURES)
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    case["suppliers"].append(dict(DELTA))
    (folder / "case.json").write_text(json.dumps(case, indent=2) + "\n", encoding="utf-8")
