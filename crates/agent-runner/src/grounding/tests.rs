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
        (
            "How warm is Paris, and what is 12 * 3?",
            r#"{"city": "Paris", "temperature_c": 18.44}"#,
            "Paris has 18.4 °C, 12 * 3 is 36, and Rome has 24 °C.",
            &["24 °C"],
        ),
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

#[test]
fn scales_signs_points_and_suffix_currencies_are_read() {
    use FigureKind::*;
    let found = kinds(
        "$1.2 million, 8.3 billion people, 12.5K, £1.2m, 3bn; -$5 and 12.50 € and 12.50€; .5 and (.25); \
         1 000 000 and 1\u{a0}234.5",
    );
    let expected = [
        ("$1.2 million", Money, 1_200_000.0),
        ("8.3 billion", Number, 8_300_000_000.0),
        ("12.5K", Number, 12_500.0),
        ("£1.2m", Money, 1_200_000.0),
        ("3bn", Number, 3_000_000_000.0),
        ("-$5", Money, -5.0),
        ("12.50 €", Money, 12.5),
        ("12.50€", Money, 12.5),
        (".5", Number, 0.5),
        (".25", Number, 0.25),
        ("1 000 000", Number, 1_000_000.0),
        ("1\u{a0}234.5", Number, 1234.5),
    ];
    let expected: Vec<(String, FigureKind, f64)> = expected
        .iter()
        .map(|(text, kind, value)| ((*text).to_owned(), *kind, *value))
        .collect();
    assert_eq!(found, expected);
    let precision: Vec<i32> = figures("1.2 million, 12k, 6.94, 1,000")
        .iter()
        .map(|f| f.decimals)
        .collect();
    assert_eq!(precision, [-5, -3, 2, 0]);
}

#[test]
fn spaces_and_dots_that_are_not_separators_keep_numbers_apart() {
    assert_eq!(texts("3 100m sprints"), ["3", "100m"]);
    assert_eq!(texts("2 100-200 ranges"), ["2", "100", "200"]);
    assert_eq!(texts("3..5"), ["3", "5"]);
    assert_eq!(texts("pay 3 $5 bills"), ["3", "$5"]);
    assert_eq!(texts("you may 3 times, in May 3"), ["3", "May 3"]);
    assert_eq!(texts("1.2 millionaires"), ["1.2"]);
}

#[test]
fn formatting_variants_support_each_other_both_ways() {
    let pairs = [
        ("1,000", "1000"),
        ("1 000", "1,000"),
        ("$432", "432 USD"),
        ("USD 432", "432 dollars"),
        ("€12.50", "12.5 EUR"),
        ("12%", "12 percent"),
        ("6.9 °C", "6.9°C"),
        ("44 °F", "44 degrees"),
        ("14:30", "2:30 pm"),
        ("9am", "09:00"),
        ("2026-06-02", "2 June 2026"),
        ("$1,200,000", "$1.2 million"),
        ("5.0", "5"),
    ];
    for (one, other) in pairs {
        assert!(invented("", one, other).is_empty(), "{one} supports {other}");
        assert!(invented("", other, one).is_empty(), "{other} supports {one}");
    }
}

#[test]
fn evidence_supports_its_roundings_only() {
    let tool = r#"{"temperature_c": 6.94, "total": 1234.567, "population": 8296000000}"#;
    for answer in [
        "6.9 °C",
        "7 °C",
        "1234.57",
        "1235",
        "1,235",
        "8.3 billion",
        "8 billion",
        "8.30 billion",
    ] {
        assert!(invented("", tool, answer).is_empty(), "{answer}");
    }
    for answer in ["6.8 °C", "6.90 °C", "1234.5", "1234", "8.2 billion", "8.296001 billion"] {
        assert_eq!(invented("", tool, answer), [answer], "{answer}");
    }
}

#[test]
fn times_without_am_or_pm_match_either_half_of_the_day() {
    assert!(invented("", "departs 14:30", "It leaves at 2:30.").is_empty());
    assert!(invented("", "departs 00:15", "It leaves at 12:15.").is_empty());
    assert_eq!(invented("", "departs 14:30", "It leaves at 2:30 am."), ["2:30 am"]);
    assert_eq!(invented("", "departs 02:30", "It leaves at 14:30."), ["14:30"]);
}

#[test]
fn a_dated_answer_needs_its_year_somewhere_in_the_evidence() {
    assert!(invented("", "June 2", "on June 2").is_empty());
    assert!(invented("It is 2026.", "next flight: June 2", "on June 2, 2026").is_empty());
    assert_eq!(invented("", "next flight: June 2", "on June 2, 2027"), ["June 2, 2027"]);
    assert!(invented("", "2026-06-02", "Tuesday, June 2nd").is_empty());
    assert_eq!(invented("", "2026-06-02", "Tuesday, June 3rd"), ["June 3rd"]);
}

#[test]
fn identifiers_counts_and_ordinals_are_never_ungrounded() {
    let answer =
        "Use gpt-4o or qwen2.5 (v1.2.3) on a B737 with H2O in 3D. Step 2: pick the 3rd of 10 options. 1. go 2. stop";
    assert!(invented("", "", answer).is_empty());
    assert!(invented("", "", "Keep 5.0 of them.").is_empty());
    assert_eq!(invented("", "", "Buy 11 of them."), ["11"]);
    assert_eq!(invented("", "", "It costs $5."), ["$5"], "an amount is never a count");
}

#[test]
fn negative_temperatures_keep_their_sign() {
    let tool = r#"{"city": "Oslo", "temperature_c": -3.4}"#;
    assert!(invented("", tool, "Oslo: -3 °C").is_empty());
    assert!(invented("", tool, "Oslo: −3.4°C").is_empty());
    assert_eq!(invented("", tool, "Oslo: 3 °C"), ["3 °C"]);
    assert_eq!(invented("", tool, "Oslo: -4 °C"), ["-4 °C"]);
}

#[test]
fn figures_at_the_edges_and_among_other_scripts() {
    assert_eq!(texts("42"), ["42"]);
    assert_eq!(texts("-7"), ["-7"]);
    assert_eq!(texts("€5"), ["€5"]);
    assert_eq!(texts("Ünïcödé 12 ✓ 13"), ["12", "13"]);
    assert_eq!(texts("気温は18度、湿度は64%です"), ["18", "64%"]);
    assert_eq!(
        texts("Zürich42 und 42ß"),
        Vec::<String>::new(),
        "glued to Latin letters"
    );
    assert!(invented("", "気温は18度", "東京は18度、大阪は24度").contains(&"24".to_owned()));
}

#[test]
fn very_large_numbers_match_when_repeated_exactly() {
    let tool = "order 12345678901234567890 and 98765432109876543.5";
    assert!(invented("", tool, "Order 12345678901234567890 and 98765432109876543.5.").is_empty());
    assert_eq!(
        invented("", tool, "Order 12345678901234567891."),
        ["12345678901234567891"]
    );
}

#[test]
fn plain_spaced_groups_may_also_be_separate_numbers() {
    let table = "rank score\n5 120\n6 130";
    assert!(invented("", table, "Rank 5 scored 120, or 5120 in all.").is_empty());
    assert!(invented("", "150 km on day 3", "On day 3 150 km.").is_empty());
    assert_eq!(invented("", "150 km", "On day 3 160 km."), ["3 160"]);
    assert_eq!(
        invented("", "150 km on day 3", "On day 3\u{a0}150 km."),
        ["3\u{a0}150"],
        "a non-breaking space only groups"
    );
}

#[test]
fn evidence_starts_empty_and_figures_round_trip_through_serde() {
    let mut evidence = Evidence::new();
    assert!(evidence.is_empty());
    evidence.add("no figures here");
    assert!(evidence.is_empty());
    evidence.add("42");
    assert!(!evidence.is_empty());
    for figure in figures("$1.2 million on 2026-06-02 at 14:30, 6.9 °C") {
        let json = serde_json::to_string(&figure).expect("a figure serialises");
        assert_eq!(serde_json::from_str::<Figure>(&json).expect("and reads back"), figure);
    }
}

proptest::proptest! {
    #[test]
    fn any_text_scans_without_panicking(text in "\\PC{0,60}") {
        check_spans(&text);
    }

    #[test]
    fn figure_like_text_scans_without_panicking(
        text in "[0-9.,:;/ \u{a0}\u{202f}$€£°%+−\\-CFamptJunehé日🙂]{0,40}",
        evidence in "[0-9.,: $€°%\\-Jun]{0,30}",
    ) {
        check_spans(&text);
        let mut known = Evidence::new();
        known.add_user(&evidence);
        known.add(&evidence);
        for figure in ungrounded(&text, &known) {
            proptest::prop_assert!(!known.contains(&figure));
        }
    }
}

/// Every figure of `text` is its own span, with a finite value.
fn check_spans(text: &str) {
    for figure in figures(text) {
        assert_eq!(&text[figure.start..figure.end], figure.text, "{text:?}");
        assert!(figure.value.is_finite(), "{text:?}");
        assert!(figure.start < figure.end, "{text:?}");
    }
}
