// SPDX-License-Identifier: GPL-2.0
//! `echo`: the LfS echo test driver, on the clone device `/dev/streams/clone/echo`.
//!
//! Everything written comes back up: M_DATA, M_PROTO and M_PCPROTO are `qreply`d with the
//! same end-to-end flow control as `sloop` (it is the same loopback, `sloop::open_loopback`),
//! M_FLUSH follows the loopback driver rules (FLUSHW is turned around as FLUSHR). Unlike sloop
//! it has no private ioctl: every M_IOCTL is answered with M_IOCNAK (EINVAL).

use crate::errno::Errno;
use crate::queue::INFPSZ;
use crate::sloop::{open_loopback, SLOOP_HIWAT, SLOOP_LOWAT};
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

fn echo_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    open_loopback(false)
}

/// The echo driver's streamtab.
pub(crate) static ECHO: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5102,
        mi_idname: "echo",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: SLOOP_HIWAT,
        mi_lowat: SLOOP_LOWAT,
    },
    open: echo_open,
};
