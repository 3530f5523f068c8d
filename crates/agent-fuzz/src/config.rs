//! `config_loader`: `agentry.toml` read into settings.

use std::path::PathBuf;
use std::sync::OnceLock;

use agentry::config::{Env, Overrides, Settings};

/// Writes `data` as an `agentry.toml` and reads it as `agentry` does
/// (`Settings::read`, with `AGENTRY_HOME` set and no other environment):
/// settings or a typed error. Read settings give the runner's configuration,
/// the scenes and the provider's configuration (or a typed error), without
/// a panic.
pub fn config_loader(data: &[u8]) {
    let dir = folder();
    let path = dir.join("agentry.toml");
    if let Err(error) = std::fs::write(&path, data) {
        panic!(
            "the fuzz configuration {} could not be written: {error}",
            path.display()
        );
    }
    let env = Env::from_pairs([("AGENTRY_HOME", dir.display().to_string())]);
    let overrides = Overrides {
        config: Some(path),
        ..Overrides::default()
    };
    let Ok(settings) = Settings::read(&overrides, &env, dir) else {
        return;
    };
    let _ = settings.agent_config();
    let _ = settings.max_turn();
    let _ = settings.grounding();
    let _ = settings.scene_specs();
    let _ = settings.provider_config(&env);
}

fn folder() -> &'static PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agent-fuzz-config-{}", std::process::id()));
        if let Err(error) = std::fs::create_dir_all(&dir) {
            panic!("the fuzz folder {} could not be made: {error}", dir.display());
        }
        dir
    })
}
