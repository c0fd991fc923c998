"""Objects in fsspec stores (S3 and the like) for ``parcrypt.dask`` (private).

The client plans an object without holding it: a *sparse* local file of the object's size
(plaintext: nothing written; encrypted: its first 64 KiB and last two chunks, for the
envelope and the final chunk) is enough for ``parcrypt.parts`` to make the plan, which then
authenticates the encrypted object's length as it does a local file's. A worker stages the
bytes of its chunk range in sparse local files (mode 0600, in a private folder removed
afterwards) and runs the native part functions on them unchanged, so the bytes are exactly
``parcrypt encrypt``'s.

What crosses to a worker is an :class:`ObjectRef` (URL, size, version tag), a plan (part
keys, see :mod:`parcrypt.parts`) and integers. Workers open the store with their own
credentials: the options registered on them (:class:`parcrypt.dask.StorageOptions`) or the
environment; never the client's ``storage_options``.

Every read of a planned object names its version: on S3 the ``ETag`` as ``If-Match``, so an
object replaced during the job fails the read instead of mixing two versions' bytes; on
other stores the version marker (``ETag``, ``mtime``) and size are compared before and after.

Every write that must not replace an object (``overwrite=False``) is conditional on S3: the
single ``PutObject`` or the ``CompleteMultipartUpload`` that publishes it carries
``If-None-Match: *`` (S3's conditional writes, August 2024), so an object another writer
created after the job's own existence check is refused by the store itself (HTTP 412): the
upload is aborted, nothing is published, and ``FileExistsError`` names the URL. A store that
ignores the header (an older S3-compatible server) still gets the check made just before the
publish; the window between the two is then the store's.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any

from . import _parcrypt  # type: ignore[attr-defined]  # the native module has no stub
from . import _remote
from . import parts as _parts

CHUNK = _parts.CHUNK_BYTES
SEALED_CHUNK = CHUNK + 16
#: Bytes of an encrypted object's start that its plan reads first (the envelope is far
#: shorter, but for a header with many recipients, which is read on to its end).
HEAD_BYTES = 64 * 1024
#: S3's multipart limits.
MIN_PART_BYTES = 5 * 1024 * 1024
MAX_PART_BYTES = 5 * 1024 * 1024 * 1024
MAX_PARTS = 10_000


@dataclass(frozen=True)
class ObjectRef:
    """One version of one object: what a task is told to read."""

    url: str
    size: int
    version: str | None


def _version(info: dict[str, Any]) -> str | None:
    for name in ("ETag", "etag", "VersionId", "mtime", "LastModified", "last_modified", "created"):
        value = info.get(name)
        if value is not None:
            return str(value)
    return None


def is_s3(fs: Any) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "s3" in protocols and hasattr(fs, "split_path")


def worker_options() -> dict[str, Any]:
    """The storage options registered on this worker (none outside a worker)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return {}
    return dict(getattr(worker, "_parcrypt_storage_options", None) or {})


def url_of(target: _remote.PathLike) -> str:
    """A URL for fsspec: URLs as they are, local paths made absolute."""
    if _remote.is_url(target):
        return str(target)
    return os.path.abspath(_remote.local_path(target))


def describe(target: _remote.PathLike, storage_options: dict[str, Any] | None) -> ObjectRef:
    url = url_of(target)
    fs, path = _remote.filesystem(url, storage_options)
    info = fs.info(path)
    if info.get("type") not in (None, "file"):
        raise IsADirectoryError(f"{url} is not an object or file")
    return ObjectRef(url, int(info["size"]), _version(info))


async def _s3_get(fs: Any, bucket: str, key: str, start: int, end: int, etag: str) -> bytes:
    response = await fs._call_s3(
        "get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", IfMatch=etag
    )
    body = response["Body"]
    try:
        return bytes(await body.read())
    finally:
        body.close()


def read_range(ref: ObjectRef, start: int, end: int, storage_options: dict[str, Any] | None) -> bytes:
    """Bytes ``start..end`` of ``ref``'s version of the object (``OSError`` when it is no
    longer that version or is shorter)."""
    if end <= start:
        return b""
    fs, path = _remote.filesystem(ref.url, storage_options)
    if is_s3(fs) and ref.version:
        from fsspec.asyn import sync

        bucket, key, _ = fs.split_path(path)
        try:
            data = sync(fs.loop, _s3_get, fs, bucket, key, start, end, ref.version)
        except Exception as error:
            if "PreconditionFailed" in repr(error) or "412" in str(error):
                raise OSError(
                    f"{ref.url} changed since it was planned (its ETag is no longer "
                    f"{ref.version}): it must not change during a job"
                ) from error
            raise
    else:
        before = _version(fs.info(path))
        data = fs.cat_file(path, start=start, end=end)
        if before != ref.version or _version(fs.info(path)) != ref.version:
            raise OSError(f"{ref.url} changed since it was planned: it must not change during a job")
    if len(data) != end - start:
        raise OSError(
            f"{ref.url}: {end - start} bytes wanted at {start}, {len(data)} read "
            "(the object is shorter than planned)"
        )
    return bytes(data)


def fetch(ref: ObjectRef, local: str, storage_options: dict[str, Any] | None) -> None:
    """The whole of ``ref``'s version into the new local file ``local`` (mode 0600), in
    pieces of 64 MiB."""
    _remote.sparse_file(local, 0)
    step = 64 * 1024 * 1024
    for start in range(0, ref.size, step):
        _remote.write_at(local, start, read_range(ref, start, min(ref.size, start + step), storage_options))


# ---- plans made without the object --------------------------------------------------------


def plan_encrypt(ref: ObjectRef, secret: dict[str, Any], format: str, context: Any,
                 salts: tuple[bytes, bytes] | None) -> _parts.PartPlan:
    """The plan of ``ref``'s encryption, made from a sparse file of its size (no byte of it
    read); its ``source`` is left empty: each task stages its range and names that file."""
    with _remote.private_folder() as folder:
        local = os.path.join(folder, "plan")
        _remote.sparse_file(local, ref.size)
        plan = _parts.plan_encrypt(local, format=format, context=context, salts=salts, **secret)
    return dataclasses.replace(plan, source=None)


def plan_decrypt(ref: ObjectRef, secret: dict[str, Any], format: str, context: Any,
                 storage_options: dict[str, Any] | None) -> _parts.PartPlan:
    """The plan of ``ref``'s decryption from its start and its last two chunks: the key
    commitment is checked and the length (final chunk) authenticated, as for a file."""
    with _remote.private_folder() as folder:
        local = os.path.join(folder, "plan")
        _remote.sparse_file(local, ref.size)
        head = min(ref.size, HEAD_BYTES)
        start = read_range(ref, 0, head, storage_options)
        _remote.write_at(local, 0, start)
        # A header with many recipients (up to 4 MiB) reaches past the first read.
        reach = min(ref.size, _parcrypt.parts_envelope_reach(start, format))
        if reach > head:
            _remote.write_at(local, head, read_range(ref, head, reach, storage_options))
            head = reach
        tail = max(head, ref.size - 2 * SEALED_CHUNK)
        _remote.write_at(local, tail, read_range(ref, tail, ref.size, storage_options))
        return _parts.plan_decrypt(local, format=format, context=context, **secret)


# ---- the spans of a chunk range -----------------------------------------------------------


def sealed_offset(plan: _parts.PartPlan, chunk: int) -> int:
    return plan.envelope_bytes + chunk * SEALED_CHUNK


def sealed_span(plan: _parts.PartPlan, first: int, end: int, envelope: bool) -> tuple[int, int]:
    """Where chunks ``first..end`` lie in the encrypted file (from 0 when ``envelope`` and
    ``first`` is 0)."""
    start = 0 if envelope and first == 0 else sealed_offset(plan, first)
    stop = plan.sealed_bytes if end >= plan.chunks else sealed_offset(plan, end)
    return start, stop


def plain_span(plan: _parts.PartPlan, first: int, end: int) -> tuple[int, int]:
    return first * CHUNK, min(end * CHUNK, plan.plaintext_bytes)


# ---- worker side: one chunk range ---------------------------------------------------------


def seal_range(plan: _parts.PartPlan, ref: ObjectRef, first: int, end: int, backend: str,
               threads: int | None, storage_options: dict[str, Any] | None) -> bytes:
    """The encrypted bytes of chunks ``first..end`` (the envelope first for chunk 0)."""
    low, high = plain_span(plan, first, end)
    data = read_range(ref, low, high, storage_options)
    with _remote.private_folder() as folder:
        src, dst = os.path.join(folder, "plain"), os.path.join(folder, "sealed")
        _remote.sparse_file(src, plan.plaintext_bytes)
        _remote.write_at(src, low, data)
        del data
        _parts.prepare_sealed(dst, plan)
        staged = dataclasses.replace(plan, source=_remote.identity(src))
        _parts.seal(staged, first, end, src, dst, backend=backend, threads=threads)
        start, stop = sealed_span(plan, first, end, envelope=True)
        return _remote.read_at(dst, start, stop - start)


def _stage_sealed(plan: _parts.PartPlan, ref: ObjectRef, first: int, end: int, local: str,
                  storage_options: dict[str, Any] | None) -> None:
    """A sparse copy of the encrypted object with chunks ``first..end`` in place."""
    if ref.size != plan.sealed_bytes:
        raise OSError(f"{ref.url} is {ref.size} bytes, not the {plan.sealed_bytes} planned")
    _remote.sparse_file(local, ref.size)
    start, stop = sealed_span(plan, first, end, envelope=False)
    _remote.write_at(local, start, read_range(ref, start, stop, storage_options))


def open_range(plan: _parts.PartPlan, ref: ObjectRef, first: int, end: int, backend: str,
               threads: int | None, storage_options: dict[str, Any] | None) -> bytes:
    """The plaintext of chunks ``first..end``, each chunk authenticated (and the final one
    when the range holds it)."""
    with _remote.private_folder() as folder:
        src, dst = os.path.join(folder, "sealed"), os.path.join(folder, "plain")
        _stage_sealed(plan, ref, first, end, src, storage_options)
        _parts.prepare_plain(dst, plan)
        _parts.open_part(plan, first, end, src, dst, backend=backend, threads=threads)
        low, high = plain_span(plan, first, end)
        return _remote.read_at(dst, low, high - low)


def read_plain(plan: _parts.PartPlan, ref: ObjectRef, start: int, end: int, backend: str,
               threads: int | None, storage_options: dict[str, Any] | None) -> bytes:
    """Plaintext bytes ``start..end``, reading only the chunks under them (and the final
    chunk when ``end`` is the message's end)."""
    first = start // CHUNK
    last = plan.chunks if end >= plan.plaintext_bytes else -(-end // CHUNK)
    with _remote.private_folder() as folder:
        src = os.path.join(folder, "sealed")
        _stage_sealed(plan, ref, first, last, src, storage_options)
        return _parts.read(plan, start, end, src, backend=backend, threads=threads)


# ---- S3 multipart uploads -----------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """A multipart upload in progress (no credential: a task uses its worker's own)."""

    url: str
    bucket: str
    key: str
    upload_id: str


def s3(url: str, storage_options: dict[str, Any] | None) -> tuple[Any, str, str]:
    fs, path = _remote.filesystem(url, storage_options)
    if not is_s3(fs):
        raise ValueError(
            f"{url}: one object in parts needs an S3-compatible store (s3://...); "
            "other stores take whole objects (encrypt_files/decrypt_files)"
        )
    bucket, key, _ = fs.split_path(path)
    if not bucket or not key:
        raise ValueError(f"{url} names no object (s3://bucket/key)")
    return fs, bucket, key


def start_upload(url: str, storage_options: dict[str, Any] | None) -> Upload:
    fs, bucket, key = s3(url, storage_options)
    response = fs.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
    return Upload(url, bucket, key, str(response["UploadId"]))


def upload_part(upload: Upload, number: int, data: bytes, storage_options: dict[str, Any] | None) -> str:
    fs, _, _ = s3(upload.url, storage_options)
    response = fs.call_s3(
        "upload_part", Bucket=upload.bucket, Key=upload.key, UploadId=upload.upload_id,
        PartNumber=number, Body=data,
    )
    return str(response["ETag"])


@functools.lru_cache(maxsize=None)
def sends_if_none_match(operation: str) -> bool:
    """Whether the installed botocore sends ``IfNoneMatch`` with ``operation`` (``PutObject``,
    ``CompleteMultipartUpload``): from 1.35 (August 2024) on. s3fs drops every parameter the
    operation's model lacks without a word, so an older botocore would make the condition
    silently vanish."""
    try:
        import botocore.session

        model = botocore.session.get_session().get_service_model("s3")
        return "IfNoneMatch" in model.operation_model(operation).input_shape.members
    except Exception:  # pragma: no cover - no botocore, or a model without the operation
        return False


def _if_none_match(operation: str, url: str) -> dict[str, str]:
    """The parameters that make ``operation`` create ``url`` only where nothing is."""
    if sends_if_none_match(operation):
        return {"IfNoneMatch": "*"}
    warnings.warn(
        f"{url}: this botocore cannot make the upload conditional (If-None-Match needs "
        "botocore 1.35 or later): the object's absence is checked just before it is "
        "published, not by the store",
        _parcrypt.ParcryptWarning,
        stacklevel=4,
    )
    return {}


def _refused_as_existing(error: BaseException) -> bool:
    """Whether the store refused a conditional write because the object exists (412
    ``PreconditionFailed``), or because another conditional write to it was under way (409
    ``ConditionalRequestConflict``). s3fs turns botocore's error into an ``OSError`` (a
    ``FileExistsError`` when it recognises the condition) whose cause is botocore's."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, FileExistsError):
            return True
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status == 412:
                return True
        seen = seen.__cause__ or seen.__context__
    return False


def _exists_error(url: str, error: BaseException) -> FileExistsError:
    return FileExistsError(
        f"{url} was created by another writer while this one ran (the store refused to "
        "replace it: If-None-Match); nothing was published (pass overwrite=True to replace it)"
    )


def complete_upload(upload: Upload, etags: list[tuple[int, str]], storage_options: dict[str, Any] | None,
                    overwrite: bool = True) -> None:
    """Publishes the upload; without ``overwrite`` only where no object is (``If-None-Match:
    *``): ``FileExistsError`` when one is, the upload left for the caller to abort."""
    fs, _, _ = s3(upload.url, storage_options)
    condition = {} if overwrite else _if_none_match("CompleteMultipartUpload", upload.url)
    try:
        fs.call_s3(
            "complete_multipart_upload", Bucket=upload.bucket, Key=upload.key,
            UploadId=upload.upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in sorted(etags)]},
            **condition,
        )
    except Exception as error:
        if condition and _refused_as_existing(error):
            raise _exists_error(upload.url, error) from error
        raise
    finally:
        fs.invalidate_cache(f"{upload.bucket}/{upload.key}")


def abort_upload(upload: Upload, storage_options: dict[str, Any] | None) -> None:
    fs, _, _ = s3(upload.url, storage_options)
    fs.call_s3("abort_multipart_upload", Bucket=upload.bucket, Key=upload.key, UploadId=upload.upload_id)


#: Up to this size a new object is one ``PutObject``; beyond, a multipart upload of parts
#: of this size (more when 10,000 would not hold the file).
SINGLE_PUT_BYTES = 64 * 1024 * 1024


def check_absent(fs: Any, bucket: str, key: str, url: str) -> None:
    """``FileExistsError`` when the object exists now: the early answer, and the only one on a
    store that ignores ``If-None-Match``."""
    if fs.exists(f"{bucket}/{key}"):
        raise FileExistsError(f"{url} exists (pass overwrite=True to replace it)")


def put_new(local: str, url: str, storage_options: dict[str, Any] | None) -> None:
    """Uploads the complete local file ``local`` as the new object ``url``, created only where
    no object is (``If-None-Match: *`` on the ``PutObject``, or on the multipart upload's
    completion, which is aborted on any failure): ``FileExistsError`` naming ``url`` when
    the store holds one, nothing published."""
    fs, bucket, key = s3(url, storage_options)
    check_absent(fs, bucket, key, url)
    size = os.path.getsize(local)
    if size <= SINGLE_PUT_BYTES:
        condition = _if_none_match("PutObject", url)
        with open(local, "rb") as source:
            data = source.read()
        try:
            fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **condition)
        except Exception as error:
            if condition and _refused_as_existing(error):
                raise _exists_error(url, error) from error
            raise
        finally:
            fs.invalidate_cache(f"{bucket}/{key}")
        return
    step = max(SINGLE_PUT_BYTES, -(-size // MAX_PARTS))
    upload = start_upload(url, storage_options)
    try:
        etags = []
        for number, start in enumerate(range(0, size, step), start=1):
            data = _remote.read_at(local, start, min(step, size - start))
            etags.append((number, upload_part(upload, number, data, storage_options)))
            del data
        complete_upload(upload, etags, storage_options, overwrite=False)
    except BaseException:
        try:
            abort_upload(upload, storage_options)
        except Exception:
            pass  # the upload stays unpublished; the store's lifecycle rules remove it
        raise


def part_ranges(plan: _parts.PartPlan, chunks_per_part: int) -> list[tuple[int, int]]:
    """Chunk ranges for one part each: at least 320 chunks (5 MiB) but for the last, at most
    5 GiB each and 10,000 ranges, and no empty plaintext range after another (S3 refuses parts under 5 MiB
    but the last one)."""
    largest = MAX_PART_BYTES // SEALED_CHUNK - 1
    if -(-plan.chunks // largest) > MAX_PARTS:
        raise ValueError(
            f"{plan.sealed_bytes} bytes are more than one multipart upload holds "
            "(10,000 parts of at most 5 GiB)"
        )
    chunks_per_part = min(chunks_per_part, largest)
    chunks_per_part = max(chunks_per_part, -(-MIN_PART_BYTES // CHUNK), -(-plan.chunks // MAX_PARTS))
    ranges = plan.ranges(chunks_per_part)
    if len(ranges) > 1 and ranges[-1][0] * CHUNK >= plan.plaintext_bytes:
        # The empty final chunk alone: it joins the range before it.
        ranges = [*ranges[:-2], (ranges[-2][0], ranges[-1][1])]
    return ranges
