//! The server's side of the control protocol (`tlslab serve
//! --handshakes`): rows prepared on request, one socket and handshake per
//! request, the server's CPU and wall time reported.

use std::net::{IpAddr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::{Control, Reply, Request, PROTOCOL, REPORT_TIMEOUT};
use crate::backend::{backend_by_id, thread_cpu_ns, ApartSide, Carrier};
use crate::host::HostInfo;
use crate::scenario::Side;
use crate::transport::udp::Datagrams;
use crate::transport::IO_TIMEOUT;

/// The server's side of the protocol, for one control connection: rows
/// prepared on request, one socket and handshake per request, on `bind`'s
/// address. Returns when the client says goodbye or goes, or `stop` is set.
pub fn serve_control(control: &mut Control, bind: IpAddr, stop: &AtomicBool) -> Result<()> {
    let mut rows: std::collections::HashMap<u64, Row> = Default::default();
    while !stop.load(Ordering::SeqCst) {
        let Some(request) = control.receive::<Request>()? else {
            return Ok(());
        };
        match request {
            Request::Hello { .. } => control.send(&Reply::Hello {
                protocol: PROTOCOL,
                host: Box::new(HostInfo::current()),
                libraries: crate::backend::BACKEND_IDS
                    .iter()
                    .filter_map(|id| backend_by_id(id).ok())
                    .map(|b| b.library())
                    .collect(),
            })?,
            Request::Prepare {
                cell,
                backend,
                scenario,
                credentials,
            } => {
                let prepared = (|| -> Result<Row> {
                    let backend = backend_by_id(&backend)?;
                    let credentials = credentials.credentials()?;
                    let side = backend.apart(&scenario, &credentials, Side::Server)?;
                    Ok(Row {
                        side,
                        datagrams: scenario.version.is_datagram(),
                        listener: None,
                    })
                })();
                match prepared {
                    Ok(row) => {
                        rows.insert(cell, row);
                        control.send(&Reply::Prepared)?
                    }
                    Err(error) => control.send(&Reply::Failed {
                        reason: format!("{error:#}"),
                    })?,
                }
            }
            Request::Handshake { cell } => {
                let Some(row) = rows.get_mut(&cell) else {
                    control.send(&Reply::Failed {
                        reason: format!("no row {cell} was prepared"),
                    })?;
                    continue;
                };
                let mut announced = false;
                let reply = match serve_one(control, row, bind, &mut announced) {
                    Ok((cpu_ns, wall_ns)) => Reply::Served { cpu_ns, wall_ns },
                    Err(error) => Reply::Failed {
                        reason: format!("{error:#}"),
                    },
                };
                // The client's Done: it sends one once it had the port.
                if announced {
                    match control.receive::<Request>()? {
                        Some(Request::Done) | None => {}
                        Some(other) => bail!("the client sent {other:?} during a handshake"),
                    }
                }
                control.send(&reply)?;
            }
            Request::Forget { cell } => {
                rows.remove(&cell);
            }
            Request::Done => {}
            Request::Bye => return Ok(()),
        }
    }
    Ok(())
}

/// A row the server prepared: its side, its protocol, its TCP listener.
struct Row {
    side: Box<dyn ApartSide>,
    datagrams: bool,
    listener: Option<TcpListener>,
}

/// Opens the row's socket, says its port, takes the client's connection
/// and runs the server's side: its CPU and wall time.
fn serve_one(
    control: &mut Control,
    row: &mut Row,
    bind: IpAddr,
    announced: &mut bool,
) -> Result<(u64, u64)> {
    let carrier = if row.datagrams {
        let socket = UdpSocket::bind((bind, 0)).context("cannot open a UDP socket")?;
        control.send(&Reply::Listening {
            port: socket.local_addr()?.port(),
        })?;
        *announced = true;
        // The client's first flight may be lost, and its library resends
        // it only after 1, 2, 4... seconds: wait for it as long as for a
        // report, unless the client gives up first (its Done).
        if !matches!(
            control.wait(Some(socket.as_raw_fd()), REPORT_TIMEOUT)?,
            super::Ready::Socket
        ) {
            bail!("no datagram from the client");
        }
        socket.set_read_timeout(Some(IO_TIMEOUT))?;
        socket.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut first = [0u8; 1];
        let (_, peer) = socket
            .peek_from(&mut first)
            .context("no datagram from the client")?;
        socket.connect(peer)?;
        Carrier::Udp(Datagrams::new(socket))
    } else {
        if row.listener.is_none() {
            row.listener = Some(TcpListener::bind((bind, 0)).context("cannot listen on TCP")?);
        }
        let listener = row.listener.as_ref().expect("made above");
        control.send(&Reply::Listening {
            port: listener.local_addr()?.port(),
        })?;
        *announced = true;
        // A lost SYN is resent after 1, 2, 4... seconds, as a lost first
        // datagram is.
        if !matches!(
            control.wait(Some(listener.as_raw_fd()), REPORT_TIMEOUT)?,
            super::Ready::Socket
        ) {
            bail!("no client connected");
        }
        let (stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Carrier::Tcp(stream)
    };
    let (cpu, wall) = (thread_cpu_ns(), Instant::now());
    let mut done = row.side.handshake(carrier)?;
    let times = (
        thread_cpu_ns().saturating_sub(cpu),
        wall.elapsed().as_nanos() as u64,
    );
    // Until the client is done too, answer its resent flights.
    control.linger(done.connection.as_mut(), REPORT_TIMEOUT)?;
    Ok(times)
}
