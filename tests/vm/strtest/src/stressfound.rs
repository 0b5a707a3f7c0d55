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

/// Run `f` in a child process as uid/gid 65534; its error comes back as the case's.
fn as_nobody(f: impl FnOnce() -> R) -> R {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a live array of two ints.
    ensure!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe");
    // SAFETY: the child only runs `f` (system calls) and writes its verdict, then _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: plain system calls in the child.
        let verdict = unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                Err("setuid 65534".to_string())
            } else {
                f()
            }
        };
        let msg = match verdict {
            Ok(()) => String::new(),
            Err(m) => m,
        };
        // SAFETY: writing a live buffer to our pipe, then leaving at once.
        unsafe {
            libc::write(fds[1], msg.as_ptr().cast(), msg.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(fds[1]) };
    let mut buf = [0u8; 512];
    // SAFETY: reading into a live buffer.
    let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
    let mut st = 0;
    // SAFETY: waiting for our child; `st` is a live int.
    unsafe {
        libc::close(fds[0]);
        libc::waitpid(pid, &mut st, 0);
    }
    ensure!(pid > 0, "fork failed");
    let msg = String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned();
    ensure!(msg.is_empty(), "{msg}");
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "child ended with status {st:#x}"
    );
    Ok(())
}
