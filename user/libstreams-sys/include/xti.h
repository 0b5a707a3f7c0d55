/*
 * <xti.h> for rstreams: the X/Open Transport Interface (XNS 5), implemented by libxnet
 * (libxnet.so, libxnet.a: link with -lxnet) over TPI transport providers such as
 * /dev/streams/clone/udp.
 *
 * Names, values and structure layouts follow Linux Fast-STREAMS (LfS), so programs written
 * for LfS build unchanged. One difference: struct t_info always has `flags` and `tidu`
 * (LfS hides them without _XOPEN_SOURCE), so the library never writes past a caller's struct.
 * t_errno is per thread.
 */
#ifndef _RSTREAMS_XTI_H
#define _RSTREAMS_XTI_H

#include <sys/tpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XTI_GENERIC level options. */
#define XTI_GENERIC	0xffff
#define XTI_DEBUG	0x0001
#define XTI_LINGER	0x0080
#define XTI_SNDBUF	0x1001
#define XTI_RCVBUF	0x1002
#define XTI_SNDLOWAT	0x1003
#define XTI_RCVLOWAT	0x1004
#define XTI_REUSEADDR	0x2001
#define XTI_DONTROUTE	0x2002
#define XTI_BROADCAST	0x2003
#define XTI_KEEPALIVE	0x2004
#define XTI_PRIORITY	0x2005

/* Value of XTI_LINGER. */
struct t_linger {
	t_scalar_t l_onoff;
	t_scalar_t l_linger;
};

/* Round a pointer up to the alignment of option headers. */
#define T_ALIGN(p)	(((uintptr_t)(p) + sizeof(t_uscalar_t) - 1) & ~(sizeof(t_uscalar_t) - 1))

/* The calling thread's XTI error. */
extern int *_t_errno(void);
#define t_errno (*(_t_errno()))

#define T_IOV_MAX	16

struct t_iovec {
	void *iov_base;
	size_t iov_len;
};

struct netbuf {
	unsigned int maxlen;	/* size of buf */
	unsigned int len;	/* bytes used in buf */
	char *buf;
};

struct t_info {
	t_scalar_t addr;	/* largest address, bytes */
	t_scalar_t options;	/* largest option buffer, bytes */
	t_scalar_t tsdu;	/* largest TSDU */
	t_scalar_t etsdu;	/* largest expedited TSDU */
	t_scalar_t connect;	/* data on connection establishment */
	t_scalar_t discon;	/* data on disconnection */
	t_scalar_t servtype;	/* T_COTS, T_COTS_ORD or T_CLTS */
	t_scalar_t flags;	/* T_SENDZERO, T_ORDRELDATA */
	t_scalar_t tidu;	/* largest interface data unit */
};

struct t_bind {
	struct netbuf addr;
	unsigned int qlen;
};

struct t_optmgmt {
	struct netbuf opt;
	t_scalar_t flags;
};

struct t_discon {
	struct netbuf udata;
	int reason;
	int sequence;
};

struct t_call {
	struct netbuf addr;
	struct netbuf opt;
	struct netbuf udata;
	int sequence;
};

struct t_unitdata {
	struct netbuf addr;
	struct netbuf opt;
	struct netbuf udata;
};

struct t_uderr {
	struct netbuf addr;
	struct netbuf opt;
	t_scalar_t error;
};

struct t_leaf_status {
	int leafid;
	int status;
	int reason;
};

#define T_LEAF_NOCHANGE		0
#define T_LEAF_CONNECTED	1
#define T_LEAF_DISCONNECTED	2

/* t_look events. */
#define T_LISTEN	0x0001
#define T_CONNECT	0x0002
#define T_DATA		0x0004
#define T_EXDATA	0x0008
#define T_DISCONNECT	0x0010
#define T_UDERR		0x0040
#define T_ORDREL	0x0080
#define T_GODATA	0x0100
#define T_GOEXDATA	0x0200
#define T_LEAFCHANGE	0x0400
#define T_EVENTS	0x0800
#define T_ERROR		(~0)

/* t_alloc structure types. */
#define T_BIND		1
#define T_OPTMGMT	2
#define T_CALL		3
#define T_DIS		4
#define T_UNITDATA	5
#define T_UDERROR	6
#define T_INFO		7
/* The same, by their TLI names. */
#define T_BIND_STR	T_BIND
#define T_OPTMGMT_STR	T_OPTMGMT
#define T_CALL_STR	T_CALL
#define T_DIS_STR	T_DIS
#define T_UNITDATA_STR	T_UNITDATA
#define T_UDERROR_STR	T_UDERROR
#define T_INFO_STR	T_INFO

/* t_alloc fields. */
#define T_ADDR		0x0001
#define T_OPT		0x0002
#define T_UDATA		0x0004
#define T_ALL		0xffff

/* t_getstate states. */
#define T_UNINIT	0
#define T_UNBND		1
#define T_IDLE		2
#define T_OUTCON	3
#define T_INCON		4
#define T_DATAXFER	5
#define T_OUTREL	6
#define T_INREL		7

int t_accept(int fd, int resfd, const struct t_call *call);
int t_addleaf(int fd, int leafid, struct netbuf *addr);
char *t_alloc(int fd, int struct_type, int fields);
int t_bind(int fd, const struct t_bind *req, struct t_bind *ret);
int t_close(int fd);
int t_connect(int fd, const struct t_call *sndcall, struct t_call *rcvcall);
int t_error(const char *errmsg);
int t_free(void *ptr, int struct_type);
int t_getinfo(int fd, struct t_info *info);
int t_getprotaddr(int fd, struct t_bind *boundaddr, struct t_bind *peeraddr);
int t_getstate(int fd);
int t_listen(int fd, struct t_call *call);
int t_look(int fd);
int t_open(const char *name, int oflag, struct t_info *info);
int t_optmgmt(int fd, const struct t_optmgmt *req, struct t_optmgmt *ret);
int t_rcv(int fd, char *buf, unsigned int nbytes, int *flags);
int t_rcvconnect(int fd, struct t_call *call);
int t_rcvdis(int fd, struct t_discon *discon);
int t_rcvleafchange(int fd, struct t_leaf_status *change);
int t_rcvrel(int fd);
int t_rcvreldata(int fd, struct t_discon *discon);
int t_rcvudata(int fd, struct t_unitdata *unitdata, int *flags);
int t_rcvuderr(int fd, struct t_uderr *uderr);
int t_rcvv(int fd, struct t_iovec *iov, unsigned int iovcount, int *flags);
int t_rcvvudata(int fd, struct t_unitdata *unitdata, struct t_iovec *iov,
		unsigned int iovcount, int *flags);
int t_removeleaf(int fd, int leafid, int reason);
int t_snd(int fd, char *buf, unsigned int nbytes, int flags);
int t_snddis(int fd, const struct t_call *call);
int t_sndrel(int fd);
int t_sndreldata(int fd, struct t_discon *discon);
int t_sndudata(int fd, const struct t_unitdata *unitdata);
int t_sndv(int fd, const struct t_iovec *iov, unsigned int iovcount, int flags);
int t_sndvudata(int fd, struct t_unitdata *unitdata, struct t_iovec *iov,
		unsigned int iovcount);
const char *t_strerror(int errnum);
int t_sync(int fd);
int t_sysconf(int name);
int t_unbind(int fd);

#ifdef __cplusplus
}
#endif

#include <xti_inet.h>

#endif /* _RSTREAMS_XTI_H */
