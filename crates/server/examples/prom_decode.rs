//! Times the remote-write decoder alone (snappy, protobuf, rows per metric) over a capture of
//! `tempora bench capture`: `cargo run --release -p tempora-server --example prom_decode FILE`.

use std::io::Read;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a capture file");
    let mut f = std::io::BufReader::new(std::fs::File::open(&path).expect("open"));
    let mut magic = [0u8; 14];
    f.read_exact(&mut magic).expect("header");
    let mut bodies = Vec::new();
    let mut head = [0u8; 8];
    while f.read_exact(&mut head).is_ok() {
        let len = u32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
        let mut b = vec![0u8; len];
        f.read_exact(&mut b).expect("body");
        bodies.push(b);
    }
    let limits = tempora_server::prom::write::PromLimits {
        max_decoded_bytes: 64 << 20,
        max_rows_bytes: 1 << 30,
    };
    for round in 0..3 {
        let t = Instant::now();
        let mut samples = 0;
        for b in &bodies {
            let d = tempora_server::prom::write::decode_body(b, limits).expect("decodes");
            samples += d.samples;
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "round {round}: {} requests, {samples} samples in {s:.3} s: {:.0} samples/s ({:.2} µs/sample)",
            bodies.len(),
            samples as f64 / s,
            s * 1e6 / samples as f64
        );
    }
}
