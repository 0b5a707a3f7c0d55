//! XTI option buffers: a sequence of [`t_opthdr`]s, each followed by its value and padded to
//! a multiple of 4 bytes (`sizeof(t_uscalar_t)`). [`Options`] walks a received buffer the
//! way T_OPT_FIRSTHDR/T_OPT_NEXTHDR/T_OPT_DATA do in C, but on a byte slice: a header whose
//! `len` is shorter than a header or runs past the buffer ends the walk (like the macros'
//! NULL) instead of being read. [`OptBuilder`] writes one.

use super::types::t_opthdr;

/// Size of an option header.
pub const OPTHDR_SIZE: usize = core::mem::size_of::<t_opthdr>();

/// Round `n` up to the option alignment (T_ALIGN on a length).
pub const fn t_align(n: usize) -> usize {
    (n + 3) & !3
}

/// One option found in a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt<'a> {
    /// Level (XTI_GENERIC, T_INET_IP…).
    pub level: u32,
    /// Name.
    pub name: u32,
    /// Status (T_SUCCESS…; 0 in requests).
    pub status: u32,
    /// The value (`len - sizeof(t_opthdr)` bytes).
    pub value: &'a [u8],
}

impl Opt<'_> {
    /// The value as a t_scalar_t (most XTI options), if it is exactly 4 bytes.
    pub fn scalar(&self) -> Option<i32> {
        let b: [u8; 4] = self.value.try_into().ok()?;
        Some(i32::from_ne_bytes(b))
    }
}

/// Iterator over the options of a buffer.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    buf: &'a [u8],
    at: usize,
}

/// Walk the options in `buf`.
pub fn options(buf: &[u8]) -> Options<'_> {
    Options { buf, at: 0 }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

impl<'a> Iterator for Options<'a> {
    type Item = Opt<'a>;

    fn next(&mut self) -> Option<Opt<'a>> {
        let at = self.at;
        let hdr_end = at.checked_add(OPTHDR_SIZE)?;
        if hdr_end > self.buf.len() {
            return None;
        }
        let len = u32_at(self.buf, at)? as usize;
        if len < OPTHDR_SIZE || at.checked_add(len)? > self.buf.len() {
            self.at = self.buf.len();
            return None;
        }
        let opt = Opt {
            level: u32_at(self.buf, at + 4)?,
            name: u32_at(self.buf, at + 8)?,
            status: u32_at(self.buf, at + 12)?,
            value: &self.buf[hdr_end..at + len],
        };
        self.at = at.saturating_add(t_align(len));
        Some(opt)
    }
}

/// Builds an option buffer.
#[derive(Debug, Clone, Default)]
pub struct OptBuilder {
    buf: Vec<u8>,
}

impl OptBuilder {
    /// An empty buffer.
    pub fn new() -> OptBuilder {
        OptBuilder::default()
    }

    /// Append an option with `value` (padded to the alignment).
    pub fn push(mut self, level: u32, name: u32, value: &[u8]) -> OptBuilder {
        let len = (OPTHDR_SIZE + value.len()) as u32;
        for w in [len, level, name, 0] {
            self.buf.extend_from_slice(&w.to_ne_bytes());
        }
        self.buf.extend_from_slice(value);
        self.buf.resize(t_align(self.buf.len()), 0);
        self
    }

    /// Append an option whose value is a t_scalar_t.
    pub fn scalar(self, level: u32, name: u32, v: i32) -> OptBuilder {
        self.push(level, name, &v.to_ne_bytes())
    }

    /// The bytes.
    pub fn build(self) -> Vec<u8> {
        self.buf
    }
}
