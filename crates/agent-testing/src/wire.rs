//! The official recorded wire examples: `shared/wire` beside the checkout
//! (read in place, never copied into the project), or the folder named by
//! `AGENTRY_WIRE_DIR`.
//!
//! A test that reads them gets them from [`require_wire!`](crate::require_wire),
//! the one way in: when the folder is absent the test says so on stderr
//! (`skipped: <test>: ...`), appends a line to the file named by
//! `AGENTRY_SKIP_LOG` if set (`cargo xtask ci` counts them) and returns
//! early, passing; with `AGENTRY_REQUIRE_WIRE=1` (as CI sets) it fails
//! instead. Tests that use only the project's own fixtures never look.
//!
//! ```no_run
//! # fn a_test() {
//! let openai = agent_testing::require_wire!("openai");
//! let body = openai.bytes("reference_examples/default.response.json");
//! # }
//! ```

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable naming the wire folder, instead of `shared/wire` beside the
/// checkout (a relative path is taken from the workspace root).
pub const WIRE_DIR_ENV: &str = "AGENTRY_WIRE_DIR";
/// The variable that, set to `1`, makes an absent wire folder a failure.
pub const REQUIRE_WIRE_ENV: &str = "AGENTRY_REQUIRE_WIRE";
pub use crate::skip::SKIP_LOG_ENV;

/// The recorded wire examples, found: a folder that exists. Only a
/// [`WireLookup`] makes one, so holding a `Wire` means the examples are there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    dir: PathBuf,
}

impl Wire {
    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The subfolder `relative`, e.g. one provider's examples: `wire.join("openai")`.
    #[must_use]
    pub fn join(&self, relative: &str) -> Wire {
        Wire {
            dir: self.path(relative),
        }
    }

    /// The path of `relative` in the folder (the folder itself for `""`).
    pub fn path(&self, relative: &str) -> PathBuf {
        if relative.is_empty() {
            self.dir.clone()
        } else {
            self.dir.join(relative)
        }
    }

    /// The bytes of the file `relative`.
    ///
    /// # Panics
    /// When the file cannot be read (a test setup error), naming the path.
    pub fn bytes(&self, relative: &str) -> Vec<u8> {
        let path = self.path(relative);
        std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    /// The text of the file `relative`.
    ///
    /// # Panics
    /// When the file cannot be read as UTF-8 text, naming the path.
    pub fn text(&self, relative: &str) -> String {
        let path = self.path(relative);
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    /// The file `relative` parsed as JSON.
    ///
    /// # Panics
    /// When the file cannot be read or is not JSON, naming the path.
    pub fn json(&self, relative: &str) -> serde_json::Value {
        serde_json::from_slice(&self.bytes(relative))
            .unwrap_or_else(|error| panic!("{}: {error}", self.path(relative).display()))
    }

    /// The files of the subfolder `relative` (`""`: this folder) whose names
    /// end in `suffix`, sorted by name.
    ///
    /// # Panics
    /// When the folder cannot be read (a test setup error), naming it.
    pub fn files(&self, relative: &str, suffix: &str) -> Vec<PathBuf> {
        let dir = self.path(relative);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| file_name(path).ends_with(suffix))
            .collect();
        files.sort();
        files
    }
}

/// Where the wire folder is looked for and what its absence means: what
/// [`available`] reads from the environment, as plain values so the lookup
/// can be tested without touching the process's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireLookup {
    /// The folder ([`WIRE_DIR_ENV`], else [`default_dir`]).
    pub dir: PathBuf,
    /// An absent folder fails instead of skipping ([`REQUIRE_WIRE_ENV`]).
    pub required: bool,
    /// The file a skip appends its line to ([`SKIP_LOG_ENV`]).
    pub skip_log: Option<PathBuf>,
}

impl WireLookup {
    /// The lookup the process's environment asks for.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// The lookup the variables `var` returns ask for: an unset or empty
    /// variable is as if absent; [`REQUIRE_WIRE_ENV`] is on for any value
    /// but `0`.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let set = |name: &str| var(name).filter(|value| !value.is_empty());
        Self {
            dir: set(WIRE_DIR_ENV).map_or_else(default_dir, |dir| workspace_root().join(dir)),
            required: set(REQUIRE_WIRE_ENV).is_some_and(|value| value != "0"),
            skip_log: set(SKIP_LOG_ENV).map(PathBuf::from),
        }
    }

    /// The examples, or `None` when the folder is absent: then the skip of
    /// `test` is reported on `report` (`skipped: <test>: <reason>`) and
    /// appended to [`skip_log`](Self::skip_log) as `<test>\t<reason>`.
    ///
    /// # Panics
    /// When the folder is absent and [`required`](Self::required), naming
    /// the folder and [`REQUIRE_WIRE_ENV`] (at the caller's location).
    #[track_caller]
    pub fn find(&self, test: &str, report: &mut dyn Write) -> Option<Wire> {
        if self.dir.is_dir() {
            return Some(Wire { dir: self.dir.clone() });
        }
        let reason = format!(
            "the recorded wire examples are not at {} (set {WIRE_DIR_ENV}, or put shared/ beside the checkout)",
            self.dir.display()
        );
        assert!(
            !self.required,
            "{test}: {reason}; {REQUIRE_WIRE_ENV} is set, so this fails"
        );
        crate::skip::report(test, &reason, self.skip_log.as_deref(), report);
        None
    }
}

/// The workspace's root folder (a relative [`WIRE_DIR_ENV`] starts there).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.join("../.."), Path::to_path_buf)
}

/// `shared/wire` beside the workspace: where the examples are when
/// [`WIRE_DIR_ENV`] is not set.
pub fn default_dir() -> PathBuf {
    let root = workspace_root();
    root.parent()
        .map_or_else(|| root.join("../shared/wire"), |beside| beside.join("shared/wire"))
}

/// The examples as the environment says where to find them, or `None`
/// after reporting the skip of `test` on stderr (written to the stream
/// itself, which libtest's output capture does not swallow) and in the skip
/// log. Tests use [`require_wire!`](crate::require_wire), which names the test.
///
/// # Panics
/// When the folder is absent and `AGENTRY_REQUIRE_WIRE=1`.
#[track_caller]
pub fn available(test: &str) -> Option<Wire> {
    WireLookup::from_env().find(test, &mut std::io::stderr())
}

/// The name a skip line gives the running test: `package target::test`,
/// from the caller's package, its `module_path!()` (whose first part names
/// the test target) and the current thread, which libtest names after the
/// test (a bench's `main` thread adds nothing).
pub fn test_label(package: &str, module_path: &str) -> String {
    label(package, module_path, std::thread::current().name())
}

fn label(package: &str, module_path: &str, thread: Option<&str>) -> String {
    let target = module_path.split("::").next().unwrap_or(module_path);
    match thread {
        Some(test) if test != "main" => format!("{package} {target}::{test}"),
        _ => format!("{package} {target}"),
    }
}

/// The recorded wire examples as a [`Wire`] (with a folder argument, that
/// subfolder of them: `require_wire!("openai")`), or an early `return` from
/// the calling test, which passes, skipped, after saying why; see the
/// [module docs](crate::wire). For test functions (and bench functions)
/// that return `()`.
#[macro_export]
macro_rules! require_wire {
    () => {
        match $crate::wire::available(&$crate::wire::test_label(env!("CARGO_PKG_NAME"), module_path!())) {
            ::core::option::Option::Some(wire) => wire,
            ::core::option::Option::None => return,
        }
    };
    ($folder:expr) => {
        $crate::require_wire!().join($folder)
    };
}

/// The file name of `path` without `suffix`: the name a snapshot is given.
pub fn stem(path: &Path, suffix: &str) -> String {
    let name = file_name(path);
    name.strip_suffix(suffix).unwrap_or(name).to_owned()
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|name| name.to_str()).unwrap_or_default()
}

/// A recorded SSE stream's events repeated until the result holds at least
/// `at_least` bytes, ended by one `data: [DONE]` event: a large realistic
/// stream for throughput benchmarks.
pub fn repeated_sse_stream(recording: &str, at_least: usize) -> Vec<u8> {
    let body = recording.replace("data: [DONE]\n\n", "");
    let mut stream = String::with_capacity(at_least + body.len() + 16);
    while !body.is_empty() && stream.len() < at_least {
        stream.push_str(&body);
    }
    stream.push_str("data: [DONE]\n\n");
    stream.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(dir: &Path, required: bool, skip_log: Option<&Path>) -> WireLookup {
        WireLookup {
            dir: dir.to_path_buf(),
            required,
            skip_log: skip_log.map(Path::to_path_buf),
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(set, _)| set == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn a_stream_is_repeated_past_the_size_and_ends_once() {
        let recording = "data: {\"a\":1}\n\ndata: [DONE]\n\n";
        let stream = String::from_utf8(repeated_sse_stream(recording, 100)).expect("utf-8");
        assert!(stream.len() >= 100, "{}", stream.len());
        assert_eq!(stream.matches("[DONE]").count(), 1);
        assert!(stream.ends_with("data: [DONE]\n\n"));
        assert_eq!(stream.matches("{\"a\":1}").count(), (stream.len() - 14) / 15);
    }

    #[test]
    fn an_empty_recording_gives_just_the_end() {
        assert_eq!(repeated_sse_stream("data: [DONE]\n\n", 1 << 20), b"data: [DONE]\n\n");
    }

    #[test]
    fn the_recorded_openai_examples_are_listed_sorted_and_stem_strips_the_suffix() {
        let openai = crate::require_wire!("openai");
        let files = openai.files("reference_examples", ".response.json");
        let stems: Vec<String> = files.iter().map(|path| stem(path, ".response.json")).collect();
        assert_eq!(stems, ["default", "functions", "image_input", "logprobs"]);
        assert!(!openai.bytes("reference_examples/default.response.json").is_empty());
    }

    #[test]
    fn a_found_folder_reads_its_files_lists_them_and_says_nothing() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::create_dir(dir.path().join("openai")).expect("a subfolder");
        std::fs::write(dir.path().join("openai/b.response.json"), r#"{"b": 2}"#).expect("a file");
        std::fs::write(dir.path().join("openai/a.response.json"), r#"{"a": 1}"#).expect("a file");
        std::fs::write(dir.path().join("openai/a.request.json"), "{}").expect("a file");
        let log = dir.path().join("skips.log");
        let mut report = Vec::new();

        let wire = lookup(dir.path(), true, Some(&log))
            .find("t", &mut report)
            .expect("the folder exists");
        assert_eq!(wire.dir(), dir.path());
        let openai = wire.join("openai");
        let names: Vec<String> = openai
            .files("", ".response.json")
            .iter()
            .map(|path| stem(path, ".response.json"))
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(openai.json("b.response.json"), serde_json::json!({"b": 2}));
        assert_eq!(openai.text("a.request.json"), "{}");
        assert_eq!(wire.bytes("openai/a.request.json"), b"{}");
        assert!(report.is_empty(), "{}", String::from_utf8_lossy(&report));
        assert!(!log.exists(), "nothing is skipped");
    }

    #[test]
    fn an_absent_folder_is_a_skip_reported_and_appended_to_the_log() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let absent = dir.path().join("no-such-wire");
        let log = dir.path().join("skips.log");
        std::fs::write(&log, "earlier\tline\n").expect("a log");
        let mut report = Vec::new();

        let lookup = lookup(&absent, false, Some(&log));
        assert_eq!(lookup.find("pkg http::first", &mut report), None);
        assert_eq!(lookup.find("pkg http::second", &mut report), None);

        let reason = format!(
            "the recorded wire examples are not at {} (set AGENTRY_WIRE_DIR, or put shared/ beside the checkout)",
            absent.display()
        );
        assert_eq!(
            String::from_utf8(report).expect("utf-8"),
            format!("skipped: pkg http::first: {reason}\nskipped: pkg http::second: {reason}\n")
        );
        assert_eq!(
            std::fs::read_to_string(&log).expect("the log"),
            format!("earlier\tline\npkg http::first\t{reason}\npkg http::second\t{reason}\n"),
            "one line a skip, appended"
        );
    }

    #[test]
    fn an_absent_folder_without_a_log_is_only_reported() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut report = Vec::new();
        assert_eq!(
            lookup(&dir.path().join("absent"), false, None).find("t", &mut report),
            None
        );
        assert!(String::from_utf8(report).expect("utf-8").starts_with("skipped: t: "));
    }

    #[test]
    fn a_log_that_cannot_be_written_is_a_warning_not_a_failure() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let log = dir.path().join("missing-folder/skips.log");
        let mut report = Vec::new();
        assert_eq!(
            lookup(&dir.path().join("absent"), false, Some(&log)).find("t", &mut report),
            None
        );
        let report = String::from_utf8(report).expect("utf-8");
        assert!(report.contains("could not log the skip"), "{report}");
    }

    #[test]
    fn an_absent_folder_fails_when_required_naming_it_and_the_variable() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let absent = dir.path().join("no-such-wire");
        let log = dir.path().join("skips.log");
        let required = lookup(&absent, true, Some(&log));
        let panic = std::panic::catch_unwind(|| required.find("t", &mut Vec::new())).expect_err("a failure");
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        assert!(message.contains(&absent.display().to_string()), "{message}");
        assert!(message.contains("AGENTRY_REQUIRE_WIRE"), "{message}");
        assert!(!log.exists(), "a failure is not a skip");
    }

    #[test]
    fn the_variables_choose_the_folder_the_requirement_and_the_log() {
        let unset = WireLookup::from_vars(vars(&[]));
        assert_eq!(unset, lookup(&default_dir(), false, None));
        assert!(default_dir().ends_with("shared/wire"));
        assert_eq!(
            WireLookup::from_vars(vars(&[("AGENTRY_WIRE_DIR", "")])).dir,
            default_dir()
        );

        let set = WireLookup::from_vars(vars(&[
            ("AGENTRY_WIRE_DIR", "/elsewhere/wire"),
            ("AGENTRY_REQUIRE_WIRE", "1"),
            ("AGENTRY_SKIP_LOG", "/tmp/skips.log"),
        ]));
        assert_eq!(
            set,
            lookup(Path::new("/elsewhere/wire"), true, Some(Path::new("/tmp/skips.log")))
        );

        let relative = WireLookup::from_vars(vars(&[("AGENTRY_WIRE_DIR", "fixtures/wire")]));
        assert_eq!(relative.dir, workspace_root().join("fixtures/wire"));
        assert!(workspace_root().join("crates/agent-testing/Cargo.toml").is_file());

        for off in ["0", ""] {
            assert!(
                !WireLookup::from_vars(vars(&[("AGENTRY_REQUIRE_WIRE", off)])).required,
                "{off:?}"
            );
        }
    }

    #[test]
    fn a_skip_names_the_package_the_test_target_and_the_test() {
        assert_eq!(
            label("agent-provider-openai", "http", Some("a_plain_completion")),
            "agent-provider-openai http::a_plain_completion"
        );
        assert_eq!(
            label("agent-testing", "agent_testing::wire::tests", Some("wire::tests::t")),
            "agent-testing agent_testing::wire::tests::t"
        );
        assert_eq!(label("agent-http", "sse_decode", Some("main")), "agent-http sse_decode");
        assert_eq!(label("agent-http", "sse_decode", None), "agent-http sse_decode");
        assert!(test_label("p", "m").ends_with("a_skip_names_the_package_the_test_target_and_the_test"));
    }
}
