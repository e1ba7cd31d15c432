// A deterministic fuzz corpus over every route the server registers (the
// /api/v1 endpoints with their declared parameters, and the files and pages
// outside it), as a signed-in owner, a signed-in guest and a stranger:
// malformed bodies of each content type, broken HTTP framing, wrong types,
// huge lists, deep JSON, NUL and invalid UTF-8, oversized values, bad path
// IDs and bad credentials. Every answer must be a 4xx (or a success, where
// the input happens to be valid) and never a 5xx; every error must be
// Zulip's `{"result":"error","msg","code"}` JSON (pages meant for browsers
// may answer with their HTML page instead); a redirect may only lead to this
// server's own uploads.
//
// The corpus is the same on every run (seeded PRNG; FUZZ_SEED picks
// another). FUZZ_LOG=1 shows the server's error log and where the time went.
// Failures are reported grouped by class and kind of failure, naming every
// route that failed so, with an example request and answer.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { API_ROUTES, buildApp } from "../src/app.ts";
import { MAX_WEBHOOK_JSON_DEPTH } from "../src/domain/json.ts";
import { Role } from "../src/domain/roles.ts";
import { API_PREFIX, JSON_PREFIX } from "../src/http/route.ts";
import { INTEGRATIONS } from "../src/integrations/index.ts";
import { DIALECT, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

// ---------------------------------------------------------------------------
// Deterministic randomness

const SEED = Number(process.env.FUZZ_SEED ?? 18_2025);

class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  /** mulberry32: a float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  /** Up to k distinct items, in a shuffled order. */
  sample<T>(items: readonly T[], k: number): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, k);
  }
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

// ---------------------------------------------------------------------------
// The routes, as the app registers them

type ParamKind = "int" | "bool" | "json" | "string" | "other";

interface FuzzParam {
  name: string;
  kind: ParamKind;
  required: boolean;
  /** A value the parameter accepts, sent for required parameters that are not being fuzzed. */
  baseline: string;
}

interface FuzzRoute {
  method: string;
  /** Fastify URL pattern, e.g. /api/v1/users/:user or /user_uploads/:realm_id/* */
  url: string;
  key: string;
  api: boolean;
  /** Answers errors with an HTML page (file downloads, the invitation page), as Zulip does. */
  page: boolean;
  pathParams: string[];
  /** Declared parameters other than path parameters; an undeclared one for routes that have none. */
  params: FuzzParam[];
  /** Values worth trying on top of the generic classes, by parameter name. */
  extra: Record<string, string[]>;
}

/** Parameters of the routes outside /api/v1, which declare none (they read request.query/body themselves). */
const PAGE_ROUTES: Record<string, { params?: string[]; page?: boolean; extra?: Record<string, string[]> }> = {
  "GET /avatar/:user_id": { params: ["v"] },
  "GET /avatar/:user_id/medium": { params: ["v"] },
  "GET /realm_icon.svg": {},
  // Incoming webhooks: under /api/v1 but outside API_ROUTES (the body is the third party's, read raw; src/routes/webhooks.ts).
  "GET /api/v1/external/:integration": { params: ["api_key", "stream", "topic"] },
  "POST /api/v1/external/:integration": { params: ["api_key", "stream", "topic"] },
  "GET /user_uploads/:realm_id/*": { page: true },
  "GET /user_uploads/download/:realm_id/*": { page: true },
  "GET /user_uploads/temporary/:token/*": { page: true },
  "GET /thumbnail": {
    params: ["url", "size"],
    extra: {
      url: [
        "https://evil.example/x",
        "http://evil.example/user_uploads/1/a/b.png",
        "//evil.example/x",
        "/\\evil.example/x",
        "https:evil.example",
        "javascript:alert(1)",
        "user_uploads/../../etc/passwd",
        "user_uploads/1/a\r\nSet-Cookie: x=1",
        "user_uploads/1/\u00ff\u0000.png",
        "http://parley.test.evil.example/user_uploads/1/a.png",
        "http://parley.test@evil.example/user_uploads/1/a.png",
      ],
    },
  },
  "GET /user_avatars/:realm_id/emoji/images/:file_name": { page: true },
  // An organization export's tarball (administrators only): the HTML errors of the other files.
  "GET /user_avatars/exports/:realm_id/:token/:file_name": { page: true },
  // Avatar and icon images, and the emoji data file: a missing one is the HTML "File not found" of the other files.
  "GET /user_avatars/:realm_id/:file_name": { page: true },
  "GET /user_avatars/:realm_id/default/:file_name": { page: true },
  "GET /user_avatars/:realm_id/realm/icon.png": { page: true, params: ["version"] },
  "GET /static/generated/emoji/:file_name": { page: true },
  "GET /join/:key": { page: true },
  "POST /join/:key": { page: true, params: ["full_name", "password", "email"] },
  "GET /accounts/password/reset": { page: true },
  "POST /accounts/password/reset": { page: true, params: ["email"] },
  "GET /accounts/password/reset/:token": { page: true },
  "POST /accounts/password/reset/:token": { page: true, params: ["new_password", "new_password_confirm"] },
  "GET /accounts/unsubscribe/:type/:token": { page: true },
  "POST /accounts/unsubscribe/:type/:token": { page: true },
};

/** Routes that may end the fuzzing accounts (deactivate them, or replace their API keys): fuzzed after everything else. */
const RUN_LAST = new Set([`DELETE ${API_PREFIX}/users/me`, `POST ${API_PREFIX}/users/me/api_key/regenerate`]);

const BASELINE_CANDIDATES = ["1", "true", "[]", "{}", "[1]", "x", "stream", "channel", "direct", "add", "read", "newest", "topic"];

/** What kind of value a declared parameter takes, found by trying its converter on samples. */
function classify(convert: (raw: string, name: string) => unknown, name: string): { kind: ParamKind; baseline: string } {
  const accepts = (raw: string) => {
    try {
      convert(raw, name);
      return true;
    } catch {
      return false;
    }
  };
  let kind: ParamKind = "other";
  if (accepts("some text")) kind = "string";
  else if (accepts("17")) kind = accepts("null") || accepts("[]") ? "json" : "int";
  else if (accepts("true")) kind = "bool";
  else if (accepts("[]") || accepts("{}") || accepts("[1]") || accepts("null")) kind = "json";
  return { kind, baseline: BASELINE_CANDIDATES.find(accepts) ?? "x" };
}

function pathParamNames(url: string): string[] {
  const names = [...url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  return url.endsWith("*") ? [...names, "*"] : names;
}

const UNDECLARED: FuzzParam = { name: "fuzz_extra", kind: "other", required: false, baseline: "x" };

async function enumerateRoutes(t: TestApp): Promise<FuzzRoute[]> {
  // A second app on the same services, never started or closed: only its route table is read.
  const registered: { method: string; url: string }[] = [];
  await buildApp(t.services, { onRoute: (method, url) => registered.push({ method, url }) });
  const routes: FuzzRoute[] = [];
  for (const { method, url } of registered) {
    if (method === "HEAD") continue;
    const key = `${method} ${url}`;
    const pathParams = pathParamNames(url);
    const prefix = [API_PREFIX, JSON_PREFIX].find((p) => url.startsWith(`${p}/`));
    if (prefix !== undefined && !(key in PAGE_ROUTES)) {
      const declared = API_ROUTES.find((r) => r.method === method && prefix + r.path === url);
      assert.ok(declared, `${key} is registered but not in API_ROUTES`);
      // The browser's copies of /api/v1 routes run the same handlers (fuzzed there) behind the session cookie.
      if (prefix === JSON_PREFIX && (declared.surface ?? "both") === "both") continue;
      const params = Object.entries(declared.params)
        .filter(([name]) => !pathParams.includes(name))
        .map(([name, spec]) => ({ name, required: spec.mode === "required", ...classify(spec.convert, name) }));
      routes.push({ method, url, key, api: true, page: false, pathParams, params: params.length > 0 ? params : [UNDECLARED], extra: {} });
    } else {
      const spec = PAGE_ROUTES[key] ?? {};
      const params = (spec.params ?? []).map((name) => ({ name, kind: "string" as const, required: false, baseline: "x" }));
      routes.push({ method, url, key, api: false, page: spec.page ?? false, pathParams, params: params.length > 0 ? params : [UNDECLARED], extra: spec.extra ?? {} });
    }
  }
  // Every API route is registered once.
  assert.equal(routes.filter((r) => r.api).length, API_ROUTES.length);
  return routes;
}

// ---------------------------------------------------------------------------
// Values

/** Bytes of a parameter value; `json`: it is JSON text and may be inlined as such in a JSON body. */
interface Value {
  bytes: Buffer;
  json?: boolean;
}

const text = (s: string, json = false): Value => ({ bytes: Buffer.from(s, "utf8"), json });

/** Large values are made once and shared by every request that sends them (their encodings are memoized too). */
const largeValues = new Map<string, Value>();
function large(key: string, make: () => Value): Value {
  let value = largeValues.get(key);
  if (!value) largeValues.set(key, (value = make()));
  return value;
}

const hugeList = (n: number): Value => large(`list ${n}`, () => text(`[${Array.from({ length: n }, (_, i) => i + 1).join(",")}]`, true));
const deepList = (depth: number, closed: boolean): Value =>
  large(`deep ${depth} ${closed}`, () => text("[".repeat(depth) + (closed ? "]".repeat(depth) : ""), closed));
const deepObject = (depth: number): Value => large(`object ${depth}`, () => text('{"a":'.repeat(depth) + "1" + "}".repeat(depth), true));
const longText = (ch: string, n: number): Value => large(`text ${ch} ${n}`, () => text(ch.repeat(n)));

const WRONG_TYPE = ["abc", "{", "[1,", '{"a":1}', "true", "1.5", '"s"', "[]", "null", "", " ", "0x10", "[[]]", '{"__proto__":{"x":1}}'];
const INT_RANGE = ["-1", "-9223372036854775809", "9223372036854775808", "1e308", "99999999999999999999999999", "-0", "0", "4294967296", "-2147483649"];

function nulValues(kind: ParamKind): Value[] {
  const values = [text("nul\u0000x"), text("\u0000")];
  if (kind === "json" || kind === "other") values.push(text('["a\\u0000b"]', true), text('{"a\\u0000":1}', true));
  return values;
}

function invalidUtf8Values(kind: ParamKind): Value[] {
  const values: Value[] = [{ bytes: Buffer.from([0xff, 0xfe, 0x61]) }, { bytes: Buffer.from([0x61, 0xc3, 0x28, 0xed, 0xa0, 0x80]) }];
  if (kind === "json" || kind === "other") values.push({ bytes: Buffer.concat([Buffer.from('["'), Buffer.from([0xff, 0xfe]), Buffer.from('"]')]) });
  return values;
}

const PCT = Array.from({ length: 256 }, (_, b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`);
const pctMemo = new WeakMap<Buffer, string>();

/**
 * Percent-encodes a value for a query string or form body: every byte that
 * could end or change it (& = + % # space, controls, and all non-ASCII bytes,
 * so invalid UTF-8 travels as %FF%FE). JSON punctuation stays as it is, as
 * clients send it, which keeps the huge values small.
 */
function pct(bytes: Buffer): string {
  let encoded = pctMemo.get(bytes);
  if (encoded === undefined) {
    encoded = bytes.toString("latin1").replace(/[^A-Za-z0-9\-._~[\]{},:"!$'()*;@/?]/g, (c) => PCT[c.charCodeAt(0)]!);
    pctMemo.set(bytes, encoded);
  }
  return encoded;
}

const jsonStringMemo = new WeakMap<Buffer, Buffer>();

/** A JSON string literal of raw bytes: quotes, backslashes and controls escaped, everything else (invalid UTF-8 too) as is. */
function jsonStringBytes(bytes: Buffer): Buffer {
  let literal = jsonStringMemo.get(bytes);
  if (literal === undefined) {
    literal = jsonStringLiteral(bytes);
    // The large values are shared between requests: escape each once.
    if (bytes.length > 4096) jsonStringMemo.set(bytes, literal);
  }
  return literal;
}

function jsonStringLiteral(bytes: Buffer): Buffer {
  const out: Buffer[] = [Buffer.from('"')];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x22 || b === 0x5c || b < 0x20) {
      out.push(bytes.subarray(start, i), Buffer.from(`\\u${b.toString(16).padStart(4, "0")}`));
      start = i + 1;
    }
  }
  out.push(bytes.subarray(start), Buffer.from('"'));
  return Buffer.concat(out);
}

// ---------------------------------------------------------------------------
// Requests

type Who = "owner" | "guest" | "anon";
type Encoding = "query" | "form" | "multipart" | "json";

interface HttpRequest {
  kind: "http";
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

interface RawRequest {
  kind: "raw";
  bytes: Buffer;
  /**
   * End the connection's sending side after the bytes: how a body is cut
   * short. Otherwise the request says Connection: close and the server ends
   * it (Node drops a response still being prepared when the client half-closes).
   */
  halfClose?: boolean;
}

interface Case {
  route: FuzzRoute;
  cls: string;
  who: Who;
  detail: string;
  /** Built when sent (and again to describe a failure): the corpus holds megabytes of values, not of bodies. */
  request: () => HttpRequest | RawRequest;
  /** Slack-compatible webhook: its errors are `{"ok": false, "error"}`, as Slack's (and Zulip's slack_incoming). */
  slackErrors?: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  error?: string;
}

interface Identities {
  owner: TestUser;
  guest: TestUser;
  realmId: number;
}

function authHeader(ids: Identities, who: Who): Record<string, string> {
  if (who === "anon") return {};
  const user = ids[who];
  return { authorization: `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString("base64")}` };
}

/** A path parameter that names nothing but has the right shape, so the value under test is what fails. */
function baselinePathValue(name: string, ids: Identities): string {
  if (name === "realm_id") return String(ids.realmId);
  if (name === "*") return "00/nothing-here/file.txt";
  if (name === "emoji_name") return "fuzz_emoji";
  if (name === "file_name") return "nothing.png";
  if (name === "key" || name === "token") return "nothing";
  return "999999";
}

/** Fills a URL pattern; `overrides` are already percent-encoded. */
function fillPath(route: FuzzRoute, ids: Identities, overrides: Record<string, string> = {}): string {
  let path = route.url;
  for (const name of route.pathParams) {
    const value = overrides[name] ?? encodeURIComponent(baselinePathValue(name, ids)).replace(/%2F/g, "/");
    path = name === "*" ? path.replace(/\*$/, () => value) : path.replace(`:${name}`, () => value);
  }
  return path;
}

function multipartBody(fields: [string, Value][], boundary: string): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`), value.bytes, Buffer.from("\r\n"));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(parts);
}

function jsonBody(fields: [string, Value][], inlineJson: boolean): Buffer {
  const parts: Buffer[] = [Buffer.from("{")];
  fields.forEach(([name, value], i) => {
    if (i > 0) parts.push(Buffer.from(","));
    parts.push(Buffer.from(`${JSON.stringify(name)}:`), inlineJson && value.json ? value.bytes : jsonStringBytes(value.bytes));
  });
  parts.push(Buffer.from("}"));
  return Buffer.concat(parts);
}

/** The random parts of a request, drawn when the corpus is built so that building the request later is deterministic. */
interface Draw {
  boundary: string;
  inlineJson: boolean;
}

/** A request carrying `fields` in the given encoding (GET routes: always the query string). */
function paramRequest(route: FuzzRoute, ids: Identities, who: Who, fields: [string, Value][], encoding: Encoding, draw: Draw): HttpRequest {
  const headers = authHeader(ids, who);
  let url = fillPath(route, ids);
  const enc: Encoding = route.method === "GET" ? "query" : encoding;
  let body: Buffer | undefined;
  const urlencoded = () => fields.map(([k, v]) => `${pct(Buffer.from(k))}=${pct(v.bytes)}`).join("&");
  if (enc === "query") {
    if (fields.length > 0) url += `?${urlencoded()}`;
  } else if (enc === "form") {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = Buffer.from(urlencoded(), "latin1");
  } else if (enc === "multipart") {
    headers["content-type"] = `multipart/form-data; boundary=${draw.boundary}`;
    body = multipartBody(fields, draw.boundary);
  } else {
    headers["content-type"] = "application/json";
    body = jsonBody(fields, draw.inlineJson);
  }
  return { kind: "http", method: route.method, path: url, headers, ...(body ? { body } : {}) };
}

/** The route's required parameters at their baseline values, and `name` at `value`. */
function fieldsWith(route: FuzzRoute, name: string, value: Value): [string, Value][] {
  const fields: [string, Value][] = route.params.filter((p) => p.required && p.name !== name).map((p) => [p.name, text(p.baseline)]);
  fields.push([name, value]);
  return fields;
}

// ---------------------------------------------------------------------------
// The corpus

/** The class groups, one test each. */
const GROUPS = [
  "malformed multipart",
  "malformed urlencoded",
  "malformed JSON body",
  "content types",
  "HTTP framing",
  "credentials",
  "path IDs",
  "wrong types",
  "integer range",
  "NUL",
  "invalid UTF-8",
  "oversized values",
  "huge lists",
  "deep JSON",
  "redirects",
  "webhook payloads",
] as const;
type Group = (typeof GROUPS)[number];

interface Corpus {
  byGroup: Map<Group, Case[]>;
  /** Every case of the routes that may deactivate the fuzzing accounts. */
  last: Case[];
}

function rawHttp(head: string, body: Buffer | string = "", halfClose = false): RawRequest {
  return { kind: "raw", bytes: Buffer.concat([Buffer.from(head, "latin1"), Buffer.from(body)]), halfClose };
}

function buildCorpus(routes: FuzzRoute[], ids: Identities, rng: Rng): Corpus {
  const byGroup = new Map<Group, Case[]>(GROUPS.map((g) => [g, []]));
  const last: Case[] = [];
  const add = (group: Group, route: FuzzRoute, cls: string, who: Who, detail: string, request: HttpRequest | RawRequest | (() => HttpRequest)) => {
    const item: Case = { route, cls, who, detail, request: typeof request === "function" ? request : () => request };
    if (RUN_LAST.has(route.key)) last.push(item);
    else byGroup.get(group)!.push(item);
  };
  const bodyEncodings: Encoding[] = ["form", "multipart", "json", "query"];

  for (const route of routes) {
    const takesBody = route.method !== "GET";
    const auth = (who: Who) => authHeader(ids, who);
    const path = fillPath(route, ids);
    const withBody = (who: Who, contentType: string | undefined, body: Buffer | string): HttpRequest => ({
      kind: "http",
      method: route.method,
      path,
      headers: { ...auth(who), ...(contentType !== undefined ? { "content-type": contentType } : {}) },
      body: Buffer.from(body),
    });
    const someone = (): Who => rng.pick(["guest", "anon"] as const);

    // --- Bodies of each content type, malformed.
    if (takesBody) {
      const first = route.params.find((p) => p.required) ?? route.params[0]!;
      const part = `Content-Disposition: form-data; name="${first.name}"\r\n\r\n`;
      const multipart: [string, string, Buffer | string][] = [
        ["no boundary", "multipart/form-data", `${first.name}=1`],
        ["garbage", "multipart/form-data; boundary=XyZ", rng.bytes(200)],
        ["unterminated part", "multipart/form-data; boundary=XyZ", `--XyZ\r\n${part}value-without-end`],
        ["empty boundary", "multipart/form-data; boundary=", "--\r\n\r\n"],
        ["boundary over 256 characters", `multipart/form-data; boundary=${"b".repeat(300)}`, `--${"b".repeat(300)}\r\n${part}x\r\n--${"b".repeat(300)}--\r\n`],
        [
          "unterminated file part",
          "multipart/form-data; boundary=XyZ",
          `--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n`,
        ],
        ["part without headers", "multipart/form-data; boundary=XyZ", `--XyZ\r\n\r\nvalue\r\n--XyZ--\r\n`],
        ["malformed part header", "multipart/form-data; boundary=XyZ", `--XyZ\r\nthis is no header\r\n\r\nvalue\r\n--XyZ--\r\n`],
        ["__proto__ field", "multipart/form-data; boundary=XyZ", `--XyZ\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\n{"a":1}\r\n--XyZ--\r\n`],
        [
          "JSON part that is not JSON",
          "multipart/form-data; boundary=XyZ",
          `--XyZ\r\n${part.replace("\r\n\r\n", "\r\nContent-Type: application/json\r\n\r\n")}{{{\r\n--XyZ--\r\n`,
        ],
        ["empty body", "multipart/form-data; boundary=XyZ", ""],
        ["only the closing boundary", "multipart/form-data; boundary=XyZ", "--XyZ--\r\n"],
      ];
      // The three forms of the issue on every route, a sample of the others.
      for (const [detail, type, body] of [...multipart.slice(0, 3), ...rng.sample(multipart.slice(3), 1)]) {
        add("malformed multipart", route, `multipart: ${detail}`, "owner", detail, withBody("owner", type, body));
      }
      for (const [detail, type, body] of rng.sample(multipart, 1)) {
        const who = someone();
        add("malformed multipart", route, `multipart: ${detail}`, who, detail, withBody(who, type, body));
      }

      const form: [string, Buffer | string][] = [
        ["bad % escapes", `${first.name}=%zz&%=%&b=%4&%%41=1`],
        ["invalid UTF-8 escapes", `${first.name}=%FF%FE&%C3%28=%ED%A0%80`],
        ["raw invalid UTF-8", Buffer.concat([Buffer.from(`${first.name}=`), Buffer.from([0xff, 0xfe, 0x00])])],
        ["no = signs", "&&&&"],
        ["__proto__ key", `__proto__=1&constructor=2&${first.name}=1`],
      ];
      for (const [detail, body] of rng.sample(form, 1)) {
        add("malformed urlencoded", route, `urlencoded: ${detail}`, "owner", detail, withBody("owner", "application/x-www-form-urlencoded", body));
      }
      const [formDetail, formBody] = rng.pick(form);
      const formWho = someone();
      add("malformed urlencoded", route, `urlencoded: ${formDetail}`, formWho, formDetail, withBody(formWho, "application/x-www-form-urlencoded", formBody));

      const json: [string, Buffer | string][] = [
        ["not JSON", "{{{"],
        ["empty", ""],
        ["truncated", `{"${first.name}": [1, 2`],
        ["an array", "[1,2,3]"],
        ["a string", '"just a string"'],
        ["null", "null"],
        ["__proto__ key", '{"__proto__": {"polluted": 1}}'],
        ["constructor.prototype", '{"constructor": {"prototype": {"polluted": 1}}}'],
        ["invalid UTF-8", Buffer.concat([Buffer.from(`{"${first.name}": "`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])],
        ["UTF-16", Buffer.from(`{"${first.name}": "x"}`, "utf16le")],
      ];
      for (const [detail, body] of rng.sample(json, 2)) {
        add("malformed JSON body", route, `JSON body: ${detail}`, "owner", detail, withBody("owner", "application/json", body));
      }
      const [jsonDetail, jsonBodyText] = rng.pick(json);
      const jsonWho = someone();
      add("malformed JSON body", route, `JSON body: ${jsonDetail}`, jsonWho, jsonDetail, withBody(jsonWho, "application/json", jsonBodyText));

      const types: [string, string][] = [
        [";;;", "x=1"],
        ["text/plain", "x=1"],
        ["application/octet-stream", "\u0000\u0001"],
        ["application/json; charset=latin1", "{}"],
        ["application/x-www-form-urlencoded; charset=utf-16", "x=1"],
        ["multipart/mixed; boundary=XyZ", "--XyZ--\r\n"],
        ["image/png", "\x89PNG"],
      ];
      for (const [type, body] of rng.sample(types, 1)) {
        add("content types", route, `content type ${type}`, "owner", type, withBody("owner", type, body));
      }
    }

    // --- Broken HTTP framing, on raw sockets. The owner's credentials, so the body is read.
    const head = (extra: string) =>
      `${route.method} ${path} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n${Object.entries(auth("owner"))
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("")}${extra}\r\n`;
    const chunked = "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n";
    const framing: [string, RawRequest][] = [
      ["Content-Length longer than the body", rawHttp(head("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n"), "a=1", true)],
      ["Content-Length not a number", rawHttp(head("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: abc\r\n"), "a=1")],
      ["two different Content-Lengths", rawHttp(head("Content-Length: 3\r\nContent-Length: 5\r\n"), "a=1")],
      ["Content-Length and chunked", rawHttp(head("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"), "0\r\n\r\n")],
      ["bad chunk size", rawHttp(head(chunked), "zz\r\na=1\r\n0\r\n\r\n")],
      ["chunked body cut short", rawHttp(head(chunked), "10\r\na=1", true)],
      [
        "chunked multipart cut short",
        rawHttp(head("Content-Type: multipart/form-data; boundary=XyZ\r\nTransfer-Encoding: chunked\r\n"), '40\r\n--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\n', true),
      ],
      ["unknown transfer coding", rawHttp(head("Transfer-Encoding: gzip, zorro\r\n"), "a=1")],
      ["NUL in a header", rawHttp(head("X-Fuzz: a\u0000b\r\n"))],
      ["header too large", rawHttp(head(`X-Fuzz: ${"h".repeat(20_000)}\r\n`))],
      ["raw invalid UTF-8 in the path", rawHttp(head("").replace(path, `${path}/\u00ff\u00fe`))],
      ["space in the path", rawHttp(head("").replace(path, `${path}/a b`))],
    ];
    for (const [detail, request] of rng.sample(framing, 2)) add("HTTP framing", route, `framing: ${detail}`, "owner", detail, request);
    const method = rng.pick(["FOO", "PROPFIND", "BREW", "get", "PRI"]);
    add("HTTP framing", route, `framing: method ${method}`, "anon", method, rawHttp(`${method} ${path} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n`));

    // --- Credentials that are not.
    const basic = (bytes: Buffer) => `Basic ${bytes.toString("base64")}`;
    const owner = ids.owner;
    const credentials: [string, string][] = [
      ["NUL in the email", basic(Buffer.from(`${owner.email}\u0000:${owner.apiKey}`))],
      ["NUL in the key", basic(Buffer.from(`${owner.email}:${owner.apiKey}\u0000`))],
      ["invalid UTF-8", basic(Buffer.concat([Buffer.from([0xff, 0xfe, 0x3a]), Buffer.from(owner.apiKey)]))],
      ["garbage base64", "Basic !!!***~~~"],
      ["no colon", basic(Buffer.from(owner.email))],
      ["very long", basic(Buffer.from(`${"e".repeat(4000)}:${"k".repeat(4000)}`))],
      ["two schemes", `Basic ${basic(Buffer.from(`${owner.email}:${owner.apiKey}`))}`],
      ["latin-1 header bytes", `Basic \u00ff\u00fe`],
    ];
    for (const [detail, value] of rng.sample(credentials, 2)) {
      add("credentials", route, `credentials: ${detail}`, "anon", detail, { kind: "http", method: route.method, path, headers: { authorization: value } });
    }

    // --- Path parameters.
    for (const name of route.pathParams) {
      const values =
        name === "*"
          ? ["../../etc/passwd", "%2e%2e/%2e%2e/secret.txt", "..%2F..%2Fsecret.txt", "a/%00/b", "%FF%FE/x", "a\\..\\..\\b", "x".repeat(600)]
          : ["abc", "-1", "9223372036854775808", "-9223372036854775809", "%00", "%FF%FE", "1.5", "1e3", "%20", "0x1F", "..", "%2e%2e", "1%2F2", "x".repeat(600)];
      for (const value of rng.sample(values, 4)) {
        const p = fillPath(route, ids, { [name]: value });
        add("path IDs", route, `path :${name}`, "owner", value.slice(0, 40), { kind: "http", method: route.method, path: p, headers: auth("owner") });
      }
      for (const value of rng.sample(values, 1)) {
        const who = someone();
        const p = fillPath(route, ids, { [name]: value });
        add("path IDs", route, `path :${name}`, who, value.slice(0, 40), { kind: "http", method: route.method, path: p, headers: auth(who) });
      }
    }

    // --- Parameter values, one parameter at a time (the route's required ones at baseline values):
    // as the owner each class on one parameter, as the guest and the stranger one class each.
    const encoding = () => rng.pick(bodyEncodings);
    const valueCase = (group: Group, cls: string, who: Who, param: FuzzParam, value: Value, enc: Encoding = encoding()) => {
      const fields = fieldsWith(route, param.name, value);
      const draw = { boundary: `fuzz${rng.bytes(8).toString("hex")}`, inlineJson: rng.next() < 0.5 };
      const sentAs = route.method === "GET" ? "query" : enc;
      add(group, route, cls, who, `${param.name} (${sentAs})`, () => paramRequest(route, ids, who, fields, enc, draw));
    };
    const lightClasses: [Group, (param: FuzzParam) => Value][] = [
      ["wrong types", () => text(rng.pick(WRONG_TYPE))],
      ["integer range", () => text(rng.pick(INT_RANGE))],
      ["NUL", (param) => rng.pick(nulValues(param.kind))],
      ["invalid UTF-8", (param) => rng.pick(invalidUtf8Values(param.kind))],
    ];
    for (const [group, value] of lightClasses) {
      const param = rng.pick(route.params);
      valueCase(group, group, "owner", param, value(param));
    }
    for (const who of ["guest", "anon"] as const) {
      for (const [group, value] of rng.sample(lightClasses, 1)) {
        const param = rng.pick(route.params);
        valueCase(group, group, who, param, value(param));
      }
    }
    for (const param of route.params) {
      for (const value of route.extra[param.name] ?? []) valueCase("redirects", "foreign or odd URL", rng.pick(["owner", "anon"] as const), param, text(value));
    }

    // --- Large values: one parameter each, as the owner. A GET carries its
    // parameters in the URL, which the HTTP parser caps at 16 KB: there the
    // values are as large as still fit, and one more is far too large.
    const isGet = route.method === "GET";
    const jsonish = route.params.filter((p) => p.kind === "json" || p.kind === "other");
    const stringy = route.params.filter((p) => p.kind === "string");
    const bodyEncoding = (): Encoding => rng.pick(["form", "multipart", "json"] as const);
    const listParam = rng.pick(jsonish.length > 0 ? jsonish : route.params);
    valueCase("huge lists", "huge list", "owner", listParam, hugeList(isGet ? 2_000 : 100_000), bodyEncoding());
    const deep = rng.pick([deepList(isGet ? 5_000 : 100_000, true), deepList(isGet ? 10_000 : 100_000, false), deepObject(isGet ? 1_500 : 20_000)]);
    valueCase("deep JSON", "deep JSON", "owner", rng.pick(jsonish.length > 0 ? jsonish : route.params), deep, bodyEncoding());
    const bigParam = rng.pick(stringy.length > 0 ? stringy : route.params);
    valueCase("oversized values", "oversized string", "owner", bigParam, longText("a", isGet ? 12_000 : 1024 * 1024), bodyEncoding());
    valueCase("oversized values", "oversized string", "anon", rng.pick(route.params), longText("é", isGet ? 2_000 : 16 * 1024), bodyEncoding());
    if (isGet) valueCase("oversized values", "URL too long", "owner", bigParam, longText("a", 100_000));
  }
  return { byGroup, last };
}

// ---------------------------------------------------------------------------
// Incoming webhooks, with real payloads: the generic classes above reach the
// webhook route only with an integration name that does not exist. These
// start from the payloads of Zulip's own webhook tests (test/fixtures/) for
// every integration Parley serves, signed in with the owner's key, and break
// them: values of the wrong type anywhere in the payload, nesting at and past
// the bound, bodies cut short or not JSON, wrong event headers and
// parameters, only_events/exclude_events patterns of glob metacharacters, and
// bodies at and past the webhook body limit.

interface WebhookFixture {
  name: string;
  url: string;
  headers: Record<string, string>;
  query?: Record<string, string>;
  content_type?: string;
  body_encoding: "json" | "raw";
  payload: unknown;
}

const WEBHOOK_TABLE = JSON.parse(fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "fixtures/zulip-webhook-cases.json"), "utf8")) as {
  integrations: Record<string, { cases: WebhookFixture[] }>;
};

/** Every [path, value] of a JSON value, iteratively, at most `limit` of them. */
function jsonPaths(value: unknown, limit = 2000): (string | number)[][] {
  const out: (string | number)[][] = [];
  const stack: { at: (string | number)[]; value: unknown }[] = [{ at: [], value }];
  while (stack.length > 0 && out.length < limit) {
    const { at, value: current } = stack.pop()!;
    out.push(at);
    if (Array.isArray(current)) current.forEach((child, i) => stack.push({ at: [...at, i], value: child }));
    else if (typeof current === "object" && current !== null) for (const [key, child] of Object.entries(current)) stack.push({ at: [...at, key], value: child });
  }
  return out;
}

/** A copy of `value` with the value at `at` replaced (the root itself when `at` is empty). */
function replaceAt(value: unknown, at: (string | number)[], replacement: unknown): unknown {
  if (at.length === 0) return replacement;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  parent[at[at.length - 1]!] = replacement;
  return copy;
}

const WRONG_JSON_VALUES: unknown[] = [null, true, 0, -1, 1.5, 1e308, "", "x", "\u0000", "é\u{1F600}", [], [null], {}, { "": null }, "a".repeat(20_000), Array.from({ length: 5000 }, (_, i) => i)];
const GLOB_ALPHABET = ["*", "?", "[", "]", "!", "-", "^", "\\", "a", "z", "_", "&", "|", "~", "é", "\u{1F600}"];
/** Where a deep value is spliced into the payload's text. */
const DEEP_MARK = "__fuzz_deep__";

function webhookCorpus(route: FuzzRoute, ids: Identities, rng: Rng, webhookBodyLimit: number): Case[] {
  const cases: Case[] = [];
  const served = new Set(INTEGRATIONS.map((i) => i.name));
  for (const [table, { cases: fixtures }] of Object.entries(WEBHOOK_TABLE.integrations)) {
    for (const fixture of rng.sample(fixtures, 4)) {
      const url = new URL(fixture.url.replace("{api_key}", ids.owner.apiKey).replace("{stream}", "fuzz webhooks"), "http://x");
      const integration = url.pathname.split("/").pop()!;
      assert.ok(served.has(integration), `${table}: ${integration} is served`);
      for (const [k, v] of Object.entries(fixture.query ?? {})) url.searchParams.set(k, v);
      const text = fixture.body_encoding === "raw" ? String(fixture.payload) : JSON.stringify(fixture.payload);
      const contentType = fixture.content_type ?? "application/json";
      const slackErrors = integration === "slack_incoming";
      const add = (cls: string, detail: string, body: string | Buffer, change: { query?: Record<string, string>; headers?: Record<string, string>; contentType?: string } = {}) => {
        const query = new URLSearchParams(url.searchParams);
        for (const [k, v] of Object.entries(change.query ?? {})) query.set(k, v);
        const request: HttpRequest = {
          kind: "http",
          method: "POST",
          path: `${url.pathname}?${query.toString()}`,
          headers: { ...fixture.headers, "content-type": change.contentType ?? contentType, ...change.headers },
          body: Buffer.isBuffer(body) ? body : Buffer.from(body),
        };
        cases.push({ route, cls: `webhook ${cls}`, who: "owner", detail: `${integration} ${fixture.name}: ${detail}`, request: () => request, slackErrors });
      };

      add("payload as sent", "unchanged", text);
      const payload = fixture.body_encoding === "json" ? fixture.payload : undefined;
      if (payload !== undefined) {
        const paths = jsonPaths(payload);
        for (const at of rng.sample(paths, 6)) {
          const replacement = rng.pick(WRONG_JSON_VALUES);
          add("wrong type", `${JSON.stringify(at)} = ${JSON.stringify(replacement).slice(0, 30)}`, JSON.stringify(replaceAt(payload, at, replacement)));
        }
        const deepAt = rng.pick(paths);
        for (const depth of [MAX_WEBHOOK_JSON_DEPTH - deepAt.length, MAX_WEBHOOK_JSON_DEPTH + 1, 5_000, 100_000]) {
          const deep = "[".repeat(Math.max(depth, 1)) + "]".repeat(Math.max(depth, 1));
          add("deep JSON", `${depth} levels at ${JSON.stringify(deepAt)}`, JSON.stringify(replaceAt(payload, deepAt, DEEP_MARK)).replace(JSON.stringify(DEEP_MARK), deep));
        }
        const deepObject = '{"a":'.repeat(3_000) + "1" + "}".repeat(3_000);
        add("deep JSON", `3000-level object at ${JSON.stringify(deepAt)}`, JSON.stringify(replaceAt(payload, deepAt, DEEP_MARK)).replace(JSON.stringify(DEEP_MARK), deepObject));
      }
      for (const [detail, body] of [
        ["cut short", text.slice(0, rng.int(Math.max(text.length, 1)))],
        ["empty", ""],
        ["not JSON", "{{{"],
        ["a JSON string", '"x"'],
        ["an unclosed deep list", "[".repeat(100_000)],
      ] as const) {
        add("malformed body", detail, body);
      }
      add("malformed body", "invalid UTF-8", Buffer.concat([Buffer.from(text.slice(0, 20)), Buffer.from([0xff, 0xfe]), Buffer.from(text.slice(20))]));
      add("content types", "form-encoded payload field", `payload=${encodeURIComponent(text)}`, { contentType: "application/x-www-form-urlencoded" });
      add("content types", "text/plain", text, { contentType: "text/plain" });
      for (const header of Object.keys(fixture.headers)) {
        add("event header", `${header} unknown`, text, { headers: { [header]: rng.pick(["", "nonsense", "push:", "\u00ff", "x".repeat(1000)]).replace(/[^\x20-\x7e]/g, "?") } });
      }

      // Event filters: random glob patterns, and values that are not lists of strings.
      for (let i = 0; i < 3; i++) {
        const patterns = Array.from({ length: 1 + rng.int(3) }, () => Array.from({ length: rng.int(12) }, () => rng.pick(GLOB_ALPHABET)).join(""));
        add("event patterns", JSON.stringify(patterns), text, { query: { [rng.pick(["only_events", "exclude_events"])]: JSON.stringify(patterns) } });
      }
      add("event patterns", "many stars", text, { query: { only_events: JSON.stringify([`${"*a".repeat(2000)}*b`, `${"*?".repeat(2000)}`]) } });
      const badFilter = rng.pick(["[oops", "{}", '"x"', "[1]", "[null]", "[[]]", "null", ""]);
      add("event patterns", `not a list of strings: ${badFilter}`, text, { query: { [rng.pick(["only_events", "exclude_events"])]: badFilter } });

      // The integration's own parameters, and Zulip's, with odd values.
      const param = rng.pick(["branches", "ignore_private_repositories", "use_merge_request_title", "name", "desc", "topic", "stream", "user_specified_topic"]);
      add("parameters", `${param} odd`, text, { query: { [param]: rng.pick(["", "null", "[]", "1", "x".repeat(3000), "\u00e9", "tru", "999999999999"]) } });

      // Bodies at and over the webhook body limit: the fixture, padded with spaces (JSON whitespace).
      const padded = (size: number) => text + " ".repeat(Math.max(size - Buffer.byteLength(text), 0));
      add("body size", "at the webhook body limit", padded(webhookBodyLimit));
      add("body size", "a byte over the webhook body limit", padded(webhookBodyLimit + 1));
    }
  }
  // A large payload for the printers: a wide list, 999 deep, at the limit.
  const wide = `[${"[".repeat(998)}${"0,".repeat(200_000)}0${"]".repeat(998)}]`;
  for (const integration of INTEGRATIONS.map((i) => i.name)) {
    const request: HttpRequest = { kind: "http", method: "POST", path: `${API_PREFIX}/external/${integration}?api_key=${ids.owner.apiKey}`, headers: { "content-type": "application/json" }, body: Buffer.from(wide) };
    cases.push({ route, cls: "webhook deep and wide", who: "owner", detail: integration, request: () => request, slackErrors: integration === "slack_incoming" });
  }
  return cases;
}

// ---------------------------------------------------------------------------
// Sending

const CONCURRENCY = 6;
const TIMEOUT_MS = 20_000;
/** Answers are kept whole up to this size (some errors quote a large value back). */
const KEEP_BYTES = 8 * 1024 * 1024;

function sendHttp(base: URL, agent: http.Agent, request: HttpRequest): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Answer) => {
      if (!settled) {
        settled = true;
        resolve(answer);
      }
    };
    let req: http.ClientRequest;
    try {
      // Node sends a DELETE body with neither a length nor chunks unless told its length.
      const headers = request.body ? { ...request.headers, "content-length": String(request.body.length) } : request.headers;
      req = http.request({ host: base.hostname, port: base.port, method: request.method, path: request.path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on("data", (chunk: Buffer) => {
          if (kept < KEEP_BYTES) chunks.push(chunk);
          kept += chunk.length;
        });
        const finish = () =>
          done({
            status: res.statusCode ?? 0,
            headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
            body: Buffer.concat(chunks).toString("utf8"),
          });
        res.on("end", finish);
        res.on("error", finish);
        res.on("aborted", finish);
      });
    } catch (error) {
      done({ status: 0, headers: {}, body: "", error: `client refused the request: ${(error as Error).message}` });
      return;
    }
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error("timeout")));
    req.on("error", (error) => done({ status: 0, headers: {}, body: "", error: error.message }));
    req.end(request.body);
  });
}

/** Sends raw bytes and reads everything until the server closes. */
function sendRaw(base: URL, request: RawRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(base.port), base.hostname, () => (request.halfClose ? socket.end(request.bytes) : socket.write(request.bytes)));
    const timer = setTimeout(() => socket.destroy(new Error("timeout")), TIMEOUT_MS);
    let error: string | undefined;
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (e) => {
      error = e.message;
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(parseRaw(Buffer.concat(chunks), error));
    });
  });
}

/** The first response in what the server wrote (headers, body of its Content-Length or chunks); extra responses are checked too. */
function parseRaw(data: Buffer, error: string | undefined): Answer {
  const textData = data.toString("latin1");
  const end = textData.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: textData.slice(0, 200), error: `no complete response${error ? ` (${error})` : ""}` };
  const lines = textData.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = data.subarray(end + 4);
  let body: Buffer;
  if (headers["transfer-encoding"]?.includes("chunked")) {
    const out: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf("\r\n");
      const size = lineEnd < 0 ? 0 : parseInt(rest.subarray(0, lineEnd).toString("latin1"), 16);
      if (!size) break;
      out.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 4 + size);
    }
    body = Buffer.concat(out);
  } else {
    const length = Number(headers["content-length"] ?? rest.length);
    body = rest.subarray(0, length);
  }
  // A second response on the same connection (after a body cut short) must be no 5xx either.
  const later = [...textData.slice(end).matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
  const bad = later.find((s) => s >= 500);
  return { status: bad ?? status, headers, body: body.toString("utf8") };
}

async function runAll(base: URL, cases: Case[]): Promise<{ item: Case; answer: Answer; ms: number }[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const results: { item: Case; answer: Answer; ms: number }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const item = cases[next++]!;
      const started = performance.now();
      const request = item.request();
      const answer = request.kind === "http" ? await sendHttp(base, agent, request) : await sendRaw(base, request);
      results.push({ item, answer, ms: performance.now() - started });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  agent.destroy();
  return results;
}

// ---------------------------------------------------------------------------
// Judging

/** What is wrong with an answer (a kind, to group by, and details), or undefined. */
function judge(item: Case, answer: Answer): [string, string] | undefined {
  if (answer.error !== undefined && answer.status === 0) return ["no answer", answer.error];
  const { status } = answer;
  if (status >= 500 || status < 200) return [`HTTP ${status}`, ""];
  if (status >= 300 && status < 400) {
    const location = answer.headers.location ?? "";
    // Only to this server's own uploads or its image proxy: a path, never another host.
    if (item.route.url === "/thumbnail" && /^\/(user_uploads\/[^/\\]|external_content\/[0-9a-f]{40}\/[0-9a-f]+$)/.test(location)) return undefined;
    return [`redirect ${status}`, `to ${JSON.stringify(location)}`];
  }
  const type = answer.headers["content-type"] ?? "";
  const json = (): Record<string, unknown> | undefined => {
    try {
      return JSON.parse(answer.body) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  };
  if (status < 300) {
    if (!item.route.api) return undefined;
    return json()?.result === "success" ? undefined : [`HTTP ${status} without result "success"`, ""];
  }
  if (item.route.page && type.startsWith("text/html")) return undefined;
  if (!type.startsWith("application/json")) return [`HTTP ${status} not JSON`, `content type ${JSON.stringify(type)}`];
  const body = json();
  if (body === undefined) return [`HTTP ${status} not JSON`, "the body does not parse"];
  if (item.slackErrors && body.ok === false && typeof body.error === "string") return undefined;
  if (body.result !== "error" || typeof body.msg !== "string" || typeof body.code !== "string") return [`HTTP ${status} not a Zulip error`, ""];
  return undefined;
}

function describeRequest(request: HttpRequest | RawRequest): string {
  if (request.kind === "raw") return JSON.stringify(request.bytes.toString("latin1").slice(0, 160));
  const type = request.headers["content-type"];
  const body = request.body ? ` body ${request.body.length} bytes ${JSON.stringify(request.body.toString("latin1").slice(0, 80))}` : "";
  return `${request.method} ${request.path.slice(0, 120)}${type ? ` [${type}]` : ""}${body}`;
}

interface Stats {
  requests: number;
  started: number;
  slowest: { what: string; ms: number }[];
  byRoute: Map<string, number>;
}

/**
 * Runs cases and fails with the failures grouped by class and kind of
 * failure: the routes that fail that way, and one example request each.
 */
async function fuzz(base: URL, cases: Case[], stats: Stats): Promise<void> {
  const results = await runAll(base, cases);
  stats.requests += results.length;
  for (const { item, ms } of results) {
    stats.slowest.push({ what: `${item.route.key} ${item.cls} (${item.who}, ${item.detail})`, ms });
    stats.byRoute.set(item.route.key, (stats.byRoute.get(item.route.key) ?? 0) + ms);
  }
  stats.slowest = stats.slowest.sort((a, b) => b.ms - a.ms).slice(0, 8);
  const groups = new Map<string, { requests: number; routes: Map<string, string> }>();
  for (const { item, answer } of results) {
    const problem = judge(item, answer);
    if (problem === undefined) continue;
    const [kind, details] = problem;
    const key = `${item.cls}: ${kind}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { requests: 0, routes: new Map() }));
    group.requests += 1;
    if (!group.routes.has(item.route.key)) {
      group.routes.set(
        item.route.key,
        `${details ? `${details}; ` : ""}${item.who}, ${item.detail}\n        sent: ${describeRequest(item.request())}\n        got: ${JSON.stringify(answer.body.slice(0, 200))}`,
      );
    }
  }
  if (groups.size === 0) return;
  const report: string[] = [];
  let failed = 0;
  for (const [key, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    failed += group.requests;
    report.push(`${key} — ${group.requests} requests, ${group.routes.size} routes:`);
    // Every route by name; the first few with an example.
    [...group.routes].forEach(([route, example], i) => report.push(i < 3 ? `    ${route}: ${example}` : `    ${route}`));
  }
  assert.fail(`${failed} of ${results.length} requests failed:\n${report.join("\n")}`);
}

// ---------------------------------------------------------------------------

describe(`fuzz on ${DIALECT}`, () => {
  let t: TestApp;
  let base: URL;
  let ids: Identities;
  let corpus: Corpus;
  const stats: Stats = { requests: 0, started: 0, slowest: [], byRoute: new Map() };

  before(async () => {
    stats.started = performance.now();
    t = await startTestApp(process.env.FUZZ_LOG ? { logLevel: "error" } : {});
    base = new URL(t.url);
    // Disposable accounts: whatever the fuzz manages to change about them harms no other test.
    ids = {
      owner: await t.createUser("Fuzz Owner", Role.OWNER),
      guest: await t.createUser("Fuzz Guest", Role.GUEST),
      realmId: t.realm.id,
    };
    const routes = await enumerateRoutes(t);
    const building = performance.now();
    corpus = buildCorpus(routes, ids, new Rng(SEED));
    const webhookRoute = routes.find((r) => r.key === `POST ${API_PREFIX}/external/:integration`)!;
    corpus.byGroup.get("webhook payloads")!.push(...webhookCorpus(webhookRoute, ids, new Rng(SEED + 1), t.services.config.webhookBodyLimitBytes));
    if (process.env.FUZZ_LOG) process.stderr.write(`fuzz: app ready in ${(building - stats.started).toFixed(0)} ms, corpus built in ${(performance.now() - building).toFixed(0)} ms\n`);
    // Every route is fuzzed.
    const covered = new Set([...corpus.byGroup.values(), corpus.last].flat().map((c) => c.route.key));
    assert.deepEqual(
      routes.filter((r) => !covered.has(r.key)).map((r) => r.key),
      [],
    );
  });

  after(async () => {
    const seconds = (performance.now() - stats.started) / 1000;
    const size = [...corpus.byGroup.values()].reduce((n, c) => n + c.length, corpus.last.length);
    process.stderr.write(`fuzz (${DIALECT}, seed ${SEED}): ${size} cases, ${stats.requests} sent, ${seconds.toFixed(1)} s\n`);
    if (process.env.FUZZ_LOG) {
      for (const { what, ms } of stats.slowest) process.stderr.write(`  slowest: ${ms.toFixed(0)} ms ${what}\n`);
      const routes = [...stats.byRoute].sort((a, b) => b[1] - a[1]).slice(0, 8);
      for (const [route, ms] of routes) process.stderr.write(`  most time: ${(ms / 1000).toFixed(1)} s ${route}\n`);
    }
    await t.close();
  });

  for (const group of GROUPS) {
    test(group, async () => {
      await fuzz(base, corpus.byGroup.get(group)!, stats);
    });
  }

  test("the fuzzing accounts still work (no class above silently locked them out)", async () => {
    for (const who of ["owner", "guest"] as const) {
      const response = await fetch(`${t.url}/api/v1/users/me`, { headers: authHeader(ids, who) });
      assert.equal(response.status, 200, `${who}: ${await response.text()}`);
    }
  });

  test(`routes that may deactivate the caller or replace its key, every class, last: ${[...RUN_LAST].join(", ")}`, async () => {
    await fuzz(base, corpus.last, stats);
  });
});
