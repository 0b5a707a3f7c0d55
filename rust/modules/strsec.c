// SPDX-License-Identifier: GPL-2.0
/*
 * strsec.c (in strshim.ko): what streams.ko needs from the kernel to keep users apart
 * (docs/security.md). The safe Rust wrappers and their invariants are in
 * rust/modules/fdpass.rs (credentials, receive_fd, files that carry files, the in-flight
 * accounting) and rust/modules/sigowner.rs (I_SETSIG owners).
 *
 * - Credentials of a passed file are recorded as kernel ids (kuid_t/kgid_t, the same in
 *   every user namespace) and mapped into the *receiver's* namespace at I_RECVFD, as
 *   SCM_CREDENTIALS is.
 * - Received files are installed with receive_fd(): the LSM's security_file_receive() check
 *   and the socket cgroup update, as SCM_RIGHTS does.
 * - Files in flight (sent with I_SENDFD, not yet received) are charged to the sender's real
 *   uid and limited to its RLIMIT_NOFILE, as AF_UNIX limits user->unix_inflight
 *   (too_many_unix_fds); CAP_SYS_RESOURCE or CAP_SYS_ADMIN lift the limit. The counts live in
 *   a small hash table of the users that have files in flight; an entry goes with the user's
 *   last file in flight. The table's lock is irq-safe: a message (and with it the charge) may
 *   be freed in any context.
 * - An I_SETSIG owner holds the registrant's thread group (struct pid) and credentials; the
 *   signal goes only to that thread group, and only while the owner's credentials could still
 *   signal it, with the rule of fs/fcntl.c's sigio_perm() (F_SETOWN's SIGIO).
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/cred.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <linux/capability.h>
#include <linux/sched/signal.h>
#include <linux/pid.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/net.h>
#include <net/sock.h>

void rstreams_current_kids(unsigned int *kuid, unsigned int *kgid);
void rstreams_current_kids(unsigned int *kuid, unsigned int *kgid)
{
	*kuid = __kuid_val(current_euid());
	*kgid = __kgid_val(current_egid());
}
EXPORT_SYMBOL_GPL(rstreams_current_kids);

/* Kernel ids as the caller's user namespace sees them (the overflow ids if unmapped). */
void rstreams_map_kids(unsigned int kuid, unsigned int kgid, unsigned int *uid, unsigned int *gid);
void rstreams_map_kids(unsigned int kuid, unsigned int kgid, unsigned int *uid, unsigned int *gid)
{
	*uid = from_kuid_munged(current_user_ns(), KUIDT_INIT(kuid));
	*gid = from_kgid_munged(current_user_ns(), KGIDT_INIT(kgid));
}
EXPORT_SYMBOL_GPL(rstreams_map_kids);

int rstreams_receive_fd(struct file *file, int __user *ufd, unsigned int o_flags);
int rstreams_receive_fd(struct file *file, int __user *ufd, unsigned int o_flags)
{
	return receive_fd(file, ufd, o_flags);
}
EXPORT_SYMBOL_GPL(rstreams_receive_fd);

/*
 * Whether a file can itself hold open files, so that passing it over a STREAMS pipe could
 * close a cycle nobody can collect: an AF_UNIX socket (SCM_RIGHTS; the AF_UNIX garbage
 * collector cannot see references held by a Stream) or an io_uring instance (registered
 * files; io_is_uring_fops() is not exported, its anon inode's name says what it is).
 */
bool rstreams_file_carries_files(struct file *file);
bool rstreams_file_carries_files(struct file *file)
{
	struct socket *sock = sock_from_file(file);

	if (sock)
		return sock->sk && sock->sk->sk_family == AF_UNIX;
	return strcmp(file->f_path.dentry->d_name.name, "[io_uring]") == 0;
}
EXPORT_SYMBOL_GPL(rstreams_file_carries_files);

struct rstreams_inflight {
	struct hlist_node node;
	kuid_t uid;
	unsigned long n;
};

static DEFINE_HASHTABLE(rstreams_inflight_users, 6);
static DEFINE_SPINLOCK(rstreams_inflight_lock);

static struct rstreams_inflight *rstreams_inflight_find(kuid_t uid)
{
	struct rstreams_inflight *u;

	hash_for_each_possible(rstreams_inflight_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/*
 * Charge one file in flight to the caller's real uid, stored in *kuid for the uncharge:
 * 0, -ETOOMANYREFS (the user has RLIMIT_NOFILE files in flight and neither CAP_SYS_RESOURCE
 * nor CAP_SYS_ADMIN) or -ENOMEM. Process context, may sleep.
 */
int rstreams_inflight_charge(unsigned int *kuid);
int rstreams_inflight_charge(unsigned int *kuid)
{
	kuid_t uid = current_uid();
	unsigned long limit = rlimit(RLIMIT_NOFILE);
	struct rstreams_inflight *u, *fresh;
	unsigned long flags;
	bool over;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock_irqsave(&rstreams_inflight_lock, flags);
	u = rstreams_inflight_find(uid);
	over = (u ? u->n : 0) >= limit;
	spin_unlock_irqrestore(&rstreams_inflight_lock, flags);
	/* The capability check (which may audit) only above the limit, and without the lock. */
	if (over && !capable(CAP_SYS_RESOURCE) && !capable(CAP_SYS_ADMIN)) {
		kfree(fresh);
		return -ETOOMANYREFS;
	}
	spin_lock_irqsave(&rstreams_inflight_lock, flags);
	u = rstreams_inflight_find(uid);
	if (!u) {
		if (!fresh) {
			spin_unlock_irqrestore(&rstreams_inflight_lock, flags);
			return -ENOMEM;
		}
		u = fresh;
		fresh = NULL;
		u->uid = uid;
		hash_add(rstreams_inflight_users, &u->node, __kuid_val(uid));
	}
	u->n++;
	spin_unlock_irqrestore(&rstreams_inflight_lock, flags);
	kfree(fresh);
	*kuid = __kuid_val(uid);
	return 0;
}
EXPORT_SYMBOL_GPL(rstreams_inflight_charge);

/* Give back one charge of rstreams_inflight_charge(). Any context. */
void rstreams_inflight_uncharge(unsigned int kuid);
void rstreams_inflight_uncharge(unsigned int kuid)
{
	struct rstreams_inflight *u;
	unsigned long flags;

	spin_lock_irqsave(&rstreams_inflight_lock, flags);
	u = rstreams_inflight_find(KUIDT_INIT(kuid));
	if (u && --u->n == 0) {
		hash_del(&u->node);
		kfree(u);
	}
	spin_unlock_irqrestore(&rstreams_inflight_lock, flags);
}
EXPORT_SYMBOL_GPL(rstreams_inflight_uncharge);

/* The files in flight charged to kernel uid `kuid` (tests and /proc). */
unsigned long rstreams_inflight_of(unsigned int kuid);
unsigned long rstreams_inflight_of(unsigned int kuid)
{
	struct rstreams_inflight *u;
	unsigned long flags, n;

	spin_lock_irqsave(&rstreams_inflight_lock, flags);
	u = rstreams_inflight_find(KUIDT_INIT(kuid));
	n = u ? u->n : 0;
	spin_unlock_irqrestore(&rstreams_inflight_lock, flags);
	return n;
}
EXPORT_SYMBOL_GPL(rstreams_inflight_of);

/* Whether the caller has CAP_SYS_ADMIN in the initial user namespace (no audit record: asked
 * at every open of a multiplexing driver, whether or not the privilege is used). */
bool rstreams_current_sysadmin(void);
bool rstreams_current_sysadmin(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}
EXPORT_SYMBOL_GPL(rstreams_current_sysadmin);

/* An I_SETSIG owner: the registrant's thread group and credentials, both counted. */
struct rstreams_sigowner {
	struct pid *pid;
	const struct cred *cred;
};

/* The calling process as an owner, or NULL without memory. Process context. */
struct rstreams_sigowner *rstreams_sigowner_current(void);
struct rstreams_sigowner *rstreams_sigowner_current(void)
{
	struct rstreams_sigowner *o = kmalloc(sizeof(*o), GFP_KERNEL_ACCOUNT);

	if (!o)
		return NULL;
	o->pid = get_pid(task_tgid(current));
	o->cred = get_current_cred();
	return o;
}
EXPORT_SYMBOL_GPL(rstreams_sigowner_current);

/* Release an owner of rstreams_sigowner_current(). Any context. */
void rstreams_sigowner_free(struct rstreams_sigowner *o);
void rstreams_sigowner_free(struct rstreams_sigowner *o)
{
	put_pid(o->pid);
	put_cred(o->cred);
	kfree(o);
}
EXPORT_SYMBOL_GPL(rstreams_sigowner_free);

/* The owner's identity: its thread group's struct pid (alive while the owner holds it). */
void *rstreams_sigowner_key(const struct rstreams_sigowner *o);
void *rstreams_sigowner_key(const struct rstreams_sigowner *o)
{
	return o->pid;
}
EXPORT_SYMBOL_GPL(rstreams_sigowner_key);

/* The caller's identity in the same terms (not counted: compare, do not keep). */
void *rstreams_current_tgid_key(void);
void *rstreams_current_tgid_key(void)
{
	return task_tgid(current);
}
EXPORT_SYMBOL_GPL(rstreams_current_tgid_key);

/*
 * Send `sig` to the owner's thread group if it still exists and the owner's credentials may
 * still signal it (sigio_perm(): root, or the owner's uid or euid is the target's uid or
 * saved uid; a process that changed credentials since it registered gets nothing, as with
 * F_SETOWN). Any context.
 */
void rstreams_sigowner_kill(const struct rstreams_sigowner *o, int sig);
void rstreams_sigowner_kill(const struct rstreams_sigowner *o, int sig)
{
	const struct cred *tcred;
	struct task_struct *p;
	bool ok;

	rcu_read_lock();
	p = pid_task(o->pid, PIDTYPE_TGID);
	if (p) {
		tcred = __task_cred(p);
		ok = uid_eq(o->cred->euid, GLOBAL_ROOT_UID) ||
		     uid_eq(o->cred->euid, tcred->suid) || uid_eq(o->cred->euid, tcred->uid) ||
		     uid_eq(o->cred->uid, tcred->suid) || uid_eq(o->cred->uid, tcred->uid);
		if (ok)
			kill_pid(o->pid, sig, 1);
	}
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(rstreams_sigowner_kill);
