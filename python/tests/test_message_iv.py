"""One keyed Cipher, an IV per message (``iv=``): the same bytes as pyca/cryptography and as a
Cipher made with that IV, the IV given at creation overridden, and every bad IV refused."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("cryptography", reason="SKIPPED: pyca/cryptography is not installed")
from cryptography.hazmat.primitives.ciphers import Cipher as PycaCipher
from cryptography.hazmat.primitives.ciphers import algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import parcrypt
from conftest import BACKENDS, SIZES

# Around the GCM kernels' seams too: the short path (up to 112 bytes), a 512-byte batch.
MESSAGE_SIZES = sorted(set(SIZES) | {112, 113, 511, 512, 513, 1024 + 7})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bits", [128, 192, 256])
def test_gcm_messages_under_one_key_match_pyca(backend: str, bits: int) -> None:
    key = os.urandom(bits // 8)
    cipher = parcrypt.Cipher(f"aes-{bits}-gcm", key, backend=backend)
    reference = AESGCM(key)
    for size in MESSAGE_SIZES:
        iv, data = os.urandom(12), os.urandom(size)
        aad = os.urandom(size % 41) or None
        sealed = cipher.encrypt(data, aad, iv=iv)
        assert sealed == reference.encrypt(iv, data, aad), size
        assert cipher.decrypt(sealed, aad, iv=iv) == data
        # The same message from a Cipher that was given the IV at creation.
        assert parcrypt.Cipher(f"aes-{bits}-gcm", key, iv, backend=backend).encrypt(data, aad) == sealed


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["cbc", "ctr"])
def test_block_modes_take_a_message_iv(backend: str, mode: str) -> None:
    key = os.urandom(32)
    cipher = parcrypt.Cipher(f"aes-256-{mode}", key, backend=backend)
    for size in (0, 1, 15, 16, 17, 100_003):
        iv, data = os.urandom(16), os.urandom(size)
        pyca_mode = modes.CBC(iv) if mode == "cbc" else modes.CTR(iv)
        if mode == "cbc":
            padded = data + bytes([16 - size % 16]) * (16 - size % 16)
        else:
            padded = data
        encryptor = PycaCipher(algorithms.AES(key), pyca_mode).encryptor()
        expected = encryptor.update(padded) + encryptor.finalize()
        assert cipher.encrypt(data, iv=iv) == expected, size
        assert cipher.decrypt(expected, iv=iv) == data


def test_the_message_iv_wins_over_the_ciphers() -> None:
    key, given, own = os.urandom(16), os.urandom(12), os.urandom(12)
    cipher = parcrypt.Cipher("aes-128-gcm", key, given)
    data = os.urandom(1000)
    assert cipher.encrypt(data, iv=own) == AESGCM(key).encrypt(own, data, None)
    # Without one, the IV given at creation.
    assert cipher.encrypt(data) == AESGCM(key).encrypt(given, data, None)
    # Hex digits, as the CLI takes them.
    assert cipher.encrypt(data, iv=own.hex()) == AESGCM(key).encrypt(own, data, None)


def test_message_iv_into_out_and_in_place() -> None:
    key, iv = os.urandom(16), os.urandom(12)
    cipher = parcrypt.Cipher("aes-128-gcm", key)
    data = bytearray(os.urandom(70_000))
    expected = AESGCM(key).encrypt(iv, bytes(data), b"head")
    out = bytearray(len(data) + 16)
    assert cipher.encrypt(data, b"head", iv=iv, out=out) == len(out)
    assert out == expected
    buffer = bytearray(expected)
    assert cipher.decrypt(buffer, b"head", iv=iv, out=buffer) == len(data)
    assert buffer[: len(data)] == data


def test_a_forged_message_under_a_message_iv_releases_nothing() -> None:
    key, iv = os.urandom(16), os.urandom(12)
    cipher = parcrypt.Cipher("aes-128-gcm", key)
    sealed = cipher.encrypt(os.urandom(5000), iv=iv)
    out = bytearray(b"\x55" * len(sealed))
    with pytest.raises(parcrypt.InvalidTag):
        cipher.decrypt(sealed, iv=os.urandom(12), out=out)
    assert out[: len(sealed) - 16] == bytes(len(sealed) - 16)


def test_bad_ivs_are_refused_with_a_reason() -> None:
    key = os.urandom(16)
    gcm = parcrypt.Cipher("aes-128-gcm", key)
    with pytest.raises(ValueError, match="needs an IV: give iv="):
        gcm.encrypt(b"data")
    with pytest.raises(ValueError, match="needs an IV: give iv="):
        gcm.decrypt(bytes(32))
    with pytest.raises(ValueError):
        gcm.encrypt(b"data", iv=b"")
    with pytest.raises(ValueError, match="hex"):
        gcm.encrypt(b"data", iv="not hex")
    with pytest.raises(TypeError):
        gcm.encrypt(b"data", iv=12)
    ctr = parcrypt.Cipher("aes-128-ctr", key)
    with pytest.raises(ValueError, match="16 bytes"):
        ctr.encrypt(b"data", iv=os.urandom(12))
    ecb = parcrypt.Cipher("aes-128-ecb", key)
    with pytest.raises(ValueError, match="takes no IV"):
        ecb.encrypt(b"data", iv=os.urandom(16))
    # An IV given at creation is checked there.
    with pytest.raises(ValueError, match="16 bytes"):
        parcrypt.Cipher("aes-128-cbc", key, os.urandom(8))
