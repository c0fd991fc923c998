//! ECB: each block on its own. Only for experiments and interoperability: equal plaintext
//! blocks give equal ciphertext blocks, so the command line warns when it is chosen.

use parcrypt_ciphers::BlockCipher;

use crate::Direction;

/// Encrypts or decrypts a range of whole blocks in place.
pub fn apply(cipher: &dyn BlockCipher, direction: Direction, data: &mut [u8]) {
    match direction {
        Direction::Encrypt => cipher.encrypt_blocks(data),
        Direction::Decrypt => cipher.decrypt_blocks(data),
    }
}
