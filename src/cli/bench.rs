//! `parcrypt bench`: placeholder.
use clap::Args;
use super::Failure;
#[derive(Args)]
pub struct BenchArgs {}
pub fn run(_args: BenchArgs) -> Result<(), Failure> { Err(Failure("not yet".into())) }
