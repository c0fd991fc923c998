"""parcrypt: block-cipher encryption at the speed of the hardware, from Python.

AES, Blowfish and RC6 in ECB, CBC, CTR and GCM on every core (or a GPU), over any buffer
without copying it (bytes, bytearray, memoryview, mmap, numpy arrays, CPU DLPack arrays),
with the GIL released while the engine works; and authenticated, seekable files that the
``parcrypt`` command line reads and writes byte for byte.

>>> import parcrypt
>>> aead = parcrypt.Aead("aes-256-gcm", parcrypt.Aead.generate_key("aes-256-gcm"))
>>> sealed = aead.seal(b"attack at dawn", aad=b"header")  # nonce || ciphertext || tag
>>> aead.open(sealed, aad=b"header")
b'attack at dawn'

``Aead`` draws a fresh random nonce for every message. A protocol that manages its own
nonces keys a ``Cipher`` once and gives each message its own ``iv=``:

>>> import os
>>> cipher = parcrypt.Cipher("aes-128-gcm", os.urandom(16))  # keyed once
>>> iv = os.urandom(12)  # a fresh IV for every message
>>> sealed = cipher.encrypt(b"attack at dawn", iv=iv)
>>> cipher.decrypt(sealed, iv=iv)
b'attack at dawn'

All the work is done by the parcrypt Rust crates; this package is a thin layer over them.
"""

from __future__ import annotations

import io
import os
from typing import Any, NamedTuple

from ._parcrypt import (
    Aead,
    Cipher,
    DeviceArray,
    Error,
    InvalidTag,
    ParcryptWarning,
    backends,
    devices,
)
from . import _parcrypt
from . import _remote
from . import parts  # one file in many parts, for other processes (parcrypt.dask)

__all__ = [
    "Aead",
    "Cipher",
    "DeviceArray",
    "Error",
    "InvalidTag",
    "ParcryptWarning",
    "backends",
    "devices",
    "encrypt_file",
    "decrypt_file",
    "open",
    "EncryptedReader",
    "EncryptedWriter",
    "keygen",
    "recipient_of",
    "NewIdentity",
]

__version__ = "0.1.0"


class NewIdentity(NamedTuple):
    """A new identity from :func:`keygen` without a path: ``identity`` is the identity
    file's text in age-keygen's layout (``# created``, ``# public key``, the secret
    ``AGE-SECRET-KEY-...`` line), to store privately; ``recipient`` is its public key
    (``age1...``, ``age1pq1...``), to give to whoever encrypts. Its repr leaves the identity
    out. Python cannot wipe a ``str``: the text stays in memory until it is collected."""

    identity: str
    recipient: str

    def __repr__(self) -> str:
        return f"NewIdentity(identity=..., recipient={self.recipient!r})"


def keygen(path: str | os.PathLike[str] | None = None, *, pq: bool = False) -> Any:
    """Makes a new identity, as ``parcrypt keygen``: X25519 (``age1...``), or with ``pq``
    the post-quantum hybrid ML-KEM-768 + X25519 (``age1pq1...``).

    With ``path``, writes the identity file there (age-keygen's layout, created with mode
    0600; an existing file raises ``FileExistsError``, a key is never replaced) and returns
    its recipient (``str``). Without, returns a :class:`NewIdentity` ``(identity,
    recipient)`` holding the identity file's text. age and age-keygen 1.3 read the file,
    and parcrypt reads theirs."""
    if path is None:
        identity, recipient = _parcrypt.keygen_text(pq=pq)
        return NewIdentity(identity, recipient)
    return _parcrypt.keygen_file(os.fspath(path), pq=pq)


def recipient_of(identity: str | bytes | os.PathLike[str]) -> str:
    """The recipient (``age1...``, ``age1pq1...``) of one identity: its text
    (``AGE-SECRET-KEY-...``, or an identity file's text) or an identity file's path."""
    return _parcrypt.recipient_of(identity)


class _NativeFile(io.RawIOBase):
    """A file object over the native module's reader or writer, named as it was opened."""

    def __init__(self, native: Any, name: str) -> None:
        super().__init__()
        self._native = native
        self.name = name


class EncryptedReader(_NativeFile):
    """The plaintext of an encrypted file, with random access (``parcrypt.open(path, "rb")``).

    Every byte returned has been authenticated: a modified, truncated or extended file
    raises :class:`InvalidTag` at the first chunk that fails, and nothing of that chunk is
    returned. Threads may share one reader: their calls take turns.
    """

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._native.readinto(buffer)

    def read(self, size: int | None = -1) -> bytes:
        return self._native.read(-1 if size is None else size)

    def readall(self) -> bytes:
        return self._native.read(-1)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._native.seek(offset, whence)

    def tell(self) -> int:
        return self._native.tell()

    def size(self) -> int:
        """The plaintext's length in bytes (authenticates the final chunk first)."""
        return self._native.size()

    def close(self) -> None:
        if not self.closed:
            self._native.close()
        super().close()


class EncryptedWriter(_NativeFile):
    """A new encrypted file (``parcrypt.open(path, "wb")``).

    The file appears under its name only when :meth:`close` has sealed the last chunk and
    written everything to disk. Leaving a ``with`` block by an exception, :meth:`abort`, or
    a writer that is never closed (garbage-collected, or a killed process) leaves no file.
    Threads may share one writer: each ``write`` is written whole, in turn.
    """

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._native.write(data)

    def close(self) -> None:
        """Seals the last chunk and makes the file appear."""
        if not self.closed:
            try:
                self._native.close()
            finally:
                super().close()

    def abort(self) -> None:
        """Stops writing; no file is left."""
        if not self.closed:
            self._native.abort()
            super().close()

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if kind is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        # Never commit a file that nobody closed: it may be incomplete.
        try:
            self.abort()
        except Exception:
            pass


class _StagedReader(EncryptedReader):
    """An :class:`EncryptedReader` over a local copy of a remote object or file object,
    the copy removed when the reader is closed."""

    def __init__(self, native: Any, name: str, folder: Any) -> None:
        super().__init__(native, name)
        self._folder = folder

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._folder.__exit__(None, None, None)


class _RangeReader(EncryptedReader):
    """An :class:`EncryptedReader` over an object in a store: each read fetches only the
    chunks under it (once; kept in a sparse private local file, removed on ``close``), and
    every byte returned has authenticated (the final chunk, and so the length, when the
    reader is opened)."""

    def __init__(self, ref: Any, storage_options: dict[str, Any] | None, secret: dict[str, Any],
                 format: str, context: Any, backend: str, threads: int | None) -> None:
        from . import _store

        super().__init__(None, ref.url)
        self._store, self._options = _store, storage_options
        self._backend, self._threads = backend, threads
        self._ref = ref
        self._plan = _store.plan_decrypt(self._ref, secret, format, context, storage_options)
        self._folder = _remote.private_folder()
        self._local = os.path.join(self._folder.__enter__(), "sealed")
        try:
            _remote.sparse_file(self._local, self._ref.size)
        except BaseException:
            self._folder.__exit__(None, None, None)
            raise
        self._fetched: set[int] = set()
        self._position = 0

    def _fetch(self, first: int, end: int) -> None:
        missing = [chunk for chunk in range(first, end) if chunk not in self._fetched]
        while missing:
            run_end = 1
            while run_end < len(missing) and missing[run_end] == missing[0] + run_end:
                run_end += 1
            low, high = self._store.sealed_span(self._plan, missing[0], missing[0] + run_end, envelope=False)
            _remote.write_at(self._local, low, self._store.read_range(self._ref, low, high, self._options))
            self._fetched.update(missing[:run_end])
            missing = missing[run_end:]

    def read(self, size: int | None = -1) -> bytes:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        total = self._plan.plaintext_bytes
        start = min(self._position, total)
        end = total if size is None or size < 0 else min(total, start + size)
        if start >= end:
            return b""
        chunk = self._store.CHUNK
        last = self._plan.chunks if end >= total else -(-end // chunk)
        self._fetch(start // chunk, last)
        data = parts.read(self._plan, start, end, self._local, backend=self._backend, threads=self._threads)
        self._position = start + len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._position + offset
        elif whence == io.SEEK_END:
            target = self._plan.plaintext_bytes + offset
        else:
            raise ValueError(f"invalid whence ({whence})")
        if target < 0:
            raise ValueError("negative seek position")
        self._position = target
        return target

    def tell(self) -> int:
        return self._position

    def size(self) -> int:
        return self._plan.plaintext_bytes

    def close(self) -> None:
        folder = getattr(self, "_folder", None)
        if folder is not None and not self.closed:
            folder.__exit__(None, None, None)
        io.RawIOBase.close(self)


class _StagedWriter(EncryptedWriter):
    """An :class:`EncryptedWriter` into a local file that :meth:`close` hands, complete, to
    a remote object (one upload) or a file object; :meth:`abort` leaves nothing."""

    def __init__(self, native: Any, name: str, folder: Any, local: str, target: Any,
                 storage_options: dict[str, Any] | None, overwrite: bool) -> None:
        super().__init__(native, name)
        self._folder, self._local, self._target = folder, local, target
        self._storage_options, self._overwrite = storage_options, overwrite

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
            _remote.publish(self._local, self._target, self._storage_options, self._overwrite)
        finally:
            self._folder.__exit__(None, None, None)

    def abort(self) -> None:
        try:
            super().abort()
        finally:
            self._folder.__exit__(None, None, None)


def _check_storage_options(storage_options: Any, *targets: Any) -> None:
    if storage_options is not None and not any(_remote.is_url(target) for target in targets):
        raise ValueError("storage_options is for fsspec URLs (s3://...), and no URL was given")


def _file(native: Any, src: Any, dst: Any, storage_options: dict[str, Any] | None,
          options: dict[str, Any]) -> int:
    _check_storage_options(storage_options, src, dst)
    if _remote.is_local(src) and _remote.is_local(dst):
        return int(native(_remote.local_path(src), _remote.local_path(dst), **options))
    overwrite = bool(options.pop("overwrite", False))
    _remote.refuse_existing(dst, storage_options, overwrite)
    with _remote.private_folder() as folder:
        if _remote.is_local(src):
            local_src = _remote.local_path(src)
        else:
            local_src = os.path.join(folder, "input")
            _remote.fetch(src, local_src, storage_options)
        if _remote.is_local(dst):
            return int(native(local_src, _remote.local_path(dst), overwrite=overwrite, **options))
        local_dst = os.path.join(folder, "output")
        done = int(native(local_src, local_dst, **options))
        _remote.publish(local_dst, dst, storage_options, overwrite)
        return done


def encrypt_file(src: Any, dst: Any, *, storage_options: dict[str, Any] | None = None,
                 **options: Any) -> int:
    """Encrypts ``src`` into ``dst`` as ``parcrypt encrypt``; returns the plaintext bytes.

    The secret is exactly one of ``key``, ``passphrase`` and ``recipients`` (public keys:
    ``age1...``/``age1pq1...`` strings or recipients files, ``os.PathLike``).
    ``format="age"`` writes an age v1 file to ``recipients`` or a ``passphrase`` (scrypt),
    ASCII-armored with ``armor=True``.

    Each of ``src`` and ``dst`` is a local path, an fsspec URL (``s3://bucket/key``, opened
    with ``storage_options``) or a binary file object (readable for ``src``, writable for
    ``dst``). Remote and file-object sides are staged through a private local temporary
    folder; ``dst`` receives the encrypted file only once it is complete (a URL by one
    upload), and nothing on failure."""
    return _file(_parcrypt.encrypt_file, src, dst, storage_options, options)


def decrypt_file(src: Any, dst: Any, *, storage_options: dict[str, Any] | None = None,
                 **options: Any) -> int:
    """Decrypts ``src`` into ``dst`` as ``parcrypt decrypt``; returns the plaintext bytes.
    The secret is exactly one of ``key``, ``passphrase`` and ``identities``
    (``AGE-SECRET-KEY-...`` text, identity files' text, or identity files as
    ``os.PathLike``; one that other users can read warns with :class:`ParcryptWarning`).
    An age file is recognised by its first line, as ``parcrypt decrypt`` does, and opened
    with ``identities`` (or the passphrase of a passphrase file). A wrong identity raises
    :class:`InvalidTag` before ``dst`` is created. ``src`` and ``dst`` as for
    :func:`encrypt_file`; ``dst`` receives plaintext only once
    every chunk authenticated (the plaintext is staged in a private local temporary folder,
    removed afterwards, when ``dst`` is not a local path)."""
    return _file(_parcrypt.decrypt_file, src, dst, storage_options, options)


def open(
    path: Any,
    mode: str = "rb",
    *,
    key: bytes | None = None,
    passphrase: str | bytes | None = None,
    recipients: Any = None,
    identities: Any = None,
    backend: str = "auto",
    threads: int | None = None,
    overwrite: bool = False,
    format: str = "parcrypt",
    context: bytes | None = None,
    armor: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> EncryptedReader | EncryptedWriter:
    """Opens an encrypted file: ``"rb"`` reads its plaintext (seekable), ``"wb"`` writes a
    new one.

    Give ``key`` (16 or 32 bytes, bytes-like: a ``str`` raises ``TypeError``, hex digits
    become a key with ``bytes.fromhex(...)``), ``passphrase``, or public keys: for
    ``"wb"`` ``recipients`` (``age1...``/``age1pq1...`` strings or recipients files), for
    ``"rb"`` ``identities`` (``AGE-SECRET-KEY-...`` text or identity files). The files are
    those of ``parcrypt encrypt`` / ``parcrypt decrypt``. Writing under a weak passphrase
    (shorter than 8 bytes) warns with :class:`ParcryptWarning`, as ``parcrypt encrypt``
    does.

    ``format="age"`` with ``"wb"`` writes an age v1 file (to ``recipients`` or a
    ``passphrase``; ``armor=True`` for ASCII armor). ``"rb"`` recognises an age file by its
    first line and reads it at random through its identities (or the passphrase of a
    passphrase file); an armored one cannot be read at random (use :func:`decrypt_file`).

    ``threads`` (or ``backend="seq"``: one thread) bounds the threads an age file is sealed
    or opened on, as in :func:`encrypt_file`; every core by default.

    ``path`` may also be an fsspec URL (with ``storage_options``) or a binary file object
    (readable for ``"rb"``, writable for ``"wb"``). Reading a parcrypt file at a URL fetches
    only the chunks under each read (ranged reads naming the object's ETag on S3), kept in a
    sparse private local file until ``close``; reading an age file at a URL, or any file
    object, copies it whole (the version first described) into a private local file first,
    removed on ``close``. Writing writes a private local file and hands it whole to the URL
    (one upload; without ``overwrite``, conditional on S3: an object created meanwhile by
    another writer raises ``FileExistsError`` and is kept) or file object on ``close``, so an
    aborted writer publishes nothing.
    """
    if mode not in ("rb", "r", "wb", "w"):
        raise ValueError(f"mode must be 'rb' or 'wb', not {mode!r}")
    _check_storage_options(storage_options, path)
    reading = mode in ("rb", "r")
    ref = None
    if reading and _remote.is_url(path):
        from . import _store

        ref = _store.describe(str(path), storage_options)
        # As much as the library reads to tell an age file (its leading whitespace included).
        start = _store.read_range(ref, 0, min(ref.size, 2048), storage_options)
        if format != "age" and not (format == "parcrypt" and _parcrypt.is_age(start)):
            secret = parts._secret(False, key, passphrase, recipients, identities)
            return _RangeReader(ref, storage_options, secret, format, context, backend, threads)
        # An age file is read through the library's age reader, from a private local copy
        # of the version just described (each piece read naming it: If-Match on S3).
    if _remote.is_local(path):
        local, name, folder = _remote.local_path(path), os.fspath(path), None
    else:
        name = _remote.name_of(path)
        if not reading:
            _remote.refuse_existing(path, storage_options, overwrite)
        folder = _remote.private_folder()
        local = os.path.join(folder.__enter__(), "staged")
    try:
        if reading:
            if ref is not None:
                from . import _store

                _store.fetch(ref, local, storage_options)
            elif folder is not None:
                _remote.fetch(path, local, storage_options)
            if armor:
                raise ValueError("armor is for writing age files: an armored one is recognised when read")
            native = _parcrypt.open_reader(
                local, key=key, passphrase=passphrase, recipients=recipients,
                identities=identities, backend=backend, threads=threads, format=format,
                context=context,
            )
            if folder is None:
                return EncryptedReader(native, name)
            return _StagedReader(native, name, folder)
        native = _parcrypt.open_writer(
            local, key=key, passphrase=passphrase, recipients=recipients,
            identities=identities, backend=backend, threads=threads,
            overwrite=overwrite if folder is None else False, format=format, context=context,
            armor=armor,
        )
        if folder is None:
            return EncryptedWriter(native, name)
        return _StagedWriter(native, name, folder, local, path, storage_options, overwrite)
    except BaseException:
        if folder is not None:
            folder.__exit__(None, None, None)
        raise
