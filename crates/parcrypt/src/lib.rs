//! parcrypt: block-cipher encryption at the speed of the hardware.
//!
//! This is the crate a program depends on. It re-exports the layers underneath, each a crate
//! of its own:
//!
//! - [`ciphers`]: AES-128/192/256, Blowfish and RC6 with a batch API;
//! - [`modes`]: ECB, CBC, CTR and GCM over that API, split into parallel ranges;
//! - [`gpu`]: the GPU layer (one kernel source; OpenCL and CUDA behind the cargo features
//!   `opencl` and `cuda`);
//! - [`engine`]: runs a job on a backend (`seq`, `threads`, `pool`, a GPU, or `auto`);
//! - [`format`](mod@format): authenticated, chunked, seekable files (Cobblestone inside a small header)
//!   and the secrets they are opened with.
#![forbid(unsafe_code)]

pub use parcrypt_ciphers as ciphers;
pub use parcrypt_engine as engine;
pub use parcrypt_format as format;
pub use parcrypt_gpu as gpu;
pub use parcrypt_modes as modes;
