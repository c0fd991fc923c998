#!/usr/bin/env python3
"""parcrypt.dask against the CLI on the same data, in one run: how far workers scale.

    python bench_dask.py [--workers 1,2] [--files 8] [--file-mib 256] [--large-mib 2048]
                         [--rounds 3] [--tiny 200] [--cli target/release/parcrypt]
                         [--dir /dev/shm] [--plot dask.png]

Needs the installed package with its extra (``pip install 'parcrypt[dask]'``, or the test
venv of scripts/python-test.sh) and a release CLI (``cargo build --release``).

Measures, interleaved round by round so that the load of a shared machine hits every
contender alike, medians of ``--rounds``:

- many files: ``encrypt_files`` of ``--files`` files of ``--file-mib`` on a LocalCluster of
  W worker processes (one task thread each), against ``parcrypt encrypt`` run on each file in
  turn (the CLI uses every core per file);
- one large file: ``encrypt_large`` of ``--large-mib`` (64 MiB per task), against the CLI;
- the scheduler's cost per task: ``encrypt_files`` of ``--tiny`` files of 1 KiB, seconds per
  file (client-side planning included).

Each worker's engine gets ``cores // W`` threads, so that W workers share this machine's
cores as W machines would each bring their own. Data lives in ``--dir`` (RAM under /dev/shm:
this measures the CPU and the scheduler, not a disk) and is removed at the end. Prints a
markdown table; ``--plot`` draws throughput against workers (needs matplotlib). Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The installed package, not the source folder beside this script (it has no native module).
_here = Path(__file__).resolve().parent
sys.path = [entry for entry in sys.path if Path(entry or ".").resolve() != _here]

from distributed import Client, LocalCluster  # noqa: E402

import parcrypt.dask as pdask  # noqa: E402

MIB = 1024 * 1024


def available_bytes(folder: Path) -> int:
    """What can still be written to ``folder``: its free space, and for a RAM file system
    the memory still available as well."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    free = min(free, int(line.split()[1]) * 1024)
    except OSError:
        pass
    return free


def write_random(path: Path, size: int, block: bytes) -> None:
    with open(path, "wb") as output:
        left = size
        while left:
            piece = min(left, len(block))
            output.write(block[:piece])
            left -= piece


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--file-mib", type=int, default=256)
    parser.add_argument("--large-mib", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiny", type=int, default=200)
    parser.add_argument("--cli", default=str(_here.parent / "target" / "release" / "parcrypt"))
    parser.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    cores = os.cpu_count() or 1
    if not Path(args.cli).is_file():
        sys.exit(f"bench_dask: no CLI at {args.cli} (cargo build --release, or pass --cli)")

    data_bytes = args.files * args.file_mib * MIB + args.large_mib * MIB
    needed = 2 * data_bytes + 512 * MIB  # inputs, outputs, a margin
    base = Path(tempfile.mkdtemp(prefix="parcrypt-bench-dask-", dir=args.dir))
    try:
        free = available_bytes(base)
        if free < needed:
            sys.exit(
                f"bench_dask: {needed / 2**30:.1f} GiB needed in {base.parent}, {free / 2**30:.1f} GiB "
                "available: lower --files/--file-mib/--large-mib"
            )
        run(args, workers, cores, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(args: argparse.Namespace, workers: list[int], cores: int, base: Path) -> None:
    key = os.urandom(16)
    block = os.urandom(64 * MIB)
    plain, out = base / "plain", base / "out"
    plain.mkdir()
    out.mkdir()
    files = [plain / f"f{i}.bin" for i in range(args.files)]
    for path in files:
        write_random(path, args.file_mib * MIB, block)
    large = plain / "large.bin"
    write_random(large, args.large_mib * MIB, block)
    tiny_dir = plain / "tiny"
    tiny_dir.mkdir()
    tiny = [tiny_dir / f"t{i}.bin" for i in range(args.tiny)]
    for path in tiny:
        path.write_bytes(block[:1024])
    del block

    clusters = {}
    for count in workers:
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True, dashboard_address=":0")
        clusters[count] = (cluster, Client(cluster))
    many_bytes = args.files * args.file_mib * MIB
    large_bytes = args.large_mib * MIB
    times: dict[str, list[float]] = {}

    def record(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)

    def clean() -> None:
        for entry in out.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    try:
        for round_ in range(args.rounds):
            # The CLI, one file after another, then the large file.
            record("cli many", timed(lambda: [
                subprocess.run([args.cli, "encrypt", "-q", "--force", "--key", key.hex(), str(p), "-o",
                                str(out / (p.name + ".parcrypt"))], check=True) for p in files]))
            clean()
            record("cli large", timed(lambda: subprocess.run(
                [args.cli, "encrypt", "-q", "--force", "--key", key.hex(), str(large), "-o", str(out / "large")],
                check=True)))
            clean()
            for count, (_, client) in clusters.items():
                threads = max(1, cores // count)
                reports = []
                record(f"dask many w{count}", timed(lambda: reports.extend(
                    pdask.encrypt_files(files, out, key=key, client=client, threads=threads, overwrite=True))))
                assert all(r.ok for r in reports), [r.error for r in reports if not r.ok]
                clean()
                record(f"dask large w{count}", timed(lambda: pdask.encrypt_large(
                    large, out / "large", key=key, client=client, threads=threads, overwrite=True)))
                clean()
                tiny_out = out / "tiny"
                tiny_out.mkdir()
                record(f"dask tiny w{count}", timed(lambda: pdask.encrypt_files(
                    tiny, tiny_out, key=key, client=client, threads=1, overwrite=True)))
                clean()
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()

    median = {name: statistics.median(values) for name, values in times.items()}
    rate = lambda seconds, size: size / seconds / 1e9  # noqa: E731
    print(f"\nparcrypt.dask on this machine ({cores} cores), medians of {args.rounds} interleaved rounds;"
          f" encryption, AES-128, data in {base.parent}\n")
    print("| job | CLI (all cores) | " + " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in workers) + " |")
    print("|---|---|" + "---|" * len(workers))
    print(f"| {args.files} x {args.file_mib} MiB, GB/s | {rate(median['cli many'], many_bytes):.2f} | "
          + " | ".join(f"{rate(median[f'dask many w{w}'], many_bytes):.2f}" for w in workers) + " |")
    print(f"| 1 x {args.large_mib} MiB, GB/s | {rate(median['cli large'], large_bytes):.2f} | "
          + " | ".join(f"{rate(median[f'dask large w{w}'], large_bytes):.2f}" for w in workers) + " |")
    print(f"| {args.tiny} x 1 KiB, ms per file | - | "
          + " | ".join(f"{median[f'dask tiny w{w}'] / args.tiny * 1e3:.2f}" for w in workers) + " |")

    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("bench_dask: matplotlib is not installed; no plot", file=sys.stderr)
            return
        figure, axes = plt.subplots(figsize=(6, 4))
        axes.plot(workers, [rate(median[f"dask many w{w}"], many_bytes) for w in workers], "o-",
                  label=f"encrypt_files {args.files} x {args.file_mib} MiB")
        axes.plot(workers, [rate(median[f"dask large w{w}"], large_bytes) for w in workers], "s-",
                  label=f"encrypt_large {args.large_mib} MiB")
        axes.axhline(rate(median["cli many"], many_bytes), linestyle="--", color="gray", label="CLI, the many files")
        axes.axhline(rate(median["cli large"], large_bytes), linestyle=":", color="black", label="CLI, the large file")
        axes.set_xlabel("Dask workers (one machine's cores shared)")
        axes.set_ylabel("GB/s")
        axes.set_xticks(workers)
        axes.set_ylim(bottom=0)
        axes.legend()
        figure.tight_layout()
        figure.savefig(args.plot, dpi=120)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
