"""Wall time, CPU time and peak RSS of one command alone, for the bench rows that run ``urban-score``.

Linux carries a process's RSS high-water mark across ``exec``: a command forked (or vforked, as
``subprocess`` does) from the bench starts with the bench's own peak, so ``wait4`` of it, or
``RUSAGE_CHILDREN`` of the bench, reports at least the bench's peak whatever the command uses. Here a small
intermediary (``python -I -S``, a few MB) is started instead; it forks and execs the command, so the
command starts from the intermediary's few MB, reads the command's rusage with ``wait4`` and hands it back
on a pipe. The peak includes the command's own reaped children (``--workers`` processes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

#: run as ``python -I -S -c INTERMEDIARY <fd> <command...>``: fork + exec the command, wait for it, write
#: "maxrss_kib cpu_seconds wall_seconds exit_code" to file descriptor <fd>, exit 0
INTERMEDIARY = r"""
import os, sys, time
fd = int(sys.argv[1])
start = time.monotonic()
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        os.write(2, f"cannot run {sys.argv[2]}: {exc}\n".encode())
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - start
code = os.waitstatus_to_exitcode(status)
os.write(fd, f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime} {wall} {code}".encode())
"""


@dataclass
class Usage:
    """What one command used: exit code (negative: killed by that signal), wall seconds from its start to
    its exit, CPU seconds (user + system, its reaped children included), peak RSS in MB, its stderr."""

    returncode: int
    seconds: float
    cpu_s: float
    peak_mb: float
    stderr: bytes


def run_measured(cmd: list[str], *, env=None, cwd=None, stdout=subprocess.DEVNULL) -> Usage:
    """Run ``cmd`` (stderr captured) through the intermediary; its own :class:`Usage`."""
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", INTERMEDIARY, str(write), *cmd],
            env=env,
            cwd=cwd,
            stdout=stdout,
            stderr=subprocess.PIPE,
            pass_fds=(write,),
        )
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as report:
        _out, err = proc.communicate()
        fields = report.read().split()
    if proc.returncode != 0 or len(fields) != 4:
        raise RuntimeError(f"the measuring process failed ({proc.returncode}): {err[-500:]!r}")
    maxrss_kib, cpu_s, seconds, code = fields
    return Usage(int(code), float(seconds), float(cpu_s), int(maxrss_kib) / 1024, err)
