//! [`PerimCall`]: a Stream in a [`TestPerim`] as the platform of a system call (the host
//! harnesses and the driver tests that go through `sth::call`, as the kernel's `StrFile`).

use core::cell::Cell;

use super::never_sleeps;
use crate::errno::Errno;
use crate::msg::Msg;
use crate::perim::test::TestPerim;
use crate::sth::call::{HeadCall, HeadShared};
use crate::sth::{Stop, StrHead, Stream};
use crate::sys::Arc;

/// Each step of a call is a lock hold of the perimeter ([`TestPerim::op`], the read's
/// [`TestPerim::op_read`]); a step that would sleep fails at once ([`never_sleeps`]). With
/// `express`, putmsg may send without the lock (`perim` step 9), as the kernel's does.
pub struct PerimCall {
    /// The Stream's perimeter.
    pub p: Arc<TestPerim<StrHead>>,
    shared: HeadShared,
    express: bool,
    /// Express sends made.
    sent: Cell<usize>,
}

impl PerimCall {
    /// The platform of calls on `p`; `express`: putmsg may go express.
    pub fn new(p: Arc<TestPerim<StrHead>>, express: bool) -> PerimCall {
        PerimCall {
            p,
            shared: HeadShared::new(),
            express,
            sent: Cell::new(0),
        }
    }

    /// How many putmsgs were sent express so far.
    pub fn express_sends(&self) -> usize {
        self.sent.get()
    }
}

impl HeadCall for PerimCall {
    fn run<R>(
        &self,
        nonblock: bool,
        _limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.p.op(|s| never_sleeps(s, nonblock, op, cancel))
    }

    fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        self.p
            .op_read(ready, |s| never_sleeps(s, nonblock, op, |_| ()))
    }

    fn shared(&self) -> &HeadShared {
        &self.shared
    }

    fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> bool {
        let sent = self.express && self.p.send_express(ctl, data);
        self.sent.set(self.sent.get() + usize::from(sent));
        sent
    }
}
