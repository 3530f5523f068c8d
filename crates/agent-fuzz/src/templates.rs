//! `templates`: the `{{var}}` template engine.

use agent_prompts::PromptTemplate;

/// Parses `data` as a template: parsed or a typed error. A parsed template
/// renders with every variable given; its output holds each value as it
/// was given (a value is never expanded again); with one variable missing
/// it fails naming that variable.
pub fn templates(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(template) = PromptTemplate::parse(text.as_ref()) else {
        return;
    };
    // A value that looks like a template must come out as it is.
    let value = |name: &str| format!("{{{{{name}}}}}\u{1}");
    let rendered = match template.render_with(|name| Some(value(name))) {
        Ok(rendered) => rendered,
        Err(error) => panic!("a parsed template failed to render with every variable given: {error}"),
    };
    for name in template.required_variables() {
        assert!(
            rendered.contains(&value(name)),
            "the value of {name:?} is not in the output as given: {rendered:?}"
        );
    }
    if let Some(missing) = template.required_variables().first() {
        match template.render_with(|name| (name != missing).then(|| value(name))) {
            Ok(rendered) => panic!("rendered without {missing:?}: {rendered:?}"),
            Err(error) => assert!(
                error.to_string().contains(missing.as_str()),
                "the error does not name the missing {missing:?}: {error}"
            ),
        }
    }
}
