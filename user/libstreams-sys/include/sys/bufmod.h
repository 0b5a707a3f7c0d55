/*
 * <sys/bufmod.h> for rstreams: the bufmod(7M) STREAMS buffering module (I_PUSH "bufmod").
 *
 * Values and the sb_hdr layout are the Solaris/LfS ones (LP64: struct timeval32 timestamp,
 * 24-byte header). They mirror rust/streams_core/src/mods/bufmod/mod.rs (the kernel module)
 * and user/libstreams-sys/src/bufmod.rs; tests/c_bufmod.rs checks all three agree.
 *
 * rstreams differences: sbh_timestamp is the kernel's monotonic clock (time since boot), not
 * the time of day; the read timeout is checked when data arrives (there is no timer), so use
 * I_FLUSH FLUSHW, SBIOCSTIME 0 or a chunk size to bound the wait for a partial chunk.
 * Integer arguments of I_STR may be 4 (uint) or 8 (ulong) bytes; SBIOCSTIME/SBIOCGTIME take
 * a struct timeval (16 bytes) or struct timeval32 (8 bytes), chosen by ic_len.
 */
#ifndef _RSTREAMS_SYS_BUFMOD_H
#define _RSTREAMS_SYS_BUFMOD_H 1

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBIOC		('B' << 8)
#define SBIOCSTIME	(SBIOC | 1)	/* set timeout (struct timeval) */
#define SBIOCGTIME	(SBIOC | 2)	/* get timeout (ERANGE when cleared) */
#define SBIOCCTIME	(SBIOC | 3)	/* clear timeout */
#define SBIOCSCHUNK	(SBIOC | 4)	/* set chunk size */
#define SBIOCGCHUNK	(SBIOC | 5)	/* get chunk size */
#define SBIOCSSNAP	(SBIOC | 6)	/* set snapshot length (0: no truncation) */
#define SBIOCGSNAP	(SBIOC | 7)	/* get snapshot length */
#define SBIOCSFLAGS	(SBIOC | 8)	/* set SB_* flags */
#define SBIOCGFLAGS	(SBIOC | 9)	/* get SB_* flags */

#define SB_DFLT_CHUNK	8192		/* default chunk size */

#define SB_SEND_ON_WRITE	0x01	/* send the chunk up on any write-side message */
#define SB_NO_HEADER		0x02	/* no sb_hdr, no padding */
#define SB_NO_PROTO_CVT		0x04	/* do not treat M_PROTO as data */
#define SB_DEFER_CHUNK		0x08	/* first message of a timeout window goes up at once */
#define SB_NO_DROPS		0x10	/* queue instead of dropping under flow control */

#ifndef _RSTREAMS_TIMEVAL32
#define _RSTREAMS_TIMEVAL32 1
struct timeval32 {
	int32_t tv_sec;
	int32_t tv_usec;
};
#endif

/* Each record of a chunk: this header, sbh_msglen data bytes, padding to 8 bytes. */
struct sb_hdr {
	uint32_t sbh_origlen;		/* length before truncation */
	uint32_t sbh_msglen;		/* data bytes in this record */
	uint32_t sbh_totlen;		/* header + data + padding: offset of the next record */
	uint32_t sbh_drops;		/* messages this bufmod dropped so far */
	struct timeval32 sbh_timestamp;	/* arrival time (monotonic clock) */
};

#ifdef __cplusplus
}
#endif

#endif /* _RSTREAMS_SYS_BUFMOD_H */
