//! `libxnet.so` / `libxnet.a`: the XTI functions of `<xti.h>` (t_open, t_bind, t_sndudata,
//! t_rcvudata…) for C programs that link with `-lxnet`, as under Linux Fast-STREAMS.
//!
//! Nothing is implemented here: the functions are `#[no_mangle]` in libstreams-sys'
//! `xti` module, and linking that crate into this cdylib/staticlib exports them (with
//! putmsg/getmsg, which XTI programs may call too). libstreams.so exports the same
//! functions, so a program may link either library — but not both statically.

pub use streams::xti;
