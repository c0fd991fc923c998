"""Type stubs for parcrypt."""

import io
import os
from typing import Any, Literal, NamedTuple, Protocol, TypedDict, Unpack, overload

from collections.abc import Buffer

from . import parts as parts

__version__: str

class Error(Exception):
    """Any failure that is not a bad argument or a file system error."""

class InvalidTag(Error):
    """Authentication failed; no plaintext is returned."""

class ParcryptWarning(UserWarning):
    """A weakness that does not stop the work (a passphrase shorter than 8 bytes, key
    derivation costs below OWASP's minimums), as ``parcrypt encrypt`` prints it."""

class _Backend(TypedDict):
    name: str
    available: bool
    detail: str

class _Device(TypedDict):
    backend: str
    index: int
    description: str

def backends() -> list[_Backend]:
    """The backends and whether each can run here (as ``parcrypt devices``)."""

def devices() -> list[_Device]:
    """The CPU and every GPU device found."""

class Aead:
    """AES-GCM (``"aes-128-gcm"``, ``"aes-192-gcm"``, ``"aes-256-gcm"``) under one key,
    every message sealed under a fresh random 96-bit nonce from the operating system: the
    call to reach for first. ``seal`` returns ``nonce (12) || ciphertext || tag (16)``,
    which any AES-GCM library opens given the first 12 bytes as the nonce (pyca's
    ``AESGCM(key).decrypt(sealed[:12], sealed[12:], aad)``); ``open`` takes it back and
    raises :class:`InvalidTag` for a changed byte, another AAD or a message shorter than
    28 bytes. One object seals at most 2^32 messages (NIST SP 800-38D's limit for random
    nonces; then :class:`Error`). Threads may share it; the GIL is released for large
    messages. Other suites raise ``ValueError``."""

    def __init__(
        self,
        name: str,
        key: Buffer,
        *,
        backend: str = "auto",
        threads: int | None = None,
    ) -> None: ...
    @staticmethod
    def generate_key(name: str) -> bytes:
        """A new random key for the AES-GCM suite ``name``."""
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def seal(self, data: Buffer, aad: Buffer | None = None) -> bytes: ...
    def open(self, data: Buffer, aad: Buffer | None = None) -> bytes: ...

class _OneMessage(Protocol):
    """:meth:`Cipher.encrypt` and :meth:`Cipher.decrypt`: one whole message, under ``iv``
    when given (else the cipher's own). The result (``bytes``, a numpy array or a
    :class:`DeviceArray`), or with ``out=`` the count of bytes written there."""

    @overload
    def __call__(
        self, data: Any, aad: Buffer | None = None, *, iv: Buffer | str | None = None, out: None = None
    ) -> Any: ...
    @overload
    def __call__(
        self, data: Any, aad: Buffer | None = None, *, iv: Buffer | str | None = None, out: Buffer
    ) -> int: ...

class Cipher:
    """A suite such as ``"aes-128-gcm"`` and a key on an engine, keyed once (the key
    schedule and GCM's powers of H), with an IV given here, with each message (``iv=``), or
    both (the message's wins). The IV given here encrypts one message: a second
    ``encrypt`` without ``iv=`` raises :class:`Error` (decryption may reuse it). For many
    messages use :class:`Aead`, or give each message its own ``iv=``. GCM IVs shorter than
    12 bytes raise ``ValueError`` unless ``allow_short_gcm_iv=True`` (for data made with
    them).

    ``encrypt``/``decrypt`` run one whole message with the bytes of ``parcrypt raw``.
    ``data`` is any C-contiguous buffer (bytes, bytearray, memoryview, mmap, a numpy array
    of any dtype) or a CPU array with ``__dlpack__``, read without copying. The result is
    ``bytes``, or a numpy ``uint8`` array for numpy input; with ``out=`` (a writable
    buffer, possibly ``data`` itself for in-place work) the bytes are written there and
    their count returned. The GIL is released while the engine works.

    An array on a CUDA device (``__dlpack__`` on kDLCUDA: CuPy, PyTorch) is encrypted on
    that device, never copied to the host: the result is a :class:`DeviceArray` on the same
    device, or with ``out=`` (a device array on that device, possibly ``data``) its byte
    count. ECB and CBC need ``padding=False`` there, and CBC only decrypts there.
    """

    def __init__(
        self,
        name: str,
        key: Buffer,
        iv: Buffer | str | None = None,
        *,
        backend: str = "auto",
        threads: int | None = None,
        padding: bool = True,
        allow_short_gcm_iv: bool = False,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    encrypt: _OneMessage
    decrypt: _OneMessage
    def output_length(self, length: int, decrypt: bool = False) -> int:
        """The most bytes ``length`` input bytes become: the size ``out`` needs."""

class DeviceArray:
    """Bytes on a CUDA device that parcrypt wrote: pass it to ``cupy.from_dlpack`` or
    ``torch.from_dlpack`` (no copy). Freed when it and every array made from it are gone."""

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

#: One public key or a list of them: ``age1...`` / ``age1pq1...`` text (or a recipients
#: file's text: one a line, ``#`` comments), or a recipients file's path.
_Recipients = str | os.PathLike[str] | list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...]
#: One identity or a list of them: ``AGE-SECRET-KEY-1...`` / ``AGE-SECRET-KEY-PQ-1...``
#: text (or an identity file's text, as :func:`keygen` returns it; ``bytes`` too), or an
#: identity file's path (which warns with :class:`ParcryptWarning` when other users can
#: read it).
_Identities = (
    str
    | bytes
    | os.PathLike[str]
    | list[str | bytes | os.PathLike[str]]
    | tuple[str | bytes | os.PathLike[str], ...]
)

class _FileOptions(TypedDict, total=False):
    """The keyword options of :func:`encrypt_file`, :func:`decrypt_file` and :func:`open`,
    all optional but the secret: exactly one of ``key`` (16 or 32 bytes), ``passphrase``
    and public keys (``recipients`` to encrypt, ``identities`` to decrypt; the other one
    raises ``ValueError``). Defaults: ``backend="auto"``, ``threads=None`` (the engine's
    choice), ``overwrite=False``, ``format="parcrypt"``, ``context=None`` (none),
    ``armor=False``.

    ``format="age"`` writes an age v1 file (to ``recipients`` or a ``passphrase``, scrypt;
    ``armor=True`` for ASCII armor; no ``key``, no ``context``; ``threads``, or one for
    ``backend="seq"``, in every function and in the reader and writer of :func:`open`; a GPU
    backend raises ``ValueError``). Reading recognises an age file by its first line with the
    default format, as ``parcrypt decrypt`` does (local paths, URLs and file objects).

    ``overwrite=False`` refuses an existing destination with ``FileExistsError``; to ``s3://``
    the upload itself is conditional (``If-None-Match: *``), so an object another writer
    creates during the call is kept and the call raises ``FileExistsError``."""

    key: Buffer | None
    passphrase: str | bytes | None
    recipients: _Recipients | None
    identities: _Identities | None
    backend: str
    threads: int | None
    overwrite: bool
    format: Literal["parcrypt", "cobblestone", "age"]
    context: Buffer | None
    armor: bool

class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...

class _Writable(Protocol):
    def write(self, data: bytes, /) -> int | None: ...

#: A local path, an fsspec URL (``s3://bucket/key``, with ``storage_options``) or a binary
#: file object.
_Source = str | os.PathLike[str] | _Readable
_Destination = str | os.PathLike[str] | _Writable

def encrypt_file(
    src: _Source,
    dst: _Destination,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Unpack[_FileOptions],
) -> int:
    """Encrypts ``src`` into ``dst`` as ``parcrypt encrypt``; returns the plaintext bytes.
    Remote and file-object sides are staged in a private local folder; ``dst`` receives the
    file only once complete."""

def decrypt_file(
    src: _Source,
    dst: _Destination,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Unpack[_FileOptions],
) -> int:
    """Decrypts ``src`` into ``dst`` as ``parcrypt decrypt``; returns the plaintext bytes.
    ``dst`` receives plaintext only once every chunk authenticated."""

class NewIdentity(NamedTuple):
    """A new identity (:func:`keygen` without a path). ``identity``: the identity file's
    text (age-keygen's layout, with the secret ``AGE-SECRET-KEY-...`` line): keep it
    private. ``recipient``: its public key (``age1...``, ``age1pq1...``), to share. The repr
    leaves the identity out."""

    identity: str
    recipient: str

@overload
def keygen(path: None = None, *, pq: bool = False) -> NewIdentity:
    """A new identity, as ``parcrypt keygen``: X25519 (``age1...``), or with ``pq`` the
    post-quantum hybrid ML-KEM-768 + X25519 (``age1pq1...``). With ``path``: writes the
    identity file (mode 0600; an existing file raises ``FileExistsError``) and returns the
    recipient. Without: returns :class:`NewIdentity` ``(identity, recipient)``."""
@overload
def keygen(path: str | os.PathLike[str], *, pq: bool = False) -> str: ...

def recipient_of(identity: str | bytes | os.PathLike[str]) -> str:
    """The recipient (``age1...``, ``age1pq1...``) of one identity (its text, or an
    identity file's path). Several identities raise ``ValueError``."""

class EncryptedReader(io.RawIOBase):
    name: str
    def size(self) -> int: ...

class EncryptedWriter(io.RawIOBase):
    name: str
    def abort(self) -> None: ...

@overload
def open(
    path: _Source,
    mode: Literal["rb", "r"] = "rb",
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Unpack[_FileOptions],
) -> EncryptedReader:
    """Reads an encrypted file's plaintext at random (a parcrypt or binary age file) from a
    local path, an fsspec URL or a binary file object. A parcrypt file at a URL is fetched
    chunk by chunk under each read; an age file at a URL, or any file object, is copied whole
    into a private local file (removed on ``close``) and read through the age reader, on
    ``threads`` (one for ``backend="seq"``; every core by default)."""
@overload
def open(
    path: _Destination,
    mode: Literal["wb", "w"],
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Unpack[_FileOptions],
) -> EncryptedWriter:
    """Writes a new encrypted file (``format="age"``: an age file, sealed on ``threads``),
    published on ``close`` only: a local file by its name, a URL by one upload (conditional
    on S3 without ``overwrite``), a file object by writing it out."""
