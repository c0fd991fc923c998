//! Table-based AES reference: placeholder, being written.
use crate::BlockCipher;
pub struct ReferenceAes;
impl ReferenceAes { pub fn new(_key: &[u8]) -> Self { todo!() } }
impl BlockCipher for ReferenceAes {
    fn block_size(&self) -> usize { 16 }
    fn encrypt_blocks(&self, _b: &mut [u8]) { todo!() }
    fn decrypt_blocks(&self, _b: &mut [u8]) { todo!() }
}
