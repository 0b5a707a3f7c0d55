// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel UDP socket under TPI UDP (part of strshim.ko; rust/modules/udpsock.rs owns it).
 *
 * A bound TPI UDP endpoint owns one kernel UDP socket, used the way in-kernel UDP tunnels use
 * theirs (setup_udp_tunnel_sock, which 6.12 builds only with CONFIG_NET_UDP_TUNNEL, so the few
 * lines it does are done here): the socket owns the port, and its encapsulation hooks hand
 * every datagram and every ICMP error to the endpoint from the UDP receive path in softirq
 * context, so no socket receive queue sits between IP and the Stream. Transmit builds and
 * routes the datagram's skb itself, as in-kernel UDP tunnels send theirs (udp_tunnel_xmit_skb,
 * iptunnel_xmit: not built without CONFIG_NET_UDP_TUNNEL, so rstreams_udp_xmit does their
 * steps), with the route of the last destination kept on the socket; whatever that path does
 * not do exactly as udp_sendmsg would goes through the socket (kernel_sendmsg). Both never
 * sleep (GFP_ATOMIC, MSG_DONTWAIT: the caller holds its Stream lock); both charge the socket's
 * send buffer, so a full one gives EAGAIN, and the socket's write-space callback says when
 * there is room again.
 *
 *   IP ─▶ udp_rcv ─▶ __udp4_lib_lookup ─▶ encap_rcv ─▶ ops->rx(ctx, skb…)   (softirq, RCU)
 *   ICMP ─▶ __udp4_lib_err ─▶ encap_err_rcv ─▶ ops->err(ctx, daddr, dport, errno)
 *   sock_wfree (any context) ─▶ sk_write_space ─▶ ops->write_space(ctx) after an EAGAIN
 *   owner ─▶ rstreams_udp_send ─▶ rstreams_udp_xmit: route (cached), skb, UDP + IP header,
 *            ip_local_out; or, for what it does not handle, kernel_sendmsg ─▶ udp_sendmsg
 *
 * A *queued* socket (the `xtiso-udp` driver: XTI over sockets) has no encapsulation hooks: the
 * UDP receive path queues datagrams on the socket's receive queue as for any socket, charged to
 * its receive buffer (SO_RCVBUF), and the socket's data-ready callback says so; the owner takes
 * them with rstreams_udp_recv (kernel_recvmsg, MSG_DONTWAIT: one copy, skb to the owner's
 * buffer) when it has room. It has IP_RECVTTL and IP_RECVTOS, so each datagram comes with the
 * TTL and TOS of its IPv4 header (control messages), and IP_RECVERR, so ICMP errors for what
 * it sent wait on its error queue (an unconnected UDP socket gets none without it), its error
 * report callback says so too, and the owner takes them first, with rstreams_udp_recv_err
 * (kernel_recvmsg, MSG_ERRQUEUE: never waits).
 *
 *   IP ─▶ udp_rcv ─▶ socket receive queue ─▶ sk_data_ready ─▶ ops->readable(ctx)   (softirq)
 *   ICMP ─▶ __udp4_lib_err ─▶ ip_icmp_error: error queue ─▶ sk_error_report ─▶ ops->readable
 *   owner ─▶ rstreams_udp_recv_err, rstreams_udp_next_len, rstreams_udp_recv        (no sleep)
 *
 * Lifetime: sk_user_data points to the `struct rstreams_udp`; every callback reads it under
 * RCU (the receive and ICMP paths run under rcu_read_lock, the write-space callback takes it)
 * and does nothing when it is NULL. rstreams_udp_release clears it, restores the socket's own
 * write-space callback, waits for an RCU grace period (so no callback into the owner runs any
 * more, and none will), then releases the socket: after it returns, the owner's context may be
 * freed. Datagrams handed to ops->rx are the callee's: it frees each one with
 * rstreams_skb_free, exactly once, in any context but hard interrupts.
 */
#include <linux/module.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/capability.h>
#include <linux/rcupdate.h>
#include <linux/sockios.h>
#include <linux/errqueue.h>
#include <asm/ioctls.h>
#include <net/sock.h>
#include <net/ip.h>
#include <net/inet_sock.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/dst.h>
#include <linux/bpf-cgroup.h>
#include <linux/security.h>
#include <linux/moduleparam.h>

/* What the owner (udpsock.rs) is told; each is called with `ctx` only while the socket's
 * sk_user_data is set (see the lifetime rule above). */
struct rstreams_udp_ops {
	/* A datagram from saddr:sport, whose IPv4 header said tos and ttl, and whose payload is
	 * data[0..len] inside `skb` (linear, not shared): the callee owns skb and frees it with
	 * rstreams_skb_free. Softirq context. */
	void (*rx)(void *ctx, struct sk_buff *skb, __be32 saddr, __be16 sport, u8 tos, u8 ttl,
		   u8 *data, unsigned int len);
	/* An ICMP error (positive errno) for a datagram sent to daddr:dport. Softirq context. */
	void (*err)(void *ctx, __be32 daddr, __be16 dport, int err);
	/* Send buffer space after a send gave EAGAIN. Any context but hard interrupts. */
	void (*write_space)(void *ctx);
	/* Queued sockets: datagrams wait on the receive queue. Softirq context. */
	void (*readable)(void *ctx);
};

struct rstreams_udp {
	struct socket *sock;
	/* Counted: a kernel socket does not pin its namespace, so this does, until release. */
	struct net *net;
	const struct rstreams_udp_ops *ops;
	void *ctx;
	/* The socket's own sk_write_space, sk_data_ready and sk_error_report, put back at
	 * release. */
	void (*saved_write_space)(struct sock *sk);
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_error_report)(struct sock *sk);
	/* Datagrams wait on the receive queue (no encapsulation hooks). */
	bool queued;
	/* The route rstreams_udp_xmit took for the last destination, counted (NULL: none yet),
	 * and what it was looked up with: the destination, its port, the flow's DSCP; and the
	 * source address the lookup chose. Under rt_lock; the reference is released when the
	 * route is replaced and at release. */
	spinlock_t rt_lock;
	struct rtable *rt;
	__be32 rt_daddr;
	__be32 rt_saddr;
	__be16 rt_dport;
	u8 rt_tos;
};

static int rstreams_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct rstreams_udp *u = rcu_dereference_sk_user_data(sk);
	const struct iphdr *iph;
	__be32 saddr;
	__be16 sport;

	if (!u)
		goto drop;
	/* The payload becomes a message block over the skb's data (esballoc), which STREAMS
	 * modules may write into: the skb must be ours alone and linear. */
	skb = skb_unshare(skb, GFP_ATOMIC);
	if (!skb)
		return 0;
	if (skb_linearize(skb) || skb->len < sizeof(struct udphdr))
		goto drop;
	/* udp_rcv left skb->data at the UDP header, trimmed to the UDP length; the network
	 * header (checked by ip_rcv) is still in front of it, copied along by skb_unshare.
	 * Its TOS and TTL become the options of the T_UNITDATA_IND (docs/tpi.md). */
	iph = ip_hdr(skb);
	saddr = iph->saddr;
	sport = udp_hdr(skb)->source;
	u->ops->rx(u->ctx, skb, saddr, sport, iph->tos, iph->ttl,
		   skb->data + sizeof(struct udphdr), skb->len - sizeof(struct udphdr));
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

static void rstreams_udp_encap_err_rcv(struct sock *sk, struct sk_buff *skb, int err,
				       __be16 port, u32 info, u8 *payload)
{
	struct rstreams_udp *u = rcu_dereference_sk_user_data(sk);
	/* __udp4_lib_err: skb->data is the IP header of the datagram that failed. */
	const struct iphdr *iph = (const struct iphdr *)skb->data;

	if (u)
		u->ops->err(u->ctx, iph->daddr, port, err);
}

static void rstreams_udp_write_space(struct sock *sk)
{
	struct rstreams_udp *u;

	rcu_read_lock();
	u = rcu_dereference_sk_user_data(sk);
	/* SOCK_NOSPACE is set by the allocation that failed with EAGAIN: answer only that. */
	if (u && sock_writeable(sk) &&
	    test_and_clear_bit(SOCK_NOSPACE, &u->sock->flags))
		u->ops->write_space(u->ctx);
	rcu_read_unlock();
}

static void rstreams_udp_data_ready(struct sock *sk)
{
	struct rstreams_udp *u;

	rcu_read_lock();
	u = rcu_dereference_sk_user_data(sk);
	if (u)
		u->ops->readable(u->ctx);
	rcu_read_unlock();
}

/* A queued socket's error report: an ICMP error waits on the error queue (softirq), or another
 * one does after the owner took one (sock_dequeue_err_skb, under the owner's Stream lock:
 * ops->readable only back-enables). */
static void rstreams_udp_error_report(struct sock *sk)
{
	rstreams_udp_data_ready(sk);
}

/*
 * A kernel UDP socket in namespace `net`, bound to addr:port (network order; port 0: an
 * ephemeral one), its hooks calling `ops` with `ctx`; `queued`: datagrams wait on the socket's
 * receive queue (of `rcvbuf` bytes, as SO_RCVBUF, when > 0) instead of going to ops->rx.
 * Process context, may sleep; holds no lock of the caller's. Returns 0 and the socket (`*out`)
 * and the bound address, or -errno (the bind's: EADDRINUSE, EADDRNOTAVAIL, EACCES…; ENOMEM).
 */
int rstreams_udp_bind(void *netp, __be32 addr, __be16 port, bool reuse, bool broadcast,
		      int sndbuf, bool queued, int rcvbuf, const struct rstreams_udp_ops *ops,
		      void *ctx, struct rstreams_udp **out, __be32 *bound_addr,
		      __be16 *bound_port);
int rstreams_udp_bind(void *netp, __be32 addr, __be16 port, bool reuse, bool broadcast,
		      int sndbuf, bool queued, int rcvbuf, const struct rstreams_udp_ops *ops,
		      void *ctx, struct rstreams_udp **out, __be32 *bound_addr,
		      __be16 *bound_port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = port,
		.sin_addr.s_addr = addr,
	};
	struct net *net = netp;
	struct rstreams_udp *u;
	struct socket *sock;
	struct sock *sk;
	int err;

	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	err = sock_create_kern(net, AF_INET, SOCK_DGRAM, IPPROTO_UDP, &sock);
	if (err)
		goto free;
	sk = sock->sk;
	/* Sends run under a Stream lock: no sleeping allocation (with MSG_DONTWAIT). */
	sk->sk_allocation = GFP_ATOMIC;
	if (reuse)
		sk->sk_reuse = SK_CAN_REUSE;
	if (broadcast)
		sock_set_flag(sk, SOCK_BROADCAST);
	if (sndbuf > 0) {
		sk->sk_userlocks |= SOCK_SNDBUF_LOCK;
		WRITE_ONCE(sk->sk_sndbuf, max_t(int, sndbuf * 2, SOCK_MIN_SNDBUF));
	}

	if (queued && rcvbuf > 0) {
		sk->sk_userlocks |= SOCK_RCVBUF_LOCK;
		WRITE_ONCE(sk->sk_rcvbuf, max_t(int, rcvbuf * 2, SOCK_MIN_RCVBUF));
	}
	if (queued) {
		/* IP_RECVTTL, IP_RECVTOS, IP_RECVERR (see the top of the file). */
		inet_set_bit(TTL, sk);
		inet_set_bit(TOS, sk);
		ip_sock_set_recverr(sk);
	}

	u->sock = sock;
	spin_lock_init(&u->rt_lock);
	u->net = get_net(net);
	u->ops = ops;
	u->ctx = ctx;
	u->queued = queued;
	/* The hooks before the bind: no datagram for the port may reach the socket's own
	 * receive queue unannounced (setup_udp_tunnel_sock's steps for a direct socket). */
	write_lock_bh(&sk->sk_callback_lock);
	u->saved_write_space = sk->sk_write_space;
	u->saved_data_ready = sk->sk_data_ready;
	u->saved_error_report = sk->sk_error_report;
	sk->sk_write_space = rstreams_udp_write_space;
	if (queued) {
		sk->sk_data_ready = rstreams_udp_data_ready;
		sk->sk_error_report = rstreams_udp_error_report;
	}
	rcu_assign_sk_user_data(sk, u);
	write_unlock_bh(&sk->sk_callback_lock);
	if (!queued) {
		WRITE_ONCE(udp_sk(sk)->encap_err_rcv, rstreams_udp_encap_err_rcv);
		WRITE_ONCE(udp_sk(sk)->encap_rcv, rstreams_udp_encap_rcv);
		WRITE_ONCE(udp_sk(sk)->encap_type, 1);
		udp_tunnel_encap_enable(sk);
	}

	err = kernel_bind(sock, (struct sockaddr *)&sin, sizeof(sin));
	if (err)
		goto release;
	err = kernel_getsockname(sock, (struct sockaddr *)&sin);
	if (err < 0)
		goto release;
	*bound_addr = sin.sin_addr.s_addr;
	*bound_port = sin.sin_port;
	*out = u;
	return 0;
release:
	/* Nothing was bound, so no callback can have run with ctx; release as usual anyway. */
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_write_space = u->saved_write_space;
	sk->sk_data_ready = u->saved_data_ready;
	sk->sk_error_report = u->saved_error_report;
	write_unlock_bh(&sk->sk_callback_lock);
	synchronize_rcu();
	sock_release(sock);
	put_net(u->net);
free:
	kfree(u);
	return err;
}
EXPORT_SYMBOL_GPL(rstreams_udp_bind);

/*
 * Stop the callbacks: after this returns none runs with the socket's ctx, and none will.
 * Process context (it waits for an RCU grace period).
 */
static void rstreams_udp_quiesce(struct rstreams_udp *u)
{
	struct sock *sk = u->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	sk->sk_write_space = u->saved_write_space;
	sk->sk_data_ready = u->saved_data_ready;
	sk->sk_error_report = u->saved_error_report;
	write_unlock_bh(&sk->sk_callback_lock);
	WRITE_ONCE(udp_sk(sk)->encap_rcv, NULL);
	WRITE_ONCE(udp_sk(sk)->encap_err_rcv, NULL);
	synchronize_rcu();
}

/* Stop the callbacks, unbind and free: after this returns the owner's ctx may be freed.
 * Process context. */
void rstreams_udp_release(struct rstreams_udp *u);
void rstreams_udp_release(struct rstreams_udp *u)
{
	rstreams_udp_quiesce(u);
	/* No send runs any more (the owner is releasing its port). */
	if (u->rt)
		ip_rt_put(u->rt);
	kernel_sock_shutdown(u->sock, SHUT_RDWR);
	sock_release(u->sock);
	put_net(u->net);
	kfree(u);
}
EXPORT_SYMBOL_GPL(rstreams_udp_release);

/*
 * The direct transmit (rstreams_udp_xmit, below) can be turned off while the module is loaded,
 * to compare it with the socket's: /sys/module/strshim/parameters/udp_fast_xmit (default on).
 * udp_xmit_fast and udp_xmit_socket (read-only) count the datagrams of direct sockets each path
 * sent since the module was loaded (a queued socket always sends through itself: not counted).
 */
static bool rstreams_udp_fast_xmit = true;
module_param_named(udp_fast_xmit, rstreams_udp_fast_xmit, bool, 0644);
MODULE_PARM_DESC(udp_fast_xmit,
		 "TPI UDP: build and route datagrams without the socket layer (default: on)");

static DEFINE_PER_CPU(unsigned long, rstreams_udp_nfast);
static DEFINE_PER_CPU(unsigned long, rstreams_udp_nsock);

static int rstreams_udp_count_get(char *buf, const struct kernel_param *kp)
{
	unsigned long __percpu *count = kp->arg;
	unsigned long n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += data_race(*per_cpu_ptr(count, cpu));
	return sysfs_emit(buf, "%lu\n", n);
}

static const struct kernel_param_ops rstreams_udp_count_ops = {
	.get = rstreams_udp_count_get,
};
module_param_cb(udp_xmit_fast, &rstreams_udp_count_ops, &rstreams_udp_nfast, 0444);
module_param_cb(udp_xmit_socket, &rstreams_udp_count_ops, &rstreams_udp_nsock, 0444);

/* rstreams_udp_xmit: the socket must send this one (kernel_sendmsg). */
#define RSTREAMS_UDP_SLOW 1

/*
 * The route to daddr:dport with DSCP `tos` from the socket, counted (the caller's reference),
 * and the source address it gives, or an ERR_PTR. The last one is kept (u->rt) and used again
 * while it is valid (dst_check: a routing change, a device going away or a new PMTU makes it
 * obsolete); otherwise the lookup is udp_sendmsg's for an unconnected socket without options
 * or control messages (the flow: the socket's bound device, mark, uid, bound address and port;
 * scope universe; IPPROTO_UDP; the LSM's classification).
 */
static struct rtable *rstreams_udp_route(struct rstreams_udp *u, __be32 daddr, __be16 dport,
					 u8 tos, __be32 *saddr)
{
	struct sock *sk = u->sock->sk;
	struct inet_sock *inet = inet_sk(sk);
	struct rtable *rt, *old;
	struct flowi4 fl4;

	spin_lock_bh(&u->rt_lock);
	rt = u->rt;
	if (rt && u->rt_daddr == daddr && u->rt_dport == dport && u->rt_tos == tos &&
	    dst_check(&rt->dst, 0)) {
		dst_hold(&rt->dst);
		*saddr = u->rt_saddr;
		spin_unlock_bh(&u->rt_lock);
		return rt;
	}
	spin_unlock_bh(&u->rt_lock);

	flowi4_init_output(&fl4, READ_ONCE(sk->sk_bound_dev_if), READ_ONCE(sk->sk_mark), tos,
			   RT_SCOPE_UNIVERSE, sk->sk_protocol, inet_sk_flowi_flags(sk), daddr,
			   inet->inet_saddr, dport, inet->inet_sport, sk->sk_uid);
	security_sk_classify_flow(sk, flowi4_to_flowi_common(&fl4));
	rt = ip_route_output_flow(sock_net(sk), &fl4, sk);
	if (IS_ERR(rt))
		return rt;
	*saddr = fl4.saddr;
	/* The cache's own reference. */
	dst_hold(&rt->dst);
	spin_lock_bh(&u->rt_lock);
	old = u->rt;
	u->rt = rt;
	u->rt_daddr = daddr;
	u->rt_dport = dport;
	u->rt_tos = tos;
	u->rt_saddr = fl4.saddr;
	spin_unlock_bh(&u->rt_lock);
	if (old)
		ip_rt_put(old);
	return rt;
}

/*
 * Send vec[0..nvec] (len bytes) to daddr:dport without the socket layer, the way
 * udp_tunnel_xmit_skb and iptunnel_xmit send (one copy: the bytes into a new skb), with the
 * headers udp_sendmsg would have written (ip_make_skb, udp_send_skb): the same route, TOS,
 * TTL, DF, IP ID, priority, mark and checksum, and the skb charged to the socket's send
 * buffer. Returns 0, -errno as udp_sendmsg would (EAGAIN: the send buffer is full; ENOBUFS:
 * no memory for the skb), or RSTREAMS_UDP_SLOW for what it does not do exactly as udp_sendmsg
 * would (then nothing was sent): a queued socket (XTI over sockets keeps the socket's path), a
 * socket in a state or with options it does not look at, multicast, broadcast (the socket
 * checks SO_BROADCAST), a route error (the socket's send gives the same error), a datagram
 * larger than the path MTU (the socket fragments it). Never sleeps.
 */
static int rstreams_udp_xmit(struct rstreams_udp *u, __be32 daddr, __be16 dport,
			     const struct kvec *vec, size_t nvec, size_t len, int tos, int ttl,
			     bool nocheck)
{
	struct sock *sk = u->sock->sk;
	struct inet_sock *inet = inet_sk(sk);
	struct net *net = sock_net(sk);
	unsigned int hlen, mtu;
	struct sk_buff *skb;
	struct rtable *rt;
	struct udphdr *uh;
	struct iphdr *iph;
	__be32 saddr;
	size_t i, off;
	u8 dsfield, pmtudisc;
	int err;

	if (!READ_ONCE(rstreams_udp_fast_xmit) || u->queued)
		return RSTREAMS_UDP_SLOW;
	/* What udp_sendmsg would look at that this does not: a pending error or shutdown, a
	 * corked datagram, IP options, GSO, SO_DONTROUTE, IP_UNICAST_IF, timestamps, a cgroup
	 * BPF sendmsg program (may rewrite the address). None is set on our sockets. */
	if (READ_ONCE(sk->sk_err) || (READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN) ||
	    READ_ONCE(udp_sk(sk)->pending) || rcu_access_pointer(inet->inet_opt) ||
	    READ_ONCE(udp_sk(sk)->gso_size) || sock_flag(sk, SOCK_LOCALROUTE) ||
	    READ_ONCE(inet->uc_index) || READ_ONCE(sk->sk_tsflags) ||
	    cgroup_bpf_enabled(CGROUP_UDP4_SENDMSG))
		return RSTREAMS_UDP_SLOW;
	/* Multicast has its own interface, source and TTL. */
	if (ipv4_is_multicast(daddr))
		return RSTREAMS_UDP_SLOW;

	dsfield = tos >= 0 ? tos : READ_ONCE(inet->tos);
	rt = rstreams_udp_route(u, daddr, dport, dsfield & INET_DSCP_MASK, &saddr);
	if (IS_ERR(rt))
		return RSTREAMS_UDP_SLOW;
	if ((rt->rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST)) ||
	    (rt->rt_type != RTN_UNICAST && rt->rt_type != RTN_LOCAL))
		goto slow;
	/* ip_setup_cork's fragment size; the socket fragments what does not fit. */
	mtu = ip_sk_use_pmtu(sk) ? dst4_mtu(&rt->dst) : READ_ONCE(rt->dst.dev->mtu);
	if (!inetdev_valid_mtu(mtu) || len + sizeof(*iph) + sizeof(*uh) > mtu)
		goto slow;

	/* sock_alloc_send_pskb's send buffer test, then the flags the write-space callback
	 * answers. A datagram freed between the test and the flags would not call back (the flag
	 * was clear): test again after setting them, so that either this send goes ahead or a
	 * datagram still in flight calls back when it is freed. */
	if (sk_wmem_alloc_get(sk) >= READ_ONCE(sk->sk_sndbuf)) {
		sk_set_bit(SOCKWQ_ASYNC_NOSPACE, sk);
		set_bit(SOCK_NOSPACE, &u->sock->flags);
		smp_mb__after_atomic();
		if (sk_wmem_alloc_get(sk) >= READ_ONCE(sk->sk_sndbuf)) {
			ip_rt_put(rt);
			UDP_INC_STATS(net, UDP_MIB_SNDBUFERRORS, 0);
			return -EAGAIN;
		}
		clear_bit(SOCK_NOSPACE, &u->sock->flags);
	}

	/* Room for the link layer, a transform's header, IP and UDP in front of the data; the
	 * data linear up to what __ip_append_data keeps linear, in pages above. */
	hlen = LL_RESERVED_SPACE(rt->dst.dev) + rt->dst.header_len + sizeof(*iph) + sizeof(*uh);
	if (hlen + len <= SKB_MAX_ALLOC) {
		skb = alloc_skb(hlen + len, GFP_ATOMIC);
		if (!skb)
			goto nobufs;
		skb_reserve(skb, hlen);
		skb_put(skb, len);
		for (i = 0, off = 0; i < nvec; off += vec[i].iov_len, i++)
			memcpy(skb->data + off, vec[i].iov_base, vec[i].iov_len);
	} else {
		skb = alloc_skb_with_frags(hlen, len, PAGE_ALLOC_COSTLY_ORDER, &err, GFP_ATOMIC);
		if (!skb)
			goto nobufs;
		skb_reserve(skb, hlen);
		skb->data_len = len;
		skb->len = len;
		for (i = 0, off = 0; i < nvec; off += vec[i].iov_len, i++)
			if (skb_store_bits(skb, off, vec[i].iov_base, vec[i].iov_len)) {
				kfree_skb(skb);
				goto nobufs;
			}
	}

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = inet->inet_sport;
	uh->dest = dport;
	uh->len = htons(skb->len);
	uh->check = 0;
	/* UDP_CHECKSUM off: none; else the pseudo-header sum and CHECKSUM_PARTIAL (the device,
	 * or validate_xmit_skb for one that cannot, sums the rest). */
	udp_set_csum(nocheck, skb, saddr, daddr, skb->len);

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = dsfield;
	/* __ip_make_skb: the DF bit and ignore_df by the socket's PMTU discovery mode (the
	 * datagram fits the MTU), the TTL of IP_TTL, else the socket's, else the route's. */
	skb->ignore_df = ip_sk_ignore_df(sk);
	pmtudisc = READ_ONCE(inet->pmtudisc);
	iph->frag_off = (pmtudisc == IP_PMTUDISC_DO || pmtudisc == IP_PMTUDISC_PROBE ||
			 ip_dont_fragment(sk, &rt->dst)) ? htons(IP_DF) : 0;
	if (ttl < 0)
		ttl = READ_ONCE(inet->uc_ttl) < 0 ? ip4_dst_hoplimit(&rt->dst) :
						    READ_ONCE(inet->uc_ttl);
	iph->ttl = ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = saddr;
	iph->daddr = daddr;
	ip_select_ident(net, skb, sk);
	/* ip_local_out sets the total length and the header checksum. */

	skb->priority = tos >= 0 ? rt_tos2priority(tos) : READ_ONCE(sk->sk_priority);
	skb->mark = READ_ONCE(sk->sk_mark);
	/* The skb takes the caller's reference. */
	skb_dst_set(skb, &rt->dst);
	skb_set_owner_w(skb, sk);

	/* ip_send_skb and udp_send_skb: a congested or dropping device is not the sender's error
	 * unless it asked for errors (IP_RECVERR, which only queued sockets have). */
	err = ip_local_out(net, sk, skb);
	if (err > 0)
		err = net_xmit_errno(err);
	if (err) {
		IP_INC_STATS(net, IPSTATS_MIB_OUTDISCARDS);
		if (err == -ENOBUFS) {
			UDP_INC_STATS(net, UDP_MIB_SNDBUFERRORS, 0);
			err = 0;
		}
	} else {
		UDP_INC_STATS(net, UDP_MIB_OUTDATAGRAMS, 0);
	}
	this_cpu_inc(rstreams_udp_nfast);
	return err;

nobufs:
	ip_rt_put(rt);
	UDP_INC_STATS(net, UDP_MIB_SNDBUFERRORS, 0);
	return -ENOBUFS;
slow:
	ip_rt_put(rt);
	return RSTREAMS_UDP_SLOW;
}

/*
 * The socket's path of rstreams_udp_send (kernel_sendmsg ─▶ udp_sendmsg), for what the direct
 * transmit leaves to it. Out of line: its message header, address and control buffer are
 * built only for these datagrams, not zeroed on the stack for every direct one.
 */
static noinline int rstreams_udp_send_sock(struct rstreams_udp *u, __be32 daddr, __be16 dport,
					   struct kvec *vec, size_t nvec, size_t len, int tos,
					   int ttl, bool nocheck)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = dport,
		.sin_addr.s_addr = daddr,
	};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int)) * 2];
	} control;
	struct msghdr msg = {
		.msg_name = &sin,
		.msg_namelen = sizeof(sin),
		.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
	};
	struct sock *sk = u->sock->sk;
	struct cmsghdr *cmsg;
	size_t clen = 0;
	int r;

	if (!u->queued)
		this_cpu_inc(rstreams_udp_nsock);
	if (sk->sk_no_check_tx != nocheck)
		sk->sk_no_check_tx = nocheck;
	if (tos >= 0 || ttl >= 0) {
		memset(&control, 0, sizeof(control));
		cmsg = (struct cmsghdr *)control.buf;
		if (tos >= 0) {
			cmsg->cmsg_level = SOL_IP;
			cmsg->cmsg_type = IP_TOS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			*(int *)CMSG_DATA(cmsg) = tos;
			clen += CMSG_SPACE(sizeof(int));
			cmsg = (struct cmsghdr *)(control.buf + clen);
		}
		if (ttl >= 0) {
			cmsg->cmsg_level = SOL_IP;
			cmsg->cmsg_type = IP_TTL;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			*(int *)CMSG_DATA(cmsg) = ttl;
			clen += CMSG_SPACE(sizeof(int));
		}
		msg.msg_control = control.buf;
		msg.msg_controllen = clen;
		msg.msg_control_is_user = false;
	}
	r = kernel_sendmsg(u->sock, &msg, vec, nvec, len);
	return r < 0 ? r : 0;
}

/*
 * Send vec[0..nvec] (len bytes in all) as one datagram to daddr:dport; tos and ttl >= 0 set
 * those for this datagram (as the IP_TOS, IP_TTL control messages would), nocheck sends it
 * without a UDP checksum. Directly (rstreams_udp_xmit) when it can, else through the socket.
 * Never sleeps. Returns 0 or -errno (EAGAIN: the send buffer is full, and the write-space
 * callback follows when it is not).
 *
 * direct_only: the express send (perim/express_send.rs), called without the owner's Stream
 * lock, possibly by several tasks at once, with bottom halves off. rstreams_udp_xmit is safe
 * for that (the route cache has its lock, the rest reads the socket with READ_ONCE and sets
 * its flags atomically); the socket's path (kernel_sendmsg, and the sk_no_check_tx it writes)
 * is not: returns RSTREAMS_UDP_SLOW instead, nothing sent, and the owner sends the datagram
 * under its lock.
 */
int rstreams_udp_send(struct rstreams_udp *u, __be32 daddr, __be16 dport, struct kvec *vec,
		      size_t nvec, size_t len, int tos, int ttl, bool nocheck, bool direct_only);
int rstreams_udp_send(struct rstreams_udp *u, __be32 daddr, __be16 dport, struct kvec *vec,
		      size_t nvec, size_t len, int tos, int ttl, bool nocheck, bool direct_only)
{
	int r;

	r = rstreams_udp_xmit(u, daddr, dport, vec, nvec, len, tos, ttl, nocheck);
	if (r != RSTREAMS_UDP_SLOW || direct_only)
		return r;
	return rstreams_udp_send_sock(u, daddr, dport, vec, nvec, len, tos, ttl, nocheck);
}
EXPORT_SYMBOL_GPL(rstreams_udp_send);

/* XTI_SNDBUF on a bound socket (as SO_SNDBUF: doubled, at least SOCK_MIN_SNDBUF). */
void rstreams_udp_set_sndbuf(struct rstreams_udp *u, int sndbuf);
void rstreams_udp_set_sndbuf(struct rstreams_udp *u, int sndbuf)
{
	struct sock *sk = u->sock->sk;

	sk->sk_userlocks |= SOCK_SNDBUF_LOCK;
	WRITE_ONCE(sk->sk_sndbuf, max_t(int, sndbuf * 2, SOCK_MIN_SNDBUF));
	sk->sk_write_space(sk);
}
EXPORT_SYMBOL_GPL(rstreams_udp_set_sndbuf);

/* XTI_RCVBUF on a bound queued socket (as SO_RCVBUF: doubled, at least SOCK_MIN_RCVBUF). */
void rstreams_udp_set_rcvbuf(struct rstreams_udp *u, int rcvbuf);
void rstreams_udp_set_rcvbuf(struct rstreams_udp *u, int rcvbuf)
{
	struct sock *sk = u->sock->sk;

	if (!u->queued)
		return;
	sk->sk_userlocks |= SOCK_RCVBUF_LOCK;
	WRITE_ONCE(sk->sk_rcvbuf, max_t(int, rcvbuf * 2, SOCK_MIN_RCVBUF));
}
EXPORT_SYMBOL_GPL(rstreams_udp_set_rcvbuf);

/*
 * The payload size of the datagram at the head of a queued socket's receive queue, or -EAGAIN
 * when none waits (FIONREAD: datagrams with a bad checksum are dropped on the way, and counted
 * in sk_drops). Never sleeps.
 */
int rstreams_udp_next_len(struct rstreams_udp *u);
int rstreams_udp_next_len(struct rstreams_udp *u)
{
	struct sock *sk = u->sock->sk;
	int len = 0;

	/* Empty first: SIOCINQ answers 0 both for no datagram and for an empty one. */
	if (skb_queue_empty_lockless(&udp_sk(sk)->reader_queue) &&
	    skb_queue_empty_lockless(&sk->sk_receive_queue))
		return -EAGAIN;
	if (udp_ioctl(sk, SIOCINQ, &len))
		return -EAGAIN;
	return len;
}
EXPORT_SYMBOL_GPL(rstreams_udp_next_len);

/* Room for what a queued socket's kernel_recvmsg may put: IP_TTL (an int) and IP_TOS (a byte)
 * for a datagram; for an error also IP_RECVERR (sock_extended_err and the offender). A
 * control message that does not fit is left out (MSG_CTRUNC), never overrun. */
#define RSTREAMS_UDP_CONTROL \
	(CMSG_SPACE(sizeof(int)) + CMSG_SPACE(1) + \
	 CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in)))

union rstreams_udp_control {
	struct cmsghdr align;
	char buf[RSTREAMS_UDP_CONTROL];
};

/* Point msg's control at the `c` kernel_recvmsg filled in (put_cmsg advances msg_control past
 * each control message it puts, and shrinks msg_controllen), for for_each_cmsghdr. */
static void rstreams_udp_control_done(struct msghdr *msg, union rstreams_udp_control *c)
{
	msg->msg_controllen = sizeof(c->buf) - msg->msg_controllen;
	msg->msg_control = c->buf;
}

/*
 * Take the oldest error of a queued socket's error queue (IP_RECVERR; kernel_recvmsg,
 * MSG_ERRQUEUE, which never waits): the address the failed datagram was sent to (the error
 * queue's msg_name), and the error (positive errno: ee_errno, ECONNREFUSED for port
 * unreachable). -EAGAIN when none waits. Taking the last ICMP error clears the socket's error
 * (sock_dequeue_err_skb), so the next rstreams_udp_recv does not fail with it. Never sleeps.
 */
int rstreams_udp_recv_err(struct rstreams_udp *u, __be32 *daddr, __be16 *dport);
int rstreams_udp_recv_err(struct rstreams_udp *u, __be32 *daddr, __be16 *dport)
{
	struct sockaddr_in sin = {};
	union rstreams_udp_control control;
	struct kvec v = { .iov_base = NULL, .iov_len = 0 };
	struct msghdr msg = {
		.msg_name = &sin,
		.msg_namelen = sizeof(sin),
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct sock_extended_err ee;
	struct cmsghdr *cmsg;
	int err = 0;
	int r;

	if (skb_queue_empty_lockless(&u->sock->sk->sk_error_queue))
		return -EAGAIN;
	r = kernel_recvmsg(u->sock, &msg, &v, 1, 0, MSG_ERRQUEUE | MSG_DONTWAIT);
	if (r < 0)
		return r;
	rstreams_udp_control_done(&msg, &control);
	for_each_cmsghdr(cmsg, &msg) {
		if (cmsg->cmsg_level == SOL_IP && cmsg->cmsg_type == IP_RECVERR &&
		    cmsg->cmsg_len >= CMSG_LEN(sizeof(ee))) {
			memcpy(&ee, CMSG_DATA(cmsg), sizeof(ee));
			err = ee.ee_errno;
		}
	}
	/* Every error a UDP socket queues carries its errno; an entry without one is not ours
	 * to report (an errno of 0 would not be a T_UDERROR_IND). */
	if (err <= 0)
		return -EAGAIN;
	*daddr = sin.sin_addr.s_addr;
	*dport = sin.sin_port;
	return err;
}
EXPORT_SYMBOL_GPL(rstreams_udp_recv_err);

/*
 * Take the datagram at the head of a queued socket's receive queue into buf[0..len]
 * (kernel_recvmsg, MSG_DONTWAIT | MSG_TRUNC): its source, the TOS and TTL of its IPv4 header
 * (the IP_TOS and IP_TTL control messages of IP_RECVTOS and IP_RECVTTL; -1 when one is
 * missing), and its size, which is larger than `len` when it did not fit (the rest is lost, as
 * for recvmsg). -EAGAIN when none waits, or the socket's error (IP_RECVERR: an ICMP error's
 * errno that raced with rstreams_udp_recv_err; the failed call consumes it, and the datagram
 * stays). Never waits. (udp_recvmsg passes a cond_resched() when it drops a datagram with a
 * bad checksum; rstreams_udp_next_len has dropped those already, and the caller's Stream lock
 * is a mutex, so even that voluntary preemption point is allowed.)
 */
int rstreams_udp_recv(struct rstreams_udp *u, void *buf, size_t len, __be32 *saddr,
		      __be16 *sport, int *tos, int *ttl);
int rstreams_udp_recv(struct rstreams_udp *u, void *buf, size_t len, __be32 *saddr,
		      __be16 *sport, int *tos, int *ttl)
{
	struct sockaddr_in sin = {};
	union rstreams_udp_control control;
	struct kvec v = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_name = &sin,
		.msg_namelen = sizeof(sin),
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	int r;

	r = kernel_recvmsg(u->sock, &msg, &v, 1, len, MSG_DONTWAIT | MSG_TRUNC);
	if (r < 0)
		return r;
	*saddr = sin.sin_addr.s_addr;
	*sport = sin.sin_port;
	*tos = -1;
	*ttl = -1;
	rstreams_udp_control_done(&msg, &control);
	for_each_cmsghdr(cmsg, &msg) {
		if (cmsg->cmsg_level != SOL_IP)
			continue;
		if (cmsg->cmsg_type == IP_TTL && cmsg->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int t;

			memcpy(&t, CMSG_DATA(cmsg), sizeof(t));
			*ttl = t & 0xff;
		} else if (cmsg->cmsg_type == IP_TOS && cmsg->cmsg_len >= CMSG_LEN(1)) {
			*tos = *(u8 *)CMSG_DATA(cmsg);
		}
	}
	return r;
}
EXPORT_SYMBOL_GPL(rstreams_udp_recv);

/* Datagrams the socket dropped (receive buffer full, bad checksum). */
unsigned int rstreams_udp_drops(struct rstreams_udp *u);
unsigned int rstreams_udp_drops(struct rstreams_udp *u)
{
	return atomic_read(&u->sock->sk->sk_drops);
}
EXPORT_SYMBOL_GPL(rstreams_udp_drops);

/* Free a datagram handed to ops->rx. */
void rstreams_skb_free(struct sk_buff *skb);
void rstreams_skb_free(struct sk_buff *skb)
{
	consume_skb(skb);
}
EXPORT_SYMBOL_GPL(rstreams_skb_free);

/* The calling task's network namespace, counted (a TPI UDP endpoint's, taken at open). */
void *rstreams_net_get_current(void);
void *rstreams_net_get_current(void)
{
	return get_net(current->nsproxy->net_ns);
}
EXPORT_SYMBOL_GPL(rstreams_net_get_current);

void rstreams_net_put(void *net);
void rstreams_net_put(void *net)
{
	put_net(net);
}
EXPORT_SYMBOL_GPL(rstreams_net_put);

/* Whether the calling task may bind privileged ports in `net` (CAP_NET_BIND_SERVICE in the
 * namespace's user namespace, as inet_bind asks). */
bool rstreams_net_may_bind_privileged(void *netp);
bool rstreams_net_may_bind_privileged(void *netp)
{
	struct net *net = netp;

	return ns_capable_noaudit(net->user_ns, CAP_NET_BIND_SERVICE);
}
EXPORT_SYMBOL_GPL(rstreams_net_may_bind_privileged);
