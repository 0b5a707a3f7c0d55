// SPDX-License-Identifier: GPL-2.0
//! `nullmod`: the LfS null module (`I_PUSH "nullmod"`): passes everything both ways with the
//! default put procedures. perftest pushes it (`-m nullmod`) to measure a module's cost, so it
//! is in the production `streams.ko`.

use crate::box_dyn;
use crate::errno::Errno;
use crate::queue::INFPSZ;
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

/// `nullmod`: passes everything both ways (the default put procedures).
struct NullMod;
impl StreamModule for NullMod {}

fn nullmod_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(NullMod => dyn StreamModule)?)
}

/// The nullmod module's streamtab (I_PUSH "nullmod").
pub(crate) static NULLMOD: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5101,
        mi_idname: "nullmod",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: 5120,
        mi_lowat: 1024,
    },
    open: nullmod_open,
};
