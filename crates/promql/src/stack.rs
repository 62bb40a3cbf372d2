//! The stack a query's recursion runs on.
//!
//! The parser and the evaluator recurse once per level of the expression
//! tree. A thread's own stack (2 MiB for tokio's and rayon's threads) holds
//! a few hundred levels; [`nesting::MAX_NESTING_DEPTH`] is 5,000. So work
//! that recurses over a query's tree runs through [`with_stack_for`]: if
//! the current stack has less room left than the query's depth needs, the
//! work moves to a stack of that size allocated for it (`stacker`, which
//! maps it with a guard page and unmaps it when the work returns). Shallow
//! queries, nearly all, run where they are.
//!
//! The figures below were measured with every construct nested to the
//! limit, parsed and evaluated (`tests/deep.rs`, which runs each on a
//! 256 KiB thread stack and fails if the sizes fall short), in debug and
//! release builds. Memory is only committed for the part of the stack a
//! query touches: about 2.5 KiB a level in a release build.
//!
//! [`nesting::MAX_NESTING_DEPTH`]: crate::nesting::MAX_NESTING_DEPTH

/// Room every query needs whatever its depth (the evaluator's widest
/// frames, parallel evaluation's set-up, regex compilation).
const BASE_STACK: usize = 1 << 20;

/// Room per level of the expression tree: three to four times the most
/// measured (18 KiB a level in a debug build, 2.5 KiB in a release build,
/// nested function calls being the deepest per level).
const STACK_PER_LEVEL: usize = if cfg!(debug_assertions) {
    64 << 10
} else {
    8 << 10
};

/// The stack a tree `depth` levels deep needs.
fn stack_for(depth: usize) -> usize {
    BASE_STACK.saturating_add(depth.saturating_mul(STACK_PER_LEVEL))
}

/// Runs `f`, which recurses at most `depth` levels deep over an expression
/// tree, with enough stack for it.
pub(crate) fn with_stack_for<R>(depth: usize, f: impl FnOnce() -> R) -> R {
    let need = stack_for(depth);
    stacker::maybe_grow(need, need, f)
}
