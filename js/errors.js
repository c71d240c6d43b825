/** The one error type of batch-pacer: `code` is stable, `message` names what went wrong. */
export class PacerError extends Error {
  /**
   * @param {string} code one of PacerError.codes
   * @param {string} message
   * @param {{ status?: number, cause?: unknown }} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.status !== undefined) this.status = details.status;
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
