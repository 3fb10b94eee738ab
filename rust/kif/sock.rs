// SPDX-License-Identifier: GPL-2.0

//! Kernel TCP sockets for MPA connections: creation, bind/listen/accept,
//! connect, sending kvecs, non-blocking receive, and the socket upcalls
//! (`sk_data_ready`, `sk_state_change`, `sk_write_space`) routed to a
//! [`SockEvents`] handler for as long as it is attached.

use core::ptr::NonNull;
use kernel::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::{glue, net::NetNs};

/// TCP states (`TCP_ESTABLISHED`, ...), as far as rsiw cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    /// Connected.
    Established,
    /// The peer closed its side.
    CloseWait,
    /// Fully closed or reset.
    Closed,
    /// Listening.
    Listen,
    /// Anything else (handshakes, our own close in progress).
    Other,
}

impl TcpState {
    fn from_raw(s: i32) -> Self {
        match s as u32 {
            bindings::TCP_ESTABLISHED => Self::Established,
            bindings::TCP_CLOSE_WAIT => Self::CloseWait,
            bindings::TCP_CLOSE => Self::Closed,
            bindings::TCP_LISTEN => Self::Listen,
            _ => Self::Other,
        }
    }
}

/// A socket address (`struct sockaddr_storage`), IPv4 or IPv6.
#[derive(Clone, Copy)]
pub struct SockAddr(pub(in crate::kif) bindings::__kernel_sockaddr_storage);

// SAFETY: `sockaddr_storage` is plain bytes; its only pointer member
// (`__align`) exists for alignment and is never dereferenced.
unsafe impl Send for SockAddr {}
// SAFETY: as above; shared references only read the bytes.
unsafe impl Sync for SockAddr {}

impl SockAddr {
    /// The address family (`AF_INET` or `AF_INET6`).
    pub fn family(&self) -> u16 {
        // SAFETY: `ss_family` is the first member of every variant.
        unsafe { self.0.__bindgen_anon_1.__bindgen_anon_1.ss_family }
    }

    /// Whether this is an IPv6 address.
    pub fn is_v6(&self) -> bool {
        self.family() == bindings::AF_INET6 as u16
    }

    /// Whether the address is the wildcard (any) address of its family.
    pub fn is_wildcard(&self) -> bool {
        let p = core::ptr::from_ref(&self.0);
        if self.is_v6() {
            // SAFETY: an `AF_INET6` storage holds a `sockaddr_in6`.
            let a = unsafe { &*p.cast::<bindings::sockaddr_in6>() };
            // SAFETY: the address union is plain octets.
            unsafe { a.sin6_addr.in6_u.u6_addr8 }
                .iter()
                .all(|b| *b == 0)
        } else {
            // SAFETY: an `AF_INET` storage holds a `sockaddr_in`.
            let a = unsafe { &*p.cast::<bindings::sockaddr_in>() };
            a.sin_addr.s_addr == 0
        }
    }

    /// The address as an `AF_INET` one if it is an IPv4-mapped IPv6
    /// address (`::ffff:a.b.c.d`, what a dual-stack IPv6 socket reports
    /// of an IPv4 connection), else unchanged. rdma_cm resolves the
    /// addresses of a connection request to its net device and finds none
    /// for a mapped one.
    pub fn unmapped(self) -> Self {
        if !self.is_v6() {
            return self;
        }
        let p = core::ptr::from_ref(&self.0);
        // SAFETY: an `AF_INET6` storage holds a `sockaddr_in6`.
        let a = unsafe { &*p.cast::<bindings::sockaddr_in6>() };
        // SAFETY: the address union is plain octets.
        let o = unsafe { a.sin6_addr.in6_u.u6_addr8 };
        if o[..10].iter().any(|b| *b != 0) || o[10] != 0xff || o[11] != 0xff {
            return self;
        }
        let mut out = Self::zeroed();
        let q = core::ptr::from_mut(&mut out.0);
        // SAFETY: the storage has room for a `sockaddr_in`, which any bits
        // make a valid value of.
        let v4 = unsafe { &mut *q.cast::<bindings::sockaddr_in>() };
        v4.sin_family = bindings::AF_INET as bindings::__kernel_sa_family_t;
        v4.sin_port = a.sin6_port;
        v4.sin_addr.s_addr = u32::from_ne_bytes([o[12], o[13], o[14], o[15]]);
        out
    }

    /// The address with port 0 (bound so, a socket gets an ephemeral
    /// port).
    pub fn without_port(self) -> Self {
        let mut out = self;
        let q = core::ptr::from_mut(&mut out.0);
        if self.is_v6() {
            // SAFETY: an `AF_INET6` storage holds a `sockaddr_in6`.
            unsafe { (*q.cast::<bindings::sockaddr_in6>()).sin6_port = 0 };
        } else {
            // SAFETY: an `AF_INET` storage holds a `sockaddr_in`.
            unsafe { (*q.cast::<bindings::sockaddr_in>()).sin_port = 0 };
        }
        out
    }

    fn len(&self) -> i32 {
        if self.is_v6() {
            core::mem::size_of::<bindings::sockaddr_in6>() as i32
        } else {
            core::mem::size_of::<bindings::sockaddr_in>() as i32
        }
    }

    fn as_ptr(&self) -> *mut bindings::sockaddr {
        core::ptr::from_ref(&self.0).cast_mut().cast()
    }

    fn zeroed() -> Self {
        // SAFETY: all-zero is a valid sockaddr storage.
        Self(unsafe { core::mem::zeroed() })
    }
}

/// What a handler does with socket upcalls. The socket holds a reference
/// to the handler while attached; upcalls borrow it (`ArcBorrow`, which
/// turns into a new `Arc` with `.into()` when work must be queued).
/// `data_ready` runs in softirq context with the socket locked; it may read
/// the queued data with [`SockRx::pull`].
pub trait SockEvents: Send + Sync + Sized + 'static {
    /// New data arrived.
    fn data_ready(this: ArcBorrow<'_, Self>, rx: &mut SockRx<'_>);
    /// The TCP state changed.
    fn state_change(this: ArcBorrow<'_, Self>, state: TcpState);
    /// Send buffer space became available.
    fn write_space(_this: ArcBorrow<'_, Self>) {}
}

/// Access to the receive queue of a locked socket: during a `data_ready`
/// upcall, or in [`Socket::with_rx`].
///
/// # Invariants
///
/// `sk` is a live TCP socket locked (as the upcall runs it, or by
/// `lock_sock`) for `'a`.
pub struct SockRx<'a> {
    sk: NonNull<bindings::sock>,
    _p: core::marker::PhantomData<&'a ()>,
}

/// A handler of received bytes (`&mut dyn` behind a thin pointer).
type RxFn<'a> = &'a mut dyn FnMut(&[u8]) -> Result;

impl SockRx<'_> {
    /// Feeds all queued data to `f`, in order, consuming it; stops at the
    /// first error `f` returns (the rest stays queued).
    pub fn pull(&mut self, f: &mut dyn FnMut(&[u8]) -> Result) -> Result {
        self.pull_at_most(usize::MAX, f)
    }

    /// As [`SockRx::pull`], but consumes at most `limit` octets.
    pub fn pull_at_most(&mut self, limit: usize, f: &mut dyn FnMut(&[u8]) -> Result) -> Result {
        let mut f: RxFn<'_> = f;
        let ctx = core::ptr::from_mut(&mut f).cast::<kernel::ffi::c_void>();
        // SAFETY: `sk` is locked (type invariant); `ctx` points to `f` for
        // the duration of the call (see `rsiw_sock_rx`).
        let r = unsafe { glue::rsiw_sk_read(self.sk.as_ptr(), limit, ctx) };
        kernel::error::to_result(r)
    }

    /// Feeds the queued data after its first `skip` octets to `f`, in
    /// order, without consuming any: a later [`SockRx::pull`] (in this
    /// upcall or a later one) gets the same octets again. Stops at the
    /// first error `f` returns.
    pub fn peek(&mut self, skip: usize, f: &mut dyn FnMut(&[u8]) -> Result) -> Result {
        let mut f: RxFn<'_> = f;
        let ctx = core::ptr::from_mut(&mut f).cast::<kernel::ffi::c_void>();
        // SAFETY: as in `pull_at_most`; the glue walks the receive queue,
        // which the socket lock keeps from changing.
        let r = unsafe { glue::rsiw_sk_peek(self.sk.as_ptr(), skip, ctx) };
        kernel::error::to_result(r)
    }
}

/// The Rust end of `rsiw_sk_read`'s actor.
///
/// # Safety
///
/// `ctx` is the `RxFn` pointer of a live `SockRx::pull` (or
/// `SockRx::peek`) call; `data` is valid for `len` octets.
#[no_mangle]
unsafe extern "C" fn rsiw_sock_rx(
    ctx: *mut kernel::ffi::c_void,
    data: *const u8,
    len: usize,
) -> i32 {
    // SAFETY: per the contract.
    let (f, d) = unsafe {
        (
            &mut *ctx.cast::<RxFn<'_>>(),
            core::slice::from_raw_parts(data, len),
        )
    };
    match f(d) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The upcall trampoline of handlers of type `T`.
///
/// # Safety
///
/// Called by the glue with the socket callback lock read-held, so `ctx`
/// (an `Arc<T>` from [`Socket::attach`]) stays alive for the call.
unsafe extern "C" fn event_cb<T: SockEvents>(
    ctx: *mut kernel::ffi::c_void,
    sk: *mut bindings::sock,
    ev: i32,
    state: i32,
) {
    // SAFETY: per the contract.
    let h = unsafe { ArcBorrow::from_raw(ctx.cast::<T>()) };
    match ev {
        0 => {
            let Some(sk) = NonNull::new(sk) else { return };
            let mut rx = SockRx {
                sk,
                _p: core::marker::PhantomData,
            };
            T::data_ready(h, &mut rx);
        }
        1 => T::state_change(h, TcpState::from_raw(state)),
        _ => T::write_space(h),
    }
}

/// Drops the socket's reference to its handler.
///
/// # Safety
///
/// Called by the glue once per attach, after the hook is unreachable.
unsafe extern "C" fn release_cb<T: SockEvents>(ctx: *mut kernel::ffi::c_void) {
    // SAFETY: `ctx` came from `Arc::into_raw` in `attach`.
    drop(unsafe { Arc::from_raw(ctx.cast::<T>()) });
}

/// A kernel TCP socket.
///
/// # Invariants
///
/// `ptr` is a socket from `__sock_create` or `kernel_accept`, owned by this
/// value until it drops (which releases it).
pub struct Socket {
    ptr: NonNull<bindings::socket>,
}

// SAFETY: kernel socket calls do their own locking.
unsafe impl Send for Socket {}
// SAFETY: as above.
unsafe impl Sync for Socket {}

impl Socket {
    /// A new TCP socket in the network namespace `net`, whichever the
    /// caller's is. Like a socket user space makes, it holds a reference
    /// on its namespace until it is released.
    pub fn tcp(net: &NetNs, v6: bool) -> Result<Self> {
        let mut p = core::ptr::null_mut();
        let fam = if v6 {
            bindings::AF_INET6
        } else {
            bindings::AF_INET
        };
        // SAFETY: `net` is a namespace we hold a reference on for the
        // call; the socket, made into `p`, takes its own.
        kernel::error::to_result(unsafe {
            glue::rsiw_sock_create_in(net.as_ptr(), fam as i32, &mut p)
        })?;
        // INVARIANT: the socket created just above.
        Ok(Self {
            ptr: NonNull::new(p).ok_or(ENOMEM)?,
        })
    }

    /// Binds to `addr`.
    pub fn bind(&self, addr: &SockAddr) -> Result {
        // SAFETY: live socket; `addr` is a valid sockaddr of `len` octets.
        kernel::error::to_result(unsafe {
            bindings::kernel_bind(self.ptr.as_ptr(), addr.as_ptr().cast(), addr.len())
        })
    }

    /// Allows binding a port still in TIME_WAIT.
    pub fn set_reuseaddr(&self) {
        // SAFETY: live socket with its sock.
        unsafe { bindings::sock_set_reuseaddr(glue::rsiw_sock_sk(self.ptr.as_ptr())) };
    }

    /// An IPv6 socket that takes IPv6 peers only (`IPV6_V6ONLY`), so that
    /// an IPv4 socket can share its port. Before `bind`.
    pub fn set_v6only(&self) -> Result {
        // SAFETY: live, unbound IPv6 socket; takes the socket lock itself.
        kernel::error::to_result(unsafe { glue::rsiw_sock_set_v6only(self.ptr.as_ptr()) })
    }

    /// Restricts the socket to the net device `ifindex`.
    pub fn bind_to_ifindex(&self, ifindex: i32) -> Result {
        // SAFETY: live socket with its sock; takes the socket lock itself.
        kernel::error::to_result(unsafe {
            bindings::sock_bindtoindex(glue::rsiw_sock_sk(self.ptr.as_ptr()), ifindex, true)
        })
    }

    /// Listens.
    pub fn listen(&self, backlog: i32) -> Result {
        // SAFETY: live socket.
        kernel::error::to_result(unsafe { bindings::kernel_listen(self.ptr.as_ptr(), backlog) })
    }

    /// Accepts a pending connection, if any (non-blocking).
    pub fn accept(&self) -> Result<Option<Socket>> {
        let mut p = core::ptr::null_mut();
        // SAFETY: live listening socket; the new socket, if any, is ours.
        let r = unsafe {
            bindings::kernel_accept(self.ptr.as_ptr(), &mut p, bindings::O_NONBLOCK as i32)
        };
        if r == -(bindings::EAGAIN as i32) {
            return Ok(None);
        }
        kernel::error::to_result(r)?;
        let Some(ptr) = NonNull::new(p) else {
            return Ok(None);
        };
        let child = Socket { ptr };
        // SAFETY: both sockets are live; the child is not yet visible to
        // anyone else.
        if unsafe { glue::rsiw_sk_accept_fixup(self.ptr.as_ptr(), child.ptr.as_ptr()) } != 0 {
            // The listener is being closed: the child goes (released by
            // the drop) and so does the rest of its accept queue.
            return Ok(None);
        }
        Ok(Some(child))
    }

    /// Connects (blocking).
    pub fn connect(&self, addr: &SockAddr) -> Result {
        // SAFETY: live socket; valid address.
        kernel::error::to_result(unsafe {
            bindings::kernel_connect(self.ptr.as_ptr(), addr.as_ptr().cast(), addr.len(), 0)
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> Result<SockAddr> {
        let a = SockAddr::zeroed();
        // SAFETY: live socket; `a` has room for any address.
        let r = unsafe { bindings::kernel_getsockname(self.ptr.as_ptr(), a.as_ptr()) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(a)
    }

    /// The peer address.
    pub fn peer_addr(&self) -> Result<SockAddr> {
        let a = SockAddr::zeroed();
        // SAFETY: as above.
        let r = unsafe { bindings::kernel_getpeername(self.ptr.as_ptr(), a.as_ptr()) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(a)
    }

    /// Disables Nagle's algorithm.
    pub fn set_nodelay(&self) {
        // SAFETY: live socket with its sock.
        unsafe { bindings::tcp_sock_set_nodelay(glue::rsiw_sock_sk(self.ptr.as_ptr())) };
    }

    /// The current effective MSS of the connection.
    pub fn mss(&self) -> u32 {
        // SAFETY: live connected socket.
        unsafe { glue::rsiw_sock_mss(self.ptr.as_ptr()) }
    }

    /// Whether sent data is still unacknowledged (read without the socket
    /// lock: a hint).
    pub fn has_unacked(&self) -> bool {
        // SAFETY: live connected socket; the glue only reads two fields.
        unsafe { glue::rsiw_sock_unacked(self.ptr.as_ptr()) }
    }

    /// The MSS this end advertised to the peer: no segment the peer sends,
    /// and so no FPDU of a conforming MPA peer, is larger.
    pub fn advertised_mss(&self) -> u32 {
        // SAFETY: live connected socket.
        unsafe { glue::rsiw_sock_advmss(self.ptr.as_ptr()) }
    }

    /// Lets the connection's receive window grow to `win` octets: raises
    /// the socket's receive buffer (leaving TCP's autotuning on) and its
    /// window clamp. For a receiver that must queue a whole FPDU before it
    /// takes any octet of it. Returns the largest window the connection
    /// can now advertise (its window scale may keep it below `win`).
    /// Process context (takes the socket lock).
    pub fn reserve_rcv_window(&self, win: u32) -> Result<u32> {
        // SAFETY: live connected socket; the glue takes the socket lock
        // and sets the clamp through the socket's own setsockopt.
        let r = unsafe { glue::rsiw_sock_reserve_rcv_window(self.ptr.as_ptr(), win) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(r as u32)
    }

    /// Current TCP state.
    pub fn state(&self) -> TcpState {
        // SAFETY: live socket.
        TcpState::from_raw(unsafe { glue::rsiw_sk_state(self.ptr.as_ptr()) })
    }

    /// Routes the socket's upcalls to `h` until `detach` (`EBUSY` if a
    /// handler is attached already).
    pub fn attach<T: SockEvents>(&self, h: Arc<T>) -> Result {
        let ctx = Arc::into_raw(h).cast_mut().cast::<kernel::ffi::c_void>();
        // SAFETY: live socket; the glue keeps `ctx` until it calls
        // `release_cb::<T>` from `detach`.
        let r =
            unsafe { glue::rsiw_sk_attach(self.ptr.as_ptr(), ctx, event_cb::<T>, release_cb::<T>) };
        if r != 0 {
            // SAFETY: not attached: the reference is still ours.
            drop(unsafe { Arc::from_raw(ctx.cast::<T>()) });
            return Err(Error::from_errno(r));
        }
        Ok(())
    }

    /// Restores the original upcalls and drops the handler's reference.
    pub fn detach(&self) {
        // SAFETY: live socket; the glue restores the callbacks under the
        // callback lock and only then releases the handler.
        unsafe { glue::rsiw_sk_detach(self.ptr.as_ptr()) };
    }

    /// Locks the socket as a `data_ready` upcall runs (from process
    /// context) and gives `f` its receive queue: for data queued before a
    /// handler change, which may wait without a new upcall. `EINVAL` for
    /// a socket without its `sock` (never, while it is live).
    pub fn with_rx<R>(&self, f: impl FnOnce(&mut SockRx<'_>) -> R) -> Result<R> {
        // SAFETY: live socket; locks it until `rsiw_sk_unlock` below.
        let sk = unsafe { glue::rsiw_sk_lock(self.ptr.as_ptr()) };
        // INVARIANT: `sk` stays locked until after `f` returned.
        let r = NonNull::new(sk).map(|sk| {
            f(&mut SockRx {
                sk,
                _p: core::marker::PhantomData,
            })
        });
        // SAFETY: locked above.
        unsafe { glue::rsiw_sk_unlock(self.ptr.as_ptr()) };
        r.ok_or(EINVAL)
    }

    /// Sends the concatenation of `pieces` without blocking; returns how
    /// many octets TCP took (`EAGAIN` when none). Process context.
    pub fn send(&self, pieces: &[&[u8]], more: bool) -> Result<usize> {
        self.lock_send().send(pieces, more)
    }

    /// Locks the socket for sending (`lock_sock`) until the guard is
    /// dropped: what the guard's sends carry is copied into TCP's buffers
    /// before anything received meanwhile is processed (the receive
    /// backlog runs when the lock goes, `release_sock`). Process context.
    pub fn lock_send(&self) -> SendLock<'_> {
        // SAFETY: live socket; `SendLock::drop` unlocks it.
        unsafe { glue::rsiw_sk_lock(self.ptr.as_ptr()) };
        // INVARIANT: locked above, unlocked only by the guard's drop.
        SendLock { sock: self }
    }

    /// Pushes what TCP holds back after a [`send`](Self::send) with `more`.
    /// Process context (takes the socket lock).
    pub fn push(&self) {
        // SAFETY: live socket with a `sock`; clearing TCP_CORK (never set
        // here) pushes the pending frames, as a send without MSG_MORE would.
        unsafe { bindings::tcp_sock_set_cork((*self.ptr.as_ptr()).sk, false) };
    }

    /// Receives up to `buf.len()` octets without blocking (`EAGAIN` when
    /// none are queued, 0 at end of stream).
    pub fn recv(&self, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: live socket; `buf` is writable.
        let r =
            unsafe { glue::rsiw_sock_recv(self.ptr.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(r as usize)
    }

    /// Shuts the connection down in both directions (a FIN).
    pub fn shutdown(&self) {
        // SAFETY: live socket.
        unsafe {
            bindings::kernel_sock_shutdown(self.ptr.as_ptr(), bindings::sock_shutdown_cmd_SHUT_RDWR)
        };
    }
}

/// A socket locked for sending ([`Socket::lock_send`]).
///
/// # Invariants
///
/// The socket is locked (`lock_sock`) for as long as the guard lives.
pub struct SendLock<'a> {
    sock: &'a Socket,
}

impl SendLock<'_> {
    /// Sends the concatenation of `pieces` without blocking; returns how
    /// many octets TCP took (`EAGAIN` when none). TCP has copied them when
    /// this returns.
    pub fn send(&self, pieces: &[&[u8]], more: bool) -> Result<usize> {
        // Only the kvecs used are written (the array is on the path of
        // every message; zeroing all of it costs more than filling it).
        let mut vec = [core::mem::MaybeUninit::<bindings::kvec>::uninit(); 32];
        if pieces.len() > vec.len() {
            return Err(EINVAL);
        }
        let mut len = 0;
        for (v, p) in vec.iter_mut().zip(pieces) {
            v.write(bindings::kvec {
                iov_base: p.as_ptr().cast_mut().cast(),
                iov_len: p.len(),
            });
            len += p.len();
        }
        // SAFETY: live socket, locked by the type invariant; the first
        // `pieces.len()` kvecs are initialised (the loop above) and TCP
        // reads no others; they describe readable buffers that outlive the
        // call (TCP copies them).
        let r = unsafe {
            glue::rsiw_sock_send_locked(
                self.sock.ptr.as_ptr(),
                vec.as_mut_ptr().cast::<bindings::kvec>(),
                pieces.len(),
                len,
                more,
            )
        };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(r as usize)
    }
}

impl Drop for SendLock<'_> {
    fn drop(&mut self) {
        // SAFETY: locked by the type invariant; processes the receive
        // backlog and unlocks.
        unsafe { glue::rsiw_sk_unlock(self.sock.ptr.as_ptr()) };
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.detach();
        // SAFETY: we own the socket; nothing uses it after this.
        unsafe { bindings::sock_release(self.ptr.as_ptr()) };
    }
}
