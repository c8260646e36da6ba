//! Scripted user input: key presses and clicks at virtual times.
//!
//! `turno js run page.js --model html --input input.json` reads a JSON array
//! of events, each with a virtual time `at_ms` and a `type`:
//!
//! ```json
//! [
//!   {"at_ms": 100, "type": "key", "key": "a"},
//!   {"at_ms": 120, "type": "keydown", "key": "Enter"},
//!   {"at_ms": 130, "type": "keyup", "key": "Enter"},
//!   {"at_ms": 200, "type": "click", "x": 10, "y": 20}
//! ]
//! ```
//!
//! Each becomes, at `at_ms`, one or more tasks of the **user-interaction**
//! task source: `keydown` / `keyup` a `KeyboardEvent` each; `key` a keydown
//! task then a keyup task; `mousedown` / `mouseup` a `MouseEvent`; `click`
//! a mousedown task, then a mouseup task that also fires `click` (as
//! Chromium fires it while handling the release). Keyboard events target
//! `document.body` (the focused element of a page without inputs); mouse
//! events target `document.documentElement` (an empty page's body has no
//! height, so a click hits `<html>`); all bubble to `document` and `window`.
//! A task that is running when an event's time comes keeps the main thread: the event waits, and events that piled up
//! are delivered in their order once it ends, one task each.

use serde::Deserialize;

/// One scripted input event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InputEvent {
    /// Virtual time of the event, in milliseconds since the start of the run.
    pub at_ms: f64,
    /// What happens.
    #[serde(flatten)]
    pub kind: InputKind,
}

/// The kinds of scripted input.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum InputKind {
    /// A key goes down (`KeyboardEvent` `keydown`).
    KeyDown {
        /// `KeyboardEvent.key`, e.g. `"a"`, `"Enter"`.
        key: String,
        /// `KeyboardEvent.code`; derived from `key` when absent.
        #[serde(default)]
        code: Option<String>,
    },
    /// A key comes up (`keyup`).
    KeyUp {
        /// `KeyboardEvent.key`.
        key: String,
        /// `KeyboardEvent.code`; derived from `key` when absent.
        #[serde(default)]
        code: Option<String>,
    },
    /// A key press: `keydown`, then `keyup`, two tasks.
    Key {
        /// `KeyboardEvent.key`.
        key: String,
        /// `KeyboardEvent.code`; derived from `key` when absent.
        #[serde(default)]
        code: Option<String>,
    },
    /// A mouse button goes down (`MouseEvent` `mousedown`).
    MouseDown {
        /// `clientX`.
        #[serde(default)]
        x: f64,
        /// `clientY`.
        #[serde(default)]
        y: f64,
    },
    /// A mouse button comes up (`mouseup`).
    MouseUp {
        /// `clientX`.
        #[serde(default)]
        x: f64,
        /// `clientY`.
        #[serde(default)]
        y: f64,
    },
    /// A click: `mousedown` (one task), then `mouseup` and `click` (one task).
    Click {
        /// `clientX`.
        #[serde(default)]
        x: f64,
        /// `clientY`.
        #[serde(default)]
        y: f64,
    },
}

/// Why an input script was refused.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Not a JSON array of known events (serde names the line and column).
    #[error("bad input script: {0}")]
    Json(#[from] serde_json::Error),
    /// An event's time is negative or not a number.
    #[error("input event {index}: at_ms must be a finite number >= 0, got {at_ms}")]
    BadTime {
        /// Position in the array, from 0.
        index: usize,
        /// The offending value.
        at_ms: f64,
    },
}

impl InputEvent {
    /// Parses an input script (a JSON array, see the module docs).
    ///
    /// ```
    /// use turno_js::{InputEvent, InputKind};
    /// let v = InputEvent::parse_script(r#"[{"at_ms": 5, "type": "key", "key": "a"}]"#).unwrap();
    /// assert_eq!(v[0].at_ms, 5.0);
    /// assert!(matches!(&v[0].kind, InputKind::Key { key, .. } if key == "a"));
    /// assert!(InputEvent::parse_script(r#"[{"at_ms": -1, "type": "click"}]"#).is_err());
    /// ```
    pub fn parse_script(text: &str) -> Result<Vec<InputEvent>, InputError> {
        let v: Vec<InputEvent> = serde_json::from_str(text)?;
        for (index, e) in v.iter().enumerate() {
            if !e.at_ms.is_finite() || e.at_ms < 0.0 {
                return Err(InputError::BadTime {
                    index,
                    at_ms: e.at_ms,
                });
            }
        }
        Ok(v)
    }

    /// The virtual time in nanoseconds.
    pub(crate) fn at_ns(&self) -> u64 {
        (self.at_ms * 1e6).round() as u64
    }
}
