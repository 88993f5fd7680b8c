"""This host's identity, as the ranks of a group compare it to learn whether they all share one host."""

from __future__ import annotations

import socket


def host_id() -> str:
    """This host's name and boot id (two containers with one host name differ by boot id).

    Returns:
        "<hostname>/<boot id>", the boot id empty where /proc does not give it.
    """
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"
