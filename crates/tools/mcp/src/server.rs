//! [`McpServer`]: a tool registry served as an MCP server.

use std::sync::Arc;

use agent_core::{ToolContext, ToolDefinition, ToolError, ToolRegistry};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::IntoTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::content;
use crate::error::McpError;

/// Serves the enabled tools of a [`ToolRegistry`] over MCP: `tools/list`
/// gives the registry's definitions, `tools/call` runs the tool through
/// the registry (so arguments are validated, roles checked and the call
/// traced as in an agent run) and answers with the tool's text, or with
/// `isError` and the [`ToolError`](agent_core::ToolError)'s message.
/// A client's `notifications/cancelled` cancels the running call. Tools
/// that require the user's approval are neither listed nor run: no one
/// could approve them.
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<dyn ToolRegistry>,
    implementation: (String, String),
    context: ToolContext,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<String> = self.registry.definitions().into_iter().map(|tool| tool.name).collect();
        f.debug_struct("McpServer")
            .field("implementation", &self.implementation)
            .field("tools", &tools)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server of `registry`'s enabled tools, introducing itself as
    /// `agentry` with this crate's version.
    pub fn new(registry: Arc<dyn ToolRegistry>) -> Self {
        Self {
            registry,
            implementation: ("agentry".to_owned(), env!("CARGO_PKG_VERSION").to_owned()),
            context: ToolContext::new(),
        }
    }

    /// Introduces itself to clients as `name` `version`.
    pub fn with_implementation(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.implementation = (name.into(), version.into());
        self
    }

    /// Runs every call in a copy of `context` (user, roles, attributes);
    /// each call gets its own cancellation token.
    pub fn with_context(mut self, context: ToolContext) -> Self {
        self.context = context;
        self
    }

    /// Serves one client over `transport` until it disconnects.
    pub async fn serve<T, E, A>(self, transport: T) -> Result<(), McpError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = ServiceExt::serve(self, transport)
            .await
            .map_err(|error| McpError::Serve(error.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|error| McpError::Serve(error.to_string()))?;
        Ok(())
    }

    /// Serves one client over this process's stdin and stdout until it
    /// disconnects. Nothing else may write to stdout meanwhile.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(rmcp::transport::stdio()).await
    }
}

/// A registry definition as an MCP tool (its schema as it is; a schema that
/// is not an object is replaced by one that accepts any object).
fn mcp_tool(definition: ToolDefinition) -> Tool {
    let schema = if let Value::Object(schema) = &*definition.input_schema {
        schema.clone()
    } else {
        let mut schema = Map::new();
        schema.insert("type".to_owned(), Value::String("object".to_owned()));
        schema
    };
    Tool::new(definition.name, definition.description, Arc::new(schema))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(self.implementation.0.clone(), self.implementation.1.clone());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .registry
            .definitions()
            .into_iter()
            .filter(|tool| !self.registry.requires_approval(&tool.name))
            .map(mcp_tool)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.registry.requires_approval(&request.name) {
            // Nobody here can approve it: refuse rather than run it unapproved.
            let refusal = Err(ToolError::failed(format!(
                "`{}` requires the user's approval before it runs, which an MCP client cannot give through \
                 agentry; it is not served",
                request.name
            )));
            return Ok(content::call_result(&refusal).into());
        }
        let arguments = request
            .arguments
            .map_or_else(|| Value::Object(Map::new()), Value::Object);
        let tool_context = self.context.clone().with_cancel(context.ct.clone());
        let execution = self.registry.execute(&request.name, &arguments, &tool_context).await;
        Ok(content::call_result(&execution.outcome).into())
    }
}
