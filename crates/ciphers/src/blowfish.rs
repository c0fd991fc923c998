//! Blowfish (Schneier 1993): placeholder, being written.
use crate::BlockCipher;
pub struct Blowfish;
impl Blowfish { pub fn new(_key: &[u8]) -> Self { todo!() } }
impl BlockCipher for Blowfish {
    fn block_size(&self) -> usize { 8 }
    fn encrypt_blocks(&self, _b: &mut [u8]) { todo!() }
    fn decrypt_blocks(&self, _b: &mut [u8]) { todo!() }
}
