//! STREAMS modules written against the core API only (no platform code), so that they are
//! tested on the host and, unchanged, as KUnit in the kernel, like the executive itself.
//!
//! - [`bufmod`]: the Solaris bufmod(7M) buffering module (`I_PUSH "bufmod"`).
//! - [`loopdrv`]: the `loop`/`spx` loop-around driver, joined with I_FDINSERT
//!   (`/dev/streams/clone/loop`, `/dev/streams/clone/spx`).
//! - [`mux`]: a small multiplexing driver for I_LINK/I_PLINK (`/dev/streams/clone/mux`).
//!
//! The platform registers their streamtabs in its module registry (`fmodsw`); in `streams.ko`
//! that is `fmodsw()` in `rust/modules/streams.rs`.
//!
//! `loopdrv` and `mux` are test drivers: the kernel compiles them only into the test build of
//! `streams.ko` (`--cfg rstreams_test`, `cargo xtask test`), never into the production one. The
//! host always has them (and every `tests` module), as it always runs the tests.

pub mod bufmod;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
pub mod loopdrv;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
pub mod mux;
