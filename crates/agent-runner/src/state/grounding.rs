//! The grounding check of a final answer, as the state machine applies it
//! ([`Grounding::On`](crate::Grounding)).
//!
//! A final answer is faulty when it states a figure that no evidence gave
//! (while a tool is offered), repeats an instruction meant for the model, or
//! ignores every result of the calls made for the question. A faulty answer
//! is never passed on as it is:
//! 1. no call was made yet: the model is asked again with a tool call
//!    required (on llama the call grammar then decides the reply);
//! 2. calls were made (failed ones too): the model is asked once more with
//!    the turn's results and failures restated, tools off;
//! 3. still faulty (or a forced answer): the answer is replaced by what the
//!    tools returned (their `summary` field, or the whole short result), or
//!    by "I could not look that up." when they returned nothing usable.
//!
//! The figures and the evidence are [`crate::grounding`]'s.

use std::collections::HashSet;

use agent_core::{AgentEvent, GroundingAction, GroundingFault, GroundingRecord, Message, ToolChoice};
use serde::{Deserialize, Serialize};

use super::{Phase, RunState};
use crate::grounding::{Evidence, ungrounded};
use crate::prompts;
use crate::protocol::Protocol;

/// Where the grounding check of a run stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct GroundingGate {
    /// What was found and done so far.
    record: GroundingRecord,
    /// The model was asked again with a call required.
    reasked_for_call: bool,
    /// The model was asked again with the results restated.
    reasked_with_results: bool,
    /// The pending model call carries a transient message (a restatement,
    /// a reminder) as its last message.
    restating: bool,
}

impl GroundingGate {
    /// The record for the run's result.
    pub(super) fn record(&self) -> GroundingRecord {
        self.record.clone()
    }
}

/// What is wrong with an answer.
struct Findings {
    faults: Vec<GroundingFault>,
    ungrounded: Vec<String>,
}

impl RunState {
    /// Removes the transient restatement of a re-ask from the history, once
    /// its answer arrived (or the run was interrupted).
    pub(super) fn drop_restatement(&mut self) {
        if std::mem::take(&mut self.grounding.restating)
            && matches!(self.request.messages.last(), Some(Message::User { .. }))
        {
            self.request.messages.pop();
        }
    }

    /// Adds `text` as a user message that only the next model call sees:
    /// it leaves the history once that call's reply arrives.
    pub(super) fn push_transient(&mut self, text: String) {
        self.grounding.restating = true;
        self.request.messages.push(Message::user(text));
    }

    /// Checks the final answer just added to the history. `true` when the
    /// model is asked again (the run goes on); `false` when the answer
    /// stands, possibly replaced.
    pub(super) fn check_grounding(&mut self, forced: bool) -> bool {
        if self.config.grounding == crate::Grounding::Off {
            return false;
        }
        let findings = self.findings();
        self.grounding.record.note(&findings.faults, &findings.ungrounded);
        if findings.faults.is_empty() {
            self.complete_the_answer();
            return false;
        }
        // Raw result data alone is put right without asking again: the
        // results' summaries say the same for a person.
        let only_raw = findings.faults == [GroundingFault::RawResult];
        let action = if forced || only_raw {
            GroundingAction::Replaced
        } else if self.tool_calls.is_empty() && !self.grounding.reasked_for_call && self.can_require_a_call() {
            GroundingAction::ReaskedForCall
        } else if !self.tool_calls.is_empty() && !self.grounding.reasked_with_results {
            GroundingAction::ReaskedWithResults
        } else {
            GroundingAction::Replaced
        };
        self.grounding.record.actions.push(action);
        self.emit(AgentEvent::AnswerUngrounded {
            iteration: self.iteration,
            faults: findings.faults,
            ungrounded: findings.ungrounded,
            action,
        });
        // The faulty answer leaves the history: the model must not copy it.
        self.request.messages.pop();
        match action {
            GroundingAction::ReaskedForCall => {
                self.grounding.reasked_for_call = true;
                self.request.tool_choice = ToolChoice::Required;
            }
            GroundingAction::ReaskedWithResults => {
                self.grounding.reasked_with_results = true;
                self.request.tool_choice = ToolChoice::None;
                let restatement = prompts::restated_results(&self.result_lines(true));
                self.push_transient(restatement);
            }
            GroundingAction::Replaced | GroundingAction::Completed => {
                let answer = self.failed_lookup_answer();
                self.request.messages.push(Message::assistant(answer.clone()));
                self.response = answer;
                return false;
            }
        }
        self.response.clear();
        self.prepared = false;
        self.phase = Phase::NeedsModel { forced: None };
        true
    }

    /// Adds to a sound answer what the results it leaves out say: a small
    /// model given several results often answers from one of them.
    fn complete_the_answer(&mut self) {
        let omitted = self.omitted_results(&self.response);
        if omitted.is_empty() {
            return;
        }
        let faults = vec![GroundingFault::OmittedResults];
        self.grounding.record.note(&faults, &[]);
        self.grounding.record.actions.push(GroundingAction::Completed);
        self.emit(AgentEvent::AnswerUngrounded {
            iteration: self.iteration,
            faults,
            ungrounded: Vec::new(),
            action: GroundingAction::Completed,
        });
        let completed = format!("{}\n\n{}", self.response.trim_end(), omitted.join("\n"));
        if let Some(Message::Assistant(answer)) = self.request.messages.last_mut() {
            answer.content.clone_from(&completed);
        }
        self.response = completed;
    }

    /// The summaries of the run's successful results that `answer` does
    /// not mention: none of their figures, and none of the words that only
    /// they hold (a city both a weather and a flight result name says
    /// nothing of which one the answer used).
    fn omitted_results(&self, answer: &str) -> Vec<String> {
        let figures = crate::grounding::figures(answer);
        let answer_words: HashSet<String> = words(answer).into_iter().collect();
        let results: Vec<(&str, HashSet<String>)> = self
            .turn_calls()
            .filter(|call| !call.is_error)
            .map(|call| {
                let terms = result_values(&call.result)
                    .iter()
                    .flat_map(|value| words(value))
                    .filter(|word| is_content_word(word))
                    .collect();
                (call.result.as_str(), terms)
            })
            .collect();
        let mut omitted: Vec<String> = Vec::new();
        for (index, (result, terms)) in results.iter().enumerate() {
            let mut evidence = Evidence::new();
            evidence.add(result);
            let by_figure = figures.iter().any(|figure| evidence.contains(figure));
            let by_word = terms.iter().any(|term| {
                answer_words.contains(term)
                    && results
                        .iter()
                        .enumerate()
                        .all(|(other, (_, others))| other == index || !others.contains(term))
            });
            if !by_figure
                && !by_word
                && let Some(summary) = summary_of(result)
                && !omitted.contains(&summary)
            {
                omitted.push(summary);
            }
        }
        omitted
    }

    /// The calls of this run that were answered in the history.
    fn turn_calls(&self) -> impl Iterator<Item = &agent_core::ToolCallRecord> {
        self.tool_calls.iter().filter(|call| call.duplicate_of.is_none())
    }

    /// Whether a tool call can be required of the model: tools are offered
    /// natively and the configuration does not rule calls out.
    fn can_require_a_call(&self) -> bool {
        !self.request.tools.is_empty()
            && matches!(self.protocol, Protocol::Native)
            && self.config.tool_choice != ToolChoice::None
    }

    /// Whether the model is offered any tool.
    fn offers_tools(&self) -> bool {
        match &self.protocol {
            Protocol::Native => !self.request.tools.is_empty() && self.request.tool_choice != ToolChoice::None,
            Protocol::Text { tool_names } => !tool_names.is_empty(),
            Protocol::React => true,
        }
    }

    fn findings(&self) -> Findings {
        let answer = self.response.as_str();
        let mut faults = Vec::new();
        let mut evidence = Evidence::new();
        if let Some(system) = &self.request.system {
            evidence.add(system);
        }
        for message in &self.request.messages {
            match message {
                Message::System { content } => evidence.add(content),
                Message::User { content, .. } => evidence.add_user(content),
                Message::Tool(result) => evidence.add(&result.content),
                Message::Assistant(_) => {}
            }
        }
        for call in &self.tool_calls {
            evidence.add(&call.result);
        }
        let offered = self.offers_tools() || !self.tool_calls.is_empty();
        let ungrounded: Vec<String> = if offered {
            ungrounded(answer, &evidence)
                .into_iter()
                .map(|figure| figure.text)
                .collect()
        } else {
            Vec::new()
        };
        if !ungrounded.is_empty() {
            faults.push(GroundingFault::UngroundedFigures);
        }
        if self.echoes_an_instruction(answer) {
            faults.push(GroundingFault::EchoedInstruction);
        }
        if self.ignores_the_results(answer) || self.ignores_the_failures(answer) {
            faults.push(GroundingFault::IgnoredResults);
        }
        if says_nothing(answer) {
            faults.push(GroundingFault::NoAnswer);
        }
        if self.writes_a_call(answer) {
            faults.push(GroundingFault::WroteACall);
        }
        if self.copies_a_raw_result(answer) {
            faults.push(GroundingFault::RawResult);
        }
        Findings { faults, ungrounded }
    }

    /// Whether `answer` repeats text meant for the model: a run of
    /// [`ECHO_WORDS`] words (or the whole of a shorter answer) of an
    /// instruction sentence of a failed call's result, or of the runner's
    /// own requests.
    fn echoes_an_instruction(&self, answer: &str) -> bool {
        let answer_words = words(answer);
        if answer_words.is_empty() {
            return false;
        }
        let mut instructions: Vec<Vec<String>> = self
            .turn_calls()
            .filter(|call| call.is_error)
            .flat_map(|call| clauses(&call.result))
            .map(words)
            .filter(|sentence| is_instruction(sentence))
            .collect();
        let forced_instruction = self
            .forced_answer_instruction
            .clone()
            .unwrap_or_else(prompts::forced_answer_instruction);
        instructions.push(words(&forced_instruction));
        instructions.push(words(&prompts::restated_results(&[])));
        instructions.push(words(&prompts::repeated_calls_reminder(&[], "")));
        let window = ECHO_WORDS.min(answer_words.len());
        if window < MIN_ECHO_WORDS {
            return false;
        }
        let runs: HashSet<&[String]> = instructions
            .iter()
            .flat_map(|sentence| sentence.windows(window))
            .collect();
        answer_words.windows(window).any(|run| runs.contains(run))
    }

    /// Whether `answer` holds a tool call: tagged call markup, or call JSON
    /// or a `use` line naming a tool offered or called in the run.
    fn writes_a_call(&self, answer: &str) -> bool {
        let mut tools: Vec<&str> = self.request.tools.iter().map(|tool| tool.name.as_str()).collect();
        tools.extend(self.tool_calls.iter().map(|call| call.name.as_str()));
        if let Protocol::Text { tool_names } = &self.protocol {
            tools.extend(tool_names.iter().map(String::as_str));
        }
        let parsed = agent_parse::ToolCallParser::new().known_tools(tools).parse(answer);
        parsed.has_calls() || !parsed.malformed.is_empty()
    }

    /// Whether calls were made in this run, every one failed, and `answer`
    /// neither says that anything went wrong ([`FAILURE_WORDS`]) nor asks
    /// the user something (what a failure for a missing detail calls for).
    fn ignores_the_failures(&self, answer: &str) -> bool {
        let mut calls = self.turn_calls().peekable();
        if calls.peek().is_none() || !calls.all(|call| call.is_error) {
            return false;
        }
        let answer = answer.to_lowercase().replace('\u{2019}', "'");
        !answer.contains('?') && !FAILURE_WORDS.iter().any(|word| answer.contains(word))
    }

    /// What the user is told instead of an answer: what the calls returned,
    /// or that the lookup failed and why.
    pub(super) fn failed_lookup_answer(&self) -> String {
        prompts::replaced_answer(&self.result_lines(false), self.failure_reason().as_deref())
    }

    /// Why the run's first failed call failed, for the user: the first
    /// sentence of its result, or, when that speaks to the model, the head
    /// it opens with before a colon ("division by zero: ... do not retry
    /// it" gives "division by zero"); none when both speak to the model.
    fn failure_reason(&self) -> Option<String> {
        let call = self.turn_calls().find(|call| call.is_error)?;
        let sentence = first_sentence(&call.result);
        let plain = |text: &str| !text.is_empty() && !is_instruction(&words(text));
        if plain(&sentence) {
            return Some(sentence);
        }
        let head = sentence.split_once(':')?.0.trim();
        plain(head).then(|| head.to_owned())
    }

    /// Whether `answer` holds the opening of a JSON result of the run's
    /// calls as the model was given it ([`RAW_RESULT_CHARS`] characters of
    /// it, verbatim).
    fn copies_a_raw_result(&self, answer: &str) -> bool {
        self.turn_calls().any(|call| {
            let result = call.result.trim_start();
            if !result.starts_with(['{', '[']) {
                return false;
            }
            let opening: String = result.chars().take(RAW_RESULT_CHARS).collect();
            opening.chars().count() == RAW_RESULT_CHARS && answer.contains(&opening)
        })
    }

    /// Whether calls succeeded in this run and `answer` mentions none of
    /// their results: no figure of theirs and no word of their values.
    fn ignores_the_results(&self, answer: &str) -> bool {
        let results: Vec<&str> = self
            .turn_calls()
            .filter(|call| !call.is_error)
            .map(|call| call.result.as_str())
            .collect();
        if results.is_empty() {
            return false;
        }
        let mut evidence = Evidence::new();
        let mut terms = HashSet::new();
        for result in &results {
            evidence.add(result);
            for value in result_values(result) {
                terms.extend(words(&value).into_iter().filter(|word| is_content_word(word)));
            }
        }
        let figures = crate::grounding::figures(answer);
        let mentions_a_figure = figures.iter().any(|figure| evidence.contains(figure));
        let mentions_a_word = words(answer).iter().any(|word| terms.contains(word));
        !mentions_a_figure && !mentions_a_word
    }

    /// One line per successful call of the run: its summary (or its whole
    /// result when short); with `with_failures`, a line per failed call too.
    pub(super) fn result_lines(&self, with_failures: bool) -> Vec<String> {
        let mut lines = Vec::new();
        for call in self.turn_calls() {
            if call.is_error {
                if with_failures {
                    lines.push(format!("{} failed: {}", call.name, first_sentence(&call.result)));
                }
            } else if let Some(summary) = summary_of(&call.result)
                && !lines.contains(&summary)
            {
                lines.push(summary);
            }
        }
        lines
    }
}

/// The characters of a JSON result's opening that, copied into an answer,
/// make it raw data: enough to hold a key and the start of its value.
const RAW_RESULT_CHARS: usize = 24;

/// Words of a copied run that make an answer an echo.
const ECHO_WORDS: usize = 6;

/// Shorter answers are not judged echoes: "No, thank you." may well be
/// the model's own words.
const MIN_ECHO_WORDS: usize = 3;

/// The longest whole result used as a summary.
const MAX_SUMMARY_CHARS: usize = 300;

/// Words by which an answer says something went wrong.
const FAILURE_WORDS: [&str; 14] = [
    "not ",
    "n't",
    "unable",
    "fail",
    "error",
    "sorry",
    "unfortunately",
    "unknown",
    "invalid",
    "no such",
    "couldn",
    "cannot",
    "problem",
    "impossible",
];

/// Whether `answer` says nothing: no word or figure other than a code
/// fence's language tag.
fn says_nothing(answer: &str) -> bool {
    words(answer).iter().all(|word| word == "json")
}

/// Verbs that open an instruction to the model.
const IMPERATIVES: [&str; 10] = [
    "call", "reply", "ask", "use", "try", "retry", "answer", "tell", "pass", "provide",
];

/// A sentence speaks to the model when it opens with an imperative or
/// talks about "the user" or a tool.
fn is_instruction(sentence: &[String]) -> bool {
    let opens_with_imperative = sentence
        .first()
        .is_some_and(|word| IMPERATIVES.contains(&word.as_str()));
    let about_the_user = sentence.windows(2).any(|pair| pair[0] == "the" && pair[1] == "user");
    let about_a_tool = sentence.iter().any(|word| word == "tool");
    opens_with_imperative || about_the_user || about_a_tool
}

/// Lowercase words (runs of letters and digits).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The sentences of `text`, split at `.`, `!`, `?`, `;` and line ends.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '!', '?', ';', '\n'])
        .filter(|sentence| !sentence.trim().is_empty())
}

/// The clauses of `text`: its sentences, split at `:` too, so that the
/// question a tool gives the model to ask ("Reply with a short question,
/// for example: Which city do you mean?") is a clause of its own, and an
/// answer asking it is not an echo of the instruction around it.
fn clauses(text: &str) -> impl Iterator<Item = &str> {
    sentences(text).flat_map(|sentence| sentence.split(':'))
}

fn first_sentence(text: &str) -> String {
    sentences(text).next().unwrap_or(text).trim().to_owned()
}

/// A word that says something of a result: not a number, at least four
/// letters, not a common word.
fn is_content_word(word: &str) -> bool {
    const COMMON: [&str; 16] = [
        "that", "this", "with", "from", "have", "were", "what", "when", "your", "will", "there", "their", "about",
        "which", "would", "could",
    ];
    word.chars().count() >= 4 && !word.chars().all(|c| c.is_ascii_digit()) && !COMMON.contains(&word)
}

/// The values of a result: a JSON result's strings and numbers (its keys
/// are the tool's vocabulary, not what it found), or the whole text.
fn result_values(result: &str) -> Vec<String> {
    fn collect(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => out.push(text.clone()),
            serde_json::Value::Number(number) => out.push(number.to_string()),
            serde_json::Value::Bool(_) | serde_json::Value::Null => {}
            serde_json::Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
            serde_json::Value::Object(fields) => fields.values().for_each(|item| collect(item, out)),
        }
    }
    match serde_json::from_str::<serde_json::Value>(result) {
        Ok(value) => {
            let mut out = Vec::new();
            collect(&value, &mut out);
            out
        }
        Err(_) => vec![result.to_owned()],
    }
}

/// What a result says, for a person: its `summary` field; else, for a JSON
/// object, its plain fields as `name: value` pairs; else the whole result;
/// `None` when that is longer than [`MAX_SUMMARY_CHARS`].
fn summary_of(result: &str) -> Option<String> {
    let text = match serde_json::from_str::<serde_json::Value>(result) {
        Ok(serde_json::Value::Object(fields)) => match fields.get("summary").and_then(serde_json::Value::as_str) {
            Some(summary) => summary.trim().to_owned(),
            None => fields
                .iter()
                .filter_map(|(name, value)| match value {
                    serde_json::Value::String(text) => Some(format!("{name}: {text}")),
                    serde_json::Value::Number(number) => Some(format!("{name}: {number}")),
                    serde_json::Value::Bool(flag) => Some(format!("{name}: {flag}")),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(", "),
        },
        _ => result.trim().to_owned(),
    };
    (!text.is_empty() && text.chars().count() <= MAX_SUMMARY_CHARS).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_told_from_information() {
        for sentence in [
            "Call the tool again with the place the user meant",
            "The user has not named London",
            "Reply to the user with the figures",
            "the tool needs a date",
            " use numbers, + - * / % ^, parentheses",
        ] {
            assert!(is_instruction(&words(sentence)), "{sentence}");
        }
        for sentence in ["City not found", "Paris: 18 °C, light rain", "No flights on that day"] {
            assert!(!is_instruction(&words(sentence)), "{sentence}");
        }
    }

    #[test]
    fn an_instruction_after_a_semicolon_is_a_sentence_of_its_own() {
        let error = "syntax error at column 8: unexpected character '='; use numbers, + - * / % ^, parentheses";
        let instructions: Vec<Vec<String>> = sentences(error)
            .map(words)
            .filter(|sentence| is_instruction(sentence))
            .collect();
        assert_eq!(instructions, [words("use numbers, parentheses")]);
    }

    #[test]
    fn the_question_a_tool_suggests_is_not_part_of_its_instruction() {
        let error = "the user has not said when the flight is. Reply to the user with a short question, \
                     for example: On what date do you want to fly?";
        let instructions: Vec<String> = clauses(error)
            .filter(|clause| is_instruction(&words(clause)))
            .map(|clause| clause.trim().to_owned())
            .collect();
        assert_eq!(
            instructions,
            [
                "the user has not said when the flight is",
                "Reply to the user with a short question, for example"
            ]
        );
    }

    #[test]
    fn a_summary_is_the_summary_field_or_a_short_result() {
        assert_eq!(
            summary_of(r#"{"city": "Paris", "summary": "Paris: 18 °C, light rain"}"#).as_deref(),
            Some("Paris: 18 °C, light rain")
        );
        assert_eq!(summary_of("391").as_deref(), Some("391"));
        assert_eq!(
            summary_of(r#"{"expression": "12 * 3", "result": 36, "steps": [1, 2]}"#).as_deref(),
            Some("expression: 12 * 3, result: 36"),
            "a JSON object's plain fields, for a person"
        );
        assert_eq!(summary_of(&"x".repeat(MAX_SUMMARY_CHARS + 1)), None);
        assert_eq!(summary_of(r#"{"summary": "  "}"#), None);
    }

    #[test]
    fn result_values_leave_out_the_keys() {
        let mut values = result_values(r#"{"condition": "drizzle", "temperature_c": 6.9, "tags": ["wet"]}"#);
        values.sort();
        assert_eq!(values, ["6.9", "drizzle", "wet"]);
        assert_eq!(result_values("plain text"), ["plain text"]);
    }
}
