//! Dropping a root process to a uid/gid of its own, keeping a few capabilities: shared by the
//! desktop worker's `--as` (`bin/deskbroker-worker/identity.rs`, which includes this file) and
//! the watchdog (`watchdog.rs`) and the observer (`observer.rs`), so all drop the same way.
//!
//! rustix's calls act on the calling thread alone: call [`drop_ids`] while the process has one
//! thread (the worker before anything else, the watchdog before its loop starts any).

use rustix::thread::{CapabilitySet, CapabilitySets};

/// Drops this single-threaded root process to `uid`/`gid`, with no supplementary group, `kept`
/// alone in its effective and permitted sets, nothing inheritable (so nothing ambient), and
/// with `no_new_privs` the `NoNewPrivs` bit set (no exec ever gains a capability or an id).
/// The uid change makes the process non-dumpable, so other uids cannot read its `/proc`.
pub(crate) fn drop_ids(
    uid: u32,
    gid: u32,
    kept: CapabilitySet,
    no_new_privs: bool,
) -> Result<(), String> {
    fn failed(step: &'static str) -> impl Fn(rustix::io::Errno) -> String {
        move |error| format!("{step}: {error}")
    }
    let gid = rustix::fs::Gid::from_raw(gid);
    let uid = rustix::fs::Uid::from_raw(uid);
    rustix::thread::set_thread_groups(&[]).map_err(failed("setgroups"))?;
    rustix::thread::set_thread_res_gid(gid, gid, gid).map_err(failed("setresgid"))?;
    rustix::thread::set_keep_capabilities(true).map_err(failed("keep capabilities"))?;
    rustix::thread::set_thread_res_uid(uid, uid, uid).map_err(failed("setresuid"))?;
    rustix::thread::set_keep_capabilities(false).map_err(failed("keep capabilities"))?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: kept,
            permitted: kept,
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(failed("capset"))?;
    if no_new_privs {
        rustix::thread::set_no_new_privs(true).map_err(failed("no_new_privs"))?;
    }
    Ok(())
}
