//! Executable content (SCXML 4), `<send>` and `<cancel>` (6.2, 6.3), and
//! the start of an `<invoke>` (6.4), run against one session's data model.
//!
//! turno-chart's core calls these through the actions, guards and
//! expressions [`crate::compile`] gives the machine. An error in an element
//! stops its block: the spec's "the processor MUST NOT process any further
//! elements of the block" after placing `error.execution` on the internal
//! queue. Events for the internal queue are returned in `raised`, in order;
//! the core queues them.

use std::sync::Arc;

use serde_json::Value;

use crate::datamodel::EvalError;
use crate::event::{Event, EventKind, SCXML_IO_PROCESSOR};
use crate::load::{load_str, parse_delay, read_src};
use crate::model::{Block, Content, Exec, InvokeContent, Param, Send, StateId, ValueOrExpr};
use crate::processor::Target;
use crate::session::{ActiveInvoke, Core};

/// Why an element failed: `error.execution`, with the `sendid` of the
/// `<send>` that failed when it had one (5.10.1: error events carry it).
pub(crate) enum Failure {
    /// `error.execution`.
    Execution(String),
    /// `error.execution` from a `<send>` whose id was already known.
    Send(String, String),
}

impl From<EvalError> for Failure {
    fn from(e: EvalError) -> Self {
        Failure::Execution(e.0)
    }
}

const SCXML_TYPES: &[&str] = &[
    SCXML_IO_PROCESSOR,
    "scxml",
    "http://www.w3.org/TR/scxml/",
    "http://www.w3.org/TR/scxml",
];

/// `error.execution` with a message as its data.
pub(crate) fn error_execution(message: &str) -> Event {
    Event::platform("error.execution", Some(Value::String(message.to_owned())))
}

impl Core {
    /// Runs a block; the first failing element ends it with `error.execution`.
    pub(crate) fn execute_block(&mut self, block: &Block, raised: &mut Vec<Event>) {
        for e in block {
            match self.execute(e, raised) {
                Ok(()) => {}
                Err(Failure::Execution(msg)) => {
                    raised.push(error_execution(&msg));
                    return;
                }
                Err(Failure::Send(msg, sendid)) => {
                    raised.push(Event {
                        sendid: Some(sendid),
                        ..error_execution(&msg)
                    });
                    return;
                }
            }
        }
    }

    fn execute(&mut self, e: &Exec, raised: &mut Vec<Event>) -> Result<(), Failure> {
        match e {
            Exec::Raise { event } => raised.push(Event {
                kind: EventKind::Internal,
                ..Event::platform(event.clone(), None)
            }),
            Exec::Log { label, expr } => {
                let text = match expr {
                    Some(x) => self.dm.eval_log(x)?,
                    None => String::new(),
                };
                self.post
                    .borrow_mut()
                    .log(&self.sessionid, label.as_deref(), &text);
            }
            Exec::Assign { location, value } => self.dm.assign(location, value)?,
            Exec::If(branches) => {
                for (cond, block) in branches {
                    let take = match cond {
                        Some(c) => self.dm.eval_bool(c)?,
                        None => true,
                    };
                    if take {
                        for e in block {
                            self.execute(e, raised)?;
                        }
                        break;
                    }
                }
            }
            Exec::Foreach {
                array,
                item,
                index,
                body,
            } => {
                let n = self.dm.foreach_begin(array)?;
                let r = (|| -> Result<(), Failure> {
                    for i in 0..n {
                        self.dm.foreach_bind(item, index.as_deref(), i)?;
                        for e in body {
                            self.execute(e, raised)?;
                        }
                    }
                    Ok(())
                })();
                self.dm.foreach_end();
                r?;
            }
            Exec::Script(s) => self.dm.run_script(&s.source)?,
            Exec::Cancel { sendid } => {
                let id = self.value_or_expr(sendid)?;
                self.post.borrow_mut().cancel(self.slot, &id);
            }
            Exec::Send(s) => self.send(s, raised)?,
        }
        Ok(())
    }

    fn value_or_expr(&mut self, v: &ValueOrExpr) -> Result<String, Failure> {
        match v {
            ValueOrExpr::Value(s) => Ok(s.clone()),
            ValueOrExpr::Expr(e) => Ok(self.dm.eval_string(e)?),
        }
    }

    /// Event data from `namelist` and `<param>`s: an object of name to value.
    pub(crate) fn params_data(
        &mut self,
        params: &[Param],
        namelist: &[String],
    ) -> Result<Value, EvalError> {
        let mut obj = serde_json::Map::new();
        for name in namelist {
            let v = self
                .dm
                .eval_value(name)
                .map_err(|e| EvalError::new(format!("namelist {name:?}: {}", e.0)))?;
            obj.insert(name.clone(), v);
        }
        for p in params {
            let v = self
                .dm
                .eval_value(&p.expr)
                .map_err(|e| EvalError::new(format!("param {:?}: {}", p.name, e.0)))?;
            obj.insert(p.name.clone(), v);
        }
        Ok(Value::Object(obj))
    }

    pub(crate) fn content_data(&mut self, c: &Content) -> Result<Value, EvalError> {
        match c {
            Content::Expr(e) => self.dm.eval_value(e),
            Content::Inline(text) => Ok(self.dm.content_value(text)),
        }
    }

    /// `<send>`: every attribute is evaluated before anything is sent, so an
    /// error sends nothing.
    fn send(&mut self, s: &Send, raised: &mut Vec<Event>) -> Result<(), Failure> {
        let sendid = match (&s.id, &s.idlocation) {
            (Some(id), _) => Some(id.clone()),
            (None, Some(loc)) => {
                let id = self.next_id("send");
                self.dm.assign_value(loc, &Value::String(id.clone()))?;
                Some(id)
            }
            (None, None) => None,
        };
        match self.send_with_id(s, sendid.clone(), raised) {
            Err(Failure::Execution(msg)) => match sendid {
                Some(id) => Err(Failure::Send(msg, id)),
                None => Err(Failure::Execution(msg)),
            },
            r => r,
        }
    }

    fn send_with_id(
        &mut self,
        s: &Send,
        sendid: Option<String>,
        raised: &mut Vec<Event>,
    ) -> Result<(), Failure> {
        let name = match &s.event {
            Some(v) => self.value_or_expr(v)?,
            None => String::new(),
        };
        let target = match &s.target {
            Some(v) => Some(self.value_or_expr(v)?),
            None => None,
        };
        if let Some(t) = &s.type_ {
            let t = self.value_or_expr(t)?;
            if !SCXML_TYPES.contains(&t.as_str()) {
                return Err(Failure::Execution(format!(
                    "unsupported event I/O processor type {t:?}"
                )));
            }
        }
        let delay = match &s.delay {
            Some(d) => {
                let text = self.value_or_expr(d)?;
                parse_delay(&text)
                    .ok_or_else(|| Failure::Execution(format!("bad delay {text:?}")))?
            }
            None => 0.0,
        };
        let data = if let Some(c) = &s.content {
            Some(self.content_data(c)?)
        } else if s.params.is_empty() && s.namelist.is_empty() {
            None
        } else {
            Some(self.params_data(&s.params, &s.namelist)?)
        };
        let target = match target.as_deref() {
            None => Target::SelfExternal,
            Some("#_internal") => {
                raised.push(Event {
                    name,
                    kind: EventKind::Internal,
                    sendid,
                    origin: None,
                    origintype: None,
                    invokeid: None,
                    data,
                });
                return Ok(());
            }
            Some("#_parent") => Target::Parent,
            Some(t) => {
                if let Some(id) = t.strip_prefix("#_scxml_") {
                    Target::Session(id.to_owned())
                } else if let Some(id) = t.strip_prefix("#_") {
                    Target::Invoked(id.to_owned())
                } else {
                    return Err(Failure::Execution(format!("unsupported send target {t:?}")));
                }
            }
        };
        let event = Event {
            name,
            kind: EventKind::External,
            sendid: sendid.clone(),
            origin: Some(format!("#_scxml_{}", self.sessionid)),
            origintype: Some(SCXML_IO_PROCESSOR.to_owned()),
            invokeid: None,
            data,
        };
        let sent = self.post.borrow_mut().send(self.slot, target, event, delay);
        if let Err(why) = sent {
            raised.push(Event {
                sendid,
                ..Event::platform("error.communication", Some(Value::String(why)))
            });
        }
        Ok(())
    }

    /// `invoke`: evaluates the arguments and asks the system to start the
    /// child (after the macrostep); a failure raises `error.execution` and
    /// starts nothing.
    pub(crate) fn invoke(&mut self, state: StateId, index: usize, raised: &mut Vec<Event>) {
        let doc = self.doc.clone();
        let def = &doc.states[state].invokes[index];
        let r = (|| -> Result<(), Failure> {
            if let Some(t) = &def.type_ {
                let t = self.value_or_expr(t)?;
                if !SCXML_TYPES.contains(&t.trim_end_matches('/'))
                    && !SCXML_TYPES.contains(&t.as_str())
                {
                    return Err(Failure::Execution(format!("unsupported invoke type {t:?}")));
                }
            }
            let invokeid = match (&def.id, &def.idlocation) {
                (Some(id), _) => id.clone(),
                (None, loc) => {
                    self.counter += 1;
                    let id = format!(
                        "{}.{}.{}",
                        doc.states[state].id, self.sessionid, self.counter
                    );
                    if let Some(loc) = loc {
                        self.dm.assign_value(loc, &Value::String(id.clone()))?;
                    }
                    id
                }
            };
            let base = doc.base.as_deref();
            let document = match (&def.src, &def.content) {
                (Some(src), _) => {
                    let src = self.value_or_expr(src)?;
                    let text = read_src(&src, base).map_err(Failure::Execution)?;
                    let path = crate::load::resolve_src(&src, base).map_err(Failure::Execution)?;
                    let d = load_str(&text, path.parent())
                        .map_err(|e| Failure::Execution(format!("{src}: {e}")))?;
                    Arc::new(d)
                }
                (None, Some(InvokeContent::Document(d))) => d.clone(),
                (None, Some(InvokeContent::Expr(e))) => {
                    let text = self.dm.eval_string(e)?;
                    Arc::new(
                        load_str(&text, base)
                            .map_err(|e| Failure::Execution(format!("invoke content: {e}")))?,
                    )
                }
                (None, None) => {
                    return Err(Failure::Execution(
                        "<invoke> has neither src nor content".into(),
                    ))
                }
            };
            let params = match self.params_data(&def.params, &def.namelist)? {
                Value::Object(m) => m.into_iter().collect(),
                _ => Vec::new(),
            };
            let child = self
                .post
                .borrow_mut()
                .invoke(self.slot, invokeid.clone(), document, params)
                .map_err(Failure::Execution)?;
            self.invocations.push(ActiveInvoke {
                invokeid,
                state,
                index,
                child,
            });
            Ok(())
        })();
        if let Err(Failure::Execution(msg) | Failure::Send(msg, _)) = r {
            raised.push(error_execution(&msg));
        }
    }

    /// `cancelInvoke` for the invocations of state `s`.
    pub(crate) fn cancel_invocations_of(&mut self, s: StateId, index: usize) {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.invocations)
            .into_iter()
            .partition(|i| i.state == s && i.index == index);
        self.invocations = kept;
        for inv in gone {
            self.post.borrow_mut().cancel_invoke(inv.child);
        }
    }

    pub(crate) fn next_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}.{}.{}", self.sessionid, self.counter)
    }
}
