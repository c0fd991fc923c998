#!/usr/bin/env python3
"""Writes parcrypt_v2.txt: known answers for the version-2 parcrypt header (files encrypted
to public-key recipients), from docs/FORMAT.md alone.

Independent of parcrypt's Rust code: X25519, ChaCha20-Poly1305 and AES-GCM come from the
Python `cryptography` package, HKDF and HMAC from the standard library, and age's X25519
stanza is built here as c2sp.org/age specifies it, with fixed ephemeral secrets (age draws
them at random, so a file parcrypt writes never repeats these bytes). Every fixed input is
SHA-256 of a label (the 128-bit file key: its first 16 bytes), so the file can be made
again:

    python3 tests/vectors/parcrypt_v2_gen.py > tests/vectors/parcrypt_v2.txt

crates/format/tests/vectors_v2.rs checks every value against parcrypt's code.
"""

import base64
import hashlib
import hmac
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

CHUNK = 16384


def fixed(label):
    return hashlib.sha256(b"parcrypt v2 test vector: " + label.encode()).digest()


# --- bech32 (BIP 173), without the 90-character limit, as age uses it ---------------------

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32_polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        b = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((b >> i) & 1) else 0
    return chk


def bech32_encode(hrp, data):
    bits, acc, out = 0, 0, []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            out.append((acc >> bits) & 31)
    if bits:
        out.append((acc << (5 - bits)) & 31)
    hrp_expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = bech32_polymod(hrp_expanded + out + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(CHARSET[d] for d in out + checksum)


# --- primitives -------------------------------------------------------------------------


def hkdf_sha256(ikm, salt, info, length):
    prk = hmac.new(salt if salt else b"\0" * 32, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def hkdf_expand_sha512(prk, info, length):
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha512).digest()
        out += block
        counter += 1
    return out[:length]


def x25519_public(secret):
    return (
        X25519PrivateKey.from_private_bytes(secret)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def x25519(secret, public):
    return X25519PrivateKey.from_private_bytes(secret).exchange(
        X25519PublicKey.from_public_bytes(public)
    )


def b64(data):
    return base64.b64encode(data).decode().rstrip("=")


# --- the format ---------------------------------------------------------------------------

SUITES = {"aes-128-gcm": (1, 16, "AEAD_AES_128_GCM"), "aes-256-gcm": (2, 32, "AEAD_AES_256_GCM")}


def stanza_bytes(kind, args, body):
    out = bytes([len(kind)]) + kind + bytes([len(args)])
    for arg in args:
        out += struct.pack(">H", len(arg)) + arg
    return out + struct.pack(">H", len(body)) + body


def vector(name, suite, recipient_secrets, identity_index, context, plaintext, out):
    aead_id, key_bytes, aead_name = SUITES[suite]
    recipients = [x25519_public(s) for s in recipient_secrets]
    # The file key is 128 bits, as age's: one stanza per recipient wraps it.
    file_key = fixed(name + " file key")[:16]
    fields = []
    fields.append(("aead", suite))
    fields.append(("recipients", " ".join(bech32_encode("age", r) for r in recipients)))
    for i, r in enumerate(recipients):
        fields.append((f"recipient_{i}_public_key", r.hex()))
    identity_secret = recipient_secrets[identity_index]
    fields.append(
        ("identity", bech32_encode("age-secret-key-", identity_secret).upper())
    )
    fields.append(("identity_recipient", str(identity_index)))
    fields.append(("identity_secret_key", identity_secret.hex()))
    fields.append(("file_key", file_key.hex()))
    stanzas = b""
    for index, public in enumerate(recipients):
        ephemeral = fixed(f"{name} stanza {index} ephemeral")
        share = x25519_public(ephemeral)
        shared = x25519(ephemeral, public)
        wrap_key = hkdf_sha256(shared, share + public, b"age-encryption.org/v1/X25519", 32)
        body = ChaCha20Poly1305(wrap_key).encrypt(b"\0" * 12, file_key, b"")
        stanzas += stanza_bytes(b"X25519", [b64(share).encode()], body)
        fields.append((f"stanza_{index}_ephemeral_secret", ephemeral.hex()))
        fields.append((f"stanza_{index}_share", share.hex()))
        fields.append((f"stanza_{index}_shared_secret", shared.hex()))
        fields.append((f"stanza_{index}_wrap_key", wrap_key.hex()))
        fields.append((f"stanza_{index}_body", body.hex()))
    length = 18 + len(stanzas) + 32
    covered = (
        b"parcrypt"
        + bytes([2, aead_id, 3, 0])
        + struct.pack(">I", length)
        + struct.pack(">H", len(recipients))
        + stanzas
    )
    mac_key = hkdf_sha256(file_key, b"", b"parcrypt v2 header MAC", 32)
    mac = hmac.new(mac_key, covered, hashlib.sha256).digest()
    header = covered + mac
    input_key = hkdf_sha256(file_key, b"", b"parcrypt v2 payload key", key_bytes)
    salt = fixed(name + " cobblestone salt")[:24]
    info = b"c2sp.org/chunked-encryption@v1+" + aead_name.encode() + b"\0" + salt + header + context
    okm = hkdf_expand_sha512(input_key, info, key_bytes + 12 + 32)
    chunk_key, base_nonce, commitment = okm[:key_bytes], okm[key_bytes : key_bytes + 12], okm[key_bytes + 12 :]
    chunks = b""
    count = len(plaintext) // CHUNK + 1
    for k in range(count):
        nonce = base_nonce[:4] + bytes(a ^ b for a, b in zip(base_nonce[4:], struct.pack(">Q", k)))
        chunks += AESGCM(chunk_key).encrypt(nonce, plaintext[k * CHUNK : (k + 1) * CHUNK], b"")
    fields += [
        ("header_mac_key", mac_key.hex()),
        ("header_mac", mac.hex()),
        ("header", header.hex()),
        ("input_key", input_key.hex()),
        ("context", context.hex()),
        ("cobblestone_salt", salt.hex()),
        ("chunk_key", chunk_key.hex()),
        ("base_nonce", base_nonce.hex()),
        ("commitment", commitment.hex()),
        ("plaintext", plaintext.hex()),
        ("file", (header + salt + commitment + chunks).hex()),
    ]
    out.write(f"[{name}]\n")
    for key, value in fields:
        out.write(f"{key} = {value}\n" if value else f"{key} =\n")
    out.write("\n")


def main(out):
    out.write(
        "# Known answers for parcrypt's version-2 header (files encrypted to public-key\n"
        "# recipients, docs/FORMAT.md), made by tests/vectors/parcrypt_v2_gen.py from the\n"
        "# specification alone (Python's cryptography and hashlib, not parcrypt's code).\n"
        "# Every fixed input is SHA-256(\"parcrypt v2 test vector: \" || label) (the 16-byte\n"
        "# file key: its first 16 bytes); the X25519 stanzas, one per recipient (stanza_i for\n"
        "# recipient i), use fixed ephemeral secrets where age draws them at random.\n"
        "# Text fields: aead, recipients (space-separated), identity, identity_recipient (the\n"
        "# index of the recipient the identity opens). The rest is hex; `file` is the whole\n"
        "# file: header || Cobblestone salt || commitment || chunks.\n"
        "# Checked by crates/format/tests/vectors_v2.rs.\n\n"
    )
    vector(
        "x25519-aes-128-gcm",
        "aes-128-gcm",
        [fixed("identity")],
        0,
        b"",
        b"parcrypt files to age recipients\n",
        out,
    )
    vector(
        "two-x25519-aes-256-gcm-context",
        "aes-256-gcm",
        [fixed("other identity"), fixed("identity")],
        1,
        b"backup 2026-11-28",
        b"",
        out,
    )


if __name__ == "__main__":
    main(sys.stdout)
