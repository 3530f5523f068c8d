//! `get_currency_exchange`: conversion between ~20 currencies at fixed,
//! plausible demo rates.

use agent_core::ToolError;
use agent_tools::UserWords;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Units of each currency per US dollar. Fixed demo rates, not live data.
pub(crate) static RATES: &[(&str, &str, f64)] = &[
    ("USD", "US dollar", 1.0),
    ("EUR", "euro", 0.92),
    ("GBP", "pound sterling", 0.79),
    ("JPY", "Japanese yen", 151.5),
    ("CNY", "Chinese yuan", 7.24),
    ("INR", "Indian rupee", 83.4),
    ("CAD", "Canadian dollar", 1.36),
    ("AUD", "Australian dollar", 1.52),
    ("NZD", "New Zealand dollar", 1.66),
    ("CHF", "Swiss franc", 0.89),
    ("SEK", "Swedish krona", 10.6),
    ("NOK", "Norwegian krone", 10.7),
    ("DKK", "Danish krone", 6.87),
    ("MXN", "Mexican peso", 17.1),
    ("BRL", "Brazilian real", 5.05),
    ("KRW", "South Korean won", 1345.0),
    ("SGD", "Singapore dollar", 1.35),
    ("HKD", "Hong Kong dollar", 7.82),
    ("ZAR", "South African rand", 18.6),
    ("TRY", "Turkish lira", 32.2),
    ("AED", "UAE dirham", 3.6725),
    ("THB", "Thai baht", 36.4),
];

/// Arguments of `get_currency_exchange`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeArgs {
    /// The ISO 4217 code of the currency to convert from, e.g. "USD".
    pub from: String,
    /// The ISO 4217 code of the currency to convert to, e.g. "EUR" or "JPY".
    pub to: String,
    /// How much of the `from` currency to convert, e.g. 250 or 19.99. Zero or more.
    pub amount: f64,
}

/// What `get_currency_exchange` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exchange {
    /// The conversion in one sentence, first: "1000 USD = 920.00 EUR
    /// (rate 0.92)".
    pub summary: String,
    /// The source currency code.
    pub from: String,
    /// The target currency code.
    pub to: String,
    /// The amount converted.
    pub amount: f64,
    /// Units of `to` per unit of `from`, six decimals.
    pub rate: f64,
    /// `amount * rate`, rounded to 2 decimals.
    pub converted_amount: f64,
    /// Where the rate comes from.
    pub rate_source: String,
}

/// Converts an amount between two currencies; with what the user `said`,
/// an amount when the user gave no figure is refused
/// ([`check_amount`](crate::grounding::check_amount)).
pub(crate) fn exchange(args: &ExchangeArgs, said: Option<&UserWords>) -> Result<Exchange, ToolError> {
    let (from, from_rate) = currency(&args.from, "from")?;
    let (to, to_rate) = currency(&args.to, "to")?;
    if !args.amount.is_finite() || args.amount < 0.0 {
        return Err(ToolError::failed(format!(
            "amount must be zero or a positive number, got {}",
            args.amount
        )));
    }
    crate::grounding::check_amount(said, args.amount)?;
    let rate = to_rate / from_rate;
    let converted = round_to(args.amount * rate, 2);
    if !converted.is_finite() {
        return Err(ToolError::failed("amount is too large to convert"));
    }
    Ok(Exchange {
        summary: format!(
            "{} {from} = {converted:.2} {to} (rate {})",
            args.amount,
            round_to(rate, 6)
        ),
        from: from.to_owned(),
        to: to.to_owned(),
        amount: args.amount,
        rate: round_to(rate, 6),
        converted_amount: converted,
        rate_source: "fixed demo rates".to_owned(),
    })
}

fn currency(input: &str, field: &str) -> Result<(&'static str, f64), ToolError> {
    let code = input.trim().to_ascii_uppercase();
    RATES
        .iter()
        .find(|(known, _, _)| *known == code)
        .map(|&(known, _, rate)| (known, rate))
        .ok_or_else(|| {
            let codes: Vec<&str> = RATES.iter().map(|(code, _, _)| *code).collect();
            ToolError::failed(format!(
                "unknown currency code {input:?} for `{field}`; use one of the ISO 4217 codes {}",
                codes.join(", ")
            ))
        })
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (value * scale).round() / scale;
    if rounded == 0.0 { 0.0 } else { rounded }
}
