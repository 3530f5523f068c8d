//! `cargo xtask fuzz [--seconds N | --smoke] [TARGET ...]`: builds the
//! libFuzzer targets of `fuzz/` with cargo-fuzz (`--sanitizer none`, so
//! stable Rust does), seeds each target's corpus, runs each for a while and
//! prints what it did: executions, coverage, corpus, crashes. A crash fails
//! the command, with the input libFuzzer saved under `fuzz/artifacts/`.
//!
//! The corpus of a target is `fuzz/corpus/<target>/` (not committed): the
//! seeds of `fuzz/seeds/<target>/` and the inputs of
//! `fuzz/regressions/<target>/` are copied in before a run, and for the
//! stream targets the NDJSON recordings of `../shared/wire` (or
//! `$AGENTRY_WIRE_DIR`) when it is there. Nothing is fetched: the command
//! works offline once cargo-fuzz is installed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets, as `fuzz/Cargo.toml` names its binaries.
pub const TARGETS: &[&str] = &[
    "sse_decoder",
    "ndjson_decoder",
    "provider_streams",
    "agent_parse",
    "templates",
    "schema_validation",
    "sql_guard",
    "url_policy",
    "config_loader",
    "server_bodies",
    "run_state",
];

/// Seconds per target of `--smoke` (CI): about 30 s for all of them.
pub const SMOKE_SECONDS: u64 = 3;

/// Seconds per target by default: the campaign of docs/fuzzing.md.
pub const CAMPAIGN_SECONDS: u64 = 600;

/// What one target's run did, from libFuzzer's final statistics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Inputs executed.
    pub executions: u64,
    /// Coverage points (edges) reached.
    pub coverage: u64,
    /// Features (libFuzzer's finer coverage).
    pub features: u64,
    /// Inputs in the corpus at the end.
    pub corpus: u64,
    /// Peak resident memory, in MiB.
    pub peak_rss_mb: u64,
}

/// Parses the command line and runs the campaign.
pub fn run(cargo: &str, workspace: &Path, args: &[String]) -> Result<(), String> {
    let mut seconds = CAMPAIGN_SECONDS;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--smoke" => seconds = SMOKE_SECONDS,
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|value| value.parse().ok())
                    .filter(|&value| value > 0)
                    .ok_or("--seconds needs a whole number of seconds above 0")?;
            }
            target if TARGETS.contains(&target) => targets.push(target),
            other => {
                return Err(format!(
                    "unknown argument `{other}`: use --seconds N, --smoke, or targets among {}",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    let fuzz = workspace.join("fuzz");
    let version = Command::new(cargo).args(["fuzz", "--version"]).output();
    if !version.is_ok_and(|output| output.status.success()) {
        return Err("cargo-fuzz is not installed: `cargo install cargo-fuzz --locked` (crates.io)".to_owned());
    }
    eprintln!(
        "==> xtask fuzz: building {} targets (cargo fuzz build -s none)",
        targets.len()
    );
    let status = Command::new(cargo)
        .args(["fuzz", "build", "-s", "none"])
        .current_dir(&fuzz)
        .status()
        .map_err(|error| format!("could not start cargo fuzz: {error}"))?;
    if !status.success() {
        return Err(format!("cargo fuzz build failed ({status})"));
    }
    let wire = wire_dir(workspace);
    let mut report = String::from(
        "| target | seconds | executions | exec/s | coverage | features | corpus | peak RSS |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut crashed = Vec::new();
    for target in targets {
        let corpus = fuzz.join("corpus").join(target);
        let seeded = seed(&fuzz, target, &corpus, wire.as_deref())?;
        eprintln!("==> xtask fuzz: {target} for {seconds} s ({seeded} inputs seeded)");
        let output = Command::new(cargo)
            .args(["fuzz", "run", "-s", "none", target])
            .arg(&corpus)
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                "-print_final_stats=1",
                "-timeout=10",
                "-rss_limit_mb=2048",
                "-max_len=8192",
            ])
            .current_dir(&fuzz)
            .output()
            .map_err(|error| format!("could not start cargo fuzz run {target}: {error}"))?;
        let log = String::from_utf8_lossy(&output.stderr);
        let outcome = parse_outcome(&log);
        let rate = outcome.executions / seconds.max(1);
        let _ = writeln!(
            report,
            "| {target} | {seconds} | {} | {rate} | {} | {} | {} | {} MiB |",
            outcome.executions, outcome.coverage, outcome.features, outcome.corpus, outcome.peak_rss_mb
        );
        if !output.status.success() {
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("xtask fuzz: {target} failed ({}):", output.status);
            for line in tail.iter().rev() {
                eprintln!("  {line}");
            }
            crashed.push(target);
        }
    }
    println!("{report}");
    if crashed.is_empty() {
        eprintln!("==> xtask fuzz: no crash");
        Ok(())
    } else {
        Err(format!(
            "{} crashed: {} (inputs under fuzz/artifacts/; add each to fuzz/regressions/<target>/ with its fix)",
            crashed.len(),
            crashed.join(", ")
        ))
    }
}

/// The recorded wire examples, when they are there.
fn wire_dir(workspace: &Path) -> Option<PathBuf> {
    let dir = std::env::var_os("AGENTRY_WIRE_DIR").map_or_else(|| workspace.join("../shared/wire"), PathBuf::from);
    dir.is_dir().then_some(dir)
}

/// Copies the target's seeds and regressions (and, for the stream targets,
/// the NDJSON wire recordings) into `corpus`; returns how many.
fn seed(fuzz: &Path, target: &str, corpus: &Path, wire: Option<&Path>) -> Result<usize, String> {
    std::fs::create_dir_all(corpus).map_err(|error| format!("{}: {error}", corpus.display()))?;
    let mut sources = vec![fuzz.join("seeds").join(target), fuzz.join("regressions").join(target)];
    if let Some(wire) = wire
        && matches!(target, "ndjson_decoder" | "provider_streams")
    {
        sources.push(wire.join("ollama/docs_examples"));
    }
    let mut count = 0;
    for source in sources {
        let Ok(entries) = std::fs::read_dir(&source) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let lower = name.to_ascii_lowercase();
            let wanted = source.starts_with(fuzz)
                || [".ndjson", ".jsonl", ".response.json"]
                    .iter()
                    .any(|suffix| lower.ends_with(suffix));
            if path.is_file() && wanted {
                let copy = corpus.join(format!("seed-{name}"));
                std::fs::copy(&path, &copy).map_err(|error| format!("{}: {error}", path.display()))?;
                count += 1;
            }
        }
    }
    Ok(count)
}

/// The final statistics libFuzzer prints (`-print_final_stats=1`) and its
/// last status line (`#N DONE cov: C ft: F corp: K/...`).
pub fn parse_outcome(log: &str) -> Outcome {
    let mut outcome = Outcome::default();
    for line in log.lines() {
        if let Some(value) = line.strip_prefix("stat::number_of_executed_units:") {
            outcome.executions = value.trim().parse().unwrap_or_default();
        }
        if let Some(value) = line.strip_prefix("stat::peak_rss_mb:") {
            outcome.peak_rss_mb = value.trim().parse().unwrap_or_default();
        }
        if line.starts_with('#') && line.contains(" cov: ") {
            let number_after = |key: &str| {
                line.split_once(key)
                    .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
                    .and_then(|digits| digits.parse().ok())
            };
            outcome.coverage = number_after(" cov: ").unwrap_or(outcome.coverage);
            outcome.features = number_after(" ft: ").unwrap_or(outcome.features);
            outcome.corpus = number_after(" corp: ").unwrap_or(outcome.corpus);
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_statistics_and_the_last_status_line_are_read() {
        let log = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 12 corp: 3/90b exec/s: 0 rss: 40Mb\n\
                   #4096\tpulse  cov: 150 ft: 300 corp: 20/1Kb lim: 40 exec/s: 2048 rss: 50Mb\n\
                   #9000\tDONE   cov: 170 ft: 321 corp: 25/2Kb lim: 64 exec/s: 3000 rss: 52Mb\n\
                   stat::number_of_executed_units: 9000\nstat::average_exec_per_sec:     3000\n\
                   stat::peak_rss_mb:              52\n";
        assert_eq!(
            parse_outcome(log),
            Outcome {
                executions: 9000,
                coverage: 170,
                features: 321,
                corpus: 25,
                peak_rss_mb: 52,
            }
        );
        assert_eq!(parse_outcome("no libFuzzer output"), Outcome::default());
    }

    #[test]
    fn the_targets_are_the_fuzz_crates_binaries() {
        let manifest = std::fs::read_to_string(crate::workspace_root().join("fuzz/Cargo.toml")).unwrap_or_default();
        let binaries = manifest.matches("[[bin]]").count();
        assert_eq!(binaries, TARGETS.len(), "fuzz/Cargo.toml has {binaries} binaries");
        for target in TARGETS {
            assert!(
                manifest.contains(&format!("name = \"{target}\"")),
                "{target} is not a binary"
            );
        }
    }
}
