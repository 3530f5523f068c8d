//! Typed tools: a Rust async function (or a [`Tool`] implementation) whose
//! argument type derives `serde::Deserialize` and `schemars::JsonSchema`.
//! The input schema is generated from the type, and the arguments arrive
//! deserialised.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use agent_core::{ToolContext, ToolDefinition, ToolError, ToolOutput};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The JSON Schema the model sees for arguments of type `T`.
///
/// Draft 2020-12, with subschemas inlined (recursive types keep `$defs`),
/// and without the root `$schema` and `title`, which only cost tokens. Doc
/// comments become `description`s; `Option` fields are not `required` and
/// accept `null`. An object schema always has `properties`, as some
/// providers require.
pub fn tool_schema<T: JsonSchema + ?Sized>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        root.remove("$schema");
        if root.get("type").and_then(Value::as_str) == Some("object") && !root.contains_key("properties") {
            root.insert("properties".to_owned(), Value::Object(serde_json::Map::new()));
        }
    }
    schema
}

/// Arguments of a tool that takes none. Its schema is an object without
/// properties; extra fields the model sends are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({"type": "object", "properties": {}})
    }
}

/// Sends any `Serialize` value to the model as JSON:
/// `Ok(Json(report))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Json<T>(pub T);

/// What a typed tool may return on success.
///
/// Implemented for [`ToolOutput`], `String`, `&'static str`, [`Value`] and
/// [`Json<T>`] for any `T: Serialize`.
pub trait IntoToolOutput {
    /// The output, or [`ToolError::Failed`] if it cannot be produced.
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text(self))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text(self.to_owned()))
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Json(self))
    }
}

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        serde_json::to_value(&self.0)
            .map(ToolOutput::Json)
            .map_err(|error| ToolError::failed(format!("the tool's result could not be encoded as JSON: {error}")))
    }
}

/// A tool defined as a type, for tools with state (a connection, a client,
/// configuration). Turn it into a [`TypedTool`] with
/// [`TypedTool::from_tool`] or `.into()`.
///
/// ```
/// use agent_core::{ToolContext, ToolError};
/// use agent_tools::{Tool, TypedTool};
/// use schemars::{JsonSchema, Schema, SchemaGenerator};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Args {
///     /// Text to shout.
///     text: String,
/// }
///
/// struct Shout { suffix: String }
///
/// impl Tool for Shout {
///     type Args = Args;
///     type Output = String;
///     const NAME: &'static str = "shout";
///     fn description(&self) -> String { "Upper-cases text".into() }
///     async fn call(&self, args: Args, _context: &ToolContext) -> Result<String, ToolError> {
///         Ok(format!("{}{}", args.text.to_uppercase(), self.suffix))
///     }
/// }
///
/// let tool = TypedTool::from_tool(Shout { suffix: "!".into() });
/// assert_eq!(tool.definition().name, "shout");
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their schema is generated with [`tool_schema`].
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// What a successful call returns.
    type Output: IntoToolOutput;

    /// The name the model calls the tool by.
    const NAME: &'static str;

    /// What the tool does and when to use it, written for the model. Read
    /// once, when the tool is turned into a [`TypedTool`]; it may depend on
    /// the tool's state (a SQL tool listing its tables, say).
    fn description(&self) -> String;

    /// Roles a caller needs (default: none).
    fn required_roles(&self) -> Vec<String> {
        Vec::new()
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        context: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// Type-erased call: decodes the arguments, then runs.
trait Handler: Send + Sync {
    fn call(&self, tool: &str, arguments: &Value, context: &ToolContext) -> BoxFuture;
}

/// A tool with typed arguments, ready to go into a [`ToolSet`](crate::ToolSet).
///
/// ```
/// use agent_core::ToolContext;
/// use agent_tools::TypedTool;
/// use schemars::{JsonSchema, Schema, SchemaGenerator};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First term.
///     a: i64,
///     /// Second term.
///     b: i64,
/// }
///
/// let add = TypedTool::new("add", "Adds two integers", |args: AddArgs, _ctx: ToolContext| async move {
///     let sum = args.a.checked_add(args.b).ok_or("the sum overflows")?;
///     Ok(sum.to_string())
/// });
/// assert_eq!(add.definition().input_schema["required"], serde_json::json!(["a", "b"]));
/// ```
#[derive(Clone)]
pub struct TypedTool {
    definition: ToolDefinition,
    required_roles: Vec<String>,
    handler: Arc<dyn Handler>,
}

impl TypedTool {
    /// A tool from an async function of the typed arguments and the
    /// caller's context (owned, so the future borrows nothing).
    ///
    /// The error type is [`ToolError`], so a closure's `Ok(..)` needs no
    /// annotation (no `Ok::<_, ToolError>`), and a message converts into
    /// one: `Err("no such city".into())`, `.ok_or("missing")?`,
    /// `.map_err(|e| e.to_string())?`.
    pub fn new<A, F, Fut, O>(name: impl Into<String>, description: impl Into<String>, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: IntoToolOutput,
    {
        Self {
            definition: ToolDefinition::new(name, description, tool_schema::<A>()),
            required_roles: Vec::new(),
            handler: Arc::new(FnHandler {
                function,
                args: PhantomData,
            }),
        }
    }

    /// A tool from a [`Tool`] implementation.
    pub fn from_tool<T: Tool>(tool: T) -> Self {
        Self {
            definition: ToolDefinition::new(T::NAME, tool.description(), tool_schema::<T::Args>()),
            required_roles: tool.required_roles(),
            handler: Arc::new(ToolHandler(Arc::new(tool))),
        }
    }

    /// Adds roles a caller needs to run this tool.
    pub fn require_roles<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        crate::toolset::add_roles(&mut self.required_roles, roles);
        self
    }

    /// Replaces the generated input schema, for hand-tuned schemas. The
    /// arguments are still deserialised into the tool's argument type.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.definition.input_schema = std::sync::Arc::new(schema);
        self
    }

    /// The definition the model sees.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// Roles a caller needs to run this tool.
    pub fn required_roles(&self) -> &[String] {
        &self.required_roles
    }

    /// Decodes `arguments` into the argument type and runs the tool. A
    /// decoding failure is [`ToolError::InvalidArguments`] naming the field.
    ///
    /// This does not validate against the schema or check roles; calls
    /// through a [`ToolBox`](crate::ToolBox) do both first.
    pub async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.handler.call(&self.definition.name, arguments, context).await
    }
}

impl fmt::Debug for TypedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("definition", &self.definition)
            .field("required_roles", &self.required_roles)
            .finish_non_exhaustive()
    }
}

impl<T: Tool> From<T> for TypedTool {
    fn from(tool: T) -> Self {
        Self::from_tool(tool)
    }
}

/// Decodes typed arguments, naming the offending field on failure. The
/// arguments are read once as they are; only arguments that do not fit are
/// read again with the path tracked (which allocates for every key) to say
/// where.
pub(crate) fn decode<A: DeserializeOwned>(tool: &str, arguments: &Value) -> Result<A, ToolError> {
    if let Ok(decoded) = A::deserialize(arguments) {
        return Ok(decoded);
    }
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path = error.path().to_string();
        let problem = if path == "." {
            format!("arguments: {}", error.inner())
        } else {
            format!("\"{path}\": {}", error.inner())
        };
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            problems: vec![problem],
        }
    })
}

struct FnHandler<A, F> {
    function: F,
    args: PhantomData<fn() -> A>,
}

impl<A, F, Fut, O> Handler for FnHandler<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolOutput,
{
    fn call(&self, tool: &str, arguments: &Value, context: &ToolContext) -> BoxFuture {
        match decode::<A>(tool, arguments) {
            Ok(args) => {
                let future = (self.function)(args, context.clone());
                Box::pin(async move { future.await?.into_tool_output() })
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}

struct ToolHandler<T>(Arc<T>);

impl<T: Tool> Handler for ToolHandler<T> {
    fn call(&self, tool: &str, arguments: &Value, context: &ToolContext) -> BoxFuture {
        match decode::<T::Args>(tool, arguments) {
            Ok(args) => {
                let tool = Arc::clone(&self.0);
                let context = context.clone();
                Box::pin(async move { tool.call(args, &context).await?.into_tool_output() })
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}
