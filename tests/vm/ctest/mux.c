/*
 * strc cases for multiplexing: an echo Stream linked under the mux driver with I_LINK, data
 * through the upper Stream, the linked Stream's own descriptor refused (EINVAL), I_UNLINK
 * giving it back, and the I_LINK/I_UNLINK error cases.
 */
#include "strc.h"

static int roundtrip(int fd, const char *s)
{
	char b[64];
	int n = (int)strlen(s);

	CHECK(OK(write(fd, s, (size_t)n)) == n, "short write");
	CHECK(OK(read(fd, b, sizeof(b))) == n && !memcmp(b, s, (size_t)n), "%s: came back different",
	      s);
	return 0;
}

static int t_mux_link_unlink(void)
{
	char cb[8], db[8];
	struct strbuf c = { sizeof(cb), 0, cb }, d = { sizeof(db), 0, db };
	int u = open_dev(DEV_MUX, 0), l = open_dev(DEV_ECHO, 0), muxid, flags = 0;

	if (u < 0 || l < 0)
		return -1;
	muxid = (int)OK(ioctl(u, I_LINK, l));
	CHECK(muxid > 0, "muxid %d", muxid);
	if (roundtrip(u, "down the link and back") < 0)
		return -1;
	OK(put(u, "ctl", "dat", 0, 0));
	OK(getmsg(u, &c, &d, &flags));
	CHECK(c.len == 3 && !memcmp(cb, "ctl", 3) && d.len == 3, "M_PROTO through the mux");
	/* The linked Stream's own descriptor is refused while linked. */
	FAILS(read(l, db, sizeof(db)), EINVAL);
	FAILS(write(l, "x", 1), EINVAL);
	FAILS(ioctl(l, I_PUSH, "nullmod"), EINVAL);
	FAILS(ioctl(u, I_LINK, l), EINVAL);
	FAILS(ioctl(u, I_UNLINK, muxid + 50), EINVAL);
	CHECK(OK(ioctl(u, I_UNLINK, muxid)) == 0, "I_UNLINK != 0");
	if (roundtrip(l, "mine again") < 0)
		return -1;
	close(u);
	close(l);
	return 0;
}

static int t_mux_errors(void)
{
	int u = open_dev(DEV_MUX, 0), u2 = open_dev(DEV_MUX, 0), e1 = open_dev(DEV_ECHO, 0);
	int e2 = open_dev(DEV_ECHO, 0), nul = open("/dev/null", O_RDWR), fds[2];

	if (u < 0 || u2 < 0 || e1 < 0 || e2 < 0)
		return -1;
	CHECK(nul >= 0, "/dev/null: %s", strerror(errno));
	OK(s_pipe(fds));
	FAILS(ioctl(e1, I_LINK, e2), EINVAL);	/* echo is no multiplexor */
	FAILS(ioctl(u, I_LINK, u), EINVAL);
	FAILS(ioctl(u, I_LINK, u2), EINVAL);
	FAILS(ioctl(u, I_LINK, fds[0]), EINVAL);
	FAILS(ioctl(u, I_LINK, nul), EINVAL);
	FAILS(ioctl(u, I_LINK, 9999), EBADF);
	FAILS(ioctl(u, I_PUNLINK, 12345), EINVAL);
	CHECK(OK(ioctl(u, I_UNLINK, MUXID_ALL)) == 0, "I_UNLINK MUXID_ALL without links");
	/* A refused link leaves the Stream with its file. */
	if (roundtrip(e2, "still mine") < 0)
		return -1;
	close(fds[0]);
	close(fds[1]);
	close(nul);
	close(e2);
	close(e1);
	close(u2);
	close(u);
	return 0;
}

const struct tcase mux_cases[] = {
	{ "mux: I_LINK echo, data and M_PROTO through, lower fd EINVAL, I_UNLINK gives it back",
	  t_mux_link_unlink },
	{ "mux: I_LINK/I_UNLINK error cases (EINVAL, EBADF)", t_mux_errors },
	{ NULL, NULL },
};
