//! What a module or driver provides: `module_info`, the streamtab and the procedure trait.
//!
//! In SVR4 a `streamtab` points at `qinit` structures holding function pointers and a
//! `module_info`. Here [`StreamTab`] is static data (name, limits, and the open routine), and
//! the open routine *creates* the module instance: a value implementing [`StreamModule`] whose
//! methods are the put and service procedures and close. The instance is per queue pair (what
//! SVR4 keeps in `q_ptr`), owned by the Stream as a `sys::Box<dyn StreamModule>` (built with
//! `box_dyn!`), so a module's private state needs no `q_ptr` casts.

use super::QCtx;
use crate::errno::Errno;
use crate::msg::Msg;
use crate::sys::Box;

/// `module_info`: identity, packet sizes and default watermarks of a module or driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Module id number.
    pub mi_idnum: u16,
    /// Module name (what I_PUSH names).
    pub mi_idname: &'static str,
    /// Minimum packet size.
    pub mi_minpsz: usize,
    /// Maximum packet size (`INFPSZ` for no limit).
    pub mi_maxpsz: usize,
    /// High water mark of both queues.
    pub mi_hiwat: usize,
    /// Low water mark of both queues.
    pub mi_lowat: usize,
}

/// Which messages a put procedure only passes on: for them it is exactly `cx.putnext(mp)`,
/// with nothing looked at or changed (no state, no queue, no other message). The engine may
/// then step over the put procedure ([`StreamModule::pass`]): while the pair is idle and the
/// queue holds nothing, such a message goes to `q_next` without the instance being taken out
/// and called; the put is still counted in the queue's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pass {
    /// The put procedure is always called (the default).
    #[default]
    None,
    /// Ordinary data is passed on (M_DATA, M_PROTO, M_PCPROTO, in any band); the put
    /// procedure is called for everything else.
    Data,
    /// Every message is passed on.
    All,
    /// The put procedure of a queue with a service procedure, for ordinary data: passed on
    /// when nothing is queued here (as for [`Pass::Data`]) and the next queue can take its
    /// band (`bcanputnext`, with its side effect: the next queue marks that a writer waits);
    /// otherwise the put procedure is called (which queues it). A driver whose read side only
    /// does this in one state sets it for that state ([`QCtx::set_pass`](super::QCtx::set_pass)).
    /// Runs of data (the batch put-up) do not step over such a queue: each message's flow
    /// check is its own.
    Flow,
}

impl Pass {
    /// Whether a message of type `ty` is passed on.
    #[inline]
    pub fn covers(self, ty: crate::msg::MsgType) -> bool {
        match self {
            Pass::None => false,
            Pass::Data | Pass::Flow => {
                ty == crate::msg::M_DATA || ty == crate::msg::M_PROTO || ty == crate::msg::M_PCPROTO
            }
            Pass::All => true,
        }
    }
}

/// How a queue pair is being opened (`sflag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sflag {
    /// A driver opened by device number (`DRVOPEN`).
    DrvOpen,
    /// A module pushed with I_PUSH (`MODOPEN`).
    ModOpen,
    /// A clone open: the driver picks the minor (`CLONEOPEN`).
    CloneOpen,
}

/// Arguments of an open routine (`devp`, `oflag`, `sflag`; credentials come later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenArgs {
    /// Device number being opened.
    pub dev: u32,
    /// Open flags of the open(2) call.
    pub oflag: i32,
    /// Kind of open.
    pub sflag: Sflag,
}

impl OpenArgs {
    /// Plain arguments for opening a driver on `dev`.
    pub const fn driver(dev: u32) -> OpenArgs {
        OpenArgs {
            dev,
            oflag: 0,
            sflag: Sflag::DrvOpen,
        }
    }
    /// Arguments for pushing a module.
    pub const fn module() -> OpenArgs {
        OpenArgs {
            dev: 0,
            oflag: 0,
            sflag: Sflag::ModOpen,
        }
    }
}

/// The open routine (`qi_qopen`). It runs with a context on the new pair's read queue, whose
/// queues are already linked into the Stream (it may putnext/qreply), and returns the instance.
pub type OpenFn = fn(&mut QCtx<'_>, &OpenArgs) -> Result<Box<dyn StreamModule>, Errno>;

/// `streamtab`: the static description of a module or driver.
pub struct StreamTab {
    /// Name, id, packet sizes and watermarks (used for both queues of the pair).
    pub info: ModuleInfo,
    /// Creates an instance for a new queue pair.
    pub open: OpenFn,
}

/// The procedures of one module or driver instance (`qinit` put/srv/close).
///
/// Each procedure gets a [`QCtx`] for the queue it runs on (read queue for `rput`/`rsrv`/
/// `close`, write queue for `wput`/`wsrv`). The instance is taken out of the Stream while one of
/// its procedures runs, so the context can never reach it: a put that would re-enter it is
/// queued instead (see `stream` module docs).
pub trait StreamModule: Send {
    /// Read-side put procedure. Default: pass the message on (`putnext`).
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(mp)
    }
    /// Write-side put procedure. Default: pass the message on (`putnext`).
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(mp)
    }
    /// Read-side service procedure (runs only if [`has_rsrv`](Self::has_rsrv)).
    fn rsrv(&mut self, _cx: &mut QCtx<'_>) {}
    /// Write-side service procedure (runs only if [`has_wsrv`](Self::has_wsrv)).
    fn wsrv(&mut self, _cx: &mut QCtx<'_>) {}
    /// Whether the read queue has a service procedure (read once, at open).
    fn has_rsrv(&self) -> bool {
        false
    }
    /// Whether the write queue has a service procedure (read once, at open).
    fn has_wsrv(&self) -> bool {
        false
    }
    /// Which messages the read (`read`) or write put procedure only passes on ([`Pass`]; read
    /// once, at open; a procedure may change it later with [`QCtx::set_pass`](super::QCtx::set_pass)).
    /// Default: none.
    fn pass(&self, _read: bool) -> Pass {
        Pass::None
    }
    /// A multiplexing driver's upper half (SVR4 `st_muxrinit`/`st_muxwinit`): what the Stream
    /// head asks when this Stream joins the driver's link table and when another Stream is
    /// linked under it (`mux.rs`). `None`, the default: not a multiplexor, I_LINK fails with
    /// EINVAL.
    fn mux(&mut self) -> Option<&mut dyn super::Multiplexor> {
        None
    }
    /// Close routine (`qi_qclose`), called before the pair leaves the Stream; the queues are
    /// still linked, so it may send messages. Messages left on the queues are freed afterwards.
    fn close(&mut self, _cx: &mut QCtx<'_>) {}
}
