//! `fallbackProviders`: the map of where a provider's items go, checked for self maps
//! and cycles, with a long cycle shown by its ends. Apart because the cycle check is the
//! one option check with an algorithm of its own.

use super::value_checks::reject;
use super::{OptionValue, OptionsError};
use crate::display::js_string;
use crate::hash::{look_up, IdMap};
use crate::key::Keyer;

/// `fallbackProviders`: an object of non-empty providerId strings, none mapped to
/// itself, without a cycle.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub(super) fn fallback_map(
    name: &str,
    value: &OptionValue,
) -> Result<Vec<(String, String)>, OptionsError> {
    let OptionValue::Map(entries) = value else {
        return Err(reject(
            name,
            "an object mapping a providerId to another providerId",
            value,
        ));
    };
    let fail = |message: String| OptionsError {
        option: name.to_owned(),
        message,
    };
    let mut map: Vec<(String, String)> = Vec::with_capacity(entries.len());
    for (from, to) in entries {
        let to = match to {
            OptionValue::Text(to) if !to.is_empty() => to,
            other => {
                return Err(fail(format!(
                    "{name} must map each providerId to a non-empty providerId string (got {}: {other})",
                    js_string(from)
                )))
            }
        };
        if from.is_empty() {
            return Err(fail(format!(
                "{name} must map non-empty providerIds (got \"\": {})",
                js_string(to)
            )));
        }
        if from == to {
            return Err(fail(format!(
                "{name} must not map a provider to itself (got {} -> {})",
                js_string(from),
                js_string(to)
            )));
        }
        map.push((from.clone(), to.clone()));
    }
    if let Some(chain) = first_cycle(&map) {
        return Err(fail(format!(
            "{name} must not have a cycle (got {})",
            shown_chain(&chain)
        )));
    }
    Ok(map)
}

/// The chain of the first provider (in `map`'s order) whose fallbacks loop, up to the
/// first id it repeats: `a -> b -> a`. Each provider is walked through once in all: a
/// walk that reaches a provider an earlier walk went through stops there, as that
/// provider's chain is known to end. Each step looks its provider up by a digest of its
/// id, so a chain of 100,000 providers is checked in milliseconds (a search along the
/// map at each step took seconds for 2,000).
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn first_cycle(map: &[(String, String)]) -> Option<Vec<&str>> {
    // SipHash, whose words spread well in the table (the fold of `FoldHasher` leaves the
    // low bits of ids like "p1", "p2", ... alike); no secret key: a crafted collision
    // only slows the check of the options of whoever crafted it.
    let digest = |id: &str| Keyer::new(0).fields_word(id.as_bytes());
    let mut index = IdMap::default();
    for (i, (from, _)) in map.iter().enumerate() {
        // Of two entries for one id (possible only from Rust), the first one counts.
        let key = digest(from);
        if look_up(&index, key).is_none() {
            index.insert(key, i as u64);
        }
    }
    let entry = |id: &str| match look_up(&index, digest(id)) {
        Some(i) if map[i as usize].0 == id => Some(i as usize),
        // Two ids with one digest: rare, and only slower.
        Some(_) => map.iter().position(|(from, _)| from == id),
        None => None,
    };
    // The walk (its start, plus one) that first went through each entry; 0: none yet.
    let mut walked = vec![0; map.len()];
    for start in 0..map.len() {
        if walked[start] != 0 {
            continue;
        }
        let mut chain = Vec::new();
        let mut at = start;
        loop {
            walked[at] = start + 1;
            chain.push(map[at].0.as_str());
            let Some(next) = entry(&map[at].1) else { break };
            if walked[next] == start + 1 {
                chain.push(map[next].0.as_str());
                return Some(chain);
            }
            if walked[next] != 0 {
                break;
            }
            at = next;
        }
    }
    None
}

/// A chain of ids for a message: a long one shows its first and last few ids.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
fn shown_chain(chain: &[&str]) -> String {
    const ENDS: usize = 4;
    let long = chain.len() > 3 * ENDS;
    let mut shown = String::new();
    for (i, id) in chain.iter().enumerate() {
        if long && i == ENDS {
            shown.push_str(" -> …");
        }
        if long && (ENDS..chain.len() - ENDS).contains(&i) {
            continue;
        }
        if i > 0 {
            shown.push_str(" -> ");
        }
        shown.push_str(&js_string(id));
    }
    if long {
        shown.push_str(&format!(" ({} ids)", chain.len()));
    }
    shown
}
