//! Shared tests of the primitive, address and option codecs and of the state table: every
//! short, lying or malformed input is an error value, never a panic.

use super::super::net::{Inet4, RxIp};
use super::super::opt::{self, *};
use super::super::prim::{self, *};
use super::super::state::{check, TpiState, Verdict};
use super::super::udp::{check_unitdata, Refused, TSDU_SIZE};
use streams_core::ktest::TestResult;
use streams_core::msg::{Msg, MsgType, M_CTL, M_DATA, M_PROTO};
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

fn words(w: &[i32]) -> [u8; 64] {
    let mut b = [0u8; 64];
    for (d, x) in b.chunks_exact_mut(4).zip(w) {
        d.copy_from_slice(&x.to_ne_bytes());
    }
    b
}

fn primitives_roundtrip() -> TestResult {
    let a = Inet4 {
        addr: [10, 0, 0, 1],
        port: 7,
    }
    .encode();
    let m = check_some!(encode_req(&Req::Bind {
        addr: &a,
        conind: 0
    }));
    check_eq!(
        check_ok!(Req::decode(m.rd())),
        Some(Req::Bind {
            addr: &a[..],
            conind: 0
        })
    );
    let m = check_some!(encode_req(&Req::Unitdata { dest: &a, opt: &[] }));
    check_eq!(
        check_ok!(Req::decode(m.rd())),
        Some(Req::Unitdata {
            dest: &a[..],
            opt: &[][..]
        })
    );
    let m = check_some!(prim::unitdata_ind(&a, &[]));
    check_eq!(Ind::decode(m.rd()), Some(Ind::UnitdataInd(&a[..], &[][..])));
    let m = check_some!(prim::uderror_ind(&a, 111));
    check_eq!(
        Ind::decode(m.rd()),
        Some(Ind::UderrorInd(&a[..], &[][..], 111))
    );
    let m = check_some!(prim::error_ack(T_BIND_REQ, TSYSERR, 12));
    check_eq!(
        Ind::decode(m.rd()),
        Some(Ind::ErrorAck(T_BIND_REQ, TSYSERR, 12))
    );
    Ok(())
}

/// A received datagram's T_UNITDATA_IND carries its IPv4 header's TTL and TOS as options:
/// IP_TTL then IP_TOS at INET_IP, T_SUCCESS, one byte each, each header 4-aligned.
fn unitdata_ind_carries_the_ip_header() -> TestResult {
    let a = Inet4 {
        addr: [10, 0, 0, 1],
        port: 7,
    }
    .encode();
    let o = opt::rx_opts(&RxIp { tos: 0x10, ttl: 3 });
    check_eq!(o.len(), opt::RX_OPT_SIZE);
    check_eq!(opt::RX_OPT_SIZE, 2 * (OPTHDR + 4));
    let m = check_some!(prim::unitdata_ind(&a, &o));
    check_eq!(Ind::decode(m.rd()), Some(Ind::UnitdataInd(&a[..], &o[..])));
    let (list, n) = check_ok!(opt::parse::<4>(&o));
    check_eq!(n, 2);
    let got = list.map(|x| x.map(|o| (o.level, o.name, o.status, o.value)));
    check_eq!(got[0], Some((INET_IP, IP_TTL, T_SUCCESS, &[3u8][..])));
    check_eq!(got[1], Some((INET_IP, IP_TOS, T_SUCCESS, &[0x10u8][..])));
    // The length word counts the header and the one-byte value, not the padding.
    check_eq!(&o[..4], &(OPTHDR as u32 + 1).to_ne_bytes()[..]);
    Ok(())
}

/// The receive path's T_UNITDATA_IND (`prim::unitdata_ind_rx`: a fixed layout patched with
/// the source and the TTL and TOS) is, byte for byte, what the generic encoder makes of the
/// `sockaddr_in` and `opt::rx_opts`: for a first datagram, the same source again, and each
/// field changed on its own (address, port, TOS, TTL), extremes included.
fn unitdata_ind_rx_is_the_generic_encoding() -> TestResult {
    let base = Inet4 {
        addr: [127, 0, 0, 1],
        port: 5000,
    };
    let ip = RxIp { tos: 0, ttl: 64 };
    let cases = [
        (base, ip),
        (base, ip),
        (
            Inet4 {
                addr: [10, 1, 2, 3],
                ..base
            },
            ip,
        ),
        (Inet4 { port: 5001, ..base }, ip),
        (base, RxIp { tos: 0x10, ttl: 64 }),
        (base, RxIp { tos: 0, ttl: 7 }),
        (
            Inet4 {
                addr: [255, 255, 255, 255],
                port: 65535,
            },
            RxIp {
                tos: 0xff,
                ttl: 255,
            },
        ),
        (
            Inet4 {
                addr: [0, 0, 0, 0],
                port: 0,
            },
            RxIp { tos: 1, ttl: 1 },
        ),
        (base, ip),
    ];
    for (src, ip) in cases {
        let fast = check_some!(prim::unitdata_ind_rx(&src, &ip));
        let slow = check_some!(prim::unitdata_ind(&src.encode(), &opt::rx_opts(&ip)));
        check_eq!(fast.rd(), slow.rd());
        check_eq!(fast.rd().len(), UNITDATA_IND_RX);
        check_eq!(fast.db_type(), slow.db_type());
        check_eq!(
            Ind::decode(fast.rd()),
            Some(Ind::UnitdataInd(&src.encode()[..], &opt::rx_opts(&ip)[..]))
        );
    }
    Ok(())
}

fn short_and_lying_primitives_are_errors() -> TestResult {
    check_eq!(check_ok!(Req::decode(&[1, 2])), None);
    let b = words(&[T_BIND_REQ, 16]);
    check_eq!(Req::decode(&b[..8]), Err((T_BIND_REQ, Bad::Short)));
    // Address past the end, negative, overflowing.
    for (len, off) in [(16, 16), (-1, 16), (16, -4), (i32::MAX, i32::MAX), (4, 60)] {
        let b = words(&[T_BIND_REQ, len, off, 0]);
        check_eq!(Req::decode(&b[..16]), Err((T_BIND_REQ, Bad::Range)));
    }
    let b = words(&[T_UNITDATA_REQ, 0, 0, 8, 20]);
    check_eq!(Req::decode(&b[..20]), Err((T_UNITDATA_REQ, Bad::Range)));
    let b = words(&[T_OPTMGMT_REQ, 0, 0]);
    check_eq!(Req::decode(&b[..12]), Err((T_OPTMGMT_REQ, Bad::Short)));
    // Every truncation of every primitive decodes or fails, never panics.
    for t in 0..30 {
        let b = words(&[t, 16, 20, 16, 20, 0, 0, 0, 0, 0, 0, 0]);
        for n in 0..=b.len() {
            let _ = Req::decode(&b[..n]);
            let _ = Ind::decode(&b[..n]);
        }
    }
    Ok(())
}

fn sockaddr_in() -> TestResult {
    let a = Inet4 {
        addr: [192, 168, 1, 2],
        port: 0x1234,
    };
    let b = a.encode();
    check_eq!(b.len(), 16);
    check_eq!(&b[2..4], &[0x12, 0x34]);
    check_eq!(Inet4::decode(&b), Some(a));
    check_eq!(Inet4::decode(&b[..8]), Some(a));
    check_eq!(Inet4::decode(&b[..7]), None);
    let mut bad = b;
    bad[0] = 10; // AF_INET6 or anything else
    bad[1] = 0;
    check_eq!(Inet4::decode(&bad), None);
    check_eq!(Inet4::decode(&[0u8; 20]), None);
    Ok(())
}

fn state_table() -> TestResult {
    use TpiState::*;
    let all = [Unbnd, WackBreq, WackUreq, Idle, WackOptreq];
    for s in all {
        check_eq!(check(T_INFO_REQ, s), Verdict::Ok);
        check_eq!(check(T_ADDR_REQ, s), Verdict::Ok);
        check_eq!(check(T_CONN_REQ, s), Verdict::NotSupported);
        check_eq!(check(T_DATA_REQ, s), Verdict::NotSupported);
        check_eq!(check(99, s), Verdict::NotSupported);
        let ok = |p, want: &[TpiState]| {
            if want.contains(&s) {
                Verdict::Ok
            } else if p == T_UNITDATA_REQ {
                Verdict::Fatal
            } else {
                Verdict::OutState
            }
        };
        check_eq!(check(T_BIND_REQ, s), ok(T_BIND_REQ, &[Unbnd]));
        check_eq!(check(T_UNBIND_REQ, s), ok(T_UNBIND_REQ, &[Idle]));
        check_eq!(check(T_UNITDATA_REQ, s), ok(T_UNITDATA_REQ, &[Idle]));
        check_eq!(check(T_OPTMGMT_REQ, s), ok(T_OPTMGMT_REQ, &[Unbnd, Idle]));
    }
    Ok(())
}

/// An options part of (level, name, value) triples.
fn opts(list: &[(u32, u32, &[u8])]) -> ([u8; 256], usize) {
    let mut b = OptBuf::new().unwrap_or_else(|| panic!("memory"));
    for (l, n, v) in list {
        opt::put(&mut b, *l, *n, 0, v);
    }
    let mut out = [0u8; 256];
    let n = streams_core::sys::copy_bytes(&mut out, b.bytes());
    (out, n)
}

fn options_negotiate_check_default_current() -> TestResult {
    let cur = Opts::DEFAULT;
    let (b, n) = opts(&[
        (INET_IP, IP_TTL, &[9]),
        (XTI_GENERIC, XTI_RCVBUF, &1u32.to_ne_bytes()),
        (INET_UDP, UDP_CHECKSUM, &T_NO.to_ne_bytes()),
    ]);
    let a = check_ok!(manage(&cur, &b[..n], T_NEGOTIATE));
    check_eq!(a.opts.ttl, 9);
    check_eq!(a.opts.rcvbuf, BUF_MIN); // clamped
    check!(!a.opts.checksum);
    check_eq!(a.flags, T_PARTSUCCESS as i32);
    let (l, k) = check_ok!(parse::<8>(a.out.bytes()));
    check_eq!(k, 3);
    check_eq!(
        l[0].map(|o| (o.status, o.value)),
        Some((T_SUCCESS, &[9u8][..]))
    );
    // T_CHECK changes nothing; a refused value is T_FAILURE.
    let (b, n) = opts(&[(INET_IP, IP_TTL, &[0])]);
    let a = check_ok!(manage(&cur, &b[..n], T_CHECK));
    check_eq!((a.flags, a.opts), (T_FAILURE as i32, cur));
    // Unsupported and unknown: T_NOTSUPPORT, the worst.
    let (b, n) = opts(&[
        (INET_IP, IP_TOS, &[4]),
        (XTI_GENERIC, XTI_LINGER, &[0; 8]),
        (77, 1, &[]),
    ]);
    let a = check_ok!(manage(&cur, &b[..n], T_NEGOTIATE));
    check_eq!(a.flags, T_NOTSUPPORT as i32);
    check_eq!(a.opts.tos, 4);
    // T_DEFAULT and T_CURRENT of nothing: every option.
    let mut c = cur;
    c.ttl = 3;
    let a = check_ok!(manage(&c, &[], T_CURRENT));
    check_eq!(a.out.bytes().len(), OPT_SIZE); // u8 values are padded to 4 bytes too
    let (l, k) = check_ok!(parse::<16>(a.out.bytes()));
    check_eq!(k, 8);
    check!(l
        .iter()
        .flatten()
        .any(|o| o.name == IP_TTL && o.value == [3]));
    let a = check_ok!(manage(&c, &[], T_DEFAULT));
    let (l, _) = check_ok!(parse::<16>(a.out.bytes()));
    check!(l
        .iter()
        .flatten()
        .any(|o| o.name == IP_TTL && o.value == [64]));
    // T_ALLOPT of a level.
    let (b, n) = opts(&[(INET_IP, T_ALLOPT, &[])]);
    let a = check_ok!(manage(&c, &b[..n], T_CURRENT));
    check_eq!(check_ok!(parse::<16>(a.out.bytes())).1, 4);
    Ok(())
}

fn options_malformed_are_tbadopt() -> TestResult {
    let cur = Opts::DEFAULT;
    check_eq!(manage(&cur, &[], 0x3).err(), Some(TBADFLAG));
    // Header shorter than 16, len past the end, trailing garbage, wrong value sizes.
    let (mut b, n) = opts(&[(INET_IP, IP_TTL, &[9])]);
    check_eq!(manage(&cur, &b[..16], T_NEGOTIATE).err(), Some(TBADOPT));
    check_eq!(manage(&cur, &b[..n + 3], T_NEGOTIATE).err(), Some(TBADOPT));
    b[0] = 8;
    check_eq!(manage(&cur, &b[..n], T_NEGOTIATE).err(), Some(TBADOPT));
    b[0] = 200;
    check_eq!(manage(&cur, &b[..n], T_NEGOTIATE).err(), Some(TBADOPT));
    let (b, n) = opts(&[(INET_IP, IP_TTL, &[9, 9])]);
    check_eq!(manage(&cur, &b[..n], T_NEGOTIATE).err(), Some(TBADOPT));
    let (b, n) = opts(&[(XTI_GENERIC, XTI_SNDBUF, &[1])]);
    check_eq!(manage(&cur, &b[..n], T_CHECK).err(), Some(TBADOPT));
    let (b, n) = opts(&[(INET_IP, T_ALLOPT, &[])]);
    check_eq!(manage(&cur, &b[..n], T_CHECK).err(), Some(TBADOPT));
    // Unitdata options: only the per-datagram ones.
    let (b, n) = opts(&[(INET_IP, IP_TOS, &[8]), (INET_IP, IP_TTL, &[2])]);
    let tx = check_ok!(opt::unitdata(&cur, &b[..n]));
    check_eq!((tx.tos, tx.ttl), (8, 2));
    let (b, n) = opts(&[(XTI_GENERIC, XTI_SNDBUF, &4096u32.to_ne_bytes())]);
    check_eq!(opt::unitdata(&cur, &b[..n]).err(), Some(TBADOPT));
    for k in 0..n {
        let _ = opt::unitdata(&cur, &b[..k]);
        let _ = manage(&cur, &b[..k], T_NEGOTIATE);
    }
    Ok(())
}

/// The data part of a T_UNITDATA_REQ (`udp::check_unitdata`, both send paths): M_DATA blocks
/// up to a TSDU in all are sent, a byte more (in one block or summed over two) or a block of
/// another type behind the data is `Refused::Data`.
fn unitdata_data_part_is_a_tsdu() -> TestResult {
    let dest = Inet4 {
        addr: [10, 13, 0, 1],
        port: 9,
    };
    let req = |blocks: &[(MsgType, usize)]| -> Option<Msg> {
        let mut m = encode_req(&Req::Unitdata {
            dest: &dest.encode(),
            opt: &[],
        })?;
        for &(ty, n) in blocks {
            let mut b = Msg::with_type(ty, n).ok()?;
            (b.adj_wptr(n) == n).then_some(())?;
            m.linkb(b);
        }
        Some(m)
    };
    let sent = |m: &Msg| match check_unitdata(&Opts::DEFAULT, m) {
        Ok((d, _)) => d == dest,
        Err(_) => false,
    };
    let refused =
        |m: &Msg| matches!(check_unitdata(&Opts::DEFAULT, m), Err(Refused::Data(d)) if d == dest);
    let tsdu = TSDU_SIZE as usize;
    check!(sent(&check_some!(req(&[(M_DATA, 1)]))));
    check!(sent(&check_some!(req(&[(M_DATA, tsdu)]))));
    check!(sent(&check_some!(req(&[(M_DATA, tsdu - 7), (M_DATA, 7)]))));
    check!(refused(&check_some!(req(&[(M_DATA, tsdu + 1)]))));
    check!(refused(&check_some!(req(&[
        (M_DATA, tsdu - 7),
        (M_DATA, 8)
    ]))));
    check!(refused(&check_some!(req(&[(M_DATA, 4), (M_PROTO, 4)]))));
    check!(refused(&check_some!(req(&[(M_CTL, 4)]))));
    Ok(())
}

ktest_suite!(TPI_CODEC_SUITE, "tpi_codec":
    primitives_roundtrip,
    unitdata_ind_carries_the_ip_header,
    unitdata_ind_rx_is_the_generic_encoding,
    short_and_lying_primitives_are_errors,
    sockaddr_in,
    state_table,
    options_negotiate_check_default_current,
    options_malformed_are_tbadopt,
    unitdata_data_part_is_a_tsdu,
);
