"""parcrypt on arrays already on a CUDA device (CuPy, PyTorch) against a device-to-device
copy of the same bytes, in one run, on one device.

    python bench_gpu.py [--sizes 1M,64M,1G] [--repeat 7]

For each library present (CuPy, PyTorch), size and suite (AES-128-CTR, AES-128-GCM), it
times ``Cipher.encrypt(array, out=out)`` (the result written into a second device array, no
host copy) and a device copy ``out[...] = array`` (CuPy) / ``out.copy_(array)`` (PyTorch)
of the same bytes, alternating, and prints the medians in GB/s (bytes of input per second)
and the ratio encrypt/copy. The timings are wall clock around a synchronised call, so they
include parcrypt's per-call work (key upload, launch, GCM's tag), as a user sees it. Scripted
by scripts/gpu-verify.sh's python stage; prints a line and exits 0 without a device.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import parcrypt

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def libraries():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:

            def make(size: int):
                return cupy.random.randint(0, 256, size, dtype=cupy.uint8), cupy.empty(size + 16, dtype=cupy.uint8)

            def copy(source, target) -> None:
                target[: source.size] = source

            yield "cupy", make, copy, cupy.cuda.runtime.deviceSynchronize
    except Exception as error:  # no CuPy, no device
        print(f"cupy: skipped ({type(error).__name__}: {error})")
    try:
        import torch

        if torch.cuda.is_available():

            def make(size: int):
                return (
                    torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda"),
                    torch.empty(size + 16, dtype=torch.uint8, device="cuda"),
                )

            def copy(source, target) -> None:
                target[: source.numel()].copy_(source)

            yield "torch", make, copy, torch.cuda.synchronize
    except Exception as error:
        print(f"torch: skipped ({type(error).__name__}: {error})")


def timed(function, synchronize) -> float:
    synchronize()
    start = time.perf_counter()
    function()
    synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1M,64M,1G")
    parser.add_argument("--repeat", type=int, default=7)
    arguments = parser.parse_args()
    sizes = [parse_size(text) for text in arguments.sizes.split(",")]
    found = False
    print(f"{'library':8} {'suite':12} {'size':>8} {'encrypt GB/s':>13} {'copy GB/s':>10} {'ratio':>6}")
    for library, make, copy, synchronize in libraries():
        found = True
        for size in sizes:
            try:
                source, target = make(size)
            except Exception as error:  # out of device memory
                print(f"{library:8} {size:>21}: skipped ({error})")
                continue
            for suite, iv_length in (("aes-128-ctr", 16), ("aes-128-gcm", 12)):
                key, iv = os.urandom(16), os.urandom(iv_length)
                # Timed runs repeat one throwaway message under one IV: given per call, as a
                # Cipher's own IV encrypts one message only.
                cipher = parcrypt.Cipher(suite, key)

                def encrypt() -> None:
                    cipher.encrypt(source, out=target, iv=iv)

                def device_copy() -> None:
                    copy(source, target)

                encrypt()  # opens the device, compiles or loads the kernels: not timed
                encrypts, copies = [], []
                for _ in range(arguments.repeat):  # alternating, as house rules ask
                    encrypts.append(timed(encrypt, synchronize))
                    copies.append(timed(device_copy, synchronize))
                encrypt_rate = size / statistics.median(encrypts) / 1e9
                copy_rate = size / statistics.median(copies) / 1e9
                label = f"{size >> 20}M" if size >= 1 << 20 else str(size)
                print(
                    f"{library:8} {suite:12} {label:>8} {encrypt_rate:13.1f} {copy_rate:10.1f}"
                    f" {encrypt_rate / copy_rate:6.2f}"
                )
            del source, target
    if not found:
        print("bench_gpu: no CuPy or PyTorch with a CUDA device here: nothing to measure")


if __name__ == "__main__":
    main()
