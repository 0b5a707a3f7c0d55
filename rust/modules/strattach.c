// SPDX-License-Identifier: GPL-2.0
/*
 * strattach.ko: fattach(3) for rstreams: the filesystem type "streamsattach", whose every
 * mount is one STREAMS file attached over a path (SVR4 namefs; LfS mounts its specfs the same
 * way).
 *
 *   mount("streams", path, "streamsattach", 0, "fd=N[,mode=0OOO][,uid=U][,gid=G]")
 *
 *   fd N of the caller ──fget──▶ attach(file) (streams.ko: is it a Stream? hold its head)
 *                                     │ handle
 *   superblock ─ s_fs_info: strattach { handle, device fops, owner ref }
 *        └─ root inode: S_IFIFO (pipe end) or S_IFCHR (Stream over a driver), the only inode;
 *           i_fop = strattach_fops, whose open becomes a file of that device (replace_fops,
 *           as chrdev_open does) and asks streams.ko for its per-open object (open(handle,
 *           file)): a new file on the SAME Stream head, or with connld pushed on it, one end
 *           of a new STREAMS pipe whose other end goes to the server (connld.rs).
 *   umount (fdetach: MNT_DETACH) ─▶ kill_sb after the last file opened through the mount is
 *           closed ─▶ detach(handle) (streams.ko drops its hold: the head closes if nothing
 *           else has it open) and the module reference is dropped.
 *
 * The Rust side (rust/modules/fattach.rs) registers the three callbacks at streams.ko load and
 * removes them at its exit. Each superblock holds a reference on streams.ko, taken under
 * strattach_mtx while the callbacks are registered, so streams.ko cannot be unloaded while
 * anything is attached; the filesystem type's owner (this module) is pinned by the VFS.
 * A module of its own for the same reason as strshim.ko (Kbuild cannot mix the Rust module
 * with a C object).
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/cred.h>

#define STRATTACH_MAGIC 0x53544154 /* "STAT": statfs f_type of an attached path */

typedef void *(*strattach_attach_fn)(struct file *file, int *fifo, int *err);
typedef void *(*strattach_open_fn)(void *handle, struct file *file, unsigned int f_flags,
				   int *err);
typedef void (*strattach_detach_fn)(void *handle);

struct strattach_ops {
	struct module *owner;
	strattach_attach_fn attach;
	strattach_open_fn open;
	strattach_detach_fn detach;
};

/* The callbacks of streams.ko, while it is loaded (owner NULL otherwise). */
static DEFINE_MUTEX(strattach_mtx);
static struct strattach_ops strattach_cur;

/* One attachment: a superblock's s_fs_info. */
struct strattach {
	struct strattach_ops ops; /* owner: one module reference held */
	void *handle;
	const struct file_operations *fops; /* of the attached file (owner: ops.owner) */
	dev_t rdev;
	int fifo;
};

/* The mount options. */
struct strattach_ctx {
	int fd;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
};

int rstreams_attach_register(struct module *owner, strattach_attach_fn attach,
			     strattach_open_fn open, strattach_detach_fn detach);
void rstreams_attach_unregister(void);

int rstreams_attach_register(struct module *owner, strattach_attach_fn attach,
			     strattach_open_fn open, strattach_detach_fn detach)
{
	int err = -EBUSY;

	mutex_lock(&strattach_mtx);
	if (!strattach_cur.owner) {
		strattach_cur = (struct strattach_ops){ owner, attach, open, detach };
		err = 0;
	}
	mutex_unlock(&strattach_mtx);
	return err;
}
EXPORT_SYMBOL_GPL(rstreams_attach_register);

/* Called at streams.ko exit: no superblock holds it then, and none can be made after. */
void rstreams_attach_unregister(void)
{
	mutex_lock(&strattach_mtx);
	memset(&strattach_cur, 0, sizeof(strattach_cur));
	mutex_unlock(&strattach_mtx);
}
EXPORT_SYMBOL_GPL(rstreams_attach_unregister);

/* Drop an attachment: streams.ko's hold on the head, then its module reference. */
static void strattach_put(struct strattach *a)
{
	a->ops.detach(a->handle);
	module_put(a->ops.owner);
	kfree(a);
}

/* Attach `file` if it is a STREAMS file of the registered streams.ko: EINVAL if not. */
static struct strattach *strattach_get(struct file *file)
{
	struct strattach *a = kzalloc(sizeof(*a), GFP_KERNEL);
	int err = -EINVAL;

	if (!a)
		return ERR_PTR(-ENOMEM);
	mutex_lock(&strattach_mtx);
	/* Every file_operations owned by streams.ko belongs to one of its STREAMS devices. */
	if (strattach_cur.owner && file->f_op->owner == strattach_cur.owner &&
	    try_module_get(strattach_cur.owner)) {
		a->ops = strattach_cur;
		err = 0;
	}
	mutex_unlock(&strattach_mtx);
	if (err)
		goto fail;
	a->handle = a->ops.attach(file, &a->fifo, &err);
	if (!a->handle) {
		module_put(a->ops.owner);
		goto fail;
	}
	a->fops = file->f_op;
	a->rdev = file_inode(file)->i_rdev;
	return a;
fail:
	kfree(a);
	return ERR_PTR(err);
}

/*
 * open(2) of the attached path: a new file on the attached Stream head, or with connld pushed
 * there, one end of a new pipe (the file's inode stays the attached one).
 */
static int strattach_open(struct inode *inode, struct file *file)
{
	struct strattach *a = inode->i_sb->s_fs_info;
	const struct file_operations *fops = fops_get(a->fops);
	void *priv;
	int err = -ENOSR;

	if (!fops)
		return -ENODEV;
	/*
	 * The file becomes one of the device's files first, as in chrdev_open: streams.ko may
	 * make more files like it (connld), and if the open fails the VFS puts these fops.
	 */
	replace_fops(file, fops);
	priv = a->ops.open(a->handle, file, file->f_flags, &err);
	if (!priv)
		return err;
	file->private_data = priv;
	return 0;
}

static const struct file_operations strattach_fops = {
	.owner = THIS_MODULE,
	.open = strattach_open,
	.llseek = noop_llseek,
};

static const struct super_operations strattach_sops = {
	.statfs = simple_statfs,
	.drop_inode = generic_delete_inode,
};

static int strattach_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct strattach_ctx *ctx = fc->fs_private;
	struct strattach *a = sb->s_fs_info;
	struct inode *inode;

	sb->s_magic = STRATTACH_MAGIC;
	sb->s_op = &strattach_sops;
	sb->s_time_gran = 1;
	inode = new_inode(sb);
	if (!inode)
		return -ENOMEM;
	inode->i_ino = 1;
	inode->i_mode = (a->fifo ? S_IFIFO : S_IFCHR) | (ctx->mode & S_IALLUGO);
	inode->i_uid = ctx->uid;
	inode->i_gid = ctx->gid;
	inode->i_rdev = a->fifo ? 0 : a->rdev;
	inode->i_fop = &strattach_fops;
	simple_inode_init_ts(inode);
	sb->s_root = d_make_root(inode);
	return sb->s_root ? 0 : -ENOMEM;
}

static int strattach_get_tree(struct fs_context *fc)
{
	struct strattach_ctx *ctx = fc->fs_private;
	struct strattach *a;
	struct file *file;

	if (ctx->fd < 0)
		return invalfc(fc, "fd= is required");
	file = fget(ctx->fd);
	if (!file)
		return -EBADF;
	a = strattach_get(file);
	fput(file);
	if (IS_ERR(a))
		return PTR_ERR(a);
	/* sget_fc moves it to the new superblock (then kill_sb puts it); else free puts it. */
	fc->s_fs_info = a;
	return get_tree_nodev(fc, strattach_fill_super);
}

enum { Opt_fd, Opt_mode, Opt_uid, Opt_gid };

static const struct fs_parameter_spec strattach_params[] = {
	fsparam_fd("fd", Opt_fd),
	fsparam_u32oct("mode", Opt_mode),
	fsparam_uid("uid", Opt_uid),
	fsparam_gid("gid", Opt_gid),
	{}
};

static int strattach_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct strattach_ctx *ctx = fc->fs_private;
	struct fs_parse_result r;
	int opt = fs_parse(fc, strattach_params, param, &r);

	if (opt < 0)
		return opt; /* -ENOPARAM for "source": the VFS keeps it */
	switch (opt) {
	case Opt_fd:
		ctx->fd = r.uint_32;
		break;
	case Opt_mode:
		ctx->mode = r.uint_32 & S_IALLUGO;
		break;
	case Opt_uid:
		ctx->uid = r.uid;
		break;
	case Opt_gid:
		ctx->gid = r.gid;
		break;
	}
	return 0;
}

static void strattach_free_fc(struct fs_context *fc)
{
	if (fc->s_fs_info)
		strattach_put(fc->s_fs_info);
	kfree(fc->fs_private);
}

static const struct fs_context_operations strattach_fc_ops = {
	.free = strattach_free_fc,
	.parse_param = strattach_parse_param,
	.get_tree = strattach_get_tree,
};

static int strattach_init_fs_context(struct fs_context *fc)
{
	struct strattach_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	ctx->fd = -1;
	ctx->mode = 0600;
	ctx->uid = current_fsuid();
	ctx->gid = current_fsgid();
	fc->fs_private = ctx;
	fc->ops = &strattach_fc_ops;
	return 0;
}

static void strattach_kill_sb(struct super_block *sb)
{
	struct strattach *a = sb->s_fs_info;

	kill_anon_super(sb);
	if (a)
		strattach_put(a);
}

static struct file_system_type strattach_fs_type = {
	.owner = THIS_MODULE,
	.name = "streamsattach",
	.init_fs_context = strattach_init_fs_context,
	.parameters = strattach_params,
	.kill_sb = strattach_kill_sb,
};
MODULE_ALIAS_FS("streamsattach");

static int __init strattach_init(void)
{
	return register_filesystem(&strattach_fs_type);
}

static void __exit strattach_exit(void)
{
	unregister_filesystem(&strattach_fs_type);
}

module_init(strattach_init);
module_exit(strattach_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rstreams: fattach, the streamsattach filesystem");
