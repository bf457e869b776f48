"""The error family: every stop the controller can make, each with its exit code and its remedy.

The command line maps these to exit codes in one place (app/controller/cli.py). Anything that
is not one of them is a defect in the program, and is left to show its traceback.
"""

from __future__ import annotations

from os import PathLike
from typing import ClassVar


def shown(value: str | PathLike[str]) -> str:
    """A value as one line of a message can carry it: as it is when every character prints,
    else quoted with its control characters, invisible ones and undecodable bytes escaped."""
    text = str(value)
    return text if text.isprintable() else repr(text)


class AnalystError(Exception):
    """A stop the controller foresaw: what happened, and what to do about it."""

    exit_code: ClassVar[int] = 1
    label: ClassVar[str] = "error"

    def __init__(self, message: str, remedy: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy

    def __str__(self) -> str:
        return f"{self.message}; {self.remedy}" if self.remedy else self.message


class BadInput(AnalystError):
    """The input (a case, a setting, an option) is wrong: nothing was created. Exit 2."""

    exit_code = 2
    label = "bad input"


class LayerUnavailable(AnalystError):
    """This machine cannot start a confined tool process under the chosen layer. Exit 3."""

    exit_code = 3
    label = "layer unavailable"


class ServiceUnavailable(AnalystError):
    """A service a local run starts for itself (moto, the supplier API) could not be started on
    this machine at all: it ended before it listened. Exit 3."""

    exit_code = 3
    label = "service unavailable"


class RunStopped(AnalystError):
    """The run began and stopped: a check failed, a tool or a service broke. Exit 1."""

    exit_code = 1
    label = "run stopped"
