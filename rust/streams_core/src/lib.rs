//! The STREAMS executive (SVR4.2 MP STREAMS, after Linux Fast-STREAMS), in safe `no_std` Rust.
//!
//! This file is the crate root for cargo only. The kernel module `streams.ko` mounts the same
//! module files at its own root (`rust/modules/streams.rs`), so `crate::sys`, `crate::msg`, …
//! name the same code in both builds. Keep the two module lists identical (a host test checks).
//!
//! Map (SVR4 names in parentheses):
//! - [`msg`]: messages, `Msg` (mblk_t/dblk_t), allocb, dupb, copyb, pullupmsg, …
//! - [`queue`]: one queue (queue_t/qband): putq, getq, flow control, bands.
//! - [`stream`]: a Stream of queue pairs, modules and drivers (streamtab/qinit/module_info),
//!   putnext, qreply, canputnext, back-enable, push/pop, registration.
//! - [`sth`]: the Stream head (read, write, putmsg, getmsg, ioctl, poll) as a state machine.
//! - [`sched`]: qenable run lists and the service-procedure runners.
//! - [`perim`]: a Stream's perimeter: its lock, its inbound gate (puts and back-enables from
//!   other Streams and contexts), the run protocol and flow control across perimeters.
//! - [`errno`]: the errno values the executive reports.
//! - [`limits`]: the tunable limits (strmsgsz, strctlsz, the unprivileged hiwat cap, the
//!   block limit of a queue).
//! - [`mods`]: ready-made modules on the core API (bufmod).
//! - [`sys`]: the platform seam (allocation); [`ktest`]: tests shared with KUnit.
#![no_std]
#![deny(unsafe_code)]

#[allow(unsafe_code)] // the seam's primitives; see the module docs
pub mod sys;

pub mod errno;
pub mod ktest;
pub mod limits;
pub mod mods;
pub mod msg;
pub mod perim;
pub mod queue;
pub mod sched;
pub mod sth;
pub mod stream;
