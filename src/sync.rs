//! Locking that survives a caught panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex even if a caught panic poisoned it: the data behind Tokamak's locks is only
/// changed in whole steps, so it is still consistent.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
