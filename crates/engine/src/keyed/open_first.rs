//! Whole GCM messages decrypted into memory the caller can see (a buffer it passed, which
//! another thread or a file mapping may be reading during the call): authenticated first,
//! then decrypted, so that no byte of plaintext reaches that memory before the tag matched.
//!
//! Two passes over the ciphertext, each split over the engine's threads as every GCM job
//! is: GHASH alone, which writes nothing, and the tag compared in constant time; then, only
//! if it matched, CTR alone. On a GPU the device hashes first (the CPU where the device has
//! no GHASH kernel) and decrypts second, so the ciphertext crosses the bus twice. Messages
//! on the calling thread take the same two passes through [`GcmKey::open`] and
//! [`GcmKey::open_into`].
//!
//! Output nobody else can see before the call returns (the buffer
//! [`KeyedCipher::decrypt`] allocates) keeps the one fused pass, which is faster.
//!
//! [`GcmKey::open`]: parcrypt_modes::gcm::GcmKey::open
//! [`GcmKey::open_into`]: parcrypt_modes::gcm::GcmKey::open_into

use parcrypt_gpu::GpuOperation;
use parcrypt_modes::ctr::{self, CounterRule};
use parcrypt_modes::gcm::{GcmAccumulator, GcmError, MAX_TEXT_BYTES};
use parcrypt_modes::Direction;

use super::{slot, KeyedCipher};
use crate::crypter::{ghash_on_engine, ghash_whole, JobError};

/// The ciphertext of a message and where its plaintext goes.
pub(super) enum Text<'a> {
    /// Decrypted where it lies.
    InPlace(&'a mut [u8]),
    /// Read from the first, decrypted into the second (of the same length).
    Into(&'a [u8], &'a mut [u8]),
}

impl Text<'_> {
    fn ciphertext(&self) -> &[u8] {
        match self {
            Text::InPlace(data) => data,
            Text::Into(input, _) => input,
        }
    }
}

/// Decrypts `text`, a whole GCM message under `iv` and `aad` (checked by the caller), on
/// `cipher`'s engine or GPU, after its GHASH matched `tag`. On a mismatch nothing has been
/// written: an in-place text is still the ciphertext, an output is as it was.
pub(super) fn open_first(
    cipher: &KeyedCipher,
    iv: &[u8],
    aad: &[u8],
    text: Text<'_>,
    tag: &[u8],
) -> Result<(), JobError> {
    let keys = &*cipher.keys;
    let key = keys.gcm()?;
    let block_cipher = keys.cipher();
    let engine = &*cipher.engine;
    let length = text.ciphertext().len();
    if length as u64 > MAX_TEXT_BYTES {
        return Err(GcmError::TooLong.into());
    }
    let message = key.message(block_cipher, iv)?;
    let mut accumulator = GcmAccumulator::new(key, aad);
    let device = if cipher.gpu[slot(Direction::Decrypt)] {
        engine.gpu_for(keys.suite(), Direction::Decrypt, length)
    } else {
        None
    };
    if let Some(device) = device {
        let partial = ghash_whole(device, engine, key, text.ciphertext())?;
        accumulator.append(key, partial, length as u64)?;
        key.verify(&message, &accumulator, tag)?;
        let mut counter = vec![0u8; 16];
        message.text_counter(0).write(&mut counter);
        let operation = GpuOperation::Ctr {
            counter,
            rule: CounterRule::Low32,
        };
        let data = match text {
            Text::InPlace(data) => data,
            Text::Into(input, output) => {
                output.copy_from_slice(input);
                output
            }
        };
        device.process(keys.gpu_material()?, &operation, data)?;
        return Ok(());
    }
    // One plan for both passes; CTR starts each range at its block's counter.
    let lengths = engine.plan(length, 16, cipher.cost_model(Direction::Decrypt));
    let partial = ghash_on_engine(engine, key, text.ciphertext(), &lengths);
    accumulator.append(key, partial, length as u64)?;
    key.verify(&message, &accumulator, tag)?;
    let message = &message;
    let counter = |offset: usize| message.text_counter((offset / 16) as u64);
    match text {
        Text::InPlace(data) => {
            engine.run(data, &lengths, |_, offset, range| {
                ctr::apply(block_cipher, counter(offset), range)
            });
        }
        Text::Into(input, output) => {
            engine.run_into(input, output, &lengths, |_, offset, from, to| {
                ctr::apply_into(block_cipher, counter(offset), from, to)
            });
        }
    }
    Ok(())
}
