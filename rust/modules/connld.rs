// SPDX-License-Identifier: GPL-2.0
//! connld(7) opens: an open of an fattach'ed path whose Stream head has `connld` pushed makes
//! a new STREAMS pipe, gives one end to the opener and passes the other to the server (the
//! module and the head side are in `rust/pipe`, `connld.rs`).
//!
//! ```text
//!  server: s_pipe(p); I_PUSH "connld" on p[0]; fattach(p[0], path)
//!  client: open(path) ─▶ strattach_open ─▶ open_tramp ─▶ connld::open
//!            new pipe (two StrPerims) ─ server end ─▶ new FIFO file (pseudo fs) ─▶ M_PASSFP
//!                                                 └─ connld_pass on p[0] ─▶ p[1]'s read queue
//!                     └──────── client end ─▶ the opener's file (private_data; inode: the path's)
//!  server: ioctl(p[1], I_RECVFD) ─▶ its end of the client's pipe
//! ```
//!
//! The M_PASSFP message is the one I_SENDFD builds (`fdpass::passfp_msg`), so the server's
//! `strrecvfd` reports the client's effective uid and gid. When the server has too many
//! connections not yet received (its end's read queue is full), a blocking open waits
//! (interruptibly) and an O_NONBLOCK open fails with EAGAIN; with the server's end closed the
//! open fails with ENXIO. On any failure the new pipe is closed again: nothing reaches the
//! server, or what did is freed with its queue.

use kernel::sync::Arc;

use crate::chardev::CallFile;
use crate::errno::Errno;
use crate::fdpass::passfp_msg;
use crate::pipe::connld::{connld_pass, sth_connld};
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::stream::Registry;

/// An open of a path attached to the head `attached`: with connld pushed, the opener's
/// end of a new pipe whose other end has been passed to the server; `None` without connld
/// (an ordinary open of the attached head). `call` is the file being opened (already a file
/// of the attached device), whose operations the server's new file gets too.
pub(crate) fn open(
    attached: &Arc<StrPerim>,
    registry: &Arc<Registry>,
    call: &CallFile<'_, StrFile>,
    nonblock: bool,
) -> Result<Option<Arc<StrFile>>, Errno> {
    if !attached.op(Caller::Nobody, |s| sth_connld(s)) {
        return Ok(None);
    }
    // Until it is the opener's file, dropping the client's end (on any failure below) closes
    // it; dropping the message closes the server's file, and its end.
    let (client, server) = crate::weld::new_pipe_files(registry)?;
    let mut mp = Some(passfp_msg(server.into_fifo_file(call, false)?, attached)?);
    match crate::strwait::run_quiet(attached, nonblock, |s| connld_pass(s, &mut mp, nonblock)) {
        // Not sent (connld popped meanwhile: an ordinary open after all): the client's end
        // closes as it drops.
        Ok(true) => Ok(client.into_opened()),
        r => r.map(|_| None),
    }
}
