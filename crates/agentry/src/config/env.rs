//! The environment, as a snapshot that tests can inject.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::HOME_VAR;

/// Environment variables, looked up by name: a snapshot, injectable so that
/// tests never depend on (or change) the real process environment. Its
/// `Debug` output lists the names only, never the values (they may hold
/// API keys).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not valid UTF-8 are skipped).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The value of `name`, when set and not blank.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|value| !value.trim().is_empty()).cloned()
    }

    /// Every variable, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `$AGENTRY_HOME`, else the user's data directory + `agentry`.
    pub fn agentry_home(&self) -> PathBuf {
        if let Some(home) = self.get(HOME_VAR) {
            return PathBuf::from(home);
        }
        self.data_dir().unwrap_or_else(std::env::temp_dir).join("agentry")
    }

    /// The user's data directory, as the platform names it: `%APPDATA%` on
    /// Windows, `~/Library/Application Support` on macOS, else
    /// `$XDG_DATA_HOME` (when absolute) or `~/.local/share`.
    fn data_dir(&self) -> Option<PathBuf> {
        let home = || self.get("HOME").or_else(|| self.get("USERPROFILE")).map(PathBuf::from);
        if cfg!(windows) {
            return self.get("APPDATA").map(PathBuf::from).or_else(home);
        }
        if cfg!(target_os = "macos") {
            return home().map(|home| home.join("Library/Application Support"));
        }
        self.get("XDG_DATA_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .or_else(|| home().map(|home| home.join(".local/share")))
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}
