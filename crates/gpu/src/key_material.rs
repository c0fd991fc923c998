//! Expanded keys in the form the kernels take them.

use std::fmt;

use parcrypt_ciphers::Algorithm;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::GpuError;

/// A key expanded once on the host, with the CPU crate's own key schedules, so that the
/// kernels and their CPU twins cannot disagree on a round key.
///
/// Every word is wiped when the value is dropped. Devices copy the words into their own
/// memory only for the duration of a call and overwrite them afterwards.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct KeyMaterial {
    #[zeroize(skip)]
    algorithm: Algorithm,
    /// AES: the FIPS-197 schedule, 4 (rounds + 1) big-endian words. Blowfish: the P-array
    /// (18 words). RC6: S[0..44].
    encryption_round_keys: Vec<u32>,
    /// AES only: the equivalent inverse cipher's schedule. The Blowfish and RC6 kernels read
    /// the encryption words backwards instead.
    decryption_round_keys: Vec<u32>,
    /// Blowfish only: the four keyed S-boxes, S-box `b` entry `e` at word `256 b + e`.
    key_tables: Vec<u32>,
    /// AES only: 10, 12 or 14.
    rounds: u32,
}

impl KeyMaterial {
    /// Expands `key` for `algorithm`, refusing a key of the wrong length, with the
    /// expansion its entry in the cipher registry gives.
    pub fn new(algorithm: Algorithm, key: &[u8]) -> Result<Self, GpuError> {
        algorithm.check_key(key)?;
        let mut expanded = (algorithm.descriptor().kernel_key)(key);
        // The vectors move over whole (no copy of a word is made); `expanded` wipes what is
        // left in it, empty vectors and the round count, when it is dropped.
        Ok(KeyMaterial {
            algorithm,
            encryption_round_keys: std::mem::take(&mut expanded.encryption_round_keys),
            decryption_round_keys: std::mem::take(&mut expanded.decryption_round_keys),
            key_tables: std::mem::take(&mut expanded.key_tables),
            rounds: expanded.rounds,
        })
    }

    /// The algorithm whose key schedule this is.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The round-key words a kernel is given: for AES the schedule of its direction, for
    /// the others the one schedule.
    pub(crate) fn round_keys(&self, decrypting: bool) -> &[u32] {
        if decrypting && !self.decryption_round_keys.is_empty() {
            &self.decryption_round_keys
        } else {
            &self.encryption_round_keys
        }
    }

    /// Key-dependent tables (the Blowfish S-boxes), empty for the other ciphers.
    pub(crate) fn key_tables(&self) -> &[u32] {
        &self.key_tables
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.rounds
    }
}

/// Shows the algorithm only: key words never reach a log.
impl fmt::Debug for KeyMaterial {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("KeyMaterial")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_have_the_kernels_sizes() {
        let cases = [
            (Algorithm::Aes128, 16, 44, 0, 10),
            (Algorithm::Aes192, 24, 52, 0, 12),
            (Algorithm::Aes256, 32, 60, 0, 14),
            (Algorithm::Blowfish, 7, 18, 1024, 16),
            (Algorithm::Rc6_128, 16, 44, 0, 20),
            (Algorithm::Rc6_256, 32, 44, 0, 20),
        ];
        for (algorithm, key_length, round_key_words, table_words, rounds) in cases {
            let material = KeyMaterial::new(algorithm, &vec![7u8; key_length]).unwrap();
            assert_eq!(
                material.round_keys(false).len(),
                round_key_words,
                "{algorithm}"
            );
            assert_eq!(
                material.round_keys(true).len(),
                round_key_words,
                "{algorithm}"
            );
            assert_eq!(material.key_tables().len(), table_words, "{algorithm}");
            assert_eq!(material.rounds(), rounds, "{algorithm}");
        }
    }

    #[test]
    fn wrong_key_length_is_refused_and_debug_hides_the_key() {
        assert!(matches!(
            KeyMaterial::new(Algorithm::Aes128, &[0; 15]),
            Err(GpuError::Key(_))
        ));
        let material = KeyMaterial::new(Algorithm::Aes128, &[0x41; 16]).unwrap();
        assert_eq!(
            format!("{material:?}"),
            "KeyMaterial { algorithm: Aes128, .. }"
        );
    }

    #[test]
    fn zeroize_wipes_every_word() {
        let mut material = KeyMaterial::new(Algorithm::Blowfish, b"secret key").unwrap();
        material.zeroize();
        // `Vec::zeroize` overwrites the whole allocation, then empties the vector.
        assert!(material.round_keys(false).is_empty());
        assert!(material.key_tables().is_empty());
    }
}
