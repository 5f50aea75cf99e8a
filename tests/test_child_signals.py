"""The processes the tests start answer SIGINT as from a terminal, however the suite itself was started.

A suite run in the background (``nohup make test &``) inherits SIGINT ignored; a child that inherits
that too never raises KeyboardInterrupt, and ``test_cli_follow_prints_new_events_as_they_come`` (which
stops ``urban changes --follow`` with SIGINT) waited for ever in such a run.
"""

from __future__ import annotations

import signal
import subprocess
import sys


def test_a_child_process_gets_the_default_sigint_handler():
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", (done.stdout, done.stderr)


def test_a_child_stops_on_sigint():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; print('up', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline() == b"up\n"
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(timeout=60) != 0  # KeyboardInterrupt
    finally:
        proc.kill()
        proc.communicate()
