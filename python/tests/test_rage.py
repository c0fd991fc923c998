"""age files between parcrypt and rage's implementation (the Rust ``age`` crate, through its
Python wheel ``pyrage``), in both directions: X25519 recipients (keys made by either side) and
scrypt passphrases, binary and armored, at the sizes around age's 64 KiB chunk.

The rage command line itself (and age 1.3.2, and the post-quantum hybrid keys, which pyrage
does not have) is checked by scripts/age-interop.sh; this file keeps the rage side in every
test run, since a wheel installs in seconds where rage takes minutes to build.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli

try:
    import pyrage
except ImportError:
    if os.environ.get("CI") == "true":
        raise  # scripts/python-test.sh installs it: in CI its absence is a failure
    pytest.skip("SKIPPED: pyrage is not installed (pip install pyrage)", allow_module_level=True)

SIZES = [0, 1, 65535, 65536, 65537, 1024 * 1024 + 3]
PASSPHRASE = "correct horse battery staple"


def _keygen(cli: str, path: Path) -> str:
    """``parcrypt keygen -o path``; returns the recipient it prints."""
    return run_cli(cli, "keygen", "-o", str(path)).decode().strip()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("armored", [False, True], ids=["binary", "armored"])
def test_x25519_both_ways(cli: str, tmp_path: Path, size: int, armored: bool) -> None:
    plain = os.urandom(size)
    (tmp_path / "plain").write_bytes(plain)
    ours_recipient = _keygen(cli, tmp_path / "ours.txt")
    theirs = pyrage.x25519.Identity.generate()
    (tmp_path / "theirs.txt").write_text(f"{theirs}\n")
    os.chmod(tmp_path / "theirs.txt", 0o600)
    recipients = [pyrage.x25519.Recipient.from_str(ours_recipient), theirs.to_public()]

    # rage's library encrypts to both keys; parcrypt opens it with either identity file.
    (tmp_path / "by-rage").write_bytes(pyrage.encrypt(plain, recipients, armored))
    for identity in ("ours.txt", "theirs.txt"):
        out = tmp_path / f"out-{identity}"
        run_cli(cli, "decrypt", "-i", str(tmp_path / identity), str(tmp_path / "by-rage"), "-o", str(out))
        assert out.read_bytes() == plain

    # parcrypt encrypts to both keys; rage's library opens it with either identity.
    args = ["encrypt", "--format", "age", "-r", ours_recipient, "-r", str(theirs.to_public())]
    if armored:
        args.append("-a")
    run_cli(cli, *args, str(tmp_path / "plain"), "-o", str(tmp_path / "by-parcrypt"))
    sealed = (tmp_path / "by-parcrypt").read_bytes()
    assert sealed.startswith(b"-----BEGIN AGE ENCRYPTED FILE-----" if armored else b"age-encryption.org/v1\n")
    ours = pyrage.x25519.Identity.from_str(
        next(line for line in (tmp_path / "ours.txt").read_text().splitlines() if line.startswith("AGE-SECRET-KEY-1"))
    )
    for identity in (ours, theirs):
        assert pyrage.decrypt(sealed, [identity]) == plain


@pytest.mark.parametrize("size", [0, 65537])
def test_passphrase_both_ways(cli: str, tmp_path: Path, size: int) -> None:
    plain = os.urandom(size)
    (tmp_path / "plain").write_bytes(plain)
    (tmp_path / "pass.txt").write_text(PASSPHRASE + "\n")
    (tmp_path / "by-rage").write_bytes(pyrage.passphrase.encrypt(plain, PASSPHRASE))
    out = tmp_path / "out"
    run_cli(cli, "decrypt", "--passphrase-file", str(tmp_path / "pass.txt"), str(tmp_path / "by-rage"), "-o", str(out))
    assert out.read_bytes() == plain

    run_cli(
        cli, "encrypt", "--format", "age", "-p", "--passphrase-file", str(tmp_path / "pass.txt"),
        str(tmp_path / "plain"), "-o", str(tmp_path / "by-parcrypt"),
    )
    assert pyrage.passphrase.decrypt((tmp_path / "by-parcrypt").read_bytes(), PASSPHRASE) == plain
    with pytest.raises(pyrage.DecryptError):
        pyrage.passphrase.decrypt((tmp_path / "by-parcrypt").read_bytes(), PASSPHRASE + "!")


def test_each_refuses_the_others_damaged_or_foreign_file(cli: str, tmp_path: Path) -> None:
    plain = os.urandom(200_000)
    (tmp_path / "plain").write_bytes(plain)
    recipient = _keygen(cli, tmp_path / "ours.txt")
    theirs = pyrage.x25519.Identity.generate()
    (tmp_path / "theirs.txt").write_text(f"{theirs}\n")
    os.chmod(tmp_path / "theirs.txt", 0o600)

    # rage's file with a payload byte flipped: parcrypt refuses it with one line and leaves
    # no output.
    sealed = bytearray(pyrage.encrypt(plain, [pyrage.x25519.Recipient.from_str(recipient)]))
    sealed[-50] ^= 0xFF
    (tmp_path / "damaged").write_bytes(bytes(sealed))
    out = tmp_path / "out"
    done = subprocess.run(
        [cli, "decrypt", "-i", str(tmp_path / "ours.txt"), str(tmp_path / "damaged"), "-o", str(out)],
        capture_output=True,
    )
    assert done.returncode != 0
    assert len(done.stderr.decode().strip().splitlines()) == 1, done.stderr
    assert not out.exists()

    # A file for someone else: parcrypt says so, rage's library too.
    (tmp_path / "foreign").write_bytes(pyrage.encrypt(plain, [theirs.to_public()]))
    done = subprocess.run(
        [cli, "decrypt", "-i", str(tmp_path / "ours.txt"), str(tmp_path / "foreign"), "-o", str(out)],
        capture_output=True,
    )
    assert done.returncode != 0 and not out.exists()
    run_cli(cli, "encrypt", "--format", "age", "-r", recipient, str(tmp_path / "plain"), "-o", str(tmp_path / "ours.age"))
    with pytest.raises(pyrage.DecryptError):
        pyrage.decrypt((tmp_path / "ours.age").read_bytes(), [theirs])
