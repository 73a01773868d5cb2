"""The project's own error types.

Every error that a user can cause or fix (bad input, a full disk, an unwritable or locked folder,
a missing data source) derives from :class:`PeLibError`. The ``pe-book`` command line prints such
an error as one line on stderr and exits with status 1 (``--debug`` shows the traceback); any
other exception is a bug and keeps its traceback. Each class also derives from the built-in type
that callers caught before it existed (``ValueError``, ``OSError``, ``RuntimeError``), so code
that catches those keeps working.
"""
from __future__ import annotations

import errno


class PeLibError(Exception):
    """Base of the errors the command line reports as one line (exit status 1)."""


class InputError(PeLibError, ValueError):
    """Bad input: an unknown variant, profile, task or parameter, an invalid value, a model folder
    that cannot be read, data too small for what was asked. The message names the valid choices."""


class PositionOutOfRange(InputError):
    """An input longer than an absolute position embedding's table (``position`` >= ``maximum``)."""

    def __init__(self, message: str, position: int, maximum: int):
        super().__init__(message)
        self.position, self.maximum = position, maximum


class CorruptFileError(PeLibError, ValueError):
    """A file does not match its sha256 manifest (or the manifest is missing or unreadable)."""


class NotWritableError(PeLibError, OSError):
    """A folder the run must write to is read-only or cannot be created."""

    def __str__(self) -> str:
        return str(self.strerror)


class DiskFullError(PeLibError, OSError):
    """No space left on the device while writing; nothing half-written was kept."""

    def __init__(self, message: str):
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return str(self.strerror)
