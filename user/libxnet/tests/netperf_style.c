/*
 * An XTI UDP client in the style of netperf's XTI tests (nettest_xti.c): t_open, t_alloc,
 * t_bind, t_optmgmt with XTI_SNDBUF, t_sndudata, t_rcvudata, t_look, t_error, t_close.
 * Includes only <xti.h> and <xti_inet.h> (plus libc), links with -lxnet.
 *
 * Usage: netperf_style DEVICE [PORT]. With a UDP provider it sends one datagram to
 * 127.0.0.1:PORT on itself and reads it back (exit 0). Without one, it reports how t_open
 * failed ("t_open: ..." on stderr, exit 3): what the host test checks.
 * It also prints its view of the ABI: "const NAME VALUE" and "size STRUCT N".
 */
#include <xti.h>
#include <xti_inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#define C(n) printf("const %s %lld\n", #n, (long long)(n))
#define S(n) printf("size %s %zu\n", #n, sizeof(struct n))
#define O(s, f) printf("off %s.%s %zu\n", #s, #f, offsetof(struct s, f))

static void abi(void)
{
	C(TBADADDR); C(TBADOPT); C(TACCES); C(TBADF); C(TNOADDR); C(TOUTSTATE); C(TBADSEQ);
	C(TSYSERR); C(TLOOK); C(TBADDATA); C(TBUFOVFLW); C(TFLOW); C(TNODATA); C(TNODIS);
	C(TNOUDERR); C(TBADFLAG); C(TNOREL); C(TNOTSUPPORT); C(TSTATECHNG); C(TNOSTRUCTYPE);
	C(TBADNAME); C(TBADQLEN); C(TADDRBUSY); C(TINDOUT); C(TPROVMISMATCH); C(TRESQLEN);
	C(TRESADDR); C(TQFULL); C(TPROTO);
	C(T_LISTEN); C(T_CONNECT); C(T_DATA); C(T_EXDATA); C(T_DISCONNECT); C(T_UDERR);
	C(T_ORDREL); C(T_GODATA); C(T_GOEXDATA); C(T_LEAFCHANGE); C(T_EVENTS); C(T_ERROR);
	C(T_BIND); C(T_OPTMGMT); C(T_CALL); C(T_DIS); C(T_UNITDATA); C(T_UDERROR); C(T_INFO);
	C(T_ADDR); C(T_OPT); C(T_UDATA); C(T_ALL);
	C(T_UNINIT); C(T_UNBND); C(T_IDLE); C(T_OUTCON); C(T_INCON); C(T_DATAXFER);
	C(T_OUTREL); C(T_INREL);
	C(T_MORE); C(T_EXPEDITED); C(T_PUSH); C(T_NEGOTIATE); C(T_CHECK); C(T_DEFAULT);
	C(T_SUCCESS); C(T_FAILURE); C(T_CURRENT); C(T_PARTSUCCESS); C(T_READONLY);
	C(T_NOTSUPPORT); C(T_ALLOPT);
	C(T_COTS); C(T_COTS_ORD); C(T_CLTS); C(T_SENDZERO); C(T_ORDRELDATA); C(XPG4_1);
	C(T_UNSPEC); C(T_INVALID); C(T_INFINITE); C(T_YES); C(T_NO); C(T_ABSREQ); C(T_IOV_MAX);
	C(XTI_GENERIC); C(XTI_DEBUG); C(XTI_LINGER); C(XTI_SNDBUF); C(XTI_RCVBUF);
	C(XTI_SNDLOWAT); C(XTI_RCVLOWAT); C(XTI_REUSEADDR); C(XTI_DONTROUTE);
	C(XTI_BROADCAST); C(XTI_KEEPALIVE); C(XTI_PRIORITY);
	C(T_INET_IP); C(T_INET_TCP); C(T_INET_UDP); C(T_IP_OPTIONS); C(T_IP_TOS); C(T_IP_TTL);
	C(T_IP_REUSEADDR); C(T_IP_DONTROUTE); C(T_IP_BROADCAST); C(T_IP_ADDR);
	C(T_UDP_CHECKSUM); C(T_TCP_NODELAY); C(T_TCP_MAXSEG); C(T_TCP_KEEPALIVE);
	S(netbuf); S(t_info); S(t_bind); S(t_optmgmt); S(t_discon); S(t_call); S(t_unitdata);
	S(t_uderr); S(t_opthdr); S(t_iovec); S(t_linger); S(t_kpalive); S(t_leaf_status);
	O(netbuf, maxlen); O(netbuf, len); O(netbuf, buf);
	O(t_info, addr); O(t_info, options); O(t_info, tsdu); O(t_info, etsdu);
	O(t_info, connect); O(t_info, discon); O(t_info, servtype); O(t_info, flags);
	O(t_info, tidu);
	O(t_bind, addr); O(t_bind, qlen); O(t_optmgmt, opt); O(t_optmgmt, flags);
	O(t_discon, udata); O(t_discon, reason); O(t_discon, sequence);
	O(t_call, addr); O(t_call, opt); O(t_call, udata); O(t_call, sequence);
	O(t_unitdata, addr); O(t_unitdata, opt); O(t_unitdata, udata);
	O(t_uderr, addr); O(t_uderr, opt); O(t_uderr, error);
	O(t_opthdr, len); O(t_opthdr, level); O(t_opthdr, name); O(t_opthdr, status);
}

/* The option walk of the C macros over a hand-built buffer: prints "walk LEVEL NAME". */
static void walk(void)
{
	union { t_uscalar_t align; char b[64]; } u;
	struct netbuf nb = { sizeof u.b, 0, u.b };
	struct t_opthdr *h = (struct t_opthdr *)u.b;
	h->len = sizeof *h + 3; h->level = T_INET_IP; h->name = T_IP_OPTIONS; h->status = 0;
	h = (struct t_opthdr *)(u.b + 20);
	h->len = sizeof *h + 4; h->level = XTI_GENERIC; h->name = XTI_SNDBUF; h->status = 0;
	nb.len = 40;
	for (h = T_OPT_FIRSTHDR(&nb); h; h = T_OPT_NEXTHDR(&nb, h))
		printf("walk %u %u %u\n", (unsigned)h->level, (unsigned)h->name,
		       (unsigned)(T_OPT_DATA(h) - (unsigned char *)h));
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/udp";
	int port = argc > 2 ? atoi(argv[2]) : 5599;
	struct t_info info;
	struct t_bind *bind_req, *bind_ret;
	struct t_optmgmt *opt_req, *opt_ret;
	struct t_unitdata *snd, *rcv;
	struct sockaddr_in sin;
	struct t_opthdr *oh;
	int fd, flags = 0, ev;

	abi();
	walk();
	printf("strerror %s\n", t_strerror(TADDRBUSY));
	t_errno = 0;
	if (t_look(1000) != -1 || t_errno != TBADF) {
		fprintf(stderr, "t_look on a bad fd: t_errno %d\n", t_errno);
		return 1;
	}
	fd = t_open(dev, O_RDWR, &info);
	if (fd < 0) {
		printf("t_open_errno %d\n", t_errno);
		t_error("t_open");
		return 3;
	}
	bind_req = (struct t_bind *)t_alloc(fd, T_BIND, T_ADDR);
	bind_ret = (struct t_bind *)t_alloc(fd, T_BIND, T_ADDR);
	opt_req = (struct t_optmgmt *)t_alloc(fd, T_OPTMGMT, T_ALL);
	opt_ret = (struct t_optmgmt *)t_alloc(fd, T_OPTMGMT, T_ALL);
	snd = (struct t_unitdata *)t_alloc(fd, T_UNITDATA, T_ADDR | T_UDATA);
	rcv = (struct t_unitdata *)t_alloc(fd, T_UNITDATA, T_ALL);
	if (!bind_req || !bind_ret || !opt_req || !opt_ret || !snd || !rcv) {
		t_error("t_alloc");
		return 1;
	}
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(bind_req->addr.buf, &sin, sizeof sin);
	bind_req->addr.len = sizeof sin;
	bind_req->qlen = 0;
	if (t_bind(fd, bind_req, bind_ret) < 0) {
		t_error("t_bind");
		return 1;
	}
	oh = (struct t_opthdr *)opt_req->opt.buf;
	oh->level = XTI_GENERIC;
	oh->name = XTI_SNDBUF;
	oh->len = sizeof(struct t_opthdr) + sizeof(t_scalar_t);
	oh->status = 0;
	*(t_scalar_t *)T_OPT_DATA(oh) = 65536;
	opt_req->opt.len = oh->len;
	opt_req->flags = T_NEGOTIATE;
	if (t_optmgmt(fd, opt_req, opt_ret) < 0) {
		t_error("t_optmgmt");
		return 1;
	}
	memcpy(snd->addr.buf, &sin, sizeof sin);
	snd->addr.len = sizeof sin;
	strcpy(snd->udata.buf, "netperf");
	snd->udata.len = 7;
	if (t_sndudata(fd, snd) < 0) {
		t_error("t_sndudata");
		return 1;
	}
	ev = t_look(fd);
	if (t_rcvudata(fd, rcv, &flags) < 0) {
		if (t_errno == TLOOK)
			printf("look %d\n", t_look(fd));
		t_error("t_rcvudata");
		return 1;
	}
	printf("received %u bytes from %u-byte address, flags %d, look %d\n",
	       rcv->udata.len, rcv->addr.len, flags, ev);
	t_free(bind_req, T_BIND);
	t_free(bind_ret, T_BIND);
	t_free(opt_req, T_OPTMGMT);
	t_free(opt_ret, T_OPTMGMT);
	t_free(snd, T_UNITDATA);
	t_free(rcv, T_UNITDATA);
	if (t_close(fd) < 0) {
		t_error("t_close");
		return 1;
	}
	return 0;
}
