//! Each provider crate is behind a cargo feature: a build with only the
//! `openai` feature must not compile llama.cpp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn tree(features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["tree", "-p", "agent-app", "-e", "normal", "--prefix", "none"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn an_openai_only_build_does_not_compile_llama_cpp() {
    let openai_only = tree(&["--no-default-features", "--features", "openai"]);
    assert!(openai_only.contains("agent-provider-openai"), "{openai_only}");
    assert!(!openai_only.contains("llama-cpp"), "{openai_only}");
    assert!(!openai_only.contains("agent-provider-llama"), "{openai_only}");

    let llama_only = tree(&["--no-default-features", "--features", "llama"]);
    assert!(llama_only.contains("llama-cpp-2"), "{llama_only}");
    assert!(!llama_only.contains("agent-provider-openai"), "{llama_only}");

    let default = tree(&[]);
    assert!(
        default.contains("llama-cpp-2") && default.contains("agent-provider-openai"),
        "{default}"
    );
}
