//! strtest cases for bugs strstress found (docs/stress.md): each case is the minimal system-call
//! sequence of one report, which hung or crashed the kernel before its fix.

use super::*;

const ECHO: &str = "/dev/streams/clone/echo";

/// `I_PUSH pipemod` on a driver Stream, then `I_FLUSH FLUSHW`: the head sent FLUSHW down,
/// pipemod turned it into FLUSHR, the driver reflected it up, pipemod turned it back into
/// FLUSHW, and the head (which marked reflected flushes MSGNOLOOP only on pipes and FIFOs)
/// sent it down again, for ever, inside the ioctl: a soft lockup any user could cause. Now
/// the flush comes back once, the ioctl returns, and the Stream still works. Run as uid 65534.
pub(crate) fn t_pipemod_flush_on_driver_returns() -> R {
    as_nobody(|| {
        let s = e(Stream::open(ECHO), "open echo")?;
        e(s.push("pipemod"), "I_PUSH pipemod")?;
        for f in [FLUSHW, FLUSHR, FLUSHRW] {
            ensure!(
                e(s.ioctl_int(I_FLUSH, f), "I_FLUSH")? == 0,
                "I_FLUSH {f} != 0"
            );
        }
        ensure!(e(s.write(b"still here"), "write")? == 10, "short write");
        ensure!(read_n(&s, 10)? == b"still here", "echo came back different");
        Ok(())
    })
}
