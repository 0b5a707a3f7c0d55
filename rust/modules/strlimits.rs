// SPDX-License-Identifier: GPL-2.0
//! The module parameters of `streams.ko`: those that set the core's limits
//! (`crate::limits`), `strmsgsz`, `strctlsz`, `strhiwatmax` and `strmblkmax`, given at load
//! time (`modprobe streams strmsgsz=262144`, or `options streams …` in `/etc/modprobe.d`) and
//! shown read-only in `/sys/module/streams/parameters/`; `strmblkcache`, the switch of the
//! message block cache, which root may also flip while the module is loaded; and the
//! capability check that lets a privileged caller past `strhiwatmax`.
//!
//! Linux 6.12's `module!` macro declares no parameters, so each one is what C's
//! `module_param(name, uint, 0444)` expands to: a `struct kernel_param` in the module's
//! `__param` section naming the value and the kernel's `param_ops_uint`. The kernel parses
//! the load-time arguments into the values before it calls the module's init, which hands
//! them to the core once ([`apply`]); mode 0444 means nothing writes them afterwards, so the
//! core reads its own copy without any lock.

use core::cell::UnsafeCell;
use kernel::bindings;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

use crate::limits::{self, Limits};
use crate::msg::cache;

/// The value of one `uint` parameter.
///
/// # Invariants
/// Written only by the kernel's argument parser while it loads the module, before
/// `init` runs and before anything else can reach the module (the parameter's mode, 0444,
/// allows no later write through sysfs); read only from `init` on.
#[repr(transparent)]
struct ParamValue(UnsafeCell<u32>);

// SAFETY: by the type invariant every write happens before `init`, and the module loader
// orders those writes before `init` runs; after that the value is only read.
unsafe impl Sync for ParamValue {}

impl ParamValue {
    const fn new(v: usize) -> Self {
        ParamValue(UnsafeCell::new(v as u32))
    }

    /// The value (from `init` on).
    fn get(&self) -> usize {
        // SAFETY: by the type invariant nothing writes the value any more once `init` runs,
        // which is when [`apply`] reads it.
        unsafe { *self.0.get() as usize }
    }
}

/// One `struct kernel_param` for the `__param` section.
///
/// # Invariants
/// Its pointers are to `'static` data: the name (a C string literal), the kernel's
/// `param_ops_uint` and a [`ParamValue`], or [`STRMBLKCACHE_OPS`] and [`STRMBLKCACHE`].
#[repr(transparent)]
struct Param(bindings::kernel_param);

// SAFETY: the structure is never written (by us or the kernel, which only reads `__param`
// entries) and by the type invariant points only at `'static` data that is `Sync` itself.
unsafe impl Sync for Param {}

/// Mode of the limits: readable by all in sysfs, never written after load.
const PERM: u16 = 0o444;

macro_rules! uint_param {
    ($value:ident, $entry:ident, $name:literal, $default:expr) => {
        static $value: ParamValue = ParamValue::new($default);

        #[link_section = "__param"]
        #[used]
        static $entry: Param = Param(bindings::kernel_param {
            name: $name.as_ptr().cast(),
            mod_: core::ptr::null_mut(),
            ops: &raw const bindings::param_ops_uint,
            perm: PERM,
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
                arg: $value.0.get().cast(),
            },
        });
    };
}

uint_param!(
    STRMSGSZ,
    __PARAM_STRMSGSZ,
    c"strmsgsz",
    limits::STRMSGSZ
);
uint_param!(
    STRCTLSZ,
    __PARAM_STRCTLSZ,
    c"strctlsz",
    limits::STRCTLSZ
);
uint_param!(
    STRHIWATMAX,
    __PARAM_STRHIWATMAX,
    c"strhiwatmax",
    limits::STRHIWATMAX
);
uint_param!(
    STRMBLKMAX,
    __PARAM_STRMBLKMAX,
    c"strmblkmax",
    limits::STRMBLKMAX
);

/// `strmblkcache`: whether the message block cache keeps freed blocks (default on, for
/// speed). Off, every block is a kmalloc and a kfree, which lets KASAN see a use after free
/// of any of them (`msg/cache.rs`); the test guest's fault-injection pass runs its strstress
/// that way (`tests/vm/fault.sh`). Writable by root while loaded (mode 0644), because that
/// pass runs on the module its earlier steps loaded: a load-time value would mean a reload, and so a
/// second run of every KUnit suite. Its `set` turns the cache on or off at once, so nothing
/// polls the value. Set at load, it takes effect before `init`.
static STRMBLKCACHE: BoolValue = BoolValue(UnsafeCell::new(true));

/// The value of a `bool` parameter, as the kernel's `param_set_bool`/`param_get_bool` keep it.
///
/// # Invariants
/// Read and written only by the parameter's `set` and `get`, which the kernel calls while it
/// loads the module (before `init`, nothing else runs in the module) or under the module's
/// `kernel_param_lock` (sysfs reads and writes), so never two at once.
#[repr(transparent)]
struct BoolValue(UnsafeCell<bool>);

// SAFETY: every access is serialised by the kernel (type invariant).
unsafe impl Sync for BoolValue {}

/// The operations of `strmblkcache`: `param_ops_bool`'s, with a `set` that also turns the
/// cache on or off. `NOARG`: a bare `strmblkcache` means on, as for any bool parameter.
static STRMBLKCACHE_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: bindings::KERNEL_PARAM_OPS_FL_NOARG,
    set: Some(set_strmblkcache),
    get: Some(bindings::param_get_bool),
    free: None,
};

/// The `set` of `strmblkcache` (a load-time argument or a write to its sysfs file): parse and
/// keep the value as `param_ops_bool` does, then switch the cache (`cache::set_enabled`:
/// off gives back what it holds), saying so on the console when that changes it.
///
/// # Safety
/// Called only by the kernel, as the `set` of [`__PARAM_STRMBLKCACHE`]: `val` a C string or
/// null, `kp` that parameter, while the module loads or under its `kernel_param_lock`.
unsafe extern "C" fn set_strmblkcache(
    val: *const c_char,
    kp: *const bindings::kernel_param,
) -> c_int {
    // SAFETY: the kernel's own parser on the arguments it gave us (function contract); it
    // writes the `bool` at `kp->arg`, which is `STRMBLKCACHE`'s, serialised as that requires.
    let rc = unsafe { bindings::param_set_bool(val, kp) };
    if rc != 0 {
        return rc;
    }
    // SAFETY: this is the parameter's `set`, called at load or under its lock (function
    // contract), so no other access to the value runs alongside (`BoolValue` invariant).
    let on = unsafe { *STRMBLKCACHE.0.get() };
    if on != cache::enabled() {
        if on {
            pr_info!("rstreams: message block cache on\n");
        } else {
            pr_info!("rstreams: message block cache off: every block from kmalloc\n");
        }
    }
    // Also when unchanged: a second "off" gives back what frees under way kept at the first.
    cache::set_enabled(on);
    0
}

#[link_section = "__param"]
#[used]
static __PARAM_STRMBLKCACHE: Param = Param(bindings::kernel_param {
    name: c"strmblkcache".as_ptr().cast(),
    mod_: core::ptr::null_mut(),
    ops: &raw const STRMBLKCACHE_OPS,
    perm: 0o644,
    level: -1,
    flags: 0,
    __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
        arg: STRMBLKCACHE.0.get().cast(),
    },
});

/// `modinfo streams` lists the parameters (what C's `MODULE_PARM_DESC` and `module_param`
/// put in `.modinfo`).
macro_rules! modinfo {
    ($id:ident, $s:literal) => {
        #[link_section = ".modinfo"]
        #[used]
        static $id: [u8; $s.len()] = *$s;
    };
}
modinfo!(__MODINFO_T1, b"parmtype=strmsgsz:uint\0");
modinfo!(
    __MODINFO_D1,
    b"parm=strmsgsz:largest data part of one message made by write, putmsg or I_STR (default 65536)\0"
);
modinfo!(__MODINFO_T2, b"parmtype=strctlsz:uint\0");
modinfo!(
    __MODINFO_D2,
    b"parm=strctlsz:largest control part of putmsg (default 4096)\0"
);
modinfo!(__MODINFO_T3, b"parmtype=strhiwatmax:uint\0");
modinfo!(
    __MODINFO_D3,
    b"parm=strhiwatmax:highest I_SET_HIWAT without CAP_SYS_RESOURCE (default 1048576)\0"
);
modinfo!(__MODINFO_T4, b"parmtype=strmblkmax:uint\0");
modinfo!(
    __MODINFO_D4,
    b"parm=strmblkmax:message blocks that make a queue full (default 1024)\0"
);
modinfo!(__MODINFO_T5, b"parmtype=strmblkcache:bool\0");
modinfo!(
    __MODINFO_D5,
    b"parm=strmblkcache:keep freed message blocks per CPU for reuse; 0: every block from kmalloc, for KASAN (default Y, writable by root)\0"
);

/// Hand the parameters to the core (`init`, before any device is registered). EINVAL, and
/// the module does not load, if one is out of range (`Limits::check`).
pub(crate) fn apply() -> Result {
    let l = Limits {
        strmsgsz: STRMSGSZ.get(),
        strctlsz: STRCTLSZ.get(),
        strhiwatmax: STRHIWATMAX.get(),
        strmblkmax: STRMBLKMAX.get(),
    };
    if let Err(e) = limits::set_limits(l) {
        pr_err!(
            "rstreams: limits out of range: strmsgsz={} (1..={}), strctlsz={} (1..={}), strmblkmax={} (1..={})\n",
            l.strmsgsz,
            limits::STRMSGSZ_MAX,
            l.strctlsz,
            limits::STRCTLSZ_MAX,
            l.strmblkmax,
            limits::STRMBLKMAX_MAX
        );
        return Err(Error::from_errno(-e.0));
    }
    Ok(())
}

/// Whether the calling task may raise a high-water mark past `strhiwatmax`:
/// CAP_SYS_RESOURCE, as Linux asks of F_SETPIPE_SZ above `pipe-max-size`.
pub(crate) fn may_exceed_hiwatmax() -> bool {
    // SAFETY: `capable` only reads the current task's credentials; it may be called from
    // any process context, which every ioctl is.
    unsafe { bindings::capable(bindings::CAP_SYS_RESOURCE as i32) }
}
