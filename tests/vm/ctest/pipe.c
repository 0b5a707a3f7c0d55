/*
 * strc cases on STREAMS pipes (s_pipe): full duplex, M_HANGUP/end of file after the other end
 * closes, I_SENDFD/I_RECVFD, pipemod and I_FLUSH, SIGPOLL from I_SETSIG, a poll woken by
 * another process, and EINTR for blocked calls interrupted by a signal with nothing lost.
 */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "strc.h"

static volatile int sigpipes, sigpolls, alarms;

static void count_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void count_sigpoll(int sig)
{
	(void)sig;
	sigpolls++;
}

static void count_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static int t_pipe_hangup(void)
{
	char cb[16], db[16];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	struct pollfd p;
	int fds[2], flags = 0;

	OK(s_pipe(fds));
	CHECK(isastream(fds[0]) == 1 && isastream(fds[1]) == 1, "pipe ends are not Streams");
	/* Full duplex: both ends read and write. */
	OK(write(fds[0], "a to b", 6));
	OK(write(fds[1], "b to a!", 7));
	CHECK(OK(read(fds[1], db, sizeof(db))) == 6 && !memcmp(db, "a to b", 6), "read b");
	CHECK(OK(read(fds[0], db, sizeof(db))) == 7 && !memcmp(db, "b to a!", 7), "read a");
	OK(put(fds[1], "ctl", "data", 0, 0));
	OK(getmsg(fds[0], &c, &d, &flags));
	CHECK(c.len == 3 && d.len == 4 && !memcmp(db, "data", 4), "getmsg across the pipe");
	/* Close one end with data queued for the other: it reads the data, then end of file. */
	OK(write(fds[0], "last", 4));
	OK(put(fds[0], "C", "msg", 0, 0));
	close(fds[0]);
	p = (struct pollfd){ fds[1], POLLIN | POLLOUT, 0 };
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && (p.revents & POLLIN) &&
		      !(p.revents & POLLOUT),
	      "poll after hangup: %#x", p.revents);
	CHECK(OK(read(fds[1], db, sizeof(db))) == 4 && !memcmp(db, "last", 4), "data before close");
	OK(getmsg(fds[1], &c, &d, &flags));
	CHECK(c.len == 1 && d.len == 3, "message before close: %d %d", c.len, d.len);
	CHECK(OK(read(fds[1], db, sizeof(db))) == 0, "no end of file after hangup");
	CHECK(OK(getmsg(fds[1], &c, &d, &flags)) == 0 && c.len == 0 && d.len == 0,
	      "getmsg at end of file: %d %d", c.len, d.len);
	/* Writing: EPIPE and SIGPIPE; the ioctls that change the Stream: ENXIO. */
	on_signal(SIGPIPE, count_sigpipe);
	FAILS(write(fds[1], "x", 1), EPIPE);
	FAILS(put(fds[1], "c", "d", 0, 0), EPIPE);
	CHECK(sigpipes == 2, "SIGPIPE %d times for 2 writes after hangup", sigpipes);
	FAILS(ioctl(fds[1], I_PUSH, "nullmod"), ENXIO);
	FAILS(ioctl(fds[1], I_FLUSH, FLUSHRW), ENXIO);
	FAILS(ioctl(fds[1], I_STR, &(struct strioctl){ 1, -1, 0, NULL }), ENXIO);
	/* Without SNDPIPE: ENXIO and no signal. */
	OK(ioctl(fds[1], I_SWROPT, 0));
	FAILS(write(fds[1], "x", 1), ENXIO);
	CHECK(sigpipes == 2, "SIGPIPE without SNDPIPE");
	close(fds[1]);
	return 0;
}

static int t_pipe_fdpass(void)
{
	struct strrecvfd rf;
	char b[16];
	int fds[2], lp[2], ec;

	OK(s_pipe(fds));
	CHECK(pipe(lp) == 0, "pipe: %s", strerror(errno));
	ec = open_dev(DEV_ECHO, 0);
	if (ec < 0)
		return -1;
	OK(ioctl(fds[0], I_SENDFD, lp[1]));
	close(lp[1]);	/* the message holds the file */
	OK(ioctl(fds[0], I_SENDFD, ec));
	close(ec);
	/* A passed file is first: read and getmsg refuse with EBADMSG; I_RECVFD checks its
	 * argument before taking anything. */
	FAILS(read(fds[1], b, sizeof(b)), EBADMSG);
	FAILS(ioctl(fds[1], I_RECVFD, bad_addr), EFAULT);
	memset(&rf, 0xff, sizeof(rf));
	OK(ioctl(fds[1], I_RECVFD, &rf));
	CHECK(rf.fd >= 0 && rf.uid == geteuid() && rf.gid == getegid(), "I_RECVFD: fd %d uid %d gid %d",
	      rf.fd, (int)rf.uid, (int)rf.gid);
	OK(write(rf.fd, "via fd", 6));
	close(rf.fd);
	CHECK(OK(read(lp[0], b, sizeof(b))) == 6 && !memcmp(b, "via fd", 6), "Linux pipe read");
	CHECK(OK(read(lp[0], b, sizeof(b))) == 0, "passed file leaked: no end of file");
	close(lp[0]);
	/* The second file is a Stream: echo answers through the received descriptor. */
	OK(ioctl(fds[1], I_RECVFD, &rf));
	ec = rf.fd;
	CHECK(isastream(ec) == 1, "received echo descriptor is not a Stream");
	OK(write(ec, "echo", 4));
	CHECK(OK(read(ec, b, sizeof(b))) == 4 && !memcmp(b, "echo", 4), "received echo");
	/* Errors: nothing queued (EAGAIN), bad fd, not a pipe, hangup. (A failing I_RECVFD
	 * may have written the structure: the kernel checks it is writable first.) */
	OK(set_nonblock(fds[1], 1));
	FAILS(ioctl(fds[1], I_RECVFD, &rf), EAGAIN);
	FAILS(ioctl(fds[0], I_SENDFD, 999), EBADF);
	FAILS(ioctl(ec, I_SENDFD, fds[0]), EINVAL);
	close(ec);
	close(fds[0]);
	FAILS(ioctl(fds[1], I_RECVFD, &rf), ENXIO);
	close(fds[1]);
	return 0;
}

static int t_pipe_pipemod_flush(void)
{
	struct str_mlist ml[2];
	struct str_list l = { 2, ml };
	int fds[2];

	OK(s_pipe(fds));
	/* Without pipemod, FLUSHW at one end does not reach what the other end has not read. */
	OK(write(fds[0], "unread", 6));
	OK(ioctl(fds[0], I_FLUSH, FLUSHW));
	CHECK(nmsgs(fds[1]) == 1, "FLUSHW without pipemod flushed the other end");
	OK(ioctl(fds[0], I_PUSH, "pipemod"));
	CHECK(OK(ioctl(fds[0], I_LIST, &l)) >= 1 && !strcmp(ml[0].l_name, "pipemod"),
	      "I_LIST: %.9s", ml[0].l_name);
	CHECK(OK(ioctl(fds[1], I_FIND, "pipemod")) == 0, "pipemod found at the other end");
	OK(ioctl(fds[0], I_FLUSH, FLUSHW));
	CHECK(nmsgs(fds[1]) == 0, "FLUSHW with pipemod left the other end's data");
	/* Data still flows both ways through pipemod. */
	OK(write(fds[1], "back", 4));
	CHECK(nmsgs(fds[0]) == 1, "data through pipemod");
	OK(write(fds[0], "fwd", 3));
	CHECK(nmsgs(fds[1]) == 1, "data through pipemod (forward)");
	close(fds[0]);
	close(fds[1]);
	return 0;
}

static int t_pipe_sigpoll(void)
{
	int fds[2], ev = 0, before;

	OK(s_pipe(fds));
	on_signal(SIGPOLL, count_sigpoll);
	FAILS(ioctl(fds[0], I_GETSIG, &ev), EINVAL);
	FAILS(ioctl(fds[0], I_SETSIG, 0), EINVAL);
	FAILS(ioctl(fds[0], I_SETSIG, S_ALL + 1), EINVAL);
	FAILS(ioctl(fds[0], I_SETSIG, -1), EINVAL);
	OK(ioctl(fds[0], I_SETSIG, S_INPUT | S_HIPRI | S_HANGUP));
	OK(ioctl(fds[0], I_GETSIG, &ev));
	CHECK(ev == (S_INPUT | S_HIPRI | S_HANGUP), "I_GETSIG %#x", ev);
	FAILS(ioctl(fds[1], I_GETSIG, &ev), EINVAL);
	/* Own writes are not input. */
	before = sigpolls;
	OK(write(fds[0], "out", 3));
	usleep(100000);
	CHECK(sigpolls == before, "SIGPOLL for the end's own write");
	OK(write(fds[1], "in", 2));
	CHECK(wait_count(&sigpolls, before), "no SIGPOLL for input (S_INPUT)");
	before = sigpolls;
	OK(put(fds[1], "pri", NULL, 0, MSG_HIPRI));
	CHECK(wait_count(&sigpolls, before), "no SIGPOLL for high priority input (S_HIPRI)");
	before = sigpolls;
	close(fds[1]);
	CHECK(wait_count(&sigpolls, before), "no SIGPOLL for hangup (S_HANGUP)");
	OK(ioctl(fds[0], I_SETSIG, 0));
	FAILS(ioctl(fds[0], I_GETSIG, &ev), EINVAL);
	close(fds[0]);
	return 0;
}

static int t_poll_woken(void)
{
	struct pollfd p;
	int fds[2], status = 0;
	pid_t pid;

	OK(s_pipe(fds));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		usleep(200000);
		_exit(write(fds[1], "wake", 4) == 4 ? 0 : 1);
	}
	p = (struct pollfd){ fds[0], POLLIN, 0 };
	CHECK(poll(&p, 1, 10000) == 1 && (p.revents & POLLIN), "poll not woken: %#x", p.revents);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer process failed");
	close(fds[0]);
	close(fds[1]);
	return 0;
}

/* A Stream has no file position: lseek, pread and pwrite fail with ESPIPE, on a pipe end (as
 * on a Linux pipe) and on a device Stream (stream_open). */
static int t_espipe(void)
{
	char b[4];
	int fds[2], e;

	OK(s_pipe(fds));
	FAILS(lseek(fds[0], 0, SEEK_CUR), ESPIPE);
	FAILS(lseek(fds[1], 0, SEEK_SET), ESPIPE);
	FAILS(pwrite(fds[0], "x", 1, 0), ESPIPE);
	FAILS(pread(fds[1], b, sizeof(b), 0), ESPIPE);
	close(fds[0]);
	close(fds[1]);
	e = OK(open_dev(DEV_ECHO, O_RDWR));
	FAILS(lseek(e, 0, SEEK_CUR), ESPIPE);
	FAILS(pwrite(e, "x", 1, 0), ESPIPE);
	FAILS(pread(e, b, sizeof(b), 0), ESPIPE);
	close(e);
	return 0;
}

static int t_eintr(void)
{
	char cb[8], db[8];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	char chunk[1000];
	int fds[2], flags = 0;
	long total;

	OK(s_pipe(fds));
	on_signal(SIGALRM, count_alarm);
	/* A blocked read and a blocked getmsg: EINTR; the Stream works on. */
	alarm(1);
	FAILS(read(fds[0], db, sizeof(db)), EINTR);
	CHECK(alarms == 1, "read returned before the alarm");
	alarm(1);
	FAILS(getmsg(fds[0], &c, &d, &flags), EINTR);
	CHECK(alarms == 2, "getmsg returned before the alarm");
	OK(put(fds[1], "c", "after", 0, 0));
	OK(getmsg(fds[0], &c, &d, &flags));
	CHECK(c.len == 1 && d.len == 5 && !memcmp(db, "after", 5), "message after EINTR");
	/* A writer blocked by flow control: EINTR, and every byte accepted before arrives. */
	total = fill(fds[0], sizeof(chunk));
	if (total < 0)
		return -1;
	pattern(chunk, sizeof(chunk), 7);
	alarm(1);
	FAILS(write(fds[0], chunk, sizeof(chunk)), EINTR);
	CHECK(alarms == 3, "write returned before the alarm");
	alarm(1);
	FAILS(putmsg(fds[0], NULL, &(struct strbuf){ 0, 10, chunk }, 0), EINTR);
	if (drain(fds[1], total, sizeof(chunk)) < 0)
		return -1;
	OK(set_nonblock(fds[1], 1));
	FAILS(read(fds[1], db, sizeof(db)), EAGAIN);
	close(fds[0]);
	close(fds[1]);
	return 0;
}

const struct tcase pipe_cases[] = {
	{ "s_pipe: full duplex; after close: data, EOF, POLLHUP, EPIPE+SIGPIPE, ENXIO",
	  t_pipe_hangup },
	{ "I_SENDFD/I_RECVFD: Linux pipe and echo Stream passed, EBADMSG/EFAULT/EAGAIN/EBADF/"
	  "EINVAL/ENXIO",
	  t_pipe_fdpass },
	{ "pipemod: FLUSHW at one end flushes the other end's read side", t_pipe_pipemod_flush },
	{ "I_SETSIG/I_GETSIG: SIGPOLL for input, high priority, hangup; EINVAL", t_pipe_sigpoll },
	{ "poll woken by a write from another process", t_poll_woken },
	{ "EINTR: blocked read/getmsg/write/putmsg interrupted by SIGALRM, nothing lost", t_eintr },
	{ "lseek/pread/pwrite: ESPIPE on a pipe end and a device Stream", t_espipe },
	{ NULL, NULL },
};
