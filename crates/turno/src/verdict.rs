//! What a send did: the [`Verdict`] every send returns, so that nothing
//! is lost without the sender being told.

/// What happened to one sent message. Every send returns one; nothing is
/// lost without a verdict.
///
/// Replies to an actor's own requests get no verdict: they are queued
/// whatever the capacity (see [`Policy`](crate::Policy)), and only a keep-newest mailbox
/// may evict one later (counted as a drop).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a send's verdict says whether the message was queued, dropped or handed back"]
pub enum Verdict<M> {
    /// The message is in the mailbox. `remaining` is the room left (`None`:
    /// unbounded); zero is the early warning that the next send will meet the
    /// policy.
    Enqueued {
        /// Free slots after this message, `None` for an unbounded mailbox.
        remaining: Option<usize>,
    },
    /// The message is in the mailbox, which was full (keep-newest): the
    /// receiver evicts its oldest queued message before it takes the next
    /// one. The evicted message is counted as a drop
    /// ([`BufferStats::dropped`](crate::BufferStats::dropped), the `turno_mailbox_dropped_total` metric)
    /// and traced (`drop`, `which: oldest`) when the receiver evicts it;
    /// it is not handed back (senders never take from a mailbox).
    ///
    /// So a keep-newest mailbox holds at most its capacity plus the
    /// messages sent to it during one turn of its receiver (its depth and
    /// `max_depth` count them until they are evicted).
    ///
    /// One eviction per such verdict, except that a sender racing with the
    /// receiver's take may see the mailbox fuller than it was by then: the
    /// receiver never evicts below the capacity, so that verdict's eviction
    /// is not made. A mailbox closed before its receiver comes evicts what
    /// is owed before draining the rest as dead letters.
    Evicting,
    /// The message was lost to the policy (keep-oldest): here it is.
    Dropped(M),
    /// The mailbox is full and rejects: here is the message back.
    Rejected(M),
    /// The mailbox is full and its policy is suspend: wait
    /// ([`Addr::send`](crate::Addr::send), [`Addr::send_blocking`](crate::Addr::send_blocking))
    /// or try again later. Actor senders never see this: they are muted instead.
    Full(M),
    /// The actor has stopped: here is the message back (it was also counted as
    /// a dead letter).
    Closed(M),
}

impl<M> Verdict<M> {
    /// True when the sent message is now queued: [`Verdict::Enqueued`], and
    /// [`Verdict::Evicting`] (a keep-newest send into a full mailbox).
    pub fn is_enqueued(&self) -> bool {
        matches!(self, Verdict::Enqueued { .. } | Verdict::Evicting)
    }

    /// A payload-free summary, handy for logs, counters and tests.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Enqueued { .. } => VerdictKind::Enqueued,
            Verdict::Evicting => VerdictKind::Evicting,
            Verdict::Dropped(_) => VerdictKind::Dropped,
            Verdict::Rejected(_) => VerdictKind::Rejected,
            Verdict::Full(_) => VerdictKind::Full,
            Verdict::Closed(_) => VerdictKind::Closed,
        }
    }
}

/// [`Verdict`] without its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// See [`Verdict::Enqueued`].
    Enqueued,
    /// See [`Verdict::Evicting`].
    Evicting,
    /// See [`Verdict::Dropped`].
    Dropped,
    /// See [`Verdict::Rejected`].
    Rejected,
    /// See [`Verdict::Full`].
    Full,
    /// See [`Verdict::Closed`].
    Closed,
}
