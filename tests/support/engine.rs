//! Running whole messages through the engine on every backend, for the integration tests
//! (the engine's and format's tests include this file too).

#![allow(dead_code)]

use parcrypt_ciphers::Implementation;
use parcrypt_engine::crypter::{process_buffer, JobSpec};
use parcrypt_engine::{Backend, Engine, JobError};
use parcrypt_modes::{CipherSpec, Direction};

/// One engine of each CPU backend (three threads, so that splits are uneven on any
/// machine) and of each GPU backend this machine has. OpenCL is required in CI, which
/// installs PoCL; CUDA needs a GPU and is used only when one is present.
pub fn all_engines() -> Vec<Engine> {
    let mut engines: Vec<Engine> = Backend::CPU
        .iter()
        .map(|&backend| Engine::new(backend, Some(3)).expect("engine"))
        .collect();
    for backend in Backend::GPU {
        match Engine::new(backend, Some(3)) {
            Ok(engine) => engines.push(engine),
            Err(error) if backend == Backend::Opencl && std::env::var_os("CI").is_some() => {
                panic!("CI installs PoCL, so OpenCL must work: {error}")
            }
            // The GPU kit (scripts/gpu-verify.sh) runs these tests where a CUDA GPU must be.
            Err(error)
                if backend == Backend::Cuda
                    && std::env::var("PARCRYPT_REQUIRE_GPU").as_deref() == Ok("1") =>
            {
                panic!("PARCRYPT_REQUIRE_GPU=1, so the CUDA backend must work: {error}")
            }
            #[allow(clippy::disallowed_macros)] // libtest captures a test's stderr
            Err(error) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| eprintln!("SKIPPED {backend}: {error}"));
            }
        }
    }
    engines
}

pub struct Message<'a> {
    pub spec: CipherSpec,
    pub key: &'a [u8],
    pub iv: Option<&'a [u8]>,
    pub aad: Option<&'a [u8]>,
    pub padding: bool,
    pub implementation: Implementation,
    /// GCM IVs of 1 to 11 bytes, which the official vectors use (refused by default).
    pub allow_short_gcm_iv: bool,
}

impl<'a> Message<'a> {
    pub fn new(spec: &str, key: &'a [u8], iv: Option<&'a [u8]>) -> Self {
        Message::of(spec.parse().expect("cipher name"), key, iv)
    }

    /// A message of `spec` with padding, no AAD and the fast implementation.
    pub fn of(spec: CipherSpec, key: &'a [u8], iv: Option<&'a [u8]>) -> Self {
        Message {
            spec,
            key,
            iv,
            aad: None,
            padding: true,
            implementation: Implementation::Fast,
            allow_short_gcm_iv: false,
        }
    }

    pub fn run(
        &self,
        engine: &Engine,
        direction: Direction,
        input: &[u8],
    ) -> Result<Vec<u8>, JobError> {
        let job = JobSpec {
            spec: self.spec,
            direction,
            key: self.key,
            iv: self.iv,
            allow_short_gcm_iv: self.allow_short_gcm_iv,
            aad: self.aad,
            padding: self.padding,
            implementation: self.implementation,
        };
        process_buffer(engine, &job, input.to_vec())
    }

    pub fn encrypt(&self, engine: &Engine, input: &[u8]) -> Result<Vec<u8>, JobError> {
        self.run(engine, Direction::Encrypt, input)
    }

    pub fn decrypt(&self, engine: &Engine, input: &[u8]) -> Result<Vec<u8>, JobError> {
        self.run(engine, Direction::Decrypt, input)
    }
}
