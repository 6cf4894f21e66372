//! A chunked, append-only byte arena.
//!
//! Byte strings are copied in once and addressed by a [`Span`] (chunk, start, len). The last
//! chunk grows geometrically up to [`CHUNK_MAX`] bytes (so tiny indexes stay tiny); after that
//! each new chunk is allocated at exactly `CHUNK_MAX`, so a big arena never has the up-to-2x
//! slack of one doubling `Vec`, and no copy of old bytes happens on growth. A string never
//! straddles two chunks; one longer than `CHUNK_MAX` gets a chunk of its own.

/// Largest capacity of a regular chunk.
pub(crate) const CHUNK_MAX: usize = 256 * 1024;

/// Where one byte string lives in an [`Arena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    chunk: u32,
    start: u32,
    len: u32,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Arena {
    chunks: Vec<Vec<u8>>,
    bytes: usize,
}

impl Arena {
    /// Copies `s` in. Returns `None` only when `s` is longer than `u32::MAX` bytes or the arena
    /// has `u32::MAX` chunks.
    pub(crate) fn push(&mut self, s: &[u8]) -> Option<Span> {
        let len = u32::try_from(s.len()).ok()?;
        let need = s.len();
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= need);
        if !fits {
            self.make_room(need);
        }
        let chunk = u32::try_from(self.chunks.len() - 1).ok()?;
        let last = self.chunks.last_mut()?;
        let start = u32::try_from(last.len()).ok()?;
        last.extend_from_slice(s);
        self.bytes += need;
        Some(Span { chunk, start, len })
    }

    fn make_room(&mut self, need: usize) {
        if let Some(last) = self.chunks.last_mut() {
            let cap = last.capacity();
            if cap < CHUNK_MAX && last.len() + need <= CHUNK_MAX {
                let target = (cap * 2).max(last.len() + need).min(CHUNK_MAX);
                last.reserve_exact(target - last.len());
                return;
            }
        }
        let first = self.chunks.is_empty();
        let cap = if first {
            need.max(256)
        } else {
            need.max(CHUNK_MAX)
        };
        self.chunks.push(Vec::with_capacity(cap));
    }

    /// The bytes of `span`. Spans come only from this arena's `push`, so this cannot fail for
    /// them; a foreign span yields an empty slice rather than a panic.
    pub(crate) fn get(&self, span: Span) -> &[u8] {
        let start = span.start as usize;
        self.chunks
            .get(span.chunk as usize)
            .and_then(|c| c.get(start..start + span.len as usize))
            .unwrap_or(&[])
    }

    /// Bytes stored.
    pub(crate) fn len(&self) -> usize {
        self.bytes
    }

    /// Bytes allocated, including unused chunk tails.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>()
            + self.chunks.capacity() * size_of::<Vec<u8>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_get_across_chunks() {
        let mut a = Arena::default();
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"abc".to_vec(),
            vec![7; CHUNK_MAX - 10],
            vec![8; 100],
            vec![9; CHUNK_MAX * 2],
            b"tail".to_vec(),
        ];
        let spans: Vec<Span> = cases.iter().map(|c| a.push(c).unwrap()).collect();
        for (c, s) in cases.iter().zip(&spans) {
            assert_eq!(a.get(*s), c.as_slice());
        }
        assert_eq!(a.len(), cases.iter().map(Vec::len).sum::<usize>());
        assert!(a.memory_bytes() >= a.len());
        assert!(a.chunks.iter().all(|c| c.capacity() <= CHUNK_MAX * 2));
    }

    #[test]
    fn small_arena_stays_small() {
        let mut a = Arena::default();
        a.push(b"hello").unwrap();
        assert!(a.memory_bytes() < 1024);
    }
}
