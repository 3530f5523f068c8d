//! The prompt cache on disk: the model's KV state for a prompt, saved after
//! a request so that the next process starting with the same prefix (the
//! system prompt and tools, or a stored session's history) loads it
//! instead of evaluating it again.
//!
//! An entry is two files named by a hash of what it holds:
//! - `NAME.state`: llama.cpp's sequence state file (the keys and values);
//! - `NAME.json`: the [`Check`] that says what the state is valid for (the
//!   model's SHA-256 and the context settings), its exact tokens, and the
//!   state file's size and SHA-256.
//!
//! Nothing in the folder is trusted: an entry is used only when its check
//! parses, names this model and these settings, and the state file has the
//! size and digest the check gives. Any other entry is ignored, and a
//! partial, damaged or stale one is removed. Both files are written under
//! temporary names and renamed into place, the state first, so that a
//! process killed while saving leaves no entry that looks whole. The folder
//! and files are the owner's only (0700 and 0600 on Unix); the folder's
//! total size is bounded, the least recently used entries going first.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::models::hex;

/// The layout of [`Check`] and the state files this code writes and reads.
const FORMAT: u32 = 1;

/// The largest check file read: tokens of a full context and some room.
const MAX_CHECK_BYTES: u64 = 4 << 20;

/// The most entries looked at in one lookup (the folder is bounded by size,
/// so it holds far fewer in practice).
const MAX_ENTRIES: usize = 512;

/// Temporary files older than this are a killed process's leftovers.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// What a saved state is valid for: the same weights and the same cache
/// layout. A state saved under another identity is never loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    /// The SHA-256 of the model file.
    pub model_sha256: String,
    /// The context size in tokens.
    pub context_size: u32,
    /// The batch size the prompt is evaluated with.
    pub batch_size: u32,
    /// The cache's sequences.
    pub sequences: u32,
    /// The llama.cpp bindings that wrote the state.
    pub bindings: String,
}

/// The description of one entry, in `NAME.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Check {
    format: u32,
    identity: Identity,
    tokens: Vec<i32>,
    state_bytes: u64,
    state_sha256: String,
}

/// A usable entry for a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The verified state file to load.
    pub state: PathBuf,
    /// The tokens the state holds (all of them: the caller trims the cache
    /// back to `shared` after loading).
    pub tokens: Vec<i32>,
    /// How many of the prompt's first tokens the state holds.
    pub shared: usize,
}

/// The prompt cache of one model and context layout, in one folder.
#[derive(Debug)]
pub(crate) struct PromptCache {
    dir: PathBuf,
    max_bytes: u64,
    identity: Identity,
    /// The entry this cache saved last: the next save replaces it.
    own: Option<String>,
}

/// Why the cache cannot be used (it is then off, and said so once).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    /// The folder could not be made or made private.
    #[error("the prompt cache folder {path} cannot be used: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// Writing an entry failed.
    #[error("could not save the prompt cache entry {path}: {reason}")]
    Save {
        /// The file being written.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
}

impl PromptCache {
    /// The cache in `dir` (made, owner-only, if missing), holding at most
    /// `max_bytes`.
    pub fn open(dir: impl Into<PathBuf>, max_bytes: u64, identity: Identity) -> Result<Self, CacheError> {
        let dir = dir.into();
        make_private_dir(&dir).map_err(|source| CacheError::Folder {
            path: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            max_bytes,
            identity,
            own: None,
        })
    }

    /// The folder.
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry sharing the most leading tokens with `prompt`, when it
    /// shares at least `at_least`, verified against its check. Entries of
    /// another model or layout are passed over; damaged ones are removed.
    pub fn best_match(&self, prompt: &[i32], at_least: usize) -> Option<Hit> {
        let mut candidates: Vec<(usize, String, Check)> = self
            .entry_names()
            .into_iter()
            .filter_map(|name| {
                let check = self.read_check(&name)?;
                let shared = shared_prefix(&check.tokens, prompt);
                (shared >= at_least.max(1)).then_some((shared, name, check))
            })
            .collect();
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (shared, name, check) in candidates {
            let state = self.state_path(&name);
            if state_matches(&state, &check) {
                touch(&self.check_path(&name));
                return Some(Hit {
                    state,
                    tokens: check.tokens,
                    shared,
                });
            }
            tracing::warn!(entry = %name, "a prompt cache entry's state does not match its check; removed");
            self.remove(&name);
        }
        None
    }

    /// Saves the state of `tokens` as a new entry: `write_state` writes
    /// llama.cpp's state file to the path it is given. Replaces the entry
    /// this cache saved before, then evicts the least recently used
    /// entries over the size bound.
    pub fn save(
        &mut self,
        tokens: &[i32],
        write_state: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<(), CacheError> {
        let name = self.entry_name(tokens);
        let state = self.state_path(&name);
        let state_temporary = temporary(&state);
        let failed = |path: &Path, reason: String| CacheError::Save {
            path: path.to_path_buf(),
            reason,
        };
        let written = write_state(&state_temporary)
            .map_err(|reason| failed(&state_temporary, reason))
            .and_then(|()| {
                make_private(&state_temporary).map_err(|error| failed(&state_temporary, error.to_string()))?;
                digest_of(&state_temporary).map_err(|error| failed(&state_temporary, error.to_string()))
            });
        let (state_bytes, state_sha256) = match written {
            Ok(digest) => digest,
            Err(error) => {
                let _ = fs::remove_file(&state_temporary);
                return Err(error);
            }
        };
        let check = Check {
            format: FORMAT,
            identity: self.identity.clone(),
            tokens: tokens.to_vec(),
            state_bytes,
            state_sha256,
        };
        let check_path = self.check_path(&name);
        let check_temporary = temporary(&check_path);
        let saved = serde_json::to_vec(&check)
            .map_err(|error| failed(&check_path, error.to_string()))
            .and_then(|bytes| {
                fs::rename(&state_temporary, &state).map_err(|error| failed(&state, error.to_string()))?;
                write_private(&check_temporary, &bytes).map_err(|error| failed(&check_temporary, error.to_string()))?;
                fs::rename(&check_temporary, &check_path).map_err(|error| failed(&check_path, error.to_string()))
            });
        if let Err(error) = saved {
            let _ = fs::remove_file(&state_temporary);
            let _ = fs::remove_file(&check_temporary);
            self.remove(&name);
            return Err(error);
        }
        if let Some(previous) = self.own.replace(name.clone())
            && previous != name
        {
            self.remove(&previous);
        }
        self.evict(&name);
        Ok(())
    }

    /// Removes the least recently used entries until the folder holds at
    /// most the bound (never `keep`), and leftovers of killed processes:
    /// old temporary files and state files without a check.
    fn evict(&self, keep: &str) {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries: Vec<(SystemTime, u64, String)> = Vec::new();
        for item in listing.flatten().take(MAX_ENTRIES * 4) {
            let path = item.path();
            let Some(file) = path.file_name().and_then(|name| name.to_str()).map(str::to_owned) else {
                continue;
            };
            let Ok(metadata) = item.metadata() else {
                continue;
            };
            let modified = metadata.modified().unwrap_or(now);
            if file.starts_with('.') {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            if let Some(name) = file.strip_suffix(".state") {
                if !self.check_path(name).exists() && now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY
                {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            if let Some(name) = file.strip_suffix(".json") {
                let state_bytes = fs::metadata(self.state_path(name)).map_or(0, |state| state.len());
                entries.push((modified, metadata.len() + state_bytes, name.to_owned()));
            }
        }
        let mut total: u64 = entries.iter().map(|(_, bytes, _)| bytes).sum();
        entries.sort();
        for (_, bytes, name) in entries {
            if total <= self.max_bytes {
                break;
            }
            if name != keep {
                self.remove(&name);
                total = total.saturating_sub(bytes);
            }
        }
    }

    /// The names of the entries with a check file.
    fn entry_names(&self) -> Vec<String> {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        listing
            .flatten()
            .filter_map(|item| {
                let file = item.file_name();
                let name = file.to_str()?.strip_suffix(".json")?;
                (!name.starts_with('.')).then(|| name.to_owned())
            })
            .take(MAX_ENTRIES)
            .collect()
    }

    /// The check of `name`, when it is readable, whole and of this model
    /// and layout. A check that does not parse is removed with its state.
    fn read_check(&self, name: &str) -> Option<Check> {
        let path = self.check_path(name);
        let mut bytes = Vec::new();
        fs::File::open(&path)
            .and_then(|file| file.take(MAX_CHECK_BYTES + 1).read_to_end(&mut bytes))
            .ok()?;
        let check: Check = match serde_json::from_slice(&bytes) {
            Ok(check) if bytes.len() as u64 <= MAX_CHECK_BYTES => check,
            _ => {
                tracing::warn!(entry = %name, "a prompt cache entry's check is damaged; removed");
                self.remove(name);
                return None;
            }
        };
        (check.format == FORMAT && check.identity == self.identity).then_some(check)
    }

    /// The name of the entry holding `tokens` under this identity.
    fn entry_name(&self, tokens: &[i32]) -> String {
        let mut hasher = Sha256::new();
        hasher.update(serde_json::to_vec(&self.identity).unwrap_or_default());
        for token in tokens {
            hasher.update(token.to_le_bytes());
        }
        hex(&hasher.finalize()[..16])
    }

    fn state_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.state"))
    }

    fn check_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// Removes the entry `name`: its check first, so that it is never seen
    /// without its state.
    fn remove(&self, name: &str) {
        let _ = fs::remove_file(self.check_path(name));
        let _ = fs::remove_file(self.state_path(name));
    }
}

/// How many leading tokens `a` and `b` share.
fn shared_prefix(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Whether the state file has the size and digest its check gives.
fn state_matches(state: &Path, check: &Check) -> bool {
    if fs::metadata(state).map(|metadata| metadata.len()).ok() != Some(check.state_bytes) {
        return false;
    }
    digest_of(state).is_ok_and(|(bytes, digest)| bytes == check.state_bytes && digest == check.state_sha256)
}

/// The size and SHA-256 of a file.
fn digest_of(path: &Path) -> io::Result<(u64, String)> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        total += read as u64;
    }
    Ok((total, hex(&hasher.finalize())))
}

/// A unique temporary name beside `path`, hidden (a leading dot).
fn temporary(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let file = path.file_name().and_then(|name| name.to_str()).unwrap_or("entry");
    let serial = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{file}.{}.{serial}.tmp", std::process::id()))
}

/// Marks the entry as just used, for the least-recently-used eviction.
fn touch(path: &Path) {
    if let Ok(file) = fs::OpenOptions::new().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

#[cfg(unix)]
fn make_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn make_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
fn make_private(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn make_private(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    fs::write(path, bytes)
}

#[cfg(test)]
#[path = "prompt_cache_tests.rs"]
mod tests;
