"""Writes the committed nono launch policies (this project's own format, never read by nono) under
policies/nono/, or with --check reports drift."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from app.tools.committed import drifted_files, render_main, write_files
from app.tools.nono.accounting import ACCOUNT
from app.tools.nono.elements import elements
from app.tools.nono.policy import (
    COMMITTED_DIR,
    NO_OMISSIONS,
    Omissions,
    ProfileSource,
    committed_profiles,
    generate_profile,
    policy_file,
    to_json,
)
from app.tools.seccomp_policy import NONO_BASELINE, render_groups


def rendered(
    source: ProfileSource = generate_profile, omit: Omissions = NO_OMISSIONS
) -> dict[str, str]:
    """File name → the exact text the generator (or ``source``) produces for it."""
    profiles = committed_profiles(source, omit)
    files = {policy_file(role): to_json(profile) for role, profile in profiles.items()}
    files["elements.json"] = to_json(accounted_elements())
    files["seccomp-baseline.json"] = to_json(render_groups(NONO_BASELINE))
    return files


def accounted_elements() -> dict[str, Any]:
    """Each shipped profile's elements in order, each with how it is accounted for."""
    return {
        "about": "every element of each role's profile: the check that fails without it, or "
        "why it is redundant (app/tools/nono/accounting.py)",
        "roles": {
            role: [
                {"element": element, **ACCOUNT[role][element].as_json()}
                for element in elements(profile)
            ]
            for role, profile in committed_profiles().items()
        },
    }


def write(
    directory: Path, source: ProfileSource = generate_profile, omit: Omissions = NO_OMISSIONS
) -> list[Path]:
    return write_files(directory, rendered(source, omit))


def drifted(
    directory: Path, source: ProfileSource = generate_profile, omit: Omissions = NO_OMISSIONS
) -> list[Path]:
    """The committed files that are missing or differ from what the generator renders."""
    return drifted_files(directory, rendered(source, omit))


def main(argv: list[str] | None = None) -> int:
    return render_main(
        argv,
        module="app.tools.nono.render",
        description=__doc__,
        default_dir=COMMITTED_DIR,
        render=rendered,
        what="nono launch policies",
    )


if __name__ == "__main__":
    sys.exit(main())
