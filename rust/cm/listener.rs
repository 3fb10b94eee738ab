// SPDX-License-Identifier: GPL-2.0

//! Listening sockets: a [`Listener`] serves one listening CM id
//! (`iw_create_listen`); each connection it accepts gets an endpoint that
//! reads the initiator's MPA Request, entered in the device's [`Pending`]
//! endpoints until it has a connection of its own. Destroying the listener
//! stops the listening socket and closes those endpoints.

use core::sync::atomic::AtomicBool;
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

use crate::base::settings::Settings;
use crate::kif::net::NetNs;
use crate::kif::rdma::iwcm::CmId;
use crate::kif::sock::{SockEvents, SockRx, Socket, TcpState};
use crate::wire::connect::FrameKind;

use super::details::Role;
use super::ids::{CmIds, HeldId};
use super::pending::Pending;
use super::phase::{Exchange, Incoming, Phase};
use super::Cep;

/// A listening socket and the CM id it serves.
#[pin_data]
pub(crate) struct Listener {
    sock: Socket,
    /// The listening CM id, which gets the connect requests.
    pub(super) id: HeldId,
    /// The device's settings (read as each Request arrives).
    pub(super) settings: Arc<Settings>,
    /// The device's endpoints without a connection yet, where each
    /// connection accepted here is entered.
    pending: Arc<Pending>,
    /// Names this listener's endpoints in `pending`.
    pub(super) serial: usize,
    /// Cleared (under `pending`'s lock) as the listener is destroyed:
    /// no endpoint is entered for it after that.
    pub(super) open: AtomicBool,
    #[pin]
    work: Work<Listener>,
}

impl_has_work! {
    impl HasWork<Self> for Listener { self.work }
}

impl WorkItem for Listener {
    type Pointer = Arc<Listener>;

    fn run(this: Arc<Listener>) {
        while let Ok(Some(s)) = this.sock.accept() {
            s.set_nodelay();
            let entry = this.pending.entry();
            let key = entry.key();
            let incoming = Incoming {
                mpa: Exchange::new(s, FrameKind::Request),
                listener: this.clone(),
                entry,
            };
            let Ok(cep) = Cep::new(Phase::AwaitRequest(incoming)) else {
                continue;
            };
            // (a failure drops the endpoint, and its socket with it)
            if this.pending.insert(&this, key, &cep).is_err() {
                continue;
            }
            let attached = cep
                .phase
                .lock()
                .exchange()
                .map(|mpa| mpa.sock.attach(cep.clone()));
            if let Some(Ok(())) = attached {
                cep.arm_timeout();
                cep.kick();
            }
        }
    }
}

impl SockEvents for Listener {
    fn data_ready(this: ArcBorrow<'_, Self>, _rx: &mut SockRx<'_>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(Arc::<Listener>::from(this));
    }

    fn state_change(_this: ArcBorrow<'_, Self>, _s: TcpState) {}
}

/// `iw_create_listen` on the device whose net device has interface index
/// `ifindex` in the network namespace `net` and whose settings are
/// `settings`; the id is held in the device's `ids`, the connections
/// accepted are entered in its `pending`. The socket listens in `net`,
/// whoever asks (a kernel consumer in another namespace too).
pub(crate) fn create_listen(
    net: &NetNs,
    ifindex: i32,
    settings: Arc<Settings>,
    id: CmId,
    backlog: i32,
    ids: &Arc<CmIds>,
    pending: &Arc<Pending>,
) -> Result<Arc<Listener>> {
    let laddr = id.local_addr();
    let sock = Socket::tcp(net, laddr.is_v6())?;
    sock.set_reuseaddr();
    // A consumer listening on both families (nfsd, say) asks for IPv6
    // only on its IPv6 listener; without it the IPv4 one gets EADDRINUSE.
    if laddr.is_v6() && id.afonly() {
        sock.set_v6only()?;
    }
    // rdma_cm listens on every device for a wildcard address; each device
    // takes only its own net device's connections (as siw does), so that
    // listeners of several devices can share the port.
    if laddr.is_wildcard() {
        sock.bind_to_ifindex(ifindex)?;
    }
    sock.bind(&laddr)?;
    let backlog = backlog.max(1);
    let id = HeldId::new(
        ids,
        id,
        Role::Listen {
            backlog: backlog as u32,
        },
    )?;
    let l = Arc::pin_init(
        pin_init!(Listener {
            sock,
            id,
            settings,
            pending: pending.clone(),
            serial: pending.listener_serial(),
            open: AtomicBool::new(true),
            work <- new_work!("rsiw::listen"),
        }),
        GFP_KERNEL,
    )?;
    // The upcalls first, then listen (as siw): a connection that completes
    // as soon as the socket listens must wake the listener. Attached after
    // `listen`, such a connection waited in the accept queue, its MPA
    // Request unread, until another one came (or its initiator gave up).
    l.sock.attach(l.clone())?;
    if let Err(e) = l.sock.listen(backlog) {
        l.sock.detach();
        return Err(e);
    }
    Ok(l)
}

/// `iw_destroy_listen`: the socket stops listening (connections in its
/// accept queue are reset), and the endpoints of connections it accepted
/// close: those that wait for their MPA Request, and those whose Request
/// waits for the CM's answer (refused), which the CM drops unanswered if
/// its event was still queued as the listener went.
pub(crate) fn destroy_listen(l: Arc<Listener>) {
    l.sock.detach();
    // A shutdown stops a listening socket (`inet_shutdown` disconnects
    // it), so that its port is free for a new listener now, not once the
    // last endpoint let go of this one.
    l.sock.shutdown();
    l.pending.close_listener(&l);
}
