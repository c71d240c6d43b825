// Writes JS strings into the core's input buffer as UTF-8 with TextEncoder.encodeInto.
// The generated glue copies strings in a JavaScript loop, one character at a time,
// which costs several times more for paragraphs and replies of hundreds of characters.
// Translations go back the same way: each resolves its promise in one crossing, as the
// string last written when it is that one (no decode), else decoded from wasm memory.

/** The usual size of the buffer, and the size above which it is given back. */
const SMALL = 4096;
const LARGE = 1 << 20;

/**
 * @param {WebAssembly.Memory} memory the module's memory
 * @param {(bytes: number) => number} reserve makes the buffer hold exactly `bytes`
 *   (reallocating it when it is smaller or much larger); returns its address
 */
export function makeInput(memory, reserve) {
  const encoder = new TextEncoder();
  // As the generated glue decodes: a leading U+FEFF is text, not a byte order mark.
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true, fatal: true });
  let view = new Uint8Array(0);
  /** All of wasm memory, made anew once a grown memory has detached it. */
  let memoryBytes = new Uint8Array(0);
  let memoryWords = new Uint32Array(0);
  // The string last written and its length in bytes: the buffer starts with it.
  let last = "";
  let lastBytes = 0;

  /**
   * The string of `bytes` UTF-8 bytes at `address` in wasm memory. `maybeLast`: the
   * buffer starts with those bytes, so when the string last written is that long it is
   * that string, handed back as it is (no decode). A string with a lone surrogate is
   * not: the core's copy holds U+FFFD in its place, as every text crossing as UTF-8 does.
   */
  const text = (address, bytes, maybeLast) => {
    if (maybeLast && bytes === lastBytes && last.isWellFormed?.() !== false) return last;
    if (memoryBytes.buffer !== memory.buffer) memoryBytes = new Uint8Array(memory.buffer);
    return decoder.decode(memoryBytes.subarray(address, address + bytes));
  };

  return {
    /** Writes `text` into the buffer and returns its length in bytes. */
    write(text) {
      if (text.length === 0) return 0;
      // UTF-8 takes at most 3 bytes per UTF-16 unit. A grown memory detaches the view
      // (its length becomes 0); a buffer grown for one huge text is given back once
      // texts are small again.
      const most = text.length * 3;
      if (most > view.byteLength || (view.byteLength > LARGE && most <= SMALL)) {
        const size = Math.max(most, SMALL);
        const address = reserve(size);
        view = new Uint8Array(memory.buffer, address, size);
      }
      last = text;
      lastBytes = encoder.encodeInto(text, view).written;
      return lastBytes;
    },

    text,

    /** A plain array of the `count` u32 numbers at `address` (4-byte aligned). */
    numbers(address, count) {
      if (memoryWords.buffer !== memory.buffer) memoryWords = new Uint32Array(memory.buffer);
      const numbers = new Array(count);
      for (let i = 0; i < count; i++) numbers[i] = memoryWords[(address >>> 2) + i];
      return numbers;
    },

    /**
     * Resolves with the translation of `bytes` UTF-8 bytes at `address` (see `text`).
     * A promise's resolve never throws; another function passed to the raw core may,
     * and is ignored like any settle callback (the core calls this with no try/catch
     * wrapper).
     */
    resolve(resolve, address, bytes, maybeLast) {
      const translation = text(address, bytes, maybeLast);
      try {
        resolve(translation);
      } catch {
        // See above.
      }
    },
  };
}
