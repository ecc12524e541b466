//! Unread bytes of Unix sockets, from the kernel's socket diagnostics (`NETLINK_SOCK_DIAG`,
//! `UDIAG_SHOW_RQLEN`): one dump per sample, keyed by socket inode.
//!
//! The dump covers the caller's network namespace (in a sandbox: the session's own). For a
//! connected stream socket the kernel reports the bytes queued for reading; for a listening
//! one the connections waiting to be accepted. Either way, 0 means nothing is waiting for the
//! socket's owner.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use rustix::net::netlink::SocketAddrNetlink;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `UDIAG_SHOW_RQLEN`.
const UDIAG_SHOW_RQLEN: u32 = 0x10;
/// The attribute carrying `struct unix_diag_rqlen`.
const UNIX_DIAG_RQLEN: u16 = 4;
const NLMSG_HEADER: usize = 16;
/// `struct unix_diag_msg`.
const UNIX_DIAG_MSG: usize = 16;
const AF_UNIX: u8 = 1;

/// A socket-diagnostics channel.
pub(crate) struct SockDiag {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

impl SockDiag {
    /// Opens the netlink socket.
    pub(crate) fn open() -> Result<SockDiag, String> {
        let fd = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            Some(rustix::net::netlink::SOCK_DIAG),
        )
        .map_err(|error| format!("open a sock_diag socket: {error}"))?;
        Ok(SockDiag {
            fd,
            seq: 0,
            buf: vec![0; 32 * 1024],
        })
    }

    /// Unread bytes (or pending connections) of every Unix socket in this network namespace,
    /// by inode.
    pub(crate) fn unix_queues(&mut self) -> Result<HashMap<u64, u32>, String> {
        self.seq = self.seq.wrapping_add(1);
        let request = dump_request(self.seq);
        rustix::net::sendto(
            &self.fd,
            &request,
            SendFlags::empty(),
            &SocketAddrNetlink::new(0, 0),
        )
        .map_err(|error| format!("send the sock_diag request: {error}"))?;
        let mut queues = HashMap::new();
        loop {
            let (_, len) = rustix::net::recv(&self.fd, &mut self.buf[..], RecvFlags::empty())
                .map_err(|error| format!("read the sock_diag answer: {error}"))?;
            let chunk = self.buf.get(..len).ok_or("sock_diag answer truncated")?;
            if parse_messages(chunk, self.seq, &mut queues)? {
                return Ok(queues);
            }
        }
    }
}

/// The dump request for every Unix socket with its queue length.
fn dump_request(seq: u32) -> Vec<u8> {
    let len = u32::try_from(NLMSG_HEADER + 24).unwrap_or(40);
    let mut request = Vec::with_capacity(40);
    request.extend_from_slice(&len.to_ne_bytes());
    request.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    request.extend_from_slice(&seq.to_ne_bytes());
    request.extend_from_slice(&0u32.to_ne_bytes());
    // struct unix_diag_req: family, protocol, pad, states (all), ino (any), show, cookie.
    request.extend_from_slice(&[AF_UNIX, 0, 0, 0]);
    request.extend_from_slice(&u32::MAX.to_ne_bytes());
    request.extend_from_slice(&0u32.to_ne_bytes());
    request.extend_from_slice(&UDIAG_SHOW_RQLEN.to_ne_bytes());
    request.extend_from_slice(&u32::MAX.to_ne_bytes());
    request.extend_from_slice(&u32::MAX.to_ne_bytes());
    request
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// 4-byte alignment of netlink messages and attributes.
fn align4(len: usize) -> usize {
    len.saturating_add(3) & !3
}

/// Adds the sockets of one datagram of the answer to `queues`; true at the end of the dump.
fn parse_messages(chunk: &[u8], seq: u32, queues: &mut HashMap<u64, u32>) -> Result<bool, String> {
    let malformed = || "malformed sock_diag answer".to_string();
    let mut at = 0;
    while at + NLMSG_HEADER <= chunk.len() {
        let len = u32_at(chunk, at).ok_or_else(malformed)? as usize;
        let kind = u16_at(chunk, at + 4).ok_or_else(malformed)?;
        let message_seq = u32_at(chunk, at + 8).ok_or_else(malformed)?;
        if len < NLMSG_HEADER || at + len > chunk.len() {
            return Err(malformed());
        }
        let body = chunk
            .get(at + NLMSG_HEADER..at + len)
            .ok_or_else(malformed)?;
        at += align4(len);
        if message_seq != seq {
            continue;
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = u32_at(body, 0).map(|raw| raw as i32).unwrap_or(0);
                return Err(format!(
                    "sock_diag refused the dump: {}",
                    std::io::Error::from_raw_os_error(errno.saturating_neg())
                ));
            }
            SOCK_DIAG_BY_FAMILY => {
                let inode = u64::from(u32_at(body, 4).ok_or_else(malformed)?);
                if let Some(rqueue) = rqueue(body.get(UNIX_DIAG_MSG..).unwrap_or_default()) {
                    queues.insert(inode, rqueue);
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// The receive queue from a message's attributes.
fn rqueue(mut attributes: &[u8]) -> Option<u32> {
    while attributes.len() >= 4 {
        let len = usize::from(u16_at(attributes, 0)?);
        let kind = u16_at(attributes, 2)?;
        if len < 4 || len > attributes.len() {
            return None;
        }
        if kind == UNIX_DIAG_RQLEN {
            return u32_at(attributes, 4);
        }
        attributes = attributes.get(align4(len)..).unwrap_or_default();
    }
    None
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::os::linux::fs::MetadataExt as _;
    use std::os::unix::net::UnixStream;

    use super::*;

    fn inode(stream: &UnixStream) -> u64 {
        let fd = std::os::fd::AsRawFd::as_raw_fd(stream);
        std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .map(|meta| meta.st_ino())
            .unwrap_or_default()
    }

    #[test]
    fn unread_bytes_show_on_the_receiving_socket_until_read() {
        let (mut writer, reader) = UnixStream::pair().unwrap_or_else(|error| panic!("{error}"));
        let mut diag = SockDiag::open().unwrap_or_else(|error| panic!("{error}"));
        let queues = diag.unix_queues().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(queues.get(&inode(&reader)), Some(&0));
        writer
            .write_all(b"12345")
            .unwrap_or_else(|error| panic!("{error}"));
        let queues = diag.unix_queues().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(queues.get(&inode(&reader)), Some(&5));
        assert_eq!(queues.get(&inode(&writer)), Some(&0));
        let mut sink = [0u8; 5];
        std::io::Read::read_exact(&mut &reader, &mut sink)
            .unwrap_or_else(|error| panic!("{error}"));
        let queues = diag.unix_queues().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(queues.get(&inode(&reader)), Some(&0));
    }

    #[test]
    fn a_truncated_answer_is_malformed_not_a_panic() {
        let mut queues = HashMap::new();
        let mut chunk = dump_request(1);
        chunk.truncate(20);
        chunk[0] = 200;
        assert!(parse_messages(&chunk, 1, &mut queues).is_err());
        assert_eq!(rqueue(&[8, 0, 4, 0, 1]), None);
    }
}
