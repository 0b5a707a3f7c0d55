//! The C side of libstreams, checked from C: a program compiled with `cc` against
//! `include/stropts.h` and linked with `libstreams.a` (and again with `libstreams.so`) prints
//! every constant, struct size and field offset, and the results of calls on ordinary Linux
//! descriptors; the test compares them with the Rust `#[repr(C)]` mirror and with the kernel
//! Stream head's own constants (`streams_core::sth::consts`).

use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;
use streams as s;
use streams_core::sth::consts as k;

/// (name, value in libstreams' Rust mirror, value in the kernel's consts.rs if it has one).
type Const = (&'static str, i64, Option<i64>);

macro_rules! shared {
    ($($n:ident),* $(,)?) => { vec![$((stringify!($n), s::$n as i64, Some(k::$n as i64))),*] };
}
macro_rules! ours {
    ($($n:ident),* $(,)?) => { vec![$((stringify!($n), s::$n as i64, None)),*] };
}

fn constants() -> Vec<Const> {
    let mut v = shared![
        I_NREAD,
        I_PUSH,
        I_POP,
        I_LOOK,
        I_FLUSH,
        I_SRDOPT,
        I_GRDOPT,
        I_STR,
        I_SETSIG,
        I_GETSIG,
        I_FIND,
        I_LINK,
        I_UNLINK,
        I_RECVFD,
        I_PEEK,
        I_FDINSERT,
        I_SENDFD,
        I_SWROPT,
        I_GWROPT,
        I_LIST,
        I_PLINK,
        I_PUNLINK,
        I_FLUSHBAND,
        I_CKBAND,
        I_GETBAND,
        I_ATMARK,
        I_SETCLTIME,
        I_GETCLTIME,
        I_CANPUT,
        I_GETPMSG,
        I_PUTPMSG,
        I_PIPE,
        I_FIFO_PIPE,
        I_FATTACH,
        I_FDETACH,
        I_SET_HIWAT,
        I_SET_LOWAT,
        I_GET_HIWAT,
        FMNAMESZ,
        FLUSHR,
        FLUSHW,
        FLUSHRW,
        FLUSHBAND,
        S_INPUT,
        S_HIPRI,
        S_OUTPUT,
        S_MSG,
        S_ERROR,
        S_HANGUP,
        S_RDNORM,
        S_WRNORM,
        S_RDBAND,
        S_WRBAND,
        S_BANDURG,
        S_ALL,
        RS_HIPRI,
        RNORM,
        RMSGD,
        RMSGN,
        RMODEMASK,
        RPROTDAT,
        RPROTDIS,
        RPROTNORM,
        RPROTMASK,
        RFILL,
        SNDZERO,
        SNDPIPE,
        SNDHOLD,
        SNDMREAD,
        ANYMARK,
        LASTMARK,
        ANYBAND,
        MSG_HIPRI,
        MSG_ANY,
        MSG_BAND,
        MORECTL,
        MOREDATA,
    ];
    v.extend(ours![INFTIM, MUXID_ALL]);
    v
}

/// (C struct, Rust size, [(field, Rust offset)]).
type Layout = (&'static str, usize, Vec<(&'static str, usize)>);

fn layouts() -> Vec<Layout> {
    vec![
        (
            "strbuf",
            size_of::<s::strbuf>(),
            vec![
                ("maxlen", offset_of!(s::strbuf, maxlen)),
                ("len", offset_of!(s::strbuf, len)),
                ("buf", offset_of!(s::strbuf, buf)),
            ],
        ),
        (
            "strpeek",
            size_of::<s::strpeek>(),
            vec![
                ("ctlbuf", offset_of!(s::strpeek, ctlbuf)),
                ("databuf", offset_of!(s::strpeek, databuf)),
                ("flags", offset_of!(s::strpeek, flags)),
            ],
        ),
        (
            "strfdinsert",
            size_of::<s::strfdinsert>(),
            vec![
                ("ctlbuf", offset_of!(s::strfdinsert, ctlbuf)),
                ("databuf", offset_of!(s::strfdinsert, databuf)),
                ("flags", offset_of!(s::strfdinsert, flags)),
                ("fildes", offset_of!(s::strfdinsert, fildes)),
                ("offset", offset_of!(s::strfdinsert, offset)),
            ],
        ),
        (
            "strioctl",
            size_of::<s::strioctl>(),
            vec![
                ("ic_cmd", offset_of!(s::strioctl, ic_cmd)),
                ("ic_timout", offset_of!(s::strioctl, ic_timout)),
                ("ic_len", offset_of!(s::strioctl, ic_len)),
                ("ic_dp", offset_of!(s::strioctl, ic_dp)),
            ],
        ),
        (
            "strrecvfd",
            size_of::<s::strrecvfd>(),
            vec![
                ("fd", offset_of!(s::strrecvfd, fd)),
                ("uid", offset_of!(s::strrecvfd, uid)),
                ("gid", offset_of!(s::strrecvfd, gid)),
                ("fill", offset_of!(s::strrecvfd, fill)),
            ],
        ),
        (
            "str_mlist",
            size_of::<s::str_mlist>(),
            vec![("l_name", offset_of!(s::str_mlist, l_name))],
        ),
        (
            "str_list",
            size_of::<s::str_list>(),
            vec![
                ("sl_nmods", offset_of!(s::str_list, sl_nmods)),
                ("sl_modlist", offset_of!(s::str_list, sl_modlist)),
            ],
        ),
        (
            "bandinfo",
            size_of::<s::bandinfo>(),
            vec![
                ("bi_pri", offset_of!(s::bandinfo, bi_pri)),
                ("bi_flag", offset_of!(s::bandinfo, bi_flag)),
            ],
        ),
        (
            "strpmsg",
            size_of::<s::strpmsg>(),
            vec![
                ("ctlbuf", offset_of!(s::strpmsg, ctlbuf)),
                ("databuf", offset_of!(s::strpmsg, databuf)),
                ("band", offset_of!(s::strpmsg, band)),
                ("flags", offset_of!(s::strpmsg, flags)),
            ],
        ),
    ]
}

/// Calls on ordinary Linux descriptors, printed as `beh NAME RESULT ERRNO_OK`.
const BEHAVIOUR: &str = r#"
static void beh(const char *name, int r, int ok) { printf("beh %s %d %d\n", name, r, ok); }

static void behaviour(void)
{
	int p[2], r, flags = 0, band = 0;
	char c[16], d[16];
	struct strbuf cb = { sizeof c, 0, c }, db = { 3, 3, d };

	if (pipe(p) != 0) { perror("pipe"); exit(2); }
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	errno = 0; r = isastream(p[0]); beh("isastream_pipe", r, errno == 0);
	errno = 0; r = isastream(1000); beh("isastream_badfd", r, errno == EBADF);
	errno = 0; r = putmsg(p[1], NULL, &db, 0); beh("putmsg_pipe", r, errno == ENOSTR);
	errno = 0; r = putpmsg(p[1], NULL, &db, 1, MSG_BAND); beh("putpmsg_pipe", r, errno == ENOSTR);
	errno = 0; r = getmsg(p[0], &cb, &db, &flags); beh("getmsg_pipe", r, errno == ENOSTR);
	errno = 0; r = getpmsg(p[0], &cb, &db, &band, &flags); beh("getpmsg_pipe", r, errno == ENOSTR);
	errno = 0; r = putmsg(p[1], NULL, &db, 7); beh("putmsg_badflags", r, errno == EINVAL);
	errno = 0; r = getmsg(p[0], &cb, &db, NULL); beh("getmsg_nullflags", r, errno == EINVAL);
	flags = 9; errno = 0; r = getmsg(p[0], &cb, &db, &flags); beh("getmsg_badflags", r, errno == EINVAL);
	errno = 0; r = putmsg(1000, NULL, &db, 0); beh("putmsg_badfd", r, errno == EBADF);
	/* putmsg must not have written anything into the Linux pipe. */
	errno = 0; r = (int)read(p[0], d, sizeof d); beh("pipe_untouched", r, errno == EAGAIN);
	errno = 0; r = fattach(p[0], "/tmp/x"); beh("fattach_pipe", r, errno == EINVAL);
	errno = 0; r = fattach(1000, "/tmp/x"); beh("fattach_badfd", r, errno == EBADF);
	/* fdetach never unmounts what fattach did not attach (here: the working directory). */
	errno = 0; r = fdetach("."); beh("fdetach_not_attached", r, errno == EINVAL);
	errno = 0; r = fdetach(NULL); beh("fdetach_null", r, errno == EINVAL);
	errno = 0; r = fdetach("/nonexistent/rstreams"); beh("fdetach_enoent", r, errno == ENOENT);
	if (access("/dev/streams/clone/pipe", F_OK) != 0) {
		int q[2] = { -1, -1 };
		errno = 0; r = s_pipe(q); beh("s_pipe_nodev", r, errno == ENOENT && q[0] == -1);
		errno = 0; r = s_pipe2(q, O_DIRECT); beh("s_pipe2_badflags", r, errno == EINVAL);
	}
}
"#;

fn c_program() -> String {
    let mut p = String::from(
        "#include <stropts.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <stddef.h>\n\
         #include <errno.h>\n#include <fcntl.h>\n#include <unistd.h>\n",
    );
    p.push_str("#ifndef O_DIRECT\n#define O_DIRECT 040000\n#endif\n");
    p.push_str(BEHAVIOUR);
    p.push_str("int main(void)\n{\n");
    for (name, _, _) in constants() {
        p.push_str(&format!(
            "\tprintf(\"const {name} %lld\\n\", (long long)({name}));\n"
        ));
    }
    for (st, _, fields) in layouts() {
        p.push_str(&format!(
            "\tprintf(\"size {st} %zu\\n\", sizeof(struct {st}));\n"
        ));
        for (f, _) in fields {
            p.push_str(&format!(
                "\tprintf(\"off {st}.{f} %zu\\n\", offsetof(struct {st}, {f}));\n"
            ));
        }
    }
    p.push_str("\tbehaviour();\n\treturn 0;\n}\n");
    p
}

fn target_dir() -> PathBuf {
    // Tests run from target/<profile>/deps/. `cargo test` leaves the C libraries it built in
    // deps/; `cargo build` also uplifts them to target/<profile>/.
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    if deps.join("libstreams.a").exists() {
        return deps.to_path_buf();
    }
    deps.parent().expect("target dir").to_path_buf()
}

fn have_cc() -> bool {
    Command::new("cc").arg("--version").output().is_ok()
}

/// Compile the program (static or dynamic libstreams), run it, return its output lines.
fn build_and_run(dynamic: bool, test: &str) -> Option<Vec<String>> {
    if !have_cc() {
        println!("SKIP: no C compiler `cc` on this host");
        return None;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    // One file per test: tests run in parallel and must not rewrite a running binary.
    let tag = format!("{test}_{}", if dynamic { "so" } else { "a" });
    let src = tmp.join(format!("stropts_abi_{tag}.c"));
    let exe = tmp.join(format!("stropts_abi_{tag}"));
    std::fs::write(&src, c_program()).expect("write C source");
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let lib = target_dir();
    let mut cc = Command::new("cc");
    cc.arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(&inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe);
    if dynamic {
        assert!(
            lib.join("libstreams.so").exists(),
            "libstreams.so not built in {lib:?}"
        );
        cc.arg("-L").arg(&lib).arg("-lstreams");
        cc.arg(format!("-Wl,-rpath,{}", lib.display()));
    } else {
        assert!(
            lib.join("libstreams.a").exists(),
            "libstreams.a not built in {lib:?}"
        );
        cc.arg(lib.join("libstreams.a"))
            .args(["-lpthread", "-ldl", "-lm"]);
    }
    let out = cc.output().expect("run cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run C test program");
    assert!(run.status.success(), "C program failed: {run:?}");
    Some(
        String::from_utf8(run.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect(),
    )
}

fn parse(lines: &[String], kind: &str) -> HashMap<String, String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(kind).and_then(|r| r.strip_prefix(' ')))
        .filter_map(|r| r.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn header_constants_match_rust_and_kernel() {
    let Some(lines) = build_and_run(false, "consts") else {
        return;
    };
    let c = parse(&lines, "const");
    let table = constants();
    assert!(table.len() >= 70, "constants checked: {}", table.len());
    for (name, ours, kernel) in table {
        let cv: i64 = c[name].parse().unwrap();
        assert_eq!(cv, ours, "{name}: header {cv} vs Rust {ours}");
        if let Some(kv) = kernel {
            assert_eq!(cv, kv, "{name}: header {cv} vs streams_core {kv}");
        }
    }
}

#[test]
fn lfs_emulation_ioctl_numbers() {
    // LfS <sys/openss7/stropts.h>: I_GETPMSG (__SID|42) … I_FDETACH (__SID|53).
    assert_eq!(s::I_GETPMSG, 0x532a);
    assert_eq!(s::I_PUTPMSG, 0x532b);
    assert_eq!(s::I_PIPE, 0x532c);
    assert_eq!(s::I_FATTACH, 0x5334);
    assert_eq!(s::I_FDETACH, 0x5335);
    // None of them collides with an ioctl the kernel's Stream head already knows.
    let emulation = ["I_GETPMSG", "I_PUTPMSG", "I_PIPE", "I_FATTACH", "I_FDETACH"];
    for new in [
        s::I_GETPMSG,
        s::I_PUTPMSG,
        s::I_PIPE,
        s::I_FATTACH,
        s::I_FDETACH,
    ] {
        for (name, v, kernel) in constants() {
            if kernel.is_some() && name.starts_with("I_") && !emulation.contains(&name) {
                assert_ne!(i64::from(new), v, "collides with {name}");
            }
        }
    }
}

#[test]
fn struct_layouts_match_rust() {
    let Some(lines) = build_and_run(false, "layout") else {
        return;
    };
    let sizes = parse(&lines, "size");
    let offs = parse(&lines, "off");
    for (st, size, fields) in layouts() {
        assert_eq!(
            sizes[st].parse::<usize>().unwrap(),
            size,
            "sizeof(struct {st})"
        );
        for (f, off) in fields {
            let key = format!("{st}.{f}");
            assert_eq!(offs[&key].parse::<usize>().unwrap(), off, "offsetof({key})");
        }
    }
    // The x86_64 numbers docs/abi.md promises to the kernel side.
    assert_eq!(size_of::<s::strbuf>(), 16);
    assert_eq!(size_of::<s::strpmsg>(), 40);
    assert_eq!(offset_of!(s::strpmsg, band), 32);
    assert_eq!(offset_of!(s::strpmsg, flags), 36);
    assert_eq!(size_of::<s::strioctl>(), 24);
    assert_eq!(size_of::<s::strpeek>(), 40);
    assert_eq!(size_of::<s::str_list>(), 16);
    assert_eq!(size_of::<s::bandinfo>(), 8);
    assert_eq!(size_of::<s::strrecvfd>(), 20);
}

fn check_behaviour(lines: &[String]) {
    let b = parse(lines, "beh");
    let expect = |name: &str, r: i32| {
        let v = b.get(name).unwrap_or_else(|| panic!("{name} not reported"));
        assert_eq!(v, &format!("{r} 1"), "{name}: result and errno");
    };
    expect("isastream_pipe", 0);
    expect("isastream_badfd", -1);
    for name in ["putmsg_pipe", "putpmsg_pipe", "getmsg_pipe", "getpmsg_pipe"] {
        expect(name, -1);
    }
    expect("putmsg_badflags", -1);
    expect("getmsg_nullflags", -1);
    expect("getmsg_badflags", -1);
    expect("putmsg_badfd", -1);
    expect("pipe_untouched", -1);
    expect("fattach_pipe", -1);
    expect("fattach_badfd", -1);
    expect("fdetach_not_attached", -1);
    expect("fdetach_null", -1);
    expect("fdetach_enoent", -1);
    if !Path::new(s::PIPE_DEVICE).exists() {
        expect("s_pipe_nodev", -1);
        expect("s_pipe2_badflags", -1);
    }
}

#[test]
fn c_calls_on_linux_descriptors_static() {
    if let Some(lines) = build_and_run(false, "beh") {
        check_behaviour(&lines);
    }
}

#[test]
fn c_calls_on_linux_descriptors_shared_library() {
    if let Some(lines) = build_and_run(true, "beh") {
        check_behaviour(&lines);
    }
}
