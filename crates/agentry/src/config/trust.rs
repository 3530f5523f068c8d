//! Trust in an `agentry.toml` found in the working directory.
//!
//! A file named by `--config` or `$AGENTRY_CONFIG` is the user's own choice
//! and is used as it is. One found in the working directory came with
//! whatever is being worked on (a cloned repository, say), so it may set
//! anything except the keys that run a program or send the user's secrets
//! to a place of the file's choosing ([`sensitive_keys`]):
//!
//! - an MCP server's `command` (`[mcp.servers.NAME]`), which starts it;
//! - `telemetry.otlp_endpoint`, which receives spans, metrics and the
//!   `$OTEL_EXPORTER_OTLP_HEADERS` of the user's environment;
//! - a Brave web search `api_key_env` or `base_url`, which route the user's
//!   search key;
//! - the chosen provider's `base_url`, `endpoint` or `api_key_env` when they
//!   would send the user's API key to another host, over plain HTTP, or
//!   send another variable as the key ([`provider_key_routes`](super::provider_key_routes)).
//!
//! Such a file is refused with [`ConfigError::Untrusted`], which names each
//! key, before anything starts or is sent. `agentry trust` records the
//! file's path and SHA-256 in `$AGENTRY_HOME/trusted.json` (owner-only); any
//! change to the file withdraws the trust, as with direnv and mise.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ConfigError, Env, Overrides, Settings};

/// The file in `$AGENTRY_HOME` that lists the trusted files.
pub const TRUST_FILE_NAME: &str = "trusted.json";

impl Settings {
    /// Loads the configuration for these flags, environment and working
    /// directory ([`Settings::read`]), and refuses a working-directory
    /// `agentry.toml` that sets keys which run programs or send secrets
    /// until the user trusts it.
    pub fn load(overrides: &Overrides, env: &Env, cwd: &Path) -> Result<Self, ConfigError> {
        let settings = Self::read(overrides, env, cwd)?;
        check(&settings, env)?;
        Ok(settings)
    }
}

/// Each key of the working directory's `agentry.toml` that runs a program
/// or sends a secret, with what it would do; empty for any other file.
pub fn sensitive_keys(settings: &Settings, env: &Env) -> Vec<String> {
    if settings.file.is_none() || !settings.file_is_local {
        return Vec::new();
    }
    let mut keys = Vec::new();
    for name in settings.config.mcp.servers.keys() {
        let key = format!("mcp.servers.{name}.command");
        if settings.set_by_local_file(&key) {
            let command = settings.string_at(&key).map(|(command, _)| command).unwrap_or_default();
            keys.push(format!("{key} starts the program `{command}`"));
        }
    }
    if let Some((endpoint, true)) = settings.string_at("telemetry.otlp_endpoint") {
        keys.push(format!(
            "telemetry.otlp_endpoint sends traces and metrics, with $OTEL_EXPORTER_OTLP_HEADERS if set, to {endpoint}"
        ));
    }
    if let Some((dir, true)) = settings.string_at("providers.llama.prompt_cache_dir") {
        // A folder that came with the file could hold saved states made to
        // steer the model (they are loaded without being evaluated).
        keys.push(format!(
            "providers.llama.prompt_cache_dir loads the local model's saved state from {dir}"
        ));
    }
    keys.extend(search_key_routes(settings));
    keys.extend(super::provider_key_routes(settings, env));
    keys
}

/// The Brave search key's route, where the local file chose it: the
/// variable read as the key, and the host it is sent to. A key the file
/// holds itself is its own business.
fn search_key_routes(settings: &Settings) -> Vec<String> {
    let is_brave = settings
        .string_at("tools.web.search.backend")
        .is_some_and(|(backend, _)| backend == "brave");
    if !is_brave || settings.set_by_local_file("tools.web.search.api_key") {
        return Vec::new();
    }
    let variable = settings
        .string_at("tools.web.search.api_key_env")
        .map_or_else(|| "BRAVE_API_KEY".to_owned(), |(variable, _)| variable);
    let mut keys = Vec::new();
    if settings.set_by_local_file("tools.web.search.api_key_env") {
        keys.push(format!(
            "tools.web.search.api_key_env sends ${variable} as the search key"
        ));
    }
    if let Some((address, true)) = settings.string_at("tools.web.search.base_url") {
        keys.push(format!("tools.web.search.base_url sends ${variable} to {address}"));
    }
    keys
}

/// Refuses the working directory's `agentry.toml` when it sets
/// [`sensitive_keys`] and is not trusted with its present contents.
pub fn check(settings: &Settings, env: &Env) -> Result<(), ConfigError> {
    let Some(file) = settings.file.as_ref().filter(|_| settings.file_is_local) else {
        return Ok(());
    };
    let keys = sensitive_keys(settings, env);
    if keys.is_empty() {
        return Ok(());
    }
    let digest = file_digest(file).map_err(|error| ConfigError::Unreadable {
        origin: file.display().to_string(),
        message: error.to_string(),
    })?;
    let recorded = TrustStore::in_home(&settings.home).recorded(file);
    if recorded.as_deref() == Some(digest.as_str()) {
        return Ok(());
    }
    Err(ConfigError::Untrusted {
        file: file.clone(),
        keys,
        changed: recorded.is_some(),
    })
}

/// The SHA-256 of a file's contents, in lowercase hex.
pub fn file_digest(path: &Path) -> io::Result<String> {
    let bytes = fs::read(path)?;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(&bytes) {
        use std::fmt::Write as _;
        let _ = write!(hex, "{byte:02x}");
    }
    Ok(hex)
}

/// The trusted files: `$AGENTRY_HOME/trusted.json`, each file's absolute
/// path with the SHA-256 of the contents it was trusted with.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

/// Why the trust list could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    /// Reading or writing the file failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The error.
        source: io::Error,
    },
    /// The file is not a trust list.
    #[error("{} is not a list of trusted files ({message}); delete it and trust the files again", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
}

impl TrustStoreError {
    fn io(context: String, source: io::Error) -> Self {
        Self::Io { context, source }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    files: BTreeMap<PathBuf, String>,
}

impl TrustStore {
    /// The store of `home` (`$AGENTRY_HOME`).
    pub fn in_home(home: &Path) -> Self {
        Self {
            path: home.join(TRUST_FILE_NAME),
        }
    }

    /// The digest `file` was trusted with, if it was. A store that cannot
    /// be read trusts nothing.
    pub fn recorded(&self, file: &Path) -> Option<String> {
        let files = self.read().ok()?.files;
        files.get(&absolute(file)).cloned()
    }

    /// Every trusted file with its recorded digest.
    ///
    /// # Errors
    ///
    /// The store exists but cannot be read or is not a trust list.
    pub fn list(&self) -> Result<BTreeMap<PathBuf, String>, TrustStoreError> {
        Ok(self.read()?.files)
    }

    /// Records `file` as trusted with `digest`.
    ///
    /// # Errors
    ///
    /// The store cannot be read or written.
    pub fn trust(&self, file: &Path, digest: &str) -> Result<(), TrustStoreError> {
        let mut list = self.read()?;
        list.files.insert(absolute(file), digest.to_owned());
        self.write(&list)
    }

    /// Forgets `file`; whether it was trusted.
    ///
    /// # Errors
    ///
    /// The store cannot be read or written.
    pub fn revoke(&self, file: &Path) -> Result<bool, TrustStoreError> {
        let mut list = self.read()?;
        let was = list.files.remove(&absolute(file)).is_some();
        if was {
            self.write(&list)?;
        }
        Ok(was)
    }

    fn read(&self) -> Result<TrustFile, TrustStoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(TrustFile::default()),
            Err(error) => return Err(TrustStoreError::io(format!("reading {}", self.path.display()), error)),
        };
        serde_json::from_str(&text).map_err(|error| TrustStoreError::Damaged {
            path: self.path.clone(),
            message: error.to_string(),
        })
    }

    /// Writes the list whole (a temporary file renamed over the old one),
    /// readable by its owner only.
    fn write(&self, list: &TrustFile) -> Result<(), TrustStoreError> {
        let context = |action: &str| format!("{action} {}", self.path.display());
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(|error| TrustStoreError::io(context("creating the folder of"), error))?;
        }
        let text = serde_json::to_string_pretty(list)
            .map_err(|error| TrustStoreError::io(context("encoding"), error.into()))?;
        let partial = self.path.with_extension("json.partial");
        write_private(&partial, text.as_bytes()).map_err(|error| TrustStoreError::io(context("writing"), error))?;
        fs::rename(&partial, &self.path).map_err(|error| TrustStoreError::io(context("replacing"), error))
    }
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    fs::write(path, bytes)
}

/// `path` made absolute, links resolved where it exists.
fn absolute(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CONFIG_FILE_NAME;

    fn settings_in(dir: &Path, toml: &str, env: &[(&str, &str)], explicit: bool) -> (Settings, Env) {
        let path = dir.join(CONFIG_FILE_NAME);
        fs::write(&path, toml).unwrap_or_else(|e| panic!("{e}"));
        let home = dir.join("home").display().to_string();
        let env = Env::from_pairs(env.iter().copied().chain([("AGENTRY_HOME", home.as_str())]));
        let overrides = Overrides {
            config: explicit.then_some(path),
            ..Overrides::default()
        };
        let settings = Settings::read(&overrides, &env, dir).unwrap_or_else(|e| panic!("{e}"));
        (settings, env)
    }

    const MCP: &str = "[mcp.servers.x]\ncommand = \"id\"\n";

    #[test]
    fn a_local_files_program_is_refused_until_trusted_and_again_once_changed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (settings, env) = settings_in(dir.path(), MCP, &[], false);
        assert_eq!(
            sensitive_keys(&settings, &env),
            ["mcp.servers.x.command starts the program `id`"]
        );
        let refused = check(&settings, &env);
        assert!(
            matches!(&refused, Err(ConfigError::Untrusted { changed: false, keys, .. }) if keys.len() == 1),
            "{refused:?}"
        );

        let file = dir.path().join(CONFIG_FILE_NAME);
        let store = TrustStore::in_home(&settings.home);
        let digest = file_digest(&file).unwrap_or_else(|e| panic!("{e}"));
        store.trust(&file, &digest).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(check(&settings, &env), Ok(()));

        fs::write(&file, format!("{MCP}args = [\"-u\"]\n")).unwrap_or_else(|e| panic!("{e}"));
        let refused = check(&settings, &env);
        assert!(
            matches!(refused, Err(ConfigError::Untrusted { changed: true, .. })),
            "{refused:?}"
        );
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("changed since it was trusted"), "{message}");

        assert!(store.revoke(&file).unwrap_or_else(|e| panic!("{e}")));
        assert!(!store.revoke(&file).unwrap_or_else(|e| panic!("{e}")), "only once");
        assert_eq!(store.recorded(&file), None);
    }

    #[test]
    fn a_file_the_user_named_or_a_setting_from_elsewhere_needs_no_trust() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (settings, env) = settings_in(dir.path(), MCP, &[], true);
        assert!(sensitive_keys(&settings, &env).is_empty(), "--config");
        assert_eq!(check(&settings, &env), Ok(()));

        let (settings, env) = settings_in(
            dir.path(),
            "[agent]\nmax_iterations = 3\n",
            &[("AGENTRY_TELEMETRY__OTLP_ENDPOINT", "http://localhost:4318")],
            false,
        );
        assert!(
            sensitive_keys(&settings, &env).is_empty(),
            "the user's own environment: {:?}",
            sensitive_keys(&settings, &env)
        );
    }

    #[test]
    fn a_local_files_prompt_cache_folder_needs_trust() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let toml = "[providers.llama]\nprompt_cache_dir = \"cache\"\n";
        let (settings, env) = settings_in(dir.path(), toml, &[], false);
        assert_eq!(
            sensitive_keys(&settings, &env),
            ["providers.llama.prompt_cache_dir loads the local model's saved state from cache"]
        );
        let (settings, env) = settings_in(dir.path(), toml, &[], true);
        assert!(sensitive_keys(&settings, &env).is_empty(), "--config");
    }

    #[test]
    fn telemetry_and_search_key_routes_are_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let toml = "[telemetry]\notlp_endpoint = \"https://collector.example\"\n\
                    [tools.web.search]\nbackend = \"brave\"\nbase_url = \"https://search.example\"\n";
        let (settings, env) = settings_in(dir.path(), toml, &[], false);
        let keys = sensitive_keys(&settings, &env);
        assert_eq!(keys.len(), 2, "{keys:?}");
        assert!(keys[0].starts_with("telemetry.otlp_endpoint") && keys[0].contains("collector.example"));
        assert_eq!(
            keys[1],
            "tools.web.search.base_url sends $BRAVE_API_KEY to https://search.example"
        );

        let own_key = format!("{toml}api_key = \"the-files-own\"\n");
        let (settings, env) = settings_in(dir.path(), &own_key, &[], false);
        assert_eq!(
            sensitive_keys(&settings, &env).len(),
            1,
            "a key the file holds is its own"
        );
    }

    #[test]
    fn a_damaged_trust_list_trusts_nothing_and_says_so_when_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = TrustStore::in_home(dir.path());
        fs::write(dir.path().join(TRUST_FILE_NAME), "{not json").unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join(CONFIG_FILE_NAME);
        assert_eq!(store.recorded(&file), None);
        let error = store
            .trust(&file, "abc")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("not a list of trusted files"), "{error}");
    }
}
