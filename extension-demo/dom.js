// DOM building shared by the extension's pages (options and statistics).

/**
 * A new element: `attributes` become attributes (`text` sets the text content; undefined
 * and null are skipped), then `children` are appended.
 */
export function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}
