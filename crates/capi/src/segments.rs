//! Messages whose segments the caller runs on threads of its own (the JVM library's
//! `JavaThreads` and `ForkJoin` strategies): each `parcrypt_segmented_run` is the
//! one-thread kernel over one segment, and the engine's `SegmentedMessage` keeps every rule
//! of the mode (counters at an offset, CBC's chain, GCM's partial sums, padding, the tag,
//! and GCM decryption's two rounds: authenticate, then decrypt).

use parcrypt::hazmat::segmented::{Segment, SegmentedMessage};

use crate::cipher::direction_of;
use crate::error::{Failure, ParcryptError, ParcryptStatus};
use crate::{
    bytes, free, handle, make, on, optional_bytes, sized, write_if_wanted, Handle, ParcryptCipher,
};

/// One message of a cipher cut into segments by the caller: made by
/// `parcrypt_segmented_new`, its body's segments run by `parcrypt_segmented_run` on any
/// threads in any order (each part exactly once), then `parcrypt_segmented_authenticate`,
/// which for GCM decryption checks the tag and asks for a second round of segments, and
/// `parcrypt_segmented_finish`. Any number of threads may run segments of one message at
/// once.
pub struct ParcryptSegmented {
    message: SegmentedMessage,
}

impl Handle for ParcryptSegmented {
    const NAME: &'static str = "segmented";
}

/// Starts one message of `input_length` bytes for `direction` (`PARCRYPT_ENCRYPT` or
/// `PARCRYPT_DECRYPT`) under `iv` (NULL, 0: the cipher's own IV) and `aad` (GCM only; NULL,
/// 0 for none). `parcrypt_segmented_layout` then says which bytes segments cover and where
/// they may be cut. Free with `parcrypt_segmented_free`.
///
/// # Safety
/// `cipher` is NULL or live; `iv` and `aad` are NULL or readable for their lengths;
/// `segmented` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_new(
    cipher: *const ParcryptCipher,
    direction: i32,
    iv: *const u8,
    iv_length: usize,
    aad: *const u8,
    aad_length: usize,
    input_length: usize,
    segmented: *mut *mut ParcryptSegmented,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = || {
        // SAFETY: each pointer meets the contract above for the length given with it.
        let (cipher, iv, aad) = unsafe {
            (
                handle(cipher)?,
                optional_bytes(iv, iv_length, "iv")?,
                optional_bytes(aad, aad_length, "aad")?,
            )
        };
        if input_length > isize::MAX as usize {
            return Err(Failure::invalid("input_length is too large"));
        }
        let direction = direction_of(direction)?;
        let message = cipher.keyed.segmented(direction, iv, aad, input_length)?;
        Ok(ParcryptSegmented { message })
    };
    // SAFETY: `segmented` and `error` are NULL or writable (the contract above).
    unsafe { make(segmented, error, body) }
}

/// The message's layout: `*body_length` gets the bytes from offset 0 that segments cover
/// (the rest of the input, a padded message's last partial block or GCM's tag, goes to
/// `parcrypt_segmented_authenticate` and `parcrypt_segmented_finish`); `*alignment` the
/// multiple of bytes where a segment may begin and end (the block size; the body's end is
/// always allowed), or 0 when the body must be one segment: CBC encryption, and CBC
/// decryption when `in_place` is non-zero. Either out-parameter may be NULL.
///
/// # Safety
/// `segmented` is NULL or live; `body_length`, `alignment` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_layout(
    segmented: *const ParcryptSegmented,
    in_place: i32,
    body_length: *mut usize,
    alignment: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |ParcryptSegmented { message }: &_| {
        let value = message.alignment(in_place != 0).unwrap_or(0);
        // SAFETY: `body_length` and `alignment` are NULL or writable (the contract above).
        unsafe {
            write_if_wanted(body_length, message.body_length());
            write_if_wanted(alignment, value);
        }
        Ok(())
    };
    // SAFETY: `segmented` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(segmented, error, body) }
}

/// Runs the body's bytes `offset .. offset + length` on the calling thread: reads them at
/// `input`, writes their output at `output` (`output` == `input` works in place; otherwise
/// the two may not overlap). Out of place, CBC decryption at an offset other than 0 reads
/// the block before `input` too (the ciphertext it chains on), so `input` must then point
/// into the whole message's input. Segments of one message may run on many threads at
/// once, and must not overlap. GCM decryption's first round only reads its segments (see
/// `parcrypt_segmented_authenticate`). On failure the segment's output holds no plaintext
/// (it is zeroed; GCM decryption's is left as it was, never having held any).
///
/// # Safety
/// `segmented` is NULL or live; `input` is NULL or readable for `length` bytes (and the
/// block before it, as said above); `output` is NULL or writable for `length` bytes and
/// touched by nobody else during the call; `error` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_run(
    segmented: *const ParcryptSegmented,
    offset: usize,
    input: *const u8,
    output: *mut u8,
    length: usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |ParcryptSegmented { message }: &_| {
        if length == 0 {
            return message
                .segment(offset, None, Segment::InPlace(&mut []))
                .map_err(Failure::from);
        }
        if input.is_null() {
            return Err(Failure::null("input"));
        }
        if output.is_null() {
            return Err(Failure::null("output"));
        }
        if length > isize::MAX as usize {
            return Err(Failure::invalid("length is too large"));
        }
        let (input_start, output_start) = (input as usize, output as usize);
        let outcome = if input_start == output_start {
            // SAFETY: `output` is non-NULL, writable for `length` bytes and touched by nobody
            // else during the call (the contract); the input is this same memory.
            let data = unsafe { std::slice::from_raw_parts_mut(output, length) };
            message.segment(offset, None, Segment::InPlace(data))
        } else {
            if input_start < output_start + length && output_start < input_start + length {
                return Err(Failure::invalid(
                    "output overlaps input (in place, pass the same pointer for both)",
                ));
            }
            let block_size = message.block_size();
            let previous = if message.chains() && offset >= block_size {
                // SAFETY: out of place, CBC decryption past offset 0 may read the block
                // before `input` (the contract above); nobody writes it during the call.
                Some(unsafe { std::slice::from_raw_parts(input.sub(block_size), block_size) })
            } else {
                None
            };
            // SAFETY: non-NULL and readable for `length` bytes (the contract).
            let input = unsafe { bytes(input, length, "input") }?;
            // SAFETY: non-NULL, writable for `length` bytes, untouched by others during the
            // call, and apart from `input` (checked above).
            let output_slice = unsafe { std::slice::from_raw_parts_mut(output, length) };
            let outcome = message.segment(
                offset,
                previous,
                Segment::Separate {
                    input,
                    output: output_slice,
                },
            );
            // GCM decryption's segments write nothing before the tag matched (and are
            // refused, writing nothing, after a forged one): its output is left as it is.
            if outcome.is_err() && message.rounds() == 1 {
                output_slice.fill(0);
            }
            outcome
        };
        outcome.map_err(Failure::from)
    };
    // SAFETY: `segmented` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(segmented, error, body) }
}

/// Ends a round of segments, once every segment of it returned. GCM decryption runs its
/// segments twice: the first round only hashes the ciphertext and writes nothing; this
/// checks the received tag (the input after the body) and, when it matches, sets `*again`
/// to 1: run every segment once more (cut as you like), now decrypting into the output,
/// then call `parcrypt_segmented_finish`. A tag that does not match returns
/// `PARCRYPT_STATUS_AUTHENTICATION_FAILED` with the output untouched, and the message
/// then refuses every call but `parcrypt_segmented_free`. Every other message has one
/// round: this sets `*again` to 0 and does nothing else. `input` is the whole message's
/// input, as for `parcrypt_segmented_finish`; `again` may be NULL.
///
/// # Safety
/// `segmented` is NULL or live; `input` is NULL or readable for the message's input
/// length; `again` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_authenticate(
    segmented: *const ParcryptSegmented,
    input: *const u8,
    again: *mut i32,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    // SAFETY: `again` is NULL or writable (the contract above).
    unsafe { write_if_wanted(again, 0) };
    let body = |ParcryptSegmented { message }: &_| {
        // SAFETY: `input` is NULL or readable for the input's length (the contract).
        let whole_input = unsafe { bytes(input, message.input_length(), "input") }?;
        message.authenticate(&whole_input[message.body_length()..])?;
        // SAFETY: as above.
        unsafe { write_if_wanted(again, i32::from(message.rounds() == 2)) };
        Ok(())
    };
    // SAFETY: `segmented` is NULL or live, `error` NULL or writable (the contract above).
    unsafe { on(segmented, error, body) }
}

/// Ends the message once every segment ran: checks that they covered the body exactly,
/// then pads and encrypts the last partial block, appends GCM's tag, or checks and removes
/// the padding (GCM decryption checked its tag in `parcrypt_segmented_authenticate`, and
/// fails here without it). `input` is the whole message's input
/// (`input_length` bytes, as given to `parcrypt_segmented_new`; only the part after the
/// body is read); `output` the whole message's output (`output_capacity` bytes, at least
/// `parcrypt_cipher_max_output_length`), its body written by the segments; it may be `input`
/// itself. `*output_length` gets the output's length. When a decryption fails here (a bad
/// padding, `PARCRYPT_STATUS_BAD_PADDING`) the output's body is wiped.
///
/// # Safety
/// `segmented` is NULL or live; `input` is NULL or readable for the message's input
/// length; `output` is NULL or writable for `output_capacity` bytes and untouched by others
/// during the call; `output_length` and `error` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_finish(
    segmented: *const ParcryptSegmented,
    input: *const u8,
    output: *mut u8,
    output_capacity: usize,
    output_length: *mut usize,
    error: *mut *mut ParcryptError,
) -> ParcryptStatus {
    let body = |ParcryptSegmented { message }: &_| {
        let (body, input_length) = (message.body_length(), message.input_length());
        // SAFETY: `input` is NULL or readable for the input's length (the contract); only
        // its tail is read, and copied before the output (maybe the same memory) is made.
        let whole_input = unsafe { bytes(input, input_length, "input") }?;
        let tail = zeroize::Zeroizing::new(whole_input[body..].to_vec());
        // SAFETY: `output` is NULL or writable for `output_capacity` bytes and untouched by
        // others during the call (the contract); the input slice is no longer used.
        let output =
            unsafe { crate::output(output, output_capacity, "output", "output_capacity") }?;
        message.finish(&tail, output).map_err(|error| {
            let failure = Failure::from(error);
            match failure.status {
                ParcryptStatus::OutputTooSmall => failure.needing(message.max_output_length()),
                _ => failure,
            }
        })
    };
    // SAFETY: `segmented` is NULL or live; `output_length` and `error` are NULL or writable
    // (the contract above).
    unsafe { sized(segmented, output_length, "output_length", error, body) }
}

/// Frees a segmented message (NULL is ignored).
///
/// # Safety
/// `segmented` is NULL or not freed before, with no other call on it running.
#[no_mangle]
pub unsafe extern "C" fn parcrypt_segmented_free(segmented: *mut ParcryptSegmented) {
    // SAFETY: the contract above is `free`'s.
    unsafe { free(segmented) }
}
