//! Engines and their chunk batchers, made once per (backend, threads) and shared by
//! everything the process opens. They live as long as the process: a thread pool or a GPU
//! context is costly to start, and a program uses only a few configurations.

use std::sync::{Arc, Mutex};

use parcrypt::{batcher_for, ChunkBatcher};
use parcrypt::{Backend, Engine};
use pyo3::PyResult;

use crate::errors;

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
