//! Engines and their chunk batchers, made once per (backend, threads) and shared by
//! everything the process opens. They live as long as the process: a thread pool or a GPU
//! context is costly to start, and a program uses only a few configurations.

use std::sync::{Arc, Mutex};

use parcrypt::{batcher_for, ChunkBatcher};
use parcrypt::{Backend, CipherSpec, Engine};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use zeroize::Zeroizing;

use crate::{buffers, errors};

/// One shared engine and the file format's batcher on it.
pub struct Runtime {
    /// The engine, for ciphers (each holds a reference).
    pub engine: Arc<Engine>,
    /// Seals and opens file chunks on the engine.
    pub batcher: Box<dyn ChunkBatcher>,
}

type Key = (Backend, Option<usize>);

/// The runtime for `backend` (a name such as `"auto"`) with `threads` (all cores when
/// none), made on first use.
pub fn runtime(backend: &str, threads: Option<usize>) -> PyResult<&'static Runtime> {
    let backend: Backend = backend.parse().map_err(errors::engine)?;
    runtime_for(backend, threads)
}

/// [`runtime`] for a parsed backend.
pub fn runtime_for(backend: Backend, threads: Option<usize>) -> PyResult<&'static Runtime> {
    // A process uses a handful of configurations at most: a short list scanned under the
    // lock costs less than hashing the key on every call (every new `Cipher` comes here).
    // The lock is taken with the GIL held, and that is safe (issue 31 finding 6 was this
    // pattern's unsafe form): nothing under it releases the GIL or calls into Python, and
    // nobody calls this with the GIL released, so no holder ever waits for the GIL.
    static RUNTIMES: Mutex<Vec<(Key, &'static Runtime)>> = Mutex::new(Vec::new());
    let mut runtimes = RUNTIMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, runtime)) = runtimes.iter().find(|(key, _)| *key == (backend, threads)) {
        return Ok(runtime);
    }
    // The user's environment (tune files, kernel cache, tuning variables) is read here,
    // as the command line reads it: the library itself reads none.
    let mut builder = parcrypt::environment::apply(Engine::builder().backend(backend))
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    if let Some(threads) = threads {
        builder = builder.threads(threads);
    }
    let engine: &'static Arc<Engine> =
        Box::leak(Box::new(Arc::new(builder.build().map_err(errors::engine)?)));
    let runtime: &'static Runtime = Box::leak(Box::new(Runtime {
        engine: Arc::clone(engine),
        batcher: batcher_for(engine.as_ref()),
    }));
    runtimes.push(((backend, threads), runtime));
    Ok(runtime)
}

/// Below this many bytes the GIL stays held: releasing and taking it back costs more than
/// such a message takes to seal or encrypt.
const RELEASE_GIL_FROM: usize = 8 * 1024;

/// Runs `work` on a message of `length` bytes, with the GIL released from
/// [`RELEASE_GIL_FROM`] bytes on.
pub fn run_message<T: Send>(py: Python<'_>, length: usize, work: impl FnOnce() -> T + Send) -> T {
    if length >= RELEASE_GIL_FROM {
        py.detach(work)
    } else {
        work()
    }
}

/// The suite called `name` (such as `aes-128-gcm`).
pub fn suite(name: &str) -> PyResult<CipherSpec> {
    name.parse()
        .map_err(|error: <CipherSpec as std::str::FromStr>::Err| {
            PyValueError::new_err(error.to_string())
        })
}

/// What `parcrypt.Aead` and `parcrypt.Cipher` are keyed from: the suite, the key (a
/// bytes-like object: [`buffers::key_bytes`]) and the shared engine for `backend` and
/// `threads`, whose warnings about running the suite are given here.
pub struct Keying {
    /// The suite.
    pub spec: CipherSpec,
    /// The key's bytes, wiped when dropped.
    pub key: Zeroizing<Vec<u8>>,
    /// The backend asked for.
    pub backend: Backend,
    /// The engine to key the suite on.
    pub engine: Arc<Engine>,
}

impl Keying {
    /// Takes the arguments every keyed object starts from (the suite parsed first, by
    /// [`suite`]), in the order they are checked.
    pub fn new(
        py: Python<'_>,
        spec: CipherSpec,
        key: &Bound<'_, PyAny>,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let key = buffers::key_bytes("key", key)?;
        let backend: Backend = backend.parse().map_err(errors::engine)?;
        let engine = Arc::clone(&runtime_for(backend, threads)?.engine);
        errors::warn_engine(py, &engine, spec)?;
        Ok(Keying {
            spec,
            key,
            backend,
            engine,
        })
    }
}

/// The `repr` of a keyed object: `parcrypt.{class}('{name}', backend='{backend}')`.
pub fn keyed_repr(class: &str, name: &str, backend: &str) -> String {
    format!("parcrypt.{class}('{name}', backend='{backend}')")
}
