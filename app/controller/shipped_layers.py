"""The confinement layers as shipped, by name, or with one element of one role's policy left
out (``--break``); tests build their own to change a policy in other ways. Each is asked of the
layer itself, through the registry of shipped layers (app/tools/registry.py)."""

from __future__ import annotations

from app.core.roles import Layer
from app.tools.layer import LayerFactory
from app.tools.policy_breaks import PolicyBreak
from app.tools.registry import answers


def shipped_layer(name: Layer) -> LayerFactory:
    """The layer class for ``name``; nono-py is imported only when the nono layer is chosen."""
    return answers(name).factory()


def broken_layer(policy_break: PolicyBreak) -> LayerFactory:
    """The break's layer with its element left out of its role's policy, and out of the
    committed files the run checks it against, as if the change had been merged: the run then
    stops at the check that watches the element, not at the one that compares the files."""
    return answers(policy_break.layer).without(policy_break.role, policy_break.element)
