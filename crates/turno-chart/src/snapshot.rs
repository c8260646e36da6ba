//! Snapshots: everything a chart is at rest, as plain serialisable data.
//!
//! A snapshot holds the configuration (the active states, as a bitset over
//! document order), the context, the history values, the delayed events
//! still pending **with absolute deadlines**, and the invocations in
//! flight. That is what a persisted chart needs to resume honestly; the
//! `machine_version` field says which definition the indices refer to.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use smallvec::SmallVec;
use thin_vec::ThinVec;

use crate::actions::SendTarget;
use crate::event::Event;
use crate::machine::{Machine, StateIdx, StateKind};

/// A set of states: one bit per state in document order. Machines of up to
/// 128 states keep it inline (no allocation when a snapshot is cloned).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StateSet(SmallVec<[u64; 2]>);

impl StateSet {
    /// An empty set for a machine of `n` states.
    pub fn with_states(n: usize) -> Self {
        StateSet(SmallVec::from_elem(0, n.div_ceil(64).max(1)))
    }

    /// Is `s` in the set?
    #[inline]
    pub fn contains(&self, s: StateIdx) -> bool {
        let (w, b) = (s as usize / 64, s as usize % 64);
        self.0.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    /// Adds `s`; true if it was not there.
    #[inline]
    pub fn insert(&mut self, s: StateIdx) -> bool {
        let (w, b) = (s as usize / 64, s as usize % 64);
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        let had = self.0[w] & (1 << b) != 0;
        self.0[w] |= 1 << b;
        !had
    }

    /// Removes `s`; true if it was there.
    #[inline]
    pub fn remove(&mut self, s: StateIdx) -> bool {
        let (w, b) = (s as usize / 64, s as usize % 64);
        match self.0.get_mut(w) {
            Some(x) => {
                let had = *x & (1 << b) != 0;
                *x &= !(1 << b);
                had
            }
            None => false,
        }
    }

    /// Removes every state.
    pub fn clear(&mut self) {
        for w in &mut self.0 {
            *w = 0;
        }
    }

    /// The set's words, 64 states each.
    #[inline]
    pub(crate) fn words(&self) -> &[u64] {
        &self.0
    }

    /// The same states as `other`, word for word (a machine's sets all
    /// have its number of words): no call to `memcmp` for one or two words.
    #[inline]
    pub(crate) fn same(&self, other: &StateSet) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(other.0.iter()).all(|(a, b)| a == b)
    }

    /// Becomes a copy of `other`, in place.
    #[inline]
    pub(crate) fn copy_from(&mut self, other: &StateSet) {
        if self.0.len() == other.0.len() {
            self.0.copy_from_slice(&other.0);
        } else {
            self.0.clone_from(&other.0);
        }
    }

    /// No state in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// How many states.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Do the sets share a state?
    pub fn intersects(&self, other: &StateSet) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    /// The states in both sets.
    #[inline]
    pub(crate) fn and(&self, other: &StateSet) -> StateSet {
        StateSet(
            self.0
                .iter()
                .zip(other.0.iter())
                .map(|(a, b)| a & b)
                .collect(),
        )
    }

    /// Adds the states of `other` in `lo..=hi`.
    #[inline]
    pub(crate) fn insert_from_range(&mut self, other: &StateSet, lo: StateIdx, hi: StateIdx) {
        let (lo, hi) = (lo as usize, hi as usize);
        if lo > hi {
            return;
        }
        let (wl, wh) = (lo / 64, hi / 64);
        if self.0.len() <= wh {
            self.0.resize(wh + 1, 0);
        }
        for w in wl..=wh {
            self.0[w] |= other.0.get(w).copied().unwrap_or(0) & range_mask(w, lo, hi);
        }
    }

    /// Adds every state of `other`.
    #[inline]
    pub(crate) fn insert_all(&mut self, other: &StateSet) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a |= b;
        }
    }

    /// The states in document order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = StateIdx> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut fwd = Vec::new();
            let mut b = bits;
            while b != 0 {
                let t = b.trailing_zeros();
                fwd.push((w * 64 + t as usize) as StateIdx);
                b &= b - 1;
            }
            fwd.into_iter()
        })
    }

    /// The states in document order, without allocating.
    #[inline]
    pub(crate) fn ones(&self) -> Ones<'_> {
        Ones {
            words: &self.0,
            w: 0,
            bits: self.0.first().copied().unwrap_or(0),
        }
    }

    /// Calls `f` for each state in document order, without allocating.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(StateIdx)) {
        for (w, &bits) in self.0.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let t = b.trailing_zeros();
                f((w * 64 + t as usize) as StateIdx);
                b &= b - 1;
            }
        }
    }

    /// Calls `f` for each state in reverse document order.
    #[inline]
    pub fn for_each_rev(&self, mut f: impl FnMut(StateIdx)) {
        for (w, &bits) in self.0.iter().enumerate().rev() {
            let mut b = bits;
            while b != 0 {
                let t = 63 - b.leading_zeros();
                f((w * 64 + t as usize) as StateIdx);
                b &= !(1u64 << t);
            }
        }
    }
}

/// [`StateSet::ones`]: the states of a set in document order.
pub(crate) struct Ones<'a> {
    words: &'a [u64],
    w: usize,
    bits: u64,
}

impl Iterator for Ones<'_> {
    type Item = StateIdx;

    #[inline]
    fn next(&mut self) -> Option<StateIdx> {
        while self.bits == 0 {
            self.w += 1;
            self.bits = *self.words.get(self.w)?;
        }
        let t = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some((self.w * 64 + t) as StateIdx)
    }
}

/// The bits of word `w` that stand for states in `lo..=hi`.
#[inline]
fn range_mask(w: usize, lo: usize, hi: usize) -> u64 {
    let from = if w == lo / 64 { !0u64 << (lo % 64) } else { !0 };
    let to = if w == hi / 64 {
        !0u64 >> (63 - hi % 64)
    } else {
        !0
    };
    from & to
}

/// Where a chart is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Running: it accepts events.
    Active,
    /// A top-level final state was reached.
    Done,
    /// An invocation failed and nothing handled `xstate.error.actor.*`.
    Error,
    /// Stopped from outside.
    Stopped,
}

impl Status {
    /// The name XState uses (`active`, `done`, `error`, `stopped`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Done => "done",
            Status::Error => "error",
            Status::Stopped => "stopped",
        }
    }
}

/// A delayed event waiting for its deadline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scheduled {
    /// The send id (`cancel` uses it; `after` events use their event name).
    pub id: String,
    /// Distinguishes this scheduling from an earlier one with the same id.
    pub seq: u64,
    /// The absolute deadline, in the chart's milliseconds.
    pub due_ms: u64,
    /// The delay it was scheduled with (a restore that restarts delays
    /// needs it).
    #[serde(default)]
    pub delay_ms: u64,
    /// The event.
    pub event: Event,
    /// Where it goes.
    pub to: SendTarget,
    /// For a send to an invocation: the start it was bound to when it was
    /// scheduled (XState binds a delayed `sendTo` to the actor, not to its
    /// id). If that start is no longer in flight when the event fires, the
    /// event reaches nobody. `None`: bound by id (a spawned child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

/// A child actor in flight: an invocation started on entry, or a child
/// spawned by an action (`spawnChild`), not yet finished or stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The invocation id (a spawned child's `id`).
    pub id: String,
    /// The actor logic's name.
    pub src: String,
    /// Unique per start; a result carrying another generation is stale.
    pub generation: u64,
    /// The state that started it (empty for a spawned child).
    pub state: String,
    /// Spawned by an action (`spawnChild`), not tied to a state: it runs
    /// until it finishes, `stopChild` stops it or the chart stops.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spawned: bool,
    /// Spawned without an id (listed as `undefined`, as XState lists it):
    /// `stopChild` stops it but XState keeps listing it, `stopped`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unnamed: bool,
    /// The input it was started with (a persisted chart needs it to re-run
    /// an idempotent source with the same key, see `persist`).
    #[serde(default)]
    pub input: Value,
    /// When it was started, in the chart's milliseconds.
    #[serde(default)]
    pub started_ms: u64,
}

/// A child that finished (its result was delivered to the chart) and that
/// XState still lists among `snapshot.children`: an invoked one until its
/// state is left, a spawned one until `stopChild`; or one that was still
/// running when the chart reached its top-level final state (XState keeps
/// a done machine's children listed, stopped). A failed or stopped chart
/// lists none. A send to a listed finished child is no error and reaches
/// nobody.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// The child as it was in flight.
    pub child: Invocation,
    /// How it ended: `done`, `error` for a failed one, `stopped` for one
    /// stopped when the chart was done.
    pub status: Status,
}

/// The recorded configuration of one history state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The history state.
    pub history: StateIdx,
    /// The states it remembers.
    pub states: Vec<StateIdx>,
}

/// A chart at rest: the result of a macrostep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Snapshot<C> {
    /// Where the chart is in its life.
    pub status: Status,
    /// The active states.
    pub config: StateSet,
    /// The extended state.
    pub context: C,
    /// History values.
    pub history: ThinVec<HistoryEntry>,
    /// The machine's output, once done (boxed, as `error`: rarely set,
    /// so an active snapshot stays small).
    pub output: Option<Box<Value>>,
    /// The error, when the status is `error`.
    pub error: Option<Box<Value>>,
    /// Delayed events not yet fired, with absolute deadlines.
    pub scheduled: ThinVec<Scheduled>,
    /// Children in flight: invocations and spawned children, in start
    /// order.
    pub invocations: ThinVec<Invocation>,
    /// Children that finished and are still listed (see [`Finished`]).
    #[serde(default)]
    pub finished: ThinVec<Finished>,
    /// The chart's clock at the last macrostep, in milliseconds (set by the
    /// caller: the pure core never reads a clock).
    pub now_ms: u64,
    /// The next sequence number for schedules and invocation generations.
    pub next_seq: u64,
    /// The definition's version.
    pub machine_version: Option<String>,
    /// The wall-clock time (ms since the Unix epoch) at which the chart's
    /// clock read 0: what places `now_ms` and every deadline in real time,
    /// so a snapshot restores in another process (whose clock starts at 0
    /// again). `None`: unknown, restore on the same clock only. Set by
    /// whoever drives the chart (the interpreter's
    /// [`with_epoch`](crate::interpreter::ChartActor::with_epoch)); see
    /// [`persist::Clock`](crate::persist::Clock).
    #[serde(default)]
    pub epoch_ms: Option<u64>,
    /// The chart has a parent to `sendParent` to: a child chart of a
    /// [`Tree`](crate::tree::Tree), or a chart actor given one. Not
    /// persisted: whoever drives the chart sets it. Under XState's rules a
    /// `sendParent` without a parent fails the chart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_parent: bool,
}

/// XState's `snapshot.value`: a key, or an object of keys to values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateValue {
    /// An atomic state's key.
    Leaf(String),
    /// Active children of a compound or parallel state, in document order.
    Map(Vec<(String, StateValue)>),
}

impl Serialize for StateValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            StateValue::Leaf(k) => s.serialize_str(k),
            StateValue::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl StateValue {
    /// As a `serde_json::Value`.
    pub fn to_json(&self) -> Value {
        match self {
            StateValue::Leaf(k) => Value::String(k.clone()),
            StateValue::Map(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }
}

impl<C> Snapshot<C> {
    /// Is state `s` active?
    pub fn is_active(&self, s: StateIdx) -> bool {
        self.config.contains(s)
    }

    /// XState's `snapshot.value`.
    pub fn value(&self, m: &Machine<C>) -> StateValue {
        value_of(m, &self.config, 0)
    }

    /// The active states' ids, in document order.
    pub fn active_ids<'m>(&self, m: &'m Machine<C>) -> Vec<&'m str> {
        self.config.iter().map(|s| &*m.state(s).id).collect()
    }

    /// XState's `snapshot.hasTag`.
    pub fn has_tag(&self, m: &Machine<C>, tag: &str) -> bool {
        self.config
            .iter()
            .any(|s| m.state(s).tags.iter().any(|t| &**t == tag))
    }

    /// XState's `snapshot.matches`: `"a"`, `"a.b"` or `{"a": "b"}`.
    pub fn matches(&self, m: &Machine<C>, value: &Value) -> bool {
        fn walk<C>(m: &Machine<C>, cfg: &StateSet, node: StateIdx, v: &Value) -> bool {
            let child = |key: &str| {
                m.state(node)
                    .children
                    .iter()
                    .copied()
                    .find(|&c| &*m.state(c).key == key)
            };
            match v {
                Value::String(s) => {
                    let mut n = node;
                    for key in s.split('.') {
                        let Some(c) = m
                            .state(n)
                            .children
                            .iter()
                            .copied()
                            .find(|&c| &*m.state(c).key == key)
                        else {
                            return false;
                        };
                        if !cfg.contains(c) {
                            return false;
                        }
                        n = c;
                    }
                    true
                }
                Value::Object(map) => map.iter().all(|(k, sub)| match child(k) {
                    Some(c) => cfg.contains(c) && walk(m, cfg, c, sub),
                    None => false,
                }),
                _ => false,
            }
        }
        walk(m, &self.config, 0, value)
    }

    /// `meta` of the active states, by state id (XState's `getMeta()`).
    pub fn meta(&self, m: &Machine<C>) -> Vec<(String, Value)> {
        self.config
            .iter()
            .filter_map(|s| {
                let n = m.state(s);
                n.meta.clone().map(|v| (n.id.to_string(), v))
            })
            .collect()
    }
}

fn value_of<C>(m: &Machine<C>, cfg: &StateSet, node: StateIdx) -> StateValue {
    let n = m.state(node);
    let active: Vec<StateIdx> = n
        .children
        .iter()
        .copied()
        .filter(|&c| cfg.contains(c))
        .collect();
    if n.kind == StateKind::Compound {
        match active.first() {
            Some(&c) if m.state(c).is_atomic() => {
                return StateValue::Leaf(m.state(c).key.to_string())
            }
            None => return StateValue::Map(Vec::new()),
            Some(_) => {}
        }
    }
    StateValue::Map(
        active
            .into_iter()
            .map(|c| (m.state(c).key.to_string(), value_of(m, cfg, c)))
            .collect(),
    )
}
