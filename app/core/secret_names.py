"""Environment variable names that would hand a process a credential: none may reach a role,
and no model key may reach the controller either. Checked by name; no value is ever printed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# A model API key would let a process call a model without the controller.
MODEL_KEY_VARIABLES: Final = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "BEDROCK_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)


def credential_variables(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that could carry an AWS credential or a model key: every
    ``AWS_`` variable counts, since any of them can steer an SDK to a credential."""
    return sorted(name for name in names if name.startswith("AWS_") or name in MODEL_KEY_VARIABLES)
