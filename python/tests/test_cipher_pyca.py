"""Every AES and Blowfish suite against pyca/cryptography, on every backend."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("cryptography", reason="SKIPPED: pyca/cryptography is not installed")
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher as PycaCipher
from cryptography.hazmat.primitives.ciphers import algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

try:
    from cryptography.hazmat.decrepit.ciphers.algorithms import Blowfish
except ImportError:  # older cryptography
    Blowfish = getattr(algorithms, "Blowfish", None)

import parcrypt
from conftest import BACKENDS, SIZES


def pyca_encrypt(algorithm, mode: str, key: bytes, iv: bytes | None, data: bytes, aad: bytes | None) -> bytes:
    if mode == "gcm":
        return AESGCM(key).encrypt(iv, data, aad)
    block_bits = algorithm.block_size
    if mode in ("ecb", "cbc"):
        padder = padding.PKCS7(block_bits).padder()
        data = padder.update(data) + padder.finalize()
    pyca_mode = {"ecb": lambda: modes.ECB(), "cbc": lambda: modes.CBC(iv), "ctr": lambda: modes.CTR(iv)}[mode]()
    encryptor = PycaCipher(algorithm, pyca_mode).encryptor()
    return encryptor.update(data) + encryptor.finalize()


AES_SUITES = [(bits, mode) for bits in (128, 192, 256) for mode in ("ecb", "cbc", "ctr", "gcm")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("bits,mode", AES_SUITES)
def test_aes_matches_pyca(backend: str, size: int, bits: int, mode: str) -> None:
    key = os.urandom(bits // 8)
    iv = None if mode == "ecb" else os.urandom(12 if mode == "gcm" else 16)
    aad = os.urandom(size % 37) if mode == "gcm" else None
    data = os.urandom(size)
    cipher = parcrypt.Cipher(f"aes-{bits}-{mode}", key, iv, backend=backend)
    sealed = cipher.encrypt(data, aad)
    assert sealed == pyca_encrypt(algorithms.AES(key), mode, key, iv, data, aad)
    assert cipher.decrypt(sealed, aad) == data


@pytest.mark.skipif(Blowfish is None, reason="SKIPPED: this cryptography has no Blowfish")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["ecb", "cbc"])
@pytest.mark.parametrize("key_bytes", [4, 16, 56])
def test_blowfish_matches_pyca(backend: str, size: int, mode: str, key_bytes: int) -> None:
    key = os.urandom(key_bytes)
    iv = None if mode == "ecb" else os.urandom(8)
    data = os.urandom(size)
    cipher = parcrypt.Cipher(f"bf-{mode}", key, iv, backend=backend)
    sealed = cipher.encrypt(data)
    assert sealed == pyca_encrypt(Blowfish(key), mode, key, iv, data, None)
    assert cipher.decrypt(sealed) == data


@pytest.mark.parametrize("backend", BACKENDS)
def test_gcm_tampering_raises_invalid_tag(backend: str) -> None:
    key, iv = os.urandom(16), os.urandom(12)
    cipher = parcrypt.Cipher("aes-128-gcm", key, iv, backend=backend)
    sealed = bytearray(cipher.encrypt(os.urandom(100_000), b"header"))
    with pytest.raises(parcrypt.InvalidTag):
        cipher.decrypt(bytes(sealed), b"other header")
    for place in (0, len(sealed) // 2, len(sealed) - 1):
        forged = bytearray(sealed)
        forged[place] ^= 1
        out = bytearray(len(sealed))
        with pytest.raises(parcrypt.InvalidTag):
            cipher.decrypt(forged, b"header", out=out)
        # Nothing unauthenticated is left in out.
        assert out == bytearray(len(sealed))
    assert issubclass(parcrypt.InvalidTag, parcrypt.Error)


def test_pyca_interop_both_ways_with_aad() -> None:
    key, iv, aad = os.urandom(32), os.urandom(12), os.urandom(20)
    data = os.urandom(70_001)
    assert parcrypt.Cipher("aes-256-gcm", key, iv).decrypt(AESGCM(key).encrypt(iv, data, aad), aad) == data
    long_iv = os.urandom(16)  # not 12 bytes: GHASH derives the counter
    assert parcrypt.Cipher("aes-256-gcm", key, long_iv).encrypt(data, aad) == AESGCM(key).encrypt(long_iv, data, aad)
