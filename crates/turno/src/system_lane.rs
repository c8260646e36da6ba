//! The queues of a mailbox's system lane: control messages, then signals.
//!
//! Every actor's first control message is a start, and most actors never
//! get another but the stop that ends them (no children, no timers, no
//! watches, never restarted): so a (re)start is a flag, a plain stop
//! (`Stop(Stopped)`) queued while no other control message is is a flag
//! too, and the two queues are allocated on the first other entry and
//! freed again once both are empty. An idle actor's system lane is one word
//! (a pointer) and one flag byte the mailbox keeps beside its other bytes,
//! where two empty `VecDeque`s were eight words; whether the mailbox is
//! closed is one of those flags, read under the same lock.
//!
//! The order is the lane's: a (re)start before any other control message,
//! the others first in, first out (the stop flag is set only while the
//! control queue is empty, so it is the oldest of them); signals first in,
//! first out. The lock and the wake-ups are the mailbox's.

use std::collections::VecDeque;

use crate::ids::{ActorId, RequestId, TimerId};
use crate::supervision::ExitReason;

/// Control messages: handled by the runtime, even for a muted actor.
#[derive(Debug)]
pub(crate) enum Control {
    /// Run the `started` hook (first turn, and after a restart).
    Start,
    /// Stop this actor (children first).
    Stop(ExitReason),
    /// Replace this actor's instance (children stopped first); the number is
    /// the supervisor's restarts within its period, for the trace.
    Restart(u32),
    /// A child failed; the supervisor must decide.
    ChildFailed { child: ActorId, error: String },
    /// A child has stopped for good.
    ChildTerminated(ActorId),
}

/// Signals: system-lane entries that become a call to the actor's handler.
#[derive(Debug)]
pub(crate) enum Signal {
    Timer(TimerId),
    AskTimeout(RequestId),
    /// A queued reply to this request was evicted (keep-newest).
    ReplyEvicted(RequestId),
    Terminated {
        actor: ActorId,
        reason: ExitReason,
    },
}

/// A mailbox's system lane, lent under its lock: its flags and its queues,
/// which the mailbox keeps apart (the two flag bytes beside its other
/// bytes, the queues' pointer a word: one word for the lane, where the
/// flags beside the pointer padded it to two). See the [module docs](self).
pub(crate) struct SystemQueues<'a> {
    flags: &'a mut SystemFlags,
    queues: &'a mut Option<Box<Queues>>,
}

/// The system lane's flags, one bit each: [`START`], [`STOP`], [`CLOSED`].
#[derive(Default)]
pub(crate) struct SystemFlags(u8);

/// A (re)start is queued: it is taken before any other control message.
/// Two (re)starts queued at once are one (a second `started` hook on the
/// same instance has no meaning).
const START: u8 = 1;
/// A `Stop(Stopped)` is queued ahead of every control message in the queue
/// (it was set while the queue was empty).
const STOP: u8 = 2;
/// The mailbox is closed: nothing is queued any more.
const CLOSED: u8 = 4;

impl SystemFlags {
    fn has(&self, bit: u8) -> bool {
        self.0 & bit != 0
    }
    fn set(&mut self, bit: u8) {
        self.0 |= bit;
    }
    /// Clears `bit`; true if it was set.
    fn take(&mut self, bit: u8) -> bool {
        let was = self.has(bit);
        self.0 &= !bit;
        was
    }
}

/// The system lane's queues, allocated on the first entry other than a
/// (re)start.
pub(crate) type QueuesBox = Option<Box<Queues>>;

#[derive(Default)]
pub(crate) struct Queues {
    control: VecDeque<Control>,
    signals: VecDeque<Signal>,
}

impl<'a> SystemQueues<'a> {
    /// The lane made of `flags` and `queues`.
    pub(crate) fn new(flags: &'a mut SystemFlags, queues: &'a mut QueuesBox) -> Self {
        SystemQueues { flags, queues }
    }

    pub(crate) fn push_control(&mut self, c: Control) {
        match c {
            Control::Start => self.flags.set(START),
            Control::Stop(ExitReason::Stopped)
                if !self.flags.has(STOP)
                    && self.queues.as_ref().is_none_or(|q| q.control.is_empty()) =>
            {
                self.flags.set(STOP)
            }
            c => self.queues().control.push_back(c),
        }
    }

    pub(crate) fn push_signal(&mut self, s: Signal) {
        self.queues().signals.push_back(s);
    }

    /// The next control message, a (re)start first.
    pub(crate) fn pop_control(&mut self) -> Option<Control> {
        if self.flags.take(START) {
            return Some(Control::Start);
        }
        if self.flags.take(STOP) {
            return Some(Control::Stop(ExitReason::Stopped));
        }
        let c = self.queues.as_mut()?.control.pop_front();
        self.free_if_empty();
        c
    }

    pub(crate) fn pop_signal(&mut self) -> Option<Signal> {
        let s = self.queues.as_mut()?.signals.pop_front();
        self.free_if_empty();
        s
    }

    pub(crate) fn control_len(&self) -> usize {
        usize::from(self.flags.has(START))
            + usize::from(self.flags.has(STOP))
            + self.queues.as_ref().map_or(0, |q| q.control.len())
    }

    pub(crate) fn signal_len(&self) -> usize {
        self.queues.as_ref().map_or(0, |q| q.signals.len())
    }

    // The lock-free mailbox reads whether each queue is empty, mirrored in
    // an atomic byte, instead; the tests still ask.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        !self.flags.has(START) && !self.flags.has(STOP) && self.queues.is_none()
    }

    /// Drops everything queued and marks the lane closed (the mailbox is
    /// closing).
    pub(crate) fn close(&mut self) {
        self.flags.0 = CLOSED;
        *self.queues = None;
    }

    /// True once [`SystemQueues::close`] has run.
    pub(crate) fn is_closed(&self) -> bool {
        self.flags.has(CLOSED)
    }

    fn queues(&mut self) -> &mut Queues {
        self.queues.get_or_insert_with(Box::default)
    }

    fn free_if_empty(&mut self) {
        if self
            .queues
            .as_ref()
            .is_some_and(|q| q.control.is_empty() && q.signals.is_empty())
        {
            *self.queues = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(c: Option<Control>) -> Option<String> {
        c.map(|c| format!("{c:?}"))
    }

    #[test]
    fn a_start_goes_first_and_allocates_nothing() {
        let (mut flags, mut queues) = (SystemFlags::default(), None);
        let mut q = SystemQueues::new(&mut flags, &mut queues);
        q.push_control(Control::ChildTerminated(ActorId(3)));
        q.push_control(Control::Start);
        assert_eq!(q.control_len(), 2);
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Start"));
        assert_eq!(
            kind(q.pop_control()).as_deref(),
            Some("ChildTerminated(ActorId(3))")
        );
        assert!(q.is_empty() && q.queues.is_none(), "freed once empty");
        q.push_control(Control::Start);
        assert!(q.queues.is_none(), "a start alone allocates nothing");
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Start"));
        assert_eq!(kind(q.pop_control()), None);
        assert!(q.is_empty());
    }

    #[test]
    fn control_and_signals_keep_their_own_fifo_order() {
        let (mut flags, mut queues) = (SystemFlags::default(), None);
        let mut q = SystemQueues::new(&mut flags, &mut queues);
        q.push_signal(Signal::Timer(TimerId(1)));
        q.push_control(Control::Stop(ExitReason::Stopped));
        q.push_signal(Signal::Timer(TimerId(2)));
        q.push_control(Control::Restart(1));
        assert_eq!((q.control_len(), q.signal_len()), (2, 2));
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Stop(Stopped)"));
        assert!(matches!(q.pop_signal(), Some(Signal::Timer(TimerId(1)))));
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Restart(1)"));
        assert_eq!(kind(q.pop_control()), None);
        assert!(!q.is_empty(), "a signal is still queued");
        assert!(matches!(q.pop_signal(), Some(Signal::Timer(TimerId(2)))));
        assert!(q.pop_signal().is_none());
        assert!(q.is_empty() && q.queues.is_none());
    }

    #[test]
    fn close_drops_everything() {
        let (mut flags, mut queues) = (SystemFlags::default(), None);
        let mut q = SystemQueues::new(&mut flags, &mut queues);
        q.push_control(Control::Start);
        q.push_signal(Signal::Timer(TimerId(1)));
        assert!(!q.is_closed());
        q.close();
        assert!(q.is_empty() && q.is_closed());
        assert_eq!((q.control_len(), q.signal_len()), (0, 0));
        assert!(q.pop_control().is_none() && q.pop_signal().is_none());
    }

    #[test]
    fn a_plain_stop_allocates_nothing_and_keeps_its_place() {
        let (mut flags, mut queues) = (SystemFlags::default(), None);
        let mut q = SystemQueues::new(&mut flags, &mut queues);
        q.push_control(Control::Start);
        q.push_control(Control::Stop(ExitReason::Stopped));
        assert!(
            q.queues.is_none(),
            "a start and a plain stop allocate nothing"
        );
        assert_eq!(q.control_len(), 2);
        // Later control messages queue behind the flagged stop, a second
        // stop among them.
        q.push_control(Control::ChildTerminated(ActorId(7)));
        q.push_control(Control::Stop(ExitReason::Stopped));
        q.push_control(Control::Stop(ExitReason::Failed("x".into())));
        assert_eq!(q.control_len(), 5);
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Start"));
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Stop(Stopped)"));
        assert_eq!(
            kind(q.pop_control()).as_deref(),
            Some("ChildTerminated(ActorId(7))")
        );
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Stop(Stopped)"));
        assert_eq!(
            kind(q.pop_control()).as_deref(),
            Some("Stop(Failed(\"x\"))")
        );
        assert_eq!(kind(q.pop_control()), None);
        assert!(q.is_empty() && q.queues.is_none());
        // A stop behind a queued control message waits its turn.
        q.push_control(Control::Restart(2));
        q.push_control(Control::Stop(ExitReason::Stopped));
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Restart(2)"));
        assert_eq!(kind(q.pop_control()).as_deref(), Some("Stop(Stopped)"));
        assert!(q.is_empty());
        // Closing drops a flagged stop.
        q.push_control(Control::Stop(ExitReason::Stopped));
        q.close();
        assert_eq!(q.control_len(), 0);
        assert!(q.pop_control().is_none());
    }

    #[test]
    fn an_idle_lane_is_one_word_and_one_byte() {
        // The mailbox keeps the flags beside its other bytes.
        assert_eq!(std::mem::size_of::<QueuesBox>(), 8);
        assert_eq!(std::mem::size_of::<SystemFlags>(), 1);
    }
}
