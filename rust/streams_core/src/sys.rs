//! Platform seam: the only file that knows where memory comes from.
//!
//! The executive is compiled twice from the same sources: by cargo on the host (memory from
//! `alloc`) and by Kbuild into `streams.ko` (memory from the kernel crate's `KBox`/`KVec`/`Arc`
//! with explicit GFP flags; Linux 6.12 builds no `alloc` crate for modules). Everything else in
//! the core names only the types and functions below, so both builds read the same.
//!
//! Every allocation is fallible and reports [`NoMem`]; callers turn it into ENOSR. Nothing here
//! panics. Functions that would consume a value on failure hand it back instead, so a failed
//! allocation never loses a message.
//!
//! This is also the one module of the core that may contain `unsafe`. In the kernel build:
//! the 6.12 `KBox` has no unsized coercion (see [`box_dyn!`]), `release_kept` re-owns the
//! run-long test buffers at module exit (test build only), the inbound lock's bottom halves,
//! the CPU number and the per-CPU statistics counters ([`stat_add`]). In both builds: the
//! per-CPU slots of the message block cache ([`CpuSlot`], an `UnsafeCell` owned through a
//! busy bit) and [`Recycled`] (a box taken out of a `ManuallyDrop` exactly once), and
//! [`vec_filled_wait`]/[`UninitBuf`] (a new byte buffer filled by a copy without being zeroed
//! first; only what the copy wrote becomes its length). Each block carries a SAFETY comment; the host tests run under valgrind.

#[cfg(not(rstreams_kernel))]
extern crate alloc;

/// Owned heap allocation (`alloc::boxed::Box` on the host).
#[cfg(not(rstreams_kernel))]
pub type Box<T> = alloc::boxed::Box<T>;
/// Owned heap allocation (`KBox` in the kernel).
#[cfg(rstreams_kernel)]
pub type Box<T> = kernel::alloc::KBox<T>;

/// Reference-counted shared allocation (`alloc::sync::Arc` on the host).
#[cfg(not(rstreams_kernel))]
pub type Arc<T> = alloc::sync::Arc<T>;
/// Reference-counted shared allocation (`kernel::sync::Arc` in the kernel).
#[cfg(rstreams_kernel)]
pub type Arc<T> = kernel::sync::Arc<T>;

/// Growable array (`alloc::vec::Vec` on the host).
#[cfg(not(rstreams_kernel))]
pub type Vec<T> = alloc::vec::Vec<T>;
/// Growable array (`KVec` in the kernel).
#[cfg(rstreams_kernel)]
pub type Vec<T> = kernel::alloc::KVec<T>;

/// An allocation failed (ENOSR/ENOMEM at the system-call boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoMem;

/// Allocations under a Stream lock and in put and service procedures: atomic, and without the
/// page allocator's warning (a failure is ENOSR to the caller, not a kernel report; a size
/// above what the page allocator can give at all would otherwise WARN).
#[cfg(rstreams_kernel)]
fn gfp() -> kernel::alloc::Flags {
    kernel::alloc::flags::GFP_ATOMIC | kernel::alloc::flags::__GFP_NOWARN
}

/// Allocations a system call makes for its caller before it takes a Stream lock (the user's
/// bytes, the messages built from them): they may sleep, are charged to the caller's memory
/// cgroup (`GFP_KERNEL_ACCOUNT`, as a Linux pipe's buffers are) and fail without a warning.
#[cfg(rstreams_kernel)]
fn gfp_wait() -> kernel::alloc::Flags {
    kernel::alloc::flags::GFP_KERNEL_ACCOUNT | kernel::alloc::flags::__GFP_NOWARN
}

/// Fault injection: make allocations fail so error paths can be tested.
///
/// `fail_after(n)` lets the next `n` allocations through and fails every one after that until
/// [`fail_clear`] is called. On the host the setting is per thread (cargo runs tests in
/// parallel); in the kernel it is global (KUnit runs cases one at a time).
///
/// Host builds and the kernel's test build (`--cfg rstreams_test`) only: the production
/// `streams.ko` gets the stub below instead.
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
pub mod fault {
    #[cfg(rstreams_kernel)]
    use core::sync::atomic::{AtomicUsize, Ordering};

    const OFF: usize = usize::MAX;

    #[cfg(rstreams_kernel)]
    static BUDGET: AtomicUsize = AtomicUsize::new(OFF);

    #[cfg(all(not(rstreams_kernel), any(test, feature = "fault")))]
    extern crate std;
    #[cfg(all(not(rstreams_kernel), any(test, feature = "fault")))]
    std::thread_local! {
        static BUDGET: core::cell::Cell<usize> = const { core::cell::Cell::new(OFF) };
    }

    /// Let `n` more allocations succeed, then fail all of them.
    pub fn fail_after(n: usize) {
        set(n)
    }

    /// Stop injecting failures.
    pub fn fail_clear() {
        set(OFF)
    }

    fn set(_v: usize) {
        #[cfg(rstreams_kernel)]
        BUDGET.store(_v, Ordering::Relaxed);
        #[cfg(all(not(rstreams_kernel), any(test, feature = "fault")))]
        BUDGET.with(|b| b.set(_v));
    }

    /// Called by every allocation in the seam: `true` means "fail this one".
    pub(crate) fn should_fail() -> bool {
        #[cfg(rstreams_kernel)]
        {
            let v = BUDGET.load(Ordering::Relaxed);
            if v == OFF {
                return false;
            }
            if v == 0 {
                return true;
            }
            BUDGET.store(v - 1, Ordering::Relaxed);
            false
        }
        #[cfg(all(not(rstreams_kernel), any(test, feature = "fault")))]
        {
            BUDGET.with(|b| match b.get() {
                OFF => false,
                0 => true,
                v => {
                    b.set(v - 1);
                    false
                }
            })
        }
        #[cfg(all(not(rstreams_kernel), not(test), not(feature = "fault")))]
        {
            false
        }
    }
}

/// The production kernel build has no fault injection: every allocation is attempted. The
/// constant folds away at every call site, so no symbol and no load remain (`cargo xtask test`
/// checks the production `streams.ko` with `nm`).
#[cfg(all(rstreams_kernel, not(rstreams_test)))]
pub(crate) mod fault {
    #[inline(always)]
    pub(crate) const fn should_fail() -> bool {
        false
    }
}

/// Copy `min(dst.len(), src.len())` bytes; returns how many. No panic path: the lengths are
/// equal by construction, which the compiler can see (a bare `copy_from_slice` keeps its
/// length-mismatch panic, which objtool flags in the kernel build).
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) -> usize {
    let n = dst.len().min(src.len());
    if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
        d.copy_from_slice(s);
    }
    n
}

/// Allocate a box, failing instead of panicking.
pub fn new_box<T>(v: T) -> Result<Box<T>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        Ok(alloc::boxed::Box::new(v))
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KBox::new(v, gfp()).map_err(|_| NoMem)
    }
}

/// Move the value out of a box (`KBox` cannot be moved out of with `*b`).
#[allow(clippy::boxed_local)] // the seam takes the box by value on purpose
pub fn unbox<T>(b: Box<T>) -> T {
    #[cfg(not(rstreams_kernel))]
    {
        *b
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KBox::into_inner(b)
    }
}

/// Allocate a reference-counted value, failing instead of panicking.
pub fn new_arc<T>(v: T) -> Result<Arc<T>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        Ok(alloc::sync::Arc::new(v))
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::sync::Arc::new(v, gfp()).map_err(|_| NoMem)
    }
}

/// Allocate a reference-counted value; on failure `v` is handed back, not dropped.
pub fn try_new_arc<T>(v: T) -> Result<Arc<T>, T> {
    if fault::should_fail() {
        return Err(v);
    }
    #[cfg(not(rstreams_kernel))]
    {
        Ok(alloc::sync::Arc::new(v))
    }
    #[cfg(rstreams_kernel)]
    {
        match kernel::sync::UniqueArc::new_uninit(gfp()) {
            Ok(u) => Ok(u.write(v).into()),
            Err(_) => Err(v),
        }
    }
}

/// Roots of the buffers handed out by [`leak_zeroed`] (kernel: the boxed `KVec` headers).
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
static KEPT: [core::sync::atomic::AtomicPtr<u8>; 64] =
    [const { core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()) }; 64];

/// Free every buffer [`leak_zeroed`] handed out. Kernel only: `streams.ko` calls it at module
/// exit, after its KUnit suites (the only users) are unregistered, so that unloading gives the
/// memory back (kmemleak reports it otherwise).
///
/// # Safety
///
/// No slice returned by [`leak_zeroed`] may be used after this call.
#[cfg(all(rstreams_kernel, rstreams_test))]
pub unsafe fn release_kept() {
    use core::sync::atomic::Ordering;
    for slot in KEPT.iter() {
        let p = slot.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: `p` is the root stored by `leak_zeroed`: a `KBox<Vec<u8>>` given up with
            // `KBox::leak`; the swap makes this the only place that frees it, and the caller
            // guarantees that the leaked slice is no longer used.
            drop(unsafe { kernel::alloc::KBox::from_raw(p.cast::<Vec<u8>>()) });
        }
    }
}

/// A zeroed buffer that lives for the rest of the run (for esballoc tests and static pools).
///
/// The allocation is never freed. Its address is kept in a static table so that the kernel's
/// leak detector (kmemleak) sees it as reachable: it is owned on purpose, not lost. Tests only:
/// not in the production kernel build.
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
pub fn leak_zeroed(n: usize) -> Result<&'static mut [u8], NoMem> {
    use core::sync::atomic::Ordering;
    let v = vec_zeroed(n)?;
    #[cfg(not(rstreams_kernel))]
    let (buf, root): (&'static mut [u8], *mut u8) = {
        let b = v.leak();
        let p = b.as_mut_ptr();
        (b, p)
    };
    // The KVec header is boxed so that one allocation (the box) roots the data for kmemleak.
    #[cfg(rstreams_kernel)]
    let (buf, root): (&'static mut [u8], *mut u8) = {
        let b: &'static mut Vec<u8> =
            kernel::alloc::KBox::leak(kernel::alloc::KBox::new(v, gfp()).map_err(|_| NoMem)?);
        let p = core::ptr::from_mut(b).cast::<u8>();
        (b.as_mut_slice(), p)
    };
    for slot in KEPT.iter() {
        if slot
            .compare_exchange(
                core::ptr::null_mut(),
                root,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            break;
        }
    }
    Ok(buf)
}

/// An empty vector with room for `n` elements.
pub fn vec_with_capacity<T>(n: usize) -> Result<Vec<T>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        let mut v = alloc::vec::Vec::new();
        v.try_reserve_exact(n).map_err(|_| NoMem)?;
        Ok(v)
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KVec::with_capacity(n, gfp()).map_err(|_| NoMem)
    }
}

/// A vector of `n` zero bytes (a data buffer).
pub fn vec_zeroed(n: usize) -> Result<Vec<u8>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        let mut v = alloc::vec::Vec::new();
        v.try_reserve_exact(n).map_err(|_| NoMem)?;
        v.resize(n, 0);
        Ok(v)
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KVec::from_elem(0u8, n, gfp()).map_err(|_| NoMem)
    }
}

/// A vector of `n` zero bytes allocated as a system call may, before it takes a Stream lock:
/// the allocation may sleep to find memory and is charged to the caller's memory cgroup
/// (`GFP_KERNEL_ACCOUNT | __GFP_NOWARN` in the kernel; the same as [`vec_zeroed`] on the
/// host). Never call it with a Stream lock held, nor from a put or
/// service procedure: it is for the platform's staging buffers and for messages built before
/// the lock (`Msg::with_type_wait`).
pub fn vec_zeroed_wait(n: usize) -> Result<Vec<u8>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        vec_zeroed(n)
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KVec::from_elem(0u8, n, gfp_wait()).map_err(|_| NoMem)
    }
}

/// Room of a new byte buffer that is not initialised yet, being filled from the front by a
/// copy (from user space): `filled` bytes are written, the rest may be anything and is never
/// seen as `u8`. What [`vec_filled_wait`] lends its `fill`.
///
/// # Invariants
/// `buf[..filled]` is initialised and `filled <= buf.len()`.
pub struct UninitBuf<'a> {
    buf: &'a mut [core::mem::MaybeUninit<u8>],
    filled: usize,
}

impl UninitBuf<'_> {
    /// Size of the room, filled or not.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether the room has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Bytes written so far (from the start).
    pub fn filled(&self) -> usize {
        self.filled
    }
    /// The room not filled yet, to copy into with a raw copy, then [`UninitBuf::advance`].
    /// Its bytes may be uninitialised; nothing written here counts until then.
    pub fn unfilled_mut(&mut self) -> &mut [core::mem::MaybeUninit<u8>] {
        self.buf.get_mut(self.filled..).unwrap_or_default()
    }
    /// Count `n` more bytes as filled (clamped to the room).
    ///
    /// # Safety
    ///
    /// The first `n` bytes of [`UninitBuf::unfilled_mut`] have been written.
    pub unsafe fn advance(&mut self, n: usize) {
        // INVARIANT: the caller wrote them; the clamp keeps `filled <= len`.
        self.filled = self.filled.saturating_add(n).min(self.buf.len());
    }
    /// Copy as much of `src` as fits into the unfilled room, and count it as filled; returns
    /// how many bytes that is. (A copy from memory that is initialised: the host's test
    /// doubles of user memory.)
    pub fn append(&mut self, src: &[u8]) -> usize {
        let room = self.unfilled_mut();
        let mut n = 0;
        for (d, s) in room.iter_mut().zip(src) {
            d.write(*s);
            n += 1;
        }
        // INVARIANT: the `n` bytes after `filled` were written just above.
        self.filled += n;
        n
    }
    /// Fill with an ordinary copy: the unfilled room is zeroed first (so it is `u8`s), then
    /// `fill` writes into it from its start and returns how many bytes it wrote; they count as
    /// filled. For copies that cannot write into uninitialised memory (the host's test
    /// doubles): it costs the zeroing [`vec_filled_wait`] saves.
    pub fn fill_with(&mut self, fill: impl FnOnce(&mut [u8]) -> usize) {
        let room = self.unfilled_mut();
        for b in room.iter_mut() {
            b.write(0);
        }
        let len = room.len();
        // SAFETY: every byte of `room` was initialised just above, and a `MaybeUninit<u8>`
        // has the layout of a `u8`; the `&mut [u8]` cannot de-initialise anything.
        let bytes = unsafe { &mut *(core::ptr::from_mut(room) as *mut [u8]) };
        let n = fill(bytes).min(len);
        // INVARIANT: bytes `filled..filled + n` were zeroed, perhaps overwritten: initialised.
        self.filled += n;
    }
}

/// A byte vector filled by a copy, without zeroing it first: room for `n` bytes is allocated
/// as [`vec_zeroed_wait`] allocates (may sleep, charged to the caller's memory cgroup; fault
/// injection), lent to `fill` uninitialised, and the vector is as long as what `fill` wrote
/// ([`UninitBuf::filled`]), at most `n`, with capacity for `n`. No byte the copy did not
/// write is ever part of it. For the buffers of a system call built before the Stream lock
/// from the caller's bytes (a write's staging buffer, the data block of a large message).
pub fn vec_filled_wait(n: usize, fill: impl FnOnce(&mut UninitBuf<'_>)) -> Result<Vec<u8>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    let mut v = {
        let mut v = alloc::vec::Vec::new();
        v.try_reserve_exact(n).map_err(|_| NoMem)?;
        v
    };
    #[cfg(rstreams_kernel)]
    let mut v = kernel::alloc::KVec::with_capacity(n, gfp_wait()).map_err(|_| NoMem)?;
    let room = v.spare_capacity_mut();
    let mut b = UninitBuf {
        buf: room.get_mut(..n).unwrap_or_default(),
        filled: 0,
    };
    fill(&mut b);
    let k = b.filled;
    // SAFETY: `v` is empty, and the first `k` bytes of its spare capacity are initialised
    // (`UninitBuf`'s invariant; `k <= n <= capacity`): they become its elements.
    unsafe { v.set_len(k) };
    Ok(v)
}

/// Lend `room`, uninitialised memory (a staging buffer on the stack), to `fill` as an
/// [`UninitBuf`], and return the bytes it wrote: the front of `room`, as long as
/// [`UninitBuf::filled`]. [`vec_filled_wait`] without the allocation: no byte is zeroed first,
/// and none the copy did not write is ever seen.
pub fn filled_in(
    room: &mut [core::mem::MaybeUninit<u8>],
    fill: impl FnOnce(&mut UninitBuf<'_>),
) -> &[u8] {
    let mut b = UninitBuf {
        buf: &mut *room,
        filled: 0,
    };
    fill(&mut b);
    let k = b.filled;
    let front = room.get(..k).unwrap_or_default();
    // SAFETY: the first `k` bytes of `room` are initialised (`UninitBuf`'s invariant), and a
    // `MaybeUninit<u8>` has the layout of a `u8`; the shared borrow cannot de-initialise them.
    unsafe { &*(core::ptr::from_ref(front) as *const [u8]) }
}

/// Make the byte vector `v` exactly `n` long without reallocating: cut it short, or extend it
/// with zeros up to its capacity (a cached data buffer made the size of a new message; what
/// it keeps is initialised, an earlier message's bytes). `NoMem` if `n` is over the capacity.
pub fn vec_resize_in_place(v: &mut Vec<u8>, n: usize) -> Result<(), NoMem> {
    if n > v.capacity() {
        return Err(NoMem);
    }
    if n <= v.len() {
        #[cfg(not(rstreams_kernel))]
        v.truncate(n);
        // SAFETY: `n <= len`, so the first `n` bytes are initialised, and the bytes cut off
        // need no drop. (6.12's `KVec` has no `truncate`.)
        #[cfg(rstreams_kernel)]
        unsafe {
            v.set_len(n)
        };
        return Ok(());
    }
    #[cfg(not(rstreams_kernel))]
    {
        v.resize(n, 0);
        Ok(())
    }
    // Within the capacity: `extend_with` does not allocate.
    #[cfg(rstreams_kernel)]
    {
        let more = n - v.len();
        v.extend_with(more, 0u8, gfp()).map_err(|_| NoMem)
    }
}

/// [`new_box`] for callers outside any Stream lock (see [`vec_zeroed_wait`]): may sleep.
pub fn new_box_wait<T>(v: T) -> Result<Box<T>, NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        Ok(alloc::boxed::Box::new(v))
    }
    #[cfg(rstreams_kernel)]
    {
        kernel::alloc::KBox::new(v, gfp_wait()).map_err(|_| NoMem)
    }
}

/// Append `x`; on allocation failure `x` is handed back, not dropped.
pub fn vec_push<T>(v: &mut Vec<T>, x: T) -> Result<(), T> {
    if v.len() == v.capacity() {
        if fault::should_fail() {
            return Err(x);
        }
        #[cfg(not(rstreams_kernel))]
        if v.try_reserve(1).is_err() {
            return Err(x);
        }
        #[cfg(rstreams_kernel)]
        if v.reserve(1, gfp()).is_err() {
            return Err(x);
        }
    }
    #[cfg(not(rstreams_kernel))]
    v.push(x);
    #[cfg(rstreams_kernel)]
    {
        // Cannot fail: room for one more element was reserved above.
        let _ = v.push(x, gfp());
    }
    Ok(())
}

/// Make room for `n` more elements, so that the next `n` [`vec_push`]es cannot fail.
pub fn vec_reserve<T>(v: &mut Vec<T>, n: usize) -> Result<(), NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        v.try_reserve(n).map_err(|_| NoMem)
    }
    #[cfg(rstreams_kernel)]
    {
        v.reserve(n, gfp()).map_err(|_| NoMem)
    }
}

/// Append a copy of `s`.
pub fn vec_extend_from_slice(v: &mut Vec<u8>, s: &[u8]) -> Result<(), NoMem> {
    if fault::should_fail() {
        return Err(NoMem);
    }
    #[cfg(not(rstreams_kernel))]
    {
        v.try_reserve(s.len()).map_err(|_| NoMem)?;
        v.extend_from_slice(s);
        Ok(())
    }
    #[cfg(rstreams_kernel)]
    {
        v.extend_from_slice(s, gfp()).map_err(|_| NoMem)
    }
}

/// Box a value as a trait object: `box_dyn!(value => dyn Trait)`.
///
/// On the host this is the ordinary unsized coercion. The 6.12 kernel `KBox` does not implement
/// `CoerceUnsized`, so the kernel build converts through a raw pointer (an `unsafe` block,
/// below). Evaluates to `Result<Box<dyn Trait>, NoMem>`.
#[macro_export]
macro_rules! box_dyn {
    ($v:expr => $t:ty) => {
        match $crate::sys::new_box($v) {
            Ok(b) => Ok($crate::sys::__coerce!(b => $t)),
            Err(e) => Err(e),
        }
    };
}

#[cfg(not(rstreams_kernel))]
#[doc(hidden)]
#[macro_export]
macro_rules! __coerce {
    ($b:expr => $t:ty) => {{
        let b: $crate::sys::Box<$t> = $b;
        b
    }};
}

#[cfg(rstreams_kernel)]
#[doc(hidden)]
#[macro_export]
macro_rules! __coerce {
    ($b:expr => $t:ty) => {{
        let raw = kernel::alloc::KBox::into_raw($b);
        let raw: *mut $t = raw;
        // SAFETY: `raw` came from `KBox::into_raw` just above and is not used again; the
        // unsizing cast keeps the address and the allocator, so `from_raw` re-owns exactly the
        // allocation that `into_raw` released, now with the trait-object vtable attached.
        unsafe { kernel::alloc::KBox::from_raw(raw) }
    }};
}

#[doc(hidden)]
pub use crate::__coerce;

// --- Locks: the Stream lock and the inbound lock of a perimeter (`perim`). ---
//
// The kernel's are the kernel crate's `Mutex` and `SpinLock` (pinned in a box of their own so
// that the structures holding them need no pin-initialisation); the host's are `std`'s (or
// loom's, for the models). The core has no host locks without `std`: `perim` is not compiled
// there.

#[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
extern crate std;

/// The Stream lock: a sleeping mutual-exclusion lock (process context only).
///
/// # Invariants
/// The kernel mutex is initialised and pinned for the life of `self`.
#[cfg(rstreams_kernel)]
pub struct Mutex<T>(core::pin::Pin<Box<kernel::sync::Mutex<T>>>);

/// The guard of a held [`Mutex`].
#[cfg(rstreams_kernel)]
pub type MutexGuard<'a, T> =
    kernel::sync::lock::Guard<'a, T, kernel::sync::lock::mutex::MutexBackend>;

#[cfg(rstreams_kernel)]
impl<T> Mutex<T> {
    /// A new lock holding `v` (a sleeping allocation: call it in process context, holding no
    /// Stream lock). All Stream locks are one lockdep class: two are never held together.
    pub fn new(v: T) -> Result<Self, NoMem> {
        use kernel::init::InPlaceInit;
        kernel::alloc::KBox::pin_init(
            kernel::new_mutex!(v, "rstreams_stream"),
            kernel::alloc::flags::GFP_KERNEL,
        )
        .map(Mutex)
        .map_err(|_| NoMem)
    }
    /// Take the lock (may sleep).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock()
    }
}

/// The Stream lock: a sleeping mutual-exclusion lock (`std`'s on the host).
#[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
pub struct Mutex<T>(std::sync::Mutex<T>);
/// The guard of a held [`Mutex`].
#[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
pub type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;
#[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
impl<T> Mutex<T> {
    /// A new lock holding `v`.
    pub fn new(v: T) -> Result<Self, NoMem> {
        Ok(Mutex(std::sync::Mutex::new(v)))
    }
    /// Take the lock (a panic of another holder does not poison it for us).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The Stream lock under the loom model checker.
#[cfg(all(not(rstreams_kernel), loom))]
pub struct Mutex<T>(loom::sync::Mutex<T>);
/// The guard of a held [`Mutex`].
#[cfg(all(not(rstreams_kernel), loom))]
pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;
#[cfg(all(not(rstreams_kernel), loom))]
impl<T> Mutex<T> {
    /// A new lock holding `v`.
    pub fn new(v: T) -> Result<Self, NoMem> {
        Ok(Mutex(loom::sync::Mutex::new(v)))
    }
    /// Take the lock.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The Stream lock's host twin for the short leaf lock of an inbound list: never held across
/// anything that sleeps, taken from any context.
#[cfg(all(not(rstreams_kernel), any(loom, feature = "std")))]
pub type BhLock<T> = Mutex<T>;
/// The guard of a held [`BhLock`].
#[cfg(all(not(rstreams_kernel), any(loom, feature = "std")))]
pub type BhGuard<'a, T> = MutexGuard<'a, T>;

/// A new [`BhLock`] holding `v`, `Result<BhLock<_>, NoMem>`, in a lockdep class of its own
/// named `name` (one per use of the macro; the host ignores the name).
#[cfg(not(rstreams_kernel))]
#[macro_export]
macro_rules! bh_lock {
    ($v:expr, $name:literal) => {
        $crate::sys::BhLock::new($v)
    };
}

/// A new [`BhLock`] holding `v`, `Result<BhLock<_>, NoMem>`, in a lockdep class of its own
/// named `name` (one per use of the macro).
#[cfg(rstreams_kernel)]
#[macro_export]
macro_rules! bh_lock {
    ($v:expr, $name:literal) => {
        $crate::sys::BhLock::new_in($v, kernel::c_str!($name), kernel::static_lock_class!())
    };
}

#[cfg(rstreams_kernel)]
extern "C" {
    fn rstreams_local_bh_disable();
    fn rstreams_local_bh_enable();
    fn rstreams_spin_lock_bh(lock: *mut kernel::bindings::spinlock_t);
    fn rstreams_spin_unlock_bh(lock: *mut kernel::bindings::spinlock_t);
    fn rstreams_spin_lock(lock: *mut kernel::bindings::spinlock_t);
    fn rstreams_spin_unlock(lock: *mut kernel::bindings::spinlock_t);
}

/// One kind of kernel spinlock as `strshim` exports it: its lock and unlock entry points
/// (`spin_lock_bh` or `spin_lock` are inline in C, so Rust reaches them through the shim).
#[cfg(rstreams_kernel)]
pub trait ShimSpin {
    /// Take the lock.
    ///
    /// # Safety
    /// `ptr` points to an initialised spinlock, and the caller runs in a context this kind
    /// of lock may be taken in (documented on the lock type that uses it).
    unsafe fn lock(ptr: *mut kernel::bindings::spinlock_t);
    /// Release the lock.
    ///
    /// # Safety
    /// The caller holds the lock, taken by [`ShimSpin::lock`] on this CPU.
    unsafe fn unlock(ptr: *mut kernel::bindings::spinlock_t);
}

/// The kernel crate's lock backend for a spinlock taken and released through `strshim`
/// (`K`, one call each way): initialised by `__spin_lock_init` as the crate's `SpinLock` is.
#[cfg(rstreams_kernel)]
pub struct ShimSpinBackend<K>(core::marker::PhantomData<K>);

// SAFETY: `init` initialises the spinlock (`__spin_lock_init`, as the crate's `SpinLock`
// does); `lock` returns only once the lock is held (`ShimSpin::lock`), and `unlock` releases
// it; the lock gives mutual exclusion over the data, which is what the trait asks.
#[cfg(rstreams_kernel)]
unsafe impl<K: ShimSpin> kernel::sync::lock::Backend for ShimSpinBackend<K> {
    type State = kernel::bindings::spinlock_t;
    type GuardState = ();

    /// # Safety
    /// As `Backend::init`: `ptr` a spinlock not yet initialised, `name` and `key` alive as
    /// long as the lock.
    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: the caller passes a valid pointer to a spinlock not yet initialised, and a
        // name and lock class key that live as long as the lock.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    #[inline]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller passes a pointer to an initialised spinlock, in a context the
        // lock type using `K` allows (`BhLock`, `LeafLock`).
        unsafe { K::lock(ptr) }
    }

    #[inline]
    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: the caller holds the lock, taken by `lock` above on this CPU.
        unsafe { K::unlock(ptr) }
    }
}

/// `spin_lock_bh`/`spin_unlock_bh` (a lock and an unlock enter five functions, where
/// `local_bh_disable`/`enable` around the crate's `SpinLock` entered eight).
#[cfg(rstreams_kernel)]
pub struct SpinBh;

#[cfg(rstreams_kernel)]
impl ShimSpin for SpinBh {
    /// # Safety
    /// As [`ShimSpin::lock`].
    #[inline]
    unsafe fn lock(ptr: *mut kernel::bindings::spinlock_t) {
        // SAFETY: `ShimSpin::lock`'s contract; no caller of rstreams runs in hard-interrupt
        // context (documented on `BhLock`).
        unsafe { rstreams_spin_lock_bh(ptr) }
    }
    #[inline]
    unsafe fn unlock(ptr: *mut kernel::bindings::spinlock_t) {
        // SAFETY: `ShimSpin::unlock`'s contract: the caller holds the lock.
        unsafe { rstreams_spin_unlock_bh(ptr) }
    }
}

/// The backend of [`BhLock`].
#[cfg(rstreams_kernel)]
pub type SpinLockBhBackend = ShimSpinBackend<SpinBh>;

/// A spinlock taken with bottom halves disabled (`spin_lock_bh`): a leaf lock that process,
/// workqueue, timer and softirq context may all take (never hard-interrupt context). It guards
/// a perimeter's inbound list.
///
/// # Invariants
/// The kernel spinlock is initialised and pinned for the life of `self`.
#[cfg(rstreams_kernel)]
pub struct BhLock<T>(core::pin::Pin<Box<kernel::sync::lock::Lock<T, SpinLockBhBackend>>>);

/// The guard of a held [`BhLock`]: bottom halves stay disabled until it is dropped.
#[cfg(rstreams_kernel)]
pub type BhGuard<'a, T> = kernel::sync::lock::Guard<'a, T, SpinLockBhBackend>;

#[cfg(rstreams_kernel)]
impl<T> BhLock<T> {
    /// A new lock holding `v` in the lockdep class shared by every lock made this way (a
    /// sleeping allocation: call it in process context). The core's locks use
    /// [`bh_lock!`](crate::bh_lock) instead, a class each.
    pub fn new(v: T) -> Result<Self, NoMem> {
        Self::new_in(
            v,
            kernel::c_str!("rstreams_bh"),
            kernel::static_lock_class!(),
        )
    }
    /// A new lock holding `v`, in lockdep class `class` named `name` (a sleeping allocation:
    /// call it in process context). Through [`bh_lock!`](crate::bh_lock), which gives each
    /// use its own class, so lockdep checks the "never nested" rule of the leaf locks pair by
    /// pair, and the one nesting there is (an express link's cell, then the target's inbound
    /// lock, `perim/express.rs`) is not taken for recursion on one class.
    pub fn new_in(
        v: T,
        name: &'static kernel::str::CStr,
        class: &'static kernel::sync::LockClassKey,
    ) -> Result<Self, NoMem> {
        use kernel::init::InPlaceInit;
        kernel::alloc::KBox::pin_init(
            kernel::sync::lock::Lock::new(v, name, class),
            kernel::alloc::flags::GFP_KERNEL,
        )
        .map(BhLock)
        .map_err(|_| NoMem)
    }
    /// Disable bottom halves on this CPU and take the lock.
    #[inline]
    pub fn lock(&self) -> BhGuard<'_, T> {
        self.0.lock()
    }
}

/// The host twin of [`LeafLock`].
#[cfg(all(not(rstreams_kernel), any(loom, feature = "std")))]
pub type LeafLock<T> = Mutex<T>;
/// The guard of a held [`LeafLock`].
#[cfg(all(not(rstreams_kernel), any(loom, feature = "std")))]
pub type LeafGuard<'a, T> = MutexGuard<'a, T>;

/// `spin_lock`/`spin_unlock` (a lock and an unlock enter three functions, where the crate's
/// `SpinLock` enters five, its backend and `rust_helper_spin_lock`/`unlock` around
/// `_raw_spin_lock`).
#[cfg(rstreams_kernel)]
pub struct SpinPlain;

#[cfg(rstreams_kernel)]
impl ShimSpin for SpinPlain {
    /// # Safety
    /// As [`ShimSpin::lock`].
    #[inline]
    unsafe fn lock(ptr: *mut kernel::bindings::spinlock_t) {
        // SAFETY: `ShimSpin::lock`'s contract; only process and workqueue context take it
        // (documented on `LeafLock`).
        unsafe { rstreams_spin_lock(ptr) }
    }
    #[inline]
    unsafe fn unlock(ptr: *mut kernel::bindings::spinlock_t) {
        // SAFETY: `ShimSpin::unlock`'s contract: the caller holds the lock.
        unsafe { rstreams_spin_unlock(ptr) }
    }
}

/// The backend of [`LeafLock`].
#[cfg(rstreams_kernel)]
pub type SpinLockLeafBackend = ShimSpinBackend<SpinPlain>;

/// A plain spinlock (`spin_lock`, bottom halves left on) for a leaf that only process and
/// workqueue context take: write hold's cell (`sth/hold.rs`), taken by write(2) and under
/// the Stream lock, a mutex (the hold timer is a work item that takes the Stream lock first).
/// No softirq or timer callback ever takes it, so a softirq interrupting a holder cannot
/// spin on it, and it saves [`BhLock`]'s `local_bh_disable`/`local_bh_enable` (two calls and
/// a pending-softirq test) per hold. Nothing is taken under it.
///
/// # Invariants
/// The kernel spinlock is initialised and pinned for the life of `self`.
#[cfg(rstreams_kernel)]
pub struct LeafLock<T>(core::pin::Pin<Box<kernel::sync::lock::Lock<T, SpinLockLeafBackend>>>);

/// The guard of a held [`LeafLock`].
#[cfg(rstreams_kernel)]
pub type LeafGuard<'a, T> = kernel::sync::lock::Guard<'a, T, SpinLockLeafBackend>;

#[cfg(rstreams_kernel)]
impl<T> LeafLock<T> {
    /// A new lock holding `v` (a sleeping allocation: call it in process context), in the
    /// lockdep class `rstreams_hold_cell`.
    pub fn new(v: T) -> Result<Self, NoMem> {
        use kernel::init::InPlaceInit;
        kernel::alloc::KBox::pin_init(
            kernel::sync::lock::Lock::new(
                v,
                kernel::c_str!("rstreams_hold_cell"),
                kernel::static_lock_class!(),
            ),
            kernel::alloc::flags::GFP_KERNEL,
        )
        .map(LeafLock)
        .map_err(|_| NoMem)
    }
    /// Take the lock (process or workqueue context only: the type's rule).
    #[inline]
    pub fn lock(&self) -> LeafGuard<'_, T> {
        self.0.lock()
    }
}

/// Run `f`, which must not sleep, with bottom halves off in the kernel (`local_bh_disable`:
/// no softirq runs on this CPU and the task is not preempted meanwhile); on the host, just run
/// it. For a short section that others may wait for by spinning (the express send's claim,
/// `perim/express_send.rs`): its waiter ([`relax`]) never waits for a preempted task.
pub fn with_bh_off<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(rstreams_kernel)]
    {
        // SAFETY: process context (a system call) or softirq context, never hard-interrupt
        // context; enabled again below (the kernel does not unwind through `f`).
        unsafe { rstreams_local_bh_disable() };
        let r = f();
        // SAFETY: pairs with the disable above, on the same CPU (preemption is off).
        unsafe { rstreams_local_bh_enable() };
        r
    }
    #[cfg(not(rstreams_kernel))]
    {
        f()
    }
}

/// Let others run while waiting for a short section of another thread that never sleeps
/// and never waits for the waiter (the drain of the express send, `perim/express_send.rs`):
/// kernel, a CPU relax (the section runs with preemption off); host, a thread yield (the
/// host's threads may be preempted anywhere); loom, a yield the model checker schedules.
pub fn relax() {
    #[cfg(all(not(rstreams_kernel), loom))]
    loom::thread::yield_now();
    #[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
    std::thread::yield_now();
    #[cfg(any(rstreams_kernel, all(not(loom), not(feature = "std"))))]
    core::hint::spin_loop();
}

// --- Per-CPU slots and recycled boxes: what the message block cache (`msg/cache.rs`) is
// made of. ---

#[cfg(rstreams_kernel)]
extern "C" {
    fn rstreams_cpu_id() -> u32;
}

/// The CPU this code runs on now (`raw_smp_processor_id`): a hint for choosing a [`PerCpu`]
/// slot, which may be stale as soon as it is read (the task may migrate; the slots are locked,
/// so a stale choice is correct, only slower). On the host each thread has its own number.
pub fn cpu_id() -> usize {
    #[cfg(rstreams_kernel)]
    {
        // SAFETY: `raw_smp_processor_id` only reads the current CPU number; it is valid in any
        // context, with or without preemption disabled.
        unsafe { rstreams_cpu_id() as usize }
    }
    #[cfg(all(not(rstreams_kernel), not(loom), feature = "std"))]
    {
        use core::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        std::thread_local! {
            static ID: usize = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        ID.with(|i| *i)
    }
    #[cfg(all(not(rstreams_kernel), any(loom, not(feature = "std"))))]
    {
        0
    }
}

/// One CPU's share of a [`PerCpu`] structure: a value owned by whoever holds the slot's busy
/// bit. Nobody ever waits for it: [`CpuSlot::try_lock`] either gets the slot at once or
/// fails, and the caller does without (the message cache falls back to the allocator). So the
/// slot may be taken from any context (process, softirq, timer, under any lock) with
/// preemption and interrupts as they are: an interrupting or preempting user of the same
/// slot simply fails its `try_lock`, and no lock order or deadlock involves it.
///
/// Under the loom model checker `try_lock` always fails (loom cannot see these atomics, and
/// the models do not cover the cache): every cache user then takes its fallback path.
///
/// # Invariants
/// `v` is accessed only through a [`CpuSlotGuard`], and at most one guard exists at a time
/// (the one that set `busy`).
#[repr(align(64))] // one cache line per slot: CPUs do not share lines
pub struct CpuSlot<T> {
    busy: core::sync::atomic::AtomicBool,
    v: core::cell::UnsafeCell<T>,
}

// SAFETY: the value is only reached through the one guard that owns the busy bit (type
// invariant), which moves it between threads no more than a `Mutex<T>` would: `T: Send`.
unsafe impl<T: Send> Sync for CpuSlot<T> {}

impl<T> CpuSlot<T> {
    /// A free slot holding `v`.
    pub const fn new(v: T) -> Self {
        CpuSlot {
            busy: core::sync::atomic::AtomicBool::new(false),
            v: core::cell::UnsafeCell::new(v),
        }
    }

    /// Own the slot now, or `None` if somebody else does (never waits).
    pub fn try_lock(&self) -> Option<CpuSlotGuard<'_, T>> {
        #[cfg(loom)]
        {
            None
        }
        #[cfg(not(loom))]
        {
            use core::sync::atomic::Ordering;
            if self.busy.swap(true, Ordering::Acquire) {
                return None;
            }
            Some(CpuSlotGuard { slot: self })
        }
    }
}

/// Ownership of a [`CpuSlot`]'s value; the slot is free again when it is dropped.
///
/// # Invariants
/// `slot.busy` was set by the `try_lock` that made this guard and is cleared only by its drop.
pub struct CpuSlotGuard<'a, T> {
    slot: &'a CpuSlot<T>,
}

impl<T> core::ops::Deref for CpuSlotGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard owns the busy bit (type invariant), so no other reference to the
        // value exists while the returned one lives (it borrows the guard).
        unsafe { &*self.slot.v.get() }
    }
}

impl<T> core::ops::DerefMut for CpuSlotGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this reference unique among the guard's.
        unsafe { &mut *self.slot.v.get() }
    }
}

impl<T> Drop for CpuSlotGuard<'_, T> {
    fn drop(&mut self) {
        // Release: what was done to the value is visible to the next owner's Acquire.
        self.slot
            .busy
            .store(false, core::sync::atomic::Ordering::Release);
    }
}

/// `N` [`CpuSlot`]s, one per CPU (CPU `c` uses slot `c % N`, so a machine with more CPUs
/// than `N` shares slots, which the busy bit makes correct). A `static` needs no set-up and
/// no teardown beyond what its users do with the values.
pub struct PerCpu<T, const N: usize>([CpuSlot<T>; N]);

impl<T, const N: usize> PerCpu<T, N> {
    /// The slots, built by the caller (`[const { CpuSlot::new(..) }; N]`).
    pub const fn new(slots: [CpuSlot<T>; N]) -> Self {
        PerCpu(slots)
    }
    /// The slot of the CPU this code runs on (see [`cpu_id`]).
    pub fn this_cpu(&self) -> Option<&CpuSlot<T>> {
        self.0.get(cpu_id().checked_rem(N)?)
    }
    /// Every slot (to drain them all).
    pub fn slots(&self) -> core::slice::Iter<'_, CpuSlot<T>> {
        self.0.iter()
    }
}

/// A type whose boxes are handed back to it when dropped instead of being freed: its
/// [`Recycle::recycle`] decides (keep the box in a cache, or drop it).
pub trait Recycle: Sized {
    /// Take back a box whose [`Recycled`] owner was dropped. Dropping `b` in here frees it
    /// (the box's own drop; it is not recycled again).
    fn recycle(b: Box<Self>);
}

/// A [`Box`] that goes back to `T::recycle` when dropped (`Msg` holds its first block in
/// one, so that freemsg refills the message block cache).
///
/// # Invariants
/// The box is always initialised; it is taken out exactly once, by `drop` or `into_box`,
/// after which `self` is never used again.
pub struct Recycled<T: Recycle>(core::mem::ManuallyDrop<Box<T>>);

impl<T: Recycle> Recycled<T> {
    /// Own `b`; dropping the result recycles it.
    pub fn new(b: Box<T>) -> Self {
        Recycled(core::mem::ManuallyDrop::new(b))
    }
    /// The box itself: dropping it frees it without recycling.
    pub fn into_box(self) -> Box<T> {
        let mut me = core::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped (ManuallyDrop) nor used again, so the box is taken
        // out exactly once (type invariant).
        unsafe { core::mem::ManuallyDrop::take(&mut me.0) }
    }
}

impl<T: Recycle> core::ops::Deref for Recycled<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Recycle> core::ops::DerefMut for Recycled<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: Recycle> Drop for Recycled<T> {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and nothing uses `self.0` afterwards (type invariant).
        let b = unsafe { core::mem::ManuallyDrop::take(&mut self.0) };
        T::recycle(b)
    }
}

// --- Per-CPU counters: the module statistics' totals (`stream/stats.rs`). ---

/// How many counters [`stat_add`] and [`stat_sum`] know (indexes `0..NSTATS`). The kernel's
/// table (`RSTREAMS_NSTATS` in `rust/modules/strshim_core.c`) has the same size.
pub const NSTATS: usize = 512;

#[cfg(rstreams_kernel)]
extern "C" {
    fn rstreams_stat_add(i: u32, n: usize);
    fn rstreams_stat_sum(i: u32) -> usize;
    fn rstreams_stat_reset();
}

/// Zero every counter (kernel: `streams.ko`'s load, before any Stream exists; the table lives
/// in `strshim.ko`, which may have outlived an earlier `streams.ko`, whose totals these were).
#[cfg(rstreams_kernel)]
pub fn stat_reset() {
    // SAFETY: the C side only writes the CPUs' copies of its own table; the caller runs
    // before any Stream counts, so nothing adds meanwhile.
    unsafe { rstreams_stat_reset() };
}

/// Host CPU slots of the counters: a thread adds to row `cpu_id() % STAT_CPUS`.
#[cfg(not(rstreams_kernel))]
const STAT_CPUS: usize = 16;

/// One host CPU's copy of the counters, on lines of its own.
#[cfg(not(rstreams_kernel))]
#[repr(align(64))]
struct StatRow([core::sync::atomic::AtomicUsize; NSTATS]);

#[cfg(not(rstreams_kernel))]
static STATS: [StatRow; STAT_CPUS] =
    [const { StatRow([const { core::sync::atomic::AtomicUsize::new(0) }; NSTATS]) }; STAT_CPUS];

/// Add `n` to counter `i` in this CPU's copy (an index out of range counts nothing). Writers
/// on different CPUs never write the same cache line, so a count on every message costs no
/// line moving between a writer's and a reader's CPU. Kernel: `this_cpu_add` (one unlocked
/// add to this CPU's copy, correct in any context: process, softirq, with or without
/// preemption). Host: a relaxed add to the row of this thread's [`cpu_id`], exact even when
/// two threads share a row. Statistics only: it orders nothing.
#[inline]
pub fn stat_add(i: usize, n: usize) {
    #[cfg(rstreams_kernel)]
    {
        if let Ok(i) = u32::try_from(i) {
            // SAFETY: the C side checks `i` against its table's size and adds to this CPU's
            // copy with `this_cpu_add`, which is valid in every context this runs in.
            unsafe { rstreams_stat_add(i, n) };
        }
    }
    #[cfg(not(rstreams_kernel))]
    {
        if let Some(c) = stat_row_here().0.get(i) {
            c.fetch_add(n, core::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Counter `i` summed over every CPU's copy (0 out of range). A racy sum, read without
/// stopping the writers: an add under way on another CPU while it reads may be in it or not,
/// so two counters read one after the other need not agree to the last few counts (the
/// totals of `/proc/streams/modules` are read so). Once the adders are done (joined), it is
/// exact.
pub fn stat_sum(i: usize) -> usize {
    #[cfg(rstreams_kernel)]
    {
        // SAFETY: the C side checks `i` and only reads the CPUs' copies.
        u32::try_from(i).map_or(0, |i| unsafe { rstreams_stat_sum(i) })
    }
    #[cfg(not(rstreams_kernel))]
    {
        STATS.iter().fold(0usize, |sum, r| {
            let c = r.0.get(i);
            sum.wrapping_add(c.map_or(0, |c| c.load(core::sync::atomic::Ordering::Relaxed)))
        })
    }
}

/// The host row this thread adds to: its [`cpu_id`]'s, kept in a thread-local that needs no
/// lazy set-up on each use.
#[cfg(not(rstreams_kernel))]
#[inline]
fn stat_row_here() -> &'static StatRow {
    #[cfg(all(not(loom), feature = "std"))]
    {
        std::thread_local! {
            static ROW: core::cell::Cell<Option<&'static StatRow>> =
                const { core::cell::Cell::new(None) };
        }
        /// The thread's first count: find its row.
        #[cold]
        #[inline(never)]
        fn first(r: &core::cell::Cell<Option<&'static StatRow>>) -> &'static StatRow {
            let row = stat_row_at(stat_row());
            r.set(Some(row));
            row
        }
        ROW.with(|r| r.get().unwrap_or_else(|| first(r)))
    }
    #[cfg(any(loom, not(feature = "std")))]
    {
        stat_row_at(stat_row())
    }
}

/// Host row `i` modulo their number (host only: the index cannot be out of range).
#[cfg(not(rstreams_kernel))]
fn stat_row_at(i: usize) -> &'static StatRow {
    &STATS[i % STAT_CPUS]
}

/// The host row this thread's adds go to (host tests: two threads on different rows).
#[cfg(not(rstreams_kernel))]
pub fn stat_row() -> usize {
    cpu_id() % STAT_CPUS
}

/// Counter `i` in the row this thread adds to (host tests: which copy an add went to, and
/// that another thread's did not).
#[cfg(not(rstreams_kernel))]
pub fn stat_here(i: usize) -> usize {
    stat_row_here()
        .0
        .get(i)
        .map_or(0, |c| c.load(core::sync::atomic::Ordering::Relaxed))
}
