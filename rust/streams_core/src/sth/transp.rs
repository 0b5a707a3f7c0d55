//! Transparent ioctls: commands the head does not know go down as M_IOCTL with
//! `ioc_count == TRANSPARENT` and the raw argument in `b_cont`; the module or driver then asks
//! the head to copy user memory in (M_COPYIN) or out (M_COPYOUT), one request at a time, and
//! finally answers M_IOCACK/M_IOCNAK.
//!
//! The head never copies itself: a copy request becomes a [`TranspStep`] that
//! [`Stream::strtransparent`] returns to the platform, which drops the Stream lock, does the
//! copy (copy-in into a message it allocates, copy-out from the M_COPYOUT's blocks) and calls
//! again with what happened in [`TranspIoctl::done`]. Between the two calls the ioctl slot
//! stays the caller's (`IocSlot::Copying`), so no other ioctl starts. The head then sends
//! M_IOCDATA down and waits for the next answer, as I_STR does; answers that come back at
//! once from a loopback are handled in a loop, not by recursion. A failed copy sends
//! M_IOCDATA with `cp_rval` = the error (so the module can clean up) and the ioctl fails with
//! it without waiting further, as in SVR4. An M_COPYIN of more than [`STRMSGSZ`] bytes is
//! refused that way with ENOSR (the platform stages at most that much).

use super::consts::SID;
use super::ioctl::{IocBlk, TRANSPARENT};
use super::{Block, IocSlot, Stop, UserIo, WAKE_IOCTL};
use crate::errno::Errno;
use crate::msg::{Msg, M_COPYIN, M_COPYOUT, M_DATA, M_IOCACK, M_IOCDATA, M_IOCNAK, M_IOCTL};
use crate::sth::Stream;

/// A transparent ioctl in progress (kept by the platform across calls).
pub struct TranspIoctl {
    /// The raw ioctl argument (usually a user address), sent down in `b_cont`.
    pub arg: u64,
    /// Set by the head when the M_IOCTL is sent; pass the same struct to the retry.
    pub id: Option<u32>,
    /// How the copy the last call asked for went; the platform sets it before calling again.
    pub done: Option<CopyDone>,
}

impl TranspIoctl {
    /// A transparent ioctl with raw argument `arg`, not started.
    pub fn new(arg: u64) -> TranspIoctl {
        TranspIoctl {
            arg,
            id: None,
            done: None,
        }
    }
}

/// A copy the platform makes for a transparent ioctl, without the Stream lock.
#[derive(Debug)]
pub enum TranspStep {
    /// Copy `size` bytes in from user address `addr` into an M_DATA message; call again with
    /// [`CopyDone::In`].
    CopyIn {
        /// `cq_addr`.
        addr: u64,
        /// `cq_size` (at most [`STRMSGSZ`]).
        size: usize,
    },
    /// Copy the first `size` bytes of `data`'s blocks after the first ([`TranspStep::copy_out`])
    /// out to user address `addr`; call again with [`CopyDone::Out`].
    CopyOut {
        /// `cq_addr`.
        addr: u64,
        /// `cq_size`.
        size: usize,
        /// The M_COPYOUT message.
        data: Msg,
    },
}

impl TranspStep {
    /// After the lock, for [`TranspStep::CopyOut`]: copy the bytes to `mem` (the caller's
    /// address space, offsets are user addresses).
    pub fn copy_out(&self, mem: &mut dyn UserIo) -> Result<(), Errno> {
        let TranspStep::CopyOut { addr, size, data } = self else {
            return Err(Errno::EINVAL);
        };
        let addr = usize::try_from(*addr).map_err(|_| Errno::EFAULT)?;
        let mut done = 0usize;
        for b in data.blocks().skip(1) {
            if done >= *size {
                break;
            }
            let n = b.blen().min(*size - done);
            mem.copy_to_user(
                addr.saturating_add(done),
                b.rd().get(..n).unwrap_or_default(),
            )?;
            done += n;
        }
        Ok(())
    }
}

/// What the platform did for a [`TranspStep`].
#[derive(Debug)]
pub enum CopyDone {
    /// The bytes a [`TranspStep::CopyIn`] asked for, as an M_DATA message.
    In(Msg),
    /// A [`TranspStep::CopyOut`] succeeded.
    Out,
    /// The copy failed with this error (EFAULT, ENOSR).
    Failed(Errno),
}

/// Where a transparent ioctl stands after a call.
#[derive(Debug)]
pub enum Transp {
    /// The module or driver answered: the ioctl's return value (`ioc_rval`).
    Done(i32),
    /// Make this copy, then call again.
    Step(TranspStep),
}

/// Size of an encoded [`CopyReq`] or [`CopyResp`].
pub const COPYREQ_SIZE: usize = 32;

/// `struct copyreq` (body of M_COPYIN/M_COPYOUT): `cq_cmd` i32 @0, `cq_id` u32 @4 (where
/// [`IocBlk`] has them), `cq_flag` u32 @8, `cq_size` u32 @12, `cq_addr` u64 @16,
/// `cq_private` u64 @24; native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyReq {
    /// The ioctl command.
    pub cmd: i32,
    /// The ioctl id.
    pub id: u32,
    /// Flags.
    pub flag: u32,
    /// Bytes to copy.
    pub size: u32,
    /// User address to copy from (M_COPYIN) or to (M_COPYOUT).
    pub addr: u64,
    /// The module's own state, returned in the [`CopyResp`].
    pub private: u64,
}

/// `struct copyresp` (body of M_IOCDATA): `cp_cmd` i32 @0, `cp_id` u32 @4, `cp_flag` u32 @8,
/// `cp_rval` i32 @12 (0 = the copy worked, else the errno), `cp_private` u64 @24.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyResp {
    /// The ioctl command.
    pub cmd: i32,
    /// The ioctl id.
    pub id: u32,
    /// Flags.
    pub flag: u32,
    /// 0 if the copy worked, otherwise the errno (the module must abandon the ioctl).
    pub rval: i32,
    /// `cq_private` of the request.
    pub private: u64,
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = b.get_mut(at..at + v.len()) {
        d.copy_from_slice(v);
    }
}
fn get<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

impl CopyReq {
    /// The bytes of a copyreq.
    pub fn encode(&self) -> [u8; COPYREQ_SIZE] {
        let mut b = [0u8; COPYREQ_SIZE];
        put(&mut b, 0, &self.cmd.to_ne_bytes());
        put(&mut b, 4, &self.id.to_ne_bytes());
        put(&mut b, 8, &self.flag.to_ne_bytes());
        put(&mut b, 12, &self.size.to_ne_bytes());
        put(&mut b, 16, &self.addr.to_ne_bytes());
        put(&mut b, 24, &self.private.to_ne_bytes());
        b
    }
    /// Parse a copyreq (`None` if `b` is too short).
    pub fn decode(b: &[u8]) -> Option<CopyReq> {
        Some(CopyReq {
            cmd: i32::from_ne_bytes(get(b, 0)?),
            id: u32::from_ne_bytes(get(b, 4)?),
            flag: u32::from_ne_bytes(get(b, 8)?),
            size: u32::from_ne_bytes(get(b, 12)?),
            addr: u64::from_ne_bytes(get(b, 16)?),
            private: u64::from_ne_bytes(get(b, 24)?),
        })
    }
}

impl CopyResp {
    /// The bytes of a copyresp.
    pub fn encode(&self) -> [u8; COPYREQ_SIZE] {
        let mut b = [0u8; COPYREQ_SIZE];
        put(&mut b, 0, &self.cmd.to_ne_bytes());
        put(&mut b, 4, &self.id.to_ne_bytes());
        put(&mut b, 8, &self.flag.to_ne_bytes());
        put(&mut b, 12, &self.rval.to_ne_bytes());
        put(&mut b, 24, &self.private.to_ne_bytes());
        b
    }
    /// Parse a copyresp (`None` if `b` is too short).
    pub fn decode(b: &[u8]) -> Option<CopyResp> {
        Some(CopyResp {
            cmd: i32::from_ne_bytes(get(b, 0)?),
            id: u32::from_ne_bytes(get(b, 4)?),
            flag: u32::from_ne_bytes(get(b, 8)?),
            rval: i32::from_ne_bytes(get(b, 12)?),
            private: u64::from_ne_bytes(get(b, 24)?),
        })
    }
}

impl Stream {
    /// A transparent ioctl `cmd` (see the module docs): start it, or go on after a step with
    /// `t.done` set. Errors: EBADF after close, EINVAL for a command of the `'S'` group, the
    /// module's error (M_IOCNAK, or M_IOCACK with an error), the error of a failed copy,
    /// ENXIO/the M_ERROR error when the Stream fails meanwhile, ENOSR; Block while waiting
    /// for the ioctl slot or an answer.
    pub fn strtransparent(&mut self, cmd: u32, t: &mut TranspIoctl) -> Result<Transp, Stop> {
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        if self.sth.plex.is_some() {
            return Err(Errno::EINVAL.into()); // linked under a multiplexor (SVR4 STPLEX)
        }
        if cmd & 0xff00 == SID {
            return Err(Errno::EINVAL.into());
        }
        if let Some(done) = t.done.take() {
            return self.sth_transp_reply(t, done);
        }
        if !self.sth_ioc_slot(&mut t.id)? {
            self.sth_ioc_ok()?;
            let id = self.sth_ioc_id();
            let ioc = IocBlk {
                cmd: cmd as i32,
                id,
                count: TRANSPARENT,
                ..IocBlk::default()
            };
            let mut m = Msg::from_bytes(M_IOCTL, &ioc.encode())?;
            m.linkb(Msg::from_bytes(M_DATA, &t.arg.to_ne_bytes())?);
            self.sth_flush_hold();
            t.id = Some(id);
            if !self.sth_ioc_send(id, m) {
                return Err(Stop::Block(Block::IoctlAck));
            }
        }
        self.sth_transp_steps(t)
    }

    /// Forget the transparent ioctl in progress: it failed with `e`.
    fn sth_transp_fail(&mut self, t: &mut TranspIoctl, e: Errno) -> Result<Transp, Stop> {
        t.id = None;
        self.sth.ioc = IocSlot::Free;
        self.sth.note(WAKE_IOCTL, 0);
        Err(e.into())
    }

    /// The platform made the copy the slot's request asked for (or failed to): answer the
    /// module with M_IOCDATA and go on.
    fn sth_transp_reply(&mut self, t: &mut TranspIoctl, done: CopyDone) -> Result<Transp, Stop> {
        let (id, req, copyin) = match &self.sth.ioc {
            IocSlot::Copying { id, req, copyin } if Some(*id) == t.id => (*id, *req, *copyin),
            _ => return self.sth_transp_fail(t, Errno::EINVAL),
        };
        let (rval, data) = match (done, copyin) {
            (CopyDone::In(d), true) => (0, Some(d)),
            (CopyDone::Out, false) => (0, None),
            (CopyDone::Failed(e), _) => (e.0, None),
            _ => (Errno::EINVAL.0, None),
        };
        let resp = CopyResp {
            cmd: req.cmd,
            id: req.id,
            flag: req.flag,
            rval,
            private: req.private,
        };
        let Ok(mut m) = Msg::from_bytes(M_IOCDATA, &resp.encode()) else {
            return self.sth_transp_fail(t, Errno::ENOSR);
        };
        if rval != 0 {
            // The module learns of the failure and gives up; nobody waits for it.
            self.write(m);
            return self.sth_transp_fail(t, Errno(rval));
        }
        if let Some(d) = data {
            m.linkb(d);
        }
        if !self.sth_ioc_send(id, m) {
            return Err(Stop::Block(Block::IoctlAck));
        }
        self.sth_transp_steps(t)
    }

    /// Act on the answer in the slot: the end of the ioctl, or the next copy to make.
    fn sth_transp_steps(&mut self, t: &mut TranspIoctl) -> Result<Transp, Stop> {
        let IocSlot::Answered(id, mp) = core::mem::replace(&mut self.sth.ioc, IocSlot::Free) else {
            t.id = None;
            return Err(Errno::EINVAL.into());
        };
        let ty = mp.db_type();
        if ty == M_IOCACK || ty == M_IOCNAK {
            t.id = None;
            self.sth.note(WAKE_IOCTL, 0);
            let ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
            return match (ty == M_IOCACK, ioc.error) {
                (true, 0) => Ok(Transp::Done(ioc.rval)),
                (_, 0) => Err(Errno::EINVAL.into()),
                (_, e) => Err(Errno(e).into()),
            };
        }
        let req = CopyReq::decode(mp.rd()).unwrap_or_default();
        let copyin = ty == M_COPYIN;
        self.sth.ioc = IocSlot::Copying { id, req, copyin };
        let size = usize::try_from(req.size).unwrap_or(usize::MAX);
        if copyin && size > crate::limits::limits().strmsgsz {
            return self.sth_transp_reply(t, CopyDone::Failed(Errno::ENOSR));
        }
        if copyin {
            return Ok(Transp::Step(TranspStep::CopyIn {
                addr: req.addr,
                size,
            }));
        }
        if ty != M_COPYOUT {
            return self.sth_transp_reply(t, CopyDone::Failed(Errno::EPROTO));
        }
        Ok(Transp::Step(TranspStep::CopyOut {
            addr: req.addr,
            size,
            data: mp,
        }))
    }
}
