//! Ctrl-C and SIGTERM during a run: the first stops the benchmark under way
//! (what finished is kept and recorded), a second exits at once with 130.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// SIGINT or SIGTERM sets the returned flag (the runner stops the current
/// worker and keeps what finished); a second one exits at once with 130.
pub fn install_handler() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional exit sees the flag as it was
        // before this signal, so only a second signal exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}

/// SIGINT or SIGTERM sets the returned flag and nothing else: for a
/// front end that ends its own loop (interleaved trials) at a safe point.
pub fn flag_only() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}
