// One provider for a pacer whose items go to several providers (keys, models, services):
// each call goes to the provider named by its `request.providerId`. With
// `fallbackProviders`, the pacer moves a provider's items to another `providerId` when
// it cannot serve them; this is what sends those calls to the other provider's function.
//
// The module imports only the package's errors, has no top-level await, and touches no
// `window`, so it loads unchanged wherever the package does.

import { PacerError } from "./errors.js";

/** Most ids a "no provider" message lists. */
const MAX_LISTED = 20;

/**
 * Returns a provider that hands each call to `map[request.providerId]`.
 *
 * The map is copied when the router is made (later changes to the object do not change
 * the routes) and read by own properties only, so a `providerId` such as `"constructor"`
 * or `"__proto__"` never reaches `Object.prototype`. A call whose `providerId` the map
 * does not hold is a failed call: it rejects with an Error whose message names the id
 * and `retryable: false`, so the pacer does not try the same call again.
 *
 * @param {Record<string, (request: object) => unknown>} map each `providerId` to its
 *   provider function
 * @returns {(request: object) => unknown} the provider: what the routed provider returns
 *   (a promise, a value or a stream), unchanged
 * @throws {PacerError} code `invalid_options` when `map` is not a plain object or one of
 *   its values is not a function; the message names what was wrong
 */
export function routeProviders(map) {
  if (map === null || typeof map !== "object" || Array.isArray(map) || !isPlainObject(map)) {
    throw new PacerError(
      "invalid_options",
      `routeProviders takes a plain object mapping each providerId to its provider function (got ${describe(map)})`,
    );
  }
  const routes = new Map();
  for (const [providerId, provider] of Object.entries(map)) {
    if (typeof provider !== "function") {
      throw new PacerError(
        "invalid_options",
        `routeProviders: the provider for providerId ${JSON.stringify(providerId)} must be a function (got ${describe(provider)})`,
        { option: providerId },
      );
    }
    routes.set(providerId, provider);
  }
  const known = [...routes.keys()];
  const listed =
    known.length === 0
      ? "none"
      : known.slice(0, MAX_LISTED).map((id) => JSON.stringify(id)).join(", ") +
        (known.length > MAX_LISTED ? `, … ${known.length - MAX_LISTED} more` : "");

  return function routedProvider(request) {
    const providerId = request?.providerId;
    const provider = typeof providerId === "string" ? routes.get(providerId) : undefined;
    if (provider === undefined) {
      const named = typeof providerId === "string" ? JSON.stringify(providerId) : describe(providerId);
      const error = new Error(`routeProviders has no provider for providerId ${named} (it has: ${listed})`);
      // The same call would meet the same map: never worth a retry.
      error.retryable = false;
      return Promise.reject(error);
    }
    return provider(request);
  };
}

/**
 * Whether `value` is a plain object: made by `{}`, `Object.create(null)` or `JSON.parse`,
 * in this realm or another (an object from a frame has that frame's `Object.prototype`).
 */
function isPlainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/** A short printable form of a value for messages. */
function describe(value) {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "function") return "a function";
  if (typeof value === "object") {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return typeof name === "string" && name !== "" && name !== "Object" ? `a ${name}` : "an object";
  }
  if (typeof value === "bigint") return `${value}n`;
  return String(value);
}
