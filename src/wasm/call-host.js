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
const RUN_DONE = 8;

/**
 * The `[Symbol.asyncIterator]` method of a provider's answer when it is a stream (an async
 * iterable: not a string or array), else undefined. Throws what a getter or proxy throws.
 */
function streamOpener(value) {
  if (value === null || typeof value !== "object") return undefined;
  const open = value[Symbol.asyncIterator];
  return typeof open === "function" ? open : undefined;
}

// What the core reads of a reply, a stream's report and a failure, read here once into
// plain data: a getter or proxy of the provider's runs here, where a throw fails the call
// instead of crossing the core's frames (replies.rs reads these records). String replies,
// the common case, are never copied.

const USAGE = ["inputTokens", "outputTokens"];
const LIMITS = ["requestsRemaining", "requestsResetMs", "tokensRemaining", "tokensResetMs", "requestsLimit", "tokensLimit"];

/** `fields` of `value` as a plain object, or undefined when `value` is not an object. */
function pick(value, fields) {
  if (value === null || typeof value !== "object") return undefined;
  const plain = {};
  for (const field of fields) plain[field] = value[field];
  return plain;
}

/** `{ usage, limits, truncated }` of `value`, plain. */
function plainReport(value) {
  return { usage: pick(value.usage, USAGE), limits: pick(value.limits, LIMITS), truncated: value.truncated };
}

/**
 * Elements of an array reply copied past its call's texts, at most: any of them makes the
 * reply a count mismatch, whose event reports the length copied.
 */
const EXTRA_ELEMENTS = 65536;

/**
 * A reply's translations: an array or an object of them copied; anything else as it is.
 * An array is copied up to `EXTRA_ELEMENTS` past the call's `count` texts: a sparse
 * array's `length` (up to 2^32 - 1) must not make the copy exhaust the process's memory.
 */
function plainTranslations(value, count) {
  if (value === null || typeof value !== "object") return value;
  if (!Array.isArray(value)) return Object.fromEntries(Object.entries(value));
  const texts = [];
  for (let i = 0, length = Math.min(value.length, count + EXTRA_ELEMENTS); i < length; i++) texts.push(value[i]);
  return texts;
}

/**
 * A reply other than a string, plain: translations, or `{ translations, usage, limits,
 * truncated }`; `count` is the number of texts its call sent.
 */
function plainReply(value, count) {
  if (value === null || typeof value !== "object" || Array.isArray(value) || !Object.hasOwn(value, "translations")) {
    return plainTranslations(value, count);
  }
  return { translations: plainTranslations(value.translations, count), ...plainReport(value) };
}

/** A stream value that is a report (`{ usage, limits, truncated }`, any of them), plain; else undefined. */
function streamReport(value) {
  if (value === null || typeof value !== "object") return undefined;
  if (!("usage" in value || "limits" in value || "truncated" in value)) return undefined;
  return plainReport(value);
}

/** A thrown value's message, for another message: never throws. */
function messageOf(error) {
  try {
    return String(error?.message ?? error);
  } catch {
    return typeof error;
  }
}

/**
 * The package's readers of rate-limit headers and error bodies (js/limits-from-headers.js,
 * js/error-body.js), handed in once by `setup` (see `useReaders`): the JS layer imports
 * them anyway, and a copy of them here, beside the core's glue, would ship them twice.
 * Until then (never in practice) failures are read without them.
 */
let readers = {
  limits: () => undefined,
  retryAfterMs: () => undefined,
  bodyRetryAfterMs: () => undefined,
  bodyQuota: () => undefined,
};

/**
 * Registers `{ limits(headers), retryAfterMs(headers), bodyRetryAfterMs(body),
 * bodyQuota(status, body) }`.
 */
export function useReaders(given) {
  readers = given;
}

/**
 * Statuses whose handling the pacer owns (a pause, a split, a backoff), whatever an AI
 * SDK error's `isRetryable` says of them.
 */
function pacerOwns(status) {
  return status === 408 || status === 409 || status === 413 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * The error whose fields are read: an error that wraps the failures of its own retries
 * (the AI SDK's `RetryError`: `lastError`, with `reason` and `errors`) is read as its last
 * error, and so on, a few levels deep at most.
 */
function innermost(error) {
  let inner = error;
  for (let depth = 0; depth < 4; depth++) {
    const last = inner.lastError;
    if (last === null || (typeof last !== "object" && typeof last !== "function")) break;
    if (inner.name !== "AI_RetryError" && !Array.isArray(inner.errors) && typeof inner.reason !== "string") break;
    inner = last;
  }
  return inner;
}

/**
 * A failure as the core reads it (see `failure_from` in replies.rs): what the provider
 * threw as `cause`, and its fields. The AI SDK's names are read too: `statusCode` (when
 * `status` is no number), `responseHeaders` beside `headers` (for the wait and, unless
 * the error has `limits`, the limits they state), `responseBody` (a Google `RetryInfo`'s
 * wait; unless the error has `quota`, the quota the body names, as openAIProvider reads it),
 * and `isRetryable: false` (as `retryable: false`, except on a status the pacer owns).
 * A field of the wrong type is left out. An error that cannot be read (a getter or proxy
 * throws) fails the call all the same, with a message that says so.
 */
function failure(error) {
  if (error === null || (typeof error !== "object" && typeof error !== "function")) return { cause: error };
  try {
    const read = innermost(error);
    const status = typeof read.status === "number" ? read.status : read.statusCode;
    const headers = [read.headers, read.responseHeaders];
    let retryable = read.retryable;
    if (typeof retryable !== "boolean" && read.isRetryable === false && !pacerOwns(status)) retryable = false;
    return {
      cause: error,
      message: error.message,
      status,
      retryAfterMs: read.retryAfterMs,
      retryAfter: read.retryAfter,
      waitMs: firstOf(headers, readers.retryAfterMs) ?? readers.bodyRetryAfterMs(read.responseBody),
      limits: pick(read.limits, LIMITS) ?? firstOf(headers, readers.limits),
      quota: read.quota ?? readers.bodyQuota(status, read.responseBody),
      retryable,
    };
  } catch (thrown) {
    return { cause: error, message: `its error could not be read: a getter or proxy threw (${messageOf(thrown)})` };
  }
}

/** The first defined `reader(value)` over `values`. */
function firstOf(values, reader) {
  for (const value of values) {
    const found = reader(value);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The failure of a call whose reply could not be read: `thrown` is what was thrown. */
function unreadable(thrown) {
  return { cause: thrown, message: `its reply could not be read: a getter or proxy threw (${messageOf(thrown)})` };
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
  constructor(call, text, spans, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens, metas) {
    this[CALL] = call;
    this.texts = spans === undefined ? [text] : sliceTexts(text, spans);
    // The core's shared ids: the request gets its own array of them.
    this.ids = ids === undefined ? ["1"] : ids.slice(0, this.texts.length);
    // The separator layout sets `separator`; the markers layout sets `markers` for a batch;
    // an array batch (`layout` null) sets neither.
    if (typeof layout === "string") this.separator = layout;
    else if (layout !== undefined && layout !== null) this.markers = markerPairs(layout, this.texts.length);
    this.text = text;
    this.instructions = instructions ?? "";
    this.isBatch = isBatch;
    this.sourceLang = compat[1];
    this.targetLang = compat[2];
    this.providerId = compat[0];
    this.context = compat[3];
    // Set only for items moved to a fallback provider: absent otherwise.
    if (compat[4] !== undefined) this.fallbackFrom = compat[4];
    // Set only for a call a pool's member serves: the pool's id.
    if (compat.length > 5) this.poolId = compat[5];
    this.attempt = attempt;
    this.maxOutputTokens = maxOutputTokens;
    // Each item's own `meta` (the first of identical items), never read by the pacer.
    this.metas = metas ?? new Array(this.texts.length).fill(undefined);
    this.format = formatOf(isBatch, layout);
    Object.defineProperty(this, "signal", SIGNAL);
  }
}

/** `request.format`: how the call's texts are laid out for the model. */
function formatOf(isBatch, layout) {
  if (!isBatch) return "single";
  if (layout === null) return "array";
  return typeof layout === "string" ? "separator" : "markers";
}

/** What a `pacer.run` function gets for one try: `{ signal, attempt }`. */
class RunRequest {
  constructor(call, attempt) {
    this[CALL] = call;
    this.attempt = attempt;
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
      answer(FAIL, id, call, failure(error));
      return false;
    }
  };

  /**
   * Pulls a streamed reply and hands the core each value as it comes (one crossing per
   * value, never per character). Stops when the core cancels the call (a timeout, the
   * length cap, dispose), releasing the iterator then and on a bad value or error.
   * Never throws, nor do its callbacks: whatever the iterator does ends the call.
   */
  const pull = (id, call, iterable, open) => {
    let iterator;
    try {
      iterator = open.call(iterable);
    } catch (error) {
      answer(FAIL, id, call, failure(error));
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
      let done, value, report;
      try {
        ({ done, value } = result);
        if (!done && typeof value !== "string") report = streamReport(value);
      } catch (error) {
        stop(FAIL, unreadable(error));
        return;
      }
      if (done) {
        stop(END, undefined);
        return;
      }
      if (typeof value === "string") {
        if (!send(CHUNK, id, call, value)) return;
      } else if (report !== undefined) {
        if (!send(REPORT, id, call, report)) return;
      } else {
        stop(BAD_VALUE, value);
        return;
      }
      // The core may have ended the call with that value (the length cap).
      if (live()) next();
    };
    // The iterator threw (or its promise rejected): the stream broke with that error.
    const onError = (error) => stop(FAIL, failure(error));
    const next = () => {
      try {
        Promise.resolve(iterator.next()).then(onResult, onError);
      } catch (error) {
        onError(error);
      }
    };
    next();
  };

  /**
   * Hands the core the answer of `call`, started under `id`: REPLY with what the provider
   * resolved to, FAIL with a `failure()` record, or a stream's END, BAD_VALUE or REPORT
   * (plain already). An answer of a call that is no longer running under its id (timed
   * out, cancelled, or its id given to a later call since: the core reuses ids) is
   * dropped here, never read as another call's. Never throws.
   */
  const answer = (kind, id, call, value) => {
    if (calls[slotOf(id)] !== call) {
      // A stream the core gave up before it came: nobody will read it.
      if (kind === REPLY && typeof value !== "string") {
        try {
          const open = streamOpener(value);
          if (open !== undefined) release(open.call(value));
        } catch {
          // A stream that cannot be opened holds nothing to let go.
        }
      }
      return;
    }
    if (kind === REPLY && typeof value !== "string") {
      try {
        const open = streamOpener(value);
        if (open !== undefined) {
          pull(id, call, value, open);
          return;
        }
        value = plainReply(value, call.count);
      } catch (error) {
        kind = FAIL;
        value = unreadable(error);
      }
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
        value = failure(error);
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
    start(id, address, bytes, maybeLast, spansAddress, spanCount, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens, replyCap, metas) {
      // Read before any other code runs: the memory is the core's until it returns.
      const text = input.text(address, bytes, maybeLast);
      const spans = spanCount === 0 ? undefined : input.numbers(spansAddress, spanCount);
      const call = { id, controller: undefined, cancelled: false, iterator: undefined, replyCap, count: spans === undefined ? 1 : spans.length / 2 };
      calls[slotOf(id)] = call;
      let returned;
      try {
        returned = provider(
          new ProviderRequest(call, text, spans, ids, layout, instructions, isBatch, compat, attempt, maxOutputTokens, metas),
        );
      } catch (error) {
        answer(FAIL, id, call, failure(error));
        return;
      }
      try {
        // Promise.resolve accepts promises, thenables and plain values alike (it throws
        // only for a promise whose `constructor` getter throws).
        Promise.resolve(returned).then(
          (value) => answer(REPLY, id, call, value),
          (error) => answer(FAIL, id, call, failure(error)),
        );
      } catch (error) {
        answer(FAIL, id, call, failure(error));
      }
    },

    // A try of a `pacer.run`: its function instead of the provider. Its value, whatever it
    // is, goes back as RUN_DONE untouched (never read as a reply). Never throws.
    startRun(id, fn, attempt) {
      const call = { id, controller: undefined, cancelled: false, iterator: undefined, replyCap: undefined, count: 0 };
      calls[slotOf(id)] = call;
      try {
        Promise.resolve(fn(new RunRequest(call, attempt))).then(
          (value) => answer(RUN_DONE, id, call, value),
          (error) => answer(FAIL, id, call, failure(error)),
        );
      } catch (error) {
        answer(FAIL, id, call, failure(error));
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
