//! Small modules and drivers for the shared Stream tests (and for later issues' tests).
//!
//! - `pass`: passthrough with service procedures on both sides, honouring flow control.
//! - `nosrv`: passthrough without service procedures (default put procedures).
//! - `loga`/`logb` modules and the `logdrv` driver: report open and close by sending an M_CTL
//!   `[b'o' | b'c', id]` up to the Stream head, so tests can see the order of the calls.
//! - `tick1`/`tick2`: the read service procedure sends `[id]` upstream each time it runs.
//! - `ioc`: answers M_IOCTL with M_IOCACK by qreply.
//! - `failopen`: open fails with ENXIO.
//! - drivers: `hold` (write side queues everything; watermarks 10/4; read side passes up),
//!   `loop` (qreplies everything written), `src` (read side with a flow-controlled service
//!   procedure), `null` (all defaults: what it is written is dropped off the end), `nullpass`
//!   (`null` whose put procedures say they only pass messages on, as a pipe's twist does:
//!   the engine steps over them, and a read may take data straight from the inbound list).

use super::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{allocb, Bpri, Msg, M_CTL, M_IOCACK, M_IOCTL};
use crate::queue::INFPSZ;
use crate::sys::Box;

const fn info(id: u16, name: &'static str, hiwat: usize, lowat: usize) -> ModuleInfo {
    ModuleInfo {
        mi_idnum: id,
        mi_idname: name,
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: hiwat,
        mi_lowat: lowat,
    }
}

/// An M_CTL message holding `data`, if memory allows.
pub fn ctl(data: &[u8]) -> Option<Msg> {
    let mut m = allocb(data.len(), Bpri::Med).ok()?;
    m.set_type(M_CTL);
    m.append(data);
    Some(m)
}

/// The service-procedure loop of a flow-controlled passthrough: pass on what the next queue
/// accepts (high priority always), put the rest back and stop.
pub fn srv_pass(cx: &mut QCtx<'_>) {
    while let Some(mp) = cx.getq() {
        if mp.is_hipri() || cx.bcanputnext(mp.band()) {
            cx.putnext(mp);
        } else {
            if let Err(mp) = cx.putbq(mp) {
                drop(mp);
            }
            break;
        }
    }
}

/// Put procedure of a flow-controlled passthrough: pass on directly when nothing is queued
/// and the next queue accepts, else queue for the service procedure.
pub fn put_pass(cx: &mut QCtx<'_>, mp: Msg) {
    let queued = cx.queue().is_some_and(|q| !q.is_empty());
    if mp.is_hipri() || (!queued && cx.bcanputnext(mp.band())) {
        cx.putnext(mp);
    } else if let Err(mp) = cx.putq(mp) {
        drop(mp);
    }
}

struct Pass;
impl StreamModule for Pass {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        put_pass(cx, mp)
    }
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        put_pass(cx, mp)
    }
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        srv_pass(cx)
    }
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        srv_pass(cx)
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
}
/// Open routine of `pass` (shared by tests that need a `pass` under another streamtab).
pub fn open_pass(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Pass => dyn StreamModule)?)
}
/// `pass`: flow-controlled passthrough with service procedures.
pub static PASS: StreamTab = StreamTab {
    info: info(10, "pass", 1000, 100),
    open: open_pass,
};

/// Read put procedures `flowpass` ran (its steps over are not calls).
pub static FLOWPASS_CALLS: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

struct FlowPass;
impl StreamModule for FlowPass {
    /// `put_pass`, counted; an M_CTL ends the step over (`set_pass`).
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        FLOWPASS_CALLS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if mp.db_type() == crate::msg::M_CTL {
            cx.set_pass(true, super::Pass::None);
            return;
        }
        put_pass(cx, mp)
    }
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        srv_pass(cx)
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn pass(&self, read: bool) -> super::Pass {
        if read {
            super::Pass::Flow
        } else {
            super::Pass::None
        }
    }
}
fn open_flowpass(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(FlowPass => dyn StreamModule)?)
}
/// `flowpass`: the read side of `pass`, stepped over while the next queue has room
/// (`Pass::Flow`) until an M_CTL arrives.
pub static FLOWPASS: StreamTab = StreamTab {
    info: info(35, "flowpass", 1000, 100),
    open: open_flowpass,
};

struct NoSrv;
impl StreamModule for NoSrv {}
fn open_nosrv(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(NoSrv => dyn StreamModule)?)
}
/// `nosrv`: passthrough without service procedures.
pub static NOSRV: StreamTab = StreamTab {
    info: info(11, "nosrv", 1000, 100),
    open: open_nosrv,
};

/// Reports open/close as M_CTL `[b'o'|b'c', ID]` sent upstream.
struct Log<const ID: u8>;
impl<const ID: u8> StreamModule for Log<ID> {
    fn close(&mut self, cx: &mut QCtx<'_>) {
        if let Some(m) = ctl(&[b'c', ID]) {
            cx.putnext(m);
        }
    }
}
fn open_log<const ID: u8>(cx: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    if let Some(m) = ctl(&[b'o', ID]) {
        cx.putnext(m);
    }
    Ok(box_dyn!(Log::<ID> => dyn StreamModule)?)
}
/// `loga`: logs open/close with id 1.
pub static LOGA: StreamTab = StreamTab {
    info: info(1, "loga", 1000, 100),
    open: open_log::<1>,
};
/// `logb`: logs open/close with id 2.
pub static LOGB: StreamTab = StreamTab {
    info: info(2, "logb", 1000, 100),
    open: open_log::<2>,
};
/// `logdrv`: a driver that logs open/close with id 9.
pub static LOGDRV: StreamTab = StreamTab {
    info: info(9, "logdrv", 1000, 100),
    open: open_log::<9>,
};

/// Read service procedure sends `[ID]` upstream each time it runs.
struct Tick<const ID: u8>;
impl<const ID: u8> StreamModule for Tick<ID> {
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        if let Some(m) = ctl(&[ID]) {
            cx.putnext(m);
        }
    }
    fn has_rsrv(&self) -> bool {
        true
    }
}
fn open_tick<const ID: u8>(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Tick::<ID> => dyn StreamModule)?)
}
/// `tick1`: read service procedure reports `[1]`.
pub static TICK1: StreamTab = StreamTab {
    info: info(21, "tick1", 1000, 100),
    open: open_tick::<1>,
};
/// `tick2`: read service procedure reports `[2]`.
pub static TICK2: StreamTab = StreamTab {
    info: info(22, "tick2", 1000, 100),
    open: open_tick::<2>,
};

struct Ioc;
impl StreamModule for Ioc {
    fn wput(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        if mp.db_type() == M_IOCTL {
            mp.set_type(M_IOCACK);
            cx.qreply(mp);
        } else {
            cx.putnext(mp);
        }
    }
}
fn open_ioc(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Ioc => dyn StreamModule)?)
}
/// `ioc`: answers M_IOCTL with M_IOCACK (qreply).
pub static IOC: StreamTab = StreamTab {
    info: info(12, "ioc", 1000, 100),
    open: open_ioc,
};

fn open_fail(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Err(Errno::ENXIO)
}
/// `failopen`: open fails with ENXIO.
pub static FAILOPEN: StreamTab = StreamTab {
    info: info(13, "failopen", 1000, 100),
    open: open_fail,
};

/// Write side holds everything (the "device" is busy); tests drain it with getq.
struct Hold;
impl StreamModule for Hold {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if let Err(mp) = cx.putq(mp) {
            drop(mp);
        }
    }
    fn has_wsrv(&self) -> bool {
        true
    }
}
fn open_hold(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Hold => dyn StreamModule)?)
}
/// `hold` driver: write queue keeps messages (hiwat 10, lowat 4).
pub static HOLD: StreamTab = StreamTab {
    info: info(30, "hold", 10, 4),
    open: open_hold,
};

struct Loop;
impl StreamModule for Loop {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.qreply(mp)
    }
}
/// Open routine of `loop` (shared by tests that need a `loop` under another streamtab).
pub fn open_loop(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Loop => dyn StreamModule)?)
}
/// `loop` driver: qreplies everything written to it.
pub static LOOP: StreamTab = StreamTab {
    info: info(31, "loop", 1000, 100),
    open: open_loop,
};

/// Read side: rput queues, rsrv passes on under flow control.
struct Src;
impl StreamModule for Src {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if let Err(mp) = cx.putq(mp) {
            drop(mp);
        }
        cx.qenable();
    }
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        srv_pass(cx)
    }
    fn has_rsrv(&self) -> bool {
        true
    }
}
fn open_src(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Src => dyn StreamModule)?)
}
/// `src` driver: read side with a flow-controlled service procedure.
pub static SRC: StreamTab = StreamTab {
    info: info(32, "src", 1000, 100),
    open: open_src,
};

struct Null;
impl StreamModule for Null {}
fn open_null(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Null => dyn StreamModule)?)
}
/// `null` driver: default procedures only.
pub static NULL: StreamTab = StreamTab {
    info: info(33, "null", 1000, 100),
    open: open_null,
};

struct NullPass;
impl StreamModule for NullPass {
    fn pass(&self, _read: bool) -> super::Pass {
        super::Pass::All
    }
}
fn open_nullpass(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(NullPass => dyn StreamModule)?)
}
/// `nullpass` driver: default procedures, stepped over (`Pass::All`).
pub static NULLPASS: StreamTab = StreamTab {
    info: info(34, "nullpass", 1000, 100),
    open: open_nullpass,
};
