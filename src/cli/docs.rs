//! `parcrypt completions SHELL` and the hidden `parcrypt manpage`: shell completion scripts
//! and man pages generated from the same clap definitions that parse the arguments, so that
//! they name every subcommand and option this binary has. `scripts/install.sh` installs both.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, Failure};

#[derive(Args)]
#[command(after_help = "\
Examples:
  parcrypt completions bash > ~/.local/share/bash-completion/completions/parcrypt
  parcrypt completions zsh > ~/.zfunc/_parcrypt          (with fpath+=~/.zfunc in .zshrc)
  parcrypt completions fish > ~/.config/fish/completions/parcrypt.fish")]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

#[derive(Args)]
pub struct ManpageArgs {
    /// Write parcrypt.1 and one page per subcommand (parcrypt-encrypt.1, ...) into this
    /// existing folder instead of printing parcrypt.1
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// The clap command that parses parcrypt's arguments, as the generators read it. Pages are
/// made for the subcommands themselves, not for clap's `help` (`--help` is on every page).
fn command() -> clap::Command {
    Cli::command().disable_help_subcommand(true)
}

pub fn completions(args: CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command(), "parcrypt", &mut script);
    write_stdout(&script)
}

pub fn manpage(args: ManpageArgs) -> Result<(), Failure> {
    match args.dir {
        Some(dir) => clap_mangen::generate_to(command(), &dir).map_err(|error| {
            Failure(format!(
                "cannot write man pages into '{}': {}",
                dir.display(),
                super::files::plain(&error)
            ))
        }),
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command())
                .render(&mut page)
                .map_err(|error| Failure(format!("cannot render the man page: {error}")))?;
            write_stdout(&page)
        }
    }
}

/// Writes generated text to stdout, a failure (`>/dev/full`, a closed pipe) as the other
/// commands report theirs.
fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|error| {
            Failure(format!(
                "cannot write output: {}",
                super::files::plain(&error)
            ))
        })
}
