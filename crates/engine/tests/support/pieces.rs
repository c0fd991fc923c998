//! A message through a [`Crypter`] in two pieces, as the engine's tests run it.

use parcrypt_engine::Crypter;

/// `input` through `crypter` and the whole output: the first `split` bytes by `update` in
/// place (`poison` `None`) or by `update_into` into an output filled with `poison` first
/// (so that a byte left unwritten shows), then the rest by `finish`.
pub fn in_two_pieces(
    mut crypter: Crypter<'_>,
    input: &[u8],
    split: usize,
    poison: Option<u8>,
) -> Vec<u8> {
    let (head, tail) = input.split_at(split);
    let mut output = match poison {
        None => {
            let mut output = head.to_vec();
            crypter.update(&mut output).unwrap();
            output
        }
        Some(byte) => {
            let mut output = vec![byte; split];
            crypter.update_into(head, &mut output).unwrap();
            output
        }
    };
    let mut rest = tail.to_vec();
    crypter.finish(&mut rest).unwrap();
    output.extend_from_slice(&rest);
    output
}
