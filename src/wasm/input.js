// Writes JS strings into the core's input buffer as UTF-8 with TextEncoder.encodeInto.
// The generated glue copies strings in a JavaScript loop, one character at a time,
// which costs several times more for paragraphs and replies of hundreds of characters.

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
  let view = new Uint8Array(0);
  // The string last written and its length in bytes: the buffer starts with it.
  let last = "";
  let lastBytes = 0;
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

    /**
     * Resolves with the string last written, which the core found equal to a
     * translation `bytes` long, and returns true; false when that string is no longer
     * the last one. A string with a lone surrogate is declined: the core's copy holds
     * U+FFFD in its place, as every text crossing as UTF-8 does.
     */
    resolveWithLast(resolve, bytes) {
      if (bytes !== lastBytes || last.isWellFormed?.() === false) return false;
      try {
        resolve(last);
      } catch {
        // Like resolveWith (settle.js): a settle callback's throw is ignored.
      }
      return true;
    },
  };
}
