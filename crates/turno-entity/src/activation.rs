//! One active entity: the [`EntityExt`] a chart actor carries, which
//! commits every macrostep of the chart through the store, fenced by the
//! epoch of the lease it was activated under.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use turno::Context;
use turno_chart::interpreter::{ChartActor, Extension, Stepped, Turn};
use turno_chart::persist::Persist;
use turno_chart::{Event, Machine, Snapshot};
use turno_store::{EntityCommit, EntityWrite, Store, StoreError};

/// What became of one delivered message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ack {
    /// Its state change was committed (snapshot, applied sequence and next
    /// wake-up in one fenced write): acknowledge it.
    Applied,
    /// Its sequence is at or below the entity's applied one: it was applied
    /// before, nothing changed; acknowledge it.
    Duplicate {
        /// The entity's applied sequence.
        applied: u64,
    },
    /// Not committed: the shard has a newer owner. Deliver it again (to
    /// the shard's owner).
    Fenced,
    /// Not committed: the store failed (the message says what). Deliver
    /// it again.
    Failed(String),
    /// The activation ended before it handled the message (fenced,
    /// passivated, its node stopped). Deliver it again.
    Unanswered,
}

impl Ack {
    /// True when the sender may forget the message: it is in the entity's
    /// committed state.
    pub fn is_acknowledged(&self) -> bool {
        matches!(self, Ack::Applied | Ack::Duplicate { .. })
    }
}

type ReplyFn = Box<dyn FnOnce(Ack) + Send>;

/// Where a message's [`Ack`] goes: called once. A reply dropped unanswered
/// (its activation ended, its node stopped) is called with
/// [`Ack::Unanswered`], so a sender always hears back.
pub struct Reply(Option<ReplyFn>);

impl Reply {
    /// A reply that calls `f` with the outcome.
    pub fn new(f: impl FnOnce(Ack) + Send + 'static) -> Self {
        Reply(Some(Box::new(f)))
    }

    /// A reply nobody waits for.
    pub fn none() -> Self {
        Reply(None)
    }

    pub(crate) fn send(mut self, ack: Ack) {
        if let Some(f) = self.0.take() {
            f(ack);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Ack::Unanswered);
        }
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Reply"
        } else {
            "Reply(answered)"
        })
    }
}

/// A message for an entity, with its sequence: the [`Extension`] message
/// of the entity's chart actor. The host builds it
/// ([`EntityHost::deliver`](crate::EntityHost::deliver)).
#[derive(Debug)]
pub struct Delivery {
    pub(crate) seq: u64,
    pub(crate) event: Event,
    pub(crate) reply: Reply,
}

/// Why an activation ended on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// A write was refused: the shard has a newer owner.
    Fenced,
    /// A write failed, or the chart's state could not be written: the
    /// in-memory chart is ahead of the store, so it must not go on.
    Failed(String),
}

/// What the host and the activation share.
#[derive(Debug, Default)]
pub(crate) struct ActShared {
    pub(crate) ended: Mutex<Option<End>>,
    /// The chart has invocations in flight (it is not passivated then).
    pub(crate) busy: AtomicBool,
}

impl ActShared {
    pub(crate) fn end(&self) -> Option<End> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_end(&self, end: End) {
        let mut e = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        if e.is_none() {
            *e = Some(end);
        }
    }
}

/// Counters a host and its activations share.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) activations: AtomicU64,
    pub(crate) restored: AtomicU64,
    pub(crate) passivations: AtomicU64,
    pub(crate) commits: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) fenced: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) timer_wakes: AtomicU64,
    pub(crate) not_owner: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// One write an activation made, as a host's commit observer sees it
/// ([`EntityHost::on_commit`](crate::EntityHost::on_commit)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitRecord {
    /// The node that wrote (its keeper's owner name).
    pub owner: String,
    /// The entity's key.
    pub key: String,
    /// Its shard.
    pub shard: u32,
    /// The epoch the write carried.
    pub epoch: u64,
    /// The message it applied (`None`: a timer, an invocation's result, a
    /// restore, the initial state).
    pub seq: Option<u64>,
    /// What the store answered.
    pub outcome: Ack,
}

pub(crate) type Observer = Arc<dyn Fn(&CommitRecord) + Send + Sync>;

/// The [`Extension`] of an entity's chart actor: it commits every
/// macrostep (the chart's snapshot, the applied sequence of the message
/// that caused it, the next wake-up) in one fenced write, before the
/// macrostep's effects are carried out, and skips redelivered messages.
/// Services for an entity's chart are typed with it
/// (`Service<C, EntityExt>`).
pub struct EntityExt {
    pub(crate) store: Store,
    pub(crate) kind: Arc<str>,
    pub(crate) key: Arc<str>,
    pub(crate) owner: Arc<str>,
    pub(crate) shard: u32,
    pub(crate) epoch: u64,
    /// The wall-clock time (ms) at which the system's clock read 0.
    pub(crate) epoch_ms: u64,
    pub(crate) applied: u64,
    /// The sequence of the message being handled, until its macrostep is
    /// committed.
    pub(crate) pending: Option<u64>,
    /// The outcome of the last commit (for the message's reply).
    pub(crate) last: Option<Ack>,
    pub(crate) shared: Arc<ActShared>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) observer: Option<Observer>,
    /// The injected bug: writes carry the shard's current epoch instead of
    /// the activation's own.
    pub(crate) fenceless: bool,
}

impl std::fmt::Debug for EntityExt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityExt")
            .field("kind", &self.kind)
            .field("key", &self.key)
            .field("shard", &self.shard)
            .field("epoch", &self.epoch)
            .field("applied", &self.applied)
            .finish()
    }
}

impl EntityExt {
    /// The entity's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// False once the activation ended (a write was fenced or failed): a
    /// service started by [`Service::custom`](turno_chart::interpreter::Service::custom)
    /// checks it before acting, since the interpreter carries out a
    /// macrostep's effects after its write, landed or not.
    pub fn live(&self) -> bool {
        self.shared.end().is_none()
    }

    /// A copy that writes nothing: its activation is ended from the start.
    pub(crate) fn inert(&self) -> EntityExt {
        let shared = Arc::new(ActShared::default());
        shared.set_end(End::Failed(format!("entity {}: restarted", self.key)));
        EntityExt {
            store: self.store.clone(),
            kind: self.kind.clone(),
            key: self.key.clone(),
            owner: self.owner.clone(),
            shard: self.shard,
            epoch: self.epoch,
            epoch_ms: self.epoch_ms,
            applied: self.applied,
            pending: None,
            last: None,
            shared,
            counters: self.counters.clone(),
            observer: None,
            fenceless: self.fenceless,
        }
    }

    /// The earliest deadline of the chart's delayed events, in wall-clock
    /// ms (what `due_entities` compares with the store's clock).
    fn wake_at<C>(&self, snapshot: &Snapshot<C>) -> Option<i64> {
        let due = snapshot.scheduled.iter().map(|s| s.due_ms).min()?;
        Some(i64::try_from(self.epoch_ms.saturating_add(due)).unwrap_or(i64::MAX))
    }

    /// Writes the chart's state with the sequence `seq`, fenced by the
    /// activation's epoch.
    fn commit<C: Clone + serde::Serialize>(
        &self,
        machine: &Machine<C>,
        snapshot: &Snapshot<C>,
        seq: Option<u64>,
    ) -> Ack {
        let text = match Persist::new(machine).to_string(snapshot) {
            Ok(text) => text,
            Err(e) => return Ack::Failed(format!("entity {}: snapshot: {e}", self.key)),
        };
        let epoch = if self.fenceless {
            match self.store.shard_owner(self.shard) {
                Ok(Some(lease)) => lease.epoch,
                _ => self.epoch,
            }
        } else {
            self.epoch
        };
        let write = EntityWrite {
            kind: &self.kind,
            key: &self.key,
            shard: self.shard,
            epoch,
            seq,
            data: text.as_bytes(),
            wake_at: self.wake_at(snapshot),
        };
        let ack = match self.store.commit_entity(&write) {
            Ok(EntityCommit::Applied) => Ack::Applied,
            Ok(EntityCommit::Duplicate { applied }) => Ack::Duplicate { applied },
            Err(StoreError::Fenced { .. }) => Ack::Fenced,
            Err(e) => Ack::Failed(format!("entity {}: commit: {e}", self.key)),
        };
        if let Some(observe) = &self.observer {
            observe(&CommitRecord {
                owner: self.owner.to_string(),
                key: self.key.to_string(),
                shard: self.shard,
                epoch,
                seq,
                outcome: ack.clone(),
            });
        }
        ack
    }

    /// Takes in the outcome of a commit: counts it, and ends the
    /// activation when the write did not land, since the chart in memory
    /// is then ahead of the store. True: the actor must stop after this
    /// turn.
    fn settle(&mut self, seq: Option<u64>, ack: Ack) -> bool {
        let stop = match &ack {
            Ack::Applied => {
                bump(&self.counters.commits);
                if let Some(seq) = seq {
                    self.applied = self.applied.max(seq);
                }
                false
            }
            // The in-memory applied sequence is checked before the event
            // is taken, so the store knowing a later one means another
            // writer changed the entity: the chart here is stale.
            Ack::Duplicate { applied } => {
                bump(&self.counters.duplicates);
                self.applied = self.applied.max(*applied);
                self.shared.set_end(End::Failed(format!(
                    "entity {}: stale activation",
                    self.key
                )));
                true
            }
            Ack::Fenced => {
                bump(&self.counters.fenced);
                self.shared.set_end(End::Fenced);
                true
            }
            Ack::Failed(why) => {
                bump(&self.counters.failed);
                self.shared.set_end(End::Failed(why.clone()));
                true
            }
            Ack::Unanswered => false,
        };
        self.last = Some(ack);
        stop
    }
}

impl<C> Extension<C> for EntityExt
where
    C: Clone + Send + Sync + serde::Serialize + 'static,
{
    type Msg = Delivery;

    fn handle(turn: &mut Turn<'_, '_, C, Self>, msg: Delivery) {
        let Delivery { seq, event, reply } = msg;
        if let Some(end) = turn.ext().shared.end() {
            reply.send(match end {
                End::Fenced => Ack::Fenced,
                End::Failed(why) => Ack::Failed(why),
            });
            return;
        }
        let applied = turn.ext().applied;
        if seq <= applied {
            bump(&turn.ext().counters.duplicates);
            reply.send(Ack::Duplicate { applied });
            return;
        }
        let ext = turn.ext_mut();
        ext.pending = Some(seq);
        ext.last = None;
        turn.send(event);
        if turn.ext().pending.is_some() {
            // No macrostep was taken (the chart is done): the message
            // still advances the applied sequence, with the state as is.
            let machine = turn.machine().clone();
            let ack = turn.ext().commit(&machine, turn.snapshot(), Some(seq));
            turn.ext_mut().pending = None;
            if turn.ext_mut().settle(Some(seq), ack) {
                turn.ctx().stop();
            }
        }
        let ack = turn.ext_mut().last.take().unwrap_or(Ack::Unanswered);
        reply.send(ack);
    }

    fn stepped(&mut self, ctx: &mut Context<'_, ChartActor<C, Self>>, step: Stepped<'_, C>) {
        if self.shared.end().is_some() {
            return;
        }
        self.shared
            .busy
            .store(!step.snapshot.invocations.is_empty(), Ordering::Relaxed);
        let seq = self.pending.take();
        let ack = self.commit(step.machine, step.snapshot, seq);
        if self.settle(seq, ack) {
            ctx.stop();
        }
    }
}
