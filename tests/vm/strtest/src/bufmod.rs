//! bufmod(7M) on a STREAMS pipe end: I_PUSH "bufmod" on one end, settings through I_STR
//! (SBIOC*), small writes on the other end read back as chunks of `sb_hdr` records.

use streams::bufmod::*;
use streams::{strioctl, Stream, FLUSHW, I_FLUSH, I_NREAD, I_STR};

use crate::{e, errno_of, ioctl_ptr, set_nonblock, R};

/// I_STR `cmd` with `arg` as data (the answer is written back into `arg`); the ioctl result
/// and the answer's length.
fn istr(s: &Stream, cmd: i32, arg: &mut [u8]) -> std::io::Result<(i32, i32)> {
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: -1,
        ic_len: arg.len() as i32,
        ic_dp: arg.as_mut_ptr().cast(),
    };
    let r = ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())?;
    Ok((r, ic.ic_len))
}

fn set_uint(s: &Stream, cmd: i32, v: u32) -> R {
    e(istr(s, cmd, &mut v.to_ne_bytes()), "I_STR set")?;
    Ok(())
}

fn get_uint(s: &Stream, cmd: i32) -> Result<u32, String> {
    let mut b = [0xffu8; 4];
    let (_, len) = e(istr(s, cmd, &mut b), "I_STR get")?;
    ensure!(len == 4, "get answered {len} bytes");
    Ok(u32::from_ne_bytes(b))
}

/// The records of a chunk: (header, data).
fn records(buf: &[u8]) -> Result<Vec<(sb_hdr, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let h = sb_hdr::read_from(&buf[at..]).ok_or("short header")?;
        let tot = h.sbh_totlen as usize;
        ensure!(
            tot.is_multiple_of(8) && tot >= 24,
            "record length {tot} not padded to 8"
        );
        ensure!(at + tot <= buf.len(), "record runs past the chunk");
        let d = buf[at + 24..at + 24 + h.sbh_msglen as usize].to_vec();
        out.push((h, d));
        at += tot;
    }
    Ok(out)
}

pub(crate) fn t_bufmod_on_pipe() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(b.push("bufmod"), "I_PUSH bufmod")?;
    ensure!(
        get_uint(&b, SBIOCGCHUNK)? == SB_DFLT_CHUNK as u32,
        "default chunk"
    );
    set_uint(&b, SBIOCSCHUNK, 64)?;
    ensure!(get_uint(&b, SBIOCGCHUNK)? == 64, "chunk not set");
    let err = errno_of(istr(&b, SBIOCGTIME, &mut [0u8; 16]), "SBIOCGTIME")?;
    ensure!(
        err == libc::ERANGE,
        "SBIOCGTIME with no timeout: errno {err}"
    );
    let err = errno_of(
        istr(&b, SBIOCSFLAGS, &mut 0x100u32.to_ne_bytes()),
        "bad flags",
    )?;
    ensure!(err == libc::EINVAL, "SBIOCSFLAGS 0x100: errno {err}");

    // Three 10-byte writes: 40-byte records, a chunk goes up when the next does not fit.
    for w in [b"first.....", b"second....", b"third....."] {
        e(a.write(w), "write")?;
    }
    let (msgs, _) = e(b.ioctl_get_int(I_NREAD), "I_NREAD")?;
    ensure!(msgs == 2, "{msgs} chunks at the head, expected 2");
    let mut buf = [0u8; 256];
    let n = e(b.read(&mut buf), "read chunks")?;
    let recs = records(&buf[..n])?;
    ensure!(
        n == 80 && recs.len() == 2,
        "read {n} bytes, {} records",
        recs.len()
    );
    ensure!(
        recs[0].1 == b"first....." && recs[1].1 == b"second....",
        "record data"
    );
    ensure!(
        recs[0].0.sbh_origlen == 10 && recs[0].0.sbh_drops == 0,
        "header {:?}",
        recs[0].0
    );
    set_nonblock(&b, true)?;
    let err = errno_of(b.read(&mut buf), "read with a partial chunk")?;
    ensure!(err == libc::EAGAIN, "partial chunk readable: errno {err}");
    // I_FLUSH FLUSHW pushes the partial chunk up.
    e(b.ioctl_int(I_FLUSH, FLUSHW), "I_FLUSH FLUSHW")?;
    let n = e(b.read(&mut buf), "read pushed chunk")?;
    let recs = records(&buf[..n])?;
    ensure!(
        recs.len() == 1 && recs[0].1 == b"third.....",
        "pushed chunk {recs:?}"
    );

    // Snapshot length 4 and a zero timeout: every write comes up at once, truncated.
    set_uint(&b, SBIOCSSNAP, 4)?;
    e(istr(&b, SBIOCSTIME, &mut [0u8; 16]), "SBIOCSTIME 0")?;
    ensure!(
        get_uint(&b, SBIOCGCHUNK)? == 0,
        "zero timeout must zero the chunk"
    );
    e(a.write(b"0123456789"), "write")?;
    let n = e(b.read(&mut buf), "read truncated")?;
    let recs = records(&buf[..n])?;
    ensure!(n == 32 && recs.len() == 1, "truncated record: {n} bytes");
    let h = recs[0].0;
    ensure!(
        h.sbh_origlen == 10 && h.sbh_msglen == 4 && recs[0].1 == b"0123",
        "truncated header {h:?}"
    );
    // Without headers the data is passed as it is.
    set_uint(&b, SBIOCSFLAGS, SB_NO_HEADER as u32)?;
    set_uint(&b, SBIOCSSNAP, 0)?;
    e(a.write(b"plain"), "write")?;
    let n = e(b.read(&mut buf), "read plain")?;
    ensure!(&buf[..n] == b"plain", "SB_NO_HEADER read {:?}", &buf[..n]);
    // The write side passes through: b's writes reach a unchanged.
    e(b.write(b"upstream"), "write b")?;
    let n = e(a.read(&mut buf), "read a")?;
    ensure!(
        &buf[..n] == b"upstream",
        "b to a through bufmod: {:?}",
        &buf[..n]
    );
    e(b.pop(), "I_POP bufmod")?;
    Ok(())
}

/// SBIOCSTIME with a timeout: a partial chunk goes up by itself when its time is up (the
/// qtimeout timer), without another record or a flush; a blocked reader wakes for it.
pub(crate) fn t_bufmod_timeout_fires() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(b.push("bufmod"), "I_PUSH bufmod")?;
    set_uint(&b, SBIOCSCHUNK, 4096)?;
    // struct timeval { tv_sec = 0, tv_usec = 200000 }.
    let mut tv = [0u8; 16];
    tv[8..16].copy_from_slice(&200_000i64.to_ne_bytes());
    e(istr(&b, SBIOCSTIME, &mut tv), "SBIOCSTIME 200 ms")?;
    let t0 = std::time::Instant::now();
    e(a.write(b"alpha"), "write")?;
    e(a.write(b"beta"), "write")?;
    let mut buf = [0u8; 256];
    // Wait at most 5 s (bufmod drops, and counts, a record it has no memory for: under the
    // fault-injection pass nothing may come), then a blocking read: the chunk arrives only
    // through the timer.
    let ev = crate::poll1(&b, libc::POLLIN, 5000)?;
    ensure!(ev & libc::POLLIN != 0, "no chunk within 5 s (poll {ev:#x})");
    let n = e(b.read(&mut buf), "read the timed-out chunk")?;
    let took = t0.elapsed();
    let recs = records(&buf[..n])?;
    ensure!(
        recs.len() == 2 && recs[0].1 == b"alpha" && recs[1].1 == b"beta",
        "chunk {recs:?}"
    );
    ensure!(
        took >= std::time::Duration::from_millis(150) && took < std::time::Duration::from_secs(5),
        "chunk came after {took:?}, expected about 200 ms"
    );
    Ok(())
}
