//! Host tests of the XTI library: everything that does not need a TPI provider in the
//! kernel (the TPI codec, the state table, t_alloc sizes, options, errors, per-thread
//! t_errno, and the failures of calls on descriptors that are not transport endpoints).

use std::ffi::CStr;
use streams::xti::ffi as c;
use streams::xti::tpi::{self, provider, DecodeError, InfoAck, Received};
use streams::xti::*;

fn udp_info() -> t_info {
    t_info {
        addr: 16,
        options: 512,
        tsdu: 65507,
        etsdu: T_INVALID,
        connect: T_INVALID,
        discon: T_INVALID,
        servtype: T_CLTS,
        flags: T_SENDZERO,
        tidu: 65507,
    }
}

fn words(b: &[u8]) -> Vec<i32> {
    b.chunks(4)
        .map(|w| i32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

#[test]
fn requests_are_encoded_with_lfs_layouts() {
    assert_eq!(words(&tpi::info_req()), [tpi::T_INFO_REQ]);
    assert_eq!(words(&tpi::unbind_req()), [tpi::T_UNBIND_REQ]);
    assert_eq!(words(&tpi::addr_req()), [tpi::T_ADDR_REQ]);
    let b = tpi::bind_req(&[1, 2, 3, 4, 5], 7).unwrap();
    assert_eq!(&words(&b[..16]), &[tpi::T_BIND_REQ, 5, 16, 7]);
    assert_eq!(&b[16..], &[1, 2, 3, 4, 5]);
    let b = tpi::bind_req(&[], 0).unwrap();
    assert_eq!(words(&b), [tpi::T_BIND_REQ, 0, 0, 0]);
    let o = tpi::optmgmt_req(&[9; 8], T_NEGOTIATE).unwrap();
    assert_eq!(&words(&o[..16]), &[tpi::T_OPTMGMT_REQ, 8, 16, T_NEGOTIATE]);
    // Unitdata: address at 20, options aligned after a 6-byte address (at 28).
    let u = tpi::unitdata_req(&[1; 6], &[2; 8]).unwrap();
    assert_eq!(&words(&u[..20]), &[tpi::T_UNITDATA_REQ, 6, 20, 8, 28]);
    assert_eq!(&u[20..26], &[1; 6]);
    assert_eq!(&u[28..], &[2; 8]);
    assert_eq!(u.len(), 36);
}

#[test]
fn unitdata_req_on_the_stack_is_the_builders_layout() {
    // The provider's T_UNITDATA_IND is built by the general Builder with the same layout:
    // the stack encoder must agree with it but for the primitive number.
    for dl in 0..10 {
        for ol in [0, 1, 3, 4, 5, 9] {
            let (d, o) = (vec![0xd; dl], vec![0x0; ol]);
            let mut want = provider::unitdata_ind(&d, &o).unwrap();
            want[..4].copy_from_slice(&tpi::T_UNITDATA_REQ.to_ne_bytes());
            let mut out = [0xffu8; 64];
            let n = tpi::unitdata_req_into(&mut out, &d, &o).unwrap().unwrap();
            assert_eq!(&out[..n], &want[..], "{dl} {ol}");
            assert_eq!(tpi::unitdata_req(&d, &o).unwrap(), want);
            // One byte short: not encoded (the caller builds it on the heap).
            assert_eq!(tpi::unitdata_req_into(&mut out[..n - 1], &d, &o), Ok(None));
        }
    }
}

#[test]
fn acks_and_indications_decode() {
    let ia = InfoAck {
        tsdu_size: 65507,
        etsdu_size: -2,
        cdata_size: -2,
        ddata_size: -2,
        addr_size: 16,
        opt_size: 512,
        tidu_size: 65507,
        serv_type: T_CLTS,
        current_state: tpi::TS_UNBND,
        provider_flag: T_SNDZERO | XPG4_1,
    };
    let b = provider::info_ack(&ia);
    assert_eq!(b.len(), tpi::size::INFO_ACK);
    assert_eq!(tpi::decode(&b), Ok(Received::InfoAck(ia)));
    let b = provider::bind_ack(&[7; 16], 0).unwrap();
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::BindAck {
            addr: &[7; 16],
            conind: 0
        })
    );
    let b = provider::ok_ack(tpi::T_UNBIND_REQ);
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::OkAck {
            correct_prim: tpi::T_UNBIND_REQ
        })
    );
    let b = provider::error_ack(tpi::T_BIND_REQ, TADDRBUSY, 0);
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::ErrorAck {
            error_prim: tpi::T_BIND_REQ,
            tli_error: TADDRBUSY,
            unix_error: 0
        })
    );
    let b = provider::optmgmt_ack(&[1; 20], T_SUCCESS as i32).unwrap();
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::OptmgmtAck {
            opt: &[1; 20],
            flags: T_SUCCESS as i32
        })
    );
    let b = provider::addr_ack(&[3; 16], &[]).unwrap();
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::AddrAck {
            local: &[3; 16],
            remote: &[]
        })
    );
    let b = provider::unitdata_ind(&[4; 16], &[5; 4]).unwrap();
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::UnitdataInd {
            src: &[4; 16],
            opt: &[5; 4]
        })
    );
    let b = provider::uderror_ind(&[6; 16], &[], libc::ECONNREFUSED).unwrap();
    assert_eq!(b.len(), tpi::size::UDERROR_IND + 16);
    assert_eq!(
        tpi::decode(&b),
        Ok(Received::UderrorInd {
            dest: &[6; 16],
            opt: &[],
            error: libc::ECONNREFUSED
        })
    );
    assert_eq!(
        tpi::decode(&tpi::T_CONN_IND.to_ne_bytes()),
        Ok(Received::Other {
            prim: tpi::T_CONN_IND
        })
    );
}

#[test]
fn malformed_primitives_are_errors() {
    assert_eq!(tpi::decode(&[]), Err(DecodeError::Short));
    assert_eq!(tpi::decode(&[1, 2]), Err(DecodeError::Short));
    // Every fixed part one byte short.
    for full in [
        provider::info_ack(&InfoAck::default()),
        provider::bind_ack(&[], 0).unwrap(),
        provider::ok_ack(0),
        provider::error_ack(0, 0, 0),
        provider::optmgmt_ack(&[], 0).unwrap(),
        provider::addr_ack(&[], &[]).unwrap(),
        provider::unitdata_ind(&[], &[]).unwrap(),
        provider::uderror_ind(&[], &[], 0).unwrap(),
    ] {
        assert_eq!(
            tpi::decode(&full[..full.len() - 1]),
            Err(DecodeError::Short),
            "{:?}",
            words(&full[..4])
        );
    }
    // Address running past the end, negative offset, negative length.
    let mut b = provider::unitdata_ind(&[4; 16], &[]).unwrap();
    b.truncate(30);
    assert_eq!(tpi::decode(&b), Err(DecodeError::BadRange));
    let mut w = words(&provider::bind_ack(&[1; 4], 0).unwrap());
    w[2] = -4;
    let b: Vec<u8> = w.iter().flat_map(|x| x.to_ne_bytes()).collect();
    assert_eq!(tpi::decode(&b), Err(DecodeError::BadRange));
    w[1] = -1;
    w[2] = 16;
    let b: Vec<u8> = w.iter().flat_map(|x| x.to_ne_bytes()).collect();
    assert_eq!(tpi::decode(&b), Err(DecodeError::BadRange));
    let mut w = words(&provider::addr_ack(&[], &[1; 4]).unwrap());
    w[4] = i32::MAX;
    let b: Vec<u8> = w.iter().flat_map(|x| x.to_ne_bytes()).collect();
    assert_eq!(tpi::decode(&b), Err(DecodeError::BadRange));
}

#[test]
fn state_table() {
    use state::{transition, xti_state, Call};
    assert_eq!(transition(Call::Bind, T_UNBND), Ok(T_IDLE));
    assert_eq!(transition(Call::Unbind, T_IDLE), Ok(T_UNBND));
    for call in [Call::SndUdata, Call::RcvUdata, Call::RcvUderr] {
        assert_eq!(transition(call, T_IDLE), Ok(T_IDLE));
        assert_eq!(transition(call, T_UNBND), Err(XtiError::t(TOUTSTATE)));
    }
    assert_eq!(transition(Call::Bind, T_IDLE), Err(XtiError::t(TOUTSTATE)));
    assert_eq!(
        transition(Call::Unbind, T_UNBND),
        Err(XtiError::t(TOUTSTATE))
    );
    assert_eq!(transition(Call::Any, T_UNBND), Ok(T_UNBND));
    assert_eq!(transition(Call::Any, T_UNINIT), Err(XtiError::t(TOUTSTATE)));
    for s in T_OUTCON..=T_INREL {
        assert_eq!(transition(Call::Bind, s), Err(XtiError::t(TOUTSTATE)));
        assert_eq!(transition(Call::SndUdata, s), Err(XtiError::t(TOUTSTATE)));
    }
    assert_eq!(xti_state(tpi::TS_UNBND), Some(T_UNBND));
    assert_eq!(xti_state(tpi::TS_IDLE), Some(T_IDLE));
    assert_eq!(xti_state(tpi::TS_DATA_XFER), Some(T_DATAXFER));
    assert_eq!(xti_state(tpi::TS_WACK_BREQ), None);
    let ia = InfoAck {
        provider_flag: T_SNDZERO | XPG4_1,
        serv_type: T_CLTS,
        current_state: tpi::TS_IDLE,
        ..InfoAck::default()
    };
    let ep = state::Endpoint::from_info(&ia).unwrap();
    assert_eq!(
        (ep.state, ep.info.flags, ep.info.servtype),
        (T_IDLE, T_SENDZERO, T_CLTS)
    );
}

#[test]
fn strerror_has_a_message_for_every_error() {
    let mut seen = std::collections::HashSet::new();
    for e in 1..=T_ERRNO_MAX {
        // SAFETY: t_strerror returns a static NUL-terminated string.
        let m = unsafe { CStr::from_ptr(c::t_strerror(e)) };
        assert!(!m.to_bytes().is_empty(), "{e}");
        assert!(seen.insert(m.to_owned()), "duplicate message for {e}");
        assert!(error::name(e).starts_with('T'));
    }
    for e in [-1, 0, T_ERRNO_MAX + 1, 1000] {
        // SAFETY: as above.
        let m = unsafe { CStr::from_ptr(c::t_strerror(e)) };
        assert!(!m.to_bytes().is_empty());
    }
    assert_eq!(error::message(TBADADDR), c"Incorrect address format");
    assert_eq!(error::message(TADDRBUSY), c"Transport address is in use");
    let s = XtiError::sys(libc::ECONNREFUSED).to_string();
    assert!(s.contains("TSYSERR") && s.contains("refused"), "{s}");
}

#[test]
fn t_errno_is_per_thread() {
    // SAFETY: _t_errno returns this thread's slot.
    unsafe { *c::_t_errno() = TBADOPT };
    let handles: Vec<_> = (1..=8)
        .map(|i| {
            std::thread::spawn(move || {
                let p = c::_t_errno();
                // SAFETY: this thread's slot, valid while it runs.
                assert_eq!(unsafe { *p }, 0, "a new thread starts with t_errno 0");
                for _ in 0..1000 {
                    // SAFETY: as above.
                    unsafe { *p = i };
                    std::thread::yield_now();
                    // SAFETY: as above.
                    assert_eq!(unsafe { *c::_t_errno() }, i);
                }
                assert_eq!(c::t_close(-1), -1);
                assert_eq!(error::t_errno(), TBADF);
                p as usize
            })
        })
        .collect();
    let ptrs: std::collections::HashSet<usize> =
        handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(ptrs.len(), 8);
    // SAFETY: this thread's slot.
    assert_eq!(unsafe { *c::_t_errno() }, TBADOPT);
}

#[test]
fn option_buffers_walk_like_the_c_macros() {
    let buf = OptBuilder::new()
        .scalar(XTI_GENERIC, XTI_SNDBUF, 65536)
        .push(T_INET_IP, T_IP_OPTIONS, &[1, 2, 3]) // padded to 4
        .scalar(T_INET_UDP, T_UDP_CHECKSUM, T_YES)
        .build();
    assert_eq!(buf.len(), 20 + 20 + 20);
    let v: Vec<Opt<'_>> = options(&buf).collect();
    assert_eq!(v.len(), 3);
    assert_eq!(
        (v[0].level, v[0].name, v[0].scalar()),
        (XTI_GENERIC, XTI_SNDBUF, Some(65536))
    );
    assert_eq!(v[1].value, &[1, 2, 3]);
    assert_eq!(v[1].scalar(), None);
    assert_eq!((v[2].level, v[2].scalar()), (T_INET_UDP, Some(T_YES)));
    // Truncated: the last option runs past the end and is not returned.
    assert_eq!(options(&buf[..55]).count(), 2);
    // A header with len < sizeof(t_opthdr) ends the walk (no infinite loop).
    let mut bad = buf.clone();
    bad[20..24].copy_from_slice(&3u32.to_ne_bytes());
    assert_eq!(options(&bad).count(), 1);
    assert_eq!(options(&[]).count(), 0);
    assert_eq!(options(&buf[..15]).count(), 0);
    assert_eq!(opt::t_align(5), 8);
    assert_eq!(opt::OPTHDR_SIZE, 16);
}

#[test]
fn t_alloc_sizes_follow_t_info() {
    let i = udp_info();
    use alloc::buffer_sizes as sz;
    assert_eq!(sz(&i, T_BIND, T_ALL), Ok([Some(16), None, None]));
    assert_eq!(sz(&i, T_OPTMGMT, T_ALL), Ok([None, Some(512), None]));
    assert_eq!(
        sz(&i, T_UNITDATA, T_ALL),
        Ok([Some(16), Some(512), Some(65507)])
    );
    assert_eq!(
        sz(&i, T_UNITDATA, T_ADDR | T_UDATA),
        Ok([Some(16), None, Some(65507)])
    );
    assert_eq!(sz(&i, T_UNITDATA, 0), Ok([None, None, None]));
    assert_eq!(sz(&i, T_UDERROR, T_ALL), Ok([Some(16), Some(512), None]));
    // T_INVALID (no such thing on UDP): no buffer.
    assert_eq!(sz(&i, T_CALL, T_ALL), Ok([Some(16), Some(512), None]));
    assert_eq!(sz(&i, T_DIS, T_ALL), Ok([None, None, None]));
    assert_eq!(sz(&i, T_INFO, T_ALL), Ok([None, None, None]));
    assert_eq!(sz(&i, 99, T_ALL), Err(XtiError::t(TNOSTRUCTYPE)));
    // T_INFINITE cannot be sized.
    let inf = t_info {
        tsdu: T_INFINITE,
        ..i
    };
    assert_eq!(
        sz(&inf, T_UNITDATA, T_UDATA),
        Err(XtiError::sys(libc::EINVAL))
    );
    assert_eq!(sz(&inf, T_UNITDATA, T_ADDR), Ok([Some(16), None, None]));

    let p = alloc::alloc(&i, T_UNITDATA, T_ALL)
        .unwrap()
        .cast::<t_unitdata>();
    // SAFETY: t_alloc returned a zeroed t_unitdata with three calloc'd buffers.
    unsafe {
        assert_eq!(
            ((*p).addr.maxlen, (*p).opt.maxlen, (*p).udata.maxlen),
            (16, 512, 65507)
        );
        assert_eq!(((*p).addr.len, (*p).opt.len, (*p).udata.len), (0, 0, 0));
        assert!(!(*p).udata.buf.is_null());
        *(*p).udata.buf.add(65506) = 1;
    }
    assert_eq!(alloc::free(p.cast(), T_UNITDATA), Ok(()));
    let p = alloc::alloc(&i, T_INFO, T_ALL).unwrap();
    assert_eq!(alloc::free(p, T_INFO), Ok(()));
    assert_eq!(alloc::free(core::ptr::null_mut(), T_BIND), Ok(()));
    assert_eq!(
        alloc::free(core::ptr::null_mut(), 0),
        Err(XtiError::t(TNOSTRUCTYPE))
    );
}

#[test]
fn struct_sizes_are_lfs() {
    use std::mem::size_of;
    assert_eq!(size_of::<netbuf>(), 16);
    assert_eq!(size_of::<t_info>(), 36);
    assert_eq!(size_of::<t_bind>(), 24);
    assert_eq!(size_of::<t_optmgmt>(), 24);
    assert_eq!(size_of::<t_unitdata>(), 48);
    assert_eq!(size_of::<t_uderr>(), 40);
    assert_eq!(size_of::<t_call>(), 56);
    assert_eq!(size_of::<t_discon>(), 24);
    assert_eq!(size_of::<t_opthdr>(), 16);
}

#[test]
fn t_open_of_non_streams_files_fails_cleanly() {
    let e = Endpoint::open("/dev/null").unwrap_err();
    assert_eq!(e.t, TBADNAME, "{e}");
    let e = Endpoint::open("/nonexistent/rstreams/udp").unwrap_err();
    assert_eq!(e.t, TBADNAME, "{e}");
    let tmp = std::env::temp_dir().join(format!("xti-plain-{}", std::process::id()));
    std::fs::write(&tmp, b"not a Stream").unwrap();
    assert_eq!(Endpoint::open(&tmp).unwrap_err().t, TBADNAME);
    std::fs::remove_file(&tmp).unwrap();
    // Bad flags: TBADFLAG without opening anything.
    let name = c"/dev/null";
    // SAFETY: a NUL-terminated name; info may be null.
    let r = unsafe { c::t_open(name.as_ptr(), libc::O_RDONLY, core::ptr::null_mut()) };
    assert_eq!((r, error::t_errno()), (-1, TBADFLAG));
    // SAFETY: null name is TBADNAME.
    let r = unsafe { c::t_open(core::ptr::null(), libc::O_RDWR, core::ptr::null_mut()) };
    assert_eq!((r, error::t_errno()), (-1, TBADNAME));
}

#[test]
fn calls_on_non_endpoints_are_tbadf() {
    // An open descriptor that t_open did not make is not an endpoint.
    let f = std::fs::File::open("/dev/null").unwrap();
    use std::os::fd::AsRawFd;
    for fd in [-1, 999, f.as_raw_fd()] {
        assert_eq!((c::t_getstate(fd), error::t_errno()), (-1, TBADF));
        assert_eq!((c::t_look(fd), error::t_errno()), (-1, TBADF));
        assert_eq!((c::t_unbind(fd), error::t_errno()), (-1, TBADF));
        assert_eq!((c::t_close(fd), error::t_errno()), (-1, TBADF));
        assert_eq!((c::t_sndrel(fd), error::t_errno()), (-1, TBADF));
        assert!(c::t_alloc(fd, T_UNITDATA, T_ALL).is_null());
        assert_eq!(error::t_errno(), TBADF);
        // SAFETY: null structures are allowed to be passed: the library reports errors.
        unsafe {
            assert_eq!(c::t_bind(fd, core::ptr::null(), core::ptr::null_mut()), -1);
            assert_eq!(error::t_errno(), TBADF);
            assert_eq!(c::t_sndudata(fd, core::ptr::null()), -1);
            assert_eq!(error::t_errno(), TBADF);
            assert_eq!(
                c::t_rcvudata(fd, core::ptr::null_mut(), core::ptr::null_mut()),
                -1
            );
            assert_eq!(error::t_errno(), TBADF);
            assert_eq!(c::t_getinfo(fd, core::ptr::null_mut()), -1);
            assert_eq!(error::t_errno(), TBADF);
        }
    }
    // t_sync of a non-STREAMS file: TBADF as well.
    assert_eq!((c::t_sync(f.as_raw_fd()), error::t_errno()), (-1, TBADF));
    // The descriptor is still open (t_close refused it).
    // SAFETY: fcntl F_GETFD has no memory preconditions.
    assert!(unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFD) } >= 0);
    assert_eq!(c::t_sysconf(libc::_SC_T_IOV_MAX), T_IOV_MAX);
    assert_eq!((c::t_sysconf(-5), error::t_errno()), (-1, TBADFLAG));
}
