//! The ingestion gate (MatrixGate, seeds 000 §2 and §4.2): receivers parse request bodies in
//! parallel off the async runtime and hand the parsed micro-batches through one bounded
//! lock-free queue to submitter threads, which pass them to the engine's region workers.
//!
//! Invariants:
//! - The queue holds at most `queue_capacity` parsed request bodies (each one job of all its
//!   batches, whatever tables they are of). A request that finds the queue full is refused
//!   whole with [`GateError::QueueFull`] (HTTP 503 with `Retry-After`) before anything of it
//!   is queued: nothing is buffered without bound (the bytes a request holds are bounded
//!   before it is parsed, by the server's ingest buffer).
//! - A bad line never blocks a good one: parse errors are collected per line, and the good
//!   lines of the same body are still written.
//! - Parsing and engine writes never run on the async runtime's threads.
//! - A submitter takes every job waiting (up to [`MAX_BATCHES_PER_SUBMIT`] batches) and writes
//!   their batches with one engine call, whose workers commit them together: a request of many
//!   tables (a Prometheus remote write holds hundreds of metrics) costs a few WAL commits, not
//!   one each.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam::channel::{Receiver, Sender, TrySendError, bounded};
use parking_lot::Mutex;
use tempora_lineproto::{LineError, ParseOptions, ParsedBody};
use tempora_model::RowBatch;
use tempora_storage::{Engine, StorageError, WriteOutcome};

/// Most queued batches one submitter hands the engine in one call.
pub const MAX_BATCHES_PER_SUBMIT: usize = 256;

/// Limits of the gate.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Parsed request bodies (jobs of all their batches) waiting for the engine, at most.
    pub queue_capacity: usize,
    /// Threads that take batches from the queue and write them.
    pub submitters: usize,
    /// Bodies larger than this are parsed on all cores (split at line boundaries).
    pub parallel_parse_bytes: usize,
    /// Threads used to parse one large body.
    pub parse_threads: usize,
}

impl Default for GateOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            queue_capacity: 1024,
            submitters: 4 * cores,
            parallel_parse_bytes: 1 << 20,
            parse_threads: cores,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("the ingest queue is full ({capacity} requests); retry later")]
    QueueFull { capacity: usize },
    #[error("the gate is shut down")]
    ShutDown,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A rejected line: 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub line: usize,
    pub reason: String,
}

/// What a body's write came to.
#[derive(Debug, Default)]
pub struct Ingested {
    pub rows: usize,
    pub rejected: Vec<Rejected>,
}

/// One request's batches and where their outcomes go (one per batch, in order).
struct Job {
    batches: Vec<RowBatch>,
    reply: tokio::sync::oneshot::Sender<Vec<Result<WriteOutcome, StorageError>>>,
}

/// Counters the server exports.
#[derive(Debug, Default)]
pub struct GateMetrics {
    pub bodies: AtomicU64,
    pub body_bytes: AtomicU64,
    pub rows: AtomicU64,
    pub rejected_lines: AtomicU64,
    pub queue_full: AtomicU64,
}

pub struct Gate {
    opts: GateOptions,
    /// `None` once shut down.
    tx: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    pub metrics: Arc<GateMetrics>,
}

impl Gate {
    pub fn start(engine: Arc<Engine>, opts: GateOptions) -> Self {
        assert!(
            opts.queue_capacity > 0 && opts.submitters > 0,
            "gate limits must be positive"
        );
        let (tx, rx) = bounded::<Job>(opts.queue_capacity);
        let threads = (0..opts.submitters)
            .map(|i| {
                let (rx, engine): (Receiver<Job>, _) = (rx.clone(), engine.clone());
                std::thread::Builder::new()
                    .name(format!("tempora-gate-{i}"))
                    .spawn(move || {
                        // Micro-batches: whatever is queued (up to a limit) goes to the engine
                        // in one call, so its workers commit the batches of many tables and
                        // requests with one WAL commit.
                        while let Ok(first) = rx.recv() {
                            let mut n = first.batches.len();
                            let mut jobs = vec![first];
                            while n < MAX_BATCHES_PER_SUBMIT {
                                match rx.try_recv() {
                                    Ok(j) => {
                                        n += j.batches.len();
                                        jobs.push(j);
                                    }
                                    Err(_) => break,
                                }
                            }
                            let sizes: Vec<usize> = jobs.iter().map(|j| j.batches.len()).collect();
                            let (batches, replies): (Vec<Vec<RowBatch>>, Vec<_>) =
                                jobs.into_iter().map(|j| (j.batches, j.reply)).unzip();
                            let mut outcomes = engine
                                .write_many(batches.into_iter().flatten().collect())
                                .into_iter();
                            for (reply, k) in replies.into_iter().zip(sizes) {
                                let _ = reply.send(outcomes.by_ref().take(k).collect());
                            }
                        }
                    })
                    .expect("spawn gate thread")
            })
            .collect();
        Self {
            opts,
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
            metrics: Arc::default(),
        }
    }

    /// Batches waiting now.
    pub fn queue_depth(&self) -> usize {
        self.tx.lock().as_ref().map_or(0, |t| t.len())
    }

    pub fn capacity(&self) -> usize {
        self.opts.queue_capacity
    }

    /// Parses a body (blocking; call it off the async runtime).
    pub fn parse(&self, body: &[u8], opts: &ParseOptions) -> ParsedBody {
        if body.len() < self.opts.parallel_parse_bytes || self.opts.parse_threads < 2 {
            return tempora_lineproto::parse(body, opts);
        }
        let chunks = tempora_lineproto::split_chunks(body, self.opts.parse_threads);
        let parts: Vec<ParsedBody> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .iter()
                .map(|(first, chunk)| {
                    s.spawn(move || tempora_lineproto::parse_from_line(chunk, *first, opts))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("parse thread"))
                .collect()
        });
        let mut out = ParsedBody::default();
        for p in parts {
            out.rows += p.rows;
            out.errors.extend(p.errors);
            out.batches.extend(p.batches);
            out.line_numbers.extend(p.line_numbers);
        }
        out
    }

    /// Queues the parsed batches and waits for the engine; returns the rows written and every
    /// rejected line (parse errors and rows the engine refused), sorted by line.
    pub async fn write(&self, parsed: ParsedBody) -> Result<Ingested, GateError> {
        self.metrics.bodies.fetch_add(1, Ordering::Relaxed);
        let ParsedBody {
            batches,
            errors,
            line_numbers,
            ..
        } = parsed;
        let tx = self.tx.lock().clone().ok_or(GateError::ShutDown)?;
        let (reply, rx) = tokio::sync::oneshot::channel();
        if batches.is_empty() {
            // Nothing parsed: only the line errors to answer.
            let _ = reply.send(Vec::new());
        } else if let Err(e) = tx.try_send(Job { batches, reply }) {
            match e {
                TrySendError::Full(_) => {
                    self.metrics.queue_full.fetch_add(1, Ordering::Relaxed);
                    return Err(GateError::QueueFull {
                        capacity: self.opts.queue_capacity,
                    });
                }
                TrySendError::Disconnected(_) => return Err(GateError::ShutDown),
            }
        }
        let outcomes = rx.await.map_err(|_| GateError::ShutDown)?;
        let mut out = Ingested::default();
        out.rejected.extend(
            errors
                .into_iter()
                .map(|LineError { line, message, .. }| Rejected {
                    line,
                    reason: message,
                }),
        );
        let mut first_err = None;
        for (outcome, lines) in outcomes.into_iter().zip(line_numbers) {
            match outcome {
                Ok(o) => {
                    out.rows += o.written;
                    out.rejected
                        .extend(o.rejected.into_iter().map(|r| Rejected {
                            line: lines[r.row],
                            reason: r.reason,
                        }));
                }
                Err(e) => first_err = first_err.or(Some(e)),
            }
        }
        if let Some(e) = first_err {
            return Err(e.into());
        }
        out.rejected.sort_by_key(|r| r.line);
        self.metrics
            .rows
            .fetch_add(out.rows as u64, Ordering::Relaxed);
        self.metrics
            .rejected_lines
            .fetch_add(out.rejected.len() as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// Stops the submitters once the queue is drained.
    pub fn shutdown(&self) {
        self.tx.lock().take();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}
