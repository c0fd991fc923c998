//! HPKE (RFC 9180) base mode with the MLKEM768-X25519 KEM (X-Wing, draft-ietf-hpke-pq),
//! HKDF-SHA256 and ChaCha20-Poly1305: exactly what age's `mlkem768x25519` stanza needs (one
//! sealed message per context, so sequence number 0 only).

use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use hkdf::Hkdf;
use ml_kem::array::Array;
use ml_kem::kem::Decapsulate;
use ml_kem::{DecapsulationKey768, EncapsulationKey768, KeyExport};
use sha2::Sha256;
use sha3::{Digest, Sha3_256};
use shake::{ExtendableOutput, Shake256, Update, XofReader};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

/// ML-KEM-768 encapsulation key bytes.
pub(crate) const MLKEM_PK: usize = 1184;
/// ML-KEM-768 ciphertext bytes.
pub(crate) const MLKEM_CT: usize = 1088;
/// The hybrid public key: ML-KEM-768 encapsulation key, then the X25519 point.
pub(crate) const PUBLIC_KEY: usize = MLKEM_PK + 32;
/// The encapsulated key: ML-KEM-768 ciphertext, then the X25519 ephemeral share.
pub(crate) const ENC: usize = MLKEM_CT + 32;

const XWING_LABEL: &[u8] = b"\\.//^\\";
const SUITE_ID: [u8; 10] = *b"HPKE\x64\x7a\x00\x01\x00\x03";

/// The expanded private key of a 32-byte seed.
pub(crate) struct PrivateKey {
    pub(crate) mlkem: Box<DecapsulationKey768>,
    pub(crate) x25519: StaticSecret,
    pub(crate) public: [u8; PUBLIC_KEY],
}

pub(crate) fn expand(seed: &[u8; 32]) -> PrivateKey {
    let mut shake = Shake256::default();
    shake.update(seed);
    let mut reader = shake.finalize_xof();
    let mut expanded = Zeroizing::new([0u8; 96]);
    reader.read(expanded.as_mut());
    let mut mlkem_seed = ml_kem::Seed::default();
    mlkem_seed.copy_from_slice(&expanded[..64]);
    let mlkem = Box::new(DecapsulationKey768::from_seed(mlkem_seed));
    mlkem_seed.zeroize();
    let mut x_seed = [0u8; 32];
    x_seed.copy_from_slice(&expanded[64..]);
    let x25519 = StaticSecret::from(x_seed);
    x_seed.zeroize();
    let mut public = [0u8; PUBLIC_KEY];
    public[..MLKEM_PK].copy_from_slice(&mlkem.encapsulation_key().to_bytes());
    public[MLKEM_PK..].copy_from_slice(PublicKey::from(&x25519).as_bytes());
    PrivateKey {
        mlkem,
        x25519,
        public,
    }
}

/// Parses and checks a public key (the ML-KEM part's coefficients must be reduced).
pub(crate) fn check_public_key(bytes: &[u8]) -> Option<Box<EncapsulationKey768>> {
    if bytes.len() != PUBLIC_KEY {
        return None;
    }
    let key = Array::try_from(&bytes[..MLKEM_PK]).ok()?;
    EncapsulationKey768::new(&key).ok().map(Box::new)
}

fn combine(ss_m: &[u8], ss_x: &[u8], ct_x: &[u8], pk_x: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut hash = Sha3_256::new();
    Digest::update(&mut hash, ss_m);
    Digest::update(&mut hash, ss_x);
    Digest::update(&mut hash, ct_x);
    Digest::update(&mut hash, pk_x);
    Digest::update(&mut hash, XWING_LABEL);
    Zeroizing::new(hash.finalize().into())
}

fn labeled_extract(salt: &[u8], label: &[u8], ikm: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut input = Zeroizing::new(Vec::with_capacity(7 + 10 + label.len() + ikm.len()));
    input.extend_from_slice(b"HPKE-v1");
    input.extend_from_slice(&SUITE_ID);
    input.extend_from_slice(label);
    input.extend_from_slice(ikm);
    let (prk, _) = Hkdf::<Sha256>::extract(Some(salt), &input);
    Zeroizing::new(prk.to_vec())
}

fn labeled_expand(prk: &[u8], label: &[u8], info: &[u8], out: &mut [u8]) {
    let length = u16::try_from(out.len()).expect("short output");
    let mut labeled = Vec::with_capacity(2 + 7 + 10 + label.len() + info.len());
    labeled.extend_from_slice(&length.to_be_bytes());
    labeled.extend_from_slice(b"HPKE-v1");
    labeled.extend_from_slice(&SUITE_ID);
    labeled.extend_from_slice(label);
    labeled.extend_from_slice(info);
    Hkdf::<Sha256>::from_prk(prk)
        .expect("a 32-byte PRK")
        .expand(&labeled, out)
        .expect("a valid HKDF length");
}

/// The key schedule of RFC 9180 section 5.1, mode base: the AEAD and its base nonce.
fn key_schedule(shared_secret: &[u8], info: &[u8]) -> (ChaCha20Poly1305, [u8; 12]) {
    let psk_id_hash = labeled_extract(b"", b"psk_id_hash", b"");
    let info_hash = labeled_extract(b"", b"info_hash", info);
    let mut context = Vec::with_capacity(65);
    context.push(0);
    context.extend_from_slice(&psk_id_hash);
    context.extend_from_slice(&info_hash);
    let secret = labeled_extract(shared_secret, b"secret", b"");
    let mut key = Zeroizing::new([0u8; 32]);
    labeled_expand(&secret, b"key", &context, key.as_mut());
    let mut nonce = [0u8; 12];
    labeled_expand(&secret, b"base_nonce", &context, &mut nonce);
    (ChaCha20Poly1305::new(&(*key).into()), nonce)
}

/// SealBase: returns the encapsulated key and the ciphertext of `plaintext`, or `None` when
/// the recipient's X25519 point gives an all-zero shared secret.
pub(crate) fn seal(
    recipient: &EncapsulationKey768,
    public: &[u8; PUBLIC_KEY],
    info: &[u8],
    plaintext: &[u8],
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut m = Zeroizing::new([0u8; 32]);
    getrandom::fill(m.as_mut()).expect("the operating system's random generator");
    let (ct_m, ss_m) = recipient.encapsulate_deterministic(&(*m).into());
    let mut ephemeral = Zeroizing::new([0u8; 32]);
    getrandom::fill(ephemeral.as_mut()).expect("the operating system's random generator");
    let ephemeral = StaticSecret::from(*ephemeral);
    let ct_x = PublicKey::from(&ephemeral);
    let pk_x: [u8; 32] = public[MLKEM_PK..].try_into().expect("32 bytes");
    let ss_x = ephemeral.diffie_hellman(&PublicKey::from(pk_x));
    if !ss_x.was_contributory() {
        return None;
    }
    let shared = combine(&ss_m, ss_x.as_bytes(), ct_x.as_bytes(), &pk_x);
    let (aead, nonce) = key_schedule(shared.as_ref(), info);
    let mut body = plaintext.to_vec();
    let tag = aead
        .encrypt_inout_detached(&nonce.into(), b"", body.as_mut_slice().into())
        .expect("a short message");
    body.extend_from_slice(&tag);
    let mut enc = Vec::with_capacity(ENC);
    enc.extend_from_slice(&ct_m);
    enc.extend_from_slice(ct_x.as_bytes());
    Some((enc, body))
}

/// The outcome of OpenBase.
pub(crate) enum Opened {
    /// The plaintext.
    Plaintext(Zeroizing<Vec<u8>>),
    /// The ciphertext does not authenticate under this key (not for us).
    NotOurs,
    /// The X25519 share gives an all-zero shared secret.
    LowOrder,
}

/// OpenBase of `ciphertext` (tag last) under `enc` of [`ENC`] bytes.
pub(crate) fn open(key: &PrivateKey, enc: &[u8], info: &[u8], ciphertext: &[u8]) -> Opened {
    let (ct_m, ct_x) = enc.split_at(MLKEM_CT);
    let ct_m = Array::try_from(ct_m).expect("ENC bytes");
    let ss_m = key.mlkem.decapsulate(&ct_m);
    let ct_x: [u8; 32] = ct_x.try_into().expect("ENC bytes");
    let ss_x = key.x25519.diffie_hellman(&PublicKey::from(ct_x));
    if !ss_x.was_contributory() {
        return Opened::LowOrder;
    }
    let shared = combine(&ss_m, ss_x.as_bytes(), &ct_x, &key.public[MLKEM_PK..]);
    let (aead, nonce) = key_schedule(shared.as_ref(), info);
    if ciphertext.len() < 16 {
        return Opened::NotOurs;
    }
    let (body, tag) = ciphertext.split_at(ciphertext.len() - 16);
    let mut plaintext = Zeroizing::new(body.to_vec());
    let tag = Array::try_from(tag).expect("16 bytes");
    match aead.decrypt_inout_detached(&nonce.into(), b"", plaintext.as_mut_slice().into(), &tag) {
        Ok(()) => Opened::Plaintext(plaintext),
        Err(_) => Opened::NotOurs,
    }
}
