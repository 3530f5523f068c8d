//! `cargo xtask measure-tools [MODEL]`: what each tool definition of the
//! default tool domains (math and travel) costs in the local model's
//! prompt, in tokens of its chat template.
//!
//! The prompt is the one `agentry run` sends for a first message: the
//! built-in system prompt, the tools, one short user message. A tool's
//! cost is what leaving it out saves; the template's tool header is what
//! remains of the tools' total.

use std::sync::Arc;

use agent_core::{ChatRequest, Message, ToolDefinition, ToolProvider};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_tools_travel::{NaiveDate, TravelTools};

/// Prints the table of `model` (a known local model's name).
pub fn run(model: &str) -> Result<(), String> {
    let client = LlamaClient::load(LlamaConfig {
        model: model.to_owned(),
        prompt_cache: false,
        ..LlamaConfig::default()
    })
    .map_err(|error| error.to_string())?;
    let today = NaiveDate::from_ymd_opt(2026, 7, 15).ok_or("bad date")?;
    let tools: Vec<ToolDefinition> = [
        Arc::new(agent_tools_math::tool_set()) as Arc<dyn ToolProvider>,
        Arc::new(TravelTools::with_today(today).tool_set()),
    ]
    .iter()
    .flat_map(|provider| provider.tools())
    .collect();
    let count = |tools: &[ToolDefinition]| -> Result<usize, String> {
        let mut request = ChatRequest::new(vec![Message::user("Hi!")]);
        request.system = Some(agent_app::assemble::default_system_prompt(today));
        request.tools = tools.to_vec().into();
        client.count_prompt_tokens(&request).map_err(|error| error.to_string())
    };
    let without = count(&[])?;
    let with_all = count(&tools)?;
    println!("| tool | tokens | description | schema |");
    println!("|---|---|---|---|");
    let mut marginal_sum = 0;
    for (index, tool) in tools.iter().enumerate() {
        let mut others = tools.clone();
        others.remove(index);
        let marginal = with_all - count(&others)?;
        marginal_sum += marginal;
        println!(
            "| {} | {marginal} | {} chars | {} chars |",
            tool.name,
            tool.description.len(),
            tool.input_schema.to_string().len()
        );
    }
    println!(
        "| (the template's tool header) | {} | | |",
        with_all - without - marginal_sum
    );
    println!("| **all tools** | **{}** | | |", with_all - without);
    println!("| the rest of the prompt (system prompt, one user message) | {without} | | |");
    println!("| **the whole first prompt** | **{with_all}** | | |");
    Ok(())
}
