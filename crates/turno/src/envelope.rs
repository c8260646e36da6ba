//! The user lane's entries: a message, or a reply correlated with the
//! request this actor made.

use crate::ids::RequestId;

/// A user-lane entry: a message, or a reply to a request this actor made.
pub(crate) enum Envelope<M> {
    Msg(M),
    Reply(RequestId, M),
}

impl<M> Envelope<M> {
    pub(crate) fn into_msg(self) -> M {
        match self {
            Envelope::Msg(m) | Envelope::Reply(_, m) => m,
        }
    }
}
