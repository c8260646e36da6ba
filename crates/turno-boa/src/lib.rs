//! # turno-boa: boa_engine as the workspace embeds it
//!
//! turno-js (the event-loop explorer) and turno-scxml (the ECMAScript data
//! model) both run JavaScript on [boa](https://boajs.dev). Cargo unifies a
//! dependency's features across a build, so what one of them asks of boa,
//! the other gets. turno-js needs boa's `fuzz` feature: it is boa 0.22's
//! only public view of execution as it happens (an instruction counter that
//! the cost model turns into virtual time). With that feature a context
//! counts instructions *down* from a budget that starts at 0, so a context
//! built the ordinary way cannot evaluate anything.
//!
//! This crate is the one place that knows it: it turns the feature on, and
//! [`build`] gives every context an unlimited instruction budget and the
//! caller's loop-iteration budget (boa's guard against `while (true) {}`).
//! Crates that embed boa build their contexts here, never with
//! `ContextBuilder::build` directly, and read the instruction count with
//! [`instructions_executed`].
//!
//! ```
//! use turno_boa::boa_engine::{Context, Source};
//!
//! let mut ctx = turno_boa::build(Context::builder(), 1_000).unwrap();
//! let before = turno_boa::instructions_executed(&ctx);
//! let v = ctx.eval(Source::from_bytes("let s = 0; for (let i = 0; i < 10; i++) s += i; s")).unwrap();
//! assert_eq!(v.as_number(), Some(45.0));
//! assert!(turno_boa::instructions_executed(&ctx) > before);
//! // The loop budget stops a runaway loop with an error instead of hanging.
//! assert!(ctx.eval(Source::from_bytes("while (true) {}")).is_err());
//! ```

pub use boa_engine;

use boa_engine::context::ContextBuilder;
use boa_engine::{Context, JsResult};

/// Builds the context `builder` describes with the workspace's budgets: no
/// limit on instructions (the counter only measures), and at most
/// `max_loop_iterations` iterations of any one JavaScript loop.
pub fn build(builder: ContextBuilder, max_loop_iterations: u64) -> JsResult<Context> {
    let mut ctx = builder.instructions_remaining(usize::MAX).build()?;
    ctx.runtime_limits_mut()
        .set_loop_iteration_limit(max_loop_iterations);
    Ok(ctx)
}

/// Instructions `ctx` has executed since [`build`] made it.
pub fn instructions_executed(ctx: &Context) -> u64 {
    (usize::MAX - ctx.instructions_remaining()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use boa_engine::Source;

    #[test]
    fn an_ordinary_build_cannot_evaluate_so_build_here() {
        // What the feature does to a context built without this crate: the
        // reason `build` exists.
        let mut plain = Context::builder().build().unwrap();
        assert!(plain.eval(Source::from_bytes("1 + 1")).is_err());
        let mut ours = build(Context::builder(), 10).unwrap();
        assert_eq!(
            ours.eval(Source::from_bytes("1 + 1")).unwrap().as_number(),
            Some(2.0)
        );
    }

    #[test]
    fn the_count_grows_with_the_work() {
        let mut ctx = build(Context::builder(), 1_000_000).unwrap();
        let a = instructions_executed(&ctx);
        ctx.eval(Source::from_bytes("for (let i = 0; i < 10; i++) {}"))
            .unwrap();
        let b = instructions_executed(&ctx);
        ctx.eval(Source::from_bytes("for (let i = 0; i < 1000; i++) {}"))
            .unwrap();
        let c = instructions_executed(&ctx);
        assert!(b > a);
        assert!(c - b > 50 * (b - a), "{a} {b} {c}");
    }

    #[test]
    fn the_loop_budget_is_the_callers() {
        let mut ctx = build(Context::builder(), 100).unwrap();
        assert!(ctx
            .eval(Source::from_bytes("for (let i = 0; i < 99; i++) {}"))
            .is_ok());
        assert!(ctx
            .eval(Source::from_bytes("for (let i = 0; i < 1000; i++) {}"))
            .is_err());
    }
}
