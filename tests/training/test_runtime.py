import platform
import resource
import sys

import pytest
import torch

from coldbrew.training.runtime import keep_freed_memory_for_reuse


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's mallopt",
)
def test_freed_large_blocks_are_reused_without_new_page_faults(monkeypatch):
    monkeypatch.setenv("COLDBREW_KEEP_FREED_MEMORY", "0")
    assert keep_freed_memory_for_reuse() is False
    monkeypatch.delenv("COLDBREW_KEEP_FREED_MEMORY")
    assert keep_freed_memory_for_reuse() is True

    def faults_writing_16_mib() -> int:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        torch.ones(4 << 20)  # 16 MiB, freed at once
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults_writing_16_mib()  # the first time maps the pages
    # A fresh mmap would fault once per 4 KiB page: 4,096 faults for 16 MiB.
    assert faults_writing_16_mib() < 500
