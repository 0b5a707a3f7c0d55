/*
 * strc: SVR4 STREAMS system calls from C, in the test guest (see main.c).
 * Shared declarations of the case files: the devices, the check macros and small helpers.
 */
#ifndef STRC_H
#define STRC_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stropts.h>
#include <unistd.h>

#define DEV_ECHO	"/dev/streams/clone/echo"
#define DEV_NULS	"/dev/streams/clone/nuls"
#define DEV_SLOOP	"/dev/streams/clone/sloop"
#define DEV_MUX		"/dev/streams/clone/mux"

/* sloop's private I_STR command: acknowledged with the data echoed (rust/modules/sloop.rs). */
#define SLOOP_IOC_ECHO	(('l' << 8) | 1)

/* One case: 0 when it passed, else -1 with the reason in `why`. */
struct tcase {
	const char *name;
	int (*fn)(void);
};

extern char why[512];
/* (char *)1, through a volatile so that the compiler does not see the bad address. */
extern char *volatile bad_addr;
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The condition must hold. */
#define CHECK(c, ...) \
	do { \
		if (!(c)) \
			return fail(__VA_ARGS__); \
	} while (0)

/* The call must succeed (>= 0); its value. */
#define OK(call) \
	({ \
		long r_ = (long)(call); \
		if (r_ < 0) \
			return fail("line %d: %s: %s", __LINE__, #call, strerror(errno)); \
		r_; \
	})

/* The call must fail with -1 and errno `e`. */
#define FAILS(call, e) \
	do { \
		errno = 0; \
		long r_ = (long)(call); \
		int e_ = errno; \
		if (r_ != -1 || e_ != (e)) \
			return fail("line %d: %s: returned %ld errno %d (%s), expected %s", \
				    __LINE__, #call, r_, e_, strerror(e_), #e); \
	} while (0)

/* A fresh Stream on a clone device (O_RDWR | extra flags); -1 with `why` set on failure. */
int open_dev(const char *path, int flags);
int set_nonblock(int fd, int on);
/* putpmsg from C strings; NULL = no such part. */
int put(int fd, const char *ctl, const char *data, int band, int flags);
/* Messages queued at the head (I_NREAD's return value). */
int nmsgs(int fd);
/* Fill `buf` with a pattern depending on `seed`. */
void pattern(char *buf, size_t n, unsigned seed);
/* Write `chunk` bytes non-blocking until EAGAIN; the total accepted, or -1. */
long fill(int fd, size_t chunk);
/* Read back `total` bytes written by fill() and check them; 0 or -1. */
int drain(int fd, long total, size_t chunk);
/* Install `fn` for `sig` without SA_RESTART (interrupted calls fail with EINTR). */
void on_signal(int sig, void (*fn)(int));
/* Wait up to 2 s for *count to exceed `before`. */
int wait_count(volatile int *count, int before);

extern const struct tcase msg_cases[], ioc_cases[], pipe_cases[], mux_cases[];

#endif
