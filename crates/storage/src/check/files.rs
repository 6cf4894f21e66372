//! Verifying the files the manifest names: data files (and their `.last` and rollup files)
//! decoded whole, index files decoded, and an index rebuilt from the keys of its region's
//! files.
//!
//! A data file is sound when it has the manifest's size and checksum (files written since
//! the checksum was recorded), its footer passes the Thrift bound and decodes, every page of
//! every column decodes, and it holds the manifest's row count. Files written before the
//! checksum can only be checked structurally: a flipped byte inside compressed values may
//! decode.

use std::collections::BTreeSet;

use arrow::array::{Array, BinaryArray};
use arrow::datatypes::DataType;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tempora_index::{IndexLimits, SeriesIndex};
use tempora_model::PRIMARY_KEY_COLUMN;

use crate::files::footer_guard;

/// Decodes a Parquet file whole; returns its rows and, when `keys` is given, adds its series
/// keys to it. The error names what failed.
pub(crate) fn decode_parquet(
    data: &Bytes,
    mut keys: Option<&mut BTreeSet<Vec<u8>>>,
) -> Result<u64, String> {
    footer_guard::check_file(data)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(data.clone())
        .map_err(|e| format!("its footer does not decode: {e}"))?
        .with_batch_size(8192)
        .build()
        .map_err(|e| format!("it cannot be read: {e}"))?;
    let mut rows = 0u64;
    for b in reader {
        let b = b.map_err(|e| format!("a page does not decode: {e}"))?;
        rows += b.num_rows() as u64;
        if let Some(keys) = keys.as_deref_mut() {
            let col = b
                .column_by_name(PRIMARY_KEY_COLUMN)
                .ok_or("it has no series key column")?;
            let col = arrow::compute::cast(col, &DataType::Binary)
                .map_err(|e| format!("its series keys are not binary: {e}"))?;
            let col = col
                .as_any()
                .downcast_ref::<BinaryArray>()
                .ok_or("its series keys are not binary")?;
            for i in 0..col.len() {
                if col.is_valid(i) && keys.last().is_none_or(|k| k.as_slice() != col.value(i)) {
                    keys.insert(col.value(i).to_vec());
                }
            }
        }
    }
    Ok(rows)
}

/// Verifies a data file against the manifest's size, checksum and rows.
pub(crate) fn verify_data(
    data: &Bytes,
    size: u64,
    crc32c: Option<u32>,
    rows: Option<u64>,
    keys: Option<&mut BTreeSet<Vec<u8>>>,
) -> Result<(), String> {
    if data.len() as u64 != size {
        return Err(format!(
            "it is {} bytes, the manifest says {size}",
            data.len()
        ));
    }
    if let Some(want) = crc32c {
        let got = crc32c::crc32c(data);
        if got != want {
            return Err(format!(
                "its CRC-32C is {got:08x}, the manifest says {want:08x}"
            ));
        }
    }
    let got = decode_parquet(data, keys)?;
    if let Some(want) = rows
        && got != want
    {
        return Err(format!("it holds {got} rows, the manifest says {want}"));
    }
    Ok(())
}

/// Decodes an index file; the error names the byte offset.
pub(crate) fn verify_index(data: &[u8], limits: IndexLimits) -> Result<SeriesIndex, String> {
    SeriesIndex::decode(data, limits).map_err(|e| e.to_string())
}

/// An index of `keys` (sorted, as the set holds them), encoded.
pub(crate) fn rebuild_index(
    keys: &BTreeSet<Vec<u8>>,
    limits: IndexLimits,
) -> Result<(SeriesIndex, Vec<u8>), String> {
    let mut ix = SeriesIndex::new(limits);
    for k in keys {
        ix.get_or_insert(k)
            .map_err(|e| format!("a key of the region's files: {e}"))?;
    }
    let bytes = ix.encode();
    Ok((ix, bytes))
}
