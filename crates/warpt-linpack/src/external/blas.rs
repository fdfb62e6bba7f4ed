//! Which BLAS an HPL binary will run on.
//!
//! HPL's speed is its BLAS's: the same `hpcc` runs at 5 GFLOP/s on the
//! reference BLAS and 78 on OpenBLAS on the same machine. The library is
//! found the way the loader will find it (`ldd` in warpt's own environment,
//! so `LD_LIBRARY_PATH` and Debian's alternatives count), followed through
//! its symlinks, and named by the symbols only that family exports; a BLAS
//! linked into the binary itself is recognised the same way. OpenBLAS's
//! kernel choice (its "core type") is read from the library itself, loaded
//! into a shell with `OPENBLAS_VERBOSE=2`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The BLAS families warpt tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlasKind {
    /// OpenBLAS (Debian: `libopenblas0-pthread`, `-openmp`, `-serial`).
    OpenBlas,
    /// BLIS (AMD's AOCL-BLIS too).
    Blis,
    /// Intel's oneMKL.
    Mkl,
    /// FlexiBLAS, which picks its backend at run time.
    FlexiBlas,
    /// ATLAS.
    Atlas,
    /// Netlib's reference BLAS (Debian: `libblas3`): correct, unoptimized,
    /// never what a machine is benchmarked with.
    Reference,
    /// No BLAS recognised.
    Unknown,
}

impl BlasKind {
    /// The name reported in the `blas` detail.
    pub fn name(self) -> &'static str {
        match self {
            BlasKind::OpenBlas => "openblas",
            BlasKind::Blis => "blis",
            BlasKind::Mkl => "mkl",
            BlasKind::FlexiBlas => "flexiblas",
            BlasKind::Atlas => "atlas",
            BlasKind::Reference => "reference",
            BlasKind::Unknown => "unknown",
        }
    }
}

/// Symbols only one family exports, in the order they are tried.
const MARKERS: [(&[u8], BlasKind); 6] = [
    (b"openblas_get_config", BlasKind::OpenBlas),
    (b"bli_info_get_version_str", BlasKind::Blis),
    (b"MKL_Get_Version", BlasKind::Mkl),
    (b"flexiblas_", BlasKind::FlexiBlas),
    (b"ATL_xerbla", BlasKind::Atlas),
    (b"ATL_dgemm", BlasKind::Atlas),
];

/// How HPL gets its BLAS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blas {
    /// The family.
    pub kind: BlasKind,
    /// The library file the loader resolves (symlinks followed), or the
    /// binary itself when the BLAS is linked in; `None` when none was found.
    pub path: Option<PathBuf>,
    /// How it was found, or why it could not be.
    pub how: String,
    /// OpenBLAS's version, from the library's own config string.
    pub version: Option<String>,
    /// The OpenBLAS core type HPL will run (what `OPENBLAS_CORETYPE` forces,
    /// or what OpenBLAS detects).
    pub coretype: Option<String>,
    /// The core type OpenBLAS detects on this CPU when nothing is forced.
    pub native_coretype: Option<String>,
    /// `OPENBLAS_CORETYPE` as set in the environment.
    pub forced_coretype: Option<String>,
}

impl Blas {
    /// Why a run on this BLAS is not a result worth keeping, with the fix;
    /// `None` for any optimized BLAS.
    pub fn refusal(&self, binary: &Path) -> Option<String> {
        if self.kind != BlasKind::Reference {
            return None;
        }
        let lib = self
            .path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        Some(format!(
            "{} would run on the reference BLAS ({lib}), unoptimized code 10-20x slower than the BLAS \
             HPL is run with; {}, or pass --param allow_reference_blas=true to run on it anyway",
            binary.display(),
            self.fix()
        ))
    }

    /// How to give HPL an optimized BLAS instead of this one.
    pub fn fix(&self) -> String {
        format!(
            "install one (Debian/Ubuntu: apt-get install libopenblas0-pthread) or select an installed one \
             (update-alternatives --config libblas.so.3-{})",
            self.path.as_deref().map_or_else(default_triplet, triplet)
        )
    }

    /// A warning when `OPENBLAS_CORETYPE` forces kernels other than this
    /// CPU's own.
    pub fn coretype_warning(&self) -> Option<String> {
        let forced = self.forced_coretype.as_deref()?;
        let native = self.native_coretype.as_deref()?;
        (!forced.eq_ignore_ascii_case(native)).then(|| {
            format!(
                "OPENBLAS_CORETYPE={forced} forces OpenBLAS's {} kernels, not this CPU's own ({native}): \
                 HPL's rate is that of the forced kernels; unset OPENBLAS_CORETYPE to measure the machine",
                self.coretype.as_deref().unwrap_or(forced)
            )
        })
    }
}

/// Finds the BLAS `binary` will run on, in warpt's environment.
pub fn find(binary: &Path) -> Blas {
    let forced_coretype = std::env::var("OPENBLAS_CORETYPE")
        .ok()
        .filter(|v| !v.is_empty());
    let mut blas = match ldd(binary) {
        Ok(libs) => from_libraries(binary, &libs),
        Err(why) => linked_in(binary, why),
    };
    blas.forced_coretype = forced_coretype.clone();
    if blas.kind == BlasKind::OpenBlas
        && let Some(lib) = blas.path.clone()
        && lib != binary
    {
        blas.native_coretype = openblas_core(&lib, None);
        blas.coretype = match &forced_coretype {
            Some(forced) => openblas_core(&lib, Some(forced.into())),
            None => blas.native_coretype.clone(),
        };
    }
    blas
}

/// The libraries `ldd` lists for `binary`: (soname, resolved path).
fn ldd(binary: &Path) -> Result<Vec<(String, Option<PathBuf>)>, String> {
    let out = Command::new("ldd")
        .arg(binary)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ldd could not run ({e})"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not a dynamic executable") {
        return Err("ldd lists no dynamic libraries".into());
    }
    Ok(parse_ldd(&text))
}

/// `ldd`'s lines: `name => /path (0x...)`, `name => not found`, `/path (0x...)`.
fn parse_ldd(text: &str) -> Vec<(String, Option<PathBuf>)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (name, rest) = match line.split_once(" => ") {
                Some((n, r)) => (n.trim(), r.trim()),
                None => (line.split_whitespace().next()?, line),
            };
            let path = rest
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/'))
                .map(PathBuf::from);
            Some((name.to_string(), path))
        })
        .collect()
}

/// Whether a library's soname is a BLAS's.
fn is_blas_soname(name: &str) -> bool {
    let name = name.rsplit('/').next().unwrap_or(name);
    [
        "libopenblas",
        "libblis",
        "libmkl_rt",
        "libmkl_core",
        "libflexiblas",
        "libsatlas",
        "libtatlas",
        "libatlas",
        "libblas.",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

/// The BLAS among `libs`: the first library whose symbols name its family
/// (Debian's `libblas.so.3` of OpenBLAS is a thin wrapper that loads
/// `libopenblas.so.0`, which `ldd` lists after it), else the first BLAS
/// soname, which without any family's symbols is the reference BLAS.
fn from_libraries(binary: &Path, libs: &[(String, Option<PathBuf>)]) -> Blas {
    let candidates: Vec<&(String, Option<PathBuf>)> =
        libs.iter().filter(|(n, _)| is_blas_soname(n)).collect();
    let Some((first, _)) = candidates.first() else {
        return linked_in(
            binary,
            "no BLAS among the dynamic libraries ldd lists".into(),
        );
    };
    let mut fallback = None;
    for (name, path) in &candidates {
        let Some(path) = path else {
            return Blas::unknown(None, format!("ldd: {name} => not found"));
        };
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let bytes = std::fs::read(&resolved).unwrap_or_default();
        let how = format!("ldd: {name} => {}", path.display());
        if let Some(kind) = marked(&bytes) {
            return Blas {
                kind,
                version: openblas_version(&bytes),
                how,
                path: Some(resolved),
                ..Blas::unknown(None, String::new())
            };
        }
        fallback.get_or_insert((resolved, how));
    }
    let Some((resolved, how)) = fallback else {
        return Blas::unknown(None, format!("ldd: {first}"));
    };
    let file = resolved
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    Blas {
        kind: if file.starts_with("libblas.") {
            BlasKind::Reference
        } else {
            BlasKind::Unknown
        },
        path: Some(resolved),
        ..Blas::unknown(None, how)
    }
}

/// A BLAS linked into the binary itself, if its symbols are there.
fn linked_in(binary: &Path, why: String) -> Blas {
    let bytes = std::fs::read(binary).unwrap_or_default();
    match marked(&bytes) {
        Some(kind) => Blas {
            kind,
            version: openblas_version(&bytes),
            how: format!(
                "{why}; the binary has {}'s symbols (linked in)",
                kind.name()
            ),
            path: Some(binary.to_path_buf()),
            ..Blas::unknown(None, String::new())
        },
        None => Blas::unknown(None, why),
    }
}

impl Blas {
    fn unknown(path: Option<PathBuf>, how: String) -> Blas {
        Blas {
            kind: BlasKind::Unknown,
            path,
            how,
            version: None,
            coretype: None,
            native_coretype: None,
            forced_coretype: None,
        }
    }
}

/// The family whose marker symbol `bytes` holds.
fn marked(bytes: &[u8]) -> Option<BlasKind> {
    MARKERS
        .iter()
        .find(|(marker, _)| memchr::memmem::find(bytes, marker).is_some())
        .map(|(_, kind)| *kind)
}

/// "0.3.21" from OpenBLAS's config string "OpenBLAS 0.3.21 ...".
fn openblas_version(bytes: &[u8]) -> Option<String> {
    let at = memchr::memmem::find_iter(bytes, b"OpenBLAS ")
        .find(|&i| bytes.get(i + 9).is_some_and(|b| b.is_ascii_digit()))?;
    let version: String = bytes[at + 9..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .map(|&b| b as char)
        .collect();
    (!version.is_empty()).then_some(version)
}

/// The core type OpenBLAS's library at `lib` picks, loaded into a shell
/// with `OPENBLAS_VERBOSE=2` (it prints `Core: <name>`); `forced` is the
/// `OPENBLAS_CORETYPE` to load it under, `None` for its own detection.
fn openblas_core(lib: &Path, forced: Option<OsString>) -> Option<String> {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", ":"])
        .env("LD_PRELOAD", lib)
        .env("OPENBLAS_VERBOSE", "2")
        .env_remove("OPENBLAS_CORETYPE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(f) = forced {
        cmd.env("OPENBLAS_CORETYPE", f);
    }
    let out = cmd.output().ok()?;
    core_line(&String::from_utf8_lossy(&out.stderr))
}

/// The name in OpenBLAS's `Core: <name>` line.
fn core_line(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Core:"))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

/// The multiarch triplet in a library's path (`x86_64-linux-gnu`), which
/// names Debian's alternative `libblas.so.3-<triplet>`.
fn triplet(path: &Path) -> String {
    path.components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| c.contains("-linux-"))
        .map_or_else(default_triplet, str::to_string)
}

fn default_triplet() -> String {
    format!("{}-linux-gnu", std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_parse_into_names_and_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibblas.so.3 => /lib/x86_64-linux-gnu/libblas.so.3 (0x00007f90)\n\
                    \tlibgone.so.1 => not found\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f91)\n";
        let libs = parse_ldd(text);
        assert_eq!(libs.len(), 4);
        assert_eq!(
            libs[1],
            (
                "libblas.so.3".to_string(),
                Some(PathBuf::from("/lib/x86_64-linux-gnu/libblas.so.3"))
            )
        );
        assert_eq!(libs[2], ("libgone.so.1".to_string(), None));
        assert!(is_blas_soname("libblas.so.3") && is_blas_soname("libopenblas.so.0"));
        assert!(!is_blas_soname("libcblas.so.3") && !is_blas_soname("libmpi.so.40"));
    }

    #[test]
    fn families_are_told_by_their_symbols() {
        assert_eq!(
            marked(b"\0dgemm_\0openblas_get_config\0"),
            Some(BlasKind::OpenBlas)
        );
        assert_eq!(
            marked(b"\0bli_info_get_version_str\0"),
            Some(BlasKind::Blis)
        );
        assert_eq!(marked(b"\0dgemm_\0dtrsm_\0"), None);
        assert_eq!(
            openblas_version(b"xx OpenBLAS build\0OpenBLAS 0.3.21 DYNAMIC_ARCH"),
            Some("0.3.21".into())
        );
        assert_eq!(core_line("Core: Haswell\n"), Some("Haswell".into()));
        assert_eq!(core_line("nothing\n"), None);
    }

    #[test]
    fn the_reference_blas_is_refused_with_the_fix_and_a_forced_core_is_named() {
        let mut blas = Blas::unknown(
            Some(PathBuf::from(
                "/usr/lib/aarch64-linux-gnu/blas/libblas.so.3",
            )),
            String::new(),
        );
        assert_eq!(blas.refusal(Path::new("/usr/bin/hpcc")), None);
        blas.kind = BlasKind::Reference;
        let why = blas.refusal(Path::new("/usr/bin/hpcc")).unwrap_or_default();
        assert!(why.contains("libopenblas0-pthread"), "{why}");
        assert!(why.contains("libblas.so.3-aarch64-linux-gnu"), "{why}");
        assert!(why.contains("allow_reference_blas=true"), "{why}");
        blas.forced_coretype = Some("Prescott".into());
        blas.native_coretype = Some("Haswell".into());
        blas.coretype = Some("Prescott".into());
        let w = blas.coretype_warning().unwrap_or_default();
        assert!(
            w.contains("OPENBLAS_CORETYPE=Prescott") && w.contains("Haswell"),
            "{w}"
        );
        blas.native_coretype = Some("prescott".into());
        assert_eq!(blas.coretype_warning(), None);
    }
}
