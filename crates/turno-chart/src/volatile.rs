//! Volatile fields: values a chart may hold while it runs (a card number,
//! a one-time code) but that must never reach a persisted snapshot.
//!
//! Two ways to mark them:
//!
//! - **In a Rust context type**, wrap the field in [`Volatile<T>`]. It
//!   serialises as `null`, whatever it holds, and deserialises as
//!   [`Volatile::Missing`] whatever the input says (a hand-edited snapshot
//!   cannot smuggle a value back in). Its `Debug` never shows the value.
//! - **In a JSON context** (XState JSON machines), by JSON Pointer
//!   (RFC 6901): `Persist::volatile("/card/number")`, or a root `meta` of
//!   `{"volatile": ["/card/number"]}` in the machine config. The value is
//!   removed from the persisted context; after a restore the key is absent.
//!
//! A restored chart knows what it lost: [`Volatile::is_missing`] in Rust
//! guards, the `missing` guard ([`guards`]) in JSON machines:
//! `{"type": "missing", "params": {"path": "/card/number"}}`.
//!
//! The persistence writer also refuses to write a snapshot in which a
//! volatile value shows up elsewhere (an event payload waiting in a delayed
//! event, an invocation's input, the output): it is an error, not a silent
//! scrub ([`PersistError::VolatileLeak`](crate::persist::PersistError)).
//!
//! ```
//! use turno_chart::volatile::Volatile;
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Checkout { amount: u64, card: Volatile<String> }
//! let c = Checkout { amount: 5, card: Volatile::new("4111 1111 1111 1111".into()) };
//! let text = serde_json::to_string(&c).unwrap();
//! assert_eq!(text, r#"{"amount":5,"card":null}"#);
//! let back: Checkout = serde_json::from_str(r#"{"amount":5,"card":"injected"}"#).unwrap();
//! assert!(back.card.is_missing());
//! ```

use std::cell::RefCell;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::implementations::Implementations;

/// A value that lives only in memory: see the [module docs](self).
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Volatile<T> {
    /// The value, while the chart runs.
    Present(T),
    /// Never given, or lost in a persist/restore round trip.
    #[default]
    Missing,
}

impl<T> Volatile<T> {
    /// A present value.
    pub fn new(value: T) -> Self {
        Volatile::Present(value)
    }

    /// The value, if present.
    pub fn get(&self) -> Option<&T> {
        match self {
            Volatile::Present(v) => Some(v),
            Volatile::Missing => None,
        }
    }

    /// True when there is no value (e.g. after a restore).
    pub fn is_missing(&self) -> bool {
        matches!(self, Volatile::Missing)
    }

    /// Forgets the value.
    pub fn clear(&mut self) {
        *self = Volatile::Missing;
    }
}

impl<T> fmt::Debug for Volatile<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Volatile::Present(_) => f.write_str("Volatile(<present>)"),
            Volatile::Missing => f.write_str("Volatile(<missing>)"),
        }
    }
}

thread_local! {
    /// While the persistence writer serialises a context, the values the
    /// `Volatile`s held, so it can check nothing else carries them.
    static COLLECT: RefCell<Option<Vec<Value>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns what it returned with the values every
/// [`Volatile`] serialised inside it held.
pub(crate) fn collecting<R>(f: impl FnOnce() -> R) -> (R, Vec<Value>) {
    let outer = COLLECT.with(|c| c.borrow_mut().replace(Vec::new()));
    let r = f();
    let got = COLLECT.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
    (r, got.unwrap_or_default())
}

impl<T: Serialize> Serialize for Volatile<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Volatile::Present(v) = self {
            COLLECT.with(|c| {
                if let Some(list) = c.borrow_mut().as_mut() {
                    if let Ok(v) = serde_json::to_value(v) {
                        list.push(v);
                    }
                }
            });
        }
        s.serialize_none()
    }
}

impl<'de, T> Deserialize<'de> for Volatile<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Volatile::Missing)
    }
}

/// Is the value at JSON Pointer `path` absent or `null`?
pub fn is_missing_at(context: &Value, path: &str) -> bool {
    context.pointer(path).is_none_or(Value::is_null)
}

/// Adds the `missing` guard to JSON-context implementations: true when
/// `context` has nothing (or `null`) at the JSON Pointer `params.path`.
pub fn guards(imp: Implementations<Value>) -> Implementations<Value> {
    imp.guard("missing", |ctx, _, p| match p.get("path") {
        Some(Value::String(path)) => is_missing_at(ctx, path),
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let v = Volatile::new("123456".to_string());
        assert!(!format!("{v:?}").contains("123456"));
    }

    #[test]
    fn collecting_sees_present_values_only_inside() {
        #[derive(Serialize)]
        struct Ctx {
            a: Volatile<String>,
            b: Volatile<u32>,
        }
        let ctx = Ctx {
            a: Volatile::new("otp-991".into()),
            b: Volatile::Missing,
        };
        let (text, seen) = collecting(|| serde_json::to_string(&ctx).unwrap());
        assert_eq!(text, r#"{"a":null,"b":null}"#);
        assert_eq!(seen, vec![Value::String("otp-991".into())]);
        // Outside a collection nothing is recorded (and nothing panics).
        let _ = serde_json::to_string(&ctx).unwrap();
        let (_, none) = collecting(|| ());
        assert!(none.is_empty());
    }

    #[test]
    fn missing_guard_reads_pointers() {
        let ctx = serde_json::json!({"card": {"number": "4111", "cvc": null}});
        assert!(!is_missing_at(&ctx, "/card/number"));
        assert!(is_missing_at(&ctx, "/card/cvc"));
        assert!(is_missing_at(&ctx, "/otp"));
    }
}
