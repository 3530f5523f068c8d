use super::*;

fn texts(text: &str) -> Vec<String> {
    figures(text).into_iter().map(|figure| figure.text).collect()
}

fn kinds(text: &str) -> Vec<(String, FigureKind, f64)> {
    figures(text)
        .into_iter()
        .map(|figure| (figure.text, figure.kind, figure.value))
        .collect()
}

/// The ungrounded figures of `answer`, with `user` and `tool` as evidence.
fn invented(user: &str, tool: &str, answer: &str) -> Vec<String> {
    let mut evidence = Evidence::new();
    evidence.add_user(user);
    evidence.add(tool);
    ungrounded(answer, &evidence)
        .into_iter()
        .map(|figure| figure.text)
        .collect()
}

#[test]
fn figures_are_found_with_their_kind_and_value() {
    use FigureKind::*;
    let found = kinds(
        "$1,234.50 or 432 USD, EUR 12, 30 euros; 12% and 5 percent; 6.9 °C, -3°C, 44 °F, 22 degrees Celsius; \
         2026-06-02, June 2nd, 2 June 2026, Jun 3, 2026; 14:30, 2:30 pm, 9am; 1,000 and 10km.",
    );
    let expected = [
        ("$1,234.50", Money, 1234.5),
        ("432 USD", Money, 432.0),
        ("EUR 12", Money, 12.0),
        ("30 euros", Money, 30.0),
        ("12%", Percent, 12.0),
        ("5 percent", Percent, 5.0),
        ("6.9 °C", Temperature, 6.9),
        ("-3°C", Temperature, -3.0),
        ("44 °F", Temperature, 44.0),
        ("22 degrees Celsius", Temperature, 22.0),
        ("2026-06-02", Date, 20_260_602.0),
        ("June 2nd", Date, 602.0),
        ("2 June 2026", Date, 20_260_602.0),
        ("Jun 3, 2026", Date, 20_260_603.0),
        ("14:30", Time, 870.0),
        ("2:30 pm", Time, 870.0),
        ("9am", Time, 540.0),
        ("1,000", Number, 1000.0),
        ("10km", Number, 10.0),
    ];
    let expected: Vec<(String, FigureKind, f64)> = expected
        .iter()
        .map(|(text, kind, value)| ((*text).to_owned(), *kind, *value))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn identifiers_versions_lists_and_ranges_are_not_read_as_one_figure() {
    assert!(texts("gpt-4o, qwen2.5-coder, a B737, H2O and 3D glasses").is_empty());
    assert!(texts("version 1.2.3 and v2.0").is_empty());
    assert_eq!(texts("pick 1,2,3"), ["1", "2", "3"]);
    assert_eq!(texts("10-12 days"), ["10", "12"]);
    assert_eq!(texts("It is -3 outside"), ["-3"]);
    assert_eq!(texts("The 2026-06-02T14:30 flight"), ["2026-06-02", "14:30"]);
}

#[test]
fn spans_are_byte_offsets_at_character_boundaries() {
    let text = "Zürich: 18 °C — Kraków: 21 °C";
    for figure in figures(text) {
        assert_eq!(&text[figure.start..figure.end], figure.text);
    }
    assert_eq!(texts(text), ["18 °C", "21 °C"]);
}

#[test]
fn the_table_of_answers() {
    let paris = r#"{"city": "Paris", "temperature_c": 6.94, "summary": "Paris: 6.9 °C, drizzle"}"#;
    let flight =
        r#"{"from": "BOS", "to": "FCO", "date": "2026-06-02", "departs": "14:30", "price_usd": 432, "seats": 1000}"#;
    let cases: &[(&str, &str, &str, &[&str])] = &[
        // (user, tool result, answer, ungrounded)
        ("Weather in Paris?", paris, "It is 6.9 °C in Paris.", &[]),
        ("Weather in Paris?", paris, "It is about 7 degrees in Paris.", &[]),
        ("Weather in Paris?", paris, "It is 6.94°C.", &[]),
        (
            "Weather in Paris?",
            paris,
            "Madrid is currently 22 degrees Celsius.",
            &["22 degrees Celsius"],
        ),
        (
            "Flight to Rome?",
            flight,
            "It costs $432 and leaves at 2:30 pm on June 2.",
            &[],
        ),
        (
            "Flight to Rome?",
            flight,
            "It costs 432 USD, 1,000 seats, 2 June 2026.",
            &[],
        ),
        (
            "Flight to Rome?",
            flight,
            "A ticket from Boston to Rome costs $100.",
            &["$100"],
        ),
        (
            "Flight to Rome?",
            flight,
            "It leaves at 15:30 on June 3.",
            &["15:30", "June 3"],
        ),
        (
            "Compare Paris and Rome",
            r#"{"summary": "Paris 18 °C"}"#,
            "Paris 18 °C, Rome 24 °C",
            &["24 °C"],
        ),
        ("What is 250 divided by 2.5?", "", "250 divided by 2.5 is 100.", &[]),
        ("What is 250 divided by the secret number?", "", "It is 100.", &["100"]),
        (
            "I have 1,200 EUR",
            "",
            "You have 1200 euros, 20% of it is 240.",
            &["20%", "240"],
        ),
        ("Hi", "", "Here are 3 ideas: 1. walk 2. read", &[]),
        ("Hi", "", "It will be -12 °C.", &["-12 °C"]),
    ];
    for (user, tool, answer, expected) in cases {
        assert_eq!(&invented(user, tool, answer), expected, "answer: {answer}");
    }
}

#[test]
fn derived_arithmetic_needs_two_user_numbers() {
    assert!(invented("What is 17 * 23?", "", "17 * 23 = 391").is_empty());
    assert!(invented("Add 98765 and 43210", "", "That is 141,975.").is_empty());
    assert_eq!(invented("Double 17", "", "It is 34."), ["34"]);
    // A tool's numbers are not operands: the model must not compute from them.
    assert_eq!(
        invented("Sum the prices", r#"{"a": 120, "b": 80}"#, "Together 200."),
        ["200"]
    );
}

#[test]
fn evidence_dates_and_times_support_their_other_spellings() {
    assert!(invented("", "Departure 2026-06-02T09:15", "Leaves June 2, 2026 at 9:15 am").is_empty());
    assert!(invented("", "on 12 March", "On March 12th.").is_empty());
    assert!(invented("", "Today is 2026-06-01.", "Sure, in 2026.").is_empty());
    assert_eq!(invented("", "12:00", "at noon, 12:05"), ["12:05"]);
}

#[test]
fn odd_text_never_panics_and_yields_nothing_odd() {
    let long_digits = "9".repeat(400);
    let odd = [
        "",
        "$",
        "-",
        "1,",
        "1,00",
        "12:",
        "12:5",
        "June",
        "June 99",
        "°C",
        "€€€ 3",
        "🙂 42 🙂",
        "\u{FDD0}7\u{FDD1}",
        "1.2.3.4.5.6",
        "2026-13-45",
        "US$",
        "3 a.m",
        long_digits.as_str(),
        "ß1ß 2ß",
    ];
    for text in odd {
        for figure in figures(text) {
            assert_eq!(&text[figure.start..figure.end], figure.text, "{text:?}");
            assert!(figure.value.is_finite(), "{text:?}");
        }
    }
    assert_eq!(texts("🙂 42 🙂"), ["42"]);
    assert_eq!(texts("June 99"), ["99"], "no date, a number");
}

#[test]
fn long_text_scans_in_one_pass() {
    // Many candidate starts that all fail: each character is looked at a
    // bounded number of times, so this stays fast at any size.
    let text = "1,2 ".repeat(20_000) + &" 1.".repeat(20_000) + &"June ".repeat(20_000);
    assert_eq!(figures(&text).len(), 60_000);
}
