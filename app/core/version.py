"""This project's release, as pyproject.toml states it (a unit test holds the two together); the
image carries no pyproject.toml, so the controller reads it here."""

from __future__ import annotations

from typing import Final

VERSION: Final = "0.1.0"
