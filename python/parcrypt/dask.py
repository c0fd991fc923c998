"""Encrypt many files, or one huge file, across a Dask cluster (``pip install parcrypt[dask]``).

Two shapes of work:

- :func:`encrypt_files` / :func:`decrypt_files`: one task per file, outputs beside each
  other in ``dest_dir`` under the command line's names (``NAME.parcrypt``; decryption strips
  the suffix). Each file's result is a :class:`FileReport`; a failed file fails alone, and
  leaves no output (a task writes a file with no name, linked to its name only when
  complete, so even a killed worker leaves nothing).
- :func:`encrypt_large` / :func:`decrypt_large`: one file on a file system that every worker
  sees, split into chunk ranges. The client writes the envelope and makes the output at its
  final size under a temporary name; tasks seal (or open) disjoint chunk ranges and write
  them at their offsets; the output is renamed into place only when every task succeeded,
  else removed. The bytes equal ``parcrypt encrypt``'s with the same key material.
  :func:`decrypt_range` reads a byte range, its pieces decrypted by several tasks.

What crosses the wire. The client plans every file (:mod:`parcrypt.parts`): a passphrase is
stretched with argon2id there, once per file, a file to public-key ``recipients`` gets its
file key wrapped there, and ``identities`` unwrap a file's key there; neither a passphrase,
a key nor an identity ever leaves the client. Tasks receive each file's *part keys* (that message's AEAD key, base nonce and
public commitment, 65 or 81 bytes), paths and integers. Part keys open and could forge that
one file, so the scheduler and workers must be trusted, and a real cluster must use TLS
(``distributed.Security``, ``protocol="tls"``): Dask's default TCP is plaintext. Python
cannot wipe ``bytes``, so copies live in the client, scheduler and worker memory until
collected. Workers need read access to the inputs and write access to the outputs.

Tasks are idempotent (positional writes of deterministic bytes) as long as the input does
not change, so Dask may rerun a task on another worker after a worker dies; the result is
still exact. **The input must not change during a job**: a plan fixes the keys and nonces,
and sealing other bytes under them would reuse a (key, nonce) pair. So each plan records
its input's identity (device, inode, size, modification and change times in nanoseconds)
and every task refuses, before and after sealing, an input that is no longer that file or
was written since; the job then fails (:class:`DaskJobError` or a failed
:class:`FileReport`) and publishes nothing.

A cut or extended encrypted file is refused: the client authenticates each file's final
chunk (its length) when it plans, and the task that reaches the end authenticates it again,
so :func:`decrypt_large`, :func:`decrypt_files` and :func:`decrypt_range` never publish or
return a shortened message. Every file a job creates, temporary or final, is new (created
exclusively) and of mode 0600 whatever the umask.

Object stores (``pip install parcrypt[dask,s3]``). Every function also takes fsspec URLs
(``s3://bucket/key``; a glob string for the many-file functions) with ``storage_options``,
which the client uses and never sends. Workers open stores with their own credentials: their
environment, or options registered once per worker (:class:`StorageOptions`,
:func:`register_storage_options`). One object per task is staged in a private local folder
and uploaded whole when complete; one large object to ``s3://`` is one multipart upload whose
parts are runs of whole chunks, completed only when every part succeeded and aborted
otherwise (:mod:`parcrypt._store`).

>>> from distributed import Client                                     # doctest: +SKIP
>>> import parcrypt.dask as pd                                         # doctest: +SKIP
>>> client = Client("tls://scheduler:8786", security=security)          # doctest: +SKIP
>>> reports = pd.encrypt_files(paths, "/shared/sealed", key=key)        # doctest: +SKIP
>>> pd.encrypt_large("/shared/big.bin", "/shared/big.bin.parcrypt", key=key)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import as_completed as concurrent_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from distributed import Client, as_completed, get_worker, wait
except ImportError as _missing:  # pragma: no cover - depends on the environment
    raise ImportError(
        "parcrypt.dask needs dask and distributed: pip install 'parcrypt[dask]'"
    ) from _missing

from . import _remote, _store
from . import parts as _parts

__all__ = [
    "FileReport",
    "LargeReport",
    "DaskJobError",
    "StorageOptions",
    "register_storage_options",
    "encrypt_files",
    "decrypt_files",
    "encrypt_large",
    "decrypt_large",
    "decrypt_range",
    "SUFFIX",
]

#: The suffix the command line's users give encrypted files, and that decryption strips.
SUFFIX = ".parcrypt"
#: Chunks per task for one large file by default: 4096 chunks, 64 MiB of plaintext.
DEFAULT_CHUNKS_PER_TASK = 4096

PathLike = str | os.PathLike[str]


class DaskJobError(RuntimeError):
    """A distributed job over one file failed; its output was removed (or never named)."""


@dataclass(frozen=True)
class FileReport:
    """What became of one file."""

    #: The input file.
    path: str
    #: The output file, or ``None`` when the file failed.
    output: str | None
    #: Plaintext bytes.
    bytes: int
    #: Seconds the task took on its worker (planning on the client not included).
    seconds: float
    #: The worker's address, or ``None`` when no worker ran it.
    worker: str | None
    #: Why the file failed (one line), or ``None``.
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the file was done."""
        return self.error is None


@dataclass(frozen=True)
class LargeReport:
    """What a job over one large file did."""

    path: str
    output: str
    #: Plaintext bytes.
    bytes: int
    #: Wall-clock seconds, planning included.
    seconds: float
    #: Tasks run (chunk ranges).
    tasks: int
    #: Addresses of the workers that ran them.
    workers: tuple[str, ...]


def _client(client: Client | None) -> Client:
    if client is not None:
        return client
    from distributed import default_client

    return default_client()


def _temporary(dst: Path) -> Path:
    return dst.with_name(f".{dst.name}.{uuid.uuid4().hex[:12]}.parcrypt.tmp")


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _publish(tmp: Path, dst: Path, overwrite: bool) -> None:
    """Syncs ``tmp`` and gives it the name ``dst`` (an existing ``dst`` only replaced when
    ``overwrite``: linking fails on an existing name, so no check-then-write race)."""
    _fsync(tmp)
    if overwrite:
        os.replace(tmp, dst)
    else:
        os.link(tmp, dst)
        os.unlink(tmp)
    folder = os.open(dst.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _worker_address() -> str | None:
    try:
        return str(get_worker().address)
    except ValueError:
        return None


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def _all_results(futures: list[Any], what: str, failed_then: str, unfinished_then: str) -> list[Any]:
    """Waits for every one of ``futures`` (the tasks of one job over ``what``) and returns
    their results in order; when any failed, a :class:`DaskJobError` with the first reason and
    what that left (``failed_then``; ``unfinished_then`` when none raised)."""
    wait(futures)
    failed = [future for future in futures if future.status != "finished"]
    if failed:
        try:
            failed[0].result()
        except Exception as error:
            raise DaskJobError(
                f"{len(failed)} of {len(futures)} {what} failed ({_reason(error)}); {failed_then}"
            ) from error
        raise DaskJobError(f"{len(failed)} {what} did not finish; {unfinished_then}")
    return [future.result() for future in futures]


# ---- object stores (fsspec URLs) -----------------------------------------------------------

try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover - older distributed
    _WorkerPlugin = object  # type: ignore[assignment,misc]


class StorageOptions(_WorkerPlugin):  # type: ignore[misc]
    """A worker plugin that gives every worker the fsspec ``storage_options`` its tasks open
    stores with (``client.register_plugin(StorageOptions({...}))``, or
    :func:`register_storage_options`). Sent once per worker when registered, never with a
    task; without it, workers use their environment (``AWS_*`` variables, instance roles,
    ``AWS_ENDPOINT_URL``). Prefer credentials the workers already have: options registered
    here travel to each worker over the cluster's connection (use TLS)."""

    name = "parcrypt-storage-options"

    def __init__(self, storage_options: dict[str, Any]) -> None:
        self._options = dict(storage_options)

    def setup(self, worker: Any) -> None:
        worker._parcrypt_storage_options = dict(self._options)

    def teardown(self, worker: Any) -> None:
        worker._parcrypt_storage_options = None

    def __repr__(self) -> str:  # never the options: they may hold secrets
        return "StorageOptions(...)"


def register_storage_options(client: Client | None, storage_options: dict[str, Any]) -> None:
    """Registers ``storage_options`` on every worker of ``client`` (and workers that join
    later) for the store URLs of parcrypt's tasks: :class:`StorageOptions`."""
    _client(client).register_plugin(StorageOptions(storage_options), name=StorageOptions.name)


def _remote_job(*targets: Any) -> bool:
    return any(_remote.is_url(target) for target in targets)


def _object_task(
    encrypting: bool,
    plan: _parts.PartPlan,
    ref: Any,
    dst: str,
    overwrite: bool,
    backend: str,
    threads: int | None,
) -> FileReport:
    """Runs on a worker: one object (or file) into one object (or file), staged through a
    private local folder; the output receives the result only once it is complete."""
    start = time.perf_counter()
    options = _store.worker_options()
    try:
        with _remote.private_folder() as folder:
            local_src, local_dst = os.path.join(folder, "input"), os.path.join(folder, "output")
            _store.fetch(ref, local_src, options)
            target = local_dst if _remote.is_url(dst) else dst
            if encrypting:
                staged = dataclasses.replace(plan, source=_remote.identity(local_src))
                _parts.seal_file(staged, local_src, target, overwrite=overwrite, backend=backend, threads=threads)
            else:
                _parts.open_file(plan, local_src, target, overwrite=overwrite, backend=backend, threads=threads)
            if _remote.is_url(dst):
                _remote.publish(local_dst, dst, options, overwrite)
    except Exception as error:
        return FileReport(ref.url, None, 0, time.perf_counter() - start, _worker_address(), _reason(error))
    return FileReport(ref.url, dst, plan.plaintext_bytes, time.perf_counter() - start, _worker_address())


def _expand(paths: Iterable[PathLike] | str, storage_options: dict[str, Any] | None) -> list[PathLike]:
    """A glob (one string, a URL or a local pattern) expanded in sorted order, or the list."""
    if not isinstance(paths, str):
        return list(paths)
    if not any(char in paths for char in "*?["):
        return [paths]
    if _remote.is_url(paths):
        fs, pattern = _remote.filesystem(paths, storage_options)
        protocol = paths.split("://", 1)[0]
        found: list[PathLike] = [f"{protocol}://{name}" for name in sorted(fs.glob(pattern)) if fs.isfile(name)]
        return found
    import glob

    return [name for name in sorted(glob.glob(paths)) if os.path.isfile(name)]


def _object_name(src: str, dest_dir: str, encrypting: bool) -> str:
    name = src.rstrip("/").rsplit("/", 1)[-1]
    if encrypting:
        name += SUFFIX
    elif name.endswith(SUFFIX) and len(name) > len(SUFFIX):
        name = name[: -len(SUFFIX)]
    else:
        name += ".decrypted"
    if _remote.is_url(dest_dir):
        return dest_dir.rstrip("/") + "/" + name
    return str(Path(_remote.local_path(dest_dir)).resolve() / name)


def _many_remote(
    encrypting: bool,
    sources: list[PathLike],
    dest_dir: PathLike,
    secret: dict[str, Any],
    client: Client,
    overwrite: bool,
    backend: str,
    threads: int | None,
    format: str,
    context: Any,
    storage_options: dict[str, Any] | None,
) -> list[FileReport]:
    reports: dict[int, FileReport] = {}
    futures: dict[Any, int] = {}
    names = {index: _store.url_of(raw) for index, raw in enumerate(sources)}

    def plan(index: int) -> tuple[Any, _parts.PartPlan]:
        # On the client: argon2id runs here; the object is described, never downloaded
        # (a decryption reads its envelope and final chunk to authenticate its length).
        ref = _store.describe(sources[index], storage_options)
        if encrypting:
            return ref, _store.plan_encrypt(ref, secret, format, context, None)
        return ref, _store.plan_decrypt(ref, secret, format, context, storage_options)

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as planners:
        planned = {planners.submit(plan, index): index for index in names}
        for done in concurrent_completed(planned):
            index = planned[done]
            try:
                ref, part_plan = done.result()
                dst = _object_name(names[index], os.fspath(dest_dir), encrypting)
                if not overwrite:
                    _remote.refuse_existing(dst, storage_options, False)
            except Exception as error:
                reports[index] = FileReport(names[index], None, 0, 0.0, None, _reason(error))
                continue
            future = client.submit(
                _object_task, encrypting, part_plan, ref, dst, overwrite, backend, threads,
                pure=False, key=f"parcrypt-{'encrypt' if encrypting else 'decrypt'}-{uuid.uuid4().hex}",
            )
            futures[future] = index
    for future in as_completed(list(futures)):
        index = futures[future]
        try:
            reports[index] = future.result()
        except Exception as error:
            reports[index] = FileReport(names[index], None, 0, 0.0, None, _reason(error))
    return [reports[index] for index in sorted(reports)]


def _part_task(
    encrypting: bool,
    plan: _parts.PartPlan,
    ref: Any,
    first: int,
    end: int,
    upload: Any,
    number: int,
    backend: str,
    threads: int | None,
) -> tuple[int, str, int, str | None]:
    """Runs on a worker: seals (or opens) chunks ``first..end`` and uploads them as part
    ``number``; returns ``(number, etag, plaintext bytes, worker)``. A rerun uploads the
    same bytes again under the same number."""
    options = _store.worker_options()
    if encrypting:
        data = _store.seal_range(plan, ref, first, end, backend, threads, options)
    else:
        data = _store.open_range(plan, ref, first, end, backend, threads, options)
    low, high = _store.plain_span(plan, first, end)
    etag = _store.upload_part(upload, number, data, options)
    return number, etag, high - low, _worker_address()


def _large_remote(
    encrypting: bool,
    src: PathLike,
    dst: PathLike,
    secret: dict[str, Any],
    client: Client,
    chunks_per_task: int,
    overwrite: bool,
    backend: str,
    threads: int | None,
    format: str,
    context: Any,
    salts: tuple[bytes, bytes] | None,
    storage_options: dict[str, Any] | None,
) -> LargeReport:
    started = time.perf_counter()
    if not _remote.is_url(dst):
        raise ValueError(
            f"{dst}: from a URL, one large object is written to an S3-compatible store "
            "(s3://...); decrypt_files/encrypt_files write local files"
        )
    output = str(dst)
    _store.s3(output, storage_options)  # an S3 URL, or ValueError before any work
    _remote.refuse_existing(output, storage_options, overwrite)
    ref = _store.describe(src, storage_options)
    if encrypting:
        plan = _store.plan_encrypt(ref, secret, format, context, salts)
    else:
        plan = _store.plan_decrypt(ref, secret, format, context, storage_options)
    ranges = _store.part_ranges(plan, chunks_per_task)
    upload = _store.start_upload(output, storage_options)
    futures: list[Any] = []
    try:
        futures = [
            client.submit(
                _part_task, encrypting, plan, ref, first, end, upload, number, backend, threads,
                pure=False, key=f"parcrypt-part-{number}-{uuid.uuid4().hex}",
            )
            for number, (first, end) in enumerate(ranges, start=1)
        ]
        results = _all_results(
            futures, f"parts of {ref.url}",
            f"the upload was aborted: nothing was published at {output}", "nothing was published",
        )
        if sum(done for _, _, done, _ in results) != plan.plaintext_bytes:
            raise DaskJobError(f"the parts of {ref.url} did not cover it; nothing was published")
        if not overwrite:
            _remote.refuse_existing(output, storage_options, False)
        # Conditional without overwrite (If-None-Match: *): an object created since the check
        # above is refused by the store (FileExistsError) and the upload aborted below.
        _store.complete_upload(upload, [(number, etag) for number, etag, _, _ in results], storage_options, overwrite)
    except BaseException:
        for future in futures:
            future.cancel()
        try:
            _store.abort_upload(upload, storage_options)
        except Exception:
            pass  # the upload stays unpublished; the store's lifecycle rules remove it
        raise
    workers = tuple(sorted({worker for _, _, _, worker in results if worker}))
    return LargeReport(ref.url, output, plan.plaintext_bytes, time.perf_counter() - started, len(ranges), workers)


# ---- one task per file --------------------------------------------------------------------


def _file_task(
    encrypting: bool,
    plan: _parts.PartPlan,
    src: str,
    dst: str,
    overwrite: bool,
    backend: str,
    threads: int | None,
) -> FileReport:
    """Runs on a worker: the whole of one file, through the single-machine pipeline. The
    output has no name until it is complete, so even a killed worker leaves nothing."""
    start = time.perf_counter()
    try:
        if encrypting:
            _parts.seal_file(plan, src, dst, overwrite=overwrite, backend=backend, threads=threads)
        else:
            _parts.open_file(plan, src, dst, overwrite=overwrite, backend=backend, threads=threads)
    except Exception as error:  # every failure is this file's alone
        return FileReport(src, None, 0, time.perf_counter() - start, _worker_address(), _reason(error))
    return FileReport(src, dst, plan.plaintext_bytes, time.perf_counter() - start, _worker_address())


def _output_name(src: Path, dest_dir: Path, encrypting: bool) -> Path:
    if encrypting:
        return dest_dir / (src.name + SUFFIX)
    if src.name.endswith(SUFFIX) and len(src.name) > len(SUFFIX):
        return dest_dir / src.name[: -len(SUFFIX)]
    return dest_dir / (src.name + ".decrypted")


def _many(
    encrypting: bool,
    paths: Iterable[PathLike] | str,
    dest_dir: PathLike,
    secret: dict[str, Any],
    client: Client | None,
    overwrite: bool,
    backend: str,
    threads: int | None,
    format: str,
    context: Any,
    storage_options: dict[str, Any] | None = None,
) -> list[FileReport]:
    paths = _expand(paths, storage_options)
    if isinstance(paths, list) and (_remote_job(dest_dir, *paths) or storage_options is not None):
        return _many_remote(
            encrypting, paths, dest_dir, secret, _client(client), overwrite, backend, threads,
            format, context, storage_options,
        )
    client = _client(client)
    folder = Path(dest_dir).resolve()
    reports: dict[int, FileReport] = {}
    futures: dict[Any, int] = {}
    sources = {index: Path(raw).resolve() for index, raw in enumerate(paths)}

    def plan(src: Path) -> _parts.PartPlan:
        # On the client: argon2id (for a passphrase) runs here, once per file, never on a worker.
        if encrypting:
            return _parts.plan_encrypt(src, format=format, context=context, **secret)
        return _parts.plan_decrypt(src, format=format, context=context, **secret)

    # Plans are made a few at a time (argon2id takes 64 MiB and a fraction of a second, the
    # GIL released), and each file is submitted as soon as its plan is ready.
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as planners:
        planned = {planners.submit(plan, src): index for index, src in sources.items()}
        for done in concurrent_completed(planned):
            index = planned[done]
            src = sources[index]
            try:
                part_plan = done.result()
            except Exception as error:
                reports[index] = FileReport(str(src), None, 0, 0.0, None, _reason(error))
                continue
            dst = _output_name(src, folder, encrypting)
            future = client.submit(
                _file_task, encrypting, part_plan, str(src), str(dst), overwrite, backend, threads,
                pure=False, key=f"parcrypt-{'encrypt' if encrypting else 'decrypt'}-{uuid.uuid4().hex}",
            )
            futures[future] = index
    for future in as_completed(list(futures)):
        index = futures[future]
        try:
            reports[index] = future.result()
        except Exception as error:  # the task itself died (its worker was lost, ...)
            reports[index] = FileReport(str(sources[index]), None, 0, 0.0, None, _reason(error))
    return [reports[index] for index in sorted(reports)]


def encrypt_files(
    paths: Iterable[PathLike] | str,
    dest_dir: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    recipients: Any = None,
    client: Client | None = None,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    format: str = "parcrypt",
    context: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> list[FileReport]:
    """Encrypts every file of ``paths`` into ``dest_dir/NAME.parcrypt``, one task per file;
    returns one :class:`FileReport` per path, in order. Failed files are reported (``error``)
    and leave no output; they do not stop the others. ``threads`` and ``backend`` are each
    task's (all of a worker's cores by default).

    ``paths`` may hold fsspec URLs (``s3://bucket/prefix/a.bin``), or be one glob string
    (``"s3://bucket/prefix/*.bin"``, ``"/data/*.bin"``); ``dest_dir`` may be a URL
    (``s3://bucket/sealed/``). The client opens the store with ``storage_options`` to list
    and plan (never sent to a task); workers open it with their own credentials
    (:class:`StorageOptions`, or their environment). A task stages its object in a private
    local folder and uploads the output whole, so an object appears only when complete; on S3
    without ``overwrite`` that upload is conditional (``If-None-Match: *``): an object created
    meanwhile by another writer is kept and the file's report says ``FileExistsError``."""
    secret = _parts._secret(True, key, passphrase, recipients, None)
    return _many(True, paths, dest_dir, secret, client, overwrite, backend, threads, format, context, storage_options)


def decrypt_files(
    paths: Iterable[PathLike] | str,
    dest_dir: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    identities: Any = None,
    client: Client | None = None,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    format: str = "parcrypt",
    context: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> list[FileReport]:
    """Decrypts every file of ``paths`` into ``dest_dir`` (``NAME.parcrypt`` becomes ``NAME``,
    other names get ``.decrypted``), one task per file, as :func:`encrypt_files` does. An output
    appears only once every chunk authenticated. URLs, globs and ``storage_options`` as for
    :func:`encrypt_files`."""
    secret = _parts._secret(False, key, passphrase, None, identities)
    return _many(False, paths, dest_dir, secret, client, overwrite, backend, threads, format, context, storage_options)


# ---- one large file, many tasks -----------------------------------------------------------


def _range_task(
    encrypting: bool,
    plan: _parts.PartPlan,
    first: int,
    end: int,
    src: str,
    tmp: str,
    backend: str,
    threads: int | None,
) -> tuple[int, str | None]:
    if encrypting:
        done = _parts.seal(plan, first, end, src, tmp, backend=backend, threads=threads)
    else:
        done = _parts.open_part(plan, first, end, src, tmp, backend=backend, threads=threads)
    return done, _worker_address()


def _large(
    encrypting: bool,
    src: PathLike,
    dst: PathLike,
    secret: dict[str, Any],
    client: Client | None,
    chunks_per_task: int,
    overwrite: bool,
    backend: str,
    threads: int | None,
    format: str,
    context: Any,
    salts: tuple[bytes, bytes] | None,
    storage_options: dict[str, Any] | None = None,
) -> LargeReport:
    started = time.perf_counter()
    client = _client(client)
    if _remote_job(src, dst) or storage_options is not None:
        return _large_remote(
            encrypting, src, dst, secret, client, chunks_per_task, overwrite, backend, threads,
            format, context, salts, storage_options,
        )
    source, output = Path(src).resolve(), Path(dst).resolve()
    if not overwrite and output.exists():
        raise FileExistsError(f"{output} exists (pass overwrite=True to replace it)")
    if encrypting:
        plan = _parts.plan_encrypt(source, format=format, context=context, salts=salts, **secret)
    else:
        plan = _parts.plan_decrypt(source, format=format, context=context, **secret)
    tmp = _temporary(output)
    futures = []
    try:
        if encrypting:
            _parts.prepare_sealed(tmp, plan)
        else:
            _parts.prepare_plain(tmp, plan)
        ranges = plan.ranges(chunks_per_task)
        futures = [
            client.submit(
                _range_task, encrypting, plan, first, end, str(source), str(tmp), backend, threads,
                pure=False, key=f"parcrypt-range-{first}-{end}-{uuid.uuid4().hex}",
            )
            for first, end in ranges
        ]
        results = _all_results(
            futures, f"tasks over {source}",
            f"no output was written to {output}", "no output was written",
        )
        if sum(done for done, _ in results) != plan.plaintext_bytes:
            raise DaskJobError(f"the tasks over {source} did not cover it; no output was written")
        _publish(tmp, output, overwrite)
    except BaseException:
        for future in futures:
            future.cancel()
        _remove(tmp)
        raise
    workers = tuple(sorted({worker for _, worker in results if worker}))
    return LargeReport(str(source), str(output), plan.plaintext_bytes, time.perf_counter() - started, len(ranges), workers)


def encrypt_large(
    src: PathLike,
    dst: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    recipients: Any = None,
    client: Client | None = None,
    chunks_per_task: int = DEFAULT_CHUNKS_PER_TASK,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    format: str = "parcrypt",
    context: Any = None,
    salts: tuple[bytes, bytes] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> LargeReport:
    """Encrypts one file into ``dst`` with ``chunks_per_task`` chunks (16 KiB each) per task,
    byte for byte as ``parcrypt encrypt`` would. ``dst`` (mode 0600) appears only when every
    task succeeded; on failure (a changed input among them) the temporary output is removed
    and :class:`DaskJobError` raised. ``src`` must not change until the call returns.
    ``salts`` fixes the salts for reproducible comparisons only (never reuse one).

    To an object store (``dst`` an ``s3://`` URL; ``src`` a URL, or a path every worker
    sees): the client plans the object and starts a multipart upload; each task seals a run
    of whole chunks and uploads it as one part (at least 5 MiB but the last: at least 320
    chunks per task, and more when the object would need over 10,000 parts; the envelope in
    the first); the client completes the upload only when every part succeeded and aborts it
    otherwise, so a reader sees the whole object or nothing. Without ``overwrite`` the
    completion is conditional (``If-None-Match: *``): an object another writer created during
    the job is kept, the upload aborted and ``FileExistsError`` raised. ``storage_options`` is the
    client's (never sent to a task); workers use their own credentials
    (:class:`StorageOptions`)."""
    secret = _parts._secret(True, key, passphrase, recipients, None)
    return _large(True, src, dst, secret, client, chunks_per_task, overwrite, backend, threads, format, context, salts, storage_options)


def decrypt_large(
    src: PathLike,
    dst: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    identities: Any = None,
    client: Client | None = None,
    chunks_per_task: int = DEFAULT_CHUNKS_PER_TASK,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    format: str = "parcrypt",
    context: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> LargeReport:
    """Decrypts one encrypted file into ``dst``, chunk ranges in parallel tasks; ``dst``
    (mode 0600) appears only when every chunk, the final one included, authenticated (else
    :class:`DaskJobError`, no output; a cut or extended file raises ``parcrypt.InvalidTag``
    while it is planned, before anything is created). To an object store as
    :func:`encrypt_large` (a plaintext object, published only when every part authenticated
    and uploaded)."""
    secret = _parts._secret(False, key, passphrase, None, identities)
    return _large(False, src, dst, secret, client, chunks_per_task, overwrite, backend, threads, format, context, None, storage_options)


def decrypt_range(
    src: PathLike,
    start: int,
    end: int,
    *,
    key: Any = None,
    passphrase: Any = None,
    identities: Any = None,
    client: Client | None = None,
    bytes_per_task: int = DEFAULT_CHUNKS_PER_TASK * _parts.CHUNK_BYTES,
    backend: str = "auto",
    threads: int | None = None,
    format: str = "parcrypt",
    context: Any = None,
    storage_options: dict[str, Any] | None = None,
) -> bytes:
    """Plaintext bytes ``start..end`` (clamped to the message) of the encrypted file ``src``,
    in pieces of ``bytes_per_task`` (rounded to whole chunks) decrypted by separate tasks and
    joined here: the result comes back through the client, so keep ranges to what fits in
    its memory. The file's length is authenticated when it is planned, and again by the
    piece that reaches the end: a cut file raises ``parcrypt.InvalidTag``. ``src`` may be a
    URL: each task then reads only the chunks under its piece (and the final chunk when its
    piece reaches the end)."""
    secret = _parts._secret(False, key, passphrase, None, identities)
    client = _client(client)
    if _remote.is_url(src) or storage_options is not None:
        ref = _store.describe(src, storage_options)
        plan = _store.plan_decrypt(ref, secret, format, context, storage_options)
        start, end = max(0, start), min(end, plan.plaintext_bytes)
        if start >= end:
            return b""
        step = max(1, bytes_per_task // _parts.CHUNK_BYTES) * _parts.CHUNK_BYTES
        cuts = [start, *range((start // step + 1) * step, end, step), end]
        pieces = [
            client.submit(
                _range_piece, plan, ref, low, high, backend, threads, pure=False,
                key=f"parcrypt-read-{uuid.uuid4().hex}",
            )
            for low, high in zip(cuts, cuts[1:])
        ]
        return b"".join(client.gather(pieces))
    plan = _parts.plan_decrypt(Path(src).resolve(), format=format, context=context, **secret)
    start, end = max(0, start), min(end, plan.plaintext_bytes)
    if start >= end:
        return b""
    step = max(1, bytes_per_task // _parts.CHUNK_BYTES) * _parts.CHUNK_BYTES
    cuts = [start, *range((start // step + 1) * step, end, step), end]
    futures = [
        client.submit(
            _parts.read, plan, low, high, str(Path(src).resolve()), backend=backend, threads=threads,
            pure=False,
        )
        for low, high in zip(cuts, cuts[1:])
    ]
    return b"".join(client.gather(futures))


def _range_piece(plan: _parts.PartPlan, ref: Any, low: int, high: int, backend: str, threads: int | None) -> bytes:
    return _store.read_plain(plan, ref, low, high, backend, threads, _store.worker_options())
