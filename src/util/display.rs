//! Values written as JavaScript writes them, for error messages. Hand-rolled rather than
//! `{:?}` / `{}` on floats: those pull Unicode tables and core's float-formatting code
//! (Grisu with a Dragon fallback, ~15 KB) into the wasm binary; Ryu is a fraction of that.

/// A number as JS's `String(n)` writes it: NaN, Infinity, `0` for both zeros, and
/// otherwise the shortest digits that read back as the same double, in plain decimal for
/// 1e-6 <= |n| < 1e21 and as `d.ddde+x` / `d.ddde-x` outside that range (so `1e-7`,
/// `1.5e-7`, `1e+21`).
///
/// In the package the host's own `Number.prototype.toString` writes it: the same text by
/// definition, with neither Ryu nor a layout of its digits in the .wasm. Natively (the
/// tests, the fuzz targets) `by_ryu` writes it.
#[cfg(target_arch = "wasm32")]
pub fn js_number(n: f64) -> String {
    js_sys::Number::from(n)
        .to_string_with_radix(10)
        .map(String::from)
        .unwrap_or_default()
}

#[cfg(not(target_arch = "wasm32"))]
pub use by_ryu::js_number;

/// `String(n)` without a JS host: Ryu finds the digits; its own layout (`1e16`, `1.0`)
/// differs from JS's, so only its digits and exponent are kept and the layout is redone by
/// the rules of `Number.prototype.toString`.
#[cfg(not(target_arch = "wasm32"))]
mod by_ryu {
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
        let mut buffer = ryu::Buffer::new();
        let (digits, point) = decimal_digits(buffer.format_finite(n.abs()).as_bytes());
        // Bytes, not a `String`: each `String::push` of a `char` inlines a UTF-8 encoder.
        let mut out = Vec::with_capacity(32);
        if n < 0.0 {
            out.push(b'-');
        }
        write_js_layout(&mut out, &digits, point);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Up to 17 significant digits with neither leading nor trailing zeros.
    type Digits = ([u8; 17], usize);

    /// Reads Ryu's output for a positive finite double (`123.45`, `0.001`, `1.5e-7`, `1e300`)
    /// as digits `d1 d2 ... dk` and `point` such that the value is `0.d1d2...dk * 10^point`.
    fn decimal_digits(text: &[u8]) -> (Digits, i32) {
        let (mantissa, exponent) = match text.iter().position(|&c| c == b'e') {
            Some(e) => (&text[..e], parse_exponent(&text[e + 1..])),
            None => (text, 0),
        };
        let mut digits = [0u8; 17];
        let mut len = 0;
        let mut point = exponent;
        let mut seen_point = false;
        for &c in mantissa {
            if c == b'.' {
                seen_point = true;
                continue;
            }
            if len == 0 && c == b'0' {
                // A leading zero after the point moves the point left; one before it is "0.".
                if seen_point {
                    point -= 1;
                }
                continue;
            }
            if !seen_point {
                point += 1;
            }
            if len < digits.len() {
                digits[len] = c;
                len += 1;
            }
        }
        while len > 1 && digits[len - 1] == b'0' {
            len -= 1;
        }
        ((digits, len), point)
    }

    fn parse_exponent(text: &[u8]) -> i32 {
        let (negative, magnitude) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        let value = magnitude
            .iter()
            .fold(0i32, |acc, &c| acc * 10 + i32::from(c - b'0'));
        if negative {
            -value
        } else {
            value
        }
    }

    /// Lays out `0.digits * 10^point` as `Number.prototype.toString` does (ECMA-262,
    /// Number::toString, radix 10).
    fn write_js_layout(out: &mut Vec<u8>, (digits, len): &Digits, point: i32) {
        let digits = &digits[..*len];
        let k = digits.len() as i32;
        let push_digits = |out: &mut Vec<u8>, d: &[u8]| out.extend_from_slice(d);
        let push_zeros = |out: &mut Vec<u8>, count: i32| (0..count).for_each(|_| out.push(b'0'));
        if k <= point && point <= 21 {
            push_digits(out, digits);
            push_zeros(out, point - k);
        } else if 0 < point && point <= 21 {
            let (whole, fraction) = digits.split_at(point as usize);
            push_digits(out, whole);
            out.push(b'.');
            push_digits(out, fraction);
        } else if -6 < point && point <= 0 {
            out.extend_from_slice(b"0.");
            push_zeros(out, -point);
            push_digits(out, digits);
        } else {
            push_digits(out, &digits[..1]);
            if k > 1 {
                out.push(b'.');
                push_digits(out, &digits[1..]);
            }
            let exponent = point - 1;
            out.extend_from_slice(if exponent < 0 { b"e-" } else { b"e+" });
            let magnitude = exponent.unsigned_abs();
            // Double exponents have at most three digits (5e-324, 1.7976931348623157e+308).
            for divisor in [100, 10, 1] {
                if magnitude >= divisor || divisor == 1 {
                    out.push(b'0' + (magnitude / divisor % 10) as u8);
                }
            }
        }
    }
}

/// The most characters of a string that a message shows: a value of a megabyte must not
/// make a message of a megabyte.
pub const SHOWN_CHARACTERS: usize = 100;

/// A string as a JS double-quoted literal, escaping quotes, backslashes and controls. A
/// string longer than [`SHOWN_CHARACTERS`] is cut there, with an ellipsis and its whole
/// length (JS `String.length`): `"aaaa…" (1048576 characters)`.
#[cfg_attr(cold_for_size, optimize(size), inline(never))]
pub fn js_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * SHOWN_CHARACTERS) + 2);
    out.push('"');
    let mut cut = false;
    for (shown, c) in s.chars().enumerate() {
        if shown == SHOWN_CHARACTERS {
            cut = true;
            break;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                // By hand: `{:04x}` costs a hex formatter with padding for two digits.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[c as usize >> 4]));
                out.push(char::from(HEX[c as usize & 15]));
            }
            c => out.push(c),
        }
    }
    if cut {
        out.push_str("…\" (");
        out.push_str(&crate::text::utf16_len(s).to_string());
        out.push_str(" characters)");
    } else {
        out.push('"');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_like_js() {
        // Each expectation is what `String(n)` gives in V8 and SpiderMonkey.
        let cases = [
            (-1.0, "-1"),
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (10.0, "10"),
            (100.0, "100"),
            (0.5, "0.5"),
            (1.5, "1.5"),
            (0.25, "0.25"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1.0 / 7.0, "0.14285714285714285"),
            (4.35, "4.35"),
            (20000.0, "20000"),
            (123.456, "123.456"),
            (123456.789, "123456.789"),
            (-0.001, "-0.001"),
            (-0.12182676811153227, "-0.12182676811153227"),
            (123456789.125, "123456789.125"),
            // Exactly halfway between ...6.2 and ...6.3: JS picks the even digit.
            (1107545299897686.2, "1107545299897686.2"),
            (2f64.powi(53), "9007199254740992"),
            (2f64.powi(53) + 2.0, "9007199254740994"),
            (2f64.powi(64), "18446744073709552000"),
            (1e15, "1000000000000000"),
            (1e16, "10000000000000000"),
            (1e20, "100000000000000000000"),
            (12345678901234567890.0, "12345678901234567000"),
            (123456789012345680000.0, "123456789012345680000"),
            (999999999999999900000.0, "999999999999999900000"),
            (1e21, "1e+21"),
            (1.23e21, "1.23e+21"),
            (2f64.powi(70), "1.1805916207174113e+21"),
            (1e22, "1e+22"),
            (-2.5e30, "-2.5e+30"),
            (1e100, "1e+100"),
            (1e300, "1e+300"),
            (1.7976931348623157e307, "1.7976931348623158e+307"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.000001, "0.000001"),
            (1e-6, "0.000001"),
            (0.000001234, "0.000001234"),
            (9.5367431640625e-7, "9.5367431640625e-7"),
            (5e-7, "5e-7"),
            (1.5e-7, "1.5e-7"),
            (1.2e-7, "1.2e-7"),
            (0.0000001234, "1.234e-7"),
            (1234.5e-10, "1.2345e-7"),
            (1e-7, "1e-7"),
            (-1e-7, "-1e-7"),
            (-1.0 / 7e10, "-1.4285714285714286e-11"),
            (123e-20, "1.23e-18"),
            (f64::EPSILON, "2.220446049250313e-16"),
            (1e-100, "1e-100"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (2.225073858507201e-308, "2.225073858507201e-308"),
            (f64::from_bits(3), "1.5e-323"),
            (5e-324, "5e-324"),
            (f64::from_bits(1), "5e-324"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (n, want) in cases {
            assert_eq!(js_number(n), want, "{n:e}");
        }
    }

    /// The significant digits and decimal exponent of `{:e}`, which is also shortest
    /// round-trip (core's own algorithm), as a reference independent of Ryu.
    #[cfg(not(target_arch = "wasm32"))]
    fn reference_digits(n: f64) -> (String, i32) {
        let text = format!("{:e}", n.abs());
        let (mantissa, exponent) = text.split_once('e').unwrap();
        (mantissa.replace('.', ""), exponent.parse().unwrap())
    }

    // proptest is a dev-dependency of native builds only.
    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        #[test]
        fn every_double_has_js_shortest_digits_and_layout(bits in proptest::prelude::any::<u64>()) {
            let n = f64::from_bits(bits);
            proptest::prop_assume!(n.is_finite() && n != 0.0);
            let text = js_number(n);
            proptest::prop_assert_eq!(text.parse::<f64>().unwrap(), n, "{}", text);

            let (digits, exponent) = reference_digits(n);
            let (mantissa, written_exponent) = match text.split_once('e') {
                Some((m, e)) => (m, e.parse::<i32>().unwrap()),
                None => (text.as_str(), 0),
            };
            let ours: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let ours = ours.trim_start_matches('0').trim_end_matches('0');
            if ours != digits {
                // Core breaks an exact tie between two shortest candidates upwards; JS
                // takes the even one, as Ryu does.
                let (a, b): (u64, u64) = (ours.parse().unwrap(), digits.parse().unwrap());
                proptest::prop_assert!(
                    ours.len() == digits.len() && a.abs_diff(b) == 1 && a % 2 == 0,
                    "{} vs {}", text, digits
                );
            }

            let plain = (1e-6..1e21).contains(&n.abs());
            proptest::prop_assert_eq!(written_exponent == 0 && !text.contains('e'), plain, "{}", text);
            if !plain {
                proptest::prop_assert_eq!(written_exponent, exponent, "{}", text);
                let sign = if exponent < 0 { "e-" } else { "e+" };
                proptest::prop_assert!(text.contains(sign), "{}", text);
                proptest::prop_assert!(mantissa.trim_start_matches('-').len() == 1
                    || mantissa.trim_start_matches('-').as_bytes()[1] == b'.', "{}", text);
            }
        }
    }

    #[test]
    fn strings_are_quoted_and_escaped() {
        assert_eq!(js_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(js_string("\u{1}é"), "\"\\u0001é\"");
    }

    #[test]
    fn long_strings_are_cut_with_their_length() {
        let hundred = "a".repeat(SHOWN_CHARACTERS);
        assert_eq!(js_string(&hundred), format!("\"{hundred}\""));
        let megabyte = "a".repeat(1 << 20);
        assert_eq!(
            js_string(&megabyte),
            format!("\"{hundred}…\" (1048576 characters)")
        );
        // Characters, never a byte or half a surrogate pair; the length is JS's.
        let emoji = "😀".repeat(SHOWN_CHARACTERS + 1);
        let shown = "😀".repeat(SHOWN_CHARACTERS);
        assert_eq!(js_string(&emoji), format!("\"{shown}…\" (202 characters)"));
    }
}
