// SPDX-License-Identifier: GPL-2.0

//! The transmit engine: takes send queue elements and turns them into
//! FPDUs on the QP's connection. The connection manager and the data path
//! are not in yet: a QP cannot reach RTS, so there is nothing to send.

use kernel::sync::Arc;

use crate::qp::Qp;

/// Work was posted to `qp`'s send queue: start transmitting.
pub fn kick(_qp: &Arc<Qp>) {}
