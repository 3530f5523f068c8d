//! Every seed and regression input under `fuzz/` replayed through its
//! target's check, on stable Rust, in the workspace's tests: a crash once
//! found by the fuzzer (its input saved under `fuzz/regressions/<target>/`)
//! fails here until it is fixed.

use std::path::{Path, PathBuf};

use agent_fuzz::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, none when it is absent.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_passes_its_check() {
    for (target, check) in TARGETS {
        let seeds = inputs("seeds", target);
        assert!(
            seeds.len() >= 3,
            "{target} has {} seeds under fuzz/seeds, want at least 3",
            seeds.len()
        );
        for path in seeds.iter().chain(&inputs("regressions", target)) {
            let data = std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{target} fails on {}", path.display());
        }
    }
}

#[test]
fn every_target_is_a_fuzz_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap_or_default();
    for (target, _) in TARGETS {
        assert!(
            fuzz_dir().join("fuzz_targets").join(format!("{target}.rs")).is_file(),
            "fuzz/fuzz_targets/{target}.rs is missing"
        );
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
}

/// The run-state seeds are runs this version saves: they are read back and
/// resumed, not refused at the door (which would leave the fuzzer only the
/// decoder to explore). `AGENT_FUZZ_WRITE_SEEDS=1` writes them anew.
#[test]
fn run_state_seeds_are_runs_this_version_resumes() {
    let dir = fuzz_dir().join("seeds/run_state");
    for (name, bytes) in agent_fuzz::saved_runs() {
        let path = dir.join(name);
        if std::env::var_os("AGENT_FUZZ_WRITE_SEEDS").is_some() {
            std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
            std::fs::write(&path, &bytes).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        }
        let committed = std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let saved: serde_json::Value =
            serde_json::from_slice(&committed).unwrap_or_else(|error| panic!("{name}: {error}"));
        let state = agent_runner::SavedRun::decode(saved).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(
            agent_fuzz::restores(state),
            "the seed {name} is refused by the fuzz agent: run AGENT_FUZZ_WRITE_SEEDS=1 cargo test -p agent-fuzz --test seeds"
        );
    }
}
