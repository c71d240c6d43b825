// The JS side of provider calls: builds each request, calls the provider and hands its
// answer back to the core. A promise awaited here costs a fraction of one awaited
// through a Rust future, and a request's AbortController is made only when the
// provider reads `request.signal` (many providers never do).

/** The kinds of answer the core takes (the constants of host.rs). */
const REPLY_TEXT = 0;
const REPLY = 1;
const FAIL = 2;
const CHUNK = 3;
const REPORT = 4;
const END = 5;
const BAD_VALUE = 6;
const REPLY_TEXT_CUT = 7;

/** Whether a provider's answer is a stream: an async iterable (not a string or array). */
function isStream(value) {
  return value !== null && typeof value === "object" && typeof value[Symbol.asyncIterator] === "function";
}

/** Lets a stream's producer go: `return()` when the iterator has one, errors ignored. */
function release(iterator) {
  try {
    const returned = iterator?.return?.();
    if (returned !== null && typeof returned === "object") Promise.resolve(returned).catch(() => {});
  } catch {
    // A producer that fails to stop has nothing more to say to anyone.
  }
}

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
  constructor(call, text, spans, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens) {
    this[CALL] = call;
    this.texts = spans === undefined ? [text] : sliceTexts(text, spans);
    // The core's shared ids: the request gets its own array of them.
    this.ids = ids === undefined ? ["1"] : ids.slice(0, this.texts.length);
    // The separator layout sets `separator`; the markers layout sets `markers` for a batch.
    if (typeof layout === "string") this.separator = layout;
    else if (layout !== undefined) this.markers = markerPairs(layout, this.texts.length);
    this.text = text;
    this.instructions = instructions ?? "";
    this.isBatch = isBatch;
    this.sourceLang = compat[1];
    this.targetLang = compat[2];
    this.providerId = compat[0];
    this.context = compat[3];
    // Set only for items moved to a fallback provider: absent otherwise.
    if (compat.length > 4) this.fallbackFrom = compat[4];
    this.attempt = attempt;
    this.maxOutputTokens = maxOutputTokens;
    Object.defineProperty(this, "signal", SIGNAL);
  }
}

/**
 * Fresh `[open, close]` arrays, one per text, copied from the core's shared ones of the
 * tag (at least `count` of them): a provider may change its request's arrays.
 */
function markerPairs(shared, count) {
  const pairs = new Array(count);
  for (let i = 0; i < count; i++) pairs[i] = [shared[i][0], shared[i][1]];
  return pairs;
}

/**
 * The texts of a batch, cut out of the one `text` string at the core's offsets (slices
 * share the string's memory; converting each text from the module again would not).
 * @param {string} text
 * @param {number[]} spans `[start, end)` of each text, flattened
 */
function sliceTexts(text, spans) {
  const texts = new Array(spans.length / 2);
  for (let i = 0; i < texts.length; i++) texts[i] = text.slice(spans[2 * i], spans[2 * i + 1]);
  return texts;
}

/**
 * @param {Function} provider the user's provider
 * @param {{ write(text: string): number, text(address: number, bytes: number, maybeLast: boolean): string,
 *   numbers(address: number, count: number): number[] }} input the core's input buffer
 * @param {(kind: number, id: number, value: unknown, bytes: number) => void} respond the
 *   core's handler of answers: `kind` is REPLY_TEXT (a string reply written to the input
 *   buffer, `bytes` its length in bytes), REPLY (any other fulfilled `value`) or FAIL (a
 *   failure); for a streamed reply CHUNK (a string value written to the input buffer,
 *   `bytes` its length in bytes), REPORT (a `{ usage, limits }` value), END, or BAD_VALUE
 *   (any other value). The length crosses as a number of its own: a JS value that holds
 *   a number costs the core a call back to JS to read it.
 */
export function makeCallHost(provider, input, respond) {
  /**
   * Running calls by their id's slot: the signal's controller, once made, and whether it
   * is aborted. An id is its slot in the core's table (low 32 bits) and that slot's
   * generation, plus one: slots are dense small numbers, so an array holds them for a
   * fraction of a Map's cost, and a slot's record is its call's only while the call runs
   * (`calls[slotOf(id)] === call`).
   */
  const calls = [];
  const slotOf = (id) => (id - 1) % 4294967296;

  /** Hands the core one value of call `id`'s stream; false when it failed to. */
  const send = (kind, id, call, value) => {
    try {
      if (kind === CHUNK) respond(CHUNK, id, undefined, input.write(value));
      else respond(kind, id, value, 0);
      return true;
    } catch (error) {
      answer(FAIL, id, call, error);
      return false;
    }
  };

  /**
   * Pulls a streamed reply and hands the core each value as it comes (one crossing per
   * value, never per character). Stops when the core cancels the call (a timeout, the
   * length cap, dispose), releasing the iterator then and on a bad value or error.
   */
  const pull = (id, call, iterable) => {
    let iterator;
    try {
      iterator = iterable[Symbol.asyncIterator]();
    } catch (error) {
      answer(FAIL, id, call, error);
      return;
    }
    call.iterator = iterator;
    const live = () => calls[slotOf(id)] === call;
    const stop = (kind, value) => {
      if (!live()) return;
      if (kind !== END) release(iterator);
      answer(kind, id, call, value);
    };
    const onResult = (result) => {
      if (!live()) return;
      let done, value;
      try {
        ({ done, value } = result);
      } catch (error) {
        stop(FAIL, error);
        return;
      }
      if (done) {
        stop(END, undefined);
        return;
      }
      if (typeof value === "string") {
        if (!send(CHUNK, id, call, value)) return;
      } else if (value !== null && typeof value === "object" && ("usage" in value || "limits" in value || "truncated" in value)) {
        if (!send(REPORT, id, call, value)) return;
      } else {
        stop(BAD_VALUE, value);
        return;
      }
      // The core may have ended the call with that value (the length cap).
      if (live()) next();
    };
    const next = () => {
      try {
        Promise.resolve(iterator.next()).then(onResult, (error) => stop(FAIL, error));
      } catch (error) {
        stop(FAIL, error);
      }
    };
    next();
  };

  /**
   * Hands the core the answer of `call`, started under `id`. An answer of a call that is
   * no longer running under its id (timed out, cancelled, or its id given to a later
   * call since: the core reuses ids) is dropped here, never read as another call's.
   */
  const answer = (kind, id, call, value) => {
    if (calls[slotOf(id)] !== call) {
      // A stream the core gave up before it came: nobody will read it.
      if (kind === REPLY && isStream(value)) release(value[Symbol.asyncIterator]?.());
      return;
    }
    if (kind === REPLY && isStream(value)) {
      pull(id, call, value);
      return;
    }
    const cap = call.replyCap;
    calls[slotOf(id)] = undefined;
    let bytes = 0;
    if (kind === REPLY && typeof value === "string") {
      try {
        // A reply longer than its cap (a model that loops) is read as far as the cap.
        const cut = cap !== undefined && value.length > cap;
        bytes = input.write(cut ? value.slice(0, cap) : value);
        value = undefined;
        kind = cut ? REPLY_TEXT_CUT : REPLY_TEXT;
      } catch (error) {
        // A reply too large for the module's memory fails the call like a bad reply.
        kind = FAIL;
        value = error;
      }
    }
    try {
      respond(kind, id, value, bytes);
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
    // The arguments are those of `start` in host.rs.
    // Never throws (the core calls it without a try/catch wrapper): a throwing provider
    // fails its call.
    start(id, address, bytes, maybeLast, spansAddress, spanCount, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens, replyCap) {
      // Read before any other code runs: the memory is the core's until it returns.
      const text = input.text(address, bytes, maybeLast);
      const spans = spanCount === 0 ? undefined : input.numbers(spansAddress, spanCount);
      const call = { id, controller: undefined, cancelled: false, iterator: undefined, replyCap };
      calls[slotOf(id)] = call;
      let returned;
      try {
        returned = provider(
          new ProviderRequest(call, text, spans, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens),
        );
      } catch (error) {
        answer(FAIL, id, call, error);
        return;
      }
      try {
        // Promise.resolve accepts promises, thenables and plain values alike (it throws
        // only for a promise whose `constructor` getter throws).
        Promise.resolve(returned).then(
          (value) => answer(REPLY, id, call, value),
          (error) => answer(FAIL, id, call, error),
        );
      } catch (error) {
        answer(FAIL, id, call, error);
      }
    },

    // Aborts the call's signal: timeout, dispose, or every item of the call withdrawn.
    cancel(id) {
      const call = calls[slotOf(id)];
      // The slot may hold a later call by now: only this id's call is cancelled.
      if (call === undefined || call.id !== id) return;
      calls[slotOf(id)] = undefined;
      call.cancelled = true;
      call.controller?.abort();
      if (call.iterator !== undefined) release(call.iterator);
    },
  };
}
