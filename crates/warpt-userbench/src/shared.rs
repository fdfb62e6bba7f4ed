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
//! (the adapter writes it after each sample), the calls for the next batch
//! (warpt writes it: calibration grows the batch while the series runs),
//! one word reserved, then a ring of slots of two words per sample: its
//! nanoseconds and its calls. Sample `i` is in slot `i % capacity`; warpt
//! keeps the limit within a ring's length of the samples it has read, so
//! the adapter never overwrites one unread.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::MmapMut;
use tempfile::NamedTempFile;

/// Words before the samples.
const HEADER: usize = 4;
/// The limit's word.
const LIMIT: usize = 0;
/// The word counting the samples taken.
const TAKEN: usize = 1;
/// The word with the calls for the adapter's next batch.
const CALLS: usize = 2;
/// Words per sample's slot: nanoseconds, calls.
const SLOT: usize = 2;

/// One shared sample: a batch's nanoseconds and its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Nanoseconds the batch took.
    pub ns: u64,
    /// Calls in the batch.
    pub calls: u64,
}

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
    /// A zeroed file for a ring of `capacity` samples, in memory where the
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
        let bytes = (HEADER + SLOT * capacity) * 8;
        file.as_file().set_len(bytes as u64)?;
        // SAFETY: the file is this process's own temporary file, sized
        // above; the adapter writes only the counter and the slots (through
        // aligned 8-byte stores), which are read as atomics below.
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
        assert!(
            i < HEADER + SLOT * self.capacity,
            "word {i} is past the file"
        );
        // SAFETY: the mapping is page-aligned and holds HEADER + SLOT *
        // capacity words (checked above), so word i is an aligned u64 inside it,
        // valid for the mapping's lifetime, which `&self` bounds; other
        // processes touch it only through single aligned stores.
        unsafe { &*(self.map.as_ptr().cast::<AtomicU64>().add(i)) }
    }

    /// Samples the ring holds: the limit stays within this many of the
    /// samples read.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Starts a request: no samples taken, at most `limit`, batches of
    /// `calls` calls.
    pub fn reset(&self, limit: u64, calls: u64) {
        self.word(TAKEN).store(0, Ordering::Relaxed);
        self.set_calls(calls);
        self.word(LIMIT).store(limit, Ordering::Release);
    }

    /// Lets the adapter go on to `limit` samples in all (or stop after the
    /// batch under way, with a limit it has reached); never more than a
    /// ring's length past `read`, the samples read so far.
    pub fn set_limit(&self, limit: u64, read: usize) {
        let limit = limit.min((read + self.capacity) as u64);
        self.word(LIMIT).store(limit, Ordering::Release);
    }

    /// The calls of the adapter's batches from the next one on.
    pub fn set_calls(&self, calls: u64) {
        self.word(CALLS).store(calls.max(1), Ordering::Release);
    }

    /// The samples the adapter has taken in this request.
    pub fn taken(&self) -> usize {
        self.word(TAKEN).load(Ordering::Acquire) as usize
    }

    /// Sample `i`, for `i` below [`SharedSamples::taken`] and not a ring's
    /// length behind the limit.
    pub fn sample(&self, i: usize) -> Sample {
        let at = HEADER + SLOT * (i % self.capacity);
        Sample {
            ns: self.word(at).load(Ordering::Relaxed),
            calls: self.word(at + 1).load(Ordering::Relaxed),
        }
    }
}

/// The file the last measurement of this process gave back, kept for the
/// next one: a pytest session's tests run one after another in one warpt,
/// and an adapter that keeps its mapping of a path (the pytest plugin's)
/// then maps it once a session instead of once a test (on a virtual
/// machine a mapping's setup and teardown, right after the test's own
/// code, cost it a few hundred microseconds).
static SPARE: Mutex<Option<SharedSamples>> = Mutex::new(None);

/// Removes the spare file when the process exits (statics are not
/// dropped).
extern "C" fn remove_spare() {
    if let Ok(mut spare) = SPARE.lock() {
        spare.take();
    }
}

/// A shared file lent to one measurement: the process's spare
/// ([`Lent::take`]) or a new one, given back when dropped.
#[derive(Debug)]
pub struct Lent(Option<SharedSamples>);

impl Lent {
    /// The spare file if it holds `capacity` samples, else a new one
    /// ([`SharedSamples::create`]).
    pub fn take(capacity: usize) -> std::io::Result<Lent> {
        let spare = SPARE.lock().ok().and_then(|mut s| s.take());
        let samples = match spare {
            Some(s) if s.capacity == capacity.max(1) => s,
            _ => SharedSamples::create(capacity)?,
        };
        Ok(Lent(Some(samples)))
    }
}

impl std::ops::Deref for Lent {
    type Target = SharedSamples;

    fn deref(&self) -> &SharedSamples {
        // Some from `take` until `drop`.
        self.0.as_ref().expect("a lent file is held until dropped")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        let Some(samples) = self.0.take() else {
            return;
        };
        // SAFETY: `remove_spare` is a plain function that neither unwinds
        // (a poisoned lock is skipped) nor needs anything atexit lacks.
        REGISTERED.call_once(|| unsafe {
            libc::atexit(remove_spare);
        });
        if let Ok(mut spare) = SPARE.lock() {
            // A spare already there (two measurements at once) is dropped:
            // its file removed.
            *spare = Some(samples);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_mapping_sees_the_limit_and_calls_and_its_samples_are_read_back() {
        let s = SharedSamples::create(2).unwrap();
        s.reset(3, 7);
        // A second mapping of the same file plays the adapter.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(s.path())
            .unwrap();
        // SAFETY: a test's own file, mapped twice on purpose.
        let mut other = unsafe { MmapMut::map_mut(&f) }.unwrap();
        let word =
            |m: &MmapMut, i: usize| u64::from_ne_bytes(m[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!((word(&other, LIMIT), word(&other, CALLS)), (3, 7));
        for (i, ns) in [10u64, 20, 30].into_iter().enumerate() {
            // Slots of a ring of two: the third sample takes the first's.
            let at = (HEADER + SLOT * (i % 2)) * 8;
            other[at..at + 8].copy_from_slice(&ns.to_ne_bytes());
            other[at + 8..at + 16].copy_from_slice(&(i as u64 + 1).to_ne_bytes());
            other[8..16].copy_from_slice(&(i as u64 + 1).to_ne_bytes());
            assert_eq!(
                s.sample(i),
                Sample {
                    ns,
                    calls: i as u64 + 1
                }
            );
        }
        assert_eq!(s.taken(), 3);
        assert_eq!(s.sample(2), Sample { ns: 30, calls: 3 });
        // Never past a ring's length beyond the samples read.
        s.set_limit(100, 3);
        assert_eq!(word(&other, LIMIT), 5);
        s.set_calls(40);
        assert_eq!(word(&other, CALLS), 40);
        s.reset(1, 1);
        assert_eq!(s.taken(), 0);
        assert!(s.path().exists());
        let path = s.path().to_path_buf();
        drop(s);
        assert!(!path.exists(), "the file is removed with it");
    }

    #[test]
    fn a_lent_file_is_lent_again_to_the_next_measurement_of_its_size() {
        let first = Lent::take(16).unwrap();
        let path = first.path().to_path_buf();
        drop(first);
        assert!(path.exists(), "kept as the spare");
        let again = Lent::take(16).unwrap();
        assert_eq!(again.path(), path);
        // Another size gets a file of its own; the spare of the wrong size
        // goes.
        drop(again);
        let other = Lent::take(8).unwrap();
        assert_ne!(other.path(), path);
        assert!(!path.exists());
    }
}
