//! The ECMAScript data model (B.2) on boa_engine.
//!
//! Every `<data>` is a property of the one global object, so scripts and
//! expressions share a single scope. The system variables (`_event`,
//! `_sessionid`, `_name`, `_ioprocessors`) are read-only properties, and
//! `<assign>` runs the assignment in strict mode, so writing one of them, or
//! a variable that was never declared, throws and becomes `error.execution`
//! instead of silently creating a global.

use boa_engine::object::builtins::JsArray;
use boa_engine::object::ObjectInitializer;
use boa_engine::property::PropertyDescriptor;
use boa_engine::{
    js_string, Context, JsError, JsObject, JsString, JsValue, NativeFunction, Source,
};
use serde_json::Value;

use super::{content_as_data, DataModel, EvalError, SystemVars};
use crate::event::Event;
use crate::model::{AssignValue, DataInit};

/// Loop iterations one evaluation may run before it is stopped with an
/// error (a runaway `while (true)` in a guard must not hang the session).
pub const LOOP_LIMIT: u64 = 1_000_000;

/// The ECMAScript data model of one session.
pub struct EcmaScript {
    ctx: Context,
    /// The set behind `In()`: state id -> true while active.
    active: JsObject,
    /// `dom.js`: XML data (see [`super::XML_DATA_KEY`]) to a DOM document.
    dom: JsObject,
    /// Shallow copies of the arrays of the `<foreach>`es being run.
    foreach: Vec<Vec<JsValue>>,
}

impl std::fmt::Debug for EcmaScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EcmaScript").finish_non_exhaustive()
    }
}

fn err(e: JsError, ctx: &mut Context) -> EvalError {
    match e.try_native(ctx) {
        Ok(n) => EvalError::new(n.to_string()),
        Err(_) => EvalError::new(e.to_string()),
    }
}

const SYSTEM_VARS: &[&str] = &["_event", "_sessionid", "_name", "_ioprocessors"];

impl EcmaScript {
    /// A fresh engine with `In()` installed and a budget of one million loop
    /// iterations per evaluation.
    pub fn new() -> Result<Self, EvalError> {
        Self::with_loop_limit(LOOP_LIMIT)
    }

    /// A fresh engine whose evaluations stop after `limit` loop iterations.
    pub fn with_loop_limit(limit: u64) -> Result<Self, EvalError> {
        let mut ctx = turno_boa::build(Context::builder(), limit)
            .map_err(|e| EvalError::new(format!("cannot create the ECMAScript engine: {e}")))?;
        let active = ObjectInitializer::new(&mut ctx).build();
        let in_fn = NativeFunction::from_copy_closure_with_captures(
            |_, args, active: &JsObject, ctx| {
                let id = args.first().cloned().unwrap_or_default().to_string(ctx)?;
                Ok(JsValue::from(active.has_own_property(id, ctx)?))
            },
            active.clone(),
        );
        ctx.register_global_builtin_callable(js_string!("In"), 1, in_fn)
            .map_err(|e| EvalError::new(e.to_string()))?;
        let dom = ctx
            .eval(Source::from_bytes(include_str!("dom.js")))
            .map_err(|e| EvalError::new(format!("dom.js: {e}")))?
            .as_object()
            .filter(JsObject::is_callable)
            .ok_or_else(|| EvalError::new("dom.js does not evaluate to a function"))?;
        Ok(EcmaScript {
            ctx,
            active,
            dom,
            foreach: Vec::new(),
        })
    }

    fn eval_js(&mut self, expr: &str) -> Result<JsValue, EvalError> {
        // Parenthesized so an object literal is an expression, on its own
        // lines so a trailing `//` comment cannot swallow the parenthesis.
        // A trailing `;` (`expr="new f();"`) is tolerated, as a script would.
        let expr = expr.trim().trim_end_matches(';');
        let src = format!("(\n{expr}\n)");
        match self.ctx.eval(Source::from_bytes(&src)) {
            Ok(v) => Ok(v),
            Err(e) => Err(err(e, &mut self.ctx)),
        }
    }

    fn js_to_data(&mut self, v: &JsValue) -> Value {
        if v.is_undefined() {
            return Value::Null;
        }
        v.to_json(&mut self.ctx)
            .ok()
            .flatten()
            .unwrap_or(Value::Null)
    }

    fn data_to_js(&mut self, v: &Value) -> Result<JsValue, EvalError> {
        let js = JsValue::from_json(v, &mut self.ctx).map_err(|e| err(e, &mut self.ctx))?;
        let is_xml = v
            .as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key(super::XML_DATA_KEY));
        if !is_xml {
            return Ok(js);
        }
        let tree = js
            .as_object()
            .map(|o| o.get(JsString::from(super::XML_DATA_KEY), &mut self.ctx))
            .transpose()
            .map_err(|e| err(e, &mut self.ctx))?
            .unwrap_or_default();
        self.dom
            .call(&JsValue::undefined(), &[tree], &mut self.ctx)
            .map_err(|e| err(e, &mut self.ctx))
    }

    fn define_readonly(&mut self, name: &str, value: JsValue) -> Result<(), EvalError> {
        let desc = PropertyDescriptor::builder()
            .value(value)
            .writable(false)
            .enumerable(true)
            .configurable(true)
            .build();
        self.ctx
            .global_object()
            .define_property_or_throw(JsString::from(name), desc, &mut self.ctx)
            .map(|_| ())
            .map_err(|e| err(e, &mut self.ctx))
    }

    fn set_global(&mut self, name: &str, value: JsValue) -> Result<(), EvalError> {
        if SYSTEM_VARS.contains(&name) {
            return Err(EvalError::new(format!(
                "{name} is a read-only system variable"
            )));
        }
        let g = self.ctx.global_object();
        g.set(JsString::from(name), value, true, &mut self.ctx)
            .map(|_| ())
            .map_err(|e| err(e, &mut self.ctx))
    }

    /// `location = value` in strict mode (so undeclared and read-only
    /// locations throw).
    fn store(&mut self, location: &str, value: JsValue) -> Result<(), EvalError> {
        let root = location
            .trim_start()
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .next()
            .unwrap_or("");
        if SYSTEM_VARS.contains(&root) {
            return Err(EvalError::new(format!(
                "{root} is a read-only system variable"
            )));
        }
        let src = format!(
            "(function (__scxml_value__) {{ 'use strict';\n{location}\n= __scxml_value__; }})"
        );
        let f = self
            .ctx
            .eval(Source::from_bytes(&src))
            .map_err(|e| EvalError::new(format!("{location:?} is not a location: {e}")))?;
        let f = f
            .as_callable()
            .ok_or_else(|| EvalError::new("assignment wrapper is not callable"))?;
        f.call(&JsValue::undefined(), &[value], &mut self.ctx)
            .map(|_| ())
            .map_err(|e| err(e, &mut self.ctx))
    }

    fn is_identifier(s: &str) -> bool {
        let mut cs = s.chars();
        matches!(cs.next(), Some(c) if c.is_alphabetic() || c == '_' || c == '$')
            && cs.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    }

    /// Declares `name` if it is a plain identifier not yet defined (foreach
    /// creates its item and index variables).
    fn ensure_var(&mut self, name: &str) -> Result<(), EvalError> {
        let name = name.trim();
        if Self::is_identifier(name) {
            let g = self.ctx.global_object();
            let has = g
                .has_property(JsString::from(name), &mut self.ctx)
                .map_err(|e| err(e, &mut self.ctx))?;
            if !has {
                self.set_global(name, JsValue::undefined())?;
            }
        }
        Ok(())
    }
}

impl DataModel for EcmaScript {
    fn bind_system(&mut self, vars: &SystemVars) -> Result<(), EvalError> {
        self.define_readonly(
            "_sessionid",
            JsValue::from(JsString::from(vars.sessionid.as_str())),
        )?;
        self.define_readonly("_name", JsValue::from(JsString::from(vars.name.as_str())))?;
        let mut procs = serde_json::Map::new();
        for (kind, location) in &vars.ioprocessors {
            procs.insert(kind.clone(), serde_json::json!({ "location": location }));
        }
        // Also under the short name the tests use (`_ioprocessors['scxml']`).
        if let Some((_, location)) = vars.ioprocessors.first() {
            procs.insert("scxml".into(), serde_json::json!({ "location": location }));
        }
        let v = self.data_to_js(&Value::Object(procs))?;
        self.define_readonly("_ioprocessors", v)?;
        self.define_readonly("_event", JsValue::undefined())
    }

    fn declare(&mut self, id: &str) -> Result<(), EvalError> {
        self.set_global(id, JsValue::undefined())
    }

    fn initialize(
        &mut self,
        id: &str,
        init: &DataInit,
        value: Option<&Value>,
    ) -> Result<(), EvalError> {
        let v = match (value, init) {
            (Some(v), _) => self.data_to_js(v)?,
            (None, DataInit::None) => JsValue::undefined(),
            (None, DataInit::Expr(e)) => match self.eval_js(e) {
                Ok(v) => v,
                Err(e) => {
                    // The variable exists, unbound, and the error is reported.
                    self.set_global(id, JsValue::undefined())?;
                    return Err(e);
                }
            },
            (None, DataInit::Text(t)) => {
                let d = content_as_data(t);
                self.data_to_js(&d)?
            }
        };
        self.set_global(id, v)
    }

    fn set_event(&mut self, event: &Event) -> Result<(), EvalError> {
        let mut fields = serde_json::Map::new();
        fields.insert("name".into(), Value::String(event.name.clone()));
        fields.insert("type".into(), Value::String(event.kind.as_str().into()));
        let obj = self.data_to_js(&Value::Object(fields))?;
        let o = obj
            .as_object()
            .expect("a JSON object converts to an object");
        let optional = [
            ("sendid", &event.sendid),
            ("origin", &event.origin),
            ("origintype", &event.origintype),
            ("invokeid", &event.invokeid),
        ];
        for (k, v) in optional {
            let jv = match v {
                Some(s) => JsValue::from(JsString::from(s.as_str())),
                None => JsValue::undefined(),
            };
            o.set(JsString::from(k), jv, true, &mut self.ctx)
                .map_err(|e| err(e, &mut self.ctx))?;
        }
        let data = match &event.data {
            Some(d) => self.data_to_js(d)?,
            None => JsValue::undefined(),
        };
        o.set(js_string!("data"), data, true, &mut self.ctx)
            .map_err(|e| err(e, &mut self.ctx))?;
        self.define_readonly("_event", obj)
    }

    fn set_active(&mut self, state: &str, active: bool) {
        let key = JsString::from(state);
        // Plain data properties on an ordinary object: these cannot throw.
        if active {
            let _ = self
                .active
                .create_data_property_or_throw(key, true, &mut self.ctx);
        } else {
            let _ = self.active.delete_property_or_throw(key, &mut self.ctx);
        }
    }

    fn eval_bool(&mut self, expr: &str) -> Result<bool, EvalError> {
        Ok(self.eval_js(expr)?.to_boolean())
    }

    fn eval_value(&mut self, expr: &str) -> Result<Value, EvalError> {
        let v = self.eval_js(expr)?;
        Ok(self.js_to_data(&v))
    }

    fn eval_string(&mut self, expr: &str) -> Result<String, EvalError> {
        let v = self.eval_js(expr)?;
        let s = v
            .to_string(&mut self.ctx)
            .map_err(|e| err(e, &mut self.ctx))?;
        Ok(s.to_std_string_escaped())
    }

    fn eval_log(&mut self, expr: &str) -> Result<String, EvalError> {
        let v = self.eval_js(expr)?;
        if v.is_object() && !v.is_callable() {
            if let Some(j) = v.to_json(&mut self.ctx).ok().flatten() {
                return Ok(j.to_string());
            }
        }
        let s = v
            .to_string(&mut self.ctx)
            .map_err(|e| err(e, &mut self.ctx))?;
        Ok(s.to_std_string_escaped())
    }

    fn assign(&mut self, location: &str, value: &AssignValue) -> Result<(), EvalError> {
        let v = match value {
            AssignValue::Expr(e) => self.eval_js(e)?,
            AssignValue::Content(text) => {
                let d = content_as_data(text);
                self.data_to_js(&d)?
            }
        };
        self.store(location, v)
    }

    fn assign_value(&mut self, location: &str, value: &Value) -> Result<(), EvalError> {
        let v = self.data_to_js(value)?;
        self.store(location, v)
    }

    fn run_script(&mut self, source: &str) -> Result<(), EvalError> {
        match self.ctx.eval(Source::from_bytes(source)) {
            Ok(_) => Ok(()),
            Err(e) => Err(err(e, &mut self.ctx)),
        }
    }

    fn foreach_begin(&mut self, array: &str) -> Result<usize, EvalError> {
        let v = self.eval_js(array)?;
        let arr = v
            .as_object()
            .filter(|o| o.is_array())
            .ok_or_else(|| EvalError::new(format!("foreach: {array:?} is not an array")))?;
        let arr = JsArray::from_object(arr).map_err(|e| err(e, &mut self.ctx))?;
        let len = arr
            .length(&mut self.ctx)
            .map_err(|e| err(e, &mut self.ctx))?;
        let mut items = Vec::with_capacity(len as usize);
        for i in 0..len {
            items.push(
                arr.get(i, &mut self.ctx)
                    .map_err(|e| err(e, &mut self.ctx))?,
            );
        }
        let n = items.len();
        self.foreach.push(items);
        Ok(n)
    }

    fn foreach_bind(&mut self, item: &str, index: Option<&str>, i: usize) -> Result<(), EvalError> {
        let v = self
            .foreach
            .last()
            .and_then(|items| items.get(i))
            .cloned()
            .ok_or_else(|| EvalError::new("foreach: no such iteration"))?;
        self.ensure_var(item)?;
        self.store(item, v)?;
        if let Some(index) = index {
            self.ensure_var(index)?;
            self.store(index, JsValue::from(i as u32))?;
        }
        Ok(())
    }

    fn foreach_end(&mut self) {
        self.foreach.pop();
    }

    fn content_value(&mut self, text: &str) -> Value {
        content_as_data(text)
    }
}
