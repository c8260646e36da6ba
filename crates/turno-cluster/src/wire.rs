//! What crosses the wire: envelopes, the codec, and the registry of message
//! types.
//!
//! Every payload a node publishes is one [`Envelope`]: a codec tag byte,
//! then the envelope encoded with that codec. The default codec is
//! [postcard](https://docs.rs/postcard) (compact, varint integers);
//! [`Codec::Json`] writes the same envelope as JSON for debugging (a
//! `nats sub 'turno.>'` shows it readable). A receiver reads the tag, so
//! nodes with different codecs talk to each other.
//!
//! A user message travels inside the envelope as bytes of its own, encoded
//! with the same codec, under the **name** its type was registered with
//! ([`Registry`]). A receiver that has no such name for the target actor
//! answers [`WireError::Unregistered`]; bytes that do not decode as the
//! registered type give [`WireError::Undecodable`]. Neither panics.
//!
//! ```
//! use turno_cluster::wire::{Codec, Registry, WireError};
//!
//! let mut reg = Registry::new();
//! reg.register::<u64>("count").unwrap();
//! let bytes = reg.encode(Codec::Postcard, &7u64).unwrap();
//! assert_eq!(Codec::Postcard.decode::<u64>(&bytes.1).unwrap(), 7);
//! assert!(matches!(reg.encode(Codec::Json, &"text"), Err(WireError::Unregistered(_))));
//! ```

use std::any::{type_name, TypeId};
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use turno::{ExitReason, Verdict, VerdictKind};

/// A typed error of the wire: nothing undecodable or unknown is ever
/// delivered, and nothing of it panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The message type has no registered name (sender side), or the
    /// target actor takes no message of that name (receiver side).
    #[error("message type {0} is not registered")]
    Unregistered(String),
    /// A name registered twice, for two different types.
    #[error("message name {0:?} is already registered for another type")]
    Duplicate(String),
    /// Bytes that do not decode as what they claim to be.
    #[error("undecodable {what}: {detail}")]
    Undecodable {
        /// What was being decoded (an envelope, a message type's name).
        what: String,
        /// The codec's word for it.
        detail: String,
    },
    /// A value the codec could not encode.
    #[error("cannot encode: {0}")]
    Encode(String),
}

/// The codec of envelopes and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Codec {
    /// postcard: compact binary (the default).
    #[default]
    Postcard,
    /// JSON, for reading the traffic while debugging.
    Json,
}

impl Codec {
    fn tag(self) -> u8 {
        match self {
            Codec::Postcard => 0,
            Codec::Json => 1,
        }
    }

    fn from_tag(t: u8) -> Option<Codec> {
        match t {
            0 => Some(Codec::Postcard),
            1 => Some(Codec::Json),
            _ => None,
        }
    }

    /// Encodes a value.
    pub fn encode<T: Serialize + ?Sized>(self, v: &T) -> Result<Vec<u8>, WireError> {
        match self {
            Codec::Postcard => {
                postcard::to_allocvec(v).map_err(|e| WireError::Encode(e.to_string()))
            }
            Codec::Json => serde_json::to_vec(v).map_err(|e| WireError::Encode(e.to_string())),
        }
    }

    /// Decodes a value.
    pub fn decode<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T, WireError> {
        let undecodable = |detail: String| WireError::Undecodable {
            what: type_name::<T>().to_owned(),
            detail,
        };
        match self {
            Codec::Postcard => postcard::from_bytes(bytes).map_err(|e| undecodable(e.to_string())),
            Codec::Json => serde_json::from_slice(bytes).map_err(|e| undecodable(e.to_string())),
        }
    }
}

/// A node of the cluster at one of its starts: its name and incarnation (a
/// new, larger number each start).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeRef {
    /// The node's name.
    pub name: String,
    /// The incarnation.
    pub inc: u64,
}

/// A mailbox's verdict as it crosses the wire: [`VerdictKind`] with the
/// room left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WireVerdict {
    /// See [`Verdict::Enqueued`].
    Enqueued {
        /// Room left, `None` for an unbounded mailbox.
        remaining: Option<u64>,
    },
    /// See [`Verdict::Evicting`].
    Evicting,
    /// See [`Verdict::Dropped`].
    Dropped,
    /// See [`Verdict::Rejected`].
    Rejected,
    /// See [`Verdict::Full`].
    Full,
    /// See [`Verdict::Closed`]; also no actor at that path, and a message
    /// the actor does not take (both dead letters).
    Closed,
}

impl WireVerdict {
    /// The verdict of a local send, without its payload.
    pub fn of<M>(v: &Verdict<M>) -> WireVerdict {
        match v {
            Verdict::Enqueued { remaining } => WireVerdict::Enqueued {
                remaining: remaining.map(|r| r as u64),
            },
            Verdict::Evicting => WireVerdict::Evicting,
            Verdict::Dropped(_) => WireVerdict::Dropped,
            Verdict::Rejected(_) => WireVerdict::Rejected,
            Verdict::Full(_) => WireVerdict::Full,
            Verdict::Closed(_) => WireVerdict::Closed,
        }
    }

    /// The payload-free kind.
    pub fn kind(self) -> VerdictKind {
        match self {
            WireVerdict::Enqueued { .. } => VerdictKind::Enqueued,
            WireVerdict::Evicting => VerdictKind::Evicting,
            WireVerdict::Dropped => VerdictKind::Dropped,
            WireVerdict::Rejected => VerdictKind::Rejected,
            WireVerdict::Full => VerdictKind::Full,
            WireVerdict::Closed => VerdictKind::Closed,
        }
    }

    /// True when the message is now queued.
    pub fn is_enqueued(self) -> bool {
        matches!(self, WireVerdict::Enqueued { .. } | WireVerdict::Evicting)
    }
}

/// Why a remote actor terminated, as its remote watchers learn it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RemoteExit {
    /// The actor stopped: asked to, by itself, its supervisor or the system
    /// ([`ExitReason::Stopped`]).
    Stopped,
    /// The actor failed and its supervisor stopped it or gave up
    /// ([`ExitReason::Failed`], with the failure's text).
    Failed(String),
    /// No actor lives at that path on that node.
    NoSuchActor,
    /// The node was declared down (missed heartbeats), or a newer
    /// incarnation of it appeared.
    NodeDown(NodeRef),
}

impl From<&ExitReason> for RemoteExit {
    fn from(r: &ExitReason) -> Self {
        match r {
            ExitReason::Stopped => RemoteExit::Stopped,
            ExitReason::Failed(e) => RemoteExit::Failed(e.clone()),
        }
    }
}

/// One published payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending node.
    pub from: NodeRef,
    /// What it carries.
    pub body: Body,
}

/// What an envelope carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Body {
    /// A fire-and-forget message, on an actor subject. `seq` numbers the
    /// sender's stream to the target's incarnation `to_inc`.
    Tell {
        /// The target node's incarnation the sender knows.
        to_inc: u64,
        /// The position in the sender's stream to that incarnation (from 1).
        seq: u64,
        /// The message type's registered name.
        ty: String,
        /// The message, encoded.
        msg: Vec<u8>,
    },
    /// A send that asks for the verdict, on an actor subject, with a reply
    /// subject.
    Send {
        /// The request id (the reply subject says it too).
        req: u64,
        /// The message type's registered name.
        ty: String,
        /// The message, encoded.
        msg: Vec<u8>,
    },
    /// A request, on an actor subject, with a reply subject.
    Ask {
        /// The request id.
        req: u64,
        /// The request type's registered name.
        ty: String,
        /// The request, encoded.
        msg: Vec<u8>,
    },
    /// The answer to a `Send`, or to an `Ask` that was not enqueued.
    Verdict {
        /// The asker's incarnation.
        inc: u64,
        /// The request id.
        req: u64,
        /// What the mailbox did.
        verdict: WireVerdict,
    },
    /// The reply to an `Ask`.
    Reply {
        /// The asker's incarnation.
        inc: u64,
        /// The request id.
        req: u64,
        /// The reply, encoded.
        msg: Vec<u8>,
    },
    /// A node's heartbeat.
    Heartbeat {
        /// The incarnations this node has declared down, so that a paused
        /// node learns it was declared down and comes back as a new one.
        down: Vec<NodeRef>,
    },
    /// Watch the actor at `path` (system subject).
    Watch {
        /// The watched path.
        path: String,
        /// The watcher's id at the watching node.
        watch: u64,
    },
    /// The actor a watch named has terminated (system subject).
    Terminated {
        /// The watcher's id.
        watch: u64,
        /// Why.
        reason: RemoteExit,
    },
    /// The tail of the sender's tell stream to incarnation `to_inc` (sent
    /// with each heartbeat, on the receiver's tail subject, behind the
    /// tells): what the receiver has not seen up to `seq` is lost.
    Tail {
        /// The receiver's incarnation the stream is for.
        to_inc: u64,
        /// The last sequence number sent.
        seq: u64,
    },
}

impl Envelope {
    /// The bytes to publish.
    pub fn to_bytes(&self, codec: Codec) -> Result<Vec<u8>, WireError> {
        let mut out = vec![codec.tag()];
        out.extend(codec.encode(self)?);
        Ok(out)
    }

    /// Reads published bytes; the codec is the one their tag names.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Codec, Envelope), WireError> {
        let undecodable = |d: &str| WireError::Undecodable {
            what: "envelope".into(),
            detail: d.into(),
        };
        let (&tag, rest) = bytes.split_first().ok_or_else(|| undecodable("empty"))?;
        let codec = Codec::from_tag(tag).ok_or_else(|| undecodable("unknown codec tag"))?;
        Ok((codec, codec.decode(rest)?))
    }
}

/// The names of message types that may cross the wire. A type not in it
/// is refused on both sides with [`WireError::Unregistered`]: nothing is
/// serialized by accident, and a receiver never guesses a type.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    by_type: HashMap<TypeId, String>,
    by_name: HashMap<String, TypeId>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers `T` under `name` (stable across builds: it is what the wire
    /// carries). Registering the same type under the same name again is a
    /// no-op; a name taken by another type, or a second name for one type,
    /// is [`WireError::Duplicate`].
    pub fn register<T: 'static>(&mut self, name: &str) -> Result<(), WireError> {
        let id = TypeId::of::<T>();
        match (self.by_type.get(&id), self.by_name.get(name)) {
            (Some(n), Some(t)) if n == name && *t == id => Ok(()),
            (None, None) => {
                self.by_type.insert(id, name.to_owned());
                self.by_name.insert(name.to_owned(), id);
                Ok(())
            }
            _ => Err(WireError::Duplicate(name.to_owned())),
        }
    }

    /// The name `T` was registered with.
    pub fn name_of<T: 'static>(&self) -> Result<&str, WireError> {
        self.by_type
            .get(&TypeId::of::<T>())
            .map(String::as_str)
            .ok_or_else(|| WireError::Unregistered(type_name::<T>().to_owned()))
    }

    /// Encodes a registered value: its name and bytes.
    pub fn encode<T: Serialize + 'static>(
        &self,
        codec: Codec,
        v: &T,
    ) -> Result<(String, Vec<u8>), WireError> {
        let name = self.name_of::<T>()?.to_owned();
        Ok((name, codec.encode(v)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Order {
        id: u64,
        item: String,
    }

    fn envelope() -> Envelope {
        Envelope {
            from: NodeRef {
                name: "n.1".into(),
                inc: 3,
            },
            body: Body::Tell {
                to_inc: 4,
                seq: 9,
                ty: "order".into(),
                msg: Codec::Postcard
                    .encode(&Order {
                        id: 1,
                        item: "tea".into(),
                    })
                    .unwrap(),
            },
        }
    }

    #[test]
    fn both_codecs_round_trip_and_the_tag_says_which() {
        for codec in [Codec::Postcard, Codec::Json] {
            let bytes = envelope().to_bytes(codec).unwrap();
            assert_eq!(Envelope::from_bytes(&bytes).unwrap(), (codec, envelope()));
        }
        let compact = envelope().to_bytes(Codec::Postcard).unwrap();
        let json = envelope().to_bytes(Codec::Json).unwrap();
        assert!(
            compact.len() * 2 < json.len(),
            "{} vs {}",
            compact.len(),
            json.len()
        );
        assert!(std::str::from_utf8(&json[1..])
            .unwrap()
            .contains("\"Tell\""));
    }

    #[test]
    fn garbage_is_a_typed_error_not_a_panic() {
        assert!(matches!(
            Envelope::from_bytes(&[]),
            Err(WireError::Undecodable { .. })
        ));
        assert!(matches!(
            Envelope::from_bytes(&[9, 1, 2]),
            Err(WireError::Undecodable { .. })
        ));
        assert!(matches!(
            Envelope::from_bytes(&[0, 0xff, 0xff]),
            Err(WireError::Undecodable { .. })
        ));
        assert!(matches!(
            Envelope::from_bytes(&[1, b'{']),
            Err(WireError::Undecodable { .. })
        ));
        let e = Codec::Postcard.decode::<Order>(&[1]).unwrap_err();
        assert!(
            matches!(e, WireError::Undecodable { ref what, .. } if what.contains("Order")),
            "{e}"
        );
    }

    #[test]
    fn the_registry_names_types_once() {
        let mut r = Registry::new();
        r.register::<Order>("order").unwrap();
        r.register::<Order>("order").unwrap();
        assert_eq!(
            r.register::<u32>("order"),
            Err(WireError::Duplicate("order".into()))
        );
        assert_eq!(
            r.register::<Order>("other"),
            Err(WireError::Duplicate("other".into()))
        );
        assert_eq!(r.name_of::<Order>().unwrap(), "order");
        assert!(matches!(r.name_of::<u32>(), Err(WireError::Unregistered(n)) if n == "u32"));
    }
}
