// The one way the page talks to the server: Zulip's /json/… paths, signed in
// by the session cookie, with the session's CSRF token on unsafe methods.
// Parameters travel as Zulip's clients send them: form-encoded, each value a
// string as it is or JSON for anything else.
import { t } from "../i18n.ts";

export type Params = Record<string, unknown>;

/** A failed call: the server's error JSON (code, msg, extra fields) or a network failure (code "NETWORK_ERROR"). */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, code: string, message: string, body: Record<string, unknown> = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
  get isNetwork(): boolean {
    return this.code === "NETWORK_ERROR";
  }
}

export function encodeParams(params: Params): URLSearchParams {
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    out.append(key, typeof value === "string" ? value : JSON.stringify(value));
  }
  return out;
}

let csrfToken: string | null = null;

/** The session's CSRF token, learned at sign-in or from GET /json/session. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Told when a call finds the session gone (401), so the app can show the sign-in page. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Do not treat a 401 as "signed out" (the session check itself). */
  quietUnauthorized?: boolean;
}

export async function call<T = Record<string, unknown>>(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, params: Params = {}, options: CallOptions = {}): Promise<T> {
  const encoded = encodeParams(params);
  let url = `/json${path}`;
  const headers: Record<string, string> = { accept: "application/json" };
  let body: string | undefined;
  if (method === "GET") {
    const query = encoded.toString();
    if (query) url += `?${query}`;
  } else {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = encoded.toString();
    if (csrfToken !== null) headers["x-csrftoken"] = csrfToken;
  }
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body, credentials: "same-origin", signal: options.signal });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, "NETWORK_ERROR", t("Cannot reach the server"));
  }
  let json: Record<string, unknown> | undefined;
  try {
    json = (await response.json()) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  if (response.ok && json?.result === "success") return json as T;
  if (json === undefined) {
    // A proxy's error page or a server that is restarting: as good as unreachable.
    throw new ApiError(response.status, response.status >= 500 ? "NETWORK_ERROR" : "BAD_RESPONSE", t("The server answered {{status}}", { status: response.status }));
  }
  const code = typeof json.code === "string" ? json.code : "BAD_REQUEST";
  const msg = typeof json.msg === "string" ? json.msg : t("Error {{status}}", { status: response.status });
  if (response.status === 401 && !options.quietUnauthorized) onUnauthorized?.();
  throw new ApiError(response.status, code, msg, json);
}

/** POST /json/user_uploads with one file (multipart, as Zulip's clients send it): the file's URL on this server. */
export async function uploadFile(file: File, signal?: AbortSignal): Promise<{ url: string; filename: string }> {
  const json = await postFile("/user_uploads", file, signal);
  return { url: String(json.url ?? json.uri), filename: String(json.filename ?? file.name) };
}

/** POSTs one file as multipart form data (uploads, avatars, custom emoji); the success reply. */
export async function postFile(path: string, file: File, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.append("file", file, file.name);
  const headers: Record<string, string> = { accept: "application/json" };
  if (csrfToken !== null) headers["x-csrftoken"] = csrfToken;
  let response: Response;
  try {
    response = await fetch(`/json${path}`, { method: "POST", headers, body: form, credentials: "same-origin", signal });
  } catch {
    throw new ApiError(0, "NETWORK_ERROR", t("Cannot reach the server"));
  }
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (response.ok && json.result === "success") return json;
  throw new ApiError(response.status, typeof json.code === "string" ? json.code : "BAD_REQUEST", typeof json.msg === "string" ? json.msg : t("Upload failed ({{status}})", { status: response.status }), json);
}

export const api = {
  get: <T = Record<string, unknown>>(path: string, params?: Params, options?: CallOptions) => call<T>("GET", path, params, options),
  post: <T = Record<string, unknown>>(path: string, params?: Params, options?: CallOptions) => call<T>("POST", path, params, options),
  patch: <T = Record<string, unknown>>(path: string, params?: Params, options?: CallOptions) => call<T>("PATCH", path, params, options),
  delete: <T = Record<string, unknown>>(path: string, params?: Params, options?: CallOptions) => call<T>("DELETE", path, params, options),
};

/**
 * POST /json/user_uploads with one file, telling `onProgress` the share sent
 * (0…1) as it goes (fetch cannot report upload progress, so this uses
 * XMLHttpRequest); `signal` aborts it.
 */
export function uploadFileWithProgress(file: File, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<{ url: string; filename: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/json/user_uploads");
    xhr.setRequestHeader("accept", "application/json");
    if (csrfToken !== null) xhr.setRequestHeader("x-csrftoken", csrfToken);
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(xhr.responseText) as Record<string, unknown>;
      } catch {
        // Not JSON: reported below by status.
      }
      if (xhr.status >= 200 && xhr.status < 300 && json.result === "success") {
        resolve({ url: String(json.url ?? json.uri), filename: String(json.filename ?? file.name) });
        return;
      }
      if (xhr.status === 401) onUnauthorized?.();
      reject(new ApiError(xhr.status, typeof json.code === "string" ? json.code : "BAD_REQUEST", typeof json.msg === "string" ? json.msg : t("Upload failed ({{status}})", { status: xhr.status }), json));
    };
    xhr.onerror = () => reject(new ApiError(0, "NETWORK_ERROR", t("Cannot reach the server")));
    xhr.onabort = () => reject(new DOMException("Upload cancelled", "AbortError"));
    if (signal) {
      if (signal.aborted) {
        reject(new DOMException("Upload cancelled", "AbortError"));
        return;
      }
      signal.addEventListener("abort", () => xhr.abort(), { once: true });
    }
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
}
