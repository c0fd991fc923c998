"""Keys people can share: public-key recipients (age1..., age1pq1...) and identities
(AGE-SECRET-KEY-...) for parcrypt files and age v1 files, from Python: round trips at
chunk edges, several recipients, identity files (mode, refusal, warning), misuse, the CLI
both ways, parcrypt.parts and parcrypt.dask (no identity ever reaches a task)."""

from __future__ import annotations

import io
import os
import random
import stat
import threading
import time
import warnings
from pathlib import Path

import pytest

import parcrypt
from parcrypt import parts
from conftest import run_cli

KINDS = ["x25519", "pq"]
# Around Cobblestone's 16 KiB chunks and age's 64 KiB chunks, and about 1 MiB.
SIZES = [0, 1, 15, 16, 17, 65535, 65536, 65537, 1024 * 1024 + 3]
FORMATS = ["parcrypt", "age"]


def _keygen(kind: str) -> parcrypt.NewIdentity:
    return parcrypt.keygen(pq=kind == "pq")


def _secret_line(identity_text: str) -> str:
    (line,) = [line for line in identity_text.splitlines() if line.startswith("AGE-SECRET-KEY-")]
    return line


def _plain(tmp_path: Path, size: int, name: str = "plain") -> tuple[Path, bytes]:
    data = random.Random(size).randbytes(size)
    path = tmp_path / name
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("format", FORMATS)
def test_round_trip(tmp_path: Path, format: str, kind: str, size: int) -> None:
    new = _keygen(kind)
    assert new.recipient.startswith("age1pq1" if kind == "pq" else "age1")
    assert parcrypt.recipient_of(new.identity) == new.recipient
    src, data = _plain(tmp_path, size)
    sealed = tmp_path / "sealed"
    assert parcrypt.encrypt_file(src, sealed, recipients=[new.recipient], format=format) == size
    # Read back as the format says, with no format given: an age file by its header.
    assert parcrypt.decrypt_file(sealed, tmp_path / "opened", identities=[new.identity]) == size
    assert (tmp_path / "opened").read_bytes() == data
    with parcrypt.open(sealed, "rb", identities=new.identity) as reader:
        assert reader.size() == size
        assert reader.read() == data
        if size:
            for _ in range(8):
                start = random.randrange(size)
                end = min(size, start + random.randrange(1, 70_000))
                reader.seek(start)
                assert reader.read(end - start) == data[start:end]
    # The writer, in uneven pieces.
    streamed = tmp_path / "streamed"
    with parcrypt.open(streamed, "wb", recipients=new.recipient, format=format) as writer:
        view, start = memoryview(data), 0
        while start < size:
            step = random.randint(1, 50_000)
            writer.write(view[start : start + step])
            start += step
    assert streamed.read_bytes().startswith(b"age-encryption.org/v1" if format == "age" else b"parcrypt")
    assert parcrypt.decrypt_file(streamed, tmp_path / "again", identities=[new.identity]) == size
    assert (tmp_path / "again").read_bytes() == data


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("format", FORMATS)
def test_several_recipients_each_identity_opens_alone(tmp_path: Path, format: str, kind: str) -> None:
    owners = [_keygen(kind) for _ in range(3)]
    src, data = _plain(tmp_path, 100_003)
    sealed = tmp_path / "sealed"
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient for owner in owners], format=format)
    for index, owner in enumerate(owners):
        out = tmp_path / f"out{index}"
        assert parcrypt.decrypt_file(sealed, out, identities=[owner.identity]) == len(data)
        assert out.read_bytes() == data
    # A stranger's identity among others is skipped; alone it is refused.
    stranger = _keygen(kind)
    parcrypt.decrypt_file(sealed, tmp_path / "mixed", identities=[stranger.identity, owners[2].identity])
    assert (tmp_path / "mixed").read_bytes() == data
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file(sealed, tmp_path / "nobody", identities=[stranger.identity])
    assert not (tmp_path / "nobody").exists()


@pytest.mark.parametrize("format", FORMATS)
def test_recipients_and_identity_files(tmp_path: Path, format: str) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    recipient_1 = parcrypt.keygen(first)
    recipient_2 = parcrypt.keygen(second)
    recipients_file = tmp_path / "recipients.txt"
    recipients_file.write_text(f"# the team\n{recipient_1}\n\n{recipient_2}\n")
    src, data = _plain(tmp_path, 70_000)
    sealed = tmp_path / "sealed"
    parcrypt.encrypt_file(src, sealed, recipients=[recipients_file], format=format)
    for index, identity in enumerate([first, second]):
        out = tmp_path / f"out{index}"
        parcrypt.decrypt_file(sealed, out, identities=[identity])
        assert out.read_bytes() == data
    # An identity file's text, and bytes, work as the file does.
    with parcrypt.open(sealed, identities=[first.read_bytes()]) as reader:
        assert reader.read() == data
    assert parcrypt.recipient_of(first) == recipient_1


@pytest.mark.parametrize("kind", KINDS)
def test_keygen_file_is_private_and_never_replaced(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "key.txt"
    recipient = parcrypt.keygen(path, pq=kind == "pq")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert f"# public key: {recipient}\n" in text
    assert _secret_line(text).startswith("AGE-SECRET-KEY-PQ-1" if kind == "pq" else "AGE-SECRET-KEY-1")
    with pytest.raises(FileExistsError, match="already exists"):
        parcrypt.keygen(path, pq=kind == "pq")
    assert path.read_text() == text
    new = parcrypt.keygen(pq=kind == "pq")
    assert _secret_line(new.identity) not in repr(new)
    identity, shared = new
    assert (identity, shared) == (new.identity, new.recipient)
    assert parcrypt.recipient_of(identity) != recipient


def test_identity_file_others_can_read_warns(tmp_path: Path) -> None:
    path = tmp_path / "key.txt"
    recipient = parcrypt.keygen(path)
    src, data = _plain(tmp_path, 1000)
    for format in FORMATS:
        sealed = tmp_path / f"sealed.{format}"
        parcrypt.encrypt_file(src, sealed, recipients=[recipient], format=format)
        # Mode 0600: no warning.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parcrypt.decrypt_file(sealed, tmp_path / f"quiet.{format}", identities=[path])
        path.chmod(0o644)
        try:
            with pytest.warns(parcrypt.ParcryptWarning, match="chmod 600") as record:
                parcrypt.decrypt_file(sealed, tmp_path / f"loud.{format}", identities=[path])
            assert record[0].filename == __file__
            with pytest.warns(parcrypt.ParcryptWarning, match="other users") as record:
                with parcrypt.open(sealed, identities=[path]) as reader:
                    assert reader.read() == data
            assert record[0].filename == __file__
            # A warning made an error stops the call before anything is written.
            with warnings.catch_warnings():
                warnings.simplefilter("error", parcrypt.ParcryptWarning)
                with pytest.raises(parcrypt.ParcryptWarning):
                    parcrypt.decrypt_file(sealed, tmp_path / f"stopped.{format}", identities=[path])
            assert not (tmp_path / f"stopped.{format}").exists()
        finally:
            path.chmod(0o600)
        assert (tmp_path / f"loud.{format}").read_bytes() == data


@pytest.mark.parametrize("format", FORMATS)
def test_wrong_identity_leaves_nothing(tmp_path: Path, format: str) -> None:
    owner, stranger = _keygen("x25519"), _keygen("x25519")
    src, _ = _plain(tmp_path, 50_000)
    sealed = tmp_path / "sealed"
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient], format=format)
    out = tmp_path / "out"
    with pytest.raises(parcrypt.InvalidTag, match="no identity matches"):
        parcrypt.decrypt_file(sealed, out, identities=[stranger.identity])
    assert not out.exists()
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open(sealed, identities=[stranger.identity])
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file(sealed, out, identities=[_keygen("pq").identity])
    assert not out.exists()
    if format == "parcrypt":
        with pytest.raises(parcrypt.InvalidTag):
            parts.plan_decrypt(sealed, identities=[stranger.identity])


def _header_length(sealed: bytes) -> int:
    """The length of a parcrypt version-2 header (docs/FORMAT.md: bytes 12..16)."""
    assert sealed[:9] == b"parcrypt\x02"
    return int.from_bytes(sealed[12:16], "big")


def test_tampered_parcrypt_header_is_refused(tmp_path: Path) -> None:
    owner = _keygen("x25519")
    src, data = _plain(tmp_path, 40_000)
    sealed = tmp_path / "sealed"
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient])
    original = sealed.read_bytes()
    length = _header_length(original)
    # The MAC at the header's end, a stanza's body before it, the recipient count.
    for offset, error in [(length - 1, parcrypt.InvalidTag), (length - 40, parcrypt.Error), (17, parcrypt.Error)]:
        damaged = bytearray(original)
        damaged[offset] ^= 0x01
        bad = tmp_path / f"bad{offset}"
        bad.write_bytes(bytes(damaged))
        out = tmp_path / f"out{offset}"
        with pytest.raises(error):
            parcrypt.decrypt_file(bad, out, identities=[owner.identity])
        assert not out.exists()
        with pytest.raises(parcrypt.Error):
            parts.plan_decrypt(bad, identities=[owner.identity])
    parcrypt.decrypt_file(sealed, tmp_path / "fine", identities=[owner.identity])
    assert (tmp_path / "fine").read_bytes() == data


def test_tampered_age_file_is_refused(tmp_path: Path) -> None:
    owner = _keygen("x25519")
    src, _ = _plain(tmp_path, 200_000)
    sealed = tmp_path / "sealed.age"
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient], format="age")
    original = sealed.read_bytes()
    mac_at = original.index(b"\n--- ") + 5
    damaged_mac = bytearray(original)
    damaged_mac[mac_at] = ord("B") if original[mac_at] != ord("B") else ord("C")
    damaged_payload = bytearray(original)
    damaged_payload[len(original) // 2] ^= 0x40
    for name, damaged in [("mac", damaged_mac), ("payload", damaged_payload)]:
        bad = tmp_path / name
        bad.write_bytes(bytes(damaged))
        out = tmp_path / f"{name}.out"
        with pytest.raises(parcrypt.InvalidTag):
            parcrypt.decrypt_file(bad, out, identities=[owner.identity])
        assert not out.exists()
    with parcrypt.open(tmp_path / "payload", identities=[owner.identity]) as reader:
        reader.read(1000)  # the first chunk is intact
        with pytest.raises(parcrypt.InvalidTag):
            reader.read()


def test_misuse_is_a_clear_value_error(tmp_path: Path) -> None:
    owner, hybrid = _keygen("x25519"), _keygen("pq")
    secret = _secret_line(owner.identity)
    src, _ = _plain(tmp_path, 1000)
    sealed = tmp_path / "sealed"
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient])
    out = tmp_path / "out"
    cases = [
        (lambda: parcrypt.encrypt_file(src, out, identities=[owner.identity]), "identities decrypt"),
        (lambda: parcrypt.open(out, "wb", identities=[owner.identity]), "identities decrypt"),
        (lambda: parcrypt.decrypt_file(sealed, out, recipients=[owner.recipient]), "recipients encrypt"),
        (lambda: parcrypt.open(sealed, recipients=[owner.recipient]), "recipients encrypt"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient], key=bytes(16)), "exactly one"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient], passphrase="long enough pass"), "exactly one"),
        (lambda: parcrypt.decrypt_file(sealed, out, identities=[owner.identity], key=bytes(16)), "exactly one"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[]), "empty"),
        (lambda: parcrypt.decrypt_file(sealed, out, identities=[]), "empty"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=["age1notakey"]), "recipients\\[0\\]"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=["ssh-ed25519 AAAA"]), "not an age recipient"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient, hybrid.recipient]), "post-quantum"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient, hybrid.recipient], format="age"), "post-quantum"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient], format="cobblestone"), "Cobblestone"),
        (lambda: parcrypt.encrypt_file(src, out, key=bytes(16), format="age"), "not a key"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient], armor=True), "armor"),
        (lambda: parcrypt.encrypt_file(src, out, recipients=[owner.recipient], format="age", context=b"x"), "context"),
        (lambda: parcrypt.decrypt_file(sealed, out, key=bytes(16)), "recipients"),
        (lambda: parcrypt.decrypt_file(sealed, out, passphrase="long enough pass"), "recipients"),
        (lambda: parts.plan_encrypt(src, recipients=[owner.recipient], key=bytes(16)), "exactly one"),
        (lambda: parts.plan_encrypt(src, recipients=[owner.recipient], format="age"), "not planned in parts"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
        assert not out.exists()
    # A malformed identity: the reason names the item and the line, never the text.
    broken = secret[:-3] + ("qqq" if secret[-3:] != "qqq" else "ppp")
    for identities in ([broken], [f"# mine\n{broken}\n"], ["AGE-SECRET-KEY-1" + "Q" * 58]):
        with pytest.raises(ValueError, match="identities\\[0\\]: invalid key") as raised:
            parcrypt.decrypt_file(sealed, out, identities=identities)
        message = str(raised.value)
        assert "\n" not in message
        assert secret[16:40] not in message and "QQQQ" not in message
        assert not out.exists()
    # A path given as a str is key text, and the reason says how to give a file.
    key_file = tmp_path / "key.txt"
    key_file.write_text(owner.identity)
    with pytest.raises(ValueError, match="pathlib.Path"):
        parcrypt.decrypt_file(sealed, out, identities=[str(key_file)])
    with pytest.raises(ValueError, match="pathlib.Path"):
        parcrypt.encrypt_file(src, out, recipients=["recipients.txt"])
    with pytest.raises(TypeError):
        parcrypt.decrypt_file(sealed, out, identities=[42])
    with pytest.raises(FileNotFoundError):
        parcrypt.decrypt_file(sealed, out, identities=[tmp_path / "no-such-key.txt"])
    with pytest.raises(ValueError, match="2 identities"):
        parcrypt.recipient_of(owner.identity + hybrid.identity)


@pytest.mark.parametrize("options", [{"backend": "seq"}, {"threads": 1}, {"threads": 2}, {"backend": "pool"}])
def test_age_files_on_the_threads_asked_for(tmp_path: Path, options: dict) -> None:
    owner = _keygen("x25519")
    src, data = _plain(tmp_path, 5 * 65536 + 3)
    parcrypt.encrypt_file(src, tmp_path / "sealed.age", recipients=[owner.recipient], format="age", **options)
    parcrypt.decrypt_file(tmp_path / "sealed.age", tmp_path / "out", identities=[owner.identity], **options)
    assert (tmp_path / "out").read_bytes() == data
    for gpu in ("opencl", "cuda"):
        with pytest.raises(ValueError, match="on the CPU"):
            parcrypt.encrypt_file(src, tmp_path / gpu, recipients=[owner.recipient], format="age", backend=gpu)
        with pytest.raises(ValueError, match="on the CPU"):
            parcrypt.open(tmp_path / "sealed.age", identities=[owner.identity], backend=gpu)
        assert not (tmp_path / gpu).exists()


def _age_threads_while(work) -> set[str]:
    """The names of the age pools' threads (``parcrypt-age-N``) alive in this process while
    ``work`` runs in another thread, polled from /proc (none left from earlier calls first)."""
    def names() -> set[str]:
        found = set()
        for task in os.listdir("/proc/self/task"):
            try:
                name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
            except OSError:
                continue  # the thread ended meanwhile
            if name.startswith("parcrypt-age-"):
                found.add(name)
        return found

    deadline = time.monotonic() + 10
    while names() and time.monotonic() < deadline:
        time.sleep(0.01)  # an earlier call's pool threads end on their own
    assert not names(), "age pool threads outlived their calls"
    seen: set[str] = set()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - raised again below
            failed.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    while worker.is_alive():
        seen |= names()
    worker.join()
    if failed:
        raise failed[0]
    return seen


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="SKIPPED: no /proc to see threads in")
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"threads": 1}, {"parcrypt-age-0"}),
        ({"backend": "seq"}, {"parcrypt-age-0"}),
        ({"threads": 2}, {"parcrypt-age-0", "parcrypt-age-1"}),
        ({}, set()),  # every core: rayon's global pool, no pool of its own
    ],
    ids=["threads=1", "seq", "threads=2", "default"],
)
def test_open_runs_age_files_on_the_threads_asked_for(tmp_path: Path, options: dict, expected: set) -> None:
    """The reader and the writer behind parcrypt.open seal and open an age file's payload on
    the threads asked for, as encrypt_file and decrypt_file do: the threads alive during
    their calls are the pool's, and its size is the one asked for."""
    owner = _keygen("x25519")
    data = random.Random(5).randbytes(8 * 1024 * 1024 + 11)
    sealed = tmp_path / "sealed.age"

    def write() -> None:
        with parcrypt.open(sealed, "wb", recipients=owner.recipient, format="age", **options) as writer:
            for at in range(0, len(data), 512 * 1024):
                writer.write(data[at : at + 512 * 1024])

    assert _age_threads_while(write) == expected
    got = []

    def read() -> None:
        with parcrypt.open(sealed, identities=owner.identity, **options) as reader:
            reader.seek(len(data) // 3)
            got.append(reader.read(100))
            reader.seek(0)
            got.append(b"".join(iter(lambda: reader.read(512 * 1024), b"")))

    assert _age_threads_while(read) == expected
    assert got == [data[len(data) // 3 : len(data) // 3 + 100], data]
    assert parcrypt.decrypt_file(sealed, tmp_path / "out", identities=[owner.identity]) == len(data)
    assert (tmp_path / "out").read_bytes() == data


def test_age_files_read_from_file_objects(tmp_path: Path) -> None:
    """parcrypt.open over a binary file object holding an age file (a seekable BytesIO, an
    open file): recognised by its header, read at random; misuse refused in one line."""
    owner = _keygen("x25519")
    src, data = _plain(tmp_path, 3 * 65536 + 5)
    sealed = io.BytesIO()
    parcrypt.encrypt_file(src, sealed, recipients=[owner.recipient], format="age")
    assert sealed.getvalue().startswith(b"age-encryption.org/v1\n")
    for fileobj in (io.BytesIO(sealed.getvalue()), _written(tmp_path / "on-disk.age", sealed.getvalue())):
        with fileobj, parcrypt.open(fileobj, identities=[owner.identity], threads=1) as reader:
            assert reader.size() == len(data)
            reader.seek(65536 - 3)
            assert reader.read(10) == data[65536 - 3 : 65536 + 7]
            reader.seek(-4, io.SEEK_END)
            assert reader.read() == data[-4:]
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open(io.BytesIO(sealed.getvalue()), identities=[_keygen("x25519").identity])
    with pytest.raises(ValueError, match="give identities"):
        parcrypt.open(io.BytesIO(sealed.getvalue()), key=bytes(16))
    damaged = bytearray(sealed.getvalue())
    damaged[-100] ^= 1
    with parcrypt.open(io.BytesIO(bytes(damaged)), identities=[owner.identity]) as reader:
        assert reader.read(1000) == data[:1000]  # the chunks before the damage read
        with pytest.raises(parcrypt.InvalidTag):
            reader.read()
    armored = io.BytesIO()
    parcrypt.encrypt_file(src, armored, recipients=[owner.recipient], format="age", armor=True)
    with pytest.raises(parcrypt.Error, match="armored"):
        parcrypt.open(io.BytesIO(armored.getvalue()), identities=[owner.identity])


def _written(path: Path, data: bytes):
    path.write_bytes(data)
    return path.open("rb")


def test_age_passphrase_and_armor(tmp_path: Path) -> None:
    src, data = _plain(tmp_path, 300_001)
    sealed = tmp_path / "sealed.age"
    parcrypt.encrypt_file(src, sealed, passphrase="correct horse battery staple", format="age", armor=True)
    assert sealed.read_bytes().startswith(b"-----BEGIN AGE ENCRYPTED FILE-----\n")
    with pytest.raises(ValueError, match="encrypted with a passphrase"):
        parcrypt.decrypt_file(sealed, tmp_path / "out", identities=[_keygen("x25519").identity])
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file(sealed, tmp_path / "out", passphrase="wrong horse battery staple")
    assert not (tmp_path / "out").exists()
    parcrypt.decrypt_file(sealed, tmp_path / "out", passphrase=b"correct horse battery staple")
    assert (tmp_path / "out").read_bytes() == data
    # An armored file cannot be read at random: a one-line refusal.
    with pytest.raises(parcrypt.Error, match="armored"):
        parcrypt.open(sealed, passphrase="correct horse battery staple")
    with pytest.warns(parcrypt.ParcryptWarning, match="only 3 bytes") as record:
        parcrypt.encrypt_file(src, tmp_path / "weak.age", passphrase="abc", format="age")
    assert record[0].filename == __file__


@pytest.mark.parametrize("armor", [False, True], ids=["binary", "armored"])
def test_age_files_with_rage(tmp_path: Path, armor: bool) -> None:
    """The Python API's age files against rage's age crate (pyrage), both ways."""
    pyrage = pytest.importorskip("pyrage", reason="SKIPPED: pyrage is not installed (pip install pyrage)")
    theirs = pyrage.x25519.Identity.generate()
    ours = _keygen("x25519")
    for size in [0, 65536, 65537, 1024 * 1024 + 3]:
        src, data = _plain(tmp_path, size, f"plain{size}")
        by_python = tmp_path / f"py{size}.age"
        parcrypt.encrypt_file(src, by_python, recipients=[str(theirs.to_public()), ours.recipient], format="age",
                              armor=armor)
        assert pyrage.decrypt(by_python.read_bytes(), [theirs]) == data
        by_rage = tmp_path / f"rage{size}.age"
        by_rage.write_bytes(pyrage.encrypt(data, [pyrage.x25519.Recipient.from_str(ours.recipient)], armor))
        assert parcrypt.decrypt_file(by_rage, tmp_path / f"back{size}", identities=[ours.identity]) == size
        assert (tmp_path / f"back{size}").read_bytes() == data
        if not armor:
            with parcrypt.open(by_rage, identities=ours.identity) as reader:
                reader.seek(size // 2)
                assert reader.read() == data[size // 2 :]
    # scrypt passphrases, both ways.
    src, data = _plain(tmp_path, 70_000, "plain-scrypt")
    parcrypt.encrypt_file(src, tmp_path / "py.scrypt.age", passphrase="correct horse battery staple", format="age",
                          armor=armor)
    assert pyrage.passphrase.decrypt((tmp_path / "py.scrypt.age").read_bytes(), "correct horse battery staple") == data
    (tmp_path / "rage.scrypt.age").write_bytes(pyrage.passphrase.encrypt(data, "correct horse battery staple"))
    parcrypt.decrypt_file(tmp_path / "rage.scrypt.age", tmp_path / "scrypt.out", passphrase="correct horse battery staple")
    assert (tmp_path / "scrypt.out").read_bytes() == data


@pytest.mark.parametrize("kind", KINDS)
def test_cli_both_ways(cli: str, tmp_path: Path, kind: str) -> None:
    pq = ["--pq"] if kind == "pq" else []
    key_by_cli = tmp_path / "cli-key.txt"
    recipient_by_cli = run_cli(cli, "keygen", "-o", str(key_by_cli), *pq).decode().strip()
    assert parcrypt.recipient_of(key_by_cli) == recipient_by_cli
    key_by_python = tmp_path / "py-key.txt"
    recipient_by_python = parcrypt.keygen(key_by_python, pq=kind == "pq")
    for size in [0, 17, 65537, 1024 * 1024 + 3]:
        src, data = _plain(tmp_path, size, f"plain{size}")
        for format in FORMATS:
            # Python encrypts to the CLI's key; the CLI decrypts.
            by_python = tmp_path / f"py{size}.{format}"
            parcrypt.encrypt_file(src, by_python, recipients=[recipient_by_cli], format=format)
            assert run_cli(cli, "decrypt", "-q", "-i", str(key_by_cli), str(by_python), "-o", "-") == data
            # The CLI encrypts to Python's key; Python decrypts.
            by_cli = tmp_path / f"cli{size}.{format}"
            run_cli(cli, "encrypt", "-q", "--format", format, "-r", recipient_by_python, str(src), "-o", str(by_cli))
            assert parcrypt.decrypt_file(by_cli, tmp_path / f"back{size}.{format}", identities=[key_by_python]) == size
            assert (tmp_path / f"back{size}.{format}").read_bytes() == data
            with parcrypt.open(by_cli, identities=[key_by_python]) as reader:
                assert reader.read() == data
    # Armored age from the CLI with a recipients file.
    recipients_file = tmp_path / "recipients.txt"
    recipients_file.write_text(recipient_by_python + "\n")
    armored = tmp_path / "armored.age"
    src, data = _plain(tmp_path, 100_000, "plain-armored")
    run_cli(cli, "encrypt", "-q", "--format", "age", "-a", "-R", str(recipients_file), str(src), "-o", str(armored))
    parcrypt.decrypt_file(armored, tmp_path / "armored.out", identities=[key_by_python])
    assert (tmp_path / "armored.out").read_bytes() == data


def test_parts_to_recipients(tmp_path: Path) -> None:
    owner = _keygen("pq")
    src, data = _plain(tmp_path, 5 * 16 * 1024 + 99)
    plan = parts.plan_encrypt(src, recipients=[owner.recipient])
    assert owner.recipient not in repr(plan)
    sealed = tmp_path / "sealed"
    parts.prepare_sealed(sealed, plan)
    for first, end in plan.ranges(chunks_per_part=2):
        parts.seal(plan, first, end, src, sealed)
    parcrypt.decrypt_file(sealed, tmp_path / "whole", identities=[owner.identity])
    assert (tmp_path / "whole").read_bytes() == data
    opened = parts.plan_decrypt(sealed, identities=[owner.identity])
    assert opened.plaintext_bytes == len(data)
    assert opened.part_keys == plan.part_keys
    assert parts.read(opened, 1000, 50_000, sealed) == data[1000:50_000]
    with pytest.raises(ValueError, match="exactly one"):
        parts.plan_decrypt(sealed, identities=[owner.identity], key=bytes(16))
    with pytest.raises(TypeError):
        parts.plan_decrypt(sealed, recipients=[owner.recipient])  # type: ignore[call-arg]
    # An age file is not split in parts: a one-line reason.
    parcrypt.encrypt_file(src, tmp_path / "file.age", recipients=[owner.recipient], format="age")
    with pytest.raises(ValueError, match="age file: it is not planned in parts"):
        parts.plan_decrypt(tmp_path / "file.age", identities=[owner.identity])


# ---- parcrypt.dask ------------------------------------------------------------------------


def _bech32_data(text: str) -> bytes:
    """The bytes a Bech32 string (an age key) encodes, its checksum dropped."""
    charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
    body = text.lower().rsplit("1", 1)[1][:-6]
    accumulator, bits, out = 0, 0, bytearray()
    for char in body:
        accumulator = (accumulator << 5) | charset.index(char)
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append((accumulator >> bits) & 0xFF)
    return bytes(out)


class _Recording:
    """A client that pickles (as Dask does) the arguments of every task submitted."""

    def __init__(self, client: object) -> None:
        self._client = client
        self.pickled: list[bytes] = []

    def submit(self, *args: object, **kwargs: object) -> object:
        import cloudpickle

        self.pickled.append(cloudpickle.dumps((args, kwargs)))
        return self._client.submit(*args, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("distributed", reason="SKIPPED: dask/distributed not installed (pip install 'parcrypt[dask]')")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            yield client


@pytest.mark.parametrize("kind", KINDS)
def test_dask_recipients_and_identities(dask_client, tmp_path: Path, kind: str) -> None:
    import parcrypt.dask as pdask

    owner_file = tmp_path / "owner.txt"
    recipient = parcrypt.keygen(owner_file, pq=kind == "pq")
    secret = _secret_line(owner_file.read_text())
    raw_secret = _bech32_data(secret)
    assert len(raw_secret) >= 32
    client = _Recording(dask_client)

    # Many files, each to the recipient; decrypted with the identity file.
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    sizes = [0, 17, 65537, 300_000]
    originals = {}
    for size in sizes:
        path, data = _plain(inputs, size, f"f{size}.bin")
        originals[path.name] = data
    sealed_dir, opened_dir = tmp_path / "sealed", tmp_path / "opened"
    sealed_dir.mkdir()
    opened_dir.mkdir()
    reports = pdask.encrypt_files(sorted(inputs.iterdir()), sealed_dir, recipients=[recipient], client=client)
    assert all(report.ok for report in reports), [report.error for report in reports]
    reports = pdask.decrypt_files(sorted(sealed_dir.iterdir()), opened_dir, identities=[owner_file], client=client)
    assert all(report.ok for report in reports), [report.error for report in reports]
    for name, data in originals.items():
        assert (opened_dir / name).read_bytes() == data
        # Each is a file to recipients that parcrypt itself opens.
        parcrypt.decrypt_file(sealed_dir / (name + ".parcrypt"), tmp_path / f"check-{name}", identities=[owner_file])

    # One large file in ranges, to the recipient and back with the identity's text.
    large, data = _plain(tmp_path, 3 * 1024 * 1024 + 5, "large.bin")
    sealed = tmp_path / "large.parcrypt"
    report = pdask.encrypt_large(large, sealed, recipients=[recipient], client=client, chunks_per_task=37)
    assert report.tasks > 2
    parcrypt.decrypt_file(sealed, tmp_path / "large.check", identities=[owner_file])
    assert (tmp_path / "large.check").read_bytes() == data
    identity_text = owner_file.read_text()
    pdask.decrypt_large(sealed, tmp_path / "large.out", identities=[identity_text], client=client, chunks_per_task=41)
    assert (tmp_path / "large.out").read_bytes() == data
    piece = pdask.decrypt_range(sealed, 1_000_000, 2_500_000, identities=[identity_text], client=client,
                                bytes_per_task=200_000)
    assert piece == data[1_000_000:2_500_000]

    # A wrong identity fails on the client, before any task or output.
    stranger = _keygen(kind)
    before = len(client.pickled)
    with pytest.raises(parcrypt.InvalidTag):
        pdask.decrypt_large(sealed, tmp_path / "nobody", identities=[stranger.identity], client=client)
    assert not (tmp_path / "nobody").exists()
    reports = pdask.decrypt_files([sealed], tmp_path / "opened", identities=[stranger.identity], client=client)
    assert not reports[0].ok and "no identity matches" in (reports[0].error or "")
    assert len(client.pickled) == before

    # What the tasks were given: paths, integers and part keys, never the identity.
    assert len(client.pickled) > len(sizes) * 2
    assert any(str(large).encode() in blob for blob in client.pickled)
    for blob in client.pickled:
        assert secret.encode() not in blob
        assert secret.lower().encode() not in blob
        assert raw_secret not in blob
        assert str(owner_file).encode() not in blob


def test_dask_misuse(dask_client, tmp_path: Path) -> None:
    import parcrypt.dask as pdask

    owner = _keygen("x25519")
    src, _ = _plain(tmp_path, 100)
    with pytest.raises(ValueError, match="exactly one"):
        pdask.encrypt_files([src], tmp_path, recipients=[owner.recipient], key=bytes(16), client=dask_client)
    with pytest.raises(ValueError, match="exactly one"):
        pdask.decrypt_large(src, tmp_path / "x", client=dask_client)
    with pytest.raises(TypeError):
        pdask.encrypt_large(src, tmp_path / "x", identities=[owner.identity], client=dask_client)  # type: ignore[call-arg]
    assert not (tmp_path / "x").exists()


# ---- object stores (fsspec URLs) ----------------------------------------------------------


@pytest.fixture(scope="module")
def store():
    """A moto S3 server on a free port: ``(fs, storage_options)``."""
    pytest.importorskip("s3fs", reason="SKIPPED: s3fs not installed (pip install 'parcrypt[s3]')")
    moto_server = pytest.importorskip("moto.server", reason="SKIPPED: moto[server] not installed")
    import socket

    import s3fs

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    options = {
        "key": "moto-access-key",
        "secret": "moto-secret-access-key",
        "use_listings_cache": False,
        "skip_instance_cache": True,
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
    }
    try:
        fs = s3fs.S3FileSystem(**options)
        fs.call_s3("create_bucket", Bucket="keys")
        yield fs, options
    finally:
        moto.stop()


def test_urls_with_recipients(store, tmp_path: Path) -> None:
    fs, options = store
    owners = [_keygen("pq") for _ in range(50)]
    src, data = _plain(tmp_path, 40 * 16 * 1024 + 7)
    # 50 post-quantum stanzas: a header longer than the 64 KiB a remote plan reads first.
    parcrypt.encrypt_file(src, "s3://keys/many.pc", recipients=[owner.recipient for owner in owners],
                          storage_options=options)
    sealed = fs.cat("keys/many.pc")
    assert _header_length(sealed) > 64 * 1024
    with parcrypt.open("s3://keys/many.pc", identities=[owners[-1].identity], storage_options=options) as reader:
        assert reader.size() == len(data)
        reader.seek(300_000)
        assert reader.read(5000) == data[300_000:305_000]
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open("s3://keys/many.pc", identities=[_keygen("pq").identity], storage_options=options)
    with pytest.raises(ValueError, match="recipients encrypt"):
        parcrypt.open("s3://keys/many.pc", recipients=[owners[0].recipient], storage_options=options)
    # An age file to and from the store (staged whole; recognised by its header).
    owner = _keygen("x25519")
    parcrypt.encrypt_file(src, "s3://keys/file.age", recipients=[owner.recipient], format="age",
                          storage_options=options)
    assert fs.cat("keys/file.age").startswith(b"age-encryption.org/v1\n")
    parcrypt.decrypt_file("s3://keys/file.age", tmp_path / "from-store", identities=[owner.identity],
                          storage_options=options)
    assert (tmp_path / "from-store").read_bytes() == data
    with parcrypt.open("s3://keys/written.age", "wb", recipients=owner.recipient, format="age", armor=True,
                       storage_options=options) as writer:
        writer.write(data[:1000])
    parcrypt.decrypt_file("s3://keys/written.age", tmp_path / "written", identities=[owner.identity],
                          storage_options=options)
    assert (tmp_path / "written").read_bytes() == data[:1000]


def test_dask_urls_with_recipients(dask_client, store, tmp_path: Path) -> None:
    import parcrypt.dask as pdask

    fs, options = store
    pdask.register_storage_options(dask_client, options)
    owner_file = tmp_path / "owner.txt"
    recipient = parcrypt.keygen(owner_file)
    blobs = {f"in/{size}.bin": random.Random(size).randbytes(size) for size in (0, 17, 100_000)}
    for name, data in blobs.items():
        fs.pipe(f"keys/{name}", data)
    client = _Recording(dask_client)
    reports = pdask.encrypt_files("s3://keys/in/*.bin", "s3://keys/sealed/", recipients=[recipient],
                                  client=client, storage_options=options)
    assert all(report.ok for report in reports), [report.error for report in reports]
    reports = pdask.decrypt_files("s3://keys/sealed/*.parcrypt", "s3://keys/opened/", identities=[owner_file],
                                  client=client, storage_options=options)
    assert all(report.ok for report in reports), [report.error for report in reports]
    for name, data in blobs.items():
        assert fs.cat(f"keys/opened/{name.split('/')[1]}") == data
    piece = pdask.decrypt_range("s3://keys/sealed/100000.bin.parcrypt", 10, 90_000, identities=[owner_file],
                                client=client, storage_options=options, bytes_per_task=32 * 1024)
    assert piece == blobs["in/100000.bin"][10:90_000]
    secret = _secret_line(owner_file.read_text())
    assert client.pickled
    for blob in client.pickled:
        assert secret.encode() not in blob and _bech32_data(secret) not in blob
