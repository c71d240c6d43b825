//! Prints the built-in token estimate of each line on standard input, one number a line.
//! Each input line is a JSON string (`"Hello,\nworld"`), so texts may hold line breaks.
//! Used by bench/estimate-tokens.mjs to compare the estimate with a real tokenizer
//! without building the wasm package.
//!
//!     echo '"Hello, world"' | cargo run --release --example estimate_tokens

use std::io::{self, BufRead, BufWriter, Write};

use batch_pacer::estimate::estimate_tokens;

/// Decodes one JSON string literal; `None` when the line is not one.
fn parse_json_string(line: &str) -> Option<String> {
    let body = line.trim().strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => {
                let mut unit =
                    || u32::from_str_radix(&chars.by_ref().take(4).collect::<String>(), 16).ok();
                let high = unit()?;
                let code = if (0xD800..0xDC00).contains(&high) {
                    // A surrogate pair: JSON.stringify writes astral characters (emoji) so
                    // only when they are unpaired, but other writers always do.
                    if chars.next()? != '\\' || chars.next()? != 'u' {
                        return None;
                    }
                    let low = u32::from_str_radix(&chars.by_ref().take(4).collect::<String>(), 16)
                        .ok()?;
                    0x10000 + ((high - 0xD800) << 10) + (low.checked_sub(0xDC00)?)
                } else {
                    high
                };
                out.push(char::from_u32(code)?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

fn main() -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for (number, line) in io::stdin().lock().lines().enumerate() {
        let line = line?;
        let Some(text) = parse_json_string(&line) else {
            eprintln!("line {}: not a JSON string", number + 1);
            std::process::exit(2);
        };
        writeln!(out, "{}", estimate_tokens(&text))?;
    }
    out.flush()
}
