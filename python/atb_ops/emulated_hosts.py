"""Emulated hosts: several "servers" on this one Linux machine, for several-host tests and benchmarks.

Each emulated host is a set of Linux namespaces held open by one long-lived *anchor* process:

- its own **network namespace** with loopback up and one interface, ``eth0``, whose other end is a port of a
  private bridge. The bridge lives in a namespace of its own (the *switch*), never in the root namespace, so
  nothing of the machine's own networking is touched: no address is ever assigned in the root namespace, no
  interface is created there, and a host has no route to anything but the bridge's subnet (default
  ``10.213.0.0/24``; host ``i`` is ``.i+1``). Interface names live in those private namespaces, so instances
  never collide (the switch's names carry the owner's pid anyway: ``ae<pid>br``, ``ae<pid>p<i>``);
- its own **hostname** (UTS namespace): ``h0``, ``h1``, ... Every host's ``/etc/hosts`` (a bind mount in the
  host's own mount namespace) lists every host's name with its bridge address, so ``h1`` resolves to h1's
  address from any host, and a host's own name resolves to its own bridge address. Names resolve from that file
  only (the host's ``/etc/nsswitch.conf`` says ``hosts: files``): a host has no route to a DNS server, and an
  unreachable one makes glibc answer "temporary failure" (EAI_AGAIN) where "not found" is meant. Both files are
  bind mounts of files in ``/tmp/atb-emulated-hosts-<owner>-*/``, which live as long as the hosts;
- its own **/dev/shm**: a private tmpfs in the host's own mount namespace, shared by every process entered into
  that host, invisible to other hosts and to the root namespace. The host's **IPC namespace** is its own too
  (System V IPC, POSIX message queues). ``/sys/class/net`` shows the host's own interfaces, as after
  ``ip netns exec``;
- optionally a **shaped link**: ``tc qdisc ... tbf rate R`` on both ends of the host's link (so ``R`` each way,
  like a full-duplex NIC; tbf's bucket is 1 ms of ``R``, at least 128 KiB, so that much after an idle pause passes
  unshaped), and a delay (``netem``) on the host's egress where the kernel has ``sch_netem``. Unshaped, a link
  is a veth pair and a bridge: memory-speed, so on a small machine CPU, not the link, is the limit (on the
  2-core dev box one Python TCP stream moved ~5 Gbit/s unshaped, ~4 Gbit/s shaped to 10gbit, 0.86 at 1gbit).

Processes are started inside a host with ``nsenter --net --uts --mount --ipc`` (see :meth:`EmulatedHosts.popen`).
There is deliberately **no PID namespace**: pids stay meaningful to the parent (``Popen.pid``, ``kill``,
``/proc/<pid>``), and ``/proc`` shows every process, as a test wants. The mount namespaces are copies of the
owner's, with propagation ``slave``: the repository, the virtual environment and everything else mounted in the
root namespace are visible in every host (mounts made there later too, where the root's mounts are shared, as
under systemd or Docker), and nothing mounted in a host leaks out. ``popen`` returns before nsenter has entered
the host; :meth:`EmulatedHosts.processes` lists a process once it is inside.

Host identity, important for code that decides "same host" (shared memory possible) or not:

- ``/proc/sys/kernel/random/boot_id`` is **the same on every emulated host** (one kernel), so boot_id alone
  cannot tell two emulated hosts apart, and neither can ``/proc``, pids, ``/tmp`` or the file system;
- what differs is what differs between real servers: the **hostname** (``socket.gethostname()``: ``h0`` vs
  ``h1``), the network, UTS, IPC and mount namespaces (``os.readlink("/proc/self/ns/net")`` etc.), and
  ``/dev/shm`` (``os.stat("/dev/shm").st_dev``). atb_ops' host identity (csrc/core/host.h, ``atb_ops._host.host_id``:
  hostname, boot id, the device of the shared-memory folder, the pid namespace) tells emulated hosts apart; one
  that reads only boot_id would put them on one host, and a shm rendezvous between them would then wait for ranks
  that can never see its files.

How ranks find each other inside a host: a host's own name resolves to its bridge address, so torch's gloo
(which, without ``GLOO_SOCKET_IFNAME``, binds to the address its hostname resolves to, falling back to loopback
only where that fails) binds the bridge address and is reachable from the other hosts; ``GLOO_SOCKET_IFNAME=eth0``
names the same interface. ``MASTER_ADDR=h0`` / ``--rdzv-endpoint h0:29500`` resolve through ``/etc/hosts``. Ports
are per network namespace: a fixed port such as 29500 never clashes with another instance or the machine's own.

Teardown (:meth:`EmulatedHosts.close`, also from ``with``, ``atexit``, or when the owner dies in any way,
SIGKILL included): every process in a host is killed, the anchors exit, and the kernel then frees the
namespaces, with them the veths, the bridge, the tmpfs and the bind mounts. Each anchor reads a pipe whose only
writer is the owner, so when the owner dies its anchors kill every process in their host and exit (a child the
owner made with ``os.fork`` without exec shares that pipe and keeps the hosts up until it exits). Anchors carry
the owner's pid and start time in their command line (``atb-emulated-hosts:<pid>.<start>:<tag>:<host>``) and
processes started in a host carry it in ``_ATB_OPS_EMULATED_HOSTS_OWNER``; :func:`cleanup_leftovers` (run at
every start, and by ``down``) removes whatever a dead owner left, and never touches a process in the root
network namespace.

CLI::

    python -m atb_ops.emulated_hosts up --hosts 2 [--link-rate 10gbit] [--delay-ms 1]   # until Ctrl-C or `down`
    python -m atb_ops.emulated_hosts exec h0 -- bash                # a shell on h0 of `up` (--owner PID: any owner's)
    python -m atb_ops.emulated_hosts list
    python -m atb_ops.emulated_hosts down                                                  # stop `up`s, clean leftovers

Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), ``ip``, ``nsenter``, ``unshare`` and ``mount`` (util-linux,
iproute2), and ``tc`` for shaping; :func:`available` says why not where it cannot work (tests skip with that).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "EmulatedHosts",
    "EmulatedHostsError",
    "available",
    "cleanup_leftovers",
    "main",
    "parse_rate",
]

MARKER = "atb-emulated-hosts"
"""First field of every anchor's marker argument: ``atb-emulated-hosts:<owner>:<tag>:<host>``."""

OWNER_ENV = "_ATB_OPS_EMULATED_HOSTS_OWNER"
"""Set in every process started in a host: the owner (``<pid>.<start time>``) that made the host."""

DEFAULT_SUBNET = "10.213.0.0/24"
HOST_IFNAME = "eth0"
_TMP_PREFIX = "atb-emulated-hosts-"
_NS_FLAGS = ("--net", "--uts", "--mount", "--ipc")
_NAME_AND_NET_FLAGS = ("--net", "--uts")  # a host's network and name, this machine's files

# The anchor: holds the namespaces it was started in until its stdin (a pipe whose only writer is the owner)
# reaches EOF or it gets SIGTERM; then it kills every other process in its network namespace (the host
# "powers off") and exits, and the kernel frees the namespaces. argv: marker, the root network namespace
# (never killed in: a guard against an anchor that somehow shares the root's network namespace), and a folder
# of the owner's to remove at the end (the switch's anchor: the hosts' /etc/hosts and nsswitch.conf) or "".
_ANCHOR = r"""
import os, signal, sys
def _stop(*_):
    raise SystemExit
signal.signal(signal.SIGTERM, _stop)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
try:
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while sys.stdin.buffer.read(4096):
        pass
except (SystemExit, OSError):
    pass
signal.signal(signal.SIGTERM, signal.SIG_IGN)
me, root, self_pid = os.readlink("/proc/self/ns/net"), sys.argv[2], os.getpid()
for _ in range(20) if me != root else ():
    found = False
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != self_pid:
            try:
                if os.readlink("/proc/%s/ns/net" % d) == me:
                    os.kill(int(d), signal.SIGKILL)
                    found = True
            except OSError:
                pass
    if not found:
        break
folder = sys.argv[3]
if os.path.basename(folder).startswith("atb-emulated-hosts-"):
    import shutil
    shutil.rmtree(folder, ignore_errors=True)
"""


class EmulatedHostsError(RuntimeError):
    """Emulated hosts cannot be made or used here (the message says why)."""


# ----------------------------------------------------------------------------------------------------------------
# small helpers


def _tool(name: str) -> str | None:
    """Absolute path of a system tool, also where PATH lacks /sbin (as for a non-login root shell)."""
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    return None


def _tools(*names: str) -> dict[str, str]:
    """Paths of the named tools.

    Raises:
        EmulatedHostsError: one is missing.
    """
    out = {}
    for name in names:
        path = _tool(name)
        if path is None:
            raise EmulatedHostsError(f"`{name}` not found (needed for emulated hosts: iproute2 / util-linux)")
        out[name] = path
    return out


def _start_time(pid: int) -> str | None:
    """The start time (clock ticks since boot) of a live process, None where it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: count fields after the last ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _owner_tag(pid: int | None = None) -> str:
    """``<pid>.<start time>``: names a process uniquely across pid reuse."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid)}"


def _owner_alive(owner: str) -> bool:
    """Whether the process named by an owner tag is still the same live process."""
    pid, _, start = owner.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == start


def _ns(pid: int | str, kind: str = "net") -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return []


def _pids_in_netns(netns: str, exclude: Sequence[int] = ()) -> list[int]:
    """Pids of the processes whose network namespace is `netns` (as ``readlink /proc/<pid>/ns/net`` gives it)."""
    return [p for p in _pids() if p not in exclude and _ns(p) == netns]


def _kill_netns(netns: str | None, exclude: Sequence[int] = ()) -> int:
    """SIGKILL every process in a network namespace other than the root's, a few rounds (forks race with it).

    Returns:
        How many kill signals were sent.
    """
    if netns is None or netns == _ns("self"):
        return 0
    sent = 0
    for _ in range(20):
        victims = _pids_in_netns(netns, exclude)
        if not victims:
            break
        for p in victims:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
                sent += 1
        time.sleep(0.01)
    return sent


def _run(argv: Sequence[str], what: str, input: str | None = None, timeout: float = 30) -> str:
    """Run a setup command.

    Returns:
        Its stdout.

    Raises:
        EmulatedHostsError: it failed (with its stderr) or timed out.
    """
    try:
        r = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise EmulatedHostsError(f"{what}: {e}") from e
    if r.returncode != 0:
        raise EmulatedHostsError(f"{what}: `{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


_RATE_UNITS = {
    "bit": 1,
    "kbit": 1e3,
    "mbit": 1e6,
    "gbit": 1e9,
    "tbit": 1e12,
    "bps": 8,
    "kbps": 8e3,
    "mbps": 8e6,
    "gbps": 8e9,
    "tbps": 8e12,
}


def parse_rate(rate: str) -> float:
    """A tc rate (``"10gbit"``, ``"100mbit"``, ``"1gbps"`` = bytes/s, a bare number = bits/s) in bits per second.

    Args:
        rate: the rate as tc spells it.

    Returns:
        Bits per second.

    Raises:
        EmulatedHostsError: not a rate tc understands in that form, or not positive.
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(rate))
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _RATE_UNITS) or float(m.group(1)) <= 0:
        raise EmulatedHostsError(f"link rate {rate!r}: expected a number and one of {', '.join(_RATE_UNITS)}")
    return float(m.group(1)) * _RATE_UNITS.get(unit, 1)


def _qdisc_commands(dev: str, rate: str | None, delay_ms: float | None) -> list[str]:
    """``tc`` argument lists that give `dev` the given shaping, once its root qdisc is deleted (none: nothing)."""
    tbf = []
    if rate is not None:
        bytes_per_s = parse_rate(rate) / 8
        # Burst (the bucket): two whole 64 KiB GSO packets (else tbf splits them) or 1 ms of the rate, whichever
        # is more, so a fast link is not limited by timer granularity; a burst after an idle pause passes at
        # the unshaped speed. Queue: 20 ms of the rate beyond the burst.
        burst = int(max(128 * 1024, bytes_per_s * 0.001))
        tbf = ["tbf", "rate", rate, "burst", str(burst), "latency", "20ms"]
    if delay_ms is not None and delay_ms > 0:
        out = [
            ["qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{delay_ms}ms", "limit", "100000"]
        ]
        if tbf:
            out.append(["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf])
        return out
    return [["qdisc", "add", "dev", dev, "root", "handle", "1:", *tbf]] if tbf else []


# ----------------------------------------------------------------------------------------------------------------
# can this machine do it?


@functools.cache
def _probe(shaping: bool, delay: bool) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"emulated hosts need Linux namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return "emulated hosts need root (network, UTS, mount and IPC namespaces, a bridge, tmpfs mounts)"
    if not os.path.exists("/proc/self/ns/net"):
        return "this kernel has no network namespaces (/proc/self/ns/net missing)"
    try:
        tools = _tools("ip", "nsenter", "unshare", "mount", *(("tc",) if shaping or delay else ()))
    except EmulatedHostsError as e:
        return str(e)
    script = [
        f"{tools['ip']} link add b0 type bridge",
        f"{tools['ip']} link add v0 type veth peer name v1",
        f"{tools['ip']} link set v0 master b0",
        f"{tools['mount']} -t tmpfs tmpfs /dev/shm",
        "echo probe > /proc/sys/kernel/hostname",
    ]
    if shaping:
        script.append(f"{tools['tc']} qdisc add dev v0 root tbf rate 10mbit burst 65536 latency 20ms")
    if delay:
        script.append(f"{tools['tc']} qdisc add dev v1 root netem delay 1ms")
    argv = [tools["unshare"], *_NS_FLAGS, "--propagation", "slave", "sh", "-ec", "; ".join(script)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot make namespaces here: {e}"
    if r.returncode != 0:
        if delay and _probe(shaping, False) is None:
            return f"no netem delay here (the kernel lacks sch_netem): {r.stderr.strip()}"
        return f"cannot make emulated hosts here: {r.stderr.strip() or r.stdout.strip()}"
    return None


def available(shaping: bool = False, delay: bool = False) -> str | None:
    """Whether this machine can make emulated hosts; probed once per process by making a throwaway set.

    Args:
        shaping: also require ``tc`` with the ``tbf`` qdisc (``link_rate``, :meth:`EmulatedHosts.shape`).
        delay: also require the ``netem`` qdisc (``delay_ms``).

    Returns:
        None where it can, else the reason it cannot (tests skip with it).
    """
    return _probe(bool(shaping), bool(delay))


# ----------------------------------------------------------------------------------------------------------------
# leftovers


def _anchors() -> list[tuple[int, str, str, str]]:
    """Live anchor processes: (pid, owner, tag, host name)."""
    out = []
    for pid in _pids():
        argv = _cmdline(pid)
        if len(argv) == 7 and argv[1:3] == ["-I", "-c"] and argv[4].startswith(MARKER + ":"):
            parts = argv[4].split(":")
            if len(parts) == 4:
                out.append((pid, parts[1], parts[2], parts[3]))
    return out


def _owner_of_env(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    key = OWNER_ENV.encode() + b"="
    for item in env:
        if item.startswith(key):
            return item[len(key) :].decode(errors="replace")
    return None


def _remove_anchor(pid: int) -> int:
    """Kill everything in an anchor's host, then the anchor.

    Returns:
        How many kill signals were sent.
    """
    sent = _kill_netns(_ns(pid), exclude=(pid,))
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
        sent += 1
    return sent


def cleanup_leftovers(owners: Sequence[str] | None = None) -> int:
    """Remove emulated hosts whose owner has died (a crashed run), or those of the given owners.

    Kills their anchors and every process still inside their hosts (found by network namespace, and by the
    owner variable set in processes started in a host, where the anchor itself is gone); the kernel then frees
    the namespaces, veths, bridge and mounts. Never kills a process in the root network namespace. Also
    removes temporary folders left by a dead owner.

    Args:
        owners: owner tags (``<pid>.<start time>``) to remove even though alive; None: only dead owners'.

    Returns:
        How many processes were sent SIGKILL.
    """
    if not os.path.exists("/proc/self/ns/net"):
        return 0
    root = _ns("self")
    wanted = set(owners or ())

    def stale(owner: str) -> bool:
        return owner in wanted or not _owner_alive(owner)

    killed = 0
    for pid, owner, _tag, _host in _anchors():
        if stale(owner) and _ns(pid) != root:
            killed += _remove_anchor(pid)
    for pid in _pids():
        owner = _owner_of_env(pid)
        if owner is not None and stale(owner) and _ns(pid) not in (None, root):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    tmp = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(tmp):
            if name.startswith(_TMP_PREFIX):
                owner = name[len(_TMP_PREFIX) :].split("-")[0]
                if stale(owner):
                    shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    return killed


# ----------------------------------------------------------------------------------------------------------------
# the hosts


_live: weakref.WeakSet[EmulatedHosts] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for hosts in list(_live):
        hosts.close()


class EmulatedHosts:
    """N emulated hosts on a private bridge (see the module docstring); a context manager.

    Example::

        with EmulatedHosts(2, link_rate="10gbit") as hosts:
            procs = [hosts.popen(i, [sys.executable, "train.py"], env={**os.environ, "MASTER_ADDR": "h0"})
                     for i in range(2)]
            assert all(p.wait() == 0 for p in procs)

    Attributes:
        n: how many hosts.
        names: their hostnames, ``["h0", "h1", ...]``.
        interface: the one interface each host has (``GLOO_SOCKET_IFNAME`` for gloo inside a host).
        addresses: their bridge addresses (IPv4, as strings), by host index.
        prefixlen: the subnet's prefix length.
        anchor_pids: the pid holding each host's namespaces (``nsenter -t <pid>`` enters it).
        switch_pid: the pid holding the bridge's namespace.
        netns: each host's network namespace, as ``readlink /proc/<pid>/ns/net`` gives it.
        owner: this instance's owner tag (``<pid>.<start time>``).
    """

    def __init__(
        self,
        n: int,
        link_rate: str | None = None,
        delay_ms: float | None = None,
        *,
        subnet: str = DEFAULT_SUBNET,
        tag: str = "lib",
    ) -> None:
        """Make the hosts (and clean a dead run's leftovers first).

        Args:
            n: how many hosts (1 or more).
            link_rate: shape every host's link to this rate each way (tc's spelling: ``"10gbit"``); None: unshaped.
            delay_ms: add this delay on every host's egress (netem), so host-to-host one way is ``delay_ms`` and
                a round trip ``2 * delay_ms``; None: none.
            subnet: the private subnet on the bridge; host i gets its (i+1)-th address.
            tag: recorded in the anchors' command lines; ``down`` stops live owners tagged ``"cli"``.

        Raises:
            EmulatedHostsError: this machine cannot (see :func:`available`), or a setup step failed (everything
                made so far is removed first).
            ValueError: bad `n`, `subnet` or `tag`.
        """
        net = ipaddress.ip_network(subnet)
        if not isinstance(n, int) or n < 1 or n > min(250, net.num_addresses - 2):
            raise ValueError(f"n must be 1..{min(250, net.num_addresses - 2)} for subnet {subnet}, got {n!r}")
        if not re.fullmatch(r"[a-z0-9_]+", tag):
            raise ValueError(f"tag must be [a-z0-9_]+, got {tag!r}")
        if link_rate is not None:
            parse_rate(link_rate)
        reason = available(shaping=link_rate is not None, delay=bool(delay_ms))
        if reason is not None:
            raise EmulatedHostsError(reason)
        self._tools = _tools("ip", "nsenter", "unshare", "mount")
        self._tools["tc"] = _tool("tc") or ""  # only for shaping (available() checked it where asked for)
        self.n = n
        self.interface = HOST_IFNAME
        self.names = [f"h{i}" for i in range(n)]
        hosts_iter = net.hosts()
        self.addresses = [str(next(hosts_iter)) for _ in range(n)]
        self.prefixlen = net.prefixlen
        self.link_rate = link_rate
        self.delay_ms = delay_ms
        self.owner = _owner_tag()
        self.tag = tag
        self.anchor_pids: list[int] = []
        self.switch_pid = 0
        self.netns: list[str] = []
        self._pid = os.getpid()
        self._anchors: list[subprocess.Popen[bytes]] = []
        self._children: list[subprocess.Popen[Any]] = []
        self._lock = threading.RLock()
        self._closed = False
        self._root_netns = _ns("self")
        self._tmpdir: str | None = None
        self._bridge = f"ae{self._pid}br"
        self._ports = [f"ae{self._pid}p{i}" for i in range(n)]
        cleanup_leftovers()
        _live.add(self)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    # -- setup -------------------------------------------------------------------------------------------------

    def _anchor(self, name: str, flags: Sequence[str], folder: str = "") -> subprocess.Popen[bytes]:
        marker = f"{MARKER}:{self.owner}:{self.tag}:{name}"
        script = [sys.executable, "-I", "-c", _ANCHOR, marker, self._root_netns, folder]
        argv = [self._tools["unshare"], *flags, "--", *script]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
        self._anchors.append(p)
        line = p.stdout.readline() if p.stdout else b""
        err = b""
        if line.strip() != b"ready":
            with contextlib.suppress(subprocess.TimeoutExpired):
                _, err = p.communicate(timeout=5)
            raise EmulatedHostsError(f"the anchor of {name} did not start: {err.decode(errors='replace').strip()}")
        for f in (p.stdout, p.stderr):
            if f is not None:
                f.close()
        if _ns(p.pid) == self._root_netns:
            raise EmulatedHostsError(f"the anchor of {name} is in the root network namespace")
        return p

    def _setup(self) -> None:
        ip = self._tools["ip"]
        # The hosts' /etc/hosts and nsswitch.conf live as long as the hosts (a bind mount of an unlinked file
        # cannot be mounted over, and code in a host may want to); the switch's anchor removes them at the end.
        self._tmpdir = hosts_dir = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{self.owner}-")
        self.switch_pid = self._anchor("switch", ["--net"], hosts_dir).pid
        for name in self.names:
            pid = self._anchor(name, [*_NS_FLAGS, "--propagation", "slave"]).pid
            self.anchor_pids.append(pid)
            netns = _ns(pid)
            if netns is None:
                raise EmulatedHostsError(f"the anchor of {name} died at once")
            self.netns.append(netns)

        # The switch: a bridge, and one veth per host whose other end is created straight in the host.
        batch = [
            f"link add {self._bridge} type bridge stp_state 0",
            f"link set {self._bridge} up",
            "link set lo up",
        ]
        for port, pid in zip(self._ports, self.anchor_pids, strict=True):
            batch += [
                f"link add {port} type veth peer name {HOST_IFNAME} netns {pid}",
                f"link set {port} master {self._bridge}",
                f"link set {port} up",
            ]
        _run([*self._enter(self.switch_pid, net_only=True), ip, "-batch", "-"], "the switch", "\n".join(batch) + "\n")

        hosts_file = os.path.join(hosts_dir, "hosts")
        with open(hosts_file, "w") as f:
            f.write("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
            f.write("".join(f"{a}\t{name}\n" for a, name in zip(self.addresses, self.names, strict=True)))
        os.chmod(hosts_file, 0o644)
        mount = self._tools["mount"]
        # Names resolve from /etc/hosts only: a host has no route to a DNS server, and glibc reports an unreachable
        # one as a temporary failure (EAI_AGAIN) where "not found" is meant (torch's c10d then warns that a
        # client's hostname cannot be retrieved, for every v4-mapped peer address).
        nsswitch_mount = ""
        if os.path.isfile("/etc/nsswitch.conf"):
            with open("/etc/nsswitch.conf") as f:
                conf = re.sub(r"(?m)^hosts:.*$", "hosts:\tfiles", f.read())
            if not re.search(r"(?m)^hosts:", conf):
                conf += "hosts:\tfiles\n"
            nsswitch_file = os.path.join(hosts_dir, "nsswitch.conf")
            with open(nsswitch_file, "w") as f:
                f.write(conf)
            os.chmod(nsswitch_file, 0o644)
            nsswitch_mount = f"{mount} --bind {nsswitch_file} /etc/nsswitch.conf"
        for i, name in enumerate(self.names):
            script = [
                f"echo {name} > /proc/sys/kernel/hostname",
                f"{ip} link set lo up",
                f"{ip} addr add {self.addresses[i]}/{self.prefixlen} dev {HOST_IFNAME}",
                f"{ip} link set {HOST_IFNAME} up",
                f"{mount} -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm",
                f"{mount} --bind {hosts_file} /etc/hosts",
                nsswitch_mount,
                # /sys/class/net as after `ip netns exec` (best effort; keeps /sys's other mounts).
                f'd=$(mktemp -d); if {mount} -t sysfs sysfs "$d" 2>/dev/null; then'
                f' {mount} --bind "$d/class/net" /sys/class/net 2>/dev/null &&'
                f' {mount} --bind "$d/devices/virtual/net" /sys/devices/virtual/net 2>/dev/null;'
                f' umount -l "$d"; fi; rmdir "$d"; true',
            ]
            _run([*self._enter(self.anchor_pids[i]), "sh", "-ec", "\n".join(script)], f"host {name}")
        if self.link_rate is not None or self.delay_ms:
            for i in range(self.n):
                self._apply_shaping(i, self.link_rate, self.delay_ms)

    def _enter(self, pid: int, net_only: bool = False, wd: str | None = None,
               flags: Sequence[str] = _NS_FLAGS) -> list[str]:
        argv = [self._tools["nsenter"], "-t", str(pid), *(("--net",) if net_only else flags)]
        return argv + [f"--wd={wd}"] if wd is not None else argv

    def _apply_shaping(self, host: int, rate: str | None, delay_ms: float | None) -> None:
        tc = self._tools["tc"]
        if not tc:
            raise EmulatedHostsError("`tc` not found (needed for link shaping: iproute2)")
        # Rate on both ends (each way); delay only on the host's egress (one way host-to-host = delay_ms).
        for pid, dev, delay in (
            (self.anchor_pids[host], HOST_IFNAME, delay_ms),
            (self.switch_pid, self._ports[host], None),
        ):
            enter = self._enter(pid, net_only=True)
            # No root qdisc to delete is fine: the default one stays until an add replaces it.
            subprocess.run([*enter, tc, "qdisc", "del", "dev", dev, "root"], capture_output=True, timeout=30)
            for cmd in _qdisc_commands(dev, rate, delay):
                _run([*enter, tc, *cmd], f"shaping the link of {self.names[host]}")

    # -- use ---------------------------------------------------------------------------------------------------

    def _check(self, host: int) -> None:
        if self._closed:
            raise EmulatedHostsError("these emulated hosts are closed")
        if not isinstance(host, int) or not 0 <= host < self.n:
            raise IndexError(f"host must be 0..{self.n - 1}, got {host!r}")

    def index(self, host: int | str) -> int:
        """A host's index from its index or name (``"h1"`` -> 1).

        Args:
            host: an index or a name in :attr:`names`.

        Returns:
            The index.

        Raises:
            IndexError: no such host.
        """
        if isinstance(host, str):
            if host not in self.names:
                raise IndexError(f"no host {host!r}: {self.names}")
            return self.names.index(host)
        self._check(host)
        return host

    def nsenter_argv(self, host: int | str, wd: str | None = None, *, own_files: bool = True) -> list[str]:
        """The command prefix that enters a host (what :meth:`popen` runs; also for an rsh agent of mpirun).

        Args:
            host: index or name.
            wd: the working directory inside (nsenter's ``--wd``); None: none given, and then nsenter starts
                the program in the root of the host's mount namespace ("/"), not in the caller's folder.
            own_files: also enter the host's mount and IPC namespaces (its /dev/shm, its /etc/hosts). False: only
                its network and host name, so that the program shares this machine's files with the caller (the
                bench's ranks rebuild multiprocessing's locks from /dev/shm and talk through FIFOs).

        Returns:
            ``["/usr/bin/nsenter", "-t", "<anchor pid>", "--net", "--uts", "--mount", "--ipc", ...]`` (without
            ``--mount --ipc`` when `own_files` is False).
        """
        i = self.index(host)
        self._check(i)
        return self._enter(self.anchor_pids[i], wd=wd, flags=_NS_FLAGS if own_files else _NAME_AND_NET_FLAGS)

    def env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a process in a host gets: `env` (default os.environ) plus the owner marker.

        Args:
            env: the base environment.

        Returns:
            A new dict.
        """
        out = dict(os.environ if env is None else env)
        out[OWNER_ENV] = self.owner
        return out

    def popen(
        self,
        host: int | str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        **popen_kwargs: Any,
    ) -> subprocess.Popen[Any]:
        """Start a process inside a host (``nsenter`` execs it: its pid is ``Popen.pid``).

        Args:
            host: index or name.
            argv: the program and its arguments (found through `env`'s PATH, as by ``execvp``).
            env: its environment (default: os.environ); the owner marker is added.
            **popen_kwargs: passed to ``subprocess.Popen`` (stdout, stderr, text, cwd, ...). ``cwd`` (default:
                this process's working directory) is also where the process starts inside the host.

        Returns:
            The Popen. It is killed at :meth:`close` if still running.

        Raises:
            EmulatedHostsError: closed.
            IndexError: no such host.
        """
        i = self.index(host)
        with self._lock:
            self._check(i)
            cwd = os.path.abspath(os.fspath(popen_kwargs.get("cwd") or os.getcwd()))
            p = subprocess.Popen([*self._enter(self.anchor_pids[i], wd=cwd), *argv], env=self.env(env), **popen_kwargs)
            self._children = [c for c in self._children if c.poll() is None] + [p]
            return p

    def run(
        self,
        host: int | str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        check: bool = False,
        capture_output: bool = True,
        text: bool = True,
        input: str | bytes | None = None,
        **popen_kwargs: Any,
    ) -> subprocess.CompletedProcess[Any]:
        """Run a process inside a host to its end, as ``subprocess.run`` does.

        Args:
            host: index or name.
            argv: the program and its arguments.
            env: its environment (default: os.environ).
            timeout: seconds; on expiry the process is killed and TimeoutExpired raised.
            check: raise CalledProcessError on a nonzero exit.
            capture_output: capture stdout and stderr.
            text: decode them.
            input: written to its stdin.
            **popen_kwargs: passed to ``subprocess.Popen``.

        Returns:
            The CompletedProcess (``args`` is `argv`, without the nsenter prefix).

        Raises:
            subprocess.TimeoutExpired: it ran past `timeout`.
            subprocess.CalledProcessError: `check` and it failed.
        """
        if capture_output:
            popen_kwargs.setdefault("stdout", subprocess.PIPE)
            popen_kwargs.setdefault("stderr", subprocess.PIPE)
        if input is not None:
            popen_kwargs["stdin"] = subprocess.PIPE
        with self.popen(host, argv, env, text=text, **popen_kwargs) as p:
            try:
                out, err = p.communicate(input, timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                raise
        r = subprocess.CompletedProcess(list(argv), p.returncode, out, err)
        if check:
            r.check_returncode()
        return r

    def set_link(self, host: int | str, up: bool) -> None:
        """Unplug (``up=False``) or plug back a host's cable, at the switch: its port goes down, so packets to and
        from the host are dropped (connections stall and time out, as with a pulled cable; the host's own
        interface stays configured). Plugged back, TCP retransmissions resume.

        Args:
            host: index or name.
            up: plug in (True) or unplug (False).

        Raises:
            EmulatedHostsError: closed, or ``ip`` failed.
        """
        i = self.index(host)
        with self._lock:
            self._check(i)
            _run([*self._enter(self.switch_pid, net_only=True), self._tools["ip"], "link", "set", self._ports[i],
                  "up" if up else "down"], f"set_link({self.names[i]}, {up})")  # fmt: skip

    def shape(self, host: int | str, rate: str | None, delay_ms: float | None = None) -> None:
        """Shape one host's link now (replacing what it had).

        Args:
            host: index or name.
            rate: tbf rate each way (``"10gbit"``); None: unlimited.
            delay_ms: netem delay on the host's egress; None: none.

        Raises:
            EmulatedHostsError: closed, the rate is not understood, netem is missing, or tc failed.
        """
        i = self.index(host)
        if rate is not None:
            parse_rate(rate)
        if delay_ms and available(delay=True) is not None:
            raise EmulatedHostsError(str(available(delay=True)))
        with self._lock:
            self._check(i)
            self._apply_shaping(i, rate, delay_ms)

    def processes(self, host: int | str) -> list[int]:
        """Pids of the processes inside a host (its anchor excluded).

        Args:
            host: index or name.

        Returns:
            The pids, ascending.
        """
        i = self.index(host)
        self._check(i)
        return sorted(_pids_in_netns(self.netns[i], exclude=(self.anchor_pids[i],)))

    # -- teardown ----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process in the hosts and remove the hosts (namespaces, veths, bridge, tmpfs, mounts).

        Idempotent; best effort (never raises for a part already gone). Called by ``with`` and at exit.
        """
        with self._lock:
            if self._closed or os.getpid() != self._pid:  # a forked child does not own the hosts
                return
            self._closed = True
            anchors = {p.pid for p in self._anchors}
            for netns in self.netns:
                _kill_netns(netns, exclude=tuple(anchors))
            for c in self._children:
                with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                    c.kill()
                    c.wait(timeout=5)
            for p in self._anchors:
                with contextlib.suppress(OSError):
                    if p.stdin is not None:
                        p.stdin.close()
            deadline = time.monotonic() + 5
            for p in self._anchors:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _remove_anchor(p.pid)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        p.wait(timeout=5)
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
            _live.discard(self)

    def __enter__(self) -> EmulatedHosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finaliser
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "up"
        return f"EmulatedHosts({self.n}, names={self.names}, addresses={self.addresses}, {state})"


# ----------------------------------------------------------------------------------------------------------------
# CLI


def _live_instances() -> dict[str, dict[str, Any]]:
    """Live owners' hosts: owner -> {"tag", "hosts": {name: anchor pid}, "switch": pid}."""
    out: dict[str, dict[str, Any]] = {}
    for pid, owner, tag, host in _anchors():
        if not _owner_alive(owner):
            continue
        item = out.setdefault(owner, {"tag": tag, "hosts": {}, "switch": None})
        if host == "switch":
            item["switch"] = pid
        else:
            item["hosts"][host] = pid
    return out


def _cmd_up(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    with EmulatedHosts(args.hosts, link_rate=args.link_rate, delay_ms=args.delay_ms, tag="cli") as hosts:
        shaped = f", link {args.link_rate}" if args.link_rate else ""
        shaped += f", delay {args.delay_ms} ms" if args.delay_ms else ""
        print(f"emulated hosts up: {hosts.n} hosts{shaped}, owner pid {os.getpid()}")
        for i, name in enumerate(hosts.names):
            enter = " ".join(hosts.nsenter_argv(i))
            print(f"  {name}  {hosts.addresses[i]}/{hosts.prefixlen}")
            print(f'      enter: {enter} --wd="$PWD" bash')
            print(f"      or:    python -m atb_ops.emulated_hosts exec {name} -- bash")
        print("Ctrl-C here or `python -m atb_ops.emulated_hosts down` removes them.", flush=True)
        while not stop.wait(0.5):
            pass
    print("emulated hosts removed", flush=True)
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    cli_owners = [
        o
        for o, item in _live_instances().items()
        if item["tag"] == "cli" and (args.owner is None or o.split(".")[0] == str(args.owner))
    ]
    for owner in cli_owners:
        with contextlib.suppress(OSError):
            os.kill(int(owner.split(".")[0]), signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and any(o in cli_owners for _, o, _, _ in _anchors()):
        time.sleep(0.1)
    killed = cleanup_leftovers(owners=cli_owners)
    print(f"stopped {len(cli_owners)} `up` instance(s); {killed} leftover process(es) killed")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    live = _live_instances()
    if not live:
        print("no emulated hosts")
    for owner, item in live.items():
        hosts = ", ".join(f"{name} (anchor {pid})" for name, pid in sorted(item["hosts"].items()))
        print(f"owner {owner.split('.')[0]} [{item['tag']}]: {hosts}")
    return 0


def _cmd_exec(args: argparse.Namespace) -> int:
    live = _live_instances()
    if args.owner is not None:
        live = {o: item for o, item in live.items() if o.split(".")[0] == str(args.owner)}
    else:  # only `up`'s hosts, never a test's by accident (--owner enters those)
        live = {o: item for o, item in live.items() if item["tag"] == "cli"}
    candidates = [(o, item) for o, item in live.items() if args.host in item["hosts"]]
    if not candidates:
        print(f"no live emulated host {args.host!r} (start some with `up`)", file=sys.stderr)
        return 2
    if len(candidates) > 1:
        owners = ", ".join(o.split(".")[0] for o, _ in candidates)
        print(f"several `up`s have a host {args.host!r} (owner pids {owners}): pass --owner", file=sys.stderr)
        return 2
    owner, item = candidates[0]
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        argv = [os.environ.get("SHELL", "/bin/sh")]
    nsenter = _tools("nsenter")["nsenter"]
    os.environ[OWNER_ENV] = owner
    os.execv(nsenter, [nsenter, "-t", str(item["hosts"][args.host]), *_NS_FLAGS, f"--wd={os.getcwd()}", *argv])
    return 127  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI: ``up``, ``down``, ``list``, ``exec`` (see the module docstring).

    Args:
        argv: the arguments (default: sys.argv[1:]).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(prog="python -m atb_ops.emulated_hosts", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="make emulated hosts and keep them until Ctrl-C, SIGTERM or `down`")
    up.add_argument("--hosts", type=int, default=2, help="how many hosts (default 2)")
    up.add_argument("--link-rate", default=None, help="shape each host's link, tc's spelling: 10gbit, 100mbit")
    up.add_argument("--delay-ms", type=float, default=None, help="netem delay on each host's egress")
    up.set_defaults(func=_cmd_up)
    down = sub.add_parser("down", help="stop running `up`s and remove every dead owner's leftovers")
    down.add_argument("--owner", type=int, default=None, help="stop only the `up` with this pid")
    down.add_argument("--timeout", type=float, default=10, help="seconds to wait for `up`s to tear down")
    down.set_defaults(func=_cmd_down)
    ls = sub.add_parser("list", help="list live emulated hosts")
    ls.set_defaults(func=_cmd_list)
    ex = sub.add_parser("exec", help="run a command inside a live host: exec h0 -- torchrun ...")
    ex.add_argument("--owner", type=int, default=None, help="the owner's pid (several `up`s, or a library's hosts)")
    ex.add_argument("host", help="h0, h1, ...")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="the command (default: $SHELL)")
    ex.set_defaults(func=_cmd_exec)
    args = parser.parse_args(argv)
    if args.cmd in ("up", "exec"):
        shaping, delay = getattr(args, "link_rate", None) is not None, bool(getattr(args, "delay_ms", 0))
        reason = available(shaping=shaping, delay=delay)
        if reason is not None:
            print(f"emulated hosts unavailable: {reason}", file=sys.stderr)
            return 2
    try:
        return int(args.func(args))
    except EmulatedHostsError as e:
        print(f"emulated hosts: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
