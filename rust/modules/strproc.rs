// SPDX-License-Identifier: GPL-2.0
//! `/proc/streams/modules`: every module and driver `streams.ko` registers, with its
//! `module_info` and its module-wide `module_stat` totals (`stream::mstat_total`), read-only.
//! The totals are counted per CPU and summed as the file is read, while Streams may still be
//! counting: a racy sum, which may be behind by the counts in flight on other CPUs (and two
//! columns may disagree by those), exact when the Streams are idle.
//!
//! One header line, then one line per streamtab, columns separated by blanks:
//!
//! ```text
//! name     kind idnum minpsz maxpsz  hiwat  lowat     r_pcnt     r_scnt     w_pcnt     w_scnt     ocnt     ccnt
//! sloop    drv  20736      0     -1   8192   2048          0         12        322         13      229      229
//! nullmod  mod  20737      0     -1   5120   1024          6          0          6          0       12       12
//! ```
//!
//! `maxpsz` -1 is INFPSZ. `r_*`/`w_*` are the put and service procedure calls of the read and
//! write queues summed over every instance since load; `ocnt`/`ccnt` count open and close
//! calls (SVR4 counts them on the read side). The counters are read without a lock, one by
//! one: a line is not a snapshot of one instant.

use core::fmt::{self, Write};

use crate::procfs::{ProcShow, SeqFile};
use crate::queue::INFPSZ;
use crate::stream::{mstat_total, StreamTab};

/// Whether a listed streamtab is a driver or a module.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A driver (at the bottom of the Streams of a device). The production build lists none
    /// yet (its drivers are the test build's), but the format has the kind.
    #[cfg_attr(not(rstreams_test), allow(dead_code))]
    Driver,
    /// A module (I_PUSH).
    Module,
}

/// The content of `/proc/streams/modules`: the listed streamtabs.
pub(crate) struct ModulesProc {
    /// Every streamtab `streams.ko` registers, in listing order.
    pub(crate) tabs: &'static [(Kind, &'static StreamTab)],
}

/// The header line (same widths as the rows).
const HEADER: &str =
    "name     kind idnum minpsz maxpsz  hiwat  lowat     r_pcnt     r_scnt     w_pcnt     w_scnt     ocnt     ccnt\n";

fn psz(v: usize) -> i64 {
    if v == INFPSZ {
        -1
    } else {
        i64::try_from(v).unwrap_or(i64::MAX)
    }
}

impl ProcShow for ModulesProc {
    fn show(&self, out: &mut SeqFile<'_>) -> fmt::Result {
        out.write_str(HEADER)?;
        for (kind, tab) in self.tabs {
            let i = &tab.info;
            let [r, w] = mstat_total(tab);
            let kind = match kind {
                Kind::Driver => "drv",
                Kind::Module => "mod",
            };
            writeln!(
                out,
                "{:<8} {:<4} {:>5} {:>6} {:>6} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}",
                i.mi_idname,
                kind,
                i.mi_idnum,
                psz(i.mi_minpsz),
                psz(i.mi_maxpsz),
                i.mi_hiwat,
                i.mi_lowat,
                r.ms_pcnt,
                r.ms_scnt,
                w.ms_pcnt,
                w.ms_scnt,
                r.ms_ocnt,
                r.ms_ccnt
            )?;
        }
        Ok(())
    }
}
