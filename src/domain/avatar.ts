// Default avatars drawn by the server itself, so no avatar needs a third-party
// service: a symmetric 5×5 identicon whose pattern and colour come from a hash.
import crypto from "node:crypto";

export function identiconSvg(seed: string): string {
  const digest = crypto.createHash("sha256").update(seed).digest();
  const hue = ((digest[0]! << 8) | digest[1]!) % 360;
  const cells: string[] = [];
  for (let row = 0; row < 5; row++) {
    for (let col = 0; col < 3; col++) {
      if ((digest[2 + row * 3 + col]! & 1) === 0) continue;
      for (const x of new Set([col, 4 - col])) cells.push(`<rect x="${x + 1}" y="${row + 1}" width="1" height="1"/>`);
    }
  }
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 7 7" width="100" height="100" shape-rendering="crispEdges">` +
    `<rect width="7" height="7" fill="hsl(${hue},25%,93%)"/>` +
    `<g fill="hsl(${hue},55%,45%)">${cells.join("")}</g></svg>`
  );
}
