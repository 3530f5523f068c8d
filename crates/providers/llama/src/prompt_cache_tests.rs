//! The prompt cache's files, with a stand-in for llama.cpp's state writer
//! (the real model's load and save are tested in `engine`'s tests).

use std::time::Duration;

use super::*;

fn identity(model: &str) -> Identity {
    Identity {
        model_sha256: model.to_owned(),
        context_size: 8192,
        batch_size: 512,
        sequences: 2,
        bindings: "test".to_owned(),
    }
}

fn cache_in(dir: &Path, model: &str, max_bytes: u64) -> PromptCache {
    PromptCache::open(dir.join("cache"), max_bytes, identity(model)).expect("the cache opens")
}

/// A state file of `bytes` bytes derived from the tokens.
fn fake_state(tokens: &[i32], bytes: usize) -> impl FnOnce(&Path) -> Result<(), String> + use<> {
    let seed = tokens.first().copied().unwrap_or(0) as u8;
    move |path: &Path| fs::write(path, vec![seed; bytes]).map_err(|error| error.to_string())
}

fn tokens(range: std::ops::Range<i32>) -> Vec<i32> {
    range.collect()
}

fn save(cache: &mut PromptCache, saved: &[i32]) {
    cache.save(saved, fake_state(saved, 1000)).expect("saved");
}

/// The files of the cache folder, sorted, temporary ones included.
fn files(cache: &PromptCache) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(cache.dir())
        .expect("the folder")
        .flatten()
        .map(|item| item.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_prompt_starting_with_a_saved_state_hits_it_with_the_shared_length() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    let saved = tokens(0..300);
    save(&mut cache, &saved);
    let mut prompt = tokens(0..250);
    prompt.extend([9000, 9001]);
    let hit = cache.best_match(&prompt, 32).expect("a hit");
    assert_eq!(hit.shared, 250);
    assert_eq!(hit.tokens, saved);
    assert_eq!(fs::read(&hit.state).expect("the state"), vec![0u8; 1000]);
    // A second process's cache of the same model finds it too.
    let other = cache_in(dir.path(), "model-a", 1 << 20);
    assert_eq!(other.best_match(&prompt, 32).map(|hit| hit.shared), Some(250));
}

#[test]
fn the_entry_sharing_the_most_tokens_is_chosen() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut first = cache_in(dir.path(), "model-a", 1 << 20);
    let mut second = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut first, &tokens(0..100));
    let mut longer = tokens(0..100);
    longer.extend(500..700);
    save(&mut second, &longer);
    let mut prompt = longer.clone();
    prompt.push(1);
    assert_eq!(first.best_match(&prompt, 32).map(|hit| hit.shared), Some(300));
}

#[test]
fn a_changed_prefix_misses() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..300));
    let mut changed = tokens(0..300);
    changed[10] = -1;
    assert_eq!(cache.best_match(&changed, 32), None, "only 10 tokens shared");
    assert_eq!(cache.best_match(&tokens(1..300), 1), None, "nothing shared");
    assert!(cache.best_match(&tokens(0..300), 32).is_some(), "the entry is kept");
}

#[test]
fn a_truncated_state_is_ignored_and_removed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..300));
    let state = cache.best_match(&tokens(0..300), 32).expect("a hit").state;
    let file = fs::OpenOptions::new().write(true).open(&state).expect("the state");
    file.set_len(400).expect("truncated");
    assert_eq!(cache.best_match(&tokens(0..300), 32), None);
    assert_eq!(files(&cache), Vec::<String>::new(), "both files removed");
}

#[test]
fn a_state_of_the_right_size_but_other_bytes_is_ignored() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..300));
    let state = cache.best_match(&tokens(0..300), 32).expect("a hit").state;
    fs::write(&state, vec![7u8; 1000]).expect("overwritten");
    assert_eq!(cache.best_match(&tokens(0..300), 32), None);
}

#[test]
fn a_damaged_check_is_ignored_and_removed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..300));
    let check = cache.entry_names().pop().expect("an entry");
    let path = cache.check_path(&check);
    let text = fs::read_to_string(&path).expect("the check");
    fs::write(&path, &text[..text.len() / 2]).expect("cut");
    assert_eq!(cache.best_match(&tokens(0..300), 32), None);
    assert_eq!(files(&cache), Vec::<String>::new());
}

#[test]
fn a_state_of_another_model_or_layout_is_never_used_and_kept_for_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..300));
    let other_model = cache_in(dir.path(), "model-b", 1 << 20);
    assert_eq!(other_model.best_match(&tokens(0..300), 32), None);
    let other_layout = PromptCache::open(
        dir.path().join("cache"),
        1 << 20,
        Identity {
            context_size: 4096,
            ..identity("model-a")
        },
    )
    .expect("opens");
    assert_eq!(other_layout.best_match(&tokens(0..300), 32), None);
    assert!(
        cache.best_match(&tokens(0..300), 32).is_some(),
        "still there for model-a"
    );
}

#[test]
fn a_later_save_replaces_the_entry_this_cache_saved_before() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..100));
    save(&mut cache, &tokens(0..200));
    assert_eq!(cache.entry_names().len(), 1);
    assert_eq!(cache.best_match(&tokens(0..300), 32).map(|hit| hit.shared), Some(200));
}

#[test]
fn the_least_recently_used_entries_go_first_past_the_bound() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let entry = |start: i32| tokens(start..start + 100);
    let mut writer = cache_in(dir.path(), "model-a", u64::MAX);
    save(&mut writer, &entry(0));
    let one_entry: u64 = files(&writer)
        .iter()
        .map(|file| fs::metadata(writer.dir().join(file)).expect("metadata").len())
        .sum();
    // Room for two entries, not three.
    let bound = one_entry * 5 / 2;
    std::thread::sleep(Duration::from_millis(20));
    save(&mut cache_in(dir.path(), "model-a", bound), &entry(1000));
    std::thread::sleep(Duration::from_millis(20));
    let reader = cache_in(dir.path(), "model-a", bound);
    // The first entry is used again, so the second is now the oldest.
    assert!(reader.best_match(&entry(0), 32).is_some());
    std::thread::sleep(Duration::from_millis(20));
    save(&mut cache_in(dir.path(), "model-a", bound), &entry(2000));
    assert!(reader.best_match(&entry(0), 32).is_some(), "recently used: kept");
    assert!(
        reader.best_match(&entry(1000), 32).is_none(),
        "least recently used: evicted"
    );
    assert!(reader.best_match(&entry(2000), 32).is_some(), "just saved: kept");
}

#[test]
fn a_failed_state_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    let error = cache
        .save(&tokens(0..100), |path: &Path| {
            fs::write(path, b"half").map_err(|error| error.to_string())?;
            Err("llama.cpp failed to save".to_owned())
        })
        .expect_err("the save fails");
    assert!(error.to_string().contains("llama.cpp failed to save"), "{error}");
    assert_eq!(files(&cache), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn the_folder_and_files_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temp dir");
    let folder = dir.path().join("cache");
    fs::create_dir(&folder).expect("made");
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o777)).expect("opened up");
    let mut cache = cache_in(dir.path(), "model-a", 1 << 20);
    save(&mut cache, &tokens(0..100));
    let mode = |path: &Path| fs::metadata(path).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    for file in files(&cache) {
        assert_eq!(mode(&folder.join(&file)), 0o600, "{file}");
    }
}
