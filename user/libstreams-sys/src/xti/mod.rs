//! XTI, the X/Open Transport Interface (XNS 5), over TPI providers on rstreams: the C
//! functions of `<xti.h>` (exported by libxnet and libstreams) and a safe Rust API.
//!
//! ```text
//!   C program ── t_*() ──┐            Rust ── xti::Endpoint ──┐
//!                        ffi.rs (pointers → slices)           │
//!                        └──────────── clts.rs ───────────────┘
//!                    state.rs (per-fd record)   tpi.rs (primitives)
//!                        putmsg / getmsg(RS_HIPRI) / I_PEEK
//!                        /dev/streams/clone/udp (TPI, T_CLTS)
//! ```
//!
//! Only connectionless providers are served: the connection-oriented calls return
//! TNOTSUPPORT. See `docs/xti.md`.

pub mod alloc;
pub mod clts;
pub mod consts;
mod endpoint;
pub mod error;
pub mod ffi;
pub mod opt;
pub mod state;
/// The TPI numbers, one file with the driver (`rust/tpi_udp/src/tihdr.rs`).
#[path = "../../../../rust/tpi_udp/src/tihdr.rs"]
pub mod tihdr;
pub mod tpi;
pub mod types;

pub use consts::*;
pub use endpoint::Endpoint;
pub use error::{XtiError, XtiResult};
pub use opt::{options, Opt, OptBuilder};
pub use types::*;

/// The T_CLTS UDP provider's clone device.
pub const UDP_DEVICE: &str = "/dev/streams/clone/udp";
/// The same provider over an in-kernel socket (XTI over sockets, `xtiso-udp`).
pub const XTISO_UDP_DEVICE: &str = "/dev/streams/clone/xtiso-udp";
