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

use streams_core::msg::Msg;
use streams_core::perim::express_send::{ExpressTx, Sent};
use streams_core::sys::Arc;

use super::jobs::Held;
use super::net::{Inet4, Net, Port, Stats, TxOpts};
use super::opt::Opts;
use super::prim;
use super::udp::check_unitdata;

/// What the express send of one endpoint sends with (see the module docs).
pub(crate) struct UdpTx<N: Net> {
    pub(crate) held: Arc<Held<N>>,
    pub(crate) opts: Opts,
    pub(crate) stats: Arc<Stats>,
}

/// The part of `Udp::unitdata` that only reads (`udp::check_unitdata`): the destination,
/// transmit options and data part of a T_UNITDATA_REQ `mp` over the endpoint's options
/// `opts`, when the locked path would send it and it has data. `None` when that path would
/// answer otherwise (or send an empty datagram).
pub(crate) fn prepare<'a>(opts: &Opts, mp: &'a Msg) -> Option<(Inet4, TxOpts, &'a Msg)> {
    let (dest, tx) = check_unitdata(opts, mp).ok()?;
    Some((dest, tx, mp.cont()?))
}

impl<N: Net> ExpressTx for UdpTx<N> {
    fn send(&self, mp: Msg) -> Sent {
        let Some((dest, tx, data)) = prepare(&self.opts, &mp) else {
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
