//! `cargo xtask measure-cache [ROUNDS]`: the time to the first token of a
//! follow-up `agentry run --session` turn on the local model, with the
//! prompt cache on disk and without it.
//!
//! Each round starts a session with one turn, then times the next turn of
//! that session (a question no earlier round asked) in a new `agentry`
//! process: from the process's start to
//! the first token of its first reply (the engine's `first token of the
//! reply` debug line, read from the process's stderr as it is written).
//! The two arms alternate, each in its own session; both use one temporary
//! `$AGENTRY_HOME` (the model store linked in). Prints each turn and the
//! median, minimum and maximum of each arm.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_provider_llama::models::ModelStore;

const FIRST_TURN: &str = "What is 17 times 23?";

/// One timed turn.
#[derive(Debug, Clone, Copy)]
struct Turn {
    first_token: Duration,
    whole: Duration,
    prompt_tokens: u64,
    loaded_tokens: u64,
}

/// Runs `rounds` rounds of both arms and prints the figures.
pub fn run(rounds: usize) -> Result<(), String> {
    let agentry = build_agentry()?;
    let home = std::env::temp_dir().join(format!("agentry-measure-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|error| format!("{}: {error}", home.display()))?;
    link_models(&home)?;
    let configs = [
        ("cache on", write_config(&home, true)?),
        ("cache off", write_config(&home, false)?),
    ];
    let mut figures: [Vec<Turn>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        // Alternate which arm goes first, so neither always runs warm.
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for arm in order {
            let (name, config) = &configs[arm];
            let session = format!("measure-{round}-{arm}");
            turn(&agentry, &home, config, &session, FIRST_TURN)?;
            // A question no earlier round asked, so that only the history
            // can come from disk, as in a real follow-up.
            let follow_up = format!("Thanks. And what is 12 times {}?", 12 + 2 * round + arm);
            let timed = turn(&agentry, &home, config, &session, &follow_up)?;
            println!(
                "round {round} {name}: first token {:.2} s, whole turn {:.1} s, prompt {} tokens, {} from disk",
                timed.first_token.as_secs_f64(),
                timed.whole.as_secs_f64(),
                timed.prompt_tokens,
                timed.loaded_tokens
            );
            figures[arm].push(timed);
        }
    }
    println!("| arm | turns | first token, median | min | max | whole turn, median |");
    println!("|---|---|---|---|---|---|");
    for ((name, _), turns) in configs.iter().zip(&figures) {
        let first: Vec<f64> = turns.iter().map(|turn| turn.first_token.as_secs_f64()).collect();
        let whole: Vec<f64> = turns.iter().map(|turn| turn.whole.as_secs_f64()).collect();
        println!(
            "| {name} | {} | {:.2} s | {:.2} s | {:.2} s | {:.1} s |",
            turns.len(),
            median(&first),
            first.iter().copied().fold(f64::INFINITY, f64::min),
            first.iter().copied().fold(0.0, f64::max),
            median(&whole)
        );
    }
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

/// The middle value (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

/// Builds the `agentry` binary and returns its path.
fn build_agentry() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(["build", "--quiet", "-p", "agent-app", "--bin", "agentry"])
        .status()
        .map_err(|error| format!("could not start cargo: {error}"))?;
    if !status.success() {
        return Err(format!("building agentry failed ({status})"));
    }
    let xtask = std::env::current_exe().map_err(|error| error.to_string())?;
    let binary = xtask.with_file_name(format!("agentry{}", std::env::consts::EXE_SUFFIX));
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!("{} was not built", binary.display()))
    }
}

/// Links the model store into `home`, so that the runs find the model.
fn link_models(home: &Path) -> Result<(), String> {
    let store = ModelStore::default_location();
    let target = std::fs::canonicalize(store.dir()).map_err(|error| {
        format!(
            "the model store {} is missing ({error}); run `cargo xtask fetch-model`",
            store.dir().display()
        )
    })?;
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&target, home.join("models")).map_err(|error| error.to_string())
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        Err("measure-cache links the model store, which needs a Unix system".to_owned())
    }
}

fn write_config(home: &Path, cache: bool) -> Result<PathBuf, String> {
    let path = home.join(if cache { "cache-on.toml" } else { "cache-off.toml" });
    let text = format!("[agent]\nprovider = \"llama\"\n\n[providers.llama]\nprompt_cache = {cache}\n");
    std::fs::write(&path, text).map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(path)
}

/// Runs one `agentry run --session` turn and times it.
fn turn(agentry: &Path, home: &Path, config: &Path, session: &str, prompt: &str) -> Result<Turn, String> {
    let started = Instant::now();
    let mut child = Command::new(agentry)
        .arg("--verbose")
        .args(["run", "--config"])
        .arg(config)
        .args(["--session", session, "--json", prompt])
        .env("AGENTRY_HOME", home)
        .env("RUST_LOG", "agent_provider_llama=debug")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("could not start {}: {error}", agentry.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let mut first_token = None;
    let mut prompt_tokens = 0;
    let mut loaded_tokens = 0;
    let mut log = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.map_err(|error| error.to_string())?;
        if first_token.is_none() && line.contains("first token of the reply") {
            first_token = Some(started.elapsed());
        }
        if prompt_tokens == 0 && line.contains("local generation finished") {
            prompt_tokens = field(&line, "prompt_tokens");
            loaded_tokens = field(&line, "loaded_tokens");
        }
        log.push(line);
    }
    let output = child.wait_with_output().map_err(|error| error.to_string())?;
    let whole = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "agentry run failed ({}): {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            log.join("\n")
        ));
    }
    let first_token = first_token.ok_or_else(|| format!("no first token was logged:\n{}", log.join("\n")))?;
    Ok(Turn {
        first_token,
        whole,
        prompt_tokens,
        loaded_tokens,
    })
}

/// The number after `name=` in a log line, 0 when absent.
fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
        .and_then(|value| value.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!(median(&[]).abs() < f64::EPSILON);
    }

    #[test]
    fn a_field_is_read_from_a_log_line() {
        let line = "DEBUG agent_provider_llama::reply: local generation finished prompt_tokens=2045 reused_tokens=1900 loaded_tokens=1900 generated_tokens=12";
        assert_eq!(field(line, "prompt_tokens"), 2045);
        assert_eq!(field(line, "loaded_tokens"), 1900);
        assert_eq!(field(line, "missing"), 0);
    }
}
