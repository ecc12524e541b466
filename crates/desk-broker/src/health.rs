//! Lease admission by capacity, readiness and drain.
//!
//! Every new lease passes [`Inner::admit_lease`] under the lease lock: refused (409
//! `lease_conflict` with `Retry-After`, nothing leased) while the broker drains, when the
//! unreleased sessions are at `max_sessions`, or when the sum of their memory estimates plus the
//! new one's would exceed `memory_budget_mib`. A session's estimate is its profile's memory
//! limit (`[limits] memory_mib`, else the 2 GiB default: the cgroup limit its desktop runs
//! under, so the budget holds even when every desktop uses all it may).
//!
//! [`Inner::capacity`] says whether a lease of the smallest profile would be admitted now, and
//! also asks the backend factory whether it can build a desktop at all (the sandbox probe). The
//! health listener (desk-server's `serve_health`, plain HTTP, no credentials, counts only) answers
//! `GET /livez` 200 while the process serves and `GET /readyz` 200 or 503 with that
//! [`Capacity`]: a Kubernetes readiness probe that turns false when the broker cannot lease.
//! `POST /v1/drain` (an operator route) stops leasing for good and answers the capacity, whose
//! `live_sessions` a preStop hook polls down to zero (`deskbroker drain`).

use std::sync::atomic::Ordering;

use desk_contract::api::Capacity;

use crate::broker::{Broker, Inner};
use crate::error::BrokerError;
use crate::store::SessionRow;

const MIB: u64 = 1 << 20;

impl Inner {
    /// The memory estimate of a session of `profile`, MiB: its memory limit. A profile this
    /// broker no longer offers (a session leased before a restart) counts the default limit.
    pub(crate) fn memory_estimate_mib(&self, profile: &str) -> u64 {
        let bytes = match self.config.profiles.get(profile) {
            Ok(profile) => profile.limits().memory_bytes,
            Err(_) => desk_desktop::sandbox::cgroup::Limits::default().memory_bytes,
        };
        bytes.div_ceil(MIB)
    }

    fn reserved_mib(&self, live: &[SessionRow]) -> u64 {
        live.iter()
            .map(|session| self.memory_estimate_mib(&session.profile))
            .sum()
    }

    /// Whether a new lease of `profile` is admitted now; called under the lease lock.
    pub(crate) fn admit_lease(&self, profile: &str) -> Result<(), BrokerError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(BrokerError::AtCapacity(
                "the broker is draining: it leases no new session".to_string(),
            ));
        }
        let live = self.store.unreleased_sessions()?;
        if live.len() >= self.config.max_sessions {
            return Err(BrokerError::AtCapacity(format!(
                "all {} desktops are leased",
                self.config.max_sessions
            )));
        }
        if let Some(budget) = self.config.memory_budget_mib {
            let reserved = self.reserved_mib(&live);
            let wanted = self.memory_estimate_mib(profile);
            if reserved.saturating_add(wanted) > budget {
                return Err(BrokerError::AtCapacity(format!(
                    "memory budget: {reserved} of {budget} MiB are reserved by {} live \
                     sessions; a {profile} desktop needs {wanted} MiB",
                    live.len()
                )));
            }
        }
        Ok(())
    }

    /// The broker's capacity now: ready when a lease of the smallest profile offered would be
    /// admitted and the backend can build a desktop.
    pub(crate) fn capacity(&self) -> Result<Capacity, BrokerError> {
        let live = self.store.unreleased_sessions()?;
        let reserved_mib = self.reserved_mib(&live);
        let draining = self.draining.load(Ordering::SeqCst);
        let smallest = self
            .config
            .profiles
            .names()
            .iter()
            .map(|name| self.memory_estimate_mib(name))
            .min()
            .unwrap_or(0);
        let reason = if draining {
            Some("draining".to_string())
        } else if live.len() >= self.config.max_sessions {
            Some(format!(
                "all {} desktops are leased",
                self.config.max_sessions
            ))
        } else if let Some(budget) = self
            .config
            .memory_budget_mib
            .filter(|budget| reserved_mib.saturating_add(smallest) > *budget)
        {
            Some(format!(
                "memory budget: {reserved_mib} of {budget} MiB reserved; the smallest \
                 profile needs {smallest} MiB"
            ))
        } else {
            self.factory
                .check_available()
                .err()
                .map(|error| format!("no desktop can be built: {error}"))
        };
        Ok(Capacity {
            ready: reason.is_none(),
            reason,
            draining,
            live_sessions: live.len() as u64,
            max_sessions: self.config.max_sessions as u64,
            reserved_mib,
            memory_budget_mib: self.config.memory_budget_mib,
        })
    }
}

impl Broker {
    /// The capacity now (see [`Inner::capacity`]).
    pub async fn capacity(&self) -> Result<Capacity, BrokerError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.capacity())
            .await
            .map_err(|error| BrokerError::Internal(format!("capacity task failed: {error}")))?
    }

    /// Stops leasing until this broker restarts (idempotent); live sessions go on. Answers
    /// the capacity after the change.
    pub async fn drain(&self) -> Result<Capacity, BrokerError> {
        if !self.inner.draining.swap(true, Ordering::SeqCst) {
            tracing::info!("draining: no new lease until restart");
        }
        self.capacity().await
    }
}
