//! strqget/strqset: read and change a queue's or band's fields by name (SVR4 `qfields_t`).
//!
//! Band 0 names the queue itself. Reading a band that was never allocated answers its
//! defaults without allocating; writing one allocates it (ENOSR when that fails). Errors are
//! the SVR4 ones: EPERM for read-only fields (QCOUNT, QFIRST, QLAST, QFLAG), EINVAL for
//! fields a band does not have (QMAXPSZ, QMINPSZ).

use super::{QFlags, Queue};
use crate::errno::Errno;

/// A field of `queue_t`/`qband` (`qfields_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QField {
    /// QHIWAT: high water mark.
    Hiwat,
    /// QLOWAT: low water mark.
    Lowat,
    /// QMAXPSZ: maximum packet size (queue only).
    Maxpsz,
    /// QMINPSZ: minimum packet size (queue only).
    Minpsz,
    /// QCOUNT: bytes queued (read-only).
    Count,
    /// QFIRST: 1 if the queue/band has a first message, else 0 (read-only).
    First,
    /// QLAST: 1 if the queue/band has a last message, else 0 (read-only).
    Last,
    /// QFLAG: `q_flag`/`qb_flag` bits (read-only).
    Flag,
}

impl Queue {
    /// strqget: the value of `what` for band `band` (0 = the queue).
    pub fn strqget(&self, what: QField, band: u8) -> Result<usize, Errno> {
        if band == 0 {
            return Ok(match what {
                QField::Hiwat => self.hiwat,
                QField::Lowat => self.lowat,
                QField::Maxpsz => self.maxpsz,
                QField::Minpsz => self.minpsz,
                QField::Count => self.count,
                QField::First | QField::Last => usize::from(!self.is_empty()),
                QField::Flag => self.flags.0 as usize,
            });
        }
        let qb = self.band(band);
        Ok(match what {
            QField::Maxpsz | QField::Minpsz => return Err(Errno::EINVAL),
            QField::Hiwat => qb.map_or(self.hiwat, |b| b.hiwat),
            QField::Lowat => qb.map_or(self.lowat, |b| b.lowat),
            QField::Count => qb.map_or(0, |b| b.count),
            QField::First | QField::Last => usize::from(qb.is_some_and(|b| !b.msgs.is_empty())),
            QField::Flag => qb.map_or(0, |b| b.flags.0 as usize),
        })
    }

    /// strqset: set `what` of band `band` (0 = the queue) to `val`.
    pub fn strqset(&mut self, what: QField, band: u8, val: usize) -> Result<(), Errno> {
        match what {
            QField::Count | QField::First | QField::Last | QField::Flag => {
                return Err(Errno::EPERM)
            }
            QField::Maxpsz | QField::Minpsz if band != 0 => return Err(Errno::EINVAL),
            _ => {}
        }
        if band == 0 {
            match what {
                QField::Hiwat => self.hiwat = val,
                QField::Lowat => self.lowat = val,
                QField::Maxpsz => self.maxpsz = val,
                QField::Minpsz => self.minpsz = val,
                _ => return Err(Errno::EINVAL),
            }
        } else {
            self.ensure_band(band)?;
            let qb = self.band_mut(band).ok_or(Errno::EINVAL)?;
            match what {
                QField::Hiwat => qb.hiwat = val,
                QField::Lowat => qb.lowat = val,
                _ => return Err(Errno::EINVAL),
            }
        }
        // Keep "QFULL exactly when count >= hiwat" true after a watermark change.
        self.update_full();
        debug_assert!(
            !self.flags.contains(QFlags::QFULL)
                || self.count >= self.hiwat
                || self.mblkcnt >= self.mblkmax,
            "QFULL consistent after strqset"
        );
        Ok(())
    }
}
