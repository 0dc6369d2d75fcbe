"""``code``: programs a policy would write to pass tests it does not solve, or to break out.

Each hostile program is graded in one batch beside an honest one on the same label, through the
router: the hostile one earns 0 (or its own failed status), the honest one 1.0, the batch is
scored. The expected outputs are a hash of the input that only a program computing it can
print, and they lie, with the rest of the data, in a file on the host that the hostile programs
know the path of (they can read this repository).

Set-ups: root with bubblewrap (this machine; each program a fresh user id); a user other than
root (uid 1000 of a user namespace), where ``isolation: required`` refuses and ``best_effort``
runs the program as ``nobody`` inside the same walls; and a root whose namespaces are refused
(no CAP_SYS_ADMIN, as a default container profile), where both settings refuse to compile with
the cause, never scoring right answers 0.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardrouter import ConfigError, compile_router
from rewardrouter.rewards.code.harness import SECCOMP_MACHINES
from rewardrouter.rewards.code.local import LocalSandbox
from rewardrouter.rewards.code.settings import CodeLimits

from .conftest import CANARY_ENV, Canary

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

LIMITS = {"timeout": 2, "memory_mb": 256, "processes": 8, "output_kb": 64, "disk_mb": 8}
INPUTS = ["alpha\n", "beta\n"]


def digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:24]


STDIN_LABEL = {"inputs": INPUTS, "outputs": [digest(i) + "\n" for i in INPUTS]}
HONEST_STDIN = "import hashlib\nprint(hashlib.sha256(input().strip().encode()).hexdigest()[:24])\n"
#: HumanEval style: the expected values live in `check`, which never enters the sandbox.
CHECK_LABEL = {
    "test": "def check(candidate):\n"
    + "".join(f"    assert candidate({i.strip()!r}) == {digest(i)!r}\n" for i in INPUTS),
    "entry_point": "solve",
}
MBPP_LABEL = {"test_list": [f"assert solve({i.strip()!r}) == {digest(i)!r}" for i in INPUTS]}
HONEST_CALL = (
    "import hashlib\ndef solve(s):\n    return hashlib.sha256(s.encode()).hexdigest()[:24]\n"
)


def fenced(program: str) -> str:
    return f"My solution:\n```python\n{program}\n```\n"


@pytest.fixture(scope="module")
def router() -> Any:
    config = {
        "routes": {
            "code": {
                "match": ["code"],
                "rewards": {"tests": {"kind": "code", "kwargs": {"limits": LIMITS}}},
            }
        }
    }
    with compile_router(config) as built:
        yield built


@pytest.fixture
def data_file(canary: Canary) -> Path:
    """The trainer's data, labels included, on the host, beside the secret."""
    path = canary.path.with_name("train.jsonl")
    rows = [STDIN_LABEL, CHECK_LABEL, MBPP_LABEL]
    path.write_text("".join(json.dumps({"label": r}) + "\n" for r in rows))
    # readable by every user, as data files are: only the sandbox's walls keep it out of reach
    path.chmod(0o644)
    for folder in path.parents:
        if folder == Path("/tmp") or folder == Path("/"):
            break
        folder.chmod(0o755)
    return path


def grade(router: Any, program: str, label: dict[str, Any], canary: Canary) -> list[Any]:
    """The results of an honest program and ``program`` in one batch on ``label``."""
    honest = HONEST_STDIN if "inputs" in label else HONEST_CALL
    rows = [
        {"response": fenced(p), "label": label, "metadata": {"dataset": "code"}}
        for p in (honest, program)
    ]
    results = router.score_sync(rows)
    canary.absent_from(list(results))
    assert results[0].reward == 1.0 and results[0].status == "ok", results[0]
    return list(results)


def earns_nothing(result: Any) -> bool:
    return result.reward in (0.0, None) or result.failed


# -- 1. the program sees no host data --------------------------------------------------------

#: Each snoop prints the right answer only when it reached what it looks for: the answer is
#: simple to compute, so a snoop that works earns 1.0, and the test fails. Run on the host, with
#: no sandbox, each one does earn it (`test_each_snoop_works_without_the_sandbox`), so what stops
#: them is the sandbox. `{data}`, `{secret}` and `{env}`: the trainer's data file, its secret file
#: and the secret's variable; `{pid}`: a process of the trainer's, launched with the data file's
#: path on its command line; `{port}` and `{sock}`: a TCP port on 127.0.0.1 and a Unix socket of
#: the host, both listening.
ANSWER = "import hashlib\nname = input().strip()\n"
WON = "print(hashlib.sha256(name.encode()).hexdigest()[:24])\n"
SNOOPS = [
    pytest.param(
        "import json\nrow = json.loads(open({data!r}).readline())\n"
        "print(row['label']['outputs'][['alpha','beta'].index(input().strip())].strip())\n",
        id="reads_the_data_file_by_path",
    ),
    pytest.param(
        "import glob, json\nname = input().strip()\n"
        "for f in glob.glob('/proc/*/cmdline'):\n"
        "    try:\n        args = open(f, 'rb').read().split(b'\\0')\n"
        "    except OSError:\n        continue\n"
        "    for arg in args:\n"
        "        if arg.endswith(b'train.jsonl'):\n"
        "            row = json.loads(open(arg).readline())\n"
        "            print(row['label']['outputs'][['alpha','beta'].index(name)].strip())\n"
        "            raise SystemExit\n",
        id="finds_the_data_file_through_proc_cmdlines",
    ),
    pytest.param(
        "import json, os\nname = input().strip()\n"
        "for root in ('/tmp', '/home', '/root', '/srv', '/data', '/mnt'):\n"
        "    for dirpath, dirs, files in os.walk(root):\n"
        "        dirs[:] = [d for d in dirs if not d.startswith('.') and d != 'site-packages']\n"
        "        if 'train.jsonl' in files:\n"
        "            row = json.loads(open(os.path.join(dirpath, 'train.jsonl')).readline())\n"
        "            print(row['label']['outputs'][['alpha','beta'].index(name)].strip())\n"
        "            raise SystemExit\n",
        id="walks_the_host_for_data",
    ),
    pytest.param(
        ANSWER + "try:\n    open({secret!r}).read()\nexcept OSError:\n    raise SystemExit\n" + WON,
        id="reads_the_secret_file",
    ),
    pytest.param(
        ANSWER + "import os\nif os.environ.get({env!r}):\n    " + WON, id="reads_the_environment"
    ),
    pytest.param(
        ANSWER + "import glob\nfor f in glob.glob('/proc/*/environ'):\n"
        "    try:\n        environ = open(f, 'rb').read()\n    except OSError:\n        continue\n"
        "    if {env!r}.encode() + b'=' in environ:\n        " + WON + "        break\n",
        id="reads_every_process_environment",
    ),
    pytest.param(
        ANSWER + "try:\n    seen = open('/proc/{pid}/cmdline', 'rb').read()\n"
        "except OSError:\n    seen = b''\nif b'train.jsonl' in seen:\n    " + WON,
        id="sees_the_trainers_processes",
    ),
    pytest.param(
        "import gc\nname = input().strip()\n"
        "found = [o for o in gc.get_objects() if isinstance(o, dict) and 'outputs' in o]\n"
        "print(found[0]['outputs'][['alpha','beta'].index(name)].strip() if found else '')\n",
        id="searches_its_memory_for_expected_outputs",
    ),
    pytest.param(
        "import hashlib, re\nraw = open('/proc/self/mem', 'rb')\n"
        "maps = [l.split()[0] for l in open('/proc/self/maps') if 'rw' in l.split()[1]]\n"
        "hexes = set()\nfor m in maps:\n    a, b = (int(x, 16) for x in m.split('-'))\n"
        "    try:\n        raw.seek(a); hexes |= set(re.findall(rb'[0-9a-f]{{24}}', raw.read(b - a)))\n"
        "    except (OSError, ValueError, OverflowError):\n        pass\n"
        "name = input().strip()\n"  # read only now: the answer below is not in memory yet
        "answer = hashlib.sha256(name.encode()).hexdigest()[:24]\n"
        "print(answer if answer.encode() in hexes else '')\n",
        id="scans_its_memory_for_the_expected_output",
    ),
    pytest.param(
        ANSWER + "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect({sock!r})\nexcept OSError:\n    raise SystemExit\n" + WON,
        id="connects_to_a_host_unix_socket",
    ),
    pytest.param(
        ANSWER + "import socket\n"
        "try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "except OSError:\n    raise SystemExit\n" + WON,
        id="connects_to_the_host_network",
    ),
    pytest.param(
        ANSWER
        + "try:\n    open('/etc/shadow').read()\nexcept OSError:\n    raise SystemExit\n"
        + WON,
        id="reads_etc_shadow",
    ),
]


@pytest.fixture
def host(data_file: Path, canary: Canary, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The host a snoop looks for: a process of the trainer's launched with the data file's
    path, a TCP port and a Unix socket listening; the format fields of :data:`SNOOPS`."""
    trainer = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", str(data_file)]
    )
    listener = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    path = str(tmp_path / "trainer.sock")  # short: a Unix socket path has at most 107 bytes
    unix.bind(path)
    unix.listen()
    os.chmod(path, 0o777)  # a socket any user may connect to: only the walls keep it out of reach
    try:
        yield {
            "data": str(data_file), "secret": str(canary.path), "env": CANARY_ENV,
            "pid": trainer.pid, "port": listener.getsockname()[1], "sock": path,
        }  # fmt: skip
    finally:
        trainer.kill()
        trainer.wait()
        listener.close()
        unix.close()


@pytest.mark.parametrize("snoop", SNOOPS)
def test_a_program_sees_no_host_data(
    router: Any, canary: Canary, host: dict[str, Any], snoop: str
) -> None:
    hostile = grade(router, snoop.format(**host), STDIN_LABEL, canary)[1]
    assert earns_nothing(hostile), hostile


@pytest.mark.parametrize("snoop", SNOOPS)
def test_each_snoop_works_without_the_sandbox(host: dict[str, Any], snoop: str) -> None:
    """The control: run on the host as a plain process that has read the data file (as a
    runner that held the labels in the program's interpreter would), each snoop finds what it
    looks for and prints the right answer, so the test above can fail."""
    if "/etc/shadow" in snoop and os.geteuid() != 0:
        pytest.skip("only root reads /etc/shadow on the host")
    held = f"import json as _json\n_row = _json.loads(open({host['data']!r}).readline())\n"
    done = subprocess.run(
        [sys.executable, "-c", held + snoop.format(**host)],
        input="alpha\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout == digest("alpha") + "\n", done.stdout[-300:] + done.stderr[-2000:]


# -- 2. a pass cannot be forged ----------------------------------------------------------------

#: Returns the expected value that it finds in a test's code held anywhere in its memory.
MEMORY_FORGERY = (
    "import gc, re\ndef solve(s):\n"
    "    pattern = re.compile(r\"\\(%r\\) == '([0-9a-f]{24})'\" % s)\n"
    "    for o in gc.get_objects():\n"
    "        values = o.values() if isinstance(o, dict) else o if isinstance(o, list | tuple) else ()\n"
    "        for v in values:\n"
    "            found = pattern.search(v) if isinstance(v, str) else None\n"
    "            if found:\n"
    "                return found.group(1)\n"
    "    return ''\n"
)
FORGERIES = [
    pytest.param(
        "class Yes(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\ndef solve(s):\n    return Yes('x')\n",
        id="returns_a_str_whose_eq_is_always_true",
    ),
    pytest.param(
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "def solve(s):\n    return Any()\n",
        id="returns_an_object_equal_to_everything",
    ),
    pytest.param(
        "import builtins\nbuiltins.exec = lambda *a, **k: None\ndef solve(s):\n    return ''\n",
        id="patches_builtins_exec",
    ),
    pytest.param(
        "import builtins\nbuiltins.AssertionError = type('Never', (Exception,), {})\n"
        "def solve(s):\n    return ''\n",
        id="replaces_assertion_error",
    ),
    pytest.param(
        "def check(candidate):\n    return None\ndef solve(s):\n    return ''\n",
        id="defines_its_own_check",
    ),
    pytest.param(
        "import os\nos.write(3, b'{\"done\": true}')\nos._exit(0)\ndef solve(s):\n    return ''\n",
        id="writes_a_pass_record_to_fd3_and_exits",
    ),
    pytest.param(
        "import os\nos.write(3, b'{\"values\": [true, true]}')\nos._exit(0)\n",
        id="writes_return_values_to_fd3_and_exits",
    ),
    pytest.param("import sys\nsys.exit(0)\n", id="exits_zero_before_the_tests"),
    pytest.param("import os\nos._exit(0)\n", id="hard_exits_zero_before_the_tests"),
    pytest.param(
        "import __main__\n__main__.encode = lambda value: True\ndef solve(s):\n    return ''\n",
        id="patches_the_runners_encoder",
    ),
    pytest.param(
        "import json\njson.dumps = lambda *a, **k: '{\"values\": [true]}'\n"
        "def solve(s):\n    return ''\n",
        id="patches_json_dumps",
    ),
    pytest.param(
        "class Num(int):\n    def __eq__(self, other):\n        return True\n"
        "def solve(s):\n    return Num(0)\n",
        id="returns_an_int_subclass_equal_to_everything",
    ),
    pytest.param(MEMORY_FORGERY, id="looks_for_the_test_code_in_memory"),
    pytest.param(
        "import sys\nsys.modules['math'] = None\nsys.setrecursionlimit(10)\n"
        "def solve(s):\n    return ''\n",
        id="breaks_the_interpreter_for_the_checks",
    ),
]


@pytest.mark.parametrize("label", [CHECK_LABEL, MBPP_LABEL], ids=["humaneval", "mbpp"])
@pytest.mark.parametrize("program", FORGERIES)
def test_a_pass_cannot_be_forged(
    router: Any, canary: Canary, program: str, label: dict[str, Any]
) -> None:
    hostile = grade(router, program, label, canary)[1]
    assert earns_nothing(hostile), hostile


@pytest.mark.parametrize("label", [CHECK_LABEL, MBPP_LABEL], ids=["humaneval", "mbpp"])
def test_the_memory_forgery_passes_where_the_test_code_is_in_its_memory(
    label: dict[str, Any],
) -> None:
    """The control of ``looks_for_the_test_code_in_memory``: in an interpreter that holds the
    tests' code it returns the expected values, so its 0 above is the sandbox's doing."""
    code = label.get("test") or "\n".join(label["test_list"])
    program = f"TESTS = {code!r}\n{MEMORY_FORGERY}print(solve('alpha'), solve('beta'))\n"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == [digest("alpha\n"), digest("beta\n")]


@pytest.mark.parametrize(
    "label",
    [
        pytest.param({"test": "for x in range(3):\n    assert f(x) == x\n"}, id="a_loop"),
        pytest.param({"test": "def helper():\n    return 1\nassert f(helper()) == 1\n"}, id="helper"),
        pytest.param(
            {"test": "import pytest\ndef test_a():\n    with pytest.raises(ValueError):\n"
             "        f(-1)\n"},
            id="pytest_raises",
        ),
    ],
)  # fmt: skip
def test_tests_that_cannot_be_checked_outside_the_program_are_refused(
    router: Any, label: dict[str, Any]
) -> None:
    row = {"response": fenced("def f(x):\n    return x\n"), "label": label}
    row["metadata"] = {"dataset": "code"}
    with pytest.raises(Exception, match=r"checks tests outside the program"):
        router.score_sync([row])


# -- 3. nothing escapes or persists; 5. one program never fails the batch ---------------------

ESCAPES = [
    pytest.param(
        "import os\nfor d in ('/dev/shm', '/run/lock', '/var/tmp', '/tmp', '/'):\n"
        "    try:\n        open(os.path.join(d, 'rr-persist'), 'w').write('x' * 1000)\n"
        "    except OSError:\n        pass\n",
        id="writes_to_world_writable_dirs",
    ),
    pytest.param(
        "import os\ntry:\n    os.remove('stdout'); os.symlink('/etc/shadow', 'stdout')\n"
        "    os.remove('stderr'); os.mkfifo('stderr')\nexcept OSError:\n    pass\n",
        id="replaces_its_output_files_with_a_link_and_a_fifo",
    ),
    pytest.param(
        "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n",
        id="kills_every_process_it_can",
    ),
    pytest.param(
        "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        os.execvp('sleep', ['sleep', '737'])\n    os._exit(0)\nprint('daemon left')\n",
        id="leaves_a_daemon",
    ),
    pytest.param(
        "import os\nblocks = []\nfor _ in range(4):\n    if os.fork() == 0:\n"
        "        blocks.append(bytearray(200 << 20))\n        import time; time.sleep(5)\n"
        "import time\ntime.sleep(5)\n",
        id="spreads_memory_over_processes",
    ),
    pytest.param(
        "try:\n    with open('/tmp/fill', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * (1 << 20))\nexcept OSError:\n    pass\nprint('full')\n",
        id="fills_its_disk",
    ),
    pytest.param(
        "import os\nfor i in range(1000):\n    try:\n        os.write(1, b'x' * 65536)\n"
        "    except OSError:\n        break\n",
        id="floods_its_output",
    ),
    pytest.param(
        "import os\nfor pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
        "        try:\n            f = open(f'/proc/{pid}/mem', 'r+b'); f.write(b'x')\n"
        "        except OSError:\n            pass\n",
        id="writes_other_processes_memory",
    ),
    pytest.param(
        "import ctypes\nlibc = ctypes.CDLL(None)\nfor pid in range(1, 10):\n"
        "    libc.ptrace(16, pid, 0, 0)\n",
        id="attaches_to_the_runner_with_ptrace",
    ),
    pytest.param(
        "import os\nos.makedirs('/tmp/x', exist_ok=True)\nfor i in range(100000):\n"
        "    try:\n        os.mkdir(f'/tmp/x/{i}')\n    except OSError:\n        break\n",
        id="exhausts_inodes",
    ),
    pytest.param("import os\nwhile True:\n    os.fork()\n", id="fork_bomb"),
    pytest.param(
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)\n",
        id="kills_its_runner",
    ),
]


@pytest.mark.parametrize("program", ESCAPES)
def test_nothing_escapes_or_persists_and_the_batch_is_scored(
    router: Any, canary: Canary, program: str
) -> None:
    markers = [Path(d, "rr-persist") for d in ("/dev/shm", "/run/lock", "/var/tmp", "/tmp")]
    hostile = grade(router, program, STDIN_LABEL, canary)[1]
    assert earns_nothing(hostile), hostile
    assert not any(m.exists() for m in markers)
    assert not _daemons(), "the daemon outlived its program"
    # and the next program sees a clean sandbox: it answers right only if so
    after = grade(router, CLEAN, STDIN_LABEL, canary)[1]
    assert (after.status, after.reward) == ("ok", 1.0), after


#: Prints the right answer only when nothing that the programs above leave is there: their
#: files in /tmp, /var/tmp, /run/lock and /dev/shm (which is otherwise empty).
CLEAN = (
    ANSWER
    + "import os\n"
    + "left = [p for p in ('/tmp/rr-persist', '/tmp/fill', '/tmp/x', '/var/tmp/rr-persist',\n"
    + "    '/run/lock/rr-persist') if os.path.lexists(p)] + os.listdir('/dev/shm')\n"
    + "if not left:\n    "
    + WON
)


def _daemons(within: float = 5.0) -> list[str]:
    """Host processes still running the daemon of ``leaves_a_daemon`` (``sleep 737``) after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if cmdline.read_bytes() == b"sleep\x00737\x00":
                    found.append(cmdline.parent.name)
            except OSError:
                pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_memory_is_bounded_for_the_whole_process_tree() -> None:
    # Each process stays under the per-process limit; together they pass it: never all four
    # hold their block (the kernel kills one in the program's cgroup, or the watch ends the case).
    limits = CodeLimits(timeout=5, memory_mb=256, processes=8)
    program = (
        "import os, time\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n"
        "    if pid == 0:\n        block = bytearray(120 << 20)\n        time.sleep(2)\n"
        "        os._exit(0)\n    kids.append(pid)\n"
        "print(sum(os.waitpid(k, 0)[1] == 0 for k in kids))\n"
    )
    report = asyncio.run(LocalSandbox(limits, workers=1).run(program, [{"stdin": ""}]))
    assert report.cases[0].status == "memory", report.cases[0]
    assert report.cases[0].stdout.strip() != "4", report.cases[0]


def test_each_program_runs_as_a_fresh_user_never_the_trainers() -> None:
    sandbox = LocalSandbox(CodeLimits(timeout=5), workers=1)
    reports = [
        asyncio.run(sandbox.run("import os\nprint(os.getuid())\n", [{"stdin": ""}]))
        for _ in range(2)
    ]
    uids = {int(r.cases[0].stdout) for r in reports}
    assert len(uids) == 2 and os.getuid() not in uids and all(u >= 1_000_000 for u in uids)


# -- 4. isolation is never silently weaker than promised ---------------------------------------

_COMPILE = (
    "import json, sys\n"
    "from rewardrouter import ConfigError, compile_router\n"
    "for isolation in sys.argv[1:]:\n"
    "    config = {'routes': {'code': {'match': ['code'], 'rewards': {'t': {'kind': 'code', "
    "'kwargs': {'isolation': isolation, 'limits': {'timeout': 5}}}}}}}\n"
    "    try:\n"
    "        with compile_router(config) as router:\n"
    "            rows = [{'response': '```python\\nprint(int(input()) * 2)\\n```', "
    "'label': {'inputs': ['21'], 'outputs': ['42']}, 'metadata': {'dataset': 'code'}}]\n"
    "            print(json.dumps(['scored', router.score_sync(rows)[0].reward]))\n"
    "    except ConfigError as exc:\n"
    "        print(json.dumps(['refused', str(exc)]))\n"
    "    print('-- end of', isolation, file=sys.stderr, flush=True)\n"
)


def _compile_as(
    prefix: list[str], isolations: list[str], env: dict[str, str] | None = None
) -> list[Any]:
    """``[verdict, text]`` of compiling and scoring with each of ``isolations`` in turn, in
    one interpreter started under ``prefix`` (one start: an interpreter's start and the
    package's import are most of what each costs)."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _COMPILE, *isolations],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = [json.loads(line) for line in done.stdout.splitlines()[-len(isolations) :]]
    logs = re.split(r"^-- end of \S+$", done.stderr, flags=re.M)
    for isolation, (verdict, _), log in zip(isolations, verdicts, logs, strict=False):
        if verdict == "scored" and isolation == "best_effort":
            # a weaker sandbox is never silent: the log says what programs run without
            assert "UNTRUSTED PROGRAMS RUN WITHOUT" in log, log[-2000:]
    return verdicts


def _user_namespace(*args: str) -> list[str]:
    unshare = shutil.which("unshare")
    prefix = [unshare or "unshare", "-U", *args]
    if unshare is None or subprocess.run([*prefix, "true"]).returncode != 0:
        pytest.skip("needs unshare(1) and user namespaces")
    return prefix


def test_without_root_required_refuses_and_best_effort_runs_as_nobody() -> None:
    user = _user_namespace("--map-user=1000", "--map-group=1000")
    [verdict, text], best_effort = _compile_as(user, ["required", "best_effort"])
    assert verdict == "refused" and "trainer's own user id" in text and "best_effort" in text
    assert best_effort == ["scored", 1.0]


def test_without_bubblewrap_required_refuses_with_the_fix(tmp_path: Path) -> None:
    # bubblewrap uninstalled: an empty directory over /usr/bin in a mount namespace of the test
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs unshare(1) and root")
    hide = f'/usr/bin/mount --bind {tmp_path} /usr/bin && exec "$0" "$@"'
    prefix = [unshare, "-m", "/bin/sh", "-c", hide]
    env = {**os.environ, "PATH": "/nonexistent"}
    [[verdict, text]] = _compile_as(prefix, ["required"], env)
    assert verdict == "refused" and "apt-get install bubblewrap" in text


SECCOMP = str(Path(__file__).resolve().parent.parent / "rr_seccomp.py")


def _refusing(setup: str) -> list[str]:
    """A command prefix under which the kernel refuses new namespaces."""
    if setup == "no_cap_sys_admin":
        # root without CAP_SYS_ADMIN, as a container's default capabilities leave it
        setpriv = shutil.which("setpriv")
        if setpriv is None or os.geteuid() != 0:
            pytest.skip("needs setpriv(1) and root")
        return [setpriv, "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"]
    if platform.machine() not in SECCOMP_MACHINES:
        pytest.skip("the sandbox's seccomp filter is written for x86_64 and aarch64")
    seccomp = [sys.executable, SECCOMP]  # as a container runtime's default seccomp profile
    if setup == "seccomp_root":
        return seccomp
    return [*_user_namespace("--map-user=1000", "--map-group=1000"), *seccomp]


@pytest.mark.parametrize("setup", ["no_cap_sys_admin", "seccomp_root", "seccomp_not_root"])
def test_where_namespaces_are_refused_required_refuses_and_best_effort_is_loud(
    setup: str,
) -> None:
    prefix = _refusing(setup)
    [required, why], [verdict, text] = _compile_as(prefix, ["required", "best_effort"])
    assert required == "refused" and "bubblewrap" in why and "best_effort" in why
    if verdict == "scored":  # the fallback (limits only) can run the interpreter here
        assert text == 1.0
    else:  # as a fresh user id, an interpreter under /root cannot even import its library
        assert "standard library" in text


def test_an_unknown_isolation_value_is_refused() -> None:
    with pytest.raises(ConfigError, match="isolation"):
        compile_router(
            {"routes": {"c": {"rewards": {"t": {"kind": "code", "kwargs": {"isolation": "no"}}}}}}
        )


#: Scores an honest program and the hostile ones given as argv[1] (JSON) with `best_effort`,
#: printing each result; run by a trainer that is not root.
_SCORE_AS_USER = (
    "import json, os, sys\n"
    "from rewardrouter import compile_router\n"
    "assert os.geteuid() == 1000\n"
    "config = {'routes': {'code': {'match': ['code'], 'rewards': {'t': {'kind': 'code', "
    "'kwargs': {'isolation': 'best_effort', 'limits': {'timeout': 2}}}}}}}\n"
    "label = {'inputs': ['21'], 'outputs': ['42']}\n"
    "programs = ['print(int(input()) * 2)', *json.loads(sys.argv[1])]\n"
    "rows = [{'response': f'```python\\n{p}\\n```', 'label': label, "
    "'metadata': {'dataset': 'code'}} for p in programs]\n"
    "with compile_router(config) as router:\n"
    "    print(json.dumps([[r.reward, r.status] for r in router.score_sync(rows)]))\n"
)


def test_without_root_best_effort_keeps_the_trainers_files_processes_and_memory(
    tmp_path: Path,
) -> None:
    # Not root, the program's kernel user id is the trainer's: the walls alone keep it off
    # the trainer's files (owned by that id), processes (kill(-1)) and memory (/proc/PID/mem).
    user = _user_namespace("--map-user=1000", "--map-group=1000")
    mine = tmp_path / "trainer-owned.txt"  # root's here, the trainer's (uid 1000) in there
    mine.write_text("the trainer's file\n")
    mine.chmod(0o644)
    for folder in mine.parents:
        if folder in (Path("/tmp"), Path("/")):
            break
        folder.chmod(0o755)
    marker = f"{os.getpid() % 1000}.{len(str(tmp_path))}4242"
    hostile = [
        f"open({str(mine)!r}, 'w').write('changed')\nprint(42)",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint(42)",
        "import os\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n        open(f'/proc/{pid}/mem', 'r+b').write(b'x')\n"
        "    except OSError:\n        pass\nprint(42 if os.listdir('/proc') else 0)\n"
        "raise SystemExit(1)",
        f"import os\nif os.fork() == 0:\n    os.setsid()\n"
        f"    os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\nraise SystemExit(1)",
        f"print(open({str(mine)!r}).read())",
    ]
    done = subprocess.run(
        [*user, sys.executable, "-c", _SCORE_AS_USER, json.dumps(hostile)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results[0] == [1.0, "ok"], results
    # each fails where it attacks (the file is not there, the kill ends its own runner), and
    # none of it reached the trainer
    assert [reward for reward, _ in results[1:]] == [0.0] * len(hostile), results
    assert mine.read_text() == "the trainer's file\n"
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            left += [pid] if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes() else []
        except OSError:
            continue
    assert left == [], "a daemon outlived its sandbox"


# -- 6. a response changes only its own sample: walls the kernel keeps, totals, budgets ------

#: Programs that print the right answer only when they hold memory or disk beyond the limits
#: (memory_mb 256, disk_mb 8, output_kb 64) where no per-process limit or watch of resident
#: memory sees it. Without the kernel's walls each one does
#: (`test_each_hoard_works_without_the_kernels_walls`): what stops them is the seccomp filter
#: and the program's memory cgroup.
HOARDS = [
    pytest.param(
        ANSWER + "import os\nheld = []\ntry:\n    for _ in range(8000):\n"
        "        fd = os.memfd_create('h')\n        os.posix_fallocate(fd, 0, 48 << 10)\n"
        "        held.append(fd)\nexcept OSError:\n    raise SystemExit\n" + WON,
        id="memfd_pages_375_mb",
    ),
    pytest.param(
        ANSWER + "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\nsize = 120 << 20\nfor _ in range(3):\n"
        "    key = libc.shmget(0, ctypes.c_size_t(size), 0o1600)\n    if key < 0:\n"
        "        raise SystemExit\n    at = libc.shmat(key, None, 0)\n"
        "    if at in (None, ctypes.c_void_p(-1).value):\n        raise SystemExit\n"
        "    ctypes.memset(at, 1, size)\n    libc.shmdt(ctypes.c_void_p(at))\n" + WON,
        id="sysv_shared_memory_360_mb",
    ),
    pytest.param(
        ANSWER + "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "uid, gid = os.getuid(), os.getgid()\n"
        "libc.prctl(4, 1, 0, 0, 0)  # dumpable again: its /proc/self files are its own\n"
        "if libc.unshare(0x10000000 | 0x00020000) != 0:\n    raise SystemExit\n"
        "open('/proc/self/setgroups', 'w').write('deny')\n"
        "open('/proc/self/uid_map', 'w').write(f'0 {{uid}} 1')\n"
        "open('/proc/self/gid_map', 'w').write(f'0 {{gid}} 1')\n"
        "os.makedirs({mount!r}, exist_ok=True)\n"
        "if libc.mount(b'none', {mount!r}.encode(), b'tmpfs', 0, None) != 0:\n"
        "    raise SystemExit\nfor i in range(2000):\n"
        "    with open(f'{mount}/{{i}}', 'wb') as f:\n        f.write(b'x' * (48 << 10))\n" + WON,
        id="tmpfs_of_its_own_user_namespace_94_mb",
    ),
]


@pytest.mark.parametrize("program", HOARDS)
def test_memory_and_disk_are_counted_wherever_they_live(
    router: Any, canary: Canary, program: str
) -> None:
    hostile = grade(router, program.format(mount="/tmp/m"), STDIN_LABEL, canary)[1]
    assert earns_nothing(hostile), hostile


@pytest.mark.parametrize("program", HOARDS)
def test_each_hoard_works_without_the_kernels_walls(program: str) -> None:
    """The control: in the same sandbox (bubblewrap, rlimits, the watch of resident memory) but
    without the seccomp filter and the cgroups, each hoard holds it all and prints the right
    answer: what stops it above is those walls."""
    sandbox = LocalSandbox(CodeLimits(**LIMITS), workers=1, walls=False)
    report = asyncio.run(sandbox.run(program.format(mount="/tmp/m"), [{"stdin": "alpha\n"}]))
    case = report.cases[0]
    assert (case.status, case.stdout) == ("ok", digest("alpha") + "\n"), case.stderr[-2000:]


#: Call-based, expecting a float: what a program returns is compared outside it.
FLOAT_LABEL = {"inputs": [["alpha"], ["beta"]], "outputs": [1.5, 1.5], "fn_name": "solve"}
BEYOND_FLOAT = [
    pytest.param("def solve(s):\n    return 10**400\n", id="returns_10_to_the_400"),
    pytest.param(
        "import os\nos.write(3, b'{\"values\": [' + b'9' * 4200 + b']}')\nos._exit(0)\n",
        id="writes_a_4200_digit_value_to_its_channel",
    ),
    pytest.param("def solve(s):\n    return -(10**4000)\n", id="returns_minus_10_to_the_4000"),
]


@pytest.mark.parametrize("program", BEYOND_FLOAT)
def test_a_value_beyond_a_float_is_unequal_not_the_batchs_error(
    router: Any, canary: Canary, program: str
) -> None:
    rows = [
        {"response": fenced(p), "label": FLOAT_LABEL, "metadata": {"dataset": "code"}}
        for p in ("def solve(s):\n    return 1.5\n", program)
    ]
    honest, hostile = router.score_sync(rows)  # on_error: raise, and nothing raises
    canary.absent_from([honest, hostile])
    assert (honest.reward, honest.status) == (1.0, "ok")
    assert (hostile.reward, hostile.status) == (0.0, "ok"), hostile


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        pytest.param("1000000001", "1000000000", id="off_by_one_in_a_billion"),
        pytest.param("123456889", "123456789", id="off_by_a_hundred"),
        pytest.param("1000000001.0", "1000000000", id="a_close_float_for_an_integer"),
    ],
)
def test_integers_are_exact(router: Any, canary: Canary, printed: str, expected: str) -> None:
    label = {"inputs": ["x\n"], "outputs": [expected + "\n"]}
    rows = [
        {"response": fenced(f"print({p!r})"), "label": label, "metadata": {"dataset": "code"}}
        for p in (expected, printed)
    ]
    honest, hostile = router.score_sync(rows)
    assert (honest.reward, hostile.reward) == (1.0, 0.0), hostile


#: Sleeps in every test, as an honest but slow program may: the sandbox ends it by its
#: budget, derived from the term's timeout, never by failing the batch.
SLEEPER = "import time\ntime.sleep(60)\n"
ELEVEN = {"inputs": [f"{i}\n" for i in range(11)], "outputs": [f"{2 * i}\n" for i in range(11)]}
DOUBLES = "print(int(input()) * 2)\n"


def _code_router(scoring: str, timeout: float) -> Any:
    kwargs = {"scoring": scoring, "limits": {**LIMITS, "timeout": 2}, "workers": 2}
    term = {"kind": "code", "kwargs": kwargs, "timeout": timeout}
    return compile_router({"routes": {"code": {"match": ["code"], "rewards": {"t": term}}}})


def _rows(programs: list[str]) -> list[dict[str, Any]]:
    return [
        {"response": fenced(p), "label": ELEVEN, "metadata": {"dataset": "code"}} for p in programs
    ]


def test_a_sleeper_under_fraction_scoring_ends_within_the_terms_timeout() -> None:
    # 11 tests of 2 s each would take 27.5 s; the term's 16 s leave the cases 3 s
    with _code_router("fraction", timeout=16) as router:
        begun = time.monotonic()
        honest, sleeper = router.score_sync(_rows([DOUBLES, SLEEPER]))  # on_error: raise
        took = time.monotonic() - begun
    assert (honest.reward, honest.status) == (1.0, "ok")
    assert (sleeper.reward, sleeper.status) == (0.0, "ok"), sleeper
    assert took < 16, took


def test_a_sleeper_under_all_scoring_costs_one_test_timeout() -> None:
    # pass/fail stops at the first failed test: one sleeper beside honest programs costs the
    # batch one test's timeout (2 s) on one worker, however many tests its label has
    honest = [DOUBLES] * 16
    with _code_router("all", timeout=60) as router:
        router.score_sync(_rows(honest[:2]))  # the first run pays for imports
        begun = time.monotonic()
        alone = router.score_sync(_rows(honest))
        normal = time.monotonic() - begun
        begun = time.monotonic()
        batch = router.score_sync(_rows([*honest, SLEEPER]))
        took = time.monotonic() - begun
    assert alone.rewards == [1.0] * 16 and batch.rewards == [1.0] * 16 + [0.0]
    assert took < normal + 2 + 4, (normal, took)  # one test's timeout, and slack for the load


def test_budgets_that_cannot_compose_are_refused_when_the_router_compiles() -> None:
    with pytest.raises(ConfigError) as refused:
        _code_router("fraction", timeout=5)
    assert "need 13 s, more than the term's timeout (5 s)" in str(refused.value)


def test_a_program_queued_longer_than_its_timeout_still_runs_in_full() -> None:
    # One worker, a term timeout of 13 s, and more than that of sleepers (each fails its first
    # 0.5 s test) ahead of an honest program: its wait for the worker is not its time (the
    # call's deadline stops while it waits), so it runs all 11 tests and scores 1.0, where it
    # once timed out in the queue.
    kwargs = {"scoring": "all", "limits": {**LIMITS, "timeout": "500ms"}, "workers": 1}
    term = {"kind": "code", "kwargs": kwargs, "timeout": 13}
    config = {"routes": {"code": {"match": ["code"], "rewards": {"t": term}}}}
    with compile_router(config) as router:
        begun = time.monotonic()
        batch = router.score_sync(_rows([SLEEPER] * 24 + [DOUBLES]))
        took = time.monotonic() - begun
    assert [(r.reward, r.status) for r in batch] == [(0.0, "ok")] * 24 + [(1.0, "ok")], batch
    assert took > 13, f"the queue took {took:.1f} s: the test needs more than the timeout"
