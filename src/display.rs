//! Values written as JavaScript writes them, for error messages. Hand-rolled rather than
//! `{:?}` / `{}` on floats: those pull Unicode tables and float-formatting code into the
//! wasm binary, which would triple its size.

/// A number as JS's `String(n)` writes it: integers, NaN, Infinity and, between 1e-7
/// and 1e21, the shortest decimal that reads back as the same double (Rust's `{}` gives
/// the same digits there; JS switches to exponent notation outside that range).
pub fn js_number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if n == 0.0 {
        // JS writes -0 as "0".
        return "0".into();
    }
    let a = n.abs();
    if (1e-7..1e21).contains(&a) {
        return format!("{n}");
    }
    let sign = if n < 0.0 { "-" } else { "" };
    format!(
        "{sign}(a number of magnitude {})",
        if a < 1.0 { "< 1e-7" } else { ">= 1e21" }
    )
}

/// A string as a JS double-quoted literal, escaping quotes, backslashes and controls.
pub fn js_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_js() {
        let cases = [
            (-1.0, "-1"),
            (0.0, "0"),
            (1.5, "1.5"),
            (0.25, "0.25"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (20000.0, "20000"),
            (123.456, "123.456"),
            (-0.001, "-0.001"),
            (-0.12182676811153227, "-0.12182676811153227"),
            (-0.0, "0"),
            (123456789.125, "123456789.125"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (n, want) in cases {
            assert_eq!(js_number(n), want, "{n}");
        }
    }

    #[test]
    fn strings_are_quoted_and_escaped() {
        assert_eq!(js_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(js_string("\u{1}é"), "\"\\u0001é\"");
    }
}
