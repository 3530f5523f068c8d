//! The configuration's tests: layers, origins, checks and the catalog.

use std::fs;

use std::path::{Path, PathBuf};

use super::*;
use crate::core::Usage;
use crate::runner::Grounding;

fn load_in(
    dir: &Path,
    toml: Option<&str>,
    env: &[(&str, &str)],
    overrides: &Overrides,
) -> Result<Settings, ConfigError> {
    if let Some(toml) = toml {
        fs::write(dir.join(CONFIG_FILE_NAME), toml).unwrap_or_else(|e| panic!("{e}"));
    }
    Settings::read(overrides, &Env::from_pairs(env.iter().copied()), dir)
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn telemetry_is_off_by_default_and_read_from_its_table() {
    let dir = tempdir();
    let settings = load_in(dir.path(), None, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.config.telemetry, TelemetrySettings::default());
    assert_eq!(settings.config.telemetry.otlp_endpoint, None);
    let toml = "[telemetry]\notlp_endpoint = \"http://localhost:4318\"\nservice_name = \"bot\"\n\
                [telemetry.headers]\nauthorization = \"Bearer t0ken\"\n";
    let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let telemetry = &settings.config.telemetry;
    assert_eq!(telemetry.otlp_endpoint.as_deref(), Some("http://localhost:4318"));
    assert_eq!(telemetry.protocol, "http/protobuf");
    assert_eq!(telemetry.service_name, "bot");
    assert_eq!(telemetry.headers["authorization"], "Bearer t0ken");
    assert!(!format!("{telemetry:?}").contains("t0ken"), "Debug hides header values");
}

#[test]
fn bad_telemetry_values_name_their_key() {
    for (toml, key) in [
        (
            "[telemetry]\notlp_endpoint = \"localhost:4318\"\n",
            "telemetry.otlp_endpoint",
        ),
        (
            "[telemetry]\notlp_endpoint = \"ftp://collector\"\n",
            "telemetry.otlp_endpoint",
        ),
        ("[telemetry]\nprotocol = \"grpc\"\n", "telemetry.protocol"),
        ("[telemetry]\nservice_name = \" \"\n", "telemetry.service_name"),
        ("[telemetry.headers]\n\"bad header\" = \"x\"\n", "telemetry.headers"),
        (
            "[telemetry]\nmetrics_interval_secs = 0\n",
            "telemetry.metrics_interval_secs",
        ),
        ("[telemetry]\nendpoint = \"http://localhost:4318\"\n", "endpoint"),
    ] {
        let dir = tempdir();
        let error = load_in(dir.path(), Some(toml), &[], &Overrides::default())
            .err()
            .unwrap_or_else(|| panic!("{toml} must be rejected"));
        assert!(error.to_string().contains(key), "{toml}: {error}");
    }
}

#[test]
fn no_file_gives_the_offline_defaults() {
    let dir = tempdir();
    let settings = load_in(dir.path(), None, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.file, None);
    assert_eq!(settings.config.agent.provider, "llama");
    assert_eq!(settings.config.agent.run.max_iterations, 10);
    #[cfg(feature = "travel")]
    assert_eq!(settings.config.tools.enabled, ["math", "travel"]);
    assert_eq!(settings.config.tools.enabled, default_domains());
    assert!(settings.config.catalog.contains_key("gpt-4o-mini"));
}

#[test]
fn grounding_is_on_for_the_local_model_unless_the_file_says_otherwise() {
    let dir = tempdir();
    let load =
        |toml: Option<&str>| load_in(dir.path(), toml, &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(load(None).grounding(), Grounding::On, "llama, the default");
    assert_eq!(load(None).agent_config().run.grounding, Grounding::On);
    assert!(load(None).agent_config().run.reask_repeated_calls, "on by default");
    let turn = |settings: &Settings| settings.agent_config().run.budget.deadline.map(|d| d.as_secs_f64());
    assert_eq!(
        turn(&load(None)),
        Some(LLAMA_MAX_TURN_SECS),
        "a turn on llama is bounded"
    );
    assert_eq!(turn(&load(Some("[agent]\nprovider = \"openai\"\n"))), None);
    assert_eq!(turn(&load(Some("[agent]\nmax_turn_secs = 0\n"))), None, "0: no limit");
    let both = load(Some(
        "[agent]\nmax_turn_secs = 30\n[agent.budget]\ndeadline_secs = 20\n",
    ));
    assert_eq!(turn(&both), Some(20.0), "the shorter applies");
    let hosted = load(Some("[agent]\nprovider = \"openai\"\n"));
    assert_eq!(hosted.grounding(), Grounding::Off);
    let hosted_on = load(Some("[agent]\nprovider = \"openai\"\ngrounding = true\n"));
    assert_eq!(hosted_on.agent_config().run.grounding, Grounding::On);
    let local_off = load(Some("[agent]\ngrounding = false\nreask_repeated_calls = false\n"));
    assert!(!local_off.agent_config().run.reask_repeated_calls);
    assert_eq!(local_off.grounding(), Grounding::Off);
}

#[test]
fn flags_beat_environment_beats_file() {
    let dir = tempdir();
    let toml = "[agent]\nprovider = \"openai\"\nmodel = \"from-file\"\nmax_iterations = 4\n";
    let env = [("AGENTRY_MODEL", "from-env"), ("AGENTRY_AGENT__MAX_TOKENS", "512")];
    let settings = load_in(dir.path(), Some(toml), &env, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.config.agent.provider, "openai");
    assert_eq!(settings.config.agent.model.as_deref(), Some("from-env"));
    assert_eq!(settings.config.agent.run.max_iterations, 4);
    assert_eq!(settings.config.agent.request.max_tokens, Some(512));
    assert!(settings.origin("agent.model").contains("AGENTRY_MODEL"));

    let overrides = Overrides {
        model: Some("from-flag".into()),
        max_iterations: Some(2),
        tools: Some(vec!["math".into()]),
        ..Overrides::default()
    };
    let settings = load_in(dir.path(), None, &env, &overrides).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.config.agent.model.as_deref(), Some("from-flag"));
    assert_eq!(settings.config.agent.run.max_iterations, 2);
    assert_eq!(settings.config.tools.enabled, ["math"]);
    assert_eq!(settings.origin("agent.model"), "command-line flag --model");
}

#[test]
fn the_config_file_comes_from_the_flag_then_the_variable() {
    let dir = tempdir();
    let other = dir.path().join("other.toml");
    fs::write(&other, "[agent]\nmax_iterations = 7\n").unwrap_or_else(|e| panic!("{e}"));
    let env = [("AGENTRY_CONFIG", other.to_str().unwrap_or_default())];
    let settings = load_in(dir.path(), None, &env, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.config.agent.run.max_iterations, 7);
    assert_eq!(settings.file.as_deref(), Some(other.as_path()));

    let missing = Overrides {
        config: Some("nope.toml".into()),
        ..Overrides::default()
    };
    let error = load_in(dir.path(), None, &env, &missing)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("nope.toml") && error.contains("--config"), "{error}");
}

#[test]
fn a_malformed_value_names_the_file_and_the_key() {
    let dir = tempdir();
    let error = load_in(
        dir.path(),
        Some("[agent]\nmax_iterations = \"ten\"\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("agentry.toml"), "{error}");
    assert!(error.contains("`agent.max_iterations`"), "{error}");
}

#[test]
fn a_typo_names_the_key_and_the_valid_ones() {
    let dir = tempdir();
    let error = load_in(
        dir.path(),
        Some("[agent]\nmax_iteration = 3\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("unknown key `agent.max_iteration`"), "{error}");
    assert!(error.contains("max_iterations"), "{error}");
}

#[test]
fn broken_toml_names_the_file() {
    let dir = tempdir();
    let error = load_in(dir.path(), Some("[agent\nprovider = 1"), &[], &Overrides::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("agentry.toml"), "{error}");
}

#[test]
fn an_unknown_provider_lists_the_valid_ones_and_the_source() {
    let dir = tempdir();
    let error = load_in(
        dir.path(),
        None,
        &[("AGENTRY_PROVIDER", "openia")],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("environment variable AGENTRY_PROVIDER"), "{error}");
    assert!(error.contains("unknown provider `openia`"), "{error}");
    assert!(
        error.contains("llama, openai, azure-openai, openai-compatible, anthropic, gemini, ollama"),
        "{error}"
    );
}

#[cfg(all(feature = "travel", feature = "sql", feature = "web"))]
#[test]
fn an_unknown_tool_domain_lists_the_available_ones() {
    let dir = tempdir();
    let error = load_in(
        dir.path(),
        Some("[tools]\nenabled = [\"math\", \"wether\"]\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("unknown tool domain `wether`"), "{error}");
    assert!(error.contains("math, travel, sql, web"), "{error}");
}

#[test]
fn catalog_tables_merge_field_by_field_over_the_shipped_one() {
    let dir = tempdir();
    let toml = "[catalog.\"gpt-4o-mini\"]\ninput = 1.0\n\n[catalog.\"my-model\"]\nprovider = \"openai-compatible\"\ninput = 0.5\noutput = 1.5\n";
    let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let catalog = settings.catalog();
    let mini = catalog.get("gpt-4o-mini").map(|info| info.pricing);
    assert_eq!(mini.map(|p| p.input_per_million), Some(1.0));
    assert_eq!(mini.map(|p| p.output_per_million), Some(0.6));
    assert_eq!(
        catalog.get("my-model").map(|info| info.pricing.output_per_million),
        Some(1.5)
    );

    let error = load_in(
        dir.path(),
        Some("[catalog.\"x\"]\ninput = 1.0\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("missing key `catalog.x.output`"), "{error}");
}

#[test]
fn provider_tables_are_checked_and_hidden_from_debug() {
    let dir = tempdir();
    let toml = "[providers.openai]\napi_key = \"sk-hidden-in-debug\"\nmax_retries = 1\n\n\
                [tools.web.search]\nbackend = \"brave\"\napi_key = \"brave-hidden-in-debug\"\n";
    let settings = load_in(dir.path(), Some(toml), &[], &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let debug = format!("{settings:?}");
    assert!(
        !debug.contains("sk-hidden-in-debug") && !debug.contains("brave-hidden-in-debug"),
        "{debug}"
    );
    assert!(debug.contains("api_key"), "the keys are listed: {debug}");

    let error = load_in(
        dir.path(),
        Some("[providers.openia]\nmax_retries = 1\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(error.contains("unknown key `providers.openia`"), "{error}");
}

#[test]
fn relative_paths_in_a_file_are_relative_to_it() {
    let dir = tempdir();
    let settings = load_in(
        dir.path(),
        Some("[tools.sql]\npath = \"shop.sqlite\"\n"),
        &[],
        &Overrides::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        settings.resolve_path("tools.sql.path", Path::new("shop.sqlite")),
        dir.path().join("shop.sqlite")
    );
}

#[test]
fn numbers_out_of_range_are_refused_with_the_key() {
    let dir = tempdir();
    let cases = [
        ("[agent]\nmax_iterations = 0\n", "agent.max_iterations"),
        ("[agent]\ntemperature = 9.0\n", "agent.temperature"),
        ("[agent.budget]\ndeadline_secs = -1.0\n", "agent.budget.deadline_secs"),
        ("[agent]\nmax_turn_secs = -5.0\n", "agent.max_turn_secs"),
        ("[agent.budget]\ndeadline_secs = 1e300\n", "agent.budget.deadline_secs"),
        ("[agent]\ntemperature = nan\n", "agent.temperature"),
        ("[tools]\ntimeout_secs = inf\n", "tools.timeout_secs"),
    ];
    for (toml, key) in cases {
        let error = load_in(dir.path(), Some(toml), &[], &Overrides::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains(key), "{toml}: {error}");
    }
}

#[test]
fn the_shipped_catalog_parses_and_prices_are_sane() {
    let entries = parse_catalog(SHIPPED_CATALOG).unwrap_or_else(|error| panic!("data/models.toml: {error}"));
    assert!(entries.len() >= 20, "{}", entries.len());
    for (name, entry) in &entries {
        assert!(entry.prices_are_valid(), "{name}");
        assert!(!entry.provider.is_empty(), "{name} has no provider");
        if let Some(cached) = entry.cached_input {
            assert!(cached <= entry.input, "{name}: cached input dearer than input");
        }
    }
    for provider in ["openai", "anthropic", "gemini", "llama"] {
        assert!(
            entries.values().any(|entry| entry.provider == provider),
            "no {provider} model"
        );
    }
}

#[test]
fn local_models_are_free_and_remote_ones_are_not() {
    let catalog = to_catalog(&shipped_entries());
    let usage = Usage::new(1_000_000, 1_000_000);
    assert_eq!(catalog.cost("qwen2.5-coder-0.5b", &usage), Some(0.0));
    let cost = catalog.cost("gpt-4o-mini-2024-07-18", &usage).unwrap_or_default();
    assert!((cost - 0.75).abs() < 1e-9, "{cost}");
    assert!(catalog.cost("claude-sonnet-5-5", &usage).unwrap_or_default() > 0.0);
    assert!(catalog.cost("gemini-2.5-flash", &usage).unwrap_or_default() > 0.0);
}

#[test]
fn blank_values_count_as_unset() {
    let env = Env::from_pairs([("A", "1"), ("B", "  ")]);
    assert_eq!(env.get("A").as_deref(), Some("1"));
    assert_eq!(env.get("B"), None);
    assert_eq!(env.get("C"), None);
}

#[test]
fn debug_shows_names_not_values() {
    let env = Env::from_pairs([("OPENAI_API_KEY", "sk-secret-value")]);
    let debug = format!("{env:?}");
    assert!(debug.contains("OPENAI_API_KEY"));
    assert!(!debug.contains("sk-secret-value"));
}

#[test]
fn home_comes_from_the_variable() {
    let env = Env::from_pairs([(HOME_VAR, "/data/agentry")]);
    assert_eq!(env.agentry_home(), PathBuf::from("/data/agentry"));
}

#[cfg(all(unix, not(target_os = "macos")))]
#[test]
fn without_the_variable_home_is_in_the_users_data_directory() {
    let env = Env::from_pairs([("HOME", "/home/u")]);
    assert_eq!(env.agentry_home(), PathBuf::from("/home/u/.local/share/agentry"));
    let env = Env::from_pairs([("HOME", "/home/u"), ("XDG_DATA_HOME", "/data")]);
    assert_eq!(env.agentry_home(), PathBuf::from("/data/agentry"));
    let env = Env::from_pairs([("HOME", "/home/u"), ("XDG_DATA_HOME", "relative")]);
    assert_eq!(env.agentry_home(), PathBuf::from("/home/u/.local/share/agentry"));
}

/// The key `range` names in one table of its place, and an `agentry.toml`
/// setting it to `value` (written as TOML).
fn setting(range: &KeyRange, value: &str) -> (String, String) {
    let (table, name, others) = match range.place {
        Place::Fixed => {
            let (table, name) = range.key.rsplit_once('.').unwrap_or(("", range.key));
            (table.to_owned(), name, String::new())
        }
        Place::HttpProvider => ("providers.openai".to_owned(), range.key, String::new()),
        Place::McpServer => (
            "mcp.servers.srv".to_owned(),
            range.key,
            "url = \"http://127.0.0.1:9/mcp\"\n".to_owned(),
        ),
        // A dot in the model's name: the key is found all the same.
        Place::CatalogEntry => {
            let prices = ["input", "output"].into_iter().filter(|price| *price != range.key);
            let others = prices
                .map(|price| format!("{price} = 1.0\n"))
                .collect::<Vec<_>>()
                .concat();
            ("catalog.\"my-model-1.5\"".to_owned(), range.key, others)
        }
    };
    let key = format!("{}.{name}", table.replace('"', ""));
    (key, format!("[{table}]\n{others}{name} = {value}\n"))
}

/// `value` as TOML for `range`'s key: an integer or a float.
fn written(range: &KeyRange, value: f64) -> String {
    if range.integer {
        format!("{}", value as i64)
    } else {
        format!("{value:?}")
    }
}

#[test]
fn every_numeric_key_is_refused_outside_its_range_naming_the_key_and_range_and_accepted_at_its_ends() {
    let dir = tempdir();
    let load = |toml: &str| load_in(dir.path(), Some(toml), &[], &Overrides::default());
    for range in NUMERIC_RANGES {
        assert!(range.min < range.max, "{range:?}");
        let mut outside = vec![range.max + 1.0];
        // An unsigned whole number cannot be below 0: its type refuses it.
        if !(range.integer && range.min == 0.0) {
            outside.push(if range.integer || range.min <= 0.0 {
                range.min - 1.0
            } else {
                range.min / 2.0
            });
        }
        for value in outside {
            let (key, toml) = setting(range, &written(range, value));
            let error = load(&toml).err();
            let Some(ConfigError::OutOfRange {
                ref origin,
                key: ref named,
                ..
            }) = error
            else {
                panic!("{toml}: {error:?}")
            };
            assert_eq!(named, &key, "{toml}");
            assert!(origin.ends_with(CONFIG_FILE_NAME), "{toml}: {origin}");
            let message = error.map(|e| e.to_string()).unwrap_or_default();
            let expected = format!(
                "`{key} = {}` is out of range: use {} to {}",
                written(range, value),
                range.min,
                range.max
            );
            assert!(message.contains(&expected), "{message}\nlacks: {expected}");
        }
        for end in [range.min, range.max] {
            let (_, toml) = setting(range, &written(range, end));
            if let Err(error) = load(&toml) {
                panic!("{toml}: the end {end} is refused: {error}");
            }
        }
    }
}

#[test]
fn a_number_out_of_range_names_the_variable_or_flag_that_set_it() {
    let dir = tempdir();
    let env = [("AGENTRY_PROVIDERS__OPENAI__MAX_RETRIES", "11")];
    let error = load_in(dir.path(), None, &env, &Overrides::default()).err();
    assert_eq!(
        error.map(|e| e.to_string()).as_deref(),
        Some(
            "environment variable AGENTRY_PROVIDERS__OPENAI__MAX_RETRIES: `providers.openai.max_retries = 11` \
             is out of range: use 0 to 10 retries"
        )
    );
    let flag = Overrides {
        max_iterations: Some(0),
        ..Overrides::default()
    };
    let error = load_in(dir.path(), None, &[], &flag).err();
    assert_eq!(
        error.map(|e| e.to_string()).as_deref(),
        Some(
            "command-line flag --max-iterations: `agent.max_iterations = 0` is out of range: use 1 to 1000 model calls"
        )
    );
    // A timeout no `Duration` can hold, in an Ollama table the file sets.
    let error = load_in(
        dir.path(),
        Some("[providers.ollama]\ntimeout_secs = 1e300\n"),
        &[],
        &Overrides::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        error.contains("`providers.ollama.timeout_secs = 1e300` is out of range: use 0.001 to 86400 seconds"),
        "{error}"
    );
}
