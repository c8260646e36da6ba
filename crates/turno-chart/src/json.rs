//! XState v5 JSON machine configs, as Stately's editor exports them.
//!
//! Implementations are referred to by name (`"actions": ["notify"]`,
//! `"guard": {"type": "isValid", "params": {...}}`) and must be registered
//! in [`Implementations`]. Guard combinators are written as data:
//! `{"type": "and", "guards": [...]}`, `{"type": "or", ...}`,
//! `{"type": "not", "guard": g}`, `{"type": "stateIn", "state": "#id"}`.
//!
//! Object keys are taken in JavaScript's property order (integer-like keys
//! first, ascending, then the others as written), because that is the
//! order XState sees: it decides document order and transition priority.
//!
//! Every problem is reported with the JSON path where it is:
//!
//! ```
//! use turno_chart::{load_json, stdlib};
//! let e = load_json(r#"{"initial": "a", "states": {"a": {"on": {"GO": "nowhere"}}}}"#,
//!                   &stdlib::implementations()).err().unwrap();
//! assert_eq!(e.to_string(),
//!   "$.states.a.on.GO[0].target: bad target \"nowhere\": state \"(machine)\" has no child \"nowhere\"");
//! ```

use std::fmt;

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::actions::ActionFn;
use crate::implementations::Implementations;
use crate::machine::{BuildError, Machine, Problem};
use crate::spec::{
    ActionSpec, DelaySpec, GuardSpec, InitialSpec, InvokeSpec, KindSpec, OutputSpec, StateSpec,
    TransitionSpec,
};

/// Why a JSON config could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// Not JSON (or a duplicate key).
    #[error("not a valid JSON document: {0}")]
    Syntax(String),
    /// Valid JSON, but not a valid machine.
    #[error(transparent)]
    Invalid(#[from] BuildError),
}

/// JSON with object keys in document order.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<J, E> {
                Ok(J::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<J, E> {
                Ok(J::Num(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<J, E> {
                serde_json::Number::from_f64(n)
                    .map(J::Num)
                    .ok_or_else(|| E::custom("a number that is not finite"))
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<J, E> {
                Ok(J::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v: Vec<(String, J)> = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, J>()? {
                    if v.iter().any(|(key, _)| *key == k) {
                        return Err(de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl J {
    fn to_value(&self) -> Value {
        match self {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Num(n) => Value::Number(n.clone()),
            J::Str(s) => Value::String(s.clone()),
            J::Arr(a) => Value::Array(a.iter().map(J::to_value).collect()),
            J::Obj(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
        }
    }
}

/// JavaScript's own-property order: array-index keys ascending, then the
/// rest in insertion order.
fn js_order(entries: &[(String, J)]) -> Vec<&(String, J)> {
    fn index(k: &str) -> Option<u32> {
        if k == "0" {
            return Some(0);
        }
        if k.is_empty() || k.starts_with('0') || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        k.parse::<u32>().ok().filter(|&n| n != u32::MAX)
    }
    let mut ints: Vec<(u32, &(String, J))> = entries
        .iter()
        .filter_map(|e| index(&e.0).map(|n| (n, e)))
        .collect();
    ints.sort_by_key(|(n, _)| *n);
    let mut out: Vec<&(String, J)> = ints.into_iter().map(|(_, e)| e).collect();
    out.extend(entries.iter().filter(|e| index(&e.0).is_none()));
    out
}

fn fail(path: &str, problem: Problem) -> BuildError {
    BuildError {
        path: path.to_string(),
        problem,
    }
}

fn obj<'a>(j: &'a J, path: &str) -> Result<&'a [(String, J)], BuildError> {
    match j {
        J::Obj(o) => Ok(o),
        _ => Err(fail(path, Problem::WrongType("an object"))),
    }
}

fn string<'a>(j: &'a J, path: &str) -> Result<&'a str, BuildError> {
    match j {
        J::Str(s) => Ok(s),
        _ => Err(fail(path, Problem::WrongType("a string"))),
    }
}

fn check_keys(o: &[(String, J)], allowed: &[&str], path: &str) -> Result<(), BuildError> {
    check_keys_of(o, &[allowed], path)
}

/// [`check_keys`] against the union of several lists.
fn check_keys_of(o: &[(String, J)], allowed: &[&[&str]], path: &str) -> Result<(), BuildError> {
    for (k, _) in o {
        if !allowed.iter().any(|list| list.contains(&k.as_str())) {
            return Err(fail(&format!("{path}.{k}"), Problem::UnknownKey(k.clone())));
        }
    }
    Ok(())
}

fn get<'a>(o: &'a [(String, J)], key: &str) -> Option<&'a J> {
    o.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Loads an XState v5 JSON machine config with context type `C` (the
/// config's `context`, or `{}` when absent, deserialised into `C`).
pub fn load_json<C: Clone + DeserializeOwned + 'static>(
    json: &str,
    imp: &Implementations<C>,
) -> Result<Machine<C>, LoadError> {
    let j: J = serde_json::from_str(json).map_err(|e| LoadError::Syntax(e.to_string()))?;
    Ok(load(&j, imp)?)
}

/// A config read into its definition but not compiled yet: for a machine
/// that combines a JSON config with parts built in Rust (such as
/// [`Submit::spec`](crate::submit::Submit::spec) in place of one of its
/// states). Compile it with [`Machine::new`]`(root, context, version)`.
pub struct Definition<C> {
    /// The root state (its key is the machine's id).
    pub root: StateSpec<C>,
    /// The initial context.
    pub context: C,
    /// The config's `version`.
    pub version: Option<String>,
}

/// Reads an XState v5 JSON config into its [`Definition`] (what
/// [`load_json`] then compiles).
pub fn definition_json<C: Clone + DeserializeOwned + 'static>(
    json: &str,
    imp: &Implementations<C>,
) -> Result<Definition<C>, LoadError> {
    let j: J = serde_json::from_str(json).map_err(|e| LoadError::Syntax(e.to_string()))?;
    Ok(definition(&j, imp)?)
}

/// Loads a config already parsed as a `serde_json::Value`. Key order is then
/// the value's (sorted unless serde_json's `preserve_order` is on): prefer
/// [`load_json`] for text.
pub fn load_value<C: Clone + DeserializeOwned + 'static>(
    value: &Value,
    imp: &Implementations<C>,
) -> Result<Machine<C>, LoadError> {
    let text = value.to_string();
    load_json(&text, imp)
}

/// The keys every state node may have, the root included.
const NODE_KEYS: &[&str] = &[
    "id",
    "type",
    "initial",
    "states",
    "on",
    "always",
    "after",
    "entry",
    "exit",
    "invoke",
    "onDone",
    "tags",
    "meta",
    "description",
    "output",
];
/// What only the root may have besides.
const ROOT_ONLY_KEYS: &[&str] = &["context", "version"];
/// What only a nested state (a history state) may have besides.
const STATE_ONLY_KEYS: &[&str] = &["history", "target"];
const TRANSITION_KEYS: &[&str] = &[
    "target",
    "guard",
    "actions",
    "reenter",
    "description",
    "meta",
];
const INVOKE_KEYS: &[&str] = &["src", "id", "input", "onDone", "onError", "systemId"];

fn load<C: Clone + DeserializeOwned + 'static>(
    j: &J,
    imp: &Implementations<C>,
) -> Result<Machine<C>, BuildError> {
    let d = definition(j, imp)?;
    Machine::new(d.root, d.context, d.version)
}

fn definition<C: Clone + DeserializeOwned + 'static>(
    j: &J,
    imp: &Implementations<C>,
) -> Result<Definition<C>, BuildError> {
    let o = obj(j, "$")?;
    check_keys_of(o, &[NODE_KEYS, ROOT_ONLY_KEYS], "$")?;
    let context = match get(o, "context") {
        Some(c) => C::deserialize(c.to_value()).map_err(|e| {
            fail(
                "$.context",
                Problem::Invalid(format!("context does not fit the machine's type: {e}")),
            )
        })?,
        None => C::deserialize(Value::Object(Default::default())).map_err(|e| {
            fail(
                "$",
                Problem::Invalid(format!("the machine needs a \"context\": {e}")),
            )
        })?,
    };
    let version = optional_string(o, "version", "$")?;
    let key = optional_string(o, "id", "$")?.unwrap_or_else(|| "(machine)".to_string());
    let mut root = state(j, key, "$", imp)?;
    // The root's key is its id; `state` read it as an explicit id too.
    root.id = None;
    Ok(Definition {
        root,
        context,
        version,
    })
}

fn state<C: 'static>(
    j: &J,
    key: String,
    path: &str,
    imp: &Implementations<C>,
) -> Result<StateSpec<C>, BuildError> {
    let o = obj(j, path)?;
    if path != "$" {
        check_keys_of(o, &[NODE_KEYS, STATE_ONLY_KEYS], path)?;
    }
    let mut s = StateSpec::new(key, path);
    let mut history_deep = None;
    for (k, v) in o {
        let p = format!("{path}.{k}");
        match k.as_str() {
            "id" => s.id = Some(string(v, &p)?.to_string()),
            "type" => {
                s.kind = match string(v, &p)? {
                    "atomic" | "compound" => KindSpec::Auto,
                    "parallel" => KindSpec::Parallel,
                    "final" => KindSpec::Final,
                    "history" => KindSpec::History { deep: false },
                    other => {
                        return Err(fail(
                            &p,
                            Problem::Invalid(format!("unknown state type {other:?}")),
                        ))
                    }
                }
            }
            "history" => {
                history_deep = Some(match string(v, &p)? {
                    "shallow" => false,
                    "deep" => true,
                    other => {
                        return Err(fail(
                            &p,
                            Problem::Invalid(format!(
                                "history must be \"shallow\" or \"deep\", not {other:?}"
                            )),
                        ))
                    }
                })
            }
            "initial" => {
                s.initial = Some(match v {
                    J::Str(t) => InitialSpec {
                        target: t.clone(),
                        actions: Vec::new(),
                        path: p,
                    },
                    J::Obj(io) => {
                        check_keys(io, &["target", "actions", "description"], &p)?;
                        let t = get(io, "target").ok_or_else(|| {
                            fail(
                                &p,
                                Problem::InvalidInitial {
                                    initial: String::new(),
                                    reason: "an initial object needs \"target\"".into(),
                                },
                            )
                        })?;
                        InitialSpec {
                            target: string(t, &format!("{p}.target"))?.to_string(),
                            actions: match get(io, "actions") {
                                Some(a) => actions(a, &format!("{p}.actions"), imp)?,
                                None => Vec::new(),
                            },
                            path: format!("{p}.target"),
                        }
                    }
                    _ => return Err(fail(&p, Problem::WrongType("a child state's key"))),
                })
            }
            "states" => {
                let so = obj(v, &p)?;
                for (ck, cv) in js_order(so) {
                    s.states
                        .push(state(cv, ck.clone(), &format!("{p}.{ck}"), imp)?);
                }
            }
            "on" => {
                for (ev, t) in js_order(obj(v, &p)?) {
                    let tp = format!("{p}.{ev}");
                    s.on.push((ev.clone(), transitions(t, &tp, imp)?));
                }
            }
            "always" => s.always = transitions(v, &p, imp)?,
            "after" => {
                for (d, t) in js_order(obj(v, &p)?) {
                    let tp = format!("{p}.{d}");
                    let delay = match parse_ms(d) {
                        Some(ms) => DelaySpec::Ms(ms),
                        None => match imp.delays.get(d) {
                            Some(f) => DelaySpec::Named {
                                name: d.clone(),
                                imp: f.clone(),
                            },
                            None => {
                                return Err(fail(
                                    &tp,
                                    Problem::UnknownImplementation {
                                        kind: "delay",
                                        name: d.clone(),
                                    },
                                ))
                            }
                        },
                    };
                    s.after.push((delay, transitions(t, &tp, imp)?));
                }
            }
            "onDone" => s.on_done = transitions(v, &p, imp)?,
            "entry" => s.entry = actions(v, &p, imp)?,
            "exit" => s.exit = actions(v, &p, imp)?,
            "invoke" => {
                let list: Vec<&J> = match v {
                    J::Arr(a) => a.iter().collect(),
                    other => vec![other],
                };
                for (i, inv) in list.into_iter().enumerate() {
                    let ip = if matches!(v, J::Arr(_)) {
                        format!("{p}[{i}]")
                    } else {
                        p.clone()
                    };
                    s.invoke.push(invoke(inv, &ip, imp)?);
                }
            }
            "tags" => s.tags = one_or_many(v, &p, "a tag or a list of tags")?,
            "meta" => s.meta = Some(v.to_value()),
            "description" => s.description = Some(string(v, &p)?.to_string()),
            "output" => s.output = Some(value_spec(v.to_value(), imp)),
            "target" => s.history_target = Some(one_or_many(v, &p, "a target")?),
            // Root-only keys, read by `load`.
            "context" | "version" => {}
            _ => unreachable!("keys were checked"),
        }
    }
    match (s.kind, history_deep) {
        (KindSpec::History { .. }, Some(deep)) => s.kind = KindSpec::History { deep },
        (KindSpec::Auto, Some(deep)) if get(o, "type").is_none() => {
            s.kind = KindSpec::History { deep }
        }
        (KindSpec::History { .. }, None) => {}
        (_, Some(_)) => {
            return Err(fail(
                &format!("{path}.history"),
                Problem::Invalid("\"history\" belongs to history states".into()),
            ))
        }
        _ => {}
    }
    if s.history_target.is_some() && !matches!(s.kind, KindSpec::History { .. }) {
        return Err(fail(
            &format!("{path}.target"),
            Problem::UnknownKey("target".into()),
        ));
    }
    Ok(s)
}

/// `o[key]` as a string, if present (`path` is `o`'s).
fn optional_string(o: &[(String, J)], key: &str, path: &str) -> Result<Option<String>, BuildError> {
    get(o, key)
        .map(|v| string(v, &format!("{path}.{key}")).map(str::to_string))
        .transpose()
}

/// A string or a list of strings (`what` names it in the error).
fn one_or_many(v: &J, path: &str, what: &'static str) -> Result<Vec<String>, BuildError> {
    match v {
        J::Str(t) => Ok(vec![t.clone()]),
        J::Arr(a) => a
            .iter()
            .enumerate()
            .map(|(i, t)| string(t, &format!("{path}[{i}]")).map(str::to_string))
            .collect(),
        _ => Err(fail(path, Problem::WrongType(what))),
    }
}

fn parse_ms(d: &str) -> Option<u64> {
    // JavaScript's `+delay`: a number; turno accepts non-negative integers.
    if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    d.parse().ok()
}

fn transitions<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<Vec<TransitionSpec<C>>, BuildError> {
    match j {
        J::Arr(a) => a
            .iter()
            .enumerate()
            .map(|(i, t)| transition(t, &format!("{path}[{i}]"), imp))
            .collect(),
        other => Ok(vec![transition(other, &format!("{path}[0]"), imp)?]),
    }
}

fn transition<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<TransitionSpec<C>, BuildError> {
    match j {
        J::Str(t) => Ok(TransitionSpec::to(vec![t.clone()], path)),
        J::Obj(o) => {
            check_keys(o, TRANSITION_KEYS, path)?;
            let mut t = TransitionSpec::to(Vec::new(), path);
            for (k, v) in o {
                let p = format!("{path}.{k}");
                match k.as_str() {
                    "target" => {
                        t.targets = match v {
                            J::Str(s) => vec![s.clone()],
                            J::Arr(a) => a
                                .iter()
                                .enumerate()
                                .map(|(i, s)| string(s, &format!("{p}[{i}]")).map(str::to_string))
                                .collect::<Result<_, _>>()?,
                            J::Null => Vec::new(),
                            _ => {
                                return Err(fail(
                                    &p,
                                    Problem::WrongType("a target or a list of targets"),
                                ))
                            }
                        }
                    }
                    "guard" => t.guard = Some(guard(v, &p, imp)?),
                    "actions" => t.actions = actions(v, &p, imp)?,
                    "reenter" => {
                        t.reenter = match v {
                            J::Bool(b) => *b,
                            _ => return Err(fail(&p, Problem::WrongType("true or false"))),
                        }
                    }
                    "description" => t.description = Some(string(v, &p)?.to_string()),
                    "meta" => {}
                    _ => unreachable!("keys were checked"),
                }
            }
            Ok(t)
        }
        _ => Err(fail(
            path,
            Problem::WrongType("a target or a transition object"),
        )),
    }
}

fn guard<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<GuardSpec<C>, BuildError> {
    let (name, o) = match j {
        J::Str(n) => (n.as_str(), &[][..]),
        J::Obj(o) => {
            let n = get(o, "type").ok_or_else(|| {
                fail(
                    path,
                    Problem::Invalid("a guard object needs \"type\"".into()),
                )
            })?;
            (string(n, &format!("{path}.type"))?, &o[..])
        }
        _ => {
            return Err(fail(
                path,
                Problem::WrongType("a guard name or a guard object"),
            ))
        }
    };
    let list = |key: &str| -> Result<Vec<GuardSpec<C>>, BuildError> {
        let p = format!("{path}.{key}");
        match get(o, key) {
            Some(J::Arr(a)) => a
                .iter()
                .enumerate()
                .map(|(i, g)| guard(g, &format!("{p}[{i}]"), imp))
                .collect(),
            _ => Err(fail(&p, Problem::WrongType("a list of guards"))),
        }
    };
    Ok(match name {
        "and" if !o.is_empty() => {
            check_keys(o, &["type", "guards"], path)?;
            GuardSpec::And(list("guards")?)
        }
        "or" if !o.is_empty() => {
            check_keys(o, &["type", "guards"], path)?;
            GuardSpec::Or(list("guards")?)
        }
        "not" if !o.is_empty() => {
            check_keys(o, &["type", "guard"], path)?;
            let p = format!("{path}.guard");
            let g = get(o, "guard").ok_or_else(|| fail(&p, Problem::WrongType("a guard")))?;
            GuardSpec::Not(Box::new(guard(g, &p, imp)?))
        }
        "stateIn" if !o.is_empty() => {
            check_keys(o, &["type", "state"], path)?;
            let p = format!("{path}.state");
            let v = get(o, "state")
                .ok_or_else(|| fail(&p, Problem::WrongType("a state id or value")))?;
            GuardSpec::StateIn(v.to_value())
        }
        _ => {
            check_keys(o, &["type", "params"], path)?;
            let imp = imp.guards.get(name).ok_or_else(|| {
                fail(
                    path,
                    Problem::UnknownImplementation {
                        kind: "guard",
                        name: name.to_string(),
                    },
                )
            })?;
            GuardSpec::Named {
                name: name.to_string(),
                params: get(o, "params").map(J::to_value).unwrap_or(Value::Null),
                imp: imp.clone(),
            }
        }
    })
}

fn actions<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<Vec<ActionSpec<C>>, BuildError> {
    match j {
        J::Arr(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| action(x, &format!("{path}[{i}]"), imp))
            .collect(),
        other => Ok(vec![action(other, path, imp)?]),
    }
}

fn action<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<ActionSpec<C>, BuildError> {
    let (name, params) = match j {
        J::Str(n) => (n.as_str(), Value::Null),
        J::Obj(o) => {
            check_keys(o, &["type", "params"], path)?;
            let n = get(o, "type").ok_or_else(|| {
                fail(
                    path,
                    Problem::Invalid("an action object needs \"type\"".into()),
                )
            })?;
            (
                string(n, &format!("{path}.type"))?,
                get(o, "params").map(J::to_value).unwrap_or(Value::Null),
            )
        }
        _ => {
            return Err(fail(
                path,
                Problem::WrongType("an action name or an action object"),
            ))
        }
    };
    if imp.choose.contains(name) {
        let params_j = match j {
            J::Obj(o) => get(o, "params"),
            _ => None,
        };
        let f = choose(params_j, &format!("{path}.params"), imp)?;
        return Ok(ActionSpec {
            name: name.to_string(),
            params,
            imp: f,
        });
    }
    let f = imp.actions.get(name).ok_or_else(|| {
        fail(
            path,
            Problem::UnknownImplementation {
                kind: "action",
                name: name.to_string(),
            },
        )
    })?;
    if imp.spawns.contains(name) {
        match params.get("src") {
            Some(Value::String(src)) if imp.actors.contains(src) => {}
            Some(Value::String(src)) => {
                return Err(fail(
                    &format!("{path}.params.src"),
                    Problem::UnknownImplementation {
                        kind: "actor",
                        name: src.clone(),
                    },
                ))
            }
            _ => {
                return Err(fail(
                    &format!("{path}.params.src"),
                    Problem::WrongType("the name of a registered actor"),
                ))
            }
        }
    }
    Ok(ActionSpec {
        name: name.to_string(),
        params,
        imp: f.clone(),
    })
}

/// A branch of a conditional action list: its guard (none: always) and
/// its actions.
type Branch<C> = (Option<GuardSpec<C>>, Vec<ActionSpec<C>>);

/// A conditional action list (see [`Implementations::choose`]): its
/// branches compiled into one action.
fn choose<C: 'static>(
    params: Option<&J>,
    path: &str,
    imp: &Implementations<C>,
) -> Result<ActionFn<C>, BuildError> {
    let o = match params {
        Some(p) => obj(p, path)?,
        None => {
            return Err(fail(
                path,
                Problem::Invalid("a conditional action list needs params.branches".into()),
            ))
        }
    };
    check_keys(o, &["branches"], path)?;
    let bp = format!("{path}.branches");
    let list = match get(o, "branches") {
        Some(J::Arr(a)) => a,
        _ => return Err(fail(&bp, Problem::WrongType("a list of branches"))),
    };
    let mut branches: Vec<Branch<C>> = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let p = format!("{bp}[{i}]");
        let bo = obj(b, &p)?;
        check_keys(bo, &["guard", "actions"], &p)?;
        let g = match get(bo, "guard") {
            Some(g) => {
                let gp = format!("{p}.guard");
                let g = guard(g, &gp, imp)?;
                if reads_state(&g) {
                    return Err(fail(
                        &gp,
                        Problem::Invalid(
                            "stateIn cannot be checked inside an action: guard the transition"
                                .into(),
                        ),
                    ));
                }
                Some(g)
            }
            None if i + 1 < list.len() => {
                return Err(fail(
                    &format!("{p}.guard"),
                    Problem::Invalid("only the last branch may leave out its guard".into()),
                ))
            }
            None => None,
        };
        let a = match get(bo, "actions") {
            Some(a) => actions(a, &format!("{p}.actions"), imp)?,
            None => Vec::new(),
        };
        branches.push((g, a));
    }
    Ok(std::sync::Arc::new(
        move |scope: &mut crate::actions::ActionScope<'_, C>| {
            let chosen = branches.iter().find(|(g, _)| {
                g.as_ref()
                    .is_none_or(|g| passes(g, scope.context(), scope.event()))
            });
            if let Some((_, list)) = chosen {
                for a in list {
                    scope.run(&a.imp, &a.params);
                }
            }
        },
    ))
}

fn reads_state<C>(g: &GuardSpec<C>) -> bool {
    match g {
        GuardSpec::StateIn(_) => true,
        GuardSpec::And(v) | GuardSpec::Or(v) => v.iter().any(reads_state),
        GuardSpec::Not(g) => reads_state(g),
        GuardSpec::Named { .. } | GuardSpec::Try { .. } => false,
    }
}

/// A guard of a conditional action list, on the context as it is when the
/// action runs (no `stateIn`: the loader refuses it there).
fn passes<C>(g: &GuardSpec<C>, ctx: &C, event: &crate::event::Event) -> bool {
    match g {
        GuardSpec::Named { params, imp, .. } => imp(ctx, event, params),
        GuardSpec::And(v) => v.iter().all(|g| passes(g, ctx, event)),
        GuardSpec::Or(v) => v.iter().any(|g| passes(g, ctx, event)),
        GuardSpec::Not(g) => !passes(g, ctx, event),
        GuardSpec::Try { imp, .. } => imp(ctx, event).unwrap_or(false),
        GuardSpec::StateIn(_) => false,
    }
}

/// `input` or `output`: a template when the implementations resolve
/// templates and the value refers to the context or the event, else a
/// constant.
fn value_spec<C: 'static>(v: Value, imp: &Implementations<C>) -> OutputSpec<C> {
    match &imp.templates {
        Some(f) if is_template(&v) => {
            let f = f.clone();
            OutputSpec::Fn(std::sync::Arc::new(
                move |ctx: &C, e: &crate::event::Event| f(ctx, e, &v),
            ))
        }
        _ => OutputSpec::Value(v),
    }
}

/// Holds a `{"$context": KEY}` or `{"$event": KEY}` object anywhere.
fn is_template(v: &Value) -> bool {
    match v {
        Value::Object(m)
            if m.len() == 1 && (m.contains_key("$context") || m.contains_key("$event")) =>
        {
            true
        }
        Value::Object(m) => m.values().any(is_template),
        Value::Array(a) => a.iter().any(is_template),
        _ => false,
    }
}

fn invoke<C: 'static>(
    j: &J,
    path: &str,
    imp: &Implementations<C>,
) -> Result<InvokeSpec<C>, BuildError> {
    let o = obj(j, path)?;
    check_keys(o, INVOKE_KEYS, path)?;
    let src_j = get(o, "src")
        .ok_or_else(|| fail(path, Problem::Invalid("an invocation needs \"src\"".into())))?;
    let src = string(src_j, &format!("{path}.src"))?.to_string();
    if !imp.actors.contains(&src) {
        return Err(fail(
            &format!("{path}.src"),
            Problem::UnknownImplementation {
                kind: "actor",
                name: src,
            },
        ));
    }
    Ok(InvokeSpec {
        id: match get(o, "id") {
            Some(id) => Some(string(id, &format!("{path}.id"))?.to_string()),
            None => None,
        },
        src,
        input: get(o, "input").map(|v| value_spec(v.to_value(), imp)),
        on_done: match get(o, "onDone") {
            Some(t) => transitions(t, &format!("{path}.onDone"), imp)?,
            None => Vec::new(),
        },
        on_error: match get(o, "onError") {
            Some(t) => transitions(t, &format!("{path}.onError"), imp)?,
            None => Vec::new(),
        },
        path: path.to_string(),
    })
}
