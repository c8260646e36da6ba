//! turno's standard implementations for JSON machines with a JSON context:
//! small, generic, driven by `params`. `turno chart run` registers them,
//! and the differential tests' XState runner implements the same names
//! (`tests/xstate/stdlib.js`), so one JSON machine runs on both.
//!
//! | kind | name | params | meaning |
//! |---|---|---|---|
//! | guard | `pass`, `fail` | | always true, always false |
//! | guard | `ctxEq` | `key`, `value` | `context[key]` equals `value` |
//! | guard | `ctxLt`, `ctxGte` | `key`, `value` | numeric comparison of `context[key]` |
//! | guard | `eventEq` | `key`, `value` | `event[key]` equals `value` |
//! | guard | `eventGt` | `key`, `value` | `event[key] > value` |
//! | guard | `ctxCompare` | `key`, `op`, `otherKey` or `value` | `context[key] op context[otherKey]` (or `value`); `op` is `==`, `!=`, `<`, `<=`, `>`, `>=` (the order ones compare numbers only) |
//! | action | `inc` | `key`, `by` (1) | `context[key] += by` |
//! | action | `set` | `key`, `value` | `context[key] = value` |
//! | action | `setFromEvent` | `key`, `from` | `context[key] = event[from]` |
//! | action | `append` | `key`, `value` | string append (records action order) |
//! | action | `calc` | `key`, `op`, `otherKey` or `value` | `context[key] = context[key] op operand`; `op` is `add`, `sub`, `mul`, `div`, `mod`, `min`, `max`; a missing or non-number side counts as 0, a result that is no finite number is `null` |
//! | action | `copy` | `key`, `from` | `context[key] = context[from]` (`null` if absent) |
//! | action | `choose` | `branches`: `[{"guard"?, "actions"}]` | the actions of the first branch whose guard passes (XState's `enqueueActions` with `check`); see [`Implementations::choose`] |
//! | action | `raise` | `event`, `delay`?, `id`? | raise, or a delayed raise (ms or a named delay) |
//! | action | `cancel` | `id` | cancel a delayed event |
//! | action | `emit` | `event` | emit to subscribers |
//! | action | `sendTo` | `to`, `event`, `delay`? | send to a child by id (an invoked chart: see [`tree`](crate::tree)) |
//! | action | `sendParent` | `event` | send to the parent chart |
//! | action | `spawnChild` | `src`, `id`?, `input`?, `systemId`? | XState's `spawnChild`: start a child of the registered logic `src` (an actor or a child chart) not tied to a state; `input` may be a template; without `id` it is listed as `"undefined"`, as XState lists it; `systemId` is accepted and changes nothing; see [`ActionScope::spawn_child`]; the loader refuses a `src` that is not a registered actor |
//! | action | `stopChild` | `id` | XState's `stopChild`: stop the child listed under `id` (spawned or invoked) |
//! | action | `log` | `message`? | a log line |
//! | delay | `short` 50, `medium` 200, `long` 1000, `ctxDelay` | | `ctxDelay` = `context.delay` |
//! | actor | `echo`, `reject`, `never` | | resolves with its input, rejects with it, never settles |
//! | actor | `mirror` | | a callback actor: sends every event it receives back to its parent, its type suffixed with `.mirrored` |
//!
//! `input` (of an invocation) and `output` (of a final state or the
//! machine) may be templates: every `{"$context": KEY}` object in them is
//! replaced by `context[KEY]` and every `{"$event": KEY}` by `event[KEY]`
//! (`null` when absent), as XState's `input: ({context}) => ...` computes
//! them when the child starts (and `output` when the state is reached).

use serde_json::{Number, Value};

use crate::actions::ActionScope;
use crate::event::Event;
use crate::implementations::Implementations;

/// The operand of `ctxCompare` and `calc`: `context[otherKey]`, else
/// `value`.
fn operand<'a>(c: &'a Value, p: &'a Value) -> Option<&'a Value> {
    match p.get("otherKey") {
        Some(k) => field(c, k),
        None => p.get("value"),
    }
}

/// `ctxCompare`, as JavaScript compares: `==`/`!=` as JSON, the order
/// operators on numbers only (anything else is false).
fn compare(a: Option<&Value>, op: &str, b: Option<&Value>) -> bool {
    let nums = (number(a), number(b));
    match (op, nums) {
        ("==", _) => js_eq(a, b),
        ("!=", _) => !js_eq(a, b),
        ("<", (Some(x), Some(y))) => x < y,
        ("<=", (Some(x), Some(y))) => x <= y,
        (">", (Some(x), Some(y))) => x > y,
        (">=", (Some(x), Some(y))) => x >= y,
        _ => false,
    }
}

/// `calc`: JavaScript's arithmetic on two numbers; `None` for an unknown
/// operator, NaN or an infinity.
fn calc(a: f64, op: &str, b: f64) -> Option<f64> {
    let r = match op {
        "add" => a + b,
        "sub" => a - b,
        "mul" => a * b,
        "div" => a / b,
        "mod" => a % b,
        "min" => a.min(b),
        "max" => a.max(b),
        _ => return None,
    };
    r.is_finite().then_some(r)
}

/// Resolves an `input`/`output` template (see the [module docs](self)).
fn template(ctx: &Value, e: &Event, t: &Value) -> Value {
    match t {
        Value::Object(m) if m.len() == 1 => {
            if let Some(k) = m.get("$context") {
                return field(ctx, k).cloned().unwrap_or(Value::Null);
            }
            if let Some(k) = m.get("$event") {
                return match k {
                    Value::String(k) if k == "type" => Value::String(e.name().to_string()),
                    Value::String(k) => e.get(k).cloned().unwrap_or(Value::Null),
                    _ => Value::Null,
                };
            }
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), template(ctx, e, v)))
                    .collect(),
            )
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), template(ctx, e, v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| template(ctx, e, v)).collect()),
        other => other.clone(),
    }
}

fn field<'a>(v: &'a Value, key: &Value) -> Option<&'a Value> {
    match key {
        Value::String(k) => v.as_object().and_then(|m| m.get(k)),
        _ => None,
    }
}

/// JavaScript's `JSON.stringify(a) === JSON.stringify(b)` for the values
/// the library compares (numbers compare by value).
fn js_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (a, b) => a == b,
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

fn to_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::Number(Number::from(x as i64))
    } else {
        Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn set_key(ctx: &mut Value, key: &Value, value: Value) {
    let Value::String(k) = key else { return };
    if !ctx.is_object() {
        *ctx = Value::Object(Default::default());
    }
    if let Value::Object(m) = ctx {
        m.insert(k.clone(), value);
    }
}

fn named_delay(name: &str, ctx: &Value) -> Option<u64> {
    match name {
        "short" => Some(50),
        "medium" => Some(200),
        "long" => Some(1000),
        "ctxDelay" => Some(number(ctx.get("delay")).map_or(0, |d| d.max(0.0) as u64)),
        _ => None,
    }
}

fn event_param(p: &Value) -> Option<Event> {
    Event::from_json(p.get("event")?).ok()
}

/// The standard implementations (see the [module docs](self)).
pub fn implementations() -> Implementations<Value> {
    Implementations::new()
        .guard("pass", |_, _, _| true)
        .guard("fail", |_, _, _| false)
        .guard("ctxEq", |c, _, p| {
            js_eq(field(c, &p["key"]), p.get("value"))
        })
        .guard("ctxLt", |c, _, p| {
            match (number(field(c, &p["key"])), number(p.get("value"))) {
                (Some(a), Some(b)) => a < b,
                _ => false,
            }
        })
        .guard("ctxGte", |c, _, p| {
            match (number(field(c, &p["key"])), number(p.get("value"))) {
                (Some(a), Some(b)) => a >= b,
                _ => false,
            }
        })
        .guard("eventEq", |_, e, p| {
            let v = match &p["key"] {
                Value::String(k) if k == "type" => Some(Value::String(e.name().to_string())),
                Value::String(k) => e.get(k).cloned(),
                _ => None,
            };
            js_eq(v.as_ref(), p.get("value"))
        })
        .guard("eventGt", |_, e, p| {
            let v = match &p["key"] {
                Value::String(k) => e.get(k),
                _ => None,
            };
            match (number(v), number(p.get("value"))) {
                (Some(a), Some(b)) => a > b,
                _ => false,
            }
        })
        .guard("ctxCompare", |c, _, p| {
            let op = p.get("op").and_then(Value::as_str).unwrap_or("");
            compare(field(c, &p["key"]), op, operand(c, p))
        })
        .assign("calc", |c, _, p| {
            let a = number(field(c, &p["key"])).unwrap_or(0.0);
            let b = number(operand(c, p)).unwrap_or(0.0);
            let op = p.get("op").and_then(Value::as_str).unwrap_or("");
            let v = calc(a, op, b).map_or(Value::Null, to_number);
            set_key(c, &p["key"], v);
        })
        .assign("copy", |c, _, p| {
            let v = field(c, &p["from"]).cloned().unwrap_or(Value::Null);
            set_key(c, &p["key"], v);
        })
        .choose("choose")
        .templates(template)
        .assign("inc", |c, _, p| {
            let now = number(field(c, &p["key"])).unwrap_or(0.0);
            let by = number(p.get("by")).unwrap_or(1.0);
            set_key(c, &p["key"], to_number(now + by));
        })
        .assign("set", |c, _, p| {
            set_key(c, &p["key"], p.get("value").cloned().unwrap_or(Value::Null))
        })
        .assign("setFromEvent", |c, e, p| {
            let v = match &p["from"] {
                Value::String(k) => e.get(k).cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            };
            set_key(c, &p["key"], v)
        })
        .assign("append", |c, _, p| {
            let mut s = match field(c, &p["key"]) {
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            match p.get("value") {
                Some(Value::String(v)) => s.push_str(v),
                Some(other) => s.push_str(&other.to_string()),
                None => s.push_str("undefined"),
            }
            set_key(c, &p["key"], Value::String(s))
        })
        .action("raise", |scope: &mut ActionScope<'_, Value>| {
            let Some(event) = event_param(scope.params()) else {
                return;
            };
            let id = scope
                .params()
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string);
            let delay = match scope.params().get("delay") {
                Some(Value::Number(n)) => n.as_f64().map(|d| d.max(0.0) as u64),
                Some(Value::String(name)) => named_delay(name, scope.context()),
                _ => None,
            };
            match delay {
                Some(d) => scope.raise_after(event, d, id),
                None => scope.raise(event),
            }
        })
        .action("cancel", |scope: &mut ActionScope<'_, Value>| {
            if let Some(id) = scope.params().get("id").and_then(Value::as_str) {
                let id = id.to_string();
                scope.cancel(id);
            }
        })
        .action("emit", |scope: &mut ActionScope<'_, Value>| {
            if let Some(event) = event_param(scope.params()) {
                scope.emit(event);
            }
        })
        .action("sendTo", |scope: &mut ActionScope<'_, Value>| {
            let (Some(to), Some(event)) = (
                scope.params().get("to").and_then(Value::as_str),
                event_param(scope.params()),
            ) else {
                return;
            };
            let to = to.to_string();
            let delay = match scope.params().get("delay") {
                Some(Value::Number(n)) => n.as_f64().map(|d| d.max(0.0) as u64),
                Some(Value::String(name)) => named_delay(name, scope.context()),
                _ => None,
            };
            scope.send_to(to, event, delay);
        })
        .action("sendParent", |scope: &mut ActionScope<'_, Value>| {
            if let Some(event) = event_param(scope.params()) {
                scope.send_parent(event);
            }
        })
        .action("spawnChild", |scope: &mut ActionScope<'_, Value>| {
            let Some(src) = scope.params().get("src").and_then(Value::as_str) else {
                return;
            };
            let src = src.to_string();
            let id = scope
                .params()
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string);
            let input = match scope.params().get("input") {
                Some(t) => template(scope.context(), scope.event(), t),
                None => Value::Null,
            };
            scope.spawn_child(src, id, input);
        })
        .spawns("spawnChild")
        .action("stopChild", |scope: &mut ActionScope<'_, Value>| {
            if let Some(id) = scope.params().get("id").and_then(Value::as_str) {
                let id = id.to_string();
                scope.stop_child(id);
            }
        })
        .action("log", |scope: &mut ActionScope<'_, Value>| {
            let message = match scope.params().get("message") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => scope.event().name().to_string(),
            };
            scope.log(message);
        })
        .delay("short", |_, _, _| 50)
        .delay("medium", |_, _, _| 200)
        .delay("long", |_, _, _| 1000)
        .delay("ctxDelay", |c, _, _| {
            named_delay("ctxDelay", c).unwrap_or(0)
        })
        .actor("echo")
        .actor("reject")
        .actor("never")
        .actor("mirror")
}
