"""Threads sharing one reader or writer, the library's warnings, and keys that must be bytes.

Issue 31 finding 6: two threads sharing one reader or writer deadlocked (a Rust mutex taken
while holding the GIL, the GIL released inside). Issue 31 finding 7: the bindings dropped the
library's warnings (a 1-byte passphrase was accepted silently), and a ``key=`` string that
looked like hex was silently decoded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import parcrypt
from conftest import OPENCL_MISSING

# Threads that deadlock never finish: the work runs in a child process, killed at this
# deadline, so that a deadlock fails the test instead of hanging the suite. The work itself
# takes a second or two.
DEADLINE_SECONDS = 60

SHARED_HANDLES = textwrap.dedent(
    """
    import os, random, sys, threading
    import parcrypt

    sys.setswitchinterval(1e-6)  # hand the GIL over as often as possible
    folder = sys.argv[1]
    key = bytes(range(16))
    plain = os.urandom(300_000)
    sealed = os.path.join(folder, "sealed")
    with parcrypt.open(sealed, "wb", key=key, backend="seq") as writer:
        writer.write(plain)
    reader = parcrypt.open(sealed, key=key, backend="seq")
    shared = parcrypt.open(os.path.join(folder, "shared"), "wb", key=key, backend="seq")
    failures = []

    def read_and_seek(seed):
        generator = random.Random(seed)
        try:
            for _ in range(300):
                start = generator.randrange(len(plain))
                reader.seek(start)
                reader.tell()
                reader.size()
                buffer = bytearray(generator.randrange(1, 40_000))
                reader.readinto(buffer)
                reader.read(generator.randrange(1, 40_000))
                reader.closed
        except Exception as error:  # a wrong byte is not what this checks: progress is
            failures.append(repr(error))

    def write(seed):
        try:
            for _ in range(300):
                shared.write(bytes([seed]) * 3000)
                shared.closed
        except Exception as error:
            failures.append(repr(error))

    threads = [threading.Thread(target=read_and_seek, args=(seed,)) for seed in range(4)]
    threads += [threading.Thread(target=write, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shared.close()
    reader.close()
    assert not failures, failures
    with parcrypt.open(os.path.join(folder, "shared"), key=key) as check:
        written = check.read()
    # Each write is whole: 1200 runs of 3000 equal bytes, in some order.
    assert len(written) == 4 * 300 * 3000, len(written)
    for start in range(0, len(written), 3000):
        assert len(set(written[start:start + 3000])) == 1
    print("finished")
    """
)


def test_threads_sharing_a_reader_and_a_writer_make_progress(tmp_path: Path) -> None:
    # Issue 31 finding 6: this deadlocked (a thread holding the GIL waited on the handle's
    # lock, whose holder waited for the GIL to come back from its read).
    try:
        done = subprocess.run(
            [sys.executable, "-c", SHARED_HANDLES, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"threads sharing one reader and one writer did not finish in {DEADLINE_SECONDS} s: deadlock")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "finished"


def test_a_short_passphrase_warns(tmp_path: Path) -> None:
    # Issue 31 finding 7: a 1-byte passphrase was accepted without a word (the CLI warns).
    (tmp_path / "plain").write_bytes(b"some plaintext")
    with pytest.warns(parcrypt.ParcryptWarning, match="passphrase is only 1 bytes") as caught:
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", passphrase="x")
    # Attributed to the line that asked, not to parcrypt's own code.
    assert caught[0].filename == __file__
    assert parcrypt.decrypt_file(tmp_path / "sealed", tmp_path / "again", passphrase="x") == 14
    with pytest.warns(parcrypt.ParcryptWarning, match="passphrase is only 3 bytes") as caught:
        with parcrypt.open(tmp_path / "written", "wb", passphrase=b"abc") as writer:
            writer.write(b"more")
    assert caught[0].filename == __file__
    # The cluster paths plan through parcrypt.parts (parcrypt.dask too).
    with pytest.warns(parcrypt.ParcryptWarning, match="passphrase is only 2 bytes") as caught:
        parcrypt.parts.plan_encrypt(tmp_path / "plain", passphrase="ab")
    assert caught[0].filename == __file__
    assert issubclass(parcrypt.ParcryptWarning, UserWarning)


def test_keys_and_long_passphrases_do_not_warn(tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "a", key=bytes(16))
        parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "b", passphrase="eight by")
        with parcrypt.open(tmp_path / "c", "wb", key=bytes(32)) as writer:
            writer.write(b"x")


def test_a_warning_made_an_error_stops_before_any_file(tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"x")
    with warnings.catch_warnings():
        warnings.simplefilter("error", parcrypt.ParcryptWarning)
        with pytest.raises(parcrypt.ParcryptWarning):
            parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", passphrase="x")
        with pytest.raises(parcrypt.ParcryptWarning):
            parcrypt.open(tmp_path / "written", "wb", passphrase="x")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain"]


HEX_KEY = "000102030405060708090a0b0c0d0e0f"


def test_a_str_key_is_refused_everywhere(tmp_path: Path) -> None:
    # Issue 31 finding 7: a key= string that looked like hex was silently decoded.
    (tmp_path / "plain").write_bytes(b"x")
    parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", key=bytes.fromhex(HEX_KEY))
    calls = {
        "Cipher": lambda key: parcrypt.Cipher("aes-128-gcm", key),
        "encrypt_file": lambda key: parcrypt.encrypt_file(tmp_path / "plain", tmp_path / "new", key=key),
        "decrypt_file": lambda key: parcrypt.decrypt_file(tmp_path / "sealed", tmp_path / "out", key=key),
        "open rb": lambda key: parcrypt.open(tmp_path / "sealed", key=key),
        "open wb": lambda key: parcrypt.open(tmp_path / "new", "wb", key=key),
        "parts.plan_encrypt": lambda key: parcrypt.parts.plan_encrypt(tmp_path / "plain", key=key),
        "parts.plan_decrypt": lambda key: parcrypt.parts.plan_decrypt(tmp_path / "sealed", key=key),
    }
    for name, call in calls.items():
        for text in (HEX_KEY, "not hex at all, sixteen+"):
            with pytest.raises(TypeError, match=r"bytes\.fromhex") as refused:
                call(text)
            assert "key" in str(refused.value), name
    assert sorted(path.name for path in tmp_path.iterdir()) == ["plain", "sealed"]
    # Bytes-like keys of every kind still work.
    for key in (bytes.fromhex(HEX_KEY), bytearray.fromhex(HEX_KEY), memoryview(bytes.fromhex(HEX_KEY))):
        with parcrypt.open(tmp_path / "sealed", key=key) as reader:
            assert reader.read() == b"x"


TABLE_AES = textwrap.dedent(
    """
    import warnings
    import parcrypt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parcrypt.Cipher("aes-128-gcm", bytes(16), backend="opencl")
        parcrypt.Aead("aes-256-gcm", bytes(32), backend="opencl")
        parcrypt.Cipher("aes-128-ctr", bytes(16), backend="opencl")
        parcrypt.Cipher("rc6-128-ctr", bytes(16), backend="opencl")
        parcrypt.Cipher("aes-128-gcm", bytes(16), backend="seq")
    for warning in caught:
        assert warning.category is parcrypt.ParcryptWarning, warning
        print(warning.message)
    """
)


@pytest.mark.skipif(OPENCL_MISSING is not None, reason=f"SKIPPED: no OpenCL here: {OPENCL_MISSING}")
def test_table_aes_on_a_named_cpu_opencl_device_warns_once_per_process() -> None:
    # Issue 31 finding 7: AES on a device whose table lookups are not constant time (PoCL, a
    # CPU OpenCL device) was run without a word. A cipher or AEAD made on it warns once per
    # process (the engine remembers what it said); RC6 has no tables and never warns, and
    # `seq` runs AES on AES instructions.
    run = subprocess.run(
        [sys.executable, "-c", TABLE_AES],
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1, lines
    assert "not constant time" in lines[0], lines[0]
