//! The client against real MCP servers from the package registries:
//! `@modelcontextprotocol/server-everything` (npm) over stdio and
//! streamable HTTP, and `mcp-server-time` (PyPI) over stdio. Installed by
//! `.ci/install-mcp-test-deps`; skipped when missing unless
//! `AGENTRY_REQUIRE_MCP=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_testing::mcp_deps as support;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError, ToolOutput, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools_mcp::{McpServerConfig, McpToolProvider};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

fn registry_of(provider: McpToolProvider) -> ToolBox {
    let registry = ToolBox::new();
    registry.register(Arc::new(provider), true).unwrap();
    registry
}

fn text(outcome: Result<ToolOutput, ToolError>) -> String {
    match outcome {
        Ok(output) => output.to_content(),
        Err(error) => panic!("the call failed: {error}"),
    }
}

/// The agent's environment as the provider sees it: PATH and a secret
/// that must not reach the server.
fn parent_env(name: &str) -> Option<String> {
    match name {
        "PATH" => std::env::var("PATH").ok(),
        "OPENAI_API_KEY" => Some("sk-must-not-leak".to_owned()),
        _ => None,
    }
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(deps) = support::deps("server_everything_over_stdio") else {
        return;
    };
    let mut config = McpServerConfig::stdio(
        deps.node.to_string_lossy(),
        [deps.everything.to_string_lossy().into_owned()],
    );
    config
        .env
        .insert("AGENTRY_MCP_MARKER".into(), "configured-value".into());
    let provider = McpToolProvider::connect("everything", &config, parent_env)
        .await
        .unwrap();
    let registry = registry_of(provider);

    let names: Vec<String> = registry.definitions().into_iter().map(|tool| tool.name).collect();
    for expected in ["echo", "get-sum", "get-env", "trigger-long-running-operation"] {
        assert!(names.contains(&expected.to_owned()), "{expected} not in {names:?}");
    }
    let sum = registry
        .definitions()
        .into_iter()
        .find(|tool| tool.name == "get-sum")
        .unwrap();
    assert_eq!(
        sum.input_schema["required"],
        json!(["a", "b"]),
        "the schema is the server's"
    );

    let context = ToolContext::new();
    let answer = text(
        registry
            .execute("get-sum", &json!({"a": 2, "b": 3}), &context)
            .await
            .outcome,
    );
    assert!(answer.contains('5'), "{answer}");
    let answer = text(
        registry
            .execute("echo", &json!({"message": "hello over mcp"}), &context)
            .await
            .outcome,
    );
    assert!(answer.contains("hello over mcp"), "{answer}");

    // The registry checks the server's schema before anything is sent.
    let run = registry
        .execute("get-sum", &json!({"a": "two", "b": 3}), &context)
        .await;
    assert!(
        matches!(run.outcome, Err(ToolError::InvalidArguments { .. })),
        "{:?}",
        run.outcome
    );

    // The server gets its own variables and the safe ones, not the agent's secrets.
    let env = text(registry.execute("get-env", &json!({}), &context).await.outcome);
    assert!(env.contains("configured-value") && env.contains("PATH"), "{env}");
    assert!(!env.contains("sk-must-not-leak"), "{env}");

    // Cancellation ends a long call at once.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let run = registry
        .execute(
            "trigger-long-running-operation",
            &json!({"duration": 30, "steps": 30}),
            &ToolContext::new().with_cancel(cancel),
        )
        .await;
    assert_eq!(run.outcome, Err(ToolError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // The connection is still usable after a cancelled call.
    let answer = text(
        registry
            .execute("get-sum", &json!({"a": 40, "b": 2}), &context)
            .await
            .outcome,
    );
    assert!(answer.contains("42"), "{answer}");
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let Some(deps) = support::deps("server_everything_over_streamable_http") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(&deps.node)
        .arg(&deps.everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let listening = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("listening on port") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        listening.ok(),
        Some(true),
        "server-everything did not start on port {port}"
    );

    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp"));
    config
        .headers
        .insert("X-Agentry-Test".into(), "secret-header-value".into());
    let provider = McpToolProvider::connect("remote", &config, |_| None).await.unwrap();
    assert!(format!("{provider:?}").contains("url http://127.0.0.1"));
    let registry = registry_of(provider);
    let answer = text(
        registry
            .execute("echo", &json!({"message": "over http"}), &ToolContext::new())
            .await
            .outcome,
    );
    assert!(answer.contains("over http"), "{answer}");
    let answer = text(
        registry
            .execute("get-sum", &json!({"a": 1.5, "b": 2}), &ToolContext::new())
            .await
            .outcome,
    );
    assert!(answer.contains("3.5"), "{answer}");

    // The server goes away: calls fail with a message naming it.
    server.kill().await.unwrap();
    let outcome = registry
        .execute("echo", &json!({"message": "x"}), &ToolContext::new())
        .await
        .outcome;
    let error = outcome.unwrap_err().to_string();
    assert!(error.contains("MCP server `remote`"), "{error}");
    assert!(!error.contains("secret-header-value"), "{error}");
}

#[tokio::test]
async fn mcp_server_time_from_pypi() {
    let Some(deps) = support::deps("mcp_server_time_from_pypi") else {
        return;
    };
    let config = McpServerConfig::stdio(deps.time_server.to_string_lossy(), ["--local-timezone", "Etc/UTC"]);
    let provider = McpToolProvider::connect("time", &config, parent_env).await.unwrap();
    let registry = registry_of(provider);
    let names: Vec<String> = registry.definitions().into_iter().map(|tool| tool.name).collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);

    let context = ToolContext::new();
    let answer = text(
        registry
            .execute("get_current_time", &json!({"timezone": "Asia/Tokyo"}), &context)
            .await
            .outcome,
    );
    assert!(answer.contains("Asia/Tokyo") && answer.contains("datetime"), "{answer}");

    // A tool error of the server (isError) is a tool error the model reads.
    let run = registry
        .execute("get_current_time", &json!({"timezone": "Mars/Olympus_Mons"}), &context)
        .await;
    match run.outcome {
        Err(ToolError::Failed { message }) => assert!(message.contains("Mars/Olympus_Mons"), "{message}"),
        other => panic!("expected a tool error, got {other:?}"),
    }
}
