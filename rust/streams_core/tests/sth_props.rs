//! Property tests of the Stream head through the platform's half of each system call
//! (`sth/call.rs`, with the tests' `Direct` platform; host only).
//!
//! - Byte stream: random writes through a loopback, then RNORM reads of random sizes, give back
//!   exactly the bytes written, in order, whatever the piece sizes (also with write hold and a
//!   maxpsz that splits writes).
//! - Faulting reads: reads into buffers that fault at random offsets, mixed with good reads,
//!   lose, duplicate and reorder nothing, in byte-stream and message-non-discard modes (where
//!   every good read still returns the rest of one message).
//! - getmsg: a message read back with random small `maxlen`s (MORECTL/MOREDATA) reassembles
//!   into the control and data parts that were sent, with faulting getmsgs in between.

use proptest::prelude::*;
use streams_core::errno::Errno;
use streams_core::sth::call;
use streams_core::sth::consts::*;
use streams_core::sth::tests::drivers::{PSZ4, STHLOOP};
use streams_core::sth::tests::{Direct, FaultAt};
use streams_core::sth::{IocArg, Part, SliceIo, Stream};
use streams_core::stream::{Registry, StreamTab};

fn write_all(s: &mut Stream, data: &[u8]) {
    let mut buf = data.to_vec();
    let n = buf.len();
    let got = call::write(&Direct::new(s), &mut SliceIo(&mut buf), n, true);
    assert_eq!(got, Ok(n));
}

fn read(s: &mut Stream, want: usize, fault_at: Option<usize>) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; want];
    let h = Direct::new(s);
    let n = match fault_at {
        Some(at) => call::read(&h, &mut FaultAt { buf: &mut buf, at }, want, true)?,
        None => call::read(&h, &mut SliceIo(&mut buf), want, true)?,
    };
    assert!(n <= want);
    buf.truncate(n);
    Ok(buf)
}

fn read_all(s: &mut Stream, sizes: &[usize], total: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < total {
        let want = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(7)
            .max(1);
        i += 1;
        match read(s, want, None) {
            Ok(b) => out.extend_from_slice(&b),
            Err(e) => panic!("read failed with {e:?} after {} of {total}", out.len()),
        }
    }
    out
}

fn roundtrip(drv: &'static StreamTab, hold: bool, writes: &[Vec<u8>], sizes: &[usize]) {
    let mut s = Stream::sth_new(drv).unwrap();
    if hold {
        let r = s.strioctl(&Registry::new(), I_SWROPT, IocArg::Int(i64::from(SNDHOLD)));
        assert_eq!(r, Ok(0));
    }
    let mut expect = Vec::new();
    for w in writes {
        write_all(&mut s, w);
        expect.extend_from_slice(w);
    }
    let got = read_all(&mut s, sizes, expect.len());
    assert_eq!(got, expect);
    assert_eq!(read(&mut s, 4, None), Err(Errno::EAGAIN));
}

proptest! {
    #[test]
    fn rnorm_reads_return_written_bytes(
        writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..300), 1..20),
        sizes in prop::collection::vec(1usize..200, 1..10),
        hold in any::<bool>(),
    ) {
        roundtrip(&STHLOOP, hold, &writes, &sizes);
    }

    #[test]
    fn rnorm_reads_return_split_writes(
        writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..40), 1..20),
        sizes in prop::collection::vec(1usize..50, 1..10),
    ) {
        roundtrip(&PSZ4, false, &writes, &sizes);
    }

    #[test]
    fn faulting_reads_lose_nothing(
        writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..60), 1..12),
        reads in prop::collection::vec((1usize..100, prop::option::of(0usize..100)), 1..40),
        rmsgn in any::<bool>(),
    ) {
        let mut s = Stream::sth_new(&STHLOOP).unwrap();
        if rmsgn {
            let r = s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(RMSGN)));
            prop_assert_eq!(r, Ok(0));
        }
        let mut expect = Vec::new();
        for w in &writes {
            write_all(&mut s, w);
            expect.extend_from_slice(w);
        }
        let mut got = Vec::new();
        for &(want, fault) in &reads {
            match read(&mut s, want, fault) {
                Ok(b) => got.extend_from_slice(&b),
                Err(Errno::EFAULT) => prop_assert!(fault.is_some()),
                Err(Errno::EAGAIN) => break,
                Err(e) => prop_assert!(false, "read failed with {:?}", e),
            }
        }
        // What is left comes out whole, one message per read in RMSGN.
        loop {
            match read(&mut s, 1000, None) {
                Ok(b) => got.extend_from_slice(&b),
                Err(Errno::EAGAIN) => break,
                Err(e) => prop_assert!(false, "read failed with {:?}", e),
            }
        }
        prop_assert_eq!(got, expect);
        if rmsgn {
            // Boundaries survived the faults: a fresh write and a whole-message read agree.
            write_all(&mut s, b"end");
            prop_assert_eq!(read(&mut s, 1000, None), Ok(b"end".to_vec()));
        }
    }

    #[test]
    fn getmsg_partial_reads_reassemble(
        ctl in prop::collection::vec(any::<u8>(), 0..100),
        data in prop::collection::vec(any::<u8>(), 0..100),
        cmax in 1i32..16,
        dmax in 1i32..16,
        faults in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        let mut s = Stream::sth_new(&STHLOOP).unwrap();
        let (mut c, mut d) = (ctl.clone(), data.clone());
        let (cl, dl) = (c.len() as i32, d.len() as i32);
        let r = call::putmsg(
            &Direct::new(&mut s),
            Some(Part { io: &mut SliceIo(&mut c), len: cl }),
            Some(Part { io: &mut SliceIo(&mut d), len: dl }),
            0,
            0,
            true,
        );
        prop_assert_eq!(r, Ok(()));
        let (mut gc, mut gd) = (Vec::new(), Vec::new());
        for i in 0..1000 {
            let (mut cb, mut db) = (vec![0u8; cmax as usize], vec![0u8; dmax as usize]);
            let fault = faults.get(i).copied().unwrap_or(false);
            let h = Direct::new(&mut s);
            let r = if fault {
                call::getmsg(
                    &h,
                    Some(Part { io: &mut SliceIo(&mut cb), len: cmax }),
                    Some(Part { io: &mut FaultAt { buf: &mut db, at: 0 }, len: dmax }),
                    0,
                    0,
                    true,
                    |_| Ok(()),
                )
            } else {
                call::getmsg(
                    &h,
                    Some(Part { io: &mut SliceIo(&mut cb), len: cmax }),
                    Some(Part { io: &mut SliceIo(&mut db), len: dmax }),
                    0,
                    0,
                    true,
                    |_| Ok(()),
                )
            };
            let g = match r {
                Ok(g) => g,
                Err(Errno::EFAULT) => continue,
                Err(e) => return Err(TestCaseError::fail(format!("getmsg: {e:?}"))),
            };
            if g.ctl_len > 0 {
                gc.extend_from_slice(&cb[..g.ctl_len as usize]);
            }
            if g.data_len > 0 {
                gd.extend_from_slice(&db[..g.data_len as usize]);
            }
            if g.more == 0 {
                break;
            }
        }
        prop_assert_eq!(gc, ctl);
        prop_assert_eq!(gd, data);
        prop_assert!(read(&mut s, 1, None).is_err());
    }
}
