//! mockall mocks of the core traits, for tests that set expectations on calls.
//!
//! ```
//! use agent_core::{Capabilities, LlmClient};
//! use agent_testing::mocks::MockLlmClient;
//!
//! let mut client = MockLlmClient::new();
//! client.expect_capabilities().return_const(Capabilities::default());
//! assert!(!client.capabilities().native_tools);
//! ```
#![allow(missing_docs)]

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, ToolContext,
    ToolDefinition, ToolError, ToolExecution, ToolOutput, ToolProvider, ToolRegistry,
};
use async_trait::async_trait;
use serde_json::Value;

mockall::mock! {
    pub LlmClient {}

    #[async_trait]
    impl LlmClient for LlmClient {
        fn provider(&self) -> &str;
        fn model(&self) -> &str;
        fn capabilities(&self) -> Capabilities;
        async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError>;
        async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError>;
    }
}

mockall::mock! {
    pub ToolProvider {}

    #[async_trait]
    impl ToolProvider for ToolProvider {
        fn name(&self) -> &str;
        fn description(&self) -> &str;
        fn tools(&self) -> Vec<ToolDefinition>;
        fn required_roles(&self, tool: &str) -> Vec<String>;
        async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;
        fn span_attributes_hook(&self, tool: &str, arguments: &Value) -> Vec<(String, Value)>;
        fn completion_attributes_hook(&self, tool: &str, outcome: &Result<ToolOutput, ToolError>) -> Vec<(String, Value)>;
    }
}

mockall::mock! {
    pub ToolRegistry {}

    #[async_trait]
    impl ToolRegistry for ToolRegistry {
        fn definitions(&self) -> Vec<ToolDefinition>;
        async fn execute(&self, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution;
    }
}
