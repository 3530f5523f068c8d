//! [`ConfigError`], and figment's errors turned into it: the source and
//! the key of every bad value.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Value};
use figment::{Figment, Metadata, Source};
use serde::de::DeserializeOwned;

use super::{AgentSettings, BudgetSettings};

/// A configuration problem: exit status 2, with a message naming the file
/// (or variable, or flag), the key, and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file named by `--config` or `$AGENTRY_CONFIG` does not exist.
    #[error("the configuration file {} (from {origin}) does not exist; fix the path or drop the setting", path.display())]
    FileNotFound {
        /// The path.
        path: PathBuf,
        /// `--config` or `$AGENTRY_CONFIG`.
        origin: String,
    },
    /// The file is not valid TOML, or could not be read.
    #[error("{origin}: {message}")]
    Unreadable {
        /// The file.
        origin: String,
        /// What the parser said.
        message: String,
    },
    /// A key has a value of the wrong type or outside its range.
    #[error("{origin}: invalid value for `{key}`: {message}")]
    InvalidValue {
        /// Where the value came from (file, environment variable, flag).
        origin: String,
        /// The dotted key, e.g. `agent.max_iterations`.
        key: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// A number outside the range of its key ([`NUMERIC_RANGES`](super::NUMERIC_RANGES)).
    #[error(
        "{origin}: `{key} = {value}` is out of range: use {min} to {max}{}",
        unit_after(unit)
    )]
    OutOfRange {
        /// Where the value came from (file, environment variable, flag).
        origin: String,
        /// The dotted key, e.g. `providers.openai.timeout_secs`.
        key: String,
        /// The value, as written.
        value: String,
        /// The smallest value allowed.
        min: f64,
        /// The largest value allowed.
        max: f64,
        /// What the number counts (`seconds`), or empty.
        unit: &'static str,
    },
    /// A key that does not exist (usually a typo).
    #[error("{origin}: unknown key `{key}`; valid keys here: {expected}")]
    UnknownKey {
        /// Where the key came from.
        origin: String,
        /// The dotted key.
        key: String,
        /// The keys that are valid at this place.
        expected: String,
    },
    /// A required key is absent.
    #[error("{origin}: missing key `{key}`{hint}")]
    MissingKey {
        /// Where the table came from.
        origin: String,
        /// The dotted key.
        key: String,
        /// An example of what to write, starting with `; `.
        hint: String,
    },
    /// `agent.provider` (or `agent.fallback`) names no provider Agentry knows.
    #[error("{origin}: unknown provider `{name}` in `{key}`; valid providers: {valid}")]
    UnknownProvider {
        /// Where the value came from.
        origin: String,
        /// The key: `agent.provider` or `agent.fallback`.
        key: &'static str,
        /// The value.
        name: String,
        /// The valid names.
        valid: String,
    },
    /// A known provider whose cargo feature is off in this build.
    #[error(
        "provider `{name}` is not compiled into this agentry: rebuild agent-app with the cargo feature `{feature}` \
         (e.g. `cargo build -p agent-app --features {feature}`); providers in this build: {available}"
    )]
    ProviderNotCompiled {
        /// The provider.
        name: String,
        /// The cargo feature that brings it in.
        feature: String,
        /// The providers this build has.
        available: String,
    },
    /// A part of agentry (a command, a tool domain, a table) whose cargo
    /// feature is off in this build.
    #[error(
        "{what} is not compiled into this agentry: rebuild agent-app with the cargo feature `{feature}` \
         (e.g. `cargo build -p agent-app --features {feature}`)"
    )]
    FeatureNotCompiled {
        /// What was asked for, e.g. "`agentry serve`" or "tool domain `web`".
        what: String,
        /// The cargo feature that brings it in.
        feature: &'static str,
    },
    /// `tools.enabled` names a domain that does not exist.
    #[error("{origin}: unknown tool domain `{name}` in `tools.enabled`; available domains: {available}")]
    UnknownToolDomain {
        /// Where the list came from.
        origin: String,
        /// The unknown name.
        name: String,
        /// The valid names.
        available: String,
    },
    /// A provider could not be set up from its configuration (missing key,
    /// missing endpoint, model not known). The message says what to set.
    #[error("{provider}: {message}")]
    Provider {
        /// The provider.
        provider: String,
        /// What to set.
        message: String,
    },
    /// A tool domain could not be set up from its table.
    #[error("tool domain `{domain}`: {message}")]
    Tool {
        /// The domain.
        domain: String,
        /// What to fix.
        message: String,
    },
    /// A flag does not apply to the chosen provider.
    #[error("{0}")]
    Unsupported(String),
    /// The working directory's `agentry.toml` sets keys that run programs
    /// or send secrets, and the user has not trusted it (`agentry trust`).
    #[error(
        "{} is not trusted, and it sets keys that run programs or send secrets:\n{}\nnothing was started or sent. \
         Read the file; if you trust it, run `agentry trust{}` (a change to the file withdraws the trust), \
         or name it with --config",
        file.display(),
        keys.iter().map(|key| format!("  - {key}")).collect::<Vec<_>>().join("\n"),
        changed.then_some(" again (the file changed since it was trusted)").unwrap_or_default()
    )]
    Untrusted {
        /// The file.
        file: PathBuf,
        /// Each sensitive key it sets and what it would do.
        keys: Vec<String>,
        /// The file was trusted before, with other contents.
        changed: bool,
    },
}

impl ConfigError {
    /// `what` needs the cargo feature `feature`, which this build lacks.
    pub fn not_compiled(what: impl Into<String>, feature: &'static str) -> Self {
        Self::FeatureNotCompiled {
            what: what.into(),
            feature,
        }
    }
}

impl ConfigError {
    /// The provider `kind` is not in this build: the error naming its
    /// feature and the providers there are.
    pub fn provider_not_compiled(kind: crate::ProviderKind) -> Self {
        Self::ProviderNotCompiled {
            name: kind.name().to_owned(),
            feature: kind.feature().to_owned(),
            available: crate::ProviderKind::compiled_names(),
        }
    }
}

impl From<crate::NotCompiled> for ConfigError {
    fn from(error: crate::NotCompiled) -> Self {
        Self::not_compiled(error.what, error.feature)
    }
}

/// `unit` after a range, with its space (nothing for no unit).
fn unit_after(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    }
}

/// Where a value came from, for an error: the file, the variable or the flag.
pub(super) fn describe(metadata: &Metadata, file: Option<&Path>) -> String {
    if let Some(path) = metadata.source.as_ref().and_then(Source::file_path) {
        return path.display().to_string();
    }
    let name = metadata.name.to_string();
    if name.starts_with("environment variable") || name.starts_with("command-line flag") {
        name
    } else {
        file.map_or_else(|| "the built-in defaults".to_owned(), |path| path.display().to_string())
    }
}

/// The field names of the struct `T` deserialises (serde's `FIELDS`),
/// found by asking it to deserialise from a probe that only records them.
pub(super) fn struct_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error as _, Visitor, value::Error};

    struct Probe<'a>(&'a mut &'static [&'static str]);

    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            *self.0 = fields;
            Err(Error::custom("probed"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// A table with flattened parts (`[agent]`'s runner options, the budget's
/// limits) reports a bad value at the table, not at its key: finds the key
/// whose value alone fails, so that the error names it.
pub(super) fn locate_flattened(figment: &Figment, error: figment::Error) -> figment::Error {
    fn culprit<T: DeserializeOwned>(figment: &Figment, table: &str) -> Option<String> {
        let Ok(Value::Dict(tag, dict)) = figment.find_value(table) else {
            return None;
        };
        dict.into_iter().find_map(|(key, value)| {
            let alone = Value::Dict(tag, Dict::from([(key.clone(), value)]));
            alone.deserialize::<T>().is_err().then(|| format!("{table}.{key}"))
        })
    }
    let mut error = error
        .into_iter()
        .next()
        .unwrap_or_else(|| figment::Error::from("unknown error"));
    let located = match error.path.join(".").as_str() {
        "agent" => culprit::<AgentSettings>(figment, "agent"),
        "agent.budget" => culprit::<BudgetSettings>(figment, "agent.budget"),
        _ => None,
    };
    if let Some(key) = located {
        error.metadata = figment.find_metadata(&key).cloned();
        error.path = key.split('.').map(str::to_owned).collect();
    }
    error
}

/// A figment error of the whole configuration as a [`ConfigError`] naming
/// the source and the key.
pub(super) fn from_figment(error: &figment::Error) -> ConfigError {
    let origin = error.metadata.as_ref().map_or_else(
        || "configuration".to_owned(),
        |metadata| describe(metadata, None).replace("the built-in defaults", "configuration"),
    );
    config_error(&error.kind, &error.path, origin)
}

/// The field named by serde's "unknown field `x`" message.
fn flattened_unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// The error of `kind` at the key `path`, set in `origin`.
pub(super) fn config_error(kind: &figment::error::Kind, path: &[String], origin: String) -> ConfigError {
    let key = path.join(".");
    let join = |field: &str| {
        if key.is_empty() {
            field.to_owned()
        } else if path.last().is_some_and(|last| last == field) {
            key.clone()
        } else {
            format!("{key}.{field}")
        }
    };
    // A table with flattened settings (e.g. a provider's HTTP options)
    // reports an unknown key as a message, without the valid ones.
    if let figment::error::Kind::Message(message) = kind
        && let Some(field) = flattened_unknown_field(message)
    {
        return ConfigError::UnknownKey {
            origin,
            key: join(field),
            expected: "those in the annotated agentry.toml of the README".to_owned(),
        };
    }
    match kind {
        figment::error::Kind::UnknownField(field, expected) => ConfigError::UnknownKey {
            origin,
            key: join(field),
            expected: expected.join(", "),
        },
        figment::error::Kind::MissingField(field) => ConfigError::MissingKey {
            hint: missing_hint(&join(field)),
            origin,
            key: join(field),
        },
        kind if key.is_empty() => ConfigError::Unreadable {
            origin,
            message: kind.to_string(),
        },
        kind => ConfigError::InvalidValue {
            origin,
            key,
            message: kind.to_string(),
        },
    }
}

fn missing_hint(key: &str) -> String {
    match key {
        "tools.sql.path" => {
            "; set it to an existing SQLite file, e.g. `[tools.sql] path = \"data/shop.sqlite\"`".to_owned()
        }
        key if key.starts_with("catalog.") => {
            "; a new catalog entry needs at least `input` and `output` prices per million tokens".to_owned()
        }
        _ => String::new(),
    }
}
