"""Writes the committed bwrap vectors, the seccomp baseline and the hardened container's seccomp
and AppArmor profiles under policies/bubblewrap/, or with --check reports drift."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES
from app.tools.bubblewrap.accounting import (
    CODE_PLACEHOLDER,
    DEPENDENTS,
    FD_PLACEHOLDER,
    RUN_PLACEHOLDER,
    committed_elements,
    proof_for,
)
from app.tools.bubblewrap.container_apparmor import container_apparmor_profile
from app.tools.bubblewrap.container_seccomp import container_seccomp_profile
from app.tools.bubblewrap.policy import (
    BubblewrapPolicy,
    bwrap_argv,
    per_call_args,
)
from app.tools.committed import drifted_files, render_main, write_files
from app.tools.seccomp_policy import BASELINE, render_groups

COMMITTED_DIR = POLICIES_DIR / "bubblewrap"
CONTAINER_SECCOMP_FILE = "container-seccomp.json"
CONTAINER_APPARMOR_FILE = "container-apparmor.profile"
# The run-specific parts of a vector; everything else is the same in every run.
PLACEHOLDERS = {
    str(RUN_PLACEHOLDER): "the run directory, <base>/<run id>/run",
    str(CODE_PLACEHOLDER): "the staged worker code, <base>/<run id>/code",
    FD_PLACEHOLDER: "a sealed memfd holding the compiled baseline filter",
    "<ACTION>": "one worker action, then its arguments",
}


def _to_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def rendered() -> dict[str, str]:
    """File name → the exact text the generator produces for it (secure default policy)."""
    policy = BubblewrapPolicy()
    files = {}
    for role in ROLES:
        workspace = RUN_PLACEHOLDER / role
        files[f"{role}.argv.json"] = _to_json(
            {
                "role": role,
                "placeholders": PLACEHOLDERS,
                "argv": bwrap_argv(
                    policy,
                    role=role,
                    input_dir=workspace / "in",
                    output_dir=workspace / "out",
                    code_dir=CODE_PLACEHOLDER,
                ),
                "per_call": per_call_args([FD_PLACEHOLDER], "<ACTION>", [], policy.limits(role)),
            }
        )
    files["seccomp-baseline.json"] = _to_json(render_groups(BASELINE))
    files["elements.json"] = _to_json(accounted_elements())
    # The hardened container's own profile (runtimeTarget hardened-container), read by infra/.
    files[CONTAINER_SECCOMP_FILE] = _to_json(container_seccomp_profile())
    files[CONTAINER_APPARMOR_FILE] = container_apparmor_profile()
    return files


def accounted_elements() -> dict[str, Any]:
    """Each role's elements in order, each with its tokens and how it is accounted for."""
    roles = {
        role: [
            {
                "element": element.key,
                # A rule group of the filter adds no token: the file says where its rules are.
                **(
                    {"argv": " ".join(element.argv)}
                    if element.argv
                    else {"rules": f"{FD_PLACEHOLDER}, seccomp-baseline.json's group of that name"}
                ),
                **proof_for(role, element.key).as_json(),
                **(
                    {"leaving_it_out_also_removes": list(DEPENDENTS[element.key])}
                    if element.key in DEPENDENTS
                    else {}
                ),
            }
            for element in committed_elements(role)
        ]
        for role in ROLES
    }
    return {
        "about": "every element of each role's vector: the check that fails when it is left "
        "out of that role's vector, or why it is redundant (app/tools/bubblewrap/accounting.py)",
        "placeholders": PLACEHOLDERS,
        "roles": roles,
    }


def write(directory: Path) -> list[Path]:
    return write_files(directory, rendered())


def drifted(directory: Path) -> list[Path]:
    """The committed files that are missing or differ from what the generator renders."""
    return drifted_files(directory, rendered())


def main(argv: list[str] | None = None) -> int:
    return render_main(
        argv,
        module="app.tools.bubblewrap.render",
        description=__doc__,
        default_dir=COMMITTED_DIR,
        render=rendered,
        what="bwrap policy files",
    )


if __name__ == "__main__":
    sys.exit(main())
