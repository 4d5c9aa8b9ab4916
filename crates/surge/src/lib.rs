//! surge library: see ARCHITECTURE.md for the module map.
