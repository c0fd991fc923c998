//! The man pages and shell completions are generated from the clap definitions: each names
//! every subcommand `parcrypt --help` lists, and scripts/install.sh puts them where man and
//! the shells look.

use std::path::Path;
use std::process::{Command, Output};

#[path = "support/process.rs"]
mod process;

fn parcrypt(args: &[&str]) -> Output {
    process::run_with_stdin(Command::new(env!("CARGO_BIN_EXE_parcrypt")).args(args), b"")
}

fn stdout_of(args: &[&str]) -> String {
    let output = parcrypt(args);
    process::assert_success(&output, &args.join(" "));
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("generated text is UTF-8")
}

/// Asserts that `text` (`what`, for the message) contains each of `needles`.
fn assert_mentions<S: AsRef<str>>(what: &str, text: &str, needles: impl IntoIterator<Item = S>) {
    for needle in needles {
        let needle = needle.as_ref();
        assert!(text.contains(needle), "{what} lacks {needle}");
    }
}

/// The subcommands `parcrypt --help` lists (its "Commands:" section, less `help`).
fn subcommands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let listed: Vec<String> = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    for known in [
        "raw",
        "encrypt",
        "decrypt",
        "devices",
        "bench",
        "tune",
        "completions",
    ] {
        assert!(
            listed.iter().any(|name| name == known),
            "{known} not in {listed:?}"
        );
    }
    assert!(
        !listed.iter().any(|name| name == "manpage"),
        "manpage is for packagers and stays hidden"
    );
    listed
}

#[test]
fn every_shell_completes_every_subcommand_and_option() {
    let subcommands = subcommands();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        let what = format!("{shell} completion");
        assert_mentions(&what, &script, &subcommands);
        let options = ["overwrite", "passphrase-file", "backend", "cipher"];
        // fish names a long option `-l NAME`, the others `--NAME`.
        let spelled = options.map(|option| match shell {
            "fish" => format!("-l {option}"),
            _ => format!("--{option}"),
        });
        assert_mentions(&what, &script, spelled);
    }
    // Values too, where the shell's generator completes them: every cipher of `raw`.
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        let ciphers = ["aes-192-ctr", "bf-cbc", "rc6-256-gcm"];
        assert_mentions(&format!("{shell} completion"), &script, ciphers);
    }
    // bash loads it as it is: the script defines and registers its function.
    let bash = stdout_of(&["completions", "bash"]);
    assert!(bash.contains("complete -F _parcrypt"), "{bash}");
}

#[test]
fn the_man_page_names_every_subcommand_and_the_examples() {
    let page = stdout_of(&["manpage"]);
    // Every page it points to exists: none for clap's `help`.
    assert!(!page.contains("parcrypt\\-help(1)"), "{page}");
    assert!(page.contains(".TH parcrypt 1"), "no title line: {page}");
    let pointers = subcommands()
        .into_iter()
        .map(|name| format!("parcrypt\\-{name}(1)"));
    assert_mentions("the man page", &page, pointers);
    assert!(
        page.contains("parcrypt encrypt notes.txt \\-o notes.txt.pc"),
        "no quick start: {page}"
    );

    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path().to_str().unwrap();
    assert!(stdout_of(&["manpage", "--dir", dir]).is_empty());
    let mut pages = process::names(folder.path());
    pages.sort();
    for name in subcommands() {
        let file = format!("parcrypt-{name}.1");
        assert!(pages.contains(&file), "{file} not in {pages:?}");
        let text = std::fs::read_to_string(folder.path().join(&file)).unwrap();
        assert!(
            text.contains(&format!(".TH parcrypt-{name} 1")),
            "{file}: {text}"
        );
    }
    assert!(pages.contains(&"parcrypt.1".to_string()), "{pages:?}");
    // The encrypt page carries its options and its examples.
    let encrypt = std::fs::read_to_string(folder.path().join("parcrypt-encrypt.1")).unwrap();
    let texts = ["\\-\\-overwrite", "\\-\\-passphrase\\-file", "Examples:"];
    assert_mentions("parcrypt-encrypt.1", &encrypt, texts);

    let refused = parcrypt(&["manpage", "--dir", "/no/such/folder"]);
    process::assert_refused_with(&refused, "cannot write man pages into", |_| false);
}

#[test]
fn install_script_puts_binary_pages_and_completions_under_the_prefix() {
    let prefix = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh");
    let output = Command::new("bash")
        .arg(&script)
        .args(["--prefix", prefix.path().to_str().unwrap()])
        .args(["--binary", env!("CARGO_BIN_EXE_parcrypt")])
        .output()
        .unwrap();
    process::assert_success(&output, "install.sh");
    let installed = |relative: &str| prefix.path().join(relative);
    for file in [
        "bin/parcrypt",
        "share/man/man1/parcrypt.1",
        "share/man/man1/parcrypt-encrypt.1",
        "share/man/man1/parcrypt-decrypt.1",
        "share/bash-completion/completions/parcrypt",
        "share/zsh/site-functions/_parcrypt",
        "share/fish/vendor_completions.d/parcrypt.fish",
    ] {
        let metadata = std::fs::metadata(installed(file))
            .unwrap_or_else(|error| panic!("{file} not installed: {error}"));
        assert!(metadata.len() > 0, "{file} is empty");
    }
    // The installed binary runs, and its page is the one it generates.
    let version = Command::new(installed("bin/parcrypt"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("parcrypt "));
    assert_eq!(
        std::fs::read_to_string(installed("share/man/man1/parcrypt.1")).unwrap(),
        stdout_of(&["manpage"])
    );

    let refused = Command::new("bash")
        .arg(&script)
        .args(["--prefix", prefix.path().to_str().unwrap(), "--bogus"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown option '--bogus'"));
}
