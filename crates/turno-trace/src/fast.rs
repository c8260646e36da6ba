//! The fast decoder: a well-formed event line straight from its bytes to
//! its typed [`Event`], in one pass, nothing buffered.
//!
//! serde's derive for an internally tagged enum (`ActorEvent`, `JsEvent`:
//! `{"kind":"enqueue",...}`) cannot know the variant before it has seen
//! the tag, so it buffers every field of the line into serde's `Content`
//! and decodes again from there; the envelope (`seq`, `t_ns`, `js_stack`,
//! `loop` beside the flattened kind) buffered every field once more. Every
//! writer puts `kind` before the kind's fields, so here the line's map is
//! read key by key: the envelope fields are taken as they come, and once
//! `kind` is known the rest of the map is handed straight to that
//! variant's derived field visitor (a remote, externally tagged mirror of
//! each enum, [`ActorEventDe`] and [`JsEventDe`], which the compiler
//! checks against the enum: same variants, same fields, same types).
//!
//! It only ever decides for lines the checked decoder (in `reader.rs`)
//! accepts, with the same event; anything it is unsure of (a field before
//! `kind`, a duplicate key, an escaped key, an unknown kind or field, a bad
//! value)
//! makes it give up and leaves the line to the checked decoder, which
//! names the line and field. Property tests in `reader.rs` hold the two
//! together for every kind of both families.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, VariantAccess, Visitor,
};
use serde::Deserialize;
use serde_json::Value;

use crate::actor::{
    ActorEvent, ChartStateDef, ChartTransitionDef, DeadLetterReason, Dropped, EventOrigin,
    HistoryDepth, Lane, RemoteReceived, RemoteSendKind, StaleReason, StateKind, TurnKind,
};
use crate::event::{Event, Format, Kind};
use crate::ids::{ActorId, AnimationId, EntryId, PromiseId, RequestId, TimerId};
use crate::js::{
    AnimationRef, DrivenBy, JsEvent, MainThread, Phase, PromiseState, Queue, Stream, TaskSource,
};
use crate::policy::{DropPolicy, Policy};

/// Decodes a well-formed line of a known kind, or gives up (`None`).
pub(crate) fn decode(format: Format, line: &[u8]) -> Option<Event> {
    // One check of the whole line (as the checked decoder makes) spares
    // serde_json checking every string it borrows one by one.
    let text = std::str::from_utf8(line).ok()?;
    match format {
        Format::Turno => serde_json::from_str::<Line<ActorFamily>>(text).map(|l| l.0),
        Format::TurnoJs => serde_json::from_str::<Line<JsFamily>>(text).map(|l| l.0),
    }
    .ok()
}

/// A family's kinds: how the fields after `kind` become its event.
trait Family {
    fn decode<'de, A: MapAccess<'de>>(tag: &'de str, rest: Rest<'_, A>) -> Result<Kind, A::Error>;
}

struct ActorFamily;
struct JsFamily;

impl Family for ActorFamily {
    fn decode<'de, A: MapAccess<'de>>(tag: &'de str, rest: Rest<'_, A>) -> Result<Kind, A::Error> {
        ActorEventDe::deserialize(Variant { tag, rest }).map(Kind::Actor)
    }
}

impl Family for JsFamily {
    fn decode<'de, A: MapAccess<'de>>(tag: &'de str, rest: Rest<'_, A>) -> Result<Kind, A::Error> {
        JsEventDe::deserialize(Variant { tag, rest }).map(Kind::Js)
    }
}

/// One event line of family `F`.
struct Line<F>(Event, PhantomData<F>);

impl<'de, F: Family> Deserialize<'de> for Line<F> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LineVisitor::<F>(PhantomData))
            .map(|e| Line(e, PhantomData))
    }
}

/// The envelope's fields, each set at most once.
#[derive(Default)]
struct Envelope {
    seq: Option<u64>,
    t_ns: Option<u64>,
    js_stack: Option<Option<Vec<String>>>,
    loop_id: Option<Option<u32>>,
    node: Option<Option<String>>,
}

impl Envelope {
    /// Takes `key`'s value if it is an envelope field (true), refusing a
    /// second one: the checked decoder keeps the last of duplicate keys,
    /// this one leaves such a line to it.
    fn take<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        fn once<T, E: de::Error>(slot: &mut Option<T>, v: T, key: &str) -> Result<(), E> {
            match slot.replace(v) {
                None => Ok(()),
                Some(_) => Err(E::custom(format_args!("duplicate `{key}`"))),
            }
        }
        match key {
            "seq" => once(&mut self.seq, map.next_value()?, key)?,
            "t_ns" => once(&mut self.t_ns, map.next_value()?, key)?,
            "js_stack" => once(&mut self.js_stack, map.next_value()?, key)?,
            "loop" => once(&mut self.loop_id, map.next_value()?, key)?,
            "node" => once(&mut self.node, map.next_value()?, key)?,
            "kind" => return Err(de::Error::custom("duplicate `kind`")),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

struct LineVisitor<F>(PhantomData<F>);

impl<'de, F: Family> Visitor<'de> for LineVisitor<F> {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event line")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut env = Envelope::default();
        let kind = loop {
            let Some(key) = map.next_key::<&'de str>()? else {
                return Err(de::Error::missing_field("kind"));
            };
            if key == "kind" {
                let tag = map.next_value::<&'de str>()?;
                break F::decode(
                    tag,
                    Rest {
                        map: &mut map,
                        env: &mut env,
                    },
                )?;
            }
            if !env.take(key, &mut map)? {
                return Err(de::Error::custom("a kind's field before `kind`"));
            }
        };
        Ok(Event {
            seq: env.seq.ok_or_else(|| de::Error::missing_field("seq"))?,
            t_ns: env.t_ns.ok_or_else(|| de::Error::missing_field("t_ns"))?,
            kind,
            js_stack: env.js_stack.flatten(),
            loop_id: env.loop_id.flatten(),
            node: env.node.flatten(),
        })
    }
}

/// The map after `kind`: the kind's fields, with envelope fields taken
/// out as they pass.
struct Rest<'a, A> {
    map: &'a mut A,
    env: &'a mut Envelope,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Rest<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<&'de str>()? else {
                return Ok(None);
            };
            if !self.env.take(key, self.map)? {
                return seed
                    .deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some);
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// The kind as an externally tagged enum: the tag already read, the
/// variant's fields still in the map.
struct Variant<'a, 'de, A> {
    tag: &'de str,
    rest: Rest<'a, A>,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Variant<'_, 'de, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a kind decodes only as an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

impl<'a, 'de, A: MapAccess<'de>> EnumAccess<'de> for Variant<'a, 'de, A> {
    type Error = A::Error;
    type Variant = Rest<'a, A>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Rest<'a, A>), A::Error> {
        let v = seed.deserialize(BorrowedStrDeserializer::new(self.tag))?;
        Ok((v, self.rest))
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Rest<'_, A> {
    type Error = A::Error;

    /// A kind without fields takes none: a field there is unknown (see
    /// the mirrors' `deny_unknown_fields`), left to the checked decoder.
    fn unit_variant(mut self) -> Result<(), A::Error> {
        match self.next_key::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(de::Error::custom("a field on a kind that has none")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, A::Error> {
        Err(de::Error::custom("no kind is a newtype"))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("no kind is a tuple"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }
}

// The mirrors. Only what decoding needs is repeated (variant and field
// names, `default`); a mirror that is stricter than its enum only sends
// lines to the checked decoder, and one that is laxer is caught by the
// property tests. Unknown fields are refused (`deny_unknown_fields`), here
// and in the structs inside events: serde_json skips an ignored value
// without the checks it makes when it parses one (nesting depth, numbers
// out of range, lone surrogates), and the checked decoder parses every
// value of the line.

#[derive(Deserialize)]
#[serde(remote = "ChartStateDef", deny_unknown_fields)]
struct ChartStateDefDe {
    id: String,
    #[serde(default)]
    parent: Option<String>,
    kind: StateKind,
    #[serde(default)]
    history: Option<HistoryDepth>,
    #[serde(default)]
    initial: Option<String>,
}

#[derive(Deserialize)]
#[serde(remote = "ChartTransitionDef", deny_unknown_fields)]
struct ChartTransitionDefDe {
    source: String,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    guard: Option<String>,
    #[serde(default)]
    delay: Option<String>,
    #[serde(default)]
    actions: Vec<String>,
}

#[derive(Deserialize)]
#[serde(remote = "AnimationRef", deny_unknown_fields)]
struct AnimationRefDe {
    animation: AnimationId,
    label: String,
}

/// A list of a remote mirror's type.
macro_rules! strict_list {
    ($fn:ident, $ty:ty, $de:literal) => {
        fn $fn<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<$ty>, D::Error> {
            #[derive(Deserialize)]
            struct One(#[serde(with = $de)] $ty);
            Vec::<One>::deserialize(d).map(|v| v.into_iter().map(|o| o.0).collect())
        }
    };
}
strict_list!(states, ChartStateDef, "ChartStateDefDe");
strict_list!(transitions, ChartTransitionDef, "ChartTransitionDefDe");
strict_list!(animations, AnimationRef, "AnimationRefDe");

#[derive(Deserialize)]
#[serde(remote = "ActorEvent", rename_all = "snake_case", deny_unknown_fields)]
enum ActorEventDe {
    Spawn {
        actor: ActorId,
        name: String,
        #[serde(default)]
        path: Option<String>,
        #[serde(default)]
        parent: Option<ActorId>,
        policy: Policy,
    },
    Enqueue {
        actor: ActorId,
        lane: Lane,
        depth: usize,
    },
    Drop {
        actor: ActorId,
        policy: DropPolicy,
        which: Dropped,
    },
    Reject {
        actor: ActorId,
    },
    Full {
        actor: ActorId,
    },
    DeadLetter {
        actor: ActorId,
        reason: DeadLetterReason,
    },
    TurnStart {
        actor: ActorId,
        what: TurnKind,
    },
    TurnEnd {
        actor: ActorId,
        ok: bool,
    },
    Stash {
        actor: ActorId,
        size: usize,
    },
    Unstash {
        actor: ActorId,
        count: usize,
    },
    TimerSet {
        actor: ActorId,
        timer: TimerId,
        deadline_ns: u64,
    },
    TimerFire {
        actor: ActorId,
        timer: TimerId,
    },
    TimerCancel {
        actor: ActorId,
        timer: TimerId,
    },
    Ask {
        actor: ActorId,
        request: RequestId,
        to: ActorId,
    },
    StaleReply {
        actor: ActorId,
        request: RequestId,
        reason: StaleReason,
    },
    Fail {
        actor: ActorId,
        error: String,
    },
    Restart {
        actor: ActorId,
        restarts_in_period: u32,
    },
    Escalate {
        actor: ActorId,
        child: ActorId,
    },
    Stop {
        actor: ActorId,
        reason: String,
    },
    Mute {
        actor: ActorId,
        by: ActorId,
    },
    Unmute {
        actor: ActorId,
    },
    RemoteSend {
        actor: ActorId,
        msg: String,
        how: RemoteSendKind,
        to_node: String,
        to_path: String,
    },
    RemoteWire {
        actor: ActorId,
        msg: String,
        subject: String,
    },
    RemoteReceive {
        actor: ActorId,
        msg: String,
        from_node: String,
        verdict: RemoteReceived,
    },
    ChartDefine {
        actor: ActorId,
        machine: String,
        #[serde(deserialize_with = "states")]
        states: Vec<ChartStateDef>,
        #[serde(default, deserialize_with = "transitions")]
        transitions: Vec<ChartTransitionDef>,
        #[serde(default)]
        root: Option<String>,
        #[serde(default)]
        initial: Option<String>,
        #[serde(default)]
        root_kind: Option<StateKind>,
    },
    ChartEvent {
        actor: ActorId,
        event: String,
        origin: EventOrigin,
    },
    ChartExit {
        actor: ActorId,
        state: String,
    },
    ChartTransition {
        actor: ActorId,
        source: String,
        #[serde(default)]
        event: Option<String>,
        #[serde(default)]
        targets: Vec<String>,
        #[serde(default)]
        index: Option<u32>,
    },
    ChartEnter {
        actor: ActorId,
        state: String,
    },
    StreamOpen {
        stream: ActorId,
        name: String,
        policy: Policy,
    },
    StreamPush {
        stream: ActorId,
        depth: usize,
    },
    StreamDrop {
        stream: ActorId,
        policy: DropPolicy,
        which: Dropped,
    },
    StreamReject {
        stream: ActorId,
    },
    StreamFull {
        stream: ActorId,
    },
    StreamTake {
        stream: ActorId,
        depth: usize,
    },
}

#[derive(Deserialize)]
#[serde(remote = "JsEvent", rename_all = "snake_case", deny_unknown_fields)]
enum JsEventDe {
    StackPush {
        frame: String,
        depth: u32,
    },
    StackPop {
        frame: String,
        depth: u32,
    },
    Enqueue {
        queue: Queue,
        id: EntryId,
        #[serde(default)]
        label: Option<String>,
        #[serde(default)]
        due_ns: Option<u64>,
        #[serde(default)]
        delay_ns: Option<u64>,
        #[serde(default)]
        requested_ns: Option<u64>,
        #[serde(default)]
        repeat: Option<bool>,
        #[serde(default)]
        nesting: Option<u32>,
        #[serde(default)]
        clamped: Option<bool>,
        #[serde(default)]
        source: Option<TaskSource>,
        #[serde(default)]
        timer: Option<EntryId>,
        #[serde(default)]
        frame_due_ns: Option<u64>,
        #[serde(default)]
        from_loop: Option<u32>,
        #[serde(default)]
        message: Option<u64>,
        #[serde(default)]
        input_at_ns: Option<u64>,
    },
    Dequeue {
        queue: Queue,
        id: EntryId,
        #[serde(default)]
        due_ns: Option<u64>,
        #[serde(default)]
        source: Option<TaskSource>,
    },
    Cancel {
        queue: Queue,
        id: EntryId,
    },
    Phase {
        phase: Phase,
        iteration: u64,
    },
    TimeAdvance {
        from_ns: u64,
        to_ns: u64,
    },
    MicrotaskCheckpoint,
    RenderStart {
        frame: u64,
        frame_time_ns: u64,
        #[serde(default)]
        callbacks: Vec<EntryId>,
        #[serde(default, deserialize_with = "animations")]
        animations: Vec<AnimationRef>,
    },
    AnimationStart {
        animation: AnimationId,
        label: String,
        driven_by: DrivenBy,
        #[serde(default)]
        end_ns: Option<u64>,
    },
    AnimationCancel {
        animation: AnimationId,
    },
    CompositorFrame {
        frame_time_ns: u64,
        #[serde(default, deserialize_with = "animations")]
        animations: Vec<AnimationRef>,
        main_thread: MainThread,
        lane: String,
    },
    RenderEnd {
        frame: u64,
    },
    PromiseObserved {
        promise: PromiseId,
        via: String,
    },
    Promise {
        promise: PromiseId,
        state: PromiseState,
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        fulfill_reactions: Option<u64>,
        #[serde(default)]
        reject_reactions: Option<u64>,
        #[serde(default)]
        is_handled: Option<bool>,
    },
    Output {
        stream: Stream,
        text: String,
    },
    Uncaught {
        message: String,
        #[serde(default)]
        location: Option<String>,
    },
    Note {
        text: String,
    },
    BudgetExhausted {
        message: String,
    },
    WorkerStart {
        worker: u32,
        url: String,
        file: String,
        #[serde(default)]
        name: String,
    },
    WorkerError {
        url: String,
        message: String,
    },
    MessagePost {
        to_loop: u32,
        message: u64,
        worker: u32,
    },
    WorkerEnd {
        worker: u32,
        reason: String,
    },
    RunEnd {
        exit_code: i32,
        steps: u64,
    },
}

#[cfg(test)]
mod tests;
