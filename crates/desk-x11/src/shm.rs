//! The one module with `unsafe` code: a shared-memory mapping the X server fills through
//! MIT-SHM `GetImage`.
//!
//! Invariants: the mapping is read-only on our side, lives exactly as long as [`ShmMapping`], and
//! a part of it is only read between the `GetImage` reply that filled that part and the next
//! request that could make the server write to it (the worker is single-threaded, so nothing
//! else issues such a request); a capture in two parts reads the first part's bytes
//! ([`ShmMapping::head`]) while the server still fills the second, disjoint part.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;

use rustix::fs::{MemfdFlags, ftruncate, memfd_create};
use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};

/// A memfd and our read-only mapping of it.
pub(crate) struct ShmMapping {
    // Invariant: `ptr` points at a live mapping of exactly `len` bytes until `Drop`.
    ptr: NonNull<c_void>,
    len: usize,
    fd: OwnedFd,
}

impl ShmMapping {
    /// Creates a memfd of `len` bytes and maps it read-only.
    pub(crate) fn create(len: usize) -> Result<ShmMapping, String> {
        let fd = memfd_create("deskbroker-shm", MemfdFlags::CLOEXEC)
            .map_err(|error| format!("memfd_create failed: {error}"))?;
        let len_u64 = u64::try_from(len).map_err(|_| "segment size overflows".to_string())?;
        ftruncate(&fd, len_u64).map_err(|error| format!("ftruncate failed: {error}"))?;
        // SAFETY: we ask the kernel for a fresh mapping (null hint, no MAP_FIXED), so no existing
        // Rust object is aliased or replaced; `fd` is a valid memfd of `len` bytes.
        let raw = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }
        .map_err(|error| format!("mmap failed: {error}"))?;
        let ptr = NonNull::new(raw).ok_or_else(|| "mmap returned null".to_string())?;
        Ok(ShmMapping { ptr, len, fd })
    }

    /// A duplicate of the memfd, to hand to the X server.
    pub(crate) fn dup_fd(&self) -> Result<OwnedFd, String> {
        rustix::io::dup(&self.fd).map_err(|error| format!("dup failed: {error}"))
    }

    /// The mapped bytes. Call only after a `GetImage` reply, see the module invariants.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live, page-aligned mapping of `len` readable bytes (type invariant)
        // that outlives the returned borrow. The X server writes into it only while processing
        // a ShmGetImage request, and we read only after that request's reply arrived.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len) }
    }
}

impl ShmMapping {
    /// The first `len` mapped bytes (`None` past the end), without a view of the rest. Call
    /// only after the reply of the `GetImage` that filled them, see the module invariants.
    pub(crate) fn head(&self, len: usize) -> Option<&[u8]> {
        if len > self.len {
            return None;
        }
        // SAFETY: `ptr` is a live, page-aligned mapping of `self.len` readable bytes (type
        // invariant), of which the first `len` are viewed, for no longer than `self` lives. The
        // X server writes into them only while processing a ShmGetImage request that covers
        // them, and we read only after that request's reply arrived; the bytes after `len` may
        // be written meanwhile and are not part of the view.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), len) })
    }
}

impl Drop for ShmMapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe the mapping created in `create`, and no borrow of it can
        // outlive `self`.
        if let Err(error) = unsafe { munmap(self.ptr.as_ptr(), self.len) } {
            tracing::warn!(%error, "failed to unmap shm segment");
        }
    }
}
