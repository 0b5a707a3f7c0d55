//! Streams with a Stream head, each in its own perimeter, as the kernel platform keeps them:
//! what the shared tests of multiplexing (`mods/mux`), the loop driver (`mods/loopdrv`) and
//! I_FDINSERT use to open, resolve and close them.

use crate::check_ok;
use crate::errno::Errno;
use crate::ktest::Failure;
use crate::perim::test::TestPerim;
use crate::sth::{StrHead, Stream};
use crate::stream::{QRef, StreamTab};
use crate::sys::Arc;

/// A Stream with a Stream head in its own perimeter.
pub type Perim = Arc<TestPerim<StrHead>>;

/// Open a Stream with a Stream head on `drv` in its own perimeter, and give it its perimeter
/// (`Stream::set_perimeter`), as the platform does for every Stream.
pub fn open(drv: &'static StreamTab) -> Result<Perim, Failure> {
    let s = check_ok!(Stream::sth_new(drv));
    Ok(check_ok!(TestPerim::new_owned(s)))
}

/// close(2) of the Stream's last file, as the platform does it: the head closes, and the
/// gate closes with it unless the close was put off (a Stream linked under a multiplexor
/// closes when the link goes).
pub fn close(p: &Perim) {
    if p.op(|s| {
        s.sth_close();
        s.is_closed()
    }) {
        p.close_gate();
    }
}

/// `fildes` of I_FDINSERT resolved as the platform does it: the Stream's driver read queue,
/// under its own lock, made into a reference with its perimeter.
pub fn fdinsert_target(p: &Perim) -> Result<Option<(QRef, &'static str)>, Errno> {
    Ok(p.op(|s| s.sth_fdinsert_queue())?
        .map(|(q, name)| (p.qref(q), name)))
}
