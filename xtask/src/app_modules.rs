//! The import graph of agent-app's modules, guarded: no cycle (issue 33).
//! A module is a top-level file or folder of `src/`; it depends on the
//! modules its code names as `crate::NAME` (comments and test modules left
//! out, as [`crate::app_size::code_lines`] does).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::app_size::code_lines;

/// Fails naming the modules of a cycle, when there is one.
pub fn run(sources: &Path) -> Result<(), String> {
    let graph = module_graph(sources)?;
    if let Some(cycle) = find_cycle(&graph) {
        return Err(format!(
            "agent-app's modules import each other in a cycle: {}; the lower module must not name the higher one",
            cycle.join(" -> ")
        ));
    }
    eprintln!(
        "==> xtask ci: agent-app's {} modules import each other in no cycle",
        graph.len()
    );
    Ok(())
}

/// Each top-level module of `sources` with the modules it names.
pub fn module_graph(sources: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![sources.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|error| format!("reading {}: {error}", dir.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|error| format!("reading {}: {error}", dir.display()))?
                .path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|extension| extension != "rs") {
                continue;
            }
            let Some(module) = top_module(sources, &path) else {
                continue;
            };
            let text =
                std::fs::read_to_string(&path).map_err(|error| format!("reading {}: {error}", path.display()))?;
            let named = named_modules(&code_lines(&text).join("\n"));
            graph.entry(module).or_default().extend(named);
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (module, named) in &mut graph {
        named.retain(|name| name != module && modules.contains(name));
    }
    Ok(graph)
}

/// The top-level module a file belongs to (`src/a.rs` and `src/a/b.rs`: `a`).
fn top_module(sources: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(sources).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The modules `code` names after `crate::`, also inside `crate::{a, b::c}`.
pub fn named_modules(code: &str) -> BTreeSet<String> {
    let identifier = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The first identifier of each item at the group's top level.
            let mut depth = 0usize;
            let mut item_start = true;
            for (index, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_ascii_alphanumeric() || c == '_') => {
                        named.insert(identifier(&group[index..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = identifier(rest);
            if !name.is_empty() {
                named.insert(name);
            }
        }
    }
    named
}

/// A cycle of the graph, as the modules along it with the first repeated
/// at the end; `None` when there is none.
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        module: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match marks.get(module) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|open| *open == module).unwrap_or(0);
                let mut cycle: Vec<String> = path[start..].iter().map(|name| (*name).to_owned()).collect();
                cycle.push(module.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(module, Mark::Open);
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(module, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut marks, &mut Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(module, named)| {
                (
                    (*module).to_owned(),
                    named.iter().map(|name| (*name).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn paths_and_groups_name_their_first_module() {
        let code = "use crate::config::Env;\nuse crate::{error::AppError, output::{self, line}};\nlet x = crate::tools::ToolBox::new();";
        let named: Vec<String> = named_modules(code).into_iter().collect();
        assert_eq!(named, ["config", "error", "output", "tools"]);
    }

    #[test]
    fn a_cycle_is_found_and_named_and_a_layering_is_not_one() {
        let layered = graph(&[("cli", &["runs", "error"]), ("runs", &["error"]), ("error", &[])]);
        assert_eq!(find_cycle(&layered), None);
        let cyclic = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
        assert_eq!(
            find_cycle(&cyclic),
            Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned(), "a".to_owned()])
        );
    }

    #[test]
    fn the_apps_modules_have_no_cycle() {
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/agent-app/src");
        let graph = module_graph(&sources).unwrap_or_else(|error| panic!("{error}"));
        assert!(graph.len() > 10, "{graph:?}");
        assert_eq!(find_cycle(&graph), None, "{graph:?}");
    }
}
