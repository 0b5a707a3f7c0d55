/*
 * strc cases: putmsg/getmsg/putpmsg/getpmsg round trips with bands and MSG_HIPRI, partial
 * retrieval (MORECTL/MOREDATA), read modes (I_SRDOPT), zero-length messages, and the error
 * cases: EINVAL for bad flags, EFAULT for bad pointers (nothing lost), ENOSTR off Streams.
 */
#include <stdlib.h>

#include "strc.h"

static int t_putmsg_getmsg(void)
{
	char cb[64], db[64];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	int fd = open_dev(DEV_ECHO, 0), flags = 0;

	if (fd < 0)
		return -1;
	CHECK(isastream(fd) == 1, "isastream(echo) != 1");
	OK(put(fd, "CTRL", "some data", 0, 0));
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == 0, "getmsg: parts left");
	CHECK(c.len == 4 && memcmp(cb, "CTRL", 4) == 0, "control part: len %d", c.len);
	CHECK(d.len == 9 && memcmp(db, "some data", 9) == 0, "data part: len %d", d.len);
	CHECK(flags == 0, "flags %d", flags);
	/* Data only: no control part (len -1); control only: no data part. */
	OK(putmsg(fd, NULL, &(struct strbuf){ 0, 2, "xy" }, 0));
	OK(getmsg(fd, &c, &d, &flags));
	CHECK(c.len == -1 && d.len == 2 && memcmp(db, "xy", 2) == 0, "data only: %d %d", c.len,
	      d.len);
	OK(putmsg(fd, &(struct strbuf){ 0, 3, "ctl" }, NULL, 0));
	OK(getmsg(fd, &c, &d, &flags));
	CHECK(c.len == 3 && d.len == -1, "control only: %d %d", c.len, d.len);
	/* Neither part: nothing is sent. A zero-length data part is a zero-length message. */
	OK(putmsg(fd, NULL, NULL, 0));
	CHECK(nmsgs(fd) == 0, "putmsg without parts sent something");
	OK(putmsg(fd, NULL, &(struct strbuf){ 0, 0, db }, 0));
	CHECK(nmsgs(fd) == 1, "zero-length data part: %d messages", nmsgs(fd));
	OK(getmsg(fd, &c, &d, &flags));
	CHECK(c.len == -1 && d.len == 0, "zero-length message: %d %d", c.len, d.len);
	/* NULL buffers in getmsg: "do not retrieve"; the control part stays (MORECTL). */
	OK(put(fd, "XY", "Z", 0, 0));
	CHECK(OK(getmsg(fd, NULL, &d, &flags)) == MORECTL, "getmsg(NULL ctl) != MORECTL");
	CHECK(d.len == 1 && db[0] == 'Z', "data with ctl not retrieved: %d", d.len);
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == 0, "rest of the message");
	CHECK(c.len == 2 && memcmp(cb, "XY", 2) == 0 && d.len == -1, "rest: %d %d", c.len, d.len);
	close(fd);
	return 0;
}

static int t_bands_hipri(void)
{
	char cb[64], db[64];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	int fd = open_dev(DEV_ECHO, 0), band, flags, first = 0;

	if (fd < 0)
		return -1;
	/* Queued in priority order: high priority first, then bands 3, 1, 0. */
	OK(put(fd, NULL, "b0", 0, MSG_BAND));
	OK(put(fd, "c3", "band three", 3, MSG_BAND));
	OK(put(fd, NULL, "b1", 1, MSG_BAND));
	OK(put(fd, "HI", "urgent", 0, MSG_HIPRI));
	CHECK(OK(ioctl(fd, I_NREAD, &first)) == 4 && first == 6, "I_NREAD: first %d", first);
	band = 0;
	flags = MSG_ANY;
	OK(getpmsg(fd, &c, &d, &band, &flags));
	CHECK(flags == MSG_HIPRI && band == 0, "first: flags %d band %d", flags, band);
	CHECK(c.len == 2 && memcmp(cb, "HI", 2) == 0 && d.len == 6, "hipri parts %d %d", c.len,
	      d.len);
	band = 2;
	flags = MSG_BAND;
	OK(getpmsg(fd, &c, &d, &band, &flags));
	CHECK(flags == MSG_BAND && band == 3 && d.len == 10, "band >= 2: flags %d band %d", flags,
	      band);
	OK(set_nonblock(fd, 1));
	band = 2;
	flags = MSG_BAND;
	FAILS(getpmsg(fd, &c, &d, &band, &flags), EAGAIN);
	band = 0;
	flags = MSG_HIPRI;
	FAILS(getpmsg(fd, &c, &d, &band, &flags), EAGAIN);
	flags = RS_HIPRI;
	FAILS(getmsg(fd, &c, &d, &flags), EAGAIN);
	flags = 0;
	OK(getmsg(fd, &c, &d, &flags));
	CHECK(flags == 0 && d.len == 2 && memcmp(db, "b1", 2) == 0, "getmsg: band 1 next");
	band = 0;
	flags = MSG_ANY;
	OK(getpmsg(fd, &c, &d, &band, &flags));
	CHECK(flags == MSG_BAND && band == 0 && memcmp(db, "b0", 2) == 0, "band 0 last");
	/* A high-priority message read in part stays high priority. */
	OK(put(fd, "HIGHPRIO", NULL, 0, MSG_HIPRI));
	c.maxlen = 4;
	flags = RS_HIPRI;
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == MORECTL, "partial hipri: not MORECTL");
	CHECK(flags == RS_HIPRI && c.len == 4 && memcmp(cb, "HIGH", 4) == 0, "partial hipri");
	c.maxlen = sizeof(cb);
	flags = RS_HIPRI;
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == 0, "rest of hipri");
	CHECK(flags == RS_HIPRI && c.len == 4 && memcmp(cb, "PRIO", 4) == 0, "hipri rest");
	close(fd);
	return 0;
}

static int t_bad_flags(void)
{
	char cb[8], db[8];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	int fd = open_dev(DEV_ECHO, O_NONBLOCK), band, flags;

	if (fd < 0)
		return -1;
	FAILS(put(fd, "c", "d", 1, MSG_HIPRI), EINVAL);	/* hipri has no band */
	FAILS(put(fd, NULL, "d", 0, MSG_HIPRI), EINVAL);	/* hipri needs a control part */
	FAILS(put(fd, "c", "d", 256, MSG_BAND), EINVAL);
	FAILS(put(fd, "c", "d", -1, MSG_BAND), EINVAL);
	FAILS(put(fd, "c", "d", 0, MSG_HIPRI | MSG_BAND), EINVAL);
	FAILS(put(fd, "c", "d", 0, 8), EINVAL);
	FAILS(putmsg(fd, &c, &d, MSG_BAND), EINVAL);	/* putmsg: 0 or RS_HIPRI */
	CHECK(nmsgs(fd) == 0, "a refused putmsg sent something");
	OK(put(fd, "c", "d", 0, 0));
	flags = 4;
	FAILS(getmsg(fd, &c, &d, &flags), EINVAL);
	FAILS(getmsg(fd, &c, &d, NULL), EINVAL);
	band = 300;
	flags = MSG_BAND;
	FAILS(getpmsg(fd, &c, &d, &band, &flags), EINVAL);
	band = 1;
	flags = MSG_HIPRI;
	FAILS(getpmsg(fd, &c, &d, &band, &flags), EINVAL);
	band = 0;
	flags = MSG_ANY | MSG_HIPRI;
	FAILS(getpmsg(fd, &c, &d, &band, &flags), EINVAL);
	CHECK(nmsgs(fd) == 1, "a refused getmsg took the message");
	close(fd);
	return 0;
}

static int t_partial(void)
{
	char cb[4], db[4], big[64];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	struct strbuf bc = { sizeof(big), 0, big }, bd = { sizeof(big), 0, big };
	int fd = open_dev(DEV_ECHO, 0), flags = 0;

	if (fd < 0)
		return -1;
	OK(put(fd, "0123456789", "abcdefghij", 0, 0));
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == (MORECTL | MOREDATA), "not MORECTL|MOREDATA");
	CHECK(c.len == 4 && d.len == 4 && !memcmp(cb, "0123", 4) && !memcmp(db, "abcd", 4),
	      "first pieces: %d %d", c.len, d.len);
	CHECK(OK(getmsg(fd, &c, &bd, &flags)) == MORECTL, "second: not MORECTL");
	CHECK(c.len == 4 && !memcmp(cb, "4567", 4) && bd.len == 6 && !memcmp(big, "efghij", 6),
	      "second pieces: %d %d", c.len, bd.len);
	CHECK(OK(getmsg(fd, &bc, &d, &flags)) == 0, "third: parts left");
	CHECK(bc.len == 2 && !memcmp(big, "89", 2), "last control bytes: %d", bc.len);
	/* Data only: MOREDATA; maxlen 0 takes nothing of that part. */
	OK(put(fd, NULL, "0123456789", 0, 0));
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == MOREDATA, "data only: not MOREDATA");
	d.maxlen = 0;
	CHECK(OK(getmsg(fd, &c, &d, &flags)) == MOREDATA, "maxlen 0: not MOREDATA");
	CHECK(d.len == 0, "maxlen 0 gave %d bytes", d.len);
	CHECK(OK(getmsg(fd, &c, &bd, &flags)) == 0 && bd.len == 6, "data rest: %d", bd.len);
	CHECK(!memcmp(big, "456789", 6), "data rest differs");
	close(fd);
	return 0;
}

static int t_read_modes(void)
{
	char b[64];
	int fd = open_dev(DEV_ECHO, 0), opt = -1;

	if (fd < 0)
		return -1;
	OK(ioctl(fd, I_GRDOPT, &opt));
	CHECK(opt == (RNORM | RPROTNORM), "default read options %#x", opt);
	/* RNORM: a byte stream across message boundaries. */
	OK(write(fd, "abc", 3));
	OK(write(fd, "defgh", 5));
	CHECK(OK(read(fd, b, 8)) == 8 && !memcmp(b, "abcdefgh", 8), "RNORM across messages");
	/* RMSGN: one message per read, the rest stays. */
	OK(ioctl(fd, I_SRDOPT, RMSGN));
	OK(ioctl(fd, I_GRDOPT, &opt));
	CHECK(opt == (RMSGN | RPROTNORM), "I_GRDOPT after RMSGN: %#x", opt);
	OK(write(fd, "0123456789", 10));
	OK(write(fd, "next", 4));
	CHECK(OK(read(fd, b, 4)) == 4 && !memcmp(b, "0123", 4), "RMSGN first piece");
	CHECK(OK(read(fd, b, sizeof(b))) == 6 && !memcmp(b, "456789", 6), "RMSGN rest");
	CHECK(OK(read(fd, b, sizeof(b))) == 4 && !memcmp(b, "next", 4), "RMSGN next");
	/* RMSGD: one message per read, the rest is discarded. */
	OK(ioctl(fd, I_SRDOPT, RMSGD));
	OK(write(fd, "0123456789", 10));
	OK(write(fd, "next", 4));
	CHECK(OK(read(fd, b, 4)) == 4 && !memcmp(b, "0123", 4), "RMSGD first piece");
	CHECK(OK(read(fd, b, sizeof(b))) == 4 && !memcmp(b, "next", 4), "RMSGD discarded rest");
	/* RPROTNORM: a control part fails read with EBADMSG and stays queued. */
	OK(ioctl(fd, I_SRDOPT, RNORM | RPROTNORM));
	OK(put(fd, "C", "D", 0, 0));
	FAILS(read(fd, b, sizeof(b)), EBADMSG);
	CHECK(nmsgs(fd) == 1, "EBADMSG consumed the message");
	/* RPROTDAT: the control part is read as data. */
	OK(ioctl(fd, I_SRDOPT, RNORM | RPROTDAT));
	CHECK(OK(read(fd, b, sizeof(b))) == 2 && !memcmp(b, "CD", 2), "RPROTDAT");
	/* RPROTDIS: the control part is discarded; a control-only message entirely. */
	OK(ioctl(fd, I_SRDOPT, RMSGN | RPROTDIS));
	OK(put(fd, "CTL", "data", 0, 0));
	CHECK(OK(read(fd, b, sizeof(b))) == 4 && !memcmp(b, "data", 4), "RPROTDIS");
	OK(put(fd, "only", NULL, 0, 0));
	OK(write(fd, "after", 5));
	CHECK(OK(read(fd, b, sizeof(b))) == 5 && !memcmp(b, "after", 5), "RPROTDIS control only");
	/* Bad options. */
	FAILS(ioctl(fd, I_SRDOPT, RMSGD | RMSGN), EINVAL);
	FAILS(ioctl(fd, I_SRDOPT, RPROTDAT | RPROTDIS), EINVAL);
	FAILS(ioctl(fd, I_SRDOPT, 0x1000), EINVAL);
	FAILS(ioctl(fd, I_SRDOPT, -1), EINVAL);
	OK(ioctl(fd, I_GRDOPT, &opt));
	CHECK(opt == (RMSGN | RPROTDIS), "refused I_SRDOPT changed the options: %#x", opt);
	/* Zero-length messages: written only with SNDZERO, read as 0 and consumed. */
	OK(ioctl(fd, I_SRDOPT, RNORM));
	CHECK(OK(write(fd, b, 0)) == 0 && nmsgs(fd) == 0, "zero-length write without SNDZERO");
	OK(ioctl(fd, I_SWROPT, SNDZERO));
	OK(ioctl(fd, I_GWROPT, &opt));
	CHECK(opt == SNDZERO, "I_GWROPT %#x", opt);
	CHECK(OK(write(fd, b, 0)) == 0 && nmsgs(fd) == 1, "SNDZERO: no zero-length message");
	CHECK(OK(read(fd, b, sizeof(b))) == 0 && nmsgs(fd) == 0, "zero-length message not read");
	FAILS(ioctl(fd, I_SWROPT, 0x100), EINVAL);
	close(fd);
	return 0;
}

static int t_efault(void)
{
	char db[16];
	struct strbuf bad = { 16, 5, bad_addr }, d = { sizeof(db), 0, db };
	int fd = open_dev(DEV_ECHO, 0), flags = 0, band = 0;

	if (fd < 0)
		return -1;
	/* Nothing is sent from a bad buffer. */
	FAILS(putmsg(fd, NULL, &bad, 0), EFAULT);
	FAILS(putmsg(fd, &bad, NULL, 0), EFAULT);
	FAILS(write(fd, bad_addr, 10), EFAULT);
	CHECK(nmsgs(fd) == 0, "a faulting putmsg/write sent something");
	/* Nothing is consumed by a getmsg/read into a bad buffer. */
	OK(put(fd, NULL, "kept", 0, 0));
	FAILS(getmsg(fd, NULL, &bad, &flags), EFAULT);
	flags = MSG_ANY;
	FAILS(getpmsg(fd, NULL, &bad, &band, &flags), EFAULT);
	FAILS(read(fd, bad_addr, 10), EFAULT);
	CHECK(nmsgs(fd) == 1, "a faulting getmsg/read took the message");
	flags = 0;
	OK(getmsg(fd, NULL, &d, &flags));
	CHECK(d.len == 4 && !memcmp(db, "kept", 4), "message after EFAULT: %d", d.len);
	/* Bad argument pointers of the ioctls. */
	FAILS(ioctl(fd, I_NREAD, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_GRDOPT, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_PUSH, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_FIND, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_STR, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_PEEK, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_LIST, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_FLUSHBAND, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_GETPMSG, bad_addr), EFAULT);
	FAILS(ioctl(fd, I_PUTPMSG, bad_addr), EFAULT);
	close(fd);
	return 0;
}

static int t_enostr(void)
{
	char db[8];
	struct strbuf d = { sizeof(db), 1, db };
	int fd = open("/dev/null", O_RDWR), p[2], flags = 0, band = 0;

	CHECK(fd >= 0, "open /dev/null: %s", strerror(errno));
	CHECK(isastream(fd) == 0, "isastream(/dev/null) != 0");
	FAILS(putmsg(fd, NULL, &d, 0), ENOSTR);
	FAILS(putpmsg(fd, NULL, &d, 1, MSG_BAND), ENOSTR);
	FAILS(getmsg(fd, NULL, &d, &flags), ENOSTR);
	flags = MSG_ANY;
	FAILS(getpmsg(fd, NULL, &d, &band, &flags), ENOSTR);
	CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
	CHECK(isastream(p[0]) == 0, "isastream(Linux pipe) != 0");
	flags = 0;
	FAILS(getmsg(p[0], NULL, &d, &flags), ENOSTR);
	close(p[0]);
	close(p[1]);
	close(fd);
	FAILS(isastream(fd), EBADF);
	FAILS(isastream(-1), EBADF);
	FAILS(putmsg(fd, NULL, &d, 0), EBADF);
	return 0;
}

const struct tcase msg_cases[] = {
	{ "putmsg/getmsg on echo: parts, no part, zero-length, NULL buffers", t_putmsg_getmsg },
	{ "putpmsg/getpmsg: MSG_HIPRI first, bands 3/1/0, MSG_BAND minimum, EAGAIN",
	  t_bands_hipri },
	{ "putpmsg/getpmsg/putmsg/getmsg bad flags and bands -> EINVAL, nothing moved",
	  t_bad_flags },
	{ "getmsg MORECTL/MOREDATA partial retrieval, maxlen 0", t_partial },
	{ "read modes: RNORM, RMSGN, RMSGD, RPROTNORM/DAT/DIS, SNDZERO, I_SRDOPT EINVAL",
	  t_read_modes },
	{ "bad user pointers -> EFAULT, nothing sent or lost", t_efault },
	{ "not a Stream: ENOSTR (/dev/null, Linux pipe), isastream 0, EBADF", t_enostr },
	{ NULL, NULL },
};
