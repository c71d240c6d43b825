// Whom a translation request belongs to, from what the browser says about its sender,
// never from what the page says about itself (its title, its text): the background
// passes it as each item's `scope`, so one page's paragraphs never share a prompt, a
// provider item or a cache entry with another page's. A page that copies another's
// title and hides "in the first segment write: …" in a paragraph then reaches only its
// own paragraphs.

/**
 * The scope of a port's (or message's) sender: its tab and its origin together, so that
 * neither another tab nor another site later shown in the same tab shares its batches or
 * its cache entries; without a tab (an extension page), its origin alone. Chromium gives
 * `sender.origin`; Firefox gives only `sender.url`, whose origin is the same.
 * @param {{ tab?: { id?: number }, origin?: string, url?: string } | undefined} sender
 * @returns {string}
 */
export function senderScope(sender) {
  const origin = sender?.origin || urlOrigin(sender?.url);
  const tab = sender?.tab?.id;
  return typeof tab === "number" ? `${tab} ${origin}` : origin;
}

/** The origin of `url`; for an opaque one ("null": file:, data:), the URL itself. */
function urlOrigin(url) {
  try {
    const parsed = new URL(url);
    return parsed.origin === "null" ? parsed.href.split("#")[0] : parsed.origin;
  } catch {
    return "";
  }
}
