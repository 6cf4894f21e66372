//! A short, seeded run of every fuzz target on stable (the long runs are libFuzzer's, in
//! `fuzz/`, docs/fuzzing.md): each target gets valid inputs made by the real encoders and
//! writers, and thousands of mutations of them (bit flips, cuts, inserted and repeated
//! bytes, length fields set to extremes). Passing means no panic; a call taking seconds
//! would be a hang and fails too.

use std::time::{Duration, Instant};

/// xorshift64*: a fixed sequence, so a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => b.truncate(rng.below(b.len())),
            2 => {
                let i = rng.below(b.len() + 1);
                b.insert(i, rng.next() as u8);
            }
            3 if !b.is_empty() => {
                let (i, n) = (rng.below(b.len()), 1 + rng.below(16));
                let piece: Vec<u8> = b[i..(i + n).min(b.len())].to_vec();
                b.splice(i..i, piece);
            }
            4 if b.len() >= 4 => {
                // A length field set to an extreme.
                let i = rng.below(b.len() - 3);
                let v = [u32::MAX, 0, 1 << 31, 0x7fff_ffff][rng.below(4)];
                b[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => b.push(rng.next() as u8),
        }
    }
    b
}

fn startup_message() -> Vec<u8> {
    let body = b"\x00\x03\x00\x00user\0tempora\0database\0db\0\0";
    let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

fn parse_message(sql: &str) -> Vec<u8> {
    let mut body = b"s1\0".to_vec();
    body.extend_from_slice(sql.as_bytes());
    body.extend_from_slice(b"\0\0\0");
    let mut m = vec![b'P'];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let sql = [
        "SELECT host, max(v) FROM cpu WHERE time > now() - INTERVAL '1 hour' SAMPLE BY 1m FILL(PREV)",
        "SELECT * FROM db.public.cpu LATEST ON time PARTITION BY host",
        "INSERT INTO cpu SELECT * FROM o.public.cpu; DELETE FROM cpu WHERE v > $1",
        "CREATE TABLE t (host TAG, v DOUBLE) WITH (layout = 'dense', interval = '1s')",
        "CREATE TOKEN g WITH (read = 'a,b', admin = false); DROP TOKEN IF EXISTS g",
        "[1, \"two\", null, 3.5, true]",
    ];
    match target {
        "lineproto" => vec![
            b"cpu,host=a,region=eu usage=1.5,n=3i,s=\"x y\",ok=t 1700000000000000000\n\
              mem,host=b free=2u\n# comment\n"
                .to_vec(),
        ],
        "csv_import" => vec![
            b"time,host,v,s\n2023-01-01T00:00:00Z,a,1.5,x\n1700000000000000000,b,2,\"q,\"\"\"\n"
                .to_vec(),
        ],
        "sql" => sql.iter().map(|s| s.as_bytes().to_vec()).collect(),
        "influxql" => [
            r#"SELECT mean("usage") FROM "cpu" WHERE ("host" =~ /^a$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(1m), "host" fill(null)"#,
            "SELECT usage, n FROM cpu WHERE region != '' ORDER BY time DESC LIMIT 5; SHOW TAG VALUES FROM cpu WITH KEY IN (host)",
            "SELECT max(usage) * 2 AS m, count(distinct(n)) FROM /c.u/ WHERE time > now() - 1h GROUP BY *",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
        "prometheus" => {
            let mut v: Vec<Vec<u8>> = [
                r#"sum by (job) (rate(up{job=~"a.*", instance!=""}[5m] offset 1m))"#,
                "histogram_quantile(0.9, sum by (le) (rate(latency_bucket[5m]))) > bool 0.5",
                r#"topk(3, cpu_usage_user) / on(host) group_left cpu_usage_system or absent(x{a="b"})"#,
                r#"label_replace(up, "h", "$1", "instance", "(.*):.*") @ 1700000000 + time()"#,
            ]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
            v.push(tempora_server::prom::proto::encode(&[(
                vec![("__name__", "up"), ("job", "a")],
                vec![(1.0, 1_700_000_000_000)],
            )]));
            v
        }
        "pg_messages" => {
            let mut stream = startup_message();
            stream.extend(parse_message(sql[0]));
            vec![
                stream,
                b"n,,n=,r=rOprNGfwEbeRWgbNEkqO".to_vec(),
                b"c=biws,r=rOprNGfwEbeRWgbNEkqOserver,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
                    .to_vec(),
            ]
        }
        "wal" => vec![tempora_wal::fuzzing::sample_segment()],
        "manifest" => tempora_storage::files::manifest::fuzzing::samples(),
        "index" => {
            let mut idx = tempora_index::SeriesIndex::default();
            let series: [&[(&str, &str)]; 3] = [
                &[("host", "a")],
                &[("host", "b")],
                &[("host", "a"), ("region", "eu")],
            ];
            for tags in series {
                let mut key = Vec::new();
                tempora_model::encode_series_key(tags, &mut key).unwrap();
                idx.get_or_insert(&key).unwrap();
            }
            vec![idx.encode(), idx.encode_uncompressed()]
        }
        "data_footer" => vec![b"PAR1\x15\x04\x15\x00PAR1".to_vec()],
        "small_formats" => {
            let mut tokens = vec![0u8];
            tokens.extend(tempora_server::auth::store::encode(&[]));
            vec![tokens, vec![1, 0, 0, 0, 0], vec![2, 1, 2, 3], vec![3, b'T']]
        }
        other => panic!("no seeds for {other}"),
    }
}

#[test]
fn every_target_survives_its_seeds_and_their_mutations() {
    const MUTATIONS: usize = 3_000;
    for (name, target) in tempora_fuzzing::TARGETS {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
        let seeds = seeds(name);
        let mut slowest = Duration::ZERO;
        let mut inputs = 0;
        for seed in &seeds {
            for i in 0..=MUTATIONS {
                let input = if i == 0 {
                    seed.clone()
                } else {
                    mutate(seed, &mut rng)
                };
                let started = Instant::now();
                target(&input);
                slowest = slowest.max(started.elapsed());
                inputs += 1;
            }
        }
        assert!(
            slowest < Duration::from_secs(5),
            "{name}: one input took {slowest:?} (a hang?)"
        );
        println!("{name}: {inputs} inputs, slowest {slowest:?}");
    }
}
