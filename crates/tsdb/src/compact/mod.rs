//! Compaction: turning the head's oldest range into a block, and merging
//! blocks into larger ones (leveled, and vertical for overlaps).

pub mod planner;
