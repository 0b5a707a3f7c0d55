//! Bad TPI input to the UDP providers with no XTI library in between: raw primitives put with
//! putmsg on `/dev/streams/clone/udp` and `/dev/streams/clone/xtiso-udp`, the driver's answers
//! read back with getmsg, as uid 65534 (each case runs once per device, in a child that drops
//! to nobody before it opens the device, so the driver sees an unprivileged opener).
//!
//! The answers asserted are those of docs/tpi.md's primitive table and the host suite
//! (`rust/tpi_udp/src/tests/driver.rs`: `info_bind_addr_unbind_rebind`,
//! `bad_input_is_answered`, `unitdata_before_bind_is_fatal`): T_ERROR_ACK (M_PCPROTO) with
//! the primitive, TLI error and UNIX error; T_UDERROR_IND (M_PROTO) with the destination as
//! given and the error; M_ERROR EPROTO, after which getmsg, putmsg, read and write fail with
//! EPROTO. Each case ends by checking that nothing else was sent up.
//! A device that is absent passes with a "# skip" note.

use streams::xti::tihdr::*;
use streams::xti::tpi::{self, Received};
use streams::xti::{self, OptBuilder};
use streams::{Stream, RS_HIPRI};

use crate::R;

/// Both providers: the direct driver and XTI over sockets.
const DEVICES: [&str; 2] = [xti::UDP_DEVICE, xti::XTISO_UDP_DEVICE];
/// How long an answer may take (a bind's runs after the Stream lock is let go).
const WAIT_MS: i32 = 5000;

/// Run `f` on each present device, as nobody; the failure names the device.
fn each_device(f: fn(&str) -> R) -> R {
    for dev in DEVICES {
        if !std::path::Path::new(dev).exists() {
            println!("# skip: {dev} absent");
            continue;
        }
        crate::as_nobody(|| f(dev)).map_err(|why| format!("{dev}: {why}"))?;
    }
    Ok(())
}

fn open(dev: &str) -> Result<Stream, String> {
    crate::e(Stream::open(dev), "open")
}

/// A control part of native-endian scalars (a primitive built by hand, possibly bad).
fn words(w: &[i32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn sin(ip: [u8; 4], port: u16) -> Vec<u8> {
    crate::sockaddr_in(libc::AF_INET as u16, ip, port)
}

const LOCALHOST: [u8; 4] = [127, 0, 0, 1];

/// putmsg of `ctl` (M_PCPROTO when `hipri`) and `data`; it must be accepted.
fn put(s: &Stream, ctl: &[u8], data: Option<&[u8]>, hipri: bool, what: &str) -> R {
    let flags = if hipri { RS_HIPRI } else { 0 };
    crate::e(s.putmsg(Some(ctl), data, flags), &format!("putmsg {what}"))
}

/// Wait for something to read (or an error) on `s`.
fn wait(s: &Stream, ms: i32) -> Result<i16, String> {
    let ev = libc::POLLIN | libc::POLLPRI | libc::POLLRDNORM | libc::POLLRDBAND;
    crate::poll1(s, ev, ms)
}

/// One message sent up: (control part, data part, whether it was M_PCPROTO).
struct Up {
    ctl: Vec<u8>,
    data: Vec<u8>,
    hipri: bool,
}

fn get(s: &Stream, what: &str) -> Result<Up, String> {
    ensure!(
        wait(s, WAIT_MS)? != 0,
        "{what}: no answer within {WAIT_MS} ms"
    );
    let (mut c, mut d) = (vec![0u8; 512], vec![0u8; 70000]);
    let g = crate::e(
        s.getmsg(Some(&mut c), Some(&mut d), 0),
        &format!("getmsg {what}"),
    )?;
    ensure!(
        g.more == 0,
        "{what}: getmsg left part of the message ({})",
        g.more
    );
    c.truncate(g.ctl_len.unwrap_or(0));
    d.truncate(g.data_len.unwrap_or(0));
    Ok(Up {
        ctl: c,
        data: d,
        hipri: g.flags == RS_HIPRI,
    })
}

/// The next answer must be T_ERROR_ACK (M_PCPROTO) for `prim` with `tli` and `unix`.
fn error_ack(s: &Stream, prim: i32, tli: i32, unix: i32, what: &str) -> R {
    let up = get(s, what)?;
    let r = tpi::decode(&up.ctl).map_err(|e| format!("{what}: answer {e:?}: {:?}", up.ctl))?;
    let want = Received::ErrorAck {
        error_prim: prim,
        tli_error: tli,
        unix_error: unix,
    };
    ensure!(r == want, "{what}: {r:?}, expected {want:?}");
    ensure!(
        up.hipri && up.data.is_empty(),
        "{what}: T_ERROR_ACK not M_PCPROTO alone"
    );
    Ok(())
}

/// The next answer must be T_UDERROR_IND (M_PROTO) for destination `dest`, no options,
/// `ERROR_type` `err`.
fn uderror(s: &Stream, dest: &[u8], err: i32, what: &str) -> R {
    let up = get(s, what)?;
    let r = tpi::decode(&up.ctl).map_err(|e| format!("{what}: answer {e:?}: {:?}", up.ctl))?;
    let want = Received::UderrorInd {
        dest,
        opt: &[],
        error: err,
    };
    ensure!(r == want, "{what}: {r:?}, expected {want:?}");
    ensure!(
        !up.hipri && up.data.is_empty(),
        "{what}: T_UDERROR_IND not M_PROTO alone"
    );
    Ok(())
}

/// T_BIND_REQ for `addr`: the T_BIND_ACK's port (the address must be `addr` but for it).
fn bind(s: &Stream, addr: &[u8]) -> Result<u16, String> {
    let req = tpi::bind_req(addr, 0).map_err(|e| format!("bind_req: {e:?}"))?;
    put(s, &req, None, false, "T_BIND_REQ")?;
    let up = get(s, "T_BIND_REQ")?;
    match tpi::decode(&up.ctl) {
        Ok(Received::BindAck { addr: a, .. }) if a.len() == 16 && up.hipri => {
            let port = u16::from_be_bytes([a[2], a[3]]);
            ensure!(
                a[..2] == addr[..2] && a[4..8] == addr[4..8] && port != 0,
                "T_BIND_ACK address {a:?} for {addr:?}"
            );
            Ok(port)
        }
        r => Err(format!("T_BIND_REQ {addr:?}: {r:?}, expected T_BIND_ACK")),
    }
}

/// T_INFO_REQ: the provider's `CURRENT_state`.
fn state(s: &Stream) -> Result<i32, String> {
    put(s, &tpi::info_req(), None, true, "T_INFO_REQ")?;
    let up = get(s, "T_INFO_REQ")?;
    match tpi::decode(&up.ctl) {
        Ok(Received::InfoAck(i)) if i.serv_type == T_CLTS => Ok(i.current_state),
        r => Err(format!("T_INFO_REQ: {r:?}")),
    }
}

/// Nothing more was sent up (no answer beyond those read).
fn quiet(s: &Stream, what: &str) -> R {
    let ev = wait(s, 100)?;
    ensure!(ev == 0, "{what}: something more sent up (poll {ev:#x})");
    Ok(())
}

/// After M_ERROR EPROTO: poll says POLLERR, and getmsg, putmsg, read and write fail EPROTO.
fn fatal(s: &Stream, what: &str) -> R {
    let ev = wait(s, WAIT_MS)?;
    ensure!(ev & libc::POLLERR != 0, "{what}: poll {ev:#x}, no POLLERR");
    let mut b = [0u8; 64];
    let r = [
        crate::errno_of(s.getmsg(Some(&mut b), None, 0), "getmsg")?,
        crate::errno_of(s.putmsg(Some(&tpi::info_req()), None, RS_HIPRI), "putmsg")?,
        crate::errno_of(s.read(&mut b), "read")?,
        crate::errno_of(s.write(b"x"), "write")?,
    ];
    ensure!(
        r == [libc::EPROTO; 4],
        "{what}: getmsg/putmsg/read/write errno {r:?}, expected EPROTO"
    );
    Ok(())
}

/// T_BIND_REQ with a bad address: TBADADDR (too short, too long, not AF_INET, out of the
/// block, not a local address); too short a T_BIND_REQ: TSYSERR/EINVAL; then a good bind.
pub(crate) fn t_tpiraw_bind_bad_address() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        let bad: [(&str, Vec<u8>); 4] = [
            ("3-byte address", vec![2, 0, 1]),
            ("20-byte address", [sin(LOCALHOST, 0), vec![0; 4]].concat()),
            (
                "AF_INET6",
                crate::sockaddr_in(libc::AF_INET6 as u16, LOCALHOST, 0),
            ),
            ("AF_UNSPEC", crate::sockaddr_in(0, LOCALHOST, 0)),
        ];
        for (what, a) in &bad {
            let req = tpi::bind_req(a, 0).map_err(|e| format!("bind_req: {e:?}"))?;
            put(&s, &req, None, false, what)?;
            error_ack(&s, T_BIND_REQ, TBADADDR, 0, what)?;
        }
        let what = "address offset past the block";
        put(&s, &words(&[T_BIND_REQ, 16, 400, 0]), None, false, what)?;
        error_ack(&s, T_BIND_REQ, TBADADDR, 0, what)?;
        // Well formed, but 192.0.2.1 (TEST-NET-1) is no address of this host: the kernel's
        // bind says EADDRNOTAVAIL, answered after the unlock.
        let what = "192.0.2.1";
        let req = tpi::bind_req(&sin([192, 0, 2, 1], 0), 0).map_err(|e| format!("{e:?}"))?;
        put(&s, &req, None, false, what)?;
        error_ack(&s, T_BIND_REQ, TBADADDR, 0, what)?;
        for n in [1, 3] {
            let what = format!("T_BIND_REQ of {} bytes", n * 4);
            let w = [T_BIND_REQ, 16, 16, 0];
            put(&s, &words(&w[..n]), None, false, &what)?;
            error_ack(&s, T_BIND_REQ, TSYSERR, libc::EINVAL, &what)?;
        }
        ensure!(state(&s)? == TS_UNBND, "not TS_UNBND after the refusals");
        bind(&s, &sin(LOCALHOST, 0))?;
        ensure!(state(&s)? == TS_IDLE, "not TS_IDLE after T_BIND_ACK");
        quiet(&s, "bind")
    })
}

/// T_BIND_REQ of a port below 1024 by an opener without CAP_NET_BIND_SERVICE: TACCES (the
/// driver's own check); the same endpoint then binds an ephemeral port.
pub(crate) fn t_tpiraw_bind_privileged_port() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        for (ip, port) in [(LOCALHOST, 999), (LOCALHOST, 1023), ([0; 4], 80)] {
            let what = format!("bind {ip:?}:{port}");
            let req = tpi::bind_req(&sin(ip, port), 0).map_err(|e| format!("{e:?}"))?;
            put(&s, &req, None, false, &what)?;
            error_ack(&s, T_BIND_REQ, TACCES, 0, &what)?;
        }
        let port = bind(&s, &sin(LOCALHOST, 0))?;
        ensure!(port >= 1024, "ephemeral port {port}");
        quiet(&s, "TACCES")
    })
}

/// T_UNITDATA_REQ in TS_IDLE with bad options (unknown to T_UNITDATA_REQ, unknown level,
/// IP_TTL 0, a malformed list): T_UDERROR_IND TBADOPT; with a bad destination (not AF_INET,
/// 3 bytes, port 0, INADDR_ANY): TBADADDR, the destination as given; with its offset past the
/// block: TBADADDR, no destination; a TSDU of 65508 bytes: TBADDATA. Then a good datagram
/// to itself arrives.
pub(crate) fn t_tpiraw_unitdata_bad() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        let port = bind(&s, &sin(LOCALHOST, 0))?;
        let me = sin(LOCALHOST, port);
        let bad_opts: [(&str, Vec<u8>); 4] = [
            (
                "XTI_SNDBUF",
                OptBuilder::new()
                    .scalar(XTI_GENERIC, XTI_SNDBUF, 65536)
                    .build(),
            ),
            (
                "level 0x1234",
                OptBuilder::new().push(0x1234, 1, &[1]).build(),
            ),
            (
                "IP_TTL 0",
                OptBuilder::new()
                    .push(xti::T_INET_IP, xti::T_IP_TTL, &[0])
                    .build(),
            ),
            ("a t_opthdr of length 0", vec![0; 16]),
        ];
        for (what, opt) in &bad_opts {
            let req = tpi::unitdata_req(&me, opt).map_err(|e| format!("{e:?}"))?;
            put(&s, &req, Some(b"x"), false, what)?;
            uderror(&s, &me, TBADOPT, what)?;
        }
        let bad_dests: [(&str, Vec<u8>); 4] = [
            (
                "AF_INET6",
                crate::sockaddr_in(libc::AF_INET6 as u16, LOCALHOST, port),
            ),
            ("3-byte address", vec![2, 0, 1]),
            ("port 0", sin(LOCALHOST, 0)),
            ("INADDR_ANY", sin([0; 4], port)),
        ];
        for (what, dest) in &bad_dests {
            let req = tpi::unitdata_req(dest, &[]).map_err(|e| format!("{e:?}"))?;
            put(&s, &req, Some(b"x"), false, what)?;
            uderror(&s, dest, TBADADDR, what)?;
        }
        let what = "destination offset past the block";
        let req = words(&[T_UNITDATA_REQ, 16, 400, 0, 0]);
        put(&s, &req, Some(b"x"), false, what)?;
        uderror(&s, &[], TBADADDR, what)?;
        let what = "65508-byte TSDU";
        let req = tpi::unitdata_req(&me, &[]).map_err(|e| format!("{e:?}"))?;
        put(&s, &req, Some(&vec![0u8; 65508]), false, what)?;
        uderror(&s, &me, TBADDATA, what)?;
        // Still usable: a datagram to itself.
        put(&s, &req, Some(b"after"), false, "good T_UNITDATA_REQ")?;
        let up = get(&s, "T_UNITDATA_IND")?;
        match tpi::decode(&up.ctl) {
            Ok(Received::UnitdataInd { src, .. }) if src == &me[..] && !up.hipri => {}
            r => {
                return Err(format!(
                    "after the bad ones: {r:?}, expected T_UNITDATA_IND"
                ))
            }
        }
        ensure!(up.data == b"after", "datagram {:?}", up.data);
        quiet(&s, "T_UDERROR_IND")
    })
}

/// Out of state: T_UNBIND_REQ in TS_UNBND and T_BIND_REQ in TS_IDLE are T_ERROR_ACK
/// TOUTSTATE; a T_UNITDATA_REQ in TS_UNBND (after a T_UNBIND_REQ's T_OK_ACK) is TPI's fatal
/// M_ERROR EPROTO.
pub(crate) fn t_tpiraw_out_of_state() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        put(&s, &tpi::unbind_req(), None, false, "T_UNBIND_REQ unbound")?;
        error_ack(&s, T_UNBIND_REQ, TOUTSTATE, 0, "T_UNBIND_REQ unbound")?;
        let port = bind(&s, &sin(LOCALHOST, 0))?;
        let req = tpi::bind_req(&[], 0).map_err(|e| format!("{e:?}"))?;
        put(&s, &req, None, false, "second T_BIND_REQ")?;
        error_ack(&s, T_BIND_REQ, TOUTSTATE, 0, "second T_BIND_REQ")?;
        put(&s, &tpi::unbind_req(), None, false, "T_UNBIND_REQ")?;
        let up = get(&s, "T_UNBIND_REQ")?;
        let r = tpi::decode(&up.ctl);
        ensure!(
            r == Ok(Received::OkAck {
                correct_prim: T_UNBIND_REQ
            }) && up.hipri,
            "T_UNBIND_REQ: {r:?}, expected T_OK_ACK"
        );
        ensure!(state(&s)? == TS_UNBND, "not TS_UNBND after T_OK_ACK");
        let req = tpi::unitdata_req(&sin(LOCALHOST, port), &[]).map_err(|e| format!("{e:?}"))?;
        put(&s, &req, Some(b"x"), false, "T_UNITDATA_REQ unbound")?;
        fatal(&s, "T_UNITDATA_REQ unbound")
    })
}

/// Primitives shorter than their header: T_BIND_REQ and T_OPTMGMT_REQ of 8 bytes are
/// T_ERROR_ACK TSYSERR/EINVAL; a T_UNITDATA_REQ of 12 bytes (TS_IDLE), a control part of 2
/// bytes, and data with no control part are M_ERROR EPROTO.
pub(crate) fn t_tpiraw_short_primitives() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        for (prim, what) in [
            (T_BIND_REQ, "T_BIND_REQ of 8 bytes"),
            (T_OPTMGMT_REQ, "T_OPTMGMT_REQ of 8 bytes"),
        ] {
            put(&s, &words(&[prim, 0]), None, false, what)?;
            error_ack(&s, prim, TSYSERR, libc::EINVAL, what)?;
        }
        bind(&s, &sin(LOCALHOST, 0))?;
        let what = "T_UNITDATA_REQ of 12 bytes";
        put(
            &s,
            &words(&[T_UNITDATA_REQ, 16, 20]),
            Some(b"x"),
            false,
            what,
        )?;
        fatal(&s, what)?;
        let s = open(dev)?;
        put(&s, &[1, 2], None, false, "2-byte control part")?;
        fatal(&s, "2-byte control part")?;
        let s = open(dev)?;
        crate::e(s.putmsg(None, Some(b"raw"), 0), "putmsg data alone")?;
        fatal(&s, "data with no control part")
    })
}

/// Primitives a T_CLTS provider does not serve (connection-oriented ones, one it sends
/// itself, numbers no primitive has): T_ERROR_ACK TNOTSUPPORT, unbound and bound, and the
/// state is unchanged.
pub(crate) fn t_tpiraw_unknown_primitive() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        let prims = [T_CONN_REQ, T_DATA_REQ, T_ORDREL_REQ, T_INFO_ACK, 99, -1];
        for p in prims {
            let what = format!("primitive {p} unbound");
            put(&s, &words(&[p, 0, 0, 0, 0]), None, false, &what)?;
            error_ack(&s, p, TNOTSUPPORT, 0, &what)?;
        }
        ensure!(state(&s)? == TS_UNBND, "state changed by TNOTSUPPORT");
        bind(&s, &sin(LOCALHOST, 0))?;
        for p in prims {
            let what = format!("primitive {p} bound (M_PCPROTO)");
            put(&s, &words(&[p]), None, true, &what)?;
            error_ack(&s, p, TNOTSUPPORT, 0, &what)?;
        }
        ensure!(state(&s)? == TS_IDLE, "state changed by TNOTSUPPORT");
        quiet(&s, "TNOTSUPPORT")
    })
}

/// T_OPTMGMT_REQ with flags that are no management flag: TBADFLAG; with a malformed list:
/// TBADOPT (unbound and bound); the endpoint's state unchanged.
pub(crate) fn t_tpiraw_optmgmt_bad() -> R {
    each_device(|dev| {
        let s = open(dev)?;
        for bound in [false, true] {
            if bound {
                bind(&s, &sin(LOCALHOST, 0))?;
            }
            let req = tpi::optmgmt_req(&[], 0x77).map_err(|e| format!("{e:?}"))?;
            put(&s, &req, None, false, "T_OPTMGMT_REQ flags 0x77")?;
            error_ack(&s, T_OPTMGMT_REQ, TBADFLAG, 0, "flags 0x77")?;
            let req = tpi::optmgmt_req(&[1, 2, 3], T_NEGOTIATE).map_err(|e| format!("{e:?}"))?;
            put(&s, &req, None, false, "T_OPTMGMT_REQ 3-byte list")?;
            error_ack(&s, T_OPTMGMT_REQ, TBADOPT, 0, "3-byte list")?;
            let want = if bound { TS_IDLE } else { TS_UNBND };
            ensure!(state(&s)? == want, "state changed by T_OPTMGMT_REQ errors");
        }
        quiet(&s, "T_OPTMGMT_REQ")
    })
}
