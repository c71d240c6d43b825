//! A structured answer that reached the pacer as text: a JSON object of one string per id
//! (`{"1": "…", "2": "…"}`), as a model asked for structured output writes it, maybe in a
//! code fence (```` ```json … ``` ````), which models add to JSON unasked. Read here,
//! where every reply is read, so that a provider may return the model's text as it came.
//!
//! Only an object whose keys are all ids of the call and whose values are all strings is
//! such an answer; any other text is read as before (marked, or split on the separator).
//! The object is then proven like an object reply: each value under its own id.

use super::codec::strip_code_fence;

/// The `(id, value)` pairs of a JSON object answer for `count` texts (ids `"1"` to
/// `count`), in the object's order; the text back when it is none.
pub fn keyed(text: String, count: usize) -> Result<Vec<(String, String)>, String> {
    let body = strip_code_fence(text.trim());
    let is_id = |key: &str| {
        key.parse::<usize>()
            .is_ok_and(|id| (1..=count).contains(&id))
            && !key.starts_with('0')
    };
    match parse_object(body) {
        Some(pairs) if !pairs.is_empty() && pairs.iter().all(|(key, _)| is_id(key)) => Ok(pairs),
        _ => Err(text),
    }
}

/// A JSON object whose values are all strings, as its pairs; `None` for anything else.
fn parse_object(text: &str) -> Option<Vec<(String, String)>> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        text,
        at: 0,
    };
    reader.expect(b'{')?;
    let mut pairs = Vec::new();
    if !reader.eat(b'}') {
        loop {
            let key = reader.string()?;
            reader.expect(b':')?;
            let value = reader.string()?;
            pairs.push((key, value));
            if reader.eat(b'}') {
                break;
            }
            reader.expect(b',')?;
        }
    }
    reader.skip_space();
    (reader.at == reader.bytes.len()).then_some(pairs)
}

struct Reader<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Skips white space, then `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.bytes.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A JSON string, its escapes decoded.
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote or escape at once (it is valid UTF-8:
            // both bytes are ASCII, so they never split a character).
            let run = self
                .bytes
                .get(self.at..)?
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            out.push_str(self.text.get(self.at..self.at + run)?);
            self.at += run;
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(out);
                }
                b'\\' => {
                    let escape = *self.bytes.get(self.at + 1)?;
                    self.at += 2;
                    out.push(match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return None,
                    });
                }
                // A raw control character is not JSON.
                _ => return None,
            }
        }
    }

    /// The character of a `\uXXXX` escape (after its `\u`), a surrogate pair joined.
    fn unicode(&mut self) -> Option<char> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high);
        }
        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
            return None;
        }
        self.at += 2;
        let low = self.hex4()?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        self.at += 4;
        // By hand: `from_str_radix` brings its error machinery into the .wasm.
        digits.iter().try_fold(0, |value, &b| {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return None,
            };
            Some(value * 16 + u32::from(digit))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_plain_object_of_the_calls_ids_is_read() {
        let reply = r#"{"1": "Eins", "2":"Zwei" }"#.to_owned();
        assert_eq!(keyed(reply, 2), Ok(pairs(&[("1", "Eins"), ("2", "Zwei")])));
    }

    #[test]
    fn a_fenced_object_is_read_with_or_without_a_language_tag() {
        for reply in [
            "```json\n{\"1\": \"Eins\", \"2\": \"Zwei\"}\n```",
            "  ```\r\n{\"1\": \"Eins\", \"2\": \"Zwei\"}\r\n```\n",
            "```JSON\n{\n  \"1\": \"Eins\",\n  \"2\": \"Zwei\"\n}\n```",
        ] {
            assert_eq!(
                keyed(reply.to_owned(), 2),
                Ok(pairs(&[("1", "Eins"), ("2", "Zwei")])),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn escapes_are_decoded() {
        let reply = r#"{"1": "a \"b\" \\ \/ \n\t\u00e9\ud83d\ude00"}"#.to_owned();
        assert_eq!(keyed(reply, 1), Ok(pairs(&[("1", "a \"b\" \\ / \n\té😀")])));
    }

    #[test]
    fn repeated_ids_stay_for_the_proof_to_reject() {
        let reply = r#"{"1": "a", "1": "b"}"#.to_owned();
        assert_eq!(keyed(reply, 2), Ok(pairs(&[("1", "a"), ("1", "b")])));
    }

    #[test]
    fn anything_else_is_given_back_as_text() {
        for reply in [
            "<s21>Eins</s21>\n<s58>Zwei</s58>",
            "{}",
            r#"{"1": "Eins", "3": "Drei"}"#,
            r#"{"01": "Eins"}"#,
            r#"{"a": "Eins"}"#,
            r#"{"1": 1}"#,
            r#"{"1": null}"#,
            r#"{"1": "Eins",}"#,
            r#"{"1": "Eins"} and more"#,
            r#"{"1": "Ei"#,
            "{\"1\": \"a\nb\"}",
            r#"{"1": "\x"}"#,
            r#"{"1": "\ud83d"}"#,
            r#"{"1": "\u12"}"#,
            r#"["Eins"]"#,
            "Here: ```json\n{\"1\": \"Eins\"}\n```",
        ] {
            assert_eq!(
                keyed(reply.to_owned(), 2),
                Err(reply.to_owned()),
                "{reply:?}"
            );
        }
    }
}
