//! Property tests of the Stream head (host only).
//!
//! - Byte stream: random writes through a loopback, then RNORM reads of random sizes, give back
//!   exactly the bytes written, in order, whatever the piece sizes (also with write hold and a
//!   maxpsz that splits writes).
//! - getmsg: a message read back with random small `maxlen`s (MORECTL/MOREDATA) reassembles
//!   into the control and data parts that were sent.

use proptest::prelude::*;
use streams_core::sth::consts::*;
use streams_core::sth::tests::drivers::{PSZ4, STHLOOP};
use streams_core::sth::{IocArg, Part, SliceIo, Stop, Stream};
use streams_core::stream::{Registry, StreamTab};

fn write_all(s: &mut Stream, data: &[u8]) {
    let mut buf = data.to_vec();
    let n = buf.len();
    let got = s.strwrite(&mut SliceIo(&mut buf), n, true);
    assert_eq!(got, Ok(n));
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
        let mut buf = vec![0u8; want];
        match s.strread(&mut SliceIo(&mut buf), want, true) {
            Ok(n) => {
                assert!(n <= want);
                out.extend_from_slice(&buf[..n]);
            }
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
    let mut b = [0u8; 4];
    assert_eq!(
        s.strread(&mut SliceIo(&mut b), 4, true),
        Err(Stop::Err(streams_core::errno::Errno::EAGAIN))
    );
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
    fn getmsg_partial_reads_reassemble(
        ctl in prop::collection::vec(any::<u8>(), 0..100),
        data in prop::collection::vec(any::<u8>(), 0..100),
        cmax in 1i32..16,
        dmax in 1i32..16,
    ) {
        let mut s = Stream::sth_new(&STHLOOP).unwrap();
        let (mut c, mut d) = (ctl.clone(), data.clone());
        let (cl, dl) = (c.len() as i32, d.len() as i32);
        let r = s.strputpmsg(
            Some(Part { io: &mut SliceIo(&mut c), len: cl }),
            Some(Part { io: &mut SliceIo(&mut d), len: dl }),
            0,
            0,
            true,
        );
        prop_assert_eq!(r, Ok(()));
        let (mut gc, mut gd) = (Vec::new(), Vec::new());
        for _ in 0..1000 {
            let (mut cb, mut db) = (vec![0u8; cmax as usize], vec![0u8; dmax as usize]);
            let g = s
                .strgetpmsg(
                    Some(Part { io: &mut SliceIo(&mut cb), len: cmax }),
                    Some(Part { io: &mut SliceIo(&mut db), len: dmax }),
                    0,
                    0,
                    true,
                )
                .unwrap();
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
        let mut b = [0u8; 1];
        prop_assert!(s.strread(&mut SliceIo(&mut b), 1, true).is_err());
    }
}
