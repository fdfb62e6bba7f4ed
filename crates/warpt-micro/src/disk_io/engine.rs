//! How I/Os are issued: io_uring with a real queue depth where the kernel
//! allows it, else one thread per queue slot doing pread/pwrite (what fio's
//! `psync` engine with `numjobs` would do).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::time::Instant;

use io_uring::{IoUring, opcode, types};

use super::file::{AlignedBuf, count_bad_pages, fill_pattern, stamp};

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// pread.
    Read,
    /// pwrite.
    Write,
}

/// What a batch of I/Os observed besides time.
#[derive(Debug, Default, Clone, Copy)]
pub struct BatchCheck {
    /// Pages read back whose header was not theirs.
    pub bad_pages: u64,
    /// Pages read back and checked.
    pub checked_pages: u64,
}

/// Issues batches of equal-sized I/Os at a queue depth.
pub trait Engine: Send {
    /// `io_uring` or `threads`.
    fn name(&self) -> &'static str;

    /// Performs one I/O of the engine's block size at each of `offsets`,
    /// with up to the queue depth in flight; appends each I/O's latency in
    /// microseconds to `latencies_us`; checks every page read.
    fn run(
        &mut self,
        file: &File,
        op: Op,
        offsets: &[u64],
        latencies_us: &mut Vec<f64>,
    ) -> io::Result<BatchCheck>;
}

/// Builds the best engine available for `block` byte I/Os at depth `qd`.
pub fn engine(block: usize, qd: usize, magic: u64, seed: u64) -> Box<dyn Engine> {
    match Uring::new(block, qd, magic, seed) {
        Ok(u) => Box::new(u),
        Err(_) => Box::new(Threads::new(block, qd, magic, seed)),
    }
}

fn buffers(block: usize, n: usize, seed: u64) -> Vec<AlignedBuf> {
    (0..n)
        .map(|i| {
            let mut b = AlignedBuf::new(block);
            fill_pattern(b.as_mut_slice(), seed ^ i as u64);
            b
        })
        .collect()
}

fn short(op: Op, got: usize, want: usize) -> io::Error {
    io::Error::other(format!("short {op:?}: {got} of {want} bytes"))
}

/// `IORING_ENTER_GETEVENTS` from <linux/io_uring.h> (the crate keeps its
/// bindings private).
const ENTER_GETEVENTS: u32 = 1;

/// io_uring with `qd` registered slots.
struct Uring {
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    block: usize,
    magic: u64,
}

impl Uring {
    fn new(block: usize, qd: usize, magic: u64, seed: u64) -> io::Result<Self> {
        let entries = qd.next_power_of_two() as u32;
        // Set up as fio's io_uring engine does: completions are posted when
        // this thread, the only submitter, enters the kernel (no IPI to
        // interrupt it), and the CQ is no larger than the SQ. Kernels before
        // 6.1 refuse some flags; then a plain ring.
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(entries)
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        Ok(Uring {
            ring,
            bufs: buffers(block, qd, seed),
            block,
            magic,
        })
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn run(
        &mut self,
        file: &File,
        op: Op,
        offsets: &[u64],
        latencies_us: &mut Vec<f64>,
    ) -> io::Result<BatchCheck> {
        let fd = types::Fd(file.as_raw_fd());
        let qd = self.bufs.len();
        let mut free: Vec<usize> = (0..qd).collect();
        let mut started = vec![Instant::now(); qd];
        let mut at = vec![0u64; qd];
        let mut next = 0usize;
        let mut done = 0usize;
        let mut check = BatchCheck::default();
        let mut completions: Vec<(usize, i32)> = Vec::with_capacity(qd);
        while done < offsets.len() {
            while next < offsets.len() {
                let Some(slot) = free.pop() else { break };
                let off = offsets[next];
                next += 1;
                let buf = &mut self.bufs[slot];
                if op == Op::Write {
                    stamp(buf.as_mut_slice(), off, self.magic);
                }
                let (ptr, len) = (buf.as_mut_ptr(), self.block as u32);
                let entry = match op {
                    Op::Read => opcode::Read::new(fd, ptr, len).offset(off).build(),
                    Op::Write => opcode::Write::new(fd, ptr, len).offset(off).build(),
                }
                .user_data(slot as u64);
                at[slot] = off;
                started[slot] = Instant::now();
                // SAFETY: the buffer stays alive and untouched until its
                // completion is reaped below; the queue has room for every slot.
                unsafe { self.ring.submission().push(&entry) }.map_err(io::Error::other)?;
            }
            // Like fio: submit and collect completions without ever sleeping
            // for them (enter with GETEVENTS and min_complete 0, in a loop).
            // The submitting thread polls, as fio's does; sleeping for each
            // completion costs a context switch and a wake-up per I/O.
            let pending = self.ring.submission().len() as u32;
            // SAFETY: plain io_uring_enter on our own ring with no argument struct.
            unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(pending, 0, ENTER_GETEVENTS, None)?
            };
            completions.clear();
            completions.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data() as usize, c.result())),
            );
            for &(slot, res) in &completions {
                latencies_us.push(started[slot].elapsed().as_secs_f64() * 1e6);
                if res < 0 {
                    return Err(io::Error::from_raw_os_error(-res));
                }
                if res as usize != self.block {
                    return Err(short(op, res as usize, self.block));
                }
                if op == Op::Read {
                    check.bad_pages +=
                        count_bad_pages(self.bufs[slot].as_slice(), at[slot], self.magic);
                    check.checked_pages += (self.block / super::file::PAGE) as u64;
                }
                free.push(slot);
                done += 1;
            }
        }
        Ok(check)
    }
}

/// One thread per queue slot, synchronous pread/pwrite.
struct Threads {
    bufs: Vec<AlignedBuf>,
    block: usize,
    magic: u64,
}

impl Threads {
    fn new(block: usize, qd: usize, magic: u64, seed: u64) -> Self {
        Threads {
            bufs: buffers(block, qd, seed),
            block,
            magic,
        }
    }
}

impl Engine for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn run(
        &mut self,
        file: &File,
        op: Op,
        offsets: &[u64],
        latencies_us: &mut Vec<f64>,
    ) -> io::Result<BatchCheck> {
        let qd = self.bufs.len();
        let (block, magic) = (self.block, self.magic);
        let results: Vec<io::Result<(Vec<f64>, BatchCheck)>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .bufs
                .iter_mut()
                .enumerate()
                .map(|(t, buf)| {
                    s.spawn(move || {
                        let mut lat = Vec::new();
                        let mut check = BatchCheck::default();
                        for &off in offsets.iter().skip(t).step_by(qd) {
                            let start = Instant::now();
                            match op {
                                Op::Write => {
                                    stamp(buf.as_mut_slice(), off, magic);
                                    let n = file.write_at(buf.as_slice(), off)?;
                                    if n != block {
                                        return Err(short(op, n, block));
                                    }
                                }
                                Op::Read => {
                                    let n = file.read_at(buf.as_mut_slice(), off)?;
                                    if n != block {
                                        return Err(short(op, n, block));
                                    }
                                }
                            }
                            lat.push(start.elapsed().as_secs_f64() * 1e6);
                            if op == Op::Read {
                                check.bad_pages += count_bad_pages(buf.as_slice(), off, magic);
                                check.checked_pages += (block / super::file::PAGE) as u64;
                            }
                        }
                        Ok((lat, check))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(io::Error::other("an I/O thread panicked")))
                })
                .collect()
        });
        let mut total = BatchCheck::default();
        for r in results {
            let (lat, check) = r?;
            latencies_us.extend(lat);
            total.bad_pages += check.bad_pages;
            total.checked_pages += check.checked_pages;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(engine: &mut dyn Engine) {
        let dir = tempfile::tempdir().unwrap();
        let (file, _) = super::super::file::create(dir.path(), false).unwrap();
        // 8 KiB blocks every 16 KiB: the gaps are never written.
        let offsets: Vec<u64> = (0..64).map(|i| i * 16384).collect();
        let mut lat = Vec::new();
        engine.run(&file, Op::Write, &offsets, &mut lat).unwrap();
        let check = engine.run(&file, Op::Read, &offsets, &mut lat).unwrap();
        assert_eq!(lat.len(), 128, "{}: one latency per I/O", engine.name());
        assert_eq!(
            (check.bad_pages, check.checked_pages),
            (0, 128),
            "{}",
            engine.name()
        );
        // Reading where nothing of ours was written is caught.
        let stray: Vec<u64> = vec![8192];
        let check = engine.run(&file, Op::Read, &stray, &mut lat).unwrap();
        assert_eq!(check.bad_pages, 2, "{}", engine.name());
    }

    #[test]
    fn both_engines_write_stamped_pages_and_read_them_back() {
        round_trip(&mut Threads::new(8192, 4, 99, 1));
        if let Ok(mut u) = Uring::new(8192, 4, 99, 1) {
            round_trip(&mut u);
        }
    }
}
