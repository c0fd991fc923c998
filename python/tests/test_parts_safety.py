"""parcrypt.parts is as safe as the single-machine paths (issue 31): a cut or extended file
is refused, never decrypted short (finding 1); the files it creates are new and of mode
0600 (finding 4); a source changed since its plan is never sealed (finding 5)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import parcrypt
from parcrypt import parts

CHUNK = parts.CHUNK_BYTES
SEALED_CHUNK = CHUNK + 16


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, under which a plain create makes 0644 files."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _seal(folder: Path, plain: bytes, key: bytes) -> tuple[Path, parts.PartPlan]:
    """``plain`` sealed in parts of one chunk; returns the file and its decryption plan."""
    src, dst = folder / "plain", folder / "sealed"
    src.write_bytes(plain)
    plan = parts.plan_encrypt(src, key=key)
    parts.prepare_sealed(dst, plan)
    for first, end in plan.ranges(1):
        parts.seal(plan, first, end, src, dst)
    return dst, parts.plan_decrypt(dst, key=key)


def _ends(sealed: bytes, envelope: int) -> list[tuple[str, bytes]]:
    """Every way to take the message's end away or add to it: cut after k whole chunks
    plus 0-16 junk bytes, 1-16 junk bytes appended, a chunk appended, the final chunk
    removed."""
    full = (len(sealed) - envelope) // SEALED_CHUNK
    files = []
    for k in range(full + 1):
        for junk in range(17):
            files.append((f"cut after {k} chunks, {junk} junk bytes", sealed[: envelope + k * SEALED_CHUNK] + b"\xa5" * junk))
    for junk in range(1, 17):
        files.append((f"{junk} junk bytes appended", sealed + b"\x5a" * junk))
    files.append(("a chunk appended", sealed + sealed[envelope : envelope + SEALED_CHUNK]))
    files.append(("the final chunk removed", sealed[: envelope + full * SEALED_CHUNK]))
    return [(name, data) for name, data in files if data != sealed]


@pytest.mark.parametrize("length", [3 * CHUNK + 100, 3 * CHUNK])
def test_a_cut_or_extended_file_is_refused_and_nothing_is_published(tmp_path: Path, length: int) -> None:
    """Issue 31 finding 1: a file cut at a chunk boundary plus 16 junk bytes planned as a
    shorter message, and ``parts.read``/``open_part`` decrypted it short with no error.
    Now ``plan_decrypt`` refuses every cut or extended end; and workers handed the length
    such a file claims (a plan made by hand) refuse it where their range reaches the end,
    while ``open_file`` leaves no output."""
    key = os.urandom(16)
    plain = os.urandom(length)
    sealed_path, genuine = _seal(tmp_path, plain, key)
    assert parts.read(genuine, 0, length, sealed_path) == plain
    sealed = sealed_path.read_bytes()
    envelope = genuine.envelope_bytes
    for name, data in _ends(sealed, envelope):
        cut = tmp_path / "cut"
        cut.write_bytes(data)
        with pytest.raises(parcrypt.InvalidTag):
            parts.plan_decrypt(cut, key=key)
        area = len(data) - envelope
        if area % SEALED_CHUNK < 16:
            continue  # no message has this size: every reader refuses it outright
        claimed = area - (area // SEALED_CHUNK + 1) * 16
        forged = parts.PartPlan(envelope, claimed, genuine.part_keys)
        with pytest.raises(parcrypt.InvalidTag):
            parts.read(forged, 0, claimed, cut)
        with pytest.raises(parcrypt.InvalidTag):
            parts.read(forged, max(0, claimed - 3), claimed + 10, cut)
        opened = tmp_path / "opened"
        parts.prepare_plain(opened, forged)
        failed = 0
        for first, end in forged.ranges(1):
            try:
                parts.open_part(forged, first, end, cut, opened)
            except parcrypt.InvalidTag:
                failed += 1
        assert failed >= 1, f"{name}: every part opened"
        opened.unlink()
        never = tmp_path / "never"
        with pytest.raises(parcrypt.InvalidTag):
            parts.open_file(forged, cut, never)
        assert not never.exists(), name


def _in_parts_of_mode_0600(
    prepare: Callable[[Path, parts.PartPlan], None],
    work: Callable[[parts.PartPlan, int, int, Path, Path], int],
    plan: parts.PartPlan,
    src: Path,
    dst: Path,
) -> None:
    """``prepare``s ``dst``, checks that its mode is 0600, and has ``work`` (seal or open)
    fill it in parts of two chunks."""
    prepare(dst, plan)
    assert _mode(dst) == 0o600
    for first, end in plan.ranges(2):
        work(plan, first, end, src, dst)


def test_outputs_are_new_files_of_mode_0600(tmp_path: Path, umask_022: None) -> None:
    """Issue 31 finding 4: ``prepare_sealed`` (``File::create``) and ``prepare_plain``
    (``open(path, "wb")``) made 0644 files under umask 022, and emptied an existing file
    in their way. Now every file the parts functions create is new and 0600."""
    key = os.urandom(16)
    src = tmp_path / "plain"
    src.write_bytes(os.urandom(2 * CHUNK + 9))
    plan = parts.plan_encrypt(src, key=key)
    sealed = tmp_path / "sealed"
    _in_parts_of_mode_0600(parts.prepare_sealed, parts.seal, plan, src, sealed)
    decrypt = parts.plan_decrypt(sealed, key=key)
    opened = tmp_path / "opened"
    _in_parts_of_mode_0600(parts.prepare_plain, parts.open_part, decrypt, sealed, opened)
    assert opened.read_bytes() == src.read_bytes()

    whole = tmp_path / "whole"
    parts.seal_file(plan, src, whole)
    back = tmp_path / "back"
    parts.open_file(decrypt, whole, back)
    reference = tmp_path / "reference"
    parts.encrypt_with_salts(src, reference, (bytes(24), bytes(16)), key=key)
    for path in (whole, back, reference):
        assert _mode(path) == 0o600, path

    # An existing file is refused and left as it was, a link in the way is not followed.
    attempts = [(lambda path: parts.prepare_sealed(path, plan), opened), (lambda path: parts.prepare_plain(path, decrypt), sealed)]
    for prepare, target in attempts:
        before = target.read_bytes()
        with pytest.raises(FileExistsError):
            prepare(target)
        assert target.read_bytes() == before
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        parts.prepare_plain(link, decrypt)
    assert not (tmp_path / "elsewhere").exists()

    # Whatever the umask: one that takes the owner's write bit still gives 0600.
    os.umask(0o277)
    private = tmp_path / "private"
    parts.prepare_plain(private, decrypt)
    assert _mode(private) == 0o600


def _rewrite_same_size(path: Path) -> None:
    """Other bytes of the same length, and a later modification time."""
    data = path.read_bytes()
    path.write_bytes(bytes(byte ^ 0xFF for byte in data))
    later = time.time() + 7
    os.utime(path, (later, later))


def test_a_source_changed_since_the_plan_is_never_sealed(tmp_path: Path) -> None:
    """Issue 31 finding 5: ``seal`` checked only the source's size, so a source rewritten
    with other bytes of the same length after the plan was sealed under the plan's keys and
    nonces, (key, nonce) reuse. Now the plan carries the source's identity and ``seal`` and
    ``seal_file`` refuse a changed source; a plan without one is refused."""
    key = os.urandom(16)
    src = tmp_path / "plain"
    src.write_bytes(os.urandom(3 * CHUNK + 11))
    plan = parts.plan_encrypt(src, key=key)
    assert plan.source is not None and plan.source[2] == plan.plaintext_bytes
    dst = tmp_path / "sealed"
    parts.prepare_sealed(dst, plan)
    parts.seal(plan, 0, 1, src, dst)

    _rewrite_same_size(src)
    with pytest.raises(OSError, match="changed"):
        parts.seal(plan, 1, plan.chunks, src, dst)
    whole = tmp_path / "whole"
    with pytest.raises(OSError, match="changed"):
        parts.seal_file(plan, src, whole)
    assert not whole.exists()

    # Another file in its place: same bytes, another inode.
    plan = parts.plan_encrypt(src, key=key)
    other = tmp_path / "other"
    other.write_bytes(src.read_bytes())
    os.replace(other, src)
    with pytest.raises(OSError, match="changed"):
        parts.seal_file(plan, src, whole)

    # A plan without the source's identity cannot seal.
    plan = parts.plan_encrypt(src, key=key)
    bare = parts.PartPlan(plan.envelope_bytes, plan.plaintext_bytes, plan.part_keys, plan.envelope)
    with pytest.raises(ValueError, match="source identity"):
        parts.seal(bare, 0, 1, src, dst)
    # The identity travels with the plan (as Dask pickles it).
    import pickle

    assert pickle.loads(pickle.dumps(plan)) == plan
    parts.seal_file(pickle.loads(pickle.dumps(plan)), src, whole)
    assert whole.exists()
