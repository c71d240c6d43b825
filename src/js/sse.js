// A decoder of server-sent events (the `text/event-stream` format of the HTML standard)
// for streamed chat completions. It reads a response body piece by piece, whatever the
// network did to it:
// - an event, a line or a multi-byte UTF-8 character may be split across reads at any
//   byte (a streaming TextDecoder keeps the partial character, a pending line keeps the
//   partial line, and a CR that ends one read and the LF that starts the next make one
//   line end, not two);
// - lines end with LF, CRLF or a lone CR; a leading byte order mark is dropped;
// - comments (`: keep-alive`) and unknown fields are ignored; several `data:` lines of
//   one event are joined with "\n"; the single space after a field's colon is dropped.
//
// Events are handed out per read, as arrays, so that a consumer can merge what one read
// brought instead of handling each event apart.

/**
 * Longest event (or line) held while it is incomplete, in characters: a server that
 * never ends a line cannot make the reader hold more than this.
 */
export const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/** The line breaks of the event-stream format: CRLF, LF or a lone CR. */
const LINE_BREAK = /\r\n|\r|\n/g;

/**
 * Reads the events of a `text/event-stream` body.
 *
 * @param {ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>} body
 *   a fetch `Response.body`, or any async iterable of byte or text chunks
 * @returns {AsyncGenerator<{ event: string, data: string }[]>} for each read that
 *   completed at least one event, those events in order (`event` is `""` when the event
 *   names no type). An event still incomplete when the body ends is given last: a
 *   server that closes the connection without the final blank line still said it.
 * @throws {Error} when an event grows past {@link MAX_EVENT_CHARS}; a failed read
 *   rejects with the reader's own error
 */
export async function* readServerSentEvents(body) {
  const decoder = new TextDecoder("utf-8");
  const parser = new EventParser();
  const chunks = readChunks(body);
  let finished = false;
  try {
    for (;;) {
      const step = await chunks.next();
      if (step.done) break;
      const chunk = step.value;
      const text = typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
      const events = parser.push(text);
      if (events.length > 0) yield events;
    }
    finished = true;
    const events = parser.push(decoder.decode());
    events.push(...parser.end());
    if (events.length > 0) yield events;
  } finally {
    // A consumer that stops early (or a failure) releases the connection at once.
    if (!finished) await chunks.return?.();
  }
}

/**
 * The chunks of a body: through a reader for a `ReadableStream` (browsers that cannot
 * iterate one yet), as they come for any other async iterable. Stopping early cancels
 * the stream, which closes the connection of a fetch body.
 */
async function* readChunks(body) {
  if (typeof body?.getReader !== "function") {
    yield* body;
    return;
  }
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const step = await reader.read();
      if (step.done) {
        done = true;
        return;
      }
      if (step.value !== undefined && step.value !== null) yield step.value;
    }
  } finally {
    if (!done) {
      // Cancelling a stream that already failed rejects again: that failure is known.
      await reader.cancel().catch(() => {});
    }
    reader.releaseLock();
  }
}

/** The line and field state machine of the event-stream format. */
class EventParser {
  constructor() {
    /** The start of a line whose end has not arrived yet. */
    this.pending = "";
    /** Whether the previous text ended with a CR, so that an LF starting the next is that line's end. */
    this.afterCR = false;
    /** The event being built: its type and its `data:` lines. */
    this.type = "";
    this.data = [];
    this.size = 0;
    /** Whether the stream's first character has been seen (a BOM there is dropped). */
    this.started = false;
  }

  /** Feeds decoded text; returns the events it completed. */
  push(text) {
    const events = [];
    if (text === "") return events;
    if (!this.started) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let at = 0;
    if (this.afterCR && text.charCodeAt(0) === 0x0a) at = 1;
    this.afterCR = false;
    LINE_BREAK.lastIndex = at;
    for (let match = LINE_BREAK.exec(text); match !== null; match = LINE_BREAK.exec(text)) {
      const line = this.pending + text.slice(at, match.index);
      this.pending = "";
      at = LINE_BREAK.lastIndex;
      // A CR at the very end may be the first half of a CRLF split across reads.
      if (match[0] === "\r" && at === text.length) this.afterCR = true;
      const event = this.line(line);
      if (event !== undefined) events.push(event);
    }
    if (at < text.length) {
      this.pending += text.slice(at);
      this.checkSize(this.pending.length);
    }
    return events;
  }

  /** The end of the body: an unterminated last line counts, and so does its event. */
  end() {
    const events = [];
    if (this.pending !== "") {
      const event = this.line(this.pending);
      this.pending = "";
      if (event !== undefined) events.push(event);
    }
    const event = this.dispatch();
    if (event !== undefined) events.push(event);
    return events;
  }

  /** One complete line: a field, a comment, or the blank line that ends an event. */
  line(line) {
    if (line === "") return this.dispatch();
    if (line.charCodeAt(0) === 0x3a) return undefined; // ":" starts a comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === "data") {
      this.data.push(value);
      this.size += value.length + 1;
      this.checkSize(this.size);
    } else if (field === "event") {
      this.type = value;
    }
    // `id` and `retry` concern reconnecting, which a completion never does; any other
    // field is ignored, as the format requires.
    return undefined;
  }

  /** Ends the event being built; one without data is no event. */
  dispatch() {
    const event = this.data.length > 0 ? { event: this.type, data: this.data.join("\n") } : undefined;
    this.type = "";
    this.data = [];
    this.size = 0;
    return event;
  }

  checkSize(size) {
    if (size > MAX_EVENT_CHARS) {
      throw new Error(`a server-sent event grew past ${MAX_EVENT_CHARS} characters without ending`);
    }
  }
}
