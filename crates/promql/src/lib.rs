//! PromQL evaluation.
