//! I_FDINSERT: putmsg with a control part that names another Stream's driver read queue.
//!
//! `struct strfdinsert { struct strbuf ctlbuf, databuf; long flags; int fildes; int offset; }`
//! sends an M_PROTO (M_PCPROTO for `flags` RS_HIPRI) built like putmsg's, except that the
//! pointer-sized word at `offset` of the control part is replaced by a token for "the read
//! queue of the driver of `fildes`'s Stream" (SVR4 puts the `queue_t *` there). Drivers that
//! connect Streams this way (the `loop`/`spx` driver, `mods/loopdrv`) are the users.
//!
//! A queue here is a [`QueueId`] of an arena, not a pointer, so the token is
//! [`QueueId::raw`] of that queue when `fildes`'s Stream is in the same arena as the caller's
//! (another Stream of the same Stream complex, or the caller's own Stream), and
//! [`NO_QUEUE`] otherwise: a driver can interpret only tokens of its own complex. The
//! platform resolves `fildes` into an [`FdTarget`] (EBADF for a closed descriptor, EINVAL for
//! a file that is not a Stream or is linked under a multiplexor).

use super::consts::{MSG_HIPRI, RS_HIPRI, STRCTLSZ};
use super::{Part, SliceIo, Stop};
use crate::errno::Errno;
use crate::stream::VACANT;
use crate::sth::Stream;
use crate::sys;

/// The token of a queue that is not in the caller's arena: it names no queue.
pub const NO_QUEUE: u64 = u64::MAX;

/// Size of the token written into the control part (a pointer on LP64).
pub const FDINSERT_TOKEN: usize = 8;

/// `fildes` of I_FDINSERT as the platform resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdTarget {
    /// A Stream of the caller's arena: the pair index of its Stream head (what `with_end`
    /// takes; the caller's own head included).
    Here(usize),
    /// An open Stream of another arena.
    Elsewhere,
}

/// The argument of I_FDINSERT.
pub struct FdInsert<'a> {
    /// `ctlbuf`: the control part (`len` bytes; must hold the token).
    pub ctl: Part<'a>,
    /// `databuf`: the data part, if any (`len` < 0: none).
    pub data: Option<Part<'a>>,
    /// `flags`: 0 or RS_HIPRI.
    pub flags: i64,
    /// `offset`: where the token goes in the control part.
    pub offset: i32,
    /// `fildes`, resolved.
    pub target: FdTarget,
    /// O_NONBLOCK: EAGAIN instead of waiting for flow control.
    pub nonblock: bool,
}

impl Stream {
    /// I_FDINSERT on the Stream swapped in (see the module docs). Errors: EINVAL for `flags`
    /// other than 0/RS_HIPRI, a `ctlbuf.len` that is not positive, an `offset` not 8-aligned
    /// or whose token would not fit in the control part, or a target that is no open Stream;
    /// then putmsg's: ERANGE (sizes), EFAULT, ENOSR, the write-side errors, EAGAIN/Block
    /// under flow control (not for RS_HIPRI).
    pub(crate) fn sth_fdinsert(&mut self, a: &mut FdInsert<'_>) -> Result<i32, Stop> {
        let flags = match a.flags {
            0 => 0,
            f if f == i64::from(RS_HIPRI) => MSG_HIPRI,
            _ => return Err(Errno::EINVAL.into()),
        };
        let len = usize::try_from(a.ctl.len)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(Errno::EINVAL)?;
        let off = usize::try_from(a.offset)
            .ok()
            .filter(|o| o % FDINSERT_TOKEN == 0 && o + FDINSERT_TOKEN <= len)
            .ok_or(Errno::EINVAL)?;
        let token = self.fdinsert_token(a.target)?;
        if len > STRCTLSZ {
            return Err(Errno::ERANGE.into());
        }
        let mut ctl = sys::vec_zeroed(len)?;
        a.ctl.io.copy_from_user(&mut ctl, 0)?;
        let word = ctl
            .get_mut(off..off + FDINSERT_TOKEN)
            .ok_or(Errno::EINVAL)?;
        word.copy_from_slice(&token.to_ne_bytes());
        let mut io = SliceIo(&mut ctl);
        let cpart = Part {
            io: &mut io,
            len: a.ctl.len,
        };
        let dpart = a.data.as_mut().map(|p| Part {
            io: &mut *p.io,
            len: p.len,
        });
        self.strputpmsg(Some(cpart), dpart, 0, flags, a.nonblock)?;
        Ok(0)
    }

    /// The token for `t`: the driver read queue of the Stream whose head is pair `h` (none
    /// for a pipe end: [`NO_QUEUE`]). EINVAL if `h` is no open Stream head of this arena.
    fn fdinsert_token(&mut self, t: FdTarget) -> Result<u64, Errno> {
        let h = match t {
            FdTarget::Elsewhere => return Ok(NO_QUEUE),
            FdTarget::Here(h) => h,
        };
        let known = h == self.head || self.parked.iter().any(|p| p.head == h);
        if !known || h == VACANT {
            return Err(Errno::EINVAL);
        }
        self.with_head(h, |s| {
            if !s.sth.active || s.sth.closed || s.sth.plex {
                return Err(Errno::EINVAL);
            }
            Ok(s.driver_rq().map_or(NO_QUEUE, |q| q.raw()))
        })
    }
}
