//! The benchmark's own file: where it may go, how it is created so that it
//! never outlives the run, and the stamped, aligned buffers written to it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Size of one stamped page: every 4 KiB of the file starts with its own
/// offset and a run-specific magic, so a read can prove where it came from.
pub const PAGE: usize = 4096;

/// Checks that `dir` can hold a `size` byte benchmark file, before anything
/// is written: it exists, is a directory, accepts a new file, and has the
/// space. The message names the path and what would fix it.
pub fn check_dir(dir: &Path, size: u64) -> Result<(), String> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir)
        .map_err(|e| format!("path '{shown}' does not exist or cannot be read: {e}"))?;
    if !meta.is_dir() {
        return Err(format!(
            "path '{shown}' is not a directory; give the directory to write in"
        ));
    }
    drop(create(dir, false).map_err(|(e, _)| format!("path '{shown}' is not writable: {e}"))?);
    let free =
        free_bytes(dir).map_err(|e| format!("path '{shown}': cannot read free space: {e}"))?;
    let need = size + (64 << 20);
    if free < need {
        return Err(format!(
            "path '{shown}' has {} MiB free but the benchmark needs {} MiB (size_mb plus 64); lower size_mb or choose another path",
            free >> 20,
            need >> 20
        ));
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on the file system of `dir`.
fn free_bytes(dir: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: statvfs fills the zeroed struct; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether `dir` is on a memory-backed file system (tmpfs, ramfs), where
/// even O_DIRECT I/O measures memory rather than a storage device.
pub fn memory_backed(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed struct; the path is a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    let kind = st.f_type as i64;
    kind == TMPFS_MAGIC || kind == RAMFS_MAGIC
}

/// How the file was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenMode {
    /// O_DIRECT is in effect.
    pub direct: bool,
    /// The file never had a name (O_TMPFILE); otherwise it was unlinked
    /// right after creation.
    pub anonymous: bool,
}

/// Creates the benchmark's file in `dir`, with O_DIRECT if `direct`.
///
/// The file has no name from the moment this returns: O_TMPFILE where the
/// file system supports it, else a uniquely named file unlinked at once.
/// Either way the space is freed when the last descriptor closes, so it
/// cannot be left behind by a failure, a kill or a crash. Returns the
/// error of the O_DIRECT attempt separately so the caller can fall back.
pub fn create(dir: &Path, direct: bool) -> Result<(File, OpenMode), (io::Error, bool)> {
    let flags = if direct { libc::O_DIRECT } else { 0 };
    let mut opts = OpenOptions::new();
    opts.read(true).write(true);
    let tmp = opts.clone().custom_flags(libc::O_TMPFILE | flags).open(dir);
    match tmp {
        Ok(f) => {
            return Ok((
                f,
                OpenMode {
                    direct,
                    anonymous: true,
                },
            ));
        }
        // EINVAL with O_DIRECT: the file system refuses direct I/O.
        Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => return Err((e, true)),
        Err(_) => {}
    }
    let name: PathBuf = dir.join(format!(
        ".warpt-disk-io-{}-{:08x}",
        std::process::id(),
        std::hash::BuildHasher::hash_one(
            &std::hash::RandomState::new(),
            std::time::SystemTime::now()
        ) as u32
    ));
    let f = opts
        .create_new(true)
        .custom_flags(flags)
        .open(&name)
        .map_err(|e| {
            let direct_refused = direct && e.raw_os_error() == Some(libc::EINVAL);
            (e, direct_refused)
        })?;
    std::fs::remove_file(&name).map_err(|e| (e, false))?;
    Ok((
        f,
        OpenMode {
            direct,
            anonymous: false,
        },
    ))
}

/// A page-aligned buffer, as O_DIRECT requires.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain bytes owned exclusively by this value.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (a multiple of [`PAGE`]).
    pub fn new(len: usize) -> Self {
        assert!(
            len > 0 && len.is_multiple_of(PAGE),
            "buffer length {len} is not a positive multiple of {PAGE}"
        );
        let layout =
            std::alloc::Layout::from_size_align(len, PAGE).expect("valid layout: checked above");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    /// The bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Raw pointer for the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout =
            std::alloc::Layout::from_size_align(self.len, PAGE).expect("same layout as in new");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}

/// Writes each page's header: its file offset and the run's magic.
pub fn stamp(buf: &mut [u8], offset: u64, magic: u64) {
    for (i, page) in buf.chunks_exact_mut(PAGE).enumerate() {
        page[..8].copy_from_slice(&(offset + (i * PAGE) as u64).to_le_bytes());
        page[8..16].copy_from_slice(&magic.to_le_bytes());
    }
}

/// Counts pages of `buf`, read from `offset`, whose header is not theirs.
pub fn count_bad_pages(buf: &[u8], offset: u64, magic: u64) -> u64 {
    buf.chunks_exact(PAGE)
        .enumerate()
        .filter(|(i, page)| {
            let at = u64::from_le_bytes(page[..8].try_into().unwrap_or([0; 8]));
            let m = u64::from_le_bytes(page[8..16].try_into().unwrap_or([0; 8]));
            at != offset + (*i * PAGE) as u64 || m != magic
        })
        .count() as u64
}

/// Fills the rest of each page with bytes no file system can compress away.
pub fn fill_pattern(buf: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in buf.chunks_exact_mut(8) {
        // xorshift64: fast, and incompressible enough for a disk.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_and_catch_misplaced_pages() {
        let mut b = AlignedBuf::new(4 * PAGE);
        fill_pattern(b.as_mut_slice(), 9);
        stamp(b.as_mut_slice(), 8192, 77);
        assert_eq!(count_bad_pages(b.as_slice(), 8192, 77), 0);
        assert_eq!(count_bad_pages(b.as_slice(), 4096, 77), 4);
        assert_eq!(count_bad_pages(b.as_slice(), 8192, 78), 4);
        assert_eq!(b.as_slice().as_ptr() as usize % PAGE, 0);
    }

    #[test]
    fn the_file_has_no_name_and_bad_dirs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (f, _) = create(dir.path(), false).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing visible in the directory"
        );
        drop(f);
        assert!(check_dir(dir.path(), 1 << 20).is_ok());
        let missing = dir.path().join("nope");
        assert!(
            check_dir(&missing, 1)
                .unwrap_err()
                .contains("does not exist")
        );
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_dir(&file, 1).unwrap_err().contains("not a directory"));
        assert!(
            check_dir(dir.path(), u64::MAX / 4)
                .unwrap_err()
                .contains("MiB free")
        );
    }
}
