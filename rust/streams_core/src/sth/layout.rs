//! The argument structures of the Stream head ioctls that embed a pointer (`struct strbuf`,
//! `strpmsg`, `strpeek`, `strioctl`, `str_list`), decoded from the caller's bytes in either
//! data model: [`Model::Lp64`] (64-bit processes, the layouts of `docs/abi.md`) or
//! [`Model::Ilp32`] (32-bit processes through `compat_ioctl`: pointers and `long` are 4 bytes,
//! so every field after the first pointer moves). The platform copies [`Model::size`] bytes
//! in, decodes them here, and writes results back at the offsets given here; the other I_*
//! arguments (`int`, `int *`, names, `struct bandinfo`, `struct strrecvfd`) have one layout.

/// The caller's data model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// 64-bit: pointers and `long` are 8 bytes.
    Lp64,
    /// 32-bit: pointers and `long` are 4 bytes.
    Ilp32,
}

/// Which structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `struct strioctl { int ic_cmd; int ic_timout; int ic_len; char *ic_dp; }`.
    StrIoctl,
    /// `struct strpmsg { struct strbuf ctlbuf, databuf; int band; int flags; }`.
    StrPmsg,
    /// `struct strpeek { struct strbuf ctlbuf, databuf; long flags; }`.
    StrPeek,
    /// `struct str_list { int sl_nmods; struct str_mlist *sl_modlist; }`.
    StrList,
}

/// A decoded `struct strbuf { int maxlen; int len; char *buf; }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StrBufArg {
    /// `maxlen`.
    pub maxlen: i32,
    /// `len`.
    pub len: i32,
    /// `buf`, zero-extended.
    pub buf: usize,
}

fn i32_at(b: &[u8], off: usize) -> i32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_ne_bytes)
}

impl Model {
    /// Bytes of a pointer or `long`.
    pub const fn ptr(self) -> usize {
        match self {
            Model::Lp64 => 8,
            Model::Ilp32 => 4,
        }
    }

    /// Bytes of a `struct strbuf`.
    pub const fn strbuf_size(self) -> usize {
        8 + self.ptr()
    }

    /// Bytes of structure `l`.
    pub const fn size(self, l: Layout) -> usize {
        let sb = self.strbuf_size();
        match l {
            Layout::StrIoctl => self.ic_dp() + self.ptr(),
            Layout::StrPmsg => 2 * sb + 8,
            Layout::StrPeek => 2 * sb + self.ptr(),
            Layout::StrList => 2 * self.ptr(),
        }
    }

    /// Offset of `ic_dp` in `struct strioctl` (aligned: 16 in LP64, 12 in ILP32).
    pub const fn ic_dp(self) -> usize {
        12usize.next_multiple_of(self.ptr())
    }

    /// Offset of the data `strbuf` (the second one) in `strpmsg`/`strpeek`.
    pub fn databuf(self) -> usize {
        self.strbuf_size()
    }

    /// Offset of `band` in `strpmsg`.
    pub fn pmsg_band(self) -> usize {
        2 * self.strbuf_size()
    }

    /// Offset of `flags` in `strpmsg`.
    pub fn pmsg_flags(self) -> usize {
        2 * self.strbuf_size() + 4
    }

    /// Offset of `flags` in `strpeek` (a `long`: [`Model::ptr`] bytes).
    pub fn peek_flags(self) -> usize {
        2 * self.strbuf_size()
    }

    /// A pointer or `long` at `off` of `b`, zero-extended (0 if `b` is too short).
    pub fn word(self, b: &[u8], off: usize) -> usize {
        match self {
            Model::Lp64 => b
                .get(off..off + 8)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u64::from_ne_bytes) as usize,
            Model::Ilp32 => b
                .get(off..off + 4)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u32::from_ne_bytes) as usize,
        }
    }

    /// The `struct strbuf` at `off` of `b`.
    pub fn strbuf(self, b: &[u8], off: usize) -> StrBufArg {
        StrBufArg {
            maxlen: i32_at(b, off),
            len: i32_at(b, off + 4),
            buf: self.word(b, off + 8),
        }
    }

    /// `struct strioctl` in `b`: (ic_cmd, ic_timout, ic_len, ic_dp). `ic_len` is written
    /// back at offset 8 in both models.
    pub fn strioctl(self, b: &[u8]) -> (i32, i32, i32, usize) {
        (
            i32_at(b, 0),
            i32_at(b, 4),
            i32_at(b, 8),
            self.word(b, self.ic_dp()),
        )
    }

    /// `struct strpmsg` in `b`: (ctlbuf, databuf, band, flags).
    pub fn strpmsg(self, b: &[u8]) -> (StrBufArg, StrBufArg, i32, i32) {
        (
            self.strbuf(b, 0),
            self.strbuf(b, self.databuf()),
            i32_at(b, self.pmsg_band()),
            i32_at(b, self.pmsg_flags()),
        )
    }

    /// getmsg's results stored into `b`, the caller's `struct strpmsg` as copied in: the two
    /// `len` fields, `band` and `flags`. Returns the byte range of `b` that holds them (from
    /// `ctlbuf.len` to the end of the structure), to be written back in one copy; the bytes
    /// between them (`ctlbuf.buf`, `databuf.maxlen`, `databuf.buf`) go back as they came in.
    /// `None` if `b` is shorter than the structure.
    pub fn pmsg_results(
        self,
        b: &mut [u8],
        ctl_len: i32,
        data_len: i32,
        band: i32,
        flags: i32,
    ) -> Option<core::ops::Range<usize>> {
        let end = self.size(Layout::StrPmsg);
        let fields = [
            (4, ctl_len),
            (self.databuf() + 4, data_len),
            (self.pmsg_band(), band),
            (self.pmsg_flags(), flags),
        ];
        if b.len() < end {
            return None;
        }
        for (off, v) in fields {
            b.get_mut(off..off + 4)?.copy_from_slice(&v.to_ne_bytes());
        }
        Some(4..end)
    }

    /// `struct strpeek` in `b`: (ctlbuf, databuf, flags as an `int`: RS_HIPRI or 0).
    pub fn strpeek(self, b: &[u8]) -> (StrBufArg, StrBufArg, i32) {
        (
            self.strbuf(b, 0),
            self.strbuf(b, self.databuf()),
            i32_at(b, self.peek_flags()),
        )
    }

    /// `struct str_list` in `b`: (sl_nmods, sl_modlist).
    pub fn str_list(self, b: &[u8]) -> (i32, usize) {
        (i32_at(b, 0), self.word(b, self.ptr()))
    }

    /// A `long` with value `v` as the caller stores it: the buffer and how many of its bytes
    /// count ([`Model::ptr`]).
    pub fn long_bytes(self, v: i64) -> ([u8; 8], usize) {
        let mut b = [0u8; 8];
        match self {
            Model::Lp64 => b = v.to_ne_bytes(),
            Model::Ilp32 => {
                for (d, s) in b.iter_mut().zip((v as i32).to_ne_bytes()) {
                    *d = s;
                }
            }
        }
        (b, self.ptr())
    }
}
