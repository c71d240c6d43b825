// Hands a translation to its promise in one crossing: the string is made from wasm
// memory by the generated shim, with no separate call to create it and no try/catch
// wrapper around the call (a promise's resolve function never throws; another function
// passed to the raw core may, and is ignored like any settle callback).

/** @param {(text: string) => void} resolve @param {string} text */
export function resolveWith(resolve, text) {
  try {
    resolve(text);
  } catch {
    // See above.
  }
}
