"""Where atb_ops' node-local rendezvous keeps a record, computed here from the published rule (README: rendezvous),
so a test can find, occupy or check that name without asking the code under test."""

from __future__ import annotations

import os
from pathlib import Path


def fnv1a64(text: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes of `text`, with the published offset basis and prime.

    Args:
        text: the rendezvous key ("<purpose>|<job>|<commDomain>").

    Returns:
        The hash, 0 <= h < 2**64.
    """
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def record_name(key: str) -> str:
    """The file name of the record of rendezvous `key` in the user's private folder: ``rdv.<fnv1a64 in hex>``.

    Args:
        key: the rendezvous key ("<purpose>|<job>|<commDomain>").

    Returns:
        The name, without a folder.
    """
    return f"rdv.{fnv1a64(key):016x}"


def record_path(key: str) -> Path:
    """The record of rendezvous `key` in the user's private folder under /dev/shm (no ATB_OPS_SHM_DIR).

    Args:
        key: the rendezvous key ("<purpose>|<job>|<commDomain>").

    Returns:
        /dev/shm/atb_ops-<uid>/rdv.<fnv1a64 in hex>.
    """
    return Path(f"/dev/shm/atb_ops-{os.getuid()}") / record_name(key)
