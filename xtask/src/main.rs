//! Project automation: `cargo xtask <command>`.
//!
//! - `ci`: formatting check, clippy with warnings denied, each cargo
//!   feature of agent-app and `agentry` checked alone (and the crate count
//!   of an openai-only CLI), every test of the workspace (then how many
//!   were skipped and why), and every program of `examples/`; the same
//!   command CI runs (`.ci/run`).
//! - `examples`: runs every program of `examples/` (the last step of `ci`).
//! - `features`: the feature step of `ci` alone.
//! - `eval-local [MODEL,MODEL] [off|on|both] [--only TEXT]`: the
//!   tool-calling evaluation of the local models, without and/or with the
//!   grammar (docs/local-models.md); `--only` runs the cases whose category
//!   is TEXT or whose prompt contains it (several texts separated by `|`).
//! - `eval-conversations [MODEL[,MODEL]] [dev|test|both] [--grounding
//!   on|off]`: multi-turn conversations (travel and math tools) on local
//!   models through the agent `agentry run` builds, "today" fixed, judged
//!   turn by turn by rules and a strict figure judge; `dev` is for tuning,
//!   `test` is held out (default: the default model, both splits, grounding
//!   as configured).
//! - `fuzz [--seconds N | --smoke] [TARGET ...]`: builds and runs the
//!   libFuzzer targets of `fuzz/` (cargo-fuzz, `--sanitizer none` on
//!   stable), with their seeds, and prints executions and coverage; a crash
//!   fails it (docs/fuzzing.md). CI runs `--smoke`.
//! - `fetch-model [NAME]`: downloads, assembles and verifies a local model
//!   (default `qwen2.5-coder-0.5b`) into the model store.
//! - `measure-cache [ROUNDS]`, `measure-tools [MODEL]`: figures of the
//!   local model (prompt cache, tool prompt).
//!
//! xtask itself depends on nothing heavy (the model store only), so `ci`
//! starts formatting within seconds of a fresh clone. The evaluations and
//! measurements are the `agent-evals` binary (crates/evals), which xtask
//! runs with cargo, building llama.cpp only then.

mod app_modules;
mod app_size;
mod examples;
mod features;
mod fuzz;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use agent_model_store::{self as models, FetchProgress, ModelStore};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some(command @ ("eval-local" | "eval-conversations" | "measure-tools" | "measure-cache")) => {
            evals(command, &args[1..])
        }
        Some("examples") => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            match examples::run(&cargo) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask examples: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("features") => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            match features::run(&cargo, &workspace_root()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask features: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("fuzz") => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            match fuzz::run(&cargo, &workspace_root(), &args[1..]) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("xtask fuzz: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("fetch-model") => fetch_model(args.get(1).map_or(models::DEFAULT_MODEL, String::as_str)),
        Some("help" | "--help" | "-h") | None => {
            println!(
                "usage: cargo xtask <command>\n\ncommands:\n  ci                  fmt check, clippy -D warnings, each feature alone, all tests, examples\n  examples            run every program of examples/\n  features            check each feature of agent-app and agentry alone, count an openai-only CLI's crates\n  fuzz [--seconds N | --smoke] [TARGET ...]
                      run the libFuzzer targets of fuzz/ (cargo-fuzz, stable; 600 s each, --smoke 3 s)
  fetch-model [NAME]  download a local model (default {})\n  eval-local [M,M] [off|on|both] [--only TEXT]\n                      tool-calling success rates of the local models\n  eval-conversations [M,M] [dev|test|both] [--grounding on|off]\n                      multi-turn conversations on local models, judged turn by turn\n  measure-cache [ROUNDS]\n                      time to first token of a follow-up `agentry run --session` turn, prompt cache on and off\n  measure-tools [MODEL]\n                      tokens each default tool costs in the local model's prompt",
                models::DEFAULT_MODEL
            );
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("xtask: unknown command `{other}`; run `cargo xtask help`");
            ExitCode::from(2)
        }
    }
}

/// Runs each step in order and stops at the first failure. The tests
/// append a line for each test they skip to a fresh skip log (see
/// [`SKIP_LOG_ENV`]), summed up after the test step.
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
    let skip_log = skip_log_path();
    if let Err(error) = clear_skip_log(&skip_log) {
        eprintln!("xtask ci: could not clear the skip log {}: {error}", skip_log.display());
        return ExitCode::FAILURE;
    }
    for (name, args) in steps {
        if name == "test"
            && let Err(error) = features::run(&cargo, &workspace_root())
        {
            eprintln!("xtask ci: step `features` failed: {error}");
            return ExitCode::FAILURE;
        }
        if name == "test"
            && let Err(error) = app_size::run(&workspace_root())
        {
            eprintln!("xtask ci: step `app size` failed: {error}");
            return ExitCode::FAILURE;
        }
        eprintln!("==> xtask ci: {name}: cargo {}", args.join(" "));
        let mut command = Command::new(&cargo);
        command.args(args);
        if name == "test" {
            command.env(SKIP_LOG_ENV, &skip_log);
        }
        let status = command.status();
        if name == "test" && status.is_ok() {
            match read_skip_log(&skip_log) {
                Ok(log) => eprintln!("{}", skip_summary(&log)),
                Err(error) => eprintln!("xtask ci: could not read the skip log {}: {error}", skip_log.display()),
            }
        }
        match status {
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
    if let Err(error) = examples::run(&cargo) {
        eprintln!("xtask ci: step `examples` failed: {error}");
        return ExitCode::FAILURE;
    }
    eprintln!("==> xtask ci: all steps passed");
    ExitCode::SUCCESS
}

/// The variable naming the file each skipped test appends a line to,
/// `<test>\t<reason>` (`agent_testing::skip::SKIP_LOG_ENV`).
const SKIP_LOG_ENV: &str = "AGENTRY_SKIP_LOG";

/// The workspace's folder (xtask's parent).
fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// `target/xtask-ci-skipped-tests.log` in the workspace.
fn skip_log_path() -> PathBuf {
    workspace_root().join("target/xtask-ci-skipped-tests.log")
}

/// Deletes the skip log of an earlier run and makes sure its folder exists.
fn clear_skip_log(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    match path.parent() {
        Some(folder) => std::fs::create_dir_all(folder),
        None => Ok(()),
    }
}

/// The skip log's lines; none when no test wrote one.
fn read_skip_log(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        read => read,
    }
}

/// How many tests the skip log says were skipped and why: one line with the
/// reason when they share it, else a line for each reason with its count.
fn skip_summary(log: &str) -> String {
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for line in log.lines().filter(|line| !line.trim().is_empty()) {
        let reason = line.split_once('\t').map_or(line, |(_, reason)| reason);
        match reasons.iter_mut().find(|(known, _)| *known == reason) {
            Some((_, count)) => *count += 1,
            None => reasons.push((reason, 1)),
        }
    }
    let total: usize = reasons.iter().map(|(_, count)| count).sum();
    let tests = if total == 1 { "test" } else { "tests" };
    match reasons.as_slice() {
        [] => "xtask ci: no test skipped".to_owned(),
        [(reason, _)] => format!("xtask ci: {total} {tests} skipped: {reason}"),
        _ => {
            let mut summary = format!("xtask ci: {total} {tests} skipped:");
            for (reason, count) in &reasons {
                let _ = write!(summary, "\n  {count}: {reason}");
            }
            summary
        }
    }
}

/// Runs `command` with `args` in the `agent-evals` binary, built in the
/// same profile as xtask.
fn evals(command: &str, args: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(["run", "--quiet", "--package", "agent-evals", "--", command])
        .args(args)
        .status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            if let Some(code) = status.code() {
                ExitCode::from(u8::try_from(code).unwrap_or(1))
            } else {
                eprintln!("xtask {command}: agent-evals ended by a signal ({status})");
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("xtask {command}: could not start cargo: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Fetches a model into the default store, printing progress.
fn fetch_model(name: &str) -> ExitCode {
    let store = ModelStore::default_location();
    let mut last_percent = None;
    let result = store.fetch(name, &mut |progress| match progress {
        FetchProgress::Downloading { part, parts } => eprintln!("xtask fetch-model: downloading part {part}/{parts}"),
        FetchProgress::Assembling { done, total } => {
            let percent = done * 100 / total.max(1);
            if last_percent != Some(percent / 10) {
                last_percent = Some(percent / 10);
                eprint!("\rxtask fetch-model: assembling {percent:>3}%");
                let _ = std::io::stderr().flush();
            }
        }
    });
    match result {
        Ok(path) => {
            eprintln!();
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("\nxtask fetch-model: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_skip_log_lines_is_no_test_skipped() {
        assert_eq!(skip_summary(""), "xtask ci: no test skipped");
        assert_eq!(skip_summary("\n"), "xtask ci: no test skipped");
    }

    #[test]
    fn skips_sharing_a_reason_are_counted_on_one_line() {
        let log = "p http::a\tthe examples are absent (x)\np http::b\tthe examples are absent (x)\n";
        assert_eq!(
            skip_summary(log),
            "xtask ci: 2 tests skipped: the examples are absent (x)"
        );
        assert_eq!(
            skip_summary("p http::a\tthe examples are absent (x)\n"),
            "xtask ci: 1 test skipped: the examples are absent (x)"
        );
    }

    #[test]
    fn several_reasons_are_listed_with_their_counts_in_first_seen_order() {
        let log = "a\tno wire\nb\tno model\nc\tno wire\na line without a test\n";
        assert_eq!(
            skip_summary(log),
            "xtask ci: 4 tests skipped:\n  2: no wire\n  1: no model\n  1: a line without a test"
        );
    }

    #[test]
    fn the_skip_log_is_cleared_before_a_run_and_read_as_empty_when_absent() {
        let folder = std::env::temp_dir().join(format!("xtask-skip-log-{}", std::process::id()));
        let log = folder.join("target/skips.log");
        clear_skip_log(&log).expect("cleared");
        assert!(folder.join("target").is_dir(), "the folder is made");
        assert_eq!(read_skip_log(&log).expect("read"), "");
        std::fs::write(&log, "a\tb\n").expect("written");
        assert_eq!(read_skip_log(&log).expect("read"), "a\tb\n");
        clear_skip_log(&log).expect("cleared");
        assert!(!log.exists());
        std::fs::remove_dir_all(&folder).expect("removed");
    }
}
