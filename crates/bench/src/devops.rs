//! TSBS `devops` data: nine measurements per host and time step (cpu, diskio, disk, kernel,
//! mem, net, nginx, postgresl, redis), each with the host's 10 tags, some with tags of their
//! own, and the field names TSBS's devops generator writes (`postgresl` is TSBS's spelling).
//!
//! Invariants: every host writes one row of every measurement at every step, in the order of
//! [`MEASUREMENTS`]; a host's own tags (disk serial, interface, server port) are drawn once
//! from the seed; the values follow [`crate::walk::Walk`]s (gauges for levels, counters for
//! totals), so totals never decrease.

use crate::tsbs::{FIELDS as CPU_FIELDS, Scale, TAG_KEYS, host_tags};
use crate::walk::{
    Field, Measurement, Rng, Rows, SeriesState, UseCase, counter, fgauge, gauge, source_series,
};

const fn cpu_fields() -> [Field; 10] {
    let mut out = [gauge("", 0.0, 100.0, 1.0); 10];
    let mut i = 0;
    while i < 10 {
        out[i] = gauge(CPU_FIELDS[i], 0.0, 100.0, 1.0);
        i += 1;
    }
    out
}

const CPU: [Field; 10] = cpu_fields();
const GB: f64 = 1e9;

/// The measurements, in the order each host writes them.
pub const MEASUREMENTS: [Measurement; 9] = [
    Measurement {
        name: "cpu",
        extra_tags: &[],
        fields: &CPU,
    },
    Measurement {
        name: "diskio",
        extra_tags: &["serial"],
        fields: &[
            counter("reads", 100.0),
            counter("writes", 100.0),
            counter("read_bytes", 4e5),
            counter("write_bytes", 4e5),
            counter("read_time", 50.0),
            counter("write_time", 50.0),
            counter("io_time", 80.0),
        ],
    },
    Measurement {
        name: "disk",
        extra_tags: &["path", "fstype"],
        fields: &[
            gauge("total", 500.0 * GB, 500.0 * GB, 0.0),
            gauge("free", 0.0, 500.0 * GB, 1e6),
            gauge("used", 0.0, 500.0 * GB, 1e6),
            gauge("used_percent", 0.0, 100.0, 1.0),
            gauge("inodes_total", 3e7, 3e7, 0.0),
            gauge("inodes_free", 0.0, 3e7, 1000.0),
            gauge("inodes_used", 0.0, 3e7, 1000.0),
        ],
    },
    Measurement {
        name: "kernel",
        extra_tags: &[],
        fields: &[
            gauge("boot_time", 1.45e9, 1.45e9, 0.0),
            counter("interrupts", 2000.0),
            counter("context_switches", 5000.0),
            counter("processes_forked", 20.0),
            counter("disk_pages_in", 200.0),
            counter("disk_pages_out", 200.0),
        ],
    },
    Measurement {
        name: "mem",
        extra_tags: &[],
        fields: &[
            gauge("total", 32.0 * GB, 32.0 * GB, 0.0),
            gauge("available", 0.0, 32.0 * GB, 1e7),
            gauge("used", 0.0, 32.0 * GB, 1e7),
            gauge("free", 0.0, 32.0 * GB, 1e7),
            gauge("cached", 0.0, 32.0 * GB, 1e7),
            gauge("buffered", 0.0, 32.0 * GB, 1e7),
            fgauge("used_percent", 0.0, 100.0, 0.5),
            fgauge("available_percent", 0.0, 100.0, 0.5),
            fgauge("buffered_percent", 0.0, 100.0, 0.5),
        ],
    },
    Measurement {
        name: "net",
        extra_tags: &["interface"],
        fields: &[
            counter("bytes_sent", 1e5),
            counter("bytes_recv", 1e5),
            counter("packets_sent", 100.0),
            counter("packets_recv", 100.0),
            counter("err_in", 1.2),
            counter("err_out", 1.2),
            counter("drop_in", 1.2),
            counter("drop_out", 1.2),
        ],
    },
    Measurement {
        name: "nginx",
        extra_tags: &["port", "server"],
        fields: &[
            counter("accepts", 100.0),
            gauge("active", 0.0, 100.0, 5.0),
            counter("handled", 100.0),
            gauge("reading", 0.0, 100.0, 5.0),
            counter("requests", 300.0),
            gauge("waiting", 0.0, 100.0, 5.0),
            gauge("writing", 0.0, 100.0, 5.0),
        ],
    },
    Measurement {
        name: "postgresl",
        extra_tags: &[],
        fields: &[
            gauge("numbackends", 0.0, 1000.0, 10.0),
            counter("xact_commit", 1000.0),
            counter("xact_rollback", 10.0),
            counter("blks_read", 1000.0),
            counter("blks_hit", 1000.0),
            counter("tup_returned", 1000.0),
            counter("tup_fetched", 1000.0),
            counter("tup_inserted", 1000.0),
            counter("tup_updated", 1000.0),
            counter("tup_deleted", 1000.0),
            counter("conflicts", 1.2),
            counter("temp_files", 10.0),
            counter("temp_bytes", 1e6),
            counter("deadlocks", 1.2),
            counter("blk_read_time", 100.0),
            counter("blk_write_time", 100.0),
        ],
    },
    Measurement {
        name: "redis",
        extra_tags: &["port", "server"],
        fields: &[
            counter("uptime_in_seconds", 10.0),
            counter("total_connections_received", 10.0),
            counter("expired_keys", 100.0),
            counter("evicted_keys", 100.0),
            counter("keyspace_hits", 1000.0),
            counter("keyspace_misses", 1000.0),
            gauge("instantaneous_ops_per_sec", 0.0, 10000.0, 100.0),
            fgauge("instantaneous_input_kbps", 0.0, 10000.0, 100.0),
            fgauge("instantaneous_output_kbps", 0.0, 10000.0, 100.0),
            gauge("connected_clients", 0.0, 10000.0, 50.0),
            gauge("used_memory", 0.0, 8.0 * GB, 1e6),
            gauge("used_memory_rss", 0.0, 8.0 * GB, 1e6),
            gauge("used_memory_peak", 0.0, 8.0 * GB, 1e6),
            gauge("used_memory_lua", 0.0, 1e7, 1e3),
            counter("rdb_changes_since_last_save", 100.0),
            counter("sync_full", 1.2),
            counter("sync_partial_ok", 1.2),
            counter("sync_partial_err", 1.2),
            gauge("pubsub_channels", 0.0, 100.0, 1.0),
            gauge("pubsub_patterns", 0.0, 100.0, 1.0),
            gauge("latest_fork_usec", 0.0, 1e6, 100.0),
            gauge("connected_slaves", 0.0, 10.0, 1.0),
            counter("master_repl_offset", 1e4),
            gauge("repl_backlog_active", 0.0, 1.0, 1.0),
            gauge("repl_backlog_size", 0.0, 1e6, 1e3),
            gauge("repl_backlog_histlen", 0.0, 1e6, 1e3),
            fgauge("mem_fragmentation_ratio", 0.0, 100.0, 0.1),
            fgauge("used_cpu_sys", 0.0, 1e4, 1.0),
            fgauge("used_cpu_user", 0.0, 1e4, 1.0),
            fgauge("used_cpu_sys_children", 0.0, 1e4, 1.0),
            fgauge("used_cpu_user_children", 0.0, 1e4, 1.0),
        ],
    },
];

/// Streams devops rows, one time step (every host, every measurement) at a time.
pub struct Devops {
    scale: Scale,
    rng: Rng,
    /// Per host, per measurement: the series and its current values.
    hosts: Vec<Vec<SeriesState>>,
}

impl Devops {
    pub fn new(scale: Scale) -> Self {
        assert!(
            scale.hosts > 0 && scale.interval_ns > 0,
            "scale must be positive"
        );
        let mut rng = Rng::new(scale.seed);
        let hosts = (0..scale.hosts)
            .map(|h| {
                let own = own_tags(h, &mut rng);
                source_series(&MEASUREMENTS, &mut rng, |ms| {
                    let mut tags: Vec<(&str, String)> =
                        TAG_KEYS.iter().copied().zip(host_tags(h)).collect();
                    for k in ms.extra_tags {
                        let v = own.iter().find(|(o, _)| o == k).expect("own tag");
                        tags.push((k, v.1.clone()));
                    }
                    tags
                })
            })
            .collect();
        Self { scale, rng, hosts }
    }
}

/// A host's own tags, drawn once: the values of every `extra_tags` key above.
fn own_tags(h: usize, rng: &mut Rng) -> Vec<(&'static str, String)> {
    vec![
        (
            "serial",
            format!(
                "{:03}-{:03}-{:03}",
                rng.below(1000),
                rng.below(1000),
                rng.below(1000)
            ),
        ),
        ("path", rng.pick(&["/", "/usr", "/var", "/home"]).into()),
        ("fstype", rng.pick(&["ext3", "ext4", "xfs", "btrfs"]).into()),
        ("interface", format!("eth{}", rng.below(4))),
        ("port", format!("{}", 6379 + rng.below(100))),
        ("server", format!("server_{h}")),
    ]
}

impl UseCase for Devops {
    fn measurements(&self) -> &'static [Measurement] {
        &MEASUREMENTS
    }

    fn tag_keys(&self, m: usize) -> Vec<&'static str> {
        TAG_KEYS
            .iter()
            .chain(MEASUREMENTS[m].extra_tags)
            .copied()
            .collect()
    }

    fn steps(&self) -> i64 {
        self.scale.steps
    }

    fn write_step(&mut self, step: i64, out: &mut Rows) {
        let t = self.scale.start_ns + step * self.scale.interval_ns;
        let mut values = Vec::new();
        for host in &mut self.hosts {
            for (series, v) in host.iter_mut() {
                let ms = &MEASUREMENTS[series.measurement];
                ms.advance(v, &mut self.rng);
                values.clear();
                values.extend(v.iter().map(|x| Some(*x)));
                out.push(series, ms.fields, &values, t);
            }
        }
    }
}
