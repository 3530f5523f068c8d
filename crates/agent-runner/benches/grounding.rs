//! `grounding`: what the figure check of a final answer costs.
//!
//! `grounding/check/<answer KB>_answer_<evidence KB>_evidence`: the whole
//! check of one answer, as the runner makes it: the evidence built from a
//! user message and tool results (JSON with figures of every kind), then the
//! answer's ungrounded figures. Two sizes, the second four times the first:
//! the check is linear when its time grows about fourfold too.
//!
//! `grounding/ungrounded_only/...`: the answer's scan and lookups alone,
//! against evidence built once.

use agent_runner::grounding::{Evidence, ungrounded};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// A deterministic pseudo-random sequence (a linear congruential generator).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

const CITIES: [&str; 6] = ["Paris", "Rome", "Zürich", "Kraków", "Oslo", "東京"];
const MONTHS: [&str; 4] = ["June", "July", "Aug", "September"];

/// Tool results of about `bytes` bytes: weather, flights and prices.
fn evidence_text(bytes: usize, rng: &mut Lcg) -> Vec<String> {
    let mut results = Vec::new();
    let mut total = 0;
    while total < bytes {
        let city = CITIES[rng.next(6) as usize];
        let result = match rng.next(3) {
            0 => format!(
                r#"{{"city": "{city}", "temperature_c": {}.{}, "humidity": {}, "summary": "{city}: {}.{} °C, wind {} km/h"}}"#,
                rng.next(40),
                rng.next(100),
                rng.next(100),
                rng.next(40),
                rng.next(10),
                rng.next(60)
            ),
            1 => format!(
                r#"{{"flight": "AZ{}", "to": "{city}", "date": "2026-{:02}-{:02}", "departs": "{:02}:{:02}", "price_usd": {}, "seats": {}}}"#,
                rng.next(9000),
                rng.next(12) + 1,
                rng.next(28) + 1,
                rng.next(24),
                rng.next(60),
                rng.next(2000),
                rng.next(400)
            ),
            _ => format!(
                "Hotel in {city}: €{}.{:02} per night, {}% off until {} {}; rated {}.{} by 1,{:03} guests.",
                rng.next(500),
                rng.next(100),
                rng.next(50),
                MONTHS[rng.next(4) as usize],
                rng.next(28) + 1,
                rng.next(5),
                rng.next(10),
                rng.next(1000)
            ),
        };
        total += result.len();
        results.push(result);
    }
    results
}

/// An answer of about `bytes` bytes: sentences with figures, most of them
/// from the evidence's ranges, some invented.
fn answer_text(bytes: usize, rng: &mut Lcg) -> String {
    let mut answer = String::new();
    while answer.len() < bytes {
        let city = CITIES[rng.next(6) as usize];
        let sentence = match rng.next(4) {
            0 => format!(
                "In {city} it is {}.{} °C with {}% humidity. ",
                rng.next(40),
                rng.next(10),
                rng.next(100)
            ),
            1 => format!(
                "The flight AZ{} to {city} leaves on {} {} at {}:{:02} pm and costs ${}. ",
                rng.next(9000),
                MONTHS[rng.next(4) as usize],
                rng.next(28) + 1,
                rng.next(12) + 1,
                rng.next(60),
                rng.next(2000)
            ),
            2 => format!(
                "A room is €{}.{:02} a night, {} nights come to €{}. ",
                rng.next(500),
                rng.next(100),
                rng.next(10),
                rng.next(5000)
            ),
            _ => format!(
                "Step {}: pack for {city}, see gpt-4o notes and v1.2.3 of the plan. ",
                rng.next(10)
            ),
        };
        answer.push_str(&sentence);
    }
    answer
}

fn evidence_of(user: &str, results: &[String]) -> Evidence {
    let mut evidence = Evidence::new();
    evidence.add_user(user);
    evidence.add("You are a travel assistant. Today is 2026-06-01.");
    for result in results {
        evidence.add(result);
    }
    evidence
}

fn bench(c: &mut Criterion) {
    let user = "Plan 3 days in Paris and Rome for 2 people with a budget of 1,500 EUR.";
    let mut group = c.benchmark_group("grounding");
    for (answer_kb, evidence_kb) in [(10, 50), (40, 200)] {
        let mut rng = Lcg(42);
        let results = evidence_text(evidence_kb * 1024, &mut rng);
        let answer = answer_text(answer_kb * 1024, &mut rng);
        let evidence_bytes: usize = results.iter().map(String::len).sum();
        let id = format!("{answer_kb}k_answer_{evidence_kb}k_evidence");
        group.throughput(Throughput::Bytes((answer.len() + evidence_bytes) as u64));
        group.bench_with_input(BenchmarkId::new("check", &id), &(), |b, ()| {
            b.iter(|| ungrounded(&answer, &evidence_of(user, &results)).len());
        });
        let evidence = evidence_of(user, &results);
        group.throughput(Throughput::Bytes(answer.len() as u64));
        group.bench_with_input(BenchmarkId::new("ungrounded_only", &id), &(), |b, ()| {
            b.iter(|| ungrounded(&answer, &evidence).len());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
