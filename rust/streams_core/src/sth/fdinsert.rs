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
//! No user memory is reached under the caller's Stream lock either: `sth::call::fdinsert`
//! checks the request ([`FdInsertShape::new`]), copies the control part into a message and
//! writes the token into it, builds the reference block and copies the data part, all before
//! the lock; under the lock [`Stream::sth_fdinsert`] only checks and sends, as putmsg does. A
//! flow-controlled call keeps its messages ([`FdInsert`]) across the wait.
//!
//! What changed from the single-arena design: the token was the queue's id in the caller's
//! arena and meant nothing for a Stream of another arena; now every Stream can be named,
//! through the reference block.

use super::consts::{MSG_HIPRI, RS_HIPRI};
use super::{Part, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, MsgType, M_PCPROTO, M_PROTO};
use crate::sth::Stream;
use crate::stream::{QRef, QueueId};

/// The token of a Stream without a driver (a FIFO): it names no queue.
pub const NO_QUEUE: u64 = u64::MAX;

/// Size of the token written into the control part (a pointer on LP64).
pub const FDINSERT_TOKEN: usize = 8;

/// What `struct strfdinsert` asks for, checked before anything is copied: EINVAL for `flags`
/// other than 0/RS_HIPRI, a `ctlbuf.len` that is not positive, an `offset` not 8-aligned or
/// whose token would not fit in the control part; ERANGE for a control part over STRCTLSZ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdInsertShape {
    /// The control part's length.
    pub ctl_len: usize,
    /// Where the token goes in it.
    pub offset: usize,
    /// RS_HIPRI: M_PCPROTO, never flow controlled.
    pub hipri: bool,
}

impl FdInsertShape {
    /// Check `flags`, `ctlbuf.len` and `offset` of a `struct strfdinsert`.
    pub fn new(flags: i64, ctl_len: i32, offset: i32) -> Result<FdInsertShape, Errno> {
        let hipri = match flags {
            0 => false,
            f if f == i64::from(RS_HIPRI) => true,
            _ => return Err(Errno::EINVAL),
        };
        let len = usize::try_from(ctl_len)
            .ok()
            .filter(|n| *n > 0)
            .ok_or(Errno::EINVAL)?;
        let off = usize::try_from(offset)
            .ok()
            .filter(|o| o % FDINSERT_TOKEN == 0 && o + FDINSERT_TOKEN <= len)
            .ok_or(Errno::EINVAL)?;
        if len > crate::limits::limits().strctlsz {
            return Err(Errno::ERANGE);
        }
        Ok(FdInsertShape {
            ctl_len: len,
            offset: off,
            hipri,
        })
    }

    /// The type of the message (and of its reference block).
    pub fn msg_type(&self) -> MsgType {
        if self.hipri {
            M_PCPROTO
        } else {
            M_PROTO
        }
    }
}

/// The token naming `target` (`fildes` resolved), written at `offset` of the control part.
pub fn fdinsert_token(target: Option<&(QRef, &'static str)>) -> u64 {
    target.map_or(NO_QUEUE, |(q, _)| q.qid().raw())
}

/// `struct strfdinsert` as the platform decoded it, before anything is copied in: the parts are
/// still user buffers (see `sth::call::fdinsert`).
pub struct FdInsertArgs<'a> {
    /// `ctlbuf`: the control part (`len` bytes; must hold the token).
    pub ctl: Part<'a>,
    /// `databuf`: the data part, if any (`None` or `len` < 0: none).
    pub data: Option<Part<'a>>,
    /// `flags`: 0 or RS_HIPRI.
    pub flags: i64,
    /// `offset`: where the token goes in the control part.
    pub offset: i32,
    /// `fildes`, resolved by the platform: its driver read queue and the driver's name
    /// ([`Stream::sth_fdinsert_queue`]); `None` for a Stream without a driver.
    pub target: Option<(QRef, &'static str)>,
}

/// I_FDINSERT as it reaches the head, everything already in kernel memory (built by
/// `sth::call::fdinsert` before the lock). The messages leave their slots only when the
/// message is sent or fails for good: on EAGAIN/Block they stay for the retry.
pub struct FdInsert {
    /// The control part, the token already at its offset.
    pub ctl: Option<Msg>,
    /// The data part, if any.
    pub data: Option<Msg>,
    /// The reference block ([`Msg::with_qref`]) to `fildes`'s driver read queue; `None` when
    /// `fildes` has no driver.
    pub qref: Option<Msg>,
    /// RS_HIPRI.
    pub hipri: bool,
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

    /// I_FDINSERT under the lock (see the module docs): send `a` as putmsg sends its parts,
    /// the reference block linked right after the control block. Errors: putmsg's (ERANGE
    /// for a data part outside `[minpsz, maxpsz]`, ENOSR, the write-side errors, EAGAIN/Block
    /// under flow control, not for RS_HIPRI). Nothing is sent on error.
    pub(crate) fn sth_fdinsert(&mut self, a: &mut FdInsert) -> Result<i32, Stop> {
        let flags = if a.hipri { MSG_HIPRI } else { 0 };
        if a.ctl.is_none() {
            return Err(Errno::EINVAL.into()); // taken by an earlier call: nothing to send
        }
        self.sth_putpmsg(&mut a.ctl, &mut a.data, 0, flags, a.nonblock, &mut a.qref)?;
        Ok(0)
    }
}
