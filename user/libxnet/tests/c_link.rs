//! The C side of libxnet, checked from C: `tests/netperf_style.c`, an XTI UDP program in
//! the style of netperf's XTI tests that includes only `<xti.h>`/`<xti_inet.h>`, is compiled
//! with `-Wall -Werror` (also as C++) and linked with `-lxnet` (libxnet.so, then libxnet.a),
//! and run: it prints every constant, struct size and offset as the header sees them (compared
//! here with the Rust mirror and with the LfS values), walks an option buffer with the
//! T_OPT_* macros, and, with no UDP provider on the host, fails t_open cleanly.

use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;
use streams::xti as x;

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    if deps.join("libxnet.a").exists() {
        return deps.to_path_buf();
    }
    deps.parent().expect("target dir").to_path_buf()
}

fn have(cc: &str) -> bool {
    Command::new(cc).arg("--version").output().is_ok()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/netperf_style.c")
}

fn inc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../libstreams-sys/include")
}

/// The cargo profile this test was built with: `target/<dir>/deps/<exe>`, where the `dev`
/// profile's directory is `debug`.
fn profile() -> String {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    if dir == "debug" { "dev" } else { dir }.to_string()
}

/// Build libxnet.so and libxnet.a: `cargo test` builds the crate's rlib for the tests, not
/// its C libraries. Once per test process, in this profile's target directory (so that
/// `cargo test --release` finds them in `target/release`).
fn build_libxnet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "libxnet", "--lib", "--profile"])
            .arg(profile())
            .status()
            .expect("run cargo build -p libxnet");
        assert!(status.success(), "cargo build -p libxnet failed");
    });
}

/// Build the program (dynamic or static libxnet); None if there is no compiler.
fn build(dynamic: bool) -> Option<PathBuf> {
    if !have("cc") {
        println!("SKIP: no C compiler `cc` on this host");
        return None;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = tmp.join(format!(
        "netperf_style_{}",
        if dynamic { "so" } else { "a" }
    ));
    build_libxnet();
    let lib = target_dir();
    let mut cc = Command::new("cc");
    cc.args([
        "-Wall",
        "-Werror",
        "-Wextra",
        "-std=c99",
        "-D_DEFAULT_SOURCE",
    ])
    .arg("-I")
    .arg(inc())
    .arg(src())
    .arg("-o")
    .arg(&exe);
    if dynamic {
        assert!(
            lib.join("libxnet.so").exists(),
            "libxnet.so not built in {lib:?}"
        );
        cc.arg("-L").arg(&lib).arg("-lxnet");
        cc.arg(format!("-Wl,-rpath,{}", lib.display()));
    } else {
        cc.arg(lib.join("libxnet.a"))
            .args(["-lpthread", "-ldl", "-lm"]);
    }
    let out = cc.output().expect("run cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

fn run(exe: &Path) -> (i32, HashMap<String, Vec<String>>, String) {
    let out = Command::new(exe)
        .arg("/dev/null")
        .output()
        .expect("run the C program");
    let mut kinds: HashMap<String, Vec<String>> = HashMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((k, rest)) = l.split_once(' ') {
            kinds
                .entry(k.to_string())
                .or_default()
                .push(rest.to_string());
        }
    }
    (
        out.status.code().unwrap_or(-1),
        kinds,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pairs(v: &[String]) -> HashMap<String, String> {
    v.iter()
        .filter_map(|r| r.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

macro_rules! consts {
    ($($n:ident),* $(,)?) => { vec![$((stringify!($n), x::$n as i64)),*] };
}

/// Every constant the program prints, with our Rust value.
fn constants() -> Vec<(&'static str, i64)> {
    consts![
        TBADADDR,
        TBADOPT,
        TACCES,
        TBADF,
        TNOADDR,
        TOUTSTATE,
        TBADSEQ,
        TSYSERR,
        TLOOK,
        TBADDATA,
        TBUFOVFLW,
        TFLOW,
        TNODATA,
        TNODIS,
        TNOUDERR,
        TBADFLAG,
        TNOREL,
        TNOTSUPPORT,
        TSTATECHNG,
        TNOSTRUCTYPE,
        TBADNAME,
        TBADQLEN,
        TADDRBUSY,
        TINDOUT,
        TPROVMISMATCH,
        TRESQLEN,
        TRESADDR,
        TQFULL,
        TPROTO,
        T_LISTEN,
        T_CONNECT,
        T_DATA,
        T_EXDATA,
        T_DISCONNECT,
        T_UDERR,
        T_ORDREL,
        T_GODATA,
        T_GOEXDATA,
        T_LEAFCHANGE,
        T_EVENTS,
        T_ERROR,
        T_BIND,
        T_OPTMGMT,
        T_CALL,
        T_DIS,
        T_UNITDATA,
        T_UDERROR,
        T_INFO,
        T_ADDR,
        T_OPT,
        T_UDATA,
        T_ALL,
        T_UNINIT,
        T_UNBND,
        T_IDLE,
        T_OUTCON,
        T_INCON,
        T_DATAXFER,
        T_OUTREL,
        T_INREL,
        T_MORE,
        T_EXPEDITED,
        T_PUSH,
        T_NEGOTIATE,
        T_CHECK,
        T_DEFAULT,
        T_SUCCESS,
        T_FAILURE,
        T_CURRENT,
        T_PARTSUCCESS,
        T_READONLY,
        T_NOTSUPPORT,
        T_ALLOPT,
        T_COTS,
        T_COTS_ORD,
        T_CLTS,
        T_SENDZERO,
        T_ORDRELDATA,
        XPG4_1,
        T_UNSPEC,
        T_INVALID,
        T_INFINITE,
        T_YES,
        T_NO,
        T_ABSREQ,
        T_IOV_MAX,
        XTI_GENERIC,
        XTI_DEBUG,
        XTI_LINGER,
        XTI_SNDBUF,
        XTI_RCVBUF,
        XTI_SNDLOWAT,
        XTI_RCVLOWAT,
        XTI_REUSEADDR,
        XTI_DONTROUTE,
        XTI_BROADCAST,
        XTI_KEEPALIVE,
        XTI_PRIORITY,
        T_INET_IP,
        T_INET_TCP,
        T_INET_UDP,
        T_IP_OPTIONS,
        T_IP_TOS,
        T_IP_TTL,
        T_IP_REUSEADDR,
        T_IP_DONTROUTE,
        T_IP_BROADCAST,
        T_IP_ADDR,
        T_UDP_CHECKSUM,
        T_TCP_NODELAY,
        T_TCP_MAXSEG,
        T_TCP_KEEPALIVE,
    ]
}

fn check(dynamic: bool) {
    let Some(exe) = build(dynamic) else {
        return;
    };
    let (code, k, stderr) = run(&exe);
    // No provider at /dev/null: t_open fails with TBADNAME, t_error says so.
    assert_eq!(code, 3, "stderr: {stderr}");
    assert_eq!(k["t_open_errno"], [x::TBADNAME.to_string()]);
    assert!(
        stderr.starts_with("t_open: Invalid transport provider name"),
        "{stderr}"
    );
    assert_eq!(k["strerror"], ["Transport address is in use"]);
    let c = pairs(&k["const"]);
    let table = constants();
    assert!(table.len() > 100);
    for (name, ours) in table {
        let cv: i64 = c[name].parse().unwrap();
        assert_eq!(cv, ours, "{name}: header {cv} vs Rust {ours}");
    }
    let sizes = pairs(&k["size"]);
    let rust_sizes = [
        ("netbuf", size_of::<x::netbuf>()),
        ("t_info", size_of::<x::t_info>()),
        ("t_bind", size_of::<x::t_bind>()),
        ("t_optmgmt", size_of::<x::t_optmgmt>()),
        ("t_discon", size_of::<x::t_discon>()),
        ("t_call", size_of::<x::t_call>()),
        ("t_unitdata", size_of::<x::t_unitdata>()),
        ("t_uderr", size_of::<x::t_uderr>()),
        ("t_opthdr", size_of::<x::t_opthdr>()),
        ("t_iovec", size_of::<x::t_iovec>()),
        ("t_linger", size_of::<x::t_linger>()),
        ("t_kpalive", size_of::<x::t_kpalive>()),
        ("t_leaf_status", size_of::<x::t_leaf_status>()),
    ];
    for (s, n) in rust_sizes {
        assert_eq!(sizes[s].parse::<usize>().unwrap(), n, "sizeof(struct {s})");
    }
    let offs = pairs(&k["off"]);
    let rust_offs = [
        ("netbuf.buf", offset_of!(x::netbuf, buf)),
        ("t_info.flags", offset_of!(x::t_info, flags)),
        ("t_info.tidu", offset_of!(x::t_info, tidu)),
        ("t_bind.qlen", offset_of!(x::t_bind, qlen)),
        ("t_optmgmt.flags", offset_of!(x::t_optmgmt, flags)),
        ("t_discon.reason", offset_of!(x::t_discon, reason)),
        ("t_discon.sequence", offset_of!(x::t_discon, sequence)),
        ("t_call.udata", offset_of!(x::t_call, udata)),
        ("t_call.sequence", offset_of!(x::t_call, sequence)),
        ("t_unitdata.opt", offset_of!(x::t_unitdata, opt)),
        ("t_unitdata.udata", offset_of!(x::t_unitdata, udata)),
        ("t_uderr.error", offset_of!(x::t_uderr, error)),
        ("t_opthdr.status", offset_of!(x::t_opthdr, status)),
    ];
    for (f, o) in rust_offs {
        assert_eq!(offs[f].parse::<usize>().unwrap(), o, "offsetof({f})");
    }
    // The C macros walk the two options, the value right after each 16-byte header.
    assert_eq!(k["walk"], ["0 1 16", "65535 4097 16"]);
}

#[test]
fn netperf_style_program_with_libxnet_so() {
    check(true);
}

#[test]
fn netperf_style_program_with_libxnet_a() {
    check(false);
}

#[test]
fn lfs_values() {
    // The LfS numbers the kernel TPI driver is written against (sys/tpi.h, sys/xti.h,
    // sys/xti_xti.h, sys/xti_ip.h, sys/xti_udp.h), spot-checked literally.
    assert_eq!((x::TBADADDR, x::TADDRBUSY, x::TPROTO), (1, 23, 29));
    assert_eq!((x::T_UDERR, x::T_EVENTS, x::T_ALL), (0x40, 0x800, 0xffff));
    assert_eq!(
        (x::T_NEGOTIATE, x::T_CURRENT, x::T_NOTSUPPORT),
        (4, 0x80, 0x400)
    );
    assert_eq!(
        (x::XTI_GENERIC, x::XTI_SNDBUF, x::XTI_RCVBUF),
        (0xffff, 0x1001, 0x1002)
    );
    assert_eq!((x::T_INET_UDP, x::T_UDP_CHECKSUM, x::T_IP_TTL), (17, 1, 3));
    assert_eq!(x::T_UNSPEC, -3);
    use x::tpi::*;
    assert_eq!(
        (T_INFO_REQ, T_BIND_REQ, T_UNITDATA_REQ, T_ADDR_REQ),
        (5, 6, 8, 25)
    );
    assert_eq!(
        (T_INFO_ACK, T_ERROR_ACK, T_UDERROR_IND, T_ADDR_ACK),
        (16, 18, 21, 27)
    );
    assert_eq!(
        (TS_UNBND, TS_IDLE, TS_DATA_XFER, TS_NOSTATES),
        (0, 3, 9, 17)
    );
}

/// `<sys/tihdr.h>`'s primitive numbers and structure sizes agree with the Rust codec, from
/// C and from C++ (every header must compile as C++ too).
#[test]
fn tihdr_from_c_and_cxx() {
    if !have("cc") {
        return;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let prog = r#"
#include <sys/tihdr.h>
#include <xti.h>
#include <xti_inet.h>
#include <stdio.h>
#define P(n) printf("const %s %d\n", #n, (int)(n))
#define S(n, s) printf("size %s %d\n", #n, (int)sizeof(struct s))
int main(void) {
	P(T_CONN_REQ); P(T_CONN_RES); P(T_DISCON_REQ); P(T_DATA_REQ); P(T_EXDATA_REQ);
	P(T_INFO_REQ); P(T_BIND_REQ); P(T_UNBIND_REQ); P(T_UNITDATA_REQ); P(T_OPTMGMT_REQ);
	P(T_ORDREL_REQ); P(T_OPTDATA_REQ); P(T_ADDR_REQ); P(T_CAPABILITY_REQ); P(T_CONN_IND);
	P(T_CONN_CON); P(T_DISCON_IND); P(T_DATA_IND); P(T_EXDATA_IND); P(T_INFO_ACK);
	P(T_BIND_ACK); P(T_ERROR_ACK); P(T_OK_ACK); P(T_UNITDATA_IND); P(T_UDERROR_IND);
	P(T_OPTMGMT_ACK); P(T_ORDREL_IND); P(T_OPTDATA_IND); P(T_ADDR_ACK); P(T_CAPABILITY_ACK);
	P(TS_UNBND); P(TS_WACK_BREQ); P(TS_IDLE); P(TS_WCON_CREQ); P(TS_WRES_CIND);
	P(TS_DATA_XFER); P(TS_WIND_ORDREL); P(TS_WREQ_ORDREL); P(TS_NOSTATES);
	S(INFO_REQ, T_info_req); S(BIND_REQ, T_bind_req); S(UNBIND_REQ, T_unbind_req);
	S(OPTMGMT_REQ, T_optmgmt_req); S(ADDR_REQ, T_addr_req); S(INFO_ACK, T_info_ack);
	S(BIND_ACK, T_bind_ack); S(OPTMGMT_ACK, T_optmgmt_ack); S(ERROR_ACK, T_error_ack);
	S(OK_ACK, T_ok_ack); S(ADDR_ACK, T_addr_ack); S(UNITDATA_REQ, T_unitdata_req);
	S(UNITDATA_IND, T_unitdata_ind); S(UDERROR_IND, T_uderror_ind);
	S(CONN_REQ, T_conn_req); S(CONN_RES, T_conn_res); S(DISCON_REQ, T_discon_req);
	S(DATA_REQ, T_data_req); S(CONN_IND, T_conn_ind); S(CONN_CON, T_conn_con);
	S(DISCON_IND, T_discon_ind); S(OPTDATA_REQ, T_optdata_req);
	S(CAPABILITY_REQ, T_capability_req); S(CAPABILITY_ACK, T_capability_ack);
	return 0;
}
"#;
    let c = tmp.join("tihdr.c");
    std::fs::write(&c, prog).unwrap();
    let cxx = tmp.join("tihdr.cc");
    std::fs::write(&cxx, prog).unwrap();
    let mut outputs = Vec::new();
    for (compiler, file) in [("cc", &c), ("c++", &cxx)] {
        if !have(compiler) {
            continue;
        }
        let exe = tmp.join(format!("tihdr_{compiler}"));
        let out = Command::new(compiler)
            .args(["-Wall", "-Werror", "-Wextra", "-I"])
            .arg(inc())
            .arg(file)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = Command::new(&exe).output().unwrap();
        outputs.push(String::from_utf8(run.stdout).unwrap());
    }
    let lines: Vec<String> = outputs[0].lines().map(String::from).collect();
    let mut k: HashMap<String, Vec<String>> = HashMap::new();
    for l in &lines {
        let (a, b) = l.split_once(' ').unwrap();
        k.entry(a.into()).or_default().push(b.into());
    }
    let c = pairs(&k["const"]);
    use x::tpi::*;
    for (n, v) in [
        ("T_CONN_REQ", T_CONN_REQ),
        ("T_CONN_RES", T_CONN_RES),
        ("T_DISCON_REQ", T_DISCON_REQ),
        ("T_DATA_REQ", T_DATA_REQ),
        ("T_EXDATA_REQ", T_EXDATA_REQ),
        ("T_INFO_REQ", T_INFO_REQ),
        ("T_BIND_REQ", T_BIND_REQ),
        ("T_UNBIND_REQ", T_UNBIND_REQ),
        ("T_UNITDATA_REQ", T_UNITDATA_REQ),
        ("T_OPTMGMT_REQ", T_OPTMGMT_REQ),
        ("T_ORDREL_REQ", T_ORDREL_REQ),
        ("T_OPTDATA_REQ", T_OPTDATA_REQ),
        ("T_ADDR_REQ", T_ADDR_REQ),
        ("T_CAPABILITY_REQ", T_CAPABILITY_REQ),
        ("T_CONN_IND", T_CONN_IND),
        ("T_CONN_CON", T_CONN_CON),
        ("T_DISCON_IND", T_DISCON_IND),
        ("T_DATA_IND", T_DATA_IND),
        ("T_EXDATA_IND", T_EXDATA_IND),
        ("T_INFO_ACK", T_INFO_ACK),
        ("T_BIND_ACK", T_BIND_ACK),
        ("T_ERROR_ACK", T_ERROR_ACK),
        ("T_OK_ACK", T_OK_ACK),
        ("T_UNITDATA_IND", T_UNITDATA_IND),
        ("T_UDERROR_IND", T_UDERROR_IND),
        ("T_OPTMGMT_ACK", T_OPTMGMT_ACK),
        ("T_ORDREL_IND", T_ORDREL_IND),
        ("T_OPTDATA_IND", T_OPTDATA_IND),
        ("T_ADDR_ACK", T_ADDR_ACK),
        ("T_CAPABILITY_ACK", T_CAPABILITY_ACK),
        ("TS_UNBND", TS_UNBND),
        ("TS_WACK_BREQ", TS_WACK_BREQ),
        ("TS_IDLE", TS_IDLE),
        ("TS_WCON_CREQ", TS_WCON_CREQ),
        ("TS_WRES_CIND", TS_WRES_CIND),
        ("TS_DATA_XFER", TS_DATA_XFER),
        ("TS_WIND_ORDREL", TS_WIND_ORDREL),
        ("TS_WREQ_ORDREL", TS_WREQ_ORDREL),
        ("TS_NOSTATES", TS_NOSTATES),
    ] {
        assert_eq!(c[n].parse::<i32>().unwrap(), v, "{n}");
    }
    let s = pairs(&k["size"]);
    for (n, v) in [
        ("INFO_REQ", size::INFO_REQ),
        ("BIND_REQ", size::BIND_REQ),
        ("UNBIND_REQ", size::UNBIND_REQ),
        ("OPTMGMT_REQ", size::OPTMGMT_REQ),
        ("ADDR_REQ", size::ADDR_REQ),
        ("INFO_ACK", size::INFO_ACK),
        ("BIND_ACK", size::BIND_ACK),
        ("OPTMGMT_ACK", size::OPTMGMT_ACK),
        ("ERROR_ACK", size::ERROR_ACK),
        ("OK_ACK", size::OK_ACK),
        ("ADDR_ACK", size::ADDR_ACK),
        ("UNITDATA_REQ", size::UNITDATA_REQ),
        ("UNITDATA_IND", size::UNITDATA_IND),
        ("UDERROR_IND", size::UDERROR_IND),
        ("CONN_REQ", size::CONN_REQ),
        ("CONN_RES", size::CONN_RES),
        ("DISCON_REQ", size::DISCON_REQ),
        ("DATA_REQ", size::DATA_REQ),
        ("CONN_IND", size::CONN_IND),
        ("CONN_CON", size::CONN_CON),
        ("DISCON_IND", size::DISCON_IND),
        ("OPTDATA_REQ", size::OPTDATA_REQ),
        ("CAPABILITY_REQ", size::CAPABILITY_REQ),
        ("CAPABILITY_ACK", size::CAPABILITY_ACK),
    ] {
        assert_eq!(s[n].parse::<usize>().unwrap(), v, "sizeof {n}");
    }
    if outputs.len() == 2 {
        assert_eq!(outputs[0], outputs[1], "C and C++ see the same ABI");
    }
}
