#!/usr/bin/env python3
"""parcrypt (Python) against pyca/cryptography and the Rust engine itself, in one run.

    python bench.py [--sizes 1K,64K,1M,64M,1G] [--rounds 5] [--rust PATH]

For AES-128-CTR and AES-128-GCM at each size it measures, interleaved round by round (so
that the load of a shared machine hits every contender alike), medians of each:

- parcrypt ``Cipher(...).encrypt(data)``: a new result object (bytes);
- parcrypt ``encrypt(data, out=out)``: into a caller's touched buffer;
- pyca/cryptography: ``Cipher(AES, CTR).encryptor().update()+finalize()`` and
  ``AESGCM(key).encrypt()`` (new bytes), and ``update_into`` a warm buffer (pyca's zero-copy
  form; pyca runs on one core). "vs pyca" compares like with like: rows into a caller's
  buffer against ``update_into``, the others against new bytes;
- the copy floor: ``numpy.copyto`` of the same bytes into the same warm buffer, on one
  thread and split over every core (no cipher can pass a pass over memory);
- the Rust engine's ``Cipher::encrypt`` (new Vec) and ``Cipher::encrypt_into`` for the same
  job, through the ``cipher_rate`` example (``cargo build --release -p parcrypt --example
  cipher_rate``), so that Python / Rust is a ratio of the same run.

Up to 64 KiB it reports the cost per message in microseconds (a CTR or GCM IV must not be
reused, so each message brings its own): one ``Cipher`` keyed once and ``encrypt(data,
iv=...)`` per message, against pyca's ``AESGCM(key)`` kept likewise (pyca's CTR has no
keyed object to keep: its row is a new cipher per message); and a new ``Cipher`` per
message on both sides. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The installed package, not the source folder beside this script (it has no native module).
_here = Path(__file__).resolve().parent
sys.path = [entry for entry in sys.path if Path(entry or ".").resolve() != _here]

import numpy as np  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher as PycaCipher
from cryptography.hazmat.primitives.ciphers import algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import parcrypt  # noqa: E402

KEY = bytes([7] * 16)


def iv_for(suite: str) -> bytes:
    return bytes([1] * (12 if suite.endswith("gcm") else 16))


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def show_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def timed(function, repeat: int) -> float:
    """Mean seconds of one call over `repeat` calls."""
    started = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - started) / repeat


def rust_seconds(rust: str, suite: str, size: int, job: str, runs: int, backend: str = "pool") -> float:
    done = subprocess.run(
        [rust, suite, str(size), backend, str(runs), job], capture_output=True, text=True, check=True
    )
    return statistics.median(float(line) for line in done.stdout.split())


def contenders(suite: str, size: int, data: np.ndarray, out: np.ndarray, rust: str | None):
    iv = iv_for(suite)
    raw = data.tobytes() if size <= (1 << 20) else memoryview(data)
    gcm = suite.endswith("gcm")

    def pyca_call():
        if gcm:
            AESGCM(KEY).encrypt(iv, raw, None)
        else:
            encryptor = PycaCipher(algorithms.AES(KEY), modes.CTR(iv)).encryptor()
            encryptor.update(raw) + encryptor.finalize()

    if size <= 64 * 1024:
        # Per message, each with its own IV: a cipher keyed once and one call per message,
        # and a new cipher per message.
        repeat = 2000 if size <= 1024 else 200
        keyed = parcrypt.Cipher(suite, KEY, backend="auto")
        pyca_keyed = AESGCM(KEY)

        def parcrypt_call():
            parcrypt.Cipher(suite, KEY, iv, backend="auto").encrypt(raw)

        yield "parcrypt one Cipher, encrypt(iv=)", lambda: timed(lambda: keyed.encrypt(raw, iv=iv), repeat)
        if gcm:
            yield "pyca one AESGCM, encrypt(iv)", lambda: timed(lambda: pyca_keyed.encrypt(iv, raw, None), repeat)
        yield "parcrypt new Cipher + encrypt", lambda: timed(parcrypt_call, repeat)
        yield "pyca new cipher + encrypt", lambda: timed(pyca_call, repeat)
        if rust:
            yield "Rust engine new Cipher + encrypt", lambda: rust_seconds(rust, suite, size, "call", 3, "auto")
        return
    # Timed runs repeat one throwaway message under one IV: given per call, as a Cipher's own
    # IV encrypts one message only.
    cipher = parcrypt.Cipher(suite, KEY, backend="pool")
    yield "parcrypt encrypt -> bytes", lambda: timed(lambda: cipher.encrypt(raw, iv=iv), 1)
    yield "parcrypt encrypt out=", lambda: timed(lambda: cipher.encrypt(data, out=out, iv=iv), 1)

    def pyca_into():
        # pyca's zero-copy form: a warm output buffer of at least len + 15 bytes.
        mode = modes.GCM(iv) if gcm else modes.CTR(iv)
        encryptor = PycaCipher(algorithms.AES(KEY), mode).encryptor()
        encryptor.update_into(data, out)
        encryptor.finalize()

    yield "pyca encrypt -> bytes", lambda: timed(pyca_call, 1)
    yield "pyca update_into out=", lambda: timed(pyca_into, 1)
    # The floor no cipher goes below: the same bytes copied into the same warm buffer
    # (numpy releases the GIL while it copies), on one core and on every core.
    yield "copy floor, 1 thread", lambda: timed(lambda: np.copyto(out[:size], data), 1)
    yield "copy floor, all cores", lambda: timed(lambda: parallel_copy(data, out[:size]), 1)
    if rust:
        yield "Rust engine encrypt -> Vec", lambda: rust_seconds(rust, suite, size, "new", 3)
        yield "Rust engine encrypt_into", lambda: rust_seconds(rust, suite, size, "into", 3)


_copiers = None


def parallel_copy(source: np.ndarray, target: np.ndarray) -> None:
    """Copies `source` into `target` in one slice per CPU on a thread pool kept warm."""
    global _copiers
    from concurrent.futures import ThreadPoolExecutor

    workers = os.cpu_count() or 1
    if _copiers is None:
        _copiers = ThreadPoolExecutor(max_workers=workers)
    step = -(-len(source) // workers)
    slices = [slice(start, min(start + step, len(source))) for start in range(0, len(source), step)]
    for done in [_copiers.submit(np.copyto, target[piece], source[piece]) for piece in slices]:
        done.result()


def two_threads_vs_one(size: int = 512 << 20) -> tuple[float, float]:
    """Wall time of one thread encrypting `size` bytes on `seq`, and of two threads each
    encrypting `size` bytes at once (the GIL released lets them run on two cores)."""
    import threading

    arrays = [np.ones(size, dtype=np.uint8) for _ in range(2)]
    outs = [np.empty(size, dtype=np.uint8) for _ in range(2)]
    for out in outs:
        out.fill(0)

    def work(index: int) -> None:
        parcrypt.Cipher("aes-128-ctr", KEY, iv_for("ctr"), backend="seq").encrypt(arrays[index], out=outs[index])

    work(0)
    started = time.perf_counter()
    work(0)
    one = time.perf_counter() - started
    threads = [threading.Thread(target=work, args=(index,)) for index in range(2)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    two = time.perf_counter() - started
    return one, two


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1K,64K,1M,64M,1G")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suites", default="aes-128-ctr,aes-128-gcm")
    default_rust = Path(__file__).resolve().parents[1] / "target" / "release" / "examples" / "cipher_rate"
    parser.add_argument("--rust", default=str(default_rust) if default_rust.exists() else None)
    parser.add_argument("--no-threads", action="store_true", help="skip the 2-thread vs 1-thread figure")
    args = parser.parse_args()
    if not args.rust:
        print("note: no cipher_rate example (cargo build --release -p parcrypt --example cipher_rate): no Rust column", file=sys.stderr)
    cpus = os.cpu_count()
    print(f"parcrypt {parcrypt.__version__} ({parcrypt.__file__}); {cpus} CPUs; medians of {args.rounds} interleaved rounds")
    print()
    print("| suite | size | contender | time | GB/s | vs pyca | vs Rust engine |")
    print("|---|---|---|---|---|---|---|")
    for suite in args.suites.split(","):
        for size in map(parse_size, args.sizes.split(",")):
            data = np.frombuffer(os.urandom(min(size, 1 << 20)), dtype=np.uint8)
            data = np.resize(data, size)  # touched
            out = np.ones(size + 16, dtype=np.uint8)  # touched
            runs = list(contenders(suite, size, data, out, args.rust))
            samples: dict[str, list[float]] = {name: [] for name, _ in runs}
            for _ in range(args.rounds):
                for name, run in runs:
                    samples[name].append(run())
            medians = {name: statistics.median(values) for name, values in samples.items()}
            pyca_new = medians.get("pyca new cipher + encrypt") or medians["pyca encrypt -> bytes"]
            # Like against like: into a caller's buffer against pyca's update_into, a cipher
            # kept for many messages against pyca's kept one.
            pyca_into = medians.get("pyca update_into out=", pyca_new)
            pyca_keyed = next((value for name, value in medians.items() if name.startswith("pyca one")), pyca_new)
            for name, seconds in medians.items():
                into = "out=" in name or "encrypt_into" in name or name.startswith("copy")
                pyca = pyca_into if into else pyca_keyed if " one " in name else pyca_new
                rust_peer = None
                if name.startswith("parcrypt"):
                    if "out=" in name:
                        rust_peer = medians.get("Rust engine encrypt_into")
                    elif "new Cipher" in name:
                        rust_peer = medians.get("Rust engine new Cipher + encrypt")
                    else:
                        rust_peer = medians.get("Rust engine encrypt -> Vec")
                shown = f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"
                rate = size / seconds / 1e9
                versus_pyca = f"{pyca / seconds:.2f}x"
                versus_rust = f"{rust_peer / seconds * 100:.0f} %" if rust_peer else ""
                print(f"| {suite} | {show_size(size)} | {name} | {shown} | {rate:.2f} | {versus_pyca} | {versus_rust} |")
            del data, out
    if not args.no_threads:
        one, two = two_threads_vs_one()
        print()
        print(f"GIL released: one thread 512 MiB AES-128-CTR on seq {one * 1e3:.0f} ms; two threads 512 MiB each at once {two * 1e3:.0f} ms (ratio {two / one:.2f}; 2.00 would mean no parallelism)")


if __name__ == "__main__":
    main()
