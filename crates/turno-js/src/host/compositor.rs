//! The compositor lane (html model): frames that keep coming while the main
//! thread is blocked.
//!
//! An animation of only `transform` and `opacity` (`element.animate(...)`)
//! runs on the compositor in Chromium: its frames are produced at 60 Hz
//! whether or not the main thread is free, so the page looks alive while
//! none of the program's code can run. The host records one
//! `compositor_frame` event per 60 Hz boundary while such an animation is
//! active, stamped with the boundary's time and whether the main thread was
//! busy (the boundary passed while JavaScript ran) or idle (the clock jumped
//! over it between tasks). Main-thread animations (any other property) are
//! named in the `render_start` of the main thread's rendering steps only.
//! Nothing here changes what a program prints: it is trace only.

use std::rc::Rc;

use boa_engine::{Context, JsValue};
use turno_trace::js::{AnimationRef, DrivenBy};
use turno_trace::{AnimationId, JsEvent};

use super::entries::Animation;
use super::state::{Host, State, MS};
use super::support::{arg_u32, Ret};

pub(super) fn n_animation(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = arg_u32(args, 0, ctx)?;
    let label = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let compositor = args.get(2).is_some_and(JsValue::to_boolean);
    let total_ms = args.get(3).cloned().unwrap_or_default().to_number(ctx)?;
    let mut st = host.st.borrow_mut();
    let now = st.now_ns;
    let end_ns = if total_ms.is_finite() {
        Some(now + (total_ms.max(0.0) * MS as f64) as u64)
    } else {
        None
    };
    let driven_by = if compositor {
        DrivenBy::Compositor
    } else {
        DrivenBy::MainThread
    };
    st.ev(JsEvent::AnimationStart {
        animation: AnimationId(u64::from(id)),
        label: label.clone(),
        driven_by,
        end_ns,
    });
    st.animations.push(Animation {
        id,
        label,
        compositor,
        end_ns,
    });
    Ok(JsValue::undefined())
}

pub(super) fn n_cancel_animation(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.animations.len();
    st.animations.retain(|a| a.id != id);
    if st.animations.len() != before {
        st.ev(JsEvent::AnimationCancel {
            animation: AnimationId(u64::from(id)),
        });
    }
    Ok(JsValue::undefined())
}

impl State {
    /// Main-thread animations active now, for `render_start`.
    pub(super) fn main_thread_animations(&self) -> Vec<AnimationRef> {
        let now = self.now_ns;
        self.animations
            .iter()
            .filter(|a| !a.compositor && a.end_ns.is_none_or(|e| e >= now))
            .map(|a| AnimationRef {
                animation: AnimationId(u64::from(a.id)),
                label: a.label.clone(),
            })
            .collect()
    }
}
