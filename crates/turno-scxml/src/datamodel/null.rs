//! The null data model (B.1): no variables; the only expression is `In('id')`.

use std::collections::HashSet;

use serde_json::Value;

use super::{DataModel, EvalError, SystemVars};
use crate::event::Event;
use crate::model::{AssignValue, DataInit};

/// The null data model.
#[derive(Debug, Default)]
pub struct Null {
    active: HashSet<String>,
}

impl Null {
    /// A null data model.
    pub fn new() -> Self {
        Null::default()
    }
}

fn unsupported(what: &str) -> EvalError {
    EvalError::new(format!("the null data model has no {what}"))
}

impl DataModel for Null {
    fn bind_system(&mut self, _vars: &SystemVars) -> Result<(), EvalError> {
        Ok(())
    }
    fn declare(&mut self, _id: &str) -> Result<(), EvalError> {
        Err(unsupported("variables"))
    }
    fn initialize(&mut self, _: &str, _: &DataInit, _: Option<&Value>) -> Result<(), EvalError> {
        Err(unsupported("variables"))
    }
    fn set_event(&mut self, _event: &Event) -> Result<(), EvalError> {
        Ok(())
    }
    fn set_active(&mut self, state: &str, active: bool) {
        if active {
            self.active.insert(state.to_owned());
        } else {
            self.active.remove(state);
        }
    }
    /// `In('id')` (or `In("id")`), with surrounding whitespace.
    fn eval_bool(&mut self, expr: &str) -> Result<bool, EvalError> {
        let e = expr.trim();
        let arg = e
            .strip_prefix("In(")
            .and_then(|r| r.strip_suffix(')'))
            .map(str::trim)
            .and_then(|a| {
                a.strip_prefix('\'')
                    .and_then(|a| a.strip_suffix('\''))
                    .or_else(|| a.strip_prefix('"').and_then(|a| a.strip_suffix('"')))
            })
            .ok_or_else(|| {
                EvalError::new(format!(
                    "the null data model only knows In('id'), not {e:?}"
                ))
            })?;
        Ok(self.active.contains(arg))
    }
    fn eval_value(&mut self, _: &str) -> Result<Value, EvalError> {
        Err(unsupported("value expressions"))
    }
    fn eval_string(&mut self, _: &str) -> Result<String, EvalError> {
        Err(unsupported("value expressions"))
    }
    fn eval_log(&mut self, _: &str) -> Result<String, EvalError> {
        Err(unsupported("value expressions"))
    }
    fn assign(&mut self, _: &str, _: &AssignValue) -> Result<(), EvalError> {
        Err(unsupported("locations"))
    }
    fn assign_value(&mut self, _: &str, _: &Value) -> Result<(), EvalError> {
        Err(unsupported("locations"))
    }
    fn run_script(&mut self, _: &str) -> Result<(), EvalError> {
        Err(unsupported("scripts"))
    }
    fn foreach_begin(&mut self, _: &str) -> Result<usize, EvalError> {
        Err(unsupported("arrays"))
    }
    fn foreach_bind(&mut self, _: &str, _: Option<&str>, _: usize) -> Result<(), EvalError> {
        Err(unsupported("arrays"))
    }
    fn foreach_end(&mut self) {}
    /// Content is passed on as data (another session may read it).
    fn content_value(&mut self, text: &str) -> Value {
        super::content_as_data(text)
    }
}
