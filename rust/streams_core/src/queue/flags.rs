//! Queue and band flags (`q_flag`, `qb_flag`) and the events queue operations report.
//!
//! A queue here knows nothing about its neighbours, so instead of calling `qenable` or
//! `backenable` itself (as SVR4's putq/getq do) each operation returns a [`QEvent`] telling the
//! Stream what to do. `QEvent` is `#[must_use]`: dropping one silently would lose a wakeup.

/// `q_flag` bits. Values follow SVR4 where SVR4 has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QFlags(pub u32);

impl QFlags {
    /// QENAB: the queue is on a run list (qenable'd, service procedure pending).
    pub const QENAB: QFlags = QFlags(0x0001);
    /// QWANTR: a reader found the queue empty (getq returned nothing).
    pub const QWANTR: QFlags = QFlags(0x0002);
    /// QWANTW: a writer was refused by canput; back-enable when drained to `q_lowat`.
    pub const QWANTW: QFlags = QFlags(0x0004);
    /// QFULL: `q_count >= q_hiwat`.
    pub const QFULL: QFlags = QFlags(0x0008);
    /// QREADR: this is the read queue of its pair.
    pub const QREADR: QFlags = QFlags(0x0010);
    /// QNOENB: putq must not enable the queue for ordinary messages (noenable).
    pub const QNOENB: QFlags = QFlags(0x0040);
    /// QBACK: the queue was back-enabled (band 0).
    pub const QBACK: QFlags = QFlags(0x0100);

    /// Whether all bits of `f` are set.
    pub const fn contains(self, f: QFlags) -> bool {
        self.0 & f.0 == f.0
    }
    pub(crate) fn set(&mut self, f: QFlags) {
        self.0 |= f.0;
    }
    pub(crate) fn clear(&mut self, f: QFlags) {
        self.0 &= !f.0;
    }
    pub(crate) fn assign(&mut self, f: QFlags, on: bool) {
        if on {
            self.set(f)
        } else {
            self.clear(f)
        }
    }
}

/// `qb_flag` bits of one priority band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QbFlags(pub u32);

impl QbFlags {
    /// QB_FULL: `qb_count >= qb_hiwat`.
    pub const QB_FULL: QbFlags = QbFlags(0x01);
    /// QB_WANTW: a writer was refused by bcanput for this band.
    pub const QB_WANTW: QbFlags = QbFlags(0x02);
    /// QB_BACK: the queue was back-enabled for this band.
    pub const QB_BACK: QbFlags = QbFlags(0x04);

    /// Whether all bits of `f` are set.
    pub const fn contains(self, f: QbFlags) -> bool {
        self.0 & f.0 == f.0
    }
    pub(crate) fn set(&mut self, f: QbFlags) {
        self.0 |= f.0;
    }
    pub(crate) fn clear(&mut self, f: QbFlags) {
        self.0 &= !f.0;
    }
    pub(crate) fn assign(&mut self, f: QbFlags, on: bool) {
        if on {
            self.set(f)
        } else {
            self.clear(f)
        }
    }
}

/// A set of priority bands 0..=255 (which bands a back-enable is for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BandSet([u64; 4]);

impl BandSet {
    /// Add band `b`.
    pub fn insert(&mut self, b: u8) {
        if let Some(w) = self.0.get_mut(usize::from(b / 64)) {
            *w |= 1u64 << (b % 64);
        }
    }
    /// Whether band `b` is in the set.
    pub fn contains(&self, b: u8) -> bool {
        self.0
            .get(usize::from(b / 64))
            .is_some_and(|w| w & (1u64 << (b % 64)) != 0)
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Union with `o`.
    pub fn union(&mut self, o: &BandSet) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a |= *b;
        }
    }
    /// The bands in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0u8..=255).filter(move |b| self.contains(*b))
    }
}

/// What the caller of a queue operation must do next.
#[must_use = "a dropped QEvent loses a qenable or a back-enable"]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QEvent {
    enable: bool,
    back: BandSet,
}

impl QEvent {
    /// Nothing to do.
    pub const NONE: QEvent = QEvent {
        enable: false,
        back: BandSet([0; 4]),
    };
    /// The queue itself must be qenable'd (its service procedure scheduled).
    pub fn needs_enable(&self) -> bool {
        self.enable
    }
    /// The nearest upstream queue with a service procedure must be back-enabled.
    pub fn needs_backenable(&self) -> bool {
        !self.back.is_empty()
    }
    /// The bands the back-enable is for (band 0 = ordinary flow control).
    pub fn back_bands(&self) -> BandSet {
        self.back
    }
    /// Combine two events.
    pub fn merge(self, o: QEvent) -> QEvent {
        let mut back = self.back;
        back.union(&o.back);
        QEvent {
            enable: self.enable || o.enable,
            back,
        }
    }
    pub(crate) fn enable() -> QEvent {
        QEvent {
            enable: true,
            ..QEvent::NONE
        }
    }
    pub(crate) fn add_back(&mut self, band: u8) {
        self.back.insert(band);
    }
}

/// Result of flushq/flushband: how many messages were freed, and the back-enable due.
#[must_use = "a dropped Flushed loses a back-enable"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// Number of messages freed.
    pub msgs: usize,
    /// Bytes freed (msgsize of the freed messages).
    pub bytes: usize,
    /// What the caller must do (back-enable).
    pub event: QEvent,
}
