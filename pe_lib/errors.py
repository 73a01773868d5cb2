"""The project's own error types.

Every error that a user can cause or fix (bad input, a full disk, an unwritable or locked folder,
a missing data source) derives from :class:`PeLibError`. The ``pe-book`` command line prints such
an error as one line on stderr and exits with status 1 (``--debug`` shows the traceback); any
other exception is a bug and keeps its traceback. Each class also derives from the built-in type
that callers caught before it existed (``ValueError``, ``OSError``, ``RuntimeError``), so code
that catches those keeps working, and each is still importable from the module that raises it
(``pe_lib.data.sources.SourceUnavailable``, ``pe_lib.data.cache.CacheError``,
``pe_lib.data.archives.ArchiveError``, ``pe_lib.io.LockedError``). The book's own errors
(:mod:`pe_book`: a notebook parameter, a failed build, publishing, a missing result, an option
value) derive from these and live beside the code that raises them.
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


class SourceUnavailable(PeLibError, RuntimeError):
    """A data source could not be fetched or verified; the message says what was tried and the fix."""


class CacheError(PeLibError, RuntimeError):
    """The cache folder cannot be created or written."""


class ArchiveError(PeLibError, RuntimeError):
    """An archive is malformed, unsafe, or lacks a requested member."""


class LockedError(PeLibError, RuntimeError):
    """Another process holds the lock of a folder this run must write to."""


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
