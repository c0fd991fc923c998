//! Hardware AES: our own kernels for CTR, ECB and CBC, the RustCrypto `aes` crate where no
//! kernel fits this CPU (and as the reference the kernels are tested against).
//!
//! The crate picks AES-NI, VAES-256 or VAES-512 at run time, but goes through memory where
//! a mode needs more than whole blocks: CTR through it means writing counter blocks out,
//! encrypting them and XORing them into the data in a second pass, CBC encryption means
//! one call per block, and CBC decryption a saved copy of the ciphertext. The fused kernels
//! ([`super::ctr_vaes512`], [`super::ctr_aesni`], [`super::cbc_aesni`],
//! [`super::cbc_vaes512`]) keep counters, the chain or the previous ciphertext in registers
//! and touch the data once; the VAES-512 ECB kernel ([`super::ecb_vaes512`]) keeps 48 blocks
//! in flight, about three times the crate's rate, the VAES-256 one ([`super::ecb_vaes256`])
//! 16 and the AES-NI one ([`super::ecb_aesni`]) 8, so that a ceiling of AES-NI or VAES-256 (and a CPU with AES-NI alone) still runs our
//! kernels rather than the crate, which picks VAES by itself. They need the plain FIPS-197 round keys,
//! which the crate does not expose, so this file expands the key itself into [`RoundKeys`]
//! (and, for decryption, derives the equivalent-inverse-cipher keys from them); the crate's
//! own schedule is only built where it is used.

use std::sync::OnceLock;

use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::{BlockCipher, KernelFamily};

/// Whether this CPU has every one of the named x86-64 features (never, off x86-64).
macro_rules! cpu_has {
    ($($feature:tt),+) => {{
        #[cfg(target_arch = "x86_64")]
        let has = true $(&& std::arch::is_x86_feature_detected!($feature))+;
        #[cfg(not(target_arch = "x86_64"))]
        let has = false;
        has
    }};
}

/// Whether this CPU has the ARMv8 Cryptography Extensions' AES (and PMULL, which Rust's
/// `aes` feature includes).
#[cfg(target_arch = "aarch64")]
fn armv8_aes() -> bool {
    std::arch::is_aarch64_feature_detected!("aes")
}

/// One of the three AES key sizes through the `aes` crate, key schedule wiped on drop (crate
/// feature `zeroize`).
enum CrateCipher {
    Aes128(aes::Aes128),
    Aes192(aes::Aes192),
    Aes256(aes::Aes256),
}

/// The most round keys any key size needs: AES-256 has 14 rounds plus the initial key.
pub(super) const MAX_ROUND_KEYS: usize = 15;

/// FIPS-197 encryption round keys, each in the byte order the AES instructions take.
///
/// Aligned to 16 bytes, not to a cache line: the kernels load the keys once per call, where
/// a fifth line costs nothing measurable, while a 64-byte alignment makes every
/// `Box<dyn BlockCipher>` holding a [`FastAes`] go through `posix_memalign`, about 25 ns
/// more per key (`examples/aes_key_setup_speed.rs`).
#[repr(C, align(16))]
pub(super) struct RoundKeys {
    pub(super) keys: [[u8; 16]; MAX_ROUND_KEYS],
    /// 10, 12 or 14.
    pub(super) rounds: usize,
}

impl Zeroize for RoundKeys {
    fn zeroize(&mut self) {
        // One volatile store per round key: the `zeroize` crate's array wipe stores byte by
        // byte, which is 240 stores and, per message, as much as the whole key expansion.
        for key in &mut self.keys {
            // SAFETY: `key` comes from a `&mut`, so it is valid, aligned and not aliased.
            // Volatile, so that the compiler cannot drop the wipe as a dead store.
            unsafe { core::ptr::write_volatile(key, [0u8; 16]) };
        }
        // As in the `zeroize` crate: keeps later accesses from moving before the wipe.
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for RoundKeys {
    fn drop(&mut self) {
        self.zeroize();
    }
}

impl ZeroizeOnDrop for RoundKeys {}

impl RoundKeys {
    /// FIPS-197 section 5.2 key expansion for 16-, 24- and 32-byte keys, SubWord by
    /// `aeskeygenassist` where the CPU has AES-NI and by the computed S-box otherwise.
    ///
    /// The expansions write through a reference rather than return their schedule: the
    /// return would go through a copy made with 64-byte loads straight after the 16-byte
    /// stores, which waits for the stores to retire (store forwarding fails) and cost about
    /// as much as the expansion. Inlined, so that the remaining move is the caller's.
    #[inline]
    pub(super) fn expand(key: &[u8]) -> Self {
        let mut expanded = Self::empty();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("aes") {
            // SAFETY: AES-NI has just been detected.
            unsafe { aesni_expansion::expand(key, &mut expanded) };
            return expanded;
        }
        portable_expansion(key, &mut expanded);
        expanded
    }

    /// All zero: what the expansions write into (`rounds` included).
    fn empty() -> Self {
        RoundKeys {
            keys: [[0u8; 16]; MAX_ROUND_KEYS],
            rounds: 0,
        }
    }
}

/// [`RoundKeys::expand`] with the computed S-box, whatever the CPU.
fn portable_expansion(key: &[u8], expanded: &mut RoundKeys) {
    match key.len() {
        16 => expand_words::<4>(key, expanded),
        24 => expand_words::<6>(key, expanded),
        32 => expand_words::<8>(key, expanded),
        other => panic!("AES key of {other} bytes"),
    }
}

/// The FIPS-197 word loop for a key of `KEY_WORDS` words. The word count is a constant so
/// that `index % KEY_WORDS` is not a division per word.
fn expand_words<const KEY_WORDS: usize>(key: &[u8], expanded: &mut RoundKeys) {
    assert_eq!(key.len(), 4 * KEY_WORDS, "AES key length");
    expanded.rounds = KEY_WORDS + 6;
    // Words hold their four bytes in memory order (little-endian integers), so the schedule
    // is the words written out one after another with `to_le_bytes`.
    let (words, _) = expanded.keys.as_flattened_mut().as_chunks_mut::<4>();
    for (word, bytes) in words.iter_mut().zip(key.as_chunks::<4>().0) {
        *word = *bytes;
    }
    let mut round_constant = 1u8;
    let mut temp = u32::from_le_bytes(words[KEY_WORDS - 1]);
    for index in KEY_WORDS..4 * (KEY_WORDS + 7) {
        if index % KEY_WORDS == 0 {
            // RotWord moves byte 0 to the end: in a little-endian integer that is a right
            // rotation by one byte.
            temp = sub_word(temp.rotate_right(8)) ^ u32::from(round_constant);
            round_constant = multiply_by_x(round_constant);
        } else if KEY_WORDS > 6 && index % KEY_WORDS == 4 {
            temp = sub_word(temp);
        }
        temp ^= u32::from_le_bytes(words[index - KEY_WORDS]);
        words[index] = temp.to_le_bytes();
    }
}

/// Doubling in GF(2^8) modulo the AES polynomial x^8 + x^4 + x^3 + x + 1.
fn multiply_by_x(value: u8) -> u8 {
    (value << 1) ^ (0x1B * (value >> 7))
}

/// Product in GF(2^8), with no branches or table look-ups that depend on the operands: the key
/// passes through here, and key-dependent memory access or timing would leak it.
fn gf_multiply(mut left: u8, right: u8) -> u8 {
    let mut product = 0u8;
    for bit in 0..8 {
        product ^= left & 0u8.wrapping_sub((right >> bit) & 1);
        left = multiply_by_x(left);
    }
    product
}

/// The AES S-box computed, not looked up: the multiplicative inverse as x^254 (0 maps to 0),
/// then the FIPS-197 affine map. 1.5 to 2.5 µs per key, so only the fallback for CPUs without
/// AES-NI (where no kernel runs either); [`aesni_expansion`] is the usual path.
fn sub_byte(value: u8) -> u8 {
    // x^254 = x^(2+4+8+16+32+64+128): square repeatedly, multiplying in each square.
    let mut square = gf_multiply(value, value);
    let mut inverse = square;
    for _ in 0..6 {
        square = gf_multiply(square, square);
        inverse = gf_multiply(inverse, square);
    }
    inverse
        ^ inverse.rotate_left(1)
        ^ inverse.rotate_left(2)
        ^ inverse.rotate_left(3)
        ^ inverse.rotate_left(4)
        ^ 0x63
}

fn sub_word(word: u32) -> u32 {
    u32::from_le_bytes(word.to_le_bytes().map(sub_byte))
}

/// The FIPS-197 key expansion a group of `Nk` words at a time in xmm registers, SubWord by
/// `aeskeygenassist`: constant time, and about three times as fast as the word loop with the
/// same instruction, whose every word waited on the one before and on two moves between
/// register files.
///
/// Each group follows from the one before by the same rule: with `P` the previous group
/// and `s` the SubWord (with RotWord and the round constant where FIPS-197 applies them) of
/// the word before the new one's first, word `j` of the new group is `P[0] ^ ... ^ P[j] ^
/// s`. The prefix XOR of `P` (`prefix_xor`) does not wait on `s`, so a group costs one
/// `aeskeygenassist`, a broadcast and an XOR in sequence. `aeskeygenassist` with a zero round
/// constant gives SubWord of dwords 1 and 3 in dwords 0 and 2 and their RotWords in dwords 1
/// and 3; the round constant is XORed in separately because the instruction only takes it
/// as an immediate.
#[cfg(target_arch = "x86_64")]
mod aesni_expansion {
    use std::arch::x86_64::*;

    /// `[v0, v0^v1, v0^v1^v2, v0^v1^v2^v3]`.
    #[inline]
    #[target_feature(enable = "aes")]
    fn prefix_xor(vector: __m128i) -> __m128i {
        let vector = _mm_xor_si128(vector, _mm_slli_si128::<4>(vector));
        _mm_xor_si128(vector, _mm_slli_si128::<8>(vector))
    }

    /// The round constant in every dword, to be XORed into a group's words.
    #[inline]
    #[target_feature(enable = "aes")]
    fn round_constant(value: u8) -> __m128i {
        _mm_set1_epi32(i32::from(value))
    }

    /// `aeskeygenassist` of `vector` with a zero round constant, the dword `SHUFFLE` picks
    /// broadcast to all four.
    #[inline]
    #[target_feature(enable = "aes")]
    fn assist<const SHUFFLE: i32>(vector: __m128i) -> __m128i {
        _mm_shuffle_epi32::<SHUFFLE>(_mm_aeskeygenassist_si128::<0>(vector))
    }

    /// The first four words of the next group: those of `previous` prefix-XORed, with the
    /// broadcast `assist` and the round constant XORed in.
    #[inline]
    #[target_feature(enable = "aes")]
    fn next_group(previous: __m128i, assist: __m128i, constant: u8) -> __m128i {
        _mm_xor_si128(
            _mm_xor_si128(prefix_xor(previous), round_constant(constant)),
            assist,
        )
    }

    /// Loads 16 bytes from the front of `bytes`.
    #[inline]
    #[target_feature(enable = "aes")]
    fn load(bytes: &[u8]) -> __m128i {
        let bytes: &[u8; 16] = bytes[..16].try_into().expect("16 bytes");
        // SAFETY: `bytes` is a 16-byte array, read whole; `loadu` has no alignment
        // requirement.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    /// Stores the low `BYTES` bytes of `vector` (16: all of it; 8: the low half) at
    /// `offset`.
    #[inline]
    #[target_feature(enable = "aes")]
    fn store<const BYTES: usize>(schedule: &mut [u8], offset: usize, vector: __m128i) {
        const { assert!(BYTES == 16 || BYTES == 8) };
        let target: &mut [u8; BYTES] = (&mut schedule[offset..offset + BYTES])
            .try_into()
            .expect("a whole store");
        let target = target.as_mut_ptr().cast();
        // SAFETY: `target` is a `BYTES`-byte array, written whole: `storeu` writes 16 bytes,
        // `storel_epi64` 8, neither with an alignment requirement.
        unsafe {
            if BYTES == 16 {
                _mm_storeu_si128(target, vector);
            } else {
                _mm_storel_epi64(target, vector);
            }
        }
    }

    /// [`super::RoundKeys::expand`] with `aeskeygenassist`.
    #[target_feature(enable = "aes")]
    pub(super) fn expand(key: &[u8], expanded: &mut super::RoundKeys) {
        expanded.rounds = key.len() / 4 + 6;
        let schedule = &mut expanded.keys.as_flattened_mut()[..16 * (expanded.rounds + 1)];
        match key.len() {
            16 => expand_128(key, schedule),
            24 => expand_192(key, schedule),
            32 => expand_256(key, schedule),
            other => panic!("AES key of {other} bytes"),
        }
    }

    /// `schedule`: 176 bytes, 11 round keys.
    #[target_feature(enable = "aes")]
    fn expand_128(key: &[u8], schedule: &mut [u8]) {
        let mut group = load(key);
        store::<16>(schedule, 0, group);
        let mut constant = 1u8;
        for round in 1..=10 {
            // The previous group's last word is dword 3: RotWord(SubWord) is dword 3.
            group = next_group(group, assist::<0xFF>(group), constant);
            store::<16>(schedule, 16 * round, group);
            constant = super::multiply_by_x(constant);
        }
    }

    /// `schedule`: 208 bytes, 13 round keys. A group of six words is a vector of four and a
    /// vector whose low two dwords are the other two; the groups are stored 24 bytes apart,
    /// so round keys straddle them.
    #[target_feature(enable = "aes")]
    fn expand_192(key: &[u8], schedule: &mut [u8]) {
        let mut front = load(key);
        let tail: &[u8; 8] = key[16..24].try_into().expect("8 bytes");
        // SAFETY: `tail` is an 8-byte array; `loadl_epi64` reads exactly 8 bytes, unaligned.
        let mut back = unsafe { _mm_loadl_epi64(tail.as_ptr().cast()) };
        store::<16>(schedule, 0, front);
        store::<8>(schedule, 16, back);
        let mut constant = 1u8;
        // 52 words: eight more groups of six, the last one cut to its first four.
        for group in 1..=8 {
            // The previous group's last word is dword 1 of `back`: RotWord(SubWord) is
            // dword 1.
            front = next_group(front, assist::<0x55>(back), constant);
            store::<16>(schedule, 24 * group, front);
            if group == 8 {
                break;
            }
            // Words 4 and 5 continue the chain from word 3 with no SubWord.
            let chained = _mm_shuffle_epi32::<0xFF>(front);
            back = _mm_xor_si128(_mm_xor_si128(back, _mm_slli_si128::<4>(back)), chained);
            store::<8>(schedule, 24 * group + 16, back);
            constant = super::multiply_by_x(constant);
        }
    }

    /// `schedule`: 240 bytes, 15 round keys, in groups of eight words: two round keys.
    #[target_feature(enable = "aes")]
    fn expand_256(key: &[u8], schedule: &mut [u8]) {
        let mut front = load(key);
        let mut back = load(&key[16..]);
        store::<16>(schedule, 0, front);
        store::<16>(schedule, 16, back);
        let mut constant = 1u8;
        // 60 words: seven more groups of eight, the last one cut to its first four.
        for group in 1..=7 {
            // Word 7 of the previous group is dword 3 of `back`: RotWord(SubWord) is dword 3.
            front = next_group(front, assist::<0xFF>(back), constant);
            store::<16>(schedule, 32 * group, front);
            if group == 7 {
                break;
            }
            // Word 4 takes SubWord (no RotWord, no constant) of word 3: dword 2.
            back = _mm_xor_si128(prefix_xor(back), assist::<0xAA>(front));
            store::<16>(schedule, 32 * group + 16, back);
            constant = super::multiply_by_x(constant);
        }
    }
}

/// Which fused CTR kernel this CPU can run, decided once per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CtrPath {
    /// 512-bit VAES with AVX-512BW byte shuffles and masks.
    Vaes512,
    /// 256-bit VAES with AVX2 (no AVX-512), sixteen blocks in flight.
    #[cfg(not(target_arch = "aarch64"))]
    Vaes256,
    /// 128-bit AES-NI, eight blocks in flight.
    #[cfg(not(target_arch = "aarch64"))]
    AesNi,
    /// The ARMv8 Cryptography Extensions (aarch64), eight blocks in flight.
    #[cfg(target_arch = "aarch64")]
    Armv8,
    /// No AES instructions: the mode falls back to `encrypt_blocks`.
    None,
}

impl KernelPath for CtrPath {
    #[cfg(not(target_arch = "aarch64"))]
    const PREFERENCE: &'static [Self] = &[CtrPath::Vaes512, CtrPath::Vaes256, CtrPath::AesNi];
    #[cfg(target_arch = "aarch64")]
    const PREFERENCE: &'static [Self] = &[CtrPath::Armv8];
    const FALLBACK: Self = CtrPath::None;

    fn is_available(self) -> bool {
        match self {
            CtrPath::Vaes512 => cpu_has!("aes", "vaes", "avx512f", "avx512bw"),
            #[cfg(not(target_arch = "aarch64"))]
            CtrPath::Vaes256 => cpu_has!("aes", "vaes", "avx2"),
            // SSSE3 for the byte shuffle that turns counters into blocks.
            #[cfg(not(target_arch = "aarch64"))]
            CtrPath::AesNi => cpu_has!("aes", "ssse3"),
            #[cfg(target_arch = "aarch64")]
            CtrPath::Armv8 => armv8_aes(),
            CtrPath::None => false,
        }
    }

    fn family(self) -> KernelFamily {
        match self {
            CtrPath::Vaes512 => KernelFamily::Vaes512,
            #[cfg(not(target_arch = "aarch64"))]
            CtrPath::Vaes256 => KernelFamily::Vaes256,
            #[cfg(not(target_arch = "aarch64"))]
            CtrPath::AesNi => KernelFamily::AesNi,
            #[cfg(target_arch = "aarch64")]
            CtrPath::Armv8 => KernelFamily::Armv8,
            CtrPath::None => KernelFamily::Portable,
        }
    }
}

/// Messages of at most this many bytes take the 128-bit AES-NI CTR kernel even where a
/// wider one is chosen: a call of one or two blocks is bound by its fixed costs, and the wide
/// kernels' (broadcasting the round keys into zmm or ymm registers, the masked tail) cost
/// more than their width saves. `FastAes::ctr32_xor` alone, AES-128, one thread, the
/// VAES-512 Xeon VM: 16 B 13.3 ns a call against 14.5 with the VAES-512 kernel, 32 B 14.1
/// against 14.3; from 48 B the VAES-512 kernel is ahead (14.3 against 15.0), the AES-NI tail
/// taking one block at a time.
pub(super) const SHORT_CTR_BYTES: usize = 32;

impl CtrPath {
    /// The kernel for messages of at most [`SHORT_CTR_BYTES`] where `self` is the choice
    /// for longer ones: AES-NI for the VAES kernels (their CPUs have it), else `self`.
    fn for_short_messages(self) -> Self {
        match self {
            #[cfg(not(target_arch = "aarch64"))]
            CtrPath::Vaes512 | CtrPath::Vaes256 if CtrPath::AesNi.is_available() => CtrPath::AesNi,
            other => other,
        }
    }
}

/// Which ECB kernel [`FastAes::encrypt_blocks`] and [`FastAes::decrypt_blocks`] use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EcbPath {
    /// Our 512-bit VAES kernel, 48 blocks in flight.
    Vaes512,
    /// Our 256-bit VAES kernel (AVX2, no AVX-512), 16 blocks in flight.
    Vaes256,
    /// Our 128-bit AES-NI kernel, 8 blocks in flight.
    AesNi,
    /// The `aes` crate (itself AES-NI or VAES where present).
    Crate,
}

impl KernelPath for EcbPath {
    const PREFERENCE: &'static [Self] = &[EcbPath::Vaes512, EcbPath::Vaes256, EcbPath::AesNi];
    const FALLBACK: Self = EcbPath::Crate;

    fn is_available(self) -> bool {
        match self {
            // The VAES-512 kernels all enable the same features.
            EcbPath::Vaes512 => CtrPath::Vaes512.is_available(),
            EcbPath::Vaes256 => cpu_has!("aes", "vaes", "avx2"),
            EcbPath::AesNi => cpu_has!("aes"),
            EcbPath::Crate => true,
        }
    }

    fn family(self) -> KernelFamily {
        match self {
            EcbPath::Vaes512 => KernelFamily::Vaes512,
            EcbPath::Vaes256 => KernelFamily::Vaes256,
            EcbPath::AesNi => KernelFamily::AesNi,
            // The `aes` crate makes its own choice among AES-NI, VAES-256 and VAES-512,
            // which no ceiling reaches; it needs AES-NI at least to be fast.
            EcbPath::Crate => KernelFamily::AesNi,
        }
    }
}

/// Which fused CBC encryption kernel this CPU can run. CBC encryption is one block at a time
/// whatever the register width, so there is no VAES variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CbcPath {
    /// 128-bit AES-NI. (A VEX-encoded build, which saves the register copy before the two
    /// `aesenclast`s, measured the same: the copy is eliminated at rename.)
    AesNi,
    /// No AES instructions: the mode falls back to one `encrypt_blocks` call per block.
    None,
}

impl KernelPath for CbcPath {
    const PREFERENCE: &'static [Self] = &[CbcPath::AesNi];
    const FALLBACK: Self = CbcPath::None;

    fn is_available(self) -> bool {
        self == CbcPath::AesNi && cpu_has!("aes")
    }

    fn family(self) -> KernelFamily {
        match self {
            CbcPath::AesNi => KernelFamily::AesNi,
            CbcPath::None => KernelFamily::Portable,
        }
    }
}

/// A choice among kernels for one operation, made once per key from the CPU's features.
pub(super) trait KernelPath: Copy + 'static {
    /// The kernels, fastest first.
    const PREFERENCE: &'static [Self];
    /// What runs when this CPU has none of them.
    const FALLBACK: Self;

    /// Whether this CPU has every feature the kernel enables.
    fn is_available(self) -> bool;

    /// The instruction family the kernel belongs to.
    fn family(self) -> KernelFamily;

    /// The fastest kernel whose features this CPU has and whose family is at most
    /// `ceiling` (`None`: any family).
    fn detect(ceiling: Option<KernelFamily>) -> Self {
        Self::PREFERENCE
            .iter()
            .copied()
            .find(|path| path.family().within(ceiling) && path.is_available())
            .unwrap_or(Self::FALLBACK)
    }
}

/// AES with any of the three key sizes: our kernels where this CPU has their features, the
/// `aes` crate otherwise.
///
/// Keyed once per message and per job, so keying is kept cheap (tens of nanoseconds, see
/// `examples/aes_key_setup_speed.rs`): the round keys come from `aeskeygenassist`; the
/// equivalent-inverse-cipher keys are derived in registers by the CBC decryption kernel and
/// built on first use for ECB decryption; the `aes` crate's schedule (the fallback wherever
/// no kernel fits this CPU, and the reference the tests compare with) is built on first use
/// too. Everything is wiped on drop.
pub struct FastAes {
    round_keys: RoundKeys,
    /// Boxed: the crate's schedule is up to 480 bytes (encryption and decryption keys),
    /// which would otherwise be copied with every `Box<dyn BlockCipher>` whether used or not.
    crate_cipher: OnceLock<Box<CrateCipher>>,
    /// The equivalent-inverse-cipher keys for the ECB decryption kernels, built by their
    /// first call. Boxed and built on demand because most keys never decrypt ECB (CBC
    /// decryption derives its keys in registers), while every key is created, moved into a
    /// `Box<dyn BlockCipher>` and wiped.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    ecb_decrypt_keys: OnceLock<Box<RoundKeys>>,
    ctr_path: CtrPath,
    /// The CTR kernel for messages of at most [`SHORT_CTR_BYTES`]: AES-NI where `ctr_path`
    /// is a wider one (see there), else `ctr_path`.
    short_ctr_path: CtrPath,
    ecb_path: EcbPath,
    cbc_path: CbcPath,
    /// What the paths above were chosen under, for [`BlockCipher::kernel_ceiling`].
    ceiling: Option<KernelFamily>,
}

impl FastAes {
    /// `key` must be 16, 24 or 32 bytes long (checked by [`crate::new_cipher`]).
    pub fn new(key: &[u8]) -> Self {
        Self::with_ceiling(key, None)
    }

    /// [`FastAes::new`] with kernels of at most family `ceiling` (`None`: the fastest this
    /// CPU has). A ceiling above the CPU's families is safe (each kernel still checks its
    /// own features) but picks what the CPU has; [`crate::new_cipher`] refuses it.
    ///
    /// Below [`KernelFamily::AesNi`] there are no kernels here: a portable ceiling is met by
    /// [`crate::aes::ReferenceAes`] ([`crate::new_cipher`] makes that).
    pub fn with_ceiling(key: &[u8], ceiling: Option<KernelFamily>) -> Self {
        assert!(
            matches!(key.len(), 16 | 24 | 32),
            "AES key of {} bytes reached FastAes::new",
            key.len()
        );
        FastAes {
            round_keys: RoundKeys::expand(key),
            crate_cipher: OnceLock::new(),
            ecb_decrypt_keys: OnceLock::new(),
            ctr_path: CtrPath::detect(ceiling),
            short_ctr_path: CtrPath::detect(ceiling).for_short_messages(),
            ecb_path: EcbPath::detect(ceiling),
            cbc_path: CbcPath::detect(ceiling),
            ceiling,
        }
    }

    /// The `aes` crate's schedule for this key, built on first use.
    fn crate_cipher(&self) -> &CrateCipher {
        self.crate_cipher.get_or_init(|| {
            // The expansion starts with the key's own words, so the key need not be kept.
            let key_length = 4 * (self.round_keys.rounds - 6);
            let key = &self.round_keys.keys.as_flattened()[..key_length];
            Box::new(match key_length {
                16 => CrateCipher::Aes128(aes::Aes128::new_from_slice(key).expect("16-byte key")),
                24 => CrateCipher::Aes192(aes::Aes192::new_from_slice(key).expect("24-byte key")),
                _ => CrateCipher::Aes256(aes::Aes256::new_from_slice(key).expect("32-byte key")),
            })
        })
    }

    /// Encrypts whole blocks through the `aes` crate, whatever kernel is detected: the
    /// fallback, and the reference the kernels are tested against.
    pub(super) fn crate_encrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match self.crate_cipher() {
            CrateCipher::Aes128(c) => c.encrypt_blocks(blocks),
            CrateCipher::Aes192(c) => c.encrypt_blocks(blocks),
            CrateCipher::Aes256(c) => c.encrypt_blocks(blocks),
        }
    }

    /// Decrypts whole blocks through the `aes` crate; see [`Self::crate_encrypt_blocks`].
    pub(super) fn crate_decrypt_blocks(&self, blocks: &mut [u8]) {
        let blocks = as_blocks(blocks);
        match self.crate_cipher() {
            CrateCipher::Aes128(c) => c.decrypt_blocks(blocks),
            CrateCipher::Aes192(c) => c.decrypt_blocks(blocks),
            CrateCipher::Aes256(c) => c.decrypt_blocks(blocks),
        }
    }

    /// Encrypts through ECB path `path` instead of the detected one, so that tests check
    /// every path this CPU supports. Returns `false`, touching nothing, when the CPU lacks
    /// `path`'s features.
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(super) fn ecb_encrypt_with(&self, path: EcbPath, blocks: &mut [u8]) -> bool {
        if !path.is_available() {
            return false;
        }
        // SAFETY: `is_available` has just confirmed `path`'s features.
        unsafe { self.run_ecb(path, false, blocks) };
        true
    }

    /// Decryption twin of [`Self::ecb_encrypt_with`].
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(super) fn ecb_decrypt_with(&self, path: EcbPath, blocks: &mut [u8]) -> bool {
        if !path.is_available() {
            return false;
        }
        // SAFETY: as above.
        unsafe { self.run_ecb(path, true, blocks) };
        true
    }

    /// Runs ECB path `path` in place, decrypting if `decrypt`.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`EcbPath::is_available`]).
    unsafe fn run_ecb(&self, path: EcbPath, decrypt: bool, blocks: &mut [u8]) {
        // One arm per kernel family: `super::$module::ecb` with the encryption keys, or the
        // equivalent-inverse-cipher keys to decrypt.
        #[cfg(target_arch = "x86_64")]
        macro_rules! ecb_kernel {
            ($module:ident) => {{
                assert!(
                    blocks.len().is_multiple_of(16),
                    "AES input is not a whole number of blocks"
                );
                with_rounds!(self.round_keys.rounds, ROUNDS => {
                    // SAFETY: the caller guarantees `path`'s features, AES-NI among them
                    // (the inverse keys need it); the kernel reads and writes only inside
                    // `blocks`.
                    unsafe {
                        if decrypt {
                            super::$module::ecb::<ROUNDS, true>(
                                &self.ecb_decrypt_keys().keys,
                                blocks,
                            );
                        } else {
                            super::$module::ecb::<ROUNDS, false>(&self.round_keys.keys, blocks);
                        }
                    }
                });
            }};
        }
        match path {
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes512 => ecb_kernel!(ecb_vaes512),
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes256 => ecb_kernel!(ecb_vaes256),
            #[cfg(target_arch = "x86_64")]
            EcbPath::AesNi => ecb_kernel!(ecb_aesni),
            _ if decrypt => self.crate_decrypt_blocks(blocks),
            _ => self.crate_encrypt_blocks(blocks),
        }
    }

    /// The equivalent-inverse-cipher keys for the ECB decryption kernels, built on first use.
    ///
    /// # Safety
    /// The CPU must support AES-NI.
    #[cfg(target_arch = "x86_64")]
    unsafe fn ecb_decrypt_keys(&self) -> &RoundKeys {
        self.ecb_decrypt_keys.get_or_init(|| {
            // SAFETY: the caller guarantees AES-NI.
            Box::new(unsafe { super::ecb_vaes512::inverse_round_keys(&self.round_keys) })
        })
    }

    /// Runs the fused CBC decryption kernel of ECB path `path` instead of the detected one;
    /// see [`Self::ecb_encrypt_with`].
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(super) fn cbc_decrypt_with(&self, path: EcbPath, previous: &[u8], data: &mut [u8]) -> bool {
        // SAFETY: `is_available` has just confirmed `path`'s features.
        path.is_available() && unsafe { self.run_cbc_decrypt(path, previous, data) }
    }

    /// Runs the fused CBC decryption kernel beside ECB path `path`, returning whether there
    /// is one (none beside [`EcbPath::Crate`]); the contract is
    /// [`BlockCipher::cbc_decrypt`]'s. Each kernel shares its ECB twin's rounds and features,
    /// so the ECB path decides.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`EcbPath::is_available`]).
    unsafe fn run_cbc_decrypt(&self, path: EcbPath, previous: &[u8], data: &mut [u8]) -> bool {
        let previous: &[u8; 16] = previous
            .try_into()
            .expect("the CBC previous block is one 16-byte block");
        assert!(
            data.len().is_multiple_of(16),
            "CBC input is not a whole number of blocks"
        );
        // One arm per kernel family, each running `$kernel` over the whole blocks.
        #[cfg(target_arch = "x86_64")]
        macro_rules! cbc_kernel {
            ($($kernel:ident)::+) => {{
                with_rounds!(self.round_keys.rounds, ROUNDS => {
                    // SAFETY: the caller guarantees `path`'s features, the kernel's; the
                    // kernel reads `previous` and reads and writes only inside `data`.
                    unsafe { $($kernel)::+::<ROUNDS>(&self.round_keys.keys, previous, data) };
                });
                true
            }};
        }
        match path {
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes512 => cbc_kernel!(super::cbc_vaes512::cbc_decrypt),
            #[cfg(target_arch = "x86_64")]
            EcbPath::Vaes256 => cbc_kernel!(super::ecb_vaes256::cbc_decrypt),
            #[cfg(target_arch = "x86_64")]
            EcbPath::AesNi => cbc_kernel!(super::cbc_aesni::cbc_decrypt),
            _ => {
                // See `run_ctr_kernel`: keeps other architectures free of unused warnings.
                let _ = (&self.round_keys, previous, data);
                false
            }
        }
    }

    /// Runs CBC kernel `path` instead of the detected one; see [`Self::ecb_encrypt_with`].
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(super) fn cbc_encrypt_with(
        &self,
        path: CbcPath,
        chain: &mut [u8],
        data: &mut [u8],
    ) -> bool {
        // SAFETY: `is_available` has just confirmed `path`'s features.
        path.is_available() && unsafe { self.run_cbc_kernel(path, chain, data) }
    }

    /// Returns `false` for [`CbcPath::None`], otherwise runs the kernel and returns `true`.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`CbcPath::is_available`]).
    unsafe fn run_cbc_kernel(&self, path: CbcPath, chain: &mut [u8], data: &mut [u8]) -> bool {
        if path == CbcPath::None {
            return false;
        }
        let chain: &mut [u8; 16] = chain
            .try_into()
            .expect("the CBC chain is one 16-byte block");
        let (blocks, rest) = data.as_chunks_mut::<16>();
        assert!(rest.is_empty(), "CBC input is not a whole number of blocks");
        match path {
            #[cfg(target_arch = "x86_64")]
            CbcPath::AesNi => {
                with_rounds!(self.round_keys.rounds, ROUNDS => {
                    // SAFETY: the caller guarantees the kernel's features; the kernel reads
                    // and writes only `chain` and `blocks`.
                    unsafe {
                        let keys = &self.round_keys.keys;
                        super::cbc_aesni::cbc_encrypt::<ROUNDS>(keys, chain, blocks);
                    }
                });
                true
            }
            _ => {
                // See `run_ctr_kernel`: keeps other architectures free of unused warnings.
                let _ = (&self.round_keys, chain, blocks);
                false
            }
        }
    }

    /// Runs the fused CTR kernel `path` instead of the detected one, so that tests check
    /// every kernel this CPU supports. Returns `false`, touching nothing, when the CPU lacks
    /// `path`'s features.
    #[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub(super) fn ctr32_xor_with(
        &self,
        path: CtrPath,
        counter: &[u8; 16],
        data: &mut [u8],
    ) -> bool {
        let (pointer, len) = (data.as_mut_ptr(), data.len());
        // SAFETY: `is_available` has just confirmed `path`'s features; `data` is one
        // exclusively borrowed region, read and written in place.
        path.is_available() && unsafe { self.run_ctr_kernel(path, counter, pointer, pointer, len) }
    }

    /// [`FastAes::ctr32_xor_with`] from `input` into `output` (the same length).
    #[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub(super) fn ctr32_xor_into_with(
        &self,
        path: CtrPath,
        counter: &[u8; 16],
        input: &[u8],
        output: &mut [u8],
    ) -> bool {
        assert_eq!(input.len(), output.len(), "CTR output must match its input");
        // SAFETY: `is_available` has just confirmed `path`'s features; `input` and the
        // exclusively borrowed `output` are disjoint and both `input.len()` bytes long.
        path.is_available()
            && unsafe {
                let (from, to) = (input.as_ptr(), output.as_mut_ptr());
                self.run_ctr_kernel(path, counter, from, to, input.len())
            }
    }

    /// The CTR kernel for a message of `len` bytes.
    #[inline]
    fn ctr_path_for(&self, len: usize) -> CtrPath {
        if len <= SHORT_CTR_BYTES {
            self.short_ctr_path
        } else {
            self.ctr_path
        }
    }

    /// Returns `false` for [`CtrPath::None`], otherwise runs the kernel over the `len` bytes
    /// at `input`, writing them at `output`, and returns `true`.
    ///
    /// # Safety
    /// The CPU must have `path`'s features ([`CtrPath::is_available`]); `input` must be valid
    /// for reads and `output` for writes of `len` bytes, with nothing else accessing them
    /// during the call, and `output` must be `input` or a region disjoint from it.
    unsafe fn run_ctr_kernel(
        &self,
        path: CtrPath,
        counter: &[u8; 16],
        input: *const u8,
        output: *mut u8,
        len: usize,
    ) -> bool {
        // One arm per kernel family, each running `$kernel` over the regions.
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        macro_rules! ctr_kernel {
            ($($kernel:ident)::+) => {{
                with_rounds!(self.round_keys.rounds, ROUNDS => {
                    // SAFETY: the caller guarantees the kernel's features and the regions;
                    // the kernel reads and writes only inside them.
                    unsafe {
                        let keys = &self.round_keys.keys;
                        $($kernel)::+::<ROUNDS>(keys, counter, input, output, len);
                    }
                });
                true
            }};
        }
        match path {
            #[cfg(target_arch = "x86_64")]
            CtrPath::Vaes512 => ctr_kernel!(super::ctr_vaes512::ctr32_xor),
            #[cfg(target_arch = "x86_64")]
            CtrPath::Vaes256 => ctr_kernel!(super::ctr_vaes256::ctr32_xor),
            #[cfg(target_arch = "x86_64")]
            CtrPath::AesNi => ctr_kernel!(super::ctr_aesni::ctr32_xor),
            #[cfg(target_arch = "aarch64")]
            CtrPath::Armv8 => ctr_kernel!(super::ctr_armv8::ctr32_xor),
            _ => {
                // No kernel for this path or architecture; naming the operands keeps builds
                // for other architectures free of unused-value warnings.
                let _ = (&self.round_keys, counter, input, output, len);
                false
            }
        }
    }
}

/// Views whole 16-byte blocks of `bytes` as the crate's block type.
fn as_blocks(bytes: &mut [u8]) -> &mut [aes::Block] {
    let (blocks, rest) = bytes.as_chunks_mut::<16>();
    assert!(rest.is_empty(), "AES input is not a whole number of blocks");
    Array::cast_slice_from_core_mut(blocks)
}

impl BlockCipher for FastAes {
    fn block_size(&self) -> usize {
        16
    }

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        // SAFETY: `ecb_path` came from `EcbPath::detect`, which only picks a kernel whose
        // features this CPU has.
        unsafe { self.run_ecb(self.ecb_path, false, blocks) };
    }

    fn decrypt_blocks(&self, blocks: &mut [u8]) {
        // SAFETY: as in `encrypt_blocks`.
        unsafe { self.run_ecb(self.ecb_path, true, blocks) };
    }

    fn ctr32_xor(&self, counter: &[u8; 16], data: &mut [u8]) -> bool {
        let (pointer, len) = (data.as_mut_ptr(), data.len());
        // SAFETY: both paths came from `CtrPath::detect` (the short one through
        // `for_short_messages`, which checks AES-NI), which only picks a kernel whose
        // features this CPU has; `data` is one exclusively borrowed region, in place.
        unsafe { self.run_ctr_kernel(self.ctr_path_for(len), counter, pointer, pointer, len) }
    }

    fn ctr32_xor_into(&self, counter: &[u8; 16], input: &[u8], output: &mut [u8]) -> bool {
        assert_eq!(input.len(), output.len(), "CTR output must match its input");
        // SAFETY: as in `ctr32_xor`; `input` and the exclusively borrowed `output` are
        // disjoint regions of `input.len()` bytes.
        unsafe {
            let (from, to) = (input.as_ptr(), output.as_mut_ptr());
            let path = self.ctr_path_for(input.len());
            self.run_ctr_kernel(path, counter, from, to, input.len())
        }
    }

    fn cbc_encrypt(&self, chain: &mut [u8], data: &mut [u8]) -> bool {
        // SAFETY: `cbc_path` came from `CbcPath::detect`, which only picks a kernel whose
        // features this CPU has.
        unsafe { self.run_cbc_kernel(self.cbc_path, chain, data) }
    }

    fn cbc_decrypt(&self, previous: &[u8], data: &mut [u8]) -> bool {
        // SAFETY: `ecb_path` came from `EcbPath::detect`, which only picks a kernel whose
        // features this CPU has.
        unsafe { self.run_cbc_decrypt(self.ecb_path, previous, data) }
    }

    fn aes_round_keys(&self) -> Option<&[[u8; 16]]> {
        Some(&self.round_keys.keys[..=self.round_keys.rounds])
    }

    fn kernel_ceiling(&self) -> Option<KernelFamily> {
        self.ceiling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_expansion_matches_fips_197_appendix_a() {
        // FIPS-197 appendix A.1, A.2, A.3: the first and last round keys of each example.
        let cases: [(&str, &str, &str); 3] = [
            (
                "2b7e151628aed2a6abf7158809cf4f3c",
                "a0fafe1788542cb123a339392a6c7605",
                "d014f9a8c9ee2589e13f0cc8b6630ca6",
            ),
            (
                "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
                "62f8ead2522c6b7bfe0c91f72402f5a5",
                "e98ba06f448c773c8ecc720401002202",
            ),
            (
                "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
                "1f352c073b6108d72d9810a30914dff4",
                "fe4890d1e6188d0b046df344706c631e",
            ),
        ];
        for (key, second, last) in cases {
            let key = hex::decode(key).expect("test hex");
            for expanded in expansions(&key) {
                assert_eq!(expanded.rounds, key.len() / 4 + 6);
                assert_eq!(expanded.keys[0], key[..16]);
                assert_eq!(hex::encode(expanded.keys[1]), second);
                assert_eq!(hex::encode(expanded.keys[expanded.rounds]), last);
            }
        }
    }

    /// `key` expanded by every implementation this CPU can run.
    // Only x86-64 has a further expansion to push.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    fn expansions(key: &[u8]) -> Vec<RoundKeys> {
        let mut portable = RoundKeys::empty();
        portable_expansion(key, &mut portable);
        let mut all = vec![portable, RoundKeys::expand(key)];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("aes") {
            let mut expanded = RoundKeys::empty();
            // SAFETY: AES-NI has just been detected.
            unsafe { aesni_expansion::expand(key, &mut expanded) };
            all.push(expanded);
        }
        all
    }

    #[test]
    fn aesni_expansion_matches_the_word_loop() {
        crate::test_vectors::for_random_keys(0x4E5_0000, &[16, 24, 32], 2000, |key, _| {
            let [reference, rest @ ..] = &expansions(key)[..] else {
                unreachable!("the portable expansion is always there");
            };
            for other in rest {
                assert_eq!(other.rounds, reference.rounds);
                // All slots, the unused ones past `rounds` included (zero in both).
                assert_eq!(other.keys, reference.keys, "key {}", hex::encode(key));
            }
        });
    }

    #[test]
    fn round_keys_are_wiped_by_zeroize() {
        let mut round_keys = RoundKeys::expand(&[0xA5; 32]);
        assert!(round_keys.keys.as_flattened().iter().any(|&byte| byte != 0));
        round_keys.zeroize();
        assert!(round_keys.keys.as_flattened().iter().all(|&byte| byte == 0));
    }

    #[test]
    fn lazily_built_schedules_match_the_vectors() {
        // Decryption first, then encryption, then the crate on a fresh key, so that each
        // lazily built schedule is first built by a different caller.
        let key = hex::decode("2b7e151628aed2a6abf7158809cf4f3c").expect("test hex");
        let plaintext = hex::decode("6bc1bee22e409f96e93d7e117393172a").expect("test hex");
        let ciphertext = hex::decode("3ad77bb40d7a3660a89ecaf32466ef97").expect("test hex");
        let cipher = FastAes::new(&key);
        let mut block = ciphertext.clone();
        cipher.decrypt_blocks(&mut block);
        assert_eq!(block, plaintext);
        cipher.encrypt_blocks(&mut block);
        assert_eq!(block, ciphertext);
        let cipher = FastAes::new(&key);
        cipher.crate_decrypt_blocks(&mut block);
        assert_eq!(block, plaintext);
        cipher.crate_encrypt_blocks(&mut block);
        assert_eq!(block, ciphertext);
    }

    #[test]
    fn paths_keep_under_the_ceiling() {
        let key = [7u8; 16];
        let free = FastAes::new(&key);
        assert_eq!(free.kernel_ceiling(), None);
        assert_eq!(free.ctr_path, CtrPath::detect(None));
        for ceiling in KernelFamily::ALL {
            let cipher = FastAes::with_ceiling(&key, Some(ceiling));
            assert_eq!(cipher.kernel_ceiling(), Some(ceiling));
            assert!(cipher.ctr_path.family() <= ceiling, "{ceiling}");
            assert!(cipher.short_ctr_path.family() <= cipher.ctr_path.family());
            assert_eq!(
                cipher.short_ctr_path == CtrPath::None,
                cipher.ctr_path == CtrPath::None
            );
            assert!(cipher.cbc_path.family() <= ceiling, "{ceiling}");
            assert!(
                cipher.ecb_path == EcbPath::Crate || cipher.ecb_path.family() <= ceiling,
                "{ceiling}"
            );
            if ceiling >= KernelFamily::detected() {
                // At or above what the CPU has, the choice is the unlimited one.
                assert_eq!(cipher.ctr_path, free.ctr_path);
                assert_eq!(cipher.ecb_path, free.ecb_path);
                assert_eq!(cipher.cbc_path, free.cbc_path);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            let portable = FastAes::with_ceiling(&key, Some(KernelFamily::Portable));
            assert_eq!(portable.ctr_path, CtrPath::None);
            if KernelFamily::Armv8.is_supported() {
                let cipher = FastAes::with_ceiling(&key, Some(KernelFamily::Armv8));
                assert_eq!(cipher.ctr_path, CtrPath::Armv8);
                assert_eq!(free.ctr_path, CtrPath::Armv8);
            }
        }
        #[cfg(not(target_arch = "aarch64"))]
        if KernelFamily::AesNi.is_supported() {
            let cipher = FastAes::with_ceiling(&key, Some(KernelFamily::AesNi));
            assert_eq!(cipher.ctr_path, CtrPath::AesNi);
            assert_eq!(cipher.ecb_path, EcbPath::AesNi);
            assert_eq!(cipher.cbc_path, CbcPath::AesNi);
        }
        if KernelFamily::Vaes256.is_supported() {
            let cipher = FastAes::with_ceiling(&key, Some(KernelFamily::Vaes256));
            assert_eq!(cipher.ecb_path, EcbPath::Vaes256);
            #[cfg(not(target_arch = "aarch64"))]
            assert_eq!(cipher.ctr_path, CtrPath::Vaes256);
        }
    }

    #[test]
    fn computed_sbox_matches_known_entries() {
        assert_eq!(sub_byte(0x00), 0x63);
        assert_eq!(sub_byte(0x01), 0x7c);
        assert_eq!(sub_byte(0x53), 0xed);
        assert_eq!(sub_byte(0xff), 0x16);
    }
}
