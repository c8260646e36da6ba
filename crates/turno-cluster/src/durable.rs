//! Durable mailboxes: an actor's mail kept in a JetStream stream, delivered
//! at least once, applied once.
//!
//! An actor that asks for a durable mailbox gets one stream of its own
//! ([`DurableSpec::stream_name`]) storing one subject
//! ([`DurableSpec::subject`], `<prefix>.<node>.d.<seg>…`, escaped as the
//! actor subjects are). The stream's limits express the actor's policy
//! ([`DurablePolicy`]):
//!
//! | policy | stream limits | a publish to a full mailbox |
//! |---|---|---|
//! | `KeepNewest(n)` | `max_msgs_per_subject = n`, discard old | stored; the oldest unacknowledged message is discarded (not reported to the sender) |
//! | `KeepOldest(n)` | `max_msgs_per_subject = n`, discard new per subject | refused: [`DurableVerdict::Dropped`] |
//! | `Reject(n)` | the same | refused: [`DurableVerdict::Rejected`] |
//!
//! The capacity counts the messages stored and not yet acknowledged
//! (the one being applied included).
//!
//! **Sending** ([`send_durable`]) waits for the stream's acknowledgement
//! (the PubAck): the verdict is the stored sequence, the policy's refusal,
//! or [`DurableVerdict::Unknown`] when no acknowledgement came in time. The
//! message id deduplicates within the stream's duplicate window, so a
//! sender that got `Unknown` sends again with the same id and learns
//! [`DurableVerdict::Duplicate`] if the first one was stored.
//!
//! **Receiving** ([`DurableMailbox`]): the stream's consumer hands over one
//! unacknowledged message at a time, in stream order; the mailbox puts it
//! into the actor's local mailbox as a [`Durable`]. The actor keeps an
//! **applied sequence** with its state and commits both together: a
//! message at or below it changed the state already (its acknowledgement
//! was lost, or the node crashed between the commit and the ack) and is
//! acknowledged and skipped ([`Durable::fresh`]). Because messages come in
//! stream order, one at a time, "at or below the applied sequence" is
//! exactly "applied before". A message not acknowledged within the ack wait
//! (the node died, the actor's mailbox refused it, the ack was lost) is
//! delivered again. A message delivered more than `max_deliver` times and
//! not applied yet is a **dead letter**: [`Durable::fresh`] does not hand
//! it over, and its ack stores it in the **dead-letter stream**
//! ([`DurableSpec::dead_letter_stream`], inspect it with `nats stream view`)
//! and terminates it; counted ([`DurableStats::dead_lettered`]). The
//! decision is the actor's check, against its applied sequence, so a
//! message applied whose acks were lost is skipped, never dead-lettered
//! too. A payload that does not decode is dead-lettered by the mailbox.
//!
//! **Durability** is explicit: file storage, `replicas` copies (3 on a
//! three-server cluster; the default 1 suits a single server), and the
//! servers run with `sync_interval: always` (set in the server's
//! configuration, not by a client), so a PubAck means the message is on
//! the disks of a majority of the replicas.
//!
//! The same code runs on the simulated broker ([`crate::sim`]) and on real
//! NATS ([`crate::nats`]): both implement the stream calls of
//! [`Transport`].
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use turno::{Actor, Context, DetSystem, Props, System};
//! use turno_cluster::durable::{send_durable, Durable, DurableMailbox, DurablePolicy, DurableSpec, DurableVerdict};
//! use turno_cluster::sim::{Faults, SimBroker};
//!
//! // The account's state and its applied sequence, committed together (a
//! // database row in a real system).
//! #[derive(Default)]
//! struct Row { balance: u64, applied: u64 }
//!
//! struct Account(Arc<Mutex<Row>>);
//! impl Actor for Account {
//!     type Msg = Durable<u64>;
//!     fn handle(&mut self, _: &mut Context<'_, Self>, d: Durable<u64>) {
//!         let mut row = self.0.lock().unwrap();
//!         if let Some(amount) = d.fresh(row.applied) {
//!             row.balance += amount;
//!             row.applied = d.seq();
//!         }
//!         d.ack();
//!     }
//! }
//!
//! let broker = SimBroker::new(1, Faults::none());
//! let mut t = broker.transport("b", Duration::ZERO);
//! let mut sys = DetSystem::new(1);
//! let row = Arc::new(Mutex::new(Row::default()));
//! let r = row.clone();
//! let account = sys.spawn(Props::new().name("account"), move || Account(r.clone())).unwrap();
//! let spec = DurableSpec::new("b", "/account", DurablePolicy::Reject(10));
//! let mut mailbox = DurableMailbox::open(&mut t, spec.clone(), account).unwrap();
//!
//! let mut sender = broker.transport("a", Duration::ZERO);
//! assert!(matches!(send_durable(&mut sender, &spec, "pay-1", &5u64).unwrap(), DurableVerdict::Stored { seq: 1 }));
//! assert!(matches!(send_durable(&mut sender, &spec, "pay-1", &5u64).unwrap(), DurableVerdict::Duplicate { seq: 1 }));
//! for _ in 0..3 {
//!     mailbox.pump(&mut t);
//!     sys.run_until_idle().unwrap();
//!     broker.advance(Duration::from_millis(1));
//! }
//! assert_eq!(row.lock().unwrap().balance, 5);
//! assert_eq!(mailbox.stats().acked, 1);
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use turno::Addr;

use crate::subject::{escape, SubjectError, Subjects};
use crate::transport::{StreamDelivery, StreamSpec, Transport, TransportError};
use crate::wire::{Codec, WireError};

/// A durable mailbox's policy: its capacity and what a full one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurablePolicy {
    /// Keep the newest `n`: a new message discards the oldest stored one.
    KeepNewest(u64),
    /// Keep the oldest `n`: a new message is refused, [`DurableVerdict::Dropped`].
    KeepOldest(u64),
    /// Refuse a new message while `n` are stored: [`DurableVerdict::Rejected`].
    Reject(u64),
}

impl DurablePolicy {
    fn capacity(self) -> u64 {
        match self {
            DurablePolicy::KeepNewest(n)
            | DurablePolicy::KeepOldest(n)
            | DurablePolicy::Reject(n) => n,
        }
    }
}

/// Where a durable mailbox lives and how it is kept. Sender and receiver
/// use the same spec (as they register the same message type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurableSpec {
    /// The cluster's subjects.
    pub subjects: Subjects,
    /// The receiving node's name.
    pub node: String,
    /// The actor's path on it (`/orders`).
    pub path: String,
    /// The policy.
    pub policy: DurablePolicy,
    /// Copies of each message on distinct servers (JetStream replicas):
    /// 3 on a three-server cluster. Default 1.
    pub replicas: usize,
    /// How long a delivered message may stay unacknowledged before it is
    /// delivered again. Default 30 s.
    pub ack_wait: Duration,
    /// Deliveries after which a message goes to the dead letters instead
    /// of the actor. Default 5.
    pub max_deliver: u32,
    /// How long message ids are remembered to deduplicate publishes.
    /// Default 2 minutes.
    pub duplicate_window: Duration,
    /// The codec of the messages. Default postcard.
    pub codec: Codec,
}

impl DurableSpec {
    /// The durable mailbox of the actor at `path` on `node`, with the
    /// defaults of the other settings.
    pub fn new(node: impl Into<String>, path: impl Into<String>, policy: DurablePolicy) -> Self {
        DurableSpec {
            subjects: Subjects::default(),
            node: node.into(),
            path: path.into(),
            policy,
            replicas: 1,
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            duplicate_window: Duration::from_secs(120),
            codec: Codec::Postcard,
        }
    }

    /// The same with `n` replicas.
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// The same with this ack wait.
    pub fn ack_wait(mut self, d: Duration) -> Self {
        self.ack_wait = d;
        self
    }

    /// The same with this maximum of deliveries.
    pub fn max_deliver(mut self, n: u32) -> Self {
        self.max_deliver = n;
        self
    }

    fn segments(&self) -> Result<Vec<String>, SubjectError> {
        let rest = self
            .path
            .strip_prefix('/')
            .ok_or_else(|| SubjectError::NotAPath(self.path.clone()))?;
        Ok(rest.split('/').map(escape).collect())
    }

    fn subject_of(&self, kind: &str) -> Result<String, SubjectError> {
        let mut s = format!("{}.{}.{kind}", self.subjects.prefix(), escape(&self.node));
        for seg in self.segments()? {
            s.push('.');
            s.push_str(&seg);
        }
        Ok(s)
    }

    /// The subject the mailbox's stream stores: `<prefix>.<node>.d.<seg>…`.
    pub fn subject(&self) -> Result<String, SubjectError> {
        self.subject_of("d")
    }

    /// The subject of its dead letters: `<prefix>.<node>.dl.<seg>…`.
    pub fn dead_letter_subject(&self) -> Result<String, SubjectError> {
        self.subject_of("dl")
    }

    fn name_of(&self, kind: &str) -> Result<String, SubjectError> {
        // Escaped tokens are made of [A-Za-z0-9_-] and never contain
        // `_2D`; writing `-` as `_2D` frees `-` to separate them, so
        // distinct mailboxes have distinct names (which allow no `.`).
        let mut tokens = vec![escape(self.subjects.prefix()), escape(&self.node)];
        tokens.extend(self.segments()?);
        let body: Vec<String> = tokens.iter().map(|t| t.replace('-', "_2D")).collect();
        Ok(format!("{kind}-{}", body.join("-")))
    }

    /// The stream's name: `D-<prefix>-<node>-<seg>…` (each token escaped,
    /// `-` within a token written `_2D`). Also its consumer's durable name.
    pub fn stream_name(&self) -> Result<String, SubjectError> {
        self.name_of("D")
    }

    /// The dead-letter stream's name: `DL-<prefix>-<node>-<seg>…`.
    pub fn dead_letter_stream(&self) -> Result<String, SubjectError> {
        self.name_of("DL")
    }

    fn stream(&self) -> Result<StreamSpec, SubjectError> {
        Ok(StreamSpec {
            name: self.stream_name()?,
            subject: self.subject()?,
            max_per_subject: Some(self.policy.capacity()),
            discard_new: !matches!(self.policy, DurablePolicy::KeepNewest(_)),
            replicas: self.replicas,
            ack_wait: self.ack_wait,
            duplicate_window: self.duplicate_window,
            consumer: true,
        })
    }

    fn dead_letters(&self) -> Result<StreamSpec, SubjectError> {
        Ok(StreamSpec {
            name: self.dead_letter_stream()?,
            subject: self.dead_letter_subject()?,
            max_per_subject: None,
            discard_new: false,
            replicas: self.replicas,
            ack_wait: self.ack_wait,
            duplicate_window: self.duplicate_window,
            consumer: false,
        })
    }
}

/// Why a durable send or a mailbox could not even start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurableError {
    /// The message does not encode.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The path does not map to a subject.
    #[error(transparent)]
    Subject(#[from] SubjectError),
    /// The broker did not create the stream or its consumer.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// What a [`send_durable`] learned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DurableVerdict {
    /// Stored under this stream sequence (for keep-newest, possibly
    /// discarding the oldest stored message: the PubAck does not say).
    Stored {
        /// The stream sequence.
        seq: u64,
    },
    /// The message id was stored already (within the duplicate window):
    /// nothing new stored.
    Duplicate {
        /// The sequence of the stored one.
        seq: u64,
    },
    /// Refused by a full keep-oldest mailbox.
    Dropped,
    /// Refused by a full reject mailbox.
    Rejected,
    /// The broker refused it otherwise (no such stream, no quorum of
    /// replicas): not stored.
    Refused(String),
    /// No acknowledgement in time: **it may or may not be stored**. Send
    /// again with the same message id to find out.
    Unknown,
    /// Not sent: the client's buffer was full or its connection closed.
    Unsent,
}

fn encode<M: Serialize>(codec: Codec, msg: &M) -> Result<Vec<u8>, WireError> {
    let mut bytes = vec![match codec {
        Codec::Postcard => 0u8,
        Codec::Json => 1u8,
    }];
    bytes.extend(codec.encode(msg)?);
    Ok(bytes)
}

fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<M, WireError> {
    let undecodable = |detail: &str| WireError::Undecodable {
        what: std::any::type_name::<M>().to_owned(),
        detail: detail.to_owned(),
    };
    match bytes.split_first() {
        Some((0, rest)) => Codec::Postcard.decode(rest),
        Some((1, rest)) => Codec::Json.decode(rest),
        Some((t, _)) => Err(undecodable(&format!("unknown codec tag {t}"))),
        None => Err(undecodable("empty payload")),
    }
}

/// Stores `msg` in the durable mailbox `to`, deduplicated by `msg_id`, and
/// waits for the stream's acknowledgement (the transport's ack timeout).
/// The verdict says what the stream did; see [`DurableVerdict`].
pub fn send_durable<T: Transport, M: Serialize>(
    t: &mut T,
    to: &DurableSpec,
    msg_id: &str,
    msg: &M,
) -> Result<DurableVerdict, DurableError> {
    let subject = to.subject()?;
    let bytes = encode(to.codec, msg)?;
    Ok(match t.publish_durable(&subject, msg_id, bytes) {
        Ok(ack) if ack.duplicate => DurableVerdict::Duplicate { seq: ack.seq },
        Ok(ack) => DurableVerdict::Stored { seq: ack.seq },
        Err(TransportError::SubjectFull) => match to.policy {
            DurablePolicy::KeepOldest(_) => DurableVerdict::Dropped,
            DurablePolicy::Reject(_) | DurablePolicy::KeepNewest(_) => DurableVerdict::Rejected,
        },
        Err(TransportError::NoAck) => DurableVerdict::Unknown,
        Err(TransportError::Full | TransportError::Closed) => DurableVerdict::Unsent,
        Err(e @ (TransportError::Broker(_) | TransportError::Unsupported)) => {
            DurableVerdict::Refused(e.to_string())
        }
    })
}

#[derive(Default)]
struct Shared {
    acks: Vec<StreamDelivery>,
    dead: Vec<StreamDelivery>,
    skipped: u64,
}

/// One message of a durable mailbox, as its actor receives it. Apply it if
/// [`fresh`](Durable::fresh), commit the state with [`seq`](Durable::seq)
/// as the applied sequence, then [`ack`](Durable::ack). Dropped without an
/// ack, it is delivered again after the ack wait.
pub struct Durable<M> {
    msg: M,
    delivery: StreamDelivery,
    max_deliver: u32,
    dead: std::cell::Cell<bool>,
    shared: Arc<Mutex<Shared>>,
}

impl<M> Durable<M> {
    /// Its stream sequence: the applied sequence to commit with the state
    /// it changed.
    pub fn seq(&self) -> u64 {
        self.delivery.seq
    }

    /// Which delivery of it this is (from 1).
    pub fn delivery(&self) -> u64 {
        self.delivery.delivery
    }

    /// The message, whether or not it was applied already.
    pub fn msg(&self) -> &M {
        &self.msg
    }

    /// The message, if it is newer than `applied` (the sequence committed
    /// with the actor's state) and within its deliveries. `None`: ack it
    /// and change nothing. Either it changed the state already (a
    /// redelivery after a lost ack, or after a crash between the commit
    /// and the ack; counted [`DurableStats::skipped`]), or it was
    /// delivered more than `max_deliver` times without being applied: a
    /// dead letter, which its ack stores in the dead-letter stream.
    pub fn fresh(&self, applied: u64) -> Option<&M> {
        if self.delivery.seq <= applied {
            if let Ok(mut s) = self.shared.lock() {
                s.skipped += 1;
            }
            None
        } else if self.delivery.delivery > u64::from(self.max_deliver) {
            self.dead.set(true);
            None
        } else {
            Some(&self.msg)
        }
    }

    /// Acknowledges it (or, for a dead letter, stores it in the
    /// dead-letter stream and terminates it): at the mailbox's next pump.
    /// Call it after the state it changed is committed.
    pub fn ack(self) {
        if let Ok(mut s) = self.shared.lock() {
            if self.dead.get() {
                s.dead.push(self.delivery);
            } else {
                s.acks.push(self.delivery);
            }
        }
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Durable<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable")
            .field("seq", &self.delivery.seq)
            .field("delivery", &self.delivery.delivery)
            .field("msg", &self.msg)
            .finish()
    }
}

/// A durable mailbox's counts (this process's, since it was opened).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DurableStats {
    /// Deliveries put into the actor's mailbox.
    pub delivered: u64,
    /// Of them, deliveries after the first of a message.
    pub redelivered: u64,
    /// Deliveries the actor's local mailbox refused (full, closed): not
    /// acknowledged, so delivered again after the ack wait.
    pub refused: u64,
    /// Deliveries the actor found applied already ([`Durable::fresh`]).
    pub skipped: u64,
    /// Acknowledgements sent.
    pub acked: u64,
    /// Acknowledgements the client could not send (the message comes
    /// again).
    pub ack_errors: u64,
    /// Messages stored in the dead-letter stream and terminated: past
    /// `max_deliver` deliveries and not applied, or undecodable.
    pub dead_lettered: u64,
    /// Of them, payloads that did not decode.
    pub undecodable: u64,
    /// Dead letters whose store failed (tried again at their next
    /// delivery).
    pub dead_letter_errors: u64,
}

/// The receiving side of a durable mailbox: its stream's consumer feeding
/// the actor's local mailbox. See the [module docs](self).
pub struct DurableMailbox<M> {
    spec: DurableSpec,
    name: String,
    dead_letter_subject: String,
    to: Addr<Durable<M>>,
    shared: Arc<Mutex<Shared>>,
    stats: DurableStats,
}

impl<M: DeserializeOwned + Send + 'static> DurableMailbox<M> {
    /// Creates (or finds) the stream, its consumer and its dead-letter
    /// stream, and binds the consumer to this client: what an earlier
    /// process left unacknowledged comes again after the ack wait.
    pub fn open<T: Transport>(
        t: &mut T,
        spec: DurableSpec,
        to: Addr<Durable<M>>,
    ) -> Result<Self, DurableError> {
        t.stream_create(&spec.dead_letters()?)?;
        let stream = spec.stream()?;
        t.stream_create(&stream)?;
        Ok(DurableMailbox {
            dead_letter_subject: spec.dead_letter_subject()?,
            name: stream.name,
            spec,
            to,
            shared: Arc::new(Mutex::new(Shared::default())),
            stats: DurableStats::default(),
        })
    }

    /// Sends the acknowledgements the actor made, then hands what the
    /// consumer delivered to the actor (or to the dead letters). Returns
    /// how many deliveries it handled.
    pub fn pump<T: Transport>(&mut self, t: &mut T) -> usize {
        let (acks, dead) = match self.shared.lock() {
            Ok(mut s) => (std::mem::take(&mut s.acks), std::mem::take(&mut s.dead)),
            Err(_) => (Vec::new(), Vec::new()),
        };
        for d in acks {
            match t.stream_ack(&self.name, &d, false) {
                Ok(()) => self.stats.acked += 1,
                Err(_) => self.stats.ack_errors += 1,
            }
        }
        for d in dead {
            self.dead_letter(t, &d);
        }
        let mut n = 0;
        while let Some(d) = t.stream_poll(&self.name) {
            n += 1;
            let msg = match decode::<M>(&d.payload) {
                Ok(m) => m,
                Err(_) => {
                    if self.dead_letter(t, &d) {
                        self.stats.undecodable += 1;
                    }
                    continue;
                }
            };
            if d.delivery > 1 {
                self.stats.redelivered += 1;
            }
            let durable = Durable {
                msg,
                delivery: d,
                max_deliver: self.spec.max_deliver,
                dead: std::cell::Cell::new(false),
                shared: self.shared.clone(),
            };
            if self.to.try_send(durable).is_enqueued() {
                self.stats.delivered += 1;
            } else {
                self.stats.refused += 1;
            }
        }
        n
    }

    fn dead_letter<T: Transport>(&mut self, t: &mut T, d: &StreamDelivery) -> bool {
        let id = format!("{}-{}", self.name, d.seq);
        match t.publish_durable(&self.dead_letter_subject, &id, d.payload.clone()) {
            Ok(_) => {
                self.stats.dead_lettered += 1;
                if t.stream_ack(&self.name, d, true).is_err() {
                    self.stats.ack_errors += 1;
                }
                true
            }
            Err(_) => {
                self.stats.dead_letter_errors += 1;
                false
            }
        }
    }

    /// The counts so far, with the skips the actor reported.
    pub fn stats(&self) -> DurableStats {
        let mut s = self.stats;
        if let Ok(sh) = self.shared.lock() {
            s.skipped = sh.skipped;
        }
        s
    }

    /// The spec it was opened with.
    pub fn spec(&self) -> &DurableSpec {
        &self.spec
    }
}

#[cfg(test)]
mod tests;
