//! The virtual clock of a loop: it moves with the instructions JavaScript
//! executes (the cost model, `cost.rs`) and jumps to the next due event;
//! every move produces the compositor frames it passes (see
//! `compositor.rs`: trace only).
//!
//! Above the core (`state.rs`), below everything that runs JavaScript.

use boa_engine::Context;
use turno_trace::js::{AnimationRef, MainThread};
use turno_trace::{AnimationId, JsEvent};

use super::state::{BudgetKind, Host, State, Stop};

/// Most `compositor_frame` events per run (an infinite animation over an
/// hour of virtual time would otherwise write 216 000 of them).
const MAX_COMPOSITOR_FRAMES: u64 = 20_000;

fn frame_ns(k: u64) -> u64 {
    (k * 1_000_000_000 + 30) / 60
}

impl Host {
    /// Moves the clock forward by the instructions boa executed since the
    /// last sync times the cost (see `cost.rs`). Called whenever JavaScript
    /// calls into the host and whenever a host call returns, so every event
    /// is stamped with the time the code reached it.
    pub(super) fn sync_clock(&self, ctx: &Context) {
        let executed = turno_boa::instructions_executed(ctx);
        let Ok(mut st) = self.st.try_borrow_mut() else {
            return;
        };
        let delta = executed.saturating_sub(st.instr_seen);
        st.instr_seen = executed;
        if delta == 0 || st.cost_picos == 0 {
            return;
        }
        let picos = delta
            .saturating_mul(st.cost_picos)
            .saturating_add(st.frac_picos);
        st.frac_picos = picos % 1000;
        let ns = picos / 1000;
        if ns > 0 {
            let from = st.now_ns;
            st.now_ns = st.now_ns.saturating_add(ns);
            let now = st.now_ns;
            st.clock.set(now);
            st.compositor_frames(from, true);
        }
    }

    pub(super) fn advance_to(&self, t: u64) -> Result<(), Stop> {
        let mut st = self.st.borrow_mut();
        if t > st.max_time_ns {
            return Err(Stop::Budget(BudgetKind::Time { next_ns: t }));
        }
        if t > st.now_ns {
            let from = st.now_ns;
            st.now_ns = t;
            st.clock.set(t);
            st.compositor_frames(from, false);
            st.ev(JsEvent::TimeAdvance {
                from_ns: from,
                to_ns: t,
            });
        }
        Ok(())
    }
}

impl State {
    /// The clock moved from `from` to the current time: one
    /// `compositor_frame` per 60 Hz boundary in between while a compositor
    /// animation is active. `busy`: JavaScript was running.
    pub(super) fn compositor_frames(&mut self, from: u64, busy: bool) {
        if self.animations.is_empty() || self.trace.is_none() {
            return;
        }
        let to = self.now_ns;
        let mut k = from.saturating_mul(60) / 1_000_000_000;
        while frame_ns(k) <= from {
            k += 1;
        }
        while frame_ns(k) <= to {
            let t = frame_ns(k);
            self.animations.retain(|a| a.end_ns.is_none_or(|e| e >= t));
            let active: Vec<_> = self
                .animations
                .iter()
                .filter(|a| a.compositor)
                .map(|a| AnimationRef {
                    animation: AnimationId(u64::from(a.id)),
                    label: a.label.clone(),
                })
                .collect();
            if active.is_empty() {
                if self.animations.iter().all(|a| !a.compositor) {
                    return;
                }
            } else if self.compositor_frame_count < MAX_COMPOSITOR_FRAMES {
                self.compositor_frame_count += 1;
                let main_thread = if busy {
                    MainThread::Busy
                } else {
                    MainThread::Idle
                };
                self.record(
                    t,
                    JsEvent::CompositorFrame {
                        frame_time_ns: t,
                        animations: active,
                        main_thread,
                        lane: "compositor".to_string(),
                    },
                );
            }
            k += 1;
        }
    }
}
