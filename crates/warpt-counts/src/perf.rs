//! A command counted by the CPU's retired-instructions counter through
//! `perf_event_open(2)`: one counter on the calling thread, inherited by
//! every process it starts, enabled around the spawn and the reap. The
//! count includes the few thousand instructions of warpt's own spawn and
//! wait, the same for every run.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Command;

use crate::{CountError, Counts};

/// `struct perf_event_attr` as of its first version (64 bytes), which
/// every kernel since 2.6.31 accepts.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

/// A disabled user-space instruction counter on this thread and what it
/// starts.
fn open() -> Result<std::fs::File, String> {
    let attr = Attr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_HW_INSTRUCTIONS,
        flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..Attr::default()
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it states and
    // outlives the call; pid 0 / cpu -1 / no group is "this thread, any CPU".
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => format!(
                "the CPU's instruction counter is not exposed here ({e}; a VM without a virtual PMU)"
            ),
            Some(libc::EACCES | libc::EPERM) => {
                format!("perf_event_open refused ({e}; kernel.perf_event_paranoid is {paranoid})")
            }
            _ => format!("perf_event_open failed: {e}"),
        });
    }
    // SAFETY: the system call returned a new descriptor that nothing else owns.
    Ok(std::fs::File::from(unsafe {
        OwnedFd::from_raw_fd(fd as i32)
    }))
}

fn ioctl(f: &std::fs::File, request: libc::c_ulong) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a perf event descriptor we own and an argument-less request.
    if unsafe { libc::ioctl(f.as_raw_fd(), request as _, 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn read(mut f: &std::fs::File) -> std::io::Result<u64> {
    let mut buf = [0u8; 8];
    f.read_exact(&mut buf)?;
    Ok(u64::from_ne_bytes(buf))
}

/// Whether the counter opens and counts here, or why not.
pub fn probe() -> Result<(), String> {
    let f = open()?;
    let io = |e: std::io::Error| format!("the instruction counter did not count: {e}");
    ioctl(&f, IOC_ENABLE).map_err(io)?;
    let mut x = 0u64;
    for i in 0..10_000u64 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    ioctl(&f, IOC_DISABLE).map_err(io)?;
    match read(&f).map_err(io)? {
        0 => Err("the instruction counter opens but reads 0 (a VM that hides it)".into()),
        _ => Ok(()),
    }
}

/// Counts one run of `argv` (set up by `setup`).
pub fn count(argv: &[String], setup: &dyn Fn(&mut Command)) -> Result<Counts, CountError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| CountError::Failed("an empty command".into()))?;
    let f = open().map_err(CountError::Unavailable)?;
    let read_err = |e: std::io::Error| CountError::Read(e.to_string());
    let mut cmd = Command::new(program);
    cmd.args(args);
    setup(&mut cmd);
    ioctl(&f, IOC_RESET).map_err(read_err)?;
    ioctl(&f, IOC_ENABLE).map_err(read_err)?;
    let status = cmd
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(|source| CountError::Spawn {
            program: program.clone(),
            source,
        });
    ioctl(&f, IOC_DISABLE).map_err(read_err)?;
    let status = status?;
    if !status.success() {
        return Err(CountError::Failed(format!("{program}: {status}")));
    }
    Ok(Counts {
        instructions: read(&f).map_err(read_err)?,
        cache: None,
    })
}
