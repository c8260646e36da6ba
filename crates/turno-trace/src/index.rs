//! An index over a trace on disk: one streaming pass validates it, records
//! where the jumps of the inspector land (turns, tasks, render steps) and
//! keeps periodic checkpoints of the reconstructed world, so any step is
//! reached by replaying at most one checkpoint interval.

use std::io::{BufReader, Read, Seek, SeekFrom};

use serde::Serialize;

use crate::actor::ActorEvent;
use crate::event::{Event, Header, Kind};
use crate::js::JsEvent;
use crate::queues::Queues;
use crate::reader::{Position, ReadError, Reader};
use crate::world::World;

/// Checkpoints are at least this many events apart.
pub const CHECKPOINT_INTERVAL: u64 = 1024;

#[derive(Clone, Debug)]
struct Checkpoint {
    /// Events applied in `world`.
    step: u64,
    /// Where event `step` starts.
    pos: Position,
    world: World,
}

/// Steps the inspector can jump to, each the step *after* the event (so
/// the world shown is the one the event produced).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Marks {
    /// `turn_start` of an actor.
    pub turns: Vec<u64>,
    /// The host calling into JavaScript from an empty stack (one task,
    /// callback or microtask job run at top level).
    pub tasks: Vec<u64>,
    /// `render_start`, with the frame's time.
    pub renders: Vec<(u64, u64)>,
    /// `chart_event` (a statechart starts an event).
    pub chart_events: Vec<u64>,
    /// The dedicated workers' event loops, in creation order (from their
    /// `worker_start`): loop 0, the page or main thread, is not listed.
    pub workers: Vec<WorkerMark>,
}

/// A dedicated worker's event loop, as its `worker_start` names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkerMark {
    /// Its loop id.
    pub id: u32,
    /// The `name` option (empty when none).
    pub name: String,
    /// The script file it loaded.
    pub file: String,
    /// The loop that created it.
    pub parent: u32,
}

/// A validated, indexed trace.
#[derive(Debug)]
pub struct Index {
    header: Header,
    len: u64,
    end_t_ns: u64,
    checkpoints: Vec<Checkpoint>,
    marks: Marks,
    error: Option<ReadError>,
    unknown_kinds: u64,
    /// (step, t_ns) at every checkpoint and the end: the timeline's axis.
    times: Vec<(u64, u64)>,
    /// Every actor's mailbox over time.
    queues: Queues,
}

impl Index {
    /// Reads `src` once from its start. Fails only when the header is bad;
    /// a later problem ends the index at the last good event and is kept
    /// as [`Index::error`].
    pub fn build<R: Read + Seek>(src: R) -> Result<Index, ReadError> {
        Self::build_with(src, CHECKPOINT_INTERVAL)
    }

    /// [`Index::build`] with checkpoints at least `interval` (>= 1) events apart.
    pub fn build_with<R: Read + Seek>(mut src: R, interval: u64) -> Result<Index, ReadError> {
        let interval = interval.max(1);
        src.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let mut reader = Reader::new(BufReader::with_capacity(1 << 16, src))?;
        let header = reader.header().clone();
        let mut world = World::new();
        let mut checkpoints = vec![Checkpoint {
            step: 0,
            pos: reader.position(),
            world: world.clone(),
        }];
        let mut times = vec![(0, 0)];
        let mut marks = Marks::default();
        let mut error = None;
        let mut since = 0u64;
        let mut queues = Queues::default();
        loop {
            let pos = reader.position();
            // `weight` walks the world: only once the interval is reached.
            if since >= interval && since >= world.weight() as u64 {
                checkpoints.push(Checkpoint {
                    step: world.step,
                    pos,
                    world: world.clone(),
                });
                times.push((world.step, world.t_ns));
                since = 0;
            }
            let event = match reader.next() {
                None => break,
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    error = Some(e);
                    break;
                }
            };
            world.apply(&event);
            queues.observe(&event, &world);
            since += 1;
            mark(&mut marks, &event, world.step);
        }
        times.push((world.step, world.t_ns));
        Ok(Index {
            header,
            len: world.step,
            end_t_ns: world.t_ns,
            checkpoints,
            marks,
            error,
            unknown_kinds: reader.unknown_kinds(),
            times,
            queues,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Valid events (steps go from 0 to `len`).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the trace has no valid event.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last valid event's time.
    pub fn end_t_ns(&self) -> u64 {
        self.end_t_ns
    }

    /// The first problem after the header, if any.
    pub fn error(&self) -> Option<&ReadError> {
        self.error.as_ref()
    }

    /// Events of kinds this reader does not know.
    pub fn unknown_kinds(&self) -> u64 {
        self.unknown_kinds
    }

    /// The jump targets.
    pub fn marks(&self) -> &Marks {
        &self.marks
    }

    /// (step, t_ns) samples for a timeline.
    pub fn times(&self) -> &[(u64, u64)] {
        &self.times
    }

    /// Every actor's mailbox depth, losses and sojourn times over time,
    /// folded into plots on demand.
    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// How many checkpoints are kept.
    pub fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }

    fn checkpoint_for(&self, step: u64) -> &Checkpoint {
        let i = self.checkpoints.partition_point(|c| c.step <= step);
        &self.checkpoints[i.saturating_sub(1)]
    }

    /// The world after the first `step` events (clamped to `len`), from the
    /// nearest checkpoint. `src` must be the trace the index was built from.
    pub fn world_at<R: Read + Seek>(&self, src: R, step: u64) -> Result<World, ReadError> {
        let step = step.min(self.len);
        let cp = self.checkpoint_for(step);
        let mut world = cp.world.clone();
        if cp.step == step {
            return Ok(world);
        }
        let reader = self.reader_at(src, cp)?;
        for event in reader.take((step - cp.step) as usize) {
            world.apply(&event?);
        }
        Ok(world)
    }

    /// The world after the first `step` events and the event that follows
    /// it (`None` at the end), in one pass from the nearest checkpoint: what
    /// a stepper needs to show step `step + 1` and what that step moved.
    pub fn world_and_next<R: Read + Seek>(
        &self,
        src: R,
        step: u64,
    ) -> Result<(World, Option<Event>), ReadError> {
        let step = step.min(self.len);
        let cp = self.checkpoint_for(step);
        let mut world = cp.world.clone();
        let mut reader = self.reader_at(src, cp)?;
        for _ in cp.step..step {
            match reader.next() {
                Some(e) => world.apply(&e?),
                None => break,
            }
        }
        let next = if step < self.len {
            reader.next().transpose()?
        } else {
            None
        };
        Ok((world, next))
    }

    /// Up to `count` events starting with event `from` (the event at
    /// `from` is the one that leads from step `from` to step `from + 1`).
    pub fn events<R: Read + Seek>(
        &self,
        src: R,
        from: u64,
        count: u64,
    ) -> Result<Vec<Event>, ReadError> {
        let from = from.min(self.len);
        let count = count.min(self.len - from);
        let cp = self.checkpoint_for(from);
        let reader = self.reader_at(src, cp)?;
        reader
            .skip((from - cp.step) as usize)
            .take(count as usize)
            .collect()
    }

    fn reader_at<R: Read + Seek>(
        &self,
        mut src: R,
        cp: &Checkpoint,
    ) -> Result<Reader<BufReader<R>>, ReadError> {
        src.seek(SeekFrom::Start(cp.pos.offset)).map_err(io_err)?;
        Ok(Reader::resume(
            BufReader::with_capacity(1 << 16, src),
            self.header.clone(),
            cp.pos,
        ))
    }
}

fn io_err(e: std::io::Error) -> ReadError {
    ReadError {
        line: 0,
        field: None,
        problem: crate::reader::Problem::Io,
        message: e.to_string(),
    }
}

fn mark(marks: &mut Marks, e: &Event, step: u64) {
    match &e.kind {
        Kind::Actor(ActorEvent::TurnStart { .. }) => marks.turns.push(step),
        Kind::Actor(ActorEvent::ChartEvent { .. }) => marks.chart_events.push(step),
        Kind::Js(JsEvent::StackPush { depth: 1, .. }) => marks.tasks.push(step),
        Kind::Js(JsEvent::RenderStart { frame_time_ns, .. }) => {
            marks.renders.push((step, *frame_time_ns))
        }
        Kind::Js(JsEvent::WorkerStart {
            worker, name, file, ..
        }) => marks.workers.push(WorkerMark {
            id: *worker,
            name: name.clone(),
            file: file.clone(),
            parent: e.loop_id.unwrap_or(0),
        }),
        _ => {}
    }
}
