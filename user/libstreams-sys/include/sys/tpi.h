/*
 * <sys/tpi.h> for rstreams: what the XTI library (<xti.h>) and the Transport Provider
 * Interface (<sys/tihdr.h>) share: the scalar types, the transport error numbers, the service
 * types, provider and library flags, and the XTI option header with its walking macros.
 *
 * Names, values and layouts are those of Linux Fast-STREAMS (LfS): t_scalar_t is int32_t,
 * t_uscalar_t is uint32_t on every architecture. Checked value by value against the Rust
 * mirror (user/libstreams-sys/src/xti) by the crate's tests.
 */
#ifndef _RSTREAMS_SYS_TPI_H
#define _RSTREAMS_SYS_TPI_H

#include <stdint.h>
#include <stddef.h>

#ifndef t_scalar_t
typedef int32_t t_scalar_t;
#define t_scalar_t t_scalar_t
#endif
#ifndef t_uscalar_t
typedef uint32_t t_uscalar_t;
#define t_uscalar_t t_uscalar_t
#endif

/* Transport errors: t_errno values, and TLI_error of T_ERROR_ACK (those not marked "library"). */
#define TBADADDR	1	/* bad address format */
#define TBADOPT		2	/* bad options format */
#define TACCES		3	/* no permission */
#define TBADF		4	/* not a transport endpoint */
#define TNOADDR		5	/* could not allocate an address */
#define TOUTSTATE	6	/* call out of sequence */
#define TBADSEQ		7	/* bad sequence number */
#define TSYSERR		8	/* system error: see errno */
#define TLOOK		9	/* event pending: call t_look (library) */
#define TBADDATA	10	/* bad amount of data */
#define TBUFOVFLW	11	/* buffer too small (library) */
#define TFLOW		12	/* flow controlled (library) */
#define TNODATA		13	/* no data (library) */
#define TNODIS		14	/* no disconnect indication (library) */
#define TNOUDERR	15	/* no unitdata error indication (library) */
#define TBADFLAG	16	/* bad flags */
#define TNOREL		17	/* no orderly release indication (library) */
#define TNOTSUPPORT	18	/* not supported */
#define TSTATECHNG	19	/* state is changing (library) */
#define TNOSTRUCTYPE	20	/* unsupported structure type (library) */
#define TBADNAME	21	/* bad transport provider name (library) */
#define TBADQLEN	22	/* qlen is zero (library) */
#define TADDRBUSY	23	/* address in use */
#define TINDOUT		24	/* outstanding connection indications */
#define TPROVMISMATCH	25	/* not the same transport provider */
#define TRESQLEN	26	/* acceptor has qlen > 0 */
#define TRESADDR	27	/* acceptor bound to another address */
#define TQFULL		28	/* connection indication queue full */
#define TPROTO		29	/* protocol error */

/* Service types (t_info.servtype, T_info_ack.SERV_type). */
#define T_COTS		1	/* connection-oriented */
#define T_COTS_ORD	2	/* connection-oriented with orderly release */
#define T_CLTS		3	/* connectionless */

/* Provider flags (t_info.flags, T_info_ack.PROVIDER_flag). */
#define T_SNDZERO	0x001	/* zero-length TSDUs may be sent */
#define T_SENDZERO	0x001
#define T_ORDRELDATA	0x002	/* orderly release may carry data */
#define XPG4_1		0x100	/* provider knows T_ADDR_REQ */
#define T_XPG4_1	0x100

/* Library flags: data flags and t_optmgmt flags (also T_optmgmt_req.MGMT_flags). */
#define T_MORE		0x001
#define T_EXPEDITED	0x002
#define T_PUSH		0x004
#define T_NEGOTIATE	0x004
#define T_CHECK		0x008
#define T_DEFAULT	0x010
#define T_SUCCESS	0x020
#define T_FAILURE	0x040
#define T_CURRENT	0x080
#define T_PARTSUCCESS	0x100
#define T_READONLY	0x200
#define T_NOTSUPPORT	0x400

#define T_ALLOPT	0	/* every option of a level */

/* General values. */
#define T_UNSPEC	(~0 - 2)
#define T_INVALID	(-2)
#define T_INFINITE	(-1)
#define T_NO		0
#define T_YES		1
#define T_GARBAGE	2
#define T_UNUSED	(-1)
#define T_NULL		0
#define T_ABSREQ	0x8000

/* One option in an option buffer: the header, then len - sizeof header bytes of value. */
struct t_opthdr {
	t_uscalar_t len;	/* header + value, in bytes */
	t_uscalar_t level;
	t_uscalar_t name;
	t_uscalar_t status;	/* negotiation result (T_SUCCESS...) */
};

/* Options are aligned on sizeof(t_uscalar_t) from the start of the buffer. */
#define _T_ALIGN_SIZE		sizeof(t_uscalar_t)
#define _T_ALIGN_UP(n)		(((n) + _T_ALIGN_SIZE - 1) & ~(_T_ALIGN_SIZE - 1))

/* struct t_opthdr *T_OPT_FIRSTHDR(struct netbuf *nbp): NULL when no header fits. */
#define T_OPT_FIRSTHDR(nbp)						\
	((struct t_opthdr *)((nbp)->len >= sizeof(struct t_opthdr)	\
			     ? (void *)(nbp)->buf : NULL))

/* unsigned char *T_OPT_DATA(struct t_opthdr *tohp): the value after the header. */
#define T_OPT_DATA(tohp)	((unsigned char *)(tohp) + sizeof(struct t_opthdr))

/* struct t_opthdr *T_OPT_NEXTHDR(struct netbuf *nbp, struct t_opthdr *tohp): the header after
 * tohp, or NULL when it would not fit in nbp's len bytes (or tohp->len is too short). */
#define T_OPT_NEXTHDR(nbp, tohp)					\
	((struct t_opthdr *)(((tohp)->len >= sizeof(struct t_opthdr) &&	\
	  (size_t)((char *)(tohp) - (char *)(nbp)->buf) +		\
	  _T_ALIGN_UP((size_t)(tohp)->len) + sizeof(struct t_opthdr)	\
	  <= (size_t)(nbp)->len)					\
	 ? (void *)((char *)(tohp) + _T_ALIGN_UP((size_t)(tohp)->len)) : NULL))

#endif /* _RSTREAMS_SYS_TPI_H */
