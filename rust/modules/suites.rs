// SPDX-License-Identifier: GPL-2.0
//! The one list of shared test tables that `streams.ko` registers as KUnit suites.
//!
//! Each entry is a `ktest_suite!` table from the core (or from this module's own glue tests).
//! Adding a suite is one line here. `cargo xtask test` cross-checks this list against every
//! `ktest_suite!` in the sources and fails if a table is missing here or in the guest results.

use crate::ktest::Suite;

/// Every suite, in the order KUnit runs them.
pub(crate) static SUITES: &[&Suite] = &[
    &crate::selftest::GLUE_SUITE,
    #[cfg(rstreams_negative_control)]
    &crate::negative_control::NEGATIVE_CONTROL_SUITE,
    &crate::msg::tests::MSG_SUITE,
    &crate::queue::tests::QUEUE_SUITE,
    &crate::stream::tests::STREAM_SUITE,
    &crate::stream::stats_tests::STATS_SUITE,
    &crate::perim::tests::PERIM_SUITE,
    &crate::sched::tests::SCHED_SUITE,
    &crate::sth::tests::STH_SUITE,
    &crate::sth::tests::ctl::STH_CTL_SUITE,
    &crate::sth::tests::edge::STH_EDGE_SUITE,
    &crate::sth::tests::transp::STH_TRANSP_SUITE,
    &crate::sth::tests::wat::STH_WAT_SUITE,
    &crate::sth::tests::fifo::STH_FIFO_SUITE,
    &crate::sth::tests::waits::STH_WAITS_SUITE,
    &crate::sth::tests::layout::STH_LAYOUT_SUITE,
    &crate::sth::tests::take::STH_TAKE_SUITE,
    &crate::sth::tests::faults::STH_FAULTS_SUITE,
    &crate::sth::tests::limits::STH_LIMITS_SUITE,
    &crate::mods::bufmod::tests::BUFMOD_SUITE,
    &crate::mods::bufmod::tests::ioctl::BUFMOD_IOCTL_SUITE,
    &crate::pipe::tests::pipe::STH_PIPE_SUITE,
    &crate::pipe::tests::twophase::PIPE_TWOPHASE_SUITE,
    &crate::pipe::tests::direct::PIPE_DIRECT_SUITE,
    &crate::pipe::tests::readrun::PIPE_READRUN_SUITE,
    &crate::pipe::tests::lazytake::PIPE_LAZYTAKE_SUITE,
    &crate::pipe::tests::quiet::PIPE_QUIET_SUITE,
    &crate::pipe::tests::batch::PIPE_BATCH_SUITE,
    &crate::pipe::tests::hold::PIPE_HOLD_SUITE,
    &crate::pipe::tests::across::PIPE_ACROSS_SUITE,
    &crate::pipe::tests::ends::PIPE_ENDS_SUITE,
    &crate::pipe::tests::connld::CONNLD_SUITE,
    &crate::pipe::tests::limits::PIPE_LIMITS_SUITE,
    &crate::tpi_udp::tests::codec::TPI_CODEC_SUITE,
    &crate::sth::tests::fdinsert::STH_FDINSERT_SUITE,
    &crate::mods::mux::tests::MUX_SUITE,
    &crate::mods::loopdrv::tests::LOOP_SUITE,
];
