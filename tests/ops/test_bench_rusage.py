"""bench.rusage: the peak RSS the bench reports for a command (``urban-score``) is the command's own, not the
high-water mark of the large bench process that started it."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.deploy import ROOT

#: a process holding 600 MB (touched, so resident) measures a command that holds 64 MB, both ways
HOLDER = """
import json, os, resource, subprocess, sys
from bench.rusage import run_measured

held = bytearray(b"x") * (600 << 20)
command = [sys.executable, "-c", "kept = bytearray(b'y') * (64 << 20)"]
measured = run_measured(command)
direct = subprocess.Popen(command)
_, _status, usage = os.wait4(direct.pid, 0)
print(json.dumps({
    "holder_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "measured": [measured.returncode, measured.peak_mb, measured.cpu_s, measured.seconds],
    "direct_wait4_mb": usage.ru_maxrss / 1024,
}))
"""


def test_a_commands_peak_rss_is_its_own_not_its_large_parents():
    out = subprocess.run([sys.executable, "-c", HOLDER], cwd=ROOT, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["holder_mb"] >= 600
    # what the bench read before: wait4 of a child of the large process reports the holder's own peak
    assert got["direct_wait4_mb"] >= 600
    returncode, peak_mb, cpu_s, seconds = got["measured"]
    assert returncode == 0 and cpu_s > 0 and seconds > 0
    assert 64 <= peak_mb < 64 + 50  # its 64 MB and an interpreter, far below the holder's 600 MB


def test_the_commands_exit_code_and_stderr_come_back():
    from bench.rusage import run_measured

    failed = run_measured(["sh", "-c", "echo broken >&2; exit 3"])
    assert failed.returncode == 3 and failed.stderr == b"broken\n"
    missing = run_measured([str(ROOT / "no-such-command")])
    assert missing.returncode == 127 and b"no-such-command" in missing.stderr
