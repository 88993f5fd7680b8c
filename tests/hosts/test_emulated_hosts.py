"""Emulated hosts (atb_ops.emulated_hosts): names, addresses, reachability, private /dev/shm, link faults, shaping,
teardown (also after a failure or a crash) and a gloo job across hosts, each with real processes inside the hosts
and every child's exit status checked. Needs root; elsewhere every test skips with the reason."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from atb_ops import emulated_hosts as eh
from tests.support import launch
from tests.support.environment import clean_env
from tests.support.paths import REPO_ROOT

REASON = eh.available()
needs_hosts = pytest.mark.skipif(REASON is not None, reason=f"emulated hosts: {REASON}")

PY = sys.executable
PORT = 5555  # per host (network namespace): cannot clash with the machine's ports or another instance's


def py(hosts: eh.EmulatedHosts, host: int, code: str, *args: str, timeout: float = 30, **env: str) -> str:
    """Run a Python snippet inside a host, assert it exited 0, and return its stdout."""
    r = hosts.run(host, [PY, "-c", textwrap.dedent(code), *args], env=clean_env(**env), timeout=timeout)
    assert r.returncode == 0, f"{hosts.names[host]}: exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r.stdout


def start_py(hosts: eh.EmulatedHosts, host: int, code: str, *args: str, **env: str) -> subprocess.Popen[str]:
    return hosts.popen(
        host,
        [PY, "-c", textwrap.dedent(code), *args],
        env=clean_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(p: subprocess.Popen[str], timeout: float = 30) -> str:
    """Wait for a process started with start_py, assert it exited 0, and return its stdout."""
    (exit_,) = launch.finish([p], timeout)  # killed (and so failing here) past the timeout
    assert exit_.returncode == 0, f"exit {exit_.returncode}\nstdout:\n{exit_.stdout}\nstderr:\n{exit_.stderr}"
    return exit_.stdout


# A server that counts the bytes of each of `n` connections and answers each with its count and peer address.
SERVER = f"""
import socket, sys
s = socket.create_server(("0.0.0.0", {PORT}))
s.settimeout(30)
for _ in range(int(sys.argv[1])):
    c, (peer, _) = s.accept()
    with c:
        total = 0
        while b := c.recv(1 << 20):
            total += len(b)
        c.sendall(f"{{total}} {{peer}}".encode())
"""

# A client: connect to argv[1] (retrying while the server is not listening yet), send argv[2] bytes, print the
# server's answer and the seconds from connect to answer. Exit 3 where the connection cannot be made within
# argv[3] seconds (a link down).
CLIENT = f"""
import socket, sys, time
host, n, connect_timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + 10
while True:
    try:
        c = socket.create_connection((host, {PORT}), timeout=connect_timeout)
        break
    except ConnectionRefusedError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
    except OSError as e:
        print("connect failed:", type(e).__name__, e, flush=True)
        sys.exit(3)
c.settimeout(60)
t = time.perf_counter()
c.sendall(b"x" * n)
c.shutdown(socket.SHUT_WR)
answer = c.recv(100).decode()
print(answer, time.perf_counter() - t)
"""


@pytest.fixture(scope="module")
def hosts():
    with eh.EmulatedHosts(2) as h:
        yield h


def root_state() -> dict[str, object]:
    """What of the root namespace emulated hosts must never change (nor another test run's, running at once):
    interfaces, named netns, mounts, addresses, hostname, hosts file."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    addrs = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    mounts = Path("/proc/self/mountinfo").read_text()
    return {
        "links": sorted(re.findall(r"^\d+: ([^:@]+)", links, re.M)),
        "addrs": sorted(re.findall(r"inet6? (\S+)", addrs)),
        "netns": netns,
        "mounts": mounts,
        "hosts": Path("/etc/hosts").read_text(),
        "hostname": Path("/proc/sys/kernel/hostname").read_text(),
    }


def owner_folders(owner: str) -> list[str]:
    """The temporary folders (hosts files) of one owner."""
    prefix = f"atb-emulated-hosts-{owner}-"
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(prefix)]


def gone(pid: int) -> bool:
    """The process no longer exists (or is a zombie: it holds no namespace any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] == "Z"


def in_netns(netns: list[str]) -> list[int]:
    """Pids of live processes in any of these network namespaces."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink(f"/proc/{d}/ns/net") in netns:
                    out.append(int(d))
            except OSError:
                pass
    return out


def wait_until(cond, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def assert_torn_down(hosts: eh.EmulatedHosts, pids: list[int], before: dict[str, object]) -> None:
    for pid in [*hosts.anchor_pids, hosts.switch_pid, *pids]:
        assert wait_until(lambda pid=pid: gone(pid), 10), f"process {pid} survived the teardown"
    assert in_netns(hosts.netns) == [], "processes left in the hosts' network namespaces"
    assert [a for a in eh._anchors() if a[0] in (*hosts.anchor_pids, hosts.switch_pid)] == []
    assert hosts._tmpdir is not None and not os.path.exists(hosts._tmpdir)
    assert root_state() == before


# ---------------------------------------------------------------------------------------------------------------


@needs_hosts
def test_names_resolution_and_isolation(hosts: eh.EmulatedHosts) -> None:
    assert hosts.names == ["h0", "h1"]
    assert hosts.addresses == ["10.213.0.1", "10.213.0.2"]
    code = """
    import json, os, socket, sys
    names = sys.argv[1].split(",")
    print(json.dumps({
        "hostname": socket.gethostname(),
        "resolved": {n: socket.gethostbyname(n) for n in names},
        "own": socket.gethostbyname(socket.gethostname()),
        "cwd": os.getcwd(),
        "ifaces": sorted(os.listdir("/sys/class/net")),
        "if_names": sorted(name for _, name in socket.if_nameindex()),
        "boot_id": open("/proc/sys/kernel/random/boot_id").read().strip(),
        "netns": os.readlink("/proc/self/ns/net"),
        "shm_dev": os.stat("/dev/shm").st_dev,
        "venv": os.path.exists(sys.executable),
    }))
    """
    seen = [json.loads(py(hosts, i, code, ",".join(hosts.names))) for i in range(2)]
    own_boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    for i, s in enumerate(seen):
        assert s["hostname"] == hosts.names[i]
        assert s["resolved"] == dict(zip(hosts.names, hosts.addresses, strict=True))
        assert s["own"] == hosts.addresses[i]  # gloo binds what the host's name resolves to
        assert s["cwd"] == os.getcwd()
        assert s["ifaces"] == s["if_names"] == ["eth0", "lo"]
        assert s["netns"] == hosts.netns[i] != os.readlink("/proc/self/ns/net")
        assert s["venv"]
        # One kernel: boot_id is the same on every emulated host (host identity must use more than boot_id).
        assert s["boot_id"] == own_boot
    assert seen[0]["shm_dev"] != seen[1]["shm_dev"] != os.stat("/dev/shm").st_dev
    # The root namespace keeps its own name, hosts file and addresses.
    assert Path("/proc/sys/kernel/hostname").read_text().strip() != "h0"
    assert "10.213." not in Path("/etc/hosts").read_text()
    assert "10.213." not in subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout


@needs_hosts
def test_tcp_between_hosts_and_no_route_to_root(hosts: eh.EmulatedHosts) -> None:
    server = start_py(hosts, 1, SERVER, "2")
    for client_host in (0, 1):  # from the other host and from the host itself, by name
        out = py(hosts, client_host, CLIENT, "h1", "100000", "5")
        count, peer, _seconds = out.split()
        assert int(count) == 100000
        assert peer == hosts.addresses[client_host]
    finish(server)
    # A host has no route but its bridge subnet: not the root namespace's addresses, not the world.
    addrs = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    targets = re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", addrs.stdout) + ["198.51.100.1"]  # TEST-NET-2
    code = """
    import errno, json, socket, sys
    out = {}
    for a in sys.argv[1:]:
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((a, 22))
            out[a] = "connected"
        except OSError as e:
            out[a] = e.errno
    print(json.dumps(out))
    """
    result = json.loads(py(hosts, 0, code, *targets))
    assert result == {a: errno.ENETUNREACH for a in targets}


@needs_hosts
def test_dev_shm_private_per_host_shared_within(hosts: eh.EmulatedHosts) -> None:
    name = f"atb_emulated_hosts_test_{os.getpid()}"
    write = "import sys; open('/dev/shm/' + sys.argv[1], 'w').write('from h0')"
    read = "import os, sys; p = '/dev/shm/' + sys.argv[1]; print(open(p).read() if os.path.exists(p) else 'absent')"
    # POSIX shared memory (shm_open under /dev/shm) too, between two processes of one host.
    shm_create = """
    import sys
    from multiprocessing import resource_tracker, shared_memory
    m = shared_memory.SharedMemory(sys.argv[1] + "_posix", create=True, size=16)
    resource_tracker.unregister(m._name, "shared_memory")
    m.buf[:5] = b"hello"
    """
    shm_attach = """
    import sys
    from multiprocessing import resource_tracker, shared_memory
    m = shared_memory.SharedMemory(sys.argv[1] + "_posix")
    resource_tracker.unregister(m._name, "shared_memory")
    print(bytes(m.buf[:5]).decode())
    """
    try:
        py(hosts, 0, write, name)
        py(hosts, 0, shm_create, name)
        assert py(hosts, 0, read, name).strip() == "from h0"  # another process of the same host
        assert py(hosts, 0, shm_attach, name).strip() == "hello"
        assert py(hosts, 1, read, name).strip() == "absent"
        r = hosts.run(1, [PY, "-c", textwrap.dedent(shm_attach), name], env=clean_env(), timeout=30)
        assert r.returncode != 0 and "FileNotFoundError" in r.stderr
        assert not os.path.exists(f"/dev/shm/{name}")
        assert not os.path.exists(f"/dev/shm/{name}_posix")
    finally:
        hosts.run(0, ["rm", "-f", f"/dev/shm/{name}", f"/dev/shm/{name}_posix"], timeout=10)


@needs_hosts
def test_set_link_down_and_up(hosts: eh.EmulatedHosts) -> None:
    server = start_py(hosts, 1, SERVER, "2")
    try:
        assert int(py(hosts, 0, CLIENT, "h1", "1000", "5").split()[0]) == 1000
        hosts.set_link(1, False)
        t = time.monotonic()
        r = hosts.run(0, [PY, "-c", CLIENT, "h1", "1000", "1.5"], env=clean_env(), timeout=30)
        assert r.returncode == 3, (r.stdout, r.stderr)  # timed out / unreachable, not refused
        assert "connect failed" in r.stdout
        assert time.monotonic() - t >= 1.0
        hosts.set_link("h1", True)
        assert int(py(hosts, 0, CLIENT, "h1", "1000", "5").split()[0]) == 1000
        finish(server)
    finally:
        hosts.set_link(1, True)
        if server.poll() is None:
            server.kill()
            server.communicate()


@needs_hosts
def test_shaped_link_limits_throughput() -> None:
    if (reason := eh.available(shaping=True)) is not None:
        pytest.skip(reason)
    size = 10 * 2**20
    with eh.EmulatedHosts(2, link_rate="100mbit") as hosts:
        for i in range(2):
            assert "tbf" in hosts.run(i, ["tc", "qdisc", "show", "dev", "eth0"], check=True).stdout
        server = start_py(hosts, 1, SERVER, "1")
        count, _peer, seconds = py(hosts, 0, CLIENT, "h1", str(size), "5").split()
        finish(server)
        assert int(count) == size
        ideal = size * 8 / 100e6
        assert float(seconds) >= 0.5 * ideal, f"{size} B over a 100mbit link took {seconds} s (ideal {ideal:.2f} s)"
        hosts.shape(0, None)
        hosts.shape(1, None)
        for i in range(2):
            assert "tbf" not in hosts.run(i, ["tc", "qdisc", "show", "dev", "eth0"], check=True).stdout
        hosts.shape(0, "200mbit")
        assert "200Mbit" in hosts.run(0, ["tc", "qdisc", "show", "dev", "eth0"], check=True).stdout


@needs_hosts
def test_delay() -> None:
    if (reason := eh.available(delay=True)) is not None:
        pytest.skip(reason)
    with eh.EmulatedHosts(2, delay_ms=20) as hosts:
        server = start_py(hosts, 1, SERVER, "1")
        code = f"""
        import socket, time
        for _ in range(100):
            try:
                t = time.perf_counter(); c = socket.create_connection(("h1", {PORT}), timeout=5); break
            except ConnectionRefusedError:
                time.sleep(0.05)
        print(time.perf_counter() - t)
        c.close()
        """
        rtt = float(py(hosts, 0, code))
        finish(server)
        assert rtt >= 0.5 * 0.040


@needs_hosts
def test_teardown_when_the_body_raises() -> None:
    before = root_state()
    with pytest.raises(RuntimeError, match="the body failed"), eh.EmulatedHosts(2) as hosts:
        # grandchildren too, and files in the hosts' /dev/shm
        procs = [hosts.popen(i, ["sh", "-c", "echo x > /dev/shm/x; sleep 300 & sleep 300"]) for i in range(2)]
        assert wait_until(lambda: all(len(hosts.processes(i)) >= 2 for i in range(2)))
        pids = [p for i in range(2) for p in hosts.processes(i)]
        raise RuntimeError("the body failed")
    assert all(p.returncode == -signal.SIGKILL for p in procs)
    assert_torn_down(hosts, pids, before)
    with pytest.raises(eh.EmulatedHostsError, match="closed"):
        hosts.popen(0, ["true"])
    hosts.close()  # idempotent


CRASHING_OWNER = """
import json, sys, time
from atb_ops import emulated_hosts as eh
hosts = eh.EmulatedHosts(2)
sleeper = hosts.popen(0, ["sleep", "300"])
while sleeper.pid not in hosts.processes(0) or open(f"/proc/{sleeper.pid}/comm").read().strip() != "sleep":
    time.sleep(0.01)  # inside the host and exec'd: nsenter has opened (and entered) every namespace
print(json.dumps({"anchors": hosts.anchor_pids, "switch": hosts.switch_pid, "netns": hosts.netns,
                  "owner": hosts.owner, "sleeper": sleeper.pid}), flush=True)
sys.stdin.read()
"""


def start_owner() -> tuple[subprocess.Popen[str], dict[str, object]]:
    owner = subprocess.Popen(
        [PY, "-c", CRASHING_OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=clean_env()
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line, f"the owner failed (exit {owner.wait()})"
    return owner, json.loads(line)


@needs_hosts
def test_owner_killed_tears_down_by_itself() -> None:
    before = root_state()
    owner, info = start_owner()
    owner.kill()  # SIGKILL: no atexit, no finally; the anchors see their pipe close
    owner.wait()
    for pid in [*info["anchors"], info["switch"], info["sleeper"]]:
        assert wait_until(lambda pid=pid: gone(pid), 10), f"process {pid} survived its owner"
    assert in_netns(info["netns"]) == []
    assert wait_until(lambda: not owner_folders(info["owner"]), 5)
    assert root_state() == before


@needs_hosts
def test_leftovers_of_a_crashed_run_are_cleaned_at_the_next_start() -> None:
    before = root_state()
    owner, info = start_owner()
    # The worst crash: the anchors die first (no one left to power the host off), then the owner.
    for pid in [*info["anchors"], info["switch"]]:
        os.kill(pid, signal.SIGKILL)
    owner.kill()
    owner.wait()
    time.sleep(0.2)
    # The sleeper outlives its anchor and owner (unless another test run's start has cleaned it already).
    assert in_netns(info["netns"]) in ([info["sleeper"]], [])
    with eh.EmulatedHosts(1):
        assert wait_until(lambda: gone(info["sleeper"]), 5)
    assert in_netns(info["netns"]) == []
    assert not owner_folders(info["owner"])
    assert root_state() == before


@needs_hosts
def test_gloo_all_reduce_across_two_hosts() -> None:
    code = """
    import os, socket, torch, torch.distributed as dist
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=2)
    t = torch.tensor([float(os.environ["RANK"]) + 1.0])
    dist.all_reduce(t)
    print(socket.gethostname(), t.item())
    dist.destroy_process_group()
    """
    env = {"MASTER_ADDR": "h0", "MASTER_PORT": "29500", "WORLD_SIZE": "2"}
    with eh.EmulatedHosts(2) as hosts:
        ranks = []
        for rank in range(2):
            e = clean_env(**env, RANK=str(rank))
            e.pop("GLOO_SOCKET_IFNAME", None)  # the host's name resolves to its bridge address: gloo binds that
            ranks.append(
                hosts.popen(
                    rank,
                    [PY, "-c", textwrap.dedent(code)],
                    env=e,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        results = []
        for p in ranks:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{out}\nstderr:\n{err}"
            results.append((out, err))
    assert [out.split() for out, _ in results] == [["h0", "3.0"], ["h1", "3.0"]]
    # Each rank's gloo bound its host's bridge address (the one its name resolves to), not the loopback fallback
    # ("Unable to resolve hostname to a (local) address. Using the loopback address as fallback").
    assert not any("loopback" in err for _, err in results), [err for _, err in results]


@needs_hosts
def test_cli_up_exec_list_down() -> None:
    before = root_state()
    script = str(REPO_ROOT / "scripts" / "emulated_hosts.sh")
    up = subprocess.Popen([script, "up", "--hosts", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert up.stdout is not None
        lines = []
        while not lines or not lines[-1].startswith("Ctrl-C"):
            line = up.stdout.readline()
            assert line, f"`up` ended: {''.join(lines)} {up.stderr.read() if up.stderr else ''}"
            lines.append(line)
        assert re.search(r"h1\s+10\.213\.0\.2/24", "".join(lines))
        anchors = [int(p) for p in re.findall(r"nsenter -t (\d+)", "".join(lines))]
        assert len(anchors) == 2
        # --owner: another test run's `up` may be live at the same time
        mine = ["--owner", str(up.pid)]
        r = subprocess.run(
            [script, "exec", *mine, "h1", "--", "sh", "-c", "hostname; pwd"], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["h1", os.getcwd()]
        r = subprocess.run([script, "list"], capture_output=True, text=True)
        assert r.returncode == 0 and f"owner {up.pid} [cli]" in r.stdout, r.stdout
        r = subprocess.run([script, "down", *mine], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "stopped 1" in r.stdout, (r.stdout, r.stderr)
        out, err = up.communicate(timeout=15)
        assert up.returncode == 0, err
        assert "removed" in out
        for pid in anchors:
            assert wait_until(lambda pid=pid: gone(pid), 10)
        r = subprocess.run([script, "exec", *mine, "h1", "--", "true"], capture_output=True, text=True)
        assert r.returncode == 2 and "no live emulated host" in r.stderr
    finally:
        if up.poll() is None:
            up.kill()
            up.communicate()
    assert root_state() == before


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        eh.EmulatedHosts(0)
    with pytest.raises(eh.EmulatedHostsError, match="link rate"):
        eh.EmulatedHosts(1, link_rate="fast")
    assert eh.parse_rate("10gbit") == 10e9
    assert eh.parse_rate("1gbps") == 8e9
    assert eh.parse_rate("1000") == 1000


def test_available_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "root" in (eh._probe.__wrapped__(False, False) or "")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert "Linux" in (eh._probe.__wrapped__(False, False) or "")
