"""Paths, fsspec URLs and binary file objects for parcrypt's file functions (private).

The native module reads and writes local files only, through its own pipelines (outputs
published only when complete). Anything else is *staged*: a remote input or a file object is
copied into a private local temporary folder (mode 0700, files 0600) and handed to the
native code; a remote output or file object receives the local result only once it is
complete and authenticated, and the temporary folder is removed whatever happens. A remote
object is published by one upload of the complete file (an S3 PUT or multipart upload makes
the object visible only when it completes), so a reader sees the whole object or nothing.

Chunk ranges of one huge object (``parcrypt.dask`` to an object store) are staged in
*sparse* local files: a file of the message's full size with only the range's bytes written,
so the native part functions (``parcrypt.parts``) run unchanged and a task holds on its disk
only the bytes of its range.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

PathLike = str | os.PathLike[str]
#: What parcrypt's file functions accept: a local path, an fsspec URL (``s3://...``) or a
#: binary file object.
Target = str | os.PathLike[str] | BinaryIO

COPY_BYTES = 8 * 1024 * 1024


def is_fileobj(value: object) -> bool:
    return not isinstance(value, (str, bytes, os.PathLike)) and (
        hasattr(value, "read") or hasattr(value, "write")
    )


def is_url(value: object) -> bool:
    """An fsspec URL other than a local ``file://`` one (``s3://bucket/key``, ``gs://...``)."""
    if not isinstance(value, str) or "://" not in value:
        return False
    return value.split("://", 1)[0].lower() not in ("file", "local")


def local_path(value: PathLike) -> str:
    text = os.fspath(value)
    if isinstance(text, str) and text.lower().startswith("file://"):
        return text[len("file://"):]
    return text


def is_local(value: object) -> bool:
    return not is_fileobj(value) and not is_url(value)


def filesystem(url: str, storage_options: dict[str, Any] | None) -> tuple[Any, str]:
    """The fsspec file system of ``url`` and the path within it."""
    try:
        import fsspec
    except ImportError as missing:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{url.split('://')[0]}:// URLs need fsspec and the store's package "
            "(pip install 'parcrypt[s3]' for s3://)"
        ) from missing
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    return fs, path


@contextmanager
def private_folder() -> Iterator[str]:
    """A new local folder (mode 0700), removed with everything in it afterwards."""
    folder = tempfile.mkdtemp(prefix="parcrypt-stage-")
    os.chmod(folder, stat.S_IRWXU)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _create(path: str) -> int:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.fchmod(descriptor, 0o600)
    return descriptor


def fetch(source: Target, local: str, storage_options: dict[str, Any] | None) -> None:
    """Copies the remote object or readable file object ``source`` into the new local file
    ``local`` (mode 0600)."""
    descriptor = _create(local)
    with os.fdopen(descriptor, "wb") as output:
        if is_fileobj(source):
            shutil.copyfileobj(source, output, COPY_BYTES)  # type: ignore[arg-type]
        else:
            fs, path = filesystem(str(source), storage_options)
            with fs.open(path, "rb") as remote:
                shutil.copyfileobj(remote, output, COPY_BYTES)
        output.flush()


def refuse_existing(target: Target, storage_options: dict[str, Any] | None, overwrite: bool) -> None:
    """``FileExistsError`` for a remote ``target`` that exists, unless ``overwrite``."""
    if overwrite or not is_url(target):
        return
    fs, path = filesystem(str(target), storage_options)
    if fs.exists(path):
        raise FileExistsError(f"{target} exists (pass overwrite=True to replace it)")


def publish(local: str, target: Target, storage_options: dict[str, Any] | None, overwrite: bool) -> None:
    """Hands the complete local file ``local`` to ``target``: one upload to a URL (the
    object appears when it completes), or its bytes written to a writable file object.
    Without ``overwrite`` an existing object raises ``FileExistsError``; on S3 the upload is
    conditional (``If-None-Match: *``), so one created meanwhile by another writer is
    refused by the store and kept (other stores: checked just before the upload)."""
    if is_fileobj(target):
        with open(local, "rb") as data:
            shutil.copyfileobj(data, target, COPY_BYTES)  # type: ignore[arg-type]
        flush = getattr(target, "flush", None)
        if flush is not None:
            flush()
        return
    fs, path = filesystem(str(target), storage_options)
    if not overwrite:
        from . import _store

        if _store.is_s3(fs):
            # Created only where no object is, by the store itself (If-None-Match): no
            # check-then-write race with another writer.
            _store.put_new(local, str(target), storage_options)
            return
    refuse_existing(target, storage_options, overwrite)
    fs.put_file(local, path)


def name_of(target: Target) -> str:
    if is_fileobj(target):
        return str(getattr(target, "name", "<file object>"))
    return os.fspath(target)  # type: ignore[arg-type]


# ---- sparse staging of chunk ranges -------------------------------------------------------


def sparse_file(path: str, size: int) -> None:
    """Creates ``path`` (new, mode 0600) of ``size`` bytes, none of them written."""
    descriptor = _create(path)
    try:
        os.ftruncate(descriptor, size)
    finally:
        os.close(descriptor)


def write_at(path: str, offset: int, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY)
    try:
        view = memoryview(data)
        while view:
            done = os.pwrite(descriptor, view, offset)
            view, offset = view[done:], offset + done
    finally:
        os.close(descriptor)


def read_at(path: str, offset: int, length: int) -> bytes:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        pieces = []
        while length > 0:
            piece = os.pread(descriptor, min(length, 1 << 30), offset)
            if not piece:
                raise OSError(f"{path}: {length} bytes short at {offset}")
            pieces.append(piece)
            offset, length = offset + len(piece), length - len(piece)
        return b"".join(pieces)
    finally:
        os.close(descriptor)


def identity(path: str) -> tuple[int, int, int, int, int, int]:
    """``parcrypt.parts.SourceIdentity`` of a local staging file (machine 0: the device is
    compared only on a machine without a boot id, where it is this one's)."""
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, 0)
