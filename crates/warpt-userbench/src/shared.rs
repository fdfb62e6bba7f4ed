//! Samples an adapter shares with warpt through a file both map while it
//! measures (the `run` request's `shared`, docs/protocol.md).
//!
//! On a virtual machine the first system call after milliseconds of
//! computing costs tens of microseconds (a socket write 35 us where the
//! next costs 6, on a 2-vCPU KVM guest), so every reply an adapter writes
//! between two batches is paid for in its own time, and a pytest test of
//! a millisecond function made about twenty of them. Through the mapping
//! the adapter reports each sample with two stores, and warpt raises the
//! limit it may run to with one: no system call on either side until the
//! adapter reaches the limit and replies (with every sample, as any `run`
//! reply). The stopping rule stays in warpt, which reads the samples as
//! they come and keeps the limit a few samples ahead.
//!
//! The file holds native-endian 64-bit words: the limit (warpt writes it;
//! the adapter stops once its samples reach it), the samples taken so far
//! (the adapter writes it after each sample), two words reserved, then
//! one word per sample (nanoseconds).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;
use tempfile::NamedTempFile;

/// Words before the samples.
const HEADER: usize = 4;
/// The limit's word.
const LIMIT: usize = 0;
/// The word counting the samples taken.
const TAKEN: usize = 1;

/// One measurement's shared samples: the mapped file, removed on drop.
pub struct SharedSamples {
    file: NamedTempFile,
    map: MmapMut,
    capacity: usize,
}

impl std::fmt::Debug for SharedSamples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSamples")
            .field("path", &self.file.path())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl SharedSamples {
    /// A zeroed file for up to `capacity` samples, in memory where the
    /// system has a tmpfs for it (`/dev/shm`), else in the temporary
    /// directory; readable by this user only.
    pub fn create(capacity: usize) -> std::io::Result<Self> {
        let shm = Path::new("/dev/shm");
        let file = if shm.is_dir() {
            tempfile::Builder::new()
                .prefix("warpt-samples-")
                .tempfile_in(shm)
                .or_else(|_| tempfile::Builder::new().prefix("warpt-samples-").tempfile())?
        } else {
            tempfile::Builder::new()
                .prefix("warpt-samples-")
                .tempfile()?
        };
        let capacity = capacity.max(1);
        let bytes = (HEADER + capacity) * 8;
        file.as_file().set_len(bytes as u64)?;
        // SAFETY: the file is this process's own temporary file, sized
        // above; the adapter writes only the counter and the sample words
        // (through aligned 8-byte stores), which are read as atomics below.
        let map = unsafe { MmapMut::map_mut(file.as_file())? };
        Ok(SharedSamples {
            file,
            map,
            capacity,
        })
    }

    /// The file the adapter maps (named in the `run` request).
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < HEADER + self.capacity, "word {i} is past the file");
        // SAFETY: the mapping is page-aligned and holds HEADER + capacity
        // words (checked above), so word i is an aligned u64 inside it,
        // valid for the mapping's lifetime, which `&self` bounds; other
        // processes touch it only through single aligned stores.
        unsafe { &*(self.map.as_ptr().cast::<AtomicU64>().add(i)) }
    }

    /// Starts a request: no samples taken, at most `limit`.
    pub fn reset(&self, limit: u64) {
        self.word(TAKEN).store(0, Ordering::Relaxed);
        self.set_limit(limit);
    }

    /// Lets the adapter go on to `limit` samples in all (or stop after the
    /// batch under way, with a limit it has reached).
    pub fn set_limit(&self, limit: u64) {
        let limit = limit.min(self.capacity as u64);
        self.word(LIMIT).store(limit, Ordering::Release);
    }

    /// The samples the adapter has taken in this request.
    pub fn taken(&self) -> usize {
        let n = self.word(TAKEN).load(Ordering::Acquire);
        (n as usize).min(self.capacity)
    }

    /// Sample `i` (nanoseconds), for `i` below [`SharedSamples::taken`].
    pub fn sample(&self, i: usize) -> u64 {
        self.word(HEADER + i).load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_mapping_sees_the_limit_and_its_samples_are_read_back() {
        let s = SharedSamples::create(8).unwrap();
        s.reset(3);
        // A second mapping of the same file plays the adapter.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(s.path())
            .unwrap();
        // SAFETY: a test's own file, mapped twice on purpose.
        let mut other = unsafe { MmapMut::map_mut(&f) }.unwrap();
        assert_eq!(&other[0..8], &3u64.to_ne_bytes());
        for (i, ns) in [10u64, 20, 30].into_iter().enumerate() {
            let at = (HEADER + i) * 8;
            other[at..at + 8].copy_from_slice(&ns.to_ne_bytes());
            other[8..16].copy_from_slice(&(i as u64 + 1).to_ne_bytes());
        }
        assert_eq!(s.taken(), 3);
        assert_eq!(
            (0..3).map(|i| s.sample(i)).collect::<Vec<_>>(),
            [10, 20, 30]
        );
        s.set_limit(100);
        // Capped at the capacity.
        assert_eq!(&other[0..8], &8u64.to_ne_bytes());
        s.reset(1);
        assert_eq!(s.taken(), 0);
        assert!(s.path().exists());
        let path = s.path().to_path_buf();
        drop(s);
        assert!(!path.exists(), "the file is removed with it");
    }
}
