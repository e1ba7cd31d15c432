// The few server-rendered HTML pages (the invitation link's sign-up form, the
// password reset forms): one minimal layout, and escaping for everything put
// into it. Pages run no scripts, cannot be framed by other sites (no
// clickjacking of their forms), post only back to this server, and send no
// Referer (a reset link's URL holds its token).
import type { FastifyReply } from "fastify";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);
}

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

/** Sends a page: `title` is escaped here, `body` is HTML the caller has escaped. */
export function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;
  return reply.status(status).headers(PAGE_HEADERS).send(html);
}

/** The string value of a posted form field (undefined when missing or not a single string). */
export function formField(body: unknown, name: string): string | undefined {
  const fields = (body ?? {}) as Record<string, unknown>;
  return typeof fields[name] === "string" ? (fields[name] as string) : undefined;
}
