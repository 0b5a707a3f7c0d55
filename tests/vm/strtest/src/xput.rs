//! strtest cases for the `xput` test driver (`/dev/streams/clone/xput`): puts into a Stream
//! from outside it — an hrtimer in softirq context, a tasklet, a workqueue — through the
//! cross-perimeter inbound path, with flow control and back-enable (the acceptance test of
//! issue 11). Each run's messages carry a 64-bit sequence number; the reader checks each
//! arrives exactly once, in order, and the driver's counters show refusals and back-enables.
//! The whole run is under KASAN, lockdep, kmemleak and DEBUG_ATOMIC_SLEEP (`cargo xtask test`).

use super::*;

const XPUT: &str = "/dev/streams/clone/xput";
/// I_STR: start the run (data: count u64, mode u32, size u32).
const XPUT_IOC_START: i32 = (b'x' as i32) << 8 | 1;
/// I_STR: the driver's counters (`NSTATS` u64 words).
const XPUT_IOC_STATS: i32 = (b'x' as i32) << 8 | 2;
const NSTATS: usize = 12;

/// Producer contexts (`mode` of the start request).
const HRTIMER: u32 = 1;
const TASKLET: u32 = 2;
const WORKQUEUE: u32 = 3;

/// Messages per run (the acceptance criterion: at least 10^5).
const COUNT: u64 = 100_000;
/// Bytes per message: the sequence number and filler.
const SIZE: usize = 64;

/// The driver's counters (`XPUT_IOC_STATS`, word order of `xput.rs`).
#[derive(Debug, Clone, Copy)]
struct Stats {
    state: u64,
    sent: u64,
    refused: u64,
    backenables: u64,
    fires: u64,
    nomem: u64,
    received: u64,
    misordered: u64,
    live: u64,
    closed_refused: u64,
    closed_accepted: u64,
}

const RUNNING: u64 = 1;
const DONE: u64 = 2;

fn mode_name(mode: u32) -> &'static str {
    match mode {
        HRTIMER => "hrtimer (softirq)",
        TASKLET => "tasklet",
        WORKQUEUE => "workqueue",
        _ => "?",
    }
}

fn istr(s: &Stream, cmd: i32, data: &mut [u8]) -> io::Result<i32> {
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: -1,
        ic_len: data.len() as i32,
        ic_dp: data.as_mut_ptr().cast(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

fn start(s: &Stream, count: u64, mode: u32, size: u32) -> io::Result<i32> {
    let mut req = [0u8; 16];
    req[..8].copy_from_slice(&count.to_ne_bytes());
    req[8..12].copy_from_slice(&mode.to_ne_bytes());
    req[12..].copy_from_slice(&size.to_ne_bytes());
    istr(s, XPUT_IOC_START, &mut req)
}

fn stats(s: &Stream) -> Result<Stats, String> {
    let mut b = [0u8; NSTATS * 8];
    e(istr(s, XPUT_IOC_STATS, &mut b), "XPUT_IOC_STATS")?;
    let w = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    Ok(Stats {
        state: w(0),
        sent: w(2),
        refused: w(3),
        backenables: w(4),
        fires: w(5),
        nomem: w(6),
        received: w(7),
        misordered: w(8),
        live: w(9),
        closed_refused: w(10),
        closed_accepted: w(11),
    })
}

fn open_xput() -> Result<Stream, String> {
    e(Stream::open(XPUT), XPUT)
}

/// Read `count` messages of `size` bytes (non-blocking reads of one message at most; poll up
/// to 5 s when there is nothing: a lost back-enable shows as a stall, not a hang), checking
/// that message `k` carries sequence number `k` and its filler. `pause` sleeps 1 ms every so
/// many messages so that the producer runs into flow control again and again.
fn read_seqs(s: &Stream, count: u64, size: usize, pause: u64) -> Result<(), String> {
    set_nonblock(s, true)?;
    let mut buf = vec![0u8; size];
    let mut cur = vec![0u8; size];
    let mut have = 0usize;
    let mut next = 0u64;
    while next < count {
        match s.read(&mut buf) {
            Ok(0) => return Err(format!("EOF after {next} messages")),
            Ok(n) => {
                let mut off = 0;
                while off < n {
                    let k = (size - have).min(n - off);
                    cur[have..have + k].copy_from_slice(&buf[off..off + k]);
                    (have, off) = (have + k, off + k);
                    if have < size {
                        continue;
                    }
                    have = 0;
                    let seq = u64::from_ne_bytes(cur[..8].try_into().unwrap_or([0; 8]));
                    ensure!(
                        seq == next,
                        "message {next} carries sequence number {seq} (lost or duplicated)"
                    );
                    ensure!(
                        cur[8..].iter().all(|&b| b == next as u8),
                        "message {next}: filler corrupted"
                    );
                    next += 1;
                    if pause > 0 && next.is_multiple_of(pause) {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            Err(err) if err.raw_os_error() == Some(libc::EAGAIN) => {
                if poll1(s, libc::POLLIN, 5000)? & libc::POLLIN == 0 {
                    let st = stats(s)?;
                    return Err(format!("stalled after {next} messages: {st:?}"));
                }
            }
            Err(err) => return Err(format!("read after {next} messages: {err}")),
        }
    }
    set_nonblock(s, false)
}

/// Wait (up to 5 s: softirq and workqueue latencies in an emulated guest are long) until the
/// producer has been refused and `sent` has stood still for 30 ms.
fn wait_stopped(s: &Stream) -> Result<Stats, String> {
    let t = Instant::now();
    let mut last = stats(s)?;
    let mut still = 0;
    while t.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(10));
        let st = stats(s)?;
        if st.refused > 0 && st.sent == last.sent {
            still += 1;
            if still == 3 {
                return Ok(st);
            }
        } else {
            still = 0;
        }
        last = st;
    }
    Err(format!(
        "producer never stopped while nobody reads: {last:?}"
    ))
}

/// One run of `COUNT` messages from `mode`: every sequence number once, in order; refusals
/// and back-enables seen; bounded data in flight while nobody reads.
fn run_mode(mode: u32) -> R {
    let s = open_xput()?;
    let t0 = Instant::now();
    e(start(&s, COUNT, mode, SIZE as u32), "XPUT_IOC_START")?;
    // Nobody reads yet: the producer must stop at flow control, with a bounded amount in
    // flight (driver read queue, head, gate: a few high-water marks), and stay stopped.
    let a = wait_stopped(&s)?;
    ensure!(a.state == RUNNING, "producer not running: {a:?}");
    ensure!(
        (a.sent as usize) * SIZE <= 64 << 10,
        "{} bytes in flight: no flow control ({a:?})",
        a.sent as usize * SIZE
    );
    let t1 = Instant::now();
    read_seqs(&s, COUNT, SIZE, 10_000)?;
    let (dt, total) = (t1.elapsed(), t0.elapsed());
    // Nothing more comes (no duplicate after the last one).
    thread::sleep(Duration::from_millis(20));
    ensure!(nread(&s)?.0 == 0, "data after the last message");
    let st = stats(&s)?;
    ensure!(st.state == DONE, "producer not done: {st:?}");
    ensure!(
        st.sent == COUNT && st.received == COUNT && st.misordered == 0,
        "driver counts: {st:?}"
    );
    ensure!(
        st.refused > 0 && st.backenables > 0,
        "no flow control cycle: {st:?}"
    );
    // The reading phase: all but the first few hundred messages, one read(2) each, with ten
    // 1 ms pauses; the total includes the wait with nobody reading.
    println!(
        "# xput {}: {COUNT} messages of {SIZE} bytes, read in {:.3} s ({:.0} msg/s; {:.3} s \
         from the start), {} refusals, {} back-enables, {} callbacks, {} allocation failures",
        mode_name(mode),
        dt.as_secs_f64(),
        COUNT as f64 / dt.as_secs_f64(),
        total.as_secs_f64(),
        st.refused,
        st.backenables,
        st.fires,
        st.nomem
    );
    Ok(())
}

pub(crate) fn t_xput_hrtimer() -> R {
    run_mode(HRTIMER)
}

pub(crate) fn t_xput_tasklet() -> R {
    run_mode(TASKLET)
}

pub(crate) fn t_xput_workqueue() -> R {
    run_mode(WORKQUEUE)
}

/// Close during a run, in every mode: while the producer runs (the reader keeps it going),
/// and while it waits for a back-enable (nobody read). The producers are gone when close
/// returns, their last put was refused by the closed gate, none was accepted.
pub(crate) fn t_xput_close_mid_run() -> R {
    let before = stats(&open_xput()?)?;
    let mut closed = 0u64;
    for mode in [HRTIMER, TASKLET, WORKQUEUE] {
        // Running: read part of a long run, close with the producer active.
        let s = open_xput()?;
        e(start(&s, 1 << 40, mode, SIZE as u32), "XPUT_IOC_START")?;
        read_seqs(&s, 3000, SIZE, 0)?;
        let st = stats(&s)?;
        ensure!(st.state == RUNNING, "{}: {st:?}", mode_name(mode));
        drop(s);
        closed += 1;
        // Waiting for a back-enable, and just started.
        for wait in [20, 0] {
            let s = open_xput()?;
            e(start(&s, 1 << 40, mode, SIZE as u32), "XPUT_IOC_START")?;
            thread::sleep(Duration::from_millis(wait));
            drop(s);
            closed += 1;
        }
    }
    let after = stats(&open_xput()?)?;
    ensure!(after.live == 0, "producers alive after close: {after:?}");
    ensure!(
        after.closed_refused - before.closed_refused == closed,
        "puts after close refused: {} of {closed}",
        after.closed_refused - before.closed_refused
    );
    ensure!(
        after.closed_accepted == 0,
        "a closed Stream took a put: {after:?}"
    );
    Ok(())
}

/// Bad requests: EINVAL (mode, size, count, short data, unknown command); a second start on
/// the same Stream EBUSY; stats before a run all zero.
pub(crate) fn t_xput_errors() -> R {
    let s = open_xput()?;
    let st = stats(&s)?;
    ensure!(
        st.state == 0 && st.sent == 0 && st.received == 0,
        "stats before a run: {st:?}"
    );
    for (count, mode, size, what) in [
        (10, 0, 64, "mode 0"),
        (10, 4, 64, "mode 4"),
        (10, HRTIMER, 4, "size 4"),
        (10, HRTIMER, 8192, "size 8192"),
        (0, HRTIMER, 64, "count 0"),
    ] {
        let err = errno_of(start(&s, count, mode, size), what)?;
        ensure!(err == libc::EINVAL, "{what}: errno {err}");
    }
    let err = errno_of(istr(&s, XPUT_IOC_START, &mut [0u8; 8]), "short request")?;
    ensure!(err == libc::EINVAL, "short request: errno {err}");
    let err = errno_of(istr(&s, (b'x' as i32) << 8 | 9, &mut []), "unknown command")?;
    ensure!(err == libc::EINVAL, "unknown command: errno {err}");
    e(start(&s, 10, WORKQUEUE, 8), "XPUT_IOC_START")?;
    let err = errno_of(start(&s, 10, WORKQUEUE, 8), "second start")?;
    ensure!(err == libc::EBUSY, "second start: errno {err}");
    read_seqs(&s, 10, 8, 0)?;
    Ok(())
}
