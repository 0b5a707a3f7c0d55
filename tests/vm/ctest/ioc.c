/*
 * strc cases: the I_* ioctls on echo, nuls and sloop Streams: I_PUSH/I_POP/I_LOOK/I_FIND/
 * I_LIST, I_FLUSH/I_FLUSHBAND, I_NREAD, I_CANPUT, I_CKBAND, I_GETBAND, I_ATMARK, I_PEEK,
 * I_STR (acknowledged by sloop, NAKed by echo and nuls), poll, and their error cases.
 */
#include <poll.h>

#include "strc.h"

static int look_is(int fd, const char *want)
{
	char name[FMNAMESZ + 1];

	memset(name, 'x', sizeof(name));
	OK(ioctl(fd, I_LOOK, name));
	CHECK(strcmp(name, want) == 0, "I_LOOK gave %.9s, expected %s", name, want);
	return 0;
}

static int t_push_pop_list(void)
{
	struct str_mlist ml[8];
	struct str_list l = { 8, ml };
	char b[16];
	int fd = open_dev(DEV_ECHO, 0);

	if (fd < 0)
		return -1;
	FAILS(ioctl(fd, I_LOOK, b), EINVAL);
	FAILS(ioctl(fd, I_POP, 0), EINVAL);
	CHECK(OK(ioctl(fd, I_LIST, NULL)) == 1, "I_LIST(NULL) without modules: not 1 (the driver)");
	CHECK(OK(ioctl(fd, I_FIND, "nullmod")) == 0, "I_FIND nullmod before I_PUSH");
	OK(ioctl(fd, I_PUSH, "nullmod"));
	OK(ioctl(fd, I_PUSH, "pipemod"));
	if (look_is(fd, "pipemod") < 0)
		return -1;
	CHECK(OK(ioctl(fd, I_FIND, "nullmod")) == 1, "I_FIND nullmod");
	CHECK(OK(ioctl(fd, I_FIND, "pipemod")) == 1, "I_FIND pipemod");
	CHECK(OK(ioctl(fd, I_FIND, "bufmod")) == 0, "I_FIND bufmod (not pushed)");
	FAILS(ioctl(fd, I_FIND, "nosuchmd"), EINVAL);
	FAILS(ioctl(fd, I_PUSH, "nosuchmd"), EINVAL);
	FAILS(ioctl(fd, I_PUSH, "longer-than-fmnamesz"), EINVAL);
	/* I_LIST: modules top down, then the driver. */
	CHECK(OK(ioctl(fd, I_LIST, NULL)) == 3, "I_LIST(NULL) with two modules");
	CHECK(OK(ioctl(fd, I_LIST, &l)) == 3, "I_LIST entries");
	CHECK(!strcmp(ml[0].l_name, "pipemod") && !strcmp(ml[1].l_name, "nullmod") &&
		      !strcmp(ml[2].l_name, "echo"),
	      "I_LIST names %.9s %.9s %.9s", ml[0].l_name, ml[1].l_name, ml[2].l_name);
	l.sl_nmods = 1;
	CHECK(OK(ioctl(fd, I_LIST, &l)) == 1 && !strcmp(ml[0].l_name, "pipemod"), "I_LIST 1");
	l.sl_nmods = 0;
	FAILS(ioctl(fd, I_LIST, &l), EINVAL);
	/* Data goes through both modules and back. */
	OK(write(fd, "through", 7));
	CHECK(OK(read(fd, b, sizeof(b))) == 7 && !memcmp(b, "through", 7), "data through modules");
	OK(ioctl(fd, I_POP, 0));
	if (look_is(fd, "nullmod") < 0)
		return -1;
	OK(ioctl(fd, I_POP, 0));
	FAILS(ioctl(fd, I_LOOK, b), EINVAL);
	FAILS(ioctl(fd, I_POP, 0), EINVAL);
	CHECK(OK(ioctl(fd, I_LIST, NULL)) == 1, "I_LIST(NULL) after popping");
	close(fd);
	return 0;
}

static int t_flush_bands(void)
{
	struct bandinfo bi = { 2, FLUSHR };
	int fd = open_dev(DEV_ECHO, 0), band = -1, first = -1;

	if (fd < 0)
		return -1;
	OK(write(fd, "n", 1));
	OK(put(fd, NULL, "two", 2, MSG_BAND));
	OK(put(fd, NULL, "one!", 1, MSG_BAND));
	CHECK(OK(ioctl(fd, I_NREAD, &first)) == 3 && first == 3, "I_NREAD: first %d", first);
	CHECK(OK(ioctl(fd, I_CKBAND, 2)) == 1 && OK(ioctl(fd, I_CKBAND, 1)) == 1, "I_CKBAND 2/1");
	CHECK(OK(ioctl(fd, I_CKBAND, 0)) == 1, "I_CKBAND 0");
	CHECK(OK(ioctl(fd, I_CKBAND, 5)) == 0, "I_CKBAND 5");
	FAILS(ioctl(fd, I_CKBAND, 256), EINVAL);
	FAILS(ioctl(fd, I_CKBAND, -1), EINVAL);
	OK(ioctl(fd, I_GETBAND, &band));
	CHECK(band == 2, "I_GETBAND %d", band);
	/* I_FLUSHBAND flushes that band only. */
	OK(ioctl(fd, I_FLUSHBAND, &bi));
	CHECK(OK(ioctl(fd, I_CKBAND, 2)) == 0, "band 2 left after I_FLUSHBAND");
	CHECK(OK(ioctl(fd, I_NREAD, &first)) == 2 && first == 4, "after I_FLUSHBAND: %d", first);
	OK(ioctl(fd, I_GETBAND, &band));
	CHECK(band == 1, "I_GETBAND after I_FLUSHBAND %d", band);
	bi.bi_flag = 0;
	FAILS(ioctl(fd, I_FLUSHBAND, &bi), EINVAL);
	bi.bi_flag = 8;
	FAILS(ioctl(fd, I_FLUSHBAND, &bi), EINVAL);
	/* I_FLUSH FLUSHR empties the head; echo turns FLUSHW around as FLUSHR. */
	OK(ioctl(fd, I_FLUSH, FLUSHR));
	CHECK(nmsgs(fd) == 0, "data left after I_FLUSH FLUSHR");
	FAILS(ioctl(fd, I_GETBAND, &band), ENODATA);
	OK(write(fd, "w", 1));
	OK(ioctl(fd, I_FLUSH, FLUSHW));
	CHECK(nmsgs(fd) == 0, "FLUSHW not turned around by echo");
	OK(write(fd, "rw", 2));
	OK(ioctl(fd, I_FLUSH, FLUSHRW));
	CHECK(nmsgs(fd) == 0, "data left after I_FLUSH FLUSHRW");
	FAILS(ioctl(fd, I_FLUSH, 0), EINVAL);
	FAILS(ioctl(fd, I_FLUSH, FLUSHBAND), EINVAL);
	FAILS(ioctl(fd, I_FLUSH, 0x10), EINVAL);
	close(fd);
	return 0;
}

static int t_canput_atmark(void)
{
	struct pollfd p;
	int fd = open_dev(DEV_ECHO, 0);
	long total;

	if (fd < 0)
		return -1;
	CHECK(OK(ioctl(fd, I_CANPUT, 0)) == 1, "I_CANPUT 0 on an empty Stream");
	CHECK(OK(ioctl(fd, I_CANPUT, ANYBAND)) == 1, "I_CANPUT ANYBAND");
	CHECK(OK(ioctl(fd, I_CANPUT, 255)) == 1, "I_CANPUT 255");
	FAILS(ioctl(fd, I_CANPUT, 256), EINVAL);
	FAILS(ioctl(fd, I_CANPUT, -2), EINVAL);
	CHECK(OK(ioctl(fd, I_ATMARK, ANYMARK)) == 0, "I_ATMARK ANYMARK on empty");
	CHECK(OK(ioctl(fd, I_ATMARK, LASTMARK)) == 0, "I_ATMARK LASTMARK on empty");
	FAILS(ioctl(fd, I_ATMARK, ANYMARK | LASTMARK), EINVAL);
	FAILS(ioctl(fd, I_ATMARK, 0), EINVAL);
	OK(write(fd, "unmarked", 8));
	CHECK(OK(ioctl(fd, I_ATMARK, ANYMARK)) == 0, "written data is not marked");
	OK(ioctl(fd, I_FLUSH, FLUSHRW));
	/* Flow control: band 0 is full, I_CANPUT says so, POLLOUT goes. */
	total = fill(fd, 1000);
	if (total < 0)
		return -1;
	CHECK(total > 0, "echo flow controlled the first write");
	CHECK(OK(ioctl(fd, I_CANPUT, 0)) == 0, "I_CANPUT 0 while flow controlled");
	p = (struct pollfd){ fd, POLLOUT, 0 };
	CHECK(poll(&p, 1, 0) == 0, "POLLOUT while flow controlled (%#x)", p.revents);
	if (drain(fd, total, 1000) < 0)
		return -1;
	CHECK(OK(ioctl(fd, I_CANPUT, 0)) == 1, "I_CANPUT 0 after draining");
	close(fd);
	return 0;
}

static int t_peek(void)
{
	char cb[16], db[16];
	struct strpeek pk = { { sizeof(cb), 0, cb }, { sizeof(db), 0, db }, 0 };
	int fd = open_dev(DEV_ECHO, 0), first = 0;

	if (fd < 0)
		return -1;
	CHECK(OK(ioctl(fd, I_PEEK, &pk)) == 0, "I_PEEK on an empty Stream found something");
	OK(put(fd, "pc", "peek data", 0, 0));
	CHECK(OK(ioctl(fd, I_PEEK, &pk)) == 1, "I_PEEK found nothing");
	CHECK(pk.ctlbuf.len == 2 && !memcmp(cb, "pc", 2) && pk.databuf.len == 9 &&
		      !memcmp(db, "peek data", 9) && pk.flags == 0,
	      "I_PEEK parts %d %d flags %ld", pk.ctlbuf.len, pk.databuf.len, pk.flags);
	CHECK(OK(ioctl(fd, I_NREAD, &first)) == 1 && first == 9, "I_PEEK took the message");
	pk.flags = RS_HIPRI;
	CHECK(OK(ioctl(fd, I_PEEK, &pk)) == 0, "I_PEEK RS_HIPRI found a normal message");
	OK(put(fd, "HP", NULL, 0, MSG_HIPRI));
	pk.flags = 0;
	CHECK(OK(ioctl(fd, I_PEEK, &pk)) == 1, "I_PEEK: nothing with hipri queued");
	CHECK(pk.flags == RS_HIPRI && pk.ctlbuf.len == 2 && !memcmp(cb, "HP", 2) &&
		      pk.databuf.len == -1,
	      "I_PEEK hipri: flags %ld lens %d %d", pk.flags, pk.ctlbuf.len, pk.databuf.len);
	pk.flags = 5;
	FAILS(ioctl(fd, I_PEEK, &pk), EINVAL);
	pk.flags = 0;
	pk.ctlbuf.buf = bad_addr;
	FAILS(ioctl(fd, I_PEEK, &pk), EFAULT);
	CHECK(nmsgs(fd) == 2, "messages after I_PEEK: %d", nmsgs(fd));
	close(fd);
	return 0;
}

static int istr(int fd, int cmd, char *buf, int len, int *outlen)
{
	struct strioctl ic = { cmd, -1, len, buf };
	int r = ioctl(fd, I_STR, &ic);

	if (outlen)
		*outlen = ic.ic_len;
	return r;
}

static int t_istr(void)
{
	char buf[32] = "hello, driver";
	int s = open_dev(DEV_SLOOP, 0), ec, nu, len = 0;

	if (s < 0)
		return -1;
	CHECK(OK(istr(s, SLOOP_IOC_ECHO, buf, 13, &len)) == 0 && len == 13, "sloop ack: %d", len);
	CHECK(!memcmp(buf, "hello, driver", 13), "sloop ack data");
	FAILS(istr(s, 0x1234, buf, 4, NULL), EINVAL);
	FAILS(istr(s, SLOOP_IOC_ECHO, buf, -1, NULL), EINVAL);
	FAILS(istr(s, SLOOP_IOC_ECHO, bad_addr, 8, NULL), EFAULT);
	FAILS(istr(s, I_LINK, buf, 4, NULL), EINVAL);
	ec = open_dev(DEV_ECHO, 0);
	nu = open_dev(DEV_NULS, 0);
	if (ec < 0 || nu < 0)
		return -1;
	FAILS(istr(ec, SLOOP_IOC_ECHO, buf, 4, NULL), EINVAL);
	FAILS(istr(nu, SLOOP_IOC_ECHO, buf, 4, NULL), EINVAL);
	FAILS(istr(nu, 1, NULL, 0, NULL), EINVAL);
	/* Transparent ioctls are NAKed the same way. */
	FAILS(ioctl(ec, 0x7401, 0), EINVAL);
	/* The ioctl slot is free again. */
	OK(write(ec, "ok", 2));
	CHECK(OK(read(ec, buf, sizeof(buf))) == 2, "echo after NAK");
	CHECK(OK(istr(s, SLOOP_IOC_ECHO, buf, 2, &len)) == 0 && len == 2, "sloop again");
	close(s);
	close(ec);
	close(nu);
	return 0;
}

static int t_nuls(void)
{
	char buf[4096];
	struct pollfd p;
	int fd = open_dev(DEV_NULS, O_NONBLOCK);

	if (fd < 0)
		return -1;
	CHECK(isastream(fd) == 1, "isastream(nuls) != 1");
	pattern(buf, sizeof(buf), 3);
	for (int i = 0; i < 256; i++)
		CHECK(OK(write(fd, buf, sizeof(buf))) == sizeof(buf), "write %d to nuls", i);
	OK(put(fd, "proto", "data", 0, 0));
	OK(put(fd, "pc", NULL, 0, MSG_HIPRI));
	OK(put(fd, NULL, "band", 2, MSG_BAND));
	CHECK(nmsgs(fd) == 0, "something came back from nuls");
	FAILS(read(fd, buf, 8), EAGAIN);
	p = (struct pollfd){ fd, POLLIN | POLLPRI | POLLOUT, 0 };
	CHECK(poll(&p, 1, 0) == 1 && p.revents == POLLOUT, "poll on nuls: %#x", p.revents);
	CHECK(OK(ioctl(fd, I_CANPUT, ANYBAND)) == 1, "nuls not writable");
	OK(ioctl(fd, I_FLUSH, FLUSHRW));
	close(fd);
	return 0;
}

static int t_poll(void)
{
	char cb[8], db[8];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	struct pollfd p;
	int fd = open_dev(DEV_ECHO, 0), flags = 0;
	const short all = POLLIN | POLLRDNORM | POLLRDBAND | POLLPRI | POLLOUT | POLLWRBAND;

	if (fd < 0)
		return -1;
	p = (struct pollfd){ fd, all, 0 };
	CHECK(poll(&p, 1, 0) == 1 && p.revents == (POLLOUT | POLLWRBAND), "empty: %#x", p.revents);
	p = (struct pollfd){ fd, POLLIN, 0 };
	CHECK(poll(&p, 1, 100) == 0, "POLLIN on an empty Stream after 100 ms");
	OK(write(fd, "x", 1));
	p = (struct pollfd){ fd, all, 0 };
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLRDNORM)) == (POLLIN | POLLRDNORM) &&
		      !(p.revents & (POLLPRI | POLLRDBAND)),
	      "normal data: %#x", p.revents);
	OK(read(fd, cb, 1));
	OK(put(fd, NULL, "b", 1, MSG_BAND));
	p = (struct pollfd){ fd, all, 0 };
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLRDBAND) && !(p.revents & POLLPRI),
	      "band 1: %#x", p.revents);
	OK(getmsg(fd, &c, &d, &flags));
	OK(put(fd, "p", NULL, 0, MSG_HIPRI));
	p = (struct pollfd){ fd, all, 0 };
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLPRI) && !(p.revents & POLLRDNORM),
	      "high priority: %#x", p.revents);
	close(fd);
	return 0;
}

const struct tcase ioc_cases[] = {
	{ "I_PUSH nullmod+pipemod, I_LOOK, I_FIND, I_LIST, I_POP and their EINVALs",
	  t_push_pop_list },
	{ "I_NREAD, I_CKBAND, I_GETBAND, I_FLUSHBAND, I_FLUSH (ENODATA, EINVAL)", t_flush_bands },
	{ "I_CANPUT (flow control, EINVAL), I_ATMARK (EINVAL)", t_canput_atmark },
	{ "I_PEEK normal and RS_HIPRI, EINVAL, EFAULT, nothing taken", t_peek },
	{ "I_STR: sloop ACK with data, echo/nuls NAK (EINVAL), EFAULT, ic_len -1", t_istr },
	{ "nuls: a sink, nothing comes back, POLLOUT only", t_nuls },
	{ "poll: POLLOUT/POLLWRBAND, POLLIN|POLLRDNORM, POLLRDBAND, POLLPRI", t_poll },
	{ NULL, NULL },
};
