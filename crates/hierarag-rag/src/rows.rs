//! The rows of `embeddings.f32`, memory-mapped: the page cache holds them, not the heap.
// Mapping a file is `unsafe` in memmap2; this module's one block says why it is sound here.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::RagError;

#[cfg(target_endian = "big")]
compile_error!("embeddings.f32 is little-endian and mapped as native f32s");

/// `n_rows × dim` little-endian `f32`s, row-major, mapped from a file.
pub struct EmbeddingRows {
    /// None for a file without rows (mapping zero bytes is an error on some systems).
    map: Option<Mmap>,
    n_rows: usize,
    dim: usize,
    path: PathBuf,
}

impl std::fmt::Debug for EmbeddingRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingRows")
            .field("path", &self.path)
            .field("n_rows", &self.n_rows)
            .field("dim", &self.dim)
            .finish()
    }
}

impl EmbeddingRows {
    /// Maps `path`, which must hold exactly `n_rows × dim` values.
    pub fn open(path: &Path, n_rows: usize, dim: usize) -> Result<EmbeddingRows, RagError> {
        let invalid = |message: String| RagError::Ann {
            path: path.to_path_buf(),
            message,
        };
        let expected_bytes = n_rows
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| invalid(format!("{n_rows} rows × {dim} dimensions overflow")))?;
        let file = std::fs::File::open(path).map_err(|source| RagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let found_bytes = file
            .metadata()
            .map_err(|source| RagError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        if found_bytes != expected_bytes as u64 {
            return Err(invalid(format!(
                "has {found_bytes} bytes, {expected_bytes} expected ({n_rows} rows × {dim} dimensions)"
            )));
        }
        let map = if expected_bytes == 0 {
            None
        } else {
            // SAFETY: the file is only ever replaced by renaming a new file over it
            // (hierarag-fs), never written in place, so the mapped pages do not change while
            // they are mapped; a user editing it by hand would be outside what we promise.
            let map = unsafe { Mmap::map(&file) }.map_err(|source| RagError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            // The map is page-aligned, so viewing it as f32s cannot fail; checked all the same.
            bytemuck::try_cast_slice::<u8, f32>(&map)
                .map_err(|e| invalid(format!("cannot be read as f32s: {e}")))?;
            Some(map)
        };
        Ok(EmbeddingRows {
            map,
            n_rows,
            dim,
            path: path.to_path_buf(),
        })
    }

    /// Every value, row after row.
    pub fn values(&self) -> &[f32] {
        match &self.map {
            Some(map) => bytemuck::cast_slice(map),
            None => &[],
        }
    }

    /// Row `row` (panics past the last row).
    pub fn row(&self, row: usize) -> &[f32] {
        &self.values()[row * self.dim..(row + 1) * self.dim]
    }

    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
