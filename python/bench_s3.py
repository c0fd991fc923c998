#!/usr/bin/env python3
"""parcrypt.dask into an S3-compatible store against the same transfer unencrypted, in one run.

    python bench_s3.py [--mib 1024] [--workers 1,2] [--rounds 1] [--endpoint URL]
                       [--dir /dev/shm] [--plot s3.png]

Needs the installed package with its extras (``pip install 'parcrypt[dask,s3]'``) and, without
``--endpoint``, moto's server (``pip install 'moto[server]'``), started here on a free port (a
Python server: it, not parcrypt, is then the ceiling). With ``--endpoint`` the store's
credentials come from the environment (``AWS_ACCESS_KEY_ID``...), for client and workers.

For W workers (LocalCluster, W processes of one task thread), medians of ``--rounds``:

- ``encrypt_large`` of a ``--mib`` local file into ``s3://parcrypt-bench/sealed`` (64 MiB
  parts), against the same parts uploaded raw by W tasks (read the range, upload it: the
  unencrypted transfer at the same worker count) and against ``fs.put`` from the client;
- ``decrypt_large`` of that object into ``s3://parcrypt-bench/opened``, against the raw parts
  copied object to object by W tasks, and against ``fs.get`` to the local folder.

Prints a markdown table of MB/s and the per-task overhead (encrypted seconds minus raw
seconds, per part). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_here = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _here:
    sys.path.pop(0)  # the installed package, not the source folder beside this script

import s3fs  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import parcrypt.dask as pdask  # noqa: E402
from parcrypt import _store  # noqa: E402

MIB = 1024 * 1024
PART_CHUNKS = 4096  # 64 MiB


def _raw_part(url: str, size: int, first: int, end: int, upload: Any, number: int) -> int:
    options = _store.worker_options()
    low, high = first * _store.CHUNK, min(end * _store.CHUNK, size)
    if "://" in url:
        fs, path = _store._remote.filesystem(url, options)
        data = fs.cat_file(path, start=low, end=high)
    else:
        data = _store._remote.read_at(url, low, high - low)
    _store.upload_part(upload, number, data, options)
    return high - low


def _raw(client: Client, src: str, size: int, dst: str, options: dict[str, Any]) -> None:
    chunks = max(1, -(-size // _store.CHUNK))  # the raw bytes only: no final empty chunk
    ranges = [(first, min(first + PART_CHUNKS, chunks)) for first in range(0, chunks, PART_CHUNKS)]
    upload = _store.start_upload(dst, options)
    futures = [client.submit(_raw_part, src, size, a, b, upload, n, pure=False) for n, (a, b) in enumerate(ranges, 1)]
    done = client.gather(futures)
    assert sum(done) == size
    fs, _, _ = _store.s3(dst, options)
    listed = fs.call_s3("list_parts", Bucket=upload.bucket, Key=upload.key, UploadId=upload.upload_id, MaxParts=10000)
    _store.complete_upload(upload, [(p["PartNumber"], p["ETag"]) for p in listed["Parts"]], options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--endpoint", default=None)
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    server = None
    if args.endpoint is None:
        from moto.server import ThreadedMotoServer

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        endpoint = f"http://127.0.0.1:{port}"
        options: dict[str, Any] = {"key": "bench", "secret": "bench"}
    else:
        endpoint, options = args.endpoint, {}
    options.update({"client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}, "use_listings_cache": False, "skip_instance_cache": True})
    fs = s3fs.S3FileSystem(**options)
    if not fs.exists("parcrypt-bench"):
        fs.call_s3("create_bucket", Bucket="parcrypt-bench")
    folder = Path(tempfile.mkdtemp(prefix="parcrypt-s3-bench-", dir=args.dir))
    size = args.mib * MIB
    source = folder / "plain.bin"
    with open(source, "wb") as out:
        block = os.urandom(4 * MIB)
        for _ in range(args.mib // 4):
            out.write(block)
    key = os.urandom(16)
    rows: dict[tuple[str, int], list[float]] = {}
    try:
        for workers in [int(w) for w in args.workers.split(",")]:
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as client:
                pdask.register_storage_options(client, options)
                for _ in range(args.rounds):
                    for name in ("sealed", "opened", "raw-up", "raw-copy", "put"):
                        if fs.exists(f"parcrypt-bench/{name}"):
                            fs.rm(f"parcrypt-bench/{name}")

                    def timed(label: str, action: Any) -> None:
                        start = time.perf_counter()
                        action()
                        rows.setdefault((label, workers), []).append(time.perf_counter() - start)

                    timed("encrypt_large", lambda: pdask.encrypt_large(str(source), "s3://parcrypt-bench/sealed", key=key, client=client, storage_options=options))
                    timed("raw parts up", lambda: _raw(client, str(source), size, "s3://parcrypt-bench/raw-up", options))
                    timed("fs.put", lambda: fs.put_file(str(source), "parcrypt-bench/put"))
                    timed("decrypt_large", lambda: pdask.decrypt_large("s3://parcrypt-bench/sealed", "s3://parcrypt-bench/opened", key=key, client=client, storage_options=options))
                    timed("raw parts copy", lambda: _raw(client, "s3://parcrypt-bench/raw-up", size, "s3://parcrypt-bench/raw-copy", options))
                    timed("fs.get", lambda: fs.get_file("parcrypt-bench/put", str(folder / "got.bin")))
                    (folder / "got.bin").unlink()
    finally:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
        if server is not None:
            server.stop()
    parts = -(-(size // _store.CHUNK + 1) // PART_CHUNKS)
    print(f"\n{args.mib} MiB, {parts} parts of 64 MiB, store {'moto (in process)' if server else endpoint}, {os.cpu_count()} cores\n")
    print("| transfer | workers | seconds | MB/s |")
    print("|---|---|---|---|")
    medians = {label: statistics.median(times) for label, times in rows.items()}
    for (label, workers), seconds in medians.items():
        print(f"| {label} | {workers} | {seconds:.2f} | {size / seconds / 1e6:.0f} |")
    for workers in sorted({w for _, w in medians}):
        up = (medians[("encrypt_large", workers)] - medians[("raw parts up", workers)]) / parts
        down = (medians[("decrypt_large", workers)] - medians[("raw parts copy", workers)]) / parts
        print(f"\nper-part overhead at {workers} workers: encrypt {up * 1000:.0f} ms, decrypt {down * 1000:.0f} ms (vs raw parts)")
    if args.plot:
        import matplotlib.pyplot as plt

        for label in sorted({label for label, _ in medians}):
            points = sorted((w, size / s / 1e6) for (l, w), s in medians.items() if l == label)
            plt.plot([w for w, _ in points], [r for _, r in points], marker="o", label=label)
        plt.xlabel("workers")
        plt.ylabel("MB/s")
        plt.legend()
        plt.savefig(args.plot)


if __name__ == "__main__":
    main()
