//! Shared tests (host `cargo test` and KUnit) of the TPI layer and the `udp` driver: the
//! codecs and the state table on their own (`codec.rs`), and the driver through a real Stream
//! head over an in-memory network (`fake.rs`, `driver.rs`).

pub mod codec;
// The driver suites need FakeNet's static world (see fake.rs): host only.
#[cfg(not(rstreams_kernel))]
pub mod driver;
#[cfg(not(rstreams_kernel))]
pub mod express;
#[cfg(not(rstreams_kernel))]
pub mod fake;
