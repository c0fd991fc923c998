//! The known answers of the version-2 header (tests/vectors/parcrypt_v2.txt, made from
//! docs/FORMAT.md by an independent Python program, tests/vectors/parcrypt_v2_gen.py),
//! checked value by value: the identity and recipients, each X25519 stanza from its
//! ephemeral secret (share, shared secret, wrap key, body), the header's bytes, MAC key and
//! MAC, the input key, Cobblestone's chunk key, base nonce and commitment, the file parcrypt
//! decrypts with the identity, and the same file built again from these parts.

use std::collections::BTreeMap;
use std::io::Read;

use base64ct::{Base64Unpadded, Encoding};
use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
use hkdf::Hkdf;
use parcrypt_age::{Identity, Recipient};
use parcrypt_engine::{Backend, Engine};
use parcrypt_format::recipients::{self, FileKey, RecipientHeader};
use parcrypt_format::{
    ChunkBatcher, CpuChunks, Decryptor, Envelope, Format, FormatError, MessageKeys, Secret, Suite,
};
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};

const VECTORS: &str = include_str!("../../../tests/vectors/parcrypt_v2.txt");

type Vector = BTreeMap<String, String>;

fn vectors() -> Vec<(String, Vector)> {
    let mut all: Vec<(String, Vector)> = Vec::new();
    for line in VECTORS.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            all.push((name.to_string(), Vector::new()));
            continue;
        }
        let (key, value) = line.split_once('=').expect("name = value");
        let (_, fields) = all.last_mut().expect("a field inside a section");
        fields.insert(key.trim().to_string(), value.trim().to_string());
    }
    all
}

fn text<'v>(vector: &'v Vector, key: &str) -> &'v str {
    vector.get(key).unwrap_or_else(|| panic!("no field {key}"))
}

fn bytes(vector: &Vector, key: &str) -> Vec<u8> {
    hex::decode(text(vector, key)).unwrap_or_else(|_| panic!("{key} is not hex"))
}

fn array<const N: usize>(vector: &Vector, key: &str) -> [u8; N] {
    bytes(vector, key)
        .try_into()
        .unwrap_or_else(|_| panic!("{key} is not {N} bytes"))
}

#[test]
fn every_listed_value_is_what_parcrypt_computes() {
    let all = vectors();
    assert_eq!(all.len(), 2);
    let engine = Engine::new(Backend::Seq, None).unwrap();
    let batcher = CpuChunks::new(&engine);
    for (name, vector) in &all {
        let suite = match text(vector, "aead") {
            "aes-128-gcm" => Suite::Cobblestone128,
            "aes-256-gcm" => Suite::Cobblestone256,
            other => panic!("{name}: unknown aead {other}"),
        };
        // Keys: the textual forms are age's.
        let recipients: Vec<Recipient> = text(vector, "recipients")
            .split(' ')
            .map(|r| r.parse().unwrap())
            .collect();
        let identity: Identity = text(vector, "identity").parse().unwrap();
        let opens: usize = text(vector, "identity_recipient").parse().unwrap();
        assert_eq!(
            identity.to_public().unwrap().to_string(),
            recipients[opens].to_string(),
            "{name}"
        );
        let secret = StaticSecret::from(array::<32>(vector, "identity_secret_key"));
        assert_eq!(
            PublicKey::from(&secret).as_bytes(),
            &array::<32>(vector, &format!("recipient_{opens}_public_key")),
            "{name}"
        );

        // The header, field by field.
        let file = bytes(vector, "file");
        let header_bytes = bytes(vector, "header");
        assert!(file.starts_with(&header_bytes));
        let (header, length) = RecipientHeader::parse(&file).unwrap();
        assert_eq!(length, header_bytes.len(), "{name}");
        assert_eq!(header.as_bytes(), &header_bytes[..]);
        assert_eq!(header.suite(), suite);
        assert_eq!(header.recipients(), recipients.len());
        // One stanza per recipient, stanza i for recipient i.
        assert_eq!(header.stanzas().len(), recipients.len(), "{name}");
        assert_eq!(header_bytes.len(), 50 + 87 * recipients.len(), "{name}");
        let file_key = FileKey::from_bytes(array(vector, "file_key"));
        for (index, stanza) in header.stanzas().iter().enumerate() {
            let field = |what: &str| format!("stanza_{index}_{what}");
            let recipient = array::<32>(vector, &format!("recipient_{index}_public_key"));
            let ephemeral = StaticSecret::from(array::<32>(vector, &field("ephemeral_secret")));
            let share = PublicKey::from(&ephemeral);
            assert_eq!(share.as_bytes(), &array::<32>(vector, &field("share")));
            let shared = ephemeral.diffie_hellman(&PublicKey::from(recipient));
            assert_eq!(
                shared.as_bytes(),
                &array::<32>(vector, &field("shared_secret"))
            );
            let mut salt = share.as_bytes().to_vec();
            salt.extend_from_slice(&recipient);
            let mut wrap_key = [0u8; 32];
            Hkdf::<Sha256>::new(Some(&salt), shared.as_bytes())
                .expand(b"age-encryption.org/v1/X25519", &mut wrap_key)
                .unwrap();
            assert_eq!(wrap_key, array::<32>(vector, &field("wrap_key")));
            // The body wraps the whole 16-byte file key, as age's does.
            let mut body = file_key.as_bytes().to_vec();
            let tag = ChaCha20Poly1305::new(&wrap_key.into())
                .encrypt_inout_detached(&[0u8; 12].into(), b"", body.as_mut_slice().into())
                .unwrap();
            body.extend_from_slice(&tag);
            assert_eq!(body, bytes(vector, &field("body")), "{name} {index}");
            assert_eq!(stanza.kind, "X25519");
            assert_eq!(
                stanza.args,
                vec![Base64Unpadded::encode_string(share.as_bytes())]
            );
            assert_eq!(stanza.body, body);
        }
        assert_eq!(
            *recipients::mac_key(&file_key),
            array::<32>(vector, "header_mac_key")
        );
        assert_eq!(header.mac(), &bytes(vector, "header_mac")[..]);
        assert!(header.verify(&file_key).is_ok());
        assert_eq!(
            header.unwrap(std::slice::from_ref(&identity)).unwrap(),
            file_key,
            "{name}"
        );
        let input_key = recipients::input_key(&file_key, suite);
        assert_eq!(*input_key, bytes(vector, "input_key"));

        // Cobblestone under the input key, the header then the context as its context.
        let context = bytes(vector, "context");
        let salt: [u8; 24] = array(vector, "cobblestone_salt");
        let mut full_context = header_bytes.clone();
        full_context.extend_from_slice(&context);
        let keys = MessageKeys::derive(suite, &input_key, &salt, &full_context).unwrap();
        assert_eq!(keys.key(), &bytes(vector, "chunk_key")[..]);
        assert_eq!(keys.base_nonce(), &array::<12>(vector, "base_nonce"));
        assert_eq!(keys.commitment(), &array::<32>(vector, "commitment"));

        // The file opens with the identity, to the plaintext.
        let plaintext = bytes(vector, "plaintext");
        let mut opened = Vec::new();
        Decryptor::new(Format::Parcrypt, &file[..])
            .unwrap()
            .unlock(
                Secret::Identities(std::slice::from_ref(&identity)),
                &context,
            )
            .unwrap()
            .reader(&batcher)
            .read_to_end(&mut opened)
            .unwrap();
        assert_eq!(opened, plaintext, "{name}");
        assert!(matches!(
            Decryptor::new(Format::Parcrypt, &file[..]).unwrap().unlock(
                Secret::Identities(std::slice::from_ref(&identity)),
                b"other"
            ),
            Err(FormatError::HeaderMismatch)
        ));

        // And the same bytes are built again from the parts.
        let sealed = RecipientHeader::seal(suite, header.stanzas().to_vec(), &file_key).unwrap();
        assert_eq!(sealed.as_bytes(), &header_bytes[..]);
        let (envelope, keys) =
            Envelope::for_recipient_header(sealed, &file_key, salt, &context).unwrap();
        let mut rebuilt = envelope.to_bytes();
        let mut chunks = Vec::new();
        for (index, piece) in plaintext
            .chunks(16384)
            .chain(
                // The final chunk is short: empty when the plaintext fills its last chunk.
                std::iter::once(&[][..]).filter(|_| plaintext.len().is_multiple_of(16384)),
            )
            .enumerate()
        {
            let mut sealed_chunk = piece.to_vec();
            sealed_chunk.extend_from_slice(&[0u8; 16]);
            batcher
                .seal_batch(&keys, index as u64, &mut sealed_chunk)
                .unwrap();
            chunks.extend_from_slice(&sealed_chunk);
        }
        rebuilt.extend_from_slice(&chunks);
        assert_eq!(rebuilt, file, "{name}");
    }
}
