//! What libstreams hands the kernel, seen from a fake kernel: the C test program defines its
//! own `ioctl()` and `open()`, which the statically linked libstreams calls instead of glibc's,
//! and which play a Stream head on a pretend descriptor (100). This checks the `struct strpmsg`
//! each call builds (parts, band, flags mapping), what is copied back, the ENOTTY → ENOSTR
//! mapping, isastream's probe and s_pipe's I_FIFO_PIPE and open/open/I_PIPE sequences — without
//! the modules.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = r#"
#define _GNU_SOURCE
#include <stropts.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE 100
static struct strpmsg last;	/* last I_PUTPMSG / I_GETPMSG argument as received */
static char lastctl[64], lastdata[64];
static unsigned long lastcmd;
static long lastarg;
static int opens, fake_enotty, fifo_ok;

int ioctl(int fd, unsigned long cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (fd < FAKE)
		return (int)syscall(SYS_ioctl, fd, cmd, arg);
	lastcmd = cmd;
	lastarg = (long)arg;
	if (fake_enotty) { errno = ENOTTY; return -1; }
	if (cmd == I_CANPUT) return 1;
	if (cmd == I_PIPE) return 0;
	if (cmd == I_FIFO_PIPE) {
		int *req = arg;
		if (!fifo_ok) { errno = EINVAL; return -1; } /* an older streams.ko */
		printf("fifo_pipe flags %d\n", req[2] == O_CLOEXEC);
		req[0] = 200; req[1] = 201;
		return 0;
	}
	if (cmd == I_PUTPMSG) {
		last = *(struct strpmsg *)arg;
		if (last.ctlbuf.len > 0) memcpy(lastctl, last.ctlbuf.buf, last.ctlbuf.len);
		if (last.databuf.len > 0) memcpy(lastdata, last.databuf.buf, last.databuf.len);
		return 0;
	}
	if (cmd == I_GETPMSG) {
		struct strpmsg *sp = arg;
		last = *sp;
		/* A band-3 message: control "CTL", data "0123456789" of which maxlen fit. */
		if (sp->ctlbuf.maxlen >= 3) { memcpy(sp->ctlbuf.buf, "CTL", 3); sp->ctlbuf.len = 3; }
		int n = sp->databuf.maxlen < 10 ? sp->databuf.maxlen : 10;
		memcpy(sp->databuf.buf, "0123456789", n); sp->databuf.len = n;
		sp->band = 3;
		sp->flags = last.flags == MSG_HIPRI ? MSG_HIPRI : MSG_BAND;
		return n < 10 ? MOREDATA : 0;
	}
	errno = EINVAL;
	return -1;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int mode = va_arg(ap, int);
	va_end(ap);
	if (strcmp(path, "/dev/streams/clone/pipe") == 0) {
		printf("open_flags %d\n", flags == (O_RDWR | O_CLOEXEC));
		return FAKE + opens++;
	}
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

int main(void)
{
	char c[8], d[8];
	struct strbuf cb = { 0, 3, "abc" }, db = { 0, 5, "hello" };
	int r, flags, band;

	r = putmsg(FAKE, &cb, &db, RS_HIPRI);
	printf("putmsg %d cmd %d flags %d band %d clen %d dlen %d ctl %.3s data %.5s\n", r,
	       lastcmd == I_PUTPMSG, last.flags, last.band, last.ctlbuf.len, last.databuf.len,
	       lastctl, lastdata);
	r = putmsg(FAKE, NULL, &db, 0);
	printf("putmsg_noctl %d flags %d clen %d cmax %d cbuf %d\n", r, last.flags,
	       last.ctlbuf.len, last.ctlbuf.maxlen, last.ctlbuf.buf == NULL);
	r = putpmsg(FAKE, NULL, &db, 7, MSG_BAND);
	printf("putpmsg %d flags %d band %d\n", r, last.flags, last.band);

	struct strbuf gc = { sizeof c, -5, c }, gd = { 4, -5, d };
	flags = 0;
	r = getmsg(FAKE, &gc, &gd, &flags);
	printf("getmsg %d in_flags %d in_dmax %d out_flags %d clen %d dlen %d ctl %.3s data %.4s\n",
	       r, last.flags, last.databuf.maxlen, flags, gc.len, gd.len, c, d);
	flags = RS_HIPRI;
	r = getmsg(FAKE, &gc, &gd, &flags);
	printf("getmsg_hipri %d in_flags %d out_flags %d\n", r, last.flags, flags);
	band = 2; flags = MSG_BAND; gd.maxlen = 8;
	r = getpmsg(FAKE, NULL, &gd, &band, &flags);
	printf("getpmsg %d in_band %d in_cmax %d out_band %d out_flags %d dlen %d\n", r, last.band,
	       last.ctlbuf.maxlen, band, flags, gd.len);

	r = isastream(FAKE);
	printf("isastream %d probe %d arg %ld\n", r, lastcmd == I_CANPUT, lastarg);
	int fds[2] = { -1, -1 };
	r = s_pipe2(fds, O_CLOEXEC);
	printf("s_pipe %d fds %d %d weld %d arg %ld\n", r, fds[0], fds[1], lastcmd == I_PIPE, lastarg);
	fifo_ok = 1;
	r = s_pipe2(fds, O_CLOEXEC);
	printf("s_pipe_fifo %d fds %d %d\n", r, fds[0], fds[1]);

	fake_enotty = 1;
	errno = 0; r = putmsg(FAKE, NULL, &db, 0);
	printf("enotty_put %d %d\n", r, errno == ENOSTR);
	flags = 0; errno = 0; r = getmsg(FAKE, NULL, &gd, &flags);
	printf("enotty_get %d %d\n", r, errno == ENOSTR);
	errno = 0; r = isastream(FAKE);
	printf("enotty_isastream %d %d\n", r, errno == 0);
	return 0;
}
"#;

#[test]
fn library_marshals_strpmsg_for_the_kernel() {
    if Command::new("cc").arg("--version").output().is_err() {
        println!("SKIP: no C compiler `cc` on this host");
        return;
    }
    // `cargo test` leaves libstreams.a in deps/; `cargo build` also uplifts it one level up.
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib = [deps, deps.parent().unwrap()]
        .iter()
        .map(|d| d.join("libstreams.a"))
        .find(|p| p.exists())
        .unwrap_or_else(|| deps.join("libstreams.a"));
    assert!(lib.exists(), "{lib:?} not built");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (src, bin) = (tmp.join("marshal.c"), tmp.join("marshal"));
    std::fs::write(&src, PROG).unwrap();
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let cc = Command::new("cc")
        .args(["-Wall", "-Werror", "-Wno-format-truncation", "-I"])
        .arg(&inc)
        .arg(&src)
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&bin).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let expect = [
        // putmsg RS_HIPRI → MSG_HIPRI (1), band 0, both parts as given.
        "putmsg 0 cmd 1 flags 1 band 0 clen 3 dlen 5 ctl abc data hello",
        // A null part goes down as {maxlen -1, len -1, NULL}; flags 0 stays 0.
        "putmsg_noctl 0 flags 0 clen -1 cmax -1 cbuf 1",
        "putpmsg 0 flags 4 band 7",
        // getmsg 0 → MSG_ANY (2) down; MSG_BAND back → 0; lengths copied back; MOREDATA.
        "getmsg 2 in_flags 2 in_dmax 4 out_flags 0 clen 3 dlen 4 ctl CTL data 0123",
        // getmsg RS_HIPRI → MSG_HIPRI down, MSG_HIPRI back → RS_HIPRI.
        "getmsg_hipri 2 in_flags 1 out_flags 1",
        // getpmsg: band and flags down and back; a null ctl is "not retrieved" (maxlen -1).
        "getpmsg 2 in_band 2 in_cmax -1 out_band 3 out_flags 4 dlen 8",
        "isastream 1 probe 1 arg 0",
        "open_flags 1",
        // I_FIFO_PIPE refused (an older module): the control descriptor (100) is closed and
        // the LfS way follows: open, open, I_PIPE.
        "s_pipe 0 fds 101 102 weld 1 arg 102",
        // I_FIFO_PIPE answered: its two descriptors, flags passed down.
        "fifo_pipe flags 1",
        "s_pipe_fifo 0 fds 200 201",
        "enotty_put -1 1",
        "enotty_get -1 1",
        "enotty_isastream 0 1",
    ];
    for e in expect {
        assert!(text.lines().any(|l| l == e), "missing {e:?} in:\n{text}");
    }
}
