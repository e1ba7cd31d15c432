// What the bench scripts share to talk to a server they started: waiting
// until it answers, and one API call over node:http with a keep-alive agent.
import type { ChildProcess } from "node:child_process";
import http from "node:http";

export interface BenchUser {
  id: number;
  email: string;
  apiKey: string;
}

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  /** performance.now() when the whole reply had arrived. */
  at: number;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls a URL until it answers (for about 10 s), so readiness does not depend on log output; fails at once if the child exits. */
export async function waitForHttp(url: string, child: ChildProcess): Promise<void> {
  let exited = false;
  child.once("exit", () => (exited = true));
  for (let i = 0; i < 400 && !exited; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not listening yet
    }
    await sleep(25);
  }
  throw new Error(`${url} did not come up`);
}

export const authHeader = (u: BenchUser) => `Basic ${Buffer.from(`${u.email}:${u.apiKey}`).toString("base64")}`;

/** Zulip's parameter encoding: strings raw, everything else as JSON. */
export function encode(params: Record<string, unknown>): string {
  return new URLSearchParams(Object.entries(params).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();
}

/** One API call through `agent`; `written` resolves once the request is on the wire. */
export function call(
  agent: http.Agent,
  user: BenchUser | null,
  method: string,
  urlPath: string,
  params: Record<string, unknown>,
  origin: string,
): { reply: Promise<Reply>; written: Promise<void> } {
  const query = method === "GET" || method === "DELETE";
  const encoded = encode(params);
  const headers: Record<string, string> = {};
  if (user) headers.authorization = authHeader(user);
  if (!query) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    headers["content-length"] = String(Buffer.byteLength(encoded));
  }
  let markWritten!: () => void;
  const written = new Promise<void>((r) => (markWritten = r));
  const reply = new Promise<Reply>((resolve, reject) => {
    const req = http.request(`${origin}/api/v1${urlPath}${query && encoded ? `?${encoded}` : ""}`, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const at = performance.now();
        const text = Buffer.concat(chunks).toString();
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), at });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text, at });
        }
      });
      res.on("error", reject);
    });
    req.on("error", (e) => {
      markWritten();
      reject(e);
    });
    req.on("finish", markWritten);
    req.end(query ? undefined : encoded);
  });
  return { reply, written };
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/** The p-th percentile of ascending `sorted` (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
