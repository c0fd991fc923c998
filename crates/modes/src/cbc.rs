//! CBC (SP 800-38A section 6.2).
//!
//! Encryption chains each block on the previous *output*, so it runs on one thread per
//! stream whatever backend is chosen. Decryption needs only ciphertext, so a range can be
//! decrypted by anyone who knows the ciphertext block just before it.

use parcrypt_ciphers::BlockCipher;

/// How many blocks decryption hands the cipher per call.
const DECRYPT_BATCH_BLOCKS: usize = 256;

/// The cipher's block size, after checking that `chain` is one block and `data` whole
/// blocks: a caller's bug otherwise.
fn checked_block_size(cipher: &dyn BlockCipher, chain: &[u8], data: &[u8]) -> usize {
    let block_size = cipher.block_size();
    assert_eq!(chain.len(), block_size);
    assert_eq!(
        data.len() % block_size,
        0,
        "CBC input is not a whole number of blocks"
    );
    block_size
}

/// Encrypts whole blocks in place. `chain` holds the IV (or the last ciphertext block of the
/// previous call) and is left holding this call's last ciphertext block.
pub fn encrypt(cipher: &dyn BlockCipher, chain: &mut [u8], data: &mut [u8]) {
    let block_size = checked_block_size(cipher, chain, data);
    if cipher.cbc_encrypt(chain, data) {
        return;
    }
    for block in data.chunks_exact_mut(block_size) {
        xor_in_place(block, chain);
        cipher.encrypt_blocks(block);
        chain.copy_from_slice(block);
    }
}

/// Decrypts a range of whole blocks in place; `previous` is the ciphertext block before
/// the range (the IV for the first range).
pub fn decrypt(cipher: &dyn BlockCipher, previous: &[u8], data: &mut [u8]) {
    let block_size = checked_block_size(cipher, previous, data);
    if cipher.cbc_decrypt(previous, data) {
        return;
    }
    let mut saved = vec![0u8; DECRYPT_BATCH_BLOCKS * block_size];
    let mut chain = previous.to_vec();
    for batch in data.chunks_mut(DECRYPT_BATCH_BLOCKS * block_size) {
        // Decryption overwrites the ciphertext that the next block XORs with: keep a copy.
        let saved = &mut saved[..batch.len()];
        saved.copy_from_slice(batch);
        cipher.decrypt_blocks(batch);
        xor_in_place(&mut batch[..block_size], &chain);
        xor_in_place(&mut batch[block_size..], &saved[..saved.len() - block_size]);
        chain.copy_from_slice(&saved[saved.len() - block_size..]);
    }
}

/// `target ^= source`, byte for byte (the compiler vectorises this loop).
pub(crate) fn xor_in_place(target: &mut [u8], source: &[u8]) {
    debug_assert_eq!(target.len(), source.len());
    for (t, s) in target.iter_mut().zip(source) {
        *t ^= s;
    }
}
