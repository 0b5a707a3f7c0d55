//! XTI errors: the per-thread `t_errno`, the messages of t_strerror, and [`XtiError`], the
//! error value of the Rust API (a t_errno, plus errno for TSYSERR).

use super::consts::*;
use core::ffi::CStr;
use libc::c_int;
use std::cell::Cell;
use std::fmt;

thread_local! {
    /// This thread's t_errno: `<xti.h>` makes `t_errno` an lvalue through `_t_errno()`.
    static T_ERRNO: Cell<c_int> = const { Cell::new(0) };
}

/// The address of the calling thread's t_errno (valid for the thread's lifetime).
pub fn t_errno_ptr() -> *mut c_int {
    T_ERRNO.with(|c| c.as_ptr())
}

/// The calling thread's t_errno.
pub fn t_errno() -> c_int {
    T_ERRNO.with(|c| c.get())
}

/// Set the calling thread's t_errno.
pub fn set_t_errno(e: c_int) {
    T_ERRNO.with(|c| c.set(e));
}

/// One message per t_errno value, index = value (0: no error).
const MESSAGES: [&CStr; 30] = [
    c"No error",
    c"Incorrect address format",
    c"Incorrect options format",
    c"Illegal permissions",
    c"Illegal file descriptor",
    c"Could not allocate address",
    c"Routine will place interface out of state",
    c"Illegal called/calling sequence number",
    c"System error",
    c"An event requires attention",
    c"Illegal amount of data",
    c"Buffer not large enough",
    c"Can't send message - (blocked)",
    c"No message currently available",
    c"Disconnect message not found",
    c"Unitdata error message not found",
    c"Incorrect flags specified",
    c"Orderly release message not found",
    c"Primitive not supported by provider",
    c"State is in process of changing",
    c"Unsupported structure type requested",
    c"Invalid transport provider name",
    c"Listener queue length limit is zero",
    c"Transport address is in use",
    c"Outstanding connection indications",
    c"Listener-acceptor transport provider mismatch",
    c"Connection acceptor has listen queue length limit greater than zero",
    c"Connection acceptor bound to address different from listener",
    c"Connection indication queue is full",
    c"Transport protocol error",
];

/// The message for unknown values.
const UNKNOWN: &CStr = c"Unknown XTI error";

/// t_strerror's text for `e` (a static string).
pub fn message(e: c_int) -> &'static CStr {
    usize::try_from(e)
        .ok()
        .and_then(|i| MESSAGES.get(i).copied())
        .unwrap_or(UNKNOWN)
}

/// The symbolic name of a t_errno value (`"TBADADDR"`…), for diagnostics.
pub fn name(e: c_int) -> &'static str {
    const NAMES: [&str; 30] = [
        "0",
        "TBADADDR",
        "TBADOPT",
        "TACCES",
        "TBADF",
        "TNOADDR",
        "TOUTSTATE",
        "TBADSEQ",
        "TSYSERR",
        "TLOOK",
        "TBADDATA",
        "TBUFOVFLW",
        "TFLOW",
        "TNODATA",
        "TNODIS",
        "TNOUDERR",
        "TBADFLAG",
        "TNOREL",
        "TNOTSUPPORT",
        "TSTATECHNG",
        "TNOSTRUCTYPE",
        "TBADNAME",
        "TBADQLEN",
        "TADDRBUSY",
        "TINDOUT",
        "TPROVMISMATCH",
        "TRESQLEN",
        "TRESADDR",
        "TQFULL",
        "TPROTO",
    ];
    usize::try_from(e)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
        .unwrap_or("T?")
}

/// An XTI failure: `t` is the t_errno value; `errno` the system error when `t` is TSYSERR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XtiError {
    /// The t_errno value.
    pub t: c_int,
    /// errno (meaningful for TSYSERR; 0 otherwise).
    pub errno: c_int,
}

impl XtiError {
    /// A library or provider error other than TSYSERR.
    pub const fn t(t: c_int) -> XtiError {
        XtiError { t, errno: 0 }
    }

    /// TSYSERR with `errno`.
    pub const fn sys(errno: c_int) -> XtiError {
        XtiError { t: TSYSERR, errno }
    }

    /// TSYSERR with the calling thread's errno.
    pub fn last_os() -> XtiError {
        XtiError::sys(crate::ffi::errno())
    }

    /// Store into t_errno (and errno for TSYSERR), the C convention; returns -1.
    pub fn set(self) -> c_int {
        set_t_errno(self.t);
        if self.t == TSYSERR {
            crate::ffi::set_errno(self.errno);
        }
        -1
    }
}

impl fmt::Display for XtiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({})",
            message(self.t).to_string_lossy(),
            name(self.t)
        )?;
        if self.t == TSYSERR {
            write!(f, ": {}", std::io::Error::from_raw_os_error(self.errno))?;
        }
        Ok(())
    }
}

impl std::error::Error for XtiError {}

/// The Rust API's result.
pub type XtiResult<T> = Result<T, XtiError>;
