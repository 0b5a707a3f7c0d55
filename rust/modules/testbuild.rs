// SPDX-License-Identifier: GPL-2.0
//! What only the test build of `streams.ko` has (`--cfg rstreams_test`, what `cargo xtask test`
//! loads): the KUnit suites, which run when they are registered at load, and the clone devices
//! of the test drivers `sloop`, `echo`, `nuls`, `mux`, `loop`/`spx` and `xput`.
//!
//! The production build compiles none of it: not this file, not `kunit_glue.rs`, `suites.rs`,
//! `selftest.rs`, `sloop.rs`, `echo.rs`, `nuls.rs`, nor the core's `ktest`, `tests` modules,
//! `mods::mux`, `mods::loopdrv` and fault injection (`sys::fault`, `sys::leak_zeroed`).
//! `cargo xtask test` checks the production module's symbols and strings for them.

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::chardev::MiscDevice;
use crate::strfile::StrFile;
use crate::{echo, kunit_glue, mods, nuls, sloop, stream, suites, sys, xput};

/// The test build's part of the module. Fields drop in order: the devices, then the KUnit
/// suites, then the tests' run-long buffers.
pub(crate) struct TestBuild {
    _mux: MiscDevice<StrFile>,
    /// `/dev/streams/clone/loop` and `…/spx`: the loop-around driver (joined by I_FDINSERT).
    _loop: [MiscDevice<StrFile>; 2],
    /// `/dev/streams/clone/sloop`.
    _sloop: MiscDevice<StrFile>,
    /// `/dev/streams/clone/echo`.
    _echo: MiscDevice<StrFile>,
    /// `/dev/streams/clone/nuls`.
    _nuls: MiscDevice<StrFile>,
    /// `/dev/streams/clone/xput`: puts from softirq, timer and workqueue context (`xput.rs`).
    _xput: MiscDevice<StrFile>,
    /// Registered KUnit suites; dropping them unregisters (before the tables go away).
    kunit: kunit_glue::KunitSuites,
    /// Dropped last: frees the tests' run-long buffers (`sys::leak_zeroed`).
    _kept: KeptBuffers,
}

impl TestBuild {
    /// Register every KUnit suite (KUnit runs them at once), then the test devices, which open
    /// Streams with `registry` (the module's `fmodsw`).
    pub(crate) fn register(
        module: &'static ThisModule,
        registry: &Arc<stream::Registry>,
    ) -> Result<Self> {
        // Declared first, so that it drops last on an error below too.
        let kept = KeptBuffers;
        let kunit = kunit_glue::KunitSuites::register(suites::SUITES)?;
        let sloop = crate::register_dev(
            module,
            (c_str!("streams-sloop"), c_str!("streams/clone/sloop")),
            Some(&sloop::SLOOP),
            registry.clone(),
        )?;
        let echo = crate::register_dev(
            module,
            (c_str!("streams-echo"), c_str!("streams/clone/echo")),
            Some(&echo::ECHO),
            registry.clone(),
        )?;
        let nuls = crate::register_dev(
            module,
            (c_str!("streams-nuls"), c_str!("streams/clone/nuls")),
            Some(&nuls::NULS),
            registry.clone(),
        )?;
        let xput = crate::register_dev(
            module,
            (c_str!("streams-xput"), c_str!("streams/clone/xput")),
            Some(&xput::XPUT),
            registry.clone(),
        )?;
        let mux = crate::register_mux(
            module,
            (c_str!("streams-mux"), c_str!("streams/clone/mux")),
            &mods::mux::MUX,
            registry.clone(),
        )?;
        let loop_devs = [
            crate::register_dev(
                module,
                (c_str!("streams-loop"), c_str!("streams/clone/loop")),
                Some(&mods::loopdrv::LOOP),
                registry.clone(),
            )?,
            crate::register_dev(
                module,
                (c_str!("streams-spx"), c_str!("streams/clone/spx")),
                Some(&mods::loopdrv::SPX),
                registry.clone(),
            )?,
        ];
        Ok(TestBuild {
            _mux: mux,
            _loop: loop_devs,
            _sloop: sloop,
            _echo: echo,
            _nuls: nuls,
            _xput: xput,
            kunit,
            _kept: kept,
        })
    }

    /// How many KUnit suites and cases were registered.
    pub(crate) fn kunit_counts(&self) -> (usize, usize) {
        (self.kunit.suite_count(), self.kunit.case_count())
    }
}

/// Gives back the buffers `sys::leak_zeroed` kept for the KUnit run, once the suites are gone.
struct KeptBuffers;

impl Drop for KeptBuffers {
    fn drop(&mut self) {
        // SAFETY: `KeptBuffers` is the last field of `TestBuild` (and the first local of
        // `TestBuild::register`), so it drops after the KUnit suites are unregistered; their
        // cases were the only users of `leak_zeroed` buffers.
        unsafe { sys::release_kept() };
    }
}
