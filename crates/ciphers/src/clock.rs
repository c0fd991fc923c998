//! The core clock, measured, for benchmarks that quote cycles per byte (`parcrypt-lab`).
//!
//! A chain of dependent integer additions retires one addition per cycle on every x86-64
//! core made since the Pentium 4 (the addition's latency is one cycle and each needs the
//! one before), so timing a long chain gives the clock the core ran at, turbo included,
//! where a VM's `/proc/cpuinfo` shows the nominal or the host's figure. The clock under
//! wide vector code can be lower (AVX-512 frequency licences on older Intel cores): cycles
//! per byte quoted from this clock are then a little high for the vector rows, never low.

use std::time::Instant;

/// Dependent additions per loop iteration.
#[cfg(target_arch = "x86_64")]
const CHAIN: u64 = 200;

/// The core clock in Hz: the median of `samples` timings of a chain of dependent additions
/// of about 20 ms each, after one warm-up; `None` on other architectures.
pub fn core_clock_hz(samples: usize) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let iterations = 500_000u64;
        let mut rates: Vec<f64> = (0..=samples.max(1))
            .map(|_| {
                let started = Instant::now();
                let chain = dependent_additions(iterations);
                let seconds = started.elapsed().as_secs_f64();
                assert_eq!(chain, iterations * CHAIN, "the chain was cut short");
                (iterations * CHAIN) as f64 / seconds
            })
            .skip(1)
            .collect();
        rates.sort_by(f64::total_cmp);
        Some(rates[rates.len() / 2])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (samples, Instant::now());
        None
    }
}

/// Runs `iterations` times a chain of [`CHAIN`] additions of a register holding one to
/// another, each depending on the one before (a register, not an immediate: recent cores fold
/// chains of immediate additions at rename, measured here at 23 "GHz"), and returns the register (`iterations * CHAIN`).
#[cfg(target_arch = "x86_64")]
fn dependent_additions(iterations: u64) -> u64 {
    let mut total = 0u64;
    // SAFETY: the assembly only adds to `total` and counts `count` down to zero in the
    // registers named as operands; it touches no memory and no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 200",
            "add {total}, {one}",
            ".endr",
            "dec {count}",
            "jnz 2b",
            total = inout(reg) total,
            count = inout(reg) iterations => _,
            one = in(reg) 1u64,
            options(nomem, nostack),
        );
    }
    total
}

#[cfg(test)]
mod tests {
    /// The measured clock is a plausible CPU clock (between 0.3 and 8 GHz) on x86-64.
    #[test]
    fn clock_is_plausible() {
        let clock = super::core_clock_hz(3);
        assert_eq!(clock.is_some(), cfg!(target_arch = "x86_64"));
        if let Some(hz) = clock {
            assert!((0.3e9..8e9).contains(&hz), "{hz} Hz");
        }
    }
}
