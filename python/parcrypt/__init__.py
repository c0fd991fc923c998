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
from typing import Any

from ._parcrypt import (
    Aead,
    Cipher,
    DeviceArray,
    Error,
    InvalidTag,
    ParcryptWarning,
    backends,
    decrypt_file,
    devices,
    encrypt_file,
)
from . import _parcrypt
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
]

__version__ = "0.1.0"


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


def open(
    path: str | os.PathLike[str],
    mode: str = "rb",
    *,
    key: bytes | None = None,
    passphrase: str | bytes | None = None,
    backend: str = "auto",
    threads: int | None = None,
    overwrite: bool = False,
    format: str = "parcrypt",
    context: bytes | None = None,
) -> EncryptedReader | EncryptedWriter:
    """Opens an encrypted file: ``"rb"`` reads its plaintext (seekable), ``"wb"`` writes a
    new one.

    Give ``key`` (16 or 32 bytes, bytes-like: a ``str`` raises ``TypeError``, hex digits
    become a key with ``bytes.fromhex(...)``) or ``passphrase``. The files are those of
    ``parcrypt encrypt`` / ``parcrypt decrypt``. Writing under a weak passphrase (shorter
    than 8 bytes) warns with :class:`ParcryptWarning`, as ``parcrypt encrypt`` does.
    """
    name = os.fspath(path)
    if mode in ("rb", "r"):
        native = _parcrypt.open_reader(
            path, key=key, passphrase=passphrase, backend=backend, threads=threads,
            format=format, context=context,
        )
        return EncryptedReader(native, name)
    if mode in ("wb", "w"):
        native = _parcrypt.open_writer(
            path, key=key, passphrase=passphrase, backend=backend, threads=threads,
            overwrite=overwrite, format=format, context=context,
        )
        return EncryptedWriter(native, name)
    raise ValueError(f"mode must be 'rb' or 'wb', not {mode!r}")
