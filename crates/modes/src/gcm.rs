//! GCM (SP 800-38D) for 128-bit block ciphers (AES, RC6).
//!
//! A [`GcmKey`] holds what depends on the key alone (H and the powers of H the fast GHASH
//! paths use) and is made once per key; each message then needs only a [`GcmMessage`]: its
//! first text counter and E_K(J0), which masks the tag. Callers that seal many messages under
//! one key (Cobblestone chunks) make the key once and a message per nonce.
//!
//! A message is split into ranges of whole blocks. Each range is run through CTR (with the
//! `inc32` counter rule) and GHASH from a zero state, fused in L1-sized pieces so the data is
//! read from memory once; the partial GHASH sums are then joined in order with powers of H by
//! a [`GcmAccumulator`]. Decryption hashes the ciphertext *before* decrypting each piece, so
//! the tag can be checked by the caller before any plaintext leaves its control. The tag is
//! finished in one place, [`GcmKey::tag`], and checked beside it by [`GcmKey::verify`].
//!
//! Where the cipher is our AES and the CPU has the instructions, ranges run through a
//! stitched kernel instead: one loop that interleaves the AES rounds of a batch of counter
//! blocks with the GHASH multiplications of a batch of ciphertext, so CTR and GHASH overlap
//! in the core rather than running one after the other. There is one per instruction set,
//! named by [`GcmKernel`]: VAES-512 (`gcm/vaes512.rs`, 32 blocks per batch), VAES-256 on AVX2
//! (`gcm/vaes256.rs`, 16 blocks) and AES-NI with PCLMULQDQ (`gcm/aesni.rs`, 8 blocks); each
//! sums a batch's products unreduced with the powers of H the [`GhashKey`] made once per key
//! and reduces once per batch. [`GcmKernel::fastest`] is the default;
//! [`set_default_kernel`] picks another for the keys made after it (the engine's builder
//! calls it: `EngineBuilder::gcm_kernel`), [`GcmKey::set_kernel`] for one key, and
//! [`GcmKernel::TwoPass`] keeps the two-pass path, for comparisons. Nothing here reads the
//! environment.
//!
//! Whole messages of at most [`SHORT_TEXT_BYTES`] under a 96-bit nonce skip the ranges:
//! [`GcmKey::seal`] and [`GcmKey::open`] run them in one call (`gcm/short.rs` for AES), where
//! the cost is latency, not throughput. Longer whole messages on one thread go through
//! [`GcmKey::crypt_message`] (which `seal` uses, and the engine for output only it can see):
//! under a 96-bit nonce with a stitched kernel, E_K(J0) runs beside the batches and the tag
//! is finished in the same call; on VAES-512 the whole message, its last partial batch and
//! the length block included, is one kernel call. AES-128-GCM `seal` of 1 KiB on the 2-core
//! Zen 5 VM went from about 111 to 75 ns with it. Decryption into memory others may see
//! takes [`GcmKey::open`] or [`GcmKey::open_into`] instead: GHASH over the ciphertext and the
//! tag check first, then CTR, so no plaintext exists before the tag matched.

use parcrypt_ciphers::{BlockCipher, KernelFamily};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::cbc::xor_in_place;
use crate::ctr::{self, Counter, CounterRule};
use crate::ghash::GhashKey;
#[cfg(target_arch = "x86_64")]
use crate::ghash::MESSAGE_POWERS;
use crate::Direction;

#[cfg(target_arch = "x86_64")]
mod aesni;
#[cfg(target_arch = "x86_64")]
mod short;
#[cfg(target_arch = "x86_64")]
mod stitched;
#[cfg(target_arch = "x86_64")]
mod vaes256;
#[cfg(target_arch = "x86_64")]
mod vaes512;

/// The code that runs the CTR and GHASH of a range when the cipher is our AES (other ciphers
/// always take [`GcmKernel::TwoPass`]). Listed fastest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GcmKernel {
    /// Stitched, 512-bit VAES and VPCLMULQDQ (AVX-512), 32 blocks per batch.
    Vaes512,
    /// Stitched, 256-bit VAES and VPCLMULQDQ (AVX2), 16 blocks per batch.
    Vaes256,
    /// Stitched, AES-NI and PCLMULQDQ on 128-bit registers, 8 blocks per batch.
    AesNi,
    /// CTR then GHASH over each 4 KiB piece, with the GHASH implementation of the
    /// [`GhashKey`]: runs everywhere and with every cipher.
    TwoPass,
}

impl GcmKernel {
    /// Every kernel, in the order of fallback: a kernel the CPU lacks falls back to the
    /// first available one after it.
    pub const ALL: [GcmKernel; 4] = [
        GcmKernel::Vaes512,
        GcmKernel::Vaes256,
        GcmKernel::AesNi,
        GcmKernel::TwoPass,
    ];

    /// Whether this CPU can run it.
    pub fn is_available(self) -> bool {
        match self {
            GcmKernel::TwoPass => true,
            #[cfg(target_arch = "x86_64")]
            GcmKernel::Vaes512 => vaes512::is_available(),
            #[cfg(target_arch = "x86_64")]
            GcmKernel::Vaes256 => vaes256::is_available(),
            #[cfg(target_arch = "x86_64")]
            GcmKernel::AesNi => aesni::is_available(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The kernels this CPU can run, in the order of [`GcmKernel::ALL`] (always ending with
    /// [`GcmKernel::TwoPass`]).
    pub fn available() -> Vec<GcmKernel> {
        Self::ALL
            .into_iter()
            .filter(|kernel| kernel.is_available())
            .collect()
    }

    /// `self` if this CPU can run it, else the first available kernel after it in
    /// [`GcmKernel::ALL`].
    pub fn or_fallback(self) -> GcmKernel {
        self.or_fallback_within(None)
    }

    /// [`GcmKernel::or_fallback`] among the kernels whose [`GcmKernel::family`] is at most
    /// `ceiling` (`None`: any).
    pub fn or_fallback_within(self, ceiling: Option<KernelFamily>) -> GcmKernel {
        Self::ALL
            .into_iter()
            .skip_while(|kernel| *kernel != self)
            .find(|kernel| kernel.family().within(ceiling) && kernel.is_available())
            .unwrap_or(GcmKernel::TwoPass)
    }

    /// The instruction family the kernel belongs to ([`GcmKernel::TwoPass`]: portable; its
    /// CTR and GHASH then follow the cipher's and the GHASH key's own choices).
    pub fn family(self) -> KernelFamily {
        match self {
            GcmKernel::Vaes512 => KernelFamily::Vaes512,
            GcmKernel::Vaes256 => KernelFamily::Vaes256,
            GcmKernel::AesNi => KernelFamily::AesNi,
            GcmKernel::TwoPass => KernelFamily::Portable,
        }
    }

    /// The fastest kernel this CPU can run, the default of every key: the first available
    /// in [`GcmKernel::ALL`]. (Measured on a Zen 4, where 512-bit operations are split into
    /// two 256-bit halves, VAES-512 still beat VAES-256 at every size; see
    /// docs/BENCHMARKS.md.)
    pub fn fastest() -> GcmKernel {
        GcmKernel::Vaes512.or_fallback()
    }

    /// Short lower-case name (as the front ends' `PARCRYPT_GCM_KERNEL` takes it).
    pub fn name(self) -> &'static str {
        match self {
            GcmKernel::Vaes512 => "vaes512",
            GcmKernel::Vaes256 => "vaes256",
            GcmKernel::AesNi => "aesni",
            GcmKernel::TwoPass => "two-pass",
        }
    }

    /// The kernel named `name` (as [`GcmKernel::name`] writes it), if any.
    pub fn from_name(name: &str) -> Option<GcmKernel> {
        Self::ALL.into_iter().find(|kernel| kernel.name() == name)
    }
}

impl std::fmt::Display for GcmKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kernel asked for new keys: 0 for [`GcmKernel::fastest`], else 1 + its index in
/// [`GcmKernel::ALL`].
///
/// Process-wide rather than an engine's option: GCM keys are made on paths that have no
/// engine (a mode called directly, a file's message keys), so the choice lives here and
/// `EngineBuilder::gcm_kernel` in `parcrypt-engine` sets it. One atomic load per key.
static DEFAULT_KERNEL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes keys made from now on in this process run `kernel` (falling back as
/// [`GcmKernel::or_fallback`] does where this CPU lacks it), or the fastest with `None`
/// (the default). Keys already made keep their kernel ([`GcmKey::set_kernel`] changes one).
/// For comparisons: every kernel gives the same bytes.
pub fn set_default_kernel(kernel: Option<GcmKernel>) {
    let code = kernel.map_or(0, |kernel| {
        1 + GcmKernel::ALL
            .iter()
            .position(|known| *known == kernel)
            .expect("every kernel is in GcmKernel::ALL") as u8
    });
    DEFAULT_KERNEL.store(code, std::sync::atomic::Ordering::Relaxed);
}

/// The kernel new keys run: the one [`set_default_kernel`] asked for (or the next
/// available), else [`GcmKernel::fastest`].
pub fn default_kernel() -> GcmKernel {
    match DEFAULT_KERNEL.load(std::sync::atomic::Ordering::Relaxed) {
        0 => GcmKernel::fastest(),
        code => GcmKernel::ALL
            .get(usize::from(code) - 1)
            .map_or_else(GcmKernel::fastest, |kernel| kernel.or_fallback()),
    }
}

/// Bytes of a range processed by CTR then GHASH before moving on (stays in L1).
const FUSED_PIECE_BYTES: usize = 4096;

/// The longest plaintext GCM allows: 2^39 - 256 bits (SP 800-38D section 5.2.1.1).
pub const MAX_TEXT_BYTES: u64 = (1 << 36) - 32;

/// The instance of the AES kernel function `$function` (generic over ROUNDS and DECRYPT) for
/// `$round_keys` round keys and the direction, as a `$kernel` pointer; any other count of
/// round keys evaluates `$otherwise`.
#[cfg(target_arch = "x86_64")]
macro_rules! aes_instance {
    ($($function:ident)::+, $kernel:ty, $round_keys:expr, $decrypt:expr, $otherwise:expr) => {
        match ($round_keys, $decrypt) {
            (11, false) => $($function)::+::<10, false> as $kernel,
            (11, true) => $($function)::+::<10, true>,
            (13, false) => $($function)::+::<12, false>,
            (13, true) => $($function)::+::<12, true>,
            (15, false) => $($function)::+::<14, false>,
            (15, true) => $($function)::+::<14, true>,
            _ => $otherwise,
        }
    };
}

/// The tag length parcrypt writes and expects.
pub const TAG_BYTES: usize = 16;

/// The IV length of GCM's fast path, where J0 is the IV and a counter (no GHASH).
pub const NONCE_BYTES: usize = 12;

/// The longest text [`GcmKey::seal`] and [`GcmKey::open`] take through a short path when the
/// IV is a 96-bit nonce. For AES where a stitched kernel is in force, one call on AES-NI and
/// PCLMULQDQ does the whole message (`gcm/short.rs`); otherwise E_K(J0) and the counter blocks
/// go through one cipher call and the text with the length block through one GHASH call,
/// instead of a call for each. Either way decryption checks the tag before it decrypts. On the
/// 2-core Zen 5 VM a 16-byte AES-128-GCM `seal` took about 100 ns on the long path, 60 on the
/// generic short path and 37 in the kernel; 112 bytes about 41 in the kernel.
pub const SHORT_TEXT_BYTES: usize = 112;

/// Blocks the short path encrypts at most: J0 and the text's counter blocks.
const SHORT_BLOCKS: usize = SHORT_TEXT_BYTES / 16 + 1;

/// E_K(J0) and the key stream of a short text: the first `used` bytes of `bytes`, which are
/// wiped on drop (only those: a 16-byte message should not pay for wiping 256).
struct ShortStream {
    bytes: [u8; 16 * SHORT_BLOCKS],
    used: usize,
}

impl ShortStream {
    /// E_K(J0).
    fn tag_mask(&self) -> &[u8; 16] {
        self.bytes[..16].try_into().expect("16 bytes")
    }

    /// The key stream of the text.
    fn text_stream(&self) -> &[u8] {
        &self.bytes[16..self.used]
    }
}

impl Drop for ShortStream {
    fn drop(&mut self) {
        self.bytes[..self.used].zeroize();
    }
}

/// Why a GCM key, message or tag was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GcmError {
    /// The IV is empty.
    #[error("GCM needs an IV of at least 1 byte")]
    EmptyIv,
    /// The block cipher's blocks are not 128 bits.
    #[error("GCM needs a 128-bit block cipher")]
    BlockSize,
    /// The message is longer than GCM allows under one key and IV.
    #[error("GCM message too long: at most {MAX_TEXT_BYTES} bytes under one key and IV")]
    TooLong,
    /// A kernel name that names no [`GcmKernel`] (the message says which value). The library
    /// no longer returns it (the kernel is chosen by [`set_default_kernel`], which takes a
    /// [`GcmKernel`]); kept so that existing matches still compile.
    #[error("{0}")]
    UnknownKernel(String),
    /// The tag does not match the message.
    #[error("authentication failed: the tag does not match (wrong key, IV or AAD, or the data was modified)")]
    TagMismatch,
}

/// What GCM derives from the key alone: the GHASH key H = E_K(0^128) with its powers. Made
/// once per key and shared by every message under it; wiped on drop.
///
/// The block cipher stays with the caller (it also runs the other modes): every method that
/// encrypts takes it, and it must be the cipher the key was made from.
#[derive(Clone)]
pub struct GcmKey {
    ghash: GhashKey,
    /// H as bytes, for devices that take the raw hash key.
    hash_subkey: Zeroizing<[u8; 16]>,
    /// What [`GcmKey::process_range`] runs when the cipher is our AES; always available.
    kernel: GcmKernel,
    /// The cipher's [`BlockCipher::kernel_ceiling`]: `kernel` and the GHASH code keep under
    /// it.
    ceiling: Option<KernelFamily>,
}

/// What one message adds to its [`GcmKey`]: the counter block of its first text block
/// (J0 + 1) and E_K(J0), the mask of its tag. Wiped on drop.
pub struct GcmMessage {
    first_text_counter: Counter,
    tag_mask: [u8; 16],
}

impl GcmKey {
    /// Computes H with `cipher` and the powers of H the GHASH implementation needs, and
    /// picks the kernel: [`default_kernel`] ([`GcmKernel::fastest`] unless
    /// [`set_default_kernel`] asked for another). Where the cipher has a
    /// [`BlockCipher::kernel_ceiling`], the kernel and the GHASH code are the fastest under
    /// it.
    pub fn new(cipher: &dyn BlockCipher) -> Result<Self, GcmError> {
        if cipher.block_size() != 16 {
            return Err(GcmError::BlockSize);
        }
        let mut hash_subkey = Zeroizing::new([0u8; 16]);
        cipher.encrypt_blocks(hash_subkey.as_mut_slice());
        let ceiling = cipher.kernel_ceiling();
        let (kernel, ghash) = match ceiling {
            None => (default_kernel(), GhashKey::new(&hash_subkey)),
            Some(_) => (
                default_kernel().or_fallback_within(ceiling),
                GhashKey::new_within(&hash_subkey, ceiling),
            ),
        };
        Ok(GcmKey {
            ghash,
            hash_subkey,
            kernel,
            ceiling,
        })
    }

    /// The kernel ranges run through when the cipher is our AES (other ciphers always take
    /// the two-pass path).
    pub fn kernel(&self) -> GcmKernel {
        self.kernel
    }

    /// Makes this key run `kernel`, for tests and measurements that compare kernels, and
    /// returns the kernel in force afterwards: `kernel` itself, or where this CPU lacks it
    /// (or it is above the cipher's kernel ceiling) the first available one after it in
    /// [`GcmKernel::ALL`].
    pub fn set_kernel(&mut self, kernel: GcmKernel) -> GcmKernel {
        self.kernel = kernel.or_fallback_within(self.ceiling);
        self.kernel
    }

    /// The kernel ceiling the key was made under (its cipher's
    /// [`BlockCipher::kernel_ceiling`]).
    pub fn kernel_ceiling(&self) -> Option<KernelFamily> {
        self.ceiling
    }

    /// The GHASH key (H and its powers).
    pub fn ghash(&self) -> &GhashKey {
        &self.ghash
    }

    /// H = E_K(0^128) as bytes: what GHASH kernels on a device take.
    pub fn hash_subkey(&self) -> &[u8; 16] {
        &self.hash_subkey
    }

    /// Starts a message with `iv`: J0 is `iv || 0^31 || 1` for a 96-bit IV and
    /// GHASH(IV || pad || \[len(IV)\]_64) otherwise.
    pub fn message(&self, cipher: &dyn BlockCipher, iv: &[u8]) -> Result<GcmMessage, GcmError> {
        if let Ok(nonce) = <&[u8; NONCE_BYTES]>::try_from(iv) {
            return Ok(self.message_with_nonce(cipher, nonce));
        }
        if iv.is_empty() {
            return Err(GcmError::EmptyIv);
        }
        let mut state = 0u128;
        hash_padded(&self.ghash, &mut state, iv);
        let mut length_block = [0u8; 16];
        length_block[8..].copy_from_slice(&(iv.len() as u64 * 8).to_be_bytes());
        self.ghash.update(&mut state, &length_block);
        Ok(GcmMessage::from_pre_counter(cipher, state.to_be_bytes()))
    }

    /// [`GcmKey::message`] for a 96-bit nonce, which cannot fail.
    pub fn message_with_nonce(
        &self,
        cipher: &dyn BlockCipher,
        nonce: &[u8; NONCE_BYTES],
    ) -> GcmMessage {
        GcmMessage::from_pre_counter(cipher, nonce_pre_counter(nonce))
    }

    /// Encrypts or decrypts the range of `message` that starts at text block `first_block`
    /// (only the last range of a message may end in a partial block) and returns the
    /// GHASH partial sum of the range's ciphertext, from a zero state.
    pub fn process_range(
        &self,
        message: &GcmMessage,
        cipher: &dyn BlockCipher,
        direction: Direction,
        first_block: u64,
        data: &mut [u8],
    ) -> u128 {
        let text = Text::in_place(data);
        // SAFETY: one buffer, read and written in place; `data` is not used again while the
        // text is.
        unsafe { self.process_text(message, cipher, direction, first_block, text) }
    }

    /// [`GcmKey::process_range`] from `input` into `output` (of the same length) in one pass
    /// over the data where a stitched kernel runs: the input is read once and the output
    /// written once, with no copy in between.
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn process_range_into(
        &self,
        message: &GcmMessage,
        cipher: &dyn BlockCipher,
        direction: Direction,
        first_block: u64,
        input: &[u8],
        output: &mut [u8],
    ) -> u128 {
        let text = Text::out_of_place(input, output);
        // SAFETY: a shared and a mutable borrow never overlap, and both hold `input.len()`
        // bytes; neither slice is used while the text is.
        unsafe { self.process_text(message, cipher, direction, first_block, text) }
    }

    /// The body of [`GcmKey::process_range`] and [`GcmKey::process_range_into`].
    ///
    /// # Safety
    /// `text` keeps the contract of [`Text`].
    // Only the stitched kernels (x86-64 for now) move `counter` and `text` on.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    unsafe fn process_text(
        &self,
        message: &GcmMessage,
        cipher: &dyn BlockCipher,
        direction: Direction,
        first_block: u64,
        mut text: Text,
    ) -> u128 {
        let mut state = 0u128;
        let mut counter = message.text_counter(first_block);
        #[cfg(target_arch = "x86_64")]
        if self.kernel != GcmKernel::TwoPass {
            if let Some(round_keys) = cipher.aes_round_keys() {
                // SAFETY: the caller keeps the contract of `Text`.
                (counter, text) = unsafe {
                    self.process_stitched(round_keys, cipher, direction, counter, &mut state, text)
                };
            }
        }
        // SAFETY: the caller keeps the contract of `Text`.
        let data = unsafe { text.into_output() };
        self.process_two_pass(cipher, direction, counter, &mut state, data);
        state
    }

    /// The stitched share of [`GcmKey::process_range`]: runs the whole batches at the front
    /// of `text` through the key's kernel, stepping over a wrap of the counter's low word
    /// with the two-pass path, and returns the counter and the rest (less than a batch).
    ///
    /// # Safety
    /// `text` keeps the contract of [`Text`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn process_stitched(
        &self,
        round_keys: &[[u8; 16]],
        cipher: &dyn BlockCipher,
        direction: Direction,
        mut counter: Counter,
        state: &mut u128,
        mut text: Text,
    ) -> (Counter, Text) {
        type Kernel = unsafe fn(&[[u8; 16]], &[u128; 32], &[u8; 16], &mut u128, Text);
        /// The kernel function of module `$module` for the key size and direction.
        macro_rules! pick {
            ($module:ident) => {
                (
                    $module::BATCH_BLOCKS,
                    aes_instance!(
                        $module::process,
                        Kernel,
                        round_keys.len(),
                        direction == Direction::Decrypt,
                        return (counter, text)
                    ),
                )
            };
        }
        let (batch_blocks, kernel) = match self.kernel {
            GcmKernel::Vaes512 => pick!(vaes512),
            GcmKernel::Vaes256 => pick!(vaes256),
            GcmKernel::AesNi => pick!(aesni),
            GcmKernel::TwoPass => return (counter, text),
        };
        let batch_bytes = 16 * batch_blocks;
        // The VAES-512 kernel writes long outputs apart with streaming stores, which need a
        // 64-byte aligned output: a 16-byte aligned one gets there after at most three
        // blocks, run by the two-pass path.
        let address = text.output() as usize;
        if self.kernel == GcmKernel::Vaes512
            && parcrypt_ciphers::aes::streams_output(text.input(), text.output(), text.len())
            && address.is_multiple_of(16)
            && !address.is_multiple_of(64)
        {
            let (head, rest) = text.split_at(64 - address % 64);
            // SAFETY: the caller keeps the contract of `Text`, and `head` is not used again.
            let data = unsafe { head.into_output() };
            self.process_two_pass(cipher, direction, counter, state, data);
            counter = counter.advanced((data.len() / 16) as u64);
            text = rest;
        }
        while text.len() >= batch_bytes {
            let mut block = [0u8; 16];
            counter.write(&mut block);
            let low = u32::from_be_bytes([block[12], block[13], block[14], block[15]]);
            let until_wrap = (1u64 << 32) - u64::from(low);
            let batches = (until_wrap / batch_blocks as u64).min((text.len() / batch_bytes) as u64);
            let bytes = if batches == 0 {
                batch_bytes
            } else {
                batches as usize * batch_bytes
            };
            let (now, rest) = text.split_at(bytes);
            if batches == 0 {
                // The low word wraps within this batch: the two-pass path knows the rule.
                // SAFETY: the caller keeps the contract of `Text`, and `now` is not used again.
                let data = unsafe { now.into_output() };
                self.process_two_pass(cipher, direction, counter, state, data);
            } else {
                // SAFETY: `kernel` is never a kernel `is_available` denied (`set_kernel` and
                // `new` only keep available ones), so the CPU has every feature it enables;
                // `now` is whole batches of that kernel within which the counter's low word
                // does not wrap and keeps the contract of `Text` (the caller's), and
                // `round_keys` has the length its ROUNDS expects.
                unsafe { kernel(round_keys, self.ghash.powers(), &block, state, now) };
            }
            counter = counter.advanced((bytes / 16) as u64);
            text = rest;
        }
        (counter, text)
    }

    /// CTR then GHASH over `data` in L1-sized pieces, continuing `state`.
    fn process_two_pass(
        &self,
        cipher: &dyn BlockCipher,
        direction: Direction,
        mut counter: Counter,
        state: &mut u128,
        data: &mut [u8],
    ) {
        for piece in data.chunks_mut(FUSED_PIECE_BYTES) {
            if direction == Direction::Decrypt {
                hash_padded(&self.ghash, state, piece);
            }
            ctr::apply(cipher, counter, piece);
            if direction == Direction::Encrypt {
                hash_padded(&self.ghash, state, piece);
            }
            counter = counter.advanced((FUSED_PIECE_BYTES / 16) as u64);
        }
    }

    /// The GHASH partial sum of a range of ciphertext from a zero state (a final partial
    /// block zero-padded), for engines that run the CTR part elsewhere.
    pub fn hash_range(&self, ciphertext: &[u8]) -> u128 {
        let mut state = 0u128;
        hash_padded(&self.ghash, &mut state, ciphertext);
        state
    }

    /// The tag of `message` once `accumulator` holds all of its AAD and ciphertext: the
    /// length block hashed on, then masked with E_K(J0). Every GCM tag parcrypt makes or
    /// checks is finished here.
    pub fn tag(&self, message: &GcmMessage, accumulator: &GcmAccumulator) -> [u8; TAG_BYTES] {
        let mut state = accumulator.state;
        let length_block = length_block(accumulator.aad_bytes, accumulator.text_bytes);
        self.ghash.update(&mut state, &length_block);
        masked_tag(state, &message.tag_mask)
    }

    /// What `gcm/short.rs` needs for a short message under `nonce`, when it applies: AES with
    /// its round keys, a CPU with AES-NI and PCLMULQDQ, and a stitched kernel in force (the
    /// two-pass setting keeps every path generic, for comparisons).
    ///
    /// Always inlined: returned through memory, the message's AAD state was written as two
    /// 8-byte halves and read back as one 16-byte value, a store the load could not be
    /// forwarded from (about 7 ns of a 36 ns AES-128-GCM `open` of 16 bytes on Zen 5).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn short_kernel<'a>(
        &'a self,
        cipher: &'a dyn BlockCipher,
        nonce: &'a [u8; NONCE_BYTES],
        aad: &[u8],
    ) -> Option<short::Short<'a>> {
        if self.kernel == GcmKernel::TwoPass {
            return None;
        }
        let round_keys = cipher.aes_round_keys()?;
        let aad_state = self.hash_aad(aad);
        short::Short::new(
            round_keys,
            self.ghash.powers(),
            nonce,
            aad_state,
            aad.len() as u64,
        )
    }

    /// The tag of a short message (see [`SHORT_TEXT_BYTES`]): `stream` starts with E_K(J0);
    /// the text's ciphertext and the length block are hashed in one call after the AAD.
    fn short_tag(&self, stream: &ShortStream, aad: &[u8], ciphertext: &[u8]) -> [u8; 16] {
        debug_assert!(ciphertext.len() <= SHORT_TEXT_BYTES);
        let mut state = self.hash_aad(aad);
        let blocks = ciphertext.len().div_ceil(16);
        let mut tail = [0u8; 16 * SHORT_BLOCKS];
        tail[..ciphertext.len()].copy_from_slice(ciphertext);
        tail[16 * blocks..16 * (blocks + 1)]
            .copy_from_slice(&length_block(aad.len() as u64, ciphertext.len() as u64));
        self.ghash.update(&mut state, &tail[..16 * (blocks + 1)]);
        masked_tag(state, stream.tag_mask())
    }

    /// Compares the tag of `message` with `received` in constant time.
    pub fn verify(
        &self,
        message: &GcmMessage,
        accumulator: &GcmAccumulator,
        received: &[u8],
    ) -> Result<(), GcmError> {
        check_tag(self.tag(message, accumulator), received)
    }

    /// Encrypts a whole message in place on the calling thread and returns its tag.
    pub fn seal(
        &self,
        cipher: &dyn BlockCipher,
        iv: &[u8],
        aad: &[u8],
        data: &mut [u8],
    ) -> Result<[u8; TAG_BYTES], GcmError> {
        if let (Ok(nonce), true) = (
            <&[u8; NONCE_BYTES]>::try_from(iv),
            data.len() <= SHORT_TEXT_BYTES,
        ) {
            #[cfg(target_arch = "x86_64")]
            if let Some(message) = self.short_kernel(cipher, nonce, aad) {
                return Ok(message.seal(data));
            }
            let stream = short_stream(cipher, nonce, data.len());
            xor_in_place(data, &stream.text_stream()[..data.len()]);
            return Ok(self.short_tag(&stream, aad, data));
        }
        self.crypt_message(cipher, Direction::Encrypt, iv, aad, None, data)
    }

    /// Encrypts or decrypts a whole message on the calling thread and returns the tag of its
    /// ciphertext: from `source` into `data` (of the same length) in one pass, or in place in
    /// `data` when `source` is `None`.
    ///
    /// Decryption does not check the tag: the caller compares it with the received one
    /// ([`check_tag`]) and must discard the output on a mismatch. Plaintext is written before
    /// the tag is known, so this suits only output nobody else can see until the check (a
    /// buffer the caller allocated and returns on success); [`GcmKey::open`] and
    /// [`GcmKey::open_into`] instead check before they decrypt.
    ///
    /// Under a 96-bit nonce with our AES and a stitched kernel in force, E_K(J0) runs beside
    /// the text's batches and the length block and the mask end the tag in the same call;
    /// on VAES-512 the whole message is one kernel call (`gcm/vaes512.rs`, `message`: the
    /// batches, the last partial batch with masked loads and stores, the length block in its
    /// reduction). Otherwise it is [`GcmKey::message`], [`GcmKey::process_range`] and
    /// [`GcmKey::tag`].
    ///
    /// # Panics
    /// If `source` and `data` differ in length.
    pub fn crypt_message(
        &self,
        cipher: &dyn BlockCipher,
        direction: Direction,
        iv: &[u8],
        aad: &[u8],
        source: Option<&[u8]>,
        data: &mut [u8],
    ) -> Result<[u8; TAG_BYTES], GcmError> {
        check_length(data)?;
        let text = match source {
            Some(source) => Text::out_of_place(source, data),
            None => Text::in_place(data),
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `text` is `source` (or `data`) and `data`, a shared and a mutable borrow,
        // which never overlap, or `data` alone; neither is used while the text is.
        if let Some(tag) = unsafe { self.message_kernel(cipher, direction, iv, aad, text) } {
            return Ok(tag);
        }
        let message = self.message(cipher, iv)?;
        let mut accumulator = GcmAccumulator::new(self, aad);
        // SAFETY: as above.
        let partial = unsafe { self.process_text(&message, cipher, direction, 0, text) };
        accumulator.append(self, partial, text.len() as u64)?;
        Ok(self.tag(&message, &accumulator))
    }

    /// [`GcmKey::crypt_message`] where a stitched kernel is in force, the cipher is our AES and
    /// the IV a 96-bit nonce (`None` otherwise). E_K(J0) is computed first, beside the text's
    /// batches (`short::tag_mask`), and the length block and the mask end the tag in one call
    /// (`short::length_tag`). On VAES-512 the text is one kernel call (`vaes512::message`,
    /// with its last partial batch); on the other kernels, and on VAES-512 when a text long
    /// enough to stream has an output that is not 64-byte aligned, the whole batches go
    /// through the kernel and the rest through the two-pass path, as ranges do.
    ///
    /// # Safety
    /// `text` keeps the contract of [`Text`]; its length is at most [`MAX_TEXT_BYTES`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn message_kernel(
        &self,
        cipher: &dyn BlockCipher,
        direction: Direction,
        iv: &[u8],
        aad: &[u8],
        text: Text,
    ) -> Option<[u8; TAG_BYTES]> {
        type Kernel = unsafe fn(
            &[[u8; 16]],
            &[u128; MESSAGE_POWERS],
            &[u8; NONCE_BYTES],
            u128,
            u64,
            Text,
        ) -> [u8; 16];
        let (round_keys, nonce) = self.stitched_message(cipher, iv)?;
        // (A text that streams needs a 64-byte aligned output.)
        let aligned = (text.output() as usize).is_multiple_of(64);
        let whole_call = self.kernel == GcmKernel::Vaes512
            && (aligned
                || !parcrypt_ciphers::aes::streams_output(text.input(), text.output(), text.len()));
        if !whole_call {
            // The whole batches through the kernel, the rest through the two-pass path.
            let run_text = |state: &mut u128| {
                // SAFETY: the caller keeps the contract of `Text`.
                let (counter, rest) = unsafe {
                    self.process_stitched(
                        round_keys,
                        cipher,
                        direction,
                        nonce_text_counter(nonce),
                        state,
                        text,
                    )
                };
                // SAFETY: as above, and `rest` is not used again.
                let data = unsafe { rest.into_output() };
                self.process_two_pass(cipher, direction, counter, state, data);
            };
            // SAFETY: `stitched_message` gave the round keys and nonce.
            return Some(unsafe { self.finish_tag(round_keys, nonce, aad, text.len(), run_text) });
        }
        let kernel = aes_instance!(
            vaes512::message,
            Kernel,
            round_keys.len(),
            direction == Direction::Decrypt,
            return None
        );
        let mut aad_state = self.hash_aad(aad);
        // SAFETY: the VAES-512 kernel is only ever in force where `is_available` allowed it
        // (`new` and `set_kernel` keep available ones), so the CPU has every feature it
        // enables; `round_keys` has the length its ROUNDS expects; the caller keeps the
        // contract of `Text` and the length limit.
        let tag = unsafe {
            kernel(
                round_keys,
                self.ghash.message_powers(),
                nonce,
                aad_state,
                aad.len() as u64,
                text,
            )
        };
        aad_state.zeroize();
        Some(tag)
    }

    /// The tag of a message whose text's GHASH `hash_text` continues from the AAD's state
    /// (and whose text it may encrypt or decrypt meanwhile): E_K(J0) first, so that it runs
    /// beside that work (`short::tag_mask`), then the length block and the mask in one call
    /// (`short::length_tag`).
    ///
    /// # Safety
    /// `round_keys` and `nonce` come from [`GcmKey::stitched_message`] (which confirmed the
    /// CPU features the `short` helpers enable).
    #[cfg(target_arch = "x86_64")]
    unsafe fn finish_tag(
        &self,
        round_keys: &[[u8; 16]],
        nonce: &[u8; NONCE_BYTES],
        aad: &[u8],
        text_bytes: usize,
        hash_text: impl FnOnce(&mut u128),
    ) -> [u8; TAG_BYTES] {
        // SAFETY: the caller's guarantee; the round keys are AES's.
        let tag_mask = unsafe { short::tag_mask(round_keys, nonce) };
        let mut state = self.hash_aad(aad);
        hash_text(&mut state);
        // SAFETY: as above.
        let tag = unsafe {
            short::length_tag(
                self.ghash.powers(),
                state,
                aad.len() as u64,
                text_bytes as u64,
                tag_mask,
            )
        };
        state.zeroize();
        tag
    }

    /// The round keys and nonce of a message the `short` helpers can finish: a stitched
    /// kernel in force, our AES, a 96-bit nonce and a CPU with AES-NI, PCLMULQDQ, SSSE3 and
    /// SSE4.1 (every stitched kernel's CPU has them; checked all the same).
    #[cfg(target_arch = "x86_64")]
    fn stitched_message<'a>(
        &self,
        cipher: &'a dyn BlockCipher,
        iv: &'a [u8],
    ) -> Option<(&'a [[u8; 16]], &'a [u8; NONCE_BYTES])> {
        if self.kernel == GcmKernel::TwoPass {
            return None;
        }
        let nonce = <&[u8; NONCE_BYTES]>::try_from(iv).ok()?;
        let round_keys = cipher.aes_round_keys()?;
        (matches!(round_keys.len(), 11 | 13 | 15) && aesni::is_available())
            .then_some((round_keys, nonce))
    }

    /// GHASH of the zero-padded AAD from a zero state.
    fn hash_aad(&self, aad: &[u8]) -> u128 {
        let mut state = 0u128;
        if !aad.is_empty() {
            hash_padded(&self.ghash, &mut state, aad);
        }
        state
    }

    /// The tag of the ciphertext `data` under `iv` and `aad` where [`GcmKey::stitched_message`]
    /// applies (`None` otherwise): E_K(J0) beside the GHASH pass, and the length block and the
    /// mask in one call after it, for [`GcmKey::open`]'s check before it decrypts.
    #[cfg(target_arch = "x86_64")]
    fn ciphertext_tag(
        &self,
        cipher: &dyn BlockCipher,
        iv: &[u8],
        aad: &[u8],
        data: &[u8],
    ) -> Option<[u8; TAG_BYTES]> {
        let (round_keys, nonce) = self.stitched_message(cipher, iv)?;
        // SAFETY: `stitched_message` gave the round keys and nonce.
        Some(unsafe {
            self.finish_tag(round_keys, nonce, aad, data.len(), |state| {
                hash_padded(&self.ghash, state, data)
            })
        })
    }

    /// Decrypts a whole message in place on the calling thread, checking `tag` over the
    /// ciphertext first: on a mismatch `data` is left as it was (ciphertext), so no
    /// unauthenticated plaintext ever exists.
    pub fn open(
        &self,
        cipher: &dyn BlockCipher,
        iv: &[u8],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), GcmError> {
        self.open_from(cipher, iv, aad, None, data, tag)
    }

    /// [`GcmKey::open`] from `source` into `output` (of the same length): the tag is checked
    /// over `source` first and only then is `output` written, in one CTR pass. On a mismatch
    /// `output` holds no plaintext: texts longer than [`SHORT_TEXT_BYTES`] leave it as it
    /// was, shorter ones may leave the ciphertext there.
    ///
    /// # Panics
    /// If `source` and `output` differ in length.
    pub fn open_into(
        &self,
        cipher: &dyn BlockCipher,
        iv: &[u8],
        aad: &[u8],
        source: &[u8],
        output: &mut [u8],
        tag: &[u8],
    ) -> Result<(), GcmError> {
        assert_eq!(
            source.len(),
            output.len(),
            "GCM output must match its input"
        );
        self.open_from(cipher, iv, aad, Some(source), output, tag)
    }

    /// The body of [`GcmKey::open`] (no `source`: in place in `data`) and
    /// [`GcmKey::open_into`] (from `source` into `data`): two passes, GHASH over the
    /// ciphertext and the tag check, then CTR.
    fn open_from(
        &self,
        cipher: &dyn BlockCipher,
        iv: &[u8],
        aad: &[u8],
        source: Option<&[u8]>,
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), GcmError> {
        if let (Ok(nonce), true) = (
            <&[u8; NONCE_BYTES]>::try_from(iv),
            data.len() <= SHORT_TEXT_BYTES,
        ) {
            // Short texts are opened in place: the ciphertext is copied in first.
            if let Some(source) = source {
                data.copy_from_slice(source);
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(message) = self.short_kernel(cipher, nonce, aad) {
                let Ok(received) = <&[u8; TAG_BYTES]>::try_from(tag) else {
                    return Err(GcmError::TagMismatch);
                };
                return if message.open(data, received) {
                    Ok(())
                } else {
                    Err(GcmError::TagMismatch)
                };
            }
            let stream = short_stream(cipher, nonce, data.len());
            check_tag(self.short_tag(&stream, aad, data), tag)?;
            xor_in_place(data, &stream.text_stream()[..data.len()]);
            return Ok(());
        }
        check_length(data)?;
        let decrypt = |counter: Counter, data: &mut [u8]| match source {
            Some(source) => ctr::apply_into(cipher, counter, source, data),
            None => ctr::apply(cipher, counter, data),
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(expected) = self.ciphertext_tag(cipher, iv, aad, source.unwrap_or(data)) {
            check_tag(expected, tag)?;
            let nonce = <&[u8; NONCE_BYTES]>::try_from(iv).expect("a 96-bit nonce");
            decrypt(nonce_text_counter(nonce), data);
            return Ok(());
        }
        let message = self.message(cipher, iv)?;
        let mut accumulator = GcmAccumulator::new(self, aad);
        let ciphertext = source.unwrap_or(data);
        accumulator.append(self, self.hash_range(ciphertext), ciphertext.len() as u64)?;
        self.verify(&message, &accumulator, tag)?;
        decrypt(message.text_counter(0), data);
        Ok(())
    }
}

impl std::fmt::Debug for GcmKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcmKey")
            .field("ghash", &self.ghash)
            .finish_non_exhaustive()
    }
}

impl GcmMessage {
    fn from_pre_counter(cipher: &dyn BlockCipher, pre_counter: [u8; 16]) -> Self {
        let mut tag_mask = pre_counter;
        cipher.encrypt_blocks(&mut tag_mask);
        GcmMessage {
            first_text_counter: Counter::new(&pre_counter, CounterRule::Low32).advanced(1),
            tag_mask,
        }
    }

    /// The counter block of text block `first_block` (for a GPU or other CTR engine).
    pub fn text_counter(&self, first_block: u64) -> Counter {
        self.first_text_counter.advanced(first_block)
    }
}

impl Drop for GcmMessage {
    fn drop(&mut self) {
        self.tag_mask.zeroize();
    }
}

/// The counter block of the first text block of a message with a 96-bit nonce (J0 + 1),
/// without the rest of a [`GcmMessage`]: for engines that run the CTR part of many
/// messages at once.
pub fn nonce_text_counter(nonce: &[u8; NONCE_BYTES]) -> Counter {
    Counter::new(&nonce_pre_counter(nonce), CounterRule::Low32).advanced(1)
}

/// Compares `expected` with `received` in constant time, then wipes `expected`: the check
/// of a tag [`GcmKey::crypt_message`] returned for a decryption.
pub fn check_tag(mut expected: [u8; TAG_BYTES], received: &[u8]) -> Result<(), GcmError> {
    let equal: bool = expected.as_slice().ct_eq(received).into();
    expected.zeroize();
    if equal {
        Ok(())
    } else {
        Err(GcmError::TagMismatch)
    }
}

/// GCM's last GHASH block: the AAD and text lengths in bits.
fn length_block(aad_bytes: u64, text_bytes: u64) -> [u8; 16] {
    let mut block = [0u8; 16];
    block[..8].copy_from_slice(&(aad_bytes * 8).to_be_bytes());
    block[8..].copy_from_slice(&(text_bytes * 8).to_be_bytes());
    block
}

/// A finished GHASH `state` (the length block hashed) as a tag: masked with E_K(J0). The
/// state is wiped.
fn masked_tag(mut state: u128, tag_mask: &[u8; 16]) -> [u8; TAG_BYTES] {
    let mut tag = state.to_be_bytes();
    state.zeroize();
    for (byte, mask) in tag.iter_mut().zip(tag_mask) {
        *byte ^= mask;
    }
    tag
}

/// E_K(J0) followed by the key stream of a short text of `length` bytes (at most
/// [`SHORT_TEXT_BYTES`]) under a 96-bit nonce, from one cipher call. Wiped on drop.
fn short_stream(cipher: &dyn BlockCipher, nonce: &[u8; NONCE_BYTES], length: usize) -> ShortStream {
    debug_assert!(length <= SHORT_TEXT_BYTES);
    let blocks = length.div_ceil(16) + 1;
    let mut stream = ShortStream {
        bytes: [0u8; 16 * SHORT_BLOCKS],
        used: 16 * blocks,
    };
    // J0's low word is 1 for a 96-bit nonce: the few blocks after it never wrap.
    let first = Counter::new(&nonce_pre_counter(nonce), CounterRule::Low32);
    let used = &mut stream.bytes[..16 * blocks];
    for (index, block) in used.chunks_exact_mut(16).enumerate() {
        first.advanced(index as u64).write(block);
    }
    cipher.encrypt_blocks(used);
    stream
}

/// J0 for a 96-bit nonce: nonce || 0^31 || 1.
fn nonce_pre_counter(nonce: &[u8; NONCE_BYTES]) -> [u8; 16] {
    let mut block = [0u8; 16];
    block[..NONCE_BYTES].copy_from_slice(nonce);
    block[15] = 1;
    block
}

/// The bytes a range runs over, for the stitched kernels: `len` bytes read at `input` and
/// written at `output`.
///
/// The contract every unsafe function taking a `Text` relies on: `input` is valid for reads
/// and `output` for writes of `len` bytes for as long as the `Text` (or a part of it) is in
/// use, nothing else accesses those bytes meanwhile, and `output` is either `input` itself
/// (in place) or a region disjoint from it. Splitting a `Text` keeps the contract.
#[derive(Clone, Copy)]
pub(crate) struct Text {
    input: *const u8,
    output: *mut u8,
    len: usize,
}

impl Text {
    fn new(input: *const u8, output: *mut u8, len: usize) -> Text {
        Text { input, output, len }
    }

    /// `data`, read and written in place; the caller must not touch `data` while the text
    /// is in use.
    fn in_place(data: &mut [u8]) -> Text {
        let pointer = data.as_mut_ptr();
        Text::new(pointer, pointer, data.len())
    }

    /// From `input` into `output`; the caller must not touch either while the text is in
    /// use.
    ///
    /// # Panics
    /// If the lengths differ.
    fn out_of_place(input: &[u8], output: &mut [u8]) -> Text {
        assert_eq!(input.len(), output.len(), "GCM output must match its input");
        Text::new(input.as_ptr(), output.as_mut_ptr(), input.len())
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Where the input starts.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn input(&self) -> *const u8 {
        self.input
    }

    /// Where the output starts.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn output(&self) -> *mut u8 {
        self.output
    }

    /// How many whole batches of `batch_bytes` the text is.
    ///
    /// # Panics
    /// If it is not a whole number of them: the kernels take whole batches only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn batches(&self, batch_bytes: usize) -> usize {
        assert!(
            self.len.is_multiple_of(batch_bytes),
            "stitched GCM takes whole batches"
        );
        self.len / batch_bytes
    }

    /// The first `at` bytes and the rest.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn split_at(self, at: usize) -> (Text, Text) {
        assert!(at <= self.len);
        // `wrapping_add` keeps this safe; within `len`, the offsets stay inside both regions.
        let rest = Text::new(
            self.input.wrapping_add(at),
            self.output.wrapping_add(at),
            self.len - at,
        );
        (Text::new(self.input, self.output, at), rest)
    }

    /// The output as a slice holding the input's bytes (copied there unless in place), for
    /// the paths that work in place.
    ///
    /// # Safety
    /// The `Text` keeps its contract, and is not used again while the slice lives.
    unsafe fn into_output<'a>(self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        if self.input != self.output.cast_const() {
            // SAFETY: both regions hold `len` bytes and are disjoint (the contract).
            unsafe { std::ptr::copy_nonoverlapping(self.input, self.output, self.len) };
        }
        // SAFETY: `output` is valid for `len` bytes and nothing else accesses them while the
        // slice lives (the contract, and the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(self.output, self.len) }
    }
}

fn check_length(data: &[u8]) -> Result<(), GcmError> {
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(GcmError::TooLong);
    }
    Ok(())
}

/// Hashes `data`, zero-padding a final partial block.
fn hash_padded(ghash: &GhashKey, state: &mut u128, data: &[u8]) {
    let whole = data.len() / 16 * 16;
    ghash.update(state, &data[..whole]);
    if whole < data.len() {
        let mut last = [0u8; 16];
        last[..data.len() - whole].copy_from_slice(&data[whole..]);
        ghash.update(state, &last);
    }
}

/// The running GHASH of one message: AAD first, then ranges of ciphertext in order. The
/// default is a message with no AAD and no text yet.
#[derive(Debug, Default, Clone)]
pub struct GcmAccumulator {
    state: u128,
    aad_bytes: u64,
    text_bytes: u64,
}

impl GcmAccumulator {
    /// Starts a message by hashing its `aad`.
    pub fn new(key: &GcmKey, aad: &[u8]) -> Self {
        GcmAccumulator {
            state: key.hash_aad(aad),
            aad_bytes: aad.len() as u64,
            text_bytes: 0,
        }
    }

    /// Appends the partial sum of the next range of `bytes` ciphertext bytes (a whole number
    /// of blocks except for the message's last range).
    pub fn append(&mut self, key: &GcmKey, partial: u128, bytes: u64) -> Result<(), GcmError> {
        debug_assert!(
            self.text_bytes.is_multiple_of(16),
            "a partial block must end the message"
        );
        let total = self
            .text_bytes
            .checked_add(bytes)
            .ok_or(GcmError::TooLong)?;
        if total > MAX_TEXT_BYTES {
            return Err(GcmError::TooLong);
        }
        // Nothing hashed yet (lengths are public) means a zero state: carrying it past the
        // range would cost a power of H per message for nothing.
        self.state = if self.aad_bytes == 0 && self.text_bytes == 0 {
            partial
        } else {
            key.ghash.append_partial(self.state, partial, bytes)
        };
        self.text_bytes = total;
        Ok(())
    }

    /// Ciphertext bytes appended so far.
    pub fn text_bytes(&self) -> u64 {
        self.text_bytes
    }
}

impl Drop for GcmAccumulator {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

/// One-shot GCM over a whole buffer on the calling thread under a key used once: `data` is
/// replaced by its ciphertext and the tag is returned. Callers with many messages under one
/// key make a [`GcmKey`] once and call [`GcmKey::seal`].
pub fn seal(
    cipher: &dyn BlockCipher,
    iv: &[u8],
    aad: &[u8],
    data: &mut [u8],
) -> Result<[u8; TAG_BYTES], GcmError> {
    GcmKey::new(cipher)?.seal(cipher, iv, aad, data)
}

/// One-shot GCM decryption on the calling thread under a key used once (see
/// [`GcmKey::open`]): the tag is checked before anything is decrypted, so on a mismatch
/// `data` still holds the ciphertext.
pub fn open(
    cipher: &dyn BlockCipher,
    iv: &[u8],
    aad: &[u8],
    data: &mut [u8],
    tag: &[u8],
) -> Result<(), GcmError> {
    GcmKey::new(cipher)?.open(cipher, iv, aad, data, tag)
}
