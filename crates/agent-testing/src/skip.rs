//! Skipped tests, said where people and `cargo xtask ci` see them: a test
//! that cannot run here (no local model, no PostgreSQL, no browser, no MCP
//! servers, no recorded wire examples) reports it with
//! [`report_skip!`](crate::report_skip) and returns early.
//!
//! The line goes to stderr itself, past libtest's output capture (which
//! takes only the `print!` family), and, when `AGENTRY_SKIP_LOG` names a
//! file, one `<test>\t<reason>` line is appended to it: `cargo xtask ci`
//! counts those after its test step.

use std::io::Write;
use std::path::Path;

/// The variable naming a file each skipped test appends a line to.
pub const SKIP_LOG_ENV: &str = "AGENTRY_SKIP_LOG";

/// Reports that `test` is skipped for `reason` on stderr and in the skip
/// log named by [`SKIP_LOG_ENV`], if set.
pub fn skipped(test: &str, reason: &str) {
    let log = std::env::var_os(SKIP_LOG_ENV).filter(|value| !value.is_empty());
    report(test, reason, log.as_deref().map(Path::new), &mut std::io::stderr());
}

/// [`skipped`] with its outputs given: the line to `out`, the log line to
/// the file `log`.
pub fn report(test: &str, reason: &str, log: Option<&Path>, out: &mut dyn Write) {
    // One write of the whole line each, so lines of parallel tests do not interleave.
    let _ = out.write_all(format!("skipped: {test}: {reason}\n").as_bytes());
    if let Some(log) = log
        && let Err(error) = append_line(log, &format!("{test}\t{reason}"))
    {
        let _ = out.write_all(format!("warning: {}: could not log the skip: {error}\n", log.display()).as_bytes());
    }
}

/// Appends `line` and a newline to the file `path` (made if missing).
pub(crate) fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())
}

/// Reports the running test as skipped for the reason (a `format!`
/// string), naming it by its package, test target and test function (see
/// [`test_label`](crate::wire::test_label)). The caller returns after it.
#[macro_export]
macro_rules! report_skip {
    ($($reason:tt)+) => {
        $crate::skip::skipped(
            &$crate::wire::test_label(env!("CARGO_PKG_NAME"), module_path!()),
            &format!($($reason)+),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_one_line_out_and_one_line_in_the_log() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let log = dir.path().join("skipped.log");
        let mut out = Vec::new();
        report("pkg tests::a", "no model", Some(&log), &mut out);
        report("pkg tests::b", "no database", Some(&log), &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "skipped: pkg tests::a: no model\nskipped: pkg tests::b: no database\n"
        );
        assert_eq!(
            std::fs::read_to_string(&log).expect("the log"),
            "pkg tests::a\tno model\npkg tests::b\tno database\n"
        );
    }

    #[test]
    fn without_a_log_only_the_line_is_written_and_a_bad_log_is_said() {
        let mut out = Vec::new();
        report("t", "why", None, &mut out);
        assert_eq!(String::from_utf8_lossy(&out), "skipped: t: why\n");
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut out = Vec::new();
        report("t", "why", Some(dir.path()), &mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("skipped: t: why\nwarning: "), "{text}");
    }
}
