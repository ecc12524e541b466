//! Real-stack tests of the `deskbroker` binary: a broker process on a Unix socket, real Xvfb
//! desktops, the probe window recording exactly what it receives, and LibreCAD end to end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod accessibility;
mod after_input;
mod app_view;
mod auth;
mod ax_fixture;
mod bench;
mod bench_progress;
mod bench_spread;
mod census;
mod clipboard;
mod conformance;
mod containment;
mod control;
mod crash;
mod destination;
mod escape_gui;
mod escape_probe;
mod evidence;
mod fake_server;
mod faults;
mod freecad;
mod interrupt;
mod librecad;
mod limits;
mod load;
mod perf;
mod policy_cli;
mod probe;
mod reap;
mod reset_handoff;
mod sandbox;
mod sandbox_view;
mod semantic;
mod settle_idle;
mod stop_settle;
mod stop_wait;
mod strict;
mod support;
mod untrusted_attempt;
mod watchdog;
mod worker_peer;
mod worker_program;
mod worker_protocol;
mod zoom;
