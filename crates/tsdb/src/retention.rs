//! Which blocks retention deletes.
