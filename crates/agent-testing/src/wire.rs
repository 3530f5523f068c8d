//! The official recorded wire examples in `../shared/wire` (beside the
//! checkout; read in place, never copied into the project).

use std::path::{Path, PathBuf};

/// The `shared/wire` directory beside the workspace.
pub fn wire_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/wire")
}

/// The text of `relative` under [`wire_dir`].
///
/// # Panics
/// When the file cannot be read (a test setup error), naming the path.
pub fn read_wire(relative: &str) -> String {
    let path = wire_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The bytes of `relative` under [`wire_dir`].
///
/// # Panics
/// When the file cannot be read (a test setup error), naming the path.
pub fn read_wire_bytes(relative: &str) -> Vec<u8> {
    let path = wire_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The files of the folder `relative` (under [`wire_dir`]) whose names end
/// in `suffix`, sorted by name.
///
/// # Panics
/// When the folder cannot be read (a test setup error), naming it.
pub fn wire_files(relative: &str, suffix: &str) -> Vec<PathBuf> {
    let dir = wire_dir().join(relative);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| file_name(path).ends_with(suffix))
        .collect();
    files.sort();
    files
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
    fn wire_files_lists_matching_files_sorted_and_stem_strips_the_suffix() {
        let files = wire_files("openai/reference_examples", ".response.json");
        let stems: Vec<String> = files.iter().map(|path| stem(path, ".response.json")).collect();
        assert_eq!(stems, ["default", "functions", "image_input", "logprobs"]);
        assert!(!read_wire_bytes("openai/reference_examples/default.response.json").is_empty());
    }

    #[test]
    fn an_empty_recording_gives_just_the_end() {
        assert_eq!(repeated_sse_stream("data: [DONE]\n\n", 1 << 20), b"data: [DONE]\n\n");
    }
}
