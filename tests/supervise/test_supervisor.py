"""The one supervisor of rewardrouter's long-lived children (the scoring process of ``serve``, a
local reward model's worker, the fork servers), tested once: start, readiness, a deadline kill,
a crash and its words, restart (at once or on the next request), a restart that fails, stop,
and a supervisor killed outright. Real child processes (tests/rr_supervised.py sets them up),
each test run with children started as fresh interpreters and forked by a fork server
(``preload``): the two must behave alike."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import rr_supervised
from rr_processes import children, gone

from rewardrouter.errors import ConfigError
from rewardrouter.supervise.supervisor import (
    Change,
    ChildDied,
    ChildRaised,
    ChildTimeout,
    ChildUnready,
    Supervisor,
    fork_server,
)

pytestmark = pytest.mark.slow  # real child processes, started, killed and waited for


@pytest.fixture(params=["fresh", "forked"])
def supervised(request: pytest.FixtureRequest) -> Any:
    """``supervised(**spec, ...)``: a started supervisor, stopped after the test; its children
    are fresh interpreters, or forked by a fork server."""
    made: list[Supervisor] = []
    preload = ["json"] if request.param == "forked" else None

    def make(spec: dict[str, Any] | None = None, **kwargs: Any) -> Supervisor:
        supervisor = Supervisor(
            "the test child", rr_supervised.in_turn, spec or {}, preload=preload, **kwargs
        )
        made.append(supervisor)
        return supervisor

    yield make
    for supervisor in made:
        supervisor.stop()


def forked_pid(supervisor: Supervisor) -> int:
    """The child's pid, as soon as it is known (a fork server's child has none until the
    server answered)."""
    end = time.monotonic() + 30
    while (pid := supervisor.pid) is None and time.monotonic() < end:
        time.sleep(0.001)
    assert pid is not None
    return pid


def test_a_child_answers_in_turn_and_a_handler_error_fails_that_request_alone(
    supervised: Any,
) -> None:
    supervisor = supervised()
    assert supervisor.wait_ready() == {"pid": supervisor.pid}
    assert supervisor.call(("echo", [1, "two"]), deadline=30) == [1, "two"]
    with pytest.raises(ChildRaised, match=r"^ValueError: not this one$"):
        supervisor.call(("raise", "not this one"), deadline=30)
    with pytest.raises(ChildRaised, match=r"^Unshowable: <its message cannot be shown"):
        supervisor.call(("raise_unshowable", None), deadline=30)
    assert supervisor.call(("pid", None), deadline=30) == supervisor.pid  # the same child


def test_requests_sent_before_ready_wait_and_an_async_handler_answers_them_at_once(
    supervised: Any,
) -> None:
    supervisor = supervised({"concurrent": True})
    started = time.monotonic()
    answers = [supervisor.request(("sleep", 1.0)) for _ in range(8)]  # before it is ready
    assert [a.result(timeout=30) for a in answers] == [1.0] * 8
    assert time.monotonic() - started < 8.0  # not one after another


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param("raise", r"the test child could not start: ConfigError: ", id="raises"),
        pytest.param(
            "exit", r"the test child \(pid \d+\) died \(exit status 3\) while starting", id="dies"
        ),
        pytest.param("hang", r"^not ready in time$", id="late"),
    ],
)
def test_a_child_that_cannot_get_ready_is_the_supervisors_failure_for_good(
    supervised: Any, setup: str, message: str
) -> None:
    changes: list[Change] = []
    supervisor = supervised(
        {"setup": setup}, ready_timeout=2.0, late="not ready in time", on_change=changes.append
    )
    pid = forked_pid(supervisor)
    with pytest.raises(ChildUnready, match=message) as caught:
        supervisor.wait_ready()
    if setup == "raise":  # the setup's own exception, whole
        assert isinstance(caught.value.error, ConfigError)
        assert caught.value.error.problems[0].path == "routes.a"
    assert gone(pid)
    for attempt in (lambda: supervisor.request(("echo", 1)), supervisor.wait_ready):
        with pytest.raises(ChildUnready, match=message):  # no second start: it would fail too
            attempt()
    assert supervisor.pid in (pid, None)
    assert changes == [Change("failure", supervisor.failure or "")]


def test_a_call_past_its_deadline_kills_the_child_and_the_next_call_starts_another(
    supervised: Any,
) -> None:
    supervisor = supervised()
    first = supervisor.call(("pid", None), deadline=30)
    started = time.monotonic()
    with pytest.raises(ChildTimeout, match=r"\(pid \d+\) gave no answer within the deadline"):
        supervisor.call(("sleep", 60), deadline=0.5)
    assert time.monotonic() - started < 10
    assert gone(first)
    assert supervisor.call(("pid", None), deadline=30) not in (first, None)


@pytest.mark.parametrize(
    ("request_", "cause"),
    [
        pytest.param(("exit", 1), "died (exit status 1)", id="exit"),
        pytest.param(("segfault", None), "died (killed by SIGSEGV, signal 11)", id="segfault"),
    ],
)
def test_a_crash_fails_every_unanswered_request_with_its_cause_and_restarts_at_once(
    supervised: Any, request_: tuple[str, Any], cause: str
) -> None:
    changes: list[Change] = []
    supervisor = supervised({"concurrent": True}, restart="at_once", on_change=changes.append)
    first = supervisor.call(("pid", None), deadline=30)
    waiting = [supervisor.request(("sleep", 30)) for _ in range(3)]
    time.sleep(0.2)
    crash = supervisor.request(request_)
    words = f"the test child (pid {first}) {cause}"
    for answer in [*waiting, crash]:
        with pytest.raises(ChildDied) as died:
            answer.result(timeout=30)
        assert died.value.cause == words
    assert changes[0] == Change("died", words, 4)
    assert supervisor.call(("pid", None), deadline=30) != first
    assert supervisor.failure is None and supervisor.restarting is None


def test_a_child_killed_from_outside_is_reported_and_replaced(supervised: Any) -> None:
    changes: list[Change] = []
    noted = threading.Event()
    supervisor = supervised(restart="at_once", on_change=lambda c: (changes.append(c), noted.set()))
    first = supervisor.call(("pid", None), deadline=30)
    os.kill(first, signal.SIGKILL)
    assert noted.wait(30)  # a request sent before it is noted may still reach the dead one
    second = supervisor.call(("pid", None), deadline=30)
    assert second != first
    assert changes[0].cause == (
        f"the test child (pid {first}) died (killed by SIGKILL, signal 9: the out-of-memory "
        "killer, or a kill -9)"
    )


def test_a_restart_that_cannot_get_ready_says_both_causes(supervised: Any, tmp_path: Path) -> None:
    changes: list[Change] = []
    failed = threading.Event()

    def note(change: Change) -> None:
        changes.append(change)
        if change.kind == "failure":
            failed.set()

    spec = {"fail_after": str(tmp_path / "started")}
    supervisor = supervised(spec, restart="at_once", on_change=note)
    first = supervisor.call(("pid", None), deadline=30)
    with pytest.raises(ChildDied):
        supervisor.call(("exit", 1), deadline=30)
    assert failed.wait(30)
    assert (supervisor.failure or "").startswith(
        f"the test child (pid {first}) died (exit status 1), and a new one could not be "
        "started: ConfigError: invalid reward router config in x.yaml (1 problem)"
    )
    with pytest.raises(ChildUnready, match="and a new one could not be started"):
        supervisor.request(("echo", 1))
    assert [c.kind for c in changes] == ["died", "failure"]


def test_stop_lets_the_child_close_its_handler_and_fails_what_waits(
    supervised: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "closed"
    supervisor = supervised({"closed_marker": str(marker)})
    pid = supervisor.call(("pid", None), deadline=30)
    waiting = supervisor.request(("sleep", 2))
    supervisor.stop()
    assert marker.read_text() == "closed"
    with pytest.raises(ChildDied, match=rf"^the test child \(pid {pid}\) was stopped$"):
        waiting.result(timeout=30)
    assert gone(pid)
    with pytest.raises(ChildDied, match="is stopped"):
        supervisor.request(("echo", 1))
    supervisor.stop()  # idempotent


def test_a_child_that_does_not_stop_is_killed_after_the_grace(supervised: Any) -> None:
    supervisor = supervised({"stubborn": True}, stop_grace=1.0)
    pid = supervisor.call(("pid", None), deadline=30)
    started = time.monotonic()
    supervisor.stop()
    assert 0.9 < time.monotonic() - started < 10
    assert gone(pid)


@pytest.mark.parametrize("preload", [None, ["json"]], ids=["fresh", "forked"])
def test_a_supervisor_killed_outright_takes_its_child_and_the_childs_group_along(
    preload: list[str] | None,
) -> None:
    """The lifeline: SIGKILL to the supervising process (no cleanup runs there); the child dies
    with it, though the thread that started the child ended long before (a restart starts
    children on a supervisor thread), and though a forked copy of the supervising process
    lives on. A child forked by a fork server dies with its supervisor, not with the server."""
    script = textwrap.dedent(
        """
        import json, os, sys, threading
        import rr_supervised
        from rewardrouter.supervise.supervisor import Supervisor

        made = []
        preload = json.loads(sys.argv[1])
        thread = threading.Thread(
            target=lambda: made.append(
                Supervisor("c", rr_supervised.in_turn, {}, preload=preload)
            )
        )
        thread.start()
        thread.join()
        supervisor = made[0]
        child = supervisor.call(("pid", None), deadline=60)
        sibling = os.fork()  # a forked copy of this process (a data loader's worker)
        if sibling == 0:
            sys.stdin.read()
            os._exit(0)
        print(child, sibling, flush=True)
        sys.stdin.read()
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(preload)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert parent.stdout is not None
        child, sibling = map(int, parent.stdout.readline().split())
        assert (child in children(parent.pid)) == (preload is None)
    finally:
        parent.kill()
        parent.wait()
    try:
        assert gone(child)  # though the forked copy lives on, holding what the parent held
        assert not gone(sibling, within=0.1)
    finally:
        assert parent.stdin is not None
        parent.stdin.close()  # the sibling's stdin too: it ends
    assert gone(sibling)


def test_a_child_whose_supervisor_left_while_it_set_up_ends_quietly() -> None:
    """The supervisor sends the spec and closes the socket before the child is ready (a server
    stopped while its router compiled): the child's ``ready`` finds a closed socket, its handler
    is closed, and it ends with status 0 and nothing on stderr."""
    code = textwrap.dedent(
        """
        import os, pickle, socket, sys
        from rewardrouter.supervise import child as supervised_child, frames

        ours, theirs = socket.socketpair()
        lifeline, keep = os.pipe()
        child = os.fork()
        if child == 0:
            ours.close()
            os.close(keep)
            os.setsid()  # a group of its own, as the supervisor starts it
            supervised_child.run_child(theirs.fileno(), lifeline, "rr_supervised:in_turn")
            os._exit(0)
        theirs.close()
        spec = pickle.dumps({"closed_marker": sys.argv[1]})
        ours.sendall(frames.HEADER.pack(0, len(spec), 0) + spec)
        ours.close()
        _, status = os.waitpid(child, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with tempfile.TemporaryDirectory() as folder:
        marker = Path(folder) / "closed"
        done = subprocess.run(
            [sys.executable, "-c", code, str(marker)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        assert (done.returncode, done.stderr) == (0, "")
        assert marker.read_text() == "closed"


# -- what a careless handler or a busy host does -------------------------------------------------


@pytest.mark.parametrize("concurrent", [False, True], ids=["in_turn", "concurrent"])
def test_large_requests_queued_before_ready_are_all_answered(
    supervised: Any, concurrent: bool
) -> None:
    """Requests that wait for the child are sent while the supervisor goes on reading its
    answers: echoing 8 x 1 MiB, neither side's socket buffer can hold it all."""
    supervisor = supervised({"concurrent": concurrent})
    big = "x" * 2**20
    answers = [supervisor.request(("echo", f"{k}{big}")) for k in range(8)]
    assert [a.result(timeout=60)[:1] for a in answers] == [str(k) for k in range(8)]


@pytest.mark.parametrize("concurrent", [False, True], ids=["in_turn", "concurrent"])
def test_an_answer_that_cannot_cross_fails_its_request_alone(
    supervised: Any, concurrent: bool, tmp_path: Path
) -> None:
    (tmp_path / "rr_only_here.py").write_text("class Thing:\n    pass\n")
    supervisor = supervised({"concurrent": concurrent})
    pid = supervisor.call(("pid", None), deadline=30)
    with pytest.raises(ChildRaised, match="its answer could not be sent: "):
        supervisor.call(("unpicklable", 1), deadline=30)
    with pytest.raises(ChildRaised, match="its answer could not be read: ModuleNotFoundError"):
        supervisor.call(("foreign", str(tmp_path)), deadline=30)
    assert supervisor.call(("pid", None), deadline=30) == pid  # the same child answers on


def test_a_crash_is_seen_though_a_process_the_child_started_holds_its_socket(
    supervised: Any,
) -> None:
    """A process started out of the child's group, holding the socket open: the child's exit
    still fails its requests (within the socket's grace), and what it forked in its own group
    is killed with it."""
    supervisor = supervised()
    holder = supervisor.call(("hold_socket", None), deadline=30)
    forked = supervisor.call(("fork_sleeper", None), deadline=30)
    try:
        started = time.monotonic()
        with pytest.raises(ChildDied, match=r"died \(exit status 1\)"):
            supervisor.call(("exit", 1), deadline=30)
        assert time.monotonic() - started < 20
        assert gone(forked)
    finally:
        os.kill(holder, signal.SIGKILL)


def test_a_child_killed_while_it_sets_up_is_replaced_not_a_failure(
    supervised: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    supervisor = supervised({"hang_first": str(marker)})
    end = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < end:  # in its setup, never to be ready
        time.sleep(0.02)
    first = supervisor.pid
    assert first is not None
    supervisor.kill()
    assert gone(first)
    assert supervisor.call(("pid", None), deadline=30) not in (first, None)
    assert supervisor.failure is None


def test_stop_while_a_restart_sets_up_fails_what_waits_as_stopped_at_once(
    supervised: Any, tmp_path: Path
) -> None:
    restarted = threading.Event()
    supervisor = supervised(
        {"hang_after": str(tmp_path / "started")},
        restart="at_once",
        on_change=lambda change: restarted.set(),
    )
    first = supervisor.call(("pid", None), deadline=30)
    os.kill(first, signal.SIGKILL)
    assert restarted.wait(30)
    assert (supervisor.restarting or "").startswith(f"the test child (pid {first}) died")
    end = time.monotonic() + 30
    while supervisor.pid in (first, None) and time.monotonic() < end:  # a fork server's: soon
        time.sleep(0.02)
    second = supervisor.pid
    waiting = supervisor.request(("echo", 1))
    started = time.monotonic()
    supervisor.stop()
    assert time.monotonic() - started < 5  # no grace for a child that holds nothing yet
    with pytest.raises(ChildDied, match=rf"\(pid {second}\) was stopped before it was ready"):
        waiting.result(timeout=30)
    assert supervisor.failure is None


# -- the fork servers ----------------------------------------------------------------------------


def test_file_descriptors_cross_with_a_request_and_the_caller_keeps_its_own(
    supervised: Any,
) -> None:
    supervisor = supervised()
    read, write = os.pipe()
    answer = supervisor.request(("read", None), fds=[read])
    os.close(read)  # a copy was sent: the caller's own may close at once
    os.write(write, b"through the socket")
    os.close(write)
    assert answer.result(timeout=30) == ["read", "through the socket", 1]
    with pytest.raises(ValueError, match="at most 16 file descriptors"):
        supervisor.request(("read", None), fds=[0] * 17)
    assert supervisor.call(("echo", 1), deadline=30) == 1


def test_a_child_runs_where_and_with_what_its_supervisor_has_at_its_start(
    supervised: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder and an environment set after the fork server started (by the first child) reach
    a later child as they reach a fresh interpreter."""
    supervised().call(("pid", None), deadline=30)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RR_SET_LATE", "yes")
    place = supervised().call(("place", "RR_SET_LATE"), deadline=30)
    assert place == [str(tmp_path), "yes"]


def test_a_forked_child_outlives_a_killed_fork_server_and_is_still_supervised() -> None:
    """The fork server dies (here SIGKILL) under a child it forked: the child answers on, its
    crash is still seen (how it ended is unknown then: no process tells), a deadline still
    kills it, and the next child comes from a new server."""
    supervisor = Supervisor("the test child", rr_supervised.in_turn, {}, preload=["json"])

    def kill_server() -> None:
        pid = fork_server("json,rr_supervised").pid  # the modules, then the setup's
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert gone(pid)

    try:
        first = supervisor.call(("pid", None), deadline=30)
        kill_server()
        assert supervisor.call(("pid", None), deadline=30) == first  # answers on
        with pytest.raises(ChildDied, match=r"exit status unknown: its fork server ended before"):
            supervisor.call(("exit", 1), deadline=30)
        second = supervisor.call(("pid", None), deadline=30)  # from a new server
        assert second != first
        kill_server()
        started = time.monotonic()
        with pytest.raises(ChildTimeout, match="was killed"):
            supervisor.call(("sleep", 60), deadline=1.0)
        assert time.monotonic() - started < 10
        assert gone(second)
        assert supervisor.call(("pid", None), deadline=30) not in (first, second, None)
    finally:
        supervisor.stop()


def test_a_fork_server_reaps_children_that_exit_together_and_tells_each_its_code() -> None:
    """The server's SIGCHLD handler, interrupted by itself (40 children exit at once, 5 times):
    every child's exit code reaches its status pipe, and nothing escapes the handler. Run in a
    process of its own (the handler is the process's)."""
    script = textwrap.dedent(
        """
        import os, sys
        from rewardrouter.supervise import forkserver

        forks = forkserver._Forks()
        place = (sys.path, os.getcwd(), dict(os.environ), 0o022, [])
        for round_ in range(5):
            go_read, go_write = os.pipe()
            pipes = []
            for code in range(40):
                status, write = os.pipe()
                request = (place, [], "rr_supervised:exit_when_closed", [code], False, True)
                forks(request, [os.dup(go_read), write])
                pipes.append(status)
            os.write(go_write, b"x" * 40)  # every child exits now
            codes = [int.from_bytes(os.read(fd, 4), "big", signed=True) for fd in pipes]
            assert codes == list(range(40)), codes
            for fd in [*pipes, go_read, go_write]:
                os.close(fd)
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_stop_does_not_wait_for_a_fork_server_that_is_still_importing(tmp_path: Path) -> None:
    """A module to preload whose import takes 8 s: the child is not ready within its 1 s, and
    stop() returns within the few seconds a child killed before its fork is waited for."""
    (tmp_path / "rr_slow_import.py").write_text("import time\ntime.sleep(8)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        supervisor = Supervisor(
            "the test child",
            rr_supervised.in_turn,
            {},
            preload=["rr_slow_import"],
            ready_timeout=1.0,
        )
        with pytest.raises(ChildUnready, match="was not ready within 1 s"):
            supervisor.wait_ready()
        started = time.monotonic()
        supervisor.stop()
        assert time.monotonic() - started < 7.5
    finally:
        sys.path.remove(str(tmp_path))


def test_a_preloaded_module_reads_the_asking_processs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a module reads from the environment when it is imported (a library's settings) is
    what the asking process has, though the fork server imports it."""
    (tmp_path / "rr_env_at_import.py").write_text(
        "import os\nVALUE = os.environ.get('RR_AT_IMPORT')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RR_AT_IMPORT", "the asker's")
    supervisor = Supervisor(
        "the test child", rr_supervised.in_turn, {}, preload=["rr_env_at_import"]
    )
    try:
        assert supervisor.call(("module_value", "rr_env_at_import"), deadline=30) == "the asker's"
    finally:
        supervisor.stop()


def test_a_childs_unflushed_output_and_exit_functions_are_not_lost(
    supervised: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "at_exit"
    supervisor = supervised()
    supervisor.call(("print_and_exit_hook", ["printed, never flushed", str(marker)]), deadline=30)
    supervisor.stop()
    assert "printed, never flushed" in capfd.readouterr().out
    assert marker.read_text() == "written at exit"


def test_a_child_its_fork_server_cannot_fork_is_the_supervisors_failure_for_good(
    tmp_path: Path,
) -> None:
    """A module to preload that ends the fork server while it imports: as for a fresh child
    that dies while starting, every request fails saying why, and no second server is asked
    (it would import the same module)."""
    (tmp_path / "rr_ends_its_importer.py").write_text("import os\nos._exit(7)\n")
    sys.path.insert(0, str(tmp_path))
    changes: list[Change] = []
    try:
        supervisor = Supervisor(
            "the test child",
            rr_supervised.in_turn,
            {},
            preload=["rr_ends_its_importer"],
            on_change=changes.append,
        )
        words = (
            r"^the test child could not be started: it could not be forked: the fork server "
            r"'rr_ends_its_importer,rr_supervised' \(pid \d+\) died \(exit status 7\)$"
        )
        for _ in range(2):
            with pytest.raises(ChildUnready, match=words):
                supervisor.call(("echo", 1), deadline=30)
        assert supervisor.failure is not None
        assert [c.kind for c in changes] == ["failure"]
        supervisor.stop()
    finally:
        sys.path.remove(str(tmp_path))


def test_a_subprocess_a_preloaded_module_runs_is_its_own_to_wait_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork server reaps what it forked, not a subprocess that a module it imports runs
    (whose exit status that module reads)."""
    (tmp_path / "rr_runs_at_import.py").write_text(
        "import subprocess\nVALUE = subprocess.run(['sh', '-c', 'exit 3']).returncode\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    supervisor = Supervisor(
        "the test child", rr_supervised.in_turn, {}, preload=["rr_runs_at_import"]
    )
    try:
        assert supervisor.call(("module_value", "rr_runs_at_import"), deadline=30) == 3
    finally:
        supervisor.stop()


def test_a_deadline_kills_the_child_of_a_process_with_over_a_thousand_descriptors_open(
    supervised: Any,
) -> None:
    """Descriptors numbered past 1023 (a trainer with many files and sockets open): the child
    is still watched and killed (``select`` would refuse such a number)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this process may open only {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        supervisor = supervised()
        first = supervisor.call(("pid", None), deadline=30)
        with pytest.raises(ChildTimeout, match="was killed"):
            supervisor.call(("sleep", 60), deadline=1.0)
        assert gone(first)
        assert supervisor.call(("pid", None), deadline=30) not in (first, None)
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_fork_server_that_died_just_before_a_request_is_replaced_for_it() -> None:
    """The server is killed and a child asked of it at once, before its supervisor saw the
    death: the request goes to the next server, and the child starts (5 times over)."""
    first = Supervisor("the test child", rr_supervised.in_turn, {}, preload=["json"])
    made = [first]
    try:
        first.call(("pid", None), deadline=30)
        for _ in range(5):
            pid = fork_server("json,rr_supervised").pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            made.append(Supervisor("the test child", rr_supervised.in_turn, {}, preload=["json"]))
            assert made[-1].call(("pid", None), deadline=30) not in (pid, None)
    finally:
        for supervisor in made:
            supervisor.stop()


def test_a_child_forked_by_a_server_that_died_before_answering_dies_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server forks the child, then dies before its answer goes out (a module it imported
    ends it right after the fork, once): the request goes to the next server, and the first
    child does not live on beside the second, sharing its socket."""
    (tmp_path / "rr_dies_after_fork.py").write_text(
        textwrap.dedent(
            """
            import os, pathlib

            MARK = pathlib.Path(os.environ["RR_DIES_AFTER_FORK"])

            def _die():
                if not MARK.exists():
                    MARK.write_text("died once")
                    os._exit(9)

            os.register_at_fork(after_in_parent=_die)
            """
        )
    )
    mark = tmp_path / "died"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RR_DIES_AFTER_FORK", str(mark))

    def marked() -> set[int]:
        """The processes that have this test's variable: servers and their children."""
        found = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and entry != str(os.getpid()):
                try:
                    environ = Path(f"/proc/{entry}/environ").read_bytes()
                except OSError:
                    continue
                if f"RR_DIES_AFTER_FORK={mark}".encode() in environ.split(b"\0"):
                    found.add(int(entry))
        return found

    supervisor = Supervisor(
        "the test child", rr_supervised.in_turn, {}, preload=["rr_dies_after_fork"]
    )
    try:
        child = supervisor.call(("pid", None), deadline=30)
        assert mark.read_text() == "died once"
        server = fork_server("rr_dies_after_fork,rr_supervised").pid
        end = time.monotonic() + 10
        while marked() != {server, child} and time.monotonic() < end:
            time.sleep(0.05)
        assert marked() == {server, child}
    finally:
        supervisor.stop()
