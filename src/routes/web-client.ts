// The browser client: the single-page app Vite builds into dist/web (see
// web/ and `npm run build`), served from the same process as the API.
// `GET /` answers index.html (never cached, so a new build is picked up at
// once); `GET /assets/<name>` answers the content-hashed files the page
// loads, cached for a year. Files are precompressed at build time (.br, .gz
// beside each file); the best one the client accepts is sent as it is.
// A browser already signed in gets the page with its session written in
// (who it is and the CSRF token, as Zulip's page_params carry them), so the
// client starts its first API calls without asking GET /json/session first.
// Both carry the client's Content-Security-Policy (http/security-headers.ts):
// nothing runs but the page's own script files, and no other site frames it.
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { authenticateSession } from "../actions/sessions.ts";
import type { MethodTable } from "../http/route.ts";
import { webClientPolicy } from "../http/security-headers.ts";
import { clearSessionCookie, sessionToken } from "../http/session-cookie.ts";
import { errorBody } from "../http/transport.ts";
import type { Services } from "../services.ts";

/** dist/web of the project: two levels above this module both in src/routes and in dist/routes. */
export const WEB_CLIENT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/web");

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
};

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Parley</title></head>
<body><h1>Parley</h1><p>The web client has not been built. Run <code>npm run build</code> (or <code>npm start</code>, which builds first) and reload.</p>
<p>The API is served at <code>/api/v1/</code>.</p></body></html>
`;

/** Asset names Vite writes: no directories, no dot-dot. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function acceptedEncodings(request: FastifyRequest): Set<string> {
  const header = request.headers["accept-encoding"];
  const value = Array.isArray(header) ? header.join(",") : (header ?? "");
  const out = new Set<string>();
  for (const part of value.split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    if (q !== undefined && Number(q.slice(2)) === 0) continue;
    out.add(name);
  }
  return out;
}

async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "EISDIR") return undefined;
    throw error;
  }
}

/** Sends `file` (or its precompressed twin) with `cacheControl`; false when the file does not exist. */
async function sendFile(request: FastifyRequest, reply: FastifyReply, file: string, cacheControl: string, vary = "Accept-Encoding"): Promise<boolean> {
  const type = CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream";
  const accepted = acceptedEncodings(request);
  for (const [encoding, suffix] of [["br", ".br"], ["gzip", ".gz"]] as const) {
    if (!accepted.has(encoding)) continue;
    const body = await readIfExists(file + suffix);
    if (body === undefined) continue;
    reply.header("content-encoding", encoding);
    reply.header("vary", vary);
    reply.header("cache-control", cacheControl).type(type).send(body);
    return true;
  }
  const body = await readIfExists(file);
  if (body === undefined) return false;
  reply.header("vary", vary);
  reply.header("cache-control", cacheControl).type(type).send(body);
  return true;
}

/** The id of the element holding the signed-in session in the page (web/src/model/session.ts reads it). */
export const SESSION_ELEMENT_ID = "parley-session";

/** JSON safe inside a <script> element: no "</script>", no "<!--". */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

/** The session the request's cookie names, or undefined (none, expired, ended, or its user deactivated). */
async function signedInSession(services: Services, request: FastifyRequest) {
  const token = sessionToken(request);
  if (token === undefined) return undefined;
  try {
    return await authenticateSession(services, token);
  } catch {
    // A stale cookie: the page (served signed out) takes it back.
    return undefined;
  }
}

export function webClientRoutes(app: FastifyInstance, services: Services, methods: MethodTable, dir: string = WEB_CLIENT_DIR): void {
  methods.add("/", "GET");
  methods.add("/assets/:name", "GET");
  const policy = webClientPolicy(services.config);
  app.get("/", async (request, reply) => {
    reply.header("content-security-policy", policy);
    const signedIn = await signedInSession(services, request);
    // The client trusts the page: without a session written in it shows the sign-in form without asking
    // GET /json/session, so a cookie naming no live session is taken back here.
    if (!signedIn && sessionToken(request) !== undefined) clearSessionCookie(services.config, request, reply);
    if (signedIn) {
      const page = await readIfExists(path.join(dir, "index.html"));
      if (page !== undefined) {
        const session = { user_id: signedIn.user.id, email: signedIn.user.delivery_email, csrf_token: signedIn.session.csrfToken };
        const element = `<script id="${SESSION_ELEMENT_ID}" type="application/json">${scriptJson(session)}</script>`;
        // This copy names the session's CSRF token: for this browser only, never stored by a cache.
        return reply
          .header("cache-control", "no-store")
          .header("vary", "Cookie")
          .type("text/html; charset=utf-8")
          .send(page.toString("utf8").replace("</head>", () => `${element}</head>`));
      }
    }
    // The page itself is revalidated on every load; what it names is immutable.
    // (Signed-in browsers get another copy: the page varies with the cookie.)
    if (await sendFile(request, reply, path.join(dir, "index.html"), "no-cache", "Accept-Encoding, Cookie")) return reply;
    return reply.status(200).header("cache-control", "no-cache").type("text/html; charset=utf-8").send(NOT_BUILT);
  });
  app.get<{ Params: { name: string } }>("/assets/:name", async (request, reply) => {
    const { name } = request.params;
    // The page's policy on its files too (an SVG opened on its own is a document).
    reply.header("content-security-policy", policy);
    if (ASSET_NAME.test(name) && (await sendFile(request, reply, path.join(dir, "assets", name), "public, max-age=31536000, immutable"))) {
      return reply;
    }
    // Zulip's error JSON, like every other unknown path (with every other reply's policy).
    reply.removeHeader("content-security-policy");
    return reply.status(404).header("cache-control", "no-cache").send(errorBody("File not found", "BAD_REQUEST"));
  });
}
