"""Zero copy shown by memory, and the GIL released while the engine works."""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc

import numpy as np
import pytest

import parcrypt
from conftest import run_threads

GIB = 1 << 30
MIB = 1 << 20


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("suite", ["aes-128-ctr", "aes-128-gcm"])
def test_one_gib_numpy_adds_only_a_few_mib(suite: str) -> None:
    iv = os.urandom(12 if suite.endswith("gcm") else 16)
    extra = 16 if suite.endswith("gcm") else 0
    buffer = np.ones(GIB + extra, dtype=np.uint8)  # touched: its pages are resident
    data = buffer[:GIB]
    cipher = parcrypt.Cipher(suite, os.urandom(16), iv, backend="pool")
    # Warm (threads and tables made) under another IV: the cipher's own encrypts one message.
    cipher.encrypt(np.ones(1 << 16, dtype=np.uint8), iv=bytes(len(iv)))
    gc.collect()
    resettable = reset_peak_rss()
    before_rss, before_peak = rss_bytes(), peak_rss_bytes()
    tracemalloc.start()
    written = cipher.encrypt(data, out=buffer)  # in place
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after_peak = peak_rss_bytes()
    assert written == GIB + extra
    baseline = before_rss if resettable else before_peak
    print(f"{suite} in place on 1 GiB: traced peak {traced_peak} B, RSS peak +{(after_peak - baseline) / MIB:.1f} MiB")
    assert traced_peak < 1 * MIB
    assert after_peak - baseline < 8 * MIB

    # A new result array: the output itself (1 GiB) and little more.
    gc.collect()
    resettable = reset_peak_rss()
    before_rss, before_peak = rss_bytes(), peak_rss_bytes()
    tracemalloc.start()
    result = cipher.encrypt(data, iv=bytes([1]) * len(iv))  # a message of its own, its own IV
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after_peak = peak_rss_bytes()
    assert len(result) == GIB + extra
    baseline = before_rss if resettable else before_peak
    print(f"{suite} new result of 1 GiB: traced peak {traced_peak / MIB:.1f} MiB, RSS peak +{(after_peak - baseline) / MIB:.1f} MiB")
    assert traced_peak < GIB + extra + 1 * MIB
    assert after_peak - baseline < GIB + 8 * MIB
    del result, buffer, data
    gc.collect()


def test_gil_is_released_while_the_engine_works() -> None:
    data = np.ones(256 * MIB, dtype=np.uint8)
    cipher = parcrypt.Cipher("aes-128-ctr", os.urandom(16), os.urandom(16), backend="seq")
    out = np.empty_like(data)
    window: list[float] = []
    ticks: list[float] = []
    started = threading.Event()

    def work() -> None:
        started.set()
        window.append(time.perf_counter())
        cipher.encrypt(data, out=out)
        window.append(time.perf_counter())

    worker = threading.Thread(target=work)
    worker.start()
    started.wait()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    start, end = window
    during = [tick for tick in ticks if start < tick < end]
    # The main thread ran Python while the call was in the engine; with the GIL held it
    # could not have, beyond a switch or two at the call's edges.
    assert len(during) > 100, (len(during), len(ticks))


def test_two_threads_calls_overlap_in_time() -> None:
    data = np.ones(128 * MIB, dtype=np.uint8)
    intervals: list[tuple[float, float]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def work() -> None:
        cipher = parcrypt.Cipher("aes-128-ctr", os.urandom(16), os.urandom(16), backend="seq")
        out = np.empty_like(data)
        barrier.wait()
        begin = time.perf_counter()
        cipher.encrypt(data, out=out)
        finish = time.perf_counter()
        with lock:
            intervals.append((begin, finish))

    run_threads([work] * 2)
    (a_start, a_end), (b_start, b_end) = intervals
    # Each call began before the other ended: they ran at the same time.
    assert a_start < b_end and b_start < a_end
