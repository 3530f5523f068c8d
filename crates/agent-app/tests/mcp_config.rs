//! `[mcp.servers.NAME]` in the configuration: parsing, validation and name
//! clashes, and the error of a server that cannot start. No server needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_app::config::{CONFIG_FILE_NAME, Overrides, Settings};
use agent_app::env::Env;
use agent_app::error::{ConfigError, EXIT_FAILURE};
use agent_app::mcp::server_config;
use agent_app::tools::ToolBox;

/// Loads `toml` as a file the user named (`--config`): a working
/// directory's file with MCP commands needs trust (see `trust_cli.rs`).
fn load_in(dir: &std::path::Path, toml: &str) -> Result<Settings, ConfigError> {
    let file = dir.join(CONFIG_FILE_NAME);
    std::fs::write(&file, toml).unwrap();
    let overrides = Overrides {
        config: Some(file),
        ..Overrides::default()
    };
    Settings::load(&overrides, &Env::default(), dir)
}

fn error(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    load_in(dir.path(), toml)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn servers_are_domains_that_can_be_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let settings = load_in(
        dir.path(),
        "[tools]\nenabled = [\"math\", \"time\"]\n\
         [mcp.servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\ncwd = \"srv\"\n\
         [mcp.servers.remote]\nurl = \"https://mcp.example.com/mcp\"\nheaders = { Authorization = \"Bearer hidden-t0ken\" }\n",
    )
    .unwrap();
    assert!(settings.config.mcp.has("time") && settings.config.mcp.has("remote"));
    assert_eq!(settings.config.tools.enabled, ["math", "time"]);
    let config = server_config(&settings, "time").unwrap();
    assert_eq!(config.args, ["mcp-server-time"]);
    assert_eq!(config.cwd, Some(dir.path().join("srv")), "relative to the file");
    let remote = server_config(&settings, "remote").unwrap();
    assert_eq!(remote.headers["Authorization"], "Bearer hidden-t0ken");
    let debug = format!("{settings:?}");
    assert!(!debug.contains("hidden-t0ken") && debug.contains("headers"), "{debug}");
}

#[test]
fn an_environment_variable_can_set_a_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE_NAME),
        "[mcp.servers.remote]\nurl = \"https://h/mcp\"\n",
    )
    .unwrap();
    let env = Env::from_pairs([(
        "AGENTRY_MCP__SERVERS__REMOTE__HEADERS__AUTHORIZATION",
        "Bearer from-env",
    )]);
    let settings = Settings::load(&Overrides::default(), &env, dir.path()).unwrap();
    let remote = server_config(&settings, "remote").unwrap();
    assert_eq!(remote.headers["authorization"], "Bearer from-env");
}

#[test]
fn a_name_of_a_built_in_domain_is_refused() {
    for domain in ["math", "travel", "sql", "web"] {
        let message = error(&format!("[mcp.servers.{domain}]\ncommand = \"server\"\n"));
        assert!(
            message.contains(&format!("`mcp.servers.{domain}`"))
                && message.contains(&format!("`{domain}` is a built-in tool domain")),
            "{message}"
        );
    }
}

#[test]
fn bad_tables_and_names_are_configuration_errors() {
    let message = error("[mcp.servers.x]\nargs = [\"a\"]\n");
    assert!(
        message.contains("`mcp.servers.x`") && message.contains("set `command`"),
        "{message}"
    );
    let message = error("[mcp.servers.x]\ncomand = \"a\"\n");
    assert!(message.contains("mcp.servers.x.comand"), "{message}");
    let message = error("[mcp.servers.\"a,b\"]\ncommand = \"a\"\n");
    assert!(message.contains("may only have letters"), "{message}");
    let message = error("[mcp]\nserver = {}\n");
    assert!(message.contains("unknown key `mcp.server`"), "{message}");
    let message = error("[mcp.servers.x]\nurl = \"https://h/mcp\"\nheaders = { \"bad header\" = \"v\" }\n");
    assert!(message.contains("not a valid header name"), "{message}");
}

#[test]
fn unknown_domains_list_the_mcp_servers_too() {
    let message = error("[tools]\nenabled = [\"tiem\"]\n[mcp.servers.time]\ncommand = \"uvx\"\n");
    assert!(
        message.contains("unknown tool domain `tiem`") && message.contains("web, time"),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let settings = load_in(
        dir.path(),
        "[tools]\nenabled = [\"ghost\"]\n[mcp.servers.ghost]\ncommand = \"agentry-no-such-server\"\n",
    )
    .unwrap();
    let error = ToolBox::from_settings(&settings, &Env::default())
        .await
        .expect_err("it cannot start");
    let message = error.to_string();
    assert!(
        message.contains("MCP server `ghost` (command `agentry-no-such-server`) could not be started"),
        "{message}"
    );
    assert_eq!(error.exit_code(), EXIT_FAILURE);
}

#[tokio::test]
async fn servers_that_are_not_enabled_are_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let settings = load_in(
        dir.path(),
        "[tools]\nenabled = [\"math\"]\n[mcp.servers.ghost]\ncommand = \"agentry-no-such-server\"\n",
    )
    .unwrap();
    let tools = ToolBox::from_settings(&settings, &Env::default()).await.unwrap();
    assert_eq!(tools.domains(), ["math"]);
}
