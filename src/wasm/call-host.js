// The JS side of provider calls: builds each request, calls the provider and hands its
// answer back to the core. A promise awaited here costs a fraction of one awaited
// through a Rust future, and a request's AbortController is made only when the
// provider reads `request.signal` (many providers never do).

/** The request's call record, under a symbol so that proxies and copies still reach it. */
const CALL = Symbol("batch-pacer call");

/**
 * One shared accessor for `request.signal` (an object literal with its own getter costs
 * far more to make). It makes the call's AbortController on first read; assigning
 * replaces it with a plain data property, as on an ordinary object.
 */
const SIGNAL = {
  enumerable: true,
  configurable: true,
  get() {
    const call = this[CALL];
    if (call.controller === undefined) {
      // Every supported host has AbortController; without one there is no signal.
      if (typeof AbortController !== "function") return undefined;
      call.controller = new AbortController();
      if (call.cancelled) call.controller.abort();
    }
    return call.controller.signal;
  },
  set(value) {
    Object.defineProperty(this, "signal", { value, writable: true, enumerable: true, configurable: true });
  },
};

/**
 * A provider request. `signal` is an own, enumerable accessor (a spread copy has it
 * too) that makes the call's AbortController on first read: creating one costs
 * microseconds in Node, and many providers never read it.
 */
class ProviderRequest {
  constructor(call, text, separator, isBatch, compat, attempt) {
    this[CALL] = call;
    this.texts = isBatch ? text.split(separator) : [text];
    this.text = text;
    this.separator = separator;
    this.isBatch = isBatch;
    this.sourceLang = compat[1];
    this.targetLang = compat[2];
    this.providerId = compat[0];
    this.context = compat[3];
    this.attempt = attempt;
    Object.defineProperty(this, "signal", SIGNAL);
  }
}

/**
 * @param {Function} provider the user's provider
 * @param {{ write(text: string): number }} input the core's input buffer
 * @param {(id: number, bytes: number) => void} replyText the core's handler of string
 *   answers, written to the input buffer
 * @param {(id: number, value: unknown) => void} reply the core's handler of other answers
 * @param {(id: number, error: unknown) => void} fail the core's handler of failures
 */
export function makeCallHost(provider, input, replyText, reply, fail) {
  /** Running calls by id: the signal's controller, once made, and whether it is aborted. */
  const calls = new Map();

  const answer = (handler, id, value) => {
    calls.delete(id);
    let bytes;
    if (handler === reply && typeof value === "string") {
      try {
        bytes = input.write(value);
      } catch (error) {
        // A reply too large for the module's memory fails the call like a bad reply.
        handler = fail;
        value = error;
      }
    }
    try {
      if (bytes === undefined) handler(id, value);
      else replyText(id, bytes);
    } catch (error) {
      // The core was freed while the call ran: nobody waits for this answer. Anything
      // else is a fault of this package, to be seen rather than swallowed.
      if (!String(error?.message).includes("after being dropped")) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };

  return {
    // `text` holds the texts joined with `separator`, which occurs in none of them;
    // `compat` is [providerId, sourceLang, targetLang, context].
    // Never throws (the core calls it without a try/catch wrapper): a throwing provider
    // fails its call.
    start(id, text, separator, isBatch, compat, attempt) {
      const call = { controller: undefined, cancelled: false };
      calls.set(id, call);
      let returned;
      try {
        returned = provider(new ProviderRequest(call, text, separator, isBatch, compat, attempt));
      } catch (error) {
        answer(fail, id, error);
        return;
      }
      try {
        // Promise.resolve accepts promises, thenables and plain values alike (it throws
        // only for a promise whose `constructor` getter throws).
        Promise.resolve(returned).then(
          (value) => answer(reply, id, value),
          (error) => answer(fail, id, error),
        );
      } catch (error) {
        answer(fail, id, error);
      }
    },

    // Aborts the call's signal: timeout, dispose, or every item of the call withdrawn.
    cancel(id) {
      const call = calls.get(id);
      if (call === undefined) return;
      calls.delete(id);
      call.cancelled = true;
      call.controller?.abort();
    },
  };
}
