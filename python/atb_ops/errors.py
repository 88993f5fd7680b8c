"""The exception the Python API raises for bad arguments."""

from __future__ import annotations


class AtbError(RuntimeError, ValueError):
    """Bad arguments to an atb_ops call, raised before any communication.

    Both a RuntimeError (what the ATB surface raises, message starting with ATB's error name) and a
    ValueError (what Python callers expect for bad values), so either ``except`` catches it.
    """
