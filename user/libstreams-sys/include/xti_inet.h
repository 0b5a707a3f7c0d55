/*
 * <xti_inet.h> for rstreams: XTI options of the Internet protocols (IP, UDP, TCP), with
 * the LfS levels and names. Addresses are struct sockaddr_in (<netinet/in.h>).
 */
#ifndef _RSTREAMS_XTI_INET_H
#define _RSTREAMS_XTI_INET_H

#include <xti.h>

/* Levels: the IP protocol numbers. */
#define T_INET_IP	0
#define T_INET_TCP	6
#define T_INET_UDP	17

/* T_INET_IP options. */
#define T_IP_OPTIONS	1
#define T_IP_TOS	2
#define T_IP_TTL	3
#define T_IP_REUSEADDR	4
#define T_IP_DONTROUTE	5
#define T_IP_BROADCAST	6
#define T_IP_ADDR	7

/* T_IP_TOS precedence. */
#define T_ROUTINE	0
#define T_PRIORITY	1
#define T_IMMEDIATE	2
#define T_FLASH		3
#define T_OVERRIDEFLASH	4
#define T_CRITIC_ECP	5
#define T_INETCONTROL	6
#define T_NETCONTROL	7

/* T_IP_TOS type of service. */
#define T_NOTOS		0
#define T_LDELAY	(1 << 4)
#define T_HITHRPT	(1 << 3)
#define T_HIREL		(1 << 2)
#define T_LOCOST	(1 << 1)

#define SET_TOS(prec, tos) \
	((((prec) & 0x7) << 5) | ((tos) & (T_LDELAY | T_HITHRPT | T_HIREL | T_LOCOST)))

/* T_INET_UDP options. */
#define T_UDP_CHECKSUM	1

/* T_INET_TCP options. */
#define T_TCP_NODELAY	1
#define T_TCP_MAXSEG	2
#define T_TCP_KEEPALIVE	3

/* Value of T_TCP_KEEPALIVE. */
struct t_kpalive {
	t_scalar_t kp_onoff;
	t_scalar_t kp_timeout;	/* minutes */
};

#endif /* _RSTREAMS_XTI_INET_H */
