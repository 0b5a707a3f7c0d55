/*
 * strc: an SVR4-style C program against rstreams, run in the test guest by tests/vm/init.sh.
 *
 * It uses only <stropts.h> (user/libstreams-sys/include) and libstreams.a, as an existing
 * STREAMS program would, and checks every Stream head system call and I_* ioctl on the echo,
 * nuls, sloop and mux drivers and on STREAMS pipes, including the error cases (docs/ioctls.md
 * is the specification). Cases: msg.c (putmsg/getmsg, read modes, EFAULT/EINVAL/ENOSTR),
 * ioc.c (the I_* ioctls), pipe.c (hangup, fd passing, SIGPOLL, EINTR, poll), mux.c (I_LINK).
 *
 * Each case runs in its own child process (signals, descriptors and a crash stay there; a hang
 * is killed after 60 s). Output is TAP-like (`ok N - name` / `not ok N - name: why`) with a
 * final `N passed, N failed` line; the exit status is non-zero if any case failed.
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "strc.h"

char why[512];
char *volatile bad_addr = (char *)1;

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

int open_dev(const char *path, int flags)
{
	int fd = open(path, O_RDWR | flags);

	if (fd < 0)
		return fail("open %s: %s", path, strerror(errno));
	return fd;
}

int set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return fail("F_GETFL: %s", strerror(errno));
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	if (fcntl(fd, F_SETFL, fl) < 0)
		return fail("F_SETFL: %s", strerror(errno));
	return 0;
}

int put(int fd, const char *ctl, const char *data, int band, int flags)
{
	struct strbuf c = { 0, ctl ? (int)strlen(ctl) : -1, (char *)ctl };
	struct strbuf d = { 0, data ? (int)strlen(data) : -1, (char *)data };

	return putpmsg(fd, ctl ? &c : NULL, data ? &d : NULL, band, flags);
}

int nmsgs(int fd)
{
	int first = 0;

	return ioctl(fd, I_NREAD, &first);
}

void pattern(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(i * 31 + seed);
}

long fill(int fd, size_t chunk)
{
	char buf[4096];
	long total = 0;

	if (chunk > sizeof(buf) || set_nonblock(fd, 1) < 0)
		return fail("fill: bad chunk or fcntl");
	pattern(buf, chunk, 7);
	for (;;) {
		ssize_t n = write(fd, buf, chunk);

		if (n < 0 && errno == EAGAIN)
			break;
		if (n != (ssize_t)chunk)
			return fail("fill: write returned %zd (%s)", n, strerror(errno));
		total += n;
		if (total > (4L << 20))
			return fail("fill: no flow control after %ld bytes", total);
	}
	if (set_nonblock(fd, 0) < 0)
		return -1;
	return total;
}

int drain(int fd, long total, size_t chunk)
{
	char want[4096], got[4096];
	long done = 0;

	pattern(want, chunk, 7);
	while (done < total) {
		size_t k = chunk - (size_t)(done % (long)chunk);
		ssize_t n = read(fd, got, k);

		if (n <= 0)
			return fail("drain: read returned %zd after %ld of %ld bytes (%s)", n, done,
				    total, strerror(errno));
		if (memcmp(got, want + done % (long)chunk, (size_t)n) != 0)
			return fail("drain: data differs at byte %ld", done);
		done += n;
	}
	return 0;
}

void on_signal(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

int wait_count(volatile int *count, int before)
{
	for (int i = 0; i < 200 && *count <= before; i++)
		usleep(10000);
	return *count > before;
}

/* Run one case in a child; 0 if it passed, else -1 with `why` set. */
static int run_case(const struct tcase *c, char *shared)
{
	pid_t pid;
	int status = 0;

	fflush(stdout);
	memset(shared, 0, sizeof(why));
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int r = c->fn();

		if (r != 0)
			memcpy(shared, why, sizeof(why));
		_exit(r == 0 ? 0 : 1);
	}
	for (int i = 0; i < 6000; i++) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				return 0;
			if (WIFSIGNALED(status))
				return fail("killed by signal %d (%s)", WTERMSIG(status),
					    strsignal(WTERMSIG(status)));
			return fail("%s", shared[0] ? shared : "failed without a reason");
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return fail("timed out after 60 s (killed)");
}

int main(void)
{
	const struct tcase *lists[] = { msg_cases, ioc_cases, pipe_cases, mux_cases };
	char *shared = mmap(NULL, sizeof(why), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			    -1, 0);
	int n = 0, pass = 0, failed = 0;

	if (shared == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (const struct tcase *c = lists[l]; c->name; c++)
			n++;
	printf("1..%d\n", n);
	n = 0;
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		for (const struct tcase *c = lists[l]; c->name; c++) {
			n++;
			if (run_case(c, shared) == 0) {
				pass++;
				printf("ok %d - %s\n", n, c->name);
			} else {
				failed++;
				printf("not ok %d - %s: %s\n", n, c->name, why);
			}
		}
	}
	printf("%d passed, %d failed\n", pass, failed);
	return failed ? 1 : 0;
}
