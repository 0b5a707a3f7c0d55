// SPDX-License-Identifier: GPL-2.0
/*
 * strshim.ko: the few Linux 6.12 APIs that the Rust kernel crate cannot reach, for streams.ko.
 *
 * 6.12's `kernel` crate has no miscdevice abstraction and bindgen does not see
 * `struct miscdevice`, `misc_register()` wants a structure we would otherwise have to mirror by
 * hand, and `poll_wait()` and the `struct file` accessors are inline. Each function here is a
 * one-line wrapper with no policy; the safe Rust wrappers (`rust/modules/chardev.rs`,
 * `rust/modules/procfs.rs`) document the invariants. procfs: 6.12's Rust crate has no proc_fs
 * abstraction and `struct proc_ops` wants C callbacks, so a read-only seq_file entry is made
 * here around one Rust show callback. It is a separate module because a Kbuild module built from `streams.rs`
 * cannot also contain a C object; `streams.ko` depends on it, so `modprobe streams` loads it.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/cred.h>
#include <linux/fcntl.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

/* A misc device plus the Rust registration it belongs to (found again in open). */
struct rstreams_misc {
	struct miscdevice misc;
	void *ctx;
};

void *rstreams_misc_register(const char *name, const char *nodename,
			     const struct file_operations *fops, void *ctx, int *err);
void rstreams_misc_deregister(void *handle);
void *rstreams_misc_ctx(struct file *file);
void *rstreams_file_private(struct file *file);
void rstreams_file_set_private(struct file *file, void *p);
unsigned int rstreams_file_flags(struct file *file);
void rstreams_poll_wait(struct file *file, struct wait_queue_head *wq, struct poll_table_struct *pt);
void rstreams_send_sig_current(int sig);

void *rstreams_misc_register(const char *name, const char *nodename,
			     const struct file_operations *fops, void *ctx, int *err)
{
	struct rstreams_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.nodename = nodename;
	m->misc.mode = 0666;
	m->misc.fops = fops;
	m->ctx = ctx;
	*err = misc_register(&m->misc);
	if (*err) {
		kfree(m);
		return NULL;
	}
	return m;
}
EXPORT_SYMBOL_GPL(rstreams_misc_register);

void rstreams_misc_deregister(void *handle)
{
	struct rstreams_misc *m = handle;

	misc_deregister(&m->misc);
	kfree(m);
}
EXPORT_SYMBOL_GPL(rstreams_misc_deregister);

/* Only valid inside ->open: misc_open() left the miscdevice in private_data. */
void *rstreams_misc_ctx(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct rstreams_misc, misc)->ctx;
}
EXPORT_SYMBOL_GPL(rstreams_misc_ctx);

void *rstreams_file_private(struct file *file)
{
	return file->private_data;
}
EXPORT_SYMBOL_GPL(rstreams_file_private);

void rstreams_file_set_private(struct file *file, void *p)
{
	file->private_data = p;
}
EXPORT_SYMBOL_GPL(rstreams_file_set_private);

unsigned int rstreams_file_flags(struct file *file)
{
	return READ_ONCE(file->f_flags);
}
EXPORT_SYMBOL_GPL(rstreams_file_flags);

void rstreams_poll_wait(struct file *file, struct wait_queue_head *wq, struct poll_table_struct *pt)
{
	poll_wait(file, wq, pt);
}
EXPORT_SYMBOL_GPL(rstreams_poll_wait);

void rstreams_send_sig_current(int sig)
{
	send_sig(sig, current, 0);
}
EXPORT_SYMBOL_GPL(rstreams_send_sig_current);


void rstreams_init_waitqueue(struct wait_queue_head *wq);
void rstreams_init_waitqueue(struct wait_queue_head *wq)
{
	init_waitqueue_head(wq);
}
EXPORT_SYMBOL_GPL(rstreams_init_waitqueue);

struct file *rstreams_fget(unsigned int fd);
struct file *rstreams_fget(unsigned int fd)
{
	return fget(fd);
}
EXPORT_SYMBOL_GPL(rstreams_fget);

void rstreams_fput(struct file *file);
void rstreams_fput(struct file *file)
{
	fput(file);
}
EXPORT_SYMBOL_GPL(rstreams_fput);

bool rstreams_file_same_ops(struct file *a, struct file *b);
bool rstreams_file_same_ops(struct file *a, struct file *b)
{
	return a->f_op == b->f_op;
}
EXPORT_SYMBOL_GPL(rstreams_file_same_ops);

/* Wake the wait queue only if someone waits on it (the barrier pairs with the sleeper's
 * set_current_state in prepare_to_wait_event; see wq_has_sleeper). */
void rstreams_wake_up_if_sleepers(struct wait_queue_head *wq);
void rstreams_wake_up_if_sleepers(struct wait_queue_head *wq)
{
	if (wq_has_sleeper(wq))
		wake_up_all(wq);
}
EXPORT_SYMBOL_GPL(rstreams_wake_up_if_sleepers);

/* A delayed work item calling fn(ctx) on the system workqueue (dwork.rs owns it). */
struct rstreams_dwork {
	struct delayed_work dw;
	void (*fn)(void *ctx);
	void *ctx;
};

static void rstreams_dwork_run(struct work_struct *w)
{
	struct rstreams_dwork *d = container_of(to_delayed_work(w), struct rstreams_dwork, dw);

	d->fn(d->ctx);
}

void *rstreams_dwork_new(void (*fn)(void *ctx), void *ctx);
void *rstreams_dwork_new(void (*fn)(void *ctx), void *ctx)
{
	struct rstreams_dwork *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	INIT_DELAYED_WORK(&d->dw, rstreams_dwork_run);
	d->fn = fn;
	d->ctx = ctx;
	return d;
}
EXPORT_SYMBOL_GPL(rstreams_dwork_new);

void rstreams_dwork_arm(void *p, unsigned long delay);
void rstreams_dwork_arm(void *p, unsigned long delay)
{
	struct rstreams_dwork *d = p;

	schedule_delayed_work(&d->dw, delay);
}
EXPORT_SYMBOL_GPL(rstreams_dwork_arm);

/* Cancel (waiting for a running callback), free, and give back the context pointer. */
void *rstreams_dwork_free(void *p);
void *rstreams_dwork_free(void *p)
{
	struct rstreams_dwork *d = p;
	void *ctx = d->ctx;

	cancel_delayed_work_sync(&d->dw);
	kfree(d);
	return ctx;
}
EXPORT_SYMBOL_GPL(rstreams_dwork_free);

/* File references and descriptors for I_SENDFD/I_RECVFD (fdpass.rs). */
void rstreams_get_file(struct file *file);
void rstreams_get_file(struct file *file)
{
	get_file(file);
}
EXPORT_SYMBOL_GPL(rstreams_get_file);

int rstreams_fd_reserve(void);
int rstreams_fd_reserve(void)
{
	return get_unused_fd_flags(0);
}
EXPORT_SYMBOL_GPL(rstreams_fd_reserve);

void rstreams_fd_unreserve(int fd);
void rstreams_fd_unreserve(int fd)
{
	put_unused_fd(fd);
}
EXPORT_SYMBOL_GPL(rstreams_fd_unreserve);

void rstreams_fd_install(int fd, struct file *file);
void rstreams_fd_install(int fd, struct file *file)
{
	fd_install(fd, file);
}
EXPORT_SYMBOL_GPL(rstreams_fd_install);

void rstreams_current_ids(unsigned int *uid, unsigned int *gid);
void rstreams_current_ids(unsigned int *uid, unsigned int *gid)
{
	*uid = from_kuid_munged(current_user_ns(), current_euid());
	*gid = from_kgid_munged(current_user_ns(), current_egid());
}
EXPORT_SYMBOL_GPL(rstreams_current_ids);

/* SIGPOLL for I_SETSIG registrations: the registered process, if it still exists. */
void rstreams_kill_pid(int pid, int sig);
void rstreams_kill_pid(int pid, int sig)
{
	struct pid *p;

	rcu_read_lock();
	p = find_vpid(pid);
	if (p)
		kill_pid(p, sig, 1);
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(rstreams_kill_pid);
/*
 * A /proc entry: a directory (show == NULL) or a read-only single_open seq_file whose content
 * show(ctx, m) writes with rstreams_seq_write().
 */
typedef int (*rstreams_show_fn)(void *ctx, struct seq_file *m);

struct rstreams_proc {
	struct proc_dir_entry *pde;
	rstreams_show_fn show;
	void *ctx;
};

void *rstreams_proc_create(const char *name, void *parent, rstreams_show_fn show, void *ctx);
void rstreams_proc_remove(void *handle);
int rstreams_seq_write(struct seq_file *m, const char *s, size_t len);

static int rstreams_proc_show(struct seq_file *m, void *v)
{
	struct rstreams_proc *p = m->private;

	return p->show(p->ctx, m);
}

static int rstreams_proc_open(struct inode *inode, struct file *file)
{
	return single_open(file, rstreams_proc_show, pde_data(inode));
}

static const struct proc_ops rstreams_proc_ops = {
	.proc_open = rstreams_proc_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

void *rstreams_proc_create(const char *name, void *parent, rstreams_show_fn show, void *ctx)
{
	struct rstreams_proc *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct proc_dir_entry *dir = parent ? ((struct rstreams_proc *)parent)->pde : NULL;

	if (!p)
		return NULL;
	p->show = show;
	p->ctx = ctx;
	if (show)
		p->pde = proc_create_data(name, 0444, dir, &rstreams_proc_ops, p);
	else
		p->pde = proc_mkdir(name, dir);
	if (!p->pde) {
		kfree(p);
		return NULL;
	}
	return p;
}
EXPORT_SYMBOL_GPL(rstreams_proc_create);

/* proc_remove() waits for show calls in progress; none starts afterwards. */
void rstreams_proc_remove(void *handle)
{
	struct rstreams_proc *p = handle;

	proc_remove(p->pde);
	kfree(p);
}
EXPORT_SYMBOL_GPL(rstreams_proc_remove);

int rstreams_seq_write(struct seq_file *m, const char *s, size_t len)
{
	return seq_write(m, s, len);
}
EXPORT_SYMBOL_GPL(rstreams_seq_write);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rstreams: C wrappers for APIs the 6.12 Rust kernel crate lacks");
