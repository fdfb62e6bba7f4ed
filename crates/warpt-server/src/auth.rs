//! The bearer token that guards the endpoints that change or compute on
//! demand (`POST`, `DELETE`), and the rule that without an explicit
//! token only loopback is served.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

use crate::ServeError;

/// The server's secret.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Whether an `Authorization` header value carries this token, compared
    /// in constant time.
    pub fn admits(&self, header: Option<&str>) -> bool {
        let Some(given) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
            return false;
        };
        given.trim().as_bytes().ct_eq(self.0.as_bytes()).into()
    }
}

/// The default token file: `$XDG_CONFIG_HOME/warpt/token`, else
/// `~/.config/warpt/token`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("warpt").join("token"))
}

/// Refuses to listen beyond loopback unless a token file was given.
pub fn check_bind(addr: &SocketAddr, token_given: bool) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || token_given {
        Ok(())
    } else {
        Err(ServeError::Usage(format!(
            "--bind {addr} is not a loopback address: give --token-file so that only holders of the token can \
             start or cancel runs and query the store"
        )))
    }
}

/// The token in `path`; when the file is missing and was not given
/// explicitly, a new random one is written there (mode 0600).
pub fn load_or_create(path: &Path, given: bool) -> Result<Token, ServeError> {
    let io = |what: String| move |source| ServeError::Io { what, source };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let token = text.trim().to_string();
            if token.len() < 16 {
                return Err(ServeError::Usage(format!(
                    "{}: a token must be at least 16 characters",
                    path.display()
                )));
            }
            Ok(Token(token))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !given => {
            let token = random_hex(32).map_err(io("reading /dev/urandom".into()))?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
            }
            write_private(path, &token).map_err(io(format!("writing {}", path.display())))?;
            Ok(Token(token))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ServeError::Usage(format!(
            "--token-file {}: no such file",
            path.display()
        ))),
        Err(source) => Err(ServeError::Io {
            what: format!("reading {}", path.display()),
            source,
        }),
    }
}

/// Bytes a token must have when the server listens beyond loopback.
pub const NETWORK_TOKEN_MIN: usize = 32;

/// Beyond loopback the token is all that stands between the network and
/// running benchmarks: refuses a token file that other users can read and
/// a token shorter than [`NETWORK_TOKEN_MIN`] bytes.
pub fn check_network_token(path: &Path, token: &Token) -> Result<(), ServeError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|source| ServeError::Io {
                what: format!("reading {}", path.display()),
                source,
            })?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(ServeError::Usage(format!(
                "{}: mode {:o} lets other users read the token; beyond loopback it must be private: \
                 chmod 600 {}",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    if token.0.len() < NETWORK_TOKEN_MIN {
        return Err(ServeError::Usage(format!(
            "{}: the token has {} bytes; beyond loopback it needs at least {NETWORK_TOKEN_MIN}: \
             head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > {}",
            path.display(),
            token.0.len(),
            path.display()
        )));
    }
    Ok(())
}

/// `n` random bytes from the kernel, in hex.
pub(crate) fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    writeln!(file, "{token}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_only_the_exact_bearer_token() {
        let t = Token("0123456789abcdef0123".into());
        assert!(t.admits(Some("Bearer 0123456789abcdef0123")));
        assert!(!t.admits(Some("Bearer 0123456789abcdef012")));
        assert!(!t.admits(Some("0123456789abcdef0123")));
        assert!(!t.admits(None));
    }

    #[test]
    fn creates_a_private_token_once_and_refuses_open_binds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("token");
        let a = load_or_create(&path, false).unwrap();
        let b = load_or_create(&path, false).unwrap();
        assert_eq!(a.0, b.0);
        assert_eq!(a.0.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(load_or_create(&dir.path().join("missing"), true).is_err());
        let open: SocketAddr = "0.0.0.0:8321".parse().unwrap();
        assert!(check_bind(&open, false).is_err());
        assert!(check_bind(&open, true).is_ok());
        assert!(check_bind(&"127.0.0.1:0".parse().unwrap(), false).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn network_tokens_are_private_and_long() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let long = Token("a".repeat(NETWORK_TOKEN_MIN));
        std::fs::write(&path, &long.0).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = check_network_token(&path, &long).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_network_token(&path, &long).is_ok());
        let short = Token("a".repeat(16));
        let e = check_network_token(&path, &short).unwrap_err().to_string();
        assert!(e.contains("at least 32"), "{e}");
    }
}
