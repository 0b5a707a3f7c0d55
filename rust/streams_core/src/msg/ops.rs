//! The DDI message utilities over whole `b_cont` chains: dupb/dupmsg, copyb/copymsg, linkb,
//! unlinkb, rmvb, pullupmsg, msgpullup, adjmsg, msgdsize, and a block iterator.
//!
//! Semantics follow SVR4 (checked against illumos `stream.c`). Every walk over a chain is a
//! loop, never recursion (kernel stacks are small), and every function that can fail leaves
//! the message as it was: allocations happen before the first change.

use super::cache::{self, Pool};
use super::{Data, Mblk, Msg, M_DATA};
use crate::sys::{self, NoMem};
use core::mem;

/// Why a message utility refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgError {
    /// An allocation failed (ENOSR).
    NoMem,
    /// The message holds fewer bytes of the leading type than asked for.
    TooShort,
}

impl From<NoMem> for MsgError {
    fn from(_: NoMem) -> MsgError {
        MsgError::NoMem
    }
}

/// Iterator over the blocks of a message, first to last (`b_cont` order).
pub struct Blocks<'a>(Option<&'a Msg>);

impl<'a> Iterator for Blocks<'a> {
    type Item = &'a Msg;
    fn next(&mut self) -> Option<&'a Msg> {
        let b = self.0?;
        self.0 = b.cont();
        Some(b)
    }
}

/// Turn `b`'s data into a shared data block in place, if it is not one already.
///
/// On failure the block is unchanged.
fn share(b: &mut Mblk) -> Result<(), NoMem> {
    let arc = match &b.data {
        Data::Shared(_) => return Ok(()),
        // The fast buffer is copied, so the original stays intact until the Arc exists.
        Data::Fast(buf) => sys::new_arc(Data::Fast(*buf))?,
        Data::Heap(_) | Data::Ext(_) | Data::Ref(..) => {
            let d = mem::replace(&mut b.data, Data::empty());
            match sys::try_new_arc(d) {
                Ok(a) => a,
                Err(d) => {
                    // Put the data back: a failed dupb leaves the block as it was.
                    b.data = d;
                    return Err(NoMem);
                }
            }
        }
    };
    b.data = Data::Shared(arc);
    Ok(())
}

/// Free the block in `slot` and move its `b_cont` up into the slot.
fn unlink_at(slot: &mut Option<Msg>) {
    if let Some(mut b) = slot.take() {
        *slot = b.0.cont.take();
    }
}

impl Msg {
    /// Iterate over the blocks of this message.
    pub fn blocks(&self) -> Blocks<'_> {
        Blocks(Some(self))
    }

    /// The `n`th block (0 = this one), following `b_cont`.
    pub fn nth_block(&self, n: usize) -> Option<&Msg> {
        self.blocks().nth(n)
    }

    /// The `n`th block (0 = this one), mutable.
    pub fn nth_block_mut(&mut self, n: usize) -> Option<&mut Msg> {
        let mut cur = self;
        for _ in 0..n {
            cur = cur.0.cont.as_mut()?;
        }
        Some(cur)
    }

    /// dupb: a new block sharing this block's data block (same `b_rptr`, `b_wptr`, type, band
    /// and flag; no `b_cont`). This block's data becomes shared too: from now on neither can
    /// be written without [`Msg::make_writable`]. On failure nothing changes.
    pub fn dupb(&mut self) -> Result<Msg, NoMem> {
        // The new block first: if it fails, this block's data is still unique.
        let mut m = cache::alloc_fast(self.0.ty, Pool::Atomic)?;
        share(&mut self.0)?;
        let nb = &mut *m.0;
        if let Data::Shared(a) = &self.0.data {
            nb.data = Data::Shared(a.clone());
        }
        nb.band = self.0.band;
        nb.flag = self.0.flag;
        nb.rptr = self.0.rptr;
        nb.wptr = self.0.wptr;
        nb.init = self.0.init;
        Ok(m)
    }

    /// dupmsg: dupb every block of the message. All or nothing: on failure no copy exists and
    /// the message keeps its bytes and chain (blocks already visited stay shared, which only
    /// shows through [`Msg::is_shared`] and refusing writes).
    pub fn dupmsg(&mut self) -> Result<Msg, NoMem> {
        let mut head: Option<Msg> = None;
        let mut tail = &mut head;
        let mut src = Some(self);
        while let Some(s) = src {
            let nb = s.dupb()?;
            tail = &mut tail.insert(nb).0.cont;
            src = s.0.cont.as_mut();
        }
        head.ok_or(NoMem)
    }

    /// copyb: a new block with a fresh data block of the same size (`db_lim - db_base`), the
    /// readable bytes copied at the same offset, and the same type, band and flag.
    pub fn copyb(&self) -> Result<Msg, NoMem> {
        let data = self.0.copy_data()?;
        let mut m = cache::alloc_with(self.0.ty, data, Pool::Atomic)?;
        let nb = &mut *m.0;
        nb.band = self.0.band;
        nb.flag = self.0.flag;
        nb.rptr = self.0.rptr;
        nb.wptr = self.0.wptr;
        Ok(m)
    }

    /// copymsg: copyb every block. All or nothing; the original is untouched.
    pub fn copymsg(&self) -> Result<Msg, NoMem> {
        let mut head: Option<Msg> = None;
        let mut tail = &mut head;
        for b in self.blocks() {
            tail = &mut tail.insert(b.copyb()?).0.cont;
        }
        head.ok_or(NoMem)
    }

    /// linkb: append `m` at the end of this message's `b_cont` chain.
    pub fn linkb(&mut self, m: Msg) {
        let mut slot = &mut self.0.cont;
        while let Some(b) = slot {
            slot = &mut b.0.cont;
        }
        *slot = Some(m);
    }

    /// unlinkb: detach and return everything after the first block (`b_cont`).
    pub fn unlinkb(&mut self) -> Option<Msg> {
        self.0.cont.take()
    }

    /// rmvb: remove block `idx` (0 = the first) from the message.
    ///
    /// SVR4's `rmvb(mp, bp)` names the block by pointer and returns the shortened message,
    /// NULL if `bp` was the only block, or -1 if `bp` is not in `mp`. Blocks are owned here, so
    /// the block is named by position and given back: `Ok((rest, removed))` with `rest` the
    /// message without it (`None` if it was the only block) and `removed` without `b_cont`;
    /// `Err(self)` unchanged if there is no block `idx` (the -1 case).
    pub fn rmvb(mut self, idx: usize) -> Result<(Option<Msg>, Msg), Msg> {
        if idx == 0 {
            let rest = self.0.cont.take();
            return Ok((rest, self));
        }
        let mut removed = None;
        if let Some(prev) = self.nth_block_mut(idx - 1) {
            if let Some(mut r) = prev.0.cont.take() {
                prev.0.cont = r.0.cont.take();
                removed = Some(r);
            }
        }
        match removed {
            Some(r) => Ok((Some(self), r)),
            None => Err(self),
        }
    }

    /// xmsgsize: bytes in the leading blocks that have the type of the first block.
    pub fn xmsgsize(&self) -> usize {
        let ty = self.0.ty;
        self.blocks()
            .take_while(|b| b.0.ty == ty)
            .fold(0, |n, b| n.saturating_add(b.blen()))
    }

    /// msgdsize: bytes in the M_DATA blocks of the message (other types are not counted).
    pub fn msgdsize(&self) -> usize {
        self.blocks()
            .filter(|b| b.0.ty == M_DATA)
            .fold(0, |n, b| n.saturating_add(b.blen()))
    }

    /// pullupmsg: make the first block hold at least `len` contiguous bytes (`None`: all the
    /// leading bytes of the first block's type, SVR4's `len == -1`) by copying them into a
    /// fresh unique data block. Fully consumed blocks are freed; a partly consumed one stays
    /// with its `b_rptr` advanced. The first block keeps its type, band and flag.
    ///
    /// Nothing is done if the first block already holds `len` bytes. `TooShort` if the
    /// leading blocks of the first block's type hold fewer than `len` bytes; on any error the
    /// message is unchanged.
    pub fn pullupmsg(&mut self, len: Option<usize>) -> Result<(), MsgError> {
        let want = match len {
            None if self.0.cont.is_none() => return Ok(()),
            None => self.xmsgsize(),
            Some(n) if n <= self.blen() => return Ok(()),
            Some(n) if self.xmsgsize() < n => return Err(MsgError::TooShort),
            Some(n) => n,
        };
        let mut data = Data::alloc(want)?;
        let Some(dst) = data.bytes_mut() else {
            return Err(MsgError::NoMem); // a fresh data block is never shared
        };
        // want >= blen here, so the whole first block goes first.
        let mut off = self.blen();
        if let Some(d) = dst.get_mut(..off) {
            sys::copy_bytes(d, self.rd());
        }
        let mut rest = self.0.cont.take();
        while off < want {
            let Some(mut b) = rest else { break };
            let n = b.blen().min(want - off);
            if let Some(d) = dst.get_mut(off..off + n) {
                sys::copy_bytes(d, b.rd());
            }
            off += n;
            b.0.rptr += n;
            if b.blen() == 0 {
                rest = b.0.cont.take(); // `b` is freed here
            } else {
                rest = Some(b);
                break;
            }
        }
        self.0.set_data_atomic(data);
        self.0.rptr = 0;
        self.0.wptr = off;
        self.0.cont = rest;
        Ok(())
    }

    /// msgpullup: like [`Msg::pullupmsg`] but into a new message, leaving this one untouched.
    /// The first block of the copy holds the first `len` bytes (`None`: all leading bytes of
    /// the first block's type) with the first block's type, band and flag; the rest of the
    /// message follows as copies of its blocks. `TooShort` if there are not `len` such bytes.
    pub fn msgpullup(&self, len: Option<usize>) -> Result<Msg, MsgError> {
        let total = self.xmsgsize();
        let want = len.unwrap_or(total);
        if want > total {
            return Err(MsgError::TooShort);
        }
        let mut nm = Msg::with_type(self.0.ty, want)?;
        nm.0.band = self.0.band;
        nm.0.flag = self.0.flag;
        let mut rest: Option<Msg> = None;
        let mut tail = &mut rest;
        let mut src = Some(self);
        while let Some(b) = src {
            src = b.cont();
            let room = want - nm.0.wptr;
            if room == 0 {
                tail = &mut tail.insert(b.copyb()?).0.cont;
                continue;
            }
            let n = b.blen().min(room);
            nm.append(b.rd().get(..n).unwrap_or_default());
            if n < b.blen() {
                // Only reached once: after this block the first block is full.
                let mut c = b.copyb()?;
                c.adj_rptr(n);
                tail = &mut tail.insert(c).0.cont;
            }
        }
        nm.0.cont = rest;
        Ok(nm)
    }

    /// adjmsg: trim `len` bytes from the head of the message (`len > 0`) or `-len` bytes from
    /// its tail (`len < 0`), only within the leading blocks of the first block's type. Blocks
    /// other than the first that become empty are freed; the first always stays. `TooShort`
    /// (and no change) if those blocks hold fewer bytes.
    pub fn adjmsg(&mut self, len: isize) -> Result<(), MsgError> {
        let n = len.unsigned_abs();
        let total = self.xmsgsize();
        if total < n {
            return Err(MsgError::TooShort);
        }
        if len >= 0 {
            let mut left = n - self.adj_rptr(n);
            let mut slot = &mut self.0.cont;
            while left > 0 {
                let emptied = match slot.as_mut() {
                    Some(b) => {
                        left -= b.adj_rptr(left);
                        b.blen() == 0
                    }
                    None => break,
                };
                if emptied {
                    unlink_at(slot);
                } else {
                    match slot {
                        Some(b) => slot = &mut b.0.cont,
                        None => break,
                    }
                }
            }
        } else {
            // Keep the first `total - n` bytes of the run: walk forward, cut the block where
            // they end and free every later (non-first) block of the run, as SVR4's repeated
            // trimming of the run's last block does.
            let ty = self.0.ty;
            let mut keep = total - n;
            let mut cut = keep < self.blen();
            if cut {
                self.0.wptr = self.0.rptr + keep;
                keep = 0;
            } else {
                keep -= self.blen();
            }
            let mut slot = &mut self.0.cont;
            loop {
                let remove = match slot.as_mut() {
                    Some(b) if b.0.ty == ty => {
                        if cut {
                            true
                        } else if keep < b.blen() {
                            // The kept bytes end in this block.
                            b.0.wptr = b.0.rptr + keep;
                            keep = 0;
                            cut = true;
                            b.blen() == 0
                        } else {
                            keep -= b.blen();
                            false
                        }
                    }
                    _ => break,
                };
                if remove {
                    unlink_at(slot);
                } else {
                    match slot {
                        Some(b) => slot = &mut b.0.cont,
                        None => break,
                    }
                }
            }
        }
        Ok(())
    }
}
