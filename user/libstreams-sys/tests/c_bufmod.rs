//! `<sys/bufmod.h>` checked from C: a program compiled with `cc` against the header prints
//! every SBIOC*/SB_* constant and the `struct sb_hdr` layout; the test compares them with the
//! Rust mirror (`streams::bufmod`) and with the kernel module's own values
//! (`streams_core::mods::bufmod`), so user programs and `bufmod` agree on the wire format.

use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;
use streams::bufmod as u;
use streams_core::mods::bufmod as k;

fn constants() -> Vec<(&'static str, i64, i64)> {
    macro_rules! c {
        ($($n:ident),* $(,)?) => { vec![$((stringify!($n), u::$n as i64, k::$n as i64)),*] };
    }
    c![
        SBIOC,
        SBIOCSTIME,
        SBIOCGTIME,
        SBIOCCTIME,
        SBIOCSCHUNK,
        SBIOCGCHUNK,
        SBIOCSSNAP,
        SBIOCGSNAP,
        SBIOCSFLAGS,
        SBIOCGFLAGS,
        SB_DFLT_CHUNK,
        SB_SEND_ON_WRITE,
        SB_NO_HEADER,
        SB_NO_PROTO_CVT,
        SB_DEFER_CHUNK,
        SB_NO_DROPS,
    ]
}

const FIELDS: [&str; 5] = [
    "sbh_origlen",
    "sbh_msglen",
    "sbh_totlen",
    "sbh_drops",
    "sbh_timestamp",
];

fn run_c() -> Option<Vec<String>> {
    if Command::new("cc").arg("--version").output().is_err() {
        println!("SKIP: no C compiler `cc` on this host");
        return None;
    }
    let mut p = String::from(
        "#include <sys/bufmod.h>\n#include <stdio.h>\n#include <stddef.h>\nint main(void)\n{\n",
    );
    for (n, _, _) in constants() {
        p.push_str(&format!(
            "\tprintf(\"const {n} %lld\\n\", (long long)({n}));\n"
        ));
    }
    p.push_str("\tprintf(\"size sb_hdr %zu\\n\", sizeof(struct sb_hdr));\n");
    p.push_str("\tprintf(\"size timeval32 %zu\\n\", sizeof(struct timeval32));\n");
    for f in FIELDS {
        p.push_str(&format!(
            "\tprintf(\"off {f} %zu\\n\", offsetof(struct sb_hdr, {f}));\n"
        ));
    }
    p.push_str("\treturn 0;\n}\n");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (src, exe) = (tmp.join("bufmod_abi.c"), tmp.join("bufmod_abi"));
    std::fs::write(&src, p).expect("write C source");
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let out = Command::new("cc")
        .args(["-Wall", "-Werror", "-I"])
        .arg(&inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run C program");
    assert!(run.status.success(), "C program failed: {run:?}");
    Some(
        String::from_utf8(run.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect(),
    )
}

#[test]
fn bufmod_header_matches_rust_and_kernel() {
    let Some(lines) = run_c() else {
        return;
    };
    let kv: HashMap<String, String> = lines
        .iter()
        .filter_map(|l| l.split_once(' ').map(|(_, r)| r))
        .filter_map(|r| r.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    for (name, ours, kernel) in constants() {
        let cv: i64 = kv[name].parse().unwrap();
        assert_eq!(cv, ours, "{name}: header {cv} vs Rust {ours}");
        assert_eq!(cv, kernel, "{name}: header {cv} vs kernel bufmod {kernel}");
    }
    // The documented numbers (Solaris/LfS <sys/bufmod.h>).
    assert_eq!(u::SBIOCSTIME, 0x4201);
    assert_eq!(u::SBIOCGFLAGS, 0x4209);
    let size: usize = kv["sb_hdr"].parse().unwrap();
    assert_eq!(size, size_of::<u::sb_hdr>());
    assert_eq!(size, k::SB_HDR_SIZE);
    assert_eq!(kv["timeval32"], "8");
    let rust_offs = [
        offset_of!(u::sb_hdr, sbh_origlen),
        offset_of!(u::sb_hdr, sbh_msglen),
        offset_of!(u::sb_hdr, sbh_totlen),
        offset_of!(u::sb_hdr, sbh_drops),
        offset_of!(u::sb_hdr, sbh_timestamp),
    ];
    for (f, off) in FIELDS.iter().zip(rust_offs) {
        assert_eq!(
            kv[*f].parse::<usize>().unwrap(),
            off,
            "offsetof(sb_hdr, {f})"
        );
    }
}

#[test]
fn sb_hdr_bytes_match_the_kernel_encoding() {
    let h = k::SbHdr {
        origlen: 100,
        msglen: 64,
        totlen: 88,
        drops: 3,
        tv_sec: 12,
        tv_usec: 345_678,
    };
    let b = h.encode();
    let u = u::sb_hdr::read_from(&b).unwrap();
    assert_eq!(
        (u.sbh_origlen, u.sbh_msglen, u.sbh_totlen, u.sbh_drops),
        (100, 64, 88, 3)
    );
    assert_eq!(
        u.sbh_timestamp,
        u::timeval32 {
            tv_sec: 12,
            tv_usec: 345_678
        }
    );
    assert_eq!(k::SbHdr::decode(&b), Some(h));
}
