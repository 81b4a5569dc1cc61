"""The sandbox, one property per test, each proven with a hostile program."""

import copy
import os
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from markers import needs_bwrap  # noqa: E402

from pettingllms.sandbox import Program, Sandbox, SandboxResult, _bwrap, run_python

pytestmark = needs_bwrap


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(workers=2, default_timeout=5.0) as box:
        yield box


def run(sandbox: Sandbox, code: str, **kwargs) -> SandboxResult:
    return sandbox.run(textwrap.dedent(code), **kwargs)


def test_clean_run_reads_stdin_and_prints(sandbox):
    result = run(sandbox, "import sys\nprint(sys.stdin.read().upper())", stdin="abc")
    assert result.status == "ok" and result.ok and result.returncode == 0
    assert result.stdout == "ABC\n" and result.stderr == ""
    assert 0 <= result.duration_s < 5


def test_uncaught_exception_is_an_error_with_traceback(sandbox):
    result = run(sandbox, "def f():\n    raise KeyError('boom')\nf()")
    assert result.status == "error" and result.returncode == 1
    assert "Traceback" in result.stderr and "KeyError: 'boom'" in result.stderr


def test_exit_code_is_reported(sandbox):
    assert run(sandbox, "raise SystemExit(3)").returncode == 3
    assert run(sandbox, "import sys; sys.exit()").status == "ok"


@pytest.mark.parametrize("code", ["while True:\n    pass", "import time\ntime.sleep(60)"])
def test_busy_loop_and_sleep_time_out(sandbox, code):
    start = time.monotonic()
    result = run(sandbox, code, timeout=1.0)
    assert result.status == "timeout"
    assert time.monotonic() - start < 4


def test_fork_bomb_is_contained_and_the_sandbox_still_works(sandbox):
    bomb = """
    import os
    while True:
        try:
            os.fork()
        except OSError:
            pass
    """
    result = run(sandbox, bomb, timeout=1.5)
    assert result.status == "timeout"
    assert run(sandbox, "print('alive')").stdout == "alive\n"


def test_process_limit_stops_forking(sandbox):
    code = """
    import os, time
    children = 0
    try:
        for _ in range(200):
            if os.fork() == 0:
                time.sleep(30)
            children += 1
    except OSError as error:
        print("stopped", children, error.errno)
    """
    result = run(sandbox, code, timeout=3)
    assert result.stdout.startswith("stopped")
    assert int(result.stdout.split()[1]) < 16


def test_memory_bomb_is_stopped(sandbox):
    result = run(sandbox, "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2**20))", memory_mb=512)
    assert result.status == "memory"
    assert run(sandbox, "x = bytearray(300 * 2**20); print(len(x))", memory_mb=1024).status == "ok"


def test_no_network_even_to_a_host_loopback_listener(sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(3)
    port = server.getsockname()[1]
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(_accept(server)))
    thread.start()
    code = f"""
    import socket
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2)
        print("connected")
    except OSError as error:
        print("refused", type(error).__name__)
    """
    result = run(sandbox, code)
    thread.join()
    server.close()
    assert result.stdout.startswith("refused")
    assert accepted == [None]


def _accept(server):
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return None
    connection.close()
    return "accepted"


@pytest.mark.parametrize("target", ["/usr/pwned", "/etc/pwned", str(Path.cwd() / "pwned"), "/pwned"])
def test_writes_outside_the_work_folder_fail(sandbox, target):
    result = run(sandbox, f"open({target!r}, 'w').write('x')")
    assert result.status == "error"
    assert not Path(target).exists()


def test_home_and_project_are_invisible(sandbox):
    """Only the interpreter's own folders are bound (they may live under the home or the project)."""
    secret = Path.home() / ".pettingllms_sandbox_test_secret"
    secret.write_text("top secret")
    project_file = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        code = f"""
        import os
        print(os.path.exists({str(secret)!r}), os.path.exists({str(project_file)!r}), os.path.exists({__file__!r}))
        print(os.listdir({str(Path.home())!r}) if os.path.isdir({str(Path.home())!r}) else [])
        """
        result = run(sandbox, code)
    finally:
        secret.unlink()
    assert result.status == "ok"
    assert result.stdout.splitlines()[0] == "False False False", result.stdout
    visible_in_home = eval(result.stdout.splitlines()[1])  # noqa: S307  (a list of names we printed)
    assert secret.name not in visible_in_home
    assert all(
        Path(sys.prefix).is_relative_to(Path.home() / name)
        or Path(sys.base_prefix).is_relative_to(Path.home() / name)
        for name in visible_in_home
    ), visible_in_home


def test_host_environment_variables_are_not_visible(sandbox, monkeypatch):
    monkeypatch.setenv("PETTINGLLMS_TEST_SECRET", "hunter2")
    with Sandbox(workers=1) as fresh:  # started after the secret exists
        result = fresh.run(
            "import os\nprint(sorted(os.environ))\nprint(os.environ.get('PETTINGLLMS_TEST_SECRET'))"
        )
    assert "hunter2" not in result.stdout and result.stdout.splitlines()[-1] == "None"


def test_a_detached_child_does_not_outlive_its_run(sandbox):
    code = """
    import os, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    print("parent done")
    """
    assert run(sandbox, code).stdout == "parent done\n"
    survivors = sandbox.run_batch(
        ["import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"] * 2
    )
    for result in survivors:
        pids = eval(result.stdout)  # noqa: S307  (test-side parse of a list of ints we printed)
        assert len(pids) <= 3, pids  # bwrap's init, the server, this program


def test_huge_output_is_cut_quickly(sandbox):
    start = time.monotonic()
    result = run(sandbox, "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 2**20)")
    assert result.status == "output_limit"
    assert len(result.stdout) <= sandbox.max_output_bytes
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    "code",
    ["import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", "import os\nos.kill(-1, 9)\nprint('x')"],
)
def test_killing_the_parent_or_everyone_fails_and_the_next_run_works(sandbox, code):
    result = run(sandbox, code)
    assert result.status in {"error", "killed", "ok", "crashed"}
    assert run(sandbox, "print(6 * 7)").stdout == "42\n"


def test_numpy_and_sympy_are_importable(sandbox):
    code = "import numpy as np, sympy\nprint(int(np.arange(5).sum()), sympy.factorint(360))"
    assert run(sandbox, code).stdout == "10 {2: 3, 3: 2, 5: 1}\n"


def test_work_folder_is_private_to_each_run(sandbox):
    first = run(sandbox, "import os\nopen('note.txt', 'w').write('x')\nprint(os.getcwd())")
    assert first.status == "ok"
    second = sandbox.run_batch(["import os\nprint(os.listdir('.'), os.listdir('/tmp'))"] * 2)
    for result in second:
        assert "note.txt" not in result.stdout


def test_run_batch_keeps_order_and_runs_in_parallel(sandbox):
    programs = [Program(f"import time\ntime.sleep(0.5)\nprint({i})") for i in range(4)]
    start = time.monotonic()
    results = sandbox.run_batch(programs)
    elapsed = time.monotonic() - start
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(4)]
    assert elapsed < 1.9  # 4 x 0.5 s on 2 workers: about 1 s, 2 s if sequential


def test_deepcopy_shares_the_sandbox(sandbox):
    assert copy.deepcopy(sandbox) is sandbox
    assert copy.deepcopy({"box": sandbox})["box"] is sandbox


def test_run_python_uses_the_shared_default_sandbox():
    assert run_python("print('hi')").stdout == "hi\n"


def test_lone_surrogates_and_binary_output_do_not_break_the_protocol(sandbox):
    result = run(sandbox, "import sys\nsys.stdout.buffer.write(bytes(range(256)))\nprint('\\ud800')")
    assert result.status in {"ok", "error"}
    assert run(sandbox, "print('\\ud800'.encode('utf-8', 'replace'))", stdin="\ud800").status == "ok"


def test_the_server_refuses_to_run_outside_a_private_pid_namespace():
    import subprocess

    argv = _bwrap.server_argv("bwrap", os.getuid(), ())
    result = subprocess.run(
        [sys.executable, "-I", "-c", argv[-2], argv[-1]], capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0 and "refusing" in result.stderr
