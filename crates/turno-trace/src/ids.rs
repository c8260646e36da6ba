//! Typed ids: a number in the trace, a distinct type in Rust, so an actor id
//! cannot be passed where a timer id is meant.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }
    };
}

id!(
    /// An actor (`actor`, `parent`, `by`, `child`, `to`); `0` is the root of
    /// the supervision tree.
    ActorId,
    "#"
);
id!(
    /// A timer set by an actor (same id space as actors).
    TimerId,
    "timer "
);
id!(
    /// A request's correlation id (same id space as actors).
    RequestId,
    "request "
);
id!(
    /// An entry of a JavaScript queue: a microtask, a timer id, an immediate
    /// id, a task, a rAF id (the `id` of `enqueue` / `dequeue` / `cancel`;
    /// unique within its queue).
    EntryId,
    ""
);
id!(
    /// A promise the JavaScript explorer follows (from 1).
    PromiseId,
    "promise "
);
id!(
    /// An animation started with `element.animate(...)` (html).
    AnimationId,
    "animation "
);
