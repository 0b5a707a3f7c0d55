//! I_SENDFD and I_RECVFD: passing an open file across a STREAMS pipe as an M_PASSFP message.
//!
//! The core does not know what a file is. The platform builds the M_PASSFP message itself
//! (an esballoc'd block whose free routine drops its file reference, plus a continuation block
//! with the sender's uid and gid) and hands it to [`Stream::strsendfd`], which sends it to the
//! Stream head at the other end like a write would, without ever blocking. That head queues it
//! like data; [`Stream::strrecvfd`] takes it off again when it is the first message, and the
//! platform turns it into a new descriptor. Freeing the message (a flush, a close with the
//! file still queued) drops the reference, so a passed file is never leaked or lost.
//!
//! read(2) and getmsg(2) fail with EBADMSG while an M_PASSFP message is first at the head,
//! as in SVR4.

use super::take::ReaderToken;
use super::write::wait;
use super::{Block, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, M_PASSFP};
use crate::sth::Stream;

impl Stream {
    /// I_SENDFD: send the M_PASSFP message `mp` to the Stream head at the other end of this
    /// pipe. Errors: EINVAL when this is not a pipe (a FIFO's write side comes back to its
    /// own head, so a FIFO sent over itself would hold its own file: refused, as
    /// `docs/security.md` explains), or `mp` is not M_PASSFP; EBADF after
    /// close, the write error, EPIPE (SIGPIPE) / ENXIO after hangup as for write; EAGAIN when
    /// the other end's read queue is full (I_SENDFD never waits). On error `mp` is freed,
    /// which releases the file it carries.
    pub fn strsendfd(&mut self, mp: Msg) -> Result<(), Stop> {
        if !self.is_pipe() || mp.db_type() != M_PASSFP {
            return Err(Errno::EINVAL.into());
        }
        self.sth_write_ok()?;
        if !self.sth_canput(0) {
            return Err(Errno::EAGAIN.into());
        }
        self.sth_flush_hold();
        self.write(mp);
        Ok(())
    }

    /// I_RECVFD: take the M_PASSFP message first at this head. Errors: EBADF after close, the
    /// read error, EBADMSG when the first message is something else, ENXIO at hangup with
    /// nothing queued, EAGAIN/Block when nothing is queued or another reader of the head is
    /// copying a take out (what it puts back would come first: reader token `tok`).
    pub fn strrecvfd(&mut self, nonblock: bool, tok: &ReaderToken) -> Result<Msg, Stop> {
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        if let Some(e) = self.sth.rerr() {
            return Err(e.into());
        }
        if !tok.free() {
            return Err(wait(nonblock, Block::Readable));
        }
        let h = self.head_rq();
        match self.queue(h).and_then(|q| q.first()).map(Msg::db_type) {
            Some(t) if t == M_PASSFP => {}
            Some(_) => return Err(Errno::EBADMSG.into()),
            None if self.sth.hangup => return Err(Errno::ENXIO.into()),
            None => return Err(wait(nonblock, Block::Readable)),
        }
        self.qctx(h).getq().ok_or(Stop::Err(Errno::EBADMSG))
    }
}
