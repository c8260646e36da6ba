//! Queues over time: for each actor, the user lane's depth, the messages
//! its policy lost (evicted by keep-newest, dropped by keep-oldest, handed
//! back by reject, refused by a full suspend mailbox) and the sojourn time
//! of each message that left the lane, recorded while the index reads the
//! trace ([`crate::Index::queues`]); for each traced stream the same of its
//! buffer (`stream_*` events: a push is an arrival, a take a message
//! taken), under the stream's id.
//!
//! A plot never sees the raw series: [`Queues::plot`] folds them into as
//! many buckets as the plot has pixels, each with the deepest the lane got
//! in it and the step where it got there (so a click on the bucket lands on
//! a step whose depth is the value drawn), so a trace of millions of events
//! costs the page a few kilobytes. Beside the plot, Little's law over the
//! window: the arrival rate times the mean sojourn against the mean depth.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::actor::{ActorEvent, Dropped, Lane, TurnKind};
use crate::event::{Event, Kind};
use crate::ids::ActorId;
use crate::policy::DropPolicy;
use crate::world::World;

/// Most buckets one plot may ask for.
pub const MAX_BUCKETS: usize = 4096;

/// What a lost message became.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loss {
    /// Evicted from the old end (keep-newest).
    Evicted,
    /// Dropped at the door (keep-oldest).
    Dropped,
    /// Handed back to its sender (reject).
    Rejected,
    /// Refused by a full suspend mailbox.
    Full,
}

/// One actor's series, in trace order.
#[derive(Clone, Debug, Default)]
struct Series {
    /// The depth after each event that changed it: (t_ns, step, depth).
    depth: Vec<(u64, u64, u32)>,
    /// Each loss: (t_ns, kind).
    losses: Vec<(u64, Loss)>,
    /// Each message that left the lane: (t_ns it left, sojourn ns, taken
    /// (`true`) or evicted).
    left: Vec<(u64, u64, bool)>,
    /// The arrival time of each admitted message: (t_ns).
    arrivals: Vec<u64>,
    /// Arrival times of the messages in the lane now, oldest first (while
    /// the index reads).
    lane: VecDeque<u64>,
    max_depth: u32,
}

/// Every actor's queue series (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Queues {
    actors: BTreeMap<ActorId, Series>,
    /// What happened before this time is forgotten.
    since: u64,
}

/// One bucket of a [`Plot`]: the events with `t_ns` in `[t0, t1)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bucket {
    /// The deepest the lane was in the bucket (carried in from before it).
    pub depth: u32,
    /// The step after which the lane held `depth`.
    pub step: u64,
    /// Messages lost in the bucket, by what became of them.
    pub evicted: u64,
    /// Dropped at the door.
    pub dropped: u64,
    /// Handed back.
    pub rejected: u64,
    /// Refused by a full suspend mailbox.
    pub full: u64,
    /// Messages taken by the actor in the bucket.
    pub taken: u64,
    /// Their mean sojourn, in ns (0 when none was taken).
    pub sojourn_mean_ns: u64,
    /// Their longest sojourn, in ns.
    pub sojourn_max_ns: u64,
}

/// Little's law over a window: `L = λ W`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Little {
    /// Admitted arrivals per second (λ).
    pub arrival_rate: f64,
    /// The mean time a message spent in the lane, over the messages that
    /// left it in the window (taken or evicted), in seconds (W).
    pub mean_sojourn_s: f64,
    /// λ W.
    pub predicted_depth: f64,
    /// The time-averaged depth over the window (L).
    pub mean_depth: f64,
}

/// One actor's plot over a window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plot {
    /// The actor.
    pub actor: ActorId,
    /// The window's start, in ns.
    pub t0: u64,
    /// The window's end, in ns.
    pub t1: u64,
    /// The deepest the lane got in the whole trace.
    pub max_depth: u32,
    /// The buckets, evenly spaced over the window.
    pub buckets: Vec<Bucket>,
    /// Little's law over the window.
    pub little: Little,
}

impl Queues {
    /// Records what `e` did to its actor's lane; `world` is the world
    /// with `e` applied (the index calls it for every event; the
    /// inspector's live mode calls it as a running system's events come).
    pub fn observe(&mut self, e: &Event, world: &World) {
        // A merged cluster trace's actors are per node (their ids clash
        // across nodes): the plots are one system's.
        if e.node.is_some() {
            return;
        }
        let Kind::Actor(a) = &e.kind else { return };
        let id = a.actor();
        let t = e.t_ns;
        let step = world.step;
        // A stream's events carry its depth, or (a loss) leave it to the
        // series; a mailbox's is the world's.
        let depth = match a {
            ActorEvent::StreamPush { depth, .. } | ActorEvent::StreamTake { depth, .. } => {
                Some(*depth as u32)
            }
            ActorEvent::StreamOpen { .. }
            | ActorEvent::StreamDrop { .. }
            | ActorEvent::StreamReject { .. }
            | ActorEvent::StreamFull { .. } => None,
            _ => Some(
                world
                    .actors
                    .get(&id)
                    .map(|v| v.user.depth() as u32)
                    .unwrap_or(0),
            ),
        };
        let relevant = matches!(
            a,
            ActorEvent::Enqueue {
                lane: Lane::User,
                ..
            } | ActorEvent::Drop { .. }
                | ActorEvent::Reject { .. }
                | ActorEvent::Full { .. }
                | ActorEvent::TurnStart { .. }
                | ActorEvent::Stop { .. }
                | ActorEvent::Restart { .. }
                | ActorEvent::StreamOpen { .. }
                | ActorEvent::StreamPush { .. }
                | ActorEvent::StreamDrop { .. }
                | ActorEvent::StreamReject { .. }
                | ActorEvent::StreamFull { .. }
                | ActorEvent::StreamTake { .. }
        );
        if !relevant && !self.actors.contains_key(&id) {
            return;
        }
        let s = self.actors.entry(id).or_default();
        match a {
            ActorEvent::Enqueue {
                lane: Lane::User, ..
            }
            | ActorEvent::StreamPush { .. } => {
                s.lane.push_back(t);
                s.arrivals.push(t);
            }
            ActorEvent::Drop { policy, which, .. }
            | ActorEvent::StreamDrop { policy, which, .. } => {
                let kind = match (policy, which) {
                    (DropPolicy::KeepNewest, _) | (_, Dropped::Oldest) => Loss::Evicted,
                    _ => Loss::Dropped,
                };
                s.losses.push((t, kind));
                if *which == Dropped::Oldest {
                    if let Some(at) = s.lane.pop_front() {
                        s.left.push((t, t.saturating_sub(at), false));
                    }
                }
            }
            ActorEvent::Reject { .. } | ActorEvent::StreamReject { .. } => {
                s.losses.push((t, Loss::Rejected))
            }
            ActorEvent::Full { .. } | ActorEvent::StreamFull { .. } => {
                s.losses.push((t, Loss::Full))
            }
            ActorEvent::TurnStart {
                what: TurnKind::Message | TurnKind::Reply,
                ..
            }
            | ActorEvent::StreamTake { .. } => {
                if let Some(at) = s.lane.pop_front() {
                    s.left.push((t, t.saturating_sub(at), true));
                }
            }
            _ => {}
        }
        let depth = depth.unwrap_or(s.lane.len() as u32);
        // What the trace did not show leaving left from the front; what it
        // did not show arriving arrived now.
        while s.lane.len() > depth as usize {
            s.lane.pop_front();
        }
        while s.lane.len() < depth as usize {
            s.lane.push_front(t);
        }
        if s.depth.last().map(|d| d.2) != Some(depth) {
            s.depth.push((t, step, depth));
        }
        s.max_depth = s.max_depth.max(depth);
    }

    /// Forgets what happened before `t`, keeping the depth in force then:
    /// how the inspector's live mode keeps a window of a running system.
    pub fn forget_before(&mut self, t: u64) {
        for s in self.actors.values_mut() {
            let i = s.depth.partition_point(|d| d.0 < t);
            s.depth.drain(..i.saturating_sub(1));
            let i = s.losses.partition_point(|l| l.0 < t);
            s.losses.drain(..i);
            let i = s.left.partition_point(|l| l.0 < t);
            s.left.drain(..i);
            let i = s.arrivals.partition_point(|&a| a < t);
            s.arrivals.drain(..i);
        }
        self.since = self.since.max(t);
    }

    /// The earliest time still held (0 unless [`Queues::forget_before`]).
    pub fn since(&self) -> u64 {
        self.since
    }

    /// The actors with a user lane seen, deepest first (ties by id).
    pub fn actors(&self) -> Vec<(ActorId, u32)> {
        let mut v: Vec<(ActorId, u32)> = self
            .actors
            .iter()
            .filter(|(_, s)| !s.arrivals.is_empty() || !s.losses.is_empty())
            .map(|(id, s)| (*id, s.max_depth))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// `actor`'s series over `[t0, t1]` folded into `buckets` buckets
    /// (at least 1, at most [`MAX_BUCKETS`]); `None` for an actor never seen.
    pub fn plot(&self, actor: ActorId, t0: u64, t1: u64, buckets: usize) -> Option<Plot> {
        let s = self.actors.get(&actor)?;
        let n = buckets.clamp(1, MAX_BUCKETS);
        let t1 = t1.max(t0);
        let span = (t1 - t0).max(1);
        // Bucket i covers [t0 + span*i/n, t0 + span*(i+1)/n); the last one
        // includes t1.
        let bucket_of = |t: u64| -> usize {
            (((t - t0) as u128 * n as u128 / span as u128) as usize).min(n - 1)
        };
        let mut out = vec![Bucket::default(); n];
        // Depth: the value carried in from before the window, then each
        // change inside it.
        let first = s.depth.partition_point(|d| d.0 < t0);
        let (mut cur, mut cur_step) = match first.checked_sub(1) {
            Some(i) => (s.depth[i].2, s.depth[i].1),
            None => (0, 0),
        };
        let mut i = first;
        // Time-weighted depth for Little's law.
        let mut area = 0u128;
        let mut last_t = t0;
        for (b, bucket) in out.iter_mut().enumerate() {
            let end = if b + 1 == n {
                t1.saturating_add(1)
            } else {
                t0 + (span as u128 * (b as u128 + 1) / n as u128) as u64
            };
            bucket.depth = cur;
            bucket.step = cur_step;
            while i < s.depth.len() && s.depth[i].0 < end {
                let (t, step, d) = s.depth[i];
                area += cur as u128 * (t.min(t1) - last_t.min(t1)) as u128;
                last_t = t;
                cur = d;
                cur_step = step;
                if d > bucket.depth {
                    bucket.depth = d;
                    bucket.step = step;
                }
                i += 1;
            }
        }
        area += cur as u128 * (t1 - last_t.min(t1)) as u128;
        let lo = s.losses.partition_point(|l| l.0 < t0);
        for &(t, kind) in s.losses[lo..].iter().take_while(|l| l.0 <= t1) {
            let b = &mut out[bucket_of(t)];
            match kind {
                Loss::Evicted => b.evicted += 1,
                Loss::Dropped => b.dropped += 1,
                Loss::Rejected => b.rejected += 1,
                Loss::Full => b.full += 1,
            }
        }
        let lo = s.left.partition_point(|l| l.0 < t0);
        let (mut left, mut sojourn_sum) = (0u64, 0u128);
        let mut sums = vec![0u128; n];
        for &(t, ns, taken) in s.left[lo..].iter().take_while(|l| l.0 <= t1) {
            left += 1;
            sojourn_sum += ns as u128;
            if taken {
                let b = bucket_of(t);
                out[b].taken += 1;
                sums[b] += ns as u128;
                out[b].sojourn_max_ns = out[b].sojourn_max_ns.max(ns);
            }
        }
        for (b, sum) in out.iter_mut().zip(sums) {
            if b.taken > 0 {
                b.sojourn_mean_ns = (sum / b.taken as u128) as u64;
            }
        }
        let lo = s.arrivals.partition_point(|&t| t < t0);
        let arrivals = s.arrivals[lo..].iter().take_while(|&&t| t <= t1).count();
        let secs = span as f64 / 1e9;
        let arrival_rate = arrivals as f64 / secs;
        let mean_sojourn_s = if left > 0 {
            sojourn_sum as f64 / left as f64 / 1e9
        } else {
            0.0
        };
        Some(Plot {
            actor,
            t0,
            t1,
            max_depth: s.max_depth,
            buckets: out,
            little: Little {
                arrival_rate,
                mean_sojourn_s,
                predicted_depth: arrival_rate * mean_sojourn_s,
                mean_depth: area as f64 / span as f64,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    fn ev(seq: u64, t_ns: u64, a: ActorEvent) -> Event {
        Event {
            seq,
            t_ns,
            kind: Kind::Actor(a),
            js_stack: None,
            loop_id: None,
            node: None,
        }
    }

    fn run(events: &[Event]) -> Queues {
        let mut w = World::new();
        let mut q = Queues::default();
        for e in events {
            w.apply(e);
            q.observe(e, &w);
        }
        q
    }

    fn enq(seq: u64, t: u64, depth: usize) -> Event {
        ev(
            seq,
            t,
            ActorEvent::Enqueue {
                actor: ActorId(1),
                lane: Lane::User,
                depth,
            },
        )
    }

    fn take(seq: u64, t: u64) -> Event {
        ev(
            seq,
            t,
            ActorEvent::TurnStart {
                actor: ActorId(1),
                what: TurnKind::Message,
            },
        )
    }

    #[test]
    fn buckets_keep_the_deepest_point_and_its_step() {
        // Depth 1, 2, 3 at t = 10, 20, 30; taken at 40 and 50.
        let q = run(&[
            enq(0, 10, 1),
            enq(1, 20, 2),
            enq(2, 30, 3),
            take(3, 40),
            take(4, 50),
        ]);
        let p = q.plot(ActorId(1), 0, 59, 2).unwrap();
        assert_eq!(p.max_depth, 3);
        // [0, 29.5): depth up to 2 (after step 2); [29.5, 59]: 3 at step 3.
        assert_eq!((p.buckets[0].depth, p.buckets[0].step), (2, 2));
        assert_eq!((p.buckets[1].depth, p.buckets[1].step), (3, 3));
        assert_eq!(p.buckets[1].taken, 2);
        // The first message waited 30 ns, the second 30 ns.
        assert_eq!(p.buckets[1].sojourn_mean_ns, 30);
        assert_eq!(p.buckets[1].sojourn_max_ns, 30);
        // A window after the changes carries the depth in.
        let late = q.plot(ActorId(1), 55, 59, 4).unwrap();
        assert!(late.buckets.iter().all(|b| b.depth == 1 && b.step == 5));
        assert!(q.plot(ActorId(9), 0, 10, 4).is_none());
    }

    #[test]
    fn losses_land_in_their_buckets_and_evictions_leave_the_lane() {
        let drop = |seq, t, which| {
            ev(
                seq,
                t,
                ActorEvent::Drop {
                    actor: ActorId(1),
                    policy: if which == Dropped::Oldest {
                        DropPolicy::KeepNewest
                    } else {
                        DropPolicy::KeepOldest
                    },
                    which,
                },
            )
        };
        let q = run(&[
            enq(0, 0, 1),
            enq(1, 10, 2),
            drop(2, 20, Dropped::Oldest),
            drop(3, 70, Dropped::Incoming),
            ev(4, 80, ActorEvent::Reject { actor: ActorId(1) }),
        ]);
        let p = q.plot(ActorId(1), 0, 99, 2).unwrap();
        assert_eq!((p.buckets[0].evicted, p.buckets[0].dropped), (1, 0));
        assert_eq!((p.buckets[1].dropped, p.buckets[1].rejected), (1, 1));
        // The eviction took the oldest out after 20 ns.
        assert_eq!(p.buckets[0].depth, 2);
        assert_eq!(p.buckets[1].depth, 1);
        assert!((p.little.mean_sojourn_s - 20e-9).abs() < 1e-15);
    }

    #[test]
    fn forgetting_keeps_the_depth_in_force_and_drops_the_rest() {
        let mut q = run(&[enq(0, 10, 1), enq(1, 20, 2), take(2, 30), enq(3, 40, 2)]);
        q.forget_before(35);
        assert_eq!(q.since(), 35);
        let p = q.plot(ActorId(1), 35, 45, 2).unwrap();
        // Depth 1 (after the take at 30) carried in, then 2 at 40.
        assert_eq!((p.buckets[0].depth, p.buckets[0].step), (1, 3));
        assert_eq!(p.buckets[1].depth, 2);
        // The take at 30 and the arrivals before 35 are gone.
        assert_eq!(p.buckets.iter().map(|b| b.taken).sum::<u64>(), 0);
        assert!((p.little.arrival_rate - 1e8).abs() < 1.0, "{:?}", p.little);
    }

    #[test]
    fn littles_law_holds_for_a_steady_queue() {
        // One arrival every 10 ns, each taken 30 ns later: three queued on
        // average, λ = 1e8/s, W = 30 ns.
        let mut events = Vec::new();
        let mut seq = 0;
        let mut depth = 0;
        for k in 0..1000u64 {
            let t = k * 10;
            if k >= 3 {
                events.push(take(seq, t));
                seq += 1;
                depth -= 1;
            }
            depth += 1;
            events.push(enq(seq, t, depth));
            seq += 1;
        }
        let q = run(&events);
        let p = q.plot(ActorId(1), 0, 9_990, 100).unwrap();
        let l = &p.little;
        assert!((l.mean_sojourn_s - 30e-9).abs() < 1e-12, "{l:?}");
        assert!((l.arrival_rate - 1e8).abs() / 1e8 < 0.01, "{l:?}");
        assert!((l.mean_depth - 3.0).abs() < 0.05, "{l:?}");
        assert!((l.predicted_depth - l.mean_depth).abs() < 0.1, "{l:?}");
    }
}
