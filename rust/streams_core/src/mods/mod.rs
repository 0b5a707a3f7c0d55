//! STREAMS modules written against the core API only (no platform code), so that they are
//! tested on the host and, unchanged, as KUnit in the kernel, like the executive itself.
//!
//! - [`bufmod`]: the Solaris bufmod(7M) buffering module (`I_PUSH "bufmod"`).
//!
//! The platform registers their streamtabs in its module registry (`fmodsw`); in `streams.ko`
//! that is `registry()` in `rust/modules/streams.rs`.

pub mod bufmod;
