//! Network namespaces without names: a thread unshares a new one and this
//! process keeps it open by a file descriptor, so it lives exactly as long
//! as tlslab holds it (or a child entered it) and nothing is left behind
//! when tlslab ends, even by kill -9; threads enter it to open sockets or
//! devices there (they stay in it), and commands run from such a thread
//! run in it. A long-lived program (OpenVPN) is started inside one with
//! [`Namespace::enter_on_exec`], and `ip` reaches one from outside by
//! [`Namespace::path`]: neither needs a name in /run/netns (see
//! [`super::lab`]).

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// A network namespace, held open.
#[derive(Debug)]
pub struct Namespace {
    fd: OwnedFd,
}

impl Namespace {
    /// A new, empty network namespace (its loopback down).
    pub fn new() -> Result<Self> {
        let fd = std::thread::scope(|scope| {
            scope
                .spawn(|| -> Result<OwnedFd> {
                    // SAFETY: unshare on this thread only (a network
                    // namespace is per thread); the thread ends right after.
                    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                        return Err(std::io::Error::last_os_error())
                            .context("cannot create a network namespace (root needed)");
                    }
                    let file = File::open("/proc/thread-self/ns/net")
                        .context("cannot open the new network namespace")?;
                    Ok(OwnedFd::from(file))
                })
                .join()
                .map_err(|_| anyhow::anyhow!("a namespace thread panicked"))?
        })?;
        Ok(Self { fd })
    }

    /// The descriptor that holds the namespace (for a child to enter it).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Makes the calling thread enter this namespace: sockets and devices
    /// it opens from now on are in it.
    pub fn enter(&self) -> Result<()> {
        // SAFETY: a valid namespace descriptor; only this thread moves.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error())
                .context("cannot enter a network namespace");
        }
        Ok(())
    }

    /// A path by which another process opens this namespace while tlslab
    /// holds it (`ip link ... netns PATH`): this process's descriptor.
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    /// Makes `command` run inside this namespace, whichever thread spawns
    /// it: the child enters it between fork and exec. The namespace must
    /// be held (not dropped) until the command has been spawned.
    pub fn enter_on_exec(&self, command: &mut Command) {
        let fd = self.fd.as_raw_fd();
        // SAFETY: between fork and exec only setns(2), which is
        // async-signal-safe; `fd` is open in the child (a copy of this
        // process's table; it closes on exec).
        unsafe {
            command.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// Runs `work` on a fresh thread inside this namespace.
    pub fn run<T: Send>(&self, work: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter()?;
                    work()
                })
                .join()
                .map_err(|_| anyhow::anyhow!("a namespace thread panicked"))?
        })
    }

    /// Runs `ip ARGS` inside this namespace.
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        self.run(|| {
            let output = Command::new("ip")
                .args(args)
                .stdin(Stdio::null())
                .output()
                .context("cannot run `ip` (Debian: apt-get install iproute2)")?;
            if !output.status.success() {
                bail!(
                    "`ip {}` failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            Ok(())
        })
    }
}

/// Why namespaces and TUN devices cannot be made here, if they cannot.
pub fn missing() -> Option<String> {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        missing
            .push("root (network namespaces and TUN devices need CAP_SYS_ADMIN and CAP_NET_ADMIN)");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun (load the tun module)");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        missing.push("the `ip` command (Debian: apt-get install iproute2)");
    }
    (!missing.is_empty()).then(|| missing.join("; "))
}
