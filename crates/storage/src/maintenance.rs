//! The maintenance thread: runs retention and compaction every `maintenance_interval`, off
//! the write path, until stopped.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam::channel::{Sender, bounded};

use crate::engine::Shared;

pub(crate) struct MaintenanceHandle {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl MaintenanceHandle {
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

pub(crate) fn start(shared: Arc<Shared>) -> MaintenanceHandle {
    let (stop, rx) = bounded::<()>(1);
    let every = shared.opts.maintenance_interval;
    let thread = std::thread::Builder::new()
        .name("tempora-maintenance".into())
        .spawn(move || {
            while rx.recv_timeout(every).is_err_and(|e| e.is_timeout()) {
                if let Err(e) = crate::retention::enforce(&shared) {
                    tracing::warn!(error = %e, "retention failed; will retry");
                }
                if let Err(e) = crate::compaction::compact_all(&shared) {
                    tracing::warn!(error = %e, "compaction failed; will retry");
                }
            }
        })
        .expect("spawn maintenance thread");
    MaintenanceHandle { stop, thread }
}
