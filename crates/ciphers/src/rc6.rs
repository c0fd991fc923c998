//! RC6-32/20/b: placeholder, being written.
use crate::BlockCipher;
pub struct Rc6;
impl Rc6 { pub fn new(_key: &[u8]) -> Self { todo!() } }
impl BlockCipher for Rc6 {
    fn block_size(&self) -> usize { 16 }
    fn encrypt_blocks(&self, _b: &mut [u8]) { todo!() }
    fn decrypt_blocks(&self, _b: &mut [u8]) { todo!() }
}
