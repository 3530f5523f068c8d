//! Property tests: no input makes the evaluator panic, well-formed
//! expressions agree with a direct evaluation of the same tree, and every
//! error names a column inside the input (or just past its end).

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use agent_tools_math::{ErrorKind, evaluate};
use proptest::prelude::*;

/// A well-formed expression tree, rendered fully parenthesised.
#[derive(Debug, Clone)]
enum Tree {
    Number(f64),
    Constant(&'static str, f64),
    Negate(Box<Tree>),
    Binary(char, Box<Tree>, Box<Tree>),
    Call(&'static str, Vec<Tree>),
}

impl Tree {
    fn render(&self) -> String {
        match self {
            Self::Number(value) => format!("{value:?}"),
            Self::Constant(name, _) => (*name).to_owned(),
            Self::Negate(inner) => format!("-({})", inner.render()),
            Self::Binary(op, left, right) => format!("({}) {op} ({})", left.render(), right.render()),
            Self::Call(name, args) => {
                let args: Vec<String> = args.iter().map(Tree::render).collect();
                format!("{name}({})", args.join(", "))
            }
        }
    }

    /// The value computed directly, `None` where the evaluator must fail.
    fn value(&self) -> Option<f64> {
        let finite = |x: f64| x.is_finite().then_some(x);
        match self {
            Self::Number(value) | Self::Constant(_, value) => Some(*value),
            Self::Negate(inner) => inner.value().map(|x| -x),
            Self::Binary(op, left, right) => {
                let (a, b) = (left.value()?, right.value()?);
                match op {
                    '+' => finite(a + b),
                    '-' => finite(a - b),
                    '*' => finite(a * b),
                    '/' | '%' if b == 0.0 => None,
                    '/' => finite(a / b),
                    '%' => finite(a % b),
                    _ if a == 0.0 && b < 0.0 => None,
                    _ if a < 0.0 && b.fract() != 0.0 => None,
                    _ => finite(a.powf(b)),
                }
            }
            Self::Call(name, args) => {
                let args: Option<Vec<f64>> = args.iter().map(Tree::value).collect();
                let args = args?;
                let x = args[0];
                let value = match *name {
                    "sqrt" if x < 0.0 => return None,
                    "sqrt" => x.sqrt(),
                    "abs" => x.abs(),
                    "ln" | "log10" if x <= 0.0 => return None,
                    "ln" => x.ln(),
                    "log10" => x.log10(),
                    "exp" => x.exp(),
                    "sin" => x.sin(),
                    "cos" => x.cos(),
                    "tan" => x.tan(),
                    "floor" => x.floor(),
                    "ceil" => x.ceil(),
                    "round" => x.round(),
                    "min" => args.iter().copied().fold(f64::INFINITY, f64::min),
                    _ => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                };
                finite(value)
            }
        }
    }
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        (0u32..10_000).prop_map(|n| Tree::Number(f64::from(n))),
        (0u32..1000, 1u32..100).prop_map(|(n, d)| Tree::Number(f64::from(n) / f64::from(d))),
        Just(Tree::Constant("pi", std::f64::consts::PI)),
        Just(Tree::Constant("e", std::f64::consts::E)),
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|tree| Tree::Negate(Box::new(tree))),
            (
                prop::sample::select(vec!['+', '-', '*', '/', '%', '^']),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, left, right)| Tree::Binary(op, Box::new(left), Box::new(right))),
            (
                prop::sample::select(vec![
                    "sqrt", "abs", "ln", "log10", "exp", "sin", "cos", "tan", "floor", "ceil", "round"
                ]),
                inner.clone()
            )
                .prop_map(|(name, arg)| Tree::Call(name, vec![arg])),
            (
                prop::sample::select(vec!["min", "max"]),
                prop::collection::vec(inner, 1..4)
            )
                .prop_map(|(name, args)| Tree::Call(name, args)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_text_never_panics(input in "[0-9.eE+\\-*/%^() ,a-z×÷−]{0,64}") {
        match evaluate(&input) {
            Ok(value) => prop_assert!(value.is_finite()),
            Err(error) => prop_assert!(error.column() >= 1 && error.column() <= input.chars().count() + 1),
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        let _ = evaluate(&input);
    }

    #[test]
    fn well_formed_trees_evaluate_like_the_tree(tree in tree()) {
        let expression = tree.render();
        match (evaluate(&expression), tree.value()) {
            (Ok(actual), Some(expected)) => {
                let tolerance = 1e-9 * expected.abs().max(1.0);
                prop_assert!((actual - expected).abs() <= tolerance, "{expression}: {actual} vs {expected}");
            }
            (Err(error), None) => prop_assert!(
                matches!(error.kind(), ErrorKind::DivisionByZero | ErrorKind::Undefined | ErrorKind::Overflow),
                "{expression}: {error}"
            ),
            (outcome, expected) => prop_assert!(false, "{expression}: got {outcome:?}, expected {expected:?}"),
        }
    }
}
