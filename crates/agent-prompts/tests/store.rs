//! The file store, the built-ins and layering.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::ToolDefinition;
use agent_prompts::{
    LayeredSource, PromptError, PromptSource, PromptStore, SearchLocation, builtin, render_tool_list, tool_names,
};
use serde_json::json;

/// A fresh, empty directory under the system temp dir.
fn temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agent-prompts-test-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

#[test]
fn loads_md_then_txt_and_caches() {
    let dir = temp_dir();
    std::fs::write(dir.join("greet.md"), "Hello {{name}} (md)").expect("write");
    std::fs::write(dir.join("greet.txt"), "Hello {{name}} (txt)").expect("write");
    std::fs::write(dir.join("plain.txt"), "Plain {{x}}").expect("write");
    let store = PromptStore::new(&dir);
    let first = store.load("greet").expect("load");
    assert_eq!(first.render([("name", "Ada")]).expect("render"), "Hello Ada (md)");
    assert_eq!(store.load("plain").expect("txt").required_variables(), ["x"]);

    // Cached: the same parsed template, even after the file changes.
    std::fs::write(dir.join("greet.md"), "Changed {{name}}").expect("write");
    let second = store.load("greet").expect("cached");
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(store.cached_len(), 2);

    store.clear_cache();
    assert_eq!(store.load("greet").expect("reloaded").source(), "Changed {{name}}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn subdirectories_and_invalid_names() {
    let dir = temp_dir();
    std::fs::create_dir_all(dir.join("agents")).expect("mkdir");
    std::fs::write(dir.join("agents/travel.md"), "Travel").expect("write");
    let store = PromptStore::new(&dir);
    assert_eq!(store.load("agents/travel").expect("nested").source(), "Travel");
    for bad in ["", "../x", "/etc/passwd", "a/../b", "a\\b"] {
        assert!(
            matches!(store.load(bad), Err(PromptError::InvalidName { .. })),
            "{bad:?} should be rejected"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_file_names_directory_and_files_tried() {
    let dir = temp_dir();
    let store = PromptStore::new(&dir);
    let error = store.load("nope").expect_err("missing");
    match &error {
        PromptError::NotFound { name, searched } => {
            assert_eq!(name, "nope");
            assert_eq!(
                searched,
                &[SearchLocation::Directory {
                    path: dir.clone(),
                    tried: vec!["nope.md".into(), "nope.txt".into()]
                }]
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains("tried nope.md, nope.txt"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_file_reports_path_line_and_column() {
    let dir = temp_dir();
    std::fs::write(dir.join("bad.md"), "line one\nline {{ two").expect("write");
    let store = PromptStore::new(&dir);
    match store.load("bad") {
        Err(PromptError::Syntax {
            origin, line, column, ..
        }) => {
            assert!(origin.contains("bad.md"), "{origin}");
            assert_eq!((line, column), (2, 6));
        }
        other => panic!("unexpected {other:?}"),
    }
    // Errors are not cached: fixing the file fixes the load.
    std::fs::write(dir.join("bad.md"), "fixed {{ two }}").expect("write");
    assert!(store.load("bad").is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_loads_share_one_template() {
    let dir = temp_dir();
    std::fs::write(dir.join("t.md"), "{{a}}").expect("write");
    let store = Arc::new(PromptStore::new(&dir));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || store.load("t").expect("load"))
        })
        .collect();
    let loaded: Vec<_> = handles.into_iter().map(|h| h.join().expect("thread")).collect();
    assert!(loaded.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn layered_directory_first_builtins_as_fallback() {
    let dir = temp_dir();
    std::fs::write(dir.join("react.md"), "My own ReAct prompt {{tools}}").expect("write");
    let source = PromptStore::with_builtin_fallback(&dir);
    assert_eq!(source.len(), 2);
    assert!(
        source
            .load(builtin::REACT)
            .expect("override")
            .source()
            .starts_with("My own")
    );
    assert_eq!(
        source.load(builtin::FORCED_FINAL_ANSWER).expect("fallback").source(),
        builtin::source(builtin::FORCED_FINAL_ANSWER).expect("builtin text")
    );
    let error = source.load("nope").expect_err("missing everywhere");
    match &error {
        PromptError::NotFound { searched, .. } => {
            assert!(matches!(searched[0], SearchLocation::Directory { .. }));
            assert!(matches!(searched[1], SearchLocation::Builtins { .. }));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("built-in templates (available: zero_shot_classification")
    );

    // A broken override is reported, not silently replaced by the built-in.
    std::fs::write(dir.join("tool_use.md"), "{{ broken").expect("write");
    assert!(matches!(
        source.load(builtin::TOOL_USE),
        Err(PromptError::Syntax { .. })
    ));

    let empty = LayeredSource::new();
    assert!(empty.is_empty());
    assert!(matches!(empty.load("x"), Err(PromptError::NotFound { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn builtins_render_with_their_variables() {
    let tools = [
        ToolDefinition::new(
            "calculator",
            "Evaluate an arithmetic expression.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
        ToolDefinition::new(
            "clock",
            "The current time.",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    let list = render_tool_list(&tools);
    let names = tool_names(&tools);

    let protocol = builtin::get(builtin::TOOL_CALL_PROTOCOL)
        .expect("protocol")
        .render([("tools", list.as_str())])
        .expect("render");
    assert!(protocol.contains(
        "<tool_call>\n{\"name\": \"tool_name\", \"arguments\": {\"argument_name\": \"value\"}}\n</tool_call>"
    ));
    assert!(protocol.contains(
        "- calculator: Evaluate an arithmetic expression.\n  Arguments:\n    - expression (string, required)"
    ));
    assert!(protocol.contains("one block per call"));

    let react = builtin::get(builtin::REACT)
        .expect("react")
        .render([("tools", list.as_str()), ("tool_names", names.as_str())])
        .expect("render");
    for label in [
        "Thought:",
        "Action:",
        "Action Input:",
        "Observation:",
        "Final Answer:",
        "[calculator, clock]",
    ] {
        assert!(react.contains(label), "{label}");
    }

    let system = builtin::get(builtin::TOOL_USE)
        .expect("tool use")
        .render([
            ("agent_name", "Ada"),
            ("agent_description", "A travel assistant."),
            ("instructions", "Be brief."),
        ])
        .expect("render");
    assert!(system.starts_with("You are Ada. A travel assistant."));
    assert!(system.trim_end().ends_with("Be brief."));

    let final_answer = builtin::get(builtin::FORCED_FINAL_ANSWER)
        .expect("final")
        .render::<[(&str, &str); 0], _, _>([])
        .expect("render");
    assert!(final_answer.starts_with("No more tool calls."), "{final_answer}");

    let summary = builtin::get(builtin::SUMMARISE_CONVERSATION)
        .expect("summary")
        .render([("conversation", "[user] Book a flight to Oslo.")])
        .expect("render");
    assert!(summary.starts_with("Summarise the conversation below."), "{summary}");
    assert!(summary.contains("<conversation>\n[user] Book a flight to Oslo.\n</conversation>"));

    let error = builtin::get("nope").expect_err("unknown");
    assert!(matches!(error, PromptError::NotFound { .. }));
}

#[test]
fn classification_extraction_and_qa_builtins() {
    let zero = builtin::get(builtin::ZERO_SHOT_CLASSIFICATION)
        .expect("zero")
        .render([("categories", "- spam\n- ham"), ("text", "WIN A PRIZE")])
        .expect("render");
    assert!(zero.contains("- spam\n- ham") && zero.contains("WIN A PRIZE"));
    let few = builtin::get(builtin::FEW_SHOT_CLASSIFICATION).expect("few");
    let error = few.render([("text", "x")]).expect_err("missing");
    assert!(matches!(error, PromptError::MissingVariables { ref missing } if missing == &["categories", "examples"]));
    let extraction = builtin::get(builtin::JSON_EXTRACTION)
        .expect("extraction")
        .render([("schema", "{\"type\": \"object\"}"), ("text", "Ada, 36")])
        .expect("render");
    assert!(extraction.contains("{\"type\": \"object\"}"));
    let qa = builtin::get(builtin::QUESTION_ANSWERING)
        .expect("qa")
        .render([("context", "Paris is in France."), ("question", "Where is Paris?")])
        .expect("render");
    assert!(qa.contains("Question: Where is Paris?"));
}
