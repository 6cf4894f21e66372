//! Protocol buffers read and written by hand: the few fixed messages of Prometheus's remote
//! write and read (prometheus/prompb `types.proto`, `remote.proto`), without copying what is
//! read. A reader checks every length against the bytes present and names the byte where a
//! message goes wrong; unknown fields are skipped, as protobuf requires.

pub const VARINT: u8 = 0;
pub const I64: u8 = 1;
pub const LEN: u8 = 2;
pub const I32: u8 = 5;

/// Reads one message's fields; every length is checked against the bytes present.
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn err(&self, what: &str) -> String {
        format!("invalid protobuf at byte {}: {what}", self.pos)
    }

    /// The next field's number and wire type, or `None` at the end.
    pub fn key(&mut self) -> Result<Option<(u64, u8)>, String> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let k = self.varint()?;
        Ok(Some((k >> 3, (k & 7) as u8)))
    }

    pub fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| self.err("truncated varint"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| self.err(&format!("a field of {n} bytes runs past the end")))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| self.err("length overflows"))?)
    }

    pub fn fixed64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn skip(&mut self, wire: u8) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(|_| ()),
            I64 => self.take(8).map(|_| ()),
            LEN => self.bytes().map(|_| ()),
            I32 => self.take(4).map(|_| ()),
            w => Err(self.err(&format!("wire type {w}"))),
        }
    }
}

/// Appends `v` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `n` as length-delimited bytes.
pub fn put_bytes(out: &mut Vec<u8>, n: u64, body: &[u8]) {
    put_varint(out, n << 3 | u64::from(LEN));
    put_varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// One series to encode: its labels and its (value, millisecond time) samples.
pub type Series<'a> = (Vec<(&'a str, &'a str)>, Vec<(f64, i64)>);

/// A `TimeSeries` message: labels (field 1) and samples (field 2).
pub fn put_series(out: &mut Vec<u8>, labels: &[(&str, &str)], samples: &[(f64, i64)]) {
    let mut l = Vec::new();
    for (k, v) in labels {
        l.clear();
        put_bytes(&mut l, 1, k.as_bytes());
        put_bytes(&mut l, 2, v.as_bytes());
        put_bytes(out, 1, &l);
    }
    let mut s = Vec::with_capacity(20);
    for (v, t) in samples {
        s.clear();
        s.push(1 << 3 | I64);
        s.extend_from_slice(&v.to_bits().to_le_bytes());
        put_varint(&mut s, 2 << 3 | u64::from(VARINT));
        put_varint(&mut s, *t as u64);
        put_bytes(out, 2, &s);
    }
}

/// A `WriteRequest` encoder for tests and benchmarks.
pub fn encode(series: &[Series]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ts = Vec::new();
    for (labels, samples) in series {
        ts.clear();
        put_series(&mut ts, labels, samples);
        put_bytes(&mut out, 1, &ts);
    }
    out
}

/// A series decoded whole: labels and (value, millisecond time) samples.
pub type OwnedSeries = (Vec<(String, String)>, Vec<(f64, i64)>);

/// Decodes a `WriteRequest` into its series (for tools and tests; the server's write path
/// reads without copying, in [`super::write`]).
pub fn decode_series(buf: &[u8]) -> Result<Vec<OwnedSeries>, String> {
    let mut out = Vec::new();
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        if (field, wire) != (1, LEN) {
            r.skip(wire)?;
            continue;
        }
        let mut ts = Reader {
            buf: r.bytes()?,
            pos: 0,
        };
        let (mut labels, mut samples) = (Vec::new(), Vec::new());
        while let Some((field, wire)) = ts.key()? {
            match (field, wire) {
                (1, LEN) => {
                    let mut l = Reader {
                        buf: ts.bytes()?,
                        pos: 0,
                    };
                    let (mut k, mut v) = (String::new(), String::new());
                    while let Some((f, w)) = l.key()? {
                        match (f, w) {
                            (1, LEN) => k = String::from_utf8_lossy(l.bytes()?).into_owned(),
                            (2, LEN) => v = String::from_utf8_lossy(l.bytes()?).into_owned(),
                            _ => l.skip(w)?,
                        }
                    }
                    labels.push((k, v));
                }
                (2, LEN) => {
                    let mut smp = Reader {
                        buf: ts.bytes()?,
                        pos: 0,
                    };
                    let (mut v, mut t) = (0.0, 0i64);
                    while let Some((f, w)) = smp.key()? {
                        match (f, w) {
                            (1, I64) => v = f64::from_bits(smp.fixed64()?),
                            (2, VARINT) => t = smp.varint()? as i64,
                            _ => smp.skip(w)?,
                        }
                    }
                    samples.push((v, t));
                }
                _ => ts.skip(wire)?,
            }
        }
        out.push((labels, samples));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_series_decode_back() {
        let series: Vec<Series> = vec![
            (
                vec![("__name__", "up"), ("job", "a")],
                vec![
                    (1.0, 1_700_000_000_000),
                    (f64::from_bits(0x7ff0_0000_0000_0002), 5),
                ],
            ),
            (vec![("__name__", "x")], vec![]),
        ];
        let got = decode_series(&encode(&series)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].0,
            vec![
                ("__name__".to_string(), "up".to_string()),
                ("job".into(), "a".into())
            ]
        );
        assert_eq!(got[0].1[0], (1.0, 1_700_000_000_000));
        assert_eq!(
            got[0].1[1].0.to_bits(),
            0x7ff0_0000_0000_0002,
            "a staleness marker keeps its bits"
        );
        let body = encode(&series);
        for cut in 0..body.len() {
            let _ = decode_series(&body[..cut]);
        }
    }
}
