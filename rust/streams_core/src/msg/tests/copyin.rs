//! Cases for messages built from a copy in from user space without zeroing first
//! (`Msg::copied_in_wait`, `sys::vec_filled_wait`): a whole copy, a copy cut short by a fault
//! (only what precedes it is shown, the rest of a new data block is zeros, never an earlier
//! message's bytes), a fault at the first byte, fault injection, size 0.

use super::fail_after;
use crate::ktest::TestResult;
use crate::msg::cache::PAGEBUF;
use crate::msg::{Msg, M_DATA, M_PROTO};
use crate::sth::{FailIo, SliceIo};
use crate::sys;
use crate::{check, check_eq, check_ok};

/// Above `PAGEBUF`: a new data block, not zeroed before the copy.
const BIG: usize = 4 * PAGEBUF + 100;

/// `n` bytes of a pattern no zeroed or earlier buffer holds (kept off the kernel stack).
fn pattern(n: usize) -> Result<sys::Vec<u8>, sys::NoMem> {
    let mut v = sys::vec_zeroed(n)?;
    for (i, b) in v.iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    Ok(v)
}

pub(super) fn filled_vec_is_what_was_copied() -> TestResult {
    let mut src = check_ok!(pattern(BIG));
    let v = check_ok!(sys::vec_filled_wait(BIG, |d| {
        crate::sth::UserIo::copy_from_user_uninit(&mut SliceIo(&mut src), d, 0)
    }));
    check_eq!(v.len(), BIG);
    check!(v.as_slice() == src.as_slice());
    // Cut short: the vector is as long as the copy, no longer.
    let half = BIG / 2;
    let v = check_ok!(sys::vec_filled_wait(BIG, |d| {
        let s = src.get_mut(..half).unwrap_or_default();
        crate::sth::UserIo::copy_from_user_uninit(&mut SliceIo(s), d, 0)
    }));
    check_eq!(v.len(), half);
    check!(v.capacity() >= BIG);
    check!(Some(v.as_slice()) == src.get(..half));
    // Offsets count from the start of the user buffer.
    let v = check_ok!(sys::vec_filled_wait(100, |d| {
        crate::sth::UserIo::copy_from_user_uninit(&mut SliceIo(&mut src), d, 7)
    }));
    check!(Some(v.as_slice()) == src.get(7..107));
    Ok(())
}

pub(super) fn filled_vec_fault_at_zero_and_size_zero() -> TestResult {
    let v = check_ok!(sys::vec_filled_wait(BIG, |d| {
        crate::sth::UserIo::copy_from_user_uninit(&mut FailIo, d, 0)
    }));
    check_eq!(v.len(), 0);
    let mut room = usize::MAX;
    let v = check_ok!(sys::vec_filled_wait(0, |d| {
        room = d.len();
        d.fill_with(|r| r.len());
    }));
    check_eq!(v.len(), 0);
    check_eq!(room, 0);
    // A copy that claims more than the room counts only the room.
    let v = check_ok!(sys::vec_filled_wait(10, |d| d.fill_with(|_| 1000)));
    check_eq!(v.len(), 10);
    check!(v.iter().all(|&b| b == 0));
    Ok(())
}

pub(super) fn filled_vec_obeys_fault_injection() -> TestResult {
    let g = fail_after(0);
    let mut called = false;
    check!(sys::vec_filled_wait(BIG, |_| called = true).is_err());
    drop(g);
    check!(!called); // no copy without the memory
    Ok(())
}

pub(super) fn copied_in_whole() -> TestResult {
    let mut src = check_ok!(pattern(BIG));
    for n in [0, 1, PAGEBUF, PAGEBUF + 1, BIG] {
        let m = check_ok!(Msg::copied_in_wait(M_PROTO, n, &mut SliceIo(&mut src), 0));
        check_eq!(m.db_type(), M_PROTO);
        check_eq!(m.blen(), n);
        check!(Some(m.rd()) == src.get(..n));
        check!(m.capacity() >= n);
    }
    let m = check_ok!(Msg::copied_in_wait(M_DATA, BIG, &mut SliceIo(&mut src), 0));
    check_eq!(m.capacity(), BIG);
    Ok(())
}

pub(super) fn copied_in_short_shows_only_what_precedes_the_fault() -> TestResult {
    let mut src = check_ok!(pattern(BIG));
    for (n, at) in [
        (BIG, BIG / 2),
        (BIG, PAGEBUF + 3),
        (PAGEBUF, 1000),
        (BIG, 1),
    ] {
        let s = src.get_mut(..at).unwrap_or_default();
        let m = check_ok!(Msg::copied_in_wait(M_DATA, n, &mut SliceIo(s), 0));
        check_eq!(m.blen(), at);
        check!(Some(m.rd()) == src.get(..at));
        // The block is as large as asked; what the copy did not reach is zeros.
        check_eq!(m.capacity(), if n > PAGEBUF { n } else { m.capacity() });
        if n > PAGEBUF {
            let rest = m.0.data.bytes().get(at..).unwrap_or_default();
            check!(rest.iter().all(|&b| b == 0));
        }
    }
    Ok(())
}

pub(super) fn copied_in_fault_at_zero() -> TestResult {
    for n in [1, PAGEBUF, BIG] {
        let m = check_ok!(Msg::copied_in_wait(M_DATA, n, &mut FailIo, 0));
        check_eq!(m.blen(), 0);
        check_eq!(m.msgsize(), 0);
    }
    Ok(())
}

pub(super) fn copied_in_obeys_fault_injection() -> TestResult {
    let mut src = check_ok!(pattern(BIG));
    // The data block, then the block: either failing is NoMem.
    for k in 0..2 {
        let g = fail_after(k);
        let r = Msg::copied_in_wait(M_DATA, BIG, &mut SliceIo(&mut src), 0);
        drop(g);
        check_eq!(r.err(), Some(sys::NoMem));
    }
    let g = fail_after(0);
    let r = Msg::copied_in_wait(M_DATA, PAGEBUF, &mut SliceIo(&mut src), 0);
    drop(g);
    check_eq!(r.err(), Some(sys::NoMem));
    let g = fail_after(2);
    let m = check_ok!(Msg::copied_in_wait(M_DATA, BIG, &mut SliceIo(&mut src), 0));
    drop(g);
    check_eq!(m.blen(), BIG);
    Ok(())
}
