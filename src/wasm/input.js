// Writes JS strings into the core's input buffer as UTF-8 with TextEncoder.encodeInto.
// The generated glue copies strings in a JavaScript loop, one character at a time,
// which costs several times more for paragraphs and replies of hundreds of characters.

/**
 * @param {WebAssembly.Memory} memory the module's memory
 * @param {(bytes: number) => number} reserve makes the buffer hold exactly `bytes`
 *   (reallocating it when it is smaller or much larger); returns its address
 */
/** The usual size of the buffer, and the size above which it is given back. */
const SMALL = 4096;
const LARGE = 1 << 20;

export function makeInput(memory, reserve) {
  const encoder = new TextEncoder();
  let view = new Uint8Array(0);
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
      return encoder.encodeInto(text, view).written;
    },
  };
}
