/*
 * xtiudp: an XTI UDP program as existing XTI code is written (netperf's nettest_xti.c, LfS
 * examples): only <xti.h>, <xti_inet.h> and libc, built with `cc xtiudp.c -lxnet`.
 *
 * Usage: xtiudp [DEVICE]   (default /dev/streams/clone/udp)
 *
 * Two endpoints bound to 127.0.0.1 (ephemeral ports) exchange a datagram both ways with
 * t_sndudata/t_rcvudata (data and source address checked), then a datagram to a port nobody
 * has bound comes back as T_UDERR (t_rcvudata fails with TLOOK, t_look, t_rcvuderr gives
 * ECONNREFUSED). t_getinfo, t_alloc/t_free of every structure, t_error and t_errno on the way.
 *
 * Exit status: 0 passed; 1 failed (the reason on stderr); 2 there is no UDP provider
 * (t_open failed with TBADNAME: a host without the modules, where `cargo xtask package`
 * runs it against the unpacked libxnet.so.0).
 */
#define _XOPEN_SOURCE 600
#include <xti.h>
#include <xti_inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dev = "/dev/streams/clone/udp";

static int failed(const char *what)
{
	t_error(what);
	return 1;
}

/* Open a T_CLTS endpoint and bind it to 127.0.0.1 on an ephemeral port; -1 on error. */
static int open_bound(struct sockaddr_in *bound)
{
	struct t_info info;
	struct t_bind *req, *ret;
	struct sockaddr_in sin;
	int fd = t_open(dev, O_RDWR, &info);

	if (fd < 0)
		return -1;
	if (info.servtype != T_CLTS) {
		fprintf(stderr, "%s: service type %ld, not T_CLTS\n", dev, (long)info.servtype);
		return -1;
	}
	req = (struct t_bind *)t_alloc(fd, T_BIND, T_ADDR);
	ret = (struct t_bind *)t_alloc(fd, T_BIND, T_ADDR);
	if (req == NULL || ret == NULL || req->addr.maxlen < sizeof(sin))
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = 0;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(req->addr.buf, &sin, sizeof(sin));
	req->addr.len = sizeof(sin);
	req->qlen = 0;
	if (t_bind(fd, req, ret) < 0)
		return -1;
	if (ret->addr.len < sizeof(*bound)) {
		fprintf(stderr, "t_bind returned a %u-byte address\n", ret->addr.len);
		return -1;
	}
	memcpy(bound, ret->addr.buf, sizeof(*bound));
	if (bound->sin_port == 0) {
		fprintf(stderr, "t_bind gave port 0\n");
		return -1;
	}
	if (t_free((char *)req, T_BIND) < 0 || t_free((char *)ret, T_BIND) < 0)
		return -1;
	if (t_getstate(fd) != T_IDLE) {
		fprintf(stderr, "state after t_bind is %d, not T_IDLE\n", t_getstate(fd));
		return -1;
	}
	return fd;
}

/* Send `msg` from `fd` to `to`, read it on `rfd` and check the data and the source. */
static int exchange(int fd, const struct sockaddr_in *from, int rfd, const struct sockaddr_in *to,
		    const char *msg)
{
	struct t_unitdata *ud = (struct t_unitdata *)t_alloc(fd, T_UNITDATA, T_ADDR);
	struct t_unitdata *rd = (struct t_unitdata *)t_alloc(rfd, T_UNITDATA, T_ALL);
	struct sockaddr_in src;
	int flags = 0;

	if (ud == NULL || rd == NULL)
		return failed("t_alloc(T_UNITDATA)");
	memcpy(ud->addr.buf, to, sizeof(*to));
	ud->addr.len = sizeof(*to);
	ud->udata.buf = (char *)msg;
	ud->udata.len = strlen(msg);
	if (t_sndudata(fd, ud) < 0)
		return failed("t_sndudata");
	if (rd->udata.maxlen < strlen(msg) || rd->addr.maxlen < sizeof(src)) {
		fprintf(stderr, "t_alloc(T_ALL) buffers too small: udata %u addr %u\n",
			rd->udata.maxlen, rd->addr.maxlen);
		return 1;
	}
	if (t_rcvudata(rfd, rd, &flags) < 0)
		return failed("t_rcvudata");
	if (rd->udata.len != strlen(msg) || memcmp(rd->udata.buf, msg, rd->udata.len) != 0 ||
	    flags != 0) {
		fprintf(stderr, "received %u bytes (flags %#x), not \"%s\"\n", rd->udata.len,
			flags, msg);
		return 1;
	}
	memcpy(&src, rd->addr.buf, sizeof(src));
	if (rd->addr.len < sizeof(src) || src.sin_port != from->sin_port ||
	    src.sin_addr.s_addr != htonl(INADDR_LOOPBACK)) {
		fprintf(stderr, "source %s:%u, expected 127.0.0.1:%u\n", inet_ntoa(src.sin_addr),
			ntohs(src.sin_port), ntohs(from->sin_port));
		return 1;
	}
	/* t_free must not free a buffer the caller put in: ud->udata points at msg. */
	ud->udata.buf = NULL;
	if (t_free((char *)ud, T_UNITDATA) < 0 || t_free((char *)rd, T_UNITDATA) < 0)
		return failed("t_free(T_UNITDATA)");
	return 0;
}

/* A datagram to a port nobody has bound: ICMP port unreachable, as T_UDERR. */
static int unreachable(int fd)
{
	struct sockaddr_in closed;
	struct t_unitdata *ud = (struct t_unitdata *)t_alloc(fd, T_UNITDATA, T_ALL);
	struct t_uderr *ue = (struct t_uderr *)t_alloc(fd, T_UDERROR, T_ALL);
	struct timespec ms = { 0, 10 * 1000 * 1000 };
	int tmp = open_bound(&closed), flags = 0, i;

	if (tmp < 0)
		return failed("t_open/t_bind");
	if (t_close(tmp) < 0)
		return failed("t_close");
	if (ud == NULL || ue == NULL)
		return failed("t_alloc");
	memcpy(ud->addr.buf, &closed, sizeof(closed));
	ud->addr.len = sizeof(closed);
	strcpy(ud->udata.buf, "anyone?");
	ud->udata.len = 7;
	if (t_sndudata(fd, ud) < 0)
		return failed("t_sndudata to a closed port");
	/* The ICMP error comes back asynchronously: wait up to 5 s for the event. */
	for (i = 0; i < 500 && t_look(fd) != T_UDERR; i++)
		nanosleep(&ms, NULL);
	if (t_look(fd) != T_UDERR) {
		fprintf(stderr, "t_look is %d, not T_UDERR, after 5 s\n", t_look(fd));
		return 1;
	}
	if (t_rcvudata(fd, ud, &flags) != -1 || t_errno != TLOOK) {
		fprintf(stderr, "t_rcvudata with a T_UDERR pending: t_errno %d, not TLOOK\n",
			t_errno);
		return 1;
	}
	if (t_rcvuderr(fd, ue) < 0)
		return failed("t_rcvuderr");
	if (ue->error != ECONNREFUSED || ue->addr.len < sizeof(closed) ||
	    memcmp(ue->addr.buf, &closed, sizeof(closed)) != 0) {
		fprintf(stderr, "T_UDERR error %ld (expected ECONNREFUSED) or wrong address\n",
			(long)ue->error);
		return 1;
	}
	if (t_rcvuderr(fd, ue) != -1 || t_errno != TNOUDERR) {
		fprintf(stderr, "second t_rcvuderr: t_errno %d, not TNOUDERR\n", t_errno);
		return 1;
	}
	if (t_free((char *)ud, T_UNITDATA) < 0 || t_free((char *)ue, T_UDERROR) < 0)
		return failed("t_free");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a_addr, b_addr;
	struct t_info info;
	int a, b;

	if (argc > 1)
		dev = argv[1];
	alarm(30); /* a lost datagram must not hang the caller */
	a = open_bound(&a_addr);
	if (a < 0) {
		if (t_errno == TBADNAME) {
			fprintf(stderr, "xtiudp: no UDP provider: ");
			t_error(dev);
			return 2;
		}
		return failed("t_open/t_bind");
	}
	b = open_bound(&b_addr);
	if (b < 0)
		return failed("t_open/t_bind");
	if (t_getinfo(a, &info) < 0)
		return failed("t_getinfo");
	if (info.servtype != T_CLTS || info.tsdu <= 0 || info.addr < (t_scalar_t)sizeof(a_addr)) {
		fprintf(stderr, "t_getinfo: servtype %ld tsdu %ld addr %ld\n", (long)info.servtype,
			(long)info.tsdu, (long)info.addr);
		return 1;
	}
	if (exchange(a, &a_addr, b, &b_addr, "hello over XTI") ||
	    exchange(b, &b_addr, a, &a_addr, "and back") || unreachable(a))
		return 1;
	if (t_close(a) < 0 || t_close(b) < 0)
		return failed("t_close");
	if (t_close(a) != -1 || t_errno != TBADF) {
		fprintf(stderr, "t_close of a closed endpoint: t_errno %d, not TBADF\n", t_errno);
		return 1;
	}
	printf("xtiudp: ok (%s: ports %u and %u, T_UDERR ECONNREFUSED)\n", dev,
	       ntohs(a_addr.sin_port), ntohs(b_addr.sin_port));
	return 0;
}
