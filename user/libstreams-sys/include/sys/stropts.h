/*
 * <sys/stropts.h> for rstreams (SVR4 STREAMS in Rust, after Linux Fast-STREAMS).
 *
 * Values and layouts are the SVR4/LfS ones, so existing STREAMS programs compile unchanged.
 * They mirror rust/streams_core/src/sth/consts.rs (what the kernel Stream head implements)
 * and user/libstreams-sys/src/consts.rs; tests check all three agree. The LfS system-call
 * emulation ioctls (I_GETPMSG, I_PUTPMSG, I_PIPE, I_FATTACH, I_FDETACH) carry LfS's numbers.
 * See docs/abi.md for the kernel ABI behind the library calls.
 *
 * Link with -lstreams (libstreams.so or libstreams.a).
 */
#ifndef _RSTREAMS_SYS_STROPTS_H
#define _RSTREAMS_SYS_STROPTS_H 1

#include <sys/types.h>
/* XSI STREAMS: <stropts.h> declares ioctl() (glibc's, with an unsigned long request). */
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define __SID		('S' << 8)

#define I_NREAD		(__SID | 1)
#define I_PUSH		(__SID | 2)
#define I_POP		(__SID | 3)
#define I_LOOK		(__SID | 4)
#define I_FLUSH		(__SID | 5)
#define I_SRDOPT	(__SID | 6)
#define I_GRDOPT	(__SID | 7)
#define I_STR		(__SID | 8)
#define I_SETSIG	(__SID | 9)
#define I_GETSIG	(__SID | 10)
#define I_FIND		(__SID | 11)
#define I_LINK		(__SID | 12)
#define I_UNLINK	(__SID | 13)
#define I_RECVFD	(__SID | 14)
#define I_PEEK		(__SID | 15)
#define I_FDINSERT	(__SID | 16)
#define I_SENDFD	(__SID | 17)
#define I_SWROPT	(__SID | 19)
#define I_GWROPT	(__SID | 20)
#define I_LIST		(__SID | 21)
#define I_PLINK		(__SID | 22)
#define I_PUNLINK	(__SID | 23)
#define I_FLUSHBAND	(__SID | 28)
#define I_CKBAND	(__SID | 29)
#define I_GETBAND	(__SID | 30)
#define I_ATMARK	(__SID | 31)
#define I_SETCLTIME	(__SID | 32)
#define I_GETCLTIME	(__SID | 33)
#define I_CANPUT	(__SID | 34)

/* Linux Fast-STREAMS system-call emulation (same numbers as LfS). */
#define I_GETPMSG	(__SID | 42)	/* arg: struct strpmsg *; getmsg()/getpmsg() */
#define I_PUTPMSG	(__SID | 43)	/* arg: struct strpmsg *; putmsg()/putpmsg() */
#define I_PIPE		(__SID | 44)	/* arg: int fd; weld this Stream and fd into a pipe */
#define I_FIFO_PIPE	(('R' << 8) | 1)	/* rstreams: struct { int fds[2]; int flags; }: a STREAMS pipe of FIFO files */
#define I_FATTACH	(__SID | 52)	/* arg: const char *path (not implemented: ENOSYS) */
#define I_FDETACH	(__SID | 53)	/* arg: const char *path (not implemented: ENOSYS) */

/* Stream head read queue watermarks (HP-UX numbers, as listed by LfS); arg: int by value. */
#define I_SET_HIWAT	(__SID | 91)
#define I_SET_LOWAT	(__SID | 92)
#define I_GET_HIWAT	(__SID | 93)	/* rstreams: int *, the head read queue's high water mark */

#define INFTIM		(-1)
#define FMNAMESZ	8
#define MUXID_ALL	(-1)

/* I_FLUSH, I_FLUSHBAND */
#define FLUSHR		0x01
#define FLUSHW		0x02
#define FLUSHRW		0x03
#define FLUSHBAND	0x04

/* I_SETSIG, I_GETSIG */
#define S_INPUT		0x0001
#define S_HIPRI		0x0002
#define S_OUTPUT	0x0004
#define S_MSG		0x0008
#define S_ERROR		0x0010
#define S_HANGUP	0x0020
#define S_RDNORM	0x0040
#define S_WRNORM	S_OUTPUT
#define S_RDBAND	0x0080
#define S_WRBAND	0x0100
#define S_BANDURG	0x0200
#define S_ALL		0x03ff

/* getmsg() */
#define RS_HIPRI	0x01

/* I_SRDOPT, I_GRDOPT */
#define RNORM		0x0000
#define RMSGD		0x0001
#define RMSGN		0x0002
#define RMODEMASK	0x0003
#define RPROTDAT	0x0004
#define RPROTDIS	0x0008
#define RPROTNORM	0x0010
#define RPROTMASK	0x001c
#define RFILL		0x0020

/* I_SWROPT, I_GWROPT */
#define SNDZERO		0x001
#define SNDPIPE		0x002
#define SNDHOLD		0x004
#define SNDMREAD	0x010

/* I_ATMARK */
#define ANYMARK		0x01
#define LASTMARK	0x02

/* I_CANPUT */
#define ANYBAND		(-1)

/* getpmsg(), putpmsg() */
#define MSG_HIPRI	0x01
#define MSG_ANY		0x02
#define MSG_BAND	0x04

/* getmsg()/getpmsg() return values */
#define MORECTL		1
#define MOREDATA	2

struct strbuf {
	int maxlen;		/* no. of bytes in buffer */
	int len;		/* no. of bytes returned (-1: no part) */
	char *buf;		/* pointer to data */
};

struct strpeek {
	struct strbuf ctlbuf;
	struct strbuf databuf;
	long flags;		/* in: RS_HIPRI or 0; out: RS_HIPRI or 0 */
};

struct strfdinsert {
	struct strbuf ctlbuf;
	struct strbuf databuf;
	long flags;
	int fildes;
	int offset;
};

struct strioctl {
	int ic_cmd;		/* command */
	int ic_timout;		/* timeout in seconds (-1: infinite, 0: default) */
	int ic_len;		/* length of data */
	char *ic_dp;		/* pointer to data */
};

struct strrecvfd {
	int fd;
	uid_t uid;
	gid_t gid;
	char fill[8];
};

struct str_mlist {
	char l_name[FMNAMESZ + 1];
};

struct str_list {
	int sl_nmods;
	struct str_mlist *sl_modlist;
};

struct bandinfo {
	unsigned char bi_pri;
	int bi_flag;
};

/* Argument of I_GETPMSG and I_PUTPMSG (LfS, Mac OT). */
struct strpmsg {
	struct strbuf ctlbuf;
	struct strbuf databuf;
	int band;
	int flags;
};

extern int putmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int flags);
extern int putpmsg(int fd, const struct strbuf *ctlptr, const struct strbuf *dataptr, int band,
		   int flags);
extern int getmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *flagsp);
extern int getpmsg(int fd, struct strbuf *ctlptr, struct strbuf *dataptr, int *bandp,
		   int *flagsp);
extern int isastream(int fd);
extern int fattach(int fd, const char *path);
extern int fdetach(const char *path);
/* A STREAMS pipe: two ends of /dev/streams/clone/pipe welded with I_PIPE. */
extern int s_pipe(int fds[2]);
/* s_pipe with O_CLOEXEC and/or O_NONBLOCK on both ends (other flags: EINVAL). */
extern int s_pipe2(int fds[2], int flags);

#ifdef __cplusplus
}
#endif

#endif /* _RSTREAMS_SYS_STROPTS_H */
