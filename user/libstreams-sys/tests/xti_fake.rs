//! Host tests of the XTI data path (t_sndudata, t_rcvudata, t_rcvuderr) against a scripted
//! Stream: this test binary defines `ioctl`, so the library's I_PUTPMSG/I_GETPMSG on a
//! registered descriptor reach the fake instead of the kernel. A fake Stream records what is
//! put and answers getpmsg with the replies a test queued, blocking until there is one;
//! I_PEEK finds nothing.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::{mpsc, Condvar, Mutex};
use std::time::Duration;
use streams::consts::{I_GETPMSG, I_PEEK, I_PUTPMSG, MOREDATA};
use streams::types::{strbuf, strpmsg};
use streams::xti::ffi as c;
use streams::xti::tpi::{self, provider, InfoAck};
use streams::xti::*;

/// One getpmsg answer: control part (None: M_DATA), data part, return value.
type Reply = (Option<Vec<u8>>, Vec<u8>, i32);

#[derive(Default)]
struct Stream {
    replies: VecDeque<Reply>,
    sent: Vec<(Vec<u8>, Vec<u8>)>,
    /// Threads inside getpmsg, waiting for a reply.
    waiting: usize,
    /// getpmsg calls answered.
    taken: usize,
}

static STREAMS: Mutex<Option<HashMap<i32, Stream>>> = Mutex::new(None);
static CHANGED: Condvar = Condvar::new();

fn bytes(b: &strbuf) -> Vec<u8> {
    match usize::try_from(b.len) {
        // SAFETY: putmsg's buffers are valid for `len` bytes.
        Ok(n) if n > 0 => unsafe { std::slice::from_raw_parts(b.buf.cast::<u8>(), n) }.to_vec(),
        _ => Vec::new(),
    }
}

fn fill(b: &mut strbuf, src: Option<&[u8]>) {
    let Some(src) = src else {
        b.len = -1;
        return;
    };
    let n = usize::try_from(b.maxlen).unwrap_or(0).min(src.len());
    // SAFETY: getmsg's buffers have room for `maxlen` >= n bytes.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.buf.cast::<u8>(), n) };
    b.len = n as i32;
}

/// The fake for registered descriptors, the kernel's ioctl for the others.
///
/// # Safety
/// ioctl's contract; on a registered descriptor `arg` is a live strpmsg.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: i32, req: u64, arg: *mut c_void) -> i32 {
    let mut all = STREAMS.lock().unwrap();
    if !all.get_or_insert_with(HashMap::new).contains_key(&fd) {
        drop(all);
        // SAFETY: forwarded unchanged.
        return unsafe { libc::syscall(libc::SYS_ioctl, fd, req, arg) } as i32;
    }
    // SAFETY: a registered descriptor's callers pass a strpmsg (contract).
    let sp = unsafe { &mut *arg.cast::<strpmsg>() };
    if req == I_PUTPMSG as u64 {
        let s = all.as_mut().unwrap().get_mut(&fd).unwrap();
        s.sent.push((bytes(&sp.ctlbuf), bytes(&sp.databuf)));
        CHANGED.notify_all();
        return 0;
    }
    if req == I_PEEK as u64 {
        // Nothing to peek at: t_look reports only what the library's record says.
        return 0;
    }
    assert_eq!(
        req, I_GETPMSG as u64,
        "the fake serves putmsg, getmsg and I_PEEK only"
    );
    all.as_mut().unwrap().get_mut(&fd).unwrap().waiting += 1;
    CHANGED.notify_all();
    loop {
        let s = all.as_mut().unwrap().get_mut(&fd).unwrap();
        if let Some((ctl, data, r)) = s.replies.pop_front() {
            s.waiting -= 1;
            s.taken += 1;
            fill(&mut sp.ctlbuf, ctl.as_deref());
            fill(&mut sp.databuf, Some(&data));
            sp.flags = streams::consts::MSG_BAND;
            CHANGED.notify_all();
            return r;
        }
        all = CHANGED.wait(all).unwrap();
    }
}

/// A registered descriptor with an XTI record in `state`.
struct Fake {
    fd: i32,
}

impl Fake {
    fn open(current_state: i32) -> Fake {
        let f = std::fs::File::open("/dev/null").unwrap();
        let fd = std::os::fd::IntoRawFd::into_raw_fd(f);
        STREAMS
            .lock()
            .unwrap()
            .get_or_insert_with(HashMap::new)
            .insert(fd, Stream::default());
        let ack = InfoAck::udp(current_state);
        state::insert(fd, state::Endpoint::from_info(&ack).unwrap());
        Fake { fd }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Stream) -> R) -> R {
        f(STREAMS
            .lock()
            .unwrap()
            .as_mut()
            .unwrap()
            .get_mut(&self.fd)
            .unwrap())
    }

    fn reply(&self, ctl: Option<Vec<u8>>, data: &[u8], r: i32) {
        self.with(|s| s.replies.push_back((ctl, data.to_vec(), r)));
        CHANGED.notify_all();
    }

    /// Wait until `f` holds of the Stream.
    fn until(&self, f: impl Fn(&Stream) -> bool) {
        let mut all = STREAMS.lock().unwrap();
        while !f(&all.as_ref().unwrap()[&self.fd]) {
            all = CHANGED.wait(all).unwrap();
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        state::remove(self.fd);
        STREAMS.lock().unwrap().as_mut().unwrap().remove(&self.fd);
        // SAFETY: our descriptor.
        unsafe { libc::close(self.fd) };
    }
}

fn nb(b: &mut [u8], len: usize) -> netbuf {
    netbuf {
        maxlen: b.len() as u32,
        len: len as u32,
        buf: b.as_mut_ptr().cast(),
    }
}

fn send(fd: i32, addr: &mut [u8], opt: &mut [u8], data: &mut [u8]) -> i32 {
    let (a, o, d) = (addr.len(), opt.len(), data.len());
    let ud = t_unitdata {
        addr: nb(addr, a),
        opt: nb(opt, o),
        udata: nb(data, d),
    };
    // SAFETY: the netbufs name live buffers of `len` bytes.
    unsafe { c::t_sndudata(fd, &ud) }
}

/// t_rcvudata into a 16-byte address and 64-byte data buffer: (result, t_errno or 0 on
/// success, address length, data, flags).
fn recv(fd: i32) -> (i32, i32, u32, Vec<u8>, i32) {
    let (mut a, mut d) = ([0u8; 16], [0u8; 64]);
    let mut ud = t_unitdata {
        addr: nb(&mut a, 0),
        opt: nb(&mut [], 0),
        udata: nb(&mut d, 0),
    };
    let mut flags = 0;
    // SAFETY: the netbufs name live buffers of `maxlen` bytes.
    let r = unsafe { c::t_rcvudata(fd, &mut ud, &mut flags) };
    let n = ud.udata.len as usize;
    let e = if r < 0 { error::t_errno() } else { 0 };
    (r, e, ud.addr.len, d[..n].to_vec(), flags)
}

#[test]
fn sndudata_puts_the_lfs_unitdata_req() {
    let s = Fake::open(tpi::TS_IDLE);
    let mut addr = [3u8; 16];
    // Options that fit the stack buffer, and options that do not (built on the heap).
    for olen in [0, 4, 300] {
        let mut opt = vec![9u8; olen];
        assert_eq!(send(s.fd, &mut addr, &mut opt, &mut [1, 2, 3]), 0);
        let (ctl, data) = s.with(|st| st.sent.pop().unwrap());
        assert_eq!(ctl, tpi::unitdata_req(&addr, &opt).unwrap(), "{olen}");
        assert_eq!(data, [1, 2, 3]);
    }
}

#[test]
fn data_path_keeps_the_xti_errors() {
    let unbound = Fake::open(tpi::TS_UNBND);
    assert_eq!(send(unbound.fd, &mut [1; 16], &mut [], &mut [1]), -1);
    assert_eq!(error::t_errno(), TOUTSTATE);
    assert_eq!(recv(unbound.fd).1, TOUTSTATE);
    let s = Fake::open(tpi::TS_IDLE);
    let fd = s.fd;
    // TBADF comes before the null structure's EFAULT.
    // SAFETY: a null structure is reported, not read.
    assert_eq!(unsafe { c::t_sndudata(fd, core::ptr::null()) }, -1);
    assert_eq!(
        (
            error::t_errno(),
            std::io::Error::last_os_error().raw_os_error()
        ),
        (TSYSERR, Some(libc::EFAULT))
    );
    drop(s);
    assert_eq!(send(fd, &mut [1; 16], &mut [], &mut [1]), -1);
    assert_eq!(error::t_errno(), TBADF);
    // SAFETY: as above.
    assert_eq!(unsafe { c::t_sndudata(fd, core::ptr::null()) }, -1);
    assert_eq!(error::t_errno(), TBADF);
}

#[test]
fn t_more_continuations_and_uderr_are_tracked() {
    let s = Fake::open(tpi::TS_IDLE);
    let ind = || Some(provider::unitdata_ind(&[5; 16], &[]).unwrap());
    s.reply(ind(), b"ab", MOREDATA);
    s.reply(None, b"cd", 0);
    s.reply(ind(), b"ef", 0);
    assert_eq!(recv(s.fd), (0, 0, 16, b"ab".to_vec(), T_MORE));
    // The record says the datagram continues (the fake's I_PEEK sees nothing).
    assert_eq!(c::t_look(s.fd), T_DATA);
    // The rest of the datagram: no address.
    assert_eq!(recv(s.fd), (0, 0, 0, b"cd".to_vec(), 0));
    assert_eq!(c::t_look(s.fd), 0);
    // T_MORE was cleared: the next datagram has its address again.
    assert_eq!(recv(s.fd), (0, 0, 16, b"ef".to_vec(), 0));
    // A T_UDERROR_IND found while looking for data: TLOOK until t_rcvuderr takes it, and
    // the datagram behind it stays queued meanwhile.
    s.reply(
        Some(provider::uderror_ind(&[6; 16], &[], libc::ECONNREFUSED).unwrap()),
        b"",
        0,
    );
    s.reply(ind(), b"gh", 0);
    assert_eq!(recv(s.fd).1, TLOOK);
    assert_eq!(recv(s.fd).1, TLOOK);
    assert_eq!(s.with(|st| (st.taken, st.replies.len())), (4, 1));
    assert_eq!(c::t_look(s.fd), T_UDERR);
    let mut a = [0u8; 16];
    let mut u = t_uderr {
        addr: nb(&mut a, 0),
        opt: nb(&mut [], 0),
        error: 0,
    };
    // SAFETY: the netbufs name live buffers of `maxlen` bytes.
    assert_eq!(unsafe { c::t_rcvuderr(s.fd, &mut u) }, 0);
    assert_eq!((u.error, u.addr.len, a), (libc::ECONNREFUSED, 16, [6; 16]));
    assert_eq!(recv(s.fd), (0, 0, 16, b"gh".to_vec(), 0));
}

#[test]
fn a_blocked_receiver_does_not_stop_a_sender_on_the_same_endpoint() {
    let s = Fake::open(tpi::TS_IDLE);
    let fd = s.fd;
    let receiver = std::thread::spawn(move || recv(fd));
    s.until(|st| st.waiting == 1);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(send(fd, &mut [1; 16], &mut [], &mut [7])).unwrap());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(0));
    s.reply(
        Some(provider::unitdata_ind(&[5; 16], &[]).unwrap()),
        b"x",
        0,
    );
    assert_eq!(receiver.join().unwrap(), (0, 0, 16, b"x".to_vec(), 0));
}

#[test]
fn records_are_found_by_descriptor_near_and_far() {
    let ack = InfoAck {
        serv_type: T_CLTS,
        current_state: tpi::TS_IDLE,
        ..InfoAck::default()
    };
    // A descriptor beyond the indexed table, one at a chunk boundary, and a negative one.
    for fd in [state::NEAR_FDS as i32 + 5, state::CHUNK as i32 * 7] {
        assert_eq!(state::view(fd), Err(XtiError::t(TBADF)));
        state::insert(fd, state::Endpoint::from_info(&ack).unwrap());
        assert_eq!(state::view(fd).map(|v| v.state), Ok(T_IDLE));
        state::with(fd, |e| e.more = true).unwrap();
        assert!(state::view(fd).unwrap().more);
        assert_eq!(state::view(fd + 1), Err(XtiError::t(TBADF)));
        assert!(state::remove(fd));
        assert!(!state::remove(fd));
        assert_eq!(state::view(fd), Err(XtiError::t(TBADF)));
    }
    state::insert(-3, state::Endpoint::from_info(&ack).unwrap());
    assert_eq!(state::view(-3), Err(XtiError::t(TBADF)));
}
