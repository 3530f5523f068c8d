//! Arguments the user has not given. The tools take them as optional so a
//! model (even one whose output a grammar forces into the schema) can leave
//! out what it does not know instead of inventing it; the tool then says
//! what to ask the user.

use agent_core::ToolError;

/// `value` when given and not blank; otherwise `None`, and `what` is added
/// to `missing`.
pub(crate) fn given<'a>(
    value: Option<&'a str>,
    what: &'static str,
    missing: &mut Vec<&'static str>,
) -> Option<&'a str> {
    let value = value.map(str::trim).filter(|value| !value.is_empty());
    if value.is_none() {
        missing.push(what);
    }
    value
}

/// The error for arguments the user has not given: ask, do not guess.
pub(crate) fn ask_user(missing: &[&str]) -> ToolError {
    let list = match missing {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    ToolError::failed(format!(
        "the user has not said {list}. Do not guess and do not call the tool again yet: \
         ask the user {list} in one short question."
    ))
}

/// The error for an argument the model made up: `reason`, then the
/// question the model should ask the user instead ("Which city do you
/// mean?").
pub(crate) fn ask_back(reason: &str, question: &str) -> ToolError {
    ToolError::failed(format!(
        "{reason}. Reply to the user with a short question, for example: {question}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_are_listed_in_one_question() {
        let mut missing = Vec::new();
        assert_eq!(given(Some(" NYC "), "the origin", &mut missing), Some("NYC"));
        assert_eq!(given(Some("  "), "the destination", &mut missing), None);
        assert_eq!(given(None, "the date", &mut missing), None);
        assert_eq!(missing, ["the destination", "the date"]);
        assert_eq!(
            ask_user(&missing).to_string(),
            "the user has not said the destination and the date. Do not guess and do not call the tool again \
             yet: ask the user the destination and the date in one short question."
        );
        assert!(ask_user(&["a", "b", "c"]).to_string().contains("said a, b and c."));
    }
}
