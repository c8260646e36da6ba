//! Traces of a cluster: several nodes' traces as one, and each remote
//! message followed from its sender to its receiver.
//!
//! A cluster node's trace names the node in its header (`node`,
//! `NAME#INCARNATION`, and `epoch_unix_ns`, when its `t_ns` 0 was). A
//! merged trace names the nodes in its header (`nodes`) and each event its
//! node (`node`). [`merge`] makes one from several nodes' traces;
//! the simulated cluster writes one directly.
//!
//! A remote message leaves four marks, found by its id (`msg`):
//! `remote_send` and `remote_wire` on the sender, `remote_receive` (with
//! the mailbox's verdict) on the receiver, and the receiver's `turn_start`
//! of the turn that handled it: the turn whose message is the `enqueue`
//! the receiver recorded for that delivery. [`Messages::build`] finds them.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};

use serde::Serialize;

use crate::actor::{ActorEvent, Lane, RemoteReceived, RemoteSendKind, TurnKind};
use crate::event::{Event, Header, Kind};
use crate::ids::ActorId;
use crate::reader::{ReadError, Reader};
use crate::world::World;

/// Why traces could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A trace could not be read.
    #[error("trace {index}: {error}")]
    Read {
        /// Its position among the inputs, from 0.
        index: usize,
        /// The problem.
        error: ReadError,
    },
    /// A trace is not a runtime trace of a node.
    #[error("trace {index}: {message}")]
    NotANode {
        /// Its position among the inputs, from 0.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The merged trace could not be written.
    #[error("writing the merged trace: {0}")]
    Write(#[from] std::io::Error),
}

/// Merges nodes' traces (each a `turno-trace` whose header names its
/// `node`, or an already merged one) into one trace on `out`: events in
/// time order (each trace's `t_ns` moved onto the Unix time line by its
/// `epoch_unix_ns`, then made relative to the earliest), each trace's own
/// order kept, ties going to the earlier input; `seq` renumbered from 0;
/// each event names its node. Every input is read into memory. Returns the
/// nodes, in input order.
pub fn merge<R: BufRead>(inputs: Vec<R>, mut out: impl Write) -> Result<Vec<String>, MergeError> {
    let mut traces = Vec::new();
    let mut nodes: Vec<String> = Vec::new();
    for (index, src) in inputs.into_iter().enumerate() {
        let mut reader = Reader::new(src).map_err(|error| MergeError::Read { index, error })?;
        let header = reader.header().clone();
        if header.format != crate::Format::Turno {
            return Err(MergeError::NotANode {
                index,
                message: "a JavaScript trace, not a node's".into(),
            });
        }
        let own = match (&header.node, &header.nodes) {
            (Some(n), _) => {
                if nodes.contains(n) {
                    return Err(MergeError::NotANode {
                        index,
                        message: format!("node {n} is given twice"),
                    });
                }
                nodes.push(n.clone());
                Some(n.clone())
            }
            (None, Some(list)) => {
                for n in list {
                    if !nodes.contains(n) {
                        nodes.push(n.clone());
                    }
                }
                None
            }
            (None, None) => {
                return Err(MergeError::NotANode {
                    index,
                    message: "its header names no node (`node`): not a cluster node's trace".into(),
                })
            }
        };
        let mut events = Vec::new();
        for e in &mut reader {
            let mut e = e.map_err(|error| MergeError::Read { index, error })?;
            if e.node.is_none() {
                e.node = own.clone();
            }
            events.push(e);
        }
        traces.push((header.epoch_unix_ns.unwrap_or(0), events));
    }
    let base = traces.iter().map(|(epoch, _)| *epoch).min().unwrap_or(0);
    let mut at = vec![0usize; traces.len()];
    let mut seq = 0u64;
    writeln!(out, "{}", Header::turno_cluster(nodes.clone()).to_line())?;
    loop {
        // The input whose next event is earliest (the first on a tie).
        let mut best: Option<(usize, u64)> = None;
        for (i, (epoch, events)) in traces.iter().enumerate() {
            if let Some(e) = events.get(at[i]) {
                let t = epoch.saturating_add(e.t_ns).saturating_sub(base);
                if best.is_none_or(|(_, bt)| t < bt) {
                    best = Some((i, t));
                }
            }
        }
        let Some((i, t)) = best else { break };
        let mut e = traces[i].1[at[i]].clone();
        at[i] += 1;
        e.seq = seq;
        e.t_ns = t;
        seq += 1;
        writeln!(out, "{}", e.to_line())?;
    }
    out.flush()?;
    Ok(nodes)
}

/// One of a message's marks: the event's position and its node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mark {
    /// The event's `seq`.
    pub step: u64,
    /// The node that recorded it.
    pub node: String,
}

/// A remote message and its marks, as far as the trace shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Its id (`remote_send`'s `msg`).
    pub msg: String,
    /// The kind of send, when the sender's `remote_send` is in the trace.
    pub how: Option<RemoteSendKind>,
    /// The receiving node's name and the actor's path.
    pub to_node: Option<String>,
    /// The receiving actor's path.
    pub to_path: Option<String>,
    /// Its `remote_send`.
    pub send: Option<Mark>,
    /// Its `remote_wire`.
    pub wire: Option<Mark>,
    /// Its (first) `remote_receive`.
    pub receive: Option<Mark>,
    /// The receiving mailbox's verdict.
    pub verdict: Option<RemoteReceived>,
    /// The `turn_start` of the turn that handled it.
    pub turn: Option<Mark>,
}

/// Every remote message in a trace, in the order of their first mark.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Messages {
    /// The nodes: the header's `nodes` (or `node`), then any other node
    /// an event names, in order of appearance.
    pub nodes: Vec<String>,
    /// The messages.
    pub messages: Vec<Message>,
}

impl Messages {
    /// Reads a trace (one node's or merged) and finds each remote
    /// message's marks.
    pub fn build<R: BufRead>(src: R) -> Result<Messages, ReadError> {
        let mut reader = Reader::new(src)?;
        let header = reader.header().clone();
        let own = header.node.clone().unwrap_or_default();
        let mut out = Messages {
            nodes: header
                .nodes
                .clone()
                .or_else(|| header.node.clone().map(|n| vec![n]))
                .unwrap_or_default(),
            messages: Vec::new(),
        };
        let mut world = World::new();
        let mut by_id: HashMap<String, usize> = HashMap::new();
        // The last user-lane enqueue of each actor, by node.
        let mut last_enqueue: HashMap<(String, ActorId), u64> = HashMap::new();
        // Deliveries waiting for their turn, by node and enqueue seq.
        let mut waiting: BTreeMap<(String, u64), usize> = BTreeMap::new();
        for e in &mut reader {
            let e: Event = e?;
            world.apply(&e);
            let Kind::Actor(a) = &e.kind else { continue };
            let node = e.node.clone().unwrap_or_else(|| own.clone());
            if !out.nodes.contains(&node) {
                out.nodes.push(node.clone());
            }
            let mark = || Mark {
                step: e.seq,
                node: node.clone(),
            };
            let mut entry = |msg: &str, messages: &mut Vec<Message>| -> usize {
                *by_id.entry(msg.to_owned()).or_insert_with(|| {
                    messages.push(Message {
                        msg: msg.to_owned(),
                        how: None,
                        to_node: None,
                        to_path: None,
                        send: None,
                        wire: None,
                        receive: None,
                        verdict: None,
                        turn: None,
                    });
                    messages.len() - 1
                })
            };
            match a {
                ActorEvent::Enqueue {
                    actor,
                    lane: Lane::User,
                    ..
                } => {
                    last_enqueue.insert((node.clone(), *actor), e.seq);
                }
                ActorEvent::RemoteSend {
                    msg,
                    how,
                    to_node,
                    to_path,
                    ..
                } => {
                    let i = entry(msg, &mut out.messages);
                    let m = &mut out.messages[i];
                    m.how = Some(*how);
                    m.to_node = Some(to_node.clone());
                    m.to_path = Some(to_path.clone());
                    m.send.get_or_insert_with(mark);
                }
                ActorEvent::RemoteWire { msg, .. } => {
                    let i = entry(msg, &mut out.messages);
                    out.messages[i].wire.get_or_insert_with(mark);
                }
                ActorEvent::RemoteReceive {
                    actor,
                    msg,
                    verdict,
                    ..
                } => {
                    let i = entry(msg, &mut out.messages);
                    let m = &mut out.messages[i];
                    if m.receive.is_none() {
                        m.receive = Some(mark());
                        m.verdict = Some(*verdict);
                        if matches!(verdict, RemoteReceived::Enqueued | RemoteReceived::Evicting) {
                            if let Some(&q) = last_enqueue.get(&(node.clone(), *actor)) {
                                waiting.insert((node.clone(), q), i);
                            }
                        }
                    }
                }
                ActorEvent::TurnStart {
                    actor,
                    what: TurnKind::Message | TurnKind::Unstashed,
                } => {
                    let w = match &e.node {
                        Some(n) => world.nodes.get(n),
                        None => Some(&world),
                    };
                    let current = w
                        .and_then(|w| w.actors.get(actor))
                        .and_then(|v| v.current.flatten());
                    if let Some(q) = current {
                        if let Some(i) = waiting.remove(&(node.clone(), q)) {
                            out.messages[i].turn = Some(mark());
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_trace(node: &str, epoch: u64, lines: &[&str]) -> String {
        let mut h = Header::turno_node(node);
        h.epoch_unix_ns = Some(epoch);
        let mut s = h.to_line();
        for l in lines {
            s.push('\n');
            s.push_str(l);
        }
        s.push('\n');
        s
    }

    #[test]
    fn merged_traces_follow_a_message_across_nodes() {
        let a = node_trace(
            "a#1",
            1_000,
            &[
                r#"{"seq":0,"t_ns":0,"kind":"remote_send","actor":0,"msg":"a#1?1","how":"send","to_node":"b","to_path":"/sink"}"#,
                r#"{"seq":1,"t_ns":5,"kind":"remote_wire","actor":0,"msg":"a#1?1","subject":"t.b.sink"}"#,
            ],
        );
        let b = node_trace(
            "b#2",
            990,
            &[
                r#"{"seq":0,"t_ns":0,"kind":"spawn","actor":1,"name":"sink","parent":0,"policy":"reject(2)"}"#,
                r#"{"seq":1,"t_ns":20,"kind":"enqueue","actor":1,"lane":"user","depth":1}"#,
                r#"{"seq":2,"t_ns":20,"kind":"remote_receive","actor":1,"msg":"a#1?1","from_node":"a","verdict":"enqueued"}"#,
                r#"{"seq":3,"t_ns":30,"kind":"turn_start","actor":1,"what":"message"}"#,
            ],
        );
        let mut out = Vec::new();
        let nodes = merge(vec![a.as_bytes(), b.as_bytes()], &mut out).unwrap();
        assert_eq!(nodes, ["a#1", "b#2"]);
        let text = String::from_utf8(out).unwrap();
        let (_, events) = crate::read_all(text.as_bytes()).unwrap();
        // b's epoch is 10 ns earlier: its spawn comes first, at 0.
        let order: Vec<(String, u64)> = events
            .iter()
            .map(|e| (e.node.clone().unwrap(), e.t_ns))
            .collect();
        assert_eq!(
            order,
            [
                ("b#2".into(), 0),
                ("a#1".into(), 10),
                ("a#1".into(), 15),
                ("b#2".into(), 20),
                ("b#2".into(), 20),
                ("b#2".into(), 30)
            ]
        );
        let m = Messages::build(text.as_bytes()).unwrap();
        assert_eq!(m.nodes, ["a#1", "b#2"]);
        assert_eq!(m.messages.len(), 1);
        let msg = &m.messages[0];
        let marks: Vec<(u64, &str)> = [&msg.send, &msg.wire, &msg.receive, &msg.turn]
            .iter()
            .map(|k| {
                let k = k.as_ref().unwrap();
                (k.step, k.node.as_str())
            })
            .collect();
        assert_eq!(marks, [(1, "a#1"), (2, "a#1"), (4, "b#2"), (5, "b#2")]);
        assert_eq!(msg.verdict, Some(RemoteReceived::Enqueued));
    }

    #[test]
    fn a_trace_without_a_node_is_refused_by_merge() {
        let plain = "{\"format\":\"turno-trace\",\"version\":1}\n";
        let err = merge(vec![plain.as_bytes()], Vec::new()).unwrap_err();
        assert!(err.to_string().contains("names no node"), "{err}");
    }
}
