//! Which blocks to compact next.
