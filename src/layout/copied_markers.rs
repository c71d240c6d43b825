//! Markers a model copied into the values of an object or array reply (`{ "1":
//! "<s21>Hola</s21>" }`): a model told where each segment stands sometimes keeps the
//! segment's markers around its translation. Read here, where every reply is read, so
//! that every provider's replies get the same clean-up.
//!
//! A value loses markers only when it is wrapped whole in the pair of its own position
//! and holds no other marker of the batch's tag: the unwrapped text is then exactly the
//! text between that one pair, so no text moves from one paragraph to another. Any other
//! marker in a value is left for the proof to judge.

use super::markers::{number, scan};
use super::proof::parse_id;

/// `value` without the pair of segment `index` (0-based) wrapped around all of it, if so.
pub fn unwrap_own(value: String, tag: &str, index: usize) -> String {
    let trimmed = value.trim();
    let own = Some(number(index));
    match scan(trimmed, tag).as_slice() {
        [open, close]
            if !open.close
                && close.close
                && open.id == own
                && close.id == own
                && open.start == 0
                && close.end == trimmed.len() =>
        {
            trimmed
                .get(open.end..close.start)
                .unwrap_or("")
                .trim()
                .to_owned()
        }
        _ => value,
    }
}

/// An object reply's values, each unwrapped from its own id's pair (ids are the 1-based
/// positions; a key that is no id is left as it is, for the proof to reject).
pub fn unwrap_keyed(
    pairs: Vec<(String, String)>,
    tag: &str,
    count: usize,
) -> Vec<(String, String)> {
    pairs
        .into_iter()
        .map(|(key, value)| {
            // Read as the proof reads it: a key it takes for id k is value k's.
            let index = parse_id(&key)
                .filter(|id| (1..=count).contains(id))
                .map(|id| id - 1);
            match index {
                Some(index) => (key, unwrap_own(value, tag, index)),
                None => (key, value),
            }
        })
        .collect()
}

/// An array reply's values, each unwrapped from the pair of its position.
pub fn unwrap_listed(values: Vec<String>, tag: &str) -> Vec<String> {
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| unwrap_own(value, tag, index))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markers::pair;

    /// Segment `index`'s pair in tag `s`.
    fn own(index: usize) -> (String, String) {
        pair("s", number(index))
    }

    fn wrapped(index: usize, text: &str) -> String {
        let (open, close) = own(index);
        format!("{open}{text}{close}")
    }

    #[test]
    fn a_value_wrapped_in_its_own_pair_loses_it() {
        assert_eq!(unwrap_own(wrapped(0, "Hola"), "s", 0), "Hola");
        assert_eq!(
            unwrap_own(format!("  {} \n", wrapped(2, " Adiós ")), "s", 2),
            "Adiós"
        );
    }

    #[test]
    fn markers_written_in_another_case_or_with_spaces_count_as_its_own() {
        let n = number(1);
        assert_eq!(unwrap_own(format!("<S{n}>Hola</ s{n} >"), "s", 1), "Hola");
    }

    #[test]
    fn another_positions_pair_is_left_for_the_proof() {
        // Segment 1's translation under segment 0's key: unwrapping would hide the move.
        let value = wrapped(1, "Adiós");
        assert_eq!(unwrap_own(value.clone(), "s", 0), value);
        let (open, _) = own(0);
        let (_, close) = own(1);
        let crossed = format!("{open}Hola{close}");
        assert_eq!(unwrap_own(crossed.clone(), "s", 0), crossed);
    }

    #[test]
    fn a_value_holding_more_than_its_own_pair_is_left_as_it_is() {
        // Two segments merged into one value: stripping the outer pair would keep the
        // inner markers and the other paragraph's text under this id.
        let merged = format!("{}\n{}", wrapped(0, "Hola"), wrapped(1, "Adiós"));
        assert_eq!(unwrap_own(merged.clone(), "s", 0), merged);
        let (open, close) = own(0);
        let nested = format!("{open}Hola {} {close}", own(1).0);
        assert_eq!(unwrap_own(nested.clone(), "s", 0), nested);
    }

    #[test]
    fn a_value_only_opened_or_only_closed_or_with_text_outside_is_left() {
        let (open, close) = own(0);
        for value in [
            format!("{open}Hola"),
            format!("Hola{close}"),
            format!("Hola {open}Hola{close}"),
            format!("{open}Hola{close}."),
            String::from("Hola"),
        ] {
            assert_eq!(unwrap_own(value.clone(), "s", 0), value);
        }
    }

    #[test]
    fn another_tags_markers_are_text() {
        let value = format!("<t{0}>Hola</t{0}>", number(0));
        assert_eq!(unwrap_own(value.clone(), "s", 0), value);
    }

    #[test]
    fn keyed_values_unwrap_by_their_id() {
        let pairs = vec![
            ("2".to_owned(), wrapped(1, "Zwei")),
            ("1".to_owned(), wrapped(0, "Eins")),
            ("3".to_owned(), wrapped(0, "Drei")),
            ("9".to_owned(), wrapped(8, "Neun")),
            ("x".to_owned(), "X".to_owned()),
        ];
        let out = unwrap_keyed(pairs, "s", 3);
        assert_eq!(out[0], ("2".to_owned(), "Zwei".to_owned()));
        assert_eq!(out[1], ("1".to_owned(), "Eins".to_owned()));
        assert_eq!(
            out[2],
            ("3".to_owned(), wrapped(0, "Drei")),
            "id 3 is not in pair 1"
        );
        assert_eq!(
            out[3],
            ("9".to_owned(), wrapped(8, "Neun")),
            "no id of a batch of 3"
        );
        assert_eq!(out[4], ("x".to_owned(), "X".to_owned()));
    }

    #[test]
    fn listed_values_unwrap_by_their_position() {
        let values = vec![wrapped(0, "Eins"), wrapped(0, "Zwei"), "Drei".to_owned()];
        assert_eq!(
            unwrap_listed(values, "s"),
            vec!["Eins".to_owned(), wrapped(0, "Zwei"), "Drei".to_owned()]
        );
    }
}
