"""parcrypt.Aead: AES-GCM under a fresh random nonce per message, checked against pyca."""

import threading

import pytest
from cryptography.exceptions import InvalidTag as PycaInvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import parcrypt
from conftest import run_threads

SIZES = [0, 1, 15, 16, 17, 1000, (1 << 20) + 3]
SUITES = ["aes-128-gcm", "aes-192-gcm", "aes-256-gcm"]


def message(size: int) -> bytes:
    return (bytes(range(7, 256, 3)) * (size // 83 + 1))[:size]


@pytest.mark.parametrize("suite", SUITES)
@pytest.mark.parametrize("backend", ["seq", "pool"])
def test_round_trip_and_pyca_opens_it(suite: str, backend: str) -> None:
    key = parcrypt.Aead.generate_key(suite)
    assert len(key) == int(suite[4:7]) // 8
    aead = parcrypt.Aead(suite, key, backend=backend)
    for size in SIZES:
        plain = message(size)
        sealed = aead.seal(plain, aad=b"header")
        assert isinstance(sealed, bytes) and len(sealed) == size + 28
        assert aead.open(sealed, aad=b"header") == plain
        # The layout is nonce || ciphertext || tag: pyca opens it with the first 12 bytes.
        assert AESGCM(key).decrypt(sealed[:12], sealed[12:], b"header") == plain
        # And parcrypt opens what pyca seals that way.
        nonce = sealed[:12]
        assert aead.open(nonce + AESGCM(key).encrypt(nonce, plain, None)) == plain


def test_two_seals_of_one_message_differ() -> None:
    aead = parcrypt.Aead("aes-128-gcm", parcrypt.Aead.generate_key("aes-128-gcm"))
    first, second = aead.seal(b"same words"), aead.seal(b"same words")
    assert first[:12] != second[:12]
    assert first[12:] != second[12:]
    nonces = {aead.seal(b"")[:12] for _ in range(1000)}
    assert len(nonces) == 1000


def test_forgeries_truncation_and_wrong_aad_are_refused() -> None:
    key = parcrypt.Aead.generate_key("aes-256-gcm")
    aead = parcrypt.Aead("aes-256-gcm", key, backend="seq")
    sealed = aead.seal(b"sixteen bytes!!!", b"header")
    for index in [0, 11, 12, 27, len(sealed) - 1]:
        forged = bytearray(sealed)
        forged[index] ^= 0x80
        with pytest.raises(parcrypt.InvalidTag):
            aead.open(bytes(forged), b"header")
    with pytest.raises(parcrypt.InvalidTag):
        aead.open(sealed, b"other")
    with pytest.raises(parcrypt.InvalidTag):
        aead.open(sealed)
    for length in range(28):
        with pytest.raises(parcrypt.InvalidTag, match="too short for a sealed message"):
            aead.open(sealed[:length], b"header")
    for length in range(28, len(sealed)):
        with pytest.raises(parcrypt.InvalidTag):
            aead.open(sealed[:length], b"header")
    # pyca agrees that the forgery is one.
    forged = bytearray(sealed)
    forged[-1] ^= 1
    with pytest.raises(PycaInvalidTag):
        AESGCM(key).decrypt(bytes(forged[:12]), bytes(forged[12:]), b"header")


def test_buffers_of_every_kind_and_threads() -> None:
    aead = parcrypt.Aead("aes-128-gcm", bytes(range(16)))
    plain = bytearray(b"x" * 50_000)
    sealed = aead.seal(memoryview(plain), aad=bytearray(b"aad"))
    assert aead.open(bytearray(sealed), aad=memoryview(b"aad")) == bytes(plain)
    results: list[bytes] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(20):
            got = aead.open(aead.seal(b"from a thread"))
            with lock:
                results.append(got)

    run_threads([work] * 4)
    assert results == [b"from a thread"] * 80


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="not an AES-GCM suite"):
        parcrypt.Aead("aes-128-ctr", bytes(16))
    with pytest.raises(ValueError, match="not an AES-GCM suite"):
        parcrypt.Aead("rc6-128-gcm", bytes(16))
    with pytest.raises(ValueError, match="not an AES-GCM suite"):
        parcrypt.Aead.generate_key("bf-cbc")
    with pytest.raises(ValueError):
        parcrypt.Aead("aes-128-gcm", bytes(15))
    with pytest.raises(TypeError, match="bytes.fromhex"):
        parcrypt.Aead("aes-128-gcm", "00" * 16)  # type: ignore[arg-type]
    aead = parcrypt.Aead("aes-256-gcm", bytes(32), backend="seq")
    assert aead.name == "aes-256-gcm" and aead.backend == "seq"
    assert repr(aead) == "parcrypt.Aead('aes-256-gcm', backend='seq')"
