//! PKCS#7 padding (RFC 5652 section 6.3), as OpenSSL's `enc` applies to ECB and CBC.

use subtle::{ConditionallySelectable, ConstantTimeEq, ConstantTimeLess};

/// Appends 1..=block_size bytes, each holding the number of bytes appended.
pub fn pad(buffer: &mut Vec<u8>, block_size: usize) {
    let count = block_size - buffer.len() % block_size;
    buffer.resize(buffer.len() + count, count as u8);
}

/// Returns the length of the message inside the padded final block `last_block`, or `None`
/// when the padding is malformed. The check does not branch on the secret padding bytes, so
/// that a decryption service cannot become a padding oracle through its timing.
pub fn unpadded_length(last_block: &[u8]) -> Option<usize> {
    let block_size = last_block.len();
    let count = *last_block.last()?;
    let mut valid = !count.ct_eq(&0) & !(block_size as u8).ct_lt(&count);
    for (position, &byte) in last_block.iter().rev().enumerate() {
        // Bytes inside the claimed padding must equal the count; others are free.
        let inside = (position as u8).ct_lt(&count);
        valid &= !inside | byte.ct_eq(&count);
    }
    let length = u8::conditional_select(&0, &(block_size as u8).wrapping_sub(count), valid);
    if bool::from(valid) {
        Some(length as usize)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_always_adds_between_one_and_a_block() {
        for block_size in [8usize, 16] {
            for length in 0..40 {
                let mut buffer = vec![0xAB; length];
                pad(&mut buffer, block_size);
                assert_eq!(buffer.len() % block_size, 0);
                let added = buffer.len() - length;
                assert!((1..=block_size).contains(&added));
                assert!(buffer[length..].iter().all(|&b| b as usize == added));
                let last = &buffer[buffer.len() - block_size..];
                assert_eq!(unpadded_length(last), Some(block_size - added));
            }
        }
    }

    #[test]
    fn malformed_padding_is_refused() {
        assert_eq!(unpadded_length(&[0u8; 16]), None);
        let mut block = [5u8; 16];
        block[15] = 17;
        assert_eq!(unpadded_length(&block), None);
        let mut block = [3u8; 16];
        block[14] = 2;
        assert_eq!(unpadded_length(&block), None);
        let mut block = [0u8; 8];
        block[7] = 9;
        assert_eq!(unpadded_length(&block), None);
        let mut block = [0u8; 16];
        block[15] = 1;
        assert_eq!(unpadded_length(&block), Some(15));
        assert_eq!(unpadded_length(&[16u8; 16]), Some(0));
    }
}
