//! The `udp` driver's express send (`perim/express_send.rs` in the core): a T_UNITDATA_REQ
//! transmitted without the Stream lock.
//!
//! While the endpoint is in TS_IDLE with nothing waiting for send buffer space, over a port
//! that can send without the lock ([`Port::EXPRESS`]), the driver publishes a [`UdpTx`]: the
//! bound port, a copy of the endpoint's options and its counters. It republishes it when the
//! options change (T_OPTMGMT_REQ) and withdraws it at unbind, close and EAGAIN
//! (`Udp::sync_tx`, at the end of each of its procedures). A send through it does what the
//! locked write put procedure does with a T_UNITDATA_REQ that it sends ([`prepare`], then
//! [`Port::send_unlocked`]), and declines, sending nothing, whatever that procedure would
//! answer otherwise: not a T_UNITDATA_REQ, a bad address or option (T_UDERROR_IND), a short
//! request (M_ERROR), an oversize or non-data TSDU, a datagram without data, a port that
//! needs its locked send for it, no send buffer (EAGAIN: the locked path queues it). The
//! locked putmsg then answers in order. A transmit error is answered with the same
//! T_UDERROR_IND the locked path sends ([`Sent::Answer`]).
//!
//! Dropped under the Stream lock (withdrawn, or taken out when the perimeter disarms): its
//! reference to the port is never the last one (the driver's own, or its release job's, is
//! let go of after the unlock: `jobs.rs`).

use core::sync::atomic::Ordering::Relaxed;

use streams_core::msg::{Msg, M_DATA};
use streams_core::perim::express_send::{ExpressTx, Sent};
use streams_core::sys::Arc;

use super::jobs::Held;
use super::net::{Inet4, Net, Port, Stats, TxOpts};
use super::opt::{self, Opts};
use super::prim::{self, Req};
use super::udp::TSDU_SIZE;

/// What the express send of one endpoint sends with (see the module docs).
pub(crate) struct UdpTx<N: Net> {
    pub(crate) held: Arc<Held<N>>,
    pub(crate) opts: Opts,
    pub(crate) stats: Arc<Stats>,
}

/// The part of `Udp::unitdata` that only reads: the destination and transmit options of a
/// T_UNITDATA_REQ `mp` over the endpoint's options `opts`, when the locked path would send
/// it: a well-formed request to a valid address with valid options, and a data part of
/// M_DATA blocks no larger than a TSDU. `None` when that path would answer otherwise.
pub(crate) fn prepare(opts: &Opts, mp: &Msg) -> Option<(Inet4, TxOpts)> {
    if prim::prim_type(mp.rd()) != Some(prim::T_UNITDATA_REQ) {
        return None;
    }
    let Ok(Some(Req::Unitdata { dest, opt })) = Req::decode(mp.rd()) else {
        return None;
    };
    let dest = Inet4::decode(dest).filter(|d| d.port != 0 && !d.is_any())?;
    let tx = opt::unitdata(opts, opt).ok()?;
    let data = mp.cont()?;
    if data.msgdsize() > TSDU_SIZE as usize || data.blocks().any(|b| b.db_type() != M_DATA) {
        return None;
    }
    Some((dest, tx))
}

impl<N: Net> ExpressTx for UdpTx<N> {
    fn send(&self, mp: Msg) -> Sent {
        let Some((dest, tx)) = prepare(&self.opts, &mp) else {
            return Sent::Declined(mp);
        };
        let Some(data) = mp.cont() else {
            return Sent::Declined(mp);
        };
        match self.held.port.send_unlocked(dest, data, &tx) {
            None | Some(Err(streams_core::errno::Errno::EAGAIN)) => Sent::Declined(mp),
            Some(Ok(())) => {
                self.stats.sent.fetch_add(1, Relaxed);
                Sent::Done
            }
            Some(Err(e)) => {
                // As `Udp::uderror` answers it.
                self.stats.send_errors.fetch_add(1, Relaxed);
                match prim::uderror_ind(&dest.encode(), e.0) {
                    Some(a) => Sent::Answer(a),
                    None => Sent::Done,
                }
            }
        }
    }
}

/// Whether the driver over ports `N::Port` may publish an express send at all.
pub(crate) const fn can_publish<N: Net>() -> bool {
    <N::Port as Port>::EXPRESS
}
