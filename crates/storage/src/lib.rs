//! tempora-storage (stub)
