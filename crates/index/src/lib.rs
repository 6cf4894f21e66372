//! tempora-index (stub)
