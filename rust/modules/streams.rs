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
//! Two builds of the same sources (`docs/building.md`): the production module has the STREAMS
//! devices users need (pipes, FIFOs, fattach, the modules nullmod, pipemod, bufmod and connld,
//! `/proc/streams`). The test build (`--cfg rstreams_test`, Kbuild variable `RSTREAMS_TEST=1`,
//! what `cargo xtask test` loads) adds `testbuild`: at load it registers every shared test
//! table listed in `suites::SUITES` as a KUnit suite (`kunit_glue`), so loading it runs the
//! core's tests, and it registers the test drivers' devices; unloading removes both.

use kernel::c_str;
use kernel::prelude::*;

// --- The executive, from its own source files (keep in step with streams_core/src/lib.rs). ---
// No `deny(unsafe_code)` here: the host build enforces it (lib.rs), and the kernel expansion of
// `sys::box_dyn!` legitimately puts the seam's one unsafe block at its call sites.
#[path = "../streams_core/src/sys.rs"]
pub mod sys;

#[path = "../streams_core/src/errno.rs"]
pub mod errno;
#[cfg(rstreams_test)]
#[path = "../streams_core/src/ktest.rs"]
pub mod ktest;
#[path = "../streams_core/src/limits.rs"]
pub mod limits;
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
// --- TPI and the `udp` driver (`rust/tpi_udp`), generic over the network; the kernel side
// (`KernelNet`, device registration) is glue of its own. ---
#[path = "../tpi_udp/src/lib.rs"]
pub mod tpi_udp;

// --- Kernel glue. ---
mod chardev;
mod connld;
mod dwork;
mod fasync;
mod fattach;
mod fdpass;
mod fifo;
mod iter;
mod mblkcache;
mod nullmod;
mod pipemod;
mod procfs;
mod runq;
mod strdev;
mod strfile;
mod strioctl;
mod strlimits;
mod strmux;
mod strperim;
mod strproc;
mod strrw;
mod sigowner;
mod strsig;
mod strwait;
mod udp;
mod udpsock;
mod uio;
mod waitq;
mod weld;

// --- Test build only (`--cfg rstreams_test`): KUnit and the test drivers. ---
#[cfg(rstreams_test)]
mod echo;
#[cfg(rstreams_test)]
mod kunit_glue;
#[cfg(all(rstreams_test, rstreams_negative_control))]
pub mod negative_control;
#[cfg(rstreams_test)]
mod nuls;
#[cfg(rstreams_test)]
pub mod selftest;
#[cfg(rstreams_test)]
mod sloop;
#[cfg(rstreams_test)]
mod suites;
#[cfg(rstreams_test)]
mod testbuild;
#[cfg(rstreams_test)]
mod softirq;
#[cfg(rstreams_test)]
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
    /// `/proc/streams/mblkcache` (dropped first).
    _mcproc: procfs::ProcFile<mblkcache::MblkCacheProc>,
    /// `/proc/streams/modules`, then `/proc/streams` (dropped first).
    _proc: procfs::ProcFile<strproc::ModulesProc>,
    /// `/dev/streams/fifo/0` … `3`: STREAMS FIFOs (dropped early: no new opens while the
    /// rest goes away).
    _fifos: KVec<chardev::MiscDevice<strfile::StrFile>>,
    /// `/dev/streams/clone/pipe`: STREAMS pipe ends, welded by I_PIPE (dropped early: no new
    /// opens while the rest goes away).
    _pipe: chardev::MiscDevice<strfile::StrFile>,
    /// `/dev/streams/clone/udp` and, when the name is free, `/dev/udp`: TPI UDP endpoints.
    _udp: KVec<chardev::MiscDevice<strfile::StrFile>>,
    /// `/dev/streams/clone/xtiso-udp`: TPI UDP endpoints over in-kernel sockets.
    _xtiso: chardev::MiscDevice<strfile::StrFile>,
    /// Test build: the test drivers' devices, then the KUnit suites.
    #[cfg(rstreams_test)]
    _test: testbuild::TestBuild,
    /// The scheduler's runner: dropped after every device, so that destroying it drains
    /// whatever the last Streams scheduled.
    _runq: runq::RunQueue,
    /// The message block cache's shrinker; dropped last, when nothing frees a message any
    /// more, it gives every cached block back.
    _mcache: mblkcache::MblkCache,
}

impl kernel::Module for Streams {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pr_info!("rstreams {} loading\n", VERSION);
        // The limits from the module parameters, before any Stream can exist.
        strlimits::apply()?;
        // The module-wide totals' per-CPU table is strshim.ko's, which may have outlived an
        // earlier load of this module: start from zero, as the totals' slots do.
        crate::sys::stat_reset();
        // Before the KUnit cases open their test streamtabs: ours always get totals.
        for (_, tab) in LISTED {
            stream::reserve_totals(tab);
        }
        // First, so that a failed load drops it last and frees what the cache holds.
        let mcache = mblkcache::MblkCache::register()?;
        let runq = runq::RunQueue::create().map_err(|e| Error::from_errno(-e.0))?;
        let registry = fmodsw()?;
        // Test build: run the KUnit suites, register the test devices.
        #[cfg(rstreams_test)]
        let test = testbuild::TestBuild::register(module, &registry)?;
        let pipe = register_dev(
            module,
            (c_str!("streams-pipe"), c_str!("streams/clone/pipe")),
            None,
            registry.clone(),
        )?;
        let udp = register_udp(module, &registry)?;
        let xtiso = register_dev(
            module,
            (c_str!("streams-xtiso-udp"), c_str!("streams/clone/xtiso-udp")),
            Some(&XTISO_UDP),
            registry.clone(),
        )?;
        let dir = procfs::ProcDir::new(c_str!("streams"), None)?;
        let proc = procfs::ProcFile::new(
            c_str!("modules"),
            &dir,
            strproc::ModulesProc { tabs: LISTED },
        )?;
        let mcproc = procfs::ProcFile::new(c_str!("mblkcache"), &dir, mblkcache::MblkCacheProc)?;
        let fifos = register_fifos(module, &registry)?;
        let attach = fattach::AttachFs::register(module)?;
        #[cfg(not(rstreams_test))]
        pr_info!("rstreams {} loaded\n", VERSION);
        #[cfg(rstreams_test)]
        {
            let (suites, cases) = test.kunit_counts();
            pr_info!(
                "rstreams {} loaded (test build: {} KUnit suites, {} cases)\n",
                VERSION,
                suites,
                cases
            );
        }
        Ok(Streams {
            _attach: attach,
            _mcproc: mcproc,
            _proc: proc,
            _fifos: fifos,
            _pipe: pipe,
            _udp: udp,
            _xtiso: xtiso,
            #[cfg(rstreams_test)]
            _test: test,
            _runq: runq,
            _mcache: mcache,
        })
    }
}

/// Every streamtab `streams.ko` registers (listed in `/proc/streams/modules`); the drivers are
/// test drivers (test build only).
static LISTED: &[(strproc::Kind, &stream::StreamTab)] = &[
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &sloop::SLOOP),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &echo::ECHO),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &nuls::NULS),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &mods::mux::MUX),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &mods::loopdrv::LOOP),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &mods::loopdrv::SPX),
    #[cfg(rstreams_test)]
    (strproc::Kind::Driver, &xput::XPUT),
    (strproc::Kind::Driver, &pipe::PIPE),
    (strproc::Kind::Driver, &UDP),
    (strproc::Kind::Driver, &XTISO_UDP),
    (strproc::Kind::Module, &nullmod::NULLMOD),
    (strproc::Kind::Module, &pipemod::PIPEMOD),
    (strproc::Kind::Module, &mods::bufmod::BUFMOD),
    (strproc::Kind::Module, &pipe::CONNLD),
];

/// The TPI UDP driver (`rust/tpi_udp`) over the kernel's network (`udp.rs`).
static UDP: stream::StreamTab = tpi_udp::streamtab::<udp::KernelNet>(tpi_udp::UDP_NAME, tpi_udp::UDP_ID);

/// The same TPI driver over in-kernel sockets (XTI over sockets: `udp.rs`'s `SocketNet`).
static XTISO_UDP: stream::StreamTab =
    tpi_udp::streamtab::<udp::SocketNet>(tpi_udp::XTISO_NAME, tpi_udp::XTISO_ID);

/// The TPI UDP clone devices: `/dev/streams/clone/udp`, and `/dev/udp` unless another misc
/// device has that name already (then only the first; the module still loads).
fn register_udp(
    module: &'static ThisModule,
    registry: &kernel::sync::Arc<stream::Registry>,
) -> Result<KVec<chardev::MiscDevice<strfile::StrFile>>> {
    let mut devs = KVec::with_capacity(2, GFP_KERNEL)?;
    let names = (c_str!("streams-udp"), c_str!("streams/clone/udp"));
    devs.push(
        register_dev(module, names, Some(&UDP), registry.clone())?,
        GFP_KERNEL,
    )?;
    match register_dev(module, (c_str!("udp"), c_str!("udp")), Some(&UDP), registry.clone()) {
        Ok(d) => devs.push(d, GFP_KERNEL)?,
        Err(e) => pr_info!("rstreams: /dev/udp not registered ({:?}): another device has it\n", e),
    }
    Ok(devs)
}

/// The module registry (`fmodsw`: nullmod, bufmod, pipemod, connld), shared by every device.
fn fmodsw() -> Result<kernel::sync::Arc<stream::Registry>> {
    let mut reg = stream::Registry::new();
    reg.register_module(&nullmod::NULLMOD)
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

/// The clone device of a multiplexing driver (`driver`'s instances implement
/// `StreamModule::mux`): every open is an upper Stream of the driver's one link table
/// (`stream::MuxTable`), which other Streams are linked under with I_LINK/I_PLINK. Only the
/// test driver `mux` is such a driver today.
#[cfg_attr(not(rstreams_test), allow(dead_code))]
fn register_mux(
    module: &'static ThisModule,
    names: (&'static kernel::str::CStr, &'static kernel::str::CStr),
    driver: &'static stream::StreamTab,
    registry: kernel::sync::Arc<stream::Registry>,
) -> Result<chardev::MiscDevice<strfile::StrFile>> {
    let table = stream::mux::MuxTable::new().map_err(|e| Error::from_errno(-e.0))?;
    let kind = strdev::StrKind::Mux(driver, table);
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
