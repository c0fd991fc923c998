//! Issue 31 finding 2, watched as an attacker would: another thread reads the caller's
//! output while a forged 64 MiB GCM message is decrypted into it on `pool` and `threads`
//! (and 8 MiB on an OpenCL device where there is one), and must never see a block of
//! plaintext there. The output is a memfd mapped twice: the library writes through one
//! mapping while the watcher reads the same pages through the other, as a second process
//! or a file mapping would.
//!
//! The one-pass decryption the calls ran before (`decrypt_into_unshared`, kept
//! for the benchmark) is the control: the same watcher sees its plaintext land.

#[path = "support/opencl.rs"]
#[allow(dead_code)] // this file needs only the OpenCL engine
mod opencl;

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

use parcrypt_engine::{Backend, CipherSpec, Engine, JobError, KeyedCipher};

/// One memfd of `length` bytes mapped twice: `write` for the library, `read` for the
/// watcher. Unmapped and closed on drop.
struct TwoMappings {
    descriptor: libc::c_int,
    write: NonNull<u8>,
    read: NonNull<u8>,
    length: usize,
}

impl TwoMappings {
    fn new(length: usize) -> TwoMappings {
        // SAFETY: a NUL-terminated name and no flags; the result is checked.
        let descriptor = unsafe { libc::memfd_create(c"parcrypt-watched".as_ptr(), 0) };
        assert!(descriptor >= 0, "memfd_create failed");
        // SAFETY: a descriptor this function owns.
        let sized = unsafe { libc::ftruncate(descriptor, length as libc::off_t) };
        assert_eq!(sized, 0, "ftruncate failed");
        let map = |protection| {
            // SAFETY: a new shared mapping of the memfd's `length` bytes, at an address the
            // kernel picks; the result is checked.
            let address = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    length,
                    protection,
                    libc::MAP_SHARED,
                    descriptor,
                    0,
                )
            };
            assert_ne!(address, libc::MAP_FAILED, "mmap failed");
            NonNull::new(address.cast::<u8>()).expect("a mapping is not null")
        };
        TwoMappings {
            descriptor,
            write: map(libc::PROT_READ | libc::PROT_WRITE),
            read: map(libc::PROT_READ),
            length,
        }
    }

    /// The pages through the writable mapping, and a view of the same pages through the
    /// read-only one for another thread.
    fn split(&mut self) -> (&mut [u8], View<'_>) {
        // SAFETY: `length` bytes mapped readable and writable until drop; `&mut self` makes
        // this the only slice over them in this program (the view reads the other mapping
        // only through raw volatile loads, as another process would).
        let output = unsafe { std::slice::from_raw_parts_mut(self.write.as_ptr(), self.length) };
        let view = View {
            read: self.read,
            length: self.length,
            _pages: PhantomData,
        };
        (output, view)
    }

    fn output(&mut self) -> &mut [u8] {
        self.split().0
    }
}

impl Drop for TwoMappings {
    fn drop(&mut self) {
        // SAFETY: the two mappings and the descriptor this value made, used no more.
        unsafe {
            libc::munmap(self.write.as_ptr().cast(), self.length);
            libc::munmap(self.read.as_ptr().cast(), self.length);
            libc::close(self.descriptor);
        }
    }
}

/// The read-only mapping of [`TwoMappings`], for the watching thread.
struct View<'a> {
    read: NonNull<u8>,
    length: usize,
    _pages: PhantomData<&'a TwoMappings>,
}

// SAFETY: the view only loads bytes of a mapping that lives as long as it does (the
// lifetime), through volatile reads; nothing is written through it.
unsafe impl Send for View<'_> {}
// SAFETY: as above.
unsafe impl Sync for View<'_> {}

impl View<'_> {
    /// Whether the pages show, at any of the sampled places (16 bytes every 64 KiB, and the
    /// last whole block), the block of `plaintext` that belongs there.
    fn shows_plaintext(&self, plaintext: &[u8]) -> bool {
        let blocks = plaintext.len().min(self.length) / 16 * 16;
        let last = blocks.saturating_sub(16);
        (0..blocks).step_by(64 << 10).chain([last]).any(|offset| {
            let mut block = [0u8; 16];
            for (index, byte) in block.iter_mut().enumerate() {
                // SAFETY: `offset + index` is within the `length` bytes mapped readable; a
                // volatile load, because the other mapping changes them meanwhile.
                *byte = unsafe { self.read.as_ptr().add(offset + index).read_volatile() };
            }
            block[..] == plaintext[offset..offset + 16]
        })
    }
}

/// Runs `decrypt` on `pages` (already filled) while another thread samples them for
/// `plaintext`, and returns whether it ever saw any, with the call's outcome.
fn watched(
    pages: &mut TwoMappings,
    plaintext: &[u8],
    decrypt: impl FnOnce(&mut [u8]) -> Result<usize, JobError>,
) -> (bool, Result<usize, JobError>) {
    let running = AtomicBool::new(true);
    let seen = AtomicBool::new(false);
    let started = Barrier::new(2);
    let (output, view) = pages.split();
    std::thread::scope(|scope| {
        let (running, seen, started, view) = (&running, &seen, &started, &view);
        scope.spawn(move || {
            started.wait();
            while running.load(Ordering::Acquire) {
                if view.shows_plaintext(plaintext) {
                    seen.store(true, Ordering::Release);
                }
            }
        });
        started.wait();
        let outcome = decrypt(output);
        running.store(false, Ordering::Release);
        (seen.load(Ordering::Acquire), outcome)
    })
}

const NONCE: [u8; 12] = [7; 12];

fn plaintext(length: usize) -> Vec<u8> {
    (0..length)
        .map(|index| ((index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
        .collect()
}

/// A forged message (its tag changed, so that a one-pass decryption writes every byte of
/// the true plaintext) into a watched output and in a watched buffer: no plaintext is ever
/// seen, and the output is zeroed after.
fn check_engine(engine: Engine, length: usize, control: bool) {
    let backend = engine.backend();
    let suite: CipherSpec = "aes-128-gcm".parse().expect("suite");
    let cipher = KeyedCipher::new(engine, suite, &[0x33; 16]).expect("key");
    let plain = plaintext(length);
    let mut forged = cipher.encrypt(Some(&NONCE), &plain, None).expect("seals");
    forged[length + 5] ^= 1;

    let mut pages = TwoMappings::new(length);
    pages.output().fill(0xEE);
    let (seen, outcome) = watched(&mut pages, &plain, |output| {
        cipher.decrypt_into(Some(&NONCE), &forged, output, None)
    });
    assert!(outcome.is_err(), "{backend}: a forgery opened");
    assert!(
        !seen,
        "{backend}: decrypt_into let plaintext into the output"
    );
    assert!(
        pages.output().iter().all(|&byte| byte == 0),
        "{backend}: zeroed"
    );

    let mut pages = TwoMappings::new(forged.len());
    pages.output().copy_from_slice(&forged);
    let (seen, outcome) = watched(&mut pages, &plain, |buffer| {
        cipher.decrypt_in_place(Some(&NONCE), buffer, forged.len(), None)
    });
    assert!(outcome.is_err(), "{backend}: a forgery opened");
    assert!(
        !seen,
        "{backend}: decrypt_in_place let plaintext into the buffer"
    );

    if !control {
        return;
    }
    // The control: one pass, the plaintext written before the tag is checked. A watcher
    // that was not given the processor in time can miss it; a few tries make that unlikely.
    let caught = (0..5).any(|_| {
        let mut pages = TwoMappings::new(length);
        pages.output().fill(0xEE);
        let (seen, outcome) = watched(&mut pages, &plain, |output| {
            cipher.decrypt_into_unshared(Some(&NONCE), &forged, output, None)
        });
        assert!(outcome.is_err(), "{backend}: a forgery opened");
        seen
    });
    assert!(
        caught,
        "{backend}: the watcher never saw the one-pass plaintext"
    );
}

#[test]
fn a_watched_output_never_shows_a_forged_messages_plaintext() {
    for backend in [Backend::Pool, Backend::Threads] {
        check_engine(
            Engine::new(backend, Some(2)).expect("engine"),
            64 << 20,
            true,
        );
    }
}

#[test]
fn a_watched_output_on_an_opencl_device_never_shows_plaintext() {
    let Some(engine) = opencl::opencl_engine() else {
        return;
    };
    check_engine(engine, 8 << 20, false);
}
