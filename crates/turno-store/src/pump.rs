//! Delivery from a durable queue into a turno actor: **at least once**,
//! acknowledged after the turn that handled the item, **effectively once**
//! by key.
//!
//! A [`Pump`] is a thread between a [`Store`]'s queue and an actor's
//! [`Addr`]. It leases items, wraps each in a [`Delivery`] and sends it as
//! the actor's message. The handler calls [`Delivery::ack`] when it has
//! handled the item; the pump commits that acknowledgement to the store
//! **off the turn** (a turn never waits on a disk), batching acks that
//! arrive together. A delivery dropped without an ack (the turn panicked,
//! the actor stopped with the item still in its mailbox, a keep-newest
//! mailbox evicted it) releases the item at once, so it is delivered again.
//! If the process dies, the lease runs out and the item is delivered again
//! by whoever leases next.
//!
//! **Effectively once.** An acknowledged item is never delivered again
//! (the store's lease query skips acknowledged rows, and acknowledgement is
//! durable when the commit returns). The pump never has two deliveries of
//! one key in flight: an item whose lease ran out while it still waited in
//! the mailbox is not sent a second time. With a plain [`Delivery::ack`],
//! at-least-once leaves one window: the process dies after the turn
//! handled an item and before the ack committed, and the item comes back
//! (with [`Delivery::attempt`] > 1 and the same [`Delivery::key`]). An
//! actor whose state lives in a store snapshot closes that window with
//! [`Delivery::ack_with_snapshot`]: its new state and the item's
//! acknowledgement commit in **one transaction** ([`Store::commit`]). After
//! any crash either both are on disk (the item is never delivered again)
//! or neither is (the item is delivered again to an actor restored from
//! the snapshot before it), so each item changes the stored state exactly
//! once. `tests/effectively_once.rs` kills a process with SIGKILL between
//! the turn and that commit, and shows it.
//!
//! **Poison items.** An item whose handler never acknowledges it (it
//! panics every time, say) is delivered [`Store::max_attempts`] times and
//! then moves to the store's dead letters ([`Store::dead_letters`]), where
//! it is counted and kept until requeued or forgotten.
//!
//! **Backpressure.** The pump holds at most the mailbox's capacity of
//! leased, unacknowledged items, and sends with
//! [`Addr::send_blocking`]: with a [`Policy::Suspend`] mailbox (the policy
//! to use), a slow actor stops the pump from leasing more, and the rest of
//! the queue stays in the database. Other policies are safe (an evicted or
//! rejected delivery is released, not lost) but make the pump lease the
//! same items again and again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use turno::{Addr, Verdict};

#[cfg(doc)]
use turno::Policy;

use crate::error::StoreError;
use crate::model::{QueueItem, SnapshotWrite};
use crate::store::Store;

enum Done {
    Ack(Ack),
    Release { item: QueueItem, delay: Duration },
}

/// An acknowledgement waiting for its commit, with the snapshot put that
/// must commit with it.
struct Ack {
    item: QueueItem,
    write: Option<SnapshotWrite>,
}

/// One queue item, delivered to an actor as (part of) its message. Call
/// [`ack`](Self::ack) at the end of the turn that handled it; dropping it
/// unacknowledged releases it for redelivery.
pub struct Delivery {
    item: Option<QueueItem>,
    done: mpsc::Sender<Done>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let item = self.item();
        f.debug_struct("Delivery")
            .field("id", &item.id)
            .field("key", &item.key)
            .field("attempt", &item.attempt)
            .finish()
    }
}

impl Delivery {
    fn item(&self) -> &QueueItem {
        // `item` is only taken by the consuming methods and `drop`.
        self.item.as_ref().expect("delivery already settled")
    }

    /// The item's id in the store.
    pub fn id(&self) -> i64 {
        self.item().id
    }

    /// The deduplication key: the same key is the same event.
    pub fn key(&self) -> &str {
        &self.item().key
    }

    /// The owner the item belongs to.
    pub fn owner(&self) -> &str {
        &self.item().owner
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.item().payload
    }

    /// Which delivery this is: 1 the first, more after a crash or a release.
    pub fn attempt(&self) -> u32 {
        self.item().attempt
    }

    /// Handled: the pump acknowledges it in the store after this turn, and it
    /// is never delivered again.
    pub fn ack(mut self) {
        if let Some(item) = self.item.take() {
            let _ = self.done.send(Done::Ack(Ack { item, write: None }));
        }
    }

    /// Handled, and this is the actor's state after it: the pump commits
    /// the snapshot put and the acknowledgement in one transaction
    /// ([`Store::commit`]), off the turn. Either both reach the disk or
    /// neither does, so after a crash the item is delivered again exactly
    /// when the state it produced was lost with the process: each item
    /// changes the stored state once.
    ///
    /// `write.expected` is the version the actor's state was restored from
    /// or last wrote (the new version is `expected + 1`); the pump commits
    /// in the order of the acks, so an actor may write again before the
    /// previous commit returned. If the put conflicts (someone else wrote
    /// that snapshot), nothing of this delivery is committed: the item is
    /// released to be delivered again, and [`PumpStats::conflicts`] counts
    /// it. A snapshot written this way should have no other writer.
    pub fn ack_with_snapshot(mut self, write: SnapshotWrite) {
        if let Some(item) = self.item.take() {
            let _ = self.done.send(Done::Ack(Ack {
                item,
                write: Some(write),
            }));
        }
    }

    /// Not handled now: deliver it again after `delay`.
    pub fn release(mut self, delay: Duration) {
        if let Some(item) = self.item.take() {
            let _ = self.done.send(Done::Release { item, delay });
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            let _ = self.done.send(Done::Release {
                item,
                delay: Duration::ZERO,
            });
        }
    }
}

/// The hooks told of acknowledgements (their keys).
type OnAcked = Box<dyn FnMut(&[String]) + Send>;

/// How a [`Pump`] runs.
pub struct PumpConfig {
    lease: Duration,
    batch: usize,
    poll: Duration,
    on_acked: Option<OnAcked>,
    before_commit: Option<OnAcked>,
}

impl std::fmt::Debug for PumpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PumpConfig")
            .field("lease", &self.lease)
            .field("batch", &self.batch)
            .field("poll", &self.poll)
            .finish()
    }
}

impl Default for PumpConfig {
    fn default() -> Self {
        PumpConfig {
            lease: Duration::from_secs(30),
            batch: 64,
            poll: Duration::from_millis(50),
            on_acked: None,
            before_commit: None,
        }
    }
}

impl PumpConfig {
    /// How long a leased item is the pump's before it may be delivered again
    /// (30 s by default). It must cover the time an item waits in the
    /// mailbox plus its turn, or another consumer may get it meanwhile.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// Most items leased in one query (64 by default).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }

    /// How often an empty queue is polled (50 ms by default).
    pub fn poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Called on the pump thread with the keys of each batch of
    /// acknowledgements, after their commit returned: from then on those
    /// items are never delivered again.
    pub fn on_acked(mut self, f: impl FnMut(&[String]) + Send + 'static) -> Self {
        self.on_acked = Some(Box::new(f));
        self
    }

    /// Called on the pump thread with the keys of each batch of
    /// acknowledgements just before their commit: the actor has handled
    /// them, the store does not know yet. (The crash tests kill the process
    /// here.)
    pub fn before_commit(mut self, f: impl FnMut(&[String]) + Send + 'static) -> Self {
        self.before_commit = Some(Box::new(f));
        self
    }
}

/// Counters of a running pump.
#[derive(Debug, Default)]
pub struct PumpStats {
    /// Deliveries sent to the actor.
    pub delivered: AtomicU64,
    /// Acknowledgements committed.
    pub acked: AtomicU64,
    /// Deliveries released back to the queue (dropped unacknowledged or
    /// released by the handler).
    pub released: AtomicU64,
    /// Items leased again while their earlier delivery was still in flight,
    /// and so not sent twice.
    pub duplicates_skipped: AtomicU64,
    /// Store calls that failed (retried at the next poll).
    pub errors: AtomicU64,
    /// Deliveries acknowledged with a snapshot put that conflicted: nothing
    /// of them was committed and they were released for redelivery.
    pub conflicts: AtomicU64,
}

/// A thread delivering a durable queue into an actor. See the
/// [module docs](self). Dropping it (or [`Pump::stop`]) stops it after
/// committing the acknowledgements it has.
pub struct Pump {
    stop: Arc<AtomicBool>,
    stats: Arc<PumpStats>,
    thread: Option<JoinHandle<()>>,
}

impl Pump {
    /// Starts delivering `queue` into `addr`, each item wrapped by `wrap`
    /// into the actor's message type.
    pub fn spawn<M, F>(
        store: Store,
        queue: &str,
        addr: Addr<M>,
        wrap: F,
        cfg: PumpConfig,
    ) -> std::io::Result<Pump>
    where
        M: Send + 'static,
        F: Fn(Delivery) -> M + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(PumpStats::default());
        let mut runner = Runner {
            store,
            queue: queue.to_owned(),
            // Unbounded: hold one batch at a time.
            capacity: addr.policy().capacity().unwrap_or(cfg.batch).max(1),
            addr,
            wrap,
            cfg,
            stop: stop.clone(),
            stats: stats.clone(),
            in_flight: HashMap::new(),
            acks: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("turno-store-pump-{queue}"))
            .spawn(move || runner.run())?;
        Ok(Pump {
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The pump's counters.
    pub fn stats(&self) -> &PumpStats {
        &self.stats
    }

    /// Stops the pump (after committing the acknowledgements it holds). If
    /// the pump is waiting for room in a full suspend mailbox, this waits
    /// until the actor takes one more message or stops.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Runner<M, F> {
    store: Store,
    queue: String,
    capacity: usize,
    addr: Addr<M>,
    wrap: F,
    cfg: PumpConfig,
    stop: Arc<AtomicBool>,
    stats: Arc<PumpStats>,
    /// Key -> id of every item sent and not yet settled in the store.
    in_flight: HashMap<String, i64>,
    /// Acknowledged by the actor, not yet committed, in order.
    acks: Vec<Ack>,
}

impl<M: Send + 'static, F: Fn(Delivery) -> M> Runner<M, F> {
    fn run(&mut self) {
        let (tx, rx) = mpsc::channel::<Done>();
        let mut closed = false;
        loop {
            // Settle what the actor finished: first whatever is waiting...
            while let Ok(d) = rx.try_recv() {
                self.settle(d);
            }
            self.commit_acks();
            if self.stop.load(Ordering::SeqCst) || closed {
                break;
            }
            // ...then lease as much as the mailbox may hold.
            let room = self.capacity.saturating_sub(self.in_flight.len());
            let mut sent = 0;
            if room > 0 {
                match self
                    .store
                    .lease(&self.queue, room.min(self.cfg.batch), self.cfg.lease)
                {
                    Ok(items) => {
                        for item in items {
                            if self.in_flight.contains_key(&item.key) {
                                // Its lease ran out while it waited for the
                                // actor; re-leasing it renewed it for us.
                                self.stats
                                    .duplicates_skipped
                                    .fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            self.in_flight.insert(item.key.clone(), item.id);
                            let msg = (self.wrap)(Delivery {
                                item: Some(item),
                                done: tx.clone(),
                            });
                            // Blocks while a suspend mailbox is full: the
                            // backpressure reaches the queue here.
                            match self.addr.send_blocking(msg) {
                                Verdict::Enqueued { .. } | Verdict::Evicting => {
                                    sent += 1;
                                    self.stats.delivered.fetch_add(1, Ordering::Relaxed);
                                }
                                Verdict::Closed(_) => closed = true,
                                // Dropped/rejected deliveries release
                                // themselves when dropped here.
                                _ => {}
                            }
                        }
                    }
                    Err(_) => {
                        self.stats.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if sent == 0 {
                // Nothing to do until the actor finishes something or the
                // poll interval passes.
                match rx.recv_timeout(self.cfg.poll) {
                    Ok(d) => self.settle(d),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => unreachable!("the pump holds a sender"),
                }
            }
        }
        // Deliveries still in the mailbox will release themselves into a
        // closed channel; their leases run out and they are delivered again.
        drop(tx);
        while let Ok(d) = rx.try_recv() {
            self.settle(d);
        }
        for _ in 0..3 {
            if self.acks.is_empty() {
                break;
            }
            self.commit_acks();
        }
    }

    fn settle(&mut self, d: Done) {
        match d {
            Done::Ack(a) => self.acks.push(a),
            Done::Release { item, delay } => {
                self.in_flight.remove(&item.key);
                self.stats.released.fetch_add(1, Ordering::Relaxed);
                if self.store.release(&item, delay).is_err() {
                    // The lease will run out instead.
                    self.stats.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    fn commit_acks(&mut self) {
        if self.acks.is_empty() {
            return;
        }
        if let Some(f) = self.cfg.before_commit.as_mut() {
            let keys: Vec<String> = self.acks.iter().map(|a| a.item.key.clone()).collect();
            f(&keys);
        }
        match commit(&self.store, &self.acks) {
            Ok(()) => {
                let acks = std::mem::take(&mut self.acks);
                self.committed(acks);
            }
            Err(StoreError::Conflict { .. }) => {
                // One put of the batch is stale, and the whole batch rolled
                // back: commit each delivery alone, so that only the
                // conflicting ones (and those built on them) are refused.
                for a in std::mem::take(&mut self.acks) {
                    match commit(&self.store, std::slice::from_ref(&a)) {
                        Ok(()) => self.committed(vec![a]),
                        Err(StoreError::Conflict { .. }) => {
                            self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
                            self.settle(Done::Release {
                                item: a.item,
                                delay: Duration::ZERO,
                            });
                        }
                        // Kept for the next round, in order.
                        Err(_) => {
                            self.stats.errors.fetch_add(1, Ordering::Relaxed);
                            self.acks.push(a);
                        }
                    }
                }
            }
            Err(_) => {
                // Kept; retried at the next round. The items stay in flight,
                // so they are not sent again meanwhile.
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(self.cfg.poll);
            }
        }
    }

    fn committed(&mut self, acks: Vec<Ack>) {
        let keys: Vec<String> = acks.into_iter().map(|a| a.item.key).collect();
        for k in &keys {
            self.in_flight.remove(k);
        }
        self.stats
            .acked
            .fetch_add(keys.len() as u64, Ordering::Relaxed);
        if let Some(f) = self.cfg.on_acked.as_mut() {
            f(&keys);
        }
    }
}

/// The acks and their snapshot puts, in one transaction.
fn commit(store: &Store, acks: &[Ack]) -> crate::Result<()> {
    let ids: Vec<i64> = acks.iter().map(|a| a.item.id).collect();
    let writes: Vec<SnapshotWrite> = acks.iter().filter_map(|a| a.write.clone()).collect();
    store.commit(&writes, &ids).map(|_| ())
}
