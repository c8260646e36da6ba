//! [`ShardKeeper`]: one node's side of the shard leases (see
//! [`shards`](crate::shards)): which shards it holds, when to renew, and
//! which it lost.
//!
//! A node calls [`ShardKeeper::tick`] regularly (several times per lease
//! time): it renews every lease past half its time, forgets the ones a
//! takeover took, and takes free shards while it holds fewer than its
//! share. Before a write, [`ShardKeeper::lease`] gives the lease whose epoch
//! fences it; a write refused as [`StoreError::Fenced`](crate::StoreError)
//! is reported with [`ShardKeeper::fenced`], and the node stops acting for
//! that shard. On a clean shutdown, [`ShardKeeper::release_all`] hands every
//! shard over at once.
//!
//! The keeper's own view of time (its store's clock) only decides when it
//! renews and when it stops acting for a shard whose lease it could not
//! renew ([`ShardKeeper::lease`] is `None` past the lease's end by that
//! clock). A node whose clock is wrong, or that was paused, may still act
//! on a lease another node took over: its writes are then fenced by the
//! store. So a wrong clock costs work, never safety.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::Result;
use crate::shards::{LeaseOutcome, ShardLease};
use crate::store::{ms, Store};

/// What one [`ShardKeeper::tick`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeeperTick {
    /// Shards taken in this tick, with their new epochs.
    pub acquired: Vec<ShardLease>,
    /// Shards held before this tick and lost (taken over by another node).
    pub lost: Vec<u32>,
}

/// One node's shard leases. See the [module docs](self).
#[derive(Debug)]
pub struct ShardKeeper {
    store: Store,
    owner: String,
    shards: u32,
    share: u32,
    ttl: Duration,
    held: BTreeMap<u32, ShardLease>,
}

impl ShardKeeper {
    /// The keeper of node `owner` (its name and incarnation) among `shards`
    /// shards, holding leases of `ttl`. Its share starts at every shard;
    /// set it from the cluster's membership ([`ShardKeeper::set_share`]).
    pub fn new(store: Store, owner: impl Into<String>, shards: u32, ttl: Duration) -> Self {
        ShardKeeper {
            store,
            owner: owner.into(),
            shards: shards.max(1),
            share: shards.max(1),
            ttl,
            held: BTreeMap::new(),
        }
    }

    /// The most shards this node takes (its share of the cluster: the
    /// number of shards over the number of live nodes, rounded up). It
    /// never gives up a shard to meet a smaller share: a shard changes
    /// owner when its lease expires or is released.
    pub fn set_share(&mut self, share: u32) {
        self.share = share;
    }

    /// The node this keeper acts for.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Renews the leases past half their time, forgets the lost ones and
    /// takes free shards up to the node's share.
    pub fn tick(&mut self) -> Result<KeeperTick> {
        let mut tick = KeeperTick::default();
        let now = self.store.now();
        let half = ms(self.ttl) / 2;
        let due: Vec<ShardLease> = self
            .held
            .values()
            .filter(|lease| lease.until - now < half)
            .cloned()
            .collect();
        for lease in due {
            match self.store.renew_shard(&lease, self.ttl)? {
                Some(renewed) => {
                    self.held.insert(lease.shard, renewed);
                }
                None => {
                    self.held.remove(&lease.shard);
                    tick.lost.push(lease.shard);
                }
            }
        }
        for shard in 0..self.shards {
            if self.held.len() >= self.share as usize {
                break;
            }
            if self.held.contains_key(&shard) {
                continue;
            }
            if let LeaseOutcome::Acquired(lease) =
                self.store.acquire_shard(shard, &self.owner, self.ttl)?
            {
                tick.acquired.push(lease.clone());
                self.held.insert(shard, lease);
            }
        }
        Ok(tick)
    }

    /// The lease to fence a write of `shard` with: held, and not past its
    /// end by this node's clock. `None`: this node must not act for the
    /// shard now.
    pub fn lease(&self, shard: u32) -> Option<&ShardLease> {
        let now = self.store.now();
        self.held.get(&shard).filter(|lease| lease.until > now)
    }

    /// The shards held (by the last tick's view), with their leases.
    pub fn held(&self) -> impl Iterator<Item = &ShardLease> {
        self.held.values()
    }

    /// A write of `shard` was fenced: another node owns it now. The keeper
    /// forgets the lease.
    pub fn fenced(&mut self, shard: u32) {
        self.held.remove(&shard);
    }

    /// Releases every lease held (a clean shutdown, after draining): the
    /// shards are free at once. How many were still this node's.
    pub fn release_all(&mut self) -> Result<usize> {
        let mut released = 0;
        for lease in std::mem::take(&mut self.held).into_values() {
            if self.store.release_shard(&lease)? {
                released += 1;
            }
        }
        Ok(released)
    }
}
