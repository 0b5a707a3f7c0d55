//! Sequence-checked channels: a writer thread sends numbered messages over a fresh pair of
//! Streams while a reader thread checks that each arrives exactly once, in order within its
//! band, intact; the rest of the worker keeps making random calls (and the watchdog keeps
//! interrupting both with signals) meanwhile.
//!
//! Every message is one putpmsg of a random band (0, 1, 2 or 7: a higher band overtakes a
//! lower one, so order is checked per band), a data part of random size and sometimes a
//! control part. The last message (band 0, behind every earlier one) carries how many the
//! writer sent in each band; the reader's counts must match. A putpmsg that fails (EINTR,
//! EAGAIN, ENOSR…) sent nothing and is retried; a getpmsg that fails took nothing.
//!
//! The pair of each round is chosen at random: a STREAMS pipe, a pipe with `nullmod` or
//! `pipemod` pushed on both ends before the round, two `spx` Streams joined with I_FDINSERT,
//! or a pipe whose reading end was passed through another pipe with I_SENDFD/I_RECVFD.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use streams::types::strrecvfd;
use streams::*;

use crate::devices::DevKind;
use crate::sys;
use crate::worker::{new_thread, Ctx, Th};

const MAGIC: u32 = 0x5351_5354;
const DATA: u8 = 1;
const END: u8 = 2;
const BANDS: [i32; 4] = [0, 1, 2, 7];
/// Header: magic u32, kind u8, band u8, pad u16, seq u64, length u32.
const HDR: usize = 20;

const RETRY: &[i32] = &[libc::EINTR, libc::EAGAIN, libc::ENOSR, libc::ENOMEM];
/// s_pipe: plus ENFILE (no file or inode for an end; nothing was made).
const PIPE_RETRY: &[i32] = &[
    libc::EINTR,
    libc::EAGAIN,
    libc::ENOSR,
    libc::ENOMEM,
    libc::ENFILE,
];

fn band_index(b: i32) -> Option<usize> {
    BANDS.iter().position(|x| *x == b)
}

fn pattern(seq: u64, i: usize) -> u8 {
    (seq as usize).wrapping_mul(31).wrapping_add(i) as u8
}

fn encode(buf: &mut [u8], kind: u8, band: i32, seq: u64, len: usize) {
    buf[..4].copy_from_slice(&MAGIC.to_ne_bytes());
    buf[4] = kind;
    buf[5] = band as u8;
    buf[6..8].fill(0);
    buf[8..16].copy_from_slice(&seq.to_ne_bytes());
    buf[16..20].copy_from_slice(&(len as u32).to_ne_bytes());
    for (i, b) in buf[HDR..len].iter_mut().enumerate() {
        *b = pattern(seq, i);
    }
}

/// Make the pair of a round: (writer end, reader end).
fn pair(ctx: &Ctx, th: &mut Th) -> io::Result<(Stream, Stream)> {
    let spx = ctx
        .devices
        .iter()
        .find(|d| d.kind == DevKind::Loop && d.path.ends_with("spx"))
        .map(|d| d.path.clone());
    let choice = th.rng.u32(..5);
    let retry_all = [RETRY, &[libc::ENXIO, libc::EIO]].concat();
    match (choice, spx) {
        (3, Some(p)) => {
            let a = Stream::from_fd(ctx.call(th, "seq open spx", &retry_all, || {
                sys::open(&p, libc::O_RDWR)
            })?);
            let b = Stream::from_fd(ctx.call(th, "seq open spx", &retry_all, || {
                sys::open(&p, libc::O_RDWR)
            })?);
            let mut ctl = [0u8; 8];
            let mut a_ins = streams::types::strfdinsert {
                ctlbuf: streams::types::strbuf {
                    maxlen: 0,
                    len: 8,
                    buf: ctl.as_mut_ptr().cast(),
                },
                databuf: streams::types::strbuf::NONE,
                flags: 0,
                fildes: b.raw(),
                offset: 0,
            };
            ctx.call(th, "seq I_FDINSERT", RETRY, || {
                // SAFETY: `a_ins` and its 8-byte control buffer are live.
                unsafe {
                    sys::ioctl_ptr(
                        a.raw(),
                        I_FDINSERT,
                        &mut a_ins as *mut _ as *mut libc::c_void,
                    )
                }
            })?;
            Ok((a, b))
        }
        _ => {
            let (a, b) = ctx.call(th, "seq s_pipe", PIPE_RETRY, Stream::pipe)?;
            match choice {
                1 | 2 => {
                    let m = if choice == 1 { "nullmod" } else { "pipemod" };
                    if ctx.modules.iter().any(|x| x == m) {
                        ctx.call(th, "seq I_PUSH", RETRY, || a.push(m))?;
                        ctx.call(th, "seq I_PUSH", RETRY, || b.push(m))?;
                    }
                    Ok((a, b))
                }
                4 => {
                    // Pass the reading end through a second pipe.
                    let (c0, c1) = ctx.call(th, "seq s_pipe", PIPE_RETRY, Stream::pipe)?;
                    ctx.call(th, "seq I_SENDFD", RETRY, || {
                        sys::ioctl_int(c0.raw(), I_SENDFD, b.raw())
                    })?;
                    drop(b);
                    let mut r = strrecvfd {
                        fd: -1,
                        uid: 0,
                        gid: 0,
                        fill: [0; 8],
                    };
                    ctx.call(th, "seq I_RECVFD", RETRY, || {
                        // SAFETY: `r` is a live strrecvfd.
                        unsafe {
                            sys::ioctl_ptr(c1.raw(), I_RECVFD, (&mut r as *mut strrecvfd).cast())
                        }
                    })?;
                    // SAFETY: I_RECVFD installed `r.fd` for us.
                    let fd = unsafe {
                        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(r.fd)
                    };
                    Ok((a, Stream::from_fd(fd)))
                }
                _ => Ok((a, b)),
            }
        }
    }
}

/// Retry `f` while it fails with an errno of RETRY (and the run goes on); `None` when
/// stopping or after another errno (reported).
fn retry<T>(
    ctx: &Ctx,
    th: &mut Th,
    abort: &AtomicBool,
    op: &str,
    mut f: impl FnMut() -> io::Result<T>,
) -> Option<T> {
    loop {
        if ctx.stopping() || abort.load(Ordering::Relaxed) {
            return None;
        }
        match ctx.call(th, op, RETRY, &mut f) {
            Ok(v) => return Some(v),
            Err(e) if RETRY.contains(&sys::errno(&e)) => {
                if sys::errno(&e) != libc::EINTR {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            Err(_) => return None,
        }
    }
}

fn writer(ctx: &Ctx, th: &mut Th, abort: &AtomicBool, w: &Stream, n: u64) -> Option<[u64; 4]> {
    let mut sent = [0u64; 4];
    let mut buf = vec![0u8; 8192];
    for _ in 0..n {
        let bi = th.rng.usize(..BANDS.len());
        let band = BANDS[bi];
        let seq = sent[bi] + 1;
        let len = HDR + th.rng.usize(..=4096);
        encode(&mut buf, DATA, band, seq, len);
        let ctl = seq.to_ne_bytes();
        let with_ctl = th.rng.u32(..4) == 0;
        retry(ctx, th, abort, "seq putpmsg", || {
            w.putpmsg(
                with_ctl.then_some(&ctl[..]),
                Some(&buf[..len]),
                band,
                MSG_BAND,
            )
        })?;
        sent[bi] = seq;
    }
    let mut end = [0u8; HDR + 32];
    encode(&mut end, END, 0, 0, HDR);
    for (i, c) in sent.iter().enumerate() {
        end[HDR + i * 8..HDR + i * 8 + 8].copy_from_slice(&c.to_ne_bytes());
    }
    retry(ctx, th, abort, "seq putpmsg end", || {
        w.putpmsg(None, Some(&end[..]), 0, MSG_BAND)
    })?;
    Some(sent)
}

/// Read and check until the end message; `Err` describes the first fault found.
fn reader(ctx: &Ctx, th: &mut Th, abort: &AtomicBool, r: &Stream) -> Result<Option<u64>, String> {
    let mut got = [0u64; 4];
    let mut buf = vec![0u8; 8192];
    let mut ctl = [0u8; 64];
    let mut msgs = 0;
    loop {
        let Some(m) = retry(ctx, th, abort, "seq getpmsg", || {
            r.getpmsg(Some(&mut ctl[..]), Some(&mut buf[..]), 0, MSG_ANY)
        }) else {
            return Ok(None);
        };
        let len = m.data_len.unwrap_or(0);
        if m.more != 0 {
            return Err(format!("message larger than its buffer (more={})", m.more));
        }
        if len < HDR || u32::from_ne_bytes(buf[..4].try_into().unwrap_or_default()) != MAGIC {
            return Err(format!(
                "message {msgs}: {len} bytes without the header (band {})",
                m.band
            ));
        }
        let (kind, band) = (buf[4], i32::from(buf[5]));
        let seq = u64::from_ne_bytes(buf[8..16].try_into().unwrap_or_default());
        let want_len = u32::from_ne_bytes(buf[16..20].try_into().unwrap_or_default()) as usize;
        if band != m.band {
            return Err(format!(
                "message sent in band {band} arrived in band {}",
                m.band
            ));
        }
        if kind == END {
            for (i, c) in got.iter().enumerate() {
                let sent = u64::from_ne_bytes(
                    buf[HDR + i * 8..HDR + i * 8 + 8]
                        .try_into()
                        .unwrap_or_default(),
                );
                if *c != sent {
                    return Err(format!(
                        "band {}: {sent} sent, {c} received (lost)",
                        BANDS[i]
                    ));
                }
            }
            return Ok(Some(msgs));
        }
        let Some(bi) = band_index(band) else {
            return Err(format!("message in unknown band {band}"));
        };
        if seq != got[bi] + 1 {
            return Err(format!(
                "band {band}: message {seq} after {} ({})",
                got[bi],
                if seq <= got[bi] {
                    "duplicated or reordered"
                } else {
                    "lost"
                }
            ));
        }
        if want_len != len {
            return Err(format!(
                "band {band} message {seq}: {len} bytes, sent {want_len}"
            ));
        }
        if let Some(i) = (HDR..len).find(|&i| buf[i] != pattern(seq, i - HDR)) {
            return Err(format!("band {band} message {seq}: byte {i} corrupted"));
        }
        if let Some(cl) = m.ctl_len {
            if cl != 8 || ctl[..8] != seq.to_ne_bytes() {
                return Err(format!("band {band} message {seq}: control part corrupted"));
            }
        }
        got[bi] = seq;
        msgs += 1;
    }
}

/// Rounds until the run stops.
pub(crate) fn run(ctx: &Ctx, th: &mut Th) {
    let widx = th.idx + 1;
    while !ctx.stopping() {
        let Ok((w, r)) = pair(ctx, th) else {
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        };
        let n = th.rng.u64(100..=2000);
        let wseed = th.rng.u64(..);
        // Set by the side that gives up, so that the other one does not wait for ever.
        let abort = AtomicBool::new(false);
        let res = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut wth = new_thread(ctx, widx, wseed);
                let sent = writer(ctx, &mut wth, &abort, &w, n);
                ctx.flush(&mut wth);
                ctx.leave(widx);
                if sent.is_none() {
                    abort.store(true, Ordering::Relaxed);
                }
                sent
            });
            let got = reader(ctx, th, &abort, &r);
            if !matches!(got, Ok(Some(_))) {
                abort.store(true, Ordering::Relaxed);
            }
            (h.join().ok().flatten(), got)
        });
        match res {
            (_, Err(why)) => {
                ctx.slot.seq_failures.fetch_add(1, Ordering::Relaxed);
                ctx.unexpected(&format!("sequence check: {why}"));
            }
            (Some(_), Ok(Some(msgs))) => {
                ctx.slot.seq_msgs.fetch_add(msgs, Ordering::Relaxed);
                ctx.slot.seq_rounds.fetch_add(1, Ordering::Relaxed);
            }
            _ => {} // stopped mid-round
        }
    }
}
