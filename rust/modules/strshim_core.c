// SPDX-License-Identifier: GPL-2.0
/*
 * strshim.ko: the few Linux 6.12 APIs that the Rust kernel crate cannot reach, for streams.ko
 * (this file; strudp.c has the kernel UDP socket of TPI UDP).
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
#include <linux/uaccess.h>
#include <linux/fault-inject-usercopy.h>
#include <linux/fcntl.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/dcache.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/uio.h>
#include <linux/bottom_half.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/shrinker.h>
#include <linux/percpu.h>
#include <linux/unaligned.h>

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

/*
 * readv/writev (->read_iter/->write_iter, iter.rs): copies at an offset into the data an
 * iov_iter describes, made on a private copy of the iterator so that the Stream head may copy
 * the same bytes again after a retry; the caller's iterator is advanced once, at the end, by
 * what the call reports done. Returns the bytes copied (fewer than len: a bad address), or
 * -EFAULT for a range outside the iterator or the wrong direction.
 */
int rstreams_iter_copy(struct iov_iter *it, size_t off, void *buf, size_t len, int to_iter);
int rstreams_iter_copy(struct iov_iter *it, size_t off, void *buf, size_t len, int to_iter)
{
	struct iov_iter c = *it;
	size_t n;

	/* A readv's iterator is only written, a writev's only read (no WARN on misuse). */
	if (!!to_iter == it->data_source)
		return -EFAULT;
	if (off > iov_iter_count(&c) || len > iov_iter_count(&c) - off)
		return -EFAULT;
	iov_iter_advance(&c, off);
	n = to_iter ? copy_to_iter(buf, len, &c) : copy_from_iter(buf, len, &c);
	return n > INT_MAX ? INT_MAX : (int)n;
}
EXPORT_SYMBOL_GPL(rstreams_iter_copy);

size_t rstreams_iter_count(const struct iov_iter *it);
size_t rstreams_iter_count(const struct iov_iter *it)
{
	return iov_iter_count(it);
}
EXPORT_SYMBOL_GPL(rstreams_iter_count);

void rstreams_iter_advance(struct iov_iter *it, size_t n);
void rstreams_iter_advance(struct iov_iter *it, size_t n)
{
	iov_iter_advance(it, n);
}
EXPORT_SYMBOL_GPL(rstreams_iter_advance);

/* The file of a kiocb, and its flags as O_* (IOCB_NOWAIT counts as O_NONBLOCK). */
struct file *rstreams_kiocb_file(struct kiocb *k, unsigned int *flags);
struct file *rstreams_kiocb_file(struct kiocb *k, unsigned int *flags)
{
	*flags = READ_ONCE(k->ki_filp->f_flags) | ((k->ki_flags & IOCB_NOWAIT) ? O_NONBLOCK : 0);
	return k->ki_filp;
}
EXPORT_SYMBOL_GPL(rstreams_kiocb_file);

/*
 * O_ASYNC (fasync.rs): a list of fasync entries per Stream head end. fasync_helper adds or
 * removes the file's entry; kill_fasync sends SIGIO (or the F_SETSIG signal) to each entry's
 * owner (F_SETOWN) with si_code `code` (POLL_IN, POLL_OUT, ...). rstreams_fasync_move hands a
 * list to a new head (I_PIPE welds an unconnected end): the entries stay valid throughout, so
 * an RCU reader of either head sees a whole list or none.
 */
int rstreams_fasync(int fd, struct file *filp, int on, struct fasync_struct **fa);
int rstreams_fasync(int fd, struct file *filp, int on, struct fasync_struct **fa)
{
	return fasync_helper(fd, filp, on, fa);
}
EXPORT_SYMBOL_GPL(rstreams_fasync);

void rstreams_kill_fasync(struct fasync_struct **fa, int code);
void rstreams_kill_fasync(struct fasync_struct **fa, int code)
{
	kill_fasync(fa, SIGIO, code);
}
EXPORT_SYMBOL_GPL(rstreams_kill_fasync);

void rstreams_fasync_move(struct fasync_struct **from, struct fasync_struct **to);
void rstreams_fasync_move(struct fasync_struct **from, struct fasync_struct **to)
{
	struct fasync_struct *fa = READ_ONCE(*from);

	WRITE_ONCE(*from, NULL);
	rcu_assign_pointer(*to, fa);
}
EXPORT_SYMBOL_GPL(rstreams_fasync_move);

/*
 * A delayed work item calling fn(ctx) on the system workqueue (dwork.rs owns it). `atomic`:
 * allocate without sleeping (the caller may hold a Stream lock).
 */
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

void *rstreams_dwork_new(void (*fn)(void *ctx), void *ctx, bool atomic);
void *rstreams_dwork_new(void (*fn)(void *ctx), void *ctx, bool atomic)
{
	struct rstreams_dwork *d = kzalloc(sizeof(*d), atomic ? GFP_ATOMIC : GFP_KERNEL);

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

/* Run the work `delay` jiffies from now, moving it if already pending. */
void rstreams_dwork_rearm(void *p, unsigned long delay);
void rstreams_dwork_rearm(void *p, unsigned long delay)
{
	struct rstreams_dwork *d = p;

	mod_delayed_work(system_wq, &d->dw, delay);
}
EXPORT_SYMBOL_GPL(rstreams_dwork_rearm);

/* Whether the work is queued to run (again): false while only its callback runs. */
bool rstreams_dwork_pending(void *p);
bool rstreams_dwork_pending(void *p)
{
	struct rstreams_dwork *d = p;

	return delayed_work_pending(&d->dw);
}
EXPORT_SYMBOL_GPL(rstreams_dwork_pending);

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

/*
 * Softirq contexts (softirq.rs owns them): an hrtimer whose callback runs in softirq context
 * (HRTIMER_MODE_REL_SOFT) and a tasklet, each calling fn(ctx). Made with GFP_ATOMIC (the
 * caller may hold a Stream lock); freeing cancels and waits for a running callback first
 * (hrtimer_cancel, tasklet_kill), so it sleeps: process context only.
 */
struct rstreams_hrtimer {
	struct hrtimer t;
	void (*fn)(void *ctx);
	void *ctx;
};

static enum hrtimer_restart rstreams_hrtimer_run(struct hrtimer *t)
{
	struct rstreams_hrtimer *h = container_of(t, struct rstreams_hrtimer, t);

	/* The callback restarts the timer itself if it wants to (hrtimer_start may be called
	 * from the timer's own callback; the restart stands, whatever this returns). */
	h->fn(h->ctx);
	return HRTIMER_NORESTART;
}

void *rstreams_hrtimer_new(void (*fn)(void *ctx), void *ctx);
void *rstreams_hrtimer_new(void (*fn)(void *ctx), void *ctx)
{
	struct rstreams_hrtimer *h = kzalloc(sizeof(*h), GFP_ATOMIC);

	if (!h)
		return NULL;
	hrtimer_init(&h->t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	h->t.function = rstreams_hrtimer_run;
	h->fn = fn;
	h->ctx = ctx;
	return h;
}
EXPORT_SYMBOL_GPL(rstreams_hrtimer_new);

/* Run the callback `ns` nanoseconds from now (moving it if it is already armed). */
void rstreams_hrtimer_start(void *p, u64 ns);
void rstreams_hrtimer_start(void *p, u64 ns)
{
	struct rstreams_hrtimer *h = p;

	hrtimer_start(&h->t, ns_to_ktime(ns), HRTIMER_MODE_REL_SOFT);
}
EXPORT_SYMBOL_GPL(rstreams_hrtimer_start);

void *rstreams_hrtimer_free(void *p);
void *rstreams_hrtimer_free(void *p)
{
	struct rstreams_hrtimer *h = p;
	void *ctx = h->ctx;

	hrtimer_cancel(&h->t);
	kfree(h);
	return ctx;
}
EXPORT_SYMBOL_GPL(rstreams_hrtimer_free);

struct rstreams_tasklet {
	struct tasklet_struct t;
	void (*fn)(void *ctx);
	void *ctx;
};

static void rstreams_tasklet_run(struct tasklet_struct *t)
{
	struct rstreams_tasklet *k = from_tasklet(k, t, t);

	k->fn(k->ctx);
}

void *rstreams_tasklet_new(void (*fn)(void *ctx), void *ctx);
void *rstreams_tasklet_new(void (*fn)(void *ctx), void *ctx)
{
	struct rstreams_tasklet *k = kzalloc(sizeof(*k), GFP_ATOMIC);

	if (!k)
		return NULL;
	tasklet_setup(&k->t, rstreams_tasklet_run);
	k->fn = fn;
	k->ctx = ctx;
	return k;
}
EXPORT_SYMBOL_GPL(rstreams_tasklet_new);

/* Run the callback once more in softirq context (once, however often it is scheduled
 * before it runs; scheduled from its own callback, it runs again afterwards). */
void rstreams_tasklet_schedule(void *p);
void rstreams_tasklet_schedule(void *p)
{
	struct rstreams_tasklet *k = p;

	tasklet_schedule(&k->t);
}
EXPORT_SYMBOL_GPL(rstreams_tasklet_schedule);

/* tasklet_kill marks the tasklet scheduled itself first, so a callback that schedules it
 * again while we wait does not queue it; then it waits for the running callback. */
void *rstreams_tasklet_free(void *p);
void *rstreams_tasklet_free(void *p)
{
	struct rstreams_tasklet *k = p;
	void *ctx = k->ctx;

	tasklet_kill(&k->t);
	kfree(k);
	return ctx;
}
EXPORT_SYMBOL_GPL(rstreams_tasklet_free);

/* File references and descriptors for I_SENDFD/I_RECVFD (fdpass.rs). */
int rstreams_fd_reserve(unsigned int flags);
int rstreams_fd_reserve(unsigned int flags)
{
	return get_unused_fd_flags(flags);
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

/*
 * STREAMS pipe ends as FIFOs: files on a private pseudo filesystem (like Linux's pipefs) whose
 * inode is S_IFIFO, so that fstat(2) on a STREAMS pipe says what POSIX says of pipe(2). The
 * file operations are those of the pipe device the request came from (`like`), so the file is
 * an ordinary rstreams file otherwise.
 */
#define RSTREAMS_FS_MAGIC 0x53545245 /* "STRE" */

static struct vfsmount *rstreams_mnt;

static char *rstreamsfs_dname(struct dentry *dentry, char *buffer, int buflen)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "pipe:[%lu]", d_inode(dentry)->i_ino);

	/* dynamic_dname() is not exported: the same, by hand (the name ends the buffer). */
	if (n < 0 || n >= (int)sizeof(tmp) || n >= buflen)
		return ERR_PTR(-ENAMETOOLONG);
	buffer += buflen - n - 1;
	memcpy(buffer, tmp, n + 1);
	return buffer;
}

static const struct dentry_operations rstreamsfs_dops = {
	.d_dname = rstreamsfs_dname,
};

static int rstreamsfs_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx = init_pseudo(fc, RSTREAMS_FS_MAGIC);

	if (!ctx)
		return -ENOMEM;
	ctx->dops = &rstreamsfs_dops;
	return 0;
}

static struct file_system_type rstreams_fs_type = {
	.name = "rstreamsfs",
	.init_fs_context = rstreamsfs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* A new FIFO-typed file with `like`'s file operations and `private` as private_data; NULL and
 * *err on failure (then `private` is still the caller's). Takes a reference on the owner
 * module of the operations, which the file's last fput drops. */
void *rstreams_fifo_file(struct file *like, void *private, int nonblock, int *err);
void *rstreams_fifo_file(struct file *like, void *private, int nonblock, int *err)
{
	const struct file_operations *fops = like->f_op;
	struct inode *inode;
	struct file *f;

	if (IS_ERR_OR_NULL(rstreams_mnt)) {
		*err = -ENODEV;
		return NULL;
	}
	if (!try_module_get(fops->owner)) {
		*err = -ENOENT;
		return NULL;
	}
	inode = new_inode(rstreams_mnt->mnt_sb);
	if (!inode) {
		module_put(fops->owner);
		*err = -ENFILE;
		return NULL;
	}
	inode->i_ino = get_next_ino();
	inode->i_mode = S_IFIFO | S_IRUSR | S_IWUSR;
	inode->i_uid = current_fsuid();
	inode->i_gid = current_fsgid();
	simple_inode_init_ts(inode);
	f = alloc_file_pseudo(inode, rstreams_mnt, "", O_RDWR | (nonblock ? O_NONBLOCK : 0), fops);
	if (IS_ERR(f)) {
		iput(inode);
		module_put(fops->owner);
		*err = PTR_ERR(f);
		return NULL;
	}
	f->private_data = private;
	/* No file position, as stream_open() gives the devices: lseek/pread/pwrite ESPIPE. */
	f->f_mode &= ~(FMODE_LSEEK | FMODE_PREAD | FMODE_PWRITE | FMODE_ATOMIC_POS);
	f->f_mode |= FMODE_STREAM;
	return f;
}
EXPORT_SYMBOL_GPL(rstreams_fifo_file);

/*
 * Devices whose open may sleep for long (a FIFO open waits for the other side). misc_open()
 * calls ->open with the global misc_mtx held, so such an open would stop every misc open in
 * the system (and the opener it waits for). These devices get minors of rstreams' own major
 * instead: rstreams_chr_open() does what misc_open() does (find the registration, take a
 * reference on its fops, which pins the registering module and so the registration, and leave
 * the registration in private_data for rstreams_misc_ctx) but drops its lock before calling
 * the driver's open.
 */
#define RSTREAMS_NCHR 16
static DEFINE_MUTEX(rstreams_chr_mtx);
static struct rstreams_misc *rstreams_chr_tab[RSTREAMS_NCHR];
static int rstreams_chr_major;

static char *rstreams_chr_devnode(const struct device *dev, umode_t *mode)
{
	const struct rstreams_misc *m = dev_get_drvdata(dev);

	if (mode)
		*mode = 0666;
	return m ? kstrdup(m->misc.nodename, GFP_KERNEL) : NULL;
}

static const struct class rstreams_chr_class = {
	.name = "rstreams",
	.devnode = rstreams_chr_devnode,
};

static int rstreams_chr_open(struct inode *inode, struct file *file)
{
	unsigned int minor = iminor(inode);
	const struct file_operations *fops = NULL;
	struct rstreams_misc *m = NULL;

	mutex_lock(&rstreams_chr_mtx);
	if (minor < RSTREAMS_NCHR && rstreams_chr_tab[minor]) {
		m = rstreams_chr_tab[minor];
		fops = fops_get(m->misc.fops);
	}
	mutex_unlock(&rstreams_chr_mtx);
	if (!fops)
		return -ENODEV;
	file->private_data = &m->misc;
	replace_fops(file, fops);
	return file->f_op->open ? file->f_op->open(inode, file) : 0;
}

static const struct file_operations rstreams_chr_fops = {
	.owner = THIS_MODULE,
	.open = rstreams_chr_open,
	.llseek = noop_llseek,
};

void *rstreams_chr_register(const char *name, const char *nodename,
			    const struct file_operations *fops, void *ctx, int *err);
void *rstreams_chr_register(const char *name, const char *nodename,
			    const struct file_operations *fops, void *ctx, int *err)
{
	struct rstreams_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);
	struct device *dev;
	int i;

	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->misc.name = name;
	m->misc.nodename = nodename;
	m->misc.fops = fops;
	m->ctx = ctx;
	mutex_lock(&rstreams_chr_mtx);
	for (i = 0; i < RSTREAMS_NCHR && rstreams_chr_tab[i]; i++)
		;
	*err = -EBUSY;
	if (i == RSTREAMS_NCHR)
		goto fail;
	m->misc.minor = i;
	dev = device_create(&rstreams_chr_class, NULL, MKDEV(rstreams_chr_major, i), m, "%s", name);
	*err = PTR_ERR_OR_ZERO(dev);
	if (*err)
		goto fail;
	rstreams_chr_tab[i] = m;
	mutex_unlock(&rstreams_chr_mtx);
	return m;
fail:
	mutex_unlock(&rstreams_chr_mtx);
	kfree(m);
	return NULL;
}
EXPORT_SYMBOL_GPL(rstreams_chr_register);

void rstreams_chr_deregister(void *handle);
void rstreams_chr_deregister(void *handle)
{
	struct rstreams_misc *m = handle;

	mutex_lock(&rstreams_chr_mtx);
	rstreams_chr_tab[m->misc.minor] = NULL;
	mutex_unlock(&rstreams_chr_mtx);
	device_destroy(&rstreams_chr_class, MKDEV(rstreams_chr_major, m->misc.minor));
	kfree(m);
}
EXPORT_SYMBOL_GPL(rstreams_chr_deregister);

/*
 * The module statistics' totals (core stream/stats.rs through sys::stat_add/stat_sum): a table
 * of counters per CPU, allocated at load. An add is one unlocked this_cpu_add on this CPU's
 * copy (correct in any context), so the writer and the reader of a Stream, on two CPUs, never
 * write the same line; a read sums the copies while they may change (a racy sum, exact once
 * the adders are done). RSTREAMS_NSTATS is the core's sys::NSTATS.
 */
#define RSTREAMS_NSTATS 512
static unsigned long __percpu *rstreams_stats;

void rstreams_stat_add(unsigned int i, unsigned long n);
void rstreams_stat_add(unsigned int i, unsigned long n)
{
	if (likely(i < RSTREAMS_NSTATS))
		this_cpu_add(rstreams_stats[i], n);
}
EXPORT_SYMBOL_GPL(rstreams_stat_add);

unsigned long rstreams_stat_sum(unsigned int i);
unsigned long rstreams_stat_sum(unsigned int i)
{
	unsigned long n = 0;
	int cpu;

	if (i >= RSTREAMS_NSTATS)
		return 0;
	for_each_possible_cpu(cpu)
		n += data_race(*per_cpu_ptr(&rstreams_stats[i], cpu));
	return n;
}
EXPORT_SYMBOL_GPL(rstreams_stat_sum);

/* Zero every CPU's copy: streams.ko's load, before any Stream counts (this table outlives it). */
void rstreams_stat_reset(void);
void rstreams_stat_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(rstreams_stats, cpu), 0, RSTREAMS_NSTATS * sizeof(unsigned long));
}
EXPORT_SYMBOL_GPL(rstreams_stat_reset);

static int __init rstreams_shim_init(void)
{
	int err;

	rstreams_stats = __alloc_percpu(RSTREAMS_NSTATS * sizeof(unsigned long), SMP_CACHE_BYTES);
	if (!rstreams_stats)
		return -ENOMEM;
	err = class_register(&rstreams_chr_class);
	if (err) {
		free_percpu(rstreams_stats);
		return err;
	}
	rstreams_chr_major = __register_chrdev(0, 0, RSTREAMS_NCHR, "rstreams", &rstreams_chr_fops);
	if (rstreams_chr_major < 0) {
		class_unregister(&rstreams_chr_class);
		free_percpu(rstreams_stats);
		return rstreams_chr_major;
	}
	rstreams_mnt = kern_mount(&rstreams_fs_type);
	if (IS_ERR(rstreams_mnt)) {
		__unregister_chrdev(rstreams_chr_major, 0, RSTREAMS_NCHR, "rstreams");
		class_unregister(&rstreams_chr_class);
		free_percpu(rstreams_stats);
		return PTR_ERR(rstreams_mnt);
	}
	return 0;
}

static void __exit rstreams_shim_exit(void)
{
	kern_unmount(rstreams_mnt);
	__unregister_chrdev(rstreams_chr_major, 0, RSTREAMS_NCHR, "rstreams");
	class_unregister(&rstreams_chr_class);
	free_percpu(rstreams_stats);
}

module_init(rstreams_shim_init);
module_exit(rstreams_shim_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rstreams: C wrappers for APIs the 6.12 Rust kernel crate lacks");

/*
 * Bottom halves off and on again around the inbound lock of a perimeter (the core's
 * sys::BhLock): local_bh_disable/enable are inline, so Rust reaches them through here.
 */
void rstreams_local_bh_disable(void);
void rstreams_local_bh_disable(void)
{
	local_bh_disable();
}
EXPORT_SYMBOL_GPL(rstreams_local_bh_disable);

void rstreams_local_bh_enable(void);
void rstreams_local_bh_enable(void)
{
	local_bh_enable();
}
EXPORT_SYMBOL_GPL(rstreams_local_bh_enable);

/*
 * The inbound lock of a perimeter and the express write's link cell (the core's sys::BhLock):
 * spin_lock_bh/spin_unlock_bh are inline, so Rust reaches them through here: a lock and an
 * unlock enter five functions, not the eight of local_bh_disable/enable around the kernel
 * crate's SpinLock (docs/performance.md, issue 12).
 */
void rstreams_spin_lock_bh(spinlock_t *lock);
void rstreams_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}
EXPORT_SYMBOL_GPL(rstreams_spin_lock_bh);

void rstreams_spin_unlock_bh(spinlock_t *lock);
void rstreams_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}
EXPORT_SYMBOL_GPL(rstreams_spin_unlock_bh);

/*
 * Write hold's cell (the core's sys::LeafLock, taken in process and workqueue context only):
 * spin_lock/spin_unlock, one call each way from Rust instead of the kernel crate's backend
 * and its rust_helper_spin_lock/unlock.
 */
void rstreams_spin_lock(spinlock_t *lock);
void rstreams_spin_lock(spinlock_t *lock)
{
	spin_lock(lock);
}
EXPORT_SYMBOL_GPL(rstreams_spin_lock);

void rstreams_spin_unlock(spinlock_t *lock);
void rstreams_spin_unlock(spinlock_t *lock)
{
	spin_unlock(lock);
}
EXPORT_SYMBOL_GPL(rstreams_spin_unlock);

/*
 * A copy of at most RSTREAMS_SMALL_COPY bytes in from or out to user space (rust/modules/uio.rs:
 * the small read and write, the putmsg/getmsg `struct strpmsg` and its write-back) inline,
 * eight bytes at a time, then a byte at a time, under user_access_begin, instead of through
 * the kernel crate's UserSlice, the copy_from_user helper and the out-of-line copy routine.
 * 0, or `n` when any byte faulted (or `n` is too large): the caller then copies through
 * UserSlice, which finds the fault again and how far the copy got.
 */
#define RSTREAMS_SMALL_COPY 64

unsigned long rstreams_copy_in_small(void *dst, const void __user *src, unsigned long n);
unsigned long rstreams_copy_in_small(void *dst, const void __user *src, unsigned long n)
{
	u8 *d = dst;
	const u8 __user *s = src;
	unsigned long i = 0;

	might_fault();
	if (n > RSTREAMS_SMALL_COPY || should_fail_usercopy())
		return n;
	if (!user_access_begin(s, n))
		return n;
	for (; n - i >= sizeof(u64); i += sizeof(u64)) {
		u64 v;

		unsafe_get_user(v, (const u64 __user *)(s + i), fault);
		put_unaligned(v, (u64 *)(d + i));
	}
	for (; i < n; i++)
		unsafe_get_user(d[i], s + i, fault);
	user_access_end();
	return 0;
fault:
	user_access_end();
	return n;
}
EXPORT_SYMBOL_GPL(rstreams_copy_in_small);

unsigned long rstreams_copy_out_small(void __user *dst, const void *src, unsigned long n);
unsigned long rstreams_copy_out_small(void __user *dst, const void *src, unsigned long n)
{
	u8 __user *d = dst;
	const u8 *s = src;
	unsigned long i = 0;

	might_fault();
	if (n > RSTREAMS_SMALL_COPY || should_fail_usercopy())
		return n;
	if (!user_access_begin(d, n))
		return n;
	for (; n - i >= sizeof(u64); i += sizeof(u64))
		unsafe_put_user(get_unaligned((const u64 *)(s + i)), (u64 __user *)(d + i), fault);
	for (; i < n; i++)
		unsafe_put_user(s[i], d + i, fault);
	user_access_end();
	return 0;
fault:
	user_access_end();
	return n;
}
EXPORT_SYMBOL_GPL(rstreams_copy_out_small);

/*
 * The held write's copy (rust/modules/uio.rs, UserIo::copy_from_user_nofault) of at most
 * RSTREAMS_NOFAULT_COPY bytes, under write hold's spinlock: what copy_from_user_nofault
 * (mm/maccess.c) does, inline, a word at a time, then the tail a byte at a time, the address
 * checked as _inline_copy_from_user checks it (masked where the arch can). Page faults
 * are disabled, so a fault never sleeps: it fails the copy (the caller appends nothing and
 * stages the write with no lock held). No might_fault and no should_fail_usercopy, as in
 * copy_from_user_nofault. Its nmi_uaccess_okay is left out: it guards NMI context, where the
 * loaded mm may not be current's; write(2) runs in its caller's process context, with its
 * own mm loaded (as every copy_from_user assumes). 0, or `n` when the copy faulted (or `n`
 * is too large).
 */
#define RSTREAMS_NOFAULT_COPY 64

unsigned long rstreams_copy_in_nofault(void *dst, const void __user *src, unsigned long n);
unsigned long rstreams_copy_in_nofault(void *dst, const void __user *src, unsigned long n)
{
	u8 *d = dst;
	const u8 __user *s = src;
	unsigned long i = 0;

	if (n > RSTREAMS_NOFAULT_COPY)
		return n;
	pagefault_disable();
	if (can_do_masked_user_access())
		s = masked_user_access_begin(s);
	else if (!user_access_begin(s, n))
		goto out;
	for (; i + sizeof(u64) <= n; i += sizeof(u64)) {
		u64 w;

		unsafe_get_user(w, (const u64 __user *)(s + i), fault);
		memcpy(d + i, &w, sizeof(w));
	}
	for (; i < n; i++)
		unsafe_get_user(d[i], s + i, fault);
	user_access_end();
	pagefault_enable();
	return 0;
fault:
	user_access_end();
out:
	pagefault_enable();
	return n;
}
EXPORT_SYMBOL_GPL(rstreams_copy_in_nofault);

/*
 * A shrinker around two Rust callbacks (rust/modules/mblkcache.rs: the message block cache):
 * how many objects could be freed, and free up to `nr` of them. 6.12's Rust crate has no
 * shrinker abstraction, and `struct shrinker` wants C callbacks.
 */
struct rstreams_shrink {
	unsigned long (*count)(void);
	unsigned long (*scan)(unsigned long nr);
};

static unsigned long rstreams_shrink_count(struct shrinker *s, struct shrink_control *sc)
{
	struct rstreams_shrink *r = s->private_data;
	unsigned long n = r->count();

	return n ? n : SHRINK_EMPTY;
}

static unsigned long rstreams_shrink_scan(struct shrinker *s, struct shrink_control *sc)
{
	struct rstreams_shrink *r = s->private_data;
	unsigned long n = r->scan(sc->nr_to_scan);

	return n ? n : SHRINK_STOP;
}

void *rstreams_shrinker_new(const char *name, unsigned long (*count)(void),
			    unsigned long (*scan)(unsigned long nr));
void *rstreams_shrinker_new(const char *name, unsigned long (*count)(void),
			    unsigned long (*scan)(unsigned long nr))
{
	struct rstreams_shrink *r = kmalloc(sizeof(*r), GFP_KERNEL);
	struct shrinker *s;

	if (!r)
		return NULL;
	r->count = count;
	r->scan = scan;
	s = shrinker_alloc(0, "%s", name);
	if (!s) {
		kfree(r);
		return NULL;
	}
	s->count_objects = rstreams_shrink_count;
	s->scan_objects = rstreams_shrink_scan;
	s->seeks = DEFAULT_SEEKS;
	s->private_data = r;
	shrinker_register(s);
	return s;
}
EXPORT_SYMBOL_GPL(rstreams_shrinker_new);

/* Unregister; shrinker_free waits for callbacks in progress, so none runs afterwards. */
void rstreams_shrinker_free(void *handle);
void rstreams_shrinker_free(void *handle)
{
	struct shrinker *s = handle;
	struct rstreams_shrink *r = s->private_data;

	shrinker_free(s);
	kfree(r);
}
EXPORT_SYMBOL_GPL(rstreams_shrinker_free);

/*
 * The CPU the caller runs on, for the core's per-CPU slots (sys::cpu_id, the message block
 * cache): a hint that may be stale at once, so the raw form (no preemption check).
 */
unsigned int rstreams_cpu_id(void);
unsigned int rstreams_cpu_id(void)
{
	return raw_smp_processor_id();
}
EXPORT_SYMBOL_GPL(rstreams_cpu_id);

/*
 * The STREAMS scheduler's runner (runq.rs): a per-CPU workqueue (not WQ_UNBOUND, so a
 * perimeter scheduled from a CPU runs on that CPU), WQ_MEM_RECLAIM so that a Stream can
 * still make progress under memory pressure. Destroying it drains what is queued.
 */
void *rstreams_runq_create(void);
void *rstreams_runq_create(void)
{
	return alloc_workqueue("rstreams_runq", WQ_MEM_RECLAIM, 0);
}
EXPORT_SYMBOL_GPL(rstreams_runq_create);

/*
 * Wait for what is queued on the runner now (flush_workqueue: unlike destroy_workqueue it
 * does not forbid new work meanwhile, so what a running item chains is still queued).
 */
void rstreams_runq_flush(void *wq);
void rstreams_runq_flush(void *wq)
{
	flush_workqueue(wq);
}
EXPORT_SYMBOL_GPL(rstreams_runq_flush);

void rstreams_runq_destroy(void *wq);
void rstreams_runq_destroy(void *wq)
{
	destroy_workqueue(wq);
}
EXPORT_SYMBOL_GPL(rstreams_runq_destroy);
