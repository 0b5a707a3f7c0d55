//! I_FDINSERT: putmsg with a control part that names another Stream's driver read queue.
//!
//! `struct strfdinsert { struct strbuf ctlbuf, databuf; long flags; int fildes; int offset; }`
//! sends an M_PROTO (M_PCPROTO for `flags` RS_HIPRI) built like putmsg's, except that the
//! pointer-sized word at `offset` of the control part names "the read queue of the driver of
//! `fildes`'s Stream" (SVR4 puts the `queue_t *` there). Drivers that join Streams this way
//! (the `loop`/`spx` driver, `mods/loopdrv`) are the users.
//!
//! A queue of another Stream is a [`QRef`] (a counted reference to that Stream's perimeter
//! and the queue's id there), which bytes cannot carry. So the message carries it as a block
//! of its own: right after the user's control block comes a zero-length control block
//! holding the reference and the driver's name ([`Msg::with_qref`]); the word at `offset`
//! holds a token, [`QueueId::raw`] of that queue in its own Stream ([`NO_QUEUE`] when
//! `fildes` has no driver), which only says which queue it was. A driver acts on the
//! reference block alone: a token a user forges in a plain putmsg comes without one and
//! names nothing, and a token is never a pointer. Where the message reaches a Stream head
//! the reference block adds no bytes to the control part getmsg sees.
//!
//! The platform resolves `fildes` (EBADF for a closed descriptor, EINVAL for a file that is
//! not a Stream): under the target's lock [`Stream::sth_fdinsert_queue`] gives its driver read
//! queue and driver name (EINVAL while it is linked under a multiplexor), and the platform
//! makes the [`QRef`] from its perimeter. `fildes` may be the caller's own Stream.
//!
//! What changed from the single-arena design: the token was the queue's id in the caller's
//! arena and meant nothing for a Stream of another arena; now every Stream can be named,
//! through the reference block.

use super::consts::{MSG_HIPRI, RS_HIPRI, STRCTLSZ};
use super::{Part, SliceIo, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, M_PCPROTO, M_PROTO};
use crate::sth::Stream;
use crate::stream::{QRef, QueueId};
use crate::sys;

/// The token of a Stream without a driver (a FIFO): it names no queue.
pub const NO_QUEUE: u64 = u64::MAX;

/// Size of the token written into the control part (a pointer on LP64).
pub const FDINSERT_TOKEN: usize = 8;

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
    /// `fildes`, resolved by the platform: its driver read queue and the driver's name
    /// ([`Stream::sth_fdinsert_queue`]); `None` for a Stream without a driver.
    pub target: Option<(QRef, &'static str)>,
    /// O_NONBLOCK: EAGAIN instead of waiting for flow control.
    pub nonblock: bool,
}

impl Stream {
    /// What I_FDINSERT needs of this Stream as `fildes` (the platform, under this Stream's
    /// lock): its driver read queue and the driver's name, `None` if it has no driver (a
    /// FIFO). EINVAL if the Stream is closed or linked under a multiplexor.
    pub fn sth_fdinsert_queue(&self) -> Result<Option<(QueueId, &'static str)>, Errno> {
        if self.sth.closed || self.sth.plex.is_some() || self.is_closed() {
            return Err(Errno::EINVAL);
        }
        Ok(self.driver_rq().and_then(|q| self.name(q).map(|n| (q, n))))
    }

    /// I_FDINSERT (see the module docs). Errors: EINVAL for `flags` other than 0/RS_HIPRI, a
    /// `ctlbuf.len` that is not positive, an `offset` not 8-aligned or whose token would not
    /// fit in the control part; then putmsg's: ERANGE (sizes), EFAULT, ENOSR, the write-side
    /// errors, EAGAIN/Block under flow control (not for RS_HIPRI). Nothing is sent on error.
    pub(crate) fn sth_fdinsert(&mut self, a: &mut FdInsert<'_>) -> Result<i32, Stop> {
        let (flags, ty) = match a.flags {
            0 => (0, M_PROTO),
            f if f == i64::from(RS_HIPRI) => (MSG_HIPRI, M_PCPROTO),
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
        if len > STRCTLSZ {
            return Err(Errno::ERANGE.into());
        }
        let token = a.target.as_ref().map_or(NO_QUEUE, |(q, _)| q.qid().raw());
        let mut ctl = sys::vec_zeroed(len)?;
        a.ctl.io.copy_from_user(&mut ctl, 0)?;
        let word = ctl
            .get_mut(off..off + FDINSERT_TOKEN)
            .ok_or(Errno::EINVAL)?;
        sys::copy_bytes(word, &token.to_ne_bytes());
        let more = match &a.target {
            Some((q, name)) => Some(Msg::with_qref(ty, q.clone(), name)?),
            None => None,
        };
        let mut io = SliceIo(&mut ctl);
        let cpart = Part {
            io: &mut io,
            len: a.ctl.len,
        };
        let dpart = a.data.as_mut().map(|p| Part {
            io: &mut *p.io,
            len: p.len,
        });
        self.sth_putpmsg(Some(cpart), dpart, 0, flags, a.nonblock, more)?;
        Ok(0)
    }
}
