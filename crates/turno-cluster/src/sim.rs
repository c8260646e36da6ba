//! The simulated broker: a whole cluster on one thread, under one seed.
//!
//! [`SimBroker`] models what the nodes rely on in NATS: subjects with
//! wildcards, request/reply, "no responders" answered at once for a
//! subject without subscribers, and a bounded per-subject pending limit
//! per subscriber (a paused consumer loses what overflows, counted as a
//! slow consumer). It also models the JetStream parts: [`SimStream`] (dedup
//! by message id, ack wait and redelivery, one unacknowledged message at a
//! time, max deliveries into dead letters, per-subject limits), which the
//! durable mailboxes ([`crate::durable`]) use through the transport's
//! stream calls, and [`SimKv`] (a key/value bucket with compare-and-set on
//! revisions) for the next layer.
//!
//! A durable publish is answered at once (its acknowledgement or the
//! refusal); under the drop fault it is lost before or after it is stored,
//! either way answered [`TransportError::NoAck`]. A stream delivers to its
//! consumer's client when that client polls (no latency); the drop fault
//! loses a delivery or an acknowledgement (the message comes again after
//! the ack wait), the duplicate fault hands a delivery over twice.
//!
//! **One virtual clock**, moved by [`SimBroker::advance`]; each client sees
//! it plus its own skew. **Seeded faults** ([`Faults`]): drop, delay (and so
//! reorder), duplicate, and per client partition, crash, pause
//! ([`SimBroker::set_state`]). Every random choice comes from the seed, and
//! nothing else (no hash order, no wall time) enters a run: same seed, same
//! run.
//!
//! Nodes run on it through [`SimTransport`], the same
//! [`Transport`] trait the real NATS transport implements.

use std::cell::RefCell;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use crate::subject::matches;
use crate::transport::{Delivery, PubAck, Transport, TransportError};

/// A small, fast, seeded generator (splitmix64): the only source of chance
/// in a simulated run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }

    /// A duration in `lo..=hi`.
    pub fn between(&mut self, lo: Duration, hi: Duration) -> Duration {
        let span = hi.saturating_sub(lo).as_micros() as u64;
        lo + Duration::from_micros(self.below(span + 1))
    }
}

/// The message faults of the simulated network, per delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    /// Chance of losing a delivery, per mille.
    pub drop: u32,
    /// Chance of delivering twice, per mille.
    pub duplicate: u32,
    /// The least latency of a delivery.
    pub latency: Duration,
    /// Extra latency, uniform in `0..=jitter` (deliveries overtake each
    /// other: reordering).
    pub jitter: Duration,
}

impl Faults {
    /// A perfect network with 100 µs latency.
    pub fn none() -> Self {
        Faults {
            drop: 0,
            duplicate: 0,
            latency: Duration::from_micros(100),
            jitter: Duration::ZERO,
        }
    }
}

/// A client's condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Connected and running.
    Up,
    /// Cut off from the broker: what it publishes and what is sent to it
    /// is lost; the broker still counts its subscriptions (as NATS does
    /// until it notices), so requests to it get no answer at all.
    Partitioned,
    /// Stopped (SIGSTOP): the broker keeps its pending messages up to the
    /// per-subject limit.
    Paused,
    /// Dead: its subscriptions are gone (requests to it: no responders).
    Crashed,
}

/// What the broker saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Publishes taken.
    pub published: u64,
    /// Deliveries made to a client.
    pub delivered: u64,
    /// Deliveries lost to the drop fault.
    pub dropped: u64,
    /// Deliveries duplicated.
    pub duplicated: u64,
    /// Deliveries lost to a partition or a crash.
    pub cut: u64,
    /// Publishes without a reply subject nobody subscribed to.
    pub no_interest: u64,
    /// Requests answered "no responders".
    pub no_responders: u64,
    /// Deliveries lost to a subscriber's per-subject pending limit.
    pub slow_consumer: u64,
}

struct Client {
    name: String,
    skew: Duration,
    subs: Vec<String>,
    inbox: VecDeque<Delivery>,
    state: ClientState,
}

struct InFlight {
    at: Duration,
    seq: u64,
    to: usize,
    delivery: Delivery,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // A min-heap on (time, order of sending).
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

struct State {
    now: Duration,
    rng: Rng,
    faults: Faults,
    pending_limit: usize,
    clients: Vec<Client>,
    flight: BinaryHeap<InFlight>,
    seq: u64,
    stats: BrokerStats,
    streams: BTreeMap<String, SimDurable>,
    trace: Option<ClusterTrace>,
}

struct SimDurable {
    subject: String,
    stream: SimStream,
    consumer: Option<usize>,
    has_consumer: bool,
    /// Deliveries handed over twice (the duplicate fault), for the next poll.
    again: VecDeque<StreamMsg>,
}

/// The simulated broker. Cheap to clone (a shared handle). See the
/// [module docs](self).
#[derive(Clone)]
pub struct SimBroker(Rc<RefCell<State>>);

impl SimBroker {
    /// A broker whose chance comes from `seed`.
    pub fn new(seed: u64, faults: Faults) -> Self {
        SimBroker(Rc::new(RefCell::new(State {
            now: Duration::ZERO,
            rng: Rng::new(seed),
            faults,
            pending_limit: 256,
            clients: Vec::new(),
            flight: BinaryHeap::new(),
            seq: 0,
            stats: BrokerStats::default(),
            streams: BTreeMap::new(),
            trace: None,
        })))
    }

    /// Starts recording one trace of the whole cluster (or returns the
    /// one being recorded): its time follows this broker's clock; give
    /// each node's system its [`ClusterTrace::sink`].
    pub fn record(&self) -> ClusterTrace {
        let mut s = self.0.borrow_mut();
        let now = s.now;
        let t = s.trace.get_or_insert_with(ClusterTrace::new).clone();
        t.set_now(now);
        t
    }

    /// The cluster trace being recorded, if [`SimBroker::record`] started one.
    pub fn recording(&self) -> Option<ClusterTrace> {
        self.0.borrow().trace.clone()
    }

    /// Connects a client named `name` (for logs) whose clock runs `skew`
    /// ahead of the broker's.
    pub fn transport(&self, name: &str, skew: Duration) -> SimTransport {
        let mut s = self.0.borrow_mut();
        s.clients.push(Client {
            name: name.to_owned(),
            skew,
            subs: Vec::new(),
            inbox: VecDeque::new(),
            state: ClientState::Up,
        });
        SimTransport {
            broker: self.clone(),
            id: s.clients.len() - 1,
        }
    }

    /// The broker's time.
    pub fn now(&self) -> Duration {
        self.0.borrow().now
    }

    /// The faults from now on.
    pub fn set_faults(&self, f: Faults) {
        self.0.borrow_mut().faults = f;
    }

    /// The per-subject pending limit of each subscriber.
    pub fn set_pending_limit(&self, n: usize) {
        self.0.borrow_mut().pending_limit = n;
    }

    /// Sets a client's condition. A crashed client loses its subscriptions
    /// and its inbox; it never comes back (a restarted node connects anew).
    pub fn set_state(&self, t: &SimTransport, state: ClientState) {
        // The transport's own broker: the client is always there.
        let mut s = t.broker.0.borrow_mut();
        let c = &mut s.clients[t.id];
        c.state = state;
        if state == ClientState::Crashed {
            c.subs.clear();
            c.inbox.clear();
        }
        if state == ClientState::Partitioned {
            let lost = c.inbox.len() as u64;
            c.inbox.clear();
            s.stats.cut += lost;
        }
    }

    /// A client's condition.
    pub fn state(&self, t: &SimTransport) -> ClientState {
        t.broker.0.borrow().clients[t.id].state
    }

    /// What the broker saw so far.
    pub fn stats(&self) -> BrokerStats {
        self.0.borrow().stats
    }

    /// The messages stream `name` holds (stored, not yet acknowledged):
    /// (sequence, payload). Empty for no such stream.
    pub fn stream_messages(&self, name: &str) -> Vec<(u64, Vec<u8>)> {
        self.0
            .borrow()
            .streams
            .get(name)
            .map(|d| d.stream.messages())
            .unwrap_or_default()
    }

    /// The sequences stream `name` discarded to keep its per-subject limit
    /// (keep-newest evictions).
    pub fn stream_evicted(&self, name: &str) -> Vec<u64> {
        self.0
            .borrow()
            .streams
            .get(name)
            .map(|d| d.stream.evicted.clone())
            .unwrap_or_default()
    }

    /// Moves the clock by `d`, handing out every delivery due by then.
    pub fn advance(&self, d: Duration) {
        let mut s = self.0.borrow_mut();
        s.now += d;
        let now = s.now;
        if let Some(t) = &s.trace {
            t.set_now(now);
        }
        while s.flight.peek().is_some_and(|f| f.at <= now) {
            let Some(f) = s.flight.pop() else { break };
            s.hand_out(f.to, f.delivery);
        }
    }

    fn publish(
        &self,
        from: usize,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), TransportError> {
        let mut s = self.0.borrow_mut();
        match s.clients[from].state {
            ClientState::Crashed => return Err(TransportError::Closed),
            ClientState::Partitioned => {
                s.stats.cut += 1;
                return Ok(());
            }
            ClientState::Paused | ClientState::Up => {}
        }
        s.stats.published += 1;
        let targets: Vec<usize> = s
            .clients
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.state != ClientState::Crashed && c.subs.iter().any(|f| matches(f, subject))
            })
            .map(|(i, _)| i)
            .collect();
        if targets.is_empty() {
            match reply {
                Some(r) => {
                    s.stats.no_responders += 1;
                    let at = s.now + s.faults.latency;
                    s.schedule(
                        at,
                        from,
                        Delivery::NoResponders {
                            reply: r.to_owned(),
                        },
                    );
                }
                None => s.stats.no_interest += 1,
            }
            return Ok(());
        }
        for to in targets {
            let faults = s.faults;
            if s.rng.chance(faults.drop) {
                s.stats.dropped += 1;
                continue;
            }
            let copies = if s.rng.chance(faults.duplicate) {
                s.stats.duplicated += 1;
                2
            } else {
                1
            };
            for _ in 0..copies {
                let at = s.now + faults.latency + s.rng.between(Duration::ZERO, faults.jitter);
                let d = Delivery::Message {
                    subject: subject.to_owned(),
                    reply: reply.map(str::to_owned),
                    payload: payload.clone(),
                };
                s.schedule(at, to, d);
            }
        }
        Ok(())
    }
}

impl State {
    fn schedule(&mut self, at: Duration, to: usize, delivery: Delivery) {
        self.seq += 1;
        let seq = self.seq;
        self.flight.push(InFlight {
            at,
            seq,
            to,
            delivery,
        });
    }

    fn hand_out(&mut self, to: usize, d: Delivery) {
        let limit = self.pending_limit;
        let c = &mut self.clients[to];
        match c.state {
            ClientState::Crashed | ClientState::Partitioned => {
                self.stats.cut += 1;
            }
            ClientState::Up | ClientState::Paused => {
                if let Delivery::Message { subject, .. } = &d {
                    let same = c
                        .inbox
                        .iter()
                        .filter(
                            |x| matches!(x, Delivery::Message { subject: s, .. } if s == subject),
                        )
                        .count();
                    if same >= limit {
                        self.stats.slow_consumer += 1;
                        return;
                    }
                }
                self.stats.delivered += 1;
                c.inbox.push_back(d);
            }
        }
    }
}

/// One client of the [`SimBroker`]: a node's [`Transport`].
pub struct SimTransport {
    broker: SimBroker,
    id: usize,
}

impl SimTransport {
    /// The client's name.
    pub fn name(&self) -> String {
        self.broker.0.borrow().clients[self.id].name.clone()
    }

    /// The broker it is connected to.
    pub fn broker(&self) -> &SimBroker {
        &self.broker
    }
}

impl SimTransport {
    fn with_stream<R>(
        &self,
        name: &str,
        f: impl FnOnce(&mut SimDurable, &mut Rng, Faults, Duration) -> R,
    ) -> Option<R> {
        let mut s = self.broker.0.borrow_mut();
        let State {
            streams,
            rng,
            faults,
            now,
            ..
        } = &mut *s;
        let d = streams.get_mut(name)?;
        Some(f(d, rng, *faults, *now))
    }
}

impl Transport for SimTransport {
    fn publish_durable(
        &mut self,
        subject: &str,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<PubAck, TransportError> {
        let mut s = self.broker.0.borrow_mut();
        match s.clients[self.id].state {
            ClientState::Crashed => return Err(TransportError::Closed),
            ClientState::Partitioned => return Err(TransportError::NoAck),
            ClientState::Up | ClientState::Paused => {}
        }
        let faults = s.faults;
        let lost = s.rng.chance(faults.drop);
        let before = s.rng.chance(500);
        if lost && before {
            s.stats.dropped += 1;
            return Err(TransportError::NoAck);
        }
        let Some(d) = s.streams.values_mut().find(|d| d.subject == subject) else {
            return Err(TransportError::Broker(format!("no stream for {subject}")));
        };
        let r = d.stream.publish(subject, msg_id, payload);
        if lost {
            s.stats.dropped += 1;
            return Err(TransportError::NoAck);
        }
        r
    }

    fn stream_create(&mut self, spec: &crate::transport::StreamSpec) -> Result<(), TransportError> {
        let mut s = self.broker.0.borrow_mut();
        if s.clients[self.id].state == ClientState::Crashed {
            return Err(TransportError::Closed);
        }
        let id = self.id;
        let d = s
            .streams
            .entry(spec.name.clone())
            .or_insert_with(|| SimDurable {
                subject: spec.subject.clone(),
                stream: SimStream::new(
                    spec.max_per_subject
                        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                    spec.discard_new,
                    spec.ack_wait,
                    u32::MAX,
                )
                .with_max_ack_pending(1),
                consumer: None,
                has_consumer: spec.consumer,
                again: VecDeque::new(),
            });
        if d.subject != spec.subject {
            return Err(TransportError::Broker(format!(
                "stream {} holds {}, not {}",
                spec.name, d.subject, spec.subject
            )));
        }
        if d.has_consumer {
            d.consumer = Some(id);
            d.again.clear();
        }
        Ok(())
    }

    fn stream_poll(&mut self, name: &str) -> Option<crate::transport::StreamDelivery> {
        let id = self.id;
        let state = self.broker.0.borrow().clients[id].state;
        if state != ClientState::Up {
            return None;
        }
        let m = self.with_stream(name, |d, rng, faults, now| {
            if d.consumer != Some(id) {
                return None;
            }
            if let Some(m) = d.again.pop_front() {
                return Some(m);
            }
            loop {
                let m = d.stream.next(now)?;
                if rng.chance(faults.drop) {
                    // Lost on the way: due again after the ack wait.
                    continue;
                }
                if rng.chance(faults.duplicate) {
                    d.again.push_back(m.clone());
                }
                return Some(m);
            }
        })??;
        Some(crate::transport::StreamDelivery {
            seq: m.seq,
            delivery: u64::from(m.delivery),
            payload: m.payload,
            ack: format!("{name}.{}", m.seq),
        })
    }

    fn stream_ack(
        &mut self,
        name: &str,
        delivery: &crate::transport::StreamDelivery,
        term: bool,
    ) -> Result<(), TransportError> {
        let id = self.id;
        let state = self.broker.0.borrow().clients[id].state;
        match state {
            ClientState::Crashed => return Err(TransportError::Closed),
            // Lost with the connection: the message comes again.
            ClientState::Partitioned => return Ok(()),
            ClientState::Up | ClientState::Paused => {}
        }
        let _ = term;
        self.with_stream(name, |d, rng, faults, _| {
            if !rng.chance(faults.drop) {
                d.stream.ack(delivery.seq);
            }
        })
        .ok_or_else(|| TransportError::Broker(format!("no stream {name}")))
    }

    fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), TransportError> {
        self.broker.publish(self.id, subject, reply, payload)
    }

    fn subscribe(&mut self, subject: &str) -> Result<(), TransportError> {
        let mut s = self.broker.0.borrow_mut();
        let c = &mut s.clients[self.id];
        if c.state == ClientState::Crashed {
            return Err(TransportError::Closed);
        }
        c.subs.push(subject.to_owned());
        Ok(())
    }

    fn poll(&mut self) -> Option<Delivery> {
        let mut s = self.broker.0.borrow_mut();
        let c = &mut s.clients[self.id];
        match c.state {
            ClientState::Up | ClientState::Partitioned => c.inbox.pop_front(),
            ClientState::Paused | ClientState::Crashed => None,
        }
    }

    fn now(&self) -> Duration {
        let s = self.broker.0.borrow();
        s.now + s.clients[self.id].skew
    }
}

/// A durable stream of the simulated JetStream: per-subject limits,
/// deduplication by message id, one consumer with ack wait, redelivery and
/// a maximum number of deliveries after which a message goes to the dead
/// letters.
#[derive(Debug)]
pub struct SimStream {
    max_per_subject: usize,
    discard_new: bool,
    ack_wait: Duration,
    max_deliver: u32,
    max_ack_pending: usize,
    next_seq: u64,
    ids: BTreeMap<String, u64>,
    stored: BTreeMap<u64, Stored>,
    dead: Vec<(u64, String, Vec<u8>)>,
    evicted: Vec<u64>,
}

#[derive(Debug)]
struct Stored {
    subject: String,
    payload: Vec<u8>,
    deliveries: u32,
    due: Option<Duration>,
}

/// A message a [`SimStream`] hands to its consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamMsg {
    /// The stream sequence.
    pub seq: u64,
    /// The subject.
    pub subject: String,
    /// The payload.
    pub payload: Vec<u8>,
    /// Which delivery of it this is (from 1).
    pub delivery: u32,
}

impl SimStream {
    /// A stream keeping at most `max_per_subject` messages per subject;
    /// when full, `discard_new` refuses the publish (keep-oldest, reject),
    /// else the oldest of the subject is discarded (keep-newest).
    pub fn new(
        max_per_subject: usize,
        discard_new: bool,
        ack_wait: Duration,
        max_deliver: u32,
    ) -> Self {
        SimStream {
            max_per_subject,
            discard_new,
            ack_wait,
            max_deliver,
            max_ack_pending: usize::MAX,
            next_seq: 1,
            ids: BTreeMap::new(),
            stored: BTreeMap::new(),
            dead: Vec::new(),
            evicted: Vec::new(),
        }
    }

    /// At most `n` delivered and unacknowledged messages at a time (their
    /// ack wait running); `1` delivers strictly in stream order.
    pub fn with_max_ack_pending(mut self, n: usize) -> Self {
        self.max_ack_pending = n.max(1);
        self
    }

    /// What is stored and not acknowledged: (sequence, payload).
    pub fn messages(&self) -> Vec<(u64, Vec<u8>)> {
        self.stored
            .iter()
            .map(|(k, m)| (*k, m.payload.clone()))
            .collect()
    }

    /// Stores a message, deduplicated by `msg_id`. A full subject with
    /// discard-new is [`TransportError::Broker`] (the publish error is the
    /// verdict).
    pub fn publish(
        &mut self,
        subject: &str,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<PubAck, TransportError> {
        if let Some(&seq) = self.ids.get(msg_id) {
            return Ok(PubAck {
                seq,
                duplicate: true,
            });
        }
        let of_subject: Vec<u64> = self
            .stored
            .iter()
            .filter(|(_, m)| m.subject == subject)
            .map(|(k, _)| *k)
            .collect();
        if of_subject.len() >= self.max_per_subject {
            if self.discard_new {
                return Err(TransportError::SubjectFull);
            }
            match of_subject.first() {
                Some(oldest) => {
                    self.stored.remove(oldest);
                    self.evicted.push(*oldest);
                }
                // A limit of zero keeps nothing.
                None => {
                    return Ok(PubAck {
                        seq: 0,
                        duplicate: false,
                    })
                }
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.ids.insert(msg_id.to_owned(), seq);
        self.stored.insert(
            seq,
            Stored {
                subject: subject.to_owned(),
                payload,
                deliveries: 0,
                due: None,
            },
        );
        Ok(PubAck {
            seq,
            duplicate: false,
        })
    }

    /// The next message to deliver at `now`: a new one, or one whose ack
    /// wait ran out (redelivered). One past its maximum deliveries goes to
    /// the dead letters instead.
    pub fn next(&mut self, now: Duration) -> Option<StreamMsg> {
        let waiting = self
            .stored
            .values()
            .filter(|m| m.due.is_some_and(|d| d > now))
            .count();
        if waiting >= self.max_ack_pending {
            return None;
        }
        loop {
            let seq = self
                .stored
                .iter()
                .find(|(_, m)| m.due.is_none_or(|d| d <= now))
                .map(|(k, _)| *k)?;
            let m = self.stored.get_mut(&seq)?;
            if m.deliveries >= self.max_deliver {
                if let Some(m) = self.stored.remove(&seq) {
                    self.dead.push((seq, m.subject, m.payload));
                }
                continue;
            }
            m.deliveries += 1;
            m.due = Some(now + self.ack_wait);
            return Some(StreamMsg {
                seq,
                subject: m.subject.clone(),
                payload: m.payload.clone(),
                delivery: m.deliveries,
            });
        }
    }

    /// Acknowledges a delivered message: it is done.
    pub fn ack(&mut self, seq: u64) -> bool {
        self.stored.remove(&seq).is_some()
    }

    /// Messages stored and not acknowledged.
    pub fn len(&self) -> usize {
        self.stored.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.stored.is_empty()
    }

    /// The dead letters: (sequence, subject, payload).
    pub fn dead_letters(&self) -> &[(u64, String, Vec<u8>)] {
        &self.dead
    }
}

/// A key/value bucket of the simulated JetStream with compare-and-set on
/// revisions (what lease rows and ownership build on).
#[derive(Debug, Default)]
pub struct SimKv {
    rev: u64,
    entries: BTreeMap<String, (u64, Vec<u8>)>,
}

impl SimKv {
    /// An empty bucket.
    pub fn new() -> Self {
        SimKv::default()
    }

    /// The value and revision of `key`.
    pub fn get(&self, key: &str) -> Option<(u64, &[u8])> {
        self.entries.get(key).map(|(r, v)| (*r, v.as_slice()))
    }

    /// Writes `value` if the key's revision is `expected` (0: the key must
    /// not exist). The new revision, or the current one as the error.
    pub fn compare_and_set(
        &mut self,
        key: &str,
        expected: u64,
        value: Vec<u8>,
    ) -> Result<u64, u64> {
        let current = self.entries.get(key).map_or(0, |(r, _)| *r);
        if current != expected {
            return Err(current);
        }
        self.rev += 1;
        self.entries.insert(key.to_owned(), (self.rev, value));
        Ok(self.rev)
    }
}

mod trace;
pub use trace::{ClusterSink, ClusterTrace};

#[cfg(test)]
mod tests;
