//! The XTI library's own cost per call, for callgrind: t_sndudata and t_rcvudata on an
//! endpoint whose Stream is faked in-process, so only the library's instructions are counted
//! (callgrind does not count the kernel anyway; here not even the system call is made).
//!
//! The fake is this program's own `ioctl`: the executable's definition is the one the
//! library's `libc::ioctl` calls resolve to. On the fake descriptor I_PUTPMSG takes the
//! message and I_GETPMSG returns a T_UNITDATA_IND (16-byte source address) with `SIZE` bytes
//! of data; every other ioctl goes to the kernel.
//!
//! ```text
//! cargo build --release -p libstreams-sys --example xticost
//! valgrind --tool=callgrind target/release/examples/xticost MODE N [SIZE]
//! ```
//! MODE: `snd` (N t_sndudata), `rcv` (N t_rcvudata), `both` (N of each); N 0 measures setup.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use streams::types::strpmsg;
use streams::xti::ffi as x;
use streams::xti::tpi::{self, provider, InfoAck};
use streams::xti::*;

const I_PUTPMSG: u64 = streams::consts::I_PUTPMSG as u64;
const I_GETPMSG: u64 = streams::consts::I_GETPMSG as u64;

/// The descriptor whose Stream is faked (a /dev/null descriptor, so the number is ours).
static FAKE_FD: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Data bytes of each faked T_UNITDATA_IND.
static SIZE: AtomicUsize = AtomicUsize::new(1);
/// The control and data parts of each faked T_UNITDATA_IND, built once.
static REPLY: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

/// The fake Stream, or the real ioctl(2) for any other descriptor.
///
/// # Safety
/// `arg` is what the command expects (ioctl's contract); on the fake descriptor a `strpmsg`
/// whose buffers have room for `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: i32, req: u64, arg: *mut c_void) -> i32 {
    if fd as usize != FAKE_FD.load(Ordering::Relaxed) {
        // SAFETY: forwarded unchanged; the caller's contract is the kernel's.
        return unsafe { libc::syscall(libc::SYS_ioctl, fd, req, arg) } as i32;
    }
    // SAFETY: on the fake descriptor the library passes a live strpmsg (contract).
    let sp = unsafe { &mut *arg.cast::<strpmsg>() };
    match req {
        I_PUTPMSG => 0,
        I_GETPMSG => {
            let (ind, data) = REPLY.get().expect("set before the fake fd");
            let fill = |b: &mut streams::types::strbuf, src: &[u8]| {
                let m = usize::try_from(b.maxlen).unwrap_or(0).min(src.len());
                // SAFETY: `buf` has room for `maxlen` >= m bytes (contract).
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.buf.cast::<u8>(), m) };
                b.len = m as i32;
            };
            fill(&mut sp.ctlbuf, ind);
            fill(&mut sp.databuf, data);
            sp.flags = streams::consts::MSG_BAND;
            0
        }
        _ => {
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            -1
        }
    }
}

const NONE: netbuf = netbuf {
    maxlen: 0,
    len: 0,
    buf: std::ptr::null_mut(),
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("both");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    SIZE.store(
        args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1),
        Ordering::Relaxed,
    );
    let size = SIZE.load(Ordering::Relaxed);
    let ind = provider::unitdata_ind(&[7; 16], &[]).unwrap();
    REPLY.set((ind, vec![0x5a; size])).unwrap();
    let fd = std::fs::File::open("/dev/null").unwrap();
    let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
    FAKE_FD.store(fd as usize, Ordering::Relaxed);
    let ack = InfoAck::udp(tpi::TS_IDLE);
    state::insert(fd, state::Endpoint::from_info(&ack).unwrap());
    let mut addr = [7u8; 16];
    let mut data = vec![0u8; 65536];
    let snd = t_unitdata {
        addr: netbuf {
            maxlen: 16,
            len: 16,
            buf: addr.as_mut_ptr().cast(),
        },
        opt: NONE,
        udata: netbuf {
            maxlen: size as u32,
            len: size as u32,
            buf: data.as_mut_ptr().cast(),
        },
    };
    let (mut raddr, mut rdata) = ([0u8; 16], vec![0u8; 65536]);
    let mut rcv = t_unitdata {
        addr: netbuf {
            maxlen: 16,
            len: 0,
            buf: raddr.as_mut_ptr().cast(),
        },
        opt: NONE,
        udata: netbuf {
            maxlen: rdata.len() as u32,
            len: 0,
            buf: rdata.as_mut_ptr().cast(),
        },
    };
    for _ in 0..n {
        if mode != "rcv" {
            // SAFETY: `snd`'s netbufs name live buffers of `len` bytes.
            assert_eq!(unsafe { x::t_sndudata(fd, &snd) }, 0);
        }
        if mode != "snd" {
            let mut flags = 0;
            // SAFETY: `rcv`'s netbufs name live buffers of `maxlen` bytes.
            assert_eq!(unsafe { x::t_rcvudata(fd, &mut rcv, &mut flags) }, 0);
            assert_eq!(rcv.udata.len as usize, size);
        }
    }
}
