// SPDX-License-Identifier: GPL-2.0
//! The module parameters of `streams.ko` that set the core's limits (`crate::limits`):
//! `strmsgsz`, `strctlsz`, `strhiwatmax` and `strmblkmax`, given at load time
//! (`modprobe streams strmsgsz=262144`, or `options streams …` in `/etc/modprobe.d`) and shown
//! read-only in `/sys/module/streams/parameters/`; and the capability check that lets a
//! privileged caller past `strhiwatmax`.
//!
//! Linux 6.12's `module!` macro declares no parameters, so each one is what C's
//! `module_param(name, uint, 0444)` expands to: a `struct kernel_param` in the module's
//! `__param` section naming the value and the kernel's `param_ops_uint`. The kernel parses
//! the load-time arguments into the values before it calls the module's init, which hands
//! them to the core once ([`apply`]); mode 0444 means nothing writes them afterwards, so the
//! core reads its own copy without any lock.

use core::cell::UnsafeCell;
use kernel::bindings;
use kernel::prelude::*;

use crate::limits::{self, Limits};

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
/// `param_ops_uint`, and a [`ParamValue`].
#[repr(transparent)]
struct Param(bindings::kernel_param);

// SAFETY: the structure is never written (by us or the kernel, which only reads `__param`
// entries) and by the type invariant points only at `'static` data that is `Sync` itself.
unsafe impl Sync for Param {}

/// Mode of every parameter: readable by all in sysfs, never written after load.
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
