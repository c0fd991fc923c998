"""Files: byte-compatible with the CLI both ways, random access, tampering, interruption."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest

import parcrypt
from conftest import run_cli

SIZES = [0, 1, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 5 * 1024 * 1024 + 77]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("key_bytes", [16, 32])
def test_cli_writes_python_reads(cli: str, tmp_path, size: int, key_bytes: int) -> None:
    data = os.urandom(size)
    key = os.urandom(key_bytes)
    (tmp_path / "plain").write_bytes(data)
    run_cli(cli, "encrypt", "-q", "--key", key.hex(), str(tmp_path / "plain"), "-o", str(tmp_path / "sealed"))
    assert parcrypt.decrypt_file(tmp_path / "sealed", tmp_path / "again", key=key) == size
    assert (tmp_path / "again").read_bytes() == data
    with parcrypt.open(tmp_path / "sealed", key=key) as reader:
        assert reader.read() == data
        assert reader.size() == size


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("backend", ["seq", "pool"])
def test_python_writes_cli_reads(cli: str, tmp_path, size: int, backend: str) -> None:
    data = os.urandom(size)
    key = os.urandom(16)
    (tmp_path / "plain").write_bytes(data)
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "whole", key=key, backend=backend)
    with parcrypt.open(tmp_path / "streamed", "wb", key=key, backend=backend) as writer:
        view = memoryview(data)
        step = random.randint(1, 40_000)
        for start in range(0, size, step):
            assert writer.write(view[start : start + step]) == len(view[start : start + step])
    for name in ("whole", "streamed"):
        out = run_cli(cli, "decrypt", "-q", "--key", key.hex(), str(tmp_path / name), "-o", "-")
        assert out == data, name


def test_passphrase_both_ways(cli: str, tmp_path) -> None:
    data = os.urandom(100_000)
    (tmp_path / "plain").write_bytes(data)
    env = {"PARCRYPT_PASSPHRASE": "correct horse battery staple"}
    run_cli(cli, "encrypt", "-q", str(tmp_path / "plain"), "-o", str(tmp_path / "by-cli"), env=env)
    with parcrypt.open(tmp_path / "by-cli", passphrase="correct horse battery staple") as reader:
        assert reader.read() == data
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "by-python", passphrase=b"correct horse battery staple")
    assert run_cli(cli, "decrypt", "-q", str(tmp_path / "by-python"), "-o", "-", env=env) == data
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open(tmp_path / "by-python", passphrase="wrong horse")
    with pytest.raises(ValueError):
        parcrypt.open(tmp_path / "by-python", key=os.urandom(16))


def test_random_seeks_match_the_plaintext(tmp_path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 12345)
    key = os.urandom(32)
    (tmp_path / "plain").write_bytes(data)
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", key=key)
    rng = random.Random(15)
    with parcrypt.open(tmp_path / "sealed", "rb", key=key) as reader:
        assert reader.seekable() and reader.readable()
        for _ in range(200):
            start = rng.randrange(0, len(data) + 10)
            length = rng.choice([0, 1, 15, 16 * 1024, 100_000, rng.randrange(1, 70_000)])
            assert reader.seek(start) == start
            assert reader.read(length) == data[start : start + length]
            assert reader.tell() == max(start, min(start + length, len(data)))
        assert reader.seek(-100, os.SEEK_END) == len(data) - 100
        buffer = bytearray(200)
        assert reader.readinto(buffer) == 100 and buffer[:100] == data[-100:]
        reader.seek(1000)
        assert reader.seek(500, os.SEEK_CUR) == 1500
        assert reader.read(10) == data[1500:1510]
        # A huge size reads what is left, and allocates no more.
        reader.seek(len(data) - 7)
        assert reader.read(10**15) == data[-7:]
    with pytest.raises(ValueError):
        reader.read(1)


def test_tampered_files_raise_and_return_nothing(tmp_path) -> None:
    data = os.urandom(200_000)
    key = os.urandom(16)
    (tmp_path / "plain").write_bytes(data)
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", key=key)
    sealed = (tmp_path / "sealed").read_bytes()
    chunk = 16 * 1024 + 16
    header = len(sealed) - (len(data) // (16 * 1024) * chunk + len(data) % (16 * 1024) + 16)
    for place in (header + 5, header + chunk * 3 + 100, len(sealed) - 1):
        forged = bytearray(sealed)
        forged[place] ^= 0x40
        (tmp_path / "forged").write_bytes(forged)
        with pytest.raises(parcrypt.InvalidTag):
            parcrypt.decrypt_file(tmp_path / "forged", tmp_path / "out", key=key)
        assert not (tmp_path / "out").exists()
        with parcrypt.open(tmp_path / "forged", key=key) as reader:
            pieces = []
            with pytest.raises(parcrypt.InvalidTag):
                while True:
                    piece = reader.read(16 * 1024)
                    if not piece:
                        break
                    pieces.append(piece)
            # What came back before the failure is authenticated and right.
            got = b"".join(pieces)
            assert data.startswith(got) and len(got) < len(data)
    # Truncated and extended files fail too.
    for forged in (sealed[:-1], sealed[: header + chunk * 2], sealed + b"\0"):
        (tmp_path / "forged").write_bytes(forged)
        with pytest.raises(parcrypt.Error):
            parcrypt.decrypt_file(tmp_path / "forged", tmp_path / "out", key=key)
        assert not (tmp_path / "out").exists()
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file(tmp_path / "sealed", tmp_path / "out", key=os.urandom(16))
    assert not (tmp_path / "out").exists()


def test_interrupted_writes_leave_no_file(tmp_path) -> None:
    key = os.urandom(16)
    target = tmp_path / "never"
    with pytest.raises(RuntimeError):
        with parcrypt.open(target, "wb", key=key) as writer:
            writer.write(os.urandom(100_000))
            raise RuntimeError("interrupted")
    assert not target.exists()

    writer = parcrypt.open(target, "wb", key=key)
    writer.write(b"abandoned")
    del writer
    assert not target.exists()

    # A process killed while writing leaves nothing either (not even a temporary file).
    script = textwrap.dedent(
        f"""
        import os, sys, parcrypt
        writer = parcrypt.open({str(target)!r}, "wb", key=bytes(16))
        writer.write(os.urandom(5_000_000))
        print("written", flush=True)
        sys.stdin.read()
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"written"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert sorted(os.listdir(tmp_path)) == []


def test_file_errors_are_oserrors(tmp_path) -> None:
    key = os.urandom(16)
    with pytest.raises(FileNotFoundError):
        parcrypt.encrypt_file(tmp_path / "missing", tmp_path / "out", key=key)
    (tmp_path / "plain").write_bytes(b"x")
    (tmp_path / "out").write_bytes(b"there")
    with pytest.raises(FileExistsError):
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "out", key=key)
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "out", key=key, overwrite=True)
    with pytest.raises(OSError):
        parcrypt.open(tmp_path / "missing", key=key)
    with pytest.raises(ValueError):
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "other", key=os.urandom(20))
    with pytest.raises(ValueError):
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "other")
    with pytest.raises(ValueError):
        parcrypt.open(tmp_path / "plain", "ab", key=key)
    with pytest.raises(parcrypt.Error):
        parcrypt.decrypt_file(tmp_path / "plain", tmp_path / "other", key=key)
