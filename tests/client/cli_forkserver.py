"""Run the `urban` command in a fresh process forked from one that has already imported it.

Each run is still its own process (its own environment, working directory, standard streams, exit code),
talking HTTP to the server under test; only the interpreter's start and the client's imports (~0.3 s of
CPU a run) are paid once per test process. Runs whose environment changes how Python itself starts
(locale, ``PYTHON*`` variables) go through a real subprocess instead, and so does anything that needs the
installed console script itself (tests/client/test_distribution.py, and the direct ``urban_command()``
calls in the tests).

The server is this file run as a script: single-threaded, it accepts one connection per run and forks a
child that reports its pid, runs ``urban_client.cli.main`` as the console script would, and reports its
exit code before it exits. A run's standard streams are files (:meth:`ForkServer.run`) or the open streams
of a process that asks for the run (``python -S cli_forkserver.py --attach SOCKET urban ARGS``,
:meth:`ForkServer.attach_command`): that small process hands its stdin, stdout and stderr to the forked
child, passes signals on and exits with the child's code, so a program that spawns `urban mcp` and talks to
it over pipes (an MCP client) gets a warm one.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: environment variables read when Python starts (stream encodings, paths, modes): a run that sets any of
#: them differently from the server's gets a real subprocess
STARTUP_VARIABLES = (
    "LC_ALL",
    "LC_CTYPE",
    "LANG",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONPATH",
    "PYTHONHOME",
)


def _exit_code(code) -> int:
    """What the interpreter does with ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_child(conn: socket.socket, request: dict, streams: list[int]) -> None:
    """In the forked child: become the `urban` process the request describes, run it, report, exit."""
    import atexit as child_atexit
    import traceback

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if streams:  # the asking process's own stdin, stdout and stderr
            for fd, opened in enumerate(streams):
                os.dup2(opened, fd)
                os.close(opened)
        else:
            for fd, (path, flags) in enumerate(
                (
                    (request["stdin"], os.O_RDONLY),
                    (request["stdout"], os.O_WRONLY | os.O_TRUNC),
                    (request["stderr"], os.O_WRONLY | os.O_TRUNC),
                )
            ):
                opened = os.open(path, flags)
                os.dup2(opened, fd)
                os.close(opened)
        sys.argv = request["argv"]
        from urban_client.cli import main

        try:
            code = _exit_code(main())
        except SystemExit as stop:
            code = _exit_code(stop.code)
        except BaseException:
            traceback.print_exc()
            code = 1
        child_atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed or broken stream: what the interpreter ignores at exit too
                code = code or 120
    finally:
        try:
            conn.sendall(json.dumps({"code": code}).encode() + b"\n")
        finally:
            os._exit(code)


def serve(path: str, preload: list[str]) -> None:
    """The fork server's loop (single-threaded: every run is forked from a process without threads);
    ``preload``: more modules to import first (what the runs it serves would import)."""
    import importlib

    import urban_client.cli  # noqa: F401  (the imports every run would pay)
    import urban_client.history_cli  # noqa: F401
    import urban_client.render  # noqa: F401

    for module in preload:
        importlib.import_module(module)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(1.0)
    parent = os.getppid()
    print("ready", flush=True)
    while os.getppid() == parent:  # a test process that died without closing it: stop too
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        with conn:
            _kind, streams, _flags, _addr = socket.recv_fds(conn, 1, 3)  # b"F" with 3 streams, or b"P"
            request = json.loads(conn.makefile("rb").readline())
            if os.fork() == 0:
                listener.close()
                _run_child(conn, request, streams)
            for opened in streams:
                os.close(opened)


def attach(path: str, argv: list[str]) -> None:
    """Run ``argv`` in a child of the fork server at ``path`` on this process's standard streams, in its
    working directory and environment; pass SIGTERM and SIGINT on; exit with the child's code."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    socket.send_fds(conn, [b"F"], [0, 1, 2])
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    conn.sendall(json.dumps(request).encode() + b"\n")
    # the child holds the streams now: the peer sees the end of stdout when the child closes it
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    replies = conn.makefile("rb")
    pid = json.loads(replies.readline())["pid"]

    def pass_on(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # it has ended: its code is on the way
            pass

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, pass_on)
    line = replies.readline()
    os._exit(json.loads(line)["code"] if line else 128 + signal.SIGKILL)


class ForkServer:
    """The client side: one server per test process, started on first use."""

    def __init__(self, env: dict, cwd: Path, preload: tuple[str, ...] = ()):
        self.env = dict(env)
        self.dir = Path(tempfile.mkdtemp(prefix="urban-fork-"))
        self.path = str(self.dir / "server.sock")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.path, *preload],
            env=self.env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        ready = self.proc.stdout.readline()
        if ready.strip() != b"ready":
            raise RuntimeError(f"the CLI fork server did not start: {ready!r}")
        atexit.register(self.close)

    def can_run(self, env: dict) -> bool:
        return all(env.get(name) == self.env.get(name) for name in STARTUP_VARIABLES)

    def run(self, argv: list[str], env: dict, cwd: str, input: bytes | None, timeout: float):
        """Like ``subprocess.run(argv, env=env, input=input, capture_output=True, timeout=timeout)``."""
        with tempfile.TemporaryDirectory(dir=self.dir) as work:
            streams = {name: Path(work) / name for name in ("stdin", "stdout", "stderr")}
            streams["stdin"].write_bytes(input or b"")
            streams["stdout"].touch()
            streams["stderr"].touch()
            request = {"argv": argv, "env": env, "cwd": cwd, **{k: str(v) for k, v in streams.items()}}
            deadline = time.monotonic() + timeout
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(self.path)
                conn.sendall(b"P" + json.dumps(request).encode() + b"\n")
                replies = conn.makefile("rb")
                pid = json.loads(replies.readline())["pid"]
                conn.settimeout(max(0.0, deadline - time.monotonic()))
                try:
                    line = replies.readline()
                except TimeoutError:
                    os.kill(pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(argv, timeout) from None
            code = json.loads(line)["code"] if line else -signal.SIGKILL
            return subprocess.CompletedProcess(
                argv, code, streams["stdout"].read_bytes(), streams["stderr"].read_bytes()
            )

    def attach_command(self, argv: list[str]) -> list[str]:
        """The command of a process that runs ``argv`` (``["urban", ...]``) forked from this server on its
        own standard streams, environment and working directory (see :func:`attach`)."""
        return [sys.executable, "-S", __file__, "--attach", self.path, *argv]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        for leftover in self.dir.glob("*"):
            leftover.unlink(missing_ok=True)
        self.dir.rmdir()


if __name__ == "__main__":
    if sys.argv[1] == "--attach":
        attach(sys.argv[2], sys.argv[3:])
    else:
        serve(sys.argv[1], sys.argv[2:])
