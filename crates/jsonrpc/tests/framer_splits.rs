//! Any split of a stream of values gives back the same values.

use jsonrpc::{Framer, Limits};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        // Strings heavy in what the framer must get right: quotes,
        // backslashes, brackets, non-ASCII.
        proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('{'),
                Just('}'),
                Just('['),
                Just(']'),
                Just('é'),
                Just('\u{1F600}'),
                Just('\n'),
                any::<char>(),
            ],
            0..12
        )
        .prop_map(|c| Value::String(c.into_iter().collect())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("[a-z\"\\\\{}]{0,6}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A top-level value: an object or an array.
fn top() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(value(), 0..4).prop_map(Value::Array),
        proptest::collection::vec(("[a-z]{1,4}", value()), 0..4)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
    ]
}

proptest! {
    #[test]
    fn any_split_gives_the_same_values(
        values in proptest::collection::vec((top(), any::<bool>(), " {0,2}"), 1..8),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut stream = Vec::new();
        // What serde_json makes of each value's text alone (its float
        // parsing does not always give back the bits it printed).
        let mut want: Vec<Value> = Vec::new();
        for (v, pretty, ws) in &values {
            let text = if *pretty {
                serde_json::to_vec_pretty(v).unwrap()
            } else {
                serde_json::to_vec(v).unwrap()
            };
            want.push(serde_json::from_slice(&text).unwrap());
            stream.extend_from_slice(&text);
            stream.extend_from_slice(ws.as_bytes());
        }
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        at.push(0);
        at.push(stream.len());
        at.sort_unstable();
        let mut f = Framer::new(Limits::default());
        let mut got = Vec::new();
        for w in at.windows(2) {
            f.push(&stream[w[0]..w[1]]);
            while let Some(v) = f.next() {
                got.push(v.unwrap());
            }
        }
        prop_assert_eq!(got, want);
        prop_assert!(f.is_idle());
        prop_assert_eq!(f.buffered(), 0);
    }

    /// Garbage never panics and never yields more than it was given.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), cut in any::<prop::sample::Index>()) {
        let mut f = Framer::new(Limits { max_message: 128, max_depth: 8 });
        let c = cut.index(bytes.len() + 1);
        f.push(&bytes[..c]);
        f.push(&bytes[c..]);
        let mut errors = 0;
        while let Some(v) = f.next() {
            if v.is_err() {
                errors += 1;
            }
        }
        prop_assert!(errors <= 1);
        prop_assert!(f.buffered() <= bytes.len());
    }
}
