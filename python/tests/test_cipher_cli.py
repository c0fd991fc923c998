"""Every suite (RC6 included, which no other library here has) against `parcrypt raw`."""

from __future__ import annotations

import os

import pytest

import parcrypt
from conftest import BACKENDS, SIZES, run_cli

SUITES = (
    [f"aes-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("ecb", "cbc", "ctr", "gcm")]
    + ["bf-ecb", "bf-cbc", "bf-ctr"]
    + [f"rc6-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("ecb", "cbc", "ctr", "gcm")]
)


def key_and_iv(suite: str) -> tuple[bytes, bytes | None]:
    algorithm, mode = suite.rsplit("-", 1)
    if algorithm == "bf":
        key, block = os.urandom(1 + int.from_bytes(os.urandom(1), "big") % 56), 8
        key = key if len(key) >= 4 else key * 4
    else:
        key, block = os.urandom(int(algorithm.split("-")[1]) // 8), 16
    if mode == "ecb":
        return key, None
    if mode == "gcm":
        return key, os.urandom(12)
    return key, os.urandom(block)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("suite", SUITES)
def test_suite_matches_cli(cli: str, tmp_path, suite: str, size: int) -> None:
    key, iv = key_and_iv(suite)
    data = os.urandom(size)
    plain = tmp_path / "plain"
    plain.write_bytes(data)
    args = ["raw", "encrypt", "--cipher", suite, "--key", key.hex(), "--backend", "seq", "-q"]
    if iv is not None:
        args += ["--iv", iv.hex()]
    expected = run_cli(cli, *args, str(plain), "-o", "-")
    for backend in [b if isinstance(b, str) else b.values[0] for b in BACKENDS]:
        if backend == "opencl" and not any(
            row["name"] == "opencl" and row["available"] for row in parcrypt.backends()
        ):
            continue
        cipher = parcrypt.Cipher(suite, key, iv, backend=backend)
        assert cipher.encrypt(data) == expected, backend
        assert cipher.decrypt(expected) == data, backend
    # And the CLI decrypts what Python wrote.
    sealed = tmp_path / "sealed"
    sealed.write_bytes(parcrypt.Cipher(suite, key, None if iv is None else iv.hex()).encrypt(data))
    args[1] = "decrypt"
    assert run_cli(cli, *args, str(sealed), "-o", "-") == data
