//! Streams, modules and drivers: work in progress.
