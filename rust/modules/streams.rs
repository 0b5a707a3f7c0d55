// SPDX-License-Identifier: GPL-2.0
//! `streams.ko`: the STREAMS executive compiled into a Linux 6.12 module.
//!
//! The executive lives in `rust/streams_core` and is tested on the host by cargo. This crate root
//! mounts the *same source files* at its own root (`#[path]` below), so `crate::sys`,
//! `crate::msg`, … mean the same modules in both builds and the kernel runs exactly the code the
//! host tests. `rust/streams_core/src/lib.rs` is the cargo crate root only; the kernel never
//! reads it. The list of mounted modules must match `pub mod` in that file: `cargo xtask test`
//! checks it (`xtask/src/checks.rs`).
//!
//! At load the module registers every shared test table listed in [`suites::SUITES`] as a KUnit
//! suite (`kunit_glue`), so loading it runs the core's tests; unloading removes the suites.

use kernel::c_str;
use kernel::prelude::*;

// --- The executive, from its own source files (keep in step with streams_core/src/lib.rs). ---
// No `deny(unsafe_code)` here: the host build enforces it (lib.rs), and the kernel expansion of
// `sys::box_dyn!` legitimately puts the seam's one unsafe block at its call sites.
#[path = "../streams_core/src/sys.rs"]
pub mod sys;

#[path = "../streams_core/src/errno.rs"]
pub mod errno;
#[path = "../streams_core/src/ktest.rs"]
pub mod ktest;
#[path = "../streams_core/src/mods/mod.rs"]
pub mod mods;
#[path = "../streams_core/src/msg/mod.rs"]
pub mod msg;
#[path = "../streams_core/src/perim/mod.rs"]
pub mod perim;
#[path = "../streams_core/src/queue/mod.rs"]
pub mod queue;
#[path = "../streams_core/src/sched/mod.rs"]
pub mod sched;
#[path = "../streams_core/src/sth/mod.rs"]
pub mod sth;
#[path = "../streams_core/src/stream/mod.rs"]
pub mod stream;

// --- STREAMS pipes (`rust/pipe`): a crate of its own on the host, a module here. Its sources
// name the core `streams_core::…`, which in this crate is the crate itself. ---
extern crate self as streams_core;
#[path = "../pipe/src/lib.rs"]
pub mod pipe;

// --- Kernel glue. ---
mod chardev;
mod connld;
mod dwork;
mod echo;
mod fasync;
mod fattach;
mod fdpass;
mod fifo;
mod iter;
mod kunit_glue;
#[cfg(rstreams_negative_control)]
pub mod negative_control;
mod nuls;
mod pipemod;
mod procfs;
mod runq;
pub mod selftest;
mod sloop;
mod softirq;
mod strdev;
mod strfile;
mod strioctl;
mod strperim;
mod strproc;
mod strrw;
mod strsig;
mod strwait;
mod suites;
mod uio;
mod waitq;
mod weld;
mod xput;

/// The rstreams version (the workspace version in `Cargo.toml`; `cargo xtask` checks they match).
pub const VERSION: &str = "0.1.0";

module! {
    type: Streams,
    name: "streams",
    author: "rstreams",
    description: "SVR4.2 MP STREAMS executive in Rust",
    license: "GPL",
}

struct Streams {
    /// fattach (`streamsattach` mounts); no attachment exists when the module exits.
    _attach: fattach::AttachFs,
    /// `/proc/streams/modules`, then `/proc/streams` (dropped first).
    _proc: procfs::ProcFile<strproc::ModulesProc>,
    /// `/dev/streams/fifo/0` … `3`: STREAMS FIFOs (dropped early: no new opens while the
    /// rest goes away).
    _fifos: KVec<chardev::MiscDevice<strfile::StrFile>>,
    /// `/dev/streams/clone/pipe`: STREAMS pipe ends, welded by I_PIPE (dropped early: no new
    /// opens while the rest goes away).
    _pipe: chardev::MiscDevice<strfile::StrFile>,
    /// `/dev/streams/clone/sloop`.
    _sloop: chardev::MiscDevice<strfile::StrFile>,
    /// `/dev/streams/clone/echo`.
    _echo: chardev::MiscDevice<strfile::StrFile>,
    /// `/dev/streams/clone/nuls`.
    _nuls: chardev::MiscDevice<strfile::StrFile>,
    /// `/dev/streams/clone/xput` (a test driver: puts from softirq and workqueue context).
    _xput: chardev::MiscDevice<strfile::StrFile>,
    /// Registered KUnit suites; dropping them unregisters (before the tables go away).
    _kunit: kunit_glue::KunitSuites,
    /// The scheduler's runner: dropped after every device, so that destroying it drains
    /// whatever the last Streams scheduled.
    _runq: runq::RunQueue,
    /// Dropped last: frees the tests' run-long buffers (`sys::leak_zeroed`).
    _kept: KeptBuffers,
}

/// Gives back the buffers `sys::leak_zeroed` kept for the KUnit run, once the suites are gone.
struct KeptBuffers;

impl Drop for KeptBuffers {
    fn drop(&mut self) {
        // SAFETY: `KeptBuffers` is the last field of `Streams`, so it drops after the KUnit
        // suites are unregistered; their cases were the only users of `leak_zeroed` buffers.
        unsafe { sys::release_kept() };
    }
}

impl kernel::Module for Streams {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pr_info!("rstreams {} loading\n", VERSION);
        // Before the KUnit cases open their test streamtabs: ours always get totals.
        for (_, tab) in LISTED {
            stream::reserve_totals(tab);
        }
        let runq = runq::RunQueue::create().map_err(|e| Error::from_errno(-e.0))?;
        let kunit = kunit_glue::KunitSuites::register(suites::SUITES)?;
        pr_info!(
            "rstreams {} loaded ({} KUnit suites, {} cases)\n",
            VERSION,
            kunit.suite_count(),
            kunit.case_count()
        );
        let registry = fmodsw()?;
        let sloop = register_dev(
            module,
            (c_str!("streams-sloop"), c_str!("streams/clone/sloop")),
            Some(&sloop::SLOOP),
            registry.clone(),
        )?;
        let echo = register_dev(
            module,
            (c_str!("streams-echo"), c_str!("streams/clone/echo")),
            Some(&echo::ECHO),
            registry.clone(),
        )?;
        let nuls = register_dev(
            module,
            (c_str!("streams-nuls"), c_str!("streams/clone/nuls")),
            Some(&nuls::NULS),
            registry.clone(),
        )?;
        let xput = register_dev(
            module,
            (c_str!("streams-xput"), c_str!("streams/clone/xput")),
            Some(&xput::XPUT),
            registry.clone(),
        )?;
        let pipe = register_dev(
            module,
            (c_str!("streams-pipe"), c_str!("streams/clone/pipe")),
            None,
            registry.clone(),
        )?;
        let dir = procfs::ProcDir::new(c_str!("streams"), None)?;
        let proc = procfs::ProcFile::new(
            c_str!("modules"),
            &dir,
            strproc::ModulesProc { tabs: LISTED },
        )?;
        let fifos = register_fifos(module, &registry)?;
        let attach = fattach::AttachFs::register(module)?;
        Ok(Streams {
            _attach: attach,
            _proc: proc,
            _fifos: fifos,
            _pipe: pipe,
            _sloop: sloop,
            _echo: echo,
            _nuls: nuls,
            _xput: xput,
            _kunit: kunit,
            _runq: runq,
            _kept: KeptBuffers,
        })
    }
}

/// Every streamtab `streams.ko` registers (listed in `/proc/streams/modules`).
static LISTED: &[(strproc::Kind, &stream::StreamTab)] = &[
    (strproc::Kind::Driver, &sloop::SLOOP),
    (strproc::Kind::Driver, &echo::ECHO),
    (strproc::Kind::Driver, &nuls::NULS),
    (strproc::Kind::Driver, &xput::XPUT),
    (strproc::Kind::Driver, &pipe::PIPE),
    (strproc::Kind::Module, &sloop::NULLMOD),
    (strproc::Kind::Module, &pipemod::PIPEMOD),
    (strproc::Kind::Module, &mods::bufmod::BUFMOD),
    (strproc::Kind::Module, &pipe::CONNLD),
];

/// The module registry (`fmodsw`: nullmod, bufmod, pipemod, connld), shared by every device.
fn fmodsw() -> Result<kernel::sync::Arc<stream::Registry>> {
    let mut reg = stream::Registry::new();
    reg.register_module(&sloop::NULLMOD)
        .map_err(|e| Error::from_errno(-e.0))?;
    reg.register_module(&mods::bufmod::BUFMOD)
        .map_err(|e| Error::from_errno(-e.0))?;
    reg.register_module(&pipemod::PIPEMOD)
        .map_err(|e| Error::from_errno(-e.0))?;
    reg.register_module(&pipe::CONNLD)
        .map_err(|e| Error::from_errno(-e.0))?;
    Ok(kernel::sync::Arc::new(reg, GFP_KERNEL)?)
}

/// A STREAMS clone device: misc device `names.0`, node `/dev/<names.1>`; every open makes a
/// new Stream over `driver` (a new, unconnected pipe end for `None`).
fn register_dev(
    module: &'static ThisModule,
    names: (&'static kernel::str::CStr, &'static kernel::str::CStr),
    driver: Option<&'static stream::StreamTab>,
    registry: kernel::sync::Arc<stream::Registry>,
) -> Result<chardev::MiscDevice<strfile::StrFile>> {
    let kind = match driver {
        Some(drv) => strdev::StrKind::Driver(drv),
        None => strdev::StrKind::PipeEnd,
    };
    let dev = strdev::StrDev { kind, registry };
    chardev::MiscDevice::register(names.0, names.1, dev, module)
}

/// The STREAMS FIFO nodes `/dev/streams/fifo/N` (devices `streams-fifoN` of rstreams' own
/// major, since a FIFO open may wait for long: see `MiscDevice::register_sleeping_open`):
/// every open of a node attaches to that node's FIFO (`fifo.rs`).
fn register_fifos(
    module: &'static ThisModule,
    registry: &kernel::sync::Arc<stream::Registry>,
) -> Result<KVec<chardev::MiscDevice<strfile::StrFile>>> {
    let names: [(&'static kernel::str::CStr, &'static kernel::str::CStr); fifo::NFIFO] = [
        (kernel::c_str!("streams-fifo0"), kernel::c_str!("streams/fifo/0")),
        (kernel::c_str!("streams-fifo1"), kernel::c_str!("streams/fifo/1")),
        (kernel::c_str!("streams-fifo2"), kernel::c_str!("streams/fifo/2")),
        (kernel::c_str!("streams-fifo3"), kernel::c_str!("streams/fifo/3")),
    ];
    let mut devs = KVec::with_capacity(fifo::NFIFO, GFP_KERNEL)?;
    for (name, node) in names {
        let dev = strdev::StrDev {
            kind: strdev::StrKind::Fifo(fifo::FifoSlot::new()?),
            registry: registry.clone(),
        };
        devs.push(
            chardev::MiscDevice::register_sleeping_open(name, node, dev, module)?,
            GFP_KERNEL,
        )?;
    }
    Ok(devs)
}

impl Drop for Streams {
    fn drop(&mut self) {
        pr_info!("rstreams {} unloading\n", VERSION);
    }
}
