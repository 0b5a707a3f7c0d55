//! The STREAMS scheduler: work in progress.
