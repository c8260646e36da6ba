//! The cost model: how much virtual time executing JavaScript takes.
//!
//! boa counts every bytecode instruction it executes (its `fuzz` feature,
//! turned on and read by `turno-boa`, exposes the counter; nothing else in
//! boa 0.22's public API sees execution as it happens). The host reads that
//! counter whenever JavaScript calls into it and whenever a host call
//! returns, and moves the virtual clock forward by the instructions executed
//! since the last reading times the cost. So `performance.now()` and
//! `Date.now()` move while code runs, a long task pushes back everything
//! behind it, and a frame boundary that passes during a task is served only
//! after it. All instructions count, including the host prelude's own
//! (`console.log` formatting is work in a real runtime too).
//!
//! Runs stay deterministic: the count depends only on the program.

/// Virtual time per executed boa instruction, kept as an integer number of
/// picoseconds so that clock arithmetic is exact and deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cost {
    picos_per_instruction: u64,
}

/// A `--cost` that is not a finite, non-negative number of nanoseconds (at
/// most one second per instruction).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cost must be a number of nanoseconds per instruction between 0 and 1e9, got {0}")]
pub struct CostError(pub String);

impl Cost {
    /// 10 ns per instruction: V8 runs the seed's microtask loop body (about
    /// 50 boa instructions with the host's wrappers) in about half a
    /// microsecond, so this keeps the seed's orders of magnitude.
    pub const DEFAULT: Cost = Cost {
        picos_per_instruction: 10_000,
    };
    /// JavaScript takes no virtual time (the explorer's behaviour before the
    /// cost model: the clock only jumps between callbacks).
    pub const ZERO: Cost = Cost {
        picos_per_instruction: 0,
    };

    /// `ns` virtual nanoseconds per instruction (fractions allowed, down to
    /// a picosecond).
    ///
    /// ```
    /// use turno_js::Cost;
    /// assert_eq!(Cost::per_instruction_ns(10.0).unwrap(), Cost::DEFAULT);
    /// assert_eq!(Cost::per_instruction_ns(0.5).unwrap().ns_per_instruction(), 0.5);
    /// assert!(Cost::per_instruction_ns(-1.0).is_err());
    /// ```
    pub fn per_instruction_ns(ns: f64) -> Result<Cost, CostError> {
        if !ns.is_finite() || !(0.0..=1e9).contains(&ns) {
            return Err(CostError(ns.to_string()));
        }
        Ok(Cost {
            picos_per_instruction: (ns * 1000.0).round() as u64,
        })
    }

    /// Nanoseconds per instruction.
    pub fn ns_per_instruction(&self) -> f64 {
        self.picos_per_instruction as f64 / 1000.0
    }

    /// Whether JavaScript takes no time at all.
    pub fn is_zero(&self) -> bool {
        self.picos_per_instruction == 0
    }

    /// Picoseconds per instruction.
    pub(crate) fn picos(&self) -> u64 {
        self.picos_per_instruction
    }
}

impl Default for Cost {
    fn default() -> Self {
        Cost::DEFAULT
    }
}

impl std::str::FromStr for Cost {
    type Err = CostError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ns: f64 = s.trim().parse().map_err(|_| CostError(s.to_string()))?;
        Cost::per_instruction_ns(ns)
    }
}
