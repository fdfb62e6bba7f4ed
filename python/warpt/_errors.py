"""The exceptions warpt's failures become."""

from __future__ import annotations


class WarptError(Exception):
    """warpt refused or failed: ``message`` is what it said, ``exit_status``
    its exit status (2: bad input, 1: a failure such as a regression or a
    failed benchmark, 130: interrupted), ``stderr`` its whole diagnostic
    output where there was one."""

    def __init__(self, message: str, exit_status: int, *, stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_status = exit_status
        self.stderr = stderr

    def __str__(self) -> str:
        return f"{self.message} (warpt exit status {self.exit_status})"


class UsageError(WarptError):
    """The request was refused (exit status 2): an unknown benchmark or
    parameter, a value out of range, a file that does not exist."""


def error_for(message: str, exit_status: int, *, stderr: str = "") -> WarptError:
    """The exception for warpt's exit status: :class:`UsageError` for 2."""
    kind = UsageError if exit_status == 2 else WarptError
    return kind(message, exit_status, stderr=stderr)
