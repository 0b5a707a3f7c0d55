//! TPI for rstreams: the Transport Provider Interface of a connectionless (T_CLTS) endpoint and
//! the `udp` STREAMS driver, generic over the network below it.
//!
//! A user (XTI's `libxnet`, or putmsg/getmsg directly) talks to the driver in TPI primitives:
//! M_PROTO/M_PCPROTO blocks whose first word says which (`prim.rs`), addresses as
//! `sockaddr_in` (`addr.rs`), options as `t_opthdr` lists (`opt.rs`), in the order the TPI
//! state machine allows (`state.rs`). The driver (`udp.rs`) turns them into calls on a
//! [`Net`] (`net.rs`: the boundary with the kernel side, which owns the kernel UDP sockets);
//! work that may sleep runs outside the Stream lock (`jobs.rs`).
//!
//! The kernel glue registers `static UDP: StreamTab = tpi_udp::streamtab::<KernelNet>(..)` on
//! `/dev/streams/clone/udp`, and the same driver over queued ports (XTI over sockets) on
//! `/dev/streams/clone/xtiso-udp`. This crate has no kernel code: it is compiled by cargo against
//! `streams_core` on the host, and mounted into `streams.ko` next to the core, where
//! `streams_core` names the module's own crate root (paths inside are relative, never
//! `crate::`). `docs/tpi.md` lists what is supported and the test of each.
#![cfg_attr(not(rstreams_kernel), no_std)]
#![cfg_attr(not(rstreams_kernel), deny(unsafe_code))]

pub mod addr;
mod express;
pub mod jobs;
pub mod net;
pub mod opt;
pub mod prim;
pub mod state;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;
pub mod tihdr;
pub mod udp;

pub use net::{
    BindError, BindReq, Inet4, Job, Net, Port, Received, Rx, RxIp, Stats, TxOpts, NSTATS,
};
pub use udp::{streamtab, TSDU_SIZE, UDP_ID, UDP_IOC_STATS, UDP_NAME, XTISO_ID, XTISO_NAME};
