//! Transparent ioctls: commands the head does not know go down as M_IOCTL with
//! `ioc_count == TRANSPARENT` and the raw argument in `b_cont`; the module or driver then asks
//! the head to copy user memory in (M_COPYIN) or out (M_COPYOUT), one request at a time, and
//! finally answers M_IOCACK/M_IOCNAK.
//!
//! Each copy is one turn of the same non-sleeping state machine as I_STR: the answer lands in
//! the ioctl slot, the platform calls again, the head does the copy, sends M_IOCDATA down and
//! waits again. Copies answered at once by a loopback are handled in a loop, not by recursion.
//! A failed copy sends M_IOCDATA with `cp_rval` = EFAULT (so the module can clean up) and the
//! ioctl fails with EFAULT without waiting further, as in SVR4.

use super::ioctl::{IocBlk, TRANSPARENT};
use super::{Block, IocSlot, Stop, UserIo, WAKE_IOCTL};
use crate::errno::Errno;
use crate::msg::{Msg, M_COPYIN, M_DATA, M_IOCACK, M_IOCDATA, M_IOCNAK, M_IOCTL};
use crate::sth::Stream;

/// A transparent ioctl in progress: the argument and the caller's memory.
pub struct TranspIoctl<'a> {
    /// The raw ioctl argument (usually a user address), sent down in `b_cont`.
    pub arg: u64,
    /// The caller's address space: offsets are user addresses (`cq_addr`).
    pub mem: &'a mut dyn UserIo,
    /// Set by the head when the M_IOCTL is sent; pass the same struct to the retry.
    pub id: Option<u32>,
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

/// Do the copy an M_COPYIN/M_COPYOUT asks for; the M_IOCDATA data part for M_COPYIN.
fn do_copy(mp: &Msg, req: &CopyReq, mem: &mut dyn UserIo) -> Result<Option<Msg>, Errno> {
    let size = usize::try_from(req.size).map_err(|_| Errno::EINVAL)?;
    let addr = usize::try_from(req.addr).map_err(|_| Errno::EFAULT)?;
    if mp.db_type() == M_COPYIN {
        let mut d = Msg::with_type(M_DATA, size)?;
        let dst = d
            .spare_mut()
            .and_then(|b| b.get_mut(..size))
            .ok_or(Errno::ENOSR)?;
        mem.copy_from_user(dst, addr)?;
        d.adj_wptr(size);
        return Ok(Some(d));
    }
    let mut done = 0usize;
    for b in mp.blocks().skip(1) {
        let n = b.blen().min(size - done);
        mem.copy_to_user(
            addr.saturating_add(done),
            b.rd().get(..n).unwrap_or_default(),
        )?;
        done += n;
        if done == size {
            break;
        }
    }
    Ok(None)
}

impl Stream {
    /// A transparent ioctl `cmd` (see the module docs). Returns `ioc_rval` of the M_IOCACK.
    pub(crate) fn sth_transparent(
        &mut self,
        cmd: u32,
        t: &mut TranspIoctl<'_>,
    ) -> Result<i32, Stop> {
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

    /// Act on answers until the ioctl completes or has to wait for the next one.
    fn sth_transp_steps(&mut self, t: &mut TranspIoctl<'_>) -> Result<i32, Stop> {
        loop {
            let IocSlot::Answered(id, mp) = core::mem::replace(&mut self.sth.ioc, IocSlot::Free)
            else {
                t.id = None;
                return Err(Errno::EINVAL.into());
            };
            let ty = mp.db_type();
            if ty == M_IOCACK || ty == M_IOCNAK {
                t.id = None;
                self.sth.note(WAKE_IOCTL, 0);
                let ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
                return match (ty == M_IOCACK, ioc.error) {
                    (true, 0) => Ok(ioc.rval),
                    (_, 0) => Err(Errno::EINVAL.into()),
                    (_, e) => Err(Errno(e).into()),
                };
            }
            let req = CopyReq::decode(mp.rd()).unwrap_or_default();
            let copied = do_copy(&mp, &req, &mut *t.mem);
            let mut resp = CopyResp {
                cmd: req.cmd,
                id: req.id,
                flag: req.flag,
                rval: 0,
                private: req.private,
            };
            if let Err(e) = &copied {
                resp.rval = e.0;
            }
            let mut m = match Msg::from_bytes(M_IOCDATA, &resp.encode()) {
                Ok(m) => m,
                Err(_) => {
                    t.id = None;
                    self.sth.note(WAKE_IOCTL, 0);
                    return Err(Errno::ENOSR.into());
                }
            };
            match copied {
                Ok(data) => {
                    if let Some(d) = data {
                        m.linkb(d);
                    }
                    if !self.sth_ioc_send(id, m) {
                        return Err(Stop::Block(Block::IoctlAck));
                    }
                }
                Err(e) => {
                    // The module learns of the failure and gives up; nobody waits for it.
                    t.id = None;
                    self.write(m);
                    self.sth.note(WAKE_IOCTL, 0);
                    return Err(e.into());
                }
            }
        }
    }
}
