"""One encrypted file in many parts, for workers in other processes or on other machines.

Every chunk of a parcrypt file is sealed on its own and sits at a fixed offset (the
envelope, then ``k * (16 KiB + 16)``), so a coordinator can plan a file once and let
workers seal or open disjoint chunk ranges in place; the result is byte for byte what
``parcrypt encrypt`` writes with the same key material. ``parcrypt.dask`` is built on this.

What crosses to a worker is a :class:`PartPlan`: two integers and ``part_keys``, this one
message's AEAD key, base nonce and (public) commitment as a ``bytes`` object (65 bytes for
AES-128, 81 for AES-256). Never the passphrase, the input key or an identity: argon2id runs
once, in the coordinator, and a file encrypted to public-key recipients has its file key
unwrapped there by the identity (:func:`plan_decrypt` with ``identities``). The part keys open and forge this message only, but they do open it: send them
over encrypted channels only (TLS for a Dask cluster), and note that Python cannot wipe a
``bytes`` object, so every process that received one holds a copy until it is collected.

Safe as the single-machine paths are:

- **Truncation is refused.** A file's size only claims a length until its final chunk (the
  short one) authenticates at its index. :func:`plan_decrypt` opens it before it reports a
  length, and a part or read that reaches the message's end opens it again, so a file cut at
  a chunk boundary (with or without junk after the cut), extended, or missing its empty final
  chunk raises ``parcrypt.InvalidTag`` instead of decrypting short.
- **Outputs are private.** :func:`prepare_sealed`, :func:`prepare_plain` and
  :func:`encrypt_with_salts` create new files only (an existing path raises
  ``FileExistsError``) with mode 0600 whatever the umask; :func:`seal_file` and
  :func:`open_file` write files with no name, of mode 0600, until they are complete.
- **The input must not change during a job.** A plan fixes the message's keys and nonces, so
  sealing other bytes under it (a task retried after the file changed) would encrypt two
  plaintexts under one (key, nonce). :func:`plan_encrypt` records the source's identity
  (device, inode, size, modification and change times in nanoseconds), and :func:`seal` and
  :func:`seal_file` raise ``OSError`` before and after sealing when the file is no longer
  that one or was written since. This rests on the file system's timestamps: a write within
  one timestamp tick of the plan may go unseen.

>>> import os, tempfile, parcrypt.parts as parts
>>> folder = tempfile.mkdtemp()
>>> src, dst = os.path.join(folder, "p"), os.path.join(folder, "s")
>>> _ = open(src, "wb").write(b"x" * 100_000)
>>> plan = parts.plan_encrypt(src, key=bytes(16))
>>> parts.prepare_sealed(dst, plan)
>>> for first, end in plan.ranges(chunks_per_part=2):
...     _ = parts.seal(plan, first, end, src, dst)
>>> parcrypt_plan = parts.plan_decrypt(dst, key=bytes(16))
>>> parts.read(parcrypt_plan, 99_998, 100_000, dst)
b'xx'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from . import _parcrypt  # type: ignore[attr-defined]  # the native module has no stub

__all__ = [
    "PartPlan",
    "plan_encrypt",
    "plan_decrypt",
    "prepare_sealed",
    "prepare_plain",
    "SourceIdentity",
    "seal",
    "open_part",
    "read",
    "seal_file",
    "open_file",
    "encrypt_with_salts",
    "CHUNK_BYTES",
]

#: Plaintext bytes per chunk (every chunk but the final, shorter one).
CHUNK_BYTES = 16 * 1024

PathLike = str | os.PathLike[str]

#: A plaintext file as it was planned: ``(device, inode, size, mtime_ns, ctime_ns, machine)``,
#: ``machine`` being the planning machine's boot id (0 where it has none). On another
#: machine the device is not compared, since it numbers a shared file system differently.
SourceIdentity = tuple[int, int, int, int, int, int]


@dataclass(frozen=True)
class PartPlan:
    """Where one message's chunks lie, and the keys to seal or open them. Pickles as plain
    values; ``part_keys`` is secret (see the module documentation) and left out of repr."""

    envelope_bytes: int
    plaintext_bytes: int
    part_keys: bytes = field(repr=False)
    #: The bytes before chunk 0 (for a new file; empty for a plan read from a file).
    envelope: bytes = field(default=b"", repr=False)
    #: The identity of the plaintext file (for a new file; ``None`` for a plan read from a
    #: file): every seal refuses a source that is no longer this file, unwritten since.
    source: SourceIdentity | None = None

    def ranges(self, chunks_per_part: int) -> list[tuple[int, int]]:
        """Chunk ranges ``(first, end)`` of ``chunks_per_part`` chunks covering the message."""
        return _parcrypt.parts_layout(self.envelope_bytes, self.plaintext_bytes, chunks_per_part)[0]

    @property
    def sealed_bytes(self) -> int:
        """Bytes of the whole encrypted file."""
        # All chunks in one part: one range listed, whatever the size (one chunk per part
        # would list every chunk, 4 billion tuples for 60 TiB).
        return _parcrypt.parts_layout(self.envelope_bytes, self.plaintext_bytes, self.chunks)[1]

    @property
    def chunks(self) -> int:
        """Chunks of the message, its final (short, maybe empty) one included."""
        return self.plaintext_bytes // CHUNK_BYTES + 1


def _secret(encrypting: bool, key: Any, passphrase: Any, recipients: Any, identities: Any) -> dict[str, Any]:
    """The secret keyword arguments of one job for the planners: exactly one of ``key``,
    ``passphrase`` and public keys (``recipients`` to encrypt, ``identities`` to decrypt)."""
    if encrypting and identities is not None:
        raise ValueError(
            "identities decrypt: to encrypt to their owners give recipients=[...] "
            "(parcrypt.recipient_of(identity) gives an identity's recipient)"
        )
    if not encrypting and recipients is not None:
        raise ValueError(
            "recipients encrypt: to decrypt give identities=[...] "
            "(identity files, or AGE-SECRET-KEY-... text)"
        )
    name, public = ("recipients", recipients) if encrypting else ("identities", identities)
    given = sum(value is not None for value in (key, passphrase, public))
    if given != 1:
        raise ValueError(f"give a key, a passphrase or {name} (exactly one)")
    secret = {"key": key, "passphrase": passphrase}
    if public is not None:
        secret[name] = public
    return secret


def plan_encrypt(
    src: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    recipients: Any = None,
    format: str = "parcrypt",
    context: Any = None,
    salts: tuple[bytes, bytes] | None = None,
) -> PartPlan:
    """Plans the encryption of the plaintext file ``src`` (its size, and its identity, which
    every seal checks: the file must not change until the job is done) under a key (16 or
    32 bytes, or hex), a passphrase (argon2id runs here, once) or public-key ``recipients``
    (``age1...``/``age1pq1...`` strings or recipients files; a random file key is wrapped for
    each here, once). ``salts`` (Cobblestone's 24 bytes, argon2id's 16) are for reproducible
    comparisons only: never reuse a salt under a key."""
    envelope, part_keys, plaintext_bytes, source = _parcrypt.parts_plan_encrypt(
        os.fspath(src), key=key, passphrase=passphrase, recipients=recipients, format=format,
        context=context, salts=salts,
    )
    return PartPlan(len(envelope), plaintext_bytes, part_keys, envelope, source)


def plan_decrypt(
    path: PathLike,
    *,
    key: Any = None,
    passphrase: Any = None,
    identities: Any = None,
    format: str = "parcrypt",
    context: Any = None,
) -> PartPlan:
    """Reads and unlocks the envelope of the encrypted file ``path`` with a key, a
    passphrase or (a file encrypted to recipients) ``identities`` (``AGE-SECRET-KEY-...``
    text or identity files), which unwrap its file key here: the plan holds only part keys.
    The key commitment is checked here: a wrong key or identity raises
    ``parcrypt.InvalidTag``. Measures the message and authenticates its length (the final
    chunk): a cut or extended file raises ``parcrypt.InvalidTag`` here."""
    envelope_bytes, plaintext_bytes, part_keys = _parcrypt.parts_plan_decrypt(
        os.fspath(path), key=key, passphrase=passphrase, identities=identities, format=format,
        context=context,
    )
    return PartPlan(envelope_bytes, plaintext_bytes, part_keys)


def prepare_sealed(path: PathLike, plan: PartPlan) -> None:
    """Creates ``path`` (a new file of mode 0600: an existing one raises
    ``FileExistsError``) with the envelope at its start and the encrypted file's final
    length, for :func:`seal` to fill."""
    _parcrypt.parts_prepare_sealed(os.fspath(path), _envelope(plan), plan.plaintext_bytes)


def prepare_plain(path: PathLike, plan: PartPlan) -> None:
    """Creates ``path`` (a new file of mode 0600: an existing one raises
    ``FileExistsError``) with the plaintext's length, for :func:`open_part`."""
    _parcrypt.parts_prepare_plain(os.fspath(path), plan.plaintext_bytes)


def _job(plan: PartPlan, src: PathLike, dst: PathLike | None, backend: str, threads: int | None) -> Any:
    """The native worker over ``plan``'s message (its part keys and layout), reading ``src``
    and writing ``dst``."""
    return _parcrypt.PartJob(
        plan.part_keys, plan.envelope_bytes, plan.plaintext_bytes, os.fspath(src),
        None if dst is None else os.fspath(dst), backend=backend, threads=threads,
    )


def _envelope(plan: PartPlan) -> bytes:
    if len(plan.envelope) != plan.envelope_bytes:
        raise ValueError("this plan has no envelope: make it with plan_encrypt")
    return plan.envelope


def _source(plan: PartPlan) -> SourceIdentity:
    if plan.source is None:
        raise ValueError("this plan has no source identity: make it with plan_encrypt")
    return plan.source


def seal(
    plan: PartPlan,
    first: int,
    end: int,
    src: PathLike,
    dst: PathLike,
    *,
    backend: str = "auto",
    threads: int | None = None,
) -> int:
    """Seals chunks ``first..end`` of the plaintext file ``src`` into ``dst`` at their
    offsets (memory: three batches); returns the plaintext bytes sealed. Raises ``OSError``,
    before or after sealing, when ``src`` is not the planned file unwritten since."""
    source = _source(plan)
    return _job(plan, src, dst, backend, threads).seal(source, first, end)


def open_part(
    plan: PartPlan,
    first: int,
    end: int,
    src: PathLike,
    dst: PathLike,
    *,
    backend: str = "auto",
    threads: int | None = None,
) -> int:
    """Opens chunks ``first..end`` of the encrypted file ``src`` into ``dst`` at their
    plaintext offsets, each chunk authenticated before it is written (and the final chunk
    first when the range holds it); returns the bytes."""
    return _job(plan, src, dst, backend, threads).open(first, end)


def read(
    plan: PartPlan,
    start: int,
    end: int,
    src: PathLike,
    *,
    backend: str = "auto",
    threads: int | None = None,
) -> bytes:
    """Plaintext bytes ``start..end`` (clamped to the message) of the encrypted file
    ``src``, reading and authenticating only the chunks that hold them, and the final chunk
    too when the range reaches the message's end."""
    return _job(plan, src, None, backend, threads).read(start, end)


def encrypt_with_salts(
    src: PathLike,
    dst: PathLike,
    salts: tuple[bytes, bytes],
    *,
    key: Any = None,
    passphrase: Any = None,
    recipients: Any = None,
    format: str = "parcrypt",
    context: Any = None,
) -> int:
    """Encrypts ``src`` into ``dst`` (a new file of mode 0600) on this machine through
    ``parcrypt encrypt``'s own streaming pipeline, with fixed salts: the reference that
    distributed encryption is compared with byte for byte. Never reuse a salt under a key;
    for tests only."""
    return _parcrypt.parts_encrypt_with_salts(
        os.fspath(src), os.fspath(dst), salts, key=key, passphrase=passphrase,
        recipients=recipients, format=format, context=context,
    )


def seal_file(
    plan: PartPlan,
    src: PathLike,
    dst: PathLike,
    *,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
) -> int:
    """Seals the whole file ``src`` into ``dst`` (one worker, one file) from ``plan``
    (:func:`plan_encrypt`); ``dst`` appears only once complete: until then it is a file with
    no name (mode 0600), so a killed worker leaves nothing. Raises ``OSError``, leaving no
    ``dst``, when ``src`` is not the planned file unwritten since. Returns the plaintext
    bytes."""
    envelope, source = _envelope(plan), _source(plan)
    return _job(plan, src, dst, backend, threads).seal_file(envelope, source, overwrite)


def open_file(
    plan: PartPlan,
    src: PathLike,
    dst: PathLike,
    *,
    overwrite: bool = False,
    backend: str = "auto",
    threads: int | None = None,
) -> int:
    """Opens the whole encrypted file ``src`` into ``dst`` from ``plan``
    (:func:`plan_decrypt`); ``dst`` (mode 0600) appears only once every chunk, the final one
    included, authenticated."""
    return _job(plan, src, dst, backend, threads).open_file(overwrite)
