"""parcrypt.dask on real multi-process clusters: many files, one large file in ranges, a
worker killed mid-job, a TLS cluster. Outputs are compared with the single-machine
pipeline (fixed salts) and with the CLI's decryption."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="SKIPPED: dask/distributed not installed (pip install 'parcrypt[dask]')")

from distributed import Client, LocalCluster  # noqa: E402

import parcrypt  # noqa: E402
import parcrypt.dask as pdask  # noqa: E402
from parcrypt import parts  # noqa: E402

from conftest import run_cli  # noqa: E402

MIB = 1024 * 1024
# The large file: 512 MiB by default (CI); PARCRYPT_DASK_LARGE_MIB for a quicker local run.
LARGE_MIB = int(os.environ.get("PARCRYPT_DASK_LARGE_MIB", "512"))
SALTS = (bytes(range(24)), bytes(range(100, 116)))


def _cluster(**extra: object) -> LocalCluster:
    return LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", **extra
    )


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with _cluster() as cluster, Client(cluster) as client:
        yield client


@pytest.fixture
def big_dir() -> Iterator[Path]:
    """A folder for big files: in /dev/shm when there is one (RAM, not the disk), removed after."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    folder = Path(tempfile.mkdtemp(prefix="parcrypt-dask-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _random_file(path: Path, size: int, seed: int) -> None:
    generator = random.Random(seed)
    with open(path, "wb") as output:
        left = size
        while left:
            piece = min(left, 4 * MIB)
            output.write(generator.randbytes(piece))
            left -= piece


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(8 * MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def _source_and_reference(folder: Path, name: str, size: int, seed: int, key: bytes) -> tuple[Path, str, Path]:
    """A random plaintext file ``folder/name`` of ``size`` bytes, its digest, and its
    single-machine encryption under ``key`` with ``SALTS`` (``folder/reference.parcrypt``):
    what a distributed encryption must equal byte for byte."""
    source = folder / name
    _random_file(source, size, seed)
    reference = folder / "reference.parcrypt"
    parts.encrypt_with_salts(source, reference, SALTS, key=key)
    return source, _digest(source), reference


def _leftovers(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


def _unreadable(path: Path) -> None:
    """An input whose bytes cannot be read: mode 000, or (for root, which reads anything)
    a folder in the file's place."""
    if os.geteuid() == 0:
        path.mkdir()
    else:
        path.write_bytes(b"secret")
        path.chmod(0)


def test_many_files_round_trip_and_one_unreadable_fails_alone(client: Client, big_dir: Path, cli: str) -> None:
    generator = random.Random(16)
    plain_dir, sealed_dir, opened_dir = big_dir / "plain", big_dir / "sealed", big_dir / "opened"
    for folder in (plain_dir, sealed_dir, opened_dir):
        folder.mkdir()
    sizes = [0, 1, 16 * 1024, 20 * MIB] + [generator.randrange(0, 20 * MIB + 1) for _ in range(16)]
    paths = []
    for index, size in enumerate(sizes):
        path = plain_dir / f"file{index:02}.bin"
        _random_file(path, size, index)
        paths.append(path)
    broken = plain_dir / "broken.bin"
    _unreadable(broken)
    key = os.urandom(16)

    reports = pdask.encrypt_files([*paths[:10], broken, *paths[10:]], sealed_dir, key=key, client=client)
    assert [report.path for report in reports] == [str(p) for p in [*paths[:10], broken, *paths[10:]]]
    failed = [report for report in reports if not report.ok]
    assert [report.path for report in failed] == [str(broken)]
    assert failed[0].output is None and failed[0].error, failed[0]
    assert not (sealed_dir / "broken.bin.parcrypt").exists()
    assert _leftovers(sealed_dir) == []
    good = [report for report in reports if report.ok]
    assert [report.bytes for report in good] == sizes
    assert all(report.worker and report.seconds >= 0 for report in good)
    assert len({report.worker for report in good}) == 2, "both workers should have taken files"

    for path in paths:
        sealed = sealed_dir / (path.name + ".parcrypt")
        by_cli = big_dir / "by-cli"
        run_cli(cli, "decrypt", "-q", "--force", "--key", key.hex(), str(sealed), "-o", str(by_cli))
        assert _digest(by_cli) == _digest(path), path.name

    sealed_paths = [sealed_dir / (path.name + ".parcrypt") for path in paths]
    reports = pdask.decrypt_files(sealed_paths, opened_dir, key=key, client=client)
    assert all(report.ok for report in reports), [r.error for r in reports if not r.ok]
    for path in paths:
        assert _digest(opened_dir / path.name) == _digest(path), path.name

    # A wrong key fails every file, leaves nothing behind, and says why.
    wrong_dir = big_dir / "wrong"
    wrong_dir.mkdir()
    reports = pdask.decrypt_files(sealed_paths[:3], wrong_dir, key=os.urandom(16), client=client)
    assert all(not report.ok and report.error for report in reports)
    assert os.listdir(wrong_dir) == []


def test_large_file_equals_the_single_machine_bytes_and_round_trips(client: Client, big_dir: Path, cli: str) -> None:
    size = LARGE_MIB * MIB + 12345  # not a whole number of chunks
    key = os.urandom(32)
    source, before, reference = _source_and_reference(big_dir, "large.bin", size, 512, key)
    sealed = big_dir / "large.bin.parcrypt"
    report = pdask.encrypt_large(source, sealed, key=key, client=client, salts=SALTS, chunks_per_task=2048)
    assert report.bytes == size and report.tasks == -(-(size // 16384 + 1) // 2048)
    assert _digest(sealed) == _digest(reference)
    reference.unlink()

    by_cli = big_dir / "by-cli"
    run_cli(cli, "decrypt", "-q", "--key", key.hex(), str(sealed), "-o", str(by_cli))
    assert _digest(by_cli) == before
    by_cli.unlink()

    opened = big_dir / "opened.bin"
    report = pdask.decrypt_large(sealed, opened, key=key, client=client, chunks_per_task=2048)
    assert report.bytes == size
    assert _digest(opened) == before
    opened.unlink()

    # Random access across tasks.
    with open(source, "rb") as data:
        for start, end in [(0, 10), (size - 100, size + 50), (5 * MIB - 7, 9 * MIB + 3), (0, 0)]:
            data.seek(start)
            expected = data.read(max(0, min(end, size) - start))
            got = pdask.decrypt_range(sealed, start, end, key=key, client=client, bytes_per_task=MIB)
            assert got == expected, (start, end)
    assert _digest(source) == before


def test_passphrase_is_stretched_on_the_client_and_damage_leaves_nothing(client: Client, big_dir: Path) -> None:
    source = big_dir / "p.bin"
    _random_file(source, 3 * MIB + 5, 7)
    sealed = big_dir / "p.bin.parcrypt"
    pdask.encrypt_large(source, sealed, passphrase="correct horse", client=client, chunks_per_task=16)
    # The plan that travels holds part keys, never the passphrase.
    plan = parts.plan_decrypt(sealed, passphrase="correct horse")
    assert b"correct horse" not in repr(plan).encode() and len(plan.part_keys) == 65
    opened = big_dir / "p.out"
    pdask.decrypt_large(sealed, opened, passphrase="correct horse", client=client, chunks_per_task=16)
    assert opened.read_bytes() == source.read_bytes()
    opened.unlink()

    with pytest.raises(parcrypt.Error):
        pdask.decrypt_large(sealed, opened, passphrase="wrong horse", client=client)
    damaged = bytearray(sealed.read_bytes())
    damaged[len(damaged) // 2] ^= 1
    sealed.write_bytes(bytes(damaged))
    with pytest.raises(pdask.DaskJobError, match="no output"):
        pdask.decrypt_large(sealed, opened, passphrase="correct horse", client=client, chunks_per_task=16)
    assert not opened.exists() and _leftovers(big_dir) == []

    # Many files under a passphrase: each file planned (stretched) on the client.
    small = [big_dir / f"small{i}" for i in range(3)]
    for index, path in enumerate(small):
        _random_file(path, 1000 * index, index)
    (big_dir / "sealed").mkdir()
    (big_dir / "opened").mkdir()
    assert all(r.ok for r in pdask.encrypt_files(small, big_dir / "sealed", passphrase="pw pw pw", client=client))
    sealed_small = [big_dir / "sealed" / (p.name + ".parcrypt") for p in small]
    reports = pdask.decrypt_files(sealed_small, big_dir / "opened", passphrase="pw pw pw", client=client)
    assert all(r.ok for r in reports)
    assert all((big_dir / "opened" / p.name).read_bytes() == p.read_bytes() for p in small)


def test_a_worker_killed_mid_job_completes_or_fails_cleanly(big_dir: Path) -> None:
    size = 192 * MIB + 1
    key = os.urandom(16)
    source, before, reference = _source_and_reference(big_dir, "fault.bin", size, 99, key)
    sealed = big_dir / "fault.bin.parcrypt"
    outcome: dict[str, object] = {}
    with _cluster() as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        victim = next(iter(pids.values()))

        def job() -> None:
            try:
                outcome["report"] = pdask.encrypt_large(
                    source, sealed, key=key, client=client, salts=SALTS, chunks_per_task=32
                )
            except Exception as error:  # noqa: BLE001 - the outcome is checked below
                outcome["error"] = error

        runner = threading.Thread(target=job)
        runner.start()
        deadline = time.monotonic() + 60
        while not _leftovers(big_dir) and runner.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        killed_mid_job = runner.is_alive()
        os.kill(victim, signal.SIGKILL)
        runner.join(timeout=120)
        assert not runner.is_alive(), "the job hung after a worker was killed"
    assert _digest(source) == before
    if "report" in outcome:
        assert _digest(sealed) == _digest(reference)
        print(f"fault test: worker killed {'mid-job' if killed_mid_job else 'after the job'}; completed on the others")
    else:
        error = outcome["error"]
        assert str(error), error
        assert not sealed.exists()
        print(f"fault test: failed cleanly: {error}")
    assert _leftovers(big_dir) == []


def test_tls_cluster_round_trip(big_dir: Path) -> None:
    from distributed.security import Security

    security = Security.temporary()
    files = []
    for index, size in enumerate([0, 100_000, 2 * MIB + 3]):
        path = big_dir / f"t{index}.bin"
        _random_file(path, size, 1000 + index)
        files.append(path)
    key = os.urandom(16)
    with _cluster(security=security, protocol="tls") as cluster, Client(cluster, security=security) as client:
        assert cluster.scheduler_address.startswith("tls://")
        sealed_dir, opened_dir = big_dir / "s", big_dir / "o"
        sealed_dir.mkdir()
        opened_dir.mkdir()
        assert all(r.ok for r in pdask.encrypt_files(files, sealed_dir, key=key, client=client))
        sealed = [sealed_dir / (p.name + ".parcrypt") for p in files]
        assert all(r.ok for r in pdask.decrypt_files(sealed, opened_dir, key=key, client=client))
        for path in files:
            assert (opened_dir / path.name).read_bytes() == path.read_bytes()
        big = big_dir / "t2.bin"
        pdask.encrypt_large(big, big_dir / "t2.large", key=key, client=client, chunks_per_task=32)
        pdask.decrypt_large(big_dir / "t2.large", big_dir / "t2.back", key=key, client=client, chunks_per_task=32)
        assert (big_dir / "t2.back").read_bytes() == big.read_bytes()


def test_a_cut_file_is_refused_and_nothing_is_published(client: Client, big_dir: Path) -> None:
    """Issue 31 finding 1: a file cut at a chunk boundary plus 16 junk bytes (a fake empty
    final chunk) was published short by ``decrypt_large`` and returned short by
    ``decrypt_range``, with no error. Now the client authenticates the length when it plans:
    every job over such a file raises and leaves no output and no temporary file."""
    source = big_dir / "cut.bin"
    _random_file(source, 3 * MIB + 5, 31)
    sealed = big_dir / "cut.bin.parcrypt"
    key = os.urandom(16)
    pdask.encrypt_large(source, sealed, key=key, client=client, chunks_per_task=16)
    envelope = parts.plan_decrypt(sealed, key=key).envelope_bytes
    data = sealed.read_bytes()
    chunk = parts.CHUNK_BYTES + 16
    cuts = {
        "cut after 100 chunks, 16 junk bytes": data[: envelope + 100 * chunk] + bytes(16),
        "cut after the last whole chunk, 16 junk bytes": data[: envelope + (3 * MIB // parts.CHUNK_BYTES) * chunk] + b"\x01" * 16,
        "16 junk bytes appended": data + bytes(16),
    }
    for name, cut in cuts.items():
        sealed.write_bytes(cut)
        opened = big_dir / "opened.bin"
        with pytest.raises(parcrypt.InvalidTag):
            pdask.decrypt_large(sealed, opened, key=key, client=client, chunks_per_task=16)
        assert not opened.exists() and _leftovers(big_dir) == [], name
        with pytest.raises(parcrypt.InvalidTag):
            pdask.decrypt_range(sealed, 0, 4 * MIB, key=key, client=client, bytes_per_task=MIB)
        (big_dir / "many").mkdir(exist_ok=True)
        reports = pdask.decrypt_files([sealed], big_dir / "many", key=key, client=client)
        assert not reports[0].ok and "damaged" in (reports[0].error or ""), reports[0]
        assert os.listdir(big_dir / "many") == [], name


def test_outputs_are_0600_under_umask_022(client: Client, big_dir: Path) -> None:
    """Issue 31 finding 4: ``encrypt_large``/``decrypt_large`` created their temporary and
    final files 0644 under umask 022 (``decrypt_file`` makes 0600). Now every output of a
    job, temporary (it becomes the final file by a link) or final, is 0600."""
    previous = os.umask(0o022)
    try:
        source = big_dir / "mode.bin"
        _random_file(source, 2 * MIB + 3, 44)
        key = os.urandom(16)
        sealed, opened = big_dir / "mode.parcrypt", big_dir / "mode.out"
        pdask.encrypt_large(source, sealed, key=key, client=client, chunks_per_task=32)
        pdask.decrypt_large(sealed, opened, key=key, client=client, chunks_per_task=32)
        many = big_dir / "many"
        many.mkdir()
        assert all(r.ok for r in pdask.encrypt_files([source], many, key=key, client=client))
        back = big_dir / "back"
        back.mkdir()
        assert all(r.ok for r in pdask.decrypt_files([many / "mode.bin.parcrypt"], back, key=key, client=client))
        for path in (sealed, opened, many / "mode.bin.parcrypt", back / "mode.bin"):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
        assert opened.read_bytes() == source.read_bytes()
    finally:
        os.umask(previous)


def test_a_source_changed_during_the_job_is_never_sealed(client: Client, big_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31 finding 5: tasks checked only the input's size, so an input rewritten with
    other bytes of the same length between the plan and the tasks (or before a retry) was
    sealed under the plan's keys and nonces. Now the plan carries the input's identity and
    the tasks refuse; nothing is published."""
    source = big_dir / "moving.bin"
    _random_file(source, 2 * MIB + 1, 55)

    def rewrite() -> None:
        data = source.read_bytes()
        source.write_bytes(bytes(byte ^ 0x55 for byte in data))
        later = time.time() + 9
        os.utime(source, (later, later))

    # encrypt_large: the input changes after the plan, while the output is being prepared.
    prepare_sealed = parts.prepare_sealed

    def prepare_then_rewrite(path: object, plan: parts.PartPlan) -> None:
        prepare_sealed(path, plan)  # type: ignore[arg-type]
        rewrite()

    monkeypatch.setattr(pdask._parts, "prepare_sealed", prepare_then_rewrite)
    sealed = big_dir / "moving.parcrypt"
    with pytest.raises(pdask.DaskJobError, match="changed"):
        pdask.encrypt_large(source, sealed, key=os.urandom(16), client=client, chunks_per_task=16)
    assert not sealed.exists() and _leftovers(big_dir) == []
    monkeypatch.undo()

    # encrypt_files: the input changes after its plan, before its task runs.
    plan_encrypt = parts.plan_encrypt

    def plan_then_rewrite(src: object, **options: object) -> parts.PartPlan:
        plan = plan_encrypt(src, **options)  # type: ignore[arg-type]
        rewrite()
        return plan

    monkeypatch.setattr(pdask._parts, "plan_encrypt", plan_then_rewrite)
    out = big_dir / "out"
    out.mkdir()
    reports = pdask.encrypt_files([source], out, key=os.urandom(16), client=client)
    assert not reports[0].ok and "changed" in (reports[0].error or ""), reports[0]
    assert os.listdir(out) == []
