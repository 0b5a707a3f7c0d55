//! Transport addresses of this provider: `struct sockaddr_in` in the address parts of the
//! primitives (16 bytes: `sin_family` AF_INET native endian, `sin_port` and `sin_addr` in
//! network order, 8 bytes of zero), as LfS's `udp` and every XTI-over-IP program expect.

use super::net::Inet4;

/// AF_INET.
pub const AF_INET: u16 = 2;
/// `sizeof(struct sockaddr_in)`.
pub const SOCKADDR_IN: usize = 16;
/// The bytes up to the end of `sin_addr`: the shortest address part accepted.
const MIN_LEN: usize = 8;

impl Inet4 {
    /// Decode a `sockaddr_in` address part. `None` (TBADADDR): shorter than 8 bytes, longer
    /// than 16, or not AF_INET.
    pub fn decode(b: &[u8]) -> Option<Inet4> {
        if b.len() < MIN_LEN || b.len() > SOCKADDR_IN {
            return None;
        }
        let fam = u16::from_ne_bytes([*b.first()?, *b.get(1)?]);
        if fam != AF_INET {
            return None;
        }
        let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
        let mut addr = [0u8; 4];
        addr.copy_from_slice(b.get(4..8)?);
        Some(Inet4 { addr, port })
    }

    /// The `sockaddr_in` of this address.
    pub fn encode(&self) -> [u8; SOCKADDR_IN] {
        let mut b = [0u8; SOCKADDR_IN];
        let f = AF_INET.to_ne_bytes();
        let p = self.port.to_be_bytes();
        b[0] = f[0];
        b[1] = f[1];
        b[2] = p[0];
        b[3] = p[1];
        b[4..8].copy_from_slice(&self.addr);
        b
    }

    /// INADDR_ANY.
    pub fn is_any(&self) -> bool {
        self.addr == [0; 4]
    }
}
