//! tempora-wal (stub)
