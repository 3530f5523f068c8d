//! The official recorded wire examples in `../shared/wire` (beside the
//! checkout; read in place, never copied into the project).

use std::path::PathBuf;

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
    fn an_empty_recording_gives_just_the_end() {
        assert_eq!(repeated_sse_stream("data: [DONE]\n\n", 1 << 20), b"data: [DONE]\n\n");
    }
}
