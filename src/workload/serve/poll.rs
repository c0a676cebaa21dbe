//! What the server's event loops need from the system beyond the standard
//! library, over `libc`: an epoll set per worker (the shared listening
//! socket in every set with EPOLLEXCLUSIVE, so one worker wakes per
//! connection; each connection edge-triggered for both directions), a
//! listen backlog longer than the standard library's, and the open-file
//! limit raised to what the hard limit allows.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Connections the kernel queues for `accept` (capped by
/// `net.core.somaxconn`): a burst of thousands of connections waits there
/// rather than being dropped in SYN.
pub const LISTEN_BACKLOG: i32 = 4096;

/// Sets the listening socket's backlog (Linux lets `listen` be called
/// again on a listening socket to change it).
pub fn set_backlog(listener: &TcpListener, backlog: i32) -> io::Result<()> {
    // SAFETY: listen(2) on a descriptor the listener owns.
    if unsafe { libc::listen(listener.as_raw_fd(), backlog) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the soft open-file limit to the hard limit; returns the soft
/// limit in force afterwards.
// The cast from `rlim_t` is needed on 32-bit ARM, where it is `u32`.
#[allow(clippy::unnecessary_cast)]
pub fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    limit.rlim_cur as u64
}

/// Descriptors this process has open now.
pub fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(16, |entries| entries.count() as u64)
}

/// One worker's epoll set.
pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: a plain system call; the descriptor is owned from here.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn control(
        &self,
        operation: libc::c_int,
        fd: RawFd,
        events: u32,
        token: u64,
    ) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: both descriptors are open; `event` outlives the call.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), operation, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches the listening socket (level-triggered: a connection left in
    /// the backlog wakes a worker again), waking one worker of those
    /// waiting, not all.
    pub fn add_listener(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.control(
            libc::EPOLL_CTL_ADD,
            fd,
            (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
            token,
        )
    }

    /// Watches a connection for readiness to read or write, edge-triggered
    /// (reported once per change, so its owner reads and writes until the
    /// socket would block). A closed descriptor leaves the set by itself.
    pub fn add_connection(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.control(
            libc::EPOLL_CTL_ADD,
            fd,
            (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            token,
        )
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits up to `timeout` for ready sockets; returns how many of
    /// `events` were filled (0 when a signal interrupted the wait).
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout: Duration) -> io::Result<usize> {
        let milliseconds = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `events` is writable for its length.
        let ready = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                milliseconds,
            )
        };
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
