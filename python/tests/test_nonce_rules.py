"""Nonces that cannot be reused by accident (issue 31 finding 3): a Cipher's IV encrypts one
message, and GCM IVs shorter than 12 bytes need allow_short_gcm_iv=True."""

import threading

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import parcrypt
from conftest import run_threads

KEY = bytes(range(16))


@pytest.mark.parametrize(
    "suite,iv",
    [("aes-128-gcm", bytes(12)), ("aes-128-ctr", bytes(16)), ("aes-128-cbc", bytes(16)), ("bf-ctr", bytes(8))],
)
def test_a_cipher_iv_encrypts_one_message(suite: str, iv: bytes) -> None:
    # Issue 31 finding 3: Cipher(name, key, iv) encrypted every message under the same IV,
    # so two CTR or GCM ciphertexts XOR to the XOR of their plaintexts.
    cipher = parcrypt.Cipher(suite, KEY, iv)
    first = cipher.encrypt(b"a" * 32)
    with pytest.raises(parcrypt.Error, match="IV of its own"):
        cipher.encrypt(b"b" * 32)
    with pytest.raises(parcrypt.Error):
        cipher.encrypt(b"b" * 32, out=bytearray(64))
    # Decryption may use the IV again and again.
    assert cipher.decrypt(first) == b"a" * 32
    assert cipher.decrypt(first) == b"a" * 32
    # A per-message IV still encrypts more messages.
    other = bytes([1]) * len(iv)
    assert cipher.decrypt(cipher.encrypt(b"c" * 32, iv=other), iv=other) == b"c" * 32


def test_a_refused_size_leaves_the_iv_unspent() -> None:
    cipher = parcrypt.Cipher("aes-128-gcm", KEY, bytes(12))
    with pytest.raises(ValueError, match="needs 20"):
        cipher.encrypt(b"four", out=bytearray(8))
    assert cipher.decrypt(cipher.encrypt(b"four")) == b"four"


def test_threads_racing_for_the_iv_let_exactly_one_encrypt() -> None:
    for _ in range(20):
        cipher = parcrypt.Cipher("aes-128-gcm", KEY, bytes(12))
        barrier = threading.Barrier(8)
        outcomes: list[str] = []
        lock = threading.Lock()

        def race() -> None:
            barrier.wait()
            try:
                # Large enough that the GIL is released while the engine works.
                cipher.encrypt(bytes(64 * 1024))
                outcome = "encrypted"
            except parcrypt.Error:
                outcome = "refused"
            with lock:
                outcomes.append(outcome)

        run_threads([race] * 8)
        assert sorted(outcomes) == ["encrypted"] + ["refused"] * 7


@pytest.mark.parametrize("length", [1, 8, 11])
def test_short_gcm_ivs_need_an_explicit_opt_in(length: int) -> None:
    # Issue 31 finding 3: a 1-byte GCM IV was accepted.
    iv = bytes(range(1, length + 1))
    with pytest.raises(ValueError, match="allow_short_gcm_iv"):
        parcrypt.Cipher("aes-128-gcm", KEY, iv)
    keyed = parcrypt.Cipher("aes-128-gcm", KEY)
    with pytest.raises(ValueError, match="GCM IV is refused"):
        keyed.encrypt(b"data", iv=iv)
    allowed = parcrypt.Cipher("aes-128-gcm", KEY, iv, allow_short_gcm_iv=True)
    sealed = allowed.encrypt(b"data")
    if length >= 8:  # pyca takes GCM nonces of 8 bytes or more
        assert sealed == AESGCM(KEY).encrypt(iv, b"data", None)
    assert allowed.decrypt(sealed) == b"data"


def test_twelve_bytes_and_more_need_no_opt_in() -> None:
    for length in (12, 16, 60):
        iv = bytes(range(length))
        assert parcrypt.Cipher("aes-128-gcm", KEY, iv).encrypt(b"x") == AESGCM(KEY).encrypt(iv, b"x", None)
