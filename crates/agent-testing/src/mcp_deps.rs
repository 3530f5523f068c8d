//! Where the real MCP servers installed by `.ci/install-mcp-test-deps`
//! are (`target/mcp-test-deps`, or `$AGENTRY_MCP_DEPS`). Tests that need them skip, saying why, when they are missing,
//! unless `AGENTRY_REQUIRE_MCP=1` (set by CI), when they fail.
use std::path::{Path, PathBuf};

/// The installed servers and SDK.
pub struct Deps {
    /// The `node` binary.
    pub node: PathBuf,
    /// `@modelcontextprotocol/server-everything`'s entry point (`dist/index.js`).
    pub everything: PathBuf,
    /// The Python of the virtual environment holding `mcp` and `mcp-server-time`.
    pub python: PathBuf,
    /// The `mcp-server-time` launcher.
    pub time_server: PathBuf,
}

fn deps_dir() -> PathBuf {
    std::env::var_os("AGENTRY_MCP_DEPS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-test-deps"),
        PathBuf::from,
    )
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The dependencies, or `None` (after saying why) when a test should skip.
pub fn deps(test: &str) -> Option<Deps> {
    let dir = deps_dir();
    let everything = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = dir.join("venv/bin/python");
    let time_server = dir.join("venv/bin/mcp-server-time");
    let mut missing = Vec::new();
    let node = on_path("node");
    if node.is_none() {
        missing.push("node on PATH".to_owned());
    }
    for path in [&everything, &python, &time_server] {
        if !path.is_file() {
            missing.push(path.display().to_string());
        }
    }
    if missing.is_empty() {
        return node.map(|node| Deps {
            node,
            everything,
            python,
            time_server,
        });
    }
    let reason = format!(
        "the real MCP servers are not installed (missing: {}); run `bash .ci/install-mcp-test-deps`",
        missing.join(", ")
    );
    assert!(
        std::env::var("AGENTRY_REQUIRE_MCP").as_deref() != Ok("1"),
        "{test}: {reason} (AGENTRY_REQUIRE_MCP=1)"
    );
    crate::skip::skipped(test, &reason);
    None
}
