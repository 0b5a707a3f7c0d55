//! LD_PRELOAD=libstreams_pipe.so on a C program that uses pipe()/pipe2(): on a host without
//! `/dev/streams/clone/pipe` the interposer must hand out working Linux pipes, and it must
//! really be the one answering (dladdr names our library).

use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	int p[2], q[2];
	char buf[16] = { 0 };
	Dl_info info;

	if (pipe(p) != 0) { perror("pipe"); return 1; }
	if (write(p[1], "hello", 5) != 5 || read(p[0], buf, sizeof buf) != 5) return 2;
	printf("pipe_data %s\n", buf);
	if (pipe2(q, O_CLOEXEC | O_NONBLOCK) != 0) { perror("pipe2"); return 3; }
	printf("pipe2_cloexec %d\n", (fcntl(q[0], F_GETFD) & FD_CLOEXEC) != 0);
	printf("pipe2_nonblock %d\n", (fcntl(q[1], F_GETFL) & O_NONBLOCK) != 0);
	errno = 0;
	int r = (int)read(q[0], buf, 1);
	printf("pipe2_empty_read %d %d\n", r, errno == EAGAIN);
	if (dladdr((void *)&pipe, &info) && info.dli_fname)
		printf("pipe_from %s\n", info.dli_fname);
	/* fcntl is interposed too: on a Linux pipe every command reaches the C library's. */
	printf("pipe_sz_set %d\n", fcntl(p[0], F_SETPIPE_SZ, 1 << 17) >= (1 << 17));
	printf("pipe_sz_get %d\n", fcntl(p[0], F_GETPIPE_SZ) >= (1 << 17));
	printf("fcntl_getfl %d\n", (fcntl(q[0], F_GETFL) & O_NONBLOCK) != 0);
	errno = 0;
	r = fcntl(-1, F_GETPIPE_SZ);
	printf("fcntl_ebadf %d %d\n", r, errno == EBADF);
	if (dladdr((void *)&fcntl, &info) && info.dli_fname)
		printf("fcntl_from %s\n", info.dli_fname);
	return 0;
}
"#;

/// The interposer library. `cargo build` uplifts it to target/<profile>/, but `cargo test`
/// does not build a cdylib-only crate for its own integration tests, so build it here (into a
/// private target dir: the outer cargo holds the lock on the main one).
fn preload_so() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target dir");
    let uplifted = profile_dir.join("libstreams_pipe.so");
    if uplifted.exists() {
        return uplifted;
    }
    let own = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("preload-build");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "streams-pipe-preload",
            "--target-dir",
        ])
        .arg(&own)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build");
    assert!(st.success(), "cargo build -p streams-pipe-preload failed");
    own.join("debug").join("libstreams_pipe.so")
}

#[test]
fn preloaded_pipe_falls_back_to_linux_pipe() {
    if Command::new("cc").arg("--version").output().is_err() {
        println!("SKIP: no C compiler `cc` on this host");
        return;
    }
    if Path::new("/dev/streams/clone/pipe").exists() {
        println!("SKIP: STREAMS pipe device present; fallback not exercised");
        return;
    }
    let so = preload_so();
    assert!(so.exists(), "{so:?} not built");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (src, exe) = (tmp.join("preload_pipe.c"), tmp.join("preload_pipe"));
    std::fs::write(&src, PROG).unwrap();
    let cc = Command::new("cc")
        .args(["-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    for env in [None, Some("0")] {
        let mut cmd = Command::new(&exe);
        cmd.env("LD_PRELOAD", &so);
        if let Some(v) = env {
            cmd.env("STREAMS_PIPE", v);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("pipe_data hello\n"), "{text}");
        assert!(text.contains("pipe2_cloexec 1\n"), "{text}");
        assert!(text.contains("pipe2_nonblock 1\n"), "{text}");
        assert!(text.contains("pipe2_empty_read -1 1\n"), "{text}");
        let from = text
            .lines()
            .find_map(|l| l.strip_prefix("pipe_from "))
            .unwrap_or("");
        assert!(
            from.ends_with("libstreams_pipe.so"),
            "pipe() came from {from:?}"
        );
        assert!(text.contains("pipe_sz_set 1\n"), "{text}");
        assert!(text.contains("pipe_sz_get 1\n"), "{text}");
        assert!(text.contains("fcntl_getfl 1\n"), "{text}");
        assert!(text.contains("fcntl_ebadf -1 1\n"), "{text}");
        let from = text
            .lines()
            .find_map(|l| l.strip_prefix("fcntl_from "))
            .unwrap_or("");
        assert!(
            from.ends_with("libstreams_pipe.so"),
            "fcntl() came from {from:?}"
        );
    }
}
