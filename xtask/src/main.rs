//! Project automation: `cargo xtask <command>`.
//!
//! - `ci`: formatting check, clippy with warnings denied, and every test of
//!   the workspace; the same command CI runs (`.ci/run`).

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("help" | "--help" | "-h") | None => {
            println!("usage: cargo xtask <command>\n\ncommands:\n  ci    fmt check, clippy -D warnings, all tests");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xtask: unknown command `{other}`; run `cargo xtask help`");
            ExitCode::from(2)
        }
    }
}

/// Runs each step in order and stops at the first failure.
fn ci() -> ExitCode {
    let steps: [(&str, &[&str]); 3] = [
        ("format", &["fmt", "--all", "--", "--check"]),
        (
            "lint",
            &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        ),
        ("test", &["test", "--workspace"]),
    ];
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for (name, args) in steps {
        eprintln!("==> xtask ci: {name}: cargo {}", args.join(" "));
        match Command::new(&cargo).args(args).status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask ci: step `{name}` failed ({status})");
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("xtask ci: could not start cargo for step `{name}`: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!("==> xtask ci: all steps passed");
    ExitCode::SUCCESS
}
