//! The two system interfaces the event loops need beyond the standard
//! library, over `libc`: a TCP connection started without blocking, and an
//! edge-triggered epoll set with a timeout finer than a millisecond.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A nonblocking TCP socket whose connection to `address` is under way.
pub(in crate::workload::load) fn connect_nonblocking(address: SocketAddr) -> io::Result<TcpStream> {
    // SAFETY: zeroed is a valid sockaddr_storage; each arm writes a
    // sockaddr of the family it names, which the storage is large and
    // aligned enough to hold.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let length = match address {
        SocketAddr::V4(v4) => {
            let sockaddr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sockaddr) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sockaddr = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            unsafe { std::ptr::write(std::ptr::from_mut(&mut storage).cast(), sockaddr) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    let family = i32::from(storage.ss_family);
    // SAFETY: plain system calls on a socket this function owns; the
    // address points to `storage`, valid for `length` bytes.
    unsafe {
        let fd = libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let socket = OwnedFd::from_raw_fd(fd);
        let started = libc::connect(
            fd,
            std::ptr::from_ref(&storage).cast(),
            length as libc::socklen_t,
        );
        if started < 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(error);
            }
        }
        Ok(TcpStream::from(socket))
    }
}

/// An epoll instance watching sockets edge-triggered for both directions.
pub(super) struct Epoll(OwnedFd);

impl Epoll {
    pub(super) fn new() -> io::Result<Self> {
        // SAFETY: a plain system call; the descriptor is owned from here.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for readiness to read or write, reported as `token`.
    /// A closed descriptor leaves the set by itself.
    pub(super) fn add(&self, fd: RawFd, token: usize) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token as u64,
        };
        // SAFETY: both descriptors are open; `event` outlives the call.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout` for ready sockets; returns how many of
    /// `events` were filled. The timeout is kept to the nanosecond with
    /// epoll_pwait2 (Linux 5.11), rounded up to the millisecond with
    /// epoll_wait on older kernels.
    pub(super) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout: Duration,
    ) -> io::Result<usize> {
        let precise = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `events` is writable for its length; no signal mask.
        let mut ready = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                std::ptr::from_ref(&precise),
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if ready < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            let milliseconds = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128);
            // SAFETY: as above.
            ready = libc::c_long::from(unsafe {
                libc::epoll_wait(
                    self.0.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as libc::c_int,
                    milliseconds as libc::c_int,
                )
            });
        }
        if ready < 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::Interrupted => Ok(0),
                _ => Err(error),
            };
        }
        Ok(ready as usize)
    }
}
