//! Shared tests of the quiet leave (`Perim::leave_quiet` in the core): a lock hold that left
//! its leave nothing to act on (no queue enabled, no flow control gone stale, nothing sent
//! across, no express send state changed, no claimed perimeter, nothing a direct take kept)
//! and in which nothing came in sets the gate's lazy and hand-off flags and nothing else.
//!
//! The quiet leave is tested against the full one (`Perim::leave_full`, which makes every
//! test on its own): two pipes run the same randomized sequence of operations at both ends
//! (writes, reads, putmsg of band 0 and 1 with and without a control part, getmsg, read and
//! write options, write hold and its expiry, flushes, water marks, poll, I_NREAD, I_SETSIG,
//! a module pushed and popped, a watcher coming and going, the head's events taken, a put
//! coming in during a hold as another Stream's writer's would, and a hangup at the end), the
//! first pipe leaving its holds the platform's way, the second always the full way. Every
//! operation must return the same on both, and after each the gates of both ends must say
//! the same (lazy, hand-off, data pending, claim standing, express armed, runs). A test the
//! quiet leave skipped that the full leave needed shows as a difference (checked by
//! mutation: a quiet leave that ignores the hold's marks, the `Later` work, what came in
//! during the hold or a claim standing behind the lazy take's data, or that does not set the
//! gate's flags or clear the lazy take's note, is caught; one that ignores the enabled
//! queues is not, as every enable also marks the flow control stale). The first pipe must
//! have left many holds the quiet way (else the case tested nothing).

use super::direct::{getmsg, read, write, BUF};
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{Msg, M_DATA};
use streams_core::perim::test::LeaveKnobs;
use streams_core::sth::consts::*;
use streams_core::sth::{call, HeadEvents, IocArg, Part, SigOwner, SliceIo, Stop};
use streams_core::stream::testmods::{NOSRV, PASS};
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// A small deterministic generator (xorshift64*), so that a failing sequence is the same on
/// every run and platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Element `arg` of `xs`, counted round (the default for an empty `xs`).
fn nth<T: Copy + Default>(xs: &[T], arg: u64) -> T {
    let n = u64::try_from(xs.len()).unwrap_or(1).max(1);
    let i = usize::try_from(arg % n).unwrap_or(0);
    xs.get(i).copied().unwrap_or_default()
}

/// An I_SETSIG registrant that records nothing (only the head's events are compared).
struct Owner;

impl SigOwner for Owner {
    fn key(&self) -> usize {
        1
    }
    fn signal(&self, _sig: i32) {}
}

/// The modules the sequences push.
fn reg() -> Result<Registry, Failure> {
    let mut r = Registry::new();
    check_ok!(r.register_module(&NOSRV));
    check_ok!(r.register_module(&PASS));
    Ok(r)
}

/// What the gates of a pipe say, end by end: the state a leave leaves behind for the
/// writers, claimers and readers that come after it.
#[derive(Debug, PartialEq, Eq)]
struct Gates([(bool, bool, bool, bool, bool, bool, usize); 2]);

fn gates(p: &TestPipe) -> Gates {
    let one = |e: usize| {
        let t = p.perim(e);
        let g = t.perim.gate();
        (
            g.is_lazy(),
            g.handoff_ok(),
            g.has_pending(),
            g.sched_flag().is_scheduled(),
            t.perim.express_armed(),
            t.is_scheduled(),
            t.runs(),
        )
    };
    Gates([one(0), one(1)])
}

/// putmsg at `end` of `data` in `band` (MSG_BAND), with a control part `ctl` if any.
fn putmsg(
    p: &TestPipe,
    end: usize,
    ctl: Option<&[u8]>,
    data: &[u8],
    band: i32,
) -> Result<(), Errno> {
    let (mut c, mut d) = ([0u8; BUF], [0u8; BUF]);
    let cn = streams_core::sys::copy_bytes(&mut c, ctl.unwrap_or_default());
    let dn = streams_core::sys::copy_bytes(&mut d, data);
    let cio = &mut SliceIo(c.get_mut(..cn).unwrap_or_default());
    let dio = &mut SliceIo(d.get_mut(..dn).unwrap_or_default());
    let cpart = ctl.map(|_| Part {
        io: cio,
        len: i32::try_from(cn).unwrap_or(0),
    });
    let dpart = Part {
        io: dio,
        len: i32::try_from(dn).unwrap_or(0),
    };
    call::putmsg(&p.call(end), cpart, Some(dpart), band, MSG_BAND, true)
}

/// What one operation returned, comparable across the two pipes.
#[derive(Debug, PartialEq, Eq)]
enum Out {
    Sent(Result<usize, Errno>),
    Put(Result<(), Errno>),
    Read(super::direct::Got),
    Got(super::direct::GotMsg),
    Ioctl(Result<i32, Stop>),
    Nread(Result<i32, Stop>, [u8; 4]),
    Poll(u32),
    Events(HeadEvents),
    Flushed(usize),
    Nothing,
}

/// The operations a sequence is made of (`run_op`).
const OPS: u64 = 19;

/// Run operation `op` (drawn with `arg`) at `end` of `p`.
fn run_op(p: &TestPipe, r: &Registry, op: u64, end: usize, arg: u64) -> Out {
    const DATA: [u8; 300] = [b'q'; 300];
    let size = nth(&[0usize, 1, 64, 300, 300, 300], arg);
    let data = DATA.get(..size).unwrap_or_default();
    let ioctl = |cmd: u32, v: i64| p.end(end, |s| s.strioctl(r, cmd, IocArg::Int(v)));
    match op {
        0..=4 => Out::Sent(write(p, end, data)),
        5..=6 => Out::Read(read(p, end, nth(&[1, 2, 64, BUF], arg))),
        7 => Out::Put(putmsg(p, end, None, data, i32::from(arg.is_multiple_of(2)))),
        8 => Out::Put(putmsg(p, end, Some(b"ctl"), data, 0)),
        9 => Out::Got(getmsg(p, end, nth(&[1, 64, BUF], arg))),
        10 => {
            let opts = [
                RNORM,
                RMSGD,
                RMSGN,
                RNORM | RFILL,
                RNORM | RPROTDAT,
                RMSGN | RPROTDIS,
            ];
            let o = nth(&opts, arg);
            Out::Ioctl(ioctl(I_SRDOPT, i64::from(o)))
        }
        11 => {
            let o = nth(&[SNDPIPE, SNDPIPE | SNDHOLD, SNDPIPE | SNDZERO], arg);
            Out::Ioctl(ioctl(I_SWROPT, i64::from(o)))
        }
        12 => Out::Flushed(p.end(end, |s| s.sth_flush_hold())),
        13 => {
            let f = nth(&[FLUSHR, FLUSHW, FLUSHRW], arg);
            Out::Ioctl(ioctl(I_FLUSH, i64::from(f)))
        }
        14 => match arg % 4 {
            0 => Out::Ioctl(ioctl(I_SET_HIWAT, nth(&[256, 512, 1024], arg))),
            1 => Out::Ioctl(ioctl(I_SET_LOWAT, nth(&[16, 128], arg))),
            2 => Out::Poll(p.end(end, |s| s.strpoll(POLLIN | POLLOUT | POLLRDBAND))),
            _ => {
                let mut n = [0u8; 4];
                let m = p.end(end, |s| s.strioctl(r, I_NREAD, IocArg::Out(&mut n)));
                Out::Nread(m, n)
            }
        },
        15 => Out::Events(p.end(end, |s| s.sth_take_events())),
        16 => match arg % 4 {
            0 => Out::Ioctl(p.end(end, |s| s.strioctl(r, I_PUSH, IocArg::Name("nosrv")))),
            1 => Out::Ioctl(p.end(end, |s| s.strioctl(r, I_PUSH, IocArg::Name("pass")))),
            _ => Out::Ioctl(p.end(end, |s| s.strioctl(r, I_POP, IocArg::Int(0)))),
        },
        17 => Out::Poll(put_during_a_hold(p, end, arg)),
        _ => {
            if !arg.is_multiple_of(3) {
                return Out::Nothing;
            }
            let Ok(owner) = streams_core::sys::new_arc(Owner) else {
                return Out::Nothing;
            };
            let owner: streams_core::sys::Arc<dyn SigOwner> = owner;
            let events = nth(&[0, S_INPUT | S_RDNORM], arg);
            let events = i32::try_from(events).unwrap_or(0);
            Out::Ioctl(p.end(end, |s| {
                s.strioctl(r, I_SETSIG, IocArg::Sig { owner, events })
            }))
        }
    }
}

/// A put that comes in while `end` is held, as another Stream's writer's would: into the
/// twist's read queue through the gate, band 0 (ordinary data, left on a lazy gate) or band
/// 1 (which claims the perimeter, left to the holder: it is busy), in a hold entered as
/// read(2)'s is (the lazy take may leave the inbound list) or as any other operation's. The
/// hold polls; what the poll saw.
fn put_during_a_hold(p: &TestPipe, end: usize, arg: u64) -> u32 {
    let gate = p.perim(end).perim.gate();
    let op = |s: &mut streams_core::sth::Stream| {
        if let (Some(q), Ok(mut m)) = (s.driver_rq(), Msg::from_bytes(M_DATA, b"put")) {
            m.set_band(u8::from(arg.is_multiple_of(2)));
            let _ = gate.put_in(q, m); // a claim is left to this holder (step 4)
        }
        s.strpoll(POLLIN | POLLRDBAND)
    };
    match arg % 4 < 2 {
        true => p.end_read(end, |s| s.sth_read_ready(1), op),
        false => p.end(end, op),
    }
}

/// Run `steps` random operations from `seed` on two pipes, the first leaving its holds the
/// platform's way (counted), the second the full way; then hang up end 0 and read end 1 to
/// the end. Returns how many holds the first left the quiet way.
fn same_as_the_full_leave(seed: u64, steps: usize) -> Result<usize, Failure> {
    let a = check_ok!(TestPipe::new());
    let b = check_ok!(TestPipe::new());
    let r = reg()?;
    // Small water marks, so that writes are refused and back-enabled often.
    for p in [&a, &b] {
        for e in 0..2 {
            let lo = p.end(e, |s| s.strioctl(&r, I_SET_LOWAT, IocArg::Int(128)));
            let hi = p.end(e, |s| s.strioctl(&r, I_SET_HIWAT, IocArg::Int(512)));
            check_eq!((lo, hi), (Ok(0), Ok(0)));
        }
    }
    let mut knobs = [LeaveKnobs::default(); 2];
    let set = |knobs: &[LeaveKnobs; 2]| {
        for (e, k) in knobs.iter().enumerate() {
            a.perim(e).set_leave(LeaveKnobs { count: true, ..*k });
            b.perim(e).set_leave(LeaveKnobs { full: true, ..*k });
        }
    };
    set(&knobs);
    let mut rng = Rng(seed | 1);
    for _ in 0..steps {
        let end = usize::from(rng.below(4) != 0); // reads and writes at both ends, more at 1
        let op = rng.below(OPS + 1);
        let arg = rng.next() >> 8;
        if op == OPS {
            // A poller or an O_ASYNC owner comes or goes at this end.
            if let Some(k) = knobs.get_mut(end) {
                k.watched = arg.is_multiple_of(2);
                k.signalled = k.watched && arg.is_multiple_of(4);
            }
            set(&knobs);
            continue;
        }
        check_eq!(run_op(&a, &r, op, end, arg), run_op(&b, &r, op, end, arg));
        check_eq!(gates(&a), gates(&b));
    }
    // A hangup behind whatever is left: end 1 reads to the end (or to a read error) alike.
    a.close(0);
    b.close(0);
    check_eq!(gates(&a), gates(&b));
    for _ in 0..4096 {
        let (x, y) = (read(&a, 1, BUF), read(&b, 1, BUF));
        check_eq!(x, y);
        check_eq!(gates(&a), gates(&b));
        if !matches!(x, Ok((_, n)) if n > 0) {
            break;
        }
    }
    Ok(a.perim(0).quiet_leaves() + a.perim(1).quiet_leaves())
}

/// Many short sequences: each seed its own mix of options and modules.
fn quiet_leave_matches_the_full_leave() -> TestResult {
    let mut quiet = 0usize;
    for seed in 1..=40u64 {
        quiet += same_as_the_full_leave(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), 150)?;
    }
    check!(quiet > 1000);
    Ok(())
}

/// Long sequences, where the Streams drift far from their first state.
fn quiet_leave_matches_over_long_sequences() -> TestResult {
    let mut quiet = 0usize;
    for seed in [7u64, 0xdead_beef, 0x1234_5678_9abc] {
        quiet += same_as_the_full_leave(seed, 2000)?;
    }
    check!(quiet > 1000);
    Ok(())
}

ktest_suite!(PIPE_QUIET_SUITE, "streams_pipe_quiet":
    quiet_leave_matches_the_full_leave,
    quiet_leave_matches_over_long_sequences,
);
