//! A node's marks in its system's trace: each remote message's
//! `remote_send` and `remote_wire` on the sender, `remote_receive` on the
//! receiver (`docs/cluster.md`, "Traces of a cluster"). Each is built only
//! when the system records a trace.

use turno::trace::{RemoteReceived, RemoteSendKind, RemoteStep};
use turno::System;

use super::Node;
use crate::transport::Transport;
use crate::wire::{NodeRef, WireVerdict};

/// A tell's id across the cluster: sender, receiver's incarnation, and the
/// sequence number of the sender's tells to it.
pub(super) fn tell_id(from: &NodeRef, to_node: &str, to_inc: u64, seq: u64) -> String {
    format!("{}#{}>{to_node}#{to_inc}/{seq}", from.name, from.inc)
}

/// A send's or an ask's id across the cluster: sender and request id.
pub(super) fn request_id(from: &NodeRef, req: u64) -> String {
    format!("{}#{}?{req}", from.name, from.inc)
}

/// The trace's name for a mailbox's verdict.
pub(super) fn received(v: WireVerdict) -> RemoteReceived {
    match v {
        WireVerdict::Enqueued { .. } => RemoteReceived::Enqueued,
        WireVerdict::Evicting => RemoteReceived::Evicting,
        WireVerdict::Dropped => RemoteReceived::Dropped,
        WireVerdict::Rejected => RemoteReceived::Rejected,
        WireVerdict::Full => RemoteReceived::Full,
        WireVerdict::Closed => RemoteReceived::Closed,
    }
}

impl<S: System, T: Transport> Node<S, T> {
    /// Records a remote send leaving, and (when the transport took it)
    /// going on the wire.
    pub(super) fn trace_sent(
        &self,
        how: RemoteSendKind,
        msg: impl FnOnce() -> String,
        to: (&str, &str),
        subject: Option<&str>,
    ) {
        if !self.sys.tracing() {
            return;
        }
        let msg = msg();
        self.sys.trace_remote(|| RemoteStep::Send {
            msg: msg.clone(),
            how,
            to_node: to.0.to_owned(),
            to_path: to.1.to_owned(),
        });
        if let Some(subject) = subject {
            self.sys.trace_remote(|| RemoteStep::Wire {
                msg,
                subject: subject.to_owned(),
            });
        }
    }

    /// Records a remote message's arrival and what became of it.
    pub(super) fn trace_received(
        &self,
        subject: &str,
        from: &NodeRef,
        msg: impl FnOnce() -> String,
        verdict: RemoteReceived,
    ) {
        if !self.sys.tracing() {
            return;
        }
        // Only when tracing: the exported actor whose subject this is.
        let actor = self.export_ids.iter().find_map(|(path, id)| {
            let s = self.config.subjects.actor(&self.me.name, path).ok()?;
            (s == subject).then_some(*id)
        });
        self.sys.trace_remote(|| RemoteStep::Receive {
            actor,
            msg: msg(),
            from_node: from.name.clone(),
            verdict,
        });
    }
}

impl<S: System, T: Transport> Node<S, T> {
    /// [`Node::trace_received`] for a tell from `sender` (set only when
    /// tracing).
    pub(super) fn trace_tell(
        &self,
        subject: &str,
        sender: Option<&NodeRef>,
        to_inc: u64,
        seq: u64,
        verdict: RemoteReceived,
    ) {
        if let Some(from) = sender {
            let id = || tell_id(from, &self.me.name, to_inc, seq);
            self.trace_received(subject, from, id, verdict);
        }
    }
}
