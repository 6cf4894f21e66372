//! The engine's side of models: their catalog records in the manifest and their files in the
//! file store (`catalog::models`).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::Engine;
use crate::catalog::models::{MODEL_DIR, ModelRecord};
use crate::error::{Result, StorageError};
use crate::files::manifest::Edit;

impl Engine {
    /// Every model's record, by name (`db.model`).
    pub fn models(&self) -> BTreeMap<String, ModelRecord> {
        self.catalog.manifest().state().models.clone()
    }

    /// Records model `name` as `record`, having first put `file` (path, bytes) durably when
    /// given; a file the previous record named and this one does not is deleted after.
    pub fn put_model(
        &self,
        name: &str,
        record: ModelRecord,
        file: Option<(String, Bytes)>,
    ) -> Result<()> {
        crate::catalog::names::split(name).ok_or_else(|| StorageError::InvalidDatabase {
            name: name.to_string(),
            reason: "a model's name is db.model".into(),
        })?;
        if let Some((path, bytes)) = &file {
            assert_eq!(record.file.as_deref(), Some(path.as_str()));
            self.reader.store.put(path, bytes.clone())?;
        }
        let old = self.models().get(name).and_then(|r| r.file.clone());
        self.catalog.commit(vec![Edit::PutModel {
            name: name.to_string(),
            record: record.clone(),
        }])?;
        if let Some(old) = old.filter(|o| record.file.as_ref() != Some(o)) {
            self.delete_quietly(&old);
        }
        Ok(())
    }

    /// Drops model `name` and its file; returns whether it existed.
    pub fn drop_model(&self, name: &str) -> Result<bool> {
        let Some(old) = self.models().remove(name) else {
            return Ok(false);
        };
        self.catalog.commit(vec![Edit::DropModel {
            name: name.to_string(),
        }])?;
        if let Some(f) = old.file {
            self.delete_quietly(&f);
        }
        Ok(true)
    }

    /// The bytes of a model file.
    pub fn read_model_file(&self, path: &str) -> Result<Bytes> {
        self.reader.store.get(path)
    }

    /// Deletes model files no record names (a crash between a put and its edit, or after an
    /// edit and before the old file's delete); returns how many.
    pub fn remove_orphan_model_files(&self) -> Result<usize> {
        let live: Vec<String> = self.models().into_values().filter_map(|r| r.file).collect();
        let mut removed = 0;
        for (p, _) in self.reader.store.list(MODEL_DIR)? {
            if !live.contains(&p) {
                tracing::info!(path = %p, "removing orphan model file");
                self.reader.store.delete(&p)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn delete_quietly(&self, path: &str) {
        if let Err(e) = self.reader.store.delete(path) {
            tracing::warn!(path, error = %e, "could not delete an old model file; it is removed at the next start");
        }
    }
}
