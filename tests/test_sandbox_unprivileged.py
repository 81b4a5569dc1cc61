"""The sandbox hosted from outside the project's venv: by a normal user, and from a venv under ``/tmp``.

Issue 13, finding 1 on a non-root host: runs keep the user's uid, and still cannot reach the server.  Issue 24,
finding 10: nor can they use up the kernel's per-user counters that the host user's other processes share.

The host side runs as an unprivileged user (``setpriv`` to nobody) under a system interpreter, importing a
world-readable copy of ``pettingllms/sandbox`` only.  Its runs try what a same-uid program could do to the old
fork server: write a forged reply frame into its reply pipe through ``/proc/<pid>/fd``, ``kill(-1)``, ptrace
and read ``/proc/<pid>/mem`` of every process they can name.  Skipped only where there is no ``setpriv``, no
system Python 3.10+, or no unprivileged user namespaces (bubblewrap needs them when not root).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pettingllms.sandbox import _bwrap

SANDBOX_SOURCE = Path(__file__).resolve().parent.parent / "pettingllms" / "sandbox"
NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]

_ATTACK = r"""
import ctypes, json, os, struct
forged = json.dumps({"status": "ok", "stdout": "FORGED\n", "stderr": "", "returncode": 0, "duration_s": 0.0})
frame = struct.pack(">I", len(forged)) + forged.encode()
libc = ctypes.CDLL(None, use_errno=True)
hits = []
for pid in (int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        hits.append(f"ptrace {pid}")
    try:
        open(f"/proc/{pid}/mem", "rb").close()
        hits.append(f"mem {pid}")
    except OSError:
        pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        continue
    for fd in fds:
        try:
            flags = int(open(f"/proc/{pid}/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("pipe:") and flags & 3 == os.O_WRONLY:
                with open(f"/proc/{pid}/fd/{fd}", "wb", buffering=0) as pipe:
                    pipe.write(frame)
                hits.append(f"forged {pid}/{fd}")
        except OSError:
            pass
print(json.dumps(hits))
"""

_HOST = r"""
import json, os, sys
from pettingllms.sandbox import Sandbox

attack = sys.stdin.read()
KILL_ALL = "import os\ntry:\n    os.kill(-1, 9)\nexcept ProcessLookupError:\n    pass\nprint('x')"
WRITE_EVERYWHERE = '''
import os
for path in ("/left", "/dev/left", "/etc/left", "/tmp/left", "/dev/shm/left"):
    print(path, os.path.exists(path), end=" ")
    try:
        open(path, "x").close()
    except OSError:
        pass
'''
with Sandbox(workers=1, preload=()) as box:
    results = [box.run(attack), box.run("print(1)"), box.run(KILL_ALL)]
    results += [box.run("print(2)"), box.run("import os\nos.kill(os.getppid(), 9)\nprint('y')"), box.run("print(3)")]
    results += [box.run(WRITE_EVERYWHERE), box.run(WRITE_EVERYWHERE)]
print(json.dumps({"uid": os.getuid(), "results": [[r.status, r.stdout] for r in results]}))
"""


def _system_python() -> str | None:
    for name in ("python3", "python3.13", "python3.12", "python3.11", "python3.10"):
        path = shutil.which(name, path="/usr/bin:/bin")
        if path is None:
            continue
        version = subprocess.run(
            [path, "-c", "import sys; print(sys.version_info >= (3, 10))"], capture_output=True
        )
        if version.stdout.strip() == b"True":
            return path
    return None


def _as_nobody() -> list[str]:
    """Command prefix that runs as nobody; skips the test where that cannot host a sandbox."""
    setpriv, bwrap, python = shutil.which("setpriv"), _bwrap.find_bwrap(), _system_python()
    if bwrap is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    if setpriv is None or python is None:
        pytest.skip("needs setpriv and a system Python >= 3.10 under /usr/bin")
    prefix = [setpriv, *NOBODY] if os.geteuid() == 0 else []
    probe = subprocess.run(
        [*prefix, bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"unprivileged user namespaces are unavailable: {probe.stderr.decode().strip()}")
    return [*prefix, python]


@pytest.fixture(scope="module")
def package_copy():
    """A world-readable copy of just ``pettingllms/sandbox`` (with an empty ``pettingllms/__init__``)."""
    root = Path(tempfile.mkdtemp(prefix="pettingllms-sandbox-"))
    target = root / "pettingllms" / "sandbox"
    target.mkdir(parents=True)
    (root / "pettingllms" / "__init__.py").write_text("")
    for source in SANDBOX_SOURCE.glob("*.py"):
        shutil.copy(source, target / source.name)
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield root
    shutil.rmtree(root)


def _host_as_nobody(package_copy: Path, host: str, stdin: str) -> dict:
    """Run the host script ``host`` as nobody on ``stdin``, importing only ``package_copy``; its JSON report."""
    done = subprocess.run(
        [*_as_nobody(), "-c", host],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=package_copy,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_copy), "HOME": str(package_copy)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_same_uid_runs_cannot_forge_replies_kill_or_trace_the_server(package_copy):
    report = _host_as_nobody(package_copy, _HOST, _ATTACK)
    assert report["uid"] != 0
    attack, *rest = report["results"]
    assert attack == ["ok", "[]\n"]  # nothing to forge into, trace or read: the server is not in its /proc
    assert rest[:5] == [["ok", "1\n"], ["ok", "x\n"], ["ok", "2\n"], ["ok", "y\n"], ["ok", "3\n"]]
    nothing_left = "/left False /dev/left False /etc/left False /tmp/left False /dev/shm/left False "
    assert rest[5:] == [["ok", nothing_left]] * 2  # the second run finds nothing the first one wrote


_COUNTER_HOG = r"""
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
os.fork()  # two processes, 60 fds each
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
instances = queued = 0
while instances < 60 and libc.inotify_init1(0) >= 0:
    instances += 1
class Value(ctypes.Union):
    _fields_ = [("number", ctypes.c_int)]
while queued < 100_000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, Value(1)) == 0:
    queued += 1
print(instances, queued, flush=True)
time.sleep(6)
"""

_COUNTERS_HOST = r"""
import ctypes, json, os, signal, sys, threading, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])  # before any thread starts: every thread inherits it
from pettingllms.sandbox import Sandbox

libc = ctypes.CDLL(None, use_errno=True)
class Value(ctypes.Union):
    _fields_ = [("number", ctypes.c_int)]
QUEUE_ONE = (
    "import ctypes, os, signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])\n"
    "class Value(ctypes.Union):\n    _fields_ = [('number', ctypes.c_int)]\n"
    "print(ctypes.CDLL(None).sigqueue(os.getpid(), signal.SIGRTMIN, Value(1)))"
)
hog, hogs = sys.stdin.read(), []
with Sandbox(workers=3, preload=()) as box:
    threads = [threading.Thread(target=lambda: hogs.append(box.run(hog, timeout=20).stdout)) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(3)  # the hogs hold what they could get for 6 s
    benign = box.run(QUEUE_ONE).stdout
    host = [libc.inotify_init1(0) >= 0, libc.sigqueue(os.getpid(), signal.SIGRTMIN, Value(1)) == 0]
    for thread in threads:
        thread.join()
print(json.dumps({"hogs": hogs, "benign": benign, "host": host}))
"""


def test_runs_cannot_use_up_the_host_users_kernel_counters(package_copy):
    """Two runs of two processes each held 240 inotify instances and ~96,000 queued real-time signals, which
    the kernel counts per user up to the host's user namespace (128 instances, RLIMIT_SIGPENDING): the host's
    and another worker's ``inotify_init``/``sigqueue`` then failed.  Now each worker's user namespace allows no
    inotify (or fanotify) instance, and a program's processes queue at most ``MAX_PENDING_SIGNALS``."""
    report = _host_as_nobody(package_copy, _COUNTERS_HOST, _COUNTER_HOG)
    assert report["host"] == [True, True] and report["benign"] == "0\n", report
    for hog in report["hogs"]:
        counts = [line.split() for line in hog.splitlines()]
        assert [instances for instances, _ in counts] == ["0", "0"], report
        assert sum(int(queued) for _, queued in counts) <= 64, report


_TMP_VENV_HOST = r"""
import json, sys
from pettingllms.sandbox import Sandbox

with Sandbox(workers=1, preload=("json",)) as box:
    first = box.run("import json, os, sys\nopen('note', 'w').write('x')\nprint(os.getcwd(), sys.prefix)\nopen('/tmp/x', 'w')")
    second = box.run("import os\nprint(os.listdir('.'), sorted(os.listdir('/tmp')))")
print(json.dumps([[first.status, first.stdout, first.stderr], [second.status, second.stdout]]))
"""


def test_a_venv_under_tmp_stays_visible_and_tmp_stays_read_only(package_copy, tmp_path_factory):
    """A bind under /tmp moves each run's tmpfs to /tmp/.run, and the rest of /tmp is read-only to runs."""
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    venv = Path(tempfile.mkdtemp(prefix="pettingllms-venv-", dir="/tmp"))
    try:
        subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", _TMP_VENV_HOST],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=package_copy,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package_copy)},
        )
    finally:
        shutil.rmtree(venv)
    assert done.returncode == 0, done.stderr
    (status, out, err), second = json.loads(done.stdout)
    assert status == "error" and "Read-only file system: '/tmp/x'" in err, err
    assert out == f"/tmp/.run {venv}\n"
    assert second == ["ok", f"[] ['.run', '{venv.name}']\n"]
