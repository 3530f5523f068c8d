//! The size of the composition crate, guarded: agent-app's source lines
//! (not blank, not comments, not `#[cfg(test)]` modules) may not grow past
//! [`MAX_APP_LINES`], under 2,500 (issue 33), and its modules may not import
//! each other in a cycle ([`crate::app_modules`]).

use std::path::Path;

/// The most source lines agent-app may have, under issue 33's bound of
/// 2,500: 2,356 measured on 2026-12-03, after the configuration and the
/// parts it describes moved to the facade, the terminal to agent-console
/// and `[serve]` to agent-server (4,647 the day before).
pub const MAX_APP_LINES: usize = 2_400;

/// Where the app's sources are, from the workspace root.
const APP_SOURCES: &str = "crates/agent-app/src";

/// Fails when agent-app has more than [`MAX_APP_LINES`] source lines.
pub fn run(workspace: &Path) -> Result<(), String> {
    let lines = source_lines_under(&workspace.join(APP_SOURCES))?;
    eprintln!("==> xtask ci: agent-app has {lines} source lines (at most {MAX_APP_LINES})");
    if lines > MAX_APP_LINES {
        return Err(format!(
            "agent-app has {lines} source lines, more than the {MAX_APP_LINES} allowed: \
             move what is not composition to the crate it belongs in"
        ));
    }
    crate::app_modules::run(&workspace.join(APP_SOURCES))
}

/// The source lines of every `.rs` file under `dir`.
pub fn source_lines_under(dir: &Path) -> Result<usize, String> {
    let entries = std::fs::read_dir(dir).map_err(|error| format!("reading {}: {error}", dir.display()))?;
    let mut total = 0;
    for entry in entries {
        let path = entry
            .map_err(|error| format!("reading {}: {error}", dir.display()))?
            .path();
        if path.is_dir() {
            total += source_lines_under(&path)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            let text =
                std::fs::read_to_string(&path).map_err(|error| format!("reading {}: {error}", path.display()))?;
            total += source_lines(&text);
        }
    }
    Ok(total)
}

/// The lines of `text` that are code: not blank, not a comment, not inside a
/// `#[cfg(test)] mod … { … }` (braces counted per line, which is enough
/// for rustfmt-formatted code).
pub fn source_lines(text: &str) -> usize {
    code_lines(text).len()
}

/// The lines of `text` that [`source_lines`] counts, trimmed.
pub fn code_lines(text: &str) -> Vec<&str> {
    let mut code = Vec::new();
    let mut in_block_comment = false;
    let mut test_depth: Option<usize> = None;
    let mut cfg_test_pending = false;
    for line in text.lines().map(str::trim) {
        if in_block_comment {
            in_block_comment = !line.contains("*/");
            continue;
        }
        if line.starts_with("/*") {
            in_block_comment = !line.contains("*/");
            continue;
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        // The depth of braces after `line`, from `depth` before it.
        let after =
            |depth: usize, line: &str| (depth + line.matches('{').count()).saturating_sub(line.matches('}').count());
        if let Some(depth) = test_depth {
            let depth = after(depth, line);
            test_depth = (depth > 0).then_some(depth);
            continue;
        }
        if line.starts_with("#[cfg(test)]") {
            cfg_test_pending = true;
            continue;
        }
        if std::mem::take(&mut cfg_test_pending) {
            // A test-only module, whole; a test-only `use` or `mod x;` alone.
            let depth = after(0, line);
            if depth > 0 {
                test_depth = Some(depth);
                continue;
            }
            if line.ends_with(';') {
                continue;
            }
        }
        code.push(line);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_comments_and_test_modules_are_not_counted() {
        let text = "//! crate doc\n\nuse std::fmt;\n/* a\n block */\nfn a() {\n    // note\n    1;\n}\n\n#[cfg(test)]\nmod tests {\n    fn t() {\n        let x = { 1 };\n    }\n}\nfn b() {}\n";
        assert_eq!(source_lines(text), 5, "use, fn a {{, 1;, }}, fn b");
    }

    #[test]
    fn a_cfg_test_item_that_is_not_a_module_is_skipped_alone() {
        let text = "#[cfg(test)]\nuse std::fmt;\nfn a() {}\n";
        assert_eq!(source_lines(text), 1);
        assert_eq!(source_lines("#[cfg(test)]\nmod tests;\nfn a() {}\n"), 1);
    }

    #[test]
    fn the_app_is_within_its_ceiling() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lines = source_lines_under(&workspace.join(APP_SOURCES));
        eprintln!("agent-app source lines: {lines:?}");
        assert!(
            matches!(lines, Ok(lines) if lines > 1_000 && lines <= MAX_APP_LINES),
            "{lines:?}"
        );
    }
}
