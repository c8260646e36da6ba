//! [`EntityHost`]: one node's side of sharded entities.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use turno::{ActorId, Addr, Directive, Instant, Props, Strategy, Supervision, System};
use turno_chart::interpreter::{ChartActor, ChartMsg, Service};
use turno_chart::persist::{Clock, Persist, RestoreError, Restored, Sanitizer};
use turno_chart::{Event, Machine, Status};
use turno_store::{
    shard_for, EntityCommit, EntityWrite, ShardKeeper, ShardLease, Store, StoreError,
};

use crate::activation::{
    bump, Ack, ActShared, CommitRecord, Counters, Delivery, End, EntityExt, Observer, Reply,
};

/// How a host shards and keeps its entities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// The number of shards (the same on every node, for the cluster's
    /// life: [`shard_for`] maps a key to one of them).
    pub shards: u32,
    /// How long a shard lease holds unless renewed. Call
    /// [`EntityHost::tick`] several times per lease time.
    pub lease_ttl: Duration,
    /// How long an entity stays in memory without a message before it is
    /// passivated.
    pub idle: Duration,
    /// The most due entities woken per shard and tick.
    pub due_batch: usize,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            shards: 64,
            lease_ttl: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            due_batch: 100,
        }
    }
}

/// Where a message went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Routed {
    /// To the entity's activation on this node; its [`Reply`] says what
    /// became of it.
    Delivered,
    /// This node does not own the key's shard (now, by its own view):
    /// nothing was done. `owner` is the shard's live lease, if one holds:
    /// where to route the message.
    NotOwner {
        /// The key's shard.
        shard: u32,
        /// Its live lease (owner and epoch), if any.
        owner: Option<ShardLease>,
    },
}

/// What went wrong in a host, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntityError {
    /// The store failed.
    #[error("entity host {owner}: store: {source}")]
    Store {
        /// The host's node.
        owner: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// An entity's stored state is not UTF-8 text.
    #[error("entity {kind}/{key}: the stored state is not UTF-8")]
    NotText {
        /// The entity's kind.
        kind: String,
        /// Its key.
        key: String,
    },
    /// An entity's stored snapshot could not be restored (corrupt, another
    /// machine, or an in-flight invocation the sanitizer has no rule for).
    #[error("entity {kind}/{key}: restore: {source}")]
    Restore {
        /// The entity's kind.
        kind: String,
        /// Its key.
        key: String,
        /// Why (boxed: a restore error is large).
        #[source]
        source: Box<RestoreError>,
    },
    /// The entity's actor could not be spawned.
    #[error("entity {kind}/{key}: spawn: {why}")]
    Spawn {
        /// The entity's kind.
        kind: String,
        /// Its key.
        key: String,
        /// The system's answer.
        why: String,
    },
}

/// A host's counters (see [`EntityHost::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Entities brought into memory (fresh or restored).
    pub activations: u64,
    /// Of those, restored from a stored snapshot.
    pub restored: u64,
    /// Entities taken out of memory after their idle time.
    pub passivations: u64,
    /// Writes the store accepted.
    pub commits: u64,
    /// Messages acknowledged and skipped as redelivered.
    pub duplicates: u64,
    /// Writes refused as fenced: each ended its activation.
    pub fenced: u64,
    /// Writes that failed otherwise: each ended its activation.
    pub failed: u64,
    /// Entities activated by the tick because a timer of theirs was due.
    pub timer_wakes: u64,
    /// Messages answered with [`Routed::NotOwner`].
    pub not_owner: u64,
}

/// What one [`EntityHost::tick`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostTick {
    /// Shards taken in this tick.
    pub acquired: Vec<u32>,
    /// Shards lost in this tick (taken over, or fenced since the last
    /// tick).
    pub lost: Vec<u32>,
    /// Entities passivated.
    pub passivated: usize,
    /// Entities woken because a timer of theirs was due.
    pub woken: usize,
    /// Due entities whose stored state could not be restored (key, why):
    /// skipped, and listed again at every tick until their state is fixed.
    pub unrestorable: Vec<(String, String)>,
}

/// What [`EntityHost::ensure_active`] found.
enum Activated {
    /// The entity's actor.
    Actor(Addr<ChartMsg<Delivery>>),
    /// The entity is done: no actor; what became of the message.
    Done(Ack),
}

struct Activation {
    addr: Addr<ChartMsg<Delivery>>,
    shard: u32,
    epoch: u64,
    last_used: Instant,
    shared: Arc<ActShared>,
}

type Services<C> = Arc<HashMap<String, Service<C, EntityExt>>>;

/// One node's entities of one kind (a chart): it owns shards through a
/// [`ShardKeeper`] and runs each active entity as a [`ChartActor`] on its
/// system `S`. See the [crate docs](crate).
pub struct EntityHost<S: System, C: Clone + Send + Sync + Serialize + 'static> {
    sys: S,
    store: Store,
    keeper: ShardKeeper,
    machine: Arc<Machine<C>>,
    kind: Arc<str>,
    owner: Arc<str>,
    sanitizer: Sanitizer,
    services: Option<Services<C>>,
    config: HostConfig,
    /// The wall-clock time (the store's clock, ms) at which the system's
    /// clock read 0: charts' deadlines are stored on the store's clock.
    epoch_ms: u64,
    active: BTreeMap<String, Activation>,
    counters: Arc<Counters>,
    observer: Option<Observer>,
    fenceless: bool,
}

impl<S: System, C> EntityHost<S, C>
where
    C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
{
    /// The host of node `owner` (its name and incarnation: a restarted node
    /// is a new owner) for the entities of `machine` (their kind is the
    /// machine's id) on `sys`, with its state in `store`. The store's clock
    /// is the wall clock charts' deadlines are kept on.
    pub fn new(
        sys: S,
        store: Store,
        owner: impl Into<String>,
        machine: Arc<Machine<C>>,
        config: HostConfig,
    ) -> Self {
        let owner: String = owner.into();
        let since = u64::try_from(sys.now().since_start().as_millis()).unwrap_or(u64::MAX);
        let epoch_ms = u64::try_from(store.now())
            .unwrap_or(0)
            .saturating_sub(since);
        let keeper = ShardKeeper::new(
            store.clone(),
            owner.clone(),
            config.shards,
            config.lease_ttl,
        );
        EntityHost {
            sys,
            kind: Arc::from(machine.id()),
            owner: Arc::from(owner),
            store,
            keeper,
            machine,
            sanitizer: Sanitizer::new(),
            services: None,
            config,
            epoch_ms,
            active: BTreeMap::new(),
            counters: Arc::default(),
            observer: None,
            fenceless: false,
        }
    }

    /// The sanitizer restores go through (the machine's rules for
    /// in-flight invocations). Without one, a snapshot with an invocation
    /// in flight fails to restore.
    pub fn with_sanitizer(mut self, sanitizer: Sanitizer) -> Self {
        self.sanitizer = sanitizer;
        self
    }

    /// The services the chart's `invoke.src` names.
    pub fn with_services(mut self, services: Services<C>) -> Self {
        self.services = Some(services);
        self
    }

    /// Calls `f` after every write an activation makes, accepted or not
    /// (for metrics, and for tests that check who wrote under which epoch).
    pub fn on_commit(mut self, f: impl Fn(&CommitRecord) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(f));
        self
    }

    /// The injected bug that the cluster's checks must catch: every write
    /// carries the shard's current epoch (read from the store) instead of
    /// the epoch its activation was started under, as if the write skipped
    /// its epoch check. For the check of the checker only.
    #[doc(hidden)]
    pub fn with_fenceless_writes_bug(mut self) -> Self {
        self.fenceless = true;
        self
    }

    /// The node's name.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The system the entities run on (to run a `DetSystem`, to stop it).
    pub fn system(&self) -> &S {
        &self.sys
    }

    /// The system, to drive it (`DetSystem::advance`).
    pub fn system_mut(&mut self) -> &mut S {
        &mut self.sys
    }

    /// The most shards this node takes (see [`ShardKeeper::set_share`]).
    pub fn set_share(&mut self, share: u32) {
        self.keeper.set_share(share);
    }

    /// The shards held, by the keeper's last tick.
    pub fn held(&self) -> Vec<ShardLease> {
        self.keeper.held().cloned().collect()
    }

    /// The keys of the entities in memory now.
    pub fn active_keys(&self) -> Vec<String> {
        self.active.keys().cloned().collect()
    }

    /// The host's counters.
    pub fn stats(&self) -> HostStats {
        let c = &self.counters;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        HostStats {
            activations: get(&c.activations),
            restored: get(&c.restored),
            passivations: get(&c.passivations),
            commits: get(&c.commits),
            duplicates: get(&c.duplicates),
            fenced: get(&c.fenced),
            failed: get(&c.failed),
            timer_wakes: get(&c.timer_wakes),
            not_owner: get(&c.not_owner),
        }
    }

    fn store_err(&self, source: StoreError) -> EntityError {
        EntityError::Store {
            owner: self.owner.to_string(),
            source,
        }
    }

    /// Delivers message `seq` (the sender's sequence for this key,
    /// increasing from 1) carrying `event` to entity `key`, if this node
    /// owns the key's shard: the entity is activated if it is not in
    /// memory (fresh, or restored from its stored snapshot through the
    /// sanitizer) and handles the message in its turn; `reply` hears what
    /// became of it. A message at or below the entity's applied sequence is
    /// answered [`Ack::Duplicate`] and changes nothing.
    ///
    /// Messages of one key must be sent in sequence order, each after the
    /// last was acknowledged (or several in order to one node): a later
    /// sequence applied first would make an earlier one a duplicate.
    pub fn deliver(
        &mut self,
        key: &str,
        seq: u64,
        event: Event,
        reply: Reply,
    ) -> Result<Routed, EntityError> {
        self.reap();
        let shard = shard_for(key, self.config.shards);
        let Some(lease) = self.keeper.lease(shard).cloned() else {
            bump(&self.counters.not_owner);
            let owner = self
                .store
                .shard_owner(shard)
                .map_err(|e| self.store_err(e))?;
            return Ok(Routed::NotOwner { shard, owner });
        };
        let addr = match self.ensure_active(key, shard, lease.epoch, Some(seq))? {
            Activated::Actor(addr) => addr,
            Activated::Done(ack) => {
                if ack == Ack::Fenced {
                    self.keeper.fenced(shard);
                    self.drop_shards(&BTreeSet::from([shard]));
                }
                reply.send(ack);
                return Ok(Routed::Delivered);
            }
        };
        // A refused send hands the delivery back; dropping it answers
        // its reply `Unanswered`.
        let _ = addr.try_send(ChartMsg::Ext(Delivery { seq, event, reply }));
        Ok(Routed::Delivered)
    }

    /// Brings entity `key` into memory without a message, if this node
    /// owns its shard and the entity is stored and not done: restored
    /// through the sanitizer, its overdue timers fire and an invocation
    /// that was in flight is resumed as the sanitizer says (a charge is
    /// looked up by its key). For a caller that knows the entity has work
    /// pending that no timer will wake (a submit whose owner died while
    /// its charge was in flight). An entity already in memory, or never
    /// stored, is left as it is: `Delivered` then says only that this node
    /// owns the key.
    pub fn activate(&mut self, key: &str) -> Result<Routed, EntityError> {
        self.reap();
        let shard = shard_for(key, self.config.shards);
        let Some(lease) = self.keeper.lease(shard).cloned() else {
            bump(&self.counters.not_owner);
            let owner = self
                .store
                .shard_owner(shard)
                .map_err(|e| self.store_err(e))?;
            return Ok(Routed::NotOwner { shard, owner });
        };
        let stored = self
            .store
            .get_entity(&self.kind, key)
            .map_err(|e| self.store_err(e))?
            .is_some();
        if stored {
            self.ensure_active(key, shard, lease.epoch, None)?;
        }
        Ok(Routed::Delivered)
    }

    /// The entity's actor, activated under `epoch` if it is not in memory.
    /// A done entity (its chart reached a final state) gets no actor: a
    /// message for it (`seq`) is committed here, its state unchanged.
    fn ensure_active(
        &mut self,
        key: &str,
        shard: u32,
        epoch: u64,
        seq: Option<u64>,
    ) -> Result<Activated, EntityError> {
        let now = self.sys.now();
        if let Some(a) = self.active.get_mut(key) {
            if a.epoch == epoch && a.shared.end().is_none() && self.sys.is_alive(a.addr.id()) {
                a.last_used = now;
                return Ok(Activated::Actor(a.addr.clone()));
            }
            let id = a.addr.id();
            self.active.remove(key);
            self.sys.stop(id);
        }
        let stored = self
            .store
            .get_entity(&self.kind, key)
            .map_err(|e| self.store_err(e))?;
        let mut applied = 0;
        let mut restored: Option<Restored<C>> = None;
        if let Some(entity) = stored {
            applied = entity.applied;
            let text = std::str::from_utf8(&entity.data).map_err(|_| EntityError::NotText {
                kind: self.kind.to_string(),
                key: key.to_string(),
            })?;
            let at = Clock::new(
                u64::try_from(now.since_start().as_millis()).unwrap_or(u64::MAX),
                Some(self.epoch_ms),
            );
            let r = Persist::new(&self.machine)
                .sanitizer(self.sanitizer.clone())
                .restore(text, at)
                .map_err(|source| EntityError::Restore {
                    kind: self.kind.to_string(),
                    key: key.to_string(),
                    source: Box::new(source),
                })?;
            if r.snapshot.status != Status::Active {
                // The restore may have ended the chart itself (an overdue
                // timer fired into a final state): the restored state is
                // what is written, so that firing is committed once and
                // the stored wake-up cleared.
                let data = Persist::new(&self.machine)
                    .to_string(&r.snapshot)
                    .map_or_else(|_| entity.data.clone(), String::into_bytes);
                let ack = match seq {
                    Some(_) => self.commit_done(key, shard, epoch, seq, &data),
                    None if entity.wake_at.is_some() => {
                        self.commit_done(key, shard, epoch, None, &data)
                    }
                    None => Ack::Unanswered,
                };
                return Ok(Activated::Done(ack));
            }
            restored = Some(r);
        }
        let shared = Arc::new(ActShared::default());
        let ext = EntityExt {
            store: self.store.clone(),
            kind: self.kind.clone(),
            key: Arc::from(key),
            owner: self.owner.clone(),
            shard,
            epoch,
            epoch_ms: self.epoch_ms,
            applied,
            pending: None,
            last: None,
            shared: shared.clone(),
            counters: self.counters.clone(),
            observer: self.observer.clone(),
            fenceless: self.fenceless,
        };
        let was_restored = restored.is_some();
        let factory = activation_factory(
            self.machine.clone(),
            self.services.clone(),
            self.epoch_ms,
            ext,
            restored,
        );
        // A failed turn must not restart the chart from its initial state
        // (its first commit would overwrite the entity): stop it; the next
        // message activates it again from the store.
        let props = Props::new()
            .supervision(Supervision::new(Strategy::OneForOne).decider(|_| Directive::Stop));
        let addr = self
            .sys
            .spawn(props, factory)
            .map_err(|e| EntityError::Spawn {
                kind: self.kind.to_string(),
                key: key.to_string(),
                why: e.to_string(),
            })?;
        bump(&self.counters.activations);
        if was_restored {
            bump(&self.counters.restored);
        }
        self.active.insert(
            key.to_string(),
            Activation {
                addr: addr.clone(),
                shard,
                epoch,
                last_used: now,
                shared,
            },
        );
        Ok(Activated::Actor(addr))
    }

    /// Commits a done entity's state `data`, with message `seq` if one
    /// came: its sequence advances, its wake-up is cleared.
    fn commit_done(&self, key: &str, shard: u32, epoch: u64, seq: Option<u64>, data: &[u8]) -> Ack {
        let write = EntityWrite {
            kind: &self.kind,
            key,
            shard,
            epoch,
            seq,
            data,
            wake_at: None,
        };
        let ack = match self.store.commit_entity(&write) {
            Ok(EntityCommit::Applied) => {
                bump(&self.counters.commits);
                Ack::Applied
            }
            Ok(EntityCommit::Duplicate { applied }) => {
                bump(&self.counters.duplicates);
                Ack::Duplicate { applied }
            }
            Err(StoreError::Fenced { .. }) => {
                bump(&self.counters.fenced);
                Ack::Fenced
            }
            Err(e) => {
                bump(&self.counters.failed);
                Ack::Failed(format!("entity {key}: commit: {e}"))
            }
        };
        if let Some(observe) = &self.observer {
            observe(&CommitRecord {
                owner: self.owner.to_string(),
                key: key.to_string(),
                shard,
                epoch,
                seq,
                outcome: ack.clone(),
            });
        }
        ack
    }

    /// Ends the activations that ended on their own (fenced, failed,
    /// stopped): a fenced one marks its shard lost in the keeper. The
    /// shards marked lost.
    fn reap(&mut self) -> Vec<u32> {
        let mut lost = BTreeSet::new();
        let mut gone = Vec::new();
        for (key, a) in &self.active {
            match a.shared.end() {
                Some(End::Fenced) => {
                    lost.insert(a.shard);
                    gone.push(key.clone());
                }
                Some(End::Failed(_)) => gone.push(key.clone()),
                None if !self.sys.is_alive(a.addr.id()) => gone.push(key.clone()),
                None => {}
            }
        }
        for key in gone {
            if let Some(a) = self.active.remove(&key) {
                self.sys.stop(a.addr.id());
            }
        }
        for &shard in &lost {
            self.keeper.fenced(shard);
        }
        self.drop_shards(&lost);
        lost.into_iter().collect()
    }

    /// Stops every activation of the shards in `shards`.
    fn drop_shards(&mut self, shards: &BTreeSet<u32>) {
        if shards.is_empty() {
            return;
        }
        let ids: Vec<(String, ActorId)> = self
            .active
            .iter()
            .filter(|(_, a)| shards.contains(&a.shard))
            .map(|(k, a)| (k.clone(), a.addr.id()))
            .collect();
        for (key, id) in ids {
            self.active.remove(&key);
            self.sys.stop(id);
        }
    }

    /// The host's periodic work (call it several times per lease time):
    /// ends fenced activations (their shards marked lost), renews and takes
    /// leases, ends the activations of shards lost or taken under a newer
    /// epoch, passivates entities idle for [`HostConfig::idle`], and wakes
    /// the entities of its shards whose timers are due, so a timer due
    /// while its entity was passivated, or while the shard's previous owner
    /// was down, fires here.
    pub fn tick(&mut self) -> Result<HostTick, EntityError> {
        let mut report = HostTick::default();
        let mut lost: BTreeSet<u32> = self.reap().into_iter().collect();
        let keeper = self.keeper.tick().map_err(|e| self.store_err(e))?;
        report.acquired = keeper.acquired.iter().map(|l| l.shard).collect();
        lost.extend(keeper.lost.iter().copied());
        self.drop_shards(&keeper.lost.iter().copied().collect());
        // An activation under an epoch the keeper no longer holds was
        // loaded before a newer owner's writes: reload it.
        let epochs: BTreeMap<u32, u64> = self.keeper.held().map(|l| (l.shard, l.epoch)).collect();
        let stale: BTreeSet<u32> = self
            .active
            .values()
            .filter(|a| epochs.get(&a.shard) != Some(&a.epoch))
            .map(|a| a.shard)
            .collect();
        self.drop_shards(&stale);
        report.lost = lost.into_iter().collect();

        let now = self.sys.now();
        let idle: Vec<(String, ActorId)> = self
            .active
            .iter()
            .filter(|(_, a)| {
                now.saturating_duration_since(a.last_used) >= self.config.idle
                    && !a.shared.busy.load(Ordering::Relaxed)
            })
            .map(|(k, a)| (k.clone(), a.addr.id()))
            .collect();
        for (key, id) in idle {
            self.active.remove(&key);
            self.sys.stop(id);
            bump(&self.counters.passivations);
            report.passivated += 1;
        }

        for (shard, epoch) in epochs {
            if self.keeper.lease(shard).is_none() {
                continue;
            }
            let due = self
                .store
                .due_entities(shard, self.config.due_batch)
                .map_err(|e| self.store_err(e))?;
            for d in due {
                if d.kind != *self.kind || self.active.contains_key(&d.key) {
                    continue;
                }
                match self.ensure_active(&d.key, shard, epoch, None) {
                    Ok(Activated::Actor(_)) => {
                        bump(&self.counters.timer_wakes);
                        report.woken += 1;
                    }
                    // Its overdue timer ended it on restore: committed.
                    Ok(Activated::Done(Ack::Applied)) => {
                        bump(&self.counters.timer_wakes);
                        report.woken += 1;
                    }
                    Ok(Activated::Done(_)) => {}
                    // One entity that cannot be restored must not keep the
                    // shard's other timers from firing: reported, skipped.
                    Err(e @ (EntityError::Restore { .. } | EntityError::NotText { .. })) => {
                        report.unrestorable.push((d.key.clone(), e.to_string()));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(report)
    }

    /// A clean shutdown: lets the activations finish what they hold
    /// (settling the system for at most `drain`), stops them, and releases
    /// every lease so other nodes take the shards over at once. How many
    /// leases were released.
    pub fn shutdown(&mut self, drain: Duration) -> Result<usize, EntityError> {
        self.sys.settle(drain);
        for (_, a) in std::mem::take(&mut self.active) {
            self.sys.stop(a.addr.id());
        }
        self.sys.settle(drain);
        self.keeper.release_all().map_err(|e| self.store_err(e))
    }
}

/// The factory of an entity's actor. Its first call builds the activation
/// (restoring `restored` if given); a later call (the supervisor stops a
/// failed entity instead of restarting it, but a factory must answer)
/// builds one that writes nothing.
fn activation_factory<C>(
    machine: Arc<Machine<C>>,
    services: Option<Services<C>>,
    epoch_ms: u64,
    ext: EntityExt,
    restored: Option<Restored<C>>,
) -> impl FnMut() -> ChartActor<C, EntityExt> + Send + 'static
where
    C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
{
    let inert = ext.inert();
    let mut first = Some((ext, restored));
    move || {
        let (ext, restored) = first.take().unwrap_or_else(|| (inert.inert(), None));
        let mut actor = ChartActor::with_extension(machine.clone(), ext).with_epoch(epoch_ms);
        if let Some(services) = &services {
            actor = actor.with_services(services.clone());
        }
        if let Some(r) = restored {
            actor = actor.restoring(move |_| Ok(r));
        }
        actor
    }
}
