// A hand-written SVG bar chart of workload 2: for each quota and implementation, the
// completion time divided by the lower bound, and the number of 429 answers. Both axes
// are logarithmic (the spread is wide); 429 bars use log10(1 + count) so zero shows.

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * @param {{ quota: string, rows: { name: string, ratio: number, rateLimited: number,
 *   failed: number }[] }[]} groups
 * @param {{ title: string, subtitle: string }} text
 */
export function quotaChart(groups, { title, subtitle }) {
  const rowH = 18;
  const groupGap = 30;
  const top = 78;
  const labelW = 330;
  const panelW = 300;
  const leftX = labelW + 20;
  const rightX = leftX + panelW + 90;
  const width = rightX + panelW + 70;
  const rows = groups.reduce((n, g) => n + g.rows.length, 0);
  const height = top + rows * rowH + groups.length * (groupGap - 8) + 36;

  const maxRatio = Math.max(2, ...groups.flatMap((g) => g.rows.map((r) => r.ratio).filter(Number.isFinite)));
  const ratioTicks = [1, 1.5, 2, 3, 5, 10, 20, 50, 100, 200, 500].filter((t) => t <= maxRatio * 1.05);
  const ratioTop = Math.log10(maxRatio * 1.1);
  const xRatio = (v) => leftX + (Math.log10(Math.max(1, v)) / ratioTop) * panelW;

  const max429 = Math.max(10, ...groups.flatMap((g) => g.rows.map((r) => r.rateLimited)));
  const top429 = Math.log10(1 + max429 * 1.1);
  const x429 = (v) => rightX + (Math.log10(1 + v) / top429) * panelW;
  const ticks429 = [0, 1, 10, 100, 1000, 10000, 100000].filter((t) => t <= max429 * 1.1);

  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="16" y="24" font-size="16" font-weight="600">${esc(title)}</text>`,
    `<text x="16" y="44" fill="#555">${esc(subtitle)}</text>`,
    `<text x="${leftX}" y="${top - 12}" font-weight="600">completion time ÷ lower bound (log scale)</text>`,
    `<text x="${rightX}" y="${top - 12}" font-weight="600">429 answers (log scale)</text>`,
  );
  const bottom = height - 30;
  let lastTick = -Infinity;
  for (const t of ratioTicks) {
    if (xRatio(t) - lastTick < 30) continue; // keep tick labels apart
    lastTick = xRatio(t);
    const x = xRatio(t).toFixed(1);
    out.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${bottom}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${x}" y="${bottom + 14}" text-anchor="middle" fill="#555">${t}×</text>`);
  }
  for (const t of ticks429) {
    const x = x429(t).toFixed(1);
    out.push(`<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${bottom}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${x}" y="${bottom + 14}" text-anchor="middle" fill="#555">${t.toLocaleString("en-US")}</text>`);
  }

  let y = top;
  for (const group of groups) {
    y += 6;
    out.push(`<text x="16" y="${y + 8}" font-weight="600">quota: ${esc(group.quota)}</text>`);
    y += groupGap - 14;
    for (const row of group.rows) {
      const ours = row.name.startsWith("batch-pacer");
      const fill = ours ? "#1f7a8c" : "#c8773a";
      const mid = y + rowH / 2;
      out.push(`<text x="${labelW + 10}" y="${mid + 4}" text-anchor="end">${esc(row.name)}</text>`);
      const w1 = Math.max(2, xRatio(row.ratio) - leftX);
      out.push(`<rect x="${leftX}" y="${y + 3}" width="${w1.toFixed(1)}" height="${rowH - 6}" fill="${fill}"/>`);
      const failed = row.failed > 0 ? ` (${row.failed} failed)` : "";
      const label = `${row.ratio.toFixed(2)}×${failed}`;
      // A long bar carries its label inside, so that it never runs into the next panel.
      const inside = w1 > panelW * 0.55;
      const lx = inside ? leftX + w1 - 4 : leftX + w1 + 4;
      out.push(`<text x="${lx.toFixed(1)}" y="${mid + 4}" fill="${inside ? "#fff" : "#333"}"${inside ? ' text-anchor="end"' : ""}>${esc(label)}</text>`);
      const w2 = Math.max(row.rateLimited > 0 ? 1 : 0, x429(row.rateLimited) - rightX);
      if (w2 > 0) out.push(`<rect x="${rightX}" y="${y + 3}" width="${w2.toFixed(1)}" height="${rowH - 6}" fill="${fill}"/>`);
      out.push(`<text x="${(rightX + w2 + 4).toFixed(1)}" y="${mid + 4}" fill="#333">${Math.round(row.rateLimited).toLocaleString("en-US")}</text>`);
      y += rowH;
    }
  }
  out.push(`<line x1="${leftX}" y1="${top - 4}" x2="${leftX}" y2="${bottom}" stroke="#888"/>`);
  out.push(`<line x1="${rightX}" y1="${top - 4}" x2="${rightX}" y2="${bottom}" stroke="#888"/>`);
  out.push("</svg>", "");
  return out.join("\n");
}
