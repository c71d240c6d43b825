//! Item compatibility fields registered once per distinct combination, so that on the
//! fast path only an item's text crosses the boundary.

use crate::Compat;

/// The registered combinations, by id.
#[derive(Default)]
pub struct CompatTable {
    entries: Vec<OwnedCompat>,
}

struct OwnedCompat {
    provider_id: String,
    source_lang: String,
    target_lang: String,
    context: String,
    llm: bool,
}

impl CompatTable {
    /// Registers a combination; returns its id (never 0).
    pub fn register(&mut self, compat: Compat<'_>) -> u32 {
        self.entries.push(OwnedCompat {
            provider_id: compat.provider_id.to_owned(),
            source_lang: compat.source_lang.to_owned(),
            target_lang: compat.target_lang.to_owned(),
            context: compat.context.to_owned(),
            llm: compat.llm,
        });
        self.entries.len() as u32
    }

    /// The fields of combination `id`.
    pub fn get(&self, id: u32) -> Option<Compat<'_>> {
        let entry = self.entries.get((id as usize).checked_sub(1)?)?;
        Some(Compat {
            provider_id: &entry.provider_id,
            source_lang: &entry.source_lang,
            target_lang: &entry.target_lang,
            context: &entry.context,
            llm: entry.llm,
        })
    }

    /// Forgets every combination (the JS side forgets its ids at the same time).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}
