"""Worker processes reuse the memory of the scoring's temporaries (geo.batch.workers.keep_heap), even when
started as Dask's nanny starts them (MALLOC_TRIM_THRESHOLD_=65536, which pins glibc's mmap threshold)."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from geo.batch.workers import keep_heap

    def faults():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(50):  # a chunk's temporaries: 2 MB arrays made and freed
            a = np.ones(250_000)
            del a
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults()
    pinned = faults()
    applied = keep_heap()
    faults()
    print(applied, pinned, faults())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_keep_heap_stops_page_faults_per_temporary():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    applied, pinned, kept = out[0] == "True", int(out[1]), int(out[2])
    assert applied
    assert pinned > 50 * 400  # every 2 MB array faulted in page by page (512 pages of 4 KiB)
    assert kept < pinned / 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
@pytest.mark.parametrize(
    "pinned", [{}, {"MALLOC_TRIM_THRESHOLD_": "65536"}, {"MALLOC_MMAP_THRESHOLD_": "131072"}]
)
def test_urban_score_processes_undo_pinned_malloc_settings_only(pinned):
    """The CLI and its --workers processes apply keep_heap only when the environment pinned malloc (as a
    process that started a Dask LocalCluster has); otherwise glibc's adaptive thresholds stay."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | pinned
    code = "from geo.batch.workers import keep_heap_if_pinned; print(keep_heap_if_pinned())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(bool(pinned))
