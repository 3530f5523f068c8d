//! MCP end to end with the real `agentry` binary: an agent run that calls a
//! tool of a real MCP server (`@modelcontextprotocol/server-everything`
//! from npm) with a scripted OpenAI-compatible model, and `agentry mcp`
//! listed and called by the official Python SDK (`mcp` from PyPI) and by
//! hand. Tests needing the installed servers skip when they are missing,
//! unless `AGENTRY_REQUIRE_MCP=1`.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
use agent_testing::mcp_deps as mcp_support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use wiremock::MockServer;

use cli_support::{agentry, mount_calls_then_answer, run_cmd, stderr, stdout_json, write_trusted_config};

/// `agentry.toml` with server-everything as the domain `everything`.
fn everything_config(dir: &Path, deps: &mcp_support::Deps) {
    write_trusted_config(
        dir,
        &format!(
            "[tools]\nenabled = [\"everything\"]\n\n[mcp.servers.everything]\ncommand = {}\nargs = [{}]\n",
            json!(deps.node.to_string_lossy()),
            json!(deps.everything.to_string_lossy()),
        ),
    );
}

#[tokio::test]
async fn a_run_calls_a_tool_of_a_real_mcp_server() {
    let Some(deps) = mcp_support::deps("a_run_calls_a_tool_of_a_real_mcp_server") else {
        return;
    };
    let server = MockServer::start().await;
    mount_calls_then_answer(
        &server,
        json!([{"id": "call_sum", "type": "function",
                "function": {"name": "get-sum", "arguments": "{\"a\":2,\"b\":3}"}}]),
        (100, 20),
        "2 + 3 = 5, says the MCP server.",
        (120, 12),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    everything_config(dir.path(), &deps);
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args(["run", "--provider", "openai", "--model", "gpt-4o-mini", "--json"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "What is 2 + 3?"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["response"], "2 + 3 = 5, says the MCP server.");
    assert_eq!(json["stop_reason"], "completed");
    let call = &json["tool_calls"][0];
    assert_eq!(call["name"], "get-sum");
    assert_eq!(call["arguments"], json!({"a": 2, "b": 3}));
    assert_eq!(call["is_error"], false);
    let result = call["result"].as_str().unwrap_or_default();
    assert!(result.contains("The sum of 2 and 3 is 5"), "{result}");

    // The model was offered the server's tools with their schemas, and read its result.
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let sum = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "get-sum")
        .expect("get-sum offered to the model");
    assert_eq!(sum["function"]["parameters"]["required"], json!(["a", "b"]));
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(second.contains("The sum of 2 and 3 is 5"), "{second}");
}

#[tokio::test]
async fn agentry_tools_lists_a_real_servers_tools_under_its_name() {
    let Some(deps) = mcp_support::deps("agentry_tools_lists_a_real_servers_tools_under_its_name") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    everything_config(dir.path(), &deps);
    let mut command = agentry(dir.path());
    command
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args(["tools", "--json"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let json = stdout_json(&output);
    assert_eq!(json["domains"], json!(["everything"]));
    let echo = json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "echo")
        .unwrap();
    assert_eq!(echo["domain"], "everything");
    assert_eq!(echo["input_schema"]["properties"]["message"]["type"], "string");
}

#[test]
fn the_python_sdk_lists_and_calls_agentry_mcp() {
    let Some(deps) = mcp_support::deps("the_python_sdk_lists_and_calls_agentry_mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentry.toml");
    std::fs::write(&config, "[tools]\nenabled = [\"travel\"]\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/sdk_client.py");
    let output = Command::new(&deps.python)
        .arg(script)
        .arg(assert_cmd::cargo::cargo_bin("agentry"))
        .arg(&config)
        .arg(dir.path().join("home"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python client failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}\n{stderr}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(seen["server"], "agentry");
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["calculator", "arithmetic"],
        "--tools math replaced the file's travel"
    );
    assert_eq!(seen["tools"][0]["schema"]["required"], json!(["expression"]));
    assert_eq!(seen["good"]["is_error"], false);
    assert!(seen["good"]["text"].as_str().unwrap().contains("391"), "{seen}");
    assert_eq!(seen["invalid"]["is_error"], true);
    assert!(
        seen["invalid"]["text"]
            .as_str()
            .unwrap()
            .contains("invalid arguments for `calculator`"),
        "{seen}"
    );
    assert_eq!(seen["unknown"]["is_error"], true);
    assert!(
        seen["unknown"]["text"]
            .as_str()
            .unwrap()
            .contains("unknown tool `no_such_tool`"),
        "{seen}"
    );
}

/// Sends one JSON-RPC message; for a request, returns its response.
fn exchange(stdin: &mut impl Write, stdout: &mut impl BufRead, message: &Value) -> Option<Value> {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    message.get("id")?;
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    Some(serde_json::from_str(&line).unwrap_or_else(|error| panic!("stdout line is not JSON-RPC ({error}): {line:?}")))
}

#[test]
fn agentry_mcp_speaks_only_mcp_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("agentry"))
        .env_clear()
        .env("AGENTRY_HOME", dir.path().join("home"))
        // Logs on: they must all go to stderr.
        .env("RUST_LOG", "debug")
        .current_dir(dir.path())
        .args(["mcp", "--tools", "math"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let init = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "by-hand", "version": "0"}}}),
    )
    .unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "agentry", "{init}");
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
    exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let list = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .unwrap();
    assert_eq!(list["result"]["tools"][0]["name"], "calculator", "{list}");
    let call = exchange(
        &mut stdin,
        &mut stdout,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "calculator", "arguments": {"expression": "6 * 7"}}}),
    )
    .unwrap();
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert!(
        call["result"]["content"][0]["text"].as_str().unwrap().contains("42"),
        "{call}"
    );
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest.trim(), "", "nothing but responses on stdout");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(
        log.contains("serving the enabled tools over MCP"),
        "logs go to stderr: {log}"
    );
}

#[tokio::test]
async fn a_server_named_like_a_built_in_domain_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[mcp.servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    )
    .unwrap();
    let mut command = agentry(dir.path());
    command.args(["tools"]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("`mcp.servers.web`") && message.contains("built-in tool domain"),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_the_command_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write_trusted_config(
        dir.path(),
        "[tools]\nenabled = [\"math\", \"broken\"]\n\n[mcp.servers.broken]\ncommand = \"/bin/sh\"\n\
         args = [\"-c\", \"echo 'cannot open the database' >&2; exit 1\"]\n",
    );
    let mut command = agentry(dir.path());
    command.args(["tools"]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("MCP server `broken` (command `/bin/sh -c") && message.contains("cannot open the database"),
        "{message}"
    );
    assert!(output.stdout.is_empty());
}
