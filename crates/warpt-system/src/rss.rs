//! Resident memory of this process and every process it started (the
//! benchmark workers and what they run): the RAM a run holds, as the
//! monitor samples it.

use std::collections::HashMap;
use std::fs;

/// Bytes resident in this process and all its descendants, from
/// `/proc/PID/stat` (`rss`, in pages); `None` where procfs is unreadable.
pub fn tree_rss_bytes() -> Option<u64> {
    let me = std::process::id();
    let page = page_size()?;
    // (parent, resident pages) of every process.
    let mut procs: HashMap<u32, (u32, u64)> = HashMap::new();
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(fields) = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|line| parent_and_rss(&line))
        {
            procs.insert(pid, fields);
        }
    }
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &(parent, _)) in &procs {
        children.entry(parent).or_default().push(pid);
    }
    let (mut total, mut todo) = (0u64, vec![me]);
    while let Some(pid) = todo.pop() {
        total += procs.get(&pid).map_or(0, |&(_, pages)| pages) * page;
        if let Some(kids) = children.get(&pid) {
            todo.extend(kids);
        }
    }
    (total > 0).then_some(total)
}

/// The parent pid (field 4) and resident pages (field 24) of one
/// `/proc/PID/stat` line; fields are counted after the command name's
/// last `)`, which may itself hold spaces and parentheses.
fn parent_and_rss(line: &str) -> Option<(u32, u64)> {
    let after = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    Some((f.get(1)?.parse().ok()?, f.get(21)?.parse().ok()?))
}

fn page_size() -> Option<u64> {
    // SAFETY: sysconf reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_holding_memory_counts_in_the_tree() {
        let line = "1234 (a (b) c) S 77 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 \
                    100 8192000 321 18446744073709551615";
        assert_eq!(parent_and_rss(line), Some((77, 321)));
        let alone = tree_rss_bytes().unwrap();
        // A child that touches 200 MiB: the tree holds it while it lives.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("x=$(head -c 209715200 /dev/zero | tr '\\0' a); sleep 15")
            .spawn()
            .unwrap();
        let mut most = 0;
        for _ in 0..200 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            most = most.max(tree_rss_bytes().unwrap());
            if most > alone + (150 << 20) {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(most > alone + (150 << 20), "{alone} then at most {most}");
    }
}
