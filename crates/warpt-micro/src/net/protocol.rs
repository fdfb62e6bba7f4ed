//! The wire protocol between warpt's network benchmarks and `warpt net-server`.
//!
//! A session opens with a 24-byte hello from the client:
//! `WARPTNT1` (8 bytes), mode (u32 LE: 1 sink, 2 echo), size (u32 LE: bytes
//! per acknowledged round for sink, bytes per message for echo), 8 bytes
//! reserved (zero). The server answers `WARPTOK\n` and then
//! - sink: reads everything, and each time another `size` bytes have
//!   arrived writes the cumulative count (u64 LE);
//! - echo: reads `size` bytes and writes them back, until end of stream.
//!
//! Anything else gets the connection closed; the server goes on serving.

use std::io::{self, Read, Write};

/// First bytes of every session.
pub const MAGIC: &[u8; 8] = b"WARPTNT1";
/// The server's answer to a valid hello.
pub const OK: &[u8; 8] = b"WARPTOK\n";
/// Length of the hello.
pub const HELLO_LEN: usize = 24;
/// Default TCP port of `warpt net-server`.
pub const DEFAULT_PORT: u16 = 7420;
/// Largest sink round a server accepts.
pub const MAX_ROUND: u32 = 1 << 30;
/// Bytes per write of a bandwidth stream and per read of its server: iperf3's
/// TCP block size. Reads of 256 KiB ran 4-5% slower than reads of this size
/// on loopback (Intel Xeon model 207, 2 vCPUs, 2026-12-05), as iperf3's server
/// reads.
pub const BLOCK: usize = 128 << 10;
/// Largest echo message a server accepts.
pub const MAX_MESSAGE: u32 = 1 << 20;

/// What a session does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Throughput: the server discards data and acknowledges rounds.
    Sink {
        /// Bytes per acknowledged round.
        round: u32,
    },
    /// Latency: the server echoes messages.
    Echo {
        /// Bytes per message.
        message: u32,
    },
}

/// Why a hello was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// Not a warpt client.
    #[error("bad magic (not a warpt client)")]
    Magic,
    /// Unknown mode number.
    #[error("unknown mode {0}")]
    Mode(u32),
    /// Size zero or beyond the server's bounds.
    #[error("size {0} out of bounds")]
    Size(u32),
}

impl Mode {
    /// The hello a client sends for this mode.
    pub fn hello(self) -> [u8; HELLO_LEN] {
        let (code, size) = match self {
            Mode::Sink { round } => (1u32, round),
            Mode::Echo { message } => (2u32, message),
        };
        let mut h = [0u8; HELLO_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&code.to_le_bytes());
        h[12..16].copy_from_slice(&size.to_le_bytes());
        h
    }

    /// Parses and bounds-checks a hello.
    pub fn parse(h: &[u8; HELLO_LEN]) -> Result<Mode, HelloError> {
        if &h[..8] != MAGIC {
            return Err(HelloError::Magic);
        }
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let (code, size) = (word(8), word(12));
        match code {
            1 if size > 0 && size <= MAX_ROUND => Ok(Mode::Sink { round: size }),
            2 if size > 0 && size <= MAX_MESSAGE => Ok(Mode::Echo { message: size }),
            1 | 2 => Err(HelloError::Size(size)),
            other => Err(HelloError::Mode(other)),
        }
    }
}

/// Client side of the opening: send the hello, expect `OK`.
pub fn open(stream: &mut (impl Read + Write), mode: Mode) -> io::Result<()> {
    stream.write_all(&mode.hello())?;
    let mut answer = [0u8; 8];
    stream.read_exact(&mut answer)?;
    if &answer != OK {
        return Err(io::Error::other("the peer is not a warpt net-server"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_round_trip_and_bad_ones_are_named() {
        for m in [Mode::Sink { round: 1 << 20 }, Mode::Echo { message: 64 }] {
            assert_eq!(Mode::parse(&m.hello()), Ok(m));
        }
        let mut h = Mode::Echo { message: 64 }.hello();
        h[0] = b'X';
        assert_eq!(Mode::parse(&h), Err(HelloError::Magic));
        assert_eq!(
            Mode::parse(
                &Mode::Echo {
                    message: MAX_MESSAGE + 1
                }
                .hello()
            ),
            Err(HelloError::Size(MAX_MESSAGE + 1))
        );
        let mut h = Mode::Sink { round: 8 }.hello();
        h[8] = 9;
        assert_eq!(Mode::parse(&h), Err(HelloError::Mode(9)));
    }
}
