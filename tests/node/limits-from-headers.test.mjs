// limitsFromHeaders: the rate-limit headers of OpenAI and Groq, Anthropic and the IETF
// draft, read from a Headers instance, a Map or a plain object with names in any case
// (docs/guides/ai-sdk.md).

import { test, describe } from "node:test";
import assert from "node:assert/strict";

import { limitsFromHeaders } from "batch-pacer";

/** A fixed "now" for the RFC 3339 resets, so that their milliseconds are exact. */
const NOW = Date.parse("2026-03-01T12:00:00Z");

function atNow(t) {
  t.mock.method(Date, "now", () => NOW);
}

describe("OpenAI's and Groq's x-ratelimit-*", () => {
  test("every field, from a plain object with names in any case", () => {
    assert.deepEqual(
      limitsFromHeaders({
        "X-RateLimit-Limit-Requests": "500",
        "x-ratelimit-remaining-requests": "499",
        "X-RATELIMIT-RESET-REQUESTS": "120ms",
        "x-ratelimit-limit-tokens": "30000",
        "X-Ratelimit-Remaining-Tokens": "29000",
        "x-ratelimit-reset-tokens": "6m0s",
      }),
      {
        requestsLimit: 500,
        requestsRemaining: 499,
        requestsResetMs: 120,
        tokensLimit: 30000,
        tokensRemaining: 29000,
        tokensResetMs: 360_000,
      },
    );
  });

  test("Groq's fractional durations and whole seconds", () => {
    assert.deepEqual(limitsFromHeaders({ "x-ratelimit-reset-requests": "2m59.56s", "x-ratelimit-reset-tokens": "7" }), {
      requestsResetMs: 179_560,
      tokensResetMs: 7000,
    });
  });
});

describe("Anthropic's anthropic-ratelimit-*", () => {
  test("requests and tokens, resets as RFC 3339 times read as milliseconds from now", (t) => {
    atNow(t);
    assert.deepEqual(
      limitsFromHeaders({
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2026-03-01T12:00:01Z",
        "anthropic-ratelimit-tokens-limit": "40000",
        "anthropic-ratelimit-tokens-remaining": "39000",
        "anthropic-ratelimit-tokens-reset": "2026-03-01T13:00:30.5+01:00",
      }),
      {
        requestsLimit: 50,
        requestsRemaining: 49,
        requestsResetMs: 1000,
        tokensLimit: 40000,
        tokensRemaining: 39000,
        tokensResetMs: 30_500,
      },
    );
  });

  test("of the token kinds, the one with the fewest tokens left counts, with its limit and reset", (t) => {
    atNow(t);
    const limits = limitsFromHeaders({
      "anthropic-ratelimit-tokens-limit": "100000",
      "anthropic-ratelimit-tokens-remaining": "90000",
      "anthropic-ratelimit-tokens-reset": "2026-03-01T12:01:00Z",
      "anthropic-ratelimit-input-tokens-limit": "80000",
      "anthropic-ratelimit-input-tokens-remaining": "70000",
      "anthropic-ratelimit-input-tokens-reset": "2026-03-01T12:00:50Z",
      "anthropic-ratelimit-output-tokens-limit": "16000",
      "anthropic-ratelimit-output-tokens-remaining": "1200",
      "anthropic-ratelimit-output-tokens-reset": "2026-03-01T12:00:05Z",
    });
    assert.deepEqual(limits, { tokensLimit: 16000, tokensRemaining: 1200, tokensResetMs: 5000 });
  });

  test("a reset already passed is 0 ms", (t) => {
    atNow(t);
    assert.deepEqual(limitsFromHeaders({ "anthropic-ratelimit-requests-reset": "2026-03-01T11:59:00Z" }), {
      requestsResetMs: 0,
    });
  });
});

describe("IETF RateLimit and RateLimit-Policy", () => {
  test("a policy without a unit counts requests: remaining r, reset t seconds, limit q", () => {
    assert.deepEqual(
      limitsFromHeaders({ RateLimit: '"default";r=40;t=12', "RateLimit-Policy": '"default";q=100;w=60' }),
      { requestsRemaining: 40, requestsResetMs: 12_000, requestsLimit: 100 },
    );
  });

  test("a policy whose unit names tokens fills the token fields; other units are left out", () => {
    const limits = limitsFromHeaders({
      "ratelimit-policy": '"rpm";q=60;w=60, "tpm";q=90000;w=60;qu="tokens", "bytes";q=1000000;w=60;qu="content-bytes"',
      ratelimit: '"rpm";r=59;t=1, "tpm";r=85000;t=30, "bytes";r=5;t=2',
    });
    assert.deepEqual(limits, {
      requestsLimit: 60,
      requestsRemaining: 59,
      requestsResetMs: 1000,
      tokensLimit: 90000,
      tokensRemaining: 85000,
      tokensResetMs: 30_000,
    });
  });

  test("of two policies in requests, the one with the least left counts", () => {
    const limits = limitsFromHeaders({
      "RateLimit-Policy": "burst;q=10;w=1, daily;q=1000;w=86400",
      RateLimit: "burst;r=8;t=1, daily;r=3;t=3600",
    });
    assert.deepEqual(limits, { requestsLimit: 1000, requestsRemaining: 3, requestsResetMs: 3_600_000 });
  });

  test("RateLimit alone reads as requests; RateLimit-Policy alone gives the window's size", () => {
    assert.deepEqual(limitsFromHeaders({ ratelimit: '"p";r=7;t=2' }), { requestsRemaining: 7, requestsResetMs: 2000 });
    assert.deepEqual(limitsFromHeaders({ "ratelimit-policy": '"p";q=500;w=60' }), { requestsLimit: 500 });
  });
});

describe("header forms", () => {
  const expected = { requestsRemaining: 9, tokensResetMs: 1500 };

  test("a Headers instance", () => {
    const headers = new Headers({ "X-RateLimit-Remaining-Requests": "9", "x-ratelimit-reset-tokens": "1.5s" });
    assert.deepEqual(limitsFromHeaders(headers), expected);
  });

  test("a Map with names in any case", () => {
    const headers = new Map([
      ["X-RateLimit-Remaining-Requests", "9"],
      ["X-RATELIMIT-RESET-TOKENS", "1.5s"],
    ]);
    assert.deepEqual(limitsFromHeaders(headers), expected);
  });

  test("a Node-style object with numbers and arrays as values", () => {
    assert.deepEqual(limitsFromHeaders({ "x-ratelimit-remaining-requests": 9, "x-ratelimit-reset-tokens": ["1.5s"] }), expected);
  });
});

describe("headers that say nothing readable", () => {
  test("no rate-limit header, or no headers at all: undefined", () => {
    for (const headers of [{}, new Headers({ "content-type": "application/json" }), new Map(), undefined, null, "x", 42]) {
      assert.equal(limitsFromHeaders(headers), undefined, `for ${String(headers)}`);
    }
  });

  test("a reset of \"soon\" and a negative remaining are left out; readable fields stay", () => {
    assert.deepEqual(
      limitsFromHeaders({
        "anthropic-ratelimit-requests-reset": "soon",
        "anthropic-ratelimit-requests-remaining": "-3",
        "anthropic-ratelimit-requests-limit": "50",
      }),
      { requestsLimit: 50 },
    );
    assert.equal(limitsFromHeaders({ "x-ratelimit-reset-requests": "soon", "x-ratelimit-remaining-tokens": "-1" }), undefined);
    assert.equal(limitsFromHeaders({ ratelimit: '"p";r=-2;t=soon' }), undefined);
    assert.equal(limitsFromHeaders({ ratelimit: '"unclosed;r=2' }), undefined);
  });

  test("a count too large for a finite number is left out, not read as Infinity", () => {
    const huge = "9".repeat(400);
    assert.deepEqual(
      limitsFromHeaders({
        "x-ratelimit-limit-requests": huge,
        "x-ratelimit-remaining-requests": huge,
        "x-ratelimit-remaining-tokens": "7",
      }),
      { tokensRemaining: 7 },
    );
    assert.equal(limitsFromHeaders({ "anthropic-ratelimit-requests-remaining": huge }), undefined);
  });

  test("headers whose reading throws: undefined, never a throw", () => {
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("no keys");
        },
        get() {
          throw new Error("no values");
        },
      },
    );
    assert.equal(limitsFromHeaders(hostile), undefined);
  });
});
