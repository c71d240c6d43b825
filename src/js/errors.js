/** The one error type of batch-pacer: `code` is stable, `message` names what went wrong. */
export class PacerError extends Error {
  /**
   * @param {string} code one of PacerError.codes
   * @param {string} message
   * @param {{ status?: number, cause?: unknown, retryAt?: number, option?: string }} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.status !== undefined) this.status = details.status;
    // A spent daily quota: epoch milliseconds of its reset, when the provider said.
    if (details.retryAt !== undefined) this.retryAt = details.retryAt;
    // An option error: the option it is about, so callers need not read the message.
    if (details.option !== undefined) this.option = details.option;
  }
}

PacerError.prototype.name = "PacerError";

/** Every code a PacerError can carry. */
PacerError.codes = Object.freeze([
  "not_initialized",
  "invalid_options",
  "invalid_input",
  "provider_error",
  "timeout",
  "count_mismatch",
  "aborted",
  "disposed",
  "queue_full",
]);
