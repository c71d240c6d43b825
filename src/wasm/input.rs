//! The input buffer: texts and replies arrive as UTF-8 written by `input.js`, which
//! encodes with `TextEncoder.encodeInto` instead of the glue's per-character loop.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::prelude::*;

use crate::{Failure, Reply};

#[wasm_bindgen(module = "/src/wasm/input.js")]
extern "C" {
    /// `{ write(text) -> bytes, text(address, bytes, maybeLast), numbers(address, count),
    /// resolve(resolve, address, bytes, maybeLast) }`.
    pub type InputWriter;

    #[wasm_bindgen(js_name = makeInput)]
    fn make_input(memory: JsValue, reserve: JsValue) -> InputWriter;

    /// Never throws (see input.js), so no catching wrapper.
    #[wasm_bindgen(method, structural, js_name = resolve)]
    fn resolve_with(
        this: &InputWriter,
        resolve: &Function,
        address: u32,
        bytes: u32,
        maybe_last: bool,
    );
}

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The length of the text last taken out of the buffer.
    static TAKEN: Cell<usize> = const { Cell::new(0) };
    static WRITER: InputWriter = make_input(
        wasm_bindgen::memory(),
        // Lives as long as the module: every pacer writes through it.
        Closure::<dyn Fn(u32) -> u32>::new(reserve).into_js_value(),
    );
}

/// Makes the buffer `bytes` long and returns its address (stable until the next call).
/// A new allocation each time: JS asks only when the buffer must grow or shrink.
fn reserve(bytes: u32) -> u32 {
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        *buffer = vec![0; bytes as usize];
        buffer.as_mut_ptr() as u32
    })
}

/// The module's writer, for the JS layer.
pub fn input_writer() -> JsValue {
    WRITER.with(|writer| JsValue::clone(writer))
}

/// Takes the `len` bytes last written. Copied out at once: any JS that runs later (a
/// user clock, a provider) may write the buffer again.
pub fn take(len: usize) -> Result<String, &'static str> {
    TAKEN.set(len);
    BUFFER.with(|buffer| {
        let buffer = buffer.borrow();
        let bytes = buffer
            .get(..len)
            .ok_or("more bytes than the input buffer holds")?;
        core::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| "the input buffer does not hold UTF-8")
    })
}

/// Where `text` is in wasm memory, for `input.js`'s `text`: its address, its length in
/// bytes, and whether it may be the JS string last written (then that string is handed
/// back instead of one decoded from `text`).
///
/// The buffer always starts with the last string written, so when it starts with `text`
/// and the JS side confirms that string's length, `text` is that string.
pub fn locate(text: &str) -> (u32, u32, bool) {
    let len = text.len();
    let maybe_last = len != 0
        && TAKEN.get() == len
        && BUFFER.with(|buffer| {
            (buffer.borrow().get(..len)).is_some_and(|start| same_bytes(start, text.as_bytes()))
        });
    (text.as_ptr() as u32, len as u32, maybe_last)
}

/// `a == b`, eight bytes at a time: the module's `memcmp` goes byte by byte, and most
/// texts sent alone or settled are compared with the buffer whole.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().unwrap_or_default());
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    a.len() == b.len()
        && (&mut x).zip(&mut y).all(|(p, q)| word(p) == word(q))
        && x.remainder() == y.remainder()
}

/// `resolve(text)`, in one crossing. When `text` is the JS string last written (say, a
/// reply that is the whole translation of a single item), that string is handed back
/// (see [`locate`]).
pub fn resolve(resolve: &Function, text: &str) {
    let (address, bytes, maybe_last) = locate(text);
    WRITER.with(|writer| writer.resolve_with(resolve, address, bytes, maybe_last));
}

/// A string reply that the JS side wrote to the buffer (`bytes` long), as the engine's
/// reply.
pub fn reply(bytes: u32) -> Result<Reply, Failure<JsValue>> {
    take(bytes as usize)
        .map(Reply::Text)
        .map_err(Failure::bad_reply)
}
