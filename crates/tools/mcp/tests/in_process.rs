//! The client against an rmcp server written here, and the server against
//! rmcp's client, connected in memory: fast, no external dependency.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError, ToolOutput, ToolProvider, ToolRegistry};
use agent_tools::{ToolBox, ToolSet, TypedTool};
use agent_tools_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use agent_tools_mcp::rmcp::service::RequestContext;
use agent_tools_mcp::rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use agent_tools_mcp::{McpError, McpServer, McpServerConfig, McpToolProvider};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A scripted MCP server: `echo`, `fail` (isError), `slow` (waits for
/// cancellation), counting the calls that reach it.
#[derive(Clone, Default)]
struct Scripted {
    calls: Arc<AtomicUsize>,
    cancelled: Arc<AtomicBool>,
}

fn echo_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string", "description": "What to echo"}},
           "required": ["text"], "additionalProperties": false})
}

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => panic!("not an object"),
    }
}

impl ServerHandler for Scripted {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Echoes the text back", object(echo_schema())),
            Tool::new("fail", "Always fails", object(json!({"type": "object"}))),
            Tool::new("slow", "Takes its time", object(json!({"type": "object"}))),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let arguments = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => {
                let text = arguments.get("text").and_then(Value::as_str).unwrap_or_default();
                Ok(CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))]).into())
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("the city is unknown")]).into()),
            "slow" => {
                tokio::select! {
                    () = context.ct.cancelled() => self.cancelled.store(true, Ordering::SeqCst),
                    () = tokio::time::sleep(Duration::from_secs(30)) => {}
                }
                Ok(CallToolResult::success(vec![ContentBlock::text("finally")]).into())
            }
            other => Err(ErrorData::invalid_params(format!("no tool named {other}"), None)),
        }
    }
}

/// The scripted server's tools through a provider, and the server task.
async fn scripted() -> (McpToolProvider, Scripted, tokio::task::JoinHandle<()>) {
    let server = Scripted::default();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let handler = server.clone();
    let task = tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let provider = McpToolProvider::from_transport("scripted", "in-memory", client_io)
        .await
        .unwrap();
    (provider, server, task)
}

fn registry_of(provider: McpToolProvider) -> ToolBox {
    let registry = ToolBox::new();
    registry.register(Arc::new(provider), true).unwrap();
    registry
}

#[tokio::test]
async fn the_servers_tools_and_schemas_are_offered_as_given() {
    let (provider, _server, _task) = scripted().await;
    assert_eq!(provider.name(), "scripted");
    let definitions = registry_of(provider).definitions();
    let names: Vec<&str> = definitions.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["echo", "fail", "slow"]);
    assert_eq!(*definitions[0].input_schema, echo_schema());
    assert_eq!(definitions[0].description, "Echoes the text back");
}

#[tokio::test]
async fn calls_are_validated_by_the_registry_before_they_reach_the_server() {
    let (provider, server, _task) = scripted().await;
    let registry = registry_of(provider);
    let context = ToolContext::new();
    let run = registry.execute("echo", &json!({"text": 5}), &context).await;
    assert!(
        matches!(run.outcome, Err(ToolError::InvalidArguments { .. })),
        "{:?}",
        run.outcome
    );
    assert_eq!(
        server.calls.load(Ordering::SeqCst),
        0,
        "an invalid call never reaches the server"
    );

    let run = registry.execute("echo", &json!({"text": "hi"}), &context).await;
    assert_eq!(run.outcome, Ok(ToolOutput::Text("echo: hi".into())));
    assert_eq!(run.provider.as_deref(), Some("scripted"));
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_is_error_result_is_a_tool_error_with_the_servers_text() {
    let (provider, _server, _task) = scripted().await;
    let run = registry_of(provider)
        .execute("fail", &json!({}), &ToolContext::new())
        .await;
    assert_eq!(run.outcome, Err(ToolError::failed("the city is unknown")));
}

#[tokio::test]
async fn a_protocol_error_names_the_server_and_the_tool() {
    let (provider, _server, _task) = scripted().await;
    let error = provider
        .execute("nope", &json!({}), &ToolContext::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("MCP server `scripted` refused the call to `nope`") && error.contains("no tool named nope"),
        "{error}"
    );
}

#[tokio::test]
async fn cancellation_stops_the_call_and_tells_the_server() {
    let (provider, server, _task) = scripted().await;
    let registry = registry_of(provider);
    let cancel = CancellationToken::new();
    let context = ToolContext::new().with_cancel(cancel.clone());
    let started = Instant::now();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let run = registry.execute("slow", &json!({}), &context).await;
    assert_eq!(run.outcome, Err(ToolError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.cancelled.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        server.cancelled.load(Ordering::SeqCst),
        "the server saw notifications/cancelled"
    );
}

#[tokio::test]
async fn the_call_timeout_bounds_a_call() {
    let (provider, _server, _task) = scripted().await;
    let provider = provider.with_call_timeout(Duration::from_millis(150));
    let outcome = provider.execute("slow", &json!({}), &ToolContext::new()).await;
    assert!(
        matches!(outcome, Err(ToolError::TimedOut { ref tool, .. }) if tool == "slow"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_lost_connection_is_a_tool_error_naming_the_server() {
    let (provider, _server, task) = scripted().await;
    task.abort();
    let _ = task.await;
    let error = provider
        .execute("echo", &json!({"text": "x"}), &ToolContext::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("MCP server `scripted` (in-memory)"), "{error}");
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

/// The `local` domain: `add` and `broken`.
fn local_registry_provider() -> Arc<ToolSet> {
    let add = TypedTool::new(
        "add",
        "Adds two integers",
        |args: AddArgs, _context: ToolContext| async move { Ok::<_, ToolError>(format!("{}", args.a + args.b)) },
    );
    let broken = TypedTool::new(
        "broken",
        "Always fails",
        |_args: Value, _context: ToolContext| async move { Err::<String, _>(ToolError::failed("the database is down")) },
    );
    Arc::new(ToolSet::new("local", "Local tools").tool(add).tool(broken))
}

/// A registry with the `local` domain, as an agent would have it.
fn local_registry() -> Arc<ToolBox> {
    let registry = ToolBox::new();
    registry.register(local_registry_provider(), true).unwrap();
    Arc::new(registry)
}

#[tokio::test]
async fn the_server_lists_and_runs_registry_tools_for_an_rmcp_client() {
    let registry = local_registry();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(registry.clone()).serve(server_io));
    let client = ().serve(client_io).await.unwrap();
    let info = client.peer().peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|server| server.name.as_str()),
        Some("agentry")
    );

    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["add", "broken"]);
    assert_eq!(
        Value::Object((*tools[0].input_schema).clone()),
        *registry.definitions()[0].input_schema
    );

    let call = |name: &str, arguments: Value| {
        let Value::Object(arguments) = arguments else { panic!() };
        CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
    };
    let result = client
        .peer()
        .call_tool(call("add", json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.content[0].as_text().map(|t| t.text.as_str()), Some("42"));

    let result = client
        .peer()
        .call_tool(call("add", json!({"a": "two", "b": 40})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = result.content[0].as_text().map(|t| t.text.clone()).unwrap_or_default();
    assert!(text.starts_with("invalid arguments for `add`"), "{text}");

    let result = client.peer().call_tool(call("broken", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content[0].as_text().map(|t| t.text.as_str()),
        Some("the database is down")
    );
}

#[tokio::test]
async fn agentry_tools_served_over_mcp_come_back_as_a_domain() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(local_registry()).serve(server_io));
    let provider = McpToolProvider::from_transport("remote", "in-memory", client_io)
        .await
        .unwrap();
    let registry = registry_of(provider);
    let run = registry
        .execute("add", &json!({"a": 1, "b": 2}), &ToolContext::new())
        .await;
    assert_eq!(run.outcome, Ok(ToolOutput::Text("3".into())));
    let run = registry.execute("broken", &json!({}), &ToolContext::new()).await;
    assert_eq!(run.outcome, Err(ToolError::failed("the database is down")));
}

#[tokio::test]
async fn tools_that_need_approval_are_not_served() {
    let registry = ToolBox::builder()
        .provider(local_registry_provider())
        .require_approval(["add"])
        .build()
        .unwrap();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(McpServer::new(Arc::new(registry)).serve(server_io));
    let client = ().serve(client_io).await.unwrap();
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["broken"]);
    let Value::Object(arguments) = json!({"a": 1, "b": 2}) else {
        panic!()
    };
    let result = client
        .peer()
        .call_tool(CallToolRequestParams::new("add").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = result.content[0].as_text().map(|t| t.text.clone()).unwrap_or_default();
    assert!(text.contains("requires the user's approval"), "{text}");
}

fn start_error(result: Result<McpToolProvider, McpError>) -> String {
    match result {
        Ok(provider) => panic!("{provider:?} connected"),
        Err(error) => {
            assert!(
                matches!(error, McpError::Start { .. } | McpError::Config { .. }),
                "{error:?}"
            );
            error.to_string()
        }
    }
}

#[tokio::test]
async fn a_missing_command_fails_clearly() {
    let config = McpServerConfig::stdio("agentry-no-such-mcp-server", ["--stdio"]);
    let error = start_error(McpToolProvider::connect("ghost", &config, |_| None).await);
    assert!(
        error.starts_with("MCP server `ghost` (command `agentry-no-such-mcp-server --stdio`) could not be started")
            && error.contains("was not found"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_shows_its_stderr() {
    let config = McpServerConfig::stdio("sh", ["-c", "echo 'fatal: no API token' >&2; exit 3"]);
    let path = |name: &str| std::env::var(name).ok();
    let error = start_error(McpToolProvider::connect("broken", &config, path).await);
    assert!(error.contains("MCP server `broken` (command `sh -c"), "{error}");
    assert!(error.contains("fatal: no API token"), "{error}");
}

#[tokio::test]
async fn an_unreachable_url_fails_clearly_without_its_secrets() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp?key=s3cret-in-query"));
    config
        .headers
        .insert("Authorization".into(), "Bearer s3cret-token".into());
    config.startup_timeout_secs = 10.0;
    let error = start_error(McpToolProvider::connect("remote", &config, |_| None).await);
    assert!(
        error.starts_with(&format!(
            "MCP server `remote` (url http://127.0.0.1:{port}/mcp) could not be started"
        )),
        "{error}"
    );
    assert!(!error.contains("s3cret"), "{error}");
}

#[tokio::test]
async fn configured_headers_are_sent_to_an_http_server() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(ResponseTemplate::new(503).set_body_string("down for maintenance"))
        .mount(&server)
        .await;
    let mut config = McpServerConfig::http(format!("{}/mcp", server.uri()));
    config.headers.insert("X-Api-Key".into(), "k3y-value".into());
    config
        .headers
        .insert("Authorization".into(), "Bearer t0ken-value".into());
    let error = start_error(McpToolProvider::connect("remote", &config, |_| None).await);
    assert!(
        error.contains("MCP server `remote`") && !error.contains("k3y-value") && !error.contains("t0ken-value"),
        "{error}"
    );
    let requests = server.received_requests().await.unwrap();
    let first = requests.first().expect("the initialize request");
    assert_eq!(
        first.headers.get("x-api-key").map(|v| v.to_str().unwrap_or_default()),
        Some("k3y-value")
    );
    assert_eq!(
        first
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default()),
        Some("Bearer t0ken-value")
    );
    let body: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(body["method"], "initialize");
}
