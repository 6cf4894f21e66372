//! The model file (`docs/format/models.md`): a header — magic `TMPRMDL\0`, format version
//! (u16), body length (u32), CRC-32C of the body (u32), all little-endian — then the body, a
//! postcard encoding of [`TrainedModel`].
//!
//! Invariants:
//! - [`decode`] refuses a short file, a wrong magic or version, a length or checksum that does
//!   not match and a body that does not decode, each with an error naming the file and what
//!   was wrong; it never panics on any input.

use serde::Serialize;

use super::TrainedModel;
use crate::error::MlError;

pub const MAGIC: &[u8; 8] = b"TMPRMDL\0";
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_LEN: usize = 8 + 2 + 4 + 4;

/// The postcard encoding of `v`.
pub(crate) fn body<T: Serialize>(v: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_allocvec(v)
}

/// The file holding `m`.
pub fn encode(m: &TrainedModel) -> Vec<u8> {
    let body = body(m).expect("a model encodes");
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The model in file `path` holding `data`.
pub fn decode(path: &str, data: &[u8]) -> Result<TrainedModel, MlError> {
    let bad = |reason: String| MlError::CorruptModel {
        path: path.to_string(),
        reason,
    };
    if data.len() < HEADER_LEN {
        return Err(bad(format!(
            "{} bytes is shorter than the header",
            data.len()
        )));
    }
    if &data[..8] != MAGIC {
        return Err(bad("bad magic number (not a model file)".into()));
    }
    let version = u16::from_le_bytes([data[8], data[9]]);
    if version != FORMAT_VERSION {
        return Err(bad(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    let len = u32::from_le_bytes(data[10..14].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(data[14..18].try_into().expect("4 bytes"));
    let body = &data[HEADER_LEN..];
    if body.len() != len {
        return Err(bad(format!(
            "body is {} bytes, header says {len} (torn write?)",
            body.len()
        )));
    }
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch".into()));
    }
    postcard::from_bytes(body).map_err(|e| bad(format!("bad body: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::series::SeriesInput;
    use crate::model::{Budget, Input, ModelSpec, Progress, train_all};

    fn model(task: &str) -> TrainedModel {
        let spec = ModelSpec::from_options(&[("task".into(), task.into())]).unwrap();
        let series = (0..3)
            .map(|s| {
                let times = (0..200i64).map(|t| t * 1_000_000_000).collect();
                let values = (0..200)
                    .map(|t| ((t * 5 + s) % 11) as f64 + (t % 24) as f64)
                    .collect();
                (
                    vec![Some(format!("h{s}")), None],
                    SeriesInput { times, values },
                )
            })
            .collect();
        let input = Input {
            key_columns: vec!["host".into(), "dc".into()],
            value_column: "v".into(),
            series,
            rows: 600,
        };
        train_all(
            &spec,
            input,
            2,
            Budget { bytes: 1 << 30 },
            &Progress::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_model_round_trips() {
        for task in ["anomaly_detection", "forecasting"] {
            let m = model(task);
            assert_eq!(decode("m", &encode(&m)).unwrap(), m, "{task}");
        }
    }

    #[test]
    fn torn_and_damaged_files_are_refused_by_name() {
        let good = encode(&model("forecasting"));
        let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", vec![], "shorter than the header"),
            ("header only", good[..HEADER_LEN - 1].to_vec(), "shorter"),
            ("torn body", good[..good.len() - 7].to_vec(), "torn"),
        ];
        let mut magic = good.clone();
        magic[0] = b'X';
        cases.push(("magic", magic, "magic"));
        let mut version = good.clone();
        version[8] = 9;
        cases.push(("version", version, "version 9"));
        let mut flipped = good.clone();
        let mid = HEADER_LEN + (good.len() - HEADER_LEN) / 2;
        flipped[mid] ^= 0x40;
        cases.push(("flipped byte", flipped, "checksum"));
        for (name, bytes, want) in cases {
            let e = decode("models/db/m.tmdl", &bytes).unwrap_err().to_string();
            assert!(
                e.contains(want) && e.contains("models/db/m.tmdl"),
                "{name}: {e}"
            );
        }
        // Every truncation is refused, none panics.
        for n in 0..good.len() {
            assert!(decode("m", &good[..n]).is_err());
        }
    }
}
