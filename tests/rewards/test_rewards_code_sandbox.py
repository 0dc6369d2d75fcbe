"""``code`` on the local backend: real programs in the real sandbox, hostile ones included.

Limits are tight (256 MiB, 8 processes, 1-2 s) so that a fork bomb or a memory bomb costs this
machine nothing; every test ends by checking that no process of its own programs is left. Each
program runs as a fresh user id that its report names, so the check looks at the processes of
those ids alone: sandboxes that other processes of the machine run at the same time are theirs.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from rewardrouter.rewards.code.cgroups import controllers
from rewardrouter.rewards.code.local import LocalSandbox, RunReport, probe
from rewardrouter.rewards.code.settings import CodeLimits

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

LIMITS = CodeLimits(timeout=1.5, memory_mb=256, processes=8, output_kb=64, disk_mb=8)

#: Seconds the processes of a finished run may take to be gone.
LEFT_BEHIND_SECONDS = 5.0
#: The user ids that the current test's programs ran as.
_RAN_AS: set[int] = set()


def _processes_of(uids: set[int]) -> list[str]:
    """Processes of this machine that run as one of ``uids``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        uid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:"))
        if uid in uids:
            found.append(f"{pid}: {status.splitlines()[0]}")
    return found


@pytest.fixture(autouse=True)
def _nothing_left_behind() -> Iterator[None]:
    _RAN_AS.clear()
    yield
    # The runner's end is the PID namespace's: the kernel kills what is left in it, and on a
    # busy machine that takes a moment (a fork bomb's processes are not gone the instant the
    # runner is). A process that escaped the namespace would still be there after the wait.
    deadline = time.monotonic() + LEFT_BEHIND_SECONDS
    while (left := _processes_of(_RAN_AS)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"a sandboxed program outlived its run by {LEFT_BEHIND_SECONDS:g} s"


def sandboxed(
    program: str,
    cases: Sequence[dict[str, Any]],
    *,
    limits: CodeLimits = LIMITS,
    workers: int = 2,
    stop_on_failure: bool = False,
) -> RunReport:
    """``program`` run on ``cases``; the user id it ran as is checked after the test."""
    sandbox = LocalSandbox(limits, workers=workers)
    report = asyncio.run(sandbox.run(program, list(cases), stop_on_failure))
    # as root each program runs as a fresh user id: without one the check would be vacuous
    assert report.uid is not None or os.geteuid() != 0, report
    if report.uid is not None:
        _RAN_AS.add(report.uid)
    return report


def run(program: str, *cases: dict[str, Any], limits: CodeLimits = LIMITS) -> RunReport:
    return sandboxed(program, list(cases) or [{"stdin": ""}], limits=limits)


@pytest.fixture(scope="module")
def listener() -> Iterator[int]:
    """A real TCP server on 127.0.0.1 that answers every connection with b"secret"."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"secret")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_this_machine_runs_programs_inside_bubblewrap_as_a_fresh_user() -> None:
    # The README's threat model promises these on Linux as root with bubblewrap installed (and,
    # on a host with cgroup v1 controllers or a delegated v2 subtree, the kernel's count of the
    # program's memory and processes); the other tests of this file rely on them.
    walls = {"bubblewrap", "pid", "network", "ipc", "filesystem", "uid", "seccomp"}
    found = controllers()
    walls |= set(found.walls) if found is not None else {"memory watched"}
    assert set(probe()) == walls


HOSTILE = [
    # runs forever: killed at the case's wall-clock deadline
    pytest.param("while True:\n    pass\n", "timeout", id="infinite_loop"),
    # sleeps forever: CPU limits do not catch it, the wall-clock deadline does
    pytest.param("import time\ntime.sleep(600)\n", "timeout", id="sleeps"),
    # forks without end: RLIMIT_NPROC stops the forks, the deadline stops the loop
    pytest.param(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "timeout",
        id="fork_bomb",
    ),
    # allocates without end: RLIMIT_AS turns it into a MemoryError
    pytest.param(
        "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 24))\n",
        "memory",
        id="memory_bomb",
    ),
    # prints without end: RLIMIT_FSIZE caps its output
    pytest.param("while True:\n    print('x' * 4096)\n", "output_limit", id="huge_output"),
    # raises
    pytest.param("raise ValueError('no')\n", "error", id="crash"),
    # a syntax error
    pytest.param("def f(:\n", "error", id="syntax_error"),
    # kills itself with a signal
    pytest.param(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "killed", id="signal"
    ),
]


@pytest.mark.parametrize(("program", "status"), HOSTILE)
def test_hostile_program_gets_its_status(program: str, status: str) -> None:
    report = run(program)
    assert report.cases[0].status == status, report.cases[0].stderr


def test_output_is_capped() -> None:
    report = run("while True:\n    print('x' * 4096)\n")
    assert report.cases[0].status == "output_limit"
    assert len(report.cases[0].stdout.encode()) == LIMITS.output_kb << 10  # kept up to the cap


def test_no_network(listener: int) -> None:
    program = (
        "import socket\n"
        f"with socket.create_connection(('127.0.0.1', {listener}), timeout=1) as s:\n"
        "    print(s.recv(6).decode())\n"
    )
    report = run(program)
    # the sandbox's own loopback, where nothing listens: the host's is another interface
    assert report.cases[0].status == "error"
    assert "Connection refused" in report.cases[0].stderr
    assert "secret" not in report.cases[0].stdout


@pytest.fixture
def private_file() -> Iterator[Path]:
    """A file only its owner (the test's user) may read, in a directory others may enter, outside
    the directories the sandbox replaces with its own (/tmp is one)."""
    with tempfile.TemporaryDirectory(prefix=".sandbox-test-", dir=Path(__file__).parent) as where:
        Path(where).chmod(0o755)
        secret = Path(where) / "secret.txt"
        secret.write_text("the secret\n")
        secret.chmod(0o600)
        yield secret


def test_cannot_see_the_hosts_tmp(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("host file\n")
    tmp_path.chmod(0o755)
    report = run(f"print(open({str(tmp_path / 'note.txt')!r}).read())\n")
    assert report.cases[0].status == "error"
    assert "No such file or directory" in report.cases[0].stderr


def test_cannot_read_other_users_files(private_file: Path) -> None:
    # Not refused: absent. The program's file system is the interpreter's alone.
    report = run(f"print(open({str(private_file)!r}).read())\n")
    assert report.cases[0].status == "error"
    assert "No such file" in report.cases[0].stderr
    assert "the secret" not in report.cases[0].stdout


def test_cannot_delete_other_users_files(private_file: Path) -> None:
    report = run(f"import os\nos.remove({str(private_file)!r})\n")
    assert report.cases[0].status == "error"
    assert private_file.read_text() == "the secret\n"


def test_sees_no_credentials_of_the_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-programs")
    report = run("import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))\n")
    assert "sk-not-for-programs" not in report.cases[0].stdout
    assert report.cases[0].stdout.splitlines()[-1] == "None"


def test_escaped_processes_are_killed() -> None:
    # A child that leaves the process group (setsid) would survive a process-group kill; the
    # PID namespace ends it with the runner. The autouse fixture checks that nothing is left.
    program = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(600)\n"
        "print('parent done')\n"
    )
    report = run(program, {"stdin": ""}, {"stdin": ""})
    assert [case.status for case in report.cases] == ["ok", "ok"]


def test_world_writable_directories_are_private() -> None:
    marker = Path("/tmp/rewardrouter-sandbox-marker")
    report = run(f"open({str(marker)!r}, 'w').write('x')\nprint('wrote')\n")
    assert report.cases[0].stdout == "wrote\n"
    assert not marker.exists()  # it went to the program's own tmpfs


def test_a_file_written_by_one_case_is_gone_in_the_next() -> None:
    program = "import os\nprint(os.path.exists('note'))\nopen('note', 'w').write('x')\n"
    report = run(program, {"stdin": ""}, {"stdin": ""})
    assert [case.stdout for case in report.cases] == ["False\n", "False\n"]


def test_interpreter_and_installed_packages_are_importable() -> None:
    # The standard library may live under a directory other users cannot enter (/root/.pyenv);
    # the runner binds it back for the sandbox user.
    report = run("import fractions, sqlite3, json, numpy\nprint(fractions.Fraction(1, 3) * 3)\n")
    assert report.cases[0].status == "ok", report.cases[0].stderr
    assert report.cases[0].stdout == "1\n"


def test_an_environment_under_tmp_is_importable_and_read_only(tmp_path: Path) -> None:
    # A virtualenv in /tmp (where the sandbox has a tmpfs of its own) is bound in, read-only.
    where = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True
        )
        [site] = (where / "venv").glob("lib/python*/site-packages")
        (site / "rr_under_tmp.py").write_text("VALUE = 42\n")
        (site / "rr_under_tmp.py").chmod(0o666)  # only the read-only mount stops a write
        sandbox = LocalSandbox(LIMITS, workers=1, python=str(where / "venv" / "bin" / "python"))
        program = (
            "import errno, rr_under_tmp\nprint(rr_under_tmp.VALUE)\n"
            "try:\n    open(rr_under_tmp.__file__, 'a')\nexcept OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n"
        )
        report = asyncio.run(sandbox.run(program, [{"stdin": ""}], False))
        if report.uid is not None:
            _RAN_AS.add(report.uid)
        assert "filesystem" in report.isolation, report
        assert report.cases[0].status == "ok", report.cases[0].stderr
        assert report.cases[0].stdout.split() == ["42", "EROFS"]
    finally:
        shutil.rmtree(where)


def _as_user_1000(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a Python process that is uid 1000 of a user namespace (not root)."""
    unshare = shutil.which("unshare")
    user = [unshare or "unshare", "-U", "--map-user=1000", "--map-group=1000"]
    if unshare is None or subprocess.run([*user, "true"]).returncode != 0:
        pytest.skip("needs unshare(1) and user namespaces")
    return subprocess.run(
        [*user, sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )


def test_without_root_programs_run_in_a_user_namespace_of_their_own() -> None:
    # Started by a user other than root, bubblewrap enters a user namespace of its own, where
    # the program is `nobody`: the same walls, but no user id other than the trainer's.
    done = _as_user_1000(
        "import asyncio, json, os\n"
        "from rewardrouter.rewards.code.local import LocalSandbox\n"
        "from rewardrouter.rewards.code.settings import CodeLimits\n"
        "assert os.geteuid() == 1000\n"
        "sandbox = LocalSandbox(CodeLimits(timeout=5), workers=1)\n"
        "program = 'import os\\nprint(int(input()) * 2, os.getuid(), sorted(os.listdir(\"/\")))'\n"
        "report = asyncio.run(sandbox.run(program, [{'stdin': '21\\n'}], False))\n"
        "found = sandbox.cgroups.walls if sandbox.cgroups else ['memory watched']\n"
        "print(json.dumps([report.isolation, report.uid, report.cases[0].status, "
        "report.cases[0].stdout, report.cases[0].stderr, found]))\n"
    )
    assert done.returncode == 0, done.stderr
    isolation, uid, status, stdout, stderr, memory = json.loads(done.stdout)
    # (the memory wall is the cgroups where this user may make them, else a watch)
    walls = ["bubblewrap", "pid", "network", "ipc", "filesystem", "seccomp", *memory]
    assert isolation == walls and uid is None
    assert status == "ok", stderr
    assert stdout.startswith("42 65534 ["), stdout
    assert "home" not in stdout and "srv" not in stdout


def calls(*specs: tuple[str, list[Any]]) -> dict[str, Any]:
    return {"calls": [{"call": name, "args": args} for name, args in specs]}


CASE_FORMS = [
    # stdin → stdout
    pytest.param("print(int(input()) * 2)", {"stdin": "21\n"}, ("ok", "42\n", None), id="stdin"),
    # a call-based case reports the return value, encoded
    pytest.param(
        "def f(a, b):\n    return [a, b, a + b]\n",
        calls(("f", [1, 2])),
        ("ok", "", {"values": [[1, 2, 3]]}),
        id="call",
    ),
    # LeetCode style: a method of Solution
    pytest.param(
        "class Solution:\n    def twice(self, x):\n        return 2 * x\n",
        calls(("twice", [4])),
        ("ok", "", {"values": [8]}),
        id="solution_method",
    ),
    # values JSON has no type for are tagged: sets, tuples, dicts
    pytest.param(
        "def f():\n    return {1}, (2,), {3: 4}\n",
        calls(("f", [])),
        (
            "ok",
            "",
            {
                "values": [
                    {
                        "$": "tuple",
                        "v": [
                            {"$": "set", "v": [1]},
                            {"$": "tuple", "v": [2]},
                            {"$": "dict", "v": [[3, 4]]},
                        ],
                    }
                ]
            },
        ),
        id="tagged",
    ),
    # several calls in one process, in order (a stateful class sees the earlier calls)
    pytest.param(
        "seen = []\ndef add(x):\n    seen.append(x)\n    return len(seen)\n",
        calls(("add", [5]), ("add", [6])),
        ("ok", "", {"values": [1, 2]}),
        id="calls_in_order",
    ),
    # an object of the program's own class cannot cross the boundary: the case fails
    pytest.param(
        "class Always:\n    def __eq__(self, other):\n        return True\n"
        "def f():\n    return Always()\n",
        calls(("f", [])),
        ("error", "", None),
        id="own_class",
    ),
    # a program that exits before its calls return has not passed them
    pytest.param("import os\nos._exit(0)\n", calls(("f", [])), ("error", "", None), id="exits"),
    pytest.param("import sys\nsys.exit(0)\n", calls(("f", [])), ("error", "", None), id="sys_exit"),
]


@pytest.mark.parametrize(("program", "case", "expected"), CASE_FORMS)
def test_case_forms(program: str, case: dict[str, Any], expected: tuple[Any, ...]) -> None:
    got = run(program, case).cases[0]
    assert (got.status, got.stdout, got.returned) == expected, got.stderr


def test_stop_on_failure_skips_the_rest() -> None:
    cases = [{"stdin": "0"}, {"stdin": "1"}, {"stdin": "0"}]
    report = sandboxed("raise SystemExit(int(input()))", cases, workers=1, stop_on_failure=True)
    assert [c.status for c in report.cases] == ["ok", "error", "skipped"]


def test_deadline_for_all_cases() -> None:
    limits = LIMITS.model_copy(update={"timeout": 0.5, "deadline": 0.2})
    report = run("import time\ntime.sleep(0.3)\n", {"stdin": ""}, {"stdin": ""}, limits=limits)
    assert [c.status for c in report.cases] == ["ok", "skipped"]


def test_report_is_plain_json_of_the_cases() -> None:
    report = run("print('a')")
    assert json.loads(json.dumps([c.__dict__ for c in report.cases]))[0]["stdout"] == "a\n"
    assert stat.S_IMODE(os.stat("/tmp").st_mode) & 0o1000  # /tmp itself was never touched


def test_a_case_process_holds_no_input_of_a_later_case() -> None:
    # The runner reads each case only when it starts: the first case's process, searching all
    # of its memory, cannot find the second case's input.
    program = (
        "import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable: /proc/self/mem\n"
        "found = False\n"
        "maps = [l.split() for l in open('/proc/self/maps')]\n"
        "with open('/proc/self/mem', 'rb') as mem:\n"
        "    for m in maps:\n"
        "        if not m[1].startswith('r'):\n            continue\n"
        "        a, b = (int(x, 16) for x in m[0].split('-'))\n"
        "        try:\n            mem.seek(a)\n            data = mem.read(b - a)\n"
        "        except (OSError, ValueError, OverflowError):\n            continue\n"
        # (the whole needle is never built here: it would then be in memory itself)
        "        at = data.find(b'LATER-CASE-')\n"
        "        while at >= 0 and not found:\n"
        "            found = data[at + 11 : at + 16] == bytes([73, 78, 80, 85, 84])\n"
        "            at = data.find(b'LATER-CASE-', at + 1)\n"
        "print('found' if found else 'absent', input())\n"
    )
    report = run(program, {"stdin": "first"}, {"stdin": "LATER-CASE-INPUT"})
    assert [c.stdout for c in report.cases] == ["absent first\n", "found LATER-CASE-INPUT\n"]


def test_a_programs_cpu_time_reaches_the_caller() -> None:
    # The runner is the sandbox's PID 1 and reaps every process of the program, so its CPU
    # time is counted where the trainer waits for it, and per case in the report.
    spin = "import time\nbegun = time.process_time()\nwhile time.process_time() - begun < 1:\n    pass\n"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = run(spin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert report.cases[0].status == "ok", report.cases[0].stderr
    assert 1.0 <= report.cases[0].cpu_seconds < 3, report.cases[0]
    assert seen >= report.cases[0].cpu_seconds, seen


def test_each_program_has_cgroups_of_its_own_removed_after_it() -> None:
    found = controllers()
    if found is None:
        pytest.skip("this process may make no cgroups here (the memory wall is a watch)")
    program = "print(open('/proc/self/cgroup').read())"
    report = run(program)
    lines = [line for line in report.cases[0].stdout.splitlines() if "rewardrouter-" in line]
    assert len(lines) == len(found.walls), report.cases[0].stdout  # memory (and pids)
    mine = f"rewardrouter-{os.getpid()}-"
    left = [p for p in {found.memory, found.pids} if p and any(p.glob(f"{mine}*"))]
    assert left == [], "a program's cgroup outlived its run"


def test_an_interpreter_named_through_dotdot_runs_in_the_sandbox(tmp_path: Path) -> None:
    # `../.venv/bin/python` from a subfolder: the sandbox holds no such folder to walk through
    python = str(tmp_path / os.path.relpath(sys.executable, tmp_path))
    assert ".." in python
    sandbox = LocalSandbox(LIMITS, workers=1, python=python)
    report = asyncio.run(sandbox.run("print(6 * 7)", [{"stdin": ""}]))
    assert (report.cases[0].status, report.cases[0].stdout) == ("ok", "42\n"), report.cases[0]
