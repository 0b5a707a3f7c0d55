// SPDX-License-Identifier: GPL-2.0
//! `nuls`: the LfS null sink test driver, on the clone device `/dev/streams/clone/nuls`.
//!
//! What is written disappears: M_DATA, M_PROTO and M_PCPROTO are freed at once, so writes
//! never block and nothing is ever read back (a measure of the write path alone). M_FLUSH
//! follows the SVR4 driver rules (`sloop::driver_flush`): FLUSHW flushes the write queue,
//! FLUSHR the read queue and goes back up as FLUSHR alone; a FLUSHW-only message is freed.
//! Every M_IOCTL gets M_IOCNAK (EINVAL), except the test command [`NULS_IOC_SINK`], which
//! the sink swallows like data and never answers: the one way for a user program to hold an
//! ioctl open until its I_STR `ic_timout` expires (ETIME). Anything else is freed.

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_FLUSH, M_IOCTL};
use crate::queue::INFPSZ;
use crate::sloop::{driver_flush, driver_ioctl};
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

struct Nuls;

/// I_STR command that `nuls` frees without an answer (`'n' << 8 | 1`), for timeout tests.
pub(crate) const NULS_IOC_SINK: i32 = (b'n' as i32) << 8 | 1;

impl StreamModule for Nuls {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_FLUSH {
            driver_flush(cx, mp, false);
        } else if ty == M_IOCTL {
            let sink = crate::sth::IocBlk::decode(mp.rd()).is_some_and(|i| i.cmd == NULS_IOC_SINK);
            if !sink {
                driver_ioctl(cx, mp, |_| false);
            }
        }
        // M_DATA, M_PROTO, M_PCPROTO and the rest: freed here (the sink).
    }
}

fn nuls_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Nuls => dyn StreamModule)?)
}

/// The nuls driver's streamtab.
pub(crate) static NULS: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5103,
        mi_idname: "nuls",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: 8192,
        mi_lowat: 2048,
    },
    open: nuls_open,
};
