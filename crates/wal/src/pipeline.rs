//! Ordered parallel map: load items on worker threads, consume them in index order.

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use crossbeam::channel::{Receiver, Sender, bounded, unbounded};

type Loaded<T> = (usize, thread::Result<T>);

/// Calls `load(i)` for `i in 0..n` on `threads` worker threads and `consume(i, item)` on the
/// calling thread in increasing `i`. At most `window` loaded items exist at once (memory
/// bound). The first error of `consume` stops the workers and is returned. A panic in `load`
/// is resumed on the calling thread.
pub(crate) fn ordered<T, E>(
    n: usize,
    threads: usize,
    window: usize,
    load: impl Fn(usize) -> T + Sync,
    mut consume: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
{
    if n == 0 {
        return Ok(());
    }
    let threads = threads.clamp(1, n);
    let window = window.max(threads);
    let next = AtomicUsize::new(0);
    // A worker takes a token before claiming an index; the consumer returns it after
    // consuming. Indices are claimed in order, so the next one wanted is always claimed by
    // a token holder and the pipeline cannot stall.
    let (tok_tx, tok_rx) = bounded::<()>(window);
    for _ in 0..window {
        tok_tx
            .send(())
            .expect("the token channel has room for every token");
    }
    let (res_tx, res_rx) = unbounded::<Loaded<T>>();
    thread::scope(|s| {
        for _ in 0..threads {
            let (tok_rx, res_tx, next, load) = (tok_rx.clone(), res_tx.clone(), &next, &load);
            s.spawn(move || {
                while tok_rx.recv().is_ok() {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        break;
                    }
                    let item = panic::catch_unwind(AssertUnwindSafe(|| load(i)));
                    if res_tx.send((i, item)).is_err() {
                        break;
                    }
                }
            });
        }
        drop((tok_rx, res_tx));
        // Owned here so that returning (or unwinding) drops them, which ends the workers
        // before the scope joins them.
        let (tok_tx, res_rx) = (tok_tx, res_rx);
        consume_in_order(n, &res_rx, &tok_tx, &mut consume)
    })
}

fn consume_in_order<T, E>(
    n: usize,
    results: &Receiver<Loaded<T>>,
    tokens: &Sender<()>,
    consume: &mut impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E> {
    let mut pending = BTreeMap::new();
    for want in 0..n {
        let item = loop {
            if let Some(item) = pending.remove(&want) {
                break item;
            }
            let (i, item) = results
                .recv()
                .expect("a live worker holds every index not yet consumed");
            pending.insert(i, item);
        };
        let item = item.unwrap_or_else(|p| panic::resume_unwind(p));
        consume(want, item)?;
        // Never blocks: at most `window` tokens exist.
        let _ = tokens.send(());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn consumes_in_order_with_any_thread_count() {
        for threads in [0, 1, 2, 3, 8] {
            for n in [0, 1, 2, 7, 50] {
                let mut got = Vec::new();
                let r: Result<(), ()> = ordered(
                    n,
                    threads,
                    2,
                    |i| {
                        // Make later items finish first sometimes.
                        if i % 3 == 0 {
                            thread::sleep(std::time::Duration::from_micros(200));
                        }
                        i * 10
                    },
                    |i, v| {
                        got.push((i, v));
                        Ok(())
                    },
                );
                r.unwrap();
                let want: Vec<_> = (0..n).map(|i| (i, i * 10)).collect();
                assert_eq!(got, want, "threads {threads} n {n}");
            }
        }
    }

    #[test]
    fn stops_at_first_error_and_bounds_loaded_items() {
        let loaded = AtomicUsize::new(0);
        let r = ordered(
            1000,
            2,
            3,
            |i| {
                loaded.fetch_add(1, Ordering::SeqCst);
                i
            },
            |i, _| if i == 5 { Err(i) } else { Ok(()) },
        );
        assert_eq!(r, Err(5));
        assert!(
            loaded.load(Ordering::SeqCst) <= 5 + 1 + 3,
            "window bounds read-ahead"
        );
    }

    #[test]
    fn worker_panic_reaches_the_caller() {
        let r = panic::catch_unwind(|| {
            let _ = ordered(
                10,
                2,
                2,
                |i| {
                    if i == 4 {
                        panic!("boom");
                    }
                    i
                },
                |_, _| Ok::<(), ()>(()),
            );
        });
        assert!(r.is_err());
    }
}
