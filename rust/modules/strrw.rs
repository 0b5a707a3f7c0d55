// SPDX-License-Identifier: GPL-2.0
//! The data path of a [`StrFile`]: read(2)/readv(2) and write(2)/writev(2) over any user
//! buffer the head can copy through (`UserBuf` for read/write, `IterBuf` for the vectored
//! calls), so a writev is one write and a readv one read.
//!
//! Both use the two-phase paths of `sth/fast.rs` where they apply: a write up to
//! [`PREBUILD_MAX`] bytes builds its message before taking the stream lock; a read takes whole
//! messages under the lock and copies them out after it.

use core::sync::atomic::Ordering;

use crate::chardev::O_NONBLOCK;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA};
use crate::sth::fast::Taken;
use crate::sth::UserIo;
use crate::strfile::StrFile;

/// Largest write whose message is built before the stream lock is taken.
const PREBUILD_MAX: usize = 65536;

/// An M_DATA message holding the `len` bytes of `buf` (built outside the stream lock).
fn prebuild(buf: impl UserIo, len: usize) -> Result<Msg, Errno> {
    let mut m = Msg::with_type(M_DATA, len).map_err(|_| Errno::ENOSR)?;
    let mut io = buf;
    let dst = m
        .spare_mut()
        .and_then(|s| s.get_mut(..len))
        .ok_or(Errno::ENOSR)?;
    io.copy_from_user(dst, 0)?;
    m.adj_wptr(len);
    Ok(m)
}

impl StrFile {
    /// read(2) and readv(2): `len` bytes into `buf`.
    pub(crate) fn read_io<B: UserIo + Copy>(
        &self,
        buf: B,
        len: usize,
        f_flags: u32,
    ) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        // Whole messages that fit are taken under the lock and copied out after it (see
        // `sth/fast.rs`); anything else is read by `strread` under the lock.
        let mut taken = Taken::new();
        let mut took = false;
        let n = self.run(
            nb,
            |s| {
                took = s.sth_take_ok(len);
                if took {
                    s.strread_take(len, nb, &mut taken)
                } else {
                    let mut io = buf;
                    s.strread(&mut io, len, nb)
                }
            },
            |_| {},
        )?;
        if !took {
            return Ok(n);
        }
        let mut io = buf;
        let mut off = 0usize;
        for i in 0..taken.len() {
            let Some(m) = taken.get(i) else {
                break;
            };
            let mut at = off;
            let mut fault = false;
            for b in m.blocks() {
                if io.copy_to_user(at, b.rd()).is_err() {
                    fault = true;
                    break;
                }
                at += b.blen();
            }
            if fault {
                // Put back what was not delivered (this message too: its bytes already copied
                // are not counted, so nothing is read twice).
                let _ = self.run(
                    true,
                    |s| {
                        s.strread_untake(&mut taken, i);
                        Ok(())
                    },
                    |_| {},
                );
                return if off > 0 { Ok(off) } else { Err(Errno::EFAULT) };
            }
            off = at;
        }
        // `taken` is dropped here, outside the lock: the messages are freed without it.
        Ok(off)
    }

    /// write(2) and writev(2): `len` bytes from `buf`, one write.
    pub(crate) fn write_io<B: UserIo + Copy>(
        &self,
        buf: B,
        len: usize,
        f_flags: u32,
    ) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        if len > 0 && len <= PREBUILD_MAX && self.prebuilt_hint.load(Ordering::Relaxed) {
            // Allocate and copy before taking the lock (see `sth/fast.rs`); a bad buffer
            // fails here with EFAULT before anything happened.
            let mut slot = Some(prebuild(buf, len)?);
            return self.run(
                nb,
                |s| {
                    if s.sth_prebuilt_ok(len) {
                        s.strwrite_prebuilt(&mut slot, nb)
                    } else {
                        // Options changed (write offset, hold, packet sizes): the usual way.
                        self.prebuilt_hint.store(false, Ordering::Relaxed);
                        let mut io = buf;
                        s.strwrite(&mut io, len, nb)
                    }
                },
                |_| {},
            );
        }
        self.run(
            nb,
            |s| {
                self.prebuilt_hint
                    .store(s.sth_prebuilt_ok(1), Ordering::Relaxed);
                let mut io = buf;
                s.strwrite(&mut io, len, nb)
            },
            |_| {},
        )
    }
}
