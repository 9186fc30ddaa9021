import platform
import sys

import pytest

from coldbrew.system.runtime import keep_freed_memory_for_reuse


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's mallopt",
)
def test_allocator_setting_takes_on_glibc_unless_switched_off(monkeypatch):
    # Only the contract is tested: whether glibc then reuses a given block depends on the heap's
    # layout (measured: sometimes from the third 64 MiB write, sometimes not within eight), so
    # the speed effect is a benchmark figure (BENCHMARKS.md), not a unit test.
    monkeypatch.setenv("COLDBREW_KEEP_FREED_MEMORY", "0")
    assert keep_freed_memory_for_reuse() is False
    monkeypatch.delenv("COLDBREW_KEEP_FREED_MEMORY")
    assert keep_freed_memory_for_reuse() is True
