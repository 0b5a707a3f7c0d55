//! strtest cases for the Stream head file operations beyond read/write/ioctl/poll: the I_STR
//! timeout (`ic_timout`, ETIME), readv/writev (one message per writev), compat and fasync
//! (O_ASYNC → SIGIO), and the close-time drain (I_SETCLTIME).

use super::*;

const NULS: &str = "/dev/streams/clone/nuls";
/// The I_STR command `nuls` swallows without an answer (its timeout test command).
const NULS_IOC_SINK: i32 = (b'n' as i32) << 8 | 1;

fn istr_timed(s: &Stream, cmd: i32, timout: i32) -> io::Result<i32> {
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: timout,
        ic_len: 0,
        ic_dp: std::ptr::null_mut(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

pub(crate) fn t_istr_timeout() -> R {
    let s = e(Stream::open(NULS), NULS)?;
    let t = Instant::now();
    let err = errno_of(istr_timed(&s, NULS_IOC_SINK, 1), "I_STR never answered")?;
    let dt = t.elapsed();
    ensure!(
        err == libc::ETIME,
        "unanswered I_STR: errno {err}, want ETIME"
    );
    ensure!(
        dt >= Duration::from_millis(900) && dt < Duration::from_secs(5),
        "ic_timout 1 s expired after {dt:?}"
    );
    // The ioctl was cancelled: the slot is free, the next one is answered at once.
    let t = Instant::now();
    let err = errno_of(istr_timed(&s, 1, 0), "I_STR after timeout")?;
    ensure!(err == libc::EINVAL, "I_STR after the timeout: errno {err}");
    ensure!(t.elapsed() < Duration::from_millis(500), "slot not freed");
    let err = errno_of(istr_timed(&s, 1, -2), "ic_timout -2")?;
    ensure!(err == libc::EINVAL, "ic_timout -2: errno {err}");
    Ok(())
}
