//! The post office of a [`Processor`](super::Processor): every session's
//! external queue, the delayed events, the routes between sessions (parent,
//! invoked children, session ids) and the `<log>` lines. Sessions reach it
//! through their context while a macrostep runs, so a `<send>` learns at
//! once whether its target exists (SCXML's `error.communication`); the
//! processor takes the next ready session and the next due timer from it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::{data_model_for, LogLine};
use crate::event::{Event, EventKind};
use crate::model::Document;

/// Where a `<send>` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// No target: this session's external queue.
    SelfExternal,
    /// `#_parent`.
    Parent,
    /// `#_<invokeid>`: a child this session invoked.
    Invoked(String),
    /// `#_scxml_<sessionid>`.
    Session(String),
}

pub(super) struct Mailbox {
    pub(super) id: String,
    pub(super) queue: VecDeque<Event>,
    pub(super) queued: bool,
    pub(super) alive: bool,
    /// The parent mailbox and this session's invokeid there.
    pub(super) parent: Option<(usize, String)>,
    pub(super) children: HashMap<String, usize>,
}

pub(super) struct Timer {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) sendid: Option<String>,
    pub(super) event: Event,
}

/// A child to start once the current macrostep ends.
pub(super) struct Start {
    pub(super) slot: usize,
    pub(super) document: Arc<Document>,
    pub(super) params: Vec<(String, Value)>,
}

/// The sessions' queues, timers and routes, shared by the [`Processor`](super::Processor)
/// and the sessions' executable content.
pub(crate) struct PostOffice {
    pub(super) boxes: Vec<Mailbox>,
    pub(super) by_id: HashMap<String, usize>,
    /// Delayed events by (deadline in microseconds, sequence number).
    pub(super) timers: BTreeMap<(u64, u64), Timer>,
    pub(super) seq: u64,
    pub(super) now_us: u64,
    pub(super) ready: VecDeque<usize>,
    pub(super) to_start: Vec<Start>,
    /// Children cancelled during a macrostep, to be stopped after it.
    pub(super) to_cancel: Vec<usize>,
    pub(super) logs: Vec<LogLine>,
}

impl PostOffice {
    pub(super) fn add(&mut self, parent: Option<(usize, String)>) -> usize {
        let n = self.boxes.len();
        let id = format!("session{}", n + 1);
        self.by_id.insert(id.clone(), n);
        self.boxes.push(Mailbox {
            id,
            queue: VecDeque::new(),
            queued: false,
            alive: true,
            parent,
            children: HashMap::new(),
        });
        n
    }

    pub(super) fn enqueue(&mut self, k: usize, event: Event) {
        let b = &mut self.boxes[k];
        if !b.alive {
            return;
        }
        b.queue.push_back(event);
        if !b.queued {
            b.queued = true;
            self.ready.push_back(k);
        }
    }

    /// A session ended: it takes no more events and its timers are dropped.
    pub(super) fn retire(&mut self, k: usize) {
        self.boxes[k].alive = false;
        self.boxes[k].queue.clear();
        self.timers.retain(|_, t| t.from != k);
    }

    /// Delivers `event` from session `me` to `target` after `delay_ms`
    /// (0: at once). An error means the target cannot be reached.
    pub(crate) fn send(
        &mut self,
        me: usize,
        target: Target,
        mut event: Event,
        delay_ms: f64,
    ) -> Result<(), String> {
        if !self.boxes[me].alive {
            // A cancelled child's last words (its onexit) go nowhere (6.4).
            return Ok(());
        }
        let to = match &target {
            Target::SelfExternal => me,
            Target::Parent => {
                let (p, invokeid) = self.boxes[me]
                    .parent
                    .clone()
                    .ok_or("#_parent: this session was not invoked")?;
                event.invokeid = Some(invokeid);
                p
            }
            Target::Invoked(id) => *self.boxes[me]
                .children
                .get(id)
                .ok_or_else(|| format!("#_{id}: no such invocation"))?,
            Target::Session(id) => *self
                .by_id
                .get(id)
                .ok_or_else(|| format!("#_scxml_{id}: no such session"))?,
        };
        if !self.boxes[to].alive {
            return Err(format!("{target:?}: the session has ended"));
        }
        if delay_ms <= 0.0 {
            self.enqueue(to, event);
        } else {
            let deadline = self.now_us + (delay_ms * 1000.0).round() as u64;
            self.seq += 1;
            self.timers.insert(
                (deadline, self.seq),
                Timer {
                    from: me,
                    to,
                    sendid: event.sendid.clone(),
                    event,
                },
            );
        }
        Ok(())
    }

    /// Cancels a delayed event session `me` sent, if not yet delivered.
    pub(crate) fn cancel(&mut self, me: usize, sendid: &str) {
        self.timers
            .retain(|_, t| !(t.from == me && t.sendid.as_deref() == Some(sendid)));
    }

    /// Registers a child of `parent`; it starts after the macrostep.
    pub(crate) fn invoke(
        &mut self,
        parent: usize,
        invokeid: String,
        document: Arc<Document>,
        params: Vec<(String, Value)>,
    ) -> Result<usize, String> {
        data_model_for(&document).map_err(|e| e.0)?;
        let child = self.add(Some((parent, invokeid.clone())));
        self.boxes[parent].children.insert(invokeid, child);
        self.to_start.push(Start {
            slot: child,
            document,
            params,
        });
        Ok(child)
    }

    /// Stops an invoked child: at once for its events, its onexit handlers
    /// after the macrostep.
    pub(crate) fn cancel_invoke(&mut self, child: usize) {
        if let Some((p, invokeid)) = self.boxes[child].parent.clone() {
            if self.boxes[p].children.get(&invokeid) == Some(&child) {
                self.boxes[p].children.remove(&invokeid);
            }
        }
        if self.boxes[child].alive {
            self.retire(child);
            self.to_cancel.push(child);
        }
    }

    /// Forwards an external event to an invoked child (`autoforward`).
    pub(crate) fn forward(&mut self, child: usize, event: Event) {
        self.enqueue(child, event);
    }

    /// Session `k` reached a top-level final state: `done.invoke` for its
    /// parent, with the final state's `<donedata>`.
    pub(crate) fn done(&mut self, k: usize, data: Option<Value>) {
        if let Some((p, invokeid)) = self.boxes[k].parent.clone() {
            let event = Event {
                name: format!("done.invoke.{invokeid}"),
                kind: EventKind::Platform,
                invokeid: Some(invokeid),
                ..Event::platform("", data)
            };
            self.enqueue(p, event);
        }
    }

    /// `<log>`.
    pub(crate) fn log(&mut self, session: &str, label: Option<&str>, text: &str) {
        self.logs.push(LogLine {
            session: session.to_owned(),
            label: label.map(str::to_owned),
            text: text.to_owned(),
        });
    }
}
